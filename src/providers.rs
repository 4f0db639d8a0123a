//! The providers a run talks to, built on first use and shared.

use crate::address::Target;
use crate::EngineError;
use gpuform_provider::{
    CatalogApi, Cloud, EventSource, InventoryApi, PriceApi, Provider, ProviderError,
};
use gpuform_sandbox::{Faults, SandboxCloud};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub struct Providers {
    sandbox_dir: PathBuf,
    /// Endpoint overrides per cloud, from the spec (`endpoints:`).
    endpoints: BTreeMap<String, String>,
    sandbox: Mutex<Option<Arc<SandboxCloud>>>,
    /// The sandbox being opened on another thread ([`Providers::warm_sandbox`]).
    opening: Mutex<Option<Opening>>,
    cache: tokio::sync::Mutex<HashMap<Target, Arc<dyn Provider>>>,
}

/// A sandbox cloud being opened on another thread.
type Opening = std::thread::JoinHandle<Result<Arc<SandboxCloud>, EngineError>>;

fn open_sandbox(dir: &std::path::Path) -> Result<Arc<SandboxCloud>, EngineError> {
    let faults = Faults::from_env()
        .map_err(|e| EngineError::Config(format!("GPUFORM_SANDBOX_FAULTS: {e}")))?;
    let cloud = SandboxCloud::open(dir, faults)
        .map_err(|e| EngineError::Config(format!("sandbox cloud at {}: {e}", dir.display())))?;
    // The sandbox reads no clock: its reservations expire on gpuform's day.
    cloud.set_today(crate::clock::today());
    Ok(cloud)
}

impl Providers {
    /// `sandbox_dir` holds the sandbox cloud's inventory.
    pub fn new(sandbox_dir: PathBuf) -> Providers {
        Providers {
            sandbox_dir,
            endpoints: BTreeMap::new(),
            sandbox: Mutex::new(None),
            opening: Mutex::new(None),
            cache: Default::default(),
        }
    }

    /// Uses these API endpoints (cloud name → base URL) instead of the defaults.
    pub fn with_endpoints(mut self, endpoints: BTreeMap<String, String>) -> Providers {
        self.endpoints = endpoints;
        self
    }

    pub fn sandbox_dir(&self) -> &std::path::Path {
        &self.sandbox_dir
    }

    /// The sandbox cloud, opened once per process (faults from `GPUFORM_SANDBOX_FAULTS`).
    pub fn sandbox(&self) -> Result<Arc<SandboxCloud>, EngineError> {
        let mut s = self.sandbox.lock().expect("sandbox lock");
        if let Some(s) = &*s {
            return Ok(s.clone());
        }
        let opening = self.opening.lock().expect("sandbox lock").take();
        let cloud = match opening {
            Some(thread) => thread.join().map_err(|_| {
                EngineError::Internal("opening the sandbox cloud panicked".into())
            })??,
            None => open_sandbox(&self.sandbox_dir)?,
        };
        *s = Some(cloud.clone());
        Ok(cloud)
    }

    /// Starts opening the sandbox cloud on another thread, so that its
    /// replay overlaps reading the state and resolving the spec (it was a
    /// sixth of a no-op plan of 5,000 sandbox resources, on the second core
    /// now). [`Providers::sandbox`] takes the result, errors included.
    pub fn warm_sandbox(&self) {
        let mut opening = self.opening.lock().expect("sandbox lock");
        if opening.is_some() || self.sandbox.lock().expect("sandbox lock").is_some() {
            return;
        }
        let dir = self.sandbox_dir.clone();
        *opening = Some(std::thread::spawn(move || open_sandbox(&dir)));
    }

    /// The provider that serves `target` (`aws`, `sandbox:aws`).
    pub async fn get(&self, target: Target) -> Result<Arc<dyn Provider>, EngineError> {
        let mut cache = self.cache.lock().await;
        if let Some(p) = cache.get(&target) {
            return Ok(p.clone());
        }
        let p: Arc<dyn Provider> = if target.sandbox {
            self.sandbox()?.provider(target.cloud)
        } else {
            let endpoint = self.endpoints.get(target.cloud.as_str()).cloned();
            real_cloud(target.cloud, endpoint).await?.provider
        };
        cache.insert(target, p.clone());
        Ok(p)
    }
}

impl Providers {
    /// What lists a whole region for `gpuform audit` under a provider
    /// (`aws`, `sandbox:aws`): the same cloud crate as [`Providers::get`],
    /// through its [`InventoryApi`].
    pub async fn inventory(&self, target: Target) -> Result<Arc<dyn InventoryApi>, EngineError> {
        if target.sandbox {
            return Ok(self.sandbox()?.inventory(target.cloud));
        }
        let endpoint = self.endpoints.get(target.cloud.as_str()).cloned();
        Ok(real_cloud(target.cloud, endpoint).await?.inventory)
    }
}

/// One real cloud's provider crate, built from the environment (its
/// credentials) and an endpoint override, seen through each of its APIs.
struct RealCloud {
    provider: Arc<dyn Provider>,
    inventory: Arc<dyn InventoryApi>,
    prices: Arc<dyn PriceApi>,
    catalog: Arc<dyn CatalogApi>,
}

impl RealCloud {
    fn of<P: Provider + InventoryApi + PriceApi + CatalogApi + 'static>(p: P) -> RealCloud {
        let p = Arc::new(p);
        RealCloud {
            provider: p.clone(),
            inventory: p.clone(),
            prices: p.clone(),
            catalog: p,
        }
    }
}

/// The one place that knows how each cloud crate is set up.
async fn build_real_cloud(
    cloud: Cloud,
    endpoint: Option<String>,
) -> Result<RealCloud, ProviderError> {
    match cloud {
        #[cfg(feature = "aws")]
        Cloud::Aws => {
            // Placement groups are listed unless an EC2 emulation lacks them
            // (moto answers HTTP 500); recorded ones are still read by id, and
            // a retried create adopts its group by the token-derived name.
            let list_pgs =
                std::env::var("GPUFORM_AWS_PLACEMENT_GROUPS").map_or(true, |v| v != "off");
            let p = gpuform_aws::AwsProvider::from_env(endpoint).await?;
            Ok(RealCloud::of(p.with_placement_groups(list_pgs)))
        }
        #[cfg(not(feature = "aws"))]
        Cloud::Aws => {
            let _ = endpoint;
            Err(ProviderError::new(
                gpuform_provider::ErrorKind::Invalid,
                "the aws provider is not in this build of gpuform (built without the `aws` feature)\n  hint: rebuild with default features, or add --sandbox to run this spec on the built-in sandbox cloud",
            ))
        }
        Cloud::Alibaba => Ok(RealCloud::of(
            gpuform_alibaba::AlibabaProvider::from_env_with_endpoint(endpoint)?,
        )),
        Cloud::Tencent => Ok(RealCloud::of(
            gpuform_tencent::TencentProvider::from_env_with_endpoint(endpoint)?,
        )),
        Cloud::Huawei => {
            let mut vars: Vec<(String, String)> = std::env::vars().collect();
            if let Some(url) = endpoint {
                vars.push(("GPUFORM_HUAWEI_ENDPOINT".into(), url));
            }
            Ok(RealCloud::of(gpuform_huawei::HuaweiProvider::from_vars(
                vars,
            )?))
        }
    }
}

/// [`build_real_cloud`] for the engine: a failure names the cloud.
async fn real_cloud(cloud: Cloud, endpoint: Option<String>) -> Result<RealCloud, EngineError> {
    build_real_cloud(cloud, endpoint)
        .await
        .map_err(|error| EngineError::Provider {
            context: format!("setting up the {cloud} provider"),
            error,
        })
}

/// AWS from the environment, its credentials checked: aws-config finds
/// credentials only when a call needs them, so a refresh of every cloud
/// asks first and skips AWS without them.
#[cfg(feature = "aws")]
async fn aws_with_credentials() -> Result<gpuform_aws::AwsProvider, ProviderError> {
    let p = gpuform_aws::AwsProvider::from_env(None).await?;
    p.check_credentials().await?;
    Ok(p)
}

/// The price API of a real cloud (`gpuform prices refresh`), with the
/// credentials and endpoint override its provider reads from the environment.
pub async fn price_api(cloud: Cloud) -> Result<Arc<dyn PriceApi>, ProviderError> {
    #[cfg(feature = "aws")]
    if cloud == Cloud::Aws {
        return Ok(Arc::new(aws_with_credentials().await?));
    }
    Ok(build_real_cloud(cloud, None).await?.prices)
}

/// The discovery API of a real cloud (`gpuform catalog refresh`), with the
/// credentials and endpoint override its provider reads from the environment.
pub async fn catalog_api(cloud: Cloud) -> Result<Arc<dyn CatalogApi>, ProviderError> {
    #[cfg(feature = "aws")]
    if cloud == Cloud::Aws {
        return Ok(Arc::new(aws_with_credentials().await?));
    }
    Ok(build_real_cloud(cloud, None).await?.catalog)
}

/// The event source `gpuform reconcile --events URL` reads: an SQS queue fed
/// by EventBridge (AWS is the only cloud that pushes instance events).
pub async fn event_source(url: &str) -> Result<Arc<dyn EventSource>, ProviderError> {
    #[cfg(feature = "aws")]
    {
        Ok(Arc::new(
            gpuform_aws::events::SqsEvents::from_url(url).await?,
        ))
    }
    #[cfg(not(feature = "aws"))]
    {
        let _ = url;
        Err(ProviderError::new(
            gpuform_provider::ErrorKind::Invalid,
            "--events reads an AWS SQS queue, and the aws provider is not in this build of gpuform\n  hint: rebuild with default features, or run reconcile without --events (it polls)",
        ))
    }
}

/// `gpuform reconcile --print-event-rules`: the EventBridge rules and SQS
/// queue policy for `--events`, for the regions the spec's AWS clusters use.
pub fn event_rules(queue_url: Option<&str>, regions: &[String]) -> Result<String, ProviderError> {
    #[cfg(feature = "aws")]
    {
        let queue = queue_url
            .map(gpuform_aws::events::QueueUrl::parse)
            .transpose()
            .map_err(|m| ProviderError::new(gpuform_provider::ErrorKind::Invalid, m))?;
        Ok(gpuform_aws::events::event_rules(queue.as_ref(), regions))
    }
    #[cfg(not(feature = "aws"))]
    {
        let _ = (queue_url, regions);
        Err(ProviderError::new(
            gpuform_provider::ErrorKind::Invalid,
            "the aws provider is not in this build of gpuform (built without the `aws` feature)",
        ))
    }
}
