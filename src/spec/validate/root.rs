//! The spec's top-level values besides clusters, buckets, `budget` and
//! `state`: `project`, `variables` and `endpoints`.

use super::super::yaml::{shorten, Node};
use super::{fields, list, real_clouds, suggest, Validator};
use serde_json::{Map, Value};

impl Validator {
    pub(super) fn project(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a project name")?;
        let valid = text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && text.len() <= 64;
        if text.is_empty() {
            self.error(
                node.start,
                path,
                "the project name is empty",
                "write e.g. `project: llm-research`; it tags every resource and names the state",
            );
            return None;
        }
        if !valid {
            self.error(
                node.start,
                path,
                format!("invalid project name `{}`", shorten(&text)),
                "use up to 64 letters, digits, `-`, `_` and `.`, starting with a letter or digit; it tags every resource and names the state file",
            );
            return None;
        }
        Some(Value::String(text))
    }

    pub(super) fn variables(&mut self, node: &Node, path: &str) -> Option<Value> {
        let entries = self.expect(
            node.map(),
            node,
            path,
            "`variables` as a mapping",
            "write `variables:` then `NAME: { default: VALUE }` entries",
        )?;
        self.each_entry(entries, path, |v, e, p| {
            if !super::super::vars::valid_name(&e.key) {
                v.error(
                    e.key_pos,
                    p,
                    format!("invalid variable name `{}`", shorten(&e.key)),
                    "variable names are letters, digits and `_`, starting with a letter or `_`",
                );
                return None;
            }
            if e.value.is_null() {
                return Some(Value::Object(Map::new()));
            }
            v.object(&e.value, p, e.key_pos, &fields::VARIABLE)
                .map(Value::Object)
        })
    }

    /// `endpoints: { CLOUD: URL }`.
    pub(super) fn endpoints(&mut self, node: &Node, path: &str) -> Option<Value> {
        let clouds = real_clouds();
        let entries = self.expect(
            node.map(),
            node,
            path,
            "`endpoints` as a mapping",
            "write `endpoints: { aws: https://ec2.us-east-1.amazonaws.com }`",
        )?;
        self.each_entry(entries, path, |v, e, p| {
            if !clouds.contains(&e.key.as_str()) {
                let hint = match suggest(&e.key, clouds.iter().copied()) {
                    Some(s) => format!(
                        "did you mean `{s}`? Endpoints are per cloud: {}",
                        list(&clouds)
                    ),
                    None => format!("endpoints are per cloud: {}", list(&clouds)),
                };
                v.error(
                    e.key_pos,
                    p,
                    format!("unknown cloud `{}` in `endpoints`", shorten(&e.key)),
                    hint,
                );
                return None;
            }
            let url = v.scalar_text(&e.value, p, "a URL")?;
            if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
                v.error(
                    e.value.start,
                    p,
                    format!("`{}` is not an http(s) URL", shorten(&url)),
                    "write the endpoint's base URL, e.g. `https://ec2.us-east-1.amazonaws.com` or `http://127.0.0.1:5555`",
                );
                return None;
            }
            Some(Value::String(url))
        })
    }
}
