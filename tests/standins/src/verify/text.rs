//! Percent-decoding what arrived and RFC 3986 encoding for canonical forms.
//!
//! All three vendors' guides ask for the same encoding: every byte of the
//! UTF-8 form becomes `%XY` (upper-case hex) except the unreserved
//! characters `A-Z a-z 0-9 - _ . ~`; so a space is `%20`, never `+`.

/// `%XY` → byte; with `plus_is_space`, `+` → space (form encoding, which
/// Alibaba's Tea SDK uses on the wire). `None` if an escape is broken or the
/// result is not UTF-8.
pub fn decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// RFC 3986 encoding of one component (a `/` is escaped too).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A path as received → each segment decoded and re-encoded, `/` kept.
pub fn canonical_path(raw: &str) -> Option<String> {
    let segments: Option<Vec<String>> = raw
        .split('/')
        .map(|seg| decode(seg, false).map(|d| encode(&d)))
        .collect();
    let p = segments?.join("/");
    Some(if p.is_empty() { "/".to_string() } else { p })
}

/// `k=v&k` as received → decoded pairs (a missing `=` means an empty value).
pub fn query_pairs(raw: &str) -> Option<Vec<(String, String)>> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Some((decode(k, true)?, decode(v, true)?))
        })
        .collect()
}

/// Pairs sorted by name, then value (code point order), each side
/// encoded, `k=v` joined with `&`: the sorted canonical query string of
/// ACS3, RPC and Huawei.
pub fn sorted_query(pairs: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = pairs.iter().collect();
    sorted.sort();
    sorted
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_encodes() {
        assert_eq!(decode("a%20b+c%2B", true).unwrap(), "a b c+");
        assert_eq!(decode("a+b", false).unwrap(), "a+b");
        assert_eq!(decode("%E8%AE%AD", true).unwrap(), "训");
        assert!(decode("%zz", true).is_none() && decode("%2", true).is_none());
        assert_eq!(encode("a b*~/:训"), "a%20b%2A~%2F%3A%E8%AE%AD");
    }

    #[test]
    fn paths_and_queries() {
        assert_eq!(canonical_path("/v1/a%7Eb/c d").unwrap(), "/v1/a~b/c%20d");
        assert_eq!(canonical_path("").unwrap(), "/");
        let q = query_pairs("b=2&a=x+y&a=%2A&c").unwrap();
        assert_eq!(sorted_query(&q), "a=%2A&a=x%20y&b=2&c=");
    }
}
