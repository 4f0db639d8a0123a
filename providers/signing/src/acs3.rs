//! Alibaba Cloud V3 signature, `ACS3-HMAC-SHA256`, as sent by the current
//! official SDKs (Tea/Darabonba `alibabacloud_*`).
//!
//! For RPC-style APIs (ECS, VPC ...) the request is `POST /` with the API
//! parameters in the query string, an empty body, and the headers
//! `x-acs-action` and `x-acs-version` (plus, like the SDK, `accept`,
//! `user-agent` ...). **Every** header in [`Request::headers`] is signed, as
//! are `host` and the three headers this signer adds (`x-acs-date`,
//! `x-acs-signature-nonce`, `x-acs-content-sha256`).
//!
//! ```text
//! CanonicalRequest = METHOD \n encoded path \n sorted query \n
//!                    name:trimmed value \n ... \n signed;names \n hex(sha256(body))
//! StringToSign     = "ACS3-HMAC-SHA256" \n hex(sha256(CanonicalRequest))
//! Signature        = hex(HMAC-SHA256(secret, StringToSign))
//! ```

use crate::canon::{
    canonical_query, canonical_request, iso8601_utc, reject_reserved, sha256_hex, CanonicalHeaders,
};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

pub const ALGORITHM: &str = "ACS3-HMAC-SHA256";

/// Signs `req` at `time` with `nonce` (must be unique per request within the
/// gateway's replay window; see [`crate::new_nonce`]). Returns `x-acs-date`,
/// `x-acs-signature-nonce`, `x-acs-content-sha256` and `Authorization`.
pub fn sign(
    req: &Request,
    creds: &Credentials,
    time: OffsetDateTime,
    nonce: &str,
) -> Result<Signed, SignError> {
    reject_reserved(
        &req.headers,
        &[
            "host",
            "authorization",
            "x-acs-date",
            "x-acs-signature-nonce",
            "x-acs-content-sha256",
        ],
    )?;
    let date = iso8601_utc(time)?;
    let content_sha256 = sha256_hex(&req.body);
    let added = [
        ("x-acs-date", date.as_str()),
        ("x-acs-signature-nonce", nonce),
        ("x-acs-content-sha256", content_sha256.as_str()),
    ];
    let headers = CanonicalHeaders::new(
        req.headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .chain([("host", req.host.as_str())])
            .chain(added),
    );
    let signed_names = headers.signed_names();

    let canonical_request = canonical_request(
        &req.method,
        &req.encoded_path(),
        &canonical_query(&req.query),
        &headers.block(),
        &signed_names,
        &content_sha256,
    );
    let authorization = |signature: &str| {
        format!(
            "{ALGORITHM} Credential={},SignedHeaders={signed_names},Signature={signature}",
            creds.access_key_id()
        )
    };
    let key = creds.secret().as_bytes();
    let head = [ALGORITHM];
    Ok(Signed::sha256(
        &head,
        canonical_request,
        key,
        &added,
        authorization,
    ))
}

/// [`sign`] at the current time with a fresh random nonce.
pub fn sign_now(req: &Request, creds: &Credentials) -> Result<Signed, SignError> {
    sign(req, creds, crate::now(), &crate::new_nonce())
}
