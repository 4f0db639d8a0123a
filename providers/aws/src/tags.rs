//! Tags on EC2: the ownership and record tags set with every create
//! (TagSpecifications), the user's tags read back and kept in step
//! (CreateTags/DeleteTags), and the names and tokens derived from ownership.

use crate::errors::{done, Op};
use crate::AwsProvider;
use async_trait::async_trait;
use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use gpuform_provider::attr;
use gpuform_provider::resource::record_tags;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, Create, ExistingResource, ObservedResource, OwnershipTags, ResourceKind, TagApi, Update,
    UserTags,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// Tag naming the neutral kind of what gpuform created.
pub const KIND_TAG: &str = record_tags::KIND;
/// Tag keeping the image the engine asked for (a logical name or an AMI id).
pub const IMAGE_TAG: &str = record_tags::IMAGE;
/// Tag keeping the pricing model the engine asked for.
pub const PRICING_TAG: &str = record_tags::PRICING;
/// Tag keeping whether RDMA (EFA) was asked for.
pub const RDMA_TAG: &str = record_tags::RDMA;
/// `gpuform:kind` of the root volume made by RunInstances.
pub const ROOT_VOLUME_KIND: &str = "root-volume";

/// EC2's limits on a user-defined tag ("Tag restrictions" in the EC2 user
/// guide), in Unicode characters.
const MAX_KEY_CHARS: usize = 128;
const MAX_VALUE_CHARS: usize = 256;

/// Tags as (key, value) pairs, in the order they are sent.
pub type Tags = Vec<(String, String)>;

pub fn tag_spec(resource: ResourceType, tags: &Tags) -> TagSpecification {
    TagSpecification::builder()
        .resource_type(resource)
        .set_tags(Some(
            tags.iter()
                .map(|(k, v)| Tag::builder().key(k).value(v).build())
                .collect(),
        ))
        .build()
}

/// The tag specification of a new `kind` resource (EC2 type `resource`)
/// that `req` creates: its creation tags, with no extra gpuform tags.
pub(crate) fn new_tag_spec<S>(
    req: &Create<S>,
    kind: &str,
    resource: ResourceType,
) -> TagSpecification {
    tag_spec(
        resource,
        &creation_tags(&req.ownership, kind, &[], &req.tags),
    )
}

/// The `Name` tag gpuform sets unless the user gives one: consoles show it.
fn default_name(own: &OwnershipTags) -> String {
    format!("{}/{}", own.project, own.address)
}

/// Ownership tags, `gpuform:kind`, the extra gpuform tags and the user's.
pub(crate) fn creation_tags(
    own: &OwnershipTags,
    kind: &str,
    extra: &[(&str, String)],
    user: &UserTags,
) -> Tags {
    let mut tags: Tags = own.owned_tags().collect();
    tags.push((KIND_TAG.to_string(), kind.to_string()));
    tags.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    if user.get("Name").is_none() {
        tags.push(("Name".to_string(), default_name(own)));
    }
    tags.extend(user.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    tags
}

pub(crate) fn tag_value<'a>(tags: &'a [Tag], key: &str) -> Option<&'a str> {
    tags.iter()
        .find(|t| t.key() == Some(key))
        .and_then(|t| t.value())
}

pub(crate) fn ownership(tags: &[Tag]) -> Option<OwnershipTags> {
    OwnershipTags::from_tags(|k| tag_value(tags, k))
}

/// The user's tags as observed: without gpuform's and AWS's own, and without
/// the default `Name`.
pub(crate) fn observed_user_tags(tags: &[Tag], own: Option<&OwnershipTags>) -> UserTags {
    let default = own.map(default_name);
    let pairs = tags
        .iter()
        .filter_map(|t| Some((t.key()?, t.value().unwrap_or(""))))
        .filter(|(k, v)| !(*k == "Name" && Some(*v) == default.as_deref()));
    UserTags::observed(Cloud::Aws, pairs)
}

/// The user tags of a resource as read (its `tags` attribute).
fn tags_of(r: &ObservedResource) -> UserTags {
    let map: BTreeMap<String, String> = match r.attrs.get(attr::TAGS) {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| {
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                (k.clone(), v)
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    UserTags::from_map(map)
}

#[async_trait]
impl TagApi for AwsProvider {
    /// EC2's own rules for a user tag, beyond the reserved `aws:` prefix (which
    /// the neutral layer refuses): lengths. EC2 would refuse the create itself;
    /// this says so before any call, naming the rule.
    fn check_tag(key: &str, value: &str) -> Result<(), String> {
        if key.chars().count() > MAX_KEY_CHARS {
            return Err(format!(
                "EC2 tag keys are at most {MAX_KEY_CHARS} characters"
            ));
        }
        if value.chars().count() > MAX_VALUE_CHARS {
            return Err(format!(
                "EC2 tag values are at most {MAX_VALUE_CHARS} characters"
            ));
        }
        Ok(())
    }

    /// CreateTags for what is new or changed, DeleteTags for what is gone.
    async fn update_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let (scope, current, want) = (u.scope, u.current, u.want);
        let c = self.client(scope)?;
        // Placement groups are tagged by id, not by name.
        let target = taggable_id(current.kind, &current.id, Some(current));
        let diff = want.diff_from(&tags_of(current));
        let set: Vec<Tag> = diff
            .set
            .iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect();
        if !set.is_empty() {
            let request = c.create_tags().resources(target).set_tags(Some(set));
            done("CreateTags", Op::Other, request.send()).await?;
        }
        let remove: Vec<Tag> = diff
            .remove
            .iter()
            .map(|k| Tag::builder().key(k).build())
            .collect();
        if !remove.is_empty() {
            let request = c.delete_tags().resources(target).set_tags(Some(remove));
            done("DeleteTags", Op::Other, request.send()).await?;
        }
        Ok(())
    }

    /// One CreateTags of the ownership tags: EC2 adds them beside the
    /// resource's own tags (a `Name` included) and overwrites nothing else;
    /// the same call again changes nothing. A placement group, tagged by
    /// its id, is read first for it.
    async fn set_ownership(
        &self,
        ExistingResource { scope, kind, id }: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let c = self.client(scope)?;
        let group = match kind {
            ResourceKind::Placement => {
                let ids = [id.to_string()];
                let q = gpuform_provider::Lookup {
                    scope,
                    kind,
                    ids: &ids,
                };
                gpuform_provider::RefreshApi::read(self, &q).await?.pop()
            }
            _ => None,
        };
        let target = taggable_id(kind, id, group.as_ref());
        let tags: Vec<Tag> = ownership
            .to_tags()
            .into_iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect();
        let request = c.create_tags().resources(target).set_tags(Some(tags));
        done("CreateTags", Op::Other, request.send()).await?;
        Ok(())
    }
}

/// The EC2 id CreateTags takes for a resource: a placement group's id, not
/// its name (the neutral id); the id otherwise.
fn taggable_id<'a>(
    kind: ResourceKind,
    id: &'a str,
    current: Option<&'a ObservedResource>,
) -> &'a str {
    match kind {
        ResourceKind::Placement => current
            .and_then(|c| c.attrs.get("group_id"))
            .and_then(Value::as_str)
            .unwrap_or(id),
        _ => id,
    }
}

/// A name unique per resource and stable across retries of its create.
pub(crate) fn derived_name(own: &OwnershipTags) -> String {
    let token: String = own
        .token
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(12)
        .collect();
    let base = sanitize(&format!("gpuform-{}-{}", own.project, own.address), 200);
    format!("{base}-{token}")
}

/// Keeps the characters EC2 accepts in group names and descriptions.
pub(crate) fn sanitize(s: &str, max: usize) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-:/()#,@[]+=&;{}!$* ".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(max)
        .collect()
}

/// ClientToken: at most 64 ASCII characters; longer or non-ASCII tokens are
/// replaced by their SHA-256 (64 hex digits), stable across retries.
pub(crate) fn client_token(token: &str) -> String {
    if token.len() <= 64 && token.chars().all(|c| c.is_ascii_graphic()) {
        token.to_string()
    } else {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(token.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> OwnershipTags {
        OwnershipTags {
            project: "llm".into(),
            address: "cluster.trainer.node[3]".into(),
            token: "0123456789abcdef-xyz".into(),
            lineage: "lin-1".into(),
            workspace: None,
        }
    }

    #[test]
    fn creation_tags_carry_ownership_kind_and_user_tags() {
        let mut user = BTreeMap::new();
        user.insert("team".to_string(), "ml".to_string());
        let user = UserTags::from_map(user);
        let tags = creation_tags(
            &own(),
            "instance",
            &[(IMAGE_TAG, "ubuntu-22.04-cuda".into())],
            &user,
        );
        let get = |k: &str| tags.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
        assert_eq!(get("gpuform:project"), Some("llm"));
        assert_eq!(get("gpuform:address"), Some("cluster.trainer.node[3]"));
        assert_eq!(get("gpuform:token"), Some("0123456789abcdef-xyz"));
        assert_eq!(get("gpuform:lineage"), Some("lin-1"));
        assert_eq!(get(KIND_TAG), Some("instance"));
        assert_eq!(get(IMAGE_TAG), Some("ubuntu-22.04-cuda"));
        assert_eq!(get("Name"), Some("llm/cluster.trainer.node[3]"));
        assert_eq!(get("team"), Some("ml"));

        // Observed back: only the user's tags.
        let sdk: Vec<Tag> = tags
            .iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect();
        let o = ownership(&sdk).unwrap();
        assert_eq!(o, own());
        assert_eq!(
            observed_user_tags(&sdk, Some(&o)).to_value(),
            serde_json::json!({"team": "ml"})
        );
        // A Name of the user's own is theirs, and kept.
        let named = UserTags::from_map([("Name".to_string(), "box".to_string())].into());
        let tags = creation_tags(&own(), "instance", &[], &named);
        assert_eq!(tags.iter().filter(|(k, _)| k == "Name").count(), 1);
        let sdk: Vec<Tag> = tags
            .iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect();
        assert_eq!(
            observed_user_tags(&sdk, Some(&own())).to_value(),
            serde_json::json!({"Name": "box"})
        );
    }

    #[test]
    fn ec2_tag_lengths_are_checked_before_any_call() {
        assert!(AwsProvider::check_tag("team", "ml").is_ok());
        assert!(AwsProvider::check_tag(&"k".repeat(128), &"v".repeat(256)).is_ok());
        let e = AwsProvider::check_tag(&"k".repeat(129), "v").unwrap_err();
        assert!(e.contains("keys are at most 128"), "{e}");
        let e = AwsProvider::check_tag("k", &"é".repeat(257)).unwrap_err();
        assert!(e.contains("values are at most 256"), "{e}");
    }

    #[test]
    fn names_and_tokens() {
        let n = derived_name(&own());
        assert_eq!(n, "gpuform-llm-cluster.trainer.node[3]-0123456789ab");
        assert_eq!(client_token("abc"), "abc");
        let long = "x".repeat(100);
        assert_eq!(client_token(&long).len(), 64);
        assert_eq!(client_token(&long), client_token(&long));
        assert_eq!(sanitize("a\"b<c>", 10), "a-b-c-");
    }
}
