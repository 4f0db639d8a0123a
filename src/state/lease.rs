//! A lock held under a lease on a remote backend (PostgreSQL, S3): what the
//! backends share once they have taken it. Each backend says how to renew
//! and how to release; this module runs the renewal in the background,
//! every third of the lease, until the backend reports the lock taken over,
//! and releases the lock when the holder drops it.
//!
//! A release is best effort and bounded by the backend's call timeout: a
//! run that cannot reach its backend leaves the lock to expire at the end
//! of its lease, which the next run then takes over.

use super::backend::{block_on, HeldLock, Runtime};
use super::{LockInfo, StateError};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// What one renewal found.
pub(crate) enum Renewal {
    /// Renewed, or not answered this time (the next tick tries again).
    Kept,
    /// Someone else holds the lock now: this run is fenced, stop renewing.
    Lost,
}

type Release = Pin<Box<dyn Future<Output = Result<(), StateError>> + Send>>;

/// The lock as the caller holds it: renewed in the background, released
/// on drop.
pub(crate) struct LeasedLock {
    info: LockInfo,
    rt: Arc<Runtime>,
    renewing: Option<tokio::task::JoinHandle<()>>,
    /// In a mutex only to make the lock `Sync`; nothing contends for it.
    release: std::sync::Mutex<Option<Release>>,
}

/// How a backend keeps and gives up a lock it has just taken.
pub(crate) struct Lease<R, F> {
    /// How long the lock is held without a renewal.
    pub length: Duration,
    /// A renewal that takes longer than this is abandoned until the next tick.
    pub call_timeout: Duration,
    /// One renewal.
    pub renew: R,
    /// Gives the lock up (runs once, when the holder drops it).
    pub release: F,
}

impl LeasedLock {
    /// Starts renewing `info`'s lock on `rt`; the returned lock releases it
    /// when dropped.
    pub(crate) fn hold<R, RF, F>(
        rt: Arc<Runtime>,
        info: LockInfo,
        lease: Lease<R, F>,
    ) -> Box<dyn HeldLock>
    where
        R: Fn() -> RF + Send + 'static,
        RF: Future<Output = Renewal> + Send,
        F: Future<Output = Result<(), StateError>> + Send + 'static,
    {
        let Lease {
            length,
            call_timeout,
            renew,
            release,
        } = lease;
        // A third of the lease: two renewals may fail before it runs out.
        let every = (length / 3).max(Duration::from_millis(200));
        let renewing = rt.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if let Ok(Renewal::Lost) = tokio::time::timeout(call_timeout, renew()).await {
                    return;
                }
            }
        });
        Box::new(LeasedLock {
            info,
            rt,
            renewing,
            release: std::sync::Mutex::new(Some(Box::pin(release))),
        })
    }
}

impl HeldLock for LeasedLock {
    fn info(&self) -> &LockInfo {
        &self.info
    }
}

impl Drop for LeasedLock {
    fn drop(&mut self) {
        // Stop renewing before releasing.
        if let Some(r) = self.renewing.take() {
            r.abort();
        }
        if let Some(release) = self.release.get_mut().ok().and_then(Option::take) {
            let _ = block_on(&self.rt, release);
        }
    }
}
