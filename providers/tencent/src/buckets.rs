//! Object-storage buckets on Tencent Cloud COS (XML API), over the shared
//! S3-dialect flow of `gpuform-objstore`: this file holds only COS's
//! [`Dialect`] and its signer hook. What COS needs, from its API reference
//! (tencentcloud.com/document/product/436, page numbers below):
//!
//! * Addressing: `<BucketName-APPID>.cos.<Region>.myqcloud.com` (7738).
//!   The APPID is the account's numeric id (console "Account Info"); COS
//!   names carry it, so the spec's name is the full `<name>-<APPID>`
//!   (`gpuform_provider::bucket_name` refuses one without it). Listing the
//!   buckets of a region: `GET /` on `cos.<Region>.myqcloud.com`, with the
//!   optional `tagkey` / `tagvalue` filter, `marker` / `max-keys` paging
//!   (8291, "GET Service").
//! * Signature: `q-sign-algorithm=sha1` (7778), `gpuform_signing::cos`,
//!   valid from a minute before the call for [`SIGN_VALID_SECS`]; temporary
//!   keys send `x-cos-security-token` (signed, as every `x-cos-*` header).
//! * PUT Bucket (7738): no body (the region is the host's), `x-cos-acl:
//!   private` and `x-cos-tagging: k1=v1&k2=v2` (tags set by the creating
//!   call itself, up to 50). Errors 409 `BucketAlreadyExists` (someone
//!   else's) and `BucketAlreadyOwnedByYou`.
//! * Storage class: COS has no bucket default class (objects carry
//!   `x-cos-storage-class`: `STANDARD`, `STANDARD_IA`, `ARCHIVE`); the
//!   lifecycle transitions take `STANDARD_IA` / `ARCHIVE` (8280). So the
//!   neutral class is kept as the tag `gpuform:storage-class`
//!   ([`ClassAt::Tag`]): it prices the bucket in the plan, and uploads say
//!   their class themselves.
//! * PUT Bucket tagging `?tagging` (8281): `<Tagging><TagSet><Tag><Key>
//!   <Value>`, Content-MD5; GET answers 404 `NoSuchTagSetError` when none
//!   (8277), which is "no tags", not "no bucket".
//! * PUT Bucket versioning `?versioning` (19889): `<VersioningConfiguration>
//!   <Status>Enabled|Suspended</Status>`.
//! * PUT Bucket lifecycle `?lifecycle` (8280): `<LifecycleConfiguration>
//!   <Rule><ID/><Filter><Prefix/></Filter><Status>Enabled</Status>
//!   <Transition><Days/><StorageClass>ARCHIVE</StorageClass></Transition>
//!   <NoncurrentVersionExpiration><NoncurrentDays/>…`, Content-MD5; DELETE
//!   `?lifecycle` removes it (8284).
//! * PUT Bucket encryption `?encryption` (33461): `<ServerSideEncryption
//!   Configuration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>
//!   AES256` (SSE-COS, cloud-managed keys); DELETE `?encryption` removes it.
//! * Public access: COS has no public-access-block API; a bucket is private
//!   by its ACL (`x-cos-acl: private`, PUT/GET Bucket acl 7737/7733).
//! * Emptying: GET Bucket Object Versions `?versions` (35521; `key-marker`,
//!   `version-id-marker`, `IsTruncated`), DELETE Multiple Objects
//!   `POST /?delete` (8289: at most 1,000 keys, Content-MD5 required,
//!   `<Delete><Quiet>true</Quiet><Object><Key/><VersionId/>`).
//! * DELETE Bucket (7732): 409 `BucketNotEmpty`, 404 `NoSuchBucket`.
//! * Errors (7730): XML `<Error><Code><Message><RequestId>`.

use gpuform_objstore::{ClassAt, ClassRead, Dialect, ObjStore, RuleScope, Signer, SseForm};
use gpuform_provider::Result;
use gpuform_provider::{Cloud, ErrorKind};
use gpuform_signing::{cos, Credentials, Request};

/// How long a COS signature is valid (the SDK's default is 10,000 s; a
/// call is signed just before it is sent).
pub const SIGN_VALID_SECS: u32 = 600;

/// COS's dialect of the shared bucket flow.
pub const COS: Dialect = Dialect {
    cloud: Cloud::Tencent,
    service: &gpuform_catalog::storage::COS,
    header_prefix: "x-cos-",
    // GET Service names a bucket's region as `ap-guangzhou` (8291).
    location: |region| region.to_string(),
    // The region is the host's; PUT Bucket takes no configuration (7738).
    location_element: None,
    class_at: ClassAt::Tag,
    class_read: ClassRead::Tag,
    rule_scope: RuleScope::EmptyFilter,
    sse: SseForm::Configuration,
    // SSE-COS: keys COS manages (33461).
    sse_algorithm: "AES256",
    // "up to 50 different tags" (8281).
    max_tags: 50,
    check_tag_value: gpuform_objstore::any_tag_value,
    error_kind,
};

/// COS's own error codes (7730 and the bucket pages), before the dialect's
/// shared table.
fn error_kind(code: &str) -> Option<ErrorKind> {
    match code {
        // A sub-resource never set (8277, 8278, 33460): not the bucket.
        "NoSuchTagSetError" | "NoSuchLifecycleConfiguration" | "NoSuchEncryptionConfiguration" => {
            Some(ErrorKind::NotFound)
        }
        "InvalidDigest" | "BadDigest" | "InvalidBucketState" => Some(ErrorKind::Invalid),
        "RequestIsExpired" | "InvalidAccessKeyId" => Some(ErrorKind::Auth),
        _ => None,
    }
}

/// Signs with `q-sign-algorithm=sha1`; temporary keys add their token.
struct CosSigner {
    creds: Credentials,
    token: Option<String>,
}

impl Signer for CosSigner {
    fn sign(&self, req: &mut Request, _region: &str, _bucket: Option<&str>) -> Result<(), String> {
        if let Some(t) = &self.token {
            req.headers
                .push(("x-cos-security-token".to_string(), t.clone()));
        }
        let signed = cos::sign_now(req, &self.creds, SIGN_VALID_SECS).map_err(|e| e.to_string())?;
        req.headers.extend(signed.headers);
        Ok(())
    }
}

/// The COS client of a provider: `endpoint` replaces where requests go
/// (a stand-in); the virtual host stays the signed `Host`.
pub(crate) fn store(
    creds: Credentials,
    token: Option<String>,
    endpoint: Option<gpuform_http::Endpoint>,
) -> Result<ObjStore> {
    ObjStore::new(COS, Box::new(CosSigner { creds, token }), endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuform_provider::StorageClass;

    #[test]
    fn hosts_classes_and_codes() {
        assert_eq!(
            COS.bucket_host("ap-guangzhou", "data-1250000000"),
            "data-1250000000.cos.ap-guangzhou.myqcloud.com"
        );
        assert_eq!(
            (COS.service.host)("ap-beijing"),
            "cos.ap-beijing.myqcloud.com"
        );
        assert_eq!(COS.class_name(StorageClass::Infrequent), "STANDARD_IA");
        assert_eq!(COS.class_of("ARCHIVE"), Some(StorageClass::Archive));
        assert_eq!(COS.header("acl"), "x-cos-acl");
        assert_eq!(
            COS.classify(Some("NoSuchTagSetError"), 404),
            ErrorKind::NotFound
        );
        assert_eq!(
            COS.classify(Some("BucketAlreadyExists"), 409),
            ErrorKind::Invalid
        );
    }

    #[test]
    fn the_token_is_signed_with_the_request() {
        let s = CosSigner {
            creds: Credentials::new("AKID", "secret"),
            token: Some("tok".into()),
        };
        let mut r = Request::new("GET", "b-1250000000.cos.ap-guangzhou.myqcloud.com", "/")
            .with_query("tagging", "");
        s.sign(&mut r, "ap-guangzhou", Some("b-1250000000"))
            .unwrap();
        let auth = r.header("Authorization").unwrap();
        assert!(
            auth.contains("q-header-list=host;x-cos-security-token&q-url-param-list=tagging&"),
            "{auth}"
        );
        assert!(!auth.contains("secret"));
    }
}
