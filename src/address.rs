//! The two keys every layer files resources under, built and read here only:
//!
//! - an [`Address`] names a resource: `cluster.<name>.<local>`, e.g.
//!   `cluster.trainer.node[3]`; a second copy of one, awaiting deletion (a
//!   moved resource's old copy, a duplicate found by its tags), is recorded
//!   as `<address>~<id>`;
//! - a provider key ([`Target`]) names what serves it: `aws`, `sandbox:aws`.
//!
//! Plans and state keep both as text (their file formats); code that needs
//! a part of one asks these types instead of splitting strings itself.

use gpuform_provider::Cloud;
use serde::{Deserialize, Serialize};

/// A resource address, borrowed from the text it is recorded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address<'a>(&'a str);

impl<'a> Address<'a> {
    /// Reads `text` as an address (any text is one; the parts may be absent).
    pub fn new(text: &'a str) -> Address<'a> {
        Address(text)
    }

    /// `cluster.<cluster>.<local>`: the address of one resource of a cluster.
    pub fn in_cluster(cluster: &str, local: &str) -> String {
        format!("cluster.{cluster}.{local}")
    }

    /// `<address>~<id>`: where a second copy of `address` is recorded.
    pub fn duplicate(address: &str, id: &str) -> String {
        format!("{address}~{id}")
    }

    pub fn as_str(&self) -> &'a str {
        self.0
    }

    /// The cluster the resource belongs to (`cluster.NAME.…`).
    pub fn cluster(&self) -> Option<&'a str> {
        self.0.strip_prefix("cluster.")?.split(['.', '~']).next()
    }

    /// Whether this is a resource of `cluster` (`cluster.<cluster>.…`).
    pub fn belongs_to(&self, cluster: &str) -> bool {
        self.0
            .strip_prefix("cluster.")
            .and_then(|r| r.strip_prefix(cluster))
            .is_some_and(|r| r.starts_with('.'))
    }

    /// Whether this is a second copy (`…~<id>`) awaiting deletion.
    pub fn is_duplicate(&self) -> bool {
        self.0.contains('~')
    }

    /// Whether `--target PATTERN` selects it: the same address, or one under
    /// it (the pattern is a prefix ending at a `.` or `[`).
    pub fn selected_by(&self, pattern: &str) -> bool {
        self.0 == pattern
            || (self.0.starts_with(pattern)
                && matches!(
                    self.0.as_bytes().get(pattern.len()),
                    Some(b'.') | Some(b'[')
                ))
    }
}

/// Which provider serves a resource: a cloud, real or simulated. Its text
/// form ([`Target::key`], read back by [`Target::parse`]) is the provider key
/// recorded in plans and state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Target {
    pub cloud: Cloud,
    pub sandbox: bool,
}

impl Target {
    /// The key recorded in state: `aws`, `sandbox:aws`.
    pub fn key(&self) -> String {
        if self.sandbox {
            format!("sandbox:{}", self.cloud)
        } else {
            self.cloud.to_string()
        }
    }

    pub fn parse(key: &str) -> Option<Target> {
        match key.strip_prefix("sandbox:") {
            Some(c) => Some(Target {
                cloud: c.parse().ok()?,
                sandbox: true,
            }),
            None => Some(Target {
                cloud: key.parse().ok()?,
                sandbox: false,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_an_address() {
        let a = Address::new("cluster.trainer.node[3]");
        assert_eq!(a.cluster(), Some("trainer"));
        assert!(a.belongs_to("trainer"));
        assert!(!a.belongs_to("train"));
        assert!(!a.is_duplicate());
        let d = Address::duplicate(a.as_str(), "i-1");
        assert_eq!(d, "cluster.trainer.node[3]~i-1");
        assert!(Address::new(&d).is_duplicate());
        assert_eq!(Address::new(&d).cluster(), Some("trainer"));
        assert_eq!(Address::new("network.x").cluster(), None);
        assert_eq!(Address::in_cluster("t", "network"), "cluster.t.network");
    }

    #[test]
    fn target_patterns() {
        let a = Address::new("cluster.t.node[3]");
        for yes in ["cluster.t.node[3]", "cluster.t", "cluster.t.node"] {
            assert!(a.selected_by(yes), "{yes}");
        }
        for no in [
            "cluster.t.node[",
            "cluster.tr",
            "cluster.t.node[30]",
            "cluster.t.n",
        ] {
            assert!(!a.selected_by(no), "{no}");
        }
    }

    #[test]
    fn provider_keys_round_trip() {
        for key in ["aws", "sandbox:aws", "huawei", "sandbox:tencent"] {
            assert_eq!(Target::parse(key).map(|t| t.key()).as_deref(), Some(key));
        }
        assert_eq!(Target::parse("sandbox:"), None);
        assert_eq!(Target::parse("gcp"), None);
        assert_eq!(
            Target::parse("aliyun").map(|t| t.cloud),
            Some(Cloud::Alibaba)
        );
    }
}
