//! gpuform's Alibaba Cloud provider, over the RPC APIs of ECS (2014-05-26)
//! and VPC (2016-04-28) with `reqwest` and the `ACS3-HMAC-SHA256` signer of
//! `gpuform-signing`. Alibaba has no official Rust SDK.
//!
//! | kind        | Alibaba Cloud                                                        |
//! | ----------- | -------------------------------------------------------------------- |
//! | `network`   | VPC `CreateVpc` (`cidr`)                                             |
//! | `subnet`    | VPC `CreateVSwitch` in `refs.network` (`zone`, `cidr`)              |
//! | `firewall`  | ECS `CreateSecurityGroup` in `refs.network` + `AuthorizeSecurityGroup` for `ingress`; members reach each other through the group's `InnerAccessPolicy=Accept` (a rule naming the group itself is refused); all egress is the group's default, and an egress rule that drops traffic (someone else's) is missing egress, revoked by `RevokeSecurityGroupEgress` |
//! | `placement` | ECS `CreateDeploymentSet`, `Strategy=LowLatency` for `cluster` (packed, for NVLink/RDMA), `Availability` for `spread` |
//! | `instance`  | ECS `RunInstances`, `Amount=1`, one call per node, until Running (a failed launch is released and reported as capacity) |
//! | `volume`    | ECS `CreateDisk` + `AttachDisk` to `refs.instance`                   |
//! | `bucket`    | OSS `PutBucket` + `PutBucketTags` (ownership) + versioning, encryption, lifecycle, over `gpuform-objstore` (see `buckets.rs`) |
//!
//! **Layout** (the same in every cloud crate): this file is wiring only,
//! the provider and its [`CloudDriver`] identity; each part of the driver
//! is implemented where its calls are: `network.rs` (`NetworkApi`: VPCs,
//! vSwitches, security groups), `compute.rs` (`ComputeApi`: instances,
//! deployment sets), `storage.rs` (`StorageApi`: disks), `refresh.rs`
//! (`RefreshApi`: read, list_owned), `tags.rs` (`TagApi`: ownership and
//! user tags, names), next to `images.rs`, `client.rs` (signed calls,
//! pagination) and `errors.rs` (error codes). What the part files share sits
//! in leaves that import none of them: `api.rs` (the Describe table, `Api`)
//! and `observe.rs` (every `observe_*`: answers as observations), so part
//! files and `refresh.rs` never import each other. Request parsing, unsupported kinds, the
//! updatable check and read-after-update are done once by the
//! `gpuform_provider` wrapper over [`CloudDriver`].
//!
//! **Ownership.** VPCs, vSwitches, security groups, instances and disks get
//! the ownership tags (`gpuform:project`, `gpuform:address`,
//! `gpuform:token`, `gpuform:lineage`) plus `gpuform:kind` in the create call
//! itself (`Tag.N.Key` / `Tag.N.Value`), so nothing exists untagged even for
//! an instant, and the ownership token doubles as the call's `ClientToken`:
//! a retry with the same token returns the resource made by the first call.
//! Deployment sets have no tags in the API (`CreateDeploymentSet` takes
//! none, `DescribeDeploymentSets` filters by none), so their ownership is
//! written into the deployment set's description in the same call (see
//! [`placement_description`]); that too is atomic with the creation, so there
//! is no crash window where a deployment set exists without its owner.
//!
//! **Refresh** (`list_owned`, `read`) is batched: each kind is one
//! paginated Describe call filtered by the project tag (or by up to 100 ids),
//! so its cost grows with pages. A tag-filtered listing stops at 1,000
//! resources; one that reaches it is redone with `ListTagResources` and
//! Describe by id. Security-group rules need one
//! `DescribeSecurityGroupAttribute` per group (one group per cluster). An
//! answer without the list its reference documents is an error, never an
//! empty result.
//!
//! **Subscriptions** (`reserved-1y` / `reserved-3y`: `PrePaid`, 12 or 36
//! months) are released by `DeleteInstances` only once expired, so
//! [`gpuform_provider::Provider::delete_refusal`] makes a plan that would delete one before
//! its `ExpiredTime` fail before anything is destroyed.
//!
//! Credentials come from `ALIBABA_CLOUD_ACCESS_KEY_ID` /
//! `ALIBABA_CLOUD_ACCESS_KEY_SECRET` (and `ALIBABA_CLOUD_SECURITY_TOKEN` for
//! STS), as Alibaba's own CLI and SDKs read them; they never reach errors,
//! logs or `Debug` output.

mod api;
mod buckets;
mod client;
mod compute;
mod discovery;
mod errors;
mod images;
mod network;
mod observe;
pub mod prices;
mod refresh;
mod storage;
mod tags;
mod volume_types;

pub use buckets::{ENV_OSS_ENDPOINT, OSS};
pub use client::{default_host, Endpoint, Product, RpcClient, CENTRAL_VPC_REGIONS};
pub use errors::classify;
pub use images::{image_name_prefix, is_image_id, LOGICAL_IMAGES};
pub use observe::SUBSCRIPTION_ENDS;
pub use refresh::TAG_FILTER_CAP;
pub use tags::{
    parse_placement_description, placement_description, IMAGE_TAG, KIND_TAG, PLACEMENT_MARK,
    PRICING_TAG, RDMA_TAG,
};

use client::Params;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, CloudDriver, ErrorKind, ImageCache, ObservedResource, ProviderError,
};
use gpuform_signing::Credentials;
use serde_json::Value;
use std::fmt;
use std::time::Duration;

pub const ENV_ACCESS_KEY_ID: &str = "ALIBABA_CLOUD_ACCESS_KEY_ID";
pub const ENV_ACCESS_KEY_SECRET: &str = "ALIBABA_CLOUD_ACCESS_KEY_SECRET";
pub const ENV_SECURITY_TOKEN: &str = "ALIBABA_CLOUD_SECURITY_TOKEN";
pub const ENV_ENDPOINT: &str = "GPUFORM_ALIBABA_ENDPOINT";

/// The Alibaba Cloud provider. Cheap to share; the HTTP client is reused.
pub struct AlibabaProvider {
    client: RpcClient,
    rate: RateLimit,
    /// Image ids of logical names, by (region, name).
    images: ImageCache,
    /// First delay when waiting for a resource to settle (doubles, ≤ 5 s).
    poll: Duration,
    /// Longest wait for a resource to settle (instance Running, disk Available).
    settle: Duration,
    /// Object storage (OSS): another API, on the shared S3-dialect flow.
    oss: gpuform_objstore::ObjStore,
}

impl fmt::Debug for AlibabaProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlibabaProvider")
            .field("client", &self.client)
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

impl AlibabaProvider {
    /// ECS throttles every API operation per account and region per minute
    /// (ECS "API call throttling", help doc 437902: thresholds per operation
    /// in Quota Center > API Rate Limits; each operation page on
    /// api.aliyun.com states its own, e.g. DescribeImages 1000/60 s). The
    /// mutating operations an apply uses most (RunInstances, CreateDisk,
    /// AttachDisk, DeleteInstances) have far lower budgets than the reads,
    /// so gpuform's shared budget stays at 5 calls/s (300 a minute) with a
    /// burst of 20: under the write budgets while refresh needs only a few
    /// calls. Raise it with [`AlibabaProvider::with_rate_limit`] for an
    /// account with raised quotas.
    pub const DEFAULT_RATE: RateLimit = RateLimit::new(5.0, 20);

    /// Reads credentials from `ALIBABA_CLOUD_ACCESS_KEY_ID`,
    /// `ALIBABA_CLOUD_ACCESS_KEY_SECRET` (and optional
    /// `ALIBABA_CLOUD_SECURITY_TOKEN`), and the endpoint override from
    /// `GPUFORM_ALIBABA_ENDPOINT`. Sends nothing.
    pub fn from_env() -> Result<AlibabaProvider> {
        Self::from_env_with_endpoint(None)
    }

    /// Like [`AlibabaProvider::from_env`], with an endpoint override (from a
    /// spec's `endpoints:`) that wins over `GPUFORM_ALIBABA_ENDPOINT`.
    pub fn from_env_with_endpoint(endpoint: Option<String>) -> Result<AlibabaProvider> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let (Some(id), Some(secret)) = (var(ENV_ACCESS_KEY_ID), var(ENV_ACCESS_KEY_SECRET)) else {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!(
                    "Alibaba Cloud credentials are missing: set {ENV_ACCESS_KEY_ID} and \
                     {ENV_ACCESS_KEY_SECRET} (and {ENV_SECURITY_TOKEN} for STS credentials), \
                     as for Alibaba's own CLI and SDKs"
                ),
            ));
        };
        let endpoint = endpoint
            .or_else(|| var(ENV_ENDPOINT))
            .map(|u| Endpoint::parse(&u, ENV_ENDPOINT))
            .transpose()?;
        let oss = var(buckets::ENV_OSS_ENDPOINT)
            .map(|u| gpuform_http::Endpoint::parse(&u, buckets::ENV_OSS_ENDPOINT))
            .transpose()?;
        Ok(Self::new(
            Credentials::new(id, secret),
            var(ENV_SECURITY_TOKEN),
            endpoint,
        )?
        .with_oss_endpoint(oss))
    }

    /// A provider with explicit credentials and endpoint (tests, embedding).
    pub fn new(
        creds: Credentials,
        security_token: Option<String>,
        endpoint: Option<Endpoint>,
    ) -> Result<AlibabaProvider> {
        let signer = buckets::OssSigner {
            creds: creds.clone(),
            token: security_token.clone(),
        };
        Ok(AlibabaProvider {
            oss: gpuform_objstore::ObjStore::new(buckets::OSS, Box::new(signer), None)?,
            client: RpcClient::new(creds, security_token, endpoint)?,
            rate: Self::DEFAULT_RATE,
            images: ImageCache::new(),
            poll: Duration::from_millis(500),
            settle: Duration::from_secs(600),
        })
    }

    /// Sends OSS calls to `endpoint` (`None`: the OSS hosts).
    pub fn with_oss_endpoint(mut self, endpoint: Option<gpuform_http::Endpoint>) -> Self {
        self.oss = self.oss.with_endpoint(endpoint);
        self
    }

    /// Retries of a throttled or failed OSS call, and the first pause.
    pub fn with_oss_retries(mut self, retries: u32, backoff: Duration) -> Self {
        self.oss = self.oss.with_retries(retries, backoff);
        self
    }

    pub fn with_rate_limit(mut self, rate: RateLimit) -> Self {
        self.rate = rate;
        self
    }

    /// How often and how long to poll while a resource settles (an instance
    /// leaving Pending before AttachDisk, a disk leaving In_use after
    /// DetachDisk). Local tests use a short first delay.
    pub fn with_polling(mut self, first: Duration, max_wait: Duration) -> Self {
        self.poll = first;
        self.settle = max_wait;
        self
    }

    /// The endpoint override in use, if any.
    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.client.endpoint()
    }

    async fn ecs(&self, region: &str, action: &str, p: &Params) -> Result<Value> {
        self.client.call(Product::Ecs, region, action, &p.0).await
    }

    async fn vpc(&self, region: &str, action: &str, p: &Params) -> Result<Value> {
        self.client.call(Product::Vpc, region, action, &p.0).await
    }
}

impl CloudDriver for AlibabaProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Alibaba
    }

    fn label(&self) -> String {
        match self.client.endpoint() {
            Some(e) => format!("alibaba({})", e.authority),
            None => "alibaba".to_string(),
        }
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    fn buckets(&self) -> Option<&dyn gpuform_provider::BucketApi> {
        Some(&self.oss)
    }

    fn delete_refusal(&self, observed: &ObservedResource) -> Option<String> {
        compute::delete_refusal(observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_env_names_the_variables() {
        // Only asserts on the message: the variables may be set in a developer's shell.
        if std::env::var(ENV_ACCESS_KEY_ID).is_err() {
            let e = AlibabaProvider::from_env().unwrap_err();
            assert_eq!(e.kind, ErrorKind::Auth);
            assert!(
                e.message.contains(ENV_ACCESS_KEY_ID) && e.message.contains(ENV_ACCESS_KEY_SECRET)
            );
        }
    }
}
