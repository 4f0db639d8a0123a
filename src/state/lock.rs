//! One writer per state: [`StateLock`], taken through the state's backend.
//! The local backend's lock is [`FileLock`]: a lock file, `flock`ed, naming
//! its holder.

use super::backend::HeldLock;
use super::store::{parent_dir, sibling};
use super::{StateError, StateStore};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

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
    /// When the lease ends unless renewed (remote backends; RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// The fencing generation: bumped by every acquisition, carried by
    /// every write (remote backends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
}

impl LockInfo {
    /// One line for error messages, with a note when the holder is visibly dead.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} (pid {}, `gpuform {}`, since {}, lock id {})",
            self.owner, self.pid, self.operation, self.created, self.id
        );
        if let Some(expires) = &self.expires {
            s.push_str(&format!(", lease until {expires}"));
        }
        if self.host == hostname() && !pid_alive(self.pid) {
            s.push_str(" — that process is no longer running on this host");
        }
        s
    }

    /// Nothing if `id` is this lock's id, else the error that says whose it
    /// is (breaking a lock takes its id, so that a typo cannot break a lock
    /// someone just took); `state` names the state.
    pub(crate) fn check_id(&self, state: &Path, id: &str) -> Result<(), StateError> {
        if self.id == id {
            return Ok(());
        }
        Err(StateError::WrongLockId {
            path: state.to_path_buf(),
            given: id.to_string(),
            actual: self.id.clone(),
            holder: self.describe(),
        })
    }
}

/// A held lock on a state, whatever its backend; released when dropped.
pub struct StateLock {
    held: Box<dyn HeldLock>,
}

impl std::fmt::Debug for StateLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateLock")
            .field("info", self.info())
            .finish()
    }
}

impl StateLock {
    /// Takes the lock at once or fails at once naming the holder: a second
    /// writer must never wait silently behind a long apply.
    pub fn acquire(store: &StateStore, operation: &str) -> Result<StateLock, StateError> {
        Ok(StateLock {
            held: store.backend().lock(operation)?,
        })
    }

    pub fn info(&self) -> &LockInfo {
        self.held.info()
    }

    /// Who holds the lock on `store`, if anyone (a live holder only).
    pub fn holder(store: &StateStore) -> Option<LockInfo> {
        store.backend().holder()
    }

    /// Breaks a lock deliberately; the id must match, so that a typo cannot
    /// break a lock someone just took.
    pub fn force_unlock(store: &StateStore, id: &str) -> Result<LockInfo, StateError> {
        store.backend().force_unlock(id)
    }
}

/// A new lock's description: who, where, what, since when.
pub fn new_info(operation: &str) -> LockInfo {
    let host = hostname();
    LockInfo {
        id: uuid::Uuid::new_v4().to_string(),
        owner: format!(
            "{}@{}",
            std::env::var("USER").unwrap_or_else(|_| "unknown".into()),
            host
        ),
        host,
        pid: std::process::id(),
        created: crate::clock::wall_rfc3339(),
        operation: operation.to_string(),
        expires: None,
        generation: None,
    }
}

/// The local backend's lock; released when dropped — or by the kernel if the
/// process dies: the lock is an advisory `flock` on the lock file, so a
/// crashed apply never blocks the next one, while a live one always does.
#[derive(Debug)]
pub struct FileLock {
    path: PathBuf,
    info: LockInfo,
    file: File,
}

impl HeldLock for FileLock {
    fn info(&self) -> &LockInfo {
        &self.info
    }
}

impl FileLock {
    /// Takes the lock on the state file `state` at once or fails at once naming the holder.
    pub fn acquire(state: &Path, operation: &str) -> Result<FileLock, StateError> {
        let path = sibling(state, ".lock");
        let werr = |source| StateError::Write {
            path: path.clone(),
            source,
        };
        fs::create_dir_all(parent_dir(state)).map_err(werr)?;
        let info = new_info(operation);
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut file = opts.open(&path).map_err(werr)?;
        if !try_flock(&file).map_err(werr)? {
            let holder = read_info(&path);
            return Err(StateError::Locked {
                path: state.to_path_buf(),
                holder: holder
                    .as_ref()
                    .map(|h| h.describe())
                    .unwrap_or_else(|| "another process".into()),
                id: holder
                    .map(|h| h.id)
                    .unwrap_or_else(|| "<see the .lock file>".into()),
            });
        }
        // Ours now. A leftover description from a crashed holder is overwritten.
        let json = serde_json::to_vec_pretty(&info).expect("lock info serialises");
        file.set_len(0).map_err(werr)?;
        file.seek(SeekFrom::Start(0)).map_err(werr)?;
        file.write_all(&json).map_err(werr)?;
        file.sync_all().map_err(werr)?;
        Ok(FileLock { path, info, file })
    }

    /// Who holds the lock on the state file `state`, if anyone (a live holder only).
    pub fn holder(state: &Path) -> Option<LockInfo> {
        let path = sibling(state, ".lock");
        let file = OpenOptions::new().read(true).write(true).open(&path).ok()?;
        match try_flock(&file) {
            Ok(false) => read_info(&path),
            _ => None,
        }
    }

    /// Breaks a lock deliberately; the id must match, so that a typo cannot
    /// break a lock someone just took. A holder alive on this host must be
    /// stopped first: removing its lock would let two writers in.
    pub fn force_unlock(state: &Path, id: &str) -> Result<LockInfo, StateError> {
        let path = sibling(state, ".lock");
        let Some(info) = read_info(&path) else {
            return Err(StateError::NotLocked {
                path: state.to_path_buf(),
            });
        };
        info.check_id(state, id)?;
        if info.host == hostname() && pid_alive(info.pid) && Self::holder(state).is_some() {
            return Err(StateError::Locked {
                path: state.to_path_buf(),
                holder: format!(
                    "{} — it is still running; stop it (kill {}) rather than unlocking",
                    info.describe(),
                    info.pid
                ),
                id: info.id,
            });
        }
        fs::remove_file(&path).map_err(|source| StateError::Write { path, source })?;
        Ok(info)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Empty the description before the kernel lock goes with the file handle.
        if read_info(&self.path)
            .map(|i| i.id == self.info.id)
            .unwrap_or(false)
        {
            let _ = self.file.set_len(0);
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// `flock(LOCK_EX | LOCK_NB)`: true when taken, false when another holds it.
fn try_flock(file: &File) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(false)
        } else {
            Err(e)
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(true)
    }
}

fn read_info(path: &Path) -> Option<LockInfo> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub(crate) fn hostname() -> String {
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
    fn second_writer_is_refused_naming_the_holder_and_a_dropped_lock_frees_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        let first = StateLock::acquire(&store, "apply").unwrap();
        let err = StateLock::acquire(&store, "apply").unwrap_err().to_string();
        assert!(err.contains("is locked by"), "{err}");
        assert!(err.contains(&first.info().id), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert!(StateLock::force_unlock(&store, "wrong").is_err());
        // A live holder on this host is not unlocked by force: it must be stopped.
        let id = first.info().id.clone();
        assert!(StateLock::force_unlock(&store, &id).is_err());
        assert_eq!(StateLock::holder(&store).unwrap().id, id);
        drop(first);
        assert!(StateLock::holder(&store).is_none());
        let second = StateLock::acquire(&store, "apply").unwrap();
        drop(second);
    }

    #[test]
    fn a_lock_file_left_by_a_dead_process_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        // What a crashed holder leaves: the description, but no kernel lock.
        let stale = LockInfo {
            id: "stale".into(),
            owner: "x@y".into(),
            host: "y".into(),
            pid: 1,
            created: "then".into(),
            operation: "apply".into(),
            expires: None,
            generation: None,
        };
        fs::write(store.lock_path(), serde_json::to_vec(&stale).unwrap()).unwrap();
        let lock = StateLock::acquire(&store, "apply").unwrap();
        assert_ne!(lock.info().id, "stale");
    }
}
