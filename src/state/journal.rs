//! The apply journal: an append-only, group-committed log of intents and
//! results, folded into the state document when the apply ends (or by the
//! next command, after a crash).
//!
//! Why: invariant 1 needs every create's intent durable before the API call
//! and its result durable right after. Rewriting the whole state for each
//! (as Terraform does) makes apply O(N²); appending one line is O(1), and a
//! writer thread fsyncs once for every batch of lines that arrived together,
//! so 64 concurrent results cost one fsync, not 64.

use super::{JournalMirror, PendingIntent, Record, StateDoc, StateError};
use crate::address::Address;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use tokio::sync::oneshot;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum JournalEntry {
    /// First line: which state this journal belongs to.
    Begin { lineage: String, serial: u64 },
    /// A create is about to be called with this token.
    Intent {
        address: Address,
        intent: PendingIntent,
    },
    /// A resource exists and is ours: created, adopted or updated.
    Recorded { address: Address, record: Record },
    /// A resource is gone: deleted, or found deleted.
    Removed { address: Address },
    /// A started create is known to have made nothing.
    Abandoned { address: Address },
}

type Ack = oneshot::Sender<std::io::Result<()>>;

/// An open journal with its writer thread.
pub struct Journal {
    path: PathBuf,
    tx: Option<mpsc::Sender<(Vec<u8>, Ack)>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Journal {
    /// Starts a new journal for the state at `lineage`/`serial`. Any previous
    /// journal must have been folded first (see [`Journal::recover`]).
    pub fn create(path: &Path, lineage: &str, serial: u64) -> Result<Journal, StateError> {
        Journal::create_mirrored(path, lineage, serial, None, None)
    }

    /// Like [`Journal::create`], and each batch, once durable here, is also
    /// pushed to `mirror` (a remote backend) in one round trip. When a push
    /// fails the entries stay in the local journal, the appends of that batch
    /// and every later one fail (so nothing new is started on their
    /// strength), and `stop` is raised.
    pub fn create_mirrored(
        path: &Path,
        lineage: &str,
        serial: u64,
        mirror: Option<Arc<dyn JournalMirror>>,
        stop: Option<Arc<AtomicBool>>,
    ) -> Result<Journal, StateError> {
        let werr = |source| StateError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A remote state has no local state file to have made the directory.
            fs::create_dir_all(dir).map_err(werr)?;
        }
        let mut file = OpenOptions::new();
        file.create(true).truncate(true).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            file.mode(0o600);
        }
        let mut file = file.open(path).map_err(werr)?;
        let begin = line(&JournalEntry::Begin {
            lineage: lineage.to_string(),
            serial,
        });
        let sealed = on_disk(&begin).map_err(|message| StateError::Encryption {
            path: path.to_path_buf(),
            message,
        })?;
        file.write_all(&sealed).map_err(werr)?;
        file.sync_all().map_err(werr)?;
        if let Some(dir) = path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            gpuform_catalog::fsio::sync_dir(dir).map_err(werr)?;
        }
        if let Some(m) = &mirror {
            let text = String::from_utf8_lossy(&begin).trim_end().to_string();
            m.push(&[text])?;
        }
        let (tx, rx) = mpsc::channel::<(Vec<u8>, Ack)>();
        let writer = std::thread::Builder::new()
            .name("gpuform-journal".into())
            .spawn(move || group_commit(file, rx, mirror, stop))
            .map_err(werr)?;
        Ok(Journal {
            path: path.to_path_buf(),
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends an entry and returns once it is durable on disk.
    pub async fn append(&self, entry: &JournalEntry) -> Result<(), StateError> {
        let (ack, done) = oneshot::channel();
        let closed = || StateError::Write {
            path: self.path.clone(),
            source: std::io::Error::other("journal writer stopped"),
        };
        self.tx
            .as_ref()
            .ok_or_else(closed)?
            .send((line(entry), ack))
            .map_err(|_| closed())?;
        done.await
            .map_err(|_| closed())?
            .map_err(|source| StateError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// Stops the writer after everything sent so far is durable.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.tx.take();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }

    /// Reads a journal left by an earlier run. A torn last line (a crash in
    /// the middle of a write) is ignored: its entry was never acknowledged.
    pub fn read(path: &Path) -> Result<Option<(String, u64, Vec<JournalEntry>)>, StateError> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StateError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let mut lines: Vec<String> = Vec::new();
        for l in BufReader::new(file).lines() {
            lines.push(l.map_err(|source| StateError::Read {
                path: path.to_path_buf(),
                source,
            })?);
        }
        let mut entries = Vec::with_capacity(lines.len());
        let last = lines.len().saturating_sub(1);
        for (i, l) in lines.iter().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            // Lines are encrypted one by one when a passphrase is set.
            let plain = match super::crypto::open(l.as_bytes()) {
                Ok(p) => p,
                Err(_) if i == last => break,
                Err(message) => {
                    return Err(StateError::Encryption {
                        path: path.to_path_buf(),
                        message,
                    })
                }
            };
            match serde_json::from_slice::<JournalEntry>(&plain) {
                Ok(e) => entries.push(e),
                // A torn line ends early; a whole line that does not read
                // (an unknown provider key) is an error wherever it is.
                Err(e) if i == last && !e.is_data() => break,
                Err(e) => {
                    return Err(StateError::Journal {
                        path: path.to_path_buf(),
                        line: i + 1,
                        message: e.to_string(),
                    })
                }
            }
        }
        match entries.first() {
            None => Ok(Some((String::new(), 0, Vec::new()))),
            Some(JournalEntry::Begin { lineage, serial }) => {
                let (lineage, serial) = (lineage.clone(), *serial);
                Ok(Some((lineage, serial, entries.split_off(1))))
            }
            Some(_) => Err(StateError::Journal {
                path: path.to_path_buf(),
                line: 1,
                message: "the first entry is not `begin`".into(),
            }),
        }
    }

    /// Folds a leftover journal into `doc`. Returns whether there was one.
    /// The caller saves the document and then removes the journal.
    pub fn recover(path: &Path, doc: &mut StateDoc) -> Result<bool, StateError> {
        let Some((lineage, _serial, entries)) = Journal::read(path)? else {
            return Ok(false);
        };
        if !lineage.is_empty() && lineage != doc.lineage {
            return Err(StateError::JournalMismatch {
                path: path.to_path_buf(),
                journal_lineage: lineage,
                state_lineage: doc.lineage.clone(),
            });
        }
        for e in entries {
            fold(doc, e);
        }
        Ok(true)
    }

    pub fn remove(path: &Path) -> Result<(), StateError> {
        match fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StateError::Write {
                path: path.to_path_buf(),
                source,
            }),
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Applies one journal entry to a state document.
pub fn fold(doc: &mut StateDoc, entry: JournalEntry) {
    match entry {
        JournalEntry::Begin { .. } => {}
        JournalEntry::Intent { address, intent } => {
            doc.pending.insert(address, intent);
        }
        JournalEntry::Recorded { address, record } => {
            doc.pending.remove(&address);
            doc.resources.insert(address, record);
        }
        JournalEntry::Removed { address } => {
            doc.resources.remove(&address);
        }
        JournalEntry::Abandoned { address } => {
            doc.pending.remove(&address);
        }
    }
}

fn line(entry: &JournalEntry) -> Vec<u8> {
    let mut v = serde_json::to_vec(entry).expect("journal entries serialise");
    v.push(b'\n');
    v
}

/// A journal line as written to the local file: encrypted (one envelope per
/// line) when a passphrase is set, like the state it belongs to.
fn on_disk(plain: &[u8]) -> Result<Vec<u8>, String> {
    if !super::crypto::enabled() {
        return Ok(plain.to_vec());
    }
    let text = plain.strip_suffix(b"\n").unwrap_or(plain);
    super::crypto::seal(text.to_vec())
}

/// The writer thread: takes everything queued, writes it, fsyncs once, then
/// pushes the batch to the mirror (if any) in one call, and acks all.
fn group_commit(
    mut file: File,
    rx: mpsc::Receiver<(Vec<u8>, Ack)>,
    mirror: Option<Arc<dyn JournalMirror>>,
    stop: Option<Arc<AtomicBool>>,
) {
    let mut mirror_failed: Option<String> = None;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let mut buf = Vec::with_capacity(batch.iter().map(|(b, _)| b.len()).sum());
        let mut result = Ok(());
        for (b, _) in &batch {
            match on_disk(b) {
                Ok(sealed) => buf.extend_from_slice(&sealed),
                Err(e) => result = Err(e),
            }
        }
        if result.is_ok() {
            result = file
                .write_all(&buf)
                .and_then(|_| file.sync_data())
                .map_err(|e| e.to_string());
        }
        if result.is_ok() {
            if let Some(m) = &mirror {
                if mirror_failed.is_none() {
                    let lines: Vec<String> = batch
                        .iter()
                        .map(|(b, _)| String::from_utf8_lossy(b).trim_end().to_string())
                        .collect();
                    if let Err(e) = m.push(&lines) {
                        mirror_failed = Some(e.to_string());
                        if let Some(stop) = &stop {
                            stop.store(true, Ordering::SeqCst);
                        }
                    }
                }
                if let Some(e) = &mirror_failed {
                    result = Err(format!("kept in the local journal only: {e}"));
                }
            }
        }
        for (_, ack) in batch {
            let _ = ack.send(match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(std::io::Error::other(e.clone())),
            });
        }
    }
}

/// Folds journal lines (as pushed to a remote backend: the `begin` line
/// first) into `doc`; a line of another lineage is refused.
pub fn fold_lines(location: &str, lines: &[String], doc: &mut StateDoc) -> Result<(), StateError> {
    for (i, l) in lines.iter().enumerate() {
        let entry: JournalEntry = serde_json::from_str(l).map_err(|e| StateError::Journal {
            path: PathBuf::from(location),
            line: i + 1,
            message: e.to_string(),
        })?;
        if let JournalEntry::Begin { lineage, .. } = &entry {
            if lineage != &doc.lineage {
                return Err(StateError::JournalMismatch {
                    path: PathBuf::from(location),
                    journal_lineage: lineage.clone(),
                    state_lineage: doc.lineage.clone(),
                });
            }
        }
        fold(doc, entry);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuform_provider::ResourceKind;

    fn record(id: &str) -> Record {
        Record {
            kind: ResourceKind::Instance,
            provider: crate::address::Target::sandbox(gpuform_provider::Cloud::Aws),
            region: "us-east-1".into(),
            id: id.into(),
            attrs: Default::default(),
            deps: Default::default(),
            token: "t".into(),
            reported: Default::default(),
            kept: Vec::new(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn entries_survive_and_fold_in_order_with_a_torn_tail_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json.journal");
        let mut doc = StateDoc::new("p");
        let j = Journal::create(&path, &doc.lineage, 0).unwrap();
        let intent = PendingIntent {
            started_ms: 0,
            kind: ResourceKind::Instance,
            provider: crate::address::Target::sandbox(gpuform_provider::Cloud::Aws),
            region: "us-east-1".into(),
            token: "t".into(),
            attrs: Default::default(),
            deps: Default::default(),
        };
        j.append(&JournalEntry::Intent {
            address: "a".into(),
            intent: intent.clone(),
        })
        .await
        .unwrap();
        j.append(&JournalEntry::Intent {
            address: "b".into(),
            intent,
        })
        .await
        .unwrap();
        j.append(&JournalEntry::Recorded {
            address: "a".into(),
            record: record("i-1"),
        })
        .await
        .unwrap();
        j.close();
        // a crash in the middle of the next write
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"op":"recorded","addr"#).unwrap();
        assert!(Journal::recover(&path, &mut doc).unwrap());
        assert_eq!(doc.resources["a"].id, "i-1");
        assert!(doc.pending.contains_key("b"));
        assert!(!doc.pending.contains_key("a"));
    }

    /// Journal lines as gpuform writes them (from a sandbox run before
    /// keys were typed; one real key edited in).
    const WRITTEN: &str = include_str!("../../tests/fixtures/formats/journal.jsonl");

    #[test]
    fn written_lines_read_typed_and_write_back_byte_for_byte() {
        for l in WRITTEN.lines() {
            let entry: JournalEntry = serde_json::from_str(l).unwrap();
            assert_eq!(String::from_utf8(line(&entry)).unwrap(), format!("{l}\n"));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        std::fs::write(&path, WRITTEN).unwrap();
        let (_, _, entries) = Journal::read(&path).unwrap().unwrap();
        let JournalEntry::Recorded { record, .. } = &entries[0] else {
            panic!("{entries:?}")
        };
        assert_eq!(
            record.provider,
            crate::address::Target::real(gpuform_provider::Cloud::Tencent)
        );
    }

    #[test]
    fn an_unknown_provider_key_is_refused_even_on_the_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let last = WRITTEN.lines().count();
        for (at, text) in [
            (
                2,
                WRITTEN.replacen("\"provider\":\"tencent\"", "\"provider\":\"gcp\"", 1),
            ),
            (last, {
                let cut = WRITTEN.trim_end().rfind('\n').unwrap();
                let (head, tail) = WRITTEN.split_at(cut);
                format!(
                    "{head}{}",
                    tail.replace("\"provider\":\"sandbox:", "\"provider\":\"sandbox:gcp")
                )
            }),
        ] {
            assert_ne!(text, WRITTEN);
            std::fs::write(&path, &text).unwrap();
            let err = Journal::read(&path).unwrap_err();
            assert!(
                matches!(err, StateError::Journal { line, .. } if line == at),
                "{err:?}"
            );
            assert!(err.to_string().contains("unknown provider key"), "{err}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_journal_of_another_lineage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        Journal::create(&path, "other", 0).unwrap().close();
        let mut doc = StateDoc::new("p");
        let err = Journal::recover(&path, &mut doc).unwrap_err().to_string();
        assert!(err.contains("belongs to state lineage other"), "{err}");
    }
}
