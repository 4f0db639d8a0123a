//! Object Storage Service (OSS) buckets, on the shared S3-dialect flow of
//! `gpuform-objstore` with the OSS dialect below and OSS signature V4
//! (`gpuform_signing::oss4`).
//!
//! OSS specifics (API reference, alibabacloud.com/help/en/oss/developer-reference/):
//! - endpoint `https://<bucket>.oss-<region>.aliyuncs.com` ("Regions and
//!   endpoints"), the V4 signing region being the bare region id;
//!   `GPUFORM_ALIBABA_OSS_ENDPOINT` sends every request to one base URL
//!   instead (the `Host` header and signature keep the OSS host);
//! - PutBucket: `x-oss-acl: private`, the class in
//!   `CreateBucketConfiguration/StorageClass` (Standard, IA, Archive); a
//!   second PutBucket of one's own bucket succeeds and rewrites it, so the
//!   flow asks GetBucketTags first;
//! - class read from GetBucketInfo (`?bucketInfo`), encryption as
//!   `ServerSideEncryptionRule` with `AES256` (OSS-managed keys), at most
//!   20 tags per bucket (PutBucketTags);
//! - error codes ("OSS error codes"): `QpsLimitExceeded` is throttling,
//!   `BucketAlreadyExists` (0015-00000102) another account's name.

use gpuform_objstore::{ClassAt, ClassRead, Dialect, RuleScope, Signer, SseForm};
use gpuform_provider::Result;
use gpuform_provider::{Cloud, ErrorKind};
use gpuform_signing::{oss4, Credentials, Request};

/// Points OSS calls at another base URL (a stand-in, a proxy).
pub const ENV_OSS_ENDPOINT: &str = "GPUFORM_ALIBABA_OSS_ENDPOINT";

/// The OSS dialect.
pub const OSS: Dialect = Dialect {
    cloud: Cloud::Alibaba,
    service: &gpuform_catalog::storage::OSS,
    header_prefix: "x-oss-",
    location: |r| format!("oss-{r}"),
    location_element: None,
    class_at: ClassAt::Body("StorageClass"),
    class_read: ClassRead::Subresource {
        query: "bucketInfo",
        element: "StorageClass",
    },
    rule_scope: RuleScope::EmptyPrefix,
    sse: SseForm::Rule,
    sse_algorithm: "AES256",
    max_tags: 20,
    check_tag_value: gpuform_objstore::any_tag_value,
    error_kind: oss_error,
};

fn oss_error(code: &str) -> Option<ErrorKind> {
    match code {
        "QpsLimitExceeded" | "TooManyRequests" => Some(ErrorKind::Throttled),
        "NoSuchServerSideEncryptionRule" | "NoSuchLifecycle" => Some(ErrorKind::NotFound),
        _ => None,
    }
}

/// OSS V4 over the provider's credentials (and STS token, sent as
/// `x-oss-security-token` and signed with the other `x-oss-*` headers).
pub(crate) struct OssSigner {
    pub creds: Credentials,
    pub token: Option<String>,
}

impl Signer for OssSigner {
    fn sign(&self, req: &mut Request, region: &str, bucket: Option<&str>) -> Result<(), String> {
        if let Some(t) = &self.token {
            req.headers
                .push(("x-oss-security-token".to_string(), t.clone()));
        }
        let signed = oss4::sign_now(req, &self.creds, oss4::Scope { region, bucket }, &[])
            .map_err(|e| e.to_string())?;
        signed.apply(req);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuform_provider::StorageClass;

    /// OSS's dialect, and through it the shared Dialect's lookups: class
    /// names read case-blind, hosts, header prefix, and the status-only
    /// fallback of classify when OSS sends no code.
    #[test]
    fn dialect() {
        assert_eq!(
            OSS.bucket_host("cn-beijing", "data"),
            "data.oss-cn-beijing.aliyuncs.com"
        );
        assert_eq!(OSS.class_name(StorageClass::Infrequent), "IA");
        assert_eq!(OSS.class_of("ia"), Some(StorageClass::Infrequent));
        assert_eq!(OSS.class_of("ColdArchive"), None);
        assert_eq!(OSS.header("acl"), "x-oss-acl");
        assert_eq!(
            OSS.classify(Some("QpsLimitExceeded"), 503),
            ErrorKind::Throttled
        );
        assert_eq!(
            OSS.classify(Some("QpsLimitExceeded"), 400),
            ErrorKind::Throttled
        );
        assert_eq!(
            OSS.classify(Some("BucketAlreadyExists"), 409),
            ErrorKind::Invalid
        );
        assert_eq!(OSS.classify(Some("NoSuchBucket"), 404), ErrorKind::NotFound);
        assert_eq!(OSS.classify(None, 502), ErrorKind::Transient);
        assert_eq!(OSS.classify(None, 503), ErrorKind::Throttled);
    }

    #[test]
    fn the_token_is_signed() {
        let s = OssSigner {
            creds: Credentials::new("AK", "SK"),
            token: Some("TOKEN".into()),
        };
        let mut r =
            Request::new("GET", "b.oss-cn-hangzhou.aliyuncs.com", "/").with_query("tagging", "");
        s.sign(&mut r, "cn-hangzhou", Some("b")).unwrap();
        let auth = r.header("authorization").unwrap();
        assert!(
            auth.starts_with("OSS4-HMAC-SHA256 Credential=AK/"),
            "{auth}"
        );
        assert_eq!(r.header("x-oss-security-token"), Some("TOKEN"));
    }
}
