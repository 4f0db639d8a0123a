//! Update, delete and list: the rest of `BucketApi` over the dialect.

use crate::flow::Tags;
use crate::http::Call;
use crate::xml::Node;
use crate::{ObjStore, COUNT_PAGES, DELETE_BATCH};
use gpuform_provider::bucket::{not_empty, unfinished_uploads, FORCE_DESTROY_TAG};
use gpuform_provider::resource::record_tags;
use gpuform_provider::tags::GPUFORM_PREFIX;
use gpuform_provider::Result;
use gpuform_provider::{
    BucketChange, ErrorKind, ObservedResource, OwnershipTags, ProviderError, Scope, Update,
    UserTags,
};

/// Delete batches an emptying makes at most before giving up (each lists
/// from the start, so a bucket being written to cannot keep it busy forever).
const MAX_DELETE_ROUNDS: usize = 100_000;

impl ObjStore {
    /// Changes the settings `change` names.
    pub async fn update(&self, u: &Update<'_, BucketChange>) -> Result<()> {
        let (region, name, change) = (u.region(), u.current.id.as_str(), u.want);
        if let Some(v) = change.versioning {
            self.put_versioning(region, name, v).await?;
        }
        if let Some(e) = change.encryption {
            self.put_encryption(region, name, e).await?;
        }
        if let Some(l) = &change.lifecycle {
            self.put_lifecycle(region, name, l).await?;
        }
        if let Some(p) = change.public_access_blocked {
            self.put_private(region, name, p).await?;
        }
        if let Some(f) = change.force_destroy {
            let mut tags = self.existing_tags(region, name).await?;
            if f {
                tags.insert(FORCE_DESTROY_TAG.into(), "true".into());
            } else {
                tags.remove(FORCE_DESTROY_TAG);
            }
            self.put_tags(region, name, &tags).await?;
        }
        Ok(())
    }

    /// Makes the user tags exactly `want`; gpuform's own tags stay.
    pub async fn update_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let (region, name, want) = (u.region(), u.current.id.as_str(), u.want);
        let mut tags: Tags = self
            .existing_tags(region, name)
            .await?
            .into_iter()
            .filter(|(k, _)| k.to_lowercase().starts_with(GPUFORM_PREFIX))
            .collect();
        tags.extend(want.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        if tags.len() > self.dialect.max_tags {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "{} takes at most {} tags per bucket",
                    self.dialect.service.product, self.dialect.max_tags
                ),
            ));
        }
        self.put_tags(region, name, &tags).await
    }

    /// `gpuform import`: the bucket's tags read, the ownership and kind
    /// tags put in, the set put back (PutBucketTags replaces it whole).
    pub async fn set_ownership(
        &self,
        scope: &Scope,
        name: &str,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let region = scope.region.as_str();
        let mut tags: Tags = self
            .existing_tags(region, name)
            .await?
            .into_iter()
            .filter(|(k, _)| !OwnershipTags::KEYS.contains(&k.as_str()))
            .collect();
        tags.extend(ownership.owned_tags());
        tags.insert(
            record_tags::KIND.into(),
            gpuform_provider::ResourceKind::Bucket.as_str().into(),
        );
        if tags.len() > self.dialect.max_tags {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "{} takes at most {} tags per bucket, and `{name}` would have {} with gpuform's ownership tags; remove some of its tags, then run import again",
                    self.dialect.service.product,
                    self.dialect.max_tags,
                    tags.len()
                ),
            ));
        }
        self.put_tags(region, name, &tags).await
    }

    async fn existing_tags(&self, region: &str, name: &str) -> Result<Tags> {
        self.tags(region, name).await?.ok_or_else(|| {
            ProviderError::new(
                ErrorKind::NotFound,
                format!("the bucket `{name}` does not exist"),
            )
        })
    }

    /// Deletes the bucket: refused with the object count when it holds
    /// objects and its force-destroy tag is not set; emptied first when it is.
    pub async fn delete(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let Some(tags) = self.tags(region, id).await? else {
            return Ok(());
        };
        let force = tags.get(FORCE_DESTROY_TAG).is_some_and(|v| v == "true");
        let versions = self.versioning(region, id).await?.1;
        if force {
            self.empty(region, id, versions).await?;
            self.abort_uploads(region, id).await?;
        } else {
            let n = self
                .count_objects(region, id, versions, COUNT_PAGES)
                .await?;
            if n > 0 {
                return Err(not_empty(id, n));
            }
        }
        let call = Call::new("DeleteBucket", "DELETE", id);
        match self.send(region, &call).await {
            Ok(_) => Ok(()),
            Err(e) if e.code.as_deref() == Some("NoSuchBucket") => Ok(()),
            // Written to between the count and the delete, or holding only
            // the parts of unfinished multipart uploads.
            Err(e) if e.code.as_deref() == Some("BucketNotEmpty") => {
                let n = self
                    .count_objects(region, id, versions, COUNT_PAGES)
                    .await?;
                Err(if n > 0 {
                    not_empty(id, n)
                } else {
                    unfinished_uploads(id)
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes every object (version) in batches of [`DELETE_BATCH`].
    async fn empty(&self, region: &str, name: &str, versions: bool) -> Result<()> {
        for _ in 0..MAX_DELETE_ROUNDS {
            let page = self.list_page(region, name, versions, None).await?;
            if page.entries.is_empty() {
                return Ok(());
            }
            for batch in page.entries.chunks(DELETE_BATCH) {
                let mut body = Node::new("Delete").with(Node::leaf("Quiet", "true"));
                for (key, version) in batch {
                    let mut o = Node::new("Object").with(Node::leaf("Key", key));
                    if let Some(v) = version {
                        o.push(Node::leaf("VersionId", v));
                    }
                    body.push(o);
                }
                let call = Call::new("DeleteMultipleObjects", "POST", name)
                    .sub("delete")
                    .body(body);
                let answer = self.send(region, &call).await?;
                // Quiet mode lists only the objects that failed.
                if let Ok(doc) = Node::parse(&answer.body) {
                    if let Some(err) = doc.children_named("Error").next() {
                        return Err(ProviderError::new(
                            ErrorKind::Transient,
                            format!(
                                "{} DeleteMultipleObjects could not delete `{}` of `{name}`: {}",
                                self.dialect.service.product,
                                err.text_of("Key").unwrap_or_default(),
                                err.text_of("Message")
                                    .or(err.text_of("Code"))
                                    .unwrap_or_default()
                            ),
                        ));
                    }
                }
            }
        }
        Err(ProviderError::new(
            ErrorKind::Transient,
            format!("the bucket `{name}` is still not empty after emptying it"),
        ))
    }

    /// Aborts every incomplete multipart upload: their parts keep a bucket
    /// from being deleted on OSS, COS and OBS (`BucketNotEmpty`), and
    /// nothing else would ever end them. ListMultipartUploads (`GET
    /// /?uploads`, ≤ 1000 a page, by `key-marker` / `upload-id-marker`),
    /// then AbortMultipartUpload (`DELETE /<key>?uploadId=`) for each; one
    /// already gone (`NoSuchUpload`) is done.
    async fn abort_uploads(&self, region: &str, name: &str) -> Result<()> {
        let mut from: Option<(String, String)> = None;
        loop {
            let mut call = Call::new("ListMultipartUploads", "GET", name)
                .sub("uploads")
                .query("max-uploads", "1000");
            if let Some((key, upload)) = &from {
                call = call
                    .query("key-marker", key.clone())
                    .query("upload-id-marker", upload.clone());
            }
            let doc = self.send(region, &call).await?.xml(call.op)?;
            for u in doc.children_named("Upload") {
                let (Some(key), Some(id)) = (u.text_of("Key"), u.text_of("UploadId")) else {
                    continue;
                };
                let abort = Call::new("AbortMultipartUpload", "DELETE", name)
                    .object(key)
                    .query("uploadId", id);
                match self.send(region, &abort).await {
                    Err(e) if e.code.as_deref() != Some("NoSuchUpload") => return Err(e),
                    _ => {}
                }
            }
            let next = (
                doc.text_of("NextKeyMarker").unwrap_or_default(),
                doc.text_of("NextUploadIdMarker").unwrap_or_default(),
            );
            if doc.text_of("IsTruncated") != Some("true") || next.0.is_empty() {
                return Ok(());
            }
            from = Some((next.0.to_string(), next.1.to_string()));
        }
    }

    /// The names of the buckets in `region` (ListBuckets, paged by marker).
    async fn names(&self, region: &str) -> Result<Vec<String>> {
        let location = (self.dialect.location)(region);
        let mut out = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut call = Call::new("ListBuckets", "GET", "").query("max-keys", "1000");
            call.bucket = None;
            if let Some(m) = &marker {
                call = call.query("marker", m.clone());
            }
            let doc = self.send(region, &call).await?.xml(call.op)?;
            let buckets = doc.find("Buckets").ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Transient,
                    "ListBuckets answered without `Buckets`, which its reference documents; not read as no bucket",
                )
            })?;
            let mut last = None;
            for b in buckets.children_named("Bucket") {
                let Some(name) = b.text_of("Name").filter(|n| !n.is_empty()) else {
                    continue;
                };
                last = Some(name.to_string());
                if b.text_of("Location").is_none_or(|l| l == location) {
                    out.push(name.to_string());
                }
            }
            let next = doc.text_of("NextMarker").map(str::to_string).or(last);
            match (doc.text_of("IsTruncated"), next) {
                (Some("true"), Some(n)) if marker.as_ref() != Some(&n) => marker = Some(n),
                _ => return Ok(out),
            }
        }
    }

    /// Reads the buckets `ids` (absent ones are left out).
    pub async fn read(&self, scope: &Scope, ids: &[String]) -> Result<Vec<ObservedResource>> {
        let mut out = Vec::new();
        for id in ids {
            if let Some(o) = self.read_one(&scope.region, id).await? {
                out.push(o);
            }
        }
        Ok(out)
    }

    /// Every bucket of the region, whoever made it (for audit).
    pub async fn list_all(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        let names = self.names(&scope.region).await?;
        self.read(scope, &names).await
    }

    /// The buckets of the region tagged with `project`.
    pub async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>> {
        let region = scope.region.as_str();
        let mut out = Vec::new();
        for name in self.names(region).await? {
            let tags = match self.tags(region, &name).await {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                // Another account's bucket listed by a shared endpoint, or
                // one these credentials may not read: not this project's.
                Err(e) if e.kind == ErrorKind::Auth => continue,
                Err(e) => return Err(e),
            };
            if tags
                .get(OwnershipTags::PROJECT)
                .is_some_and(|p| p == project)
            {
                if let Some(o) = self.read_one(region, &name).await? {
                    out.push(o);
                }
            }
        }
        Ok(out)
    }
}
