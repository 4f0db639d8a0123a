//! The two keys every layer files resources under, built and read here only:
//!
//! - an [`Address`] names a resource: `cluster.<name>.<local>`, e.g.
//!   `cluster.trainer.node[3]`; a second copy of one, awaiting deletion (a
//!   moved resource's old copy, a duplicate found by its tags), is recorded
//!   as `<address>~<id>`;
//! - a provider key ([`Target`]) names what serves it: `aws`, `sandbox:aws`.
//!
//! Plans and state keep both as text (their file formats). A provider key
//! is read into a [`Target`] once, where it enters (deserialisation, flags),
//! and written back as the same text; code that needs a part of an address
//! asks [`Address`] instead of splitting strings itself.

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
/// form, the provider key ([`Target::key`]: `aws`, `sandbox:aws`), is what
/// plans, state, the journal and `--json` output record: it serialises as
/// that string, and [`Target::parse`] reads it back only at those edges
/// (deserialisation, command-line flags); everything between holds the
/// typed value (2 bytes, `Copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    pub cloud: Cloud,
    pub sandbox: bool,
}

/// What an unknown provider key is told, and how to fix it.
const KEY_HINT: &str = "this gpuform knows aws, alibaba, tencent and huawei, each also as `sandbox:<cloud>`; a file a newer gpuform wrote needs that gpuform";

impl Target {
    /// A real cloud's key.
    pub const fn real(cloud: Cloud) -> Target {
        Target {
            cloud,
            sandbox: false,
        }
    }

    /// The sandbox's simulation of `cloud`.
    pub const fn sandbox(cloud: Cloud) -> Target {
        Target {
            cloud,
            sandbox: true,
        }
    }

    /// The key recorded in state: `aws`, `sandbox:aws`.
    pub fn key(self) -> &'static str {
        match (self.sandbox, self.cloud) {
            (false, c) => c.as_str(),
            (true, Cloud::Aws) => "sandbox:aws",
            (true, Cloud::Alibaba) => "sandbox:alibaba",
            (true, Cloud::Tencent) => "sandbox:tencent",
            (true, Cloud::Huawei) => "sandbox:huawei",
        }
    }

    /// What `--cloud` (of `audit`, `import`) takes for it: the cloud, or
    /// `sandbox` for every sandbox.
    pub fn cloud_flag(self) -> &'static str {
        if self.sandbox {
            "sandbox"
        } else {
            self.cloud.as_str()
        }
    }

    /// Reads a provider key: `aws`, `sandbox:aws` (a cloud's other names,
    /// such as `aliyun`, too). Only the edges call it: a key's
    /// deserialisation and command-line flags.
    pub fn parse(key: &str) -> Option<Target> {
        match key.strip_prefix("sandbox:") {
            Some(c) => Some(Target::sandbox(c.parse().ok()?)),
            None => Some(Target::real(key.parse().ok()?)),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl std::str::FromStr for Target {
    type Err = String;

    fn from_str(key: &str) -> Result<Target, String> {
        Target::parse(key).ok_or_else(|| format!("unknown provider key `{key}` ({KEY_HINT})"))
    }
}

/// Ordered as their keys are, so that whatever is sorted or grouped by
/// provider (audit scopes, refresh groups, output) keeps the order the
/// keys' text gave it.
impl Ord for Target {
    fn cmp(&self, other: &Target) -> std::cmp::Ordering {
        self.key().cmp(other.key())
    }
}

impl PartialOrd for Target {
    fn partial_cmp(&self, other: &Target) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Target, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = Target;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a provider key (`aws`, `sandbox:aws`)")
            }

            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Target, E> {
                key.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Key)
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
            assert_eq!(Target::parse(key).map(|t| t.key()), Some(key));
        }
        assert_eq!(Target::parse("sandbox:"), None);
        assert_eq!(Target::parse("gcp"), None);
        assert_eq!(
            Target::parse("aliyun").map(|t| t.cloud),
            Some(Cloud::Alibaba)
        );
    }

    fn every_target() -> Vec<Target> {
        Cloud::ALL
            .into_iter()
            .flat_map(|c| [Target::real(c), Target::sandbox(c)])
            .collect()
    }

    #[test]
    fn a_target_serialises_as_its_key_and_reads_back() {
        for t in every_target() {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.key()));
            assert_eq!(serde_json::from_str::<Target>(&json).unwrap(), t);
            assert_eq!(t.to_string(), t.key());
        }
        // From a `Value` too (saved plans were read through one).
        let v = serde_json::json!("sandbox:huawei");
        assert_eq!(
            serde_json::from_value::<Target>(v).unwrap(),
            Target::sandbox(Cloud::Huawei)
        );
    }

    #[test]
    fn an_unknown_key_says_what_it_is_and_what_is_known() {
        let e = serde_json::from_str::<Vec<Target>>("[\"aws\",\n \"gcp\"]").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("unknown provider key `gcp`"), "{text}");
        assert!(text.contains("`sandbox:<cloud>`"), "{text}");
        assert_eq!(e.line(), 2, "{text}");
        assert!(e.is_data());
        assert!(serde_json::from_str::<Target>("3").is_err());
    }

    #[test]
    fn targets_sort_as_their_keys() {
        let mut by_target = every_target();
        by_target.sort();
        let mut by_key: Vec<&str> = every_target().iter().map(|t| t.key()).collect();
        by_key.sort();
        let keys: Vec<&str> = by_target.iter().map(|t| t.key()).collect();
        assert_eq!(keys, by_key);
    }

    #[test]
    fn a_target_is_smaller_than_the_string_it_replaces() {
        assert_eq!(std::mem::size_of::<Target>(), 2);
        assert_eq!(std::mem::size_of::<Option<Target>>(), 2);
    }
}
