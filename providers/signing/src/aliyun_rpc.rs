//! Alibaba Cloud legacy RPC signature: `SignatureMethod=HMAC-SHA1`,
//! `SignatureVersion=1.0`. Kept for completeness (the current SDK signs ECS
//! with [`crate::acs3`]); the signature travels as a request parameter.
//!
//! ```text
//! StringToSign = METHOD & %2F & enc( sorted, encoded k=v&k=v of all parameters )
//! Signature    = base64(HMAC-SHA1(secret + "&", StringToSign))
//! ```
//!
//! "All parameters" means the query *and* any form-encoded body parameters;
//! pass them together in `params`.

use base64::Engine as _;

use crate::canon::{canonical_query, hmac_sha1, iso8601_utc, percent_encode};
use crate::{Credentials, OffsetDateTime, SignError};

/// Parameters this signer sets itself.
pub const RESERVED: [&str; 6] = [
    "AccessKeyId",
    "SignatureMethod",
    "SignatureVersion",
    "SignatureNonce",
    "Timestamp",
    "Signature",
];

/// The result: parameters to append to the query string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcSigned {
    /// `AccessKeyId`, `SignatureMethod`, `SignatureVersion`, `SignatureNonce`,
    /// `Timestamp` and last `Signature`, all decoded.
    pub params: Vec<(String, String)>,
    pub string_to_sign: String,
    /// Base64 signature (also the value of the `Signature` parameter).
    pub signature: String,
}

/// Signs the API parameters `params` (`Action`, `Version`, `Format`,
/// `RegionId`, the API's own ... — decoded, without the ones in
/// [`RESERVED`]) for `method` at `time` with `nonce`.
pub fn sign(
    method: &str,
    params: &[(String, String)],
    creds: &Credentials,
    time: OffsetDateTime,
    nonce: &str,
) -> Result<RpcSigned, SignError> {
    if let Some((k, _)) = params.iter().find(|(k, _)| RESERVED.contains(&k.as_str())) {
        return Err(SignError::ReservedParam(k.clone()));
    }
    let mut added = vec![
        ("AccessKeyId".to_string(), creds.access_key_id().to_string()),
        ("SignatureMethod".to_string(), "HMAC-SHA1".to_string()),
        ("SignatureVersion".to_string(), "1.0".to_string()),
        ("SignatureNonce".to_string(), nonce.to_string()),
        ("Timestamp".to_string(), iso8601_utc(time)?),
    ];
    let mut all = params.to_vec();
    all.extend(added.iter().cloned());
    let string_to_sign = format!(
        "{}&{}&{}",
        method.to_ascii_uppercase(),
        percent_encode("/"),
        percent_encode(&canonical_query(&all))
    );
    let key = format!("{}&", creds.secret());
    let signature = base64::engine::general_purpose::STANDARD
        .encode(hmac_sha1(key.as_bytes(), string_to_sign.as_bytes()));
    added.push(("Signature".to_string(), signature.clone()));
    Ok(RpcSigned {
        params: added,
        string_to_sign,
        signature,
    })
}

/// [`sign`] at the current time with a fresh random nonce.
pub fn sign_now(
    method: &str,
    params: &[(String, String)],
    creds: &Credentials,
) -> Result<RpcSigned, SignError> {
    sign(method, params, creds, crate::now(), &crate::new_nonce())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::pairs;

    fn doc() -> (
        Vec<(String, String)>,
        Credentials,
        OffsetDateTime,
        &'static str,
    ) {
        (
            pairs(&[
                ("Format", "XML"),
                ("Action", "DescribeRegions"),
                ("Version", "2014-05-26"),
            ]),
            Credentials::new("testid", "testsecret"),
            // 2016-02-23T12:46:24Z
            OffsetDateTime::from_unix_timestamp(1456231584).unwrap(),
            "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
        )
    }

    #[test]
    fn published_example() {
        // "Signature method" page of the ECS RPC API docs (DescribeRegions).
        let (params, creds, t, nonce) = doc();
        let s = sign("GET", &params, &creds, t, nonce).unwrap();
        assert_eq!(
            s.string_to_sign,
            "GET&%2F&AccessKeyId%3Dtestid%26Action%3DDescribeRegions%26Format%3DXML\
             %26SignatureMethod%3DHMAC-SHA1%26SignatureNonce%3D3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf\
             %26SignatureVersion%3D1.0%26Timestamp%3D2016-02-23T12%253A46%253A24Z%26Version%3D2014-05-26"
        );
        assert_eq!(s.signature, "OLeaidS1JvxuMvnyHOwuJ+uX5qY=");
        assert_eq!(s.params.last().unwrap().0, "Signature");
        assert!(s
            .params
            .contains(&("Timestamp".into(), "2016-02-23T12:46:24Z".into())));
    }

    #[test]
    fn refuses_reserved_params() {
        let (mut params, creds, t, nonce) = doc();
        params.push(("Signature".into(), "x".into()));
        assert_eq!(
            sign("GET", &params, &creds, t, nonce),
            Err(SignError::ReservedParam("Signature".into()))
        );
    }
}
