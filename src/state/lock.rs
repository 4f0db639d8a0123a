//! One writer per state: a lock file created exclusively, naming its holder.

use super::store::sync_dir;
use super::{StateError, StateStore};
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockInfo {
    pub id: String,
    /// `user@host`.
    pub owner: String,
    pub host: String,
    pub pid: u32,
    /// RFC 3339.
    pub created: String,
    /// The command holding it (`apply`, `destroy`, `state rm`...).
    pub operation: String,
}

impl LockInfo {
    /// One line for error messages, with a note when the holder is visibly dead.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} (pid {}, `gpuform {}`, since {}, lock id {})",
            self.owner, self.pid, self.operation, self.created, self.id
        );
        if self.host == hostname() && !pid_alive(self.pid) {
            s.push_str(" — that process is no longer running on this host");
        }
        s
    }
}

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct StateLock {
    path: PathBuf,
    info: LockInfo,
}

impl StateLock {
    /// Takes the lock at once or fails at once naming the holder: a second
    /// writer must never wait silently behind a long apply.
    pub fn acquire(store: &StateStore, operation: &str) -> Result<StateLock, StateError> {
        let path = store.lock_path();
        let werr = |source| StateError::Write { path: path.clone(), source };
        fs::create_dir_all(store.dir()).map_err(werr)?;
        let host = hostname();
        let info = LockInfo {
            id: uuid::Uuid::new_v4().to_string(),
            owner: format!("{}@{}", std::env::var("USER").unwrap_or_else(|_| "unknown".into()), host),
            host,
            pid: std::process::id(),
            created: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            operation: operation.to_string(),
        };
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        match opts.open(&path) {
            Ok(mut f) => {
                let json = serde_json::to_vec_pretty(&info).expect("lock info serialises");
                f.write_all(&json).map_err(werr)?;
                f.sync_all().map_err(werr)?;
                sync_dir(&store.dir()).map_err(werr)?;
                Ok(StateLock { path, info })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = read_info(&path);
                Err(StateError::Locked {
                    path: store.path().to_path_buf(),
                    holder: holder.as_ref().map(|h| h.describe()).unwrap_or_else(|| "an unreadable lock file".into()),
                    id: holder.map(|h| h.id).unwrap_or_else(|| "<see the .lock file>".into()),
                })
            }
            Err(e) => Err(werr(e)),
        }
    }

    pub fn info(&self) -> &LockInfo {
        &self.info
    }

    /// Who holds the lock on `store`, if anyone.
    pub fn holder(store: &StateStore) -> Option<LockInfo> {
        read_info(&store.lock_path())
    }

    /// Breaks a lock deliberately; the id must match, so that a typo cannot
    /// break a lock someone just took.
    pub fn force_unlock(store: &StateStore, id: &str) -> Result<LockInfo, StateError> {
        let path = store.lock_path();
        if !path.exists() {
            return Err(StateError::NotLocked { path: store.path().to_path_buf() });
        }
        let info = read_info(&path);
        match info {
            Some(info) if info.id == id => {
                fs::remove_file(&path).map_err(|source| StateError::Write { path, source })?;
                Ok(info)
            }
            Some(info) => Err(StateError::WrongLockId {
                path: store.path().to_path_buf(),
                given: id.to_string(),
                actual: info.id.clone(),
                holder: info.describe(),
            }),
            // An unreadable lock (e.g. torn by a crash while being written) can be broken by anyone.
            None => {
                fs::remove_file(&path).map_err(|source| StateError::Write { path, source })?;
                Ok(LockInfo {
                    id: id.to_string(),
                    owner: "unknown".into(),
                    host: "unknown".into(),
                    pid: 0,
                    created: "unknown".into(),
                    operation: "unknown".into(),
                })
            }
        }
    }
}

impl Drop for StateLock {
    fn drop(&mut self) {
        // Remove only our own lock: it may have been force-unlocked and taken by another.
        if read_info(&self.path).map(|i| i.id == self.info.id).unwrap_or(false) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn read_info(path: &PathBuf) -> Option<LockInfo> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn hostname() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

fn pid_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // Signal 0 checks existence without sending anything.
        let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_naming_the_holder_and_force_unlock_needs_the_id() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        let first = StateLock::acquire(&store, "apply").unwrap();
        let err = StateLock::acquire(&store, "apply").unwrap_err().to_string();
        assert!(err.contains("is locked by"), "{err}");
        assert!(err.contains(&first.info().id), "{err}");
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert!(StateLock::force_unlock(&store, "wrong").is_err());
        let id = first.info().id.clone();
        StateLock::force_unlock(&store, &id).unwrap();
        let second = StateLock::acquire(&store, "apply").unwrap();
        drop(first); // must not remove the second holder's lock
        assert!(StateLock::holder(&store).map(|h| h.id == second.info().id).unwrap());
        drop(second);
        assert!(StateLock::holder(&store).is_none());
    }
}
