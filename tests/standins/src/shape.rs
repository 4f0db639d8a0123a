//! The shape of a request, to compare what a provider sends with what the
//! official SDK sends for the same action: method, path with ids replaced,
//! where the parameters go, content type, which headers are signed, the
//! action and version headers, and the JSON body's structure. Timestamps,
//! nonces, ids and parameter values are left out.

use crate::verify::WireRequest;
use serde_json::Value;
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub method: String,
    /// `/v1/{id}/cloudservers/detail`: long segments with digits are ids.
    pub path: String,
    /// Decoded query parameter names.
    pub query_names: BTreeSet<String>,
    /// Media type without parameters (`application/json`), if sent.
    pub media_type: Option<String>,
    /// Lower-case names from the Authorization's `SignedHeaders`.
    pub signed_headers: BTreeSet<String>,
    /// `x-acs-action`/`X-TC-Action` and `x-acs-version`/`X-TC-Version`.
    pub action: Option<String>,
    pub version: Option<String>,
    /// The body as JSON with every leaf replaced by its type, if it is JSON.
    pub body: Option<Value>,
}

impl Shape {
    pub fn of(req: &WireRequest) -> Shape {
        let header = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| req.header_values(n).next())
                .map(str::to_string)
        };
        let signed_headers = header(&["authorization"])
            .and_then(|a| {
                a.split([',', ' '])
                    .find_map(|f| f.strip_prefix("SignedHeaders=").map(str::to_string))
            })
            .map(|l| l.split(';').map(str::to_string).collect())
            .unwrap_or_default();
        let path = req
            .path
            .split('/')
            .map(|seg| {
                if seg.len() > 16 && seg.bytes().any(|b| b.is_ascii_digit()) {
                    "{id}"
                } else {
                    seg
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        Shape {
            method: req.method.clone(),
            path,
            query_names: req
                .query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').map_or(p, |(k, _)| k).to_string())
                .collect(),
            media_type: header(&["content-type"]).map(|t| {
                t.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            }),
            signed_headers,
            action: header(&["x-acs-action", "x-tc-action"]),
            version: header(&["x-acs-version", "x-tc-version"]),
            body: serde_json::from_slice::<Value>(&req.body)
                .ok()
                .map(|v| leaf_types(&v)),
        }
    }

    /// How `self` (gpuform's request) differs from `sdk`. Parameters and
    /// body keys that only one side sends are not differences (each call
    /// sends the options it needs); a key both send with another type is.
    pub fn differences(&self, sdk: &Shape) -> Vec<String> {
        let mut out = Vec::new();
        let mut same = |what: &str, ours: String, theirs: String| {
            if ours != theirs {
                out.push(format!("{what}: gpuform {ours}, SDK {theirs}"));
            }
        };
        same("method", self.method.clone(), sdk.method.clone());
        same("path", self.path.clone(), sdk.path.clone());
        same(
            "content type",
            format!("{:?}", self.media_type),
            format!("{:?}", sdk.media_type),
        );
        same(
            "action",
            format!("{:?}", self.action),
            format!("{:?}", sdk.action),
        );
        same(
            "version",
            format!("{:?}", self.version),
            format!("{:?}", sdk.version),
        );
        same(
            "query",
            (if self.query_names.is_empty() {
                "none"
            } else {
                "parameters"
            })
            .to_string(),
            (if sdk.query_names.is_empty() {
                "none"
            } else {
                "parameters"
            })
            .to_string(),
        );
        same(
            "body",
            (if self.body.is_some() {
                "JSON"
            } else {
                "not JSON"
            })
            .to_string(),
            (if sdk.body.is_some() {
                "JSON"
            } else {
                "not JSON"
            })
            .to_string(),
        );
        for h in self
            .signed_headers
            .symmetric_difference(&sdk.signed_headers)
        {
            let who = if self.signed_headers.contains(h) {
                "only gpuform"
            } else {
                "only the SDK"
            };
            out.push(format!("signed header {h}: {who}"));
        }
        if let (Some(a), Some(b)) = (&self.body, &sdk.body) {
            body_differences("body", a, b, &mut out);
        }
        out
    }
}

fn leaf_types(v: &Value) -> Value {
    match v {
        Value::Null => Value::from("null"),
        Value::Bool(_) => Value::from("bool"),
        Value::Number(_) => Value::from("number"),
        Value::String(_) => Value::from("string"),
        Value::Array(items) => Value::Array(items.iter().take(1).map(leaf_types).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), leaf_types(v))).collect())
        }
    }
}

fn kind(v: &Value) -> String {
    match v {
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        leaf => leaf.as_str().unwrap_or_default().to_string(),
    }
}

fn body_differences(at: &str, ours: &Value, sdk: &Value, out: &mut Vec<String>) {
    match (ours, sdk) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                if let Some(vb) = b.get(k) {
                    body_differences(&format!("{at}.{k}"), va, vb, out);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if let (Some(x), Some(y)) = (a.first(), b.first()) {
                body_differences(&format!("{at}[]"), x, y, out);
            }
        }
        _ if kind(ours) != kind(sdk) => {
            out.push(format!(
                "{at}: gpuform sends {}, the SDK {}",
                kind(ours),
                kind(sdk)
            ));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_differences() {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        let a = WireRequest::from_target(
            "POST",
            "/v1/0b5d2c3a4e6f47a8b9c0d1e2f3a4b5c6/cloudservers",
            vec![
                h("Content-Type", "application/json;charset=utf-8"),
                h(
                    "Authorization",
                    "SDK-HMAC-SHA256 Access=a, SignedHeaders=content-type;host, Signature=s",
                ),
            ],
            br#"{"server": {"count": 1, "name": "x", "nics": [{"subnet_id": "s"}]}}"#.to_vec(),
        );
        let mut b = a.clone();
        b.headers[0].1 = "application/json".into();
        b.body =
            br#"{"server": {"count": "1", "nics": [{"subnet_id": "t", "ip": "1"}], "extra": 1}}"#
                .to_vec();
        b.headers[1].1 =
            "SDK-HMAC-SHA256 Access=a, SignedHeaders=host;x-sdk-date, Signature=s".into();
        let sa = Shape::of(&a);
        assert_eq!(sa.path, "/v1/{id}/cloudservers");
        assert_eq!(sa.media_type.as_deref(), Some("application/json"));
        assert_eq!(
            sa.differences(&Shape::of(&b)),
            vec![
                "signed header content-type: only gpuform".to_string(),
                "signed header x-sdk-date: only the SDK".to_string(),
                "body.server.count: gpuform sends number, the SDK string".to_string(),
            ]
        );
        assert!(sa.differences(&sa).is_empty());
    }
}
