//! Huawei Cloud `SDK-HMAC-SHA256` (API Gateway AK/SK signing), as sent by
//! the official `huaweicloudsdk*` SDKs.
//!
//! * Canonical URI: the encoded path, **always** ending in `/`
//!   (`/v1/{project_id}/cloudservers` → `/v1/{project_id}/cloudservers/`);
//!   the request itself goes out without the added slash.
//! * Signed headers: `host`, `x-sdk-date` and every header of
//!   [`Request::headers`] whose name has no `_` — so `X-Project-Id`,
//!   `X-Client-Token` (idempotency) and `User-Agent` are signed if sent.
//! * Payload: `hex(sha256(body))`, or the value of an `X-Sdk-Content-Sha256`
//!   header if the caller sent one (`UNSIGNED-PAYLOAD`).
//!
//! ```text
//! StringToSign = "SDK-HMAC-SHA256" \n X-Sdk-Date \n hex(sha256(CanonicalRequest))
//! Signature    = hex(HMAC-SHA256(secret, StringToSign))
//! ```

use crate::canon::{
    canonical_query, canonical_request, find_header, iso8601_basic_utc, reject_reserved,
    sha256_hex, CanonicalHeaders,
};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

pub const ALGORITHM: &str = "SDK-HMAC-SHA256";

/// Signs `req` at `time`. Returns `X-Sdk-Date` and `Authorization`.
pub fn sign(req: &Request, creds: &Credentials, time: OffsetDateTime) -> Result<Signed, SignError> {
    reject_reserved(&req.headers, &["host", "authorization", "x-sdk-date"])?;
    let date = iso8601_basic_utc(time)?;
    let headers = CanonicalHeaders::new(
        req.headers
            .iter()
            .filter(|(n, _)| !n.contains('_'))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .chain([("host", req.host.as_str()), ("x-sdk-date", date.as_str())]),
    );
    let signed_names = headers.signed_names();

    let mut uri = req.encoded_path();
    if !uri.ends_with('/') {
        uri.push('/');
    }
    let payload_hash = match find_header(&req.headers, "x-sdk-content-sha256") {
        Some(v) if !req.body.is_empty() => v.trim().to_string(),
        _ => sha256_hex(&req.body),
    };
    let canonical_request = canonical_request(
        &req.method,
        &uri,
        &canonical_query(&req.query),
        &headers.block(),
        &signed_names,
        &payload_hash,
    );
    let authorization = |signature: &str| {
        format!(
            "{ALGORITHM} Access={}, SignedHeaders={signed_names}, Signature={signature}",
            creds.access_key_id()
        )
    };
    let key = creds.secret().as_bytes();
    let own = [("X-Sdk-Date", date.as_str())];
    Ok(Signed::sha256(
        &[ALGORITHM, &date],
        canonical_request,
        key,
        &own,
        authorization,
    ))
}

/// [`sign`] at the current time.
pub fn sign_now(req: &Request, creds: &Credentials) -> Result<Signed, SignError> {
    sign(req, creds, crate::now())
}
