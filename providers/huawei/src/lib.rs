//! gpuform's Huawei Cloud provider: ECS, VPC, EVS and IMS over their REST
//! APIs (reqwest), signed with `SDK-HMAC-SHA256` (`gpuform-signing`).
//!
//! See README.md for credentials, endpoints, what each neutral kind becomes
//! and what is left out (packed placement). This file is wiring: the
//! provider, its constructor and its [`CloudDriver`] identity; each part of
//! the driver is implemented in the module of its kind: `network`
//! (`NetworkApi`), `compute` (`ComputeApi`), `storage` (`StorageApi`),
//! `refresh` (`RefreshApi`), `tags` (`TagApi`) and `buckets` (`BucketApi`,
//! OBS over the shared flow of `gpuform-objstore`); `observe` reads Huawei's
//! answers as observations.

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

pub use client::JobPolling;
pub use errors::undeletable;

use client::{Call, Client};
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, CloudDriver, ErrorKind, ImageCache, ObservedResource, ProviderError,
};
use gpuform_signing::Credentials;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

pub const ENV_AK: &str = "HUAWEICLOUD_SDK_AK";
pub const ENV_SK: &str = "HUAWEICLOUD_SDK_SK";
pub const ENV_PROJECT_ID: &str = "HUAWEICLOUD_SDK_PROJECT_ID";
pub const ENV_ENDPOINT: &str = "GPUFORM_HUAWEI_ENDPOINT";
/// Sends OBS requests to another base URL (a stand-in); the signed `Host`
/// stays the bucket's virtual host.
pub const ENV_OBS_ENDPOINT: &str = "GPUFORM_HUAWEI_OBS_ENDPOINT";
/// Overrides [`DEFAULT_SETTLE`] in milliseconds (tests against a stand-in
/// whose disks appear within a second).
pub const ENV_SETTLE_MS: &str = "GPUFORM_HUAWEI_SETTLE_MS";
/// Overrides the first pause of job and status polling (then doubling, up to
/// [`JobPolling::max`]) in milliseconds: a stand-in finishes its jobs at the
/// second poll, and the crash suites wait out hundreds of them.
pub const ENV_POLL_MS: &str = "GPUFORM_HUAWEI_POLL_MS";

/// "Creating EVS Disks" is asynchronous: until its job has made the disk, a
/// lookup may answer 404 / leave it out, and EVS creates take no idempotency
/// token (only the disk name guards a retry). After a crash, a create younger
/// than this that is not visible yet is looked for again before it is retried
/// (ARCHITECTURE.md, "Settle time"). EVS jobs finish within seconds; 30 s
/// leaves a wide margin without stalling recovery long.
pub const DEFAULT_SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

pub struct HuaweiProvider {
    client: Client,
    /// OBS, over the shared S3-dialect flow.
    obs: gpuform_objstore::ObjStore,
    /// `HUAWEICLOUD_SDK_PROJECT_ID`: the default project id.
    default_project: Option<String>,
    /// `HUAWEICLOUD_SDK_PROJECT_ID_<REGION>` (e.g. `..._CN_NORTH_4`).
    region_projects: HashMap<String, String>,
    rate: RateLimit,
    /// Logical image names resolved per region (see `images`).
    images: ImageCache,
    settle: std::time::Duration,
}

/// Never shows credentials.
impl fmt::Debug for HuaweiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HuaweiProvider")
            .field("default_project", &self.default_project)
            .field("region_projects", &self.region_projects)
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

/// Reads credentials, project ids and the endpoint override from the
/// environment (see [`HuaweiProvider::from_vars`]).
pub fn from_env() -> Result<HuaweiProvider> {
    HuaweiProvider::from_vars(std::env::vars())
}

impl HuaweiProvider {
    /// Builds the provider from `(name, value)` pairs: `HUAWEICLOUD_SDK_AK`,
    /// `HUAWEICLOUD_SDK_SK`, `HUAWEICLOUD_SDK_PROJECT_ID` and/or
    /// `HUAWEICLOUD_SDK_PROJECT_ID_<REGION>`, `GPUFORM_HUAWEI_ENDPOINT`.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Result<HuaweiProvider> {
        let mut ak = None;
        let mut sk = None;
        let mut default_project = None;
        let mut region_projects = HashMap::new();
        let mut endpoint = None;
        let mut obs_endpoint = None;
        let mut settle = DEFAULT_SETTLE;
        let mut polling = JobPolling::default();
        let region_prefix = format!("{ENV_PROJECT_ID}_");
        for (k, v) in vars {
            let v = v.trim().to_string();
            if v.is_empty() {
                continue;
            }
            match k.as_str() {
                ENV_AK => ak = Some(v),
                ENV_SK => sk = Some(v),
                ENV_PROJECT_ID => default_project = Some(v),
                ENV_ENDPOINT => endpoint = Some(v),
                ENV_OBS_ENDPOINT => {
                    obs_endpoint = Some(gpuform_http::Endpoint::parse(&v, ENV_OBS_ENDPOINT)?)
                }
                ENV_SETTLE_MS => settle = millis(ENV_SETTLE_MS, &v)?,
                ENV_POLL_MS => polling.initial = millis(ENV_POLL_MS, &v)?,
                _ => {
                    if let Some(r) = k.strip_prefix(&region_prefix) {
                        region_projects.insert(r.to_ascii_uppercase(), v);
                    }
                }
            }
        }
        let (Some(ak), Some(sk)) = (ak, sk) else {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!("Huawei Cloud credentials missing: set {ENV_AK} and {ENV_SK} (an access key pair from IAM > My Credentials)"),
            ));
        };
        if default_project.is_none() && region_projects.is_empty() {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!("Huawei Cloud project id missing: set {ENV_PROJECT_ID} (or {ENV_PROJECT_ID}_<REGION>, e.g. {ENV_PROJECT_ID}_CN_NORTH_4; see My Credentials > API Credentials)"),
            ));
        }
        let creds = Credentials::new(ak, sk);
        let mut client = Client::new(creds.clone(), endpoint)?;
        client.polling = polling;
        Ok(HuaweiProvider {
            obs: buckets::store(creds, obs_endpoint)?,
            client,
            default_project,
            region_projects,
            rate: default_rate_limit(),
            images: ImageCache::new(),
            settle,
        })
    }

    /// How asynchronous jobs (server create/delete, volume create/attach)
    /// are polled; tests shorten it.
    pub fn with_job_polling(mut self, p: JobPolling) -> Self {
        self.client.polling = p;
        self
    }

    /// Retries of a throttled or transient OBS answer and the first pause
    /// (doubling); tests shorten them.
    pub fn with_obs_retries(mut self, retries: u32, backoff: std::time::Duration) -> Self {
        self.obs = self.obs.with_retries(retries, backoff);
        self
    }

    pub fn with_rate_limit(mut self, r: RateLimit) -> Self {
        self.rate = r;
        self
    }

    /// The project id of a region: Huawei project ids are per region.
    fn project(&self, region: &str) -> Result<&str> {
        let key = region.to_ascii_uppercase().replace('-', "_");
        self.region_projects
            .get(&key)
            .or(self.default_project.as_ref())
            .map(String::as_str)
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Auth,
                    format!("no Huawei Cloud project id for region {region}: set {ENV_PROJECT_ID}_{key} or {ENV_PROJECT_ID}"),
                )
            })
    }

    async fn send(&self, call: Call<'_>) -> Result<Value> {
        self.client.send(call).await
    }
}

/// A duration variable's value, in milliseconds.
fn millis(name: &str, v: &str) -> Result<std::time::Duration> {
    v.parse()
        .map(std::time::Duration::from_millis)
        .map_err(|_| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{name}=`{v}` is not a number of milliseconds"),
            )
        })
}

/// Huawei publishes API flow control per API in API Gateway (a call over the
/// limit gets HTTP 429 `APIGW.0308`, "API Gateway error codes",
/// support.huaweicloud.com/devg-apisign/api-sign-errorcode.html) but the ECS
/// and VPC references give no per-tenant figure we could find. 10 calls/s with
/// a burst of 20 stays well inside the smallest limits the API Gateway
/// documents for a user; throttling still maps to `throttled` and is retried.
fn default_rate_limit() -> RateLimit {
    RateLimit::new(10.0, 20)
}

impl CloudDriver for HuaweiProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Huawei
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    fn buckets(&self) -> Option<&dyn gpuform_provider::BucketApi> {
        Some(&self.obs)
    }

    /// See [`DEFAULT_SETTLE`]: a new EVS disk may not be found until its job
    /// has made it, and EVS creates take no idempotency token.
    fn settle_time(&self) -> std::time::Duration {
        self.settle
    }

    fn delete_refusal(&self, observed: &ObservedResource) -> Option<String> {
        compute::delete_refusal(observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_errors_name_variables_and_debug_hides_secret() {
        let e = HuaweiProvider::from_vars(vec![]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(e.message.contains(ENV_AK) && e.message.contains(ENV_SK));
        let e = HuaweiProvider::from_vars(vec![
            (ENV_AK.into(), "ak".into()),
            (ENV_SK.into(), "sk".into()),
        ])
        .unwrap_err();
        assert!(e.message.contains(ENV_PROJECT_ID));
        let p = HuaweiProvider::from_vars(vec![
            (ENV_AK.into(), "AKVALUE".into()),
            (ENV_SK.into(), "TOPSECRET".into()),
            (format!("{ENV_PROJECT_ID}_CN_NORTH_4"), "p4".into()),
        ])
        .unwrap();
        assert!(!format!("{p:?}").contains("TOPSECRET"));
        assert_eq!(p.project("cn-north-4").unwrap(), "p4");
        assert_eq!(p.project("cn-east-3").unwrap_err().kind, ErrorKind::Auth);
    }

    #[test]
    fn settle_and_poll_pauses_are_read_in_milliseconds() {
        let vars = |extra: &[(&str, &str)]| {
            let mut v = vec![
                (ENV_AK.to_string(), "ak".to_string()),
                (ENV_SK.to_string(), "sk".to_string()),
                (ENV_PROJECT_ID.to_string(), "p".to_string()),
            ];
            v.extend(extra.iter().map(|(k, x)| (k.to_string(), x.to_string())));
            v
        };
        let p = HuaweiProvider::from_vars(vars(&[])).unwrap();
        assert_eq!(p.settle, DEFAULT_SETTLE);
        assert_eq!(p.client.polling.initial, JobPolling::default().initial);
        let p = HuaweiProvider::from_vars(vars(&[(ENV_SETTLE_MS, "1200"), (ENV_POLL_MS, "20")]))
            .unwrap();
        assert_eq!(p.settle, std::time::Duration::from_millis(1200));
        assert_eq!(
            p.client.polling.initial,
            std::time::Duration::from_millis(20)
        );
        assert_eq!(p.client.polling.max, JobPolling::default().max);
        let e = HuaweiProvider::from_vars(vars(&[(ENV_POLL_MS, "soon")])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert_eq!(
            e.message,
            "GPUFORM_HUAWEI_POLL_MS=`soon` is not a number of milliseconds"
        );
    }
}
