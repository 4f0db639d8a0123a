//! Tencent Cloud COS (XML API) request signature, `q-sign-algorithm=sha1`
//! (COS "Request Signature"), as the official `cos-python-sdk-v5` sends it.
//!
//! ```text
//! KeyTime     = <start>;<end>                     (Unix seconds; q-sign-time = q-key-time)
//! SignKey     = hex(HMAC-SHA1(secret, KeyTime))
//! HttpString  = lower(method) \n path \n HttpParameters \n HttpHeaders \n
//! StringToSign = "sha1" \n KeyTime \n hex(SHA1(HttpString)) \n
//! Signature   = hex(HMAC-SHA1(SignKey, StringToSign))     (the key is the hex text)
//! Authorization: q-sign-algorithm=sha1&q-ak=<id>&q-sign-time=<KeyTime>&q-key-time=<KeyTime>
//!                &q-header-list=<names>&q-url-param-list=<names>&q-signature=<sig>
//! ```
//!
//! * path: the decoded path (`/` for bucket operations, `/<key>` for objects).
//! * HttpParameters: every query parameter, name percent-encoded then
//!   lower-cased (so an escape becomes `%2f`), value percent-encoded,
//!   sorted, `name=value` joined by `&` (`tagging=` for an empty value).
//!   A name sent twice is refused ([`SignError::RepeatedParam`]): the
//!   guide keeps one value per name.
//! * HttpHeaders: `host` and the request's headers that the SDK signs —
//!   those of [`SIGNED_HEADERS`] and every `x-cos-*` / `x-ci-*` one —
//!   encoded like the parameters (values trimmed first; a signed header
//!   sent twice is refused). `Content-Length` is signed when the
//!   caller puts it in [`Request::headers`] (the SDK does for a body); it
//!   must then be the exact length sent.
//!
//! [`Signed::canonical_request`] holds the HttpString.

use crate::canon::{first_repeat, hmac_sha1, percent_encode, reject_reserved, sha1_hex};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

/// Headers signed when present (besides `x-cos-*` and `x-ci-*`).
pub const SIGNED_HEADERS: &[&str] = &[
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-length",
    "content-md5",
    "content-type",
    "expect",
    "expires",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-unmodified-since",
    "origin",
    "range",
    "transfer-encoding",
    "pic-operations",
];

/// The period a signature is valid for: `q-sign-time` and `q-key-time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyTime {
    pub start: OffsetDateTime,
    pub end: OffsetDateTime,
}

impl KeyTime {
    /// What the SDK signs for: from a minute before `now` (clock skew) to
    /// `valid_for_secs` seconds after it.
    pub fn around(now: OffsetDateTime, valid_for_secs: u32) -> KeyTime {
        // Out of range only at the ends of time; `sign` then refuses the period.
        let valid_for = time::Duration::seconds(i64::from(valid_for_secs));
        KeyTime {
            start: now.checked_sub(time::Duration::seconds(60)).unwrap_or(now),
            end: now.checked_add(valid_for).unwrap_or(now),
        }
    }

    fn text(&self) -> Result<String, SignError> {
        let (s, e) = (self.start.unix_timestamp(), self.end.unix_timestamp());
        if s < 0 || e < 0 {
            return Err(SignError::TimeOutOfRange);
        }
        if e <= s {
            return Err(SignError::EmptyValidity);
        }
        Ok(format!("{s};{e}"))
    }
}

/// Signs `req` for `key_time`. Returns `Authorization` only.
pub fn sign(req: &Request, creds: &Credentials, key_time: KeyTime) -> Result<Signed, SignError> {
    reject_reserved(&req.headers, &["authorization", "host"])?;
    let key_time = key_time.text()?;

    let params = encoded_sorted(req.query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if let Some(name) = first_repeat(&params) {
        return Err(SignError::RepeatedParam(name.to_string()));
    }
    let headers = encoded_sorted(
        req.headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .filter(|(n, _)| is_signed_header(n))
            .chain([("host", req.host.as_str())]),
    );
    if let Some(name) = first_repeat(&headers) {
        return Err(SignError::RepeatedHeader(name.to_string()));
    }
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n",
        req.method.to_ascii_lowercase(),
        if req.path.is_empty() { "/" } else { &req.path },
        join_pairs(&params),
        join_pairs(&headers),
    );
    let string_to_sign = format!(
        "sha1\n{key_time}\n{}\n",
        sha1_hex(canonical_request.as_bytes())
    );
    let sign_key = hex::encode(hmac_sha1(creds.secret().as_bytes(), key_time.as_bytes()));
    let signature = hex::encode(hmac_sha1(sign_key.as_bytes(), string_to_sign.as_bytes()));
    let authorization = format!(
        "q-sign-algorithm=sha1&q-ak={}&q-sign-time={key_time}&q-key-time={key_time}\
         &q-header-list={}&q-url-param-list={}&q-signature={signature}",
        creds.access_key_id(),
        names(&headers),
        names(&params),
    );
    Ok(Signed::new(
        &[],
        authorization,
        canonical_request,
        string_to_sign,
        signature,
    ))
}

/// [`sign`] from a minute ago to `valid_for_secs` seconds from now.
pub fn sign_now(
    req: &Request,
    creds: &Credentials,
    valid_for_secs: u32,
) -> Result<Signed, SignError> {
    sign(req, creds, KeyTime::around(crate::now(), valid_for_secs))
}

fn is_signed_header(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    SIGNED_HEADERS.contains(&l.as_str()) || l.starts_with("x-cos-") || l.starts_with("x-ci-")
}

/// Names encoded then lower-cased, values trimmed (as a server reads a
/// header; the SDK's values never have blanks to trim) and encoded, sorted.
/// The guide
/// defines one value per name (the SDK passes dictionaries): a repeated
/// name is refused by the caller.
fn encoded_sorted<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = pairs
        .map(|(k, v)| {
            (
                percent_encode(k).to_ascii_lowercase(),
                percent_encode(v.trim()),
            )
        })
        .collect();
    out.sort();
    out
}

fn join_pairs(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

fn names(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(s).unwrap()
    }

    #[test]
    fn http_string_and_lists() {
        let r = Request::new(
            "PUT",
            "b-1250000000.cos.ap-guangzhou.myqcloud.com",
            "/k/a b",
        )
        .with_query("Prefix", "x/y")
        .with_query("tagging", "")
        .with_header("Content-Type", "application/xml")
        .with_header("User-Agent", "not signed")
        .with_header("x-cos-acl", "private");
        let kt = KeyTime::around(at(1710000000), 10000);
        let s = sign(&r, &Credentials::new("AKID", "sk"), kt).unwrap();
        assert_eq!(
            s.canonical_request,
            "put\n/k/a b\nprefix=x%2Fy&tagging=\n\
             content-type=application%2Fxml&host=b-1250000000.cos.ap-guangzhou.myqcloud.com&x-cos-acl=private\n"
        );
        assert!(s
            .string_to_sign
            .starts_with("sha1\n1709999940;1710010000\n"));
        assert!(s.authorization().starts_with(
            "q-sign-algorithm=sha1&q-ak=AKID&q-sign-time=1709999940;1710010000&q-key-time=1709999940;1710010000\
             &q-header-list=content-type;host;x-cos-acl&q-url-param-list=prefix;tagging&q-signature="
        ));
        assert_eq!(s.signature.len(), 40);
    }

    #[test]
    fn repeats_are_refused() {
        let kt = KeyTime::around(at(1710000000), 60);
        let c = Credentials::new("a", "b");
        let get = || Request::new("GET", "h", "/");
        for (r, refused) in [
            (
                get().with_query("prefix", "a").with_query("Prefix", "b"),
                SignError::RepeatedParam("prefix".into()),
            ),
            (
                get()
                    .with_header("x-cos-meta-a", "1")
                    .with_header("X-Cos-Meta-A", "2"),
                SignError::RepeatedHeader("x-cos-meta-a".into()),
            ),
        ] {
            assert_eq!(sign(&r, &c, kt), Err(refused));
        }
        // Unsigned headers may repeat.
        let r = get().with_header("Accept", "a").with_header("Accept", "b");
        assert!(sign(&r, &c, kt).is_ok());
    }

    #[test]
    fn bad_periods_are_refused() {
        let r = Request::new("GET", "h", "/");
        let c = Credentials::new("a", "b");
        let backwards = KeyTime {
            start: at(10),
            end: at(10),
        };
        assert_eq!(sign(&r, &c, backwards), Err(SignError::EmptyValidity));
        let before_epoch = KeyTime::around(at(0), 5);
        assert_eq!(sign(&r, &c, before_epoch), Err(SignError::TimeOutOfRange));
    }
}
