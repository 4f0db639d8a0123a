//! Tencent Cloud API 3.0 `TC3-HMAC-SHA256` ("Signature v3",
//! tencentcloud.com/document/api/213/30654).
//!
//! ```text
//! Authorization: TC3-HMAC-SHA256 Credential=<SecretId>/<Date>/<service>/tc3_request,
//!                SignedHeaders=content-type;host, Signature=<hex>
//! CanonicalRequest = Method \n CanonicalURI \n CanonicalQueryString \n
//!                    CanonicalHeaders \n SignedHeaders \n hex(SHA256(body))
//! StringToSign     = "TC3-HMAC-SHA256" \n X-TC-Timestamp \n CredentialScope \n
//!                    hex(SHA256(CanonicalRequest))
//! SecretSigning    = HMAC(HMAC(HMAC("TC3" + SecretKey, Date), service), "tc3_request")
//! Signature        = hex(HMAC-SHA256(SecretSigning, StringToSign))
//! ```
//!
//! - CanonicalURI: the path (`/` for API 3.0).
//! - CanonicalQueryString: the query string exactly as in the URL (empty
//!   for POST).
//! - CanonicalHeaders: at least `content-type` and `host`; the guide has
//!   name and value lower-cased and trimmed, sorted by name.
//! - Date: the UTC date of `X-TC-Timestamp`.

use super::crypto::{hmac_sha256, hmac_sha256_matches_hex, sha256_hex};
use super::{
    auth_fields, field, header_block, malformed, signed_names, Key, Rejection, WireRequest,
};

pub const ALGORITHM: &str = "TC3-HMAC-SHA256";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `X-TC-Timestamp` (Unix seconds): the caller checks its age.
    pub timestamp: i64,
    /// The service of the credential scope (`cvm`, `vpc`, `cbs`).
    pub service: String,
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
    let scope_parts: Vec<&str> = field(&fields, "Credential").split('/').collect();
    let [secret_id, date, service, "tc3_request"] = scope_parts[..] else {
        return Err(malformed(
            "Credential is not SecretId/Date/Service/tc3_request",
        ));
    };
    if secret_id != key.id {
        return Err(Rejection::UnknownKey(secret_id.to_string()));
    }
    let timestamp: i64 = req
        .only_header("x-tc-timestamp")?
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| malformed("no valid X-TC-Timestamp header"))?;
    if utc_date(timestamp).as_deref() != Some(date) {
        return Err(malformed(format!(
            "the credential date {date} is not the UTC date of X-TC-Timestamp {timestamp}"
        )));
    }
    let names = signed_names(field(&fields, "SignedHeaders"))?;
    for required in ["content-type", "host"] {
        if !names.contains(&required) {
            return Err(malformed(format!("`{required}` must be signed")));
        }
    }
    if let Some(host) = req.only_header("host")? {
        // On the public endpoints the host names the service.
        if let Some(label) = host.strip_suffix(".tencentcloudapi.com") {
            if label.split('.').next() != Some(service) {
                return Err(malformed(format!(
                    "the credential scope's service `{service}` is not the one of host {host}"
                )));
            }
        }
    }

    let headers = header_block(req, &names, str::to_ascii_lowercase)?;
    let canonical_request = format!(
        "{}\n{}\n{}\n{headers}\n{}\n{}",
        req.method,
        req.path,
        req.query,
        names.join(";"),
        sha256_hex(&req.body),
    );
    let scope = format!("{date}/{service}/tc3_request");
    let string_to_sign = format!(
        "{ALGORITHM}\n{timestamp}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let k_date = hmac_sha256(format!("TC3{}", key.secret).as_bytes(), date.as_bytes());
    let k_service = hmac_sha256(&k_date, service.as_bytes());
    let k_signing = hmac_sha256(&k_service, b"tc3_request");
    if !hmac_sha256_matches_hex(
        &k_signing,
        string_to_sign.as_bytes(),
        field(&fields, "Signature"),
    ) {
        return Err(Rejection::Mismatch {
            canonical: canonical_request,
        });
    }
    Ok(Verified {
        timestamp,
        service: service.to_string(),
        canonical_request,
    })
}

/// `2019-02-25` for a Unix time.
fn utc_date(unix: i64) -> Option<String> {
    let d = time::OffsetDateTime::from_unix_timestamp(unix).ok()?.date();
    Some(format!(
        "{:04}-{:02}-{:02}",
        d.year(),
        u8::from(d.month()),
        d.day()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        id: "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
        secret: "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE",
    };

    /// The guide's worked example (DescribeInstances, 2019-02-25).
    fn guide_example() -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "POST",
            "/",
            vec![
                h("Host", "cvm.tencentcloudapi.com"),
                h("Content-Type", "application/json; charset=utf-8"),
                h("X-TC-Action", "DescribeInstances"),
                h("X-TC-Timestamp", "1551113065"),
                h(
                    "Authorization",
                    "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, \
                     SignedHeaders=content-type;host, \
                     Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168",
                ),
            ],
            br#"{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}"#
                .to_vec(),
        )
    }

    #[test]
    fn accepts_the_guide_example() {
        let v = verify(&guide_example(), &KEY).unwrap();
        assert_eq!((v.timestamp, v.service.as_str()), (1551113065, "cvm"));
        assert_eq!(
            sha256_hex(v.canonical_request.as_bytes()),
            "5ffe6a04c0664d6b969fab9a13bdab201d63ee709638e2749d62a09ca18d7031"
        );
    }

    #[test]
    fn refuses_changes() {
        let mut r = guide_example();
        r.body[2] = b'M';
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
        let mut r = guide_example();
        r.headers[3].1 = "1551113066".into();
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
        let mut r = guide_example();
        r.headers[3].1 = "1551199999".into(); // the next UTC day
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Malformed(_))));
        let mut r = guide_example();
        r.headers[0].1 = "cbs.tencentcloudapi.com".into();
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Malformed(_))));
    }

    #[test]
    fn dates() {
        assert_eq!(utc_date(1735689599).unwrap(), "2024-12-31");
        assert_eq!(utc_date(1735689600).unwrap(), "2025-01-01");
    }
}
