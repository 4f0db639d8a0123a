//! Helpers shared by the integration tests: reading the SDK recordings in
//! `tests/fixtures/` and turning a recorded request back into signer inputs.

#![allow(dead_code)]

use std::path::PathBuf;

use gpuform_signing::{Credentials, OffsetDateTime};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Fixture {
    pub inputs: serde_json::Value,
    pub recorded_request: Recorded,
    /// The recorder's own stdlib re-computation (canonical request, string to sign).
    pub independent: serde_json::Value,
    /// TC3 and Huawei fixtures: the Authorization header the SDK sent.
    pub sdk_authorization: Option<String>,
    /// Alibaba fixtures: the signature the SDK sent.
    pub sdk_signature: Option<String>,
    #[serde(rename = "match")]
    pub matched: bool,
}

#[derive(Debug, Deserialize)]
pub struct Recorded {
    pub method: String,
    /// Absolute-form request target, as sent to the recording proxy.
    pub target: String,
    /// Header lines in arrival order.
    pub headers: Vec<(String, String)>,
    /// The exact body (UTF-8).
    pub body: String,
}

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Names (without `.json`) of all fixtures starting with `prefix`, sorted.
pub fn fixture_names(prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("tests/fixtures exists")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json") && n.starts_with(prefix))
        .map(|n| n.trim_end_matches(".json").to_string())
        .collect();
    names.sort();
    names
}

pub fn load(name: &str) -> Fixture {
    let path = fixture_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let f: Fixture =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        f.matched,
        "{name}: the recorder's own check did not match the SDK"
    );
    f
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Host from the absolute-form target.
    pub fn host(&self) -> &str {
        let rest = self
            .target
            .split_once("://")
            .expect("absolute-form target")
            .1;
        rest.split(['/', '?']).next().unwrap()
    }

    fn path_and_query(&self) -> (&str, &str) {
        let rest = self.target.split_once("://").unwrap().1;
        let pq = &rest[rest.find('/').unwrap_or(rest.len())..];
        pq.split_once('?').unwrap_or((pq, ""))
    }

    /// Decoded path.
    pub fn path(&self) -> String {
        decode(self.path_and_query().0, false)
    }

    /// Decoded query pairs in wire order (`+` read as a space, as a server does).
    pub fn query(&self) -> Vec<(String, String)> {
        form_pairs(self.path_and_query().1)
    }

    /// Decoded form-encoded body pairs (RPC).
    pub fn body_form(&self) -> Vec<(String, String)> {
        form_pairs(&self.body)
    }

    /// The headers the SDK set, i.e. the recorded ones minus those that its
    /// HTTP library (python-requests / the Tea runtime) adds on its own after
    /// signing (`Accept-Encoding`, `Connection`, `Content-Length`, requests'
    /// default `Accept: */*`) and minus `exclude` (what the signer under test
    /// sets itself, and `Host`, which goes in `Request::host`).
    pub fn sdk_headers(&self, exclude: &[&str]) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter(|(n, v)| {
                let l = n.to_ascii_lowercase();
                let transport = matches!(
                    l.as_str(),
                    "accept-encoding" | "connection" | "content-length"
                ) || (l == "accept" && v == "*/*");
                !transport && !exclude.iter().any(|e| e.eq_ignore_ascii_case(n))
            })
            .cloned()
            .collect()
    }
}

fn form_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k, true), decode(v, true))
        })
        .collect()
}

fn decode(s: &str, plus_is_space: bool) -> String {
    let s = if plus_is_space {
        s.replace('+', " ")
    } else {
        s.to_string()
    };
    percent_encoding::percent_decode_str(&s)
        .decode_utf8()
        .expect("UTF-8")
        .into_owned()
}

/// `2023-10-26T10:22:32Z` or `20191115T033655Z` or a unix timestamp.
pub fn parse_time(v: &serde_json::Value) -> OffsetDateTime {
    if let Some(ts) = v.as_i64() {
        return OffsetDateTime::from_unix_timestamp(ts).unwrap();
    }
    let s = v.as_str().expect("time is a string or a number");
    let rfc3339 = if s.len() == 16 && !s.contains('-') {
        format!(
            "{}-{}-{}T{}:{}:{}Z",
            &s[0..4],
            &s[4..6],
            &s[6..8],
            &s[9..11],
            &s[11..13],
            &s[13..15]
        )
    } else {
        s.to_string()
    };
    OffsetDateTime::parse(&rfc3339, &time::format_description::well_known::Rfc3339).unwrap()
}

/// `ours` against `theirs` (the SDK's, or the recorder's independent
/// computation), named `what` in the error.
pub fn same(what: &str, ours: &str, theirs: &str) -> Result<(), String> {
    if ours == theirs {
        Ok(())
    } else {
        Err(format!(
            "{what} differs\n ours: {ours:?}\n  sdk: {theirs:?}"
        ))
    }
}

/// Every `(what, ours, theirs)` in order; the first that differs is the error.
pub fn all_same(checks: &[(&str, &str, &str)]) -> Result<(), String> {
    checks
        .iter()
        .try_for_each(|(what, ours, theirs)| same(what, ours, theirs))
}

/// What the recorder's own stdlib code computed as `key`.
pub fn independent<'a>(f: &'a Fixture, key: &str) -> &'a str {
    f.independent[key]
        .as_str()
        .unwrap_or_else(|| panic!("the fixture has no independent {key}"))
}

/// The keys the fixture names `id` and `secret` (`access_key_id`,
/// `secret_id`, `ak` ...).
pub fn credentials(f: &Fixture, (id, secret): (&str, &str)) -> Credentials {
    Credentials::new(input(f, id), input(f, secret))
}

pub fn input<'a>(f: &'a Fixture, key: &str) -> &'a str {
    f.inputs[key]
        .as_str()
        .unwrap_or_else(|| panic!("inputs.{key} missing"))
}
