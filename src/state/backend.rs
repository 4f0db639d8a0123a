//! Where a state document lives: the [`StateBackend`] trait, implemented by
//! the local files ([`super::store::LocalBackend`]) and by PostgreSQL
//! ([`super::postgres::PgBackend`]), and the choice between them (the spec's
//! `state:` block, overridden by `--state-url` / `GPUFORM_STATE_URL`).
//!
//! Every backend has the same semantics: `save` is a compare-and-swap on the
//! serial last read or written, a lock names its holder, and (remote
//! backends) a lock has a lease renewed in the background and a generation
//! that every write carries, so a holder paused past its lease is refused.

use super::{LockInfo, StateDoc, StateError};
use std::sync::Arc;

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
            "s3" => Err(StateError::Backend {
                location: redact_url(url),
                message: "the S3 state backend is not built into this gpuform".into(),
                hint: "use a postgres:// URL, or local state".into(),
            }),
            _ => Err(StateError::Backend {
                location: redact_url(url),
                message: "not a state backend URL".into(),
                hint: "use postgres://[user@]host[:port]/database (the password from PGPASSWORD or ~/.pgpass), or leave it out for local state".into(),
            }),
        }
    }
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
}
