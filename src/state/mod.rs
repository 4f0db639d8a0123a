//! State: what gpuform has made, as a versioned JSON document.
//!
//! - [`document`]: the format (version, lineage, serial, records, pending intents).
//! - [`store`]: the local backend: atomic writes, 0600, a backup of the previous version.
//! - [`lock`]: one writer per state, with owner, pid, host and time.
//! - [`journal`]: an append-only log of results written during apply and
//!   folded into the document at the end, so that recording one result costs
//!   one appended line (group-committed), not a rewrite of the whole state.

pub mod backend;
pub mod crypto;
pub mod document;
pub mod journal;
mod lease;
pub mod lock;
pub mod pg_tls;
pub mod postgres;
#[cfg(feature = "aws")]
pub mod s3;
pub mod store;

pub use backend::{redact_url, BackendChoice, HeldLock, JournalMirror, StateBackend};
pub use document::{
    Failover, PendingIntent, Record, StateDoc, FORMAT_VERSION, PRE_BOOTSTRAP, RECLAIM_LOG,
};
pub use journal::{Journal, JournalEntry};
pub use lock::{LockInfo, StateLock};
pub use store::{LocalBackend, StateStore, DEFAULT_WORKSPACE};

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A remote backend failed or refused; `location` is already redacted.
    #[error("state backend {location}: {message}\n  hint: {hint}")]
    Backend {
        location: String,
        message: String,
        hint: String,
    },
    /// Someone else wrote the state since it was read (compare-and-swap).
    #[error("state {location} changed under this run (expected serial {expected}, found {found})\n  hint: another run wrote it; run the command again to plan against what is there now")]
    Conflict {
        location: String,
        expected: String,
        found: String,
    },
    /// The lock was taken over after this run's lease expired (it was
    /// paused or cut off); its writes are refused.
    #[error("state {location}: this run's lock (generation {generation}) was taken over by {holder} after its lease expired; this run stops and writes nothing more to the state\n  hint: what it recorded is kept in the local journal {journal}; the other run adopts its resources by their tags, and `gpuform state push` folds the journal in later")]
    Fenced {
        location: String,
        generation: u64,
        holder: String,
        journal: String,
    },
    #[error("cannot read state {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write state {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("state {path} cannot be opened: {message}")]
    Encryption { path: PathBuf, message: String },
    #[error("state file {path} is not valid gpuform state: {message}\n  hint: restore the previous version from {path}.backup, or move the file away to start from empty state: the next plan finds what this state made by its ownership tags and names the `--adopt-lineage LINEAGE` that adopts it, so nothing is made twice")]
    Corrupt { path: PathBuf, message: String },
    #[error("state file {path} has format version {found}, newer than this gpuform understands ({supported})\n  hint: upgrade gpuform; never edit the file by hand")]
    TooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("state {path} is locked by {holder}\n  hint: wait for that run to finish; if it is dead, run `gpuform force-unlock {id}`")]
    Locked {
        path: PathBuf,
        holder: String,
        id: String,
    },
    #[error("lock id {given} does not match the lock on {path} (held by {holder}, id {actual})")]
    WrongLockId {
        path: PathBuf,
        given: String,
        actual: String,
        holder: String,
    },
    #[error("state {path} is not locked")]
    NotLocked { path: PathBuf },
    #[error("journal {path} is damaged at line {line}: {message}\n  hint: the journal holds results of an interrupted apply; keep a copy of it and report this")]
    Journal {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("journal {path} belongs to state lineage {journal_lineage}, not {state_lineage}\n  hint: the state file was replaced after an interrupted apply; move the journal away to continue")]
    JournalMismatch {
        path: PathBuf,
        journal_lineage: String,
        state_lineage: String,
    },
}
