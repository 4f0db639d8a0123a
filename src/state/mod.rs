//! State: what gpuform has made, as a versioned JSON document.
//!
//! - [`document`]: the format (version, lineage, serial, records, pending intents).
//! - [`store`]: the local backend: atomic writes, 0600, a backup of the previous version.
//! - [`lock`]: one writer per state, with owner, pid, host and time.
//! - [`journal`]: an append-only log of results written during apply and
//!   folded into the document at the end, so that recording one result costs
//!   one appended line (group-committed), not a rewrite of the whole state.

pub mod document;
pub mod journal;
pub mod lock;
pub mod store;

pub use document::{Failover, PendingIntent, Record, StateDoc, FORMAT_VERSION};
pub use journal::{Journal, JournalEntry};
pub use lock::{LockInfo, StateLock};
pub use store::StateStore;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StateError {
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
    #[error("state file {path} is not valid gpuform state: {message}\n  hint: restore the previous version from {path}.backup, or move the file away to start from empty state (resources already made are re-adopted through their ownership tags)")]
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
