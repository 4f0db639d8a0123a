//! Alibaba Cloud V3 signature, `ACS3-HMAC-SHA256`, as sent by the current
//! official SDKs (Tea/Darabonba `alibabacloud_*`).
//!
//! For RPC-style APIs (ECS, VPC ...) the request is `POST /` with the API
//! parameters in the query string, an empty body, and the headers
//! `x-acs-action` and `x-acs-version` (plus, like the SDK, `accept`,
//! `user-agent` ...). **Every** header in [`Request::headers`] is signed, as
//! are `host` and the three headers this signer adds (`x-acs-date`,
//! `x-acs-signature-nonce`, `x-acs-content-sha256`).
//!
//! ```text
//! CanonicalRequest = METHOD \n encoded path \n sorted query \n
//!                    name:trimmed value \n ... \n signed;names \n hex(sha256(body))
//! StringToSign     = "ACS3-HMAC-SHA256" \n hex(sha256(CanonicalRequest))
//! Signature        = hex(HMAC-SHA256(secret, StringToSign))
//! ```

use crate::canon::{
    canonical_query, canonical_request, iso8601_utc, reject_reserved, sha256_hex, CanonicalHeaders,
};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

pub const ALGORITHM: &str = "ACS3-HMAC-SHA256";

/// Signs `req` at `time` with `nonce` (must be unique per request within the
/// gateway's replay window; see [`crate::new_nonce`]). Returns `x-acs-date`,
/// `x-acs-signature-nonce`, `x-acs-content-sha256` and `Authorization`.
pub fn sign(
    req: &Request,
    creds: &Credentials,
    time: OffsetDateTime,
    nonce: &str,
) -> Result<Signed, SignError> {
    reject_reserved(
        &req.headers,
        &[
            "host",
            "authorization",
            "x-acs-date",
            "x-acs-signature-nonce",
            "x-acs-content-sha256",
        ],
    )?;
    let date = iso8601_utc(time)?;
    let content_sha256 = sha256_hex(&req.body);
    let added = [
        ("x-acs-date", date.as_str()),
        ("x-acs-signature-nonce", nonce),
        ("x-acs-content-sha256", content_sha256.as_str()),
    ];
    let headers = CanonicalHeaders::new(
        req.headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .chain([("host", req.host.as_str())])
            .chain(added),
    );
    let signed_names = headers.signed_names();

    let canonical_request = canonical_request(
        &req.method,
        &req.encoded_path(),
        &canonical_query(&req.query),
        &headers.block(),
        &signed_names,
        &content_sha256,
    );
    let authorization = |signature: &str| {
        format!(
            "{ALGORITHM} Credential={},SignedHeaders={signed_names},Signature={signature}",
            creds.access_key_id()
        )
    };
    let key = creds.secret().as_bytes();
    let head = [ALGORITHM];
    Ok(Signed::sha256(
        &head,
        canonical_request,
        key,
        &added,
        authorization,
    ))
}

/// [`sign`] at the current time with a fresh random nonce.
pub fn sign_now(req: &Request, creds: &Credentials) -> Result<Signed, SignError> {
    sign(req, creds, crate::now(), &crate::new_nonce())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_request() -> Request {
        Request::new("POST", "ecs.cn-shanghai.aliyuncs.com", "/")
            .with_query(
                "ImageId",
                "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd",
            )
            .with_query("RegionId", "cn-shanghai")
            .with_header("x-acs-action", "RunInstances")
            .with_header("x-acs-version", "2014-05-26")
    }

    fn doc_time() -> OffsetDateTime {
        // 2023-10-26T10:22:32Z
        OffsetDateTime::from_unix_timestamp(1698315752).unwrap()
    }

    // The guide's worked example itself is checked, to the letter, by
    // tests/published_examples.rs (alibaba_acs3_run_instances); these tests vary it.

    #[test]
    fn every_given_header_is_signed() {
        let creds = Credentials::new("id", "secret");
        let r = doc_request()
            .with_header("Accept", "application/json")
            .with_header("User-Agent", "gpuform");
        let s = sign(&r, &creds, doc_time(), "n").unwrap();
        assert!(s.authorization().contains(
            "SignedHeaders=accept;host;user-agent;x-acs-action;x-acs-content-sha256;\
             x-acs-date;x-acs-signature-nonce;x-acs-version,"
        ));
    }

    #[test]
    fn nonce_and_time_change_the_signature() {
        let creds = Credentials::new("id", "secret");
        let a = sign(&doc_request(), &creds, doc_time(), "n1").unwrap();
        let b = sign(&doc_request(), &creds, doc_time(), "n2").unwrap();
        let c = sign(
            &doc_request(),
            &creds,
            doc_time() + time::Duration::SECOND,
            "n1",
        )
        .unwrap();
        assert_ne!(a.signature, b.signature);
        assert_ne!(a.signature, c.signature);
    }

    #[test]
    fn refuses_a_signed_request() {
        let creds = Credentials::new("id", "secret");
        let mut r = doc_request();
        sign(&r, &creds, doc_time(), "n").unwrap().apply(&mut r);
        assert!(matches!(
            sign(&r, &creds, doc_time(), "n"),
            Err(SignError::ReservedHeader(_))
        ));
        let r = doc_request().with_header("Host", "x");
        assert_eq!(
            sign(&r, &creds, doc_time(), "n"),
            Err(SignError::ReservedHeader("Host".into()))
        );
    }
}
