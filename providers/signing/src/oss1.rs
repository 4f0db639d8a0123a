//! Alibaba Cloud OSS signature V1 (`Authorization: OSS AccessKeyId:Signature`,
//! HMAC-SHA1; OSS "Include a V1 signature in the Authorization header"), as
//! the official `oss2` SDK sends it with `oss2.Auth`. V4 ([`crate::oss4`]) is
//! the current scheme; V1 is still accepted and is what older tools send.
//!
//! ```text
//! StringToSign = VERB \n Content-MD5 \n Content-Type \n Date \n
//!                CanonicalizedOSSHeaders CanonicalizedResource
//! Signature    = Base64(HMAC-SHA1(secret, StringToSign))
//! ```
//!
//! * CanonicalizedOSSHeaders: every `x-oss-*` header, lower-case name,
//!   trimmed value, sorted, `name:value\n` each. A signed header sent twice
//!   is refused ([`SignError::RepeatedHeader`]): the guide does not say how
//!   to sign it.
//! * CanonicalizedResource: `/bucket/key` (decoded, not encoded), then the
//!   sub-resources of [`SUBRESOURCES`] that the query carries, sorted,
//!   `?acl&versionId=v1` (a parameter with an empty value is its name
//!   alone); other query parameters (`prefix`, `max-keys`…) are not signed.
//!
//! [`Signed::canonical_request`] holds the canonicalized headers and
//! resource (V1 has no canonical request of its own).

use crate::canon::{bucket_resource, first_repeat, subresources};
use crate::s3v2::{DateStandIn, Dialect};
use crate::{Request, SignError};

/// The query parameters V1 signs as sub-resources (the guide's list, as the
/// SDK keeps it).
pub const SUBRESOURCES: &[&str] = &[
    "acl",
    "append",
    "asyncFetch",
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
    "group",
    "img",
    "inventory",
    "inventoryId",
    "lifecycle",
    "link",
    "live",
    "location",
    "logging",
    "metaQuery",
    "objectInfo",
    "objectMeta",
    "partNumber",
    "policy",
    "position",
    "publicAccessBlock",
    "qos",
    "qosInfo",
    "referer",
    "regionList",
    "replication",
    "replicationLocation",
    "replicationProgress",
    "requestPayment",
    "resourceGroup",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "security-token",
    "sequential",
    "startTime",
    "stat",
    "status",
    "style",
    "styleName",
    "symlink",
    "tagging",
    "transferAcceleration",
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
    "x-oss-ac-forward-allow",
    "x-oss-ac-source-ip",
    "x-oss-ac-subnet-mask",
    "x-oss-ac-vpc-id",
    "x-oss-async-process",
    "x-oss-process",
    "x-oss-request-payer",
    "x-oss-traffic-limit",
];

/// OSS V1's variant of the shared flow: an `x-oss-date` header stands in
/// for Date, as in the SDK.
pub const OSS_V1: Dialect = Dialect {
    vendor: "OSS",
    date_header: "x-oss-date",
    date_stand_in: DateStandIn::SignedAsDate,
    canonical_headers,
    resource: |req, bucket| {
        format!(
            "{}{}",
            bucket_resource(bucket, &req.path),
            subresources(&req.query, |k| SUBRESOURCES.contains(&k))
        )
    },
};

/// The `x-oss-*` headers; `Content-MD5` and `Content-Type` (signed in
/// their own lines) are checked for repeats too.
fn canonical_headers(req: &Request) -> Result<String, SignError> {
    let mut oss: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string()))
        .filter(|(n, _)| n.starts_with("x-oss-") || n == "content-md5" || n == "content-type")
        .collect();
    oss.sort();
    if let Some(name) = first_repeat(&oss) {
        return Err(SignError::RepeatedHeader(name.to_string()));
    }
    oss.retain(|(n, _)| n.starts_with("x-oss-"));
    Ok(oss.iter().map(|(n, v)| format!("{n}:{v}\n")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Credentials, OffsetDateTime};

    #[test]
    fn string_to_sign_layout() {
        let r = Request::new("put", "b.oss-cn-hangzhou.aliyuncs.com", "/k/a b")
            .with_query("acl", "")
            .with_query("prefix", "p")
            .with_header("Content-Type", "text/plain")
            .with_header("Content-MD5", "ZGF0YQ==")
            .with_header("X-OSS-Meta-Z", " 1 ")
            .with_header("x-oss-acl", "private");
        let t = OffsetDateTime::from_unix_timestamp(1710000001).unwrap();
        let s = OSS_V1
            .sign(&r, &Credentials::new("id", "sk"), Some("b"), t)
            .unwrap();
        assert_eq!(
            s.string_to_sign,
            "PUT\nZGF0YQ==\ntext/plain\nSat, 09 Mar 2024 16:00:01 GMT\n\
             x-oss-acl:private\nx-oss-meta-z:1\n/b/k/a b?acl"
        );
        assert_eq!(s.headers[0].1, "Sat, 09 Mar 2024 16:00:01 GMT");
        assert_eq!(s.authorization(), format!("OSS id:{}", s.signature));
        let again = r.clone().with_header("Date", "x");
        assert!(OSS_V1
            .sign(&again, &Credentials::new("id", "sk"), Some("b"), t)
            .is_err());
    }

    #[test]
    fn repeated_signed_headers_are_refused() {
        let t = OffsetDateTime::from_unix_timestamp(1710000001).unwrap();
        let c = Credentials::new("id", "sk");
        for name in ["x-oss-meta-a", "content-type"] {
            let r = Request::new("PUT", "h", "/k")
                .with_header(name, "1")
                .with_header(name.to_ascii_uppercase(), "2");
            assert_eq!(
                OSS_V1.sign(&r, &c, Some("b"), t),
                Err(SignError::RepeatedHeader(name.into()))
            );
        }
    }

    #[test]
    fn subresource_list_is_sorted_for_review() {
        let mut sorted = SUBRESOURCES.to_vec();
        sorted.sort_by_key(|s| s.to_ascii_lowercase());
        assert_eq!(sorted, SUBRESOURCES);
    }
}
