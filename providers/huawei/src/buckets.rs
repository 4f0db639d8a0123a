//! Object-storage buckets on Huawei Cloud OBS, over the shared S3-dialect
//! flow of `gpuform-objstore`: this file holds only OBS's [`Dialect`] and
//! its signer hook. What OBS needs, from its API reference
//! (support.huaweicloud.com/api-obs, page ids below):
//!
//! * Addressing: `<bucket>.obs.<region>.myhuaweicloud.com`; listing the
//!   buckets: `GET /` on `obs.<region>.myhuaweicloud.com` (obs_04_0020).
//! * Signature: `Authorization: OBS AK:Signature` (HMAC-SHA1,
//!   obs_04_0010), `gpuform_signing::obs` — not the APIG signer of the
//!   other Huawei services.
//! * Creating a bucket (obs_04_0021): `PUT /` with `x-obs-storage-class`
//!   (`STANDARD`, `WARM`, `COLD`), `x-obs-acl: private` and the body
//!   `<CreateBucketConfiguration><Location>region</Location>`. A namesake in
//!   the same account and region answers 200 (the create is idempotent),
//!   any other namesake 409 `BucketAlreadyExists` /
//!   `BucketAlreadyOwnedByYou`. Tags are not taken by the create, so the
//!   shared flow looks the name up first (`GET ?tagging`) and adopts only
//!   this address's bucket or an untagged empty one (a create cut before
//!   its tags).
//! * Storage class read back: `GET /?storageClass` →
//!   `StoragePolicy/DefaultStorageClass` (obs_04_0045).
//! * Tags `?tagging` (obs_04_0049): `<Tagging><TagSet><Tag><Key><Value>`,
//!   Content-MD5 required; at most 20 tags, key ≤ 36 and value ≤ 43
//!   characters, none of `, * | / < > = \`; GET answers 404 `NoSuchTagSet`
//!   when none.
//! * Versioning `?versioning` (obs_04_0041): `<VersioningConfiguration>
//!   <Status>Enabled|Suspended`.
//! * Lifecycle `?lifecycle` (obs_04_0034): `<LifecycleConfiguration><Rule>
//!   <ID/><Prefix/><Status>Enabled</Status><Transition><Days/>
//!   <StorageClass>COLD</StorageClass></Transition>
//!   <NoncurrentVersionExpiration><NoncurrentDays/>…` (a `Prefix` of its
//!   own, no `Filter`), Content-MD5 required; DELETE `?lifecycle` removes it.
//! * Encryption `?encryption` (obs_04_0062): `<ServerSideEncryption
//!   Configuration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>
//!   kms` without `KMSMasterKeyID`: "the default master key will be used",
//!   the one KMS keeps for OBS (`obs/default`), i.e. cloud-managed;
//!   DELETE `?encryption` removes it (obs_04_0064).
//! * Public access: the bucket ACL (`x-obs-acl: private` at creation, `GET
//!   ?acl`, public grants go to the canned `Everyone`, obs_04_0028), as
//!   the shared flow reads it. OBS also has a public access block
//!   (`?publicAccessBlock`, obs_04_0174) that gpuform does not set yet.
//! * Emptying: listing versions `?versions` (obs_04_0022), deleting objects
//!   in a batch `POST /?delete` (obs_04_0090: at most 1,000, Content-MD5).
//! * Deleting a bucket (obs_04_0024): 409 `BucketNotEmpty`.
//! * Errors (obs_04_0115): XML `<Error><Code><Message><RequestId>`.

use gpuform_objstore::{ClassAt, ClassRead, Dialect, ObjStore, RuleScope, Signer, SseForm};
use gpuform_provider::Result;
use gpuform_provider::{Cloud, ErrorKind, ProviderError};
use gpuform_signing::{obs, Credentials, Request};

/// OBS's dialect of the shared bucket flow.
pub const OBS: Dialect = Dialect {
    cloud: Cloud::Huawei,
    service: &gpuform_catalog::storage::OBS,
    header_prefix: "x-obs-",
    // ListBuckets and `Location` name a region as `cn-north-4`.
    location: |region| region.to_string(),
    location_element: Some("Location"),
    class_at: ClassAt::Header("x-obs-storage-class"),
    class_read: ClassRead::Subresource {
        query: "storageClass",
        element: "DefaultStorageClass",
    },
    rule_scope: RuleScope::EmptyPrefix,
    sse: SseForm::Configuration,
    sse_algorithm: "kms",
    // "A bucket can have up to 20 tags" (obs_04_0049).
    max_tags: 20,
    check_tag_value,
    error_kind,
};

/// OBS's own error codes (obs_04_0115), before the dialect's shared table.
fn error_kind(code: &str) -> Option<ErrorKind> {
    match code {
        // A sub-resource never set: not the bucket.
        "NoSuchTagSet" | "NoSuchLifecycleConfiguration" | "NoSuchEncryptionConfiguration" => {
            Some(ErrorKind::NotFound)
        }
        "InvalidLocationConstraint" | "InvalidStorageClass" | "InvalidTag" | "BadDigest" => {
            Some(ErrorKind::Invalid)
        }
        _ => None,
    }
}

/// OBS's limits on a tag value (obs_04_0049: at most 43 characters, none
/// of `, * | / < > = \` nor control characters), checked on gpuform's own
/// tags before any call: a long bucket key makes a long address.
fn check_tag_value(key: &str, value: &str) -> Result<()> {
    const MAX: usize = 43;
    let bad = value
        .chars()
        .any(|c| ",*|/<>=\\".contains(c) || c.is_control());
    if value.chars().count() > MAX || bad {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "OBS cannot tag a bucket with {key}=`{value}`: tag values have at most {MAX} \
                 characters and none of , * | / < > = \\; use a shorter bucket key in the spec"
            ),
        ));
    }
    Ok(())
}

/// Signs with `OBS AK:signature` (HMAC-SHA1) for the virtual host's bucket.
struct ObsSigner {
    creds: Credentials,
}

impl Signer for ObsSigner {
    fn sign(&self, req: &mut Request, _region: &str, bucket: Option<&str>) -> Result<(), String> {
        let signed = obs::OBS
            .sign_now(req, &self.creds, bucket)
            .map_err(|e| e.to_string())?;
        req.headers.extend(signed.headers);
        Ok(())
    }
}

/// The OBS client of a provider: `endpoint` replaces where requests go
/// (a stand-in); the virtual host stays the signed `Host`.
pub(crate) fn store(
    creds: Credentials,
    endpoint: Option<gpuform_http::Endpoint>,
) -> Result<ObjStore> {
    ObjStore::new(OBS, Box::new(ObsSigner { creds }), endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuform_provider::StorageClass;

    #[test]
    fn hosts_classes_and_codes() {
        assert_eq!(
            OBS.bucket_host("cn-north-4", "data"),
            "data.obs.cn-north-4.myhuaweicloud.com"
        );
        assert_eq!(OBS.class_name(StorageClass::Infrequent), "WARM");
        assert_eq!(OBS.class_of("cold"), Some(StorageClass::Archive));
        assert_eq!(OBS.header("acl"), "x-obs-acl");
        assert_eq!(OBS.classify(Some("NoSuchTagSet"), 404), ErrorKind::NotFound);
        assert_eq!(
            OBS.classify(Some("InvalidLocationConstraint"), 400),
            ErrorKind::Invalid
        );
    }

    #[test]
    fn ownership_values_obs_would_refuse_are_refused_first() {
        assert!(check_tag_value("gpuform:address", "bucket.datasets").is_ok());
        let long = format!("bucket.{}", "d".repeat(40));
        let e = check_tag_value("gpuform:address", &long).unwrap_err();
        assert!(e.message.contains("at most 43"), "{e}");
        assert!(check_tag_value("gpuform:address", "a/b").is_err());
        assert!(check_tag_value("gpuform:address", "a=b").is_err());
    }

    #[test]
    fn the_bucket_is_in_the_signed_resource() {
        let s = ObsSigner {
            creds: Credentials::new("AK", "secret"),
        };
        let mut r = Request::new("GET", "data.obs.cn-north-4.myhuaweicloud.com", "/")
            .with_query("storageClass", "");
        s.sign(&mut r, "cn-north-4", Some("data")).unwrap();
        let signed = obs::OBS.sign(
            &r,
            &Credentials::new("AK", "secret"),
            Some("data"),
            gpuform_signing::OffsetDateTime::now_utc(),
        );
        assert!(signed.is_err(), "Date and Authorization are already set");
        let auth = r.header("Authorization").unwrap();
        assert!(auth.starts_with("OBS AK:"), "{auth}");
        assert!(r.headers.iter().any(|(k, _)| k == "Date"));
    }
}
