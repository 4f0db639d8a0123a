//! The one atomic file write of gpuform.
//!
//! Every file gpuform rewrites (state, specs edited by `migrate` and `fmt`,
//! saved plans, the sandbox's inventory) goes through [`AtomicWrite`]: the
//! new bytes go to a temporary file in the same directory (so the rename
//! cannot cross filesystems), the file is fsynced, renamed over the target,
//! and the directory is fsynced so the rename itself survives a crash. A
//! reader sees the old file or the new one, never a torn one.
//!
//! It lives in the lowest gpuform crate so that the engine and the sandbox
//! share it without either depending on the other.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How to write one file atomically; [`AtomicWrite::write`] does it.
#[derive(Debug, Clone, Default)]
pub struct AtomicWrite {
    private: bool,
    keep_permissions: bool,
    backup: Option<PathBuf>,
}

impl AtomicWrite {
    /// A plain atomic write: new files get the process's default mode.
    pub fn new() -> AtomicWrite {
        AtomicWrite::default()
    }

    /// Create the file readable and writable by its owner only (0600 on
    /// Unix): for files holding ids and addresses nobody else needs.
    pub fn private(mut self) -> AtomicWrite {
        self.private = true;
        self
    }

    /// Give the new file the permissions the file it replaces had (for
    /// files the user owns, such as specs).
    pub fn keep_permissions(mut self) -> AtomicWrite {
        self.keep_permissions = true;
        self
    }

    /// Before replacing the file, keep its current version at `backup` (a
    /// hard link where the filesystem allows one, a copy otherwise).
    pub fn backup_to(mut self, backup: impl Into<PathBuf>) -> AtomicWrite {
        self.backup = Some(backup.into());
        self
    }

    /// Writes `bytes` to `path`: temp file beside it, fsync, (backup),
    /// rename over, fsync the directory. The temp file is removed when any
    /// step fails; the target is then untouched.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let dir = parent_dir(path);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".into());
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let result = self.write_via(path, dir, &tmp, bytes);
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    fn write_via(&self, path: &Path, dir: &Path, tmp: &Path, bytes: &[u8]) -> io::Result<()> {
        {
            let mut f = self.create(tmp)?;
            f.write_all(bytes)?;
            if self.keep_permissions {
                if let Ok(meta) = fs::metadata(path) {
                    f.set_permissions(meta.permissions())?;
                }
            }
            f.sync_all()?;
        }
        if let Some(backup) = &self.backup {
            if path.exists() {
                let _ = fs::remove_file(backup);
                if fs::hard_link(path, backup).is_err() {
                    fs::copy(path, backup)?;
                }
            }
        }
        fs::rename(tmp, path)?;
        sync_dir(dir)
    }

    fn create(&self, tmp: &Path) -> io::Result<File> {
        let mut opts = OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if self.private {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        opts.open(tmp)
    }
}

/// [`AtomicWrite`] keeping the replaced file's permissions: what a command
/// that rewrites a user's file (a spec, a saved plan) wants.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    AtomicWrite::new().keep_permissions().write(path, bytes)
}

/// The directory `path` is in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Makes a rename in `dir` durable. Unix only: other platforms cannot open a
/// directory, and their rename is as durable as it gets.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gpuform-fsio-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temp() {
        let dir = scratch("replace");
        let path = dir.join("spec.yaml");
        fs::write(&path, "old\n").unwrap();
        write_atomically(&path, b"new\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keeps_a_backup_of_the_previous_version() {
        let dir = scratch("backup");
        let path = dir.join("s.json");
        let backup = dir.join("s.json.backup");
        let w = AtomicWrite::new().backup_to(&backup);
        w.write(&path, b"1").unwrap();
        assert!(!backup.exists(), "nothing to back up on first write");
        w.write(&path, b"2").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "2");
        assert_eq!(fs::read_to_string(&backup).unwrap(), "1");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn modes_private_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("modes");
        let private = dir.join("state.json");
        AtomicWrite::new().private().write(&private, b"{}").unwrap();
        let mode = fs::metadata(&private).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        let spec = dir.join("spec.yaml");
        fs::write(&spec, "a").unwrap();
        fs::set_permissions(&spec, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&spec, b"b").unwrap();
        let mode = fs::metadata(&spec).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temp() {
        let dir = scratch("fail");
        // The target is a non-empty directory: the rename over it fails.
        let path = dir.join("occupied");
        fs::create_dir_all(path.join("inside")).unwrap();
        assert!(write_atomically(&path, b"x").is_err());
        assert!(path.join("inside").is_dir());
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
        fs::remove_dir_all(&dir).unwrap();
    }
}
