//! Pieces shared by every signer: RFC 3986 percent-encoding, canonical query
//! strings, canonical paths and headers, hashing/HMAC and timestamp formats.
//!
//! All three vendors agree on the encoding: every byte of the UTF-8 form is
//! escaped as `%XX` (upper-case hex) except the RFC 3986 unreserved set
//! `A-Z a-z 0-9 - _ . ~`. So a space is `%20` (never `+`), `*` is `%2A`, `~`
//! stays `~` and `/` inside a value is `%2F`. Where they differ is *what* is
//! canonicalised (which headers, whether the path gets a trailing `/`), and
//! that stays in the vendor modules.

use hmac::{Hmac, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::SignError;

/// Everything but the RFC 3986 unreserved characters gets escaped.
const RFC3986: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Same, but `/` is kept (path segments stay separated).
const RFC3986_PATH: &AsciiSet = &RFC3986.remove(b'/');

/// Percent-encodes `s` with the RFC 3986 unreserved set (upper-case hex).
pub fn percent_encode(s: &str) -> String {
    utf8_percent_encode(s, RFC3986).to_string()
}

/// Percent-encodes a decoded path, keeping `/` separators.
pub fn encode_path(path: &str) -> String {
    let p = utf8_percent_encode(path, RFC3986_PATH).to_string();
    if p.is_empty() {
        "/".to_string()
    } else {
        p
    }
}

/// `k=v&k=v` in the given order, each side percent-encoded: the wire form.
pub fn encode_query_in_order(pairs: &[(String, String)]) -> String {
    join_pairs(pairs.iter())
}

/// The canonical query string of ACS3, RPC and Huawei: pairs sorted by the
/// *decoded* key, then the decoded value (what the official SDKs do; sorting
/// the encoded forms gives a different order once `/`, `:` or non-ASCII
/// characters appear), then encoded and joined with `&`.
pub fn canonical_query(pairs: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = pairs.iter().collect();
    sorted.sort();
    join_pairs(sorted.into_iter())
}

/// `name=value` pairs as they are (already encoded, or raw where the scheme
/// signs them raw), joined with `&`; a pair whose value is empty is its
/// name alone (no `=`). OSS V4's canonical query and the sub-resources of
/// OSS V1 and OBS are written this way.
pub fn join_bare_names<'a>(pairs: impl IntoIterator<Item = &'a (String, String)>) -> String {
    pairs
        .into_iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The canonical request of the SHA-256 schemes (ACS3, TC3, Huawei,
/// OSS V4), one layout for all four:
/// `METHOD \n uri \n query \n header block \n signed names \n payload hash`,
/// where `header_block` is `name:value\n` lines (so it ends in a newline)
/// and the method is upper-cased.
pub fn canonical_request(
    method: &str,
    uri: &str,
    query: &str,
    header_block: &str,
    signed_names: &str,
    payload_hash: &str,
) -> String {
    format!(
        "{}\n{uri}\n{query}\n{header_block}\n{signed_names}\n{payload_hash}",
        method.to_ascii_uppercase()
    )
}

/// A derived signing key: `HMAC-SHA256(prefix + secret, scope[0])`, then
/// HMAC with each further scope part in turn (TC3: date, service,
/// `tc3_request`; OSS V4: date, region, `oss`, `aliyun_v4_request`).
pub fn derive_key(prefix: &str, secret: &str, scope: &[&str]) -> Vec<u8> {
    scope
        .iter()
        .fold(format!("{prefix}{secret}").into_bytes(), |key, part| {
            hmac_sha256(&key, part.as_bytes())
        })
}

fn join_pairs<'a>(pairs: impl Iterator<Item = &'a (String, String)>) -> String {
    let mut out = String::new();
    for (k, v) in pairs {
        if !out.is_empty() {
            out.push('&');
        }
        out.push_str(&percent_encode(k));
        out.push('=');
        out.push_str(&percent_encode(v));
    }
    out
}

/// A header list canonicalised the way ACS3 and Huawei do it: names
/// lower-cased, values trimmed, repeated names merged (values sorted and
/// joined with `,`), sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalHeaders {
    entries: Vec<(String, String)>,
}

impl CanonicalHeaders {
    pub fn new<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut entries: Vec<(String, Vec<String>)> = Vec::new();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            let value = value.trim().to_string();
            match entries.iter_mut().find(|(n, _)| *n == name) {
                Some((_, values)) => values.push(value),
                None => entries.push((name, vec![value])),
            }
        }
        let mut entries: Vec<(String, String)> = entries
            .into_iter()
            .map(|(n, mut vs)| {
                vs.sort();
                (n, vs.join(","))
            })
            .collect();
        entries.sort();
        CanonicalHeaders { entries }
    }

    /// `name:value\n` for every header (the block ends with a newline).
    pub fn block(&self) -> String {
        self.entries
            .iter()
            .map(|(n, v)| format!("{n}:{v}\n"))
            .collect()
    }

    /// `name;name;...`
    pub fn signed_names(&self) -> String {
        self.entries
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// Finds a header value by case-insensitive name.
pub fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The first name that appears twice in a sorted list of `(name, value)`.
pub fn first_repeat(sorted: &[(String, String)]) -> Option<&str> {
    sorted
        .windows(2)
        .find(|w| w[0].0 == w[1].0)
        .map(|w| w[0].0.as_str())
}

/// Refuses a request that already carries a header the signer sets itself
/// (typically a request signed once and then signed again on retry).
pub fn reject_reserved(headers: &[(String, String)], reserved: &[&str]) -> Result<(), SignError> {
    for (n, _) in headers {
        if reserved.iter().any(|r| n.eq_ignore_ascii_case(r)) {
            return Err(SignError::ReservedHeader(n.clone()));
        }
    }
    Ok(())
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

pub fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

pub fn hmac_sha1(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn utc_fields(t: OffsetDateTime) -> Result<(i32, u8, u8, u8, u8, u8), SignError> {
    let t = t.to_offset(time::UtcOffset::UTC);
    if !(1970..=9999).contains(&t.year()) {
        return Err(SignError::TimeOutOfRange);
    }
    Ok((
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
    ))
}

/// `2023-10-26T10:22:32Z` (UTC, whole seconds): ACS3 `x-acs-date`, RPC `Timestamp`.
pub fn iso8601_utc(t: OffsetDateTime) -> Result<String, SignError> {
    let (y, mo, d, h, mi, s) = utc_fields(t)?;
    Ok(format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"))
}

/// `20191115T033655Z` (UTC, whole seconds): Huawei `X-Sdk-Date`.
pub fn iso8601_basic_utc(t: OffsetDateTime) -> Result<String, SignError> {
    let (y, mo, d, h, mi, s) = utc_fields(t)?;
    Ok(format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z"))
}

/// `Sat, 09 Mar 2024 16:00:01 GMT` (RFC 1123, UTC, English names whatever
/// the locale): the `Date` header OSS V1 and OBS sign.
pub fn http_date(t: OffsetDateTime) -> Result<String, SignError> {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, mo, d, h, mi, s) = utc_fields(t)?;
    let weekday = t
        .to_offset(time::UtcOffset::UTC)
        .weekday()
        .number_days_from_monday();
    Ok(format!(
        "{}, {d:02} {} {y:04} {h:02}:{mi:02}:{s:02} GMT",
        DAYS[usize::from(weekday)],
        MONTHS[usize::from(mo) - 1]
    ))
}

/// `hex(SHA-1(data))`: the COS HttpString digest.
pub fn sha1_hex(data: &[u8]) -> String {
    use sha1::Digest as _;
    hex::encode(sha1::Sha1::digest(data))
}

/// The sub-resource part of an OSS V1 / OBS canonicalized resource: the
/// query pairs whose name `is_subresource` accepts, sorted by name (then
/// value), `name=value` as decoded (not encoded), `name` alone when the
/// value is empty, joined with `&` after a `?`; empty if none.
pub fn subresources(pairs: &[(String, String)], is_subresource: impl Fn(&str) -> bool) -> String {
    let mut picked: Vec<&(String, String)> =
        pairs.iter().filter(|(k, _)| is_subresource(k)).collect();
    if picked.is_empty() {
        return String::new();
    }
    picked.sort();
    format!("?{}", join_bare_names(picked))
}

/// `/bucket/key` (the bucket a virtual-hosted request addresses, then the
/// decoded path), or the path alone for a request to no bucket.
pub fn bucket_resource(bucket: Option<&str>, path: &str) -> String {
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    match bucket {
        Some(b) => format!("/{b}{path}"),
        None => path,
    }
}

/// `2019-02-25` (UTC date): the TC3 credential scope.
pub fn utc_date(t: OffsetDateTime) -> Result<String, SignError> {
    let (y, mo, d, ..) = utc_fields(t)?;
    Ok(format!("{y:04}-{mo:02}-{d:02}"))
}

/// Owned `(name, value)` pairs, as the signers take them, from literals.
#[cfg(test)]
pub(crate) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_rfc3986() {
        for (raw, encoded) in [
            ("a b*c~d-e_f.g", "a%20b%2Ac~d-e_f.g"),
            ("a/b:c+d=e&f", "a%2Fb%3Ac%2Bd%3De%26f"),
            ("训练", "%E8%AE%AD%E7%BB%83"),
            ("%", "%25"),
        ] {
            assert_eq!(percent_encode(raw), encoded);
        }
    }

    #[test]
    fn path_keeps_slashes() {
        assert_eq!(encode_path("/v1/p/a b/"), "/v1/p/a%20b/");
        assert_eq!(encode_path(""), "/");
    }

    #[test]
    fn canonical_query_sorts_decoded_pairs() {
        // '/' (0x2F) sorts after '.' (0x2E) decoded, but "%2F" would sort first.
        let q = pairs(&[("k", "a/b"), ("k", "a.b"), ("a.b", "1"), ("a", "2")]);
        assert_eq!(canonical_query(&q), "a=2&a.b=1&k=a.b&k=a%2Fb");
        assert_eq!(encode_query_in_order(&q), "k=a%2Fb&k=a.b&a.b=1&a=2");
        assert_eq!(canonical_query(&[]), "");
    }

    #[test]
    fn canonical_headers_lowercase_trim_merge_sort() {
        let h = CanonicalHeaders::new([
            ("X-B", " 2 "),
            ("Host", "h"),
            ("x-b", "1"),
            ("Content-Type", "application/json"),
        ]);
        assert_eq!(
            h.block(),
            "content-type:application/json\nhost:h\nx-b:1,2\n"
        );
        assert_eq!(h.signed_names(), "content-type;host;x-b");
    }

    #[test]
    fn hashes_and_macs() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        // RFC 4231 test case 2 / RFC 2202 test case 2
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac_sha1(b"Jefe", b"what do ya want for nothing?")),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
    }

    #[test]
    fn time_formats() {
        let t = OffsetDateTime::from_unix_timestamp(1551113065).unwrap();
        assert_eq!(iso8601_utc(t).unwrap(), "2019-02-25T16:44:25Z");
        assert_eq!(iso8601_basic_utc(t).unwrap(), "20190225T164425Z");
        assert_eq!(utc_date(t).unwrap(), "2019-02-25");
        let off = t.to_offset(time::UtcOffset::from_hms(8, 0, 0).unwrap());
        assert_eq!(iso8601_utc(off).unwrap(), "2019-02-25T16:44:25Z");
        // RFC 1123 examples: a Monday, and a day whose local date is the next one.
        assert_eq!(http_date(t).unwrap(), "Mon, 25 Feb 2019 16:44:25 GMT");
        assert_eq!(http_date(off).unwrap(), "Mon, 25 Feb 2019 16:44:25 GMT");
        let year_end = OffsetDateTime::from_unix_timestamp(1735689599).unwrap();
        assert_eq!(
            http_date(year_end).unwrap(),
            "Tue, 31 Dec 2024 23:59:59 GMT"
        );
        let epoch = OffsetDateTime::UNIX_EPOCH;
        assert_eq!(http_date(epoch).unwrap(), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn resources_and_subresources() {
        let q = pairs(&[("versionId", "v 1"), ("acl", ""), ("prefix", "a/b")]);
        let s = subresources(&q, |k| k == "acl" || k == "versionId");
        assert_eq!(s, "?acl&versionId=v 1");
        assert_eq!(subresources(&q, |_| false), "");
        assert_eq!(bucket_resource(Some("b"), "/"), "/b/");
        assert_eq!(bucket_resource(Some("b"), "/k/x y"), "/b/k/x y");
        assert_eq!(bucket_resource(None, ""), "/");
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }
}
