//! The S3 state backend, over the conditional object operations of
//! `gpuform_aws::s3` (compiled with the `aws` feature).
//!
//! `s3://bucket/prefix?region=…&endpoint=…` keeps the state named
//! `project/workspace` in these objects under `prefix/project/workspace`:
//!
//! - `….state.json`: the document (encrypted like a local one when a
//!   passphrase is set). Every write is a compare-and-swap on the ETag last
//!   read or written (`If-Match`; `If-None-Match: *` for the first one).
//! - `….lock.json`: the lock — holder (owner, host, pid, command, lock id,
//!   acquired-at), lease expiry and generation. It is created with
//!   `If-None-Match: *` and afterwards only replaced with `If-Match` on its
//!   ETag: taking it (when free, released or past its lease) bumps the
//!   generation; the holder renews its lease in the background; releasing
//!   it keeps the generation so it never goes back.
//! - `….journal/<generation>-<seq>`: one object per group-committed batch of
//!   an apply's journal (one PUT per batch), folded into the document by the
//!   next run and deleted once a saved document holds them.
//!
//! Fencing: S3 has no transaction spanning two objects, so every write
//! first proves this run still holds the lock — at once while the lease it
//! last renewed is running (monotonic clock), else by renewing it with
//! `If-Match` on the lock's ETag, which fails once someone took it over. A
//! run paused past its lease (SIGSTOP, a frozen VM) is therefore refused
//! when it resumes, and its state write also fails the ETag CAS once the
//! new holder has written. Lease expiry is compared against the wall clock
//! of the hosts involved, which must agree to well within a lease.
//!
//! Buckets that ignore conditional writes would make all this silently
//! wrong: the first call probes the bucket (a second `If-None-Match: *` PUT
//! of a probe key must be refused, and so must an `If-Match` on a wrong
//! ETag) and refuses it with a clear message.
//!
//! Credentials come from aws-config's chain (never from the URL) and never
//! reach a message.

use super::backend::{
    redact_url, with_timeout, HeldLock, JournalMirror, Remote, RemoteInner, Runtime, S3Url,
    StateBackend,
};
use super::lease::Renewal;
use super::lock::new_info;
use super::{LockInfo, StateDoc, StateError};
use gpuform_aws::s3::{Condition, Put, S3Error, S3ErrorKind, S3Objects};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Folded journal objects a save deletes at once.
const JOURNAL_DELETES_IN_FLIGHT: usize = 16;

/// The lock object's body.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LockObject {
    generation: u64,
    /// `None`: released (the generation stays).
    holder: Option<LockInfo>,
    /// Lease end, milliseconds since the Unix epoch.
    expires_ms: u64,
}

/// The lock this process holds.
struct Held {
    info: LockInfo,
    generation: u64,
    /// The lock object's ETag as this process last wrote it.
    etag: String,
    /// Until when the lease last renewed runs, on the monotonic clock
    /// (measured from before the renewing request was sent).
    valid_until: Instant,
}

struct Inner {
    /// `s3://bucket/prefix/name` (never holds credentials).
    location: String,
    url: S3Url,
    objects: tokio::sync::OnceCell<S3Objects>,
    state_key: String,
    lock_key: String,
    journal_prefix: String,
    probe_prefix: String,
    lease: Duration,
    /// The state object's ETag and serial last read or written (`None`: no
    /// object seen): the CAS base.
    last: Mutex<Option<(String, u64)>>,
    held: tokio::sync::Mutex<Option<Held>>,
    /// (lock id, generation) of the held lock, readable without awaiting.
    held_id: Mutex<Option<(String, u64)>>,
    fenced: AtomicBool,
    journal_path: String,
    seq: AtomicU64,
    /// Journal objects a save may delete: those folded into the document
    /// and those this run pushed.
    folded: Mutex<Vec<String>>,
    pushed: Mutex<Vec<String>>,
}

/// A state in an S3 bucket, named `project/workspace`.
pub struct S3Backend {
    remote: Remote<Inner>,
}

impl std::fmt::Debug for S3Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "S3Backend({})", self.remote.inner.location)
    }
}

impl S3Backend {
    /// Prepares the backend; nothing is contacted until the first call.
    pub fn new(
        url: &str,
        name: &str,
        lease: Duration,
        journal_path: &std::path::Path,
    ) -> Result<S3Backend, StateError> {
        let parsed = S3Url::parse(url).map_err(|message| StateError::Backend {
            location: redact_url(url),
            message,
            hint: "use s3://bucket/prefix?region=us-east-1 (and &endpoint=http://host:port for an S3-compatible server); credentials come from the AWS chain, never the URL".into(),
        })?;
        let base = if parsed.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", parsed.prefix)
        };
        let rt = Runtime::start("gpuform-s3").map_err(|e| StateError::Backend {
            location: redact_url(url),
            message: format!("cannot start its I/O runtime: {e}"),
            hint: "this is a bug in gpuform".into(),
        })?;
        Ok(S3Backend {
            remote: Remote::new(
                Inner {
                    location: format!("s3://{}/{base}", parsed.bucket),
                    url: parsed,
                    objects: tokio::sync::OnceCell::new(),
                    state_key: format!("{base}.state.json"),
                    lock_key: format!("{base}.lock.json"),
                    journal_prefix: format!("{base}.journal/"),
                    probe_prefix: format!("{base}.probe/"),
                    lease,
                    last: Mutex::new(None),
                    held: tokio::sync::Mutex::new(None),
                    held_id: Mutex::new(None),
                    fenced: AtomicBool::new(false),
                    journal_path: journal_path.display().to_string(),
                    seq: AtomicU64::new(0),
                    folded: Mutex::new(Vec::new()),
                    pushed: Mutex::new(Vec::new()),
                },
                rt,
            ),
        })
    }
}

impl RemoteInner for Inner {
    const CALL_TIMEOUT: Duration = CALL_TIMEOUT;
    const UNREACHABLE_HINT: &'static str =
        "is the S3 endpoint reachable? Results of a running apply are kept in its local journal";

    fn location(&self) -> &str {
        &self.location
    }

    fn lease(&self) -> Duration {
        self.lease
    }
}

impl Inner {
    fn err(&self, e: S3Error) -> StateError {
        let b = &self.url.bucket;
        let hint = match e.kind {
            S3ErrorKind::NoSuchBucket => format!(
                "create the bucket first (`aws s3 mb s3://{b}`), or fix the bucket name, `region=` or `endpoint=` in the URL"
            ),
            S3ErrorKind::Credentials => "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (`aws sso login` for SSO), or run with an instance role; credentials are never read from the URL".into(),
            S3ErrorKind::AccessDenied => format!(
                "the credentials need s3:GetObject, s3:PutObject and s3:DeleteObject on `{b}/{}*` and s3:ListBucket on `{b}`",
                self.url.prefix
            ),
            S3ErrorKind::Unreachable => "is the S3 endpoint reachable? Results of a running apply are kept in its local journal".into(),
            S3ErrorKind::Other => "see the S3 error above".into(),
        };
        StateError::Backend {
            location: self.location.clone(),
            message: e.message,
            hint,
        }
    }

    fn corrupt(&self, what: &str, message: String) -> StateError {
        StateError::Backend {
            location: self.location.clone(),
            message: format!("{what} is not gpuform's: {message}"),
            hint: "another tool wrote to this key; point the URL at a prefix only gpuform uses"
                .into(),
        }
    }

    /// The bucket's client, created (and the bucket probed) on first use.
    async fn objects(&self) -> Result<&S3Objects, StateError> {
        self.objects
            .get_or_try_init(|| async {
                let u = &self.url;
                let objects = S3Objects::new(&u.bucket, u.region.as_deref(), u.endpoint.as_deref())
                    .await
                    .map_err(|e| self.err(e))?;
                self.probe(&objects).await?;
                Ok(objects)
            })
            .await
    }

    /// Refuses a bucket that ignores conditional writes.
    async fn probe(&self, objects: &S3Objects) -> Result<(), StateError> {
        let key = format!("{}{}", self.probe_prefix, uuid::Uuid::new_v4());
        let e = |err| self.err(err);
        objects
            .put(&key, b"probe 1".to_vec(), &Condition::IfAbsent)
            .await
            .map_err(e)?;
        let again = objects
            .put(&key, b"probe 2".to_vec(), &Condition::IfAbsent)
            .await
            .map_err(e)?;
        let wrong = objects
            .put(
                &key,
                b"probe 3".to_vec(),
                &Condition::IfMatch("\"00000000000000000000000000000000\"".into()),
            )
            .await
            .map_err(e)?;
        objects.delete(&key, None).await.map_err(e)?;
        let ignored: Vec<&str> = [
            (again != Put::Refused).then_some("If-None-Match: *"),
            (wrong != Put::Refused).then_some("If-Match"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !ignored.is_empty() {
            return Err(StateError::Backend {
                location: self.location.clone(),
                message: format!(
                    "this bucket does not honour conditional writes ({} was ignored), so two runs could overwrite each other's state and locks",
                    ignored.join(", ")
                ),
                hint: "use AWS S3 (conditional writes since 2024) or an S3-compatible server that implements If-Match and If-None-Match on PutObject, or a postgres:// state".into(),
            });
        }
        Ok(())
    }

    async fn read_lock(&self) -> Result<Option<(LockObject, String)>, StateError> {
        let objects = self.objects().await?;
        let Some(obj) = objects.get(&self.lock_key).await.map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        let lock: LockObject = serde_json::from_slice(&obj.body)
            .map_err(|e| self.corrupt("the lock object", e.to_string()))?;
        Ok(Some((lock, obj.etag)))
    }

    /// The lock's holder, with its lease and generation.
    async fn read_holder(&self) -> Result<Option<LockInfo>, StateError> {
        Ok(self.read_lock().await?.and_then(|(l, _)| {
            let mut info = l.holder?;
            info.expires = Some(crate::clock::rfc3339_ms(l.expires_ms));
            info.generation = Some(l.generation);
            Some(info)
        }))
    }

    async fn fenced_error(&self, generation: u64) -> StateError {
        self.fenced.store(true, Ordering::SeqCst);
        let holder = self.read_holder().await.ok().flatten();
        StateError::Fenced {
            location: self.location.clone(),
            generation,
            holder: holder
                .map(|h| h.describe())
                .unwrap_or_else(|| "another run (which has released it since)".into()),
            journal: self.journal_path.clone(),
        }
    }

    fn held_id(&self) -> Option<(String, u64)> {
        self.held_id.lock().expect("held").clone()
    }

    /// Extends the lease with `If-Match` on the lock's ETag: refused (and
    /// this run fenced) once someone else took the lock.
    async fn renew(&self) -> Result<(), StateError> {
        let objects = self.objects().await?;
        let mut guard = self.held.lock().await;
        let Some(held) = guard.as_mut() else {
            drop(guard);
            return Err(self.fenced_error(0).await);
        };
        let sent = Instant::now();
        let expires_ms = crate::clock::wall_ms() + self.lease.as_millis() as u64;
        let mut info = held.info.clone();
        info.expires = Some(crate::clock::rfc3339_ms(expires_ms));
        let body = serde_json::to_vec(&LockObject {
            generation: held.generation,
            holder: Some(info),
            expires_ms,
        })
        .expect("lock serialises");
        match objects
            .put(&self.lock_key, body, &Condition::IfMatch(held.etag.clone()))
            .await
            .map_err(|e| self.err(e))?
        {
            Put::Written(etag) => {
                held.etag = etag;
                held.valid_until = sent + self.lease;
                Ok(())
            }
            Put::Refused => {
                let generation = held.generation;
                drop(guard);
                Err(self.fenced_error(generation).await)
            }
        }
    }

    /// Proves this run still holds the lock before a write: free while the
    /// lease it renewed runs (with a third of it to spare), else a renewal.
    async fn ensure_ours(&self) -> Result<u64, StateError> {
        let Some((_, generation)) = self.held_id() else {
            return Err(StateError::Backend {
                location: self.location.clone(),
                message: "a write without holding the lock".into(),
                hint: "this is a bug in gpuform".into(),
            });
        };
        if self.fenced.load(Ordering::SeqCst) {
            return Err(self.fenced_error(generation).await);
        }
        let fresh = {
            let guard = self.held.lock().await;
            guard
                .as_ref()
                .map(|h| Instant::now() + self.lease / 3 < h.valid_until)
                .unwrap_or(false)
        };
        if !fresh {
            self.renew().await?;
        }
        Ok(generation)
    }
}

/// The time a state call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

fn serial_of(location: &str, bytes: &[u8]) -> String {
    super::store::parse(std::path::Path::new(location), bytes)
        .map(|d| d.serial.to_string())
        .unwrap_or_else(|_| "unknown".into())
}

impl StateBackend for S3Backend {
    fn location(&self) -> String {
        self.remote.inner.location.clone()
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn load(&self) -> Result<Option<StateDoc>, StateError> {
        self.remote.run(|inner| async move {
            let objects = inner.objects().await?;
            let Some(obj) = objects
                .get(&inner.state_key)
                .await
                .map_err(|e| inner.err(e))?
            else {
                *inner.last.lock().expect("last") = None;
                return Ok(None);
            };
            let doc = super::store::parse(std::path::Path::new(&inner.location), &obj.body)?;
            *inner.last.lock().expect("last") = Some((obj.etag, doc.serial));
            Ok(Some(doc))
        })
    }

    fn save(&self, doc: &StateDoc) -> Result<(), StateError> {
        let body = serde_json::to_vec(doc).expect("state serialises");
        let body = super::crypto::seal_at(&self.remote.inner.location, body)?;
        let serial = doc.serial;
        self.remote.run(move |inner| async move {
            inner.ensure_ours().await?;
            let objects = inner.objects().await?;
            // Journal objects the document already holds.
            let done: Vec<String> = {
                let mut keys = std::mem::take(&mut *inner.folded.lock().expect("folded"));
                keys.extend(std::mem::take(&mut *inner.pushed.lock().expect("pushed")));
                keys
            };
            let last = inner.last.lock().expect("last").clone();
            let condition = match &last {
                Some((etag, _)) => Condition::IfMatch(etag.clone()),
                None => Condition::IfAbsent,
            };
            let written = objects
                .put(&inner.state_key, body, &condition)
                .await
                .map_err(|e| inner.err(e))?;
            let Put::Written(etag) = written else {
                // Not folded after all: kept for whoever saves next.
                inner.folded.lock().expect("folded").extend(done);
                let found = match objects.get(&inner.state_key).await {
                    Ok(Some(o)) => serial_of(&inner.location, &o.body),
                    Ok(None) => "none".into(),
                    Err(_) => "unknown".into(),
                };
                return Err(StateError::Conflict {
                    location: inner.location.clone(),
                    expected: last
                        .map(|(_, s)| s.to_string())
                        .unwrap_or_else(|| "none (new state)".into()),
                    found,
                });
            };
            *inner.last.lock().expect("last") = Some((etag, serial));
            // The journal objects are independent: several deletes in
            // flight, not a round trip each at the end of every apply.
            for keys in done.chunks(JOURNAL_DELETES_IN_FLIGHT) {
                let deletes = keys.iter().map(|key| objects.delete(key, None));
                for deleted in futures_util::future::join_all(deletes).await {
                    deleted.map_err(|e| inner.err(e))?;
                }
            }
            Ok(())
        })
    }

    fn lock(&self, operation: &str) -> Result<Box<dyn HeldLock>, StateError> {
        let info = new_info(operation);
        let info = self.remote.run(move |inner| async move {
            let objects = inner.objects().await?;
            // A lost race re-reads the lock: the winner is then named.
            for _ in 0..3 {
                let current = inner.read_lock().await?;
                let now = crate::clock::wall_ms();
                let (condition, generation) = match &current {
                    None => (Condition::IfAbsent, 1),
                    Some((lock, etag)) => {
                        if let Some(holder) = &lock.holder {
                            if lock.expires_ms > now {
                                let mut h = holder.clone();
                                h.expires = Some(crate::clock::rfc3339_ms(lock.expires_ms));
                                h.generation = Some(lock.generation);
                                return Err(StateError::Locked {
                                    path: std::path::PathBuf::from(&inner.location),
                                    holder: h.describe(),
                                    id: h.id,
                                });
                            }
                        }
                        (Condition::IfMatch(etag.clone()), lock.generation + 1)
                    }
                };
                let sent = Instant::now();
                let expires_ms = now + inner.lease.as_millis() as u64;
                let mut info = info.clone();
                info.expires = Some(crate::clock::rfc3339_ms(expires_ms));
                info.generation = Some(generation);
                let body = serde_json::to_vec(&LockObject {
                    generation,
                    holder: Some(info.clone()),
                    expires_ms,
                })
                .expect("lock serialises");
                if let Put::Written(etag) = objects
                    .put(&inner.lock_key, body, &condition)
                    .await
                    .map_err(|e| inner.err(e))?
                {
                    *inner.held.lock().await = Some(Held {
                        info: info.clone(),
                        generation,
                        etag,
                        valid_until: sent + inner.lease,
                    });
                    *inner.held_id.lock().expect("held") = Some((info.id.clone(), generation));
                    inner.fenced.store(false, Ordering::SeqCst);
                    return Ok(info);
                }
            }
            let holder = inner.read_holder().await?;
            Err(StateError::Locked {
                path: std::path::PathBuf::from(&inner.location),
                holder: holder
                    .as_ref()
                    .map(|h| h.describe())
                    .unwrap_or_else(|| "another run".into()),
                id: holder.map(|h| h.id).unwrap_or_default(),
            })
        })?;
        let inner = self.remote.inner.clone();
        let renew = move || {
            let inner = inner.clone();
            async move {
                match inner.renew().await {
                    Err(StateError::Fenced { .. }) => Renewal::Lost,
                    _ => Renewal::Kept,
                }
            }
        };
        Ok(self
            .remote
            .hold(info, renew, release(self.remote.inner.clone())))
    }

    fn holder(&self) -> Option<LockInfo> {
        self.remote
            .run(|inner| async move { inner.read_holder().await })
            .ok()
            .flatten()
    }

    fn force_unlock(&self, id: &str) -> Result<LockInfo, StateError> {
        let id = id.to_string();
        self.remote.run(move |inner| async move {
            let not_locked = || StateError::NotLocked {
                path: std::path::PathBuf::from(&inner.location),
            };
            let Some((lock, etag)) = inner.read_lock().await? else {
                return Err(not_locked());
            };
            let Some(mut holder) = lock.holder.clone() else {
                return Err(not_locked());
            };
            holder.expires = Some(crate::clock::rfc3339_ms(lock.expires_ms));
            holder.generation = Some(lock.generation);
            holder.check_id(std::path::Path::new(&inner.location), &id)?;
            // Bumping the generation fences the old holder for good.
            let body = serde_json::to_vec(&LockObject {
                generation: lock.generation + 1,
                holder: None,
                expires_ms: 0,
            })
            .expect("lock serialises");
            let objects = inner.objects().await?;
            match objects
                .put(&inner.lock_key, body, &Condition::IfMatch(etag))
                .await
                .map_err(|e| inner.err(e))?
            {
                Put::Written(_) => Ok(holder),
                Put::Refused => Err(StateError::Backend {
                    location: inner.location.clone(),
                    message: "the lock changed while it was being broken".into(),
                    hint: "run `gpuform force-unlock` again with the id it names now".into(),
                }),
            }
        })
    }

    fn recover_journal(&self, doc: &mut StateDoc) -> Result<bool, StateError> {
        let own = self
            .remote
            .inner
            .held_id()
            .map(|(_, g)| format!("{g:020}-"));
        let batches: Vec<(String, Vec<u8>)> = self.remote.run(move |inner| async move {
            let objects = inner.objects().await?;
            let mut out = Vec::new();
            for key in objects
                .list(&inner.journal_prefix)
                .await
                .map_err(|e| inner.err(e))?
            {
                // This run's own batches are in its local journal.
                let rest = &key[inner.journal_prefix.len()..];
                if own.as_deref().is_some_and(|o| rest.starts_with(o)) {
                    continue;
                }
                if let Some(obj) = objects.get(&key).await.map_err(|e| inner.err(e))? {
                    out.push((key, obj.body));
                }
            }
            Ok(out)
        })?;
        if batches.is_empty() {
            return Ok(false);
        }
        let mut lines = Vec::new();
        for (_, body) in &batches {
            for l in String::from_utf8_lossy(body)
                .lines()
                .filter(|l| !l.is_empty())
            {
                lines.push(super::crypto::open_line(&self.remote.inner.location, l)?);
            }
        }
        super::journal::fold_lines(&self.remote.inner.location, &lines, doc)?;
        self.remote
            .inner
            .folded
            .lock()
            .expect("folded")
            .extend(batches.into_iter().map(|(k, _)| k));
        Ok(true)
    }

    fn journal_mirror(&self) -> Option<Arc<dyn JournalMirror>> {
        Some(Arc::new(self.remote.clone()))
    }
}

impl JournalMirror for Remote<Inner> {
    fn push(&self, lines: &[String]) -> Result<(), StateError> {
        // One line per journal line, each encrypted like the state when a
        // key is set (one KDF per process).
        let mut body = Vec::new();
        for l in lines {
            let sealed = super::crypto::seal_line(&self.inner.location, l)?;
            body.extend_from_slice(sealed.as_bytes());
            body.push(b'\n');
        }
        self.run(move |inner| async move {
            let generation = inner.ensure_ours().await?;
            let seq = inner.seq.fetch_add(1, Ordering::SeqCst);
            let key = format!("{}{generation:020}-{seq:010}", inner.journal_prefix);
            let objects = inner.objects().await?;
            match objects
                .put(&key, body, &Condition::IfAbsent)
                .await
                .map_err(|e| inner.err(e))?
            {
                Put::Written(_) => {
                    inner.pushed.lock().expect("pushed").push(key);
                    Ok(())
                }
                // Another process with this generation: not this run's lock.
                Put::Refused => Err(inner.fenced_error(generation).await),
            }
        })
    }
}

/// Marks the lock released, keeping its generation, over our own lock
/// object only (`If-Match` on the ETag this run last wrote).
async fn release(inner: Arc<Inner>) -> Result<(), StateError> {
    let freed = with_timeout(&*inner, async {
        let held = inner.held.lock().await.take();
        let Some(held) = held else { return Ok(()) };
        let body = serde_json::to_vec(&LockObject {
            generation: held.generation,
            holder: None,
            expires_ms: 0,
        })
        .expect("lock serialises");
        let objects = inner.objects().await?;
        // A renewal aborted while its PUT was in flight may have landed
        // without this process hearing its new ETag: the release is then
        // refused, and the lock would stay held until its lease ran out
        // (a run right after this one was refused by a dead holder). So a
        // refused release re-reads the lock and, while it is still ours
        // (same generation, same holder), releases it under its ETag now.
        let mut etag = held.etag;
        for _ in 0..3 {
            match objects
                .put(&inner.lock_key, body.clone(), &Condition::IfMatch(etag))
                .await
            {
                Ok(Put::Refused) => match inner.read_lock().await {
                    Ok(Some((lock, now)))
                        if lock.generation == held.generation
                            && lock.holder.as_ref().is_some_and(|h| h.id == held.info.id) =>
                    {
                        etag = now
                    }
                    _ => break, // another run's now, or gone: nothing of ours
                },
                _ => break,
            }
        }
        Ok(())
    })
    .await;
    *inner.held_id.lock().expect("held") = None;
    freed
}
