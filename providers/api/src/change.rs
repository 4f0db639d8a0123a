//! Typed updates: the in-place changes a plan asks of an existing resource.

use crate::ingress::IngressRule;
use crate::tags::UserTags;
use crate::{Attrs, Cloud, ErrorKind, ProviderError, ResourceKind};
use serde_json::Value;

/// Where a volume should be attached (the completion attribute
/// `attached_to`, see [`ResourceKind::completion_attrs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attachment {
    /// Attached to this instance (detached first from any other).
    To(String),
    /// Detached.
    Detached,
}

impl Attachment {
    pub fn instance(&self) -> Option<&str> {
        match self {
            Attachment::To(id) => Some(id),
            Attachment::Detached => None,
        }
    }
}

/// What an update changes. Each field is one kind of call on the clouds;
/// `None` leaves it alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeSet {
    pub tags: Option<UserTags>,
    pub ingress: Option<Vec<IngressRule>>,
    pub size_gb: Option<u32>,
    pub attachment: Option<Attachment>,
}

impl ChangeSet {
    /// Reads the new values of an update, refusing any attribute that
    /// cannot change in place on `kind` (the plan replaces those).
    pub fn parse(
        kind: ResourceKind,
        changes: &Attrs,
        cloud: Cloud,
        check_tag: impl Fn(&str, &str) -> Result<(), String>,
    ) -> Result<ChangeSet, ProviderError> {
        let invalid = |m: String| ProviderError::new(ErrorKind::Invalid, m);
        let mut set = ChangeSet::default();
        for (key, value) in changes {
            if !kind.is_updatable(key) {
                return Err(invalid(format!(
                    "`{key}` of a {kind} cannot change in place on {cloud}; it needs a replacement"
                )));
            }
            match key.as_str() {
                "tags" => set.tags = Some(UserTags::parse(Some(value), cloud, &check_tag)?),
                "ingress" => set.ingress = Some(IngressRule::parse_list(Some(value))?),
                "size_gb" => {
                    set.size_gb = Some(
                        value
                            .as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .filter(|n| *n > 0)
                            .ok_or_else(|| {
                                invalid(format!("volume `size_gb` {value} is not a size in GiB"))
                            })?,
                    )
                }
                "attached_to" => {
                    set.attachment = Some(match value {
                        Value::Null => Attachment::Detached,
                        Value::String(id) if !id.is_empty() => Attachment::To(id.clone()),
                        other => {
                            return Err(invalid(format!(
                                "volume `attached_to` must be an instance id or null, got {other}"
                            )))
                        }
                    })
                }
                // An attribute made updatable in `ResourceKind` without a
                // typed field here: refuse rather than silently ignore it.
                other => {
                    return Err(invalid(format!(
                        "`{other}` of a {kind} is updatable but no cloud knows how to update it"
                    )))
                }
            }
        }
        Ok(set)
    }

    pub fn is_empty(&self) -> bool {
        *self == ChangeSet::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(kind: ResourceKind, v: Value) -> Result<ChangeSet, ProviderError> {
        let attrs: Attrs = serde_json::from_value(v).unwrap();
        ChangeSet::parse(kind, &attrs, Cloud::Aws, |_, _| Ok(()))
    }

    #[test]
    fn every_updatable_attribute_has_a_typed_field() {
        for kind in ResourceKind::ALL {
            for key in kind.updatable_attrs() {
                let value = match *key {
                    "tags" => json!({"team": "ml"}),
                    "ingress" => json!([]),
                    "size_gb" => json!(10),
                    "attached_to" => json!("i-1"),
                    other => panic!("no sample value for `{other}`: add its typed field"),
                };
                let set = parse(kind, json!({ *key: value })).unwrap();
                assert!(!set.is_empty(), "{kind} {key}");
            }
        }
    }

    #[test]
    fn non_updatable_and_malformed_changes_are_refused() {
        let e = parse(ResourceKind::Instance, json!({"instance_type": "x"})).unwrap_err();
        assert_eq!(
            e.message,
            "`instance_type` of a instance cannot change in place on aws; it needs a replacement"
        );
        assert!(parse(ResourceKind::Volume, json!({"size_gb": 0})).is_err());
        assert!(parse(ResourceKind::Volume, json!({"attached_to": 3})).is_err());
        assert!(parse(ResourceKind::Network, json!({"tags": {"aws:x": "1"}})).is_err());
        let set = parse(
            ResourceKind::Volume,
            json!({"attached_to": null, "size_gb": 20}),
        )
        .unwrap();
        assert_eq!(set.attachment, Some(Attachment::Detached));
        assert_eq!(set.size_gb, Some(20));
    }
}
