//! The object operations gpuform's S3 state backend is built on (the backend
//! itself, with its lock and journal semantics, lives in the root crate:
//! this crate knows S3, not gpuform's state).
//!
//! Every write can be conditional — `If-Match: <etag>` (compare-and-swap on
//! the object's ETag) or `If-None-Match: *` (create only) — and a refused
//! condition is an outcome ([`Put::Refused`]), not an error. Errors are
//! [`S3Error`]s of a few kinds the caller turns into hints; their messages
//! hold S3's error code and message and fixed words, never credentials.
//!
//! The client shares the EC2 client's SDK configuration (aws-config's
//! standard credential chain, retry and timeout policy), with a shorter
//! operation timeout: a state call that takes 15 s is a backend that is down.

use crate::errors::credentials_error;
use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_s3::config::{Region, RequestChecksumCalculation, ResponseChecksumValidation};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use std::fmt;
use std::time::Duration;

/// The S3 client configuration both S3 users share (the state backend's
/// objects and the provider's buckets): `base`'s credentials, retries and
/// timeouts, `region` when given, `endpoint` (or `base`'s) addressed
/// path-style, and checksums only where S3 requires them.
pub(crate) fn s3_config(
    base: &aws_config::SdkConfig,
    region: Option<&str>,
    endpoint: Option<&str>,
) -> aws_sdk_s3::config::Builder {
    let mut b = aws_sdk_s3::config::Builder::from(base)
        // S3-compatible servers vary in which trailing-checksum schemes
        // they accept.
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .response_checksum_validation(ResponseChecksumValidation::WhenRequired);
    if let Some(r) = region {
        b = b.region(Region::new(r.to_string()));
    }
    let custom = endpoint.is_some() || base.endpoint_url().is_some();
    if let Some(url) = endpoint {
        b = b.endpoint_url(url);
    }
    // A custom endpoint rarely resolves bucket subdomains.
    b.force_path_style(custom)
}

/// What went wrong, for the caller's hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum S3ErrorKind {
    /// The bucket does not exist (or is in another region/endpoint).
    NoSuchBucket,
    /// No credentials found, or the ones found are refused.
    Credentials,
    /// Permission denied to these credentials.
    AccessDenied,
    /// The endpoint did not answer (network, timeout, 5xx).
    Unreachable,
    /// Anything else S3 refused.
    Other,
}

/// An S3 call that failed. `message` is safe to show: S3's code and message,
/// or fixed words.
#[derive(Debug, Clone)]
pub struct S3Error {
    pub kind: S3ErrorKind,
    pub message: String,
}

impl fmt::Display for S3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for S3Error {}

/// An object read with its ETag (the token a later `If-Match` names).
#[derive(Debug, Clone)]
pub struct Object {
    pub body: Vec<u8>,
    pub etag: String,
}

/// The condition of a PUT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// Unconditional.
    None,
    /// `If-Match`: only over the object with this ETag.
    IfMatch(String),
    /// `If-None-Match: *`: only when no object has this key.
    IfAbsent,
}

/// The outcome of a conditional PUT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Put {
    /// Written; the new object's ETag.
    Written(String),
    /// The condition did not hold (HTTP 412, 409 ConditionalRequestConflict,
    /// or an `If-Match` over a key that is gone): nothing was written.
    Refused,
}

/// One bucket's objects.
#[derive(Clone)]
pub struct S3Objects {
    client: Client,
    bucket: String,
}

impl fmt::Debug for S3Objects {
    // Not derived: the client's config holds the credentials provider.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Objects")
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl S3Objects {
    /// A client of `bucket` from aws-config's standard chain. `region`
    /// overrides the chain's region; `endpoint` (an S3-compatible server,
    /// addressed path-style) overrides `AWS_ENDPOINT_URL`. Sends nothing.
    pub async fn new(
        bucket: &str,
        region: Option<&str>,
        endpoint: Option<&str>,
    ) -> Result<S3Objects, S3Error> {
        let base = crate::client::sdk_config(endpoint)
            .await
            .map_err(|e| S3Error {
                kind: S3ErrorKind::Other,
                message: e.message,
            })?;
        let timeouts = aws_sdk_s3::config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(5))
            .operation_attempt_timeout(Duration::from_secs(7))
            .operation_timeout(Duration::from_secs(15))
            .build();
        if region.is_none() && base.region().is_none() {
            return Err(S3Error {
                kind: S3ErrorKind::Other,
                message: "no AWS region: give `?region=` in the URL or set AWS_REGION".into(),
            });
        }
        let b = s3_config(&base, region, endpoint).timeout_config(timeouts);
        Ok(S3Objects {
            client: Client::from_conf(b.build()),
            bucket: bucket.to_string(),
        })
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Reads an object; `None` when the key does not exist.
    pub async fn get(&self, key: &str) -> Result<Option<Object>, S3Error> {
        let out = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(o) => o,
            Err(SdkError::ServiceError(se)) if se.err().is_no_such_key() => return Ok(None),
            Err(e) => {
                let err = map_err("GetObject", e);
                return match err {
                    Mapped::NotFound => Ok(None),
                    Mapped::Precondition => Err(S3Error {
                        kind: S3ErrorKind::Other,
                        message: "S3 GetObject: unexpected precondition failure".into(),
                    }),
                    Mapped::Error(e) => Err(e),
                };
            }
        };
        let etag = out.e_tag().unwrap_or_default().to_string();
        let body = out.body.collect().await.map_err(|_| S3Error {
            kind: S3ErrorKind::Unreachable,
            message: "S3 GetObject: the connection broke while reading the object".into(),
        })?;
        Ok(Some(Object {
            body: body.into_bytes().to_vec(),
            etag,
        }))
    }

    /// Writes an object under a condition.
    pub async fn put(
        &self,
        key: &str,
        body: Vec<u8>,
        condition: &Condition,
    ) -> Result<Put, S3Error> {
        let mut req = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/json")
            .body(ByteStream::from(body));
        match condition {
            Condition::None => {}
            Condition::IfMatch(etag) => req = req.if_match(etag),
            Condition::IfAbsent => req = req.if_none_match("*"),
        }
        match req.send().await {
            Ok(out) => Ok(Put::Written(out.e_tag().unwrap_or_default().to_string())),
            Err(e) => match map_err("PutObject", e) {
                Mapped::Precondition => Ok(Put::Refused),
                // If-Match over a key that is gone (some servers say 404).
                Mapped::NotFound if matches!(condition, Condition::IfMatch(_)) => Ok(Put::Refused),
                Mapped::NotFound => Err(S3Error {
                    kind: S3ErrorKind::Other,
                    message: "S3 PutObject: not found".into(),
                }),
                Mapped::Error(e) => Err(e),
            },
        }
    }

    /// Deletes an object; with `if_match`, only that version of it (a server
    /// that ignores the condition deletes it anyway). A missing key is fine.
    pub async fn delete(&self, key: &str, if_match: Option<&str>) -> Result<(), S3Error> {
        let mut req = self.client.delete_object().bucket(&self.bucket).key(key);
        if let Some(etag) = if_match {
            req = req.if_match(etag);
        }
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) => match map_err("DeleteObject", e) {
                Mapped::NotFound | Mapped::Precondition => Ok(()),
                Mapped::Error(e) => Err(e),
            },
        }
    }

    /// Every key under `prefix`, in S3's (lexicographic) order.
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, S3Error> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let out = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(prefix)
                .set_continuation_token(token.take())
                .send()
                .await
                .map_err(|e| match map_err("ListObjectsV2", e) {
                    Mapped::Error(e) => e,
                    _ => no_bucket(),
                })?;
            keys.extend(
                out.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_string)),
            );
            match out.next_continuation_token() {
                Some(t) if out.is_truncated() == Some(true) => token = Some(t.to_string()),
                _ => break,
            }
        }
        Ok(keys)
    }
}

fn no_bucket() -> S3Error {
    S3Error {
        kind: S3ErrorKind::NoSuchBucket,
        message: "the bucket does not exist".into(),
    }
}

enum Mapped {
    NotFound,
    Precondition,
    Error(S3Error),
}

fn map_err<E>(action: &str, err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> Mapped
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &err {
        SdkError::ServiceError(se) => {
            let status = se.raw().status().as_u16();
            let code = se.err().code().unwrap_or("").to_string();
            let message = se.err().message().unwrap_or("").to_string();
            classify(action, &code, &message, status)
        }
        SdkError::ResponseError(re) => {
            let status = re.raw().status().as_u16();
            classify(action, "", "", status)
        }
        SdkError::TimeoutError(_) => Mapped::Error(S3Error {
            kind: S3ErrorKind::Unreachable,
            message: format!("S3 {action} timed out"),
        }),
        SdkError::DispatchFailure(df) => {
            if let Some(ce) = credentials_error(&err) {
                return Mapped::Error(credentials(action, ce));
            }
            let what = if df.is_timeout() {
                "timed out"
            } else if df.is_io() {
                "could not reach the endpoint (I/O error)"
            } else {
                "could not send the request"
            };
            Mapped::Error(S3Error {
                kind: S3ErrorKind::Unreachable,
                message: format!("S3 {action} {what}"),
            })
        }
        _ => Mapped::Error(S3Error {
            kind: S3ErrorKind::Other,
            message: format!("S3 {action}: the request could not be built"),
        }),
    }
}

/// The outcome of an S3 error code and HTTP status (a pure function, tested
/// as a table).
fn classify(action: &str, code: &str, message: &str, status: u16) -> Mapped {
    let kind = match code {
        "PreconditionFailed" | "ConditionalRequestConflict" => return Mapped::Precondition,
        "NoSuchKey" | "NotFound" => return Mapped::NotFound,
        "NoSuchBucket" => S3ErrorKind::NoSuchBucket,
        "InvalidAccessKeyId"
        | "SignatureDoesNotMatch"
        | "ExpiredToken"
        | "InvalidToken"
        | "TokenRefreshRequired" => S3ErrorKind::Credentials,
        "AccessDenied" | "AllAccessDisabled" => S3ErrorKind::AccessDenied,
        "SlowDown" | "InternalError" | "ServiceUnavailable" | "RequestTimeout" => {
            S3ErrorKind::Unreachable
        }
        _ => match status {
            412 => return Mapped::Precondition,
            404 => return Mapped::NotFound,
            403 => S3ErrorKind::AccessDenied,
            s if s >= 500 => S3ErrorKind::Unreachable,
            _ => S3ErrorKind::Other,
        },
    };
    let mut text = format!("S3 {action} failed");
    if !code.is_empty() {
        text.push_str(&format!(": {code}"));
    } else {
        text.push_str(&format!(": HTTP {status}"));
    }
    if !message.is_empty() {
        text.push_str(&format!(" ({message})"));
    }
    Mapped::Error(S3Error {
        kind,
        message: text,
    })
}

fn credentials(action: &str, ce: &CredentialsError) -> S3Error {
    let what = match ce {
        CredentialsError::CredentialsNotLoaded(_) => "no AWS credentials found",
        CredentialsError::ProviderTimedOut(_) => "timed out while loading AWS credentials",
        CredentialsError::InvalidConfiguration(_) => "the AWS credentials configuration is invalid",
        _ => "AWS credentials could not be loaded",
    };
    S3Error {
        kind: S3ErrorKind::Credentials,
        message: format!("S3 {action}: {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(code: &str, status: u16) -> &'static str {
        match classify("PutObject", code, "", status) {
            Mapped::NotFound => "not-found",
            Mapped::Precondition => "precondition",
            Mapped::Error(e) => match e.kind {
                S3ErrorKind::NoSuchBucket => "no-bucket",
                S3ErrorKind::Credentials => "credentials",
                S3ErrorKind::AccessDenied => "denied",
                S3ErrorKind::Unreachable => "unreachable",
                S3ErrorKind::Other => "other",
            },
        }
    }

    #[test]
    fn s3_errors_map_to_outcomes_and_kinds() {
        let table = [
            ("PreconditionFailed", 412, "precondition"),
            ("ConditionalRequestConflict", 409, "precondition"),
            ("", 412, "precondition"),
            ("NoSuchKey", 404, "not-found"),
            ("", 404, "not-found"),
            ("NoSuchBucket", 404, "no-bucket"),
            ("InvalidAccessKeyId", 403, "credentials"),
            ("SignatureDoesNotMatch", 403, "credentials"),
            ("AccessDenied", 403, "denied"),
            ("", 403, "denied"),
            ("SlowDown", 503, "unreachable"),
            ("", 500, "unreachable"),
            ("InvalidArgument", 400, "other"),
        ];
        for (code, status, want) in table {
            assert_eq!(kind(code, status), want, "{code} {status}");
        }
        let Mapped::Error(e) = classify("GetObject", "AccessDenied", "Access Denied", 403) else {
            panic!("an error")
        };
        assert_eq!(
            e.message,
            "S3 GetObject failed: AccessDenied (Access Denied)"
        );
    }
}
