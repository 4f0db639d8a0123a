//! `tags:` of clusters, buckets and reservations, and the rules Tencent
//! Cloud adds for a cluster that may run there.

use super::super::yaml::{shorten, Node};
use super::{join, Validator};
use serde_json::Value;

/// A key gpuform reports in `tags` itself (empty, or its own prefix).
fn refused_key(key: &str) -> bool {
    key.trim().is_empty() || key.starts_with("gpuform:")
}

impl Validator {
    pub(super) fn tags(&mut self, node: &Node, path: &str) -> Option<Value> {
        let entries = self.expect(
            node.map(),
            node,
            path,
            "`tags` as a mapping",
            "write `tags: { team: research }`",
        )?;
        self.each_entry(entries, path, |v, e, p| {
            if e.key.trim().is_empty() {
                v.error(e.key_pos, p, "empty tag key", "give the tag a name");
                return None;
            }
            if e.key.starts_with("gpuform:") {
                v.error(
                    e.key_pos,
                    p,
                    format!(
                        "tag `{}` uses the reserved prefix `gpuform:`",
                        shorten(&e.key)
                    ),
                    "gpuform sets `gpuform:*` tags itself to find what it owns; choose another key",
                );
                return None;
            }
            if e.value.is_null() {
                Some(Value::String(String::new()))
            } else {
                v.string(&e.value, p)
            }
        })
    }

    /// Tags of a cluster that may run on Tencent Cloud, against its naming
    /// rules (`gpuform_tencent::tags`, from its tag "Use Limits" page 651/13354).
    pub(super) fn tencent_tags(&mut self, node: &Node, path: &str) -> bool {
        let mut ok = true;
        // The shape, and the keys `refused_key`, are reported by `tags`.
        for e in node.entries().iter().filter(|e| !refused_key(&e.key)) {
            let (value, at) = match e.value.text() {
                _ if e.value.is_null() => (String::new(), e.key_pos),
                Some(text) => (text.to_string(), e.value.start),
                None => continue, // reported by `tags`
            };
            let problem = match gpuform_tencent::tags::check_key(&e.key) {
                Err(p) => Some((e.key_pos, p)),
                Ok(()) => gpuform_tencent::tags::check_value(&value)
                    .err()
                    .map(|p| (at, p)),
            };
            if let Some((pos, p)) = problem {
                let message = format!("{} (this cluster may run on Tencent Cloud)", p.message);
                self.error(pos, &join(path, &e.key), message, p.hint);
                ok = false;
            }
        }
        ok
    }
}
