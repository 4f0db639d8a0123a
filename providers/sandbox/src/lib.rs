//! gpuform's built-in sandbox cloud: an in-process simulation of one of the
//! real clouds (its catalog of regions, zones, instance types and quotas),
//! with a durable inventory on local disk so that successive gpuform
//! processes see the same cloud, and fault injection (latency, throttling,
//! failures, capacity, quota, crashes) for crash-safety tests and CI.
//!
//! Faults come from `GPUFORM_SANDBOX_FAULTS` ([`Faults::from_env`]): comma-
//! separated `key=value` items, e.g.
//! `latency=50ms,throttle=0.1,fail=0.05,capacity=p4d.24xlarge@us-east-1a,capacity=*@us-east-1b,crash_after=17,seed=7,quota_gpus=64,rate=200`.
//!
//! | item | meaning |
//! | --- | --- |
//! | `latency=50ms` | tokio sleep per API call (`s`, `ms`, `us`, `ns`, or `0`) |
//! | `throttle=P` | probability of `Throttled` (`RequestLimitExceeded`), before any effect |
//! | `fail=P` | probability of `Transient` (`InternalError`), before any effect |
//! | `capacity=TYPE@ZONE` | repeatable; `*` matches any; `TYPE` alone means every zone: instance creates fail with `Capacity` (`InsufficientInstanceCapacity`) |
//! | `crash_after=N` | the N-th API call of the process takes effect, then the process aborts |
//! | `seed=N` | seed of the RNG behind `throttle` and `fail` |
//! | `quota_gpus=N` | GPUs per region and mirrored cloud; beyond it `Quota` |
//! | `quota=GROUP:N[@REGION]` | repeatable: the mirrored cloud's per-family quota (AWS `P`, `G`, `Standard`, … in vCPUs; Alibaba `vcpu`; Tencent `instances`; Huawei `cores`), in every region or one; enforced at create (`Quota`) and answered by `quota()` with usage from the inventory |
//! | `quota_read=denied` | reading a quota fails as unauthorized (`Auth`); creates are still checked |
//! | `rate=R` | calls per second: advertised by `rate_limit()` and enforced (`Throttled`) |
//! | `boot=16s` | an instance's create returns this long after its call: the time to `running`, which every provider waits out |
//! | `disk=5s` | a volume's create returns this long after its call: the time a new disk takes to be `available` |
//! | `profile=aws` | `boot` and `disk` as measured on that cloud (sources in `faults.rs`); `boot=`/`disk=` override |
//!
//! Requests are read with the typed parsers every cloud's provider uses
//! (`UserTags`, `Desired`, `ChangeSet` of `gpuform_provider`), before any
//! call, so a malformed request is refused with the same message as on the
//! clouds; the mirrored cloud's catalog, refs and faults are checked in the
//! call.
//!
//! The inventory is `inventory.jsonl` in the directory: one JSON line per
//! operation, replayed on open (see the `inventory` module for durability).
//!
//! ```no_run
//! use gpuform_sandbox::{Faults, SandboxCloud};
//! use gpuform_provider::Cloud;
//! # fn main() -> Result<(), gpuform_sandbox::SandboxError> {
//! let sandbox = SandboxCloud::open(std::path::Path::new(".gpuform/sandbox"), Faults::from_env()?)?;
//! let aws = sandbox.provider(Cloud::Aws); // label "sandbox(aws)"
//! # Ok(()) }
//! ```

mod blocks;
mod checks;
mod cloud;
mod create;
mod errors;
mod existing;
mod faults;
mod ids;
mod inventory;
mod provider;
mod quota;
mod reservations;
mod store;

pub use cloud::{SandboxCloud, SandboxResource};
pub use faults::{Faults, FAULTS_ENV};
pub use inventory::LOG_NAME as INVENTORY_FILE;
pub use reservations::{ReserveRequest, SandboxReservation, RESERVATIONS_FILE};

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
    /// A behind-the-back request the mirrored cloud would refuse.
    #[error("{0}")]
    Invalid(String),
    #[error(
        "the sandbox inventory {} is already open in this process with other faults; \
         drop the other SandboxCloud first",
        dir.display()
    )]
    AlreadyOpen { dir: PathBuf },
}
