//! The providers a run talks to, built on first use and shared.

use crate::address::Target;
use crate::EngineError;
use gpuform_provider::{Cloud, InventoryApi, Provider};
use gpuform_sandbox::{Faults, SandboxCloud};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub struct Providers {
    sandbox_dir: PathBuf,
    /// Endpoint overrides per cloud, from the spec (`endpoints:`).
    endpoints: BTreeMap<String, String>,
    sandbox: Mutex<Option<Arc<SandboxCloud>>>,
    cache: tokio::sync::Mutex<HashMap<String, Arc<dyn Provider>>>,
}

impl Providers {
    /// `sandbox_dir` holds the sandbox cloud's inventory.
    pub fn new(sandbox_dir: PathBuf) -> Providers {
        Providers {
            sandbox_dir,
            endpoints: BTreeMap::new(),
            sandbox: Mutex::new(None),
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
        let faults = Faults::from_env()
            .map_err(|e| EngineError::Config(format!("GPUFORM_SANDBOX_FAULTS: {e}")))?;
        let cloud = SandboxCloud::open(&self.sandbox_dir, faults).map_err(|e| {
            EngineError::Config(format!(
                "sandbox cloud at {}: {e}",
                self.sandbox_dir.display()
            ))
        })?;
        *s = Some(cloud.clone());
        Ok(cloud)
    }

    /// The provider for a key recorded in state or plans (`aws`, `sandbox:aws`).
    pub async fn get(&self, key: &str) -> Result<Arc<dyn Provider>, EngineError> {
        let mut cache = self.cache.lock().await;
        if let Some(p) = cache.get(key) {
            return Ok(p.clone());
        }
        let target = Target::parse(key)
            .ok_or_else(|| EngineError::Config(format!("unknown provider `{key}`")))?;
        let p: Arc<dyn Provider> = if target.sandbox {
            self.sandbox()?.provider(target.cloud)
        } else {
            real_provider(
                target.cloud,
                self.endpoints.get(target.cloud.as_str()).cloned(),
            )
            .await?
        };
        cache.insert(key.to_string(), p.clone());
        Ok(p)
    }
}

impl Providers {
    /// What lists a whole region for `gpuform audit` under a provider key
    /// (`aws`, `sandbox:aws`): the same cloud crate as [`Providers::get`],
    /// through its [`InventoryApi`].
    pub async fn inventory(&self, key: &str) -> Result<Arc<dyn InventoryApi>, EngineError> {
        let target = Target::parse(key)
            .ok_or_else(|| EngineError::Config(format!("unknown provider `{key}`")))?;
        if target.sandbox {
            return Ok(self.sandbox()?.inventory(target.cloud));
        }
        let cloud = target.cloud;
        let endpoint = self.endpoints.get(cloud.as_str()).cloned();
        let provider_error = |e: gpuform_provider::ProviderError| EngineError::Provider {
            context: format!("setting up the {cloud} provider"),
            error: e,
        };
        match cloud {
            #[cfg(feature = "aws")]
            Cloud::Aws => Ok(Arc::new(
                gpuform_aws::AwsProvider::from_env(endpoint)
                    .await
                    .map_err(provider_error)?,
            )),
            #[cfg(not(feature = "aws"))]
            Cloud::Aws => {
                let _ = (endpoint, provider_error);
                Err(EngineError::Config(
                    "the aws provider is not in this build of gpuform (built without the `aws` feature)".into(),
                ))
            }
            Cloud::Alibaba => Ok(Arc::new(
                gpuform_alibaba::AlibabaProvider::from_env_with_endpoint(endpoint)
                    .map_err(provider_error)?,
            )),
            Cloud::Tencent => Ok(Arc::new(
                gpuform_tencent::TencentProvider::from_env_with_endpoint(endpoint)
                    .map_err(provider_error)?,
            )),
            Cloud::Huawei => {
                let mut vars: Vec<(String, String)> = std::env::vars().collect();
                if let Some(url) = endpoint {
                    vars.push(("GPUFORM_HUAWEI_ENDPOINT".into(), url));
                }
                Ok(Arc::new(
                    gpuform_huawei::HuaweiProvider::from_vars(vars).map_err(provider_error)?,
                ))
            }
        }
    }
}

async fn real_provider(
    cloud: Cloud,
    endpoint: Option<String>,
) -> Result<Arc<dyn Provider>, EngineError> {
    let provider_error = |e: gpuform_provider::ProviderError| EngineError::Provider {
        context: format!("setting up the {cloud} provider"),
        error: e,
    };
    match cloud {
        #[cfg(feature = "aws")]
        Cloud::Aws => {
            // Placement groups are listed unless an EC2 emulation lacks them
            // (moto answers HTTP 500); recorded ones are still read by id, and
            // a retried create adopts its group by the token-derived name.
            let list_pgs =
                std::env::var("GPUFORM_AWS_PLACEMENT_GROUPS").map_or(true, |v| v != "off");
            let p = gpuform_aws::AwsProvider::from_env(endpoint)
                .await
                .map_err(provider_error)?
                .with_placement_groups(list_pgs);
            Ok(Arc::new(p))
        }
        #[cfg(not(feature = "aws"))]
        Cloud::Aws => {
            let _ = endpoint;
            Err(EngineError::Config(
                "the aws provider is not in this build of gpuform (built without the `aws` feature)\n  hint: rebuild with default features, or add --sandbox to run this spec on the built-in sandbox cloud".into(),
            ))
        }
        Cloud::Alibaba => Ok(Arc::new(
            gpuform_alibaba::AlibabaProvider::from_env_with_endpoint(endpoint)
                .map_err(provider_error)?,
        )),
        Cloud::Tencent => Ok(Arc::new(
            gpuform_tencent::TencentProvider::from_env_with_endpoint(endpoint)
                .map_err(provider_error)?,
        )),
        Cloud::Huawei => {
            let mut vars: Vec<(String, String)> = std::env::vars().collect();
            if let Some(url) = endpoint {
                vars.push(("GPUFORM_HUAWEI_ENDPOINT".into(), url));
            }
            Ok(Arc::new(
                gpuform_huawei::HuaweiProvider::from_vars(vars).map_err(provider_error)?,
            ))
        }
    }
}

/// The price API of a real cloud (`gpuform prices refresh`), with the
/// credentials and endpoint override its provider reads from the environment.
pub async fn price_api(
    cloud: Cloud,
) -> Result<Arc<dyn gpuform_provider::PriceApi>, gpuform_provider::ProviderError> {
    match cloud {
        #[cfg(feature = "aws")]
        Cloud::Aws => {
            let p = gpuform_aws::AwsProvider::from_env(None).await?;
            p.check_credentials().await?;
            Ok(Arc::new(p))
        }
        #[cfg(not(feature = "aws"))]
        Cloud::Aws => Err(gpuform_provider::ProviderError::new(
            gpuform_provider::ErrorKind::Invalid,
            "the aws provider is not in this build of gpuform (built without the `aws` feature)",
        )),
        Cloud::Alibaba => Ok(Arc::new(
            gpuform_alibaba::AlibabaProvider::from_env_with_endpoint(None)?,
        )),
        Cloud::Tencent => Ok(Arc::new(
            gpuform_tencent::TencentProvider::from_env_with_endpoint(None)?,
        )),
        Cloud::Huawei => Ok(Arc::new(gpuform_huawei::HuaweiProvider::from_vars(
            std::env::vars(),
        )?)),
    }
}
