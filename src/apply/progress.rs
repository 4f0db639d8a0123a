//! How an apply reports progress: the executor tells an [`ApplyProgress`]
//! what finished and what went wrong; it prints nothing itself. The command
//! line's bar / plain lines are `cli::progress`.

use std::time::Duration;

/// Receives an apply's progress. Called from the executor's walk (one
/// thread at a time, but from async code: hence `Send + Sync`).
pub trait ApplyProgress: Send + Sync + std::fmt::Debug {
    /// A walk of `total` operations begins (once per apply round).
    fn start(&self, total: usize) {
        let _ = total;
    }
    /// An operation began; `what` says which (`creating`, `deleting`...).
    fn started(&self, address: &str, what: &str) {
        let _ = (address, what);
    }
    /// Operations are running: called every few tens of milliseconds while
    /// the walk waits on them, so a reporter can say what is still running
    /// (a cloud instance takes a minute or more).
    fn tick(&self) {}
    /// One operation finished, `what` saying how (`created i-123`...).
    fn done(&self, address: &str, what: &str, elapsed: Duration);
    /// A line worth telling now (a failure, an interruption).
    fn note(&self, line: &str);
    /// The walk ended.
    fn finish(&self) {}
}

/// Reports nothing: the default for library callers and tests.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl ApplyProgress for Silent {
    fn done(&self, _: &str, _: &str, _: Duration) {}
    fn note(&self, _: &str) {}
}
