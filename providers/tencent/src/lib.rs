//! gpuform's Tencent Cloud provider over Tencent Cloud API 3.0 (POST JSON,
//! TC3-HMAC-SHA256), with `reqwest` and the signer of `gpuform-signing`.
//!
//! | neutral kind | Tencent Cloud (API version 2017-03-12 for cvm, vpc and cbs) | module |
//! | --- | --- | --- |
//! | `network` | vpc:CreateVpc (tags at creation) | `network` |
//! | `subnet` | vpc:CreateSubnet | `network` |
//! | `firewall` | vpc:CreateSecurityGroup + CreateSecurityGroupPolicies (members, `ingress`, all egress); rules (ingress and egress, a missing egress reported as such) read back by DescribeSecurityGroupPolicies | `network` |
//! | `placement` | cvm:CreateDisasterRecoverGroup (see [`TencentProvider`] on why not an HPC cluster) | `compute` |
//! | `instance` | cvm:RunInstances, one per node, ClientToken = the journaled token | `compute` |
//! | `volume` | cbs:CreateDisks + AttachDisks | `storage` |
//! | `bucket` | COS XML API (`q-sign-algorithm=sha1`) over the shared flow of `gpuform-objstore`: PUT Bucket, PUT Bucket tagging / versioning / encryption / lifecycle, GET of each to read back, GET Service to list | `buckets` |
//!
//! This file is wiring only: the provider, its constructor and its
//! [`CloudDriver`] identity. Each part of the driver is implemented in the
//! module of its kind: `network` (`NetworkApi`), `compute` (`ComputeApi`),
//! `storage` (`StorageApi`), `refresh` (`RefreshApi`: reads and lists),
//! `tags` (`TagApi`: writes and reads tags); `observe` reads Tencent's
//! answers as observations, `client` signs and pages calls, `errors` maps
//! Tencent's codes, `images` resolves image names.
//!
//! Credentials: `TENCENTCLOUD_SECRET_ID`, `TENCENTCLOUD_SECRET_KEY` and optional
//! `TENCENTCLOUD_SESSION_TOKEN` (the variables tccli uses). Endpoint override:
//! `GPUFORM_TENCENT_ENDPOINT` (a base URL replacing
//! `https://{service}.tencentcloudapi.com` for every service);
//! `GPUFORM_TENCENT_COS_ENDPOINT` sends COS requests to another base URL
//! (the signed `Host` stays the bucket's virtual host).

mod buckets;
mod client;
mod compute;
mod discovery;
pub mod errors;
pub mod images;
mod network;
mod observe;
pub mod prices;
mod refresh;
mod storage;
pub mod tags;
mod volume_types;

use client::{parse_endpoint, Client, SessionToken};
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{Cloud, CloudDriver, ErrorKind, ProviderError};
use gpuform_signing::Credentials;
use std::collections::HashMap;
use std::sync::Mutex;

pub use client::ENV_ENDPOINT;
/// The COS endpoint override's variable.
pub const ENV_COS_ENDPOINT: &str = "GPUFORM_TENCENT_COS_ENDPOINT";
pub const ENV_SECRET_ID: &str = "TENCENTCLOUD_SECRET_ID";
pub const ENV_SECRET_KEY: &str = "TENCENTCLOUD_SECRET_KEY";
pub const ENV_SESSION_TOKEN: &str = "TENCENTCLOUD_SESSION_TOKEN";

/// The Tencent Cloud provider.
///
/// Placement: Tencent's placement groups (DisasterRecoverGroup) only
/// *spread* instances (over hosts, switches or racks); the only packed
/// placement is an HPC cluster, which only takes the RDMA (HCC) instance
/// families and is bound to one zone. The catalog has no HCC types yet, so no
/// resolved Tencent cluster can ask for RDMA, and the neutral `placement`
/// carries no zone. We therefore create a `HOST` spread group (whole-GPU
/// nodes each fill a host anyway; `SW`/`RACK` spreading would cost locality)
/// and refuse `rdma: true` placements with a clear `invalid` error rather
/// than pretending to pack.
#[derive(Debug)]
pub struct TencentProvider {
    client: Client,
    /// COS, over the shared S3-dialect flow.
    cos: gpuform_objstore::ObjStore,
    /// subnet id → VPC id (RunInstances needs both; a subnet never moves).
    subnet_vpc: Mutex<HashMap<String, String>>,
    /// (region, logical image) → image id.
    images: Mutex<HashMap<(String, String), String>>,
    /// The root account's UIN (GetCallerIdentity), which the Tag API's
    /// resource names carry; read once, on the first import.
    account: Mutex<Option<String>>,
    rate: RateLimit,
}

/// Reads credentials and the endpoint override from the environment.
pub fn from_env() -> Result<TencentProvider> {
    TencentProvider::from_env()
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl TencentProvider {
    pub fn from_env() -> Result<TencentProvider> {
        Self::from_env_with_endpoint(None)
    }

    /// Like [`TencentProvider::from_env`], with an endpoint override (from a
    /// spec's `endpoints:`) that wins over `GPUFORM_TENCENT_ENDPOINT`.
    pub fn from_env_with_endpoint(endpoint: Option<String>) -> Result<TencentProvider> {
        let (Some(id), Some(key)) = (env_nonempty(ENV_SECRET_ID), env_nonempty(ENV_SECRET_KEY))
        else {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!(
                    "no Tencent Cloud credentials: set {ENV_SECRET_ID} and {ENV_SECRET_KEY} \
                     (and {ENV_SESSION_TOKEN} for temporary keys), as for tccli"
                ),
            ));
        };
        let token = env_nonempty(ENV_SESSION_TOKEN);
        let endpoint = match endpoint.or_else(|| env_nonempty(ENV_ENDPOINT)) {
            None => None,
            Some(raw) => Some(parse_endpoint(&raw)?),
        };
        let cos = env_nonempty(ENV_COS_ENDPOINT)
            .map(|raw| gpuform_http::Endpoint::parse(&raw, ENV_COS_ENDPOINT))
            .transpose()?;
        TencentProvider::new(Credentials::new(id, key), token, endpoint)?.with_cos_endpoint(cos)
    }

    /// A provider with explicit credentials and an optional endpoint override.
    pub fn new(
        creds: Credentials,
        session_token: Option<String>,
        endpoint: Option<reqwest::Url>,
    ) -> Result<TencentProvider> {
        Ok(TencentProvider {
            cos: buckets::store(creds.clone(), session_token.clone(), None)?,
            client: Client::new(creds, session_token.map(SessionToken), endpoint)?,
            subnet_vpc: Mutex::new(HashMap::new()),
            images: Mutex::new(HashMap::new()),
            account: Mutex::new(None),
            // RunInstances, CreateDisasterRecoverGroup and DescribeDisasterRecoverGroups
            // allow 10 requests/s each ("A maximum of 10 requests can be initiated per
            // second for this API" on their API pages; Describe* allow 40-100/s). The
            // engine keeps one bucket per provider, so it follows the tightest create call.
            rate: RateLimit {
                per_second: 10.0,
                burst: 10,
            },
        })
    }

    /// Sends COS requests to `endpoint` (a stand-in) instead of the
    /// bucket's virtual host; `None` keeps the cloud's.
    pub fn with_cos_endpoint(mut self, endpoint: Option<gpuform_http::Endpoint>) -> Result<Self> {
        let (creds, token) = self.client.credentials();
        self.cos = buckets::store(creds, token, endpoint)?;
        Ok(self)
    }

    /// Retries of a throttled or transient COS answer and the first pause
    /// (doubling); tests shorten them.
    pub fn with_cos_retries(mut self, retries: u32, backoff: std::time::Duration) -> Self {
        self.cos = self.cos.with_retries(retries, backoff);
        self
    }

    pub fn with_rate_limit(mut self, rate: RateLimit) -> Self {
        self.rate = rate;
        self
    }
}

impl CloudDriver for TencentProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Tencent
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    fn buckets(&self) -> Option<&dyn gpuform_provider::BucketApi> {
        Some(&self.cos)
    }
}
