//! Where a state document lives: the [`StateBackend`] trait, implemented by
//! the local files ([`super::store::LocalBackend`]), PostgreSQL
//! ([`super::postgres::PgBackend`]) and S3 (`super::s3::S3Backend`, with
//! the `aws` feature), and the choice between them (the spec's
//! `state:` block, overridden by `--state-url` / `GPUFORM_STATE_URL`).
//!
//! Every backend has the same semantics: `save` is a compare-and-swap on the
//! serial last read or written, a lock names its holder, and (remote
//! backends) a lock has a lease renewed in the background and a generation
//! that every write carries, so a holder paused past its lease is refused.

use super::lease::{Lease, LeasedLock, Renewal};
use super::{LockInfo, StateDoc, StateError};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A remote backend's own I/O runtime (its methods block, and may be called
/// from inside the CLI's runtime).
pub(crate) struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    /// One worker thread named `thread_name`: state calls are few and
    /// sequential, the lease renewal is the only other task.
    pub(crate) fn start(thread_name: &str) -> std::io::Result<Runtime> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(thread_name)
            .enable_all()
            .build()?;
        Ok(Runtime(Some(rt)))
    }

    /// Spawns a background task (lease renewal).
    pub(crate) fn spawn<F>(&self, f: F) -> Option<tokio::task::JoinHandle<()>>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.0.as_ref().map(|rt| rt.spawn(f))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // May be dropped inside the CLI's runtime: never block there.
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// Runs `fut` on the backend's runtime and waits for it from any thread.
pub(crate) fn block_on<T: Send + 'static>(
    rt: &Runtime,
    fut: impl Future<Output = Result<T, StateError>> + Send + 'static,
) -> Result<T, StateError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let Some(runtime) = rt.0.as_ref() else {
        return Err(StateError::Backend {
            location: String::new(),
            message: "backend shut down".into(),
            hint: "this is a bug in gpuform".into(),
        });
    };
    runtime.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().unwrap_or_else(|_| {
        Err(StateError::Backend {
            location: String::new(),
            message: "the backend's I/O task stopped".into(),
            hint: "this is a bug in gpuform".into(),
        })
    })
}

/// What [`Remote`] needs of a remote backend's shared state.
pub(crate) trait RemoteInner: Send + Sync + 'static {
    /// How long one call to the backend may take before it counts as
    /// unreachable.
    const CALL_TIMEOUT: Duration;

    /// What to check when the backend does not answer (the hint of
    /// [`RemoteInner::timeout`]).
    const UNREACHABLE_HINT: &'static str;

    /// The backend's location, for messages (no secrets).
    fn location(&self) -> &str;

    /// The length of a lock's lease.
    fn lease(&self) -> Duration;

    /// The error of a call that had no answer within
    /// [`Self::CALL_TIMEOUT`].
    fn timeout(&self) -> StateError {
        StateError::Backend {
            location: self.location().to_string(),
            message: format!("no answer within {} s", Self::CALL_TIMEOUT.as_secs()),
            hint: Self::UNREACHABLE_HINT.into(),
        }
    }
}

/// A remote backend (PostgreSQL, S3): its shared state and the runtime its
/// I/O runs on. Its journal mirror is a clone of it.
pub(crate) struct Remote<I> {
    pub(crate) inner: Arc<I>,
    pub(crate) rt: Arc<Runtime>,
}

impl<I> Clone for Remote<I> {
    fn clone(&self) -> Self {
        Remote {
            inner: self.inner.clone(),
            rt: self.rt.clone(),
        }
    }
}

impl<I: RemoteInner> Remote<I> {
    pub(crate) fn new(inner: I, rt: Runtime) -> Remote<I> {
        Remote {
            inner: Arc::new(inner),
            rt: Arc::new(rt),
        }
    }

    /// Runs the call `f(inner)` on the backend's runtime, within
    /// [`RemoteInner::CALL_TIMEOUT`], and waits for it.
    pub(crate) fn run<T, F>(&self, f: impl FnOnce(Arc<I>) -> F) -> Result<T, StateError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StateError>> + Send + 'static,
    {
        let inner = self.inner.clone();
        let call = f(inner.clone());
        block_on(&self.rt, async move { with_timeout(&*inner, call).await })
    }

    /// The lock `info`, held with this backend's lease: renewed in the
    /// background by `renew`, given up by `release`.
    pub(crate) fn hold<R, RF, F>(&self, info: LockInfo, renew: R, release: F) -> Box<dyn HeldLock>
    where
        R: Fn() -> RF + Send + 'static,
        RF: Future<Output = Renewal> + Send,
        F: Future<Output = Result<(), StateError>> + Send + 'static,
    {
        LeasedLock::hold(
            self.rt.clone(),
            info,
            Lease {
                length: self.inner.lease(),
                call_timeout: I::CALL_TIMEOUT,
                renew,
                release,
            },
        )
    }
}

/// `f`, or [`RemoteInner::timeout`] when it takes longer than
/// [`RemoteInner::CALL_TIMEOUT`].
pub(crate) async fn with_timeout<I: RemoteInner, T>(
    inner: &I,
    f: impl Future<Output = Result<T, StateError>>,
) -> Result<T, StateError> {
    tokio::time::timeout(I::CALL_TIMEOUT, f)
        .await
        .map_err(|_| inner.timeout())?
}

/// A state document's home. Methods block; remote backends run their own
/// I/O runtime so they can be called from async code too.
pub trait StateBackend: Send + Sync + std::fmt::Debug {
    /// Where the state is, for messages: a path, or a URL with its password
    /// redacted.
    fn location(&self) -> String;
    /// Reads the state; `None` when there is none yet.
    fn load(&self) -> Result<Option<StateDoc>, StateError>;
    /// Writes the document as it is (the serial is the caller's business:
    /// [`super::StateStore::commit`] bumps it). Remote backends refuse the
    /// write unless the stored serial is still the one last seen, and unless
    /// this process still holds the lock's generation.
    fn save(&self, doc: &StateDoc) -> Result<(), StateError>;
    /// Takes the lock at once or fails at once naming the holder.
    fn lock(&self, operation: &str) -> Result<Box<dyn HeldLock>, StateError>;
    /// Who holds the lock, if anyone (a live holder only).
    fn holder(&self) -> Option<LockInfo>;
    /// Breaks a lock deliberately; the id must match.
    fn force_unlock(&self, id: &str) -> Result<LockInfo, StateError>;
    /// Folds journal entries an interrupted apply pushed to the backend
    /// (remote backends only). Returns whether there were any. The next
    /// `save` clears them.
    fn recover_journal(&self, _doc: &mut StateDoc) -> Result<bool, StateError> {
        Ok(false)
    }
    /// Where journal batches go besides the local journal (remote backends).
    fn journal_mirror(&self) -> Option<Arc<dyn JournalMirror>> {
        None
    }
    /// Whether the state lives elsewhere than the local file system.
    fn is_remote(&self) -> bool {
        false
    }
}

/// A held lock; released when dropped.
pub trait HeldLock: Send + Sync {
    fn info(&self) -> &LockInfo;
}

/// Receives each group-committed batch of journal lines, after it is durable
/// in the local journal, in one round trip per batch.
pub trait JournalMirror: Send + Sync {
    fn push(&self, lines: &[String]) -> Result<(), StateError>;
}

/// Which backend a spec's state uses, resolved from the spec and the
/// command line (the command line wins, so CI can point a spec at its own
/// database without editing it).
#[derive(Debug, Clone, PartialEq)]
pub enum BackendChoice {
    Local,
    Postgres {
        url: String,
        schema: String,
        lease: std::time::Duration,
    },
    /// `s3://bucket/prefix?region=…&endpoint=…` (checked when the backend
    /// is built).
    S3 {
        url: String,
        lease: std::time::Duration,
    },
}

/// The default lease of a remote lock.
pub const DEFAULT_LEASE_SECS: u64 = 60;

impl BackendChoice {
    /// From a URL given on the command line or in the environment.
    pub fn from_url(
        url: &str,
        schema: Option<&str>,
        lease_secs: Option<u64>,
    ) -> Result<BackendChoice, StateError> {
        let lease = std::time::Duration::from_secs(lease_secs.unwrap_or(DEFAULT_LEASE_SECS).max(1));
        let scheme = url.split("://").next().unwrap_or("");
        match scheme {
            "postgres" | "postgresql" => {
                let schema = schema.unwrap_or("gpuform").to_string();
                if schema.is_empty()
                    || !schema
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                    || schema.starts_with(|c: char| c.is_ascii_digit())
                {
                    return Err(StateError::Backend {
                        location: redact_url(url),
                        message: format!("`{schema}` is not a valid schema name"),
                        hint: "use letters, digits and underscores, starting with a letter (default `gpuform`)".into(),
                    });
                }
                Ok(BackendChoice::Postgres {
                    url: url.to_string(),
                    schema,
                    lease,
                })
            }
            "file" | "local" => Ok(BackendChoice::Local),
            "s3" => {
                S3Url::parse(url).map_err(|message| StateError::Backend {
                    location: redact_url(url),
                    message,
                    hint: "use s3://bucket/prefix?region=us-east-1 (and &endpoint=http://host:port for an S3-compatible server); credentials come from the AWS chain, never the URL".into(),
                })?;
                Ok(BackendChoice::S3 {
                    url: url.to_string(),
                    lease,
                })
            }
            _ => Err(StateError::Backend {
                location: redact_url(url),
                message: "not a state backend URL".into(),
                hint: "use postgres://[user@]host[:port]/database (the password from PGPASSWORD or ~/.pgpass), s3://bucket/prefix?region=R[&endpoint=URL] (credentials from the AWS chain), or leave it out for local state".into(),
            }),
        }
    }
}

/// Where an S3 state lives, from its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Url {
    pub bucket: String,
    /// Key prefix, without leading or trailing `/` (may be empty).
    pub prefix: String,
    pub region: Option<String>,
    pub endpoint: Option<String>,
}

impl S3Url {
    /// Parses `s3://bucket[/prefix][?region=R&endpoint=URL]`.
    pub fn parse(url: &str) -> Result<S3Url, String> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| "an S3 state URL starts with s3://".to_string())?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
        let valid_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
            && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
            && bucket.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !valid_bucket {
            return Err(format!(
                "`{bucket}` is not an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens)"
            ));
        }
        let mut out = S3Url {
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
            region: None,
            endpoint: None,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode(v);
            match k {
                "region" if !v.is_empty() => out.region = Some(v),
                "endpoint" if v.starts_with("http://") || v.starts_with("https://") => {
                    out.endpoint = Some(v)
                }
                "endpoint" => return Err(format!("endpoint `{v}` is not an http(s) URL")),
                _ => {
                    return Err(format!(
                        "unknown URL parameter `{k}` (use region= and endpoint=)"
                    ))
                }
            }
        }
        Ok(out)
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URL with any password replaced by `***`: `postgres://u:secret@h/db`
/// becomes `postgres://u:***@h/db`; `password=...` query or keyword values
/// are redacted too. Every message that names a backend goes through here.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..]
            .find(['/', '?', '#'])
            .map(|i| rest_start + i)
            .unwrap_or(out.len());
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                let start = rest_start + colon + 1;
                out.replace_range(start..rest_start + at, "***");
            }
        }
    }
    redact_keyword(&out, "password=")
}

fn redact_keyword(s: &str, key: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(found) = lower[i..].find(key) {
        let start = i + found + key.len();
        out.push_str(&s[i..start]);
        out.push_str("***");
        let end = s[start..]
            .find(['&', ' ', '#'])
            .map(|e| start + e)
            .unwrap_or(s.len());
        i = end;
    }
    out.push_str(&s[i..]);
    out
}

/// Redacts every occurrence of `secret` (a password taken from a URL) in a
/// message from a client library.
pub fn scrub(message: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => message.replace(s, "***"),
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_urls() {
        assert_eq!(
            redact_url("postgres://ci:s3cr%40t@db.example:5432/state?sslmode=disable"),
            "postgres://ci:***@db.example:5432/state?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgres://ci@db/state"),
            "postgres://ci@db/state"
        );
        assert_eq!(
            redact_url("postgres://db/state?user=ci&password=hunter2&x=1"),
            "postgres://db/state?user=ci&password=***&x=1"
        );
        assert!(!redact_url("postgresql://a:b:c@h/d").contains("b:c"));
    }

    #[test]
    fn urls_choose_backends_and_bad_ones_are_clear_errors() {
        assert!(matches!(
            BackendChoice::from_url("postgres://h/db", None, Some(2)).unwrap(),
            BackendChoice::Postgres { ref schema, lease, .. } if schema == "gpuform" && lease.as_secs() == 2
        ));
        let err = BackendChoice::from_url("mysql://u:pw@h/db", None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a state backend URL"), "{err}");
        assert!(err.contains("hint:"), "{err}");
        assert!(!err.contains("pw"), "{err}");
        let err = BackendChoice::from_url("postgres://h/db", Some("x;drop"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a valid schema name"), "{err}");
    }

    #[test]
    fn s3_urls_parse_and_bad_ones_say_why() {
        let u = S3Url::parse(
            "s3://team-state/ci/gpu?region=eu-west-1&endpoint=http%3A%2F%2F127.0.0.1%3A5612",
        )
        .unwrap();
        assert_eq!(u.bucket, "team-state");
        assert_eq!(u.prefix, "ci/gpu");
        assert_eq!(u.region.as_deref(), Some("eu-west-1"));
        assert_eq!(u.endpoint.as_deref(), Some("http://127.0.0.1:5612"));
        let u = S3Url::parse("s3://b.example/?endpoint=http://h:9000").unwrap();
        assert_eq!((u.prefix.as_str(), u.region), ("", None));
        assert_eq!(u.endpoint.as_deref(), Some("http://h:9000"));
        for (bad, why) in [
            ("s3://Upper/x", "not an S3 bucket name"),
            ("s3://ab/x", "not an S3 bucket name"),
            ("s3:///x", "not an S3 bucket name"),
            ("s3://bucket/x?endpoint=ftp://h", "not an http(s) URL"),
            ("s3://bucket/x?acl=public", "unknown URL parameter `acl`"),
        ] {
            let err = S3Url::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert_eq!(percent_decode("a%2Fb%zz%4"), "a/b%zz%4");
    }
}
