//! The provider trait: the small set of questions every cloud answers.

use crate::quota::{QuotaMarket, QuotaReading};
use crate::Result;
use crate::{Attrs, Cloud, ObservedResource, OwnershipTags, ResourceKind};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a call is made: a region of the provider's cloud.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Scope {
    pub region: String,
}

/// A resource that exists in a cloud: where it is, its kind and its
/// provider id. What an import's tagging ([`Provider::set_ownership`])
/// and the read after an update take, as one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExistingResource<'a> {
    pub scope: &'a Scope,
    pub kind: ResourceKind,
    pub id: &'a str,
}

/// A request to create one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateRequest {
    pub kind: ResourceKind,
    pub scope: Scope,
    pub attrs: Attrs,
    /// Provider ids of the resources this one depends on, by role:
    /// `network`, `subnet`, `firewall`, `placement`, `instance`.
    pub refs: BTreeMap<String, String>,
    /// Must be set on the resource atomically with its creation, and
    /// `ownership.token` passed as the cloud's idempotency token.
    pub ownership: OwnershipTags,
}

/// How fast a provider may be called: a token bucket shared by every call
/// the engine makes to it. Each provider declares the budget of the cloud it
/// speaks (its sustained request rate and burst); the engine never calls
/// faster, and derives its default parallelism from it
/// ([`RateLimit::useful_concurrency`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Sustained calls per second (the bucket's refill rate).
    pub per_second: f64,
    /// Calls that may start at once when the bucket is full.
    pub burst: u32,
}

impl RateLimit {
    pub const fn new(per_second: f64, burst: u32) -> RateLimit {
        RateLimit { per_second, burst }
    }

    /// How long one engine operation on a cloud may take, at most, for the
    /// purpose of sizing concurrency: a create that waits for its resource
    /// (an EBS volume becoming `available`) takes seconds, not minutes.
    pub const OPERATION_TIME_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

    /// The most operations this budget can keep in flight at once (Little's
    /// law): `burst` start together, then `per_second` more start each
    /// second, and each stays in flight for at most
    /// [`Self::OPERATION_TIME_BOUND`]. More concurrency than this cannot make
    /// the provider's calls go faster, only wait in the bucket; less makes
    /// the apply slower than the cloud allows.
    pub fn useful_concurrency(&self) -> u64 {
        let sustained = self.per_second.max(0.0) * Self::OPERATION_TIME_BOUND.as_secs_f64();
        u64::from(self.burst.max(1)).saturating_add(sustained.ceil().min(u64::MAX as f64) as u64)
    }
}

/// One cloud (or the sandbox simulating one).
///
/// Contract:
/// - `create` sets the ownership tags at creation and uses the token for
///   idempotency, so that a crash between the call and recording its result
///   is healed by adoption (`list_owned`) on the next run.
/// - `read` and `list_owned` are batched: their cost grows with pages, not
///   with resources. They never return resources that are gone.
/// - `delete` of a resource that no longer exists succeeds.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The cloud this provider speaks (or simulates).
    fn cloud(&self) -> Cloud;

    /// A short label for output: `aws`, `sandbox(aws)`.
    fn label(&self) -> String;

    /// The call budget the engine keeps to for this provider.
    fn rate_limit(&self) -> RateLimit;

    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource>;

    /// Reads the given resources of one kind; absent ones are left out.
    async fn read(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>>;

    /// Everything in `scope` tagged with this project; a cloud driver
    /// leaves its buckets out (see [`Provider::list_owned_kinds`]).
    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>>;

    /// What this project owns in `scope`, with the kinds of [`AlsoList`]
    /// only when asked for.
    async fn list_owned_kinds(
        &self,
        scope: &Scope,
        project: &str,
        also: AlsoList,
    ) -> Result<Vec<ObservedResource>> {
        let mut all = self.list_owned(scope, project).await?;
        all.retain(|o| also.includes(o.kind));
        Ok(all)
    }

    /// Changes updatable attributes in place (see
    /// [`ResourceKind::updatable_attrs`]). `changes` holds only the new values.
    async fn update(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
        changes: &Attrs,
    ) -> Result<ObservedResource>;

    async fn delete(&self, scope: &Scope, kind: ResourceKind, id: &str) -> Result<()>;

    /// Whether the cloud sells the instance type `itype` in `zone` right now, when it
    /// can say (`None`: it cannot, or does not say). Checked at plan time so
    /// that a zone without the type is skipped before anything is created.
    async fn offered(&self, scope: &Scope, zone: &str, itype: &str) -> Result<Option<bool>> {
        let _ = (scope, zone, itype);
        Ok(None)
    }

    /// The account quota an instance of `itype` bought in `market` counts
    /// against in `scope`'s region, with its limit and usage, when the cloud
    /// can say (`None`: it cannot). Checked at plan time so that a plan that
    /// cannot fit fails before anything is created. No permission to read it
    /// is an error of kind [`crate::ErrorKind::Auth`].
    async fn quota(
        &self,
        scope: &Scope,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        let _ = (scope, itype, market);
        Ok(None)
    }

    /// Whether this cloud's instance quotas are per zone (Tencent's
    /// `DescribeAccountQuota`) rather than per region: the engine then asks
    /// [`Provider::zone_quota`] for each zone and fails over zone by zone.
    fn quota_per_zone(&self) -> bool {
        false
    }

    /// [`Provider::quota`] in one zone: the same unless
    /// [`Provider::quota_per_zone`].
    async fn zone_quota(
        &self,
        scope: &Scope,
        zone: &str,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        let _ = zone;
        self.quota(scope, itype, market).await
    }

    /// The account's capacity reservations in `scope`'s region that
    /// `filter` names, active or not (the caller says why one cannot be
    /// used). Read at plan time for a cluster's `capacity:` list.
    async fn reservations(
        &self,
        scope: &Scope,
        filter: &crate::capacity::ReservationFilter,
    ) -> Result<Vec<crate::capacity::Reservation>> {
        let _ = (scope, filter);
        Err(crate::ProviderError::new(
            crate::ErrorKind::Invalid,
            format!(
                "{} has no capacity reservations gpuform can use",
                self.label()
            ),
        ))
    }

    /// The Capacity Block offerings that `q` asks for in `scope`'s region
    /// (DescribeCapacityBlockOfferings), read at plan time for a cluster's
    /// `{block: …}`; a block is bought by a create of kind
    /// [`ResourceKind::Block`].
    async fn block_offerings(
        &self,
        scope: &Scope,
        q: &crate::capacity::BlockQuery,
    ) -> Result<Vec<crate::capacity::BlockOffering>> {
        let _ = (scope, q);
        Err(crate::ProviderError::new(
            crate::ErrorKind::Invalid,
            format!("{} sells no Capacity Blocks gpuform can buy", self.label()),
        ))
    }

    /// How long after a create call its resource may still be missing from
    /// `list_owned` (eventually consistent reads, a request still being
    /// processed after its client died). After a crash, a create younger than
    /// this that is not found yet is looked for again before it is retried,
    /// so that clouds without idempotency tokens for some kinds do not get a
    /// duplicate. Zero for clouds whose reads are consistent.
    fn settle_time(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Puts gpuform's ownership tags on a resource that exists but was not
    /// made by gpuform (`gpuform import`), leaving every other tag as it is:
    /// the only change an import makes in a cloud. Setting the same tags
    /// again succeeds, so an interrupted import is simply run again.
    async fn set_ownership(
        &self,
        resource: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let _ = ownership;
        Err(crate::ProviderError::new(
            crate::ErrorKind::Invalid,
            format!(
                "importing a {} is not supported on {} yet",
                resource.kind,
                self.label()
            ),
        ))
    }

    /// Every bucket of `scope`'s region, of every owner (`gpuform audit`):
    /// empty for a cloud whose object storage gpuform does not speak.
    async fn list_all_buckets(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        let _ = scope;
        Ok(Vec::new())
    }

    /// Why the cloud documents that deleting this resource now is refused
    /// (a prepaid Huawei server, an unexpired Alibaba subscription), with
    /// what to do instead; `None` when it can be deleted. Asked of every
    /// delete and replace a plan holds, from the refreshed observation and
    /// without API calls, so that a plan that cannot be carried out is
    /// refused before anything is destroyed.
    fn delete_refusal(&self, observed: &ObservedResource) -> Option<String> {
        let _ = observed;
        None
    }
}

/// The kinds a listing of what a project owns includes only when asked:
/// each is another API with its own permission, which a refresh whose state
/// and spec hold none of in a region does not need. Buckets: other hosts and
/// permissions, a call per bucket of the account on some clouds. Capacity
/// Blocks: `ec2:DescribeCapacityReservations`, which a user who never buys
/// a block need not grant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AlsoList {
    pub buckets: bool,
    pub blocks: bool,
}

impl AlsoList {
    /// Whether a listing with these extras includes resources of `kind`.
    pub fn includes(self, kind: ResourceKind) -> bool {
        match kind {
            ResourceKind::Bucket => self.buckets,
            ResourceKind::Block => self.blocks,
            _ => true,
        }
    }

    /// Adds `kind` to the extras if it is one of them.
    pub fn add(&mut self, kind: ResourceKind) {
        match kind {
            ResourceKind::Bucket => self.buckets = true,
            ResourceKind::Block => self.blocks = true,
            _ => {}
        }
    }
}
