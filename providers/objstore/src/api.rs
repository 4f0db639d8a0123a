//! The layer as the [`BucketApi`] a cloud crate hands to the engine's
//! wrapper (`CloudDriver::buckets`): OSS, COS and OBS need nothing more.

use crate::ObjStore;
use async_trait::async_trait;
use gpuform_provider::{
    BucketApi, BucketChange, BucketSpec, Create, ExistingResource, ObservedResource, OwnershipTags,
    Result, Scope, Update, UserTags,
};

#[async_trait]
impl BucketApi for ObjStore {
    async fn create_bucket(&self, req: &Create<BucketSpec>) -> Result<ObservedResource> {
        self.create(req).await
    }

    async fn delete_bucket(&self, scope: &Scope, id: &str) -> Result<()> {
        self.delete(scope, id).await
    }

    async fn update_bucket(&self, u: &Update<'_, BucketChange>) -> Result<()> {
        self.update(u).await
    }

    async fn update_bucket_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        self.update_tags(u).await
    }

    async fn set_bucket_ownership(
        &self,
        bucket: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        self.set_ownership(bucket.scope, bucket.id, ownership).await
    }

    async fn read_buckets(&self, scope: &Scope, ids: &[String]) -> Result<Vec<ObservedResource>> {
        self.read(scope, ids).await
    }

    async fn list_buckets(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        self.list_all(scope).await
    }

    async fn list_owned_buckets(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>> {
        self.list_owned(scope, project).await
    }
}
