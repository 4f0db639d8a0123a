//! Typed updates: the in-place changes a plan asks of an existing resource.

use crate::ingress::IngressRule;
use crate::request::BucketLifecycle;
use crate::resource::attr;
use crate::tags::UserTags;
use crate::Result;
use crate::{Attrs, Cloud, ErrorKind, ObservedResource, ProviderError, ResourceKind, Scope};
use serde_json::Value;

/// One in-place change as a cloud receives it: where, the resource as just
/// read, and what one of its settings should become (the counterpart of
/// [`crate::Create`]). Every update method of the part traits takes one.
pub struct Update<'a, W: ?Sized> {
    pub scope: &'a Scope,
    pub current: &'a ObservedResource,
    pub want: &'a W,
}

impl<'a, W: ?Sized> Update<'a, W> {
    pub fn new(scope: &'a Scope, current: &'a ObservedResource, want: &'a W) -> Self {
        Update {
            scope,
            current,
            want,
        }
    }

    pub fn region(&self) -> &'a str {
        &self.scope.region
    }

    /// The provider id of the resource being changed.
    pub fn id(&self) -> &'a str {
        &self.current.id
    }
}

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

/// The settings of a bucket an update changes; `None` leaves one alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BucketChange {
    pub versioning: Option<bool>,
    pub encryption: Option<bool>,
    pub lifecycle: Option<BucketLifecycle>,
    pub public_access_blocked: Option<bool>,
    /// gpuform's own setting: the clouds that cannot keep it in the
    /// engine's record keep it as a tag.
    pub force_destroy: Option<bool>,
}

impl BucketChange {
    pub fn is_empty(&self) -> bool {
        *self == BucketChange::default()
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
    /// A bucket's settings (never `Some` and empty).
    pub bucket: Option<BucketChange>,
}

impl ChangeSet {
    /// Reads the new values of an update, refusing any attribute that
    /// cannot change in place on `kind` (the plan replaces those).
    pub fn parse(
        kind: ResourceKind,
        changes: &Attrs,
        cloud: Cloud,
        check_tag: impl Fn(&str, &str) -> Result<(), String>,
    ) -> Result<ChangeSet> {
        let invalid = |m: String| ProviderError::new(ErrorKind::Invalid, m);
        let mut set = ChangeSet::default();
        let mut bucket = BucketChange::default();
        let flag = |key: &str, value: &Value| {
            value.as_bool().ok_or_else(|| {
                invalid(format!("{kind} `{key}` must be true or false, got {value}"))
            })
        };
        for (key, value) in changes {
            if !kind.is_updatable(key) {
                return Err(invalid(format!(
                    "`{key}` of a {kind} cannot change in place on {cloud}; it needs a replacement"
                )));
            }
            match key.as_str() {
                "tags" => set.tags = Some(UserTags::parse(Some(value), cloud, &check_tag)?),
                attr::INGRESS => set.ingress = Some(IngressRule::parse_list(Some(value))?),
                // A bucket's size is the spec's estimate, for cost: no call.
                "size_gb" if kind == ResourceKind::Bucket => {
                    if !value.is_null() && value.as_f64().is_none_or(|f| f <= 0.0) {
                        return Err(invalid(format!(
                            "bucket `size_gb` {value} is not a size in GB"
                        )));
                    }
                }
                "versioning" => bucket.versioning = Some(flag(key, value)?),
                "encryption" => bucket.encryption = Some(flag(key, value)?),
                "public_access_blocked" => bucket.public_access_blocked = Some(flag(key, value)?),
                "force_destroy" => bucket.force_destroy = Some(flag(key, value)?),
                "lifecycle" => bucket.lifecycle = Some(BucketLifecycle::parse(Some(value))?),
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
                attr::ATTACHED_TO => {
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
        if !bucket.is_empty() {
            set.bucket = Some(bucket);
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

    fn parse(kind: ResourceKind, v: Value) -> Result<ChangeSet> {
        let attrs: Attrs = serde_json::from_value(v).unwrap();
        ChangeSet::parse(kind, &attrs, Cloud::Aws, |_, _| Ok(()))
    }

    #[test]
    fn every_updatable_attribute_has_a_typed_field() {
        for kind in ResourceKind::ALL {
            for key in kind.updatable_attrs() {
                let value = match *key {
                    // A bucket's estimate changes no setting: only checked.
                    "size_gb" if kind == ResourceKind::Bucket => continue,
                    "tags" => json!({"team": "ml"}),
                    "ingress" => json!([]),
                    "size_gb" => json!(10),
                    "attached_to" => json!("i-1"),
                    "versioning" | "encryption" | "public_access_blocked" | "force_destroy" => {
                        json!(true)
                    }
                    "lifecycle" => json!({"archive_after_days": 30}),
                    other => panic!("no sample value for `{other}`: add its typed field"),
                };
                let set = parse(kind, json!({ *key: value })).unwrap();
                assert!(!set.is_empty(), "{kind} {key}");
            }
        }
    }

    #[test]
    fn bucket_settings_are_typed_and_its_size_estimate_only_checked() {
        let set = parse(
            ResourceKind::Bucket,
            json!({"versioning": true, "lifecycle": {"archive_after_days": 30}, "size_gb": 12.5}),
        )
        .unwrap();
        assert_eq!(
            set.bucket,
            Some(BucketChange {
                versioning: Some(true),
                lifecycle: Some(BucketLifecycle {
                    archive_after_days: Some(30),
                    expire_noncurrent_after_days: None
                }),
                ..BucketChange::default()
            })
        );
        assert_eq!(set.size_gb, None);
        assert!(parse(ResourceKind::Bucket, json!({"size_gb": 20}))
            .unwrap()
            .is_empty());
        assert!(parse(ResourceKind::Bucket, json!({"size_gb": -1})).is_err());
        assert!(parse(ResourceKind::Bucket, json!({"versioning": "yes"})).is_err());
        assert!(parse(
            ResourceKind::Bucket,
            json!({"lifecycle": {"archive_after_days": 0}})
        )
        .is_err());
        let e = parse(ResourceKind::Bucket, json!({"storage_class": "archive"})).unwrap_err();
        assert!(e.message.contains("needs a replacement"), "{}", e.message);
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
