//! The providers a run talks to, built on first use and shared.

use crate::resolve::Target;
use crate::EngineError;
use gpuform_provider::{Cloud, Provider};
use gpuform_sandbox::{Faults, SandboxCloud};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub struct Providers {
    sandbox_dir: PathBuf,
    sandbox: Mutex<Option<Arc<SandboxCloud>>>,
    cache: tokio::sync::Mutex<HashMap<String, Arc<dyn Provider>>>,
}

impl Providers {
    /// `sandbox_dir` holds the sandbox cloud's inventory.
    pub fn new(sandbox_dir: PathBuf) -> Providers {
        Providers {
            sandbox_dir,
            sandbox: Mutex::new(None),
            cache: Default::default(),
        }
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
            real_provider(target.cloud).await?
        };
        cache.insert(key.to_string(), p.clone());
        Ok(p)
    }
}

async fn real_provider(cloud: Cloud) -> Result<Arc<dyn Provider>, EngineError> {
    Err(EngineError::Config(format!(
        "the {cloud} provider is not available in this build of gpuform yet\n  hint: add --sandbox to run this spec on the built-in sandbox cloud"
    )))
}
