//! Reading buckets back from S3: every setting gpuform makes, so that one
//! changed by another client shows as drift, and the objects a bucket holds.

use super::sent_s3;
use super::{tag_pairs, Tags, RULE_ARCHIVE, RULE_CLASS, RULE_NONCURRENT};
use crate::errors::{map_s3, Op, OpError, Sending};
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::types::{BucketVersioningStatus, LifecycleRule, TransitionStorageClass};
use aws_sdk_s3::Client;
use gpuform_provider::attr;
use gpuform_provider::bucket::{FORCE_DESTROY_TAG, OBJECT_COUNT, OTHER_LIFECYCLE_RULES};
use gpuform_provider::Result;
use gpuform_provider::{
    Attrs, BucketLifecycle, Cloud, ErrorKind, ObservedResource, OwnershipTags, ResourceKind,
    StorageClass, UserTags,
};
use serde_json::{json, Value};

/// Pages of ListObjectVersions (1000 entries each) a read counts at most:
/// a bucket with more reports `object_count` 10,000 and
/// `object_count_capped: true` (a count is for the non-empty refusal, which
/// needs no exact figure; counting millions of objects on every plan would).
pub(crate) const COUNT_PAGES: usize = 10;
const PAGE: i32 = 1000;

/// The observed attribute that says `object_count` stopped at the cap.
const OBJECT_COUNT_CAPPED: &str = "object_count_capped";

/// Sends a request whose "nothing configured" codes mean `None` (a Get
/// call's); a bucket that is gone is a `NotFound` error.
pub(super) async fn absent<T, E: OpError>(
    action: &str,
    request: impl Sending<T, E>,
    none: &[&str],
) -> Result<Option<T>> {
    match request.await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.code().is_some_and(|c| none.contains(&c)) => Ok(None),
        Err(e) => Err(map_s3(action, Op::Other, e)),
    }
}

/// A bucket's tags (empty when it has none).
pub(super) async fn tags(c: &Client, name: &str) -> Result<Tags> {
    let request = c.get_bucket_tagging().bucket(name).send();
    Ok(absent("GetBucketTagging", request, &["NoSuchTagSet"])
        .await?
        .map(|out| tag_pairs(out.tag_set()))
        .unwrap_or_default())
}

pub(super) fn tag<'a>(tags: &'a Tags, key: &str) -> Option<&'a str> {
    tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

pub(super) fn ownership(tags: &Tags) -> Option<OwnershipTags> {
    OwnershipTags::from_tags(|k| tag(tags, k))
}

/// How many object versions and delete markers a bucket holds, counting at
/// most [`COUNT_PAGES`] pages; `true` when it stopped there.
pub(super) async fn count_objects(c: &Client, name: &str, pages: usize) -> Result<(u64, bool)> {
    let mut count = 0u64;
    let (mut key, mut version): (Option<String>, Option<String>) = (None, None);
    for _ in 0..pages {
        let request = c
            .list_object_versions()
            .bucket(name)
            .max_keys(PAGE)
            .set_key_marker(key.take())
            .set_version_id_marker(version.take());
        let out = sent_s3("ListObjectVersions", request.send()).await?;
        count += (out.versions().len() + out.delete_markers().len()) as u64;
        if out.is_truncated() != Some(true) {
            return Ok((count, false));
        }
        key = out.next_key_marker().map(str::to_string);
        version = out.next_version_id_marker().map(str::to_string);
        if key.is_none() {
            return Ok((count, false));
        }
    }
    Ok((count, true))
}

/// The ids of gpuform's lifecycle rules; a bucket's other rules are kept.
const OUR_RULES: [&str; 3] = [RULE_CLASS, RULE_ARCHIVE, RULE_NONCURRENT];

/// gpuform's lifecycle rules among a bucket's (by their ids; enabled ones
/// only), as the neutral storage class and lifecycle.
pub(super) fn our_rules(rules: &[LifecycleRule]) -> (Option<StorageClass>, BucketLifecycle) {
    let enabled = |id: &str| {
        rules.iter().find(|r| {
            r.id() == Some(id) && r.status() == &aws_sdk_s3::types::ExpirationStatus::Enabled
        })
    };
    let days = |d: Option<i32>| d.and_then(|d| u32::try_from(d).ok()).filter(|d| *d > 0);
    let class = enabled(RULE_CLASS)
        .and_then(|r| r.transitions().first())
        .and_then(|t| match t.storage_class() {
            Some(TransitionStorageClass::StandardIa) => Some(StorageClass::Infrequent),
            Some(TransitionStorageClass::Glacier) => Some(StorageClass::Archive),
            _ => None,
        });
    let lifecycle = BucketLifecycle {
        archive_after_days: enabled(RULE_ARCHIVE)
            .and_then(|r| r.transitions().first())
            .and_then(|t| days(t.days())),
        expire_noncurrent_after_days: enabled(RULE_NONCURRENT)
            .and_then(|r| r.noncurrent_version_expiration())
            .and_then(|e| days(e.noncurrent_days())),
    };
    (class, lifecycle)
}

pub(super) async fn lifecycle_rules(c: &Client, name: &str) -> Result<Vec<LifecycleRule>> {
    let request = c.get_bucket_lifecycle_configuration().bucket(name).send();
    let none = ["NoSuchLifecycleConfiguration"];
    Ok(absent("GetBucketLifecycleConfiguration", request, &none)
        .await?
        .map(|o| o.rules().to_vec())
        .unwrap_or_default())
}

/// What every bucket observation has: its name, region, ownership, user
/// tags and force_destroy tag (all from GetBucketTagging).
pub(super) fn tagged(name: &str, region: &str, tags: &Tags) -> ObservedResource {
    let user = UserTags::observed(
        Cloud::Aws,
        tags.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let mut attrs = Attrs::new();
    attrs.insert(attr::NAME.into(), json!(name));
    attrs.insert(
        "force_destroy".into(),
        json!(tag(tags, FORCE_DESTROY_TAG) == Some("true")),
    );
    attrs.insert(attr::TAGS.into(), user.to_value());
    ObservedResource {
        kind: ResourceKind::Bucket,
        id: name.to_string(),
        region: region.to_string(),
        ownership: ownership(tags),
        attrs,
        status: "available".into(),
    }
}

/// Reads every setting of a bucket; `None` when it does not exist.
pub(super) async fn observe(
    c: &Client,
    name: &str,
    region: &str,
) -> Result<Option<ObservedResource>> {
    match observe_all(c, name, region).await {
        Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
        other => other.map(Some),
    }
}

async fn observe_all(c: &Client, name: &str, region: &str) -> Result<ObservedResource> {
    let tags = tags(c, name).await?;
    let mut o = tagged(name, region, &tags);
    let versioned = versioning(c, name).await?;
    let request = c.get_bucket_encryption().bucket(name).send();
    let none = ["ServerSideEncryptionConfigurationNotFoundError"];
    let encrypted = absent("GetBucketEncryption", request, &none)
        .await?
        .and_then(|o| o.server_side_encryption_configuration)
        .is_some_and(|conf| {
            conf.rules()
                .iter()
                .any(|r| r.apply_server_side_encryption_by_default().is_some())
        });
    let rules = lifecycle_rules(c, name).await?;
    let (class, lifecycle) = our_rules(&rules);
    let others = rules
        .iter()
        .filter(|r| !r.id().is_some_and(|id| OUR_RULES.contains(&id)))
        .count();
    let request = c.get_public_access_block().bucket(name).send();
    let none = ["NoSuchPublicAccessBlockConfiguration"];
    let blocked = absent("GetPublicAccessBlock", request, &none)
        .await?
        .and_then(|b| b.public_access_block_configuration)
        .is_some_and(|b| {
            [
                b.block_public_acls(),
                b.ignore_public_acls(),
                b.block_public_policy(),
                b.restrict_public_buckets(),
            ]
            .iter()
            .all(|v| *v == Some(true))
        });
    let (count, capped) = count_objects(c, name, COUNT_PAGES).await?;
    let a = &mut o.attrs;
    if let Some(class) = class.filter(|c| *c != StorageClass::Standard) {
        a.insert(attr::STORAGE_CLASS.into(), json!(class.as_str()));
    }
    a.insert(attr::VERSIONING.into(), json!(versioned));
    a.insert(attr::ENCRYPTION.into(), json!(encrypted));
    a.insert(attr::LIFECYCLE.into(), lifecycle.to_value());
    a.insert(attr::PUBLIC_ACCESS_BLOCKED.into(), json!(blocked));
    a.insert(OBJECT_COUNT.into(), json!(count));
    if others > 0 {
        a.insert(OTHER_LIFECYCLE_RULES.into(), json!(others));
    }
    if capped {
        a.insert(OBJECT_COUNT_CAPPED.into(), Value::Bool(true));
    }
    Ok(o)
}

/// Whether versioning is on. Some S3-compatible servers (moto) name the
/// answer's root element after the operation (`GetBucketVersioningResponse`)
/// instead of `VersioningConfiguration`, which the SDK refuses to parse: a
/// 200 answer it cannot parse is read for its `Status` element.
async fn versioning(c: &Client, name: &str) -> Result<bool> {
    match c.get_bucket_versioning().bucket(name).send().await {
        Ok(out) => Ok(out.status() == Some(&BucketVersioningStatus::Enabled)),
        Err(e) => match e.raw_response().filter(|r| r.status().as_u16() == 200) {
            Some(raw) => {
                let body = raw.body().bytes().unwrap_or_default();
                Ok(status_element(&String::from_utf8_lossy(body)) == Some("Enabled"))
            }
            None => Err(map_s3("GetBucketVersioning", Op::Other, e)),
        },
    }
}

/// The text of the first `<Status>` element of an XML document.
fn status_element(xml: &str) -> Option<&str> {
    let start = xml.find("<Status>")? + "<Status>".len();
    let len = xml[start..].find("</Status>")?;
    Some(xml[start..start + len].trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_s3::types::{
        ExpirationStatus, LifecycleRuleFilter, NoncurrentVersionExpiration, Transition,
    };

    fn rule(
        id: &str,
        status: ExpirationStatus,
    ) -> aws_sdk_s3::types::builders::LifecycleRuleBuilder {
        LifecycleRule::builder()
            .id(id)
            .status(status)
            .filter(LifecycleRuleFilter::builder().prefix("").build())
    }

    #[test]
    fn a_status_element_is_found_whatever_the_root() {
        let moto = r#"<?xml version="1.0"?><GetBucketVersioningResponse xmlns="x"><Status>Enabled</Status></GetBucketVersioningResponse>"#;
        assert_eq!(status_element(moto), Some("Enabled"));
        assert_eq!(status_element("<VersioningConfiguration/>"), None);
    }

    #[test]
    fn only_our_enabled_rules_are_read() {
        let rules = vec![
            rule(RULE_ARCHIVE, ExpirationStatus::Enabled)
                .transitions(
                    Transition::builder()
                        .days(30)
                        .storage_class(TransitionStorageClass::Glacier)
                        .build(),
                )
                .build()
                .unwrap(),
            rule(RULE_NONCURRENT, ExpirationStatus::Disabled)
                .noncurrent_version_expiration(
                    NoncurrentVersionExpiration::builder()
                        .noncurrent_days(7)
                        .build(),
                )
                .build()
                .unwrap(),
            rule("someone-elses", ExpirationStatus::Enabled)
                .noncurrent_version_expiration(
                    NoncurrentVersionExpiration::builder()
                        .noncurrent_days(3)
                        .build(),
                )
                .build()
                .unwrap(),
            rule(RULE_CLASS, ExpirationStatus::Enabled)
                .transitions(
                    Transition::builder()
                        .days(30)
                        .storage_class(TransitionStorageClass::StandardIa)
                        .build(),
                )
                .build()
                .unwrap(),
        ];
        let (class, lifecycle) = our_rules(&rules);
        assert_eq!(class, Some(StorageClass::Infrequent));
        assert_eq!(
            lifecycle,
            BucketLifecycle {
                archive_after_days: Some(30),
                expire_noncurrent_after_days: None,
            }
        );
    }
}
