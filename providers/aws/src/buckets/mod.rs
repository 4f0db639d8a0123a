//! Object-storage buckets on S3 (`BucketApi`), on `aws-sdk-s3` with the
//! provider's shared SDK configuration (one S3 client per region).
//!
//! A bucket's id is its name. S3 has no tags at creation, so a create is
//! CreateBucket, then the settings (public access block, default encryption
//! (SSE-S3), versioning, lifecycle), then PutBucketTagging (ownership,
//! `gpuform:kind`, the force-destroy tag, the user's tags) last: a bucket
//! with gpuform's tags is complete. A create killed before PutBucketTagging
//! leaves an untagged bucket whose deterministic name the retry asks for
//! again; S3 answers
//! `BucketAlreadyOwnedByYou` (us-east-1: 200), and the bucket is adopted
//! only when it is untagged and empty, or tagged as this very resource.
//! Anything else is refused and never touched; a name another account has
//! (`BucketAlreadyExists`) is an `invalid` error asking for another `name:`.
//!
//! S3 has no bucket-level storage class: `infrequent` and `archive` are a
//! lifecycle rule `gpuform-storage-class` moving every object to
//! STANDARD_IA after 30 days (the earliest S3 allows) or to GLACIER at day
//! 0. The spec's lifecycle is the rules `gpuform-archive` (Transition to
//! GLACIER) and `gpuform-expire-noncurrent` (NoncurrentVersionExpiration);
//! other rules on the bucket are kept as they are.
//!
//! Encryption: since January 2023 S3 encrypts every new object with SSE-S3
//! and that cannot be turned off, so `encryption: false` cannot be honoured
//! and is refused (the spec check says so first); `true` sets SSE-S3
//! (AES256) as the bucket's explicit default.

mod read;

use crate::errors::{map_s3, Op, OpError, Sending};
use crate::tags::KIND_TAG;
use crate::AwsProvider;
use async_trait::async_trait;
use aws_sdk_s3::error::{BuildError, ProvideErrorMetadata};
use aws_sdk_s3::types::builders::LifecycleRuleBuilder;
use aws_sdk_s3::types::{
    BucketLifecycleConfiguration, BucketLocationConstraint, BucketVersioningStatus,
    CreateBucketConfiguration, Delete, ExpirationStatus, LifecycleRule, LifecycleRuleFilter,
    NoncurrentVersionExpiration, ObjectIdentifier, PublicAccessBlockConfiguration,
    ServerSideEncryption, ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration,
    ServerSideEncryptionRule, Tag, Tagging, Transition, TransitionStorageClass,
    VersioningConfiguration,
};
use aws_sdk_s3::Client;
use gpuform_provider::bucket::{not_empty, FORCE_DESTROY_TAG};
use gpuform_provider::Result;
use gpuform_provider::{
    BucketApi, BucketChange, BucketLifecycle, BucketSpec, Create, ErrorKind, ExistingResource,
    ObservedResource, OwnershipTags, ProviderError, Scope, StorageClass, Update, UserTags,
};
use std::collections::BTreeSet;

/// The ids of gpuform's lifecycle rules.
pub(crate) const RULE_CLASS: &str = "gpuform-storage-class";
pub(crate) const RULE_ARCHIVE: &str = "gpuform-archive";
pub(crate) const RULE_NONCURRENT: &str = "gpuform-expire-noncurrent";
/// S3 moves objects to STANDARD_IA no earlier than 30 days after writing.
const INFREQUENT_AFTER_DAYS: i32 = 30;
/// DeleteObjects takes at most 1000 keys.
const DELETE_BATCH: i32 = 1000;
/// The region whose CreateBucket takes no LocationConstraint.
const US_EAST_1: &str = "us-east-1";

/// Tags as (key, value) pairs.
pub(crate) type Tags = Vec<(String, String)>;

pub(crate) fn tag_pairs(tags: &[Tag]) -> Tags {
    tags.iter()
        .map(|t| (t.key().to_string(), t.value().to_string()))
        .collect()
}

/// Why `encryption: false` cannot be done on S3 (also the spec check's words).
const NO_UNENCRYPTED_BUCKETS: &str = "S3 encrypts every object (SSE-S3) since January 2023 and this cannot be turned off, so `encryption: false` cannot be honoured on AWS; remove it or set it to true";

fn unencrypted() -> ProviderError {
    ProviderError::new(ErrorKind::Invalid, NO_UNENCRYPTED_BUCKETS)
}

fn taken(name: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        format!(
            "the S3 bucket name `{name}` is taken by another AWS account (bucket names are global); pick another `name:` for this bucket"
        ),
    )
    .with_code("BucketAlreadyExists")
}

fn not_ours(name: &str, why: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        format!(
            "the S3 bucket `{name}` already exists in this account and {why}; gpuform does not touch it. Pick another `name:`, or delete or empty that bucket yourself"
        ),
    )
}

/// The tags gpuform keeps on a bucket: ownership, kind, force-destroy (when
/// on) and the user's.
fn bucket_tags(own: &OwnershipTags, force_destroy: bool, user: &UserTags) -> Tags {
    let mut tags: Tags = own.owned_tags().collect();
    tags.push((KIND_TAG.to_string(), "bucket".to_string()));
    if force_destroy {
        tags.push((FORCE_DESTROY_TAG.to_string(), "true".to_string()));
    }
    tags.extend(user.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    tags
}

/// The tags S3 lets a client put back: `aws:` tags are the system's.
fn settable(tags: Tags) -> Tags {
    tags.into_iter()
        .filter(|(k, _)| !k.to_ascii_lowercase().starts_with("aws:"))
        .collect()
}

async fn put_tags(c: &Client, name: &str, tags: &Tags) -> Result<()> {
    if tags.is_empty() {
        let request = c.delete_bucket_tagging().bucket(name);
        return done_s3("DeleteBucketTagging", request.send()).await;
    }
    let set = tags
        .iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect::<Result<Vec<_>, _>>()
        .map_err(unbuilt("bucket tag"))?;
    let tagging = Tagging::builder()
        .set_tag_set(Some(set))
        .build()
        .map_err(unbuilt("bucket tags"))?;
    let request = c.put_bucket_tagging().bucket(name).tagging(tagging);
    done_s3("PutBucketTagging", request.send()).await
}

/// A request part the SDK refused to build (a required field unset):
/// gpuform's own mistake, an invalid-input error naming the part.
fn unbuilt(part: &'static str) -> impl FnOnce(BuildError) -> ProviderError {
    move |e| ProviderError::new(ErrorKind::Invalid, format!("{part}: {e}"))
}

/// Sends an S3 request (none of them a create): its answer, or the
/// neutral error.
pub(crate) async fn sent_s3<T, E: OpError>(action: &str, request: impl Sending<T, E>) -> Result<T> {
    request.await.map_err(|e| map_s3(action, Op::Other, e))
}

/// Sends a request whose answer is not needed (a Put or Delete of a
/// setting, DeleteBucket): done, or the neutral error.
async fn done_s3<T, E: OpError>(action: &str, request: impl Sending<T, E>) -> Result<()> {
    sent_s3(action, request).await.map(drop)
}

async fn set_public_access_block(c: &Client, name: &str, on: bool) -> Result<()> {
    if !on {
        let request = c.delete_public_access_block().bucket(name);
        return done_s3("DeletePublicAccessBlock", request.send()).await;
    }
    let conf = PublicAccessBlockConfiguration::builder()
        .block_public_acls(true)
        .ignore_public_acls(true)
        .block_public_policy(true)
        .restrict_public_buckets(true)
        .build();
    let request = c
        .put_public_access_block()
        .bucket(name)
        .public_access_block_configuration(conf);
    done_s3("PutPublicAccessBlock", request.send()).await
}

/// The default encryption gpuform sets: SSE-S3 (AES256).
fn sse_s3() -> Result<ServerSideEncryptionConfiguration> {
    let by_default = ServerSideEncryptionByDefault::builder()
        .sse_algorithm(ServerSideEncryption::Aes256)
        .build()
        .map_err(unbuilt("encryption"))?;
    ServerSideEncryptionConfiguration::builder()
        .rules(
            ServerSideEncryptionRule::builder()
                .apply_server_side_encryption_by_default(by_default)
                .build(),
        )
        .build()
        .map_err(unbuilt("encryption"))
}

async fn put_encryption(c: &Client, name: &str) -> Result<()> {
    let request = c
        .put_bucket_encryption()
        .bucket(name)
        .server_side_encryption_configuration(sse_s3()?);
    done_s3("PutBucketEncryption", request.send()).await
}

async fn put_versioning(c: &Client, name: &str, on: bool) -> Result<()> {
    let status = if on {
        BucketVersioningStatus::Enabled
    } else {
        BucketVersioningStatus::Suspended
    };
    let conf = VersioningConfiguration::builder().status(status).build();
    let request = c
        .put_bucket_versioning()
        .bucket(name)
        .versioning_configuration(conf);
    done_s3("PutBucketVersioning", request.send()).await
}

/// One of gpuform's rules: named `id`, enabled, over every object.
fn our_rule(id: &str) -> LifecycleRuleBuilder {
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("").build())
}

fn transition_rule(id: &str, days: i32, class: TransitionStorageClass) -> Result<LifecycleRule> {
    our_rule(id)
        .transitions(
            Transition::builder()
                .days(days)
                .storage_class(class)
                .build(),
        )
        .build()
        .map_err(unbuilt("lifecycle rule"))
}

fn days(d: u32) -> i32 {
    i32::try_from(d).unwrap_or(i32::MAX)
}

/// gpuform's rules for a storage class and a lifecycle (`None`: that part
/// is left as it is).
fn our_rules(
    class: Option<StorageClass>,
    lifecycle: Option<&BucketLifecycle>,
) -> Result<Vec<LifecycleRule>> {
    let mut rules = Vec::new();
    match class {
        Some(StorageClass::Infrequent) => rules.push(transition_rule(
            RULE_CLASS,
            INFREQUENT_AFTER_DAYS,
            TransitionStorageClass::StandardIa,
        )?),
        Some(StorageClass::Archive) => rules.push(transition_rule(
            RULE_CLASS,
            0,
            TransitionStorageClass::Glacier,
        )?),
        Some(StorageClass::Standard) | None => {}
    }
    if let Some(l) = lifecycle {
        if let Some(d) = l.archive_after_days {
            rules.push(transition_rule(
                RULE_ARCHIVE,
                days(d),
                TransitionStorageClass::Glacier,
            )?);
        }
        if let Some(d) = l.expire_noncurrent_after_days {
            rules.push(
                our_rule(RULE_NONCURRENT)
                    .noncurrent_version_expiration(
                        NoncurrentVersionExpiration::builder()
                            .noncurrent_days(days(d))
                            .build(),
                    )
                    .build()
                    .map_err(unbuilt("lifecycle rule"))?,
            );
        }
    }
    Ok(rules)
}

/// Makes gpuform's part of the bucket's lifecycle configuration `class`
/// and `lifecycle` (where given), keeping every other rule (read first
/// unless the bucket is known to be new).
async fn put_rules(
    c: &Client,
    name: &str,
    class: Option<StorageClass>,
    lifecycle: Option<&BucketLifecycle>,
    bucket_is_new: bool,
) -> Result<()> {
    let existing = if bucket_is_new {
        Vec::new()
    } else {
        read::lifecycle_rules(c, name).await?
    };
    let mut replaced: BTreeSet<&str> = BTreeSet::new();
    if class.is_some() {
        replaced.insert(RULE_CLASS);
    }
    if lifecycle.is_some() {
        replaced.extend([RULE_ARCHIVE, RULE_NONCURRENT]);
    }
    let mut rules: Vec<LifecycleRule> = existing
        .iter()
        .filter(|r| !r.id().is_some_and(|id| replaced.contains(id)))
        .cloned()
        .collect();
    rules.extend(our_rules(class, lifecycle)?);
    if rules.is_empty() {
        if existing.is_empty() {
            return Ok(());
        }
        let request = c.delete_bucket_lifecycle().bucket(name);
        return done_s3("DeleteBucketLifecycle", request.send()).await;
    }
    if rules == existing {
        return Ok(());
    }
    let conf = BucketLifecycleConfiguration::builder()
        .set_rules(Some(rules))
        .build()
        .map_err(unbuilt("lifecycle"))?;
    let request = c
        .put_bucket_lifecycle_configuration()
        .bucket(name)
        .lifecycle_configuration(conf);
    done_s3("PutBucketLifecycleConfiguration", request.send()).await
}

/// Whether an existing bucket of this account may be taken as this
/// resource: tagged as this very resource (same project, lineage and
/// address: a create retried with a new token), or untagged and empty (a
/// create killed before PutBucketTagging). Refused otherwise.
async fn claim(c: &Client, name: &str, own: &OwnershipTags) -> Result<()> {
    let tags = read::tags(c, name).await?;
    if tags.is_empty() {
        let (objects, _) = read::count_objects(c, name, 1).await?;
        if objects > 0 {
            return Err(not_ours(name, "holds objects but has no gpuform tags"));
        }
        return Ok(());
    }
    match read::ownership(&tags) {
        Some(t)
            if t.project == own.project && t.lineage == own.lineage && t.address == own.address =>
        {
            Ok(())
        }
        Some(t) if t.project == own.project => Err(not_ours(
            name,
            &format!(
                "is `{}` of project {} (another state or address)",
                t.address, t.project
            ),
        )),
        Some(t) => Err(not_ours(
            name,
            &format!("belongs to the gpuform project `{}`", t.project),
        )),
        None => Err(not_ours(name, "carries tags that are not gpuform's")),
    }
}

/// Deletes every object version and delete marker, a page (≤ 1000) at a
/// time, until the bucket is empty.
async fn empty_bucket(c: &Client, name: &str) -> Result<()> {
    loop {
        let request = c.list_object_versions().bucket(name).max_keys(DELETE_BATCH);
        let out = sent_s3("ListObjectVersions", request.send()).await?;
        let ids = out
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id()))
            .chain(
                out.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id())),
            )
            .filter_map(|(k, v)| {
                let k = k?;
                ObjectIdentifier::builder()
                    .key(k)
                    .set_version_id(v.map(str::to_string))
                    .build()
                    .ok()
            })
            .collect::<Vec<_>>();
        if ids.is_empty() {
            return Ok(());
        }
        let delete = Delete::builder()
            .set_objects(Some(ids))
            .quiet(true)
            .build()
            .map_err(unbuilt("DeleteObjects"))?;
        let request = c.delete_objects().bucket(name).delete(delete);
        let res = sent_s3("DeleteObjects", request.send()).await?;
        if let Some(e) = res.errors().first() {
            return Err(ProviderError::new(
                ErrorKind::Transient,
                format!(
                    "S3 DeleteObjects could not delete {} object(s) of `{name}`: {} ({})",
                    res.errors().len(),
                    e.code().unwrap_or("no code"),
                    e.message().unwrap_or("")
                ),
            ));
        }
    }
}

impl AwsProvider {
    /// The S3 client of a region (created once, then shared).
    pub(crate) fn s3(&self, region: &str) -> Result<Client> {
        if region.trim().is_empty() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "no AWS region given for this bucket",
            ));
        }
        let mut clients = self.s3_clients.lock().unwrap_or_else(|p| p.into_inner());
        Ok(clients
            .entry(region.to_string())
            .or_insert_with(|| {
                let conf = crate::s3::s3_config(&self.base, Some(region), self.endpoint.as_deref());
                Client::from_conf(conf.build())
            })
            .clone())
    }

    /// Every bucket of the account in `region` with its tags (buckets whose
    /// tags this account may not read are listed untagged).
    async fn buckets_in(&self, region: &str) -> Result<Vec<(String, Tags)>> {
        let c = self.s3(region)?;
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            // Filtered by region (ListBuckets' `bucket-region`): a refresh
            // of a region without buckets is this one call.
            let request = c
                .list_buckets()
                .bucket_region(region)
                .set_continuation_token(token.take());
            let page = sent_s3("ListBuckets", request.send()).await?;
            for b in page.buckets() {
                let Some(name) = b.name() else { continue };
                // The filter is trusted where the answer does not name
                // the region (moto); where it does, it is checked.
                if b.bucket_region().is_some_and(|r| r != region) {
                    continue;
                }
                let tags = match read::tags(&c, name).await {
                    Ok(t) => t,
                    Err(e) if e.kind == ErrorKind::NotFound => continue,
                    Err(e) if e.kind == ErrorKind::Auth => Tags::new(),
                    Err(e) => return Err(e),
                };
                out.push((name.to_string(), tags));
            }
            match page.continuation_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => return Ok(out),
            }
        }
    }
}

#[async_trait]
impl BucketApi for AwsProvider {
    /// S3 replaces a bucket's tags as a whole: gpuform's own are read and
    /// kept.
    async fn update_bucket_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let (region, current, want) = (u.region(), u.current, u.want);
        let name = current.id.as_str();
        let c = self.s3(region)?;
        let mut tags: Tags = settable(read::tags(&c, name).await?)
            .into_iter()
            .filter(|(k, _)| k.to_ascii_lowercase().starts_with("gpuform:"))
            .collect();
        tags.extend(want.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        put_tags(&c, name, &tags).await
    }

    async fn create_bucket(&self, req: &Create<BucketSpec>) -> Result<ObservedResource> {
        let spec = &req.spec;
        if !spec.encryption {
            return Err(unencrypted());
        }
        let region = req.region();
        let c = self.s3(region)?;
        let name = spec.name.as_str();
        let mut create = c.create_bucket().bucket(name);
        if region != US_EAST_1 {
            create = create.create_bucket_configuration(
                CreateBucketConfiguration::builder()
                    .location_constraint(BucketLocationConstraint::from(region))
                    .build(),
            );
        }
        // us-east-1 answers 200 for a bucket the account already has.
        let is_new = match create.send().await {
            Ok(_) => region != US_EAST_1,
            Err(e) if e.code() == Some("BucketAlreadyOwnedByYou") => false,
            Err(e) if e.code() == Some("BucketAlreadyExists") => return Err(taken(name)),
            Err(e) => return Err(map_s3("CreateBucket", Op::Create, e)),
        };
        if !is_new {
            claim(&c, name, &req.ownership).await?;
        }
        // The settings first and the tags last: a bucket with our tags is
        // complete, and one killed before them is untagged and empty, which
        // the retry claims and sets up again.
        set_public_access_block(&c, name, spec.public_access_blocked).await?;
        put_encryption(&c, name).await?;
        if spec.versioning {
            put_versioning(&c, name, true).await?;
        }
        put_rules(
            &c,
            name,
            Some(spec.storage_class),
            Some(&spec.lifecycle),
            is_new,
        )
        .await?;
        let tags = bucket_tags(&req.ownership, spec.force_destroy, &req.tags);
        put_tags(&c, name, &tags).await?;
        read::observe(&c, name, region).await?.ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("S3 bucket `{name}` was created but cannot be read back yet"),
            )
        })
    }

    async fn delete_bucket(&self, scope: &Scope, id: &str) -> Result<()> {
        let c = self.s3(&scope.region)?;
        let tags = read::tags(&c, id).await?;
        if read::tag(&tags, FORCE_DESTROY_TAG) == Some("true") {
            empty_bucket(&c, id).await?;
        } else {
            let (objects, _) = read::count_objects(&c, id, read::COUNT_PAGES).await?;
            if objects > 0 {
                return Err(not_empty(id, objects));
            }
        }
        let request = c.delete_bucket().bucket(id);
        done_s3("DeleteBucket", request.send()).await
    }

    async fn update_bucket(&self, u: &Update<'_, BucketChange>) -> Result<()> {
        let (region, current, change) = (u.region(), u.current, u.want);
        let c = self.s3(region)?;
        let name = current.id.as_str();
        if change.encryption == Some(false) {
            return Err(unencrypted());
        }
        if let Some(on) = change.public_access_blocked {
            set_public_access_block(&c, name, on).await?;
        }
        if change.encryption == Some(true) {
            put_encryption(&c, name).await?;
        }
        if let Some(on) = change.versioning {
            put_versioning(&c, name, on).await?;
        }
        if let Some(l) = &change.lifecycle {
            put_rules(&c, name, None, Some(l), false).await?;
        }
        if let Some(force) = change.force_destroy {
            let mut tags: Tags = settable(read::tags(&c, name).await?)
                .into_iter()
                .filter(|(k, _)| k != FORCE_DESTROY_TAG)
                .collect();
            if force {
                tags.push((FORCE_DESTROY_TAG.to_string(), "true".to_string()));
            }
            put_tags(&c, name, &tags).await?;
        }
        Ok(())
    }

    /// `gpuform import`: GetBucketTagging, then PutBucketTagging of the same
    /// set with the ownership and kind tags added (S3 replaces a bucket's
    /// tags as a whole). A bucket that is gone is `NotFound`.
    async fn set_bucket_ownership(
        &self,
        bucket: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let id = bucket.id;
        let c = self.s3(&bucket.scope.region)?;
        let mut tags: Tags = settable(read::tags(&c, id).await?)
            .into_iter()
            .filter(|(k, _)| !OwnershipTags::KEYS.contains(&k.as_str()) && k != KIND_TAG)
            .collect();
        tags.extend(bucket_tags(ownership, false, &UserTags::default()));
        put_tags(&c, id, &tags).await
    }

    async fn read_buckets(&self, scope: &Scope, ids: &[String]) -> Result<Vec<ObservedResource>> {
        let c = self.s3(&scope.region)?;
        let mut out = Vec::new();
        for id in ids {
            if let Some(o) = read::observe(&c, id, &scope.region).await? {
                out.push(o);
            }
        }
        Ok(out)
    }

    /// Name, ownership, user tags and force_destroy of every bucket in the
    /// region (GetBucketTagging only: an audit does not need the settings).
    async fn list_buckets(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        Ok(self
            .buckets_in(&scope.region)
            .await?
            .iter()
            .map(|(name, tags)| read::tagged(name, &scope.region, tags))
            .collect())
    }

    async fn list_owned_buckets(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>> {
        let c = self.s3(&scope.region)?;
        let mut out = Vec::new();
        for (name, tags) in self.buckets_in(&scope.region).await? {
            if read::ownership(&tags).is_some_and(|t| t.project == project) {
                if let Some(o) = read::observe(&c, &name, &scope.region).await? {
                    out.push(o);
                }
            }
        }
        Ok(out)
    }
}
