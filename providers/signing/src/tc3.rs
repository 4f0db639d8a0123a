//! Tencent Cloud API 3.0, `TC3-HMAC-SHA256`.
//!
//! Like the official SDKs, signs exactly `content-type;host`. The caller sets
//! `Content-Type` (`application/json` for POST JSON; the SDK sends it without
//! a charset) and the `X-TC-Action` / `X-TC-Version` / `X-TC-Region` headers,
//! which are sent but not signed. The canonical query string is the query
//! exactly as sent ([`Request::encoded_query`], in order; empty for POST), and
//! the body is hashed as given: never re-serialise it after signing.
//!
//! Key derivation: `HMAC("TC3" + secret, date) → service → "tc3_request"`,
//! where `date` is the UTC date of the timestamp.

use crate::canon::{
    canonical_request, derive_key, encode_query_in_order, find_header, reject_reserved, sha256_hex,
    utc_date,
};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

pub const ALGORITHM: &str = "TC3-HMAC-SHA256";
const SIGNED_HEADERS: &str = "content-type;host";

/// Signs `req` for `service` (the first label of the endpoint, e.g. `cvm`
/// for `cvm.tencentcloudapi.com`) at `time` (whole seconds are used).
/// Returns `X-TC-Timestamp` and `Authorization`.
pub fn sign(
    req: &Request,
    creds: &Credentials,
    service: &str,
    time: OffsetDateTime,
) -> Result<Signed, SignError> {
    reject_reserved(&req.headers, &["host", "authorization", "x-tc-timestamp"])?;
    let content_type = find_header(&req.headers, "content-type")
        .ok_or(SignError::MissingHeader("Content-Type"))?;
    let timestamp = time.unix_timestamp();
    let date = utc_date(time)?;

    let canonical_request = canonical_request(
        &req.method,
        &req.encoded_path(),
        &encode_query_in_order(&req.query),
        &format!("content-type:{}\nhost:{}\n", content_type.trim(), req.host),
        SIGNED_HEADERS,
        &sha256_hex(&req.body),
    );
    let scope = format!("{date}/{service}/tc3_request");
    let timestamp = timestamp.to_string();
    let authorization = |signature: &str| {
        format!(
            "{ALGORITHM} Credential={}/{scope}, SignedHeaders={SIGNED_HEADERS}, Signature={signature}",
            creds.access_key_id()
        )
    };
    let key = derive_key("TC3", creds.secret(), &[&date, service, "tc3_request"]);
    let head = [ALGORITHM, &timestamp, &scope];
    let own = [("X-TC-Timestamp", timestamp.as_str())];
    Ok(Signed::sha256(
        &head,
        canonical_request,
        &key,
        &own,
        authorization,
    ))
}

/// [`sign`] at the current time.
pub fn sign_now(req: &Request, creds: &Credentials, service: &str) -> Result<Signed, SignError> {
    sign(req, creds, service, crate::now())
}
