//! Validation: walks the YAML tree against the shape of [`Spec`](super::Spec),
//! collecting every problem (unknown keys, wrong types, bad values) with its
//! position, and builds the JSON value that serde then turns into a `Spec`.
//!
//! Walking the tree ourselves, rather than relying on serde's first error, is
//! what lets one run report many errors, each at its own line and column.
//!
//! - `fields`: the shape, one table of keys per model type; a test holds
//!   them to the schema both ways, for every object it has. Enum values come
//!   from the model's types ([`SpecNames`](super::model::SpecNames)).
//! - `scalars`: one value of a kind (a count, a string, one of some names).
//! - `root`: the spec's top level (`project`, `variables`, `endpoints`).
//! - `cluster`, `capacity`, `kubernetes`, `network`, `tags`, `bucket`,
//!   `state`: the checks of those parts beyond their keys.

mod bucket;
mod capacity;
mod cluster;
mod fields;
mod kubernetes;
mod network;
mod root;
mod scalars;
mod state;
mod tags;

pub use network::{check_cidr, check_ports};

use super::diagnostics::{Diagnostic, Diagnostics};
use super::model::{CloudName, SpecNames};
use super::yaml::{shorten, Entry, Node, Pos};
use fields::{Conv, Table};
use serde_json::{Map, Value};

/// The closest candidate to `name`, if close enough to be a likely typo.
pub(crate) fn suggest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let lower = name.to_lowercase();
    let limit = name.chars().count().div_ceil(3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (strsim::damerau_levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

/// Cluster and bucket names: lowercase letters, digits and `-`, starting with a letter.
pub fn valid_resource_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A suggested valid name for an invalid one (lowercased, `_`/spaces to `-`).
fn fix_name(name: &str) -> String {
    let mut s: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    while s.starts_with(|c: char| !c.is_ascii_lowercase()) && !s.is_empty() {
        s.remove(0);
    }
    if s.is_empty() {
        "my-cluster".to_string()
    } else {
        s
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The last key of a YAML path: `nodes` of `clusters.trainer.nodes`.
fn last_key(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// Names as a message lists them: `` `a`, `b` ``.
fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A cloud as written, if it is one.
fn parse_cloud(text: &str) -> Option<CloudName> {
    serde_json::from_value(Value::from(text)).ok()
}

/// The clouds a bucket may be on: every cloud but `any`.
fn bucket_clouds() -> Vec<&'static str> {
    let any = CloudName::Any.as_str();
    CloudName::NAMES
        .iter()
        .copied()
        .filter(|c| *c != any)
        .collect()
}

/// The clouds gpuform calls (`candidates`, `endpoints`): every cloud but
/// `any` and the sandbox.
fn real_clouds() -> Vec<&'static str> {
    let sandbox = CloudName::Sandbox.as_str();
    bucket_clouds()
        .into_iter()
        .filter(|c| *c != sandbox)
        .collect()
}

/// Walks a parsed spec, collecting diagnostics and building its JSON form.
pub(crate) struct Validator {
    file: String,
    pub diags: Diagnostics,
}

impl Validator {
    pub fn new(file: &str) -> Validator {
        Validator {
            file: file.to_string(),
            diags: Diagnostics::new(),
        }
    }

    fn error(&mut self, pos: Pos, path: &str, message: impl Into<String>, hint: impl Into<String>) {
        self.diags.push(
            Diagnostic::new(&self.file, message)
                .at(pos.line, pos.col)
                .path(path)
                .hint(hint),
        );
    }

    /// `found` (a part of `node`: its items, its entries), or an error
    /// `expected {expected}, found …` when it is not there.
    fn expect<'n, T: ?Sized>(
        &mut self,
        found: Option<&'n T>,
        node: &Node,
        path: &str,
        expected: &str,
        hint: impl Into<String>,
    ) -> Option<&'n T> {
        if found.is_none() {
            self.error(
                node.start,
                path,
                format!("expected {expected}, found {}", node.describe()),
                hint,
            );
        }
        found
    }

    /// Each item of a list through `check`, at `path[i]`: every item is
    /// checked, and the list is `None` if any failed.
    fn each_item(
        &mut self,
        items: &[Node],
        path: &str,
        mut check: impl FnMut(&mut Self, &Node, &str) -> Option<Value>,
    ) -> Option<Vec<Value>> {
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match check(self, item, &format!("{path}[{i}]")) {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// Each entry of a mapping through `check`, at `path.KEY`: every entry
    /// is checked, and the mapping is `None` if any failed.
    fn each_entry(
        &mut self,
        entries: &[Entry],
        path: &str,
        mut check: impl FnMut(&mut Self, &Entry, &str) -> Option<Value>,
    ) -> Option<Value> {
        let mut out = Map::new();
        let mut ok = true;
        for e in entries {
            match check(self, e, &join(path, &e.key)) {
                Some(v) => {
                    out.insert(e.key.clone(), v);
                }
                None => ok = false,
            }
        }
        ok.then_some(Value::Object(out))
    }

    /// The whole spec.
    pub fn spec(&mut self, root: Option<&Node>) -> Option<Value> {
        let Some(root) = root.filter(|r| !r.is_null()) else {
            self.error(
                Pos { line: 1, col: 1 },
                "",
                "the spec is empty",
                "start with `project: NAME` and a `clusters:` mapping (see examples/quickstart.yaml)",
            );
            return None;
        };
        let out = self
            .object(root, "", root.start, &fields::SPEC)
            .map(Value::Object);
        let before = self.diags.len();
        self.bucket_names(root);
        self.bucket_reads(root);
        if self.diags.len() > before {
            return None;
        }
        out
    }

    /// A mapping with the keys of `table`. `missing_at` is where a missing key is reported.
    fn object(
        &mut self,
        node: &Node,
        path: &str,
        missing_at: Pos,
        table: &Table,
    ) -> Option<Map<String, Value>> {
        let what = table.what;
        let names: Vec<&str> = table.fields.iter().map(|f| f.name).collect();
        let entries = self.expect(
            node.map(),
            node,
            path,
            &format!("{what} as a mapping"),
            format!("write `key: value` lines with the keys {}", list(&names)),
        )?;
        let mut out = Map::new();
        let mut ok = true;
        for Entry {
            key,
            key_pos,
            value,
        } in entries
        {
            let p = join(path, key);
            let Some(field) = table.fields.iter().find(|f| f.name == key) else {
                let hint = if let Some(s) = suggest(key, names.iter().copied()) {
                    format!("did you mean `{s}`?")
                } else if let Some((_, parent)) = table.elsewhere.iter().find(|(k, _)| k == key) {
                    format!("`{key}` belongs under `{parent}:`")
                } else {
                    format!("the keys allowed here are {}", list(&names))
                };
                self.error(
                    *key_pos,
                    &p,
                    format!("unknown key `{}` in {what}", shorten(key)),
                    hint,
                );
                ok = false;
                continue;
            };
            if value.is_null() {
                if field.required {
                    self.error(
                        *key_pos,
                        &p,
                        format!("`{key}` needs a value"),
                        format!("write `{key}: ...` with a value"),
                    );
                    ok = false;
                }
                continue;
            }
            match self.convert(&field.conv, value, &p) {
                Some(v) => {
                    out.insert(key.clone(), v);
                }
                None => ok = false,
            }
        }
        for f in table.fields.iter().filter(|f| f.required) {
            if !entries.iter().any(|e| e.key == f.name) {
                self.error(
                    missing_at,
                    path,
                    format!("{what} is missing the required key `{}`", f.name),
                    format!("add `{}: ...`{}", f.name, fields::example_for(f.name)),
                );
                ok = false;
            }
        }
        ok.then_some(out)
    }

    /// One field's value, as its table says.
    fn convert(&mut self, conv: &Conv, node: &Node, path: &str) -> Option<Value> {
        match conv {
            Conv::With(check) => check(self, node, path),
            Conv::OneOf(names, what) => self.choice(node, path, names, what),
            Conv::Shaped(ok, what) => self.shaped(node, path, *ok, what),
            Conv::Nested(table) => self
                .object(node, path, node.start, table)
                .map(Value::Object),
        }
    }

    /// A mapping of validated names to objects.
    fn named_map(
        &mut self,
        node: &Node,
        path: &str,
        what: &str,
        conv: fn(&mut Validator, &Node, &str, Pos) -> Option<Value>,
    ) -> Option<Value> {
        let entries = self.expect(
            node.map(),
            node,
            path,
            &format!("`{path}` to be a mapping of {what} names to settings"),
            format!("write `{path}:` followed by indented `NAME:` entries"),
        )?;
        self.each_entry(entries, path, |v, e, p| {
            let valid = valid_resource_name(&e.key);
            if !valid {
                v.error(
                    e.key_pos,
                    p,
                    format!("invalid {what} name `{}`", shorten(&e.key)),
                    format!("names become parts of resource addresses: lowercase letters, digits and `-`, starting with a letter (e.g. `{}`)", fix_name(&e.key)),
                );
            }
            if e.value.is_null() {
                v.error(
                    e.key_pos,
                    p,
                    format!("{what} `{}` has no settings", shorten(&e.key)),
                    format!("indent its settings under `{}:`", shorten(&e.key)),
                );
                return None;
            }
            let value = conv(v, &e.value, p, e.key_pos)?;
            valid.then_some(value)
        })
    }

    fn clusters(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.named_map(node, path, "cluster", Validator::cluster)
    }

    fn buckets(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.named_map(node, path, "bucket", Validator::bucket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let keys = || fields::CLUSTER.fields.iter().map(|f| f.name);
        assert_eq!(suggest("zone", keys()).as_deref(), Some("zones"));
        assert_eq!(suggest("regoin", keys()).as_deref(), Some("region"));
        assert_eq!(suggest("gpus", keys()).as_deref(), Some("gpu"));
        assert_eq!(
            suggest("azure", ["aws", "alibaba", "tencent", "huawei", "sandbox"]),
            None
        );
        assert_eq!(suggest("AWS", ["aws", "alibaba"]).as_deref(), Some("aws"));
    }

    #[test]
    fn names() {
        assert!(valid_resource_name("trainer-2"));
        for bad in ["", "2x", "Trainer", "a_b", "a.b", "-a", "a b"] {
            assert!(!valid_resource_name(bad), "{bad}");
        }
        assert_eq!(fix_name("My_Trainer"), "my-trainer");
    }
}
