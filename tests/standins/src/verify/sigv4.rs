//! AWS Signature Version 4 (`AWS4-HMAC-SHA256`), from the IAM user guide
//! "Create a signed AWS API request" and "Elements of an AWS API request
//! signature" (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html).
//!
//! ```text
//! Authorization: AWS4-HMAC-SHA256 Credential=<AKID>/<yyyymmdd>/<region>/<service>/aws4_request,
//!                SignedHeaders=<lower-case names ;-joined>, Signature=<hex>
//! CanonicalRequest = Method \n CanonicalURI \n CanonicalQueryString \n
//!                    CanonicalHeaders \n SignedHeaders \n hex(SHA256(body))
//! StringToSign     = "AWS4-HMAC-SHA256" \n X-Amz-Date \n
//!                    <yyyymmdd>/<region>/<service>/aws4_request \n hex(SHA256(CanonicalRequest))
//! kSigning         = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, yyyymmdd), region), service), "aws4_request")
//! Signature        = hex(HMAC-SHA256(kSigning, StringToSign))
//! ```
//!
//! - CanonicalURI: the URI-encoded path (`/` when empty).
//! - CanonicalQueryString: parameters sorted by name, names and values
//!   URI-encoded (RFC 3986 unreserved characters kept), `=` even when empty.
//! - CanonicalHeaders: lower-case name `:` value with leading and trailing
//!   blanks removed and inner runs of blanks made one, sorted by name; `host`
//!   and `x-amz-date` must be signed.
//! - When `x-amz-content-sha256` is sent it must be the body's hash, or
//!   `UNSIGNED-PAYLOAD` / `STREAMING-…` (S3), and it is then the canonical
//!   request's payload line as sent.

use super::crypto::{hmac_sha256, sha256_hex};
use super::{
    authorization, canonical_path_and_query, check_signature, field, header_block, malformed,
    signed_with, Key, Rejection, WireRequest,
};

pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `X-Amz-Date` (`yyyymmddThhmmssZ`): the caller checks its age.
    pub amz_date: String,
    pub region: String,
    pub service: String,
    pub canonical_request: String,
}

pub fn verify(req: &WireRequest, key: &Key) -> Result<Verified, Rejection> {
    let fields = authorization(
        req,
        ALGORITHM,
        &["Credential", "SignedHeaders", "Signature"],
    )?;
    let scope: Vec<&str> = field(&fields, "Credential").split('/').collect();
    let [akid, date, region, service, "aws4_request"] = scope[..] else {
        return Err(malformed(
            "Credential is not AKID/yyyymmdd/region/service/aws4_request",
        ));
    };
    if akid != key.id {
        return Err(Rejection::UnknownKey(akid.to_string()));
    }
    let amz_date = req
        .only_header("x-amz-date")?
        .map(str::trim)
        .ok_or_else(|| malformed("no X-Amz-Date header"))?;
    if amz_date.len() != 16 || !amz_date.ends_with('Z') || amz_date.get(8..9) != Some("T") {
        return Err(malformed(format!(
            "X-Amz-Date `{amz_date}` is not yyyymmddThhmmssZ"
        )));
    }
    if &amz_date[..8] != date {
        return Err(malformed(format!(
            "the credential date {date} is not the date of X-Amz-Date {amz_date}"
        )));
    }
    let body_hash = payload_hash(req)?;
    let names = signed_with(&fields, &["host", "x-amz-date"])?;
    let headers = header_block(req, &names, |v| {
        v.split_whitespace().collect::<Vec<_>>().join(" ")
    })?;
    let (uri, query) = canonical_path_and_query(req)?;
    let canonical_request = format!(
        "{}\n{uri}\n{query}\n{headers}\n{}\n{body_hash}",
        req.method,
        names.join(";"),
    );
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let k_date = hmac_sha256(format!("AWS4{}", key.secret).as_bytes(), date.as_bytes());
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, service.as_bytes());
    let k_signing = hmac_sha256(&k_service, b"aws4_request");
    check_signature(&k_signing, &string_to_sign, &fields, &canonical_request)?;
    Ok(Verified {
        amz_date: amz_date.to_string(),
        region: region.to_string(),
        service: service.to_string(),
        canonical_request,
    })
}

/// The canonical request's last line: the body's hash, or what
/// `x-amz-content-sha256` says when sent. S3 signs that header's value as
/// is ("Signature Calculations for the Authorization Header", S3 API
/// reference: `UNSIGNED-PAYLOAD` and the `STREAMING-…` values stand for the
/// payload; the chunks' own signatures are not checked here); any other
/// value must be the body's hash.
fn payload_hash(req: &WireRequest) -> Result<String, Rejection> {
    let body_hash = sha256_hex(&req.body);
    match req.only_header("x-amz-content-sha256")?.map(str::trim) {
        None => Ok(body_hash),
        Some(v) if v == "UNSIGNED-PAYLOAD" || v.starts_with("STREAMING-") => Ok(v.to_string()),
        Some(v) if v.eq_ignore_ascii_case(&body_hash) => Ok(body_hash),
        Some(_) => Err(Rejection::ContentHash),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        id: "AKIDEXAMPLE",
        secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    };

    /// The IAM user guide's worked example (ListUsers, 2015-08-30).
    fn guide_example(signature: &str) -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "GET",
            "/?Action=ListUsers&Version=2010-05-08",
            vec![
                h("Host", "iam.amazonaws.com"),
                h(
                    "Content-Type",
                    "application/x-www-form-urlencoded; charset=utf-8",
                ),
                h("X-Amz-Date", "20150830T123600Z"),
                h(
                    "Authorization",
                    &format!(
                        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
                         SignedHeaders=content-type;host;x-amz-date, Signature={signature}"
                    ),
                ),
            ],
            Vec::new(),
        )
    }

    #[test]
    fn accepts_the_guide_example() {
        let v = verify(
            &guide_example("5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"),
            &KEY,
        )
        .unwrap();
        assert_eq!(
            (v.region.as_str(), v.service.as_str()),
            ("us-east-1", "iam")
        );
        assert_eq!(
            sha256_hex(v.canonical_request.as_bytes()),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
        );
    }

    #[test]
    fn refuses_a_changed_signature_or_key() {
        let bad = verify(
            &guide_example("5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d8"),
            &KEY,
        );
        assert!(matches!(bad, Err(Rejection::Mismatch { .. })), "{bad:?}");
        let other = Key {
            id: "AKIDOTHER",
            secret: KEY.secret,
        };
        let unknown = verify(
            &guide_example("5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"),
            &other,
        );
        assert!(
            matches!(unknown, Err(Rejection::UnknownKey(_))),
            "{unknown:?}"
        );
    }
}
