//! The inventory on disk: an append-only JSON-lines log of operations.
//!
//! Durability: each operation is one `write(2)` of a whole line to a file
//! opened with `O_APPEND`, made before the call returns. Once `write`
//! returns, the bytes belong to the kernel's page cache: every process that
//! reads the file sees them, and they survive the writing process dying in
//! any way (panic, `abort`, SIGKILL). Only a kernel crash or power loss could
//! lose them, and the sandbox simulates a cloud, not a disk: surviving the
//! death of the *caller* is what crash-safety tests need. An `fsync` per call
//! would cost milliseconds each and break the speed budget; it is only used
//! for the rare whole-file rewrites (compaction, reset), where it makes the
//! rename atomic on disk too.
//!
//! A crash (of the machine) in the middle of a write can leave a torn last
//! line without its newline: replay drops it (or keeps it, if it is a whole
//! record that only lacks the newline) and trims the file so that the next
//! append starts on a line of its own. Any other line that does not parse is
//! reported with its line number.

use crate::store::{CreateRec, Record, Store, FORMAT_VERSION};
use crate::SandboxError;
use gpuform_catalog::fsio::AtomicWrite;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The inventory log's file name inside the inventory directory.
pub const LOG_NAME: &str = "inventory.jsonl";

/// Compact on open when the log has more than this many lines beyond twice
/// the live resources.
const COMPACT_SLACK: u64 = 1000;

pub(crate) struct Inventory {
    pub path: PathBuf,
    file: File,
    /// Bytes of the log as this process last saw or wrote it.
    len: u64,
}

fn io_err(path: &Path, what: &str, source: std::io::Error) -> SandboxError {
    SandboxError::Io {
        path: path.to_path_buf(),
        what: what.to_string(),
        source,
    }
}

impl Inventory {
    /// Opens (creating if needed) the log in `dir` and replays it.
    pub fn open(dir: &Path) -> Result<(Inventory, Store), SandboxError> {
        let path = dir.join(LOG_NAME);
        let (store, fix) = match std::fs::read(&path) {
            Ok(bytes) if !bytes.iter().all(u8::is_ascii_whitespace) => replay(&path, &bytes)?,
            Ok(_) => (fresh_store(), Fix::Rewrite),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (fresh_store(), Fix::Rewrite),
            Err(e) => return Err(io_err(&path, "read the inventory log", e)),
        };
        let rewrite =
            fix == Fix::Rewrite || store.records > 2 * store.live() as u64 + COMPACT_SLACK;
        let mut store = store;
        if rewrite {
            // Also drops a torn last line, if there was one.
            let lines = store.snapshot_lines();
            write_atomically(dir, &path, &lines)?;
            store.records = lines.len() as u64;
        }
        let mut file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| io_err(&path, "open the inventory log", e))?;
        match if rewrite { Fix::None } else { fix } {
            Fix::Truncate(len) => file
                .set_len(len)
                .map_err(|e| io_err(&path, "trim the torn last line of the inventory log", e))?,
            Fix::AddNewline => file
                .write_all(b"\n")
                .map_err(|e| io_err(&path, "end the last line of the inventory log", e))?,
            Fix::None | Fix::Rewrite => {}
        }
        let meta = file
            .metadata()
            .map_err(|e| io_err(&path, "stat the inventory log", e))?;
        Ok((
            Inventory {
                path,
                file,
                len: meta.len(),
            },
            store,
        ))
    }

    /// Whether another process changed the log since we last saw it: it
    /// appended (the size grew) or replaced the file (compaction, reset:
    /// our inode lost its last link). One `fstat`, about half a microsecond.
    #[cfg(unix)]
    pub fn changed_on_disk(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        match self.file.metadata() {
            Ok(m) => m.len() != self.len || m.nlink() == 0,
            Err(_) => true,
        }
    }

    #[cfg(not(unix))]
    pub fn changed_on_disk(&self) -> bool {
        match std::fs::metadata(&self.path) {
            Ok(m) => m.len() != self.len,
            Err(_) => true,
        }
    }

    /// Appends whole lines (each ending in `\n`) in one write.
    pub fn append(&mut self, lines: &str) -> Result<(), SandboxError> {
        self.append_bytes(lines.as_bytes())
    }

    pub fn append_bytes(&mut self, lines: &[u8]) -> Result<(), SandboxError> {
        if let Err(e) = self.file.write_all(lines) {
            // Do not leave half a record for the next append to follow.
            let _ = self.file.set_len(self.len);
            return Err(io_err(&self.path, "append to the inventory log", e));
        }
        self.len += lines.len() as u64;
        Ok(())
    }

    /// Replaces the log with `store`'s snapshot (reset, compaction).
    pub fn rewrite(&mut self, store: &mut Store) -> Result<(), SandboxError> {
        let dir = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let lines = store.snapshot_lines();
        write_atomically(&dir, &self.path, &lines)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| io_err(&self.path, "open the inventory log", e))?;
        let meta = file
            .metadata()
            .map_err(|e| io_err(&self.path, "stat the inventory log", e))?;
        self.file = file;
        self.len = meta.len();
        store.records = lines.len() as u64;
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fix {
    None,
    /// Write the header (new or empty log).
    Rewrite,
    /// Drop a torn last line.
    Truncate(u64),
    /// The last record is whole but lacks its newline.
    AddNewline,
}

/// Empties the inventory in `dir` without replaying it, so that it works on
/// a corrupt log too. Keeps the salt and id sequence of whatever can still be
/// read, so that ids handed out before are not handed out again.
pub(crate) fn reset_dir(dir: &Path) -> Result<(), SandboxError> {
    let path = dir.join(LOG_NAME);
    let mut store = fresh_store();
    match std::fs::read(&path) {
        Ok(bytes) => {
            for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
                let Ok(v) = serde_json::from_slice::<serde_json::Value>(raw) else {
                    continue;
                };
                if i == 0 && v.get("op").and_then(|o| o.as_str()) == Some("header") {
                    if let Some(salt) = v.get("salt").and_then(|x| x.as_u64()) {
                        store.salt = salt;
                    }
                }
                for key in ["next_seq", "seq"] {
                    if let Some(n) = v.get(key).and_then(|x| x.as_u64()) {
                        let next = if key == "seq" { n.saturating_add(1) } else { n };
                        store.next_seq = store.next_seq.max(next);
                    }
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .map_err(|e| io_err(dir, "create the inventory directory", e))?;
        }
        Err(e) => return Err(io_err(&path, "read the inventory log", e)),
    }
    write_atomically(dir, &path, &store.snapshot_lines())
}

fn fresh_store() -> Store {
    Store::new(rand::random::<u64>(), 1)
}

/// Rebuilds the store from the log's bytes.
fn replay(path: &Path, bytes: &[u8]) -> Result<(Store, Fix), SandboxError> {
    let corrupt = |line: usize, message: String| SandboxError::Corrupt {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut store: Option<Store> = None;
    let mut fix = Fix::None;
    let mut offset = 0usize;
    let mut lineno = 0usize;
    while offset < bytes.len() {
        lineno += 1;
        let (raw, next, complete) = match bytes[offset..].iter().position(|&b| b == b'\n') {
            Some(i) => (&bytes[offset..offset + i], offset + i + 1, true),
            None => (&bytes[offset..], bytes.len(), false),
        };
        let start = offset;
        offset = next;
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t.trim(),
            Err(_) if !complete => {
                fix = Fix::Truncate(start as u64);
                break;
            }
            Err(_) => return Err(corrupt(lineno, "the line is not valid UTF-8".to_string())),
        };
        if text.is_empty() {
            if !complete {
                fix = Fix::Truncate(start as u64);
            }
            continue;
        }
        let rec: Record = match parse_record(text) {
            Ok(r) => r,
            Err(_) if !complete => {
                // A crash in the middle of the last write: that operation
                // never completed, so it never happened.
                fix = Fix::Truncate(start as u64);
                break;
            }
            Err(e) => return Err(corrupt(lineno, format!("not a valid record: {e}"))),
        };
        if !complete {
            fix = Fix::AddNewline;
        }
        match (&mut store, rec) {
            (
                None,
                Record::Header {
                    version,
                    salt,
                    next_seq,
                },
            ) => {
                if version > FORMAT_VERSION {
                    return Err(corrupt(
                        lineno,
                        format!(
                            "format version {version} is newer than this gpuform understands \
                             ({FORMAT_VERSION}); upgrade gpuform or `gpuform sandbox reset`"
                        ),
                    ));
                }
                store = Some(Store::new(salt, next_seq));
            }
            (None, _) => {
                return Err(corrupt(
                    lineno,
                    "expected the header record first".to_string(),
                ))
            }
            (Some(s), rec) => s.apply(rec).map_err(|m| corrupt(lineno, m))?,
        }
        if let Some(s) = &mut store {
            s.records += 1;
        }
    }
    match store {
        Some(s) => Ok((s, fix)),
        // Only a torn header: the log was never really started.
        None => Ok((fresh_store(), Fix::Rewrite)),
    }
}

/// Parses one log line. Creates (nearly every line) are read straight into
/// their struct: serde's internally tagged enums buffer each line into an
/// intermediate tree first, which was most of the replay's time (and cannot
/// keep `attrs` as raw text).
fn parse_record(text: &str) -> serde_json::Result<Record> {
    if text.starts_with(CREATE_PREFIX) {
        if let Ok(c) = serde_json::from_str::<CreateRec>(text) {
            return Ok(Record::Create(c));
        }
    }
    // Any other layout (keys reordered by hand): the general path.
    let v: serde_json::Value = serde_json::from_str(text)?;
    if v.get("op").and_then(|o| o.as_str()) == Some("create") {
        return serde_json::from_str::<CreateRec>(&v.to_string()).map(Record::Create);
    }
    serde_json::from_value(v)
}

/// How [`CreateRec::write_line`] starts every create line.
const CREATE_PREFIX: &str = "{\"op\":\"create\",";

/// Writes `lines` to `path` (in `dir`) atomically: temp file, fsync, rename,
/// fsync dir ([`AtomicWrite`]).
fn write_atomically(dir: &Path, path: &Path, lines: &[String]) -> Result<(), SandboxError> {
    let mut buf = String::with_capacity(lines.iter().map(String::len).sum());
    for l in lines {
        buf.push_str(l);
    }
    debug_assert_eq!(path.parent(), Some(dir));
    AtomicWrite::new()
        .write(path, buf.as_bytes())
        .map_err(|e| io_err(path, "rewrite the inventory log", e))
}
