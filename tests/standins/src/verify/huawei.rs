//! Huawei Cloud API Gateway `SDK-HMAC-SHA256` ("API Request Signing
//! Guide", support.huaweicloud.com/devg-apisign/api-sign-algorithm.html).
//!
//! ```text
//! Authorization: SDK-HMAC-SHA256 Access=<AK>, SignedHeaders=<a;b>, Signature=<hex>
//! CanonicalRequest = Method \n CanonicalURI \n CanonicalQueryString \n
//!                    CanonicalHeaders \n SignedHeaders \n hex(SHA256(body))
//! StringToSign     = "SDK-HMAC-SHA256" \n X-Sdk-Date \n hex(SHA256(CanonicalRequest))
//! Signature        = hex(HMAC-SHA256(SK, StringToSign))
//! ```
//!
//! - CanonicalURI: each path segment URI-encoded; it must end with `/` when
//!   signing even though the request may be sent without it.
//! - CanonicalQueryString: parameters sorted by name (character code
//!   order), name and value URI-encoded, `name=` for an empty value.
//! - CanonicalHeaders: the headers named in SignedHeaders (which must include
//!   `host` and `x-sdk-date`), lower-case names, trimmed values, sorted.

use super::crypto::{hmac_sha256_matches_hex, sha256_hex};
use super::text::{canonical_path, query_pairs, sorted_query};
use super::{
    auth_fields, field, header_block, malformed, signed_names, Key, Rejection, WireRequest,
};

pub const ALGORITHM: &str = "SDK-HMAC-SHA256";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `X-Sdk-Date` as sent (`20191115T033655Z`): the caller checks its age.
    pub sdk_date: String,
    pub canonical_request: String,
}

pub fn verify(req: &WireRequest, key: &Key) -> Result<Verified, Rejection> {
    let auth = req
        .only_header("authorization")?
        .ok_or_else(|| malformed("no Authorization header"))?;
    let rest = auth
        .strip_prefix(ALGORITHM)
        .and_then(|r| r.strip_prefix(' '))
        .ok_or_else(|| malformed(format!("Authorization is not {ALGORITHM}")))?;
    let fields = auth_fields(rest, &["Access", "SignedHeaders", "Signature"])?;
    let access = field(&fields, "Access");
    if access != key.id {
        return Err(Rejection::UnknownKey(access.to_string()));
    }
    let names = signed_names(field(&fields, "SignedHeaders"))?;
    for required in ["host", "x-sdk-date"] {
        if !names.contains(&required) {
            return Err(malformed(format!("`{required}` must be signed")));
        }
    }
    let mut uri = canonical_path(&req.path)
        .ok_or_else(|| malformed("the path is not valid percent-encoding"))?;
    if !uri.ends_with('/') {
        uri.push('/');
    }
    let query = query_pairs(&req.query)
        .ok_or_else(|| malformed("the query is not valid percent-encoding"))?;
    let headers = header_block(req, &names, str::to_string)?;
    let canonical_request = format!(
        "{}\n{uri}\n{}\n{headers}\n{}\n{}",
        req.method,
        sorted_query(&query),
        names.join(";"),
        sha256_hex(&req.body),
    );
    let sdk_date = req
        .only_header("x-sdk-date")?
        .unwrap_or_default()
        .to_string();
    let string_to_sign = format!(
        "{ALGORITHM}\n{sdk_date}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    if !hmac_sha256_matches_hex(
        key.secret.as_bytes(),
        string_to_sign.as_bytes(),
        field(&fields, "Signature"),
    ) {
        return Err(Rejection::Mismatch {
            canonical: canonical_request,
        });
    }
    Ok(Verified {
        sdk_date,
        canonical_request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        id: "QTWAOYTTINDUT2QVKYUC",
        secret: "MFyfvK41ba2giqM7Uio6PznpdUKGpownRZlmVmHc",
    };

    /// The guide's worked example (GET .../vpcs?limit=2&marker=...).
    fn guide_example() -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "GET",
            "/v1/77b6a44cba5143ab91d13ab9a8ff44fd/vpcs?marker=13551d6b-755d-4757-b956-536f674975c0&limit=2",
            vec![
                h("Host", "service.region.example.com"),
                h("Content-Type", "application/json"),
                h("X-Sdk-Date", "20191115T033655Z"),
                h(
                    "Authorization",
                    "SDK-HMAC-SHA256 Access=QTWAOYTTINDUT2QVKYUC, SignedHeaders=content-type;host;x-sdk-date, \
                     Signature=7be6668032f70418fcc22abc52071e57aff61b84a1d2381bb430d6870f4f6ebe",
                ),
            ],
            vec![],
        )
    }

    #[test]
    fn accepts_the_guide_example() {
        let v = verify(&guide_example(), &KEY).unwrap();
        assert_eq!(v.sdk_date, "20191115T033655Z");
        assert_eq!(
            sha256_hex(v.canonical_request.as_bytes()),
            "b25362e603ee30f4f25e7858e8a7160fd36e803bb2dfe206278659d71a9bcd7a"
        );
    }

    #[test]
    fn refuses_changes() {
        let mut r = guide_example();
        r.path = r.path.replace("vpcs", "vpcz");
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
        let mut r = guide_example();
        r.query = r.query.replace("limit=2", "limit=3");
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
        let mut r = guide_example();
        r.method = "PUT".into();
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
        let mut r = guide_example();
        r.headers[1].1 = "application/jsoN".into();
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
    }
}
