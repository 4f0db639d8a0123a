//! Alibaba Cloud OSS signature V1 ("Include a V1 signature in the
//! Authorization header", alibabacloud.com/help/en/oss/developer-reference/
//! include-signatures-in-the-authorization-header).
//!
//! ```text
//! Authorization: OSS <AccessKeyId>:<Signature>
//! StringToSign = VERB \n Content-MD5 \n Content-Type \n Date \n
//!                CanonicalizedOSSHeaders CanonicalizedResource
//! Signature    = Base64(HMAC-SHA1(AccessKeySecret, StringToSign))
//! ```
//!
//! - Date: the `Date` header (an `x-oss-date` header takes its place).
//! - CanonicalizedOSSHeaders: `x-oss-*` headers, lower-case names, trimmed
//!   values, sorted, `name:value\n` each.
//! - CanonicalizedResource: `/<bucket>/<object key>` (not encoded), then the
//!   sub-resources the request carries, sorted by name: `?acl`,
//!   `?uploadId=x&partNumber=1`. Other parameters are not signed.

use super::crypto::hmac_sha1_matches;
use super::{
    decoded_query, id_and_base64_signature, malformed, object_key, prefixed_header_block,
    subresource_suffix, Key, Rejection, WireRequest,
};

/// The sub-resources the guide lists (those a stand-in may see and more).
const SUBRESOURCES: &[&str] = &[
    "acl",
    "append",
    "bucketInfo",
    "callback",
    "callback-var",
    "cname",
    "comp",
    "continuation-token",
    "cors",
    "delete",
    "encryption",
    "endTime",
    "img",
    "inventory",
    "inventoryId",
    "lifecycle",
    "live",
    "location",
    "logging",
    "objectMeta",
    "partNumber",
    "policy",
    "position",
    "qos",
    "referer",
    "replication",
    "replicationLocation",
    "replicationProgress",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "security-token",
    "startTime",
    "stat",
    "status",
    "style",
    "styleName",
    "symlink",
    "tagging",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "vod",
    "website",
    "worm",
    "wormExtend",
    "wormId",
    "x-oss-process",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The date that was signed (`Date`, or `x-oss-date`): the caller checks its age.
    pub date: String,
    pub string_to_sign: String,
}

/// Verifies `req`, sent to `bucket` (virtual host; `None` for a
/// service-level call).
pub fn verify(req: &WireRequest, key: &Key, bucket: Option<&str>) -> Result<Verified, Rejection> {
    let (id, sent) = id_and_base64_signature(req, "OSS")?;
    if id != key.id {
        return Err(Rejection::UnknownKey(id.to_string()));
    }
    let date = match req.only_header("x-oss-date")? {
        Some(d) => d,
        None => req
            .only_header("date")?
            .ok_or_else(|| malformed("no Date header"))?,
    }
    .trim()
    .to_string();
    let resource = match bucket {
        Some(b) => format!("/{b}/{}", object_key(req)?),
        None => format!("/{}", object_key(req)?),
    };
    let query = decoded_query(req)?;
    let string_to_sign = format!(
        "{}\n{}\n{}\n{date}\n{}{resource}{}",
        req.method,
        req.only_header("content-md5")?.unwrap_or_default().trim(),
        req.only_header("content-type")?.unwrap_or_default().trim(),
        prefixed_header_block(req, |n| n.starts_with("x-oss-")),
        subresource_suffix(&query, |k| SUBRESOURCES.contains(&k)),
    );
    if !hmac_sha1_matches(key.secret.as_bytes(), string_to_sign.as_bytes(), &sent) {
        return Err(Rejection::Mismatch {
            canonical: string_to_sign,
        });
    }
    Ok(Verified {
        date,
        string_to_sign,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        id: "LTAI5tGpuformGoldenKey01",
        secret: "GpuformGoldenSecretNotARealKey0123456789",
    };

    /// PutBucketTagging as `oss2` 2.19.1 signed it with V1 (fixtures/object_storage).
    fn sdk_put_tagging() -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "PUT",
            "http://gpuform-datasets-01.oss-cn-hangzhou.aliyuncs.com/?tagging=",
            vec![
                h("Host", "gpuform-datasets-01.oss-cn-hangzhou.aliyuncs.com"),
                h("date", "Sat, 09 Mar 2024 16:00:01 GMT"),
                h(
                    "authorization",
                    "OSS LTAI5tGpuformGoldenKey01:GOPmvaxPISTSQmC/Fg2J1Zqh9qM=",
                ),
            ],
            b"<Tagging><TagSet/></Tagging>".to_vec(),
        )
    }

    #[test]
    fn accepts_the_sdk_request_and_refuses_changes() {
        let v = verify(&sdk_put_tagging(), &KEY, Some("gpuform-datasets-01")).unwrap();
        assert_eq!(
            v.string_to_sign,
            "PUT\n\n\nSat, 09 Mar 2024 16:00:01 GMT\n/gpuform-datasets-01/?tagging"
        );
        let mut r = sdk_put_tagging();
        r.query = "lifecycle".into();
        assert!(matches!(
            verify(&r, &KEY, Some("gpuform-datasets-01")),
            Err(Rejection::Mismatch { .. })
        ));
        // Parameters that are not sub-resources are not signed.
        let mut r = sdk_put_tagging();
        r.query.push_str("&max-keys=5");
        assert!(verify(&r, &KEY, Some("gpuform-datasets-01")).is_ok());
        let mut r = sdk_put_tagging();
        r.headers.push(("x-oss-acl".into(), "public-read".into()));
        assert!(matches!(
            verify(&r, &KEY, Some("gpuform-datasets-01")),
            Err(Rejection::Mismatch { .. })
        ));
        let mut r = sdk_put_tagging();
        r.headers[2].1 = "OSS LTAI5tGpuformGoldenKey01 no-colon".into();
        assert!(matches!(
            verify(&r, &KEY, Some("gpuform-datasets-01")),
            Err(Rejection::Malformed(_))
        ));
    }
}
