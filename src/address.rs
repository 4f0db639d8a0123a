//! The two keys every layer files resources under:
//!
//! - an [`Address`] names a resource: `cluster.<name>.<local>`, e.g.
//!   `cluster.trainer.node[3]`; a second copy of one, awaiting deletion, is
//!   recorded as `<address>~<id>`. Its home is the provider interface
//!   (`gpuform_provider::address`), because the `gpuform:address` tag and
//!   a resource's dependencies carry it too; it is re-exported here;
//! - a provider key ([`Target`]) names what serves it: `aws`, `sandbox:aws`.
//!
//! Plans and state keep both as text (their file formats). Both are typed
//! in memory: a provider key is read into a [`Target`] once, where it
//! enters (deserialisation, flags), and written back as the same text; an
//! address is read into an [`Address`] the same way, and code that needs a
//! part of one asks it instead of splitting strings itself.

pub use gpuform_provider::Address;
use gpuform_provider::Cloud;
use serde::{Deserialize, Serialize};

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
