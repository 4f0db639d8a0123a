//! User tags: the `tags:` of a spec, checked once for every cloud.
//!
//! Every cloud reserves some key prefixes of its own (`aws:`, `acs:`,
//! `qcs:`...) and gpuform reserves `gpuform:` for the ownership tags; a user
//! tag that used one would be refused by the cloud at create time, or worse,
//! be taken for ownership. [`UserTags::parse`] refuses them before any call,
//! with one message, and then asks the cloud's own rules
//! ([`crate::CloudDriver::check_tag`]) about lengths and alphabets.

use crate::Result;
use crate::{Cloud, ErrorKind, ProviderError};
use serde_json::Value;
use std::collections::BTreeMap;

/// The prefix of every tag key gpuform owns (see [`crate::OwnershipTags`]).
pub const GPUFORM_PREFIX: &str = "gpuform:";

/// Tag keys a cloud keeps for itself (case-insensitive prefixes), from each
/// cloud's tag documentation: EC2 "Tag restrictions" (`aws:`); ECS/VPC
/// TagResources (`aliyun`, `acs:`); Tencent "Use Limits" 651/13354 and
/// CreateTag's error table (`qcs:`, `project`, `qcloud`, `tencent`); Huawei
/// TMS "Tag naming rules" (`_sys_`).
pub fn reserved_prefixes(cloud: Cloud) -> &'static [&'static str] {
    match cloud {
        Cloud::Aws => &["aws:"],
        Cloud::Alibaba => &["aliyun", "acs:"],
        Cloud::Tencent => &["qcs:", "project", "qcloud", "tencent"],
        Cloud::Huawei => &["_sys_"],
    }
}

/// Tags the user asked for: no key in a reserved namespace, values as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserTags(BTreeMap<String, String>);

/// What changing a resource's user tags from `current` to `want` takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagDiff {
    /// Keys to remove (present now, absent from the wanted set).
    pub remove: Vec<String>,
    /// Keys to add or overwrite, with their wanted values.
    pub set: Vec<(String, String)>,
}

impl TagDiff {
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.set.is_empty()
    }
}

impl UserTags {
    /// Reads the neutral `tags` attribute (a map of text, numbers or
    /// booleans; absent or null = no tags) and checks every key and value:
    /// first the namespaces that gpuform and `cloud` reserve, then `check`
    /// (the cloud's own naming rules), whose message is shown as is.
    pub fn parse(
        value: Option<&Value>,
        cloud: Cloud,
        check: impl Fn(&str, &str) -> Result<(), String>,
    ) -> Result<UserTags> {
        let obj = match value {
            None | Some(Value::Null) => return Ok(UserTags::default()),
            Some(Value::Object(o)) => o,
            Some(other) => return Err(invalid(format!("`tags` must be a map, got {other}"))),
        };
        let mut out = BTreeMap::new();
        for (k, v) in obj {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => return Err(invalid(format!("tag `{k}` must be text, got {other}"))),
            };
            let lower = k.to_lowercase();
            if lower.starts_with(GPUFORM_PREFIX) {
                return Err(invalid(format!(
                    "tag `{k}`: the prefix `{GPUFORM_PREFIX}` is reserved for gpuform's ownership tags; choose another key"
                )));
            }
            if let Some(p) = reserved_prefixes(cloud)
                .iter()
                .find(|p| lower.starts_with(*p))
            {
                return Err(invalid(format!(
                    "tag `{k}`: keys starting with `{p}` are reserved by {cloud}; choose another key"
                )));
            }
            check(k, &v).map_err(|why| invalid(format!("tag `{k}`: {why}")))?;
            out.insert(k.clone(), v);
        }
        Ok(UserTags(out))
    }

    /// The user tags among a resource's tags as the cloud reports them:
    /// everything outside the reserved namespaces (ownership and record
    /// tags, the cloud's own).
    pub fn observed<'a>(
        cloud: Cloud,
        tags: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> UserTags {
        UserTags(
            tags.into_iter()
                .filter(|(k, _)| {
                    let lower = k.to_lowercase();
                    !lower.starts_with(GPUFORM_PREFIX)
                        && !reserved_prefixes(cloud)
                            .iter()
                            .any(|p| lower.starts_with(p))
                })
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    pub fn from_map(map: BTreeMap<String, String>) -> UserTags {
        UserTags(map)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// As the neutral `tags` attribute of an observed resource.
    pub fn to_value(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    }

    /// The calls that turn `current` into these tags.
    pub fn diff_from(&self, current: &UserTags) -> TagDiff {
        TagDiff {
            remove: current
                .0
                .keys()
                .filter(|k| !self.0.contains_key(*k))
                .cloned()
                .collect(),
            set: self
                .0
                .iter()
                .filter(|(k, v)| current.0.get(*k) != Some(v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

fn invalid(message: String) -> ProviderError {
    ProviderError::new(ErrorKind::Invalid, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value, cloud: Cloud) -> Result<UserTags> {
        UserTags::parse(Some(&v), cloud, |_, _| Ok(()))
    }

    #[test]
    fn reserved_namespaces_are_refused_once_for_every_cloud() {
        for cloud in Cloud::ALL {
            let e = parse(json!({"gpuform:address": "x"}), cloud).unwrap_err();
            assert!(e.message.contains("reserved for gpuform"), "{cloud}: {e}");
            assert_eq!(e.kind, ErrorKind::Invalid);
            for p in reserved_prefixes(cloud) {
                let key = format!("{}x", p.to_uppercase());
                let e = parse(json!({ key.clone(): "v" }), cloud).unwrap_err();
                assert!(
                    e.message.contains(&format!("reserved by {cloud}")),
                    "{cloud} {key}: {e}"
                );
            }
        }
        // Another cloud's namespace is an ordinary key.
        assert!(parse(json!({"aws:x": "v"}), Cloud::Tencent).is_ok());
    }

    #[test]
    fn values_are_text_and_the_cloud_rules_speak_last() {
        let t = parse(json!({"team": "ml", "n": 3, "on": true}), Cloud::Aws).unwrap();
        assert_eq!(t.get("n"), Some("3"));
        assert_eq!(t.get("on"), Some("true"));
        assert!(parse(json!({"team": ["a"]}), Cloud::Aws).is_err());
        assert!(parse(json!(["team"]), Cloud::Aws).is_err());
        assert!(UserTags::parse(None, Cloud::Aws, |_, _| Ok(()))
            .unwrap()
            .is_empty());
        let e = UserTags::parse(Some(&json!({"team": "r&d"})), Cloud::Tencent, |_, v| {
            if v.contains('&') {
                Err("`&` is not allowed".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(e.message, "tag `team`: `&` is not allowed");
    }

    #[test]
    fn observed_keeps_only_user_keys_and_diff_says_what_to_call() {
        let seen = UserTags::observed(
            Cloud::Aws,
            [
                ("gpuform:project", "p"),
                ("aws:cloudformation", "x"),
                ("team", "ml"),
                ("old", "1"),
            ],
        );
        assert_eq!(seen.len(), 2);
        let want = parse(json!({"team": "infra", "new": "2"}), Cloud::Aws).unwrap();
        let d = want.diff_from(&seen);
        assert_eq!(d.remove, vec!["old".to_string()]);
        assert_eq!(
            d.set,
            vec![
                ("new".to_string(), "2".to_string()),
                ("team".to_string(), "infra".to_string())
            ]
        );
        assert!(want.diff_from(&want).is_empty());
    }
}
