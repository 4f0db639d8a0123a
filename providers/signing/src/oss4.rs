//! Alibaba Cloud OSS signature V4, `OSS4-HMAC-SHA256` ("Include a V4
//! signature in the Authorization header"), as the official `oss2` SDK
//! sends it.
//!
//! * Canonical URI: `/bucket/key` — the bucket the virtual host addresses
//!   comes first even though it is not in the path on the wire — encoded
//!   RFC 3986 with `/` kept; `/` for a request to no bucket.
//! * Canonical query: names and values encoded (`/` too), sorted by the
//!   encoded name, `name` alone (no `=`) when the value is empty, so
//!   `?tagging=` canonicalises to `tagging`.
//! * Canonical headers: every `x-oss-*` header, `content-type`,
//!   `content-md5`, and the `additional` headers named by the caller
//!   (listed in `AdditionalHeaders`, sorted as the guide asks; `oss2`
//!   2.19.1 orders that list by first letter only, which differs only for
//!   two additional headers with the same initial); lower-case names,
//!   trimmed values, sorted. A signed header sent twice is refused
//!   ([`SignError::RepeatedHeader`]): the guide does not say how to sign it.
//! * Payload: the literal `UNSIGNED-PAYLOAD` (also sent as
//!   `x-oss-content-sha256`), as the SDK does: the body is not hashed, so a
//!   `Content-MD5` header is what protects a body when it matters.
//!
//! ```text
//! StringToSign = "OSS4-HMAC-SHA256" \n x-oss-date \n <yyyymmdd>/<region>/oss/aliyun_v4_request \n
//!                hex(SHA256(CanonicalRequest))
//! SigningKey   = HMAC("aliyun_v4" + secret, yyyymmdd) → region → "oss" → "aliyun_v4_request"
//! Signature    = hex(HMAC-SHA256(SigningKey, StringToSign))
//! ```

use crate::canon::{
    bucket_resource, canonical_request, derive_key, encode_path, first_repeat, iso8601_basic_utc,
    join_bare_names, percent_encode, reject_reserved,
};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

pub const ALGORITHM: &str = "OSS4-HMAC-SHA256";
/// The payload hash the SDK declares (and signs): the body is not hashed.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
const PRODUCT: &str = "oss";

/// Where a request goes: the region of the endpoint (`cn-hangzhou`) and the
/// bucket its virtual host names (`None` for service-level calls such as
/// ListBuckets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope<'a> {
    pub region: &'a str,
    pub bucket: Option<&'a str>,
}

/// Signs `req` at `time`, covering also the `additional` headers (by
/// case-insensitive name; each must be in `req.headers`). Returns
/// `x-oss-date`, `x-oss-content-sha256` and `Authorization`.
pub fn sign(
    req: &Request,
    creds: &Credentials,
    scope: Scope<'_>,
    additional: &[&str],
    time: OffsetDateTime,
) -> Result<Signed, SignError> {
    reject_reserved(
        &req.headers,
        &["authorization", "x-oss-date", "x-oss-content-sha256"],
    )?;
    let date_time = iso8601_basic_utc(time)?;
    let date = &date_time[..8];

    let mut additional: Vec<String> = additional
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .filter(|h| !is_default_signed(h))
        .collect();
    additional.sort();
    additional.dedup();
    for name in &additional {
        if name != "host" && req.header(name).is_none() {
            return Err(SignError::MissingAdditionalHeader(name.clone()));
        }
    }

    let own = [
        ("x-oss-date", date_time.as_str()),
        ("x-oss-content-sha256", UNSIGNED_PAYLOAD),
    ];
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .chain([("host", req.host.as_str())])
        .chain(own)
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string()))
        .filter(|(n, _)| is_default_signed(n) || additional.contains(n))
        .collect();
    headers.sort();
    if let Some(name) = first_repeat(&headers) {
        return Err(SignError::RepeatedHeader(name.to_string()));
    }
    let header_block: String = headers.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();

    let uri = encode_path(&bucket_resource(scope.bucket, &req.path));
    let canonical_request = canonical_request(
        &req.method,
        &uri,
        &canonical_query(&req.query),
        &header_block,
        &additional.join(";"),
        UNSIGNED_PAYLOAD,
    );
    let credential_scope = format!("{date}/{}/{PRODUCT}/aliyun_v4_request", scope.region);
    // The SDK's field order: AdditionalHeaders (when any) after Signature.
    let authorization = |signature: &str| {
        let mut a = format!(
            "{ALGORITHM} Credential={}/{credential_scope}, Signature={signature}",
            creds.access_key_id()
        );
        if !additional.is_empty() {
            a.push_str(&format!(", AdditionalHeaders={}", additional.join(";")));
        }
        a
    };
    let key = derive_key(
        "aliyun_v4",
        creds.secret(),
        &[date, scope.region, PRODUCT, "aliyun_v4_request"],
    );
    let head = [ALGORITHM, &date_time, &credential_scope];
    Ok(Signed::sha256(
        &head,
        canonical_request,
        &key,
        &own,
        authorization,
    ))
}

/// [`sign`] at the current time.
pub fn sign_now(
    req: &Request,
    creds: &Credentials,
    scope: Scope<'_>,
    additional: &[&str],
) -> Result<Signed, SignError> {
    sign(req, creds, scope, additional, crate::now())
}

/// Signed whether listed or not: `x-oss-*`, `content-type`, `content-md5`.
fn is_default_signed(lower_name: &str) -> bool {
    lower_name.starts_with("x-oss-") || lower_name == "content-type" || lower_name == "content-md5"
}

/// Encoded pairs sorted by encoded name (then value); a pair with an empty
/// value is its name alone.
fn canonical_query(pairs: &[(String, String)]) -> String {
    let mut encoded: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (percent_encode(k), percent_encode(v)))
        .collect();
    encoded.sort();
    join_bare_names(&encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds() -> Credentials {
        Credentials::new("AKIDEXAMPLE", "secret-example")
    }

    fn at() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1710000000).unwrap()
    }

    const SCOPE: Scope = Scope {
        region: "cn-hangzhou",
        bucket: Some("examplebucket"),
    };

    #[test]
    fn canonical_forms() {
        let r = Request::new(
            "get",
            "examplebucket.oss-cn-hangzhou.aliyuncs.com",
            "/a b/c",
        )
        .with_query("tagging", "")
        .with_query("prefix", "x/y z")
        .with_header("Content-Type", " text/plain ")
        .with_header("User-Agent", "not-signed");
        let s = sign(&r, &creds(), SCOPE, &[], at()).unwrap();
        assert_eq!(
            s.canonical_request,
            "GET\n/examplebucket/a%20b/c\nprefix=x%2Fy%20z&tagging\n\
             content-type:text/plain\nx-oss-content-sha256:UNSIGNED-PAYLOAD\n\
             x-oss-date:20240309T160000Z\n\n\nUNSIGNED-PAYLOAD"
        );
        assert!(s.string_to_sign.starts_with(
            "OSS4-HMAC-SHA256\n20240309T160000Z\n20240309/cn-hangzhou/oss/aliyun_v4_request\n"
        ));
        assert_eq!(
            s.authorization(),
            format!(
                "OSS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240309/cn-hangzhou/oss/aliyun_v4_request, Signature={}",
                s.signature
            )
        );
    }

    #[test]
    fn additional_headers_are_listed_and_signed() {
        let r = Request::new("GET", "examplebucket.oss-cn-hangzhou.aliyuncs.com", "/")
            .with_header("Range", "bytes=0-9");
        let s = sign(
            &r,
            &creds(),
            SCOPE,
            &["range", "Host", "x-oss-meta-a"],
            at(),
        )
        .unwrap();
        assert!(s
            .authorization()
            .ends_with(", AdditionalHeaders=host;range"));
        assert!(s
            .canonical_request
            .contains("host:examplebucket.oss-cn-hangzhou.aliyuncs.com\nrange:bytes=0-9\n"));
        assert_eq!(
            sign(&r, &creds(), SCOPE, &["if-match"], at()),
            Err(SignError::MissingAdditionalHeader("if-match".into()))
        );
    }

    #[test]
    fn repeated_signed_headers_are_refused() {
        let r = Request::new("PUT", "h", "/k")
            .with_header("x-oss-meta-a", "1")
            .with_header("X-OSS-META-A", "2");
        assert_eq!(
            sign(&r, &creds(), SCOPE, &[], at()),
            Err(SignError::RepeatedHeader("x-oss-meta-a".into()))
        );
    }

    #[test]
    fn bucketless_and_reserved() {
        let r = Request::new("GET", "oss-cn-hangzhou.aliyuncs.com", "/");
        let scope = Scope {
            region: "cn-hangzhou",
            bucket: None,
        };
        let s = sign(&r, &creds(), scope, &[], at()).unwrap();
        assert!(s.canonical_request.starts_with("GET\n/\n\n"));
        let r = r.with_header("X-Oss-Date", "x");
        assert!(matches!(
            sign(&r, &creds(), scope, &[], at()),
            Err(SignError::ReservedHeader(_))
        ));
    }
}
