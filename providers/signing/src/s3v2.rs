//! The one signing flow of OSS V1 ([`crate::oss1`]) and OBS
//! ([`crate::obs`]), which both follow Amazon S3's signature version 2:
//!
//! ```text
//! StringToSign = VERB \n Content-MD5 \n Content-Type \n Date \n
//!                CanonicalizedHeaders CanonicalizedResource
//! Signature    = Base64(HMAC-SHA1(secret, StringToSign))
//! Authorization: <VENDOR> <AccessKeyId>:<Signature>
//! ```
//!
//! What differs between the two is a [`Dialect`]: which headers are
//! canonicalized and how, how the resource is written, and what the
//! vendor's own date header does to `Date`.

use base64::Engine as _;

use crate::canon::{find_header, hmac_sha1, http_date, reject_reserved};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

/// What a request that carries the vendor's own date header gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateStandIn {
    /// OSS V1 (as `oss2` does): its value is signed in the Date line, and
    /// the `Date` header is sent all the same.
    SignedAsDate,
    /// OBS: the Date line stays empty (the header is signed among the
    /// vendor's headers) and no `Date` header is sent.
    EmptiesDate,
}

/// One vendor's variant of the scheme: [`crate::oss1::OSS_V1`] or
/// [`crate::obs::OBS`], each signing with [`Dialect::sign`] (or
/// [`Dialect::sign_now`] at the current time).
pub struct Dialect {
    /// The `Authorization` prefix: `OSS`, `OBS`.
    pub vendor: &'static str,
    /// The header that stands in for `Date`: `x-oss-date`, `x-obs-date`.
    pub date_header: &'static str,
    pub date_stand_in: DateStandIn,
    /// The CanonicalizedHeaders block (`name:value\n` lines), or why the
    /// request cannot be signed.
    pub canonical_headers: fn(&Request) -> Result<String, SignError>,
    /// The CanonicalizedResource of a request to `bucket` (`None`: to no bucket).
    pub resource: fn(&Request, Option<&str>) -> String,
}

impl Dialect {
    /// Signs `req`, addressed to `bucket` by its virtual host, at `time`.
    /// Returns `Date` (unless the dialect's stand-in replaces it) and
    /// `Authorization`.
    pub fn sign(
        &self,
        req: &Request,
        creds: &Credentials,
        bucket: Option<&str>,
        time: OffsetDateTime,
    ) -> Result<Signed, SignError> {
        reject_reserved(&req.headers, &["authorization", "date"])?;
        let date = http_date(time)?;
        let (signed_date, send_date) = match find_header(&req.headers, self.date_header) {
            None => (date.as_str(), true),
            Some(v) if self.date_stand_in == DateStandIn::SignedAsDate => (v, true),
            Some(_) => ("", false),
        };
        let canonical_request = format!(
            "{}{}",
            (self.canonical_headers)(req)?,
            (self.resource)(req, bucket)
        );
        let header = |name| find_header(&req.headers, name).unwrap_or("").trim();
        let string_to_sign = format!(
            "{}\n{}\n{}\n{}\n{canonical_request}",
            req.method.to_ascii_uppercase(),
            header("content-md5"),
            header("content-type"),
            signed_date.trim(),
        );
        let signature = base64::engine::general_purpose::STANDARD.encode(hmac_sha1(
            creds.secret().as_bytes(),
            string_to_sign.as_bytes(),
        ));
        let authorization = format!("{} {}:{signature}", self.vendor, creds.access_key_id());
        let own: &[(&str, &str)] = if send_date { &[("Date", &date)] } else { &[] };
        Ok(Signed::new(
            own,
            authorization,
            canonical_request,
            string_to_sign,
            signature,
        ))
    }

    /// [`Dialect::sign`] at the current time.
    pub fn sign_now(
        &self,
        req: &Request,
        creds: &Credentials,
        bucket: Option<&str>,
    ) -> Result<Signed, SignError> {
        self.sign(req, creds, bucket, crate::now())
    }
}
