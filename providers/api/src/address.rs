//! A resource address, the key every layer files a resource under:
//! `cluster.<name>.<local>`, e.g. `cluster.trainer.node[3]`, or
//! `bucket.<name>`. A second copy of a resource awaiting deletion (a moved
//! resource's old copy, a duplicate found by its tags) is recorded as
//! `<address>~<id>`.
//!
//! Plans, state, the journal and the `gpuform:address` tag keep it as text
//! (their formats); in memory it is an [`Address`], so an address cannot
//! be passed where a provider id or a name is meant, and code that needs a
//! part of one asks it here instead of splitting strings itself.

use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

/// A resource address. Written and read as its text; held inline up to 24
/// bytes (`cluster.trainer.node[12]` is 24), so most take no allocation.
///
/// It orders, hashes and compares as its text does, and borrows as `str`,
/// so maps keyed by addresses are looked up with a `&str`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Address(CompactString);

impl Address {
    /// `cluster.<cluster>.<local>`: the address of one resource of a cluster.
    pub fn in_cluster(cluster: &str, local: &str) -> Address {
        Address(compact_str::format_compact!("cluster.{cluster}.{local}"))
    }

    /// `cluster.<cluster>`: what `--target` names a whole cluster by.
    pub fn of_cluster(cluster: &str) -> Address {
        Address(compact_str::format_compact!("cluster.{cluster}"))
    }

    /// `bucket.<name>`: the address of a bucket of the spec.
    pub fn of_bucket(name: &str) -> Address {
        Address(compact_str::format_compact!("bucket.{name}"))
    }

    /// `<address>~<id>`: where a second copy of this resource is recorded.
    pub fn duplicate(&self, id: &str) -> Address {
        Address(compact_str::format_compact!("{}~{id}", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The cluster the resource belongs to (`cluster.NAME.…`).
    pub fn cluster(&self) -> Option<&str> {
        self.0.strip_prefix("cluster.")?.split(['.', '~']).next()
    }

    /// The part after `cluster.<cluster>.` (`node[3]`), when the resource
    /// belongs to `cluster`.
    pub fn local_in(&self, cluster: &str) -> Option<&str> {
        self.0
            .strip_prefix("cluster.")?
            .strip_prefix(cluster)?
            .strip_prefix('.')
    }

    /// Whether this is a resource of `cluster` (`cluster.<cluster>.…`).
    pub fn belongs_to(&self, cluster: &str) -> bool {
        self.local_in(cluster).is_some()
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

impl Deref for Address {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Address {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Address {
    fn from(text: &str) -> Address {
        Address(CompactString::from(text))
    }
}

impl From<String> for Address {
    fn from(text: String) -> Address {
        Address(CompactString::from(text))
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// As its text is (`"cluster.a.node[0]"`), as it was when addresses were
/// strings.
impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_str(), f)
    }
}

impl PartialEq<str> for Address {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Address {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn parts_of_an_address() {
        let a = Address::from("cluster.trainer.node[3]");
        assert_eq!(a.cluster(), Some("trainer"));
        assert_eq!(a.local_in("trainer"), Some("node[3]"));
        assert_eq!(a.local_in("train"), None);
        assert!(a.belongs_to("trainer"));
        assert!(!a.belongs_to("train"));
        assert!(!a.is_duplicate());
        let d = a.duplicate("i-1");
        assert_eq!(d, "cluster.trainer.node[3]~i-1");
        assert!(d.is_duplicate());
        assert_eq!(d.cluster(), Some("trainer"));
        assert_eq!(Address::from("network.x").cluster(), None);
        assert_eq!(Address::from("bucket.x").local_in("x"), None);
        assert_eq!(Address::in_cluster("t", "network"), "cluster.t.network");
        assert_eq!(Address::of_cluster("t"), "cluster.t");
        assert_eq!(Address::of_bucket("d"), "bucket.d");
    }

    #[test]
    fn target_patterns() {
        let a = Address::from("cluster.t.node[3]");
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

    /// The oracle is the text itself: the JSON, the order and the map
    /// lookups must be what they were when addresses were `String`s.
    #[test]
    fn an_address_is_its_text_on_disk_and_in_maps() {
        let texts = [
            "cluster.b.node[10]",
            "bucket.data",
            "cluster.b.node[9]",
            "cluster.a-very-long-cluster-name.volume[3]~vol-0123456789abcdef0",
            "cluster.b.node[10]~i-1",
        ];
        let typed: Vec<Address> = texts.iter().map(|t| Address::from(*t)).collect();
        assert_eq!(
            serde_json::to_string(&typed).unwrap(),
            serde_json::to_string(&texts).unwrap()
        );
        let back: Vec<Address> =
            serde_json::from_value(serde_json::to_value(texts).unwrap()).unwrap();
        assert_eq!(back, typed);

        let mut by_text: Vec<&str> = texts.to_vec();
        by_text.sort();
        let mut by_address = typed.clone();
        by_address.sort();
        assert_eq!(by_address, by_text);

        let map: BTreeMap<Address, usize> = typed.iter().cloned().zip(0..).collect();
        assert_eq!(map.get("cluster.b.node[9]"), Some(&2));
        assert_eq!(
            map.range(Address::in_cluster("b", "")..)
                .next()
                .map(|(a, _)| a.as_str()),
            Some("cluster.b.node[10]")
        );
        assert_eq!(format!("{:?}", typed[1]), "\"bucket.data\"");
        assert_eq!(typed[1].to_string(), "bucket.data");
    }

    #[test]
    fn a_cluster_node_address_sits_inline() {
        assert_eq!(std::mem::size_of::<Address>(), 24);
        let a = Address::in_cluster("trainer", "node[12]");
        assert!(!a.0.is_heap_allocated());
    }
}
