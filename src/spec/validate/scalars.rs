//! One value of a kind: a string, a boolean, a count, an amount, one of
//! some names, a text of some shape, a GPU.

use super::super::model::GpuRequest;
use super::super::yaml::{shorten, Kind, Node, Style};
use super::{last_key, list, suggest, Validator};
use serde_json::Value;

/// The text of a scalar that may be typed as a number or a boolean: plain,
/// or quoted only where a variable's value was substituted.
fn typed_text(node: &Node) -> Option<&str> {
    match &node.kind {
        Kind::Scalar {
            text,
            style,
            substituted,
        } if *style == Style::Plain || *substituted => Some(text),
        _ => None,
    }
}

impl Validator {
    /// Any scalar as a string.
    pub(super) fn scalar_text(&mut self, node: &Node, path: &str, what: &str) -> Option<String> {
        if let Some(text) = node.text() {
            return Some(text.to_string());
        }
        self.error(
            node.start,
            path,
            format!("expected {what}, found {}", node.describe()),
            format!("write `{}: VALUE` on one line", last_key(path)),
        );
        None
    }

    /// A scalar whose text passes `ok`; `what` says what is expected. These
    /// values end up in the boot scripts, so only safe characters pass.
    pub(super) fn shaped(
        &mut self,
        node: &Node,
        path: &str,
        ok: fn(&str) -> bool,
        what: &str,
    ) -> Option<Value> {
        let text = self.scalar_text(node, path, what)?;
        if ok(&text) {
            return Some(Value::String(text));
        }
        self.error(
            node.start,
            path,
            format!("`{}` is not {what}", shorten(&text)),
            format!("write {what}"),
        );
        None
    }

    /// One of `allowed`; `what` names them in errors (`unknown {what} …`).
    pub(super) fn choice(
        &mut self,
        node: &Node,
        path: &str,
        allowed: &[&str],
        what: &str,
    ) -> Option<Value> {
        let text = self.scalar_text(node, path, &format!("a {what}"))?;
        if allowed.contains(&text.as_str()) {
            return Some(Value::String(text));
        }
        let hint = match suggest(&text, allowed.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? Expected one of {}", list(allowed)),
            None => format!("expected one of {}", list(allowed)),
        };
        self.error(
            node.start,
            path,
            format!("unknown {what} `{}`", shorten(&text)),
            hint,
        );
        None
    }

    /// `true` or `false`, unquoted (or from a variable).
    pub(super) fn boolean(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = last_key(path);
        match typed_text(node).map(str::trim) {
            Some("true") => return Some(Value::Bool(true)),
            Some("false") => return Some(Value::Bool(false)),
            _ => {}
        }
        self.error(
            node.start,
            path,
            format!(
                "expected `true` or `false` for `{key}`, found {}",
                node.describe()
            ),
            format!("write `{key}: true` or `{key}: false`, without quotes"),
        );
        None
    }

    /// A size in GB > 0 (an estimate: fractions are fine).
    pub(super) fn size_gb(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = last_key(path);
        let parsed = typed_text(node)
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|f| f.is_finite());
        match parsed {
            Some(f) if f > 0.0 => serde_json::Number::from_f64(f).map(Value::Number),
            _ => {
                self.error(
                    node.start,
                    path,
                    format!(
                        "expected a size in GB greater than 0 for `{key}`, found {}",
                        node.describe()
                    ),
                    format!("write the data you expect to store, e.g. `{key}: 500`"),
                );
                None
            }
        }
    }

    pub(super) fn string(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.scalar_text(node, path, "a string").map(Value::String)
    }

    pub(super) fn nonempty(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a string")?;
        if text.trim().is_empty() {
            self.error(
                node.start,
                path,
                "expected a non-empty string",
                format!("give `{}` a value or remove the key", last_key(path)),
            );
            return None;
        }
        Some(Value::String(text))
    }

    /// A duration such as `30m`, `1h`, `2d`.
    pub(super) fn duration(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.shaped(
            node,
            path,
            |t| humantime::parse_duration(t.trim()).is_ok_and(|d| !d.is_zero()),
            "a duration like `30m`, `1h` or `2d`",
        )
    }

    /// An integer ≥ 1 (plain, or quoted only when it came from a variable).
    pub(super) fn count(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = last_key(path);
        let Some(text) = typed_text(node) else {
            let (message, hint) = match node.text() {
                Some(text) if text.trim().parse::<i64>().is_ok() => (
                    format!(
                        "expected a whole number ≥ 1, found the string \"{}\"",
                        shorten(text)
                    ),
                    format!("remove the quotes: `{key}: {}`", text.trim()),
                ),
                _ => (
                    format!("expected a whole number ≥ 1, found {}", node.describe()),
                    format!("write e.g. `{key}: 2`"),
                ),
            };
            self.error(node.start, path, message, hint);
            return None;
        };
        let t = text.trim();
        let (message, hint) = match t.parse::<i64>() {
            Ok(n) if n >= 1 && n <= u32::MAX as i64 => return Some(Value::from(n)),
            Ok(n) if n < 1 => (
                format!("`{key}` must be at least 1, found {n}"),
                format!("write e.g. `{key}: 1`; remove the cluster to have none"),
            ),
            Ok(n) => (
                format!("`{key}` is too large: {n}"),
                format!("the largest value is {}", u32::MAX),
            ),
            Err(_) => {
                let found = if t.is_empty() {
                    "an empty value".to_string()
                } else {
                    format!("\"{}\"", shorten(t))
                };
                let hint = if t.parse::<f64>().is_ok() {
                    format!("`{key}` is a whole number, e.g. `{key}: 2`")
                } else {
                    format!("write a number, e.g. `{key}: 4`")
                };
                (
                    format!("expected a whole number ≥ 1 for `{key}`, found {found}"),
                    hint,
                )
            }
        };
        self.error(node.start, path, message, hint);
        None
    }

    /// A number > 0 (for money).
    pub(super) fn positive(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = last_key(path);
        let parsed = typed_text(node).and_then(|text| {
            text.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && !text.trim().starts_with('.'))
        });
        match parsed {
            Some(f) if f > 0.0 => serde_json::Number::from_f64(f).map(Value::Number),
            Some(f) => {
                self.error(
                    node.start,
                    path,
                    format!("`{key}` must be greater than 0, found {f}"),
                    "remove the key to set no limit",
                );
                None
            }
            None => {
                self.error(
                    node.start,
                    path,
                    format!(
                        "expected an amount in US dollars for `{key}`, found {}",
                        node.describe()
                    ),
                    format!("write e.g. `{key}: 250`"),
                );
                None
            }
        }
    }

    pub(super) fn gpu(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a GPU as MODEL[:COUNT]")?;
        match GpuRequest::parse(&text) {
            Ok(g) => Some(Value::String(format!("{}:{}", g.model, g.count))),
            Err((m, h)) => {
                self.error(node.start, path, m, h);
                None
            }
        }
    }
}
