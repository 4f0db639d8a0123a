//! A request exactly as it arrived: what a verifier may look at.

use super::{malformed, Rejection};
use axum::http::{HeaderMap, Method, Uri};

/// Method, raw path and query (still percent-encoded, as on the wire),
/// header lines in arrival order, and the body bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireRequest {
    pub method: String,
    /// The path as sent, e.g. `/v1/p/cloudservers`; `/` when empty.
    pub path: String,
    /// The query as sent, without `?`; empty when there is none.
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl WireRequest {
    /// From a request target in origin form (`/p?q`) or absolute form
    /// (`http://host/p?q`, as a proxy receives it).
    pub fn from_target(
        method: &str,
        target: &str,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> WireRequest {
        let origin = match target.split_once("://") {
            Some((_, rest)) => match rest.find(['/', '?']) {
                Some(i) => &rest[i..],
                None => "",
            },
            None => target,
        };
        let (path, query) = origin.split_once('?').unwrap_or((origin, ""));
        WireRequest {
            method: method.to_string(),
            path: if path.is_empty() { "/" } else { path }.to_string(),
            query: query.to_string(),
            headers,
            body,
        }
    }

    /// From what an axum handler receives. Header values that are not
    /// UTF-8 are kept lossily (they then cannot match any signature).
    pub fn from_http(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> WireRequest {
        let headers = headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let target = uri.path_and_query().map(|pq| pq.as_str()).unwrap_or("/");
        WireRequest::from_target(method.as_str(), target, headers, body.to_vec())
    }

    /// Every value of a header, by case-insensitive name.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The value of a header that may arrive at most once.
    pub fn only_header<'a>(&'a self, name: &'a str) -> Result<Option<&'a str>, Rejection> {
        let mut values = self.header_values(name);
        let first = values.next();
        if values.next().is_some() {
            return Err(malformed(format!("header `{name}` arrived more than once")));
        }
        Ok(first)
    }

    /// Lower-case names of the headers that arrived.
    pub fn header_names(&self) -> impl Iterator<Item = String> + '_ {
        self.headers.iter().map(|(n, _)| n.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let r = WireRequest::from_target("GET", "http://h:1/a/b?x=1&y", vec![], vec![]);
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/a/b", "x=1&y"));
        let r = WireRequest::from_target("POST", "http://h/?a=b", vec![], vec![]);
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/", "a=b"));
        let r = WireRequest::from_target("POST", "http://h", vec![], vec![]);
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/", ""));
        let r = WireRequest::from_target("GET", "/v1/x", vec![], vec![]);
        assert_eq!((r.path.as_str(), r.query.as_str()), ("/v1/x", ""));
    }

    #[test]
    fn repeated_headers_are_refused() {
        let r = WireRequest {
            headers: vec![("X-A".into(), "1".into()), ("x-a".into(), "2".into())],
            ..WireRequest::default()
        };
        assert!(r.only_header("x-a").is_err());
        assert_eq!(r.only_header("x-b"), Ok(None));
    }
}
