//! The shape every cloud crate implements, and the one [`Provider`] built on it.
//!
//! A cloud crate implements [`CloudDriver`] (identity: cloud, label, rate,
//! kinds) and its five parts, one per module file of the crate:
//! [`NetworkApi`], [`ComputeApi`], [`StorageApi`], [`RefreshApi`] and
//! [`TagApi`], one method per kind and operation, taking typed values. Everything a provider must do the same
//! way on every cloud is done once here, in the blanket `Provider` impl:
//! reading the engine's attribute maps into typed requests (one error per
//! problem), refusing kinds a cloud does not make, refusing changes that
//! need a replacement, treating "not found" on delete as done, and reading a
//! resource back after an update.

use crate::capacity::{BlockOffering, BlockQuery, Reservation, ReservationFilter};
use crate::change::{Attachment, BucketChange, ChangeSet, Update};
use crate::error::ok_if_gone;
use crate::ingress::IngressRule;
use crate::provider::RateLimit;
use crate::quota::{QuotaMarket, QuotaReading};
use crate::request::{
    BlockSpec, BucketSpec, Create, Desired, FirewallSpec, InstanceSpec, NetworkSpec, PlacementSpec,
    SubnetSpec, VolumeSpec,
};
use crate::tags::UserTags;
use crate::Result;
use crate::{
    AlsoList, Attrs, Cloud, CreateRequest, ErrorKind, ExistingResource, ObservedResource,
    OwnershipTags, Provider, ProviderError, ResourceKind, Scope,
};
use async_trait::async_trait;
use std::time::Duration;

/// The error for a kind a cloud does not make (yet): the same words on
/// every cloud.
pub fn unsupported(cloud: Cloud, kind: ResourceKind) -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        format!("{kind} resources are not supported on {cloud} yet"),
    )
}

/// Networks, subnets and firewalls: what a cloud crate's `network.rs`
/// implements.
#[async_trait]
pub trait NetworkApi: Send + Sync {
    async fn create_network(&self, req: &Create<NetworkSpec>) -> Result<ObservedResource>;
    async fn create_subnet(&self, req: &Create<SubnetSpec>) -> Result<ObservedResource>;
    async fn create_firewall(&self, req: &Create<FirewallSpec>) -> Result<ObservedResource>;

    /// Makes a firewall's rules exactly `want`, plus the members' rule when
    /// the observed ingress says it is missing.
    async fn update_ingress(&self, u: &Update<'_, [IngressRule]>) -> Result<()>;

    async fn delete_network(&self, scope: &Scope, id: &str) -> Result<()>;
    async fn delete_subnet(&self, scope: &Scope, id: &str) -> Result<()>;
    async fn delete_firewall(&self, scope: &Scope, id: &str) -> Result<()>;
}

/// Instances and placement groups: what a cloud crate's `compute.rs`
/// implements.
#[async_trait]
pub trait ComputeApi: Send + Sync {
    /// See [`Provider::offered`].
    async fn offered(&self, scope: &Scope, zone: &str, itype: &str) -> Result<Option<bool>> {
        let _ = (scope, zone, itype);
        Ok(None)
    }

    /// See [`Provider::quota`].
    async fn quota(
        &self,
        scope: &Scope,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        let _ = (scope, itype, market);
        Ok(None)
    }

    /// See [`Provider::quota_per_zone`].
    fn quota_per_zone(&self) -> bool {
        false
    }

    /// See [`Provider::zone_quota`].
    async fn zone_quota(
        &self,
        scope: &Scope,
        zone: &str,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        let _ = zone;
        ComputeApi::quota(self, scope, itype, market).await
    }

    /// See [`Provider::reservations`].
    async fn reservations(
        &self,
        scope: &Scope,
        filter: &ReservationFilter,
    ) -> Result<Vec<Reservation>> {
        let _ = (scope, filter);
        Err(ProviderError::new(
            ErrorKind::Invalid,
            "this cloud has no capacity reservations gpuform can use",
        ))
    }

    /// See [`Provider::block_offerings`].
    async fn block_offerings(&self, scope: &Scope, q: &BlockQuery) -> Result<Vec<BlockOffering>> {
        let _ = (scope, q);
        Err(not_made(ResourceKind::Block))
    }

    /// Buys a Capacity Block. No cloud takes an idempotency token for it
    /// (PurchaseCapacityBlock has none), so an implementation first looks
    /// for a block tagged with `req.ownership.token` and returns it, and
    /// only then purchases, tagging the purchase with the ownership tags.
    async fn create_block(&self, req: &Create<BlockSpec>) -> Result<ObservedResource> {
        let _ = req;
        Err(not_made(ResourceKind::Block))
    }

    async fn create_placement(&self, req: &Create<PlacementSpec>) -> Result<ObservedResource>;
    async fn create_instance(&self, req: &Create<InstanceSpec>) -> Result<ObservedResource>;
    async fn delete_placement(&self, scope: &Scope, id: &str) -> Result<()>;
    async fn delete_instance(&self, scope: &Scope, id: &str) -> Result<()>;
}

/// Volumes: what a cloud crate's `storage.rs` implements.
#[async_trait]
pub trait StorageApi: Send + Sync {
    async fn create_volume(&self, req: &Create<VolumeSpec>) -> Result<ObservedResource>;

    /// Grows a volume.
    async fn resize_volume(&self, u: &Update<'_, u32>) -> Result<()>;

    /// Attaches a volume to an instance (detaching it from any other first),
    /// or detaches it; succeeds when there is nothing to do.
    async fn attach_volume(&self, u: &Update<'_, Attachment>) -> Result<()>;

    async fn delete_volume(&self, scope: &Scope, id: &str) -> Result<()>;
}

/// Object-storage buckets. Object storage is an API apart from compute (S3,
/// OSS, COS, OBS) with its own client, so this is implemented by that
/// client — `gpuform_objstore::ObjStore` for the S3-like dialect of OSS, COS
/// and OBS, the AWS crate's S3 part — and a cloud hands it to the wrapper
/// with [`CloudDriver::buckets`]; its reads and tag updates live here too.
/// A cloud that makes buckets also lists [`ResourceKind::Bucket`] in
/// [`CloudDriver::kinds`]; the wrapper never calls these otherwise.
#[async_trait]
pub trait BucketApi: Send + Sync {
    async fn create_bucket(&self, req: &Create<BucketSpec>) -> Result<ObservedResource> {
        let _ = req;
        Err(not_made(ResourceKind::Bucket))
    }

    /// Deletes a bucket, refusing one that holds objects unless its
    /// `force_destroy` tag ([`crate::bucket::FORCE_DESTROY_TAG`]) says it
    /// may be emptied first ([`crate::bucket::not_empty`]).
    async fn delete_bucket(&self, scope: &Scope, id: &str) -> Result<()> {
        let _ = (scope, id);
        Err(not_made(ResourceKind::Bucket))
    }

    /// Changes a bucket's settings (versioning, encryption, lifecycle,
    /// public access block, force_destroy) to the given values.
    async fn update_bucket(&self, u: &Update<'_, BucketChange>) -> Result<()> {
        let _ = u;
        Err(not_made(ResourceKind::Bucket))
    }

    /// Makes a bucket's user tags exactly `want`; gpuform's own tags stay
    /// (see [`TagApi::update_tags`]).
    async fn update_bucket_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let _ = u;
        Err(not_made(ResourceKind::Bucket))
    }

    /// Adds the ownership tags and `gpuform:kind` to a bucket gpuform did
    /// not make (see [`Provider::set_ownership`]), keeping every other tag;
    /// the same call again changes nothing.
    async fn set_bucket_ownership(
        &self,
        bucket: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let _ = (bucket, ownership);
        Err(not_imported(ResourceKind::Bucket))
    }

    /// Reads the given buckets (see [`RefreshApi::read`]).
    async fn read_buckets(&self, scope: &Scope, ids: &[String]) -> Result<Vec<ObservedResource>> {
        let _ = (scope, ids);
        Ok(Vec::new())
    }

    /// Every bucket in `scope`'s region, whoever made it, with its
    /// ownership where its tags carry one: what `gpuform audit` lists.
    async fn list_buckets(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        let _ = scope;
        Ok(Vec::new())
    }

    /// The buckets in `scope` tagged with this project (see
    /// [`RefreshApi::list_owned`]).
    async fn list_owned_buckets(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>> {
        let _ = (scope, project);
        Ok(Vec::new())
    }
}

/// Resources of one kind to read by id: what [`RefreshApi::read`] gets.
pub struct Lookup<'a> {
    pub scope: &'a Scope,
    pub kind: ResourceKind,
    pub ids: &'a [String],
}

/// Reading what exists: what a cloud crate's `refresh.rs` implements.
#[async_trait]
pub trait RefreshApi: Send + Sync {
    /// Reads the given resources of one kind (never called with no ids, with
    /// a kind outside [`CloudDriver::kinds`] nor with buckets, which
    /// [`BucketApi`] reads); absent ones are left out.
    async fn read(&self, q: &Lookup<'_>) -> Result<Vec<ObservedResource>>;

    /// Everything in `scope` tagged with this project, but for buckets and
    /// blocks (see [`AlsoList`]).
    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>>;

    /// The Capacity Blocks in `scope` tagged with this project, on clouds
    /// that sell them (see [`AlsoList`]).
    async fn list_owned_blocks(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>> {
        let _ = (scope, project);
        Ok(Vec::new())
    }
}

/// User tags: what a cloud crate's `tags.rs` implements.
#[async_trait]
pub trait TagApi: Send + Sync {
    /// The cloud's own naming rules for a user tag (lengths, alphabet),
    /// beyond the reserved prefixes [`UserTags::parse`] already refuses.
    fn check_tag(key: &str, value: &str) -> Result<(), String> {
        let _ = (key, value);
        Ok(())
    }

    /// Makes the user tags of `current` exactly `want` (ownership tags stay).
    async fn update_tags(&self, u: &Update<'_, UserTags>) -> Result<()>;

    /// See [`Provider::set_ownership`]: adds the ownership tags to a
    /// resource gpuform did not make (never called for buckets:
    /// [`BucketApi::set_bucket_ownership`] tags those). A cloud
    /// that does not implement it refuses imports with one message.
    async fn set_ownership(
        &self,
        resource: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let _ = ownership;
        Err(not_imported(resource.kind))
    }
}

/// What a cloud that cannot import answers (the engine names the cloud
/// and region it asked).
fn not_imported(kind: ResourceKind) -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        format!("importing a {kind} is not supported on this cloud yet"),
    )
}

/// One cloud's API. Implement this and its five parts (each in the module
/// file of the same name), not [`Provider`]; `lib.rs` keeps only this
/// trait's identity methods, so nothing forwards.
///
/// Creates set the ownership tags atomically with the creation and use the
/// ownership token as the idempotency token where the cloud has one. Reads
/// never return resources that are gone. Deletes may answer
/// [`ErrorKind::NotFound`] for something already gone (the wrapper treats it
/// as done). Update methods get the resource as just read.
pub trait CloudDriver: NetworkApi + ComputeApi + StorageApi + RefreshApi + TagApi {
    /// The cloud this driver speaks.
    fn cloud(&self) -> Cloud;

    /// A short label for output: `aws`, or with a test endpoint
    /// `aws(http://127.0.0.1:5555)`; the cloud's name unless overridden.
    fn label(&self) -> String {
        self.cloud().to_string()
    }

    /// The call budget the engine keeps to.
    fn rate_limit(&self) -> RateLimit;

    /// The kinds this cloud makes (all of them unless overridden); creates of others are refused with
    /// [`unsupported`] before any call.
    fn kinds(&self) -> &'static [ResourceKind] {
        &ResourceKind::ALL
    }

    /// See [`Provider::settle_time`].
    fn settle_time(&self) -> Duration {
        Duration::ZERO
    }

    /// See [`Provider::delete_refusal`].
    fn delete_refusal(&self, observed: &ObservedResource) -> Option<String> {
        let _ = observed;
        None
    }

    /// The cloud's object storage, when it makes buckets.
    fn buckets(&self) -> Option<&dyn BucketApi> {
        None
    }
}

/// The object storage of a cloud whose kinds include buckets.
fn bucket_api<D: CloudDriver + ?Sized>(d: &D) -> Result<&dyn BucketApi> {
    d.buckets()
        .ok_or_else(|| unsupported(d.cloud(), ResourceKind::Bucket))
}

/// What an optional method answers when its cloud does not override it
/// (unreachable through the wrapper, which checks [`CloudDriver::kinds`]
/// first and then names the cloud).
fn not_made(kind: ResourceKind) -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        format!("{kind} resources are not supported by this driver"),
    )
}

/// Reads one resource, or says it is gone.
async fn read_one<D: CloudDriver + ?Sized>(
    d: &D,
    resource: ExistingResource<'_>,
) -> Result<ObservedResource> {
    let ExistingResource { scope, kind, id } = resource;
    let ids = [id.to_string()];
    let read = if kind == ResourceKind::Bucket {
        bucket_api(d)?.read_buckets(scope, &ids).await?
    } else {
        let q = Lookup {
            scope,
            kind,
            ids: &ids,
        };
        RefreshApi::read(d, &q).await?
    };
    read.into_iter().find(|r| r.id == id).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::NotFound,
            format!("{kind} {id} does not exist on {}", d.cloud()),
        )
    })
}

#[async_trait]
impl<D: CloudDriver> Provider for D {
    fn cloud(&self) -> Cloud {
        CloudDriver::cloud(self)
    }

    fn label(&self) -> String {
        CloudDriver::label(self)
    }

    fn rate_limit(&self) -> RateLimit {
        CloudDriver::rate_limit(self)
    }

    fn settle_time(&self) -> Duration {
        CloudDriver::settle_time(self)
    }

    fn delete_refusal(&self, observed: &ObservedResource) -> Option<String> {
        crate::bucket::delete_refusal(observed)
            .or_else(|| CloudDriver::delete_refusal(self, observed))
    }

    async fn offered(&self, scope: &Scope, zone: &str, itype: &str) -> Result<Option<bool>> {
        ComputeApi::offered(self, scope, zone, itype).await
    }

    async fn quota(
        &self,
        scope: &Scope,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        ComputeApi::quota(self, scope, itype, market).await
    }

    fn quota_per_zone(&self) -> bool {
        ComputeApi::quota_per_zone(self)
    }

    async fn zone_quota(
        &self,
        scope: &Scope,
        zone: &str,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        ComputeApi::zone_quota(self, scope, zone, itype, market).await
    }

    async fn set_ownership(
        &self,
        resource: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let kind = resource.kind;
        let cloud = CloudDriver::cloud(self);
        if !self.kinds().contains(&kind)
            || (kind == ResourceKind::Bucket && self.buckets().is_none())
        {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("importing a {kind} is not supported on {cloud} yet"),
            ));
        }
        if kind == ResourceKind::Bucket {
            return bucket_api(self)?
                .set_bucket_ownership(resource, ownership)
                .await;
        }
        TagApi::set_ownership(self, resource, ownership).await
    }

    async fn reservations(
        &self,
        scope: &Scope,
        filter: &ReservationFilter,
    ) -> Result<Vec<Reservation>> {
        ComputeApi::reservations(self, scope, filter).await
    }

    async fn block_offerings(&self, scope: &Scope, q: &BlockQuery) -> Result<Vec<BlockOffering>> {
        ComputeApi::block_offerings(self, scope, q).await
    }

    async fn list_all_buckets(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        match self.buckets() {
            Some(b) if self.kinds().contains(&ResourceKind::Bucket) => b.list_buckets(scope).await,
            _ => Ok(Vec::new()),
        }
    }

    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource> {
        let cloud = CloudDriver::cloud(self);
        if !self.kinds().contains(&req.kind) {
            return Err(unsupported(cloud, req.kind));
        }
        let tags = UserTags::parse(req.attrs.get(crate::attr::TAGS), cloud, Self::check_tag)?;
        match Desired::parse(req, tags)? {
            Desired::Network(r) => self.create_network(&r).await,
            Desired::Subnet(r) => self.create_subnet(&r).await,
            Desired::Firewall(r) => self.create_firewall(&r).await,
            Desired::Placement(r) => self.create_placement(&r).await,
            Desired::Instance(r) => self.create_instance(&r).await,
            Desired::Volume(r) => self.create_volume(&r).await,
            Desired::Bucket(r) => bucket_api(self)?.create_bucket(&r).await,
            Desired::Block(r) => self.create_block(&r).await,
        }
    }

    async fn read(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>> {
        if ids.is_empty() || !self.kinds().contains(&kind) {
            return Ok(Vec::new());
        }
        if kind == ResourceKind::Bucket {
            return bucket_api(self)?.read_buckets(scope, ids).await;
        }
        RefreshApi::read(self, &Lookup { scope, kind, ids }).await
    }

    /// The compute kinds only: buckets and blocks are other APIs, listed
    /// when asked for ([`Provider::list_owned_kinds`]).
    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>> {
        self.list_owned_kinds(scope, project, AlsoList::default())
            .await
    }

    async fn list_owned_kinds(
        &self,
        scope: &Scope,
        project: &str,
        also: AlsoList,
    ) -> Result<Vec<ObservedResource>> {
        let mut owned = RefreshApi::list_owned(self, scope, project).await?;
        if also.buckets && self.kinds().contains(&ResourceKind::Bucket) {
            owned.extend(bucket_api(self)?.list_owned_buckets(scope, project).await?);
        }
        if also.blocks && self.kinds().contains(&ResourceKind::Block) {
            owned.extend(RefreshApi::list_owned_blocks(self, scope, project).await?);
        }
        Ok(owned)
    }

    async fn update(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
        changes: &Attrs,
    ) -> Result<ObservedResource> {
        let cloud = CloudDriver::cloud(self);
        if !self.kinds().contains(&kind) {
            return Err(unsupported(cloud, kind));
        }
        let set = ChangeSet::parse(kind, changes, cloud, Self::check_tag)?;
        let resource = ExistingResource { scope, kind, id };
        let current = read_one(self, resource).await?;
        match &set.tags {
            Some(tags) if kind == ResourceKind::Bucket => {
                bucket_api(self)?
                    .update_bucket_tags(&Update::new(scope, &current, tags))
                    .await?
            }
            Some(tags) => {
                self.update_tags(&Update::new(scope, &current, tags))
                    .await?
            }
            None => {}
        }
        if let Some(rules) = &set.ingress {
            self.update_ingress(&Update::new(scope, &current, rules))
                .await?;
        }
        if let Some(attachment) = &set.attachment {
            self.attach_volume(&Update::new(scope, &current, attachment))
                .await?;
        }
        if let Some(size) = &set.size_gb {
            self.resize_volume(&Update::new(scope, &current, size))
                .await?;
        }
        if let Some(change) = &set.bucket {
            bucket_api(self)?
                .update_bucket(&Update::new(scope, &current, change))
                .await?;
        }
        read_one(self, resource).await
    }

    async fn delete(&self, scope: &Scope, kind: ResourceKind, id: &str) -> Result<()> {
        if !self.kinds().contains(&kind) {
            return Err(unsupported(CloudDriver::cloud(self), kind));
        }
        ok_if_gone(match kind {
            ResourceKind::Network => self.delete_network(scope, id).await,
            ResourceKind::Subnet => self.delete_subnet(scope, id).await,
            ResourceKind::Firewall => self.delete_firewall(scope, id).await,
            ResourceKind::Placement => self.delete_placement(scope, id).await,
            ResourceKind::Instance => self.delete_instance(scope, id).await,
            ResourceKind::Volume => self.delete_volume(scope, id).await,
            ResourceKind::Bucket => bucket_api(self)?.delete_bucket(scope, id).await,
            // A block cannot be cancelled: the engine forgets it, the cloud
            // keeps it until its end.
            ResourceKind::Block => Ok(()),
        })
    }
}

#[cfg(test)]
mod tests;
