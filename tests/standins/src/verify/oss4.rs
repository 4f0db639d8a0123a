//! Alibaba Cloud OSS `OSS4-HMAC-SHA256` ("Include a V4 signature in the
//! Authorization header", alibabacloud.com/help/en/oss/developer-reference/
//! recommend-to-use-signature-version-4).
//!
//! ```text
//! Authorization: OSS4-HMAC-SHA256 Credential=<AK>/<yyyymmdd>/<region>/oss/aliyun_v4_request,
//!                [AdditionalHeaders=<a;b>,] Signature=<hex>          (fields in any order)
//! CanonicalRequest = VERB \n CanonicalURI \n CanonicalQueryString \n CanonicalHeaders \n
//!                    AdditionalHeaders \n x-oss-content-sha256
//! StringToSign     = "OSS4-HMAC-SHA256" \n x-oss-date \n <yyyymmdd>/<region>/oss/aliyun_v4_request \n
//!                    hex(SHA256(CanonicalRequest))
//! SigningKey       = HMAC-SHA256 chain: "aliyun_v4" + SK → date → region → "oss" → "aliyun_v4_request"
//! ```
//!
//! - CanonicalURI: `/<bucket>/<object key>` URI-encoded, `/` not encoded.
//! - CanonicalQueryString: names and values URI-encoded, sorted by name;
//!   a parameter without a value is its name alone.
//! - CanonicalHeaders: `x-oss-*`, `content-type` and `content-md5` when
//!   present, plus the AdditionalHeaders; lower-case names, trimmed values,
//!   sorted by name.
//! - `x-oss-date` and `x-oss-content-sha256` are required; the latter is
//!   `UNSIGNED-PAYLOAD` or the hex SHA-256 of the body.

use super::crypto::{hmac_sha256, sha256_hex};
use super::text::encode;
use super::{
    auth_fields_optional, check_signature, decoded_query, field, malformed, object_key,
    signed_names, Key, Rejection, WireRequest,
};

pub const ALGORITHM: &str = "OSS4-HMAC-SHA256";
const UNSIGNED: &str = "UNSIGNED-PAYLOAD";

/// What a valid signature vouches for; the caller checks the date's age.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `x-oss-date` as sent (`20240309T160000Z`).
    pub date: String,
    pub canonical_request: String,
}

/// Verifies `req`, sent to `bucket` (virtual host; `None` for a
/// service-level call) of a stand-in in `region`.
pub fn verify(
    req: &WireRequest,
    key: &Key,
    region: &str,
    bucket: Option<&str>,
) -> Result<Verified, Rejection> {
    let auth = req
        .only_header("authorization")?
        .ok_or_else(|| malformed("no Authorization header"))?;
    let rest = auth
        .strip_prefix(ALGORITHM)
        .and_then(|r| r.strip_prefix(' '))
        .ok_or_else(|| malformed(format!("Authorization is not {ALGORITHM}")))?;
    let fields = auth_fields_optional(rest, &["Credential", "Signature"], &["AdditionalHeaders"])?;

    let credential: Vec<&str> = field(&fields, "Credential").split('/').collect();
    let [id, day, cred_region, "oss", "aliyun_v4_request"] = credential[..] else {
        return Err(malformed(
            "Credential is not <id>/<date>/<region>/oss/aliyun_v4_request",
        ));
    };
    if id != key.id {
        return Err(Rejection::UnknownKey(id.to_string()));
    }
    if cred_region != region {
        return Err(malformed(format!(
            "the credential is scoped to region `{cred_region}`, this endpoint is `{region}`"
        )));
    }
    let date = req
        .only_header("x-oss-date")?
        .ok_or_else(|| malformed("no x-oss-date header"))?
        .trim();
    if date.len() != 16 || !date.starts_with(day) || day.len() != 8 {
        return Err(malformed("the credential's date is not x-oss-date's"));
    }
    let payload = req
        .only_header("x-oss-content-sha256")?
        .ok_or_else(|| malformed("no x-oss-content-sha256 header"))?
        .trim();
    if payload != UNSIGNED && payload != sha256_hex(&req.body) {
        return Err(Rejection::ContentHash);
    }

    let additional: Vec<&str> = match fields.iter().find(|(n, _)| *n == "AdditionalHeaders") {
        Some((_, list)) => signed_names(list)?,
        None => Vec::new(),
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    for (n, v) in &req.headers {
        let l = n.to_ascii_lowercase();
        let default = l.starts_with("x-oss-") || l == "content-type" || l == "content-md5";
        if default || additional.contains(&l.as_str()) {
            if headers.iter().any(|(k, _)| *k == l) {
                return Err(malformed(format!("header `{l}` arrived more than once")));
            }
            headers.push((l, v.trim().to_string()));
        }
    }
    for a in &additional {
        if !headers.iter().any(|(k, _)| k == a) {
            return Err(malformed(format!("additional header `{a}` did not arrive")));
        }
    }
    headers.sort();
    let header_block: String = headers.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();

    let resource = match bucket {
        Some(b) => format!("/{b}/{}", object_key(req)?),
        None => format!("/{}", object_key(req)?),
    };
    let uri = resource
        .split('/')
        .map(encode)
        .collect::<Vec<_>>()
        .join("/");
    let mut query: Vec<(String, String)> = decoded_query(req)?
        .iter()
        .map(|(k, v)| (encode(k), encode(v)))
        .collect();
    query.sort();
    let query: Vec<String> = query
        .into_iter()
        .map(|(k, v)| if v.is_empty() { k } else { format!("{k}={v}") })
        .collect();

    let canonical_request = format!(
        "{}\n{uri}\n{}\n{header_block}\n{}\n{payload}",
        req.method,
        query.join("&"),
        additional.join(";"),
    );
    let scope = format!("{day}/{region}/oss/aliyun_v4_request");
    let string_to_sign = format!(
        "{ALGORITHM}\n{date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let mut signing_key = format!("aliyun_v4{}", key.secret).into_bytes();
    for part in [day, region, "oss", "aliyun_v4_request"] {
        signing_key = hmac_sha256(&signing_key, part.as_bytes());
    }
    check_signature(&signing_key, &string_to_sign, &fields, &canonical_request)?;
    Ok(Verified {
        date: date.to_string(),
        canonical_request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        id: "LTAI5tGpuformGoldenKey01",
        secret: "GpuformGoldenSecretNotARealKey0123456789",
    };

    /// DeleteBucket as `oss2` 2.19.1 signed it (fixtures/object_storage).
    fn sdk_delete_bucket() -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "DELETE",
            "http://gpuform-datasets-01.oss-cn-hangzhou.aliyuncs.com/",
            vec![
                h("Host", "gpuform-datasets-01.oss-cn-hangzhou.aliyuncs.com"),
                h("x-oss-date", "20250228T123005Z"),
                h("x-oss-content-sha256", "UNSIGNED-PAYLOAD"),
                h(
                    "authorization",
                    "OSS4-HMAC-SHA256 Credential=LTAI5tGpuformGoldenKey01/20250228/cn-hangzhou/oss/\
                     aliyun_v4_request, Signature=fe7d65f8fe21c24c6d8685ce67be95f01914317cf86e56fdc2f8043156927230",
                ),
            ],
            vec![],
        )
    }

    #[test]
    fn accepts_the_sdk_request() {
        let v = verify(
            &sdk_delete_bucket(),
            &KEY,
            "cn-hangzhou",
            Some("gpuform-datasets-01"),
        )
        .unwrap();
        assert_eq!(v.date, "20250228T123005Z");
        assert!(v
            .canonical_request
            .starts_with("DELETE\n/gpuform-datasets-01/\n\n"));
        // The bucket is part of what is signed.
        assert!(matches!(
            verify(
                &sdk_delete_bucket(),
                &KEY,
                "cn-hangzhou",
                Some("gpuform-datasets-02")
            ),
            Err(Rejection::Mismatch { .. })
        ));
    }

    #[test]
    fn refuses_what_is_not_its_scope() {
        let r = sdk_delete_bucket();
        assert!(matches!(
            verify(&r, &KEY, "cn-beijing", Some("gpuform-datasets-01")),
            Err(Rejection::Malformed(_))
        ));
        let stranger = Key {
            id: "Other",
            secret: KEY.secret,
        };
        assert_eq!(
            verify(&r, &stranger, "cn-hangzhou", Some("gpuform-datasets-01")),
            Err(Rejection::UnknownKey("LTAI5tGpuformGoldenKey01".into()))
        );
        let mut hashed = r.clone();
        hashed.headers[2].1 = sha256_hex(b"other body");
        assert_eq!(
            verify(&hashed, &KEY, "cn-hangzhou", Some("gpuform-datasets-01")),
            Err(Rejection::ContentHash)
        );
        let mut empty_list = r;
        empty_list.headers[3].1.push_str(", AdditionalHeaders=");
        assert!(matches!(
            verify(
                &empty_list,
                &KEY,
                "cn-hangzhou",
                Some("gpuform-datasets-01")
            ),
            Err(Rejection::Malformed(_))
        ));
    }
}
