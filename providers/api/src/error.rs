//! Neutral error kinds: the only thing about a cloud's failures that the
//! engine reasons about (retry, fail over to another zone, stop).

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// No capacity for this type in this zone right now: try the next zone.
    Capacity,
    /// An account limit was hit; retrying will not help until it is raised.
    Quota,
    /// The API asked us to slow down: back off and retry.
    Throttled,
    /// The resource does not exist (any more).
    NotFound,
    /// Credentials are missing, wrong or lack permission.
    Auth,
    /// The request itself is wrong (bad type, image, id...).
    Invalid,
    /// A dependency still uses the resource (e.g. a subnet with instances): retry later.
    DependencyViolation,
    /// Network trouble or a 5xx: safe to retry.
    Transient,
}

impl ErrorKind {
    /// Whether the engine may retry the same call after a backoff.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Throttled | ErrorKind::Transient | ErrorKind::DependencyViolation
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Capacity => "capacity",
            ErrorKind::Quota => "quota",
            ErrorKind::Throttled => "throttled",
            ErrorKind::NotFound => "not-found",
            ErrorKind::Auth => "auth",
            ErrorKind::Invalid => "invalid",
            ErrorKind::DependencyViolation => "dependency-violation",
            ErrorKind::Transient => "transient",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error from a provider call. `message` must never contain credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {message}{}{}", code.as_ref().map(|c| format!(" (code {c})")).unwrap_or_default(), request_id.as_ref().map(|r| format!(" [request id {r}]")).unwrap_or_default())]
pub struct ProviderError {
    pub kind: ErrorKind,
    pub message: String,
    /// The cloud's own error code, e.g. `InsufficientInstanceCapacity`.
    pub code: Option<String>,
    /// The cloud's request id, for support tickets.
    pub request_id: Option<String>,
}

impl ProviderError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ProviderError {
            kind,
            message: message.into(),
            code: None,
            request_id: None,
        }
    }

    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }
}

/// What a provider call answers: [`ProviderError`] unless said otherwise.
pub type Result<T, E = ProviderError> = std::result::Result<T, E>;

/// A delete, detach or release whose target is already gone has nothing
/// left to do: "not found" is its success.
pub fn ok_if_gone<T>(r: Result<T>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// An error worded for the user: what is wrong, and how to fix it. The
/// commands over the catalog and the spec editor (offers, breakeven,
/// recommend, migrate, lockin) and the clouds' naming rules (a Tencent
/// tag) fail with it; the CLI prints it as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}\n  hint: {hint}")]
pub struct UserError {
    pub message: String,
    pub hint: String,
}

impl UserError {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> UserError {
        UserError {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_not_found_counts_as_gone() {
        let gone = ProviderError::new(ErrorKind::NotFound, "DeleteDisk: no such disk");
        assert_eq!(ok_if_gone::<()>(Err(gone)), Ok(()));
        assert_eq!(ok_if_gone(Ok("answer")), Ok(()));
        let busy = ProviderError::new(ErrorKind::Transient, "busy");
        assert_eq!(ok_if_gone::<()>(Err(busy.clone())), Err(busy));
    }
}
