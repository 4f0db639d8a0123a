//! Alibaba Cloud `ACS3-HMAC-SHA256` ("V3 request structure and signature",
//! alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature).
//!
//! ```text
//! Authorization: ACS3-HMAC-SHA256 Credential=<AccessKeyId>,SignedHeaders=<a;b>,Signature=<hex>
//! CanonicalRequest = Method \n CanonicalURI \n CanonicalQueryString \n
//!                    CanonicalHeaders (name:value\n each) \n SignedHeaders \n HashedRequestPayload
//! StringToSign     = "ACS3-HMAC-SHA256" \n hex(SHA256(CanonicalRequest))
//! Signature        = hex(HMAC-SHA256(AccessKeySecret, StringToSign))
//! ```
//!
//! - CanonicalURI: the encoded path (`/` for RPC-style APIs).
//! - CanonicalQueryString: parameters sorted by name (then value), name and
//!   value RFC 3986 encoded, `name=value` joined with `&` (`name=` if empty).
//! - CanonicalHeaders: `host`, `content-type` and every `x-acs-*` header that
//!   is present must be signed (the guide: "all common request headers except
//!   Authorization, if present"); names lower-case, values trimmed, sorted.
//! - HashedRequestPayload: hex SHA-256 of the body, also sent as
//!   `x-acs-content-sha256`.

use super::crypto::{hmac_sha256_matches_hex, sha256_hex};
use super::text::{canonical_path, query_pairs, sorted_query};
use super::{
    auth_fields, field, header_block, malformed, signed_names, Key, Rejection, WireRequest,
};

pub const ALGORITHM: &str = "ACS3-HMAC-SHA256";

/// Headers every V3 request carries and signs.
const REQUIRED: [&str; 6] = [
    "host",
    "x-acs-action",
    "x-acs-content-sha256",
    "x-acs-date",
    "x-acs-signature-nonce",
    "x-acs-version",
];

/// What a valid signature vouches for; the caller checks the date window
/// and that the nonce is new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `x-acs-date` as sent (`2023-10-26T10:22:32Z`).
    pub date: String,
    pub nonce: String,
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
    let fields = auth_fields(rest, &["Credential", "SignedHeaders", "Signature"])?;
    let credential = field(&fields, "Credential");
    if credential != key.id {
        return Err(Rejection::UnknownKey(credential.to_string()));
    }
    let names = signed_names(field(&fields, "SignedHeaders"))?;
    for required in REQUIRED {
        if !names.contains(&required) {
            return Err(malformed(format!("`{required}` must be signed")));
        }
    }
    for present in req.header_names() {
        let must = present == "host" || present == "content-type" || present.starts_with("x-acs-");
        if must && !names.contains(&present.as_str()) {
            return Err(malformed(format!(
                "header `{present}` is sent but not signed"
            )));
        }
    }

    let payload_hash = sha256_hex(&req.body);
    if req.only_header("x-acs-content-sha256")? != Some(payload_hash.as_str()) {
        return Err(Rejection::ContentHash);
    }
    let uri = canonical_path(&req.path)
        .ok_or_else(|| malformed("the path is not valid percent-encoding"))?;
    let query = query_pairs(&req.query)
        .ok_or_else(|| malformed("the query is not valid percent-encoding"))?;
    let headers = header_block(req, &names, str::to_string)?;
    let canonical_request = format!(
        "{}\n{uri}\n{}\n{headers}\n{}\n{payload_hash}",
        req.method,
        sorted_query(&query),
        names.join(";"),
    );
    let string_to_sign = format!("{ALGORITHM}\n{}", sha256_hex(canonical_request.as_bytes()));
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
        date: req
            .only_header("x-acs-date")?
            .unwrap_or_default()
            .to_string(),
        nonce: req
            .only_header("x-acs-signature-nonce")?
            .unwrap_or_default()
            .to_string(),
        canonical_request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        id: "YourAccessKeyId",
        secret: "YourAccessKeySecret",
    };

    /// The guide's worked example (RunInstances in cn-shanghai).
    fn guide_example() -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "POST",
            "/?ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai",
            vec![
                h("host", "ecs.cn-shanghai.aliyuncs.com"),
                h("x-acs-action", "RunInstances"),
                h("x-acs-version", "2014-05-26"),
                h("x-acs-date", "2023-10-26T10:22:32Z"),
                h("x-acs-signature-nonce", "3156853299f313e23d1673dc12e1703d"),
                h(
                    "x-acs-content-sha256",
                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                ),
                h(
                    "Authorization",
                    "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;\
                     x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,\
                     Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0",
                ),
            ],
            vec![],
        )
    }

    #[test]
    fn accepts_the_guide_example() {
        let v = verify(&guide_example(), &KEY).unwrap();
        assert_eq!(
            sha256_hex(v.canonical_request.as_bytes()),
            "7ea06492da5221eba5297e897ce16e55f964061054b7695beedaac1145b1e259"
        );
        assert_eq!(v.date, "2023-10-26T10:22:32Z");
        assert_eq!(v.nonce, "3156853299f313e23d1673dc12e1703d");
    }

    #[test]
    fn refuses_changes() {
        let mut r = guide_example();
        r.query = r.query.replace("shanghai", "shanghaj");
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
        let mut r = guide_example();
        r.body = b"x".to_vec();
        assert_eq!(verify(&r, &KEY), Err(Rejection::ContentHash));
        let mut r = guide_example();
        r.headers.push(("x-acs-security-token".into(), "t".into()));
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Malformed(_))));
        let other = Key {
            id: "YourAccessKeyId",
            secret: "YourAccessKeySecreT",
        };
        assert!(matches!(
            verify(&guide_example(), &other),
            Err(Rejection::Mismatch { .. })
        ));
        let stranger = Key {
            id: "Other",
            secret: "YourAccessKeySecret",
        };
        assert_eq!(
            verify(&guide_example(), &stranger),
            Err(Rejection::UnknownKey("YourAccessKeyId".into()))
        );
    }
}
