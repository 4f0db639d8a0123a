//! gpuform's built-in sandbox cloud: an in-process simulation of one of the
//! real clouds (its catalog of regions, zones, instance types and quotas),
//! with a durable inventory on local disk so that successive gpuform
//! processes see the same cloud, and fault injection (latency, throttling,
//! failures, capacity, quota, crashes) for crash-safety tests and CI.
//!
//! ```no_run
//! use gpuform_sandbox::{Faults, SandboxCloud};
//! use gpuform_provider::Cloud;
//! # fn main() -> Result<(), gpuform_sandbox::SandboxError> {
//! let sandbox = SandboxCloud::open(std::path::Path::new(".gpuform/sandbox"), Faults::from_env()?)?;
//! let aws = sandbox.provider(Cloud::Aws); // label "sandbox(aws)"
//! # Ok(()) }
//! ```

mod cloud;
mod faults;
mod ids;
mod inventory;
mod provider;
mod store;

pub use cloud::{SandboxCloud, SandboxResource};
pub use faults::{Faults, FAULTS_ENV};
pub use inventory::LOG_NAME as INVENTORY_FILE;

use std::path::PathBuf;

/// Errors of the sandbox itself (opening the inventory, fault strings,
/// behind-the-back operations). Provider calls return `ProviderError`.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox inventory {}: could not {what}: {source}", path.display())]
    Io {
        path: PathBuf,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "sandbox inventory {}, line {line}: {message} (the inventory is corrupt; \
         `gpuform sandbox reset` empties it)",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("bad sandbox fault `{item}`: {message}")]
    Faults { item: String, message: String },
    #[error("no sandbox resource has the id or address `{0}`")]
    NotFound(String),
    #[error("`{what}` is ambiguous: it names {}; use an id", matches.join(", "))]
    Ambiguous { what: String, matches: Vec<String> },
    #[error("{0}")]
    DependencyViolation(String),
    #[error(
        "the sandbox inventory {} is already open in this process with other faults; \
         drop the other SandboxCloud first",
        dir.display()
    )]
    AlreadyOpen { dir: PathBuf },
}
