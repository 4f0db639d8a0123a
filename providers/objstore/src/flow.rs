//! Create and read: the adoption rule, the settings a bucket is given, and
//! every attribute read back (see the crate doc).

use crate::http::Call;
use crate::xml::Node;
use crate::{ClassAt, ClassRead, ObjStore, RuleScope, SseForm, CLASS_TAG, COUNT_PAGES, RULE_ID};
use gpuform_provider::bucket::{FORCE_DESTROY_TAG, OBJECT_COUNT};
use gpuform_provider::resource::record_tags;
use gpuform_provider::{attr, Result};
use gpuform_provider::{
    Attrs, BucketLifecycle, BucketSpec, Create, ErrorKind, ObservedResource, OwnershipTags,
    ProviderError, ResourceKind, StorageClass, UserTags,
};
use serde_json::Value;
use std::collections::BTreeMap;

pub(crate) type Tags = BTreeMap<String, String>;

/// The settings of a bucket gpuform manages besides its tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub versioning: bool,
    /// Versioning was ever turned on (`Enabled` or `Suspended`): objects
    /// are then counted and deleted by version.
    pub versioned_ever: bool,
    pub encryption: bool,
    pub lifecycle: BucketLifecycle,
    pub private: bool,
}

impl Settings {
    /// A bucket just made by [`ObjStore::create`] (private ACL header).
    const NEW: Settings = Settings {
        versioning: false,
        versioned_ever: false,
        encryption: false,
        lifecycle: BucketLifecycle {
            archive_after_days: None,
            expire_noncurrent_after_days: None,
        },
        private: true,
    };
}

/// One page of a listing: (key, version id) and where the next starts.
pub(crate) struct Page {
    pub entries: Vec<(String, Option<String>)>,
    pub next: Option<(String, String)>,
}

fn invalid(m: String) -> ProviderError {
    ProviderError::new(ErrorKind::Invalid, m)
}

impl ObjStore {
    /// Creates (or adopts, see the crate doc) the bucket and reads it back.
    pub async fn create(&self, req: &Create<BucketSpec>) -> Result<ObservedResource> {
        let region = req.scope.region.as_str();
        let name = req.spec.name.as_str();
        // `gpuform validate` checks the name too; a driver called directly
        // refuses it by the cloud's rule before any call.
        gpuform_provider::bucket_name::check(self.dialect.cloud, name)
            .map_err(|e| invalid(e.to_string()))?;
        for (k, v) in req.ownership.to_tags() {
            (self.dialect.check_tag_value)(k, v)?;
        }
        let existing = match self.tags(region, name).await {
            Err(e) if e.kind == ErrorKind::Auth && e.code.as_deref() == Some("AccessDenied") => {
                return Err(self.taken(name, e))
            }
            other => other?,
        };
        let have = match existing {
            None => match self.put_bucket(region, &req.spec).await {
                Ok(()) => Settings::NEW,
                Err(e) if e.code.as_deref() == Some("BucketAlreadyOwnedByYou") => {
                    let tags = self.tags(region, name).await?.unwrap_or_default();
                    self.check_adoptable(region, name, &tags, &req.ownership)
                        .await?;
                    self.settings(region, name).await?
                }
                Err(e) if e.code.as_deref() == Some("BucketAlreadyExists") => {
                    return Err(self.taken(name, e))
                }
                Err(e) => return Err(e),
            },
            Some(tags) => {
                self.check_adoptable(region, name, &tags, &req.ownership)
                    .await?;
                tracing::info!(bucket = name, "adopting an existing bucket of this apply");
                self.settings(region, name).await?
            }
        };
        let tags = self.creation_tags(req)?;
        self.put_tags(region, name, &tags).await?;
        let want = Settings {
            versioning: req.spec.versioning,
            versioned_ever: have.versioned_ever,
            encryption: req.spec.encryption,
            lifecycle: req.spec.lifecycle,
            private: req.spec.public_access_blocked,
        };
        self.converge(region, name, &have, &want).await?;
        self.read_one(region, name).await?.ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("the bucket `{name}` was made but is not readable yet"),
            )
        })
    }

    /// "The name is someone else's": a clear error, never retried.
    fn taken(&self, name: &str, cause: ProviderError) -> ProviderError {
        let mut e = invalid(format!(
            "the bucket name `{name}` is taken by another account ({} bucket names are global); \
             choose another `name` for the bucket",
            self.dialect.service.product
        ));
        e.code = cause.code;
        e.request_id = cause.request_id;
        e
    }

    /// Whether a bucket found in this account may be adopted.
    async fn check_adoptable(
        &self,
        region: &str,
        name: &str,
        tags: &Tags,
        own: &OwnershipTags,
    ) -> Result<()> {
        match OwnershipTags::from_tags(|k| tags.get(k).map(String::as_str)) {
            Some(t)
                if t.project == own.project
                    && t.address == own.address
                    && t.lineage == own.lineage =>
            {
                Ok(())
            }
            Some(t) => Err(invalid(format!(
                "the bucket `{name}` exists in this account and belongs to gpuform project `{}` \
                 (`{}`, another state); gpuform never touches it: choose another `name`",
                t.project, t.address
            ))),
            None if !tags.is_empty() => Err(invalid(format!(
                "the bucket `{name}` exists in this account with tags that are not gpuform's \
                 ownership; gpuform never touches a bucket it did not make: choose another `name`"
            ))),
            None => {
                let versioned = self.versioning(region, name).await?.1;
                if self.count_objects(region, name, versioned, 1).await? > 0 {
                    return Err(invalid(format!(
                        "the bucket `{name}` exists in this account, untagged and holding \
                         objects; gpuform adopts only an empty untagged bucket: choose another \
                         `name`"
                    )));
                }
                Ok(())
            }
        }
    }

    async fn put_bucket(&self, region: &str, spec: &BucketSpec) -> Result<()> {
        let d = &self.dialect;
        let class = d.class_name(spec.storage_class);
        let acl = if spec.public_access_blocked {
            "private"
        } else {
            "public-read"
        };
        let mut call = Call::new("PutBucket", "PUT", &spec.name).header(d.header("acl"), acl);
        let mut body = Node::new("CreateBucketConfiguration");
        match d.class_at {
            ClassAt::Body(el) => body.push(Node::leaf(el, class)),
            ClassAt::Header(h) => call = call.header(h, class),
            ClassAt::Tag => {}
        }
        if let Some(el) = d.location_element {
            body.push(Node::leaf(el, (d.location)(region)));
        }
        if !body.children.is_empty() {
            call = call.body(body);
        }
        self.send(region, &call).await.map(drop)
    }

    /// Ownership, kind, force-destroy (and class) tags, then the user's.
    fn creation_tags(&self, req: &Create<BucketSpec>) -> Result<Tags> {
        let mut tags: Tags = req.ownership.owned_tags().collect();
        tags.insert(
            record_tags::KIND.into(),
            ResourceKind::Bucket.as_str().into(),
        );
        if req.spec.force_destroy {
            tags.insert(FORCE_DESTROY_TAG.into(), "true".into());
        }
        if self.dialect.class_at == ClassAt::Tag {
            tags.insert(CLASS_TAG.into(), req.spec.storage_class.as_str().into());
        }
        let ours = tags.len();
        tags.extend(req.tags.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        if tags.len() > self.dialect.max_tags {
            return Err(invalid(format!(
                "{} takes at most {} tags per bucket; gpuform uses {ours} and the spec adds {}",
                self.dialect.service.product,
                self.dialect.max_tags,
                req.tags.len()
            )));
        }
        Ok(tags)
    }

    /// The bucket's tags; `None` when there is no such bucket.
    pub(crate) async fn tags(&self, region: &str, name: &str) -> Result<Option<Tags>> {
        let call = Call::new("GetBucketTags", "GET", name).sub("tagging");
        let node = match self.send(region, &call).await {
            Ok(a) => a.xml(call.op)?,
            // OSS answers an empty set; OBS 404 `NoSuchTagSet`, COS 404
            // `NoSuchTagSetError` (GET Bucket tagging, 436/8277).
            Err(e)
                if matches!(
                    e.code.as_deref(),
                    Some("NoSuchTagSet" | "NoSuchTagSetError")
                ) =>
            {
                return Ok(Some(Tags::new()))
            }
            Err(e) if e.kind == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut tags = Tags::new();
        if let Some(set) = node.find("TagSet") {
            for t in set.children_named("Tag") {
                let k = t.text_of("Key").unwrap_or_default();
                if !k.is_empty() {
                    tags.insert(k.to_string(), t.text_of("Value").unwrap_or_default().into());
                }
            }
        }
        Ok(Some(tags))
    }

    /// Makes the bucket's tags exactly `tags` (one call: the set is replaced).
    pub(crate) async fn put_tags(&self, region: &str, name: &str, tags: &Tags) -> Result<()> {
        if tags.is_empty() {
            let call = Call::new("DeleteBucketTags", "DELETE", name).sub("tagging");
            return self.send(region, &call).await.map(drop);
        }
        let mut set = Node::new("TagSet");
        for (k, v) in tags {
            set.push(
                Node::new("Tag")
                    .with(Node::leaf("Key", k))
                    .with(Node::leaf("Value", v)),
            );
        }
        let call = Call::new("PutBucketTags", "PUT", name)
            .sub("tagging")
            .body(Node::new("Tagging").with(set));
        self.send(region, &call).await.map(drop)
    }

    /// (versioning on, versioning ever on).
    pub(crate) async fn versioning(&self, region: &str, name: &str) -> Result<(bool, bool)> {
        let call = Call::new("GetBucketVersioning", "GET", name).sub("versioning");
        let node = self.send(region, &call).await?.xml(call.op)?;
        let status = node.text_of("Status").unwrap_or_default();
        Ok((
            status == "Enabled",
            status == "Enabled" || status == "Suspended",
        ))
    }

    /// A GET of a sub-resource that answers 404 when it was never set.
    async fn optional(
        &self,
        region: &str,
        name: &str,
        op: &'static str,
        sub: &str,
    ) -> Result<Option<Node>> {
        let call = Call::new(op, "GET", name).sub(sub);
        match self.send(region, &call).await {
            Ok(a) => Ok(Some(a.xml(op)?)),
            Err(e)
                if e.kind == ErrorKind::NotFound && e.code.as_deref() != Some("NoSuchBucket") =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn settings(&self, region: &str, name: &str) -> Result<Settings> {
        let (versioning, versioned_ever) = self.versioning(region, name).await?;
        let encryption = self
            .optional(region, name, "GetBucketEncryption", "encryption")
            .await?
            .is_some_and(|n| {
                n.find("SSEAlgorithm")
                    .is_some_and(|a| !a.text.trim().is_empty())
            });
        let lifecycle = match self
            .optional(region, name, "GetBucketLifecycle", "lifecycle")
            .await?
        {
            Some(n) => self.lifecycle_of(&n),
            None => BucketLifecycle::default(),
        };
        let call = Call::new("GetBucketAcl", "GET", name).sub("acl");
        let acl = self.send(region, &call).await?.xml(call.op)?;
        let public =
            |t: &str| t.contains("AllUsers") || t.starts_with("public-read") || t == "Everyone";
        Ok(Settings {
            versioning,
            versioned_ever,
            encryption,
            lifecycle,
            private: !acl.any_text(&public),
        })
    }

    /// The neutral rules of a lifecycle configuration: enabled rules for
    /// the whole bucket only.
    fn lifecycle_of(&self, doc: &Node) -> BucketLifecycle {
        let archive = self.dialect.class_name(StorageClass::Archive);
        let days = |n: &Node, el: &str| n.text_of(el).and_then(|d| d.parse::<u32>().ok());
        let mut out = BucketLifecycle::default();
        for rule in doc.children_named("Rule") {
            let whole = rule.text_of("Prefix").unwrap_or_default().is_empty()
                && rule
                    .child("Filter")
                    .is_none_or(|f| f.children.is_empty() && f.text.trim().is_empty());
            if rule.text_of("Status") != Some("Enabled") || !whole {
                continue;
            }
            for t in rule.children_named("Transition") {
                if t.text_of("StorageClass")
                    .is_some_and(|c| c.eq_ignore_ascii_case(archive))
                {
                    out.archive_after_days = out.archive_after_days.or(days(t, "Days"));
                }
            }
            if let Some(n) = rule.child("NoncurrentVersionExpiration") {
                out.expire_noncurrent_after_days = out
                    .expire_noncurrent_after_days
                    .or(days(n, "NoncurrentDays"));
            }
        }
        out
    }

    /// Makes the settings `want` from `have`, one call per difference.
    pub(crate) async fn converge(
        &self,
        region: &str,
        name: &str,
        have: &Settings,
        want: &Settings,
    ) -> Result<()> {
        if want.versioning != have.versioning {
            self.put_versioning(region, name, want.versioning).await?;
        }
        if want.encryption != have.encryption {
            self.put_encryption(region, name, want.encryption).await?;
        }
        if want.lifecycle != have.lifecycle {
            self.put_lifecycle(region, name, &want.lifecycle).await?;
        }
        if want.private != have.private {
            self.put_private(region, name, want.private).await?;
        }
        Ok(())
    }

    pub(crate) async fn put_versioning(&self, region: &str, name: &str, on: bool) -> Result<()> {
        let status = if on { "Enabled" } else { "Suspended" };
        let call = Call::new("PutBucketVersioning", "PUT", name)
            .sub("versioning")
            .body(Node::new("VersioningConfiguration").with(Node::leaf("Status", status)));
        self.send(region, &call).await.map(drop)
    }

    pub(crate) async fn put_encryption(&self, region: &str, name: &str, on: bool) -> Result<()> {
        if !on {
            let call = Call::new("DeleteBucketEncryption", "DELETE", name).sub("encryption");
            return self.send(region, &call).await.map(drop);
        }
        let default = Node::new("ApplyServerSideEncryptionByDefault")
            .with(Node::leaf("SSEAlgorithm", self.dialect.sse_algorithm));
        let body = match self.dialect.sse {
            SseForm::Rule => Node::new("ServerSideEncryptionRule").with(default),
            SseForm::Configuration => {
                Node::new("ServerSideEncryptionConfiguration").with(Node::new("Rule").with(default))
            }
        };
        let call = Call::new("PutBucketEncryption", "PUT", name)
            .sub("encryption")
            .body(body);
        self.send(region, &call).await.map(drop)
    }

    pub(crate) async fn put_lifecycle(
        &self,
        region: &str,
        name: &str,
        l: &BucketLifecycle,
    ) -> Result<()> {
        if l.is_empty() {
            let call = Call::new("DeleteBucketLifecycle", "DELETE", name).sub("lifecycle");
            return self.send(region, &call).await.map(drop);
        }
        let mut rule = Node::new("Rule").with(Node::leaf("ID", RULE_ID));
        rule.push(match self.dialect.rule_scope {
            RuleScope::EmptyPrefix => Node::new("Prefix"),
            RuleScope::EmptyFilter => Node::new("Filter"),
        });
        rule.push(Node::leaf("Status", "Enabled"));
        if let Some(d) = l.archive_after_days {
            rule.push(
                Node::new("Transition")
                    .with(Node::leaf("Days", d.to_string()))
                    .with(Node::leaf(
                        "StorageClass",
                        self.dialect.class_name(StorageClass::Archive),
                    )),
            );
        }
        if let Some(d) = l.expire_noncurrent_after_days {
            rule.push(
                Node::new("NoncurrentVersionExpiration")
                    .with(Node::leaf("NoncurrentDays", d.to_string())),
            );
        }
        let call = Call::new("PutBucketLifecycle", "PUT", name)
            .sub("lifecycle")
            .body(Node::new("LifecycleConfiguration").with(rule));
        self.send(region, &call).await.map(drop)
    }

    pub(crate) async fn put_private(&self, region: &str, name: &str, private: bool) -> Result<()> {
        if !private {
            return Err(invalid(format!(
                "gpuform makes no public bucket: `public_access_blocked` of `{name}` must stay true"
            )));
        }
        let call = Call::new("PutBucketAcl", "PUT", name)
            .sub("acl")
            .header(self.dialect.header("acl"), "private");
        self.send(region, &call).await.map(drop)
    }

    /// The storage class as the neutral attribute value (`None`: standard).
    async fn class(&self, region: &str, name: &str, tags: &Tags) -> Result<Option<String>> {
        let raw = match self.dialect.class_read {
            ClassRead::Tag => return Ok(tags.get(CLASS_TAG).filter(|c| *c != "standard").cloned()),
            ClassRead::Subresource { query, element } => {
                let call = Call::new("GetBucketInfo", "GET", name).sub(query);
                let node = self.send(region, &call).await?.xml(call.op)?;
                node.find(element)
                    .map(|n| n.text.trim().to_string())
                    .unwrap_or_default()
            }
        };
        Ok(match self.dialect.class_of(&raw) {
            Some(StorageClass::Standard) => None,
            Some(c) => Some(c.as_str().to_string()),
            // A class gpuform does not make (cold archive): shown as the
            // cloud names it, so the plan shows the difference.
            None if raw.is_empty() => None,
            None => Some(raw),
        })
    }

    /// One page of objects (or of versions and delete markers).
    pub(crate) async fn list_page(
        &self,
        region: &str,
        name: &str,
        versions: bool,
        from: Option<&(String, String)>,
    ) -> Result<Page> {
        let mut call = if versions {
            Call::new("ListObjectVersions", "GET", name).sub("versions")
        } else {
            Call::new("ListObjects", "GET", name)
        };
        call = call.query("max-keys", "1000");
        if let Some((k, v)) = from {
            call = if versions {
                call.query("key-marker", k.clone())
                    .query("version-id-marker", v.clone())
            } else {
                call.query("marker", k.clone())
            };
        }
        let doc = self.send(region, &call).await?.xml(call.op)?;
        let mut entries = Vec::new();
        for n in &doc.children {
            let listed = if versions {
                n.name == "Version" || n.name == "DeleteMarker"
            } else {
                n.name == "Contents"
            };
            if let (true, Some(k)) = (listed, n.text_of("Key")) {
                let v = n
                    .text_of("VersionId")
                    .filter(|_| versions)
                    .map(str::to_string);
                entries.push((k.to_string(), v));
            }
        }
        let next = if doc.text_of("IsTruncated") == Some("true") {
            let last = entries.last().cloned().unwrap_or_default();
            if versions {
                Some((
                    doc.text_of("NextKeyMarker")
                        .map(str::to_string)
                        .unwrap_or(last.0),
                    doc.text_of("NextVersionIdMarker")
                        .map(str::to_string)
                        .unwrap_or_default(),
                ))
            } else {
                Some((
                    doc.text_of("NextMarker")
                        .map(str::to_string)
                        .unwrap_or(last.0),
                    String::new(),
                ))
            }
        } else {
            None
        };
        Ok(Page { entries, next })
    }

    /// Objects (versions) counted over at most `pages` pages.
    pub(crate) async fn count_objects(
        &self,
        region: &str,
        name: &str,
        versions: bool,
        pages: usize,
    ) -> Result<u64> {
        let mut n = 0u64;
        let mut from = None;
        for _ in 0..pages {
            let page = self
                .list_page(region, name, versions, from.as_ref())
                .await?;
            n += page.entries.len() as u64;
            match page.next {
                Some(next) if from.as_ref() != Some(&next) => from = Some(next),
                _ => break,
            }
        }
        Ok(n)
    }

    /// Every attribute of the bucket; `None` when it does not exist.
    pub(crate) async fn read_one(
        &self,
        region: &str,
        name: &str,
    ) -> Result<Option<ObservedResource>> {
        let Some(tags) = self.tags(region, name).await? else {
            return Ok(None);
        };
        let s = self.settings(region, name).await?;
        let class = self.class(region, name, &tags).await?;
        let count = self
            .count_objects(region, name, s.versioned_ever, COUNT_PAGES)
            .await?;
        let mut attrs = Attrs::new();
        attrs.insert(attr::NAME.into(), Value::from(name));
        if let Some(c) = class {
            attrs.insert(attr::STORAGE_CLASS.into(), Value::from(c));
        }
        attrs.insert(attr::VERSIONING.into(), Value::Bool(s.versioning));
        attrs.insert(attr::ENCRYPTION.into(), Value::Bool(s.encryption));
        attrs.insert(attr::LIFECYCLE.into(), s.lifecycle.to_value());
        attrs.insert(attr::PUBLIC_ACCESS_BLOCKED.into(), Value::Bool(s.private));
        let force = tags.get(FORCE_DESTROY_TAG).is_some_and(|v| v == "true");
        attrs.insert(attr::FORCE_DESTROY.into(), Value::Bool(force));
        let user = UserTags::observed(
            self.dialect.cloud,
            tags.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        attrs.insert(attr::TAGS.into(), user.to_value());
        attrs.insert(OBJECT_COUNT.into(), Value::from(count));
        Ok(Some(ObservedResource {
            kind: ResourceKind::Bucket,
            id: name.to_string(),
            region: region.to_string(),
            ownership: OwnershipTags::from_tags(|k| tags.get(k).map(String::as_str)),
            attrs,
            status: "available".into(),
        }))
    }
}
