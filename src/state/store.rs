//! The state handle ([`StateStore`]) and the local backend: one JSON file,
//! written atomically.

use super::backend::{HeldLock, StateBackend};
use super::{LockInfo, StateDoc, StateError, FORMAT_VERSION};
use gpuform_catalog::fsio::AtomicWrite;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The workspace a state is of when none is named.
pub const DEFAULT_WORKSPACE: &str = "default";

/// Where a state lives, and the local files that go with it: the state file
/// itself (local backend), the journal of an apply (every backend: results
/// are durable on this disk first), and the sandbox beside them.
#[derive(Debug, Clone)]
pub struct StateStore {
    path: PathBuf,
    backend: Arc<dyn StateBackend>,
    /// `None`: the `default` workspace.
    workspace: Option<String>,
}

impl StateStore {
    /// The local backend: the state is the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> StateStore {
        let path = path.into();
        StateStore {
            backend: Arc::new(LocalBackend::new(path.clone())),
            path,
            workspace: None,
        }
    }

    /// A remote backend; `local` names the local files (journal, sandbox)
    /// as the state file would be named with the local backend.
    pub fn with_backend(local: impl Into<PathBuf>, backend: Arc<dyn StateBackend>) -> StateStore {
        StateStore {
            path: local.into(),
            backend,
            workspace: None,
        }
    }

    /// This store keeps the state of `workspace` (`default` is kept as `None`).
    pub fn with_workspace(mut self, workspace: &str) -> StateStore {
        self.workspace = (workspace != DEFAULT_WORKSPACE).then(|| workspace.to_string());
        self
    }

    /// The workspace whose state this is: `None` for `default`.
    pub fn workspace(&self) -> Option<&str> {
        self.workspace.as_deref()
    }

    /// A new, empty state of `project` in this workspace.
    pub fn new_doc(&self, project: &str) -> StateDoc {
        let mut d = StateDoc::new(project);
        d.workspace = self.workspace.clone();
        d
    }

    pub fn backend(&self) -> &Arc<dyn StateBackend> {
        &self.backend
    }

    pub fn is_remote(&self) -> bool {
        self.backend.is_remote()
    }

    /// Where the state is, for messages (a URL's password is redacted).
    pub fn location(&self) -> String {
        self.backend.location()
    }

    /// The local state file (local backend), or the name the local journal
    /// is derived from (remote backends).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        sibling(&self.path, suffix)
    }

    pub fn lock_path(&self) -> PathBuf {
        self.sibling(".lock")
    }

    pub fn journal_path(&self) -> PathBuf {
        self.sibling(".journal")
    }

    pub fn backup_path(&self) -> PathBuf {
        self.sibling(".backup")
    }

    /// Where the k3s clusters' credentials of this state live (`crate::k8s`):
    /// `.gpuform/p.state.json` → `.gpuform/p.secrets/`, beside it, never in it.
    pub fn secrets_dir(&self) -> PathBuf {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "state.json".into());
        let stem = name
            .strip_suffix(".state.json")
            .or_else(|| name.strip_suffix(".json"))
            .unwrap_or(&name);
        self.path.with_file_name(format!("{stem}.secrets"))
    }

    /// The directory holding the local files (and, by default, the sandbox cloud).
    pub fn dir(&self) -> PathBuf {
        parent_dir(&self.path)
    }

    /// Reads the state, as this store's workspace's; `None` when there is none yet.
    pub fn load(&self) -> Result<Option<StateDoc>, StateError> {
        Ok(self.backend.load()?.map(|mut d| {
            d.workspace = self.workspace.clone();
            d
        }))
    }

    /// Records a change: bumps the serial (so plans made before it are
    /// refused) and saves. Every write of a changed state goes through here.
    pub fn commit(&self, doc: &mut StateDoc) -> Result<(), StateError> {
        doc.serial += 1;
        self.save(doc)
    }

    /// Writes the document through the backend.
    pub fn save(&self, doc: &StateDoc) -> Result<(), StateError> {
        self.backend.save(doc)
    }
}

pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The local backend: the state is one JSON file (0600), its lock an
/// `flock`ed file beside it.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    path: PathBuf,
}

impl LocalBackend {
    pub fn new(path: PathBuf) -> LocalBackend {
        LocalBackend { path }
    }

    fn backup_path(&self) -> PathBuf {
        sibling(&self.path, ".backup")
    }

    fn dir(&self) -> PathBuf {
        parent_dir(&self.path)
    }
    /// Reads the state; `None` when there is none yet.
    pub fn load(&self) -> Result<Option<StateDoc>, StateError> {
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StateError::Read {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        parse(&self.path, &bytes).map(Some)
    }

    /// Writes the state atomically: temp file, fsync, keep the previous
    /// version as `.backup`, rename over, fsync the directory. Mode 0600:
    /// state holds ids and addresses that are nobody else's business.
    pub fn save(&self, doc: &StateDoc) -> Result<(), StateError> {
        let werr = |source| StateError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self.dir();
        fs::create_dir_all(&dir).map_err(werr)?;
        let mut json = serde_json::to_vec_pretty(doc).expect("state serialises");
        json.push(b'\n');
        let json = super::crypto::seal_at(&self.path, json)?;
        AtomicWrite::new()
            .private()
            .backup_to(self.backup_path())
            .write(&self.path, &json)
            .map_err(werr)?;
        Ok(())
    }
}

impl StateBackend for LocalBackend {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn load(&self) -> Result<Option<StateDoc>, StateError> {
        LocalBackend::load(self)
    }

    fn save(&self, doc: &StateDoc) -> Result<(), StateError> {
        LocalBackend::save(self, doc)
    }

    fn lock(&self, operation: &str) -> Result<Box<dyn HeldLock>, StateError> {
        Ok(Box::new(super::lock::FileLock::acquire(
            &self.path, operation,
        )?))
    }

    fn holder(&self) -> Option<LockInfo> {
        super::lock::FileLock::holder(&self.path)
    }

    fn force_unlock(&self, id: &str) -> Result<LockInfo, StateError> {
        super::lock::FileLock::force_unlock(&self.path, id)
    }
}

pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<StateDoc, StateError> {
    let bytes = &*super::crypto::open_at(path, bytes)?;
    let corrupt = |message: String| StateError::Corrupt {
        path: path.to_path_buf(),
        message,
    };
    let syntax =
        |e: serde_json::Error| corrupt(format!("{e} (line {}, column {})", e.line(), e.column()));
    // A document of a known format parses at once; its version is checked
    // after. Only a document that does not parse is read again below for its
    // version (a pass over the whole text, a few ms of a 5k no-op plan).
    if let Ok(mut doc) = serde_json::from_slice::<StateDoc>(bytes) {
        if doc.format_version > FORMAT_VERSION {
            return Err(StateError::TooNew {
                path: path.to_path_buf(),
                found: doc.format_version,
                supported: FORMAT_VERSION,
            });
        }
        doc.migrate();
        return Ok(doc);
    }
    // Read the version first, so that a newer format says "upgrade" rather
    // than failing on a field it does not know. Only the version is kept
    // (the rest is skipped, not built): building a `Value` of the whole
    // document and converting it again cost half of a no-op plan's parse.
    #[derive(serde::Deserialize)]
    struct Version {
        format_version: Option<u64>,
    }
    let version = serde_json::from_slice::<Version>(bytes)
        .map_err(syntax)?
        .format_version
        .ok_or_else(|| corrupt("missing `format_version`".to_string()))?;
    if version > FORMAT_VERSION as u64 {
        return Err(StateError::TooNew {
            path: path.to_path_buf(),
            found: version as u32,
            supported: FORMAT_VERSION,
        });
    }
    let mut doc: StateDoc = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    doc.migrate();
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state file as gpuform writes it, provider keys of every form
    /// (taken from a sandbox run before keys were typed; the real keys
    /// edited in).
    const WRITTEN: &str = include_str!("../../tests/fixtures/formats/state.json");

    #[test]
    fn a_written_state_reads_typed_and_writes_back_byte_for_byte() {
        use crate::address::Target;
        use gpuform_provider::Cloud;
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        fs::write(store.path(), WRITTEN).unwrap();
        let doc = store.load().unwrap().unwrap();
        let provider = |a: &str| doc.resources[a].provider;
        assert_eq!(
            provider("cluster.train-aws.network"),
            Target::real(Cloud::Aws)
        );
        assert_eq!(
            provider("cluster.train-aws.node[0]"),
            Target::sandbox(Cloud::Aws)
        );
        assert_eq!(
            provider("cluster.serve-tencent.network"),
            Target::real(Cloud::Tencent)
        );
        assert_eq!(
            doc.pending["cluster.serve-tencent.network"].provider,
            Target::sandbox(Cloud::Alibaba)
        );
        store.save(&doc).unwrap();
        assert_eq!(fs::read_to_string(store.path()).unwrap(), WRITTEN);
    }

    #[test]
    fn an_unknown_provider_key_is_refused_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        let text = WRITTEN.replace("\"provider\": \"huawei\"", "\"provider\": \"gcp\"");
        assert_ne!(text, WRITTEN);
        fs::write(store.path(), &text).unwrap();
        let err = store.load().unwrap_err();
        assert!(matches!(err, StateError::Corrupt { .. }), "{err:?}");
        let line = 1 + text[..text.find("\"gcp\"").unwrap()].matches('\n').count();
        let err = err.to_string();
        for want in [
            &store.location(),
            "unknown provider key `gcp`",
            "aws, alibaba, tencent and huawei",
            &format!("line {line} "),
        ] {
            assert!(err.contains(want), "{want:?} in {err}");
        }
    }

    #[test]
    fn save_then_load_round_trips_and_keeps_backup() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        assert!(store.load().unwrap().is_none());
        let mut doc = StateDoc::new("p");
        store.save(&doc).unwrap();
        doc.serial = 1;
        store.save(&doc).unwrap();
        assert_eq!(store.load().unwrap().unwrap().serial, 1);
        let backup = StateStore::new(store.backup_path())
            .load()
            .unwrap()
            .unwrap();
        assert_eq!(backup.serial, 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(store.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn commit_bumps_the_serial_and_saves() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        let mut doc = StateDoc::new("p");
        store.save(&doc).unwrap();
        store.commit(&mut doc).unwrap();
        assert_eq!(doc.serial, 1);
        assert_eq!(store.load().unwrap().unwrap().serial, 1);
        store.commit(&mut doc).unwrap();
        assert_eq!(store.load().unwrap().unwrap().serial, 2);
        let backup = StateStore::new(store.backup_path())
            .load()
            .unwrap()
            .unwrap();
        assert_eq!(backup.serial, 1);
        // Nothing but the state and its backup is left in the directory.
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["s.json", "s.json.backup"]);
    }

    #[test]
    fn corrupt_and_newer_files_are_refused_with_hints() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(dir.path().join("s.json"));
        fs::write(store.path(), "{ not json").unwrap();
        let err = store.load().unwrap_err().to_string();
        assert!(err.contains("not valid gpuform state"), "{err}");
        fs::write(store.path(), r#"{"format_version": 99}"#).unwrap();
        let err = store.load().unwrap_err().to_string();
        assert!(err.contains("format version 99"), "{err}");
        assert!(err.contains("upgrade gpuform"), "{err}");
    }
}
