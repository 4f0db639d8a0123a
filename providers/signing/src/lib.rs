//! Request signing for the Chinese clouds, checked byte for byte against the
//! vendors' published examples and against requests recorded from their
//! official Python SDKs (see `tests/`).
//!
//! | module | scheme | used by |
//! | --- | --- | --- |
//! | [`tc3`] | `TC3-HMAC-SHA256` | Tencent Cloud API 3.0 |
//! | [`acs3`] | `ACS3-HMAC-SHA256` (V3) | Alibaba Cloud, current SDKs |
//! | [`aliyun_rpc`] | RPC `HMAC-SHA1`, SignatureVersion 1.0 | Alibaba Cloud, legacy |
//! | [`huawei`] | `SDK-HMAC-SHA256` (APIG AK/SK) | Huawei Cloud |
//! | [`oss4`] | `OSS4-HMAC-SHA256` (OSS V4) | Alibaba Cloud OSS |
//! | [`oss1`] | `OSS AccessKeyId:Signature` (OSS V1, HMAC-SHA1) | Alibaba Cloud OSS, legacy |
//! | [`cos`] | `q-sign-algorithm=sha1` | Tencent Cloud COS (XML API) |
//! | [`obs`] | `OBS AccessKeyID:Signature` (HMAC-SHA1) | Huawei Cloud OBS |
//!
//! A signer is a pure function of a [`Request`], [`Credentials`] and the
//! time (plus a nonce for Alibaba; the region and the virtual-hosted bucket
//! for object storage): no clock reads, no randomness, no I/O.
//! It returns the headers to add ([`Signed`]); the caller sends the request
//! with exactly the method, host, [`Request::encoded_path`],
//! [`Request::encoded_query`], headers and body bytes that were signed.
//! Each scheme also has a `sign_now` that fills in the current time (and a
//! fresh nonce) for production use.
//!
//! Steps the schemes share are written once: encodings, the canonical
//! request of the SHA-256 schemes and their key chains in [`canon`], their
//! string to sign and signature in `Signed::sha256`, and the one flow of
//! OSS V1 and OBS (S3 signature V2) in [`s3v2`], whose `Dialect` values
//! `oss1::OSS_V1` and `obs::OBS` sign.

use std::fmt;

pub mod acs3;
pub mod aliyun_rpc;
pub mod canon;
pub mod cos;
pub mod huawei;
pub mod obs;
pub mod oss1;
pub mod oss4;
pub mod s3v2;
pub mod tc3;

pub use time::OffsetDateTime;

/// An access key pair. `Debug` never shows the secret, and there is no
/// `Display`; the secret is only readable inside this crate.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    access_key_id: String,
    secret: String,
}

impl Credentials {
    pub fn new(access_key_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Credentials {
            access_key_id: access_key_id.into(),
            secret: secret.into(),
        }
    }

    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }

    pub(crate) fn secret(&self) -> &str {
        &self.secret
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// A plain description of an HTTP request, before signing.
///
/// * `path` and `query` are **decoded** (`/v1/abc/jobs/x y`, `("Tag.1.Value", "a b")`);
///   the signers and [`Request::encoded_path`] / [`Request::encoded_query`]
///   percent-encode them (RFC 3986).
/// * `host` is the `Host` header value (include `:port` if not the default).
///   Do not also put `Host` into `headers`.
/// * `headers` are the headers the caller sends itself (content-type,
///   x-acs-action, X-TC-Action, X-Project-Id, user-agent ...). Transport
///   headers the HTTP client adds on its own (content-length, accept-encoding,
///   connection) stay out: ACS3 and Huawei sign every header listed here.
/// * `body` is the exact bytes sent; it is hashed, never re-serialised.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub host: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn new(
        method: impl Into<String>,
        host: impl Into<String>,
        path: impl Into<String>,
    ) -> Self {
        Request {
            method: method.into(),
            host: host.into(),
            path: path.into(),
            ..Request::default()
        }
    }

    pub fn with_query(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.query.push((key.into(), value.into()));
        self
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// First value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        canon::find_header(&self.headers, name)
    }

    /// The path as it goes on the wire (RFC 3986, `/` kept; `/` if empty).
    pub fn encoded_path(&self) -> String {
        canon::encode_path(&self.path)
    }

    /// The query string as it goes on the wire, in the given order, without
    /// the leading `?` (empty if there is no query). Use this rather than an
    /// HTTP client's form encoder, which writes spaces as `+`.
    pub fn encoded_query(&self) -> String {
        canon::encode_query_in_order(&self.query)
    }

    /// `path?query` as it goes on the wire.
    pub fn encoded_target(&self) -> String {
        let q = self.encoded_query();
        if q.is_empty() {
            self.encoded_path()
        } else {
            format!("{}?{}", self.encoded_path(), q)
        }
    }
}

/// Shows the body's length only and hides credential-bearing headers: a body
/// may hold an instance password, and a request may be logged.
impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(n, v)| {
                let shown = if is_sensitive_header(n) {
                    "<redacted>"
                } else {
                    v.as_str()
                };
                (n.as_str(), shown)
            })
            .collect();
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("host", &self.host)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("headers", &headers)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .finish()
    }
}

/// Headers whose values are credentials: `Authorization` and STS session
/// tokens (`X-TC-Token`, `x-acs-security-token`, `X-Security-Token`), but not
/// the `X-Client-Token` idempotency key.
fn is_sensitive_header(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l == "authorization" || (l.ends_with("token") && l != "x-client-token")
}

/// What a header signer returns. `headers` are to be added to the request
/// as they are (date / nonce / content hash headers first, `Authorization`
/// last). The other fields are for debugging a rejected signature; none of
/// them contains the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Signed {
    pub headers: Vec<(String, String)>,
    pub canonical_request: String,
    pub string_to_sign: String,
    /// The signature as it appears in `Authorization`: lower-case hex, or
    /// Base64 for OSS V1 and OBS.
    pub signature: String,
}

impl Signed {
    /// What every header signer returns: the headers it sets besides
    /// `Authorization` (`own`, in the order given), then `Authorization`
    /// last, with the texts it signed and the signature.
    pub(crate) fn new(
        own: &[(&str, &str)],
        authorization: String,
        canonical_request: String,
        string_to_sign: String,
        signature: String,
    ) -> Signed {
        let mut headers: Vec<(String, String)> = own
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        headers.push(("Authorization".to_string(), authorization));
        Signed {
            headers,
            canonical_request,
            string_to_sign,
            signature,
        }
    }

    /// The last steps every SHA-256 scheme (ACS3, TC3, Huawei, OSS V4)
    /// shares: `StringToSign` is the lines of `head` (the algorithm, then
    /// Huawei's date, or TC3's and OSS V4's time and credential scope), then
    /// `hex(SHA-256(canonical_request))`, joined with `\n`; it is signed as
    /// `hex(HMAC-SHA256(key, StringToSign))`, and `authorization` writes the
    /// `Authorization` value from that signature.
    pub(crate) fn sha256(
        head: &[&str],
        canonical_request: String,
        key: &[u8],
        own: &[(&str, &str)],
        authorization: impl FnOnce(&str) -> String,
    ) -> Signed {
        let mut string_to_sign = String::new();
        for line in head {
            string_to_sign.push_str(line);
            string_to_sign.push('\n');
        }
        string_to_sign.push_str(&canon::sha256_hex(canonical_request.as_bytes()));
        let signature = hex::encode(canon::hmac_sha256(key, string_to_sign.as_bytes()));
        let authorization = authorization(&signature);
        Signed::new(
            own,
            authorization,
            canonical_request,
            string_to_sign,
            signature,
        )
    }

    /// The `Authorization` header value.
    pub fn authorization(&self) -> &str {
        canon::find_header(&self.headers, "authorization").expect("every signer sets Authorization")
    }

    /// Appends the signature headers to `req`. Sign a clone and keep the
    /// unsigned request if it may be retried: a signer refuses a request
    /// that already carries its headers.
    pub fn apply(&self, req: &mut Request) {
        req.headers.extend(self.headers.iter().cloned());
    }
}

/// Hides credential-bearing headers, including their lines in the canonical
/// request and the string to sign (an STS token is a signed header for ACS3,
/// Huawei and the object-storage schemes; OSS V1 and OBS sign the header
/// lines themselves, COS as `name=value` pairs).
impl fmt::Debug for Signed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, String)> = self
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), redact(n, v)))
            .collect();
        f.debug_struct("Signed")
            .field("headers", &headers)
            .field("canonical_request", &redact_text(&self.canonical_request))
            .field("string_to_sign", &redact_text(&self.string_to_sign))
            .field("signature", &self.signature)
            .finish()
    }
}

fn redact(name: &str, value: &str) -> String {
    if is_sensitive_header(name) {
        "<redacted>".to_string()
    } else {
        value.to_string()
    }
}

/// `name:value` lines and `name=value` pairs (joined by `&`) whose name is
/// a credential-bearing header get their value replaced.
fn redact_text(text: &str) -> String {
    text.split('\n')
        .map(|line| match line.split_once(':') {
            Some((n, v)) if !n.contains(' ') && !n.contains('=') => {
                format!("{n}:{}", redact(n, v))
            }
            _ if line.contains('=') => line
                .split('&')
                .map(|part| match part.split_once('=') {
                    Some((n, v)) => format!("{n}={}", redact(n, v)),
                    None => part.to_string(),
                })
                .collect::<Vec<_>>()
                .join("&"),
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why a request could not be signed. Never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error("request has no {0} header, which this signature scheme requires")]
    MissingHeader(&'static str),
    #[error("request already carries the {0} header, which the signer sets itself (sign the unsigned request)")]
    ReservedHeader(String),
    #[error("request already carries the {0} parameter, which the signer sets itself")]
    ReservedParam(String),
    #[error("signing time must lie between the years 1970 and 9999")]
    TimeOutOfRange,
    #[error(
        "the header {0} is to be signed as an additional header but the request does not carry it"
    )]
    MissingAdditionalHeader(String),
    #[error("the signature's validity period ends before it starts")]
    EmptyValidity,
    #[error("request carries the signed header {0} more than once, which this signature scheme does not define (send it once)")]
    RepeatedHeader(String),
    #[error("request carries the parameter {0} more than once, which this signature scheme does not define (send it once)")]
    RepeatedParam(String),
}

/// Current time, the one clock read of this crate (for the `sign_now` helpers).
pub(crate) fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// A fresh nonce: 32 lower-case hex characters from 128 random bits.
pub fn new_nonce() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_debug_hides_secret() {
        let c = Credentials::new("AKIDEXAMPLE", "s3cr3t-value");
        let d = format!("{c:?}");
        assert!(d.contains("AKIDEXAMPLE"));
        assert!(!d.contains("s3cr3t-value"));
        assert!(d.contains("<redacted>"));
    }

    #[test]
    fn request_debug_hides_body_and_tokens() {
        let r = Request::new("POST", "h", "/")
            .with_header("Authorization", "SIG")
            .with_header("X-TC-Token", "TOKEN")
            .with_header("x-acs-security-token", "TOKEN")
            .with_header("X-Client-Token", "idem-1")
            .with_body(&b"{\"adminPass\":\"hunter2\"}"[..]);
        let d = format!("{r:?}");
        assert!(!d.contains("hunter2") && !d.contains("SIG") && !d.contains("TOKEN"));
        assert!(d.contains("idem-1") && d.contains("<23 bytes>"));
    }

    #[test]
    fn signed_debug_hides_session_tokens() {
        let r = Request::new("POST", "h", "/")
            .with_header("x-acs-security-token", "STS-SECRET-TOKEN")
            .with_header("x-acs-action", "RunInstances");
        let s = acs3::sign(
            &r,
            &Credentials::new("id", "secret"),
            OffsetDateTime::UNIX_EPOCH,
            "n",
        )
        .unwrap();
        assert!(s.canonical_request.contains("STS-SECRET-TOKEN"));
        let d = format!("{s:?}");
        assert!(!d.contains("STS-SECRET-TOKEN"), "{d}");
        assert!(
            d.contains("x-acs-security-token:<redacted>")
                && d.contains("x-acs-action:RunInstances")
        );
    }

    #[test]
    fn object_storage_debug_hides_session_tokens() {
        let t = OffsetDateTime::from_unix_timestamp(1710000000).unwrap();
        let c = Credentials::new("id", "secret");
        let oss = Request::new("PUT", "b.oss-cn-hangzhou.aliyuncs.com", "/")
            .with_header("x-oss-security-token", "STS-SECRET-TOKEN")
            .with_query("acl", "");
        let obs = Request::new("PUT", "b.obs.cn-north-4.myhuaweicloud.com", "/")
            .with_header("x-obs-security-token", "STS-SECRET-TOKEN");
        let cos = Request::new("PUT", "b-1250000000.cos.ap-guangzhou.myqcloud.com", "/")
            .with_header("x-cos-security-token", "STS-SECRET-TOKEN");
        let scope = oss4::Scope {
            region: "cn-hangzhou",
            bucket: Some("b"),
        };
        let key_time = cos::KeyTime::around(t, 600);
        let all = [
            oss4::sign(&oss, &c, scope, &[], t).unwrap(),
            oss1::OSS_V1.sign(&oss, &c, Some("b"), t).unwrap(),
            obs::OBS.sign(&obs, &c, Some("b"), t).unwrap(),
            cos::sign(&cos, &c, key_time).unwrap(),
        ];
        for s in all {
            // The token is signed, so it is in what is shown ...
            let signed = format!("{}{}", s.canonical_request, s.string_to_sign);
            assert!(signed.contains("STS-SECRET-TOKEN"), "{signed}");
            // ... but never in the Debug form.
            let d = format!("{s:?}");
            assert!(!d.contains("STS-SECRET-TOKEN"), "{d}");
            assert!(
                d.contains("security-token") && d.contains("<redacted>"),
                "{d}"
            );
        }
    }

    #[test]
    fn wire_forms() {
        let r = Request::new("GET", "h", "/v1/p/jobs/a b")
            .with_query("name", "x y*")
            .with_query("limit", "2");
        assert_eq!(r.encoded_target(), "/v1/p/jobs/a%20b?name=x%20y%2A&limit=2");
        assert_eq!(Request::new("GET", "h", "").encoded_target(), "/");
    }

    #[test]
    fn nonces_differ() {
        let (a, b) = (new_nonce(), new_nonce());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
