//! Ownership and user tags as Huawei Cloud accepts them.
//!
//! Huawei's tag rules are narrower than gpuform's: ECS `server_tags` keys may
//! hold only letters, digits, `_` and `-` (at most 36 characters) and values
//! only letters, digits, `_`, `-` and `.` (at most 43 characters) — see
//! "Creating ECSs" (support.huaweicloud.com/api-ecs/ecs_02_0101.html, field
//! `server_tags`) and the VPC `ResourceTag` model (key ≤ 36, value ≤ 43).
//! So `gpuform:address` becomes the key `gpuform_address`, and values are
//! escaped: every character outside `[A-Za-z0-9.-]` is written as `_XX` per
//! UTF-8 byte (`cluster.a.node[3]` → `cluster.a.node_5B3_5D`). User tags are
//! sent as they are, so they must already fit ([`check_user_tag`]).
//!
//! Each service reports tags its own way (VPC `[{key, value}]`, EVS
//! `{key: value}`, ECS `["key=value"]`); they are read here into one list.

use crate::client::{s, Call, Service};
use crate::HuaweiProvider;
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, Create, ErrorKind, ExistingResource, OwnershipTags, ProviderError, ResourceKind, TagApi,
    Update, UserTags,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Tags as (key, value) pairs, in the order they are sent or were read.
pub type TagList = Vec<(String, String)>;

pub const PROJECT: &str = "gpuform_project";
pub const ADDRESS: &str = "gpuform_address";
pub const TOKEN: &str = "gpuform_token";
pub const LINEAGE: &str = "gpuform_lineage";
pub const WORKSPACE: &str = "gpuform_workspace";
/// Prefix of every tag key gpuform owns.
pub const PREFIX: &str = "gpuform_";

pub const MAX_KEY: usize = 36;
pub const MAX_VALUE: usize = 43;

/// Escapes a value into Huawei's tag-value alphabet (reversible, see [`decode`]).
pub fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    out
}

/// Reverses [`encode`]. Anything that is not a valid escape is kept as is.
pub fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| v.to_string())
}

/// The four ownership tags, encoded and checked against Huawei's limits.
pub fn ownership_tags(o: &OwnershipTags) -> Result<Vec<(String, String)>> {
    let mut pairs = vec![
        (PROJECT, o.project.as_str()),
        (ADDRESS, o.address.as_str()),
        (TOKEN, o.token.as_str()),
        (LINEAGE, o.lineage.as_str()),
    ];
    if let Some(w) = &o.workspace {
        pairs.push((WORKSPACE, w));
    }
    let mut out = Vec::new();
    for (k, v) in pairs {
        let e = encode(v);
        if e.chars().count() > MAX_VALUE {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "`{v}` is too long for a Huawei Cloud tag value once escaped ({} > {MAX_VALUE} characters, tag {k}); use a shorter project or cluster name",
                    e.chars().count()
                ),
            ));
        }
        out.push((k.to_string(), e));
    }
    Ok(out)
}

/// `s` in the alphabet Huawei resource names take (letters, digits, `-`,
/// `_`, `.`; others become `-`), at most 64 characters.
pub fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect()
}

/// A resource name from the idempotency token: names are set atomically with
/// creation, so a create interrupted before its tags were added (security
/// groups) or its answer was recorded is found again by name.
pub fn name_for(token: &str) -> String {
    match safe_name(token) {
        n if n.is_empty() => "gpuform".into(),
        n => n,
    }
}

/// Every tag a create sets: the ownership tags, then the user's.
pub fn for_create<T>(req: &Create<T>) -> Result<TagList> {
    let mut t = ownership_tags(&req.ownership)?;
    t.extend(req.tags.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Ok(t)
}

/// Ownership read back from (key, value) tags as the cloud returns them.
pub fn ownership_from(tags: &[(String, String)]) -> Option<OwnershipTags> {
    let get = |k: &str| tags.iter().find(|(n, _)| n == k).map(|(_, v)| decode(v));
    Some(OwnershipTags {
        project: get(PROJECT)?,
        address: get(ADDRESS)?.into(),
        token: get(TOKEN)?,
        lineage: get(LINEAGE)?,
        workspace: get(WORKSPACE),
    })
}

/// The user's tags among a resource's: everything but gpuform's own and the
/// cloud's reserved ones.
pub fn observed_user_tags(tags: &[(String, String)]) -> UserTags {
    UserTags::observed(
        Cloud::Huawei,
        tags.iter()
            .filter(|(k, _)| !k.starts_with(PREFIX))
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

/// VPC-service tags, `[{"key", "value"}]` (tag filter answers).
pub fn from_objects(v: &Value) -> TagList {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("key")?.as_str()?.to_string(), s(t, "value"))))
        .collect()
}

/// EVS tags, `{"key": "value"}`.
pub fn from_map(v: &Value) -> TagList {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, val)| (k.clone(), val.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// ECS detail tags, `["key=value"]`.
pub fn from_pairs(v: &Value) -> TagList {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|t| {
            t.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// Tags as the `[{"key", "value"}]` bodies of ECS `server_tags` and the
/// tag actions.
pub fn objects(tags: &[(String, String)]) -> Vec<Value> {
    tags.iter()
        .map(|(k, v)| json!({"key": k, "value": v}))
        .collect()
}

/// Tags as the `key*value` strings of VPC and subnet creates.
pub fn starred(tags: &[(String, String)]) -> Vec<String> {
    tags.iter().map(|(k, v)| format!("{k}*{v}")).collect()
}

/// Tag batch action on a resource ("Batch Creating or Deleting VPC Tags",
/// POST /v2.0/{project_id}/vpcs/{vpc_id}/tags/action, the same for subnets and
/// security-groups; "Batch Adding ECS Tags", POST
/// /v1/{project_id}/cloudservers/{server_id}/tags/action; "Batch Adding Tags
/// to an EVS Disk", POST /v2/{project_id}/cloudvolumes/{volume_id}/tags/action).
/// `base` is the resource's path. Nothing is sent for no tags.
pub async fn tag_action(
    p: &HuaweiProvider,
    svc: Service,
    region: &str,
    base: &str,
    action: &str,
    tags: &[(String, String)],
) -> Result<()> {
    if tags.is_empty() {
        return Ok(());
    }
    p.send(
        Call::new(svc, region, "POST", format!("{base}/tags/action"))
            .body(json!({"action": action, "tags": objects(tags)})),
    )
    .await?;
    Ok(())
}

#[async_trait]
impl TagApi for HuaweiProvider {
    /// Huawei's rules for a user tag (ECS `server_tags`, the VPC and EVS tag
    /// models): key `[A-Za-z0-9_-]{1,36}`, value `[A-Za-z0-9_.-]{0,43}`, and not
    /// gpuform's own `gpuform_` keys. Checked before any call, so a tag Huawei
    /// would refuse halfway through a create is refused up front.
    fn check_tag(key: &str, value: &str) -> Result<(), String> {
        if key.starts_with(PREFIX) {
            return Err(format!(
                "the prefix `{PREFIX}` is reserved for gpuform's ownership tags on Huawei Cloud; choose another key"
            ));
        }
        if key.is_empty() || key.chars().count() > MAX_KEY {
            return Err(format!(
                "Huawei Cloud tag keys have 1 to {MAX_KEY} characters"
            ));
        }
        if !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        {
            return Err("Huawei Cloud tag keys may hold only letters, digits, `_` and `-`".into());
        }
        if value.chars().count() > MAX_VALUE {
            return Err(format!(
                "value `{value}` is longer than Huawei Cloud's {MAX_VALUE} characters"
            ));
        }
        if !value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(&c))
        {
            return Err(format!(
                "value `{value}`: Huawei Cloud tag values may hold only letters, digits, `_`, `.` and `-`"
            ));
        }
        Ok(())
    }

    /// Makes the user tags of `current` exactly `want`: removes, then sets. The
    /// ownership tags are never among the user tags, so they stay.
    async fn update_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let (region, current, want) = (u.region(), u.current, u.want);
        let pid = self.project(region)?;
        let (svc, base) = tagged_path(pid, current.kind, &current.id)?;
        let have: BTreeMap<String, String> =
            from_map(current.attrs.get(attr::TAGS).unwrap_or(&Value::Null))
                .into_iter()
                .collect();
        let diff = want.diff_from(&UserTags::from_map(have.clone()));
        // Deletes name the value the tag has now, as the tag actions expect.
        let remove: TagList = diff
            .remove
            .into_iter()
            .map(|k| {
                let v = have.get(&k).cloned().unwrap_or_default();
                (k, v)
            })
            .collect();
        tag_action(self, svc, region, &base, "delete", &remove).await?;
        tag_action(self, svc, region, &base, "create", &diff.set).await
    }

    /// One batch create of the ownership tags ([`tag_action`]): a key the
    /// resource has already takes the new value ("Batch Creating or Deleting
    /// VPC Tags", support.huaweicloud.com/api-vpc/vpc_tag_0007.html: "If a
    /// tag to be created has the same key as an existing tag, the tag will
    /// overwrite the existing one"; the ECS and EVS batch actions say the
    /// same), so the same call again changes nothing, and all tags land in
    /// one call.
    async fn set_ownership(
        &self,
        ExistingResource { scope, kind, id }: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let region = scope.region.as_str();
        let pid = self.project(region)?;
        let (svc, base) = tagged_path(pid, kind, id)?;
        tag_action(
            self,
            svc,
            region,
            &base,
            "create",
            &ownership_tags(ownership)?,
        )
        .await
    }
}

/// The service and path whose `/tags/action` tags a resource.
fn tagged_path(pid: &str, kind: ResourceKind, id: &str) -> Result<(Service, String)> {
    Ok(match kind {
        ResourceKind::Network => (Service::Vpc, format!("/v2.0/{pid}/vpcs/{id}")),
        ResourceKind::Subnet => (Service::Vpc, format!("/v2.0/{pid}/subnets/{id}")),
        ResourceKind::Firewall => (Service::Vpc, format!("/v2.0/{pid}/security-groups/{id}")),
        ResourceKind::Instance => (Service::Ecs, format!("/v1/{pid}/cloudservers/{id}")),
        ResourceKind::Volume => (Service::Evs, format!("/v2/{pid}/cloudvolumes/{id}")),
        ResourceKind::Placement => {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "Huawei ECS groups cannot carry tags",
            ))
        }
        // Buckets are tagged through their object storage (`CloudDriver::buckets`).
        ResourceKind::Bucket | ResourceKind::Block => {
            return Err(gpuform_provider::driver::unsupported(Cloud::Huawei, kind))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for s in [
            "cluster.trainer.node[3]",
            "a_b",
            "gf-0123abc",
            "x y/ü",
            "_",
            "end_",
        ] {
            let e = encode(s);
            assert!(
                e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                "{e}"
            );
            assert_eq!(decode(&e), s);
        }
        assert_eq!(encode("cluster.a.node[3]"), "cluster.a.node_5B3_5D");
    }

    #[test]
    fn user_tags_follow_huawei_rules() {
        assert!(HuaweiProvider::check_tag("team", "ml-infra_2.0").is_ok());
        assert!(HuaweiProvider::check_tag("cost-center_1", "").is_ok());
        for (k, v, says) in [
            ("gpuform_address", "x", "reserved"),
            ("", "x", "1 to 36"),
            (&*"k".repeat(37), "x", "1 to 36"),
            ("team:ml", "x", "only letters"),
            ("team", "r&d", "only letters"),
            ("team", &*"v".repeat(44), "longer than"),
        ] {
            let e = HuaweiProvider::check_tag(k, v).unwrap_err();
            assert!(e.contains(says), "{k}={v}: {e}");
        }
        let seen = observed_user_tags(&[
            ("gpuform_project".into(), "p".into()),
            ("_sys_enterprise".into(), "0".into()),
            ("team".into(), "ml".into()),
        ]);
        assert_eq!(seen.iter().collect::<Vec<_>>(), vec![("team", "ml")]);
    }

    #[test]
    fn too_long_is_invalid() {
        let o = OwnershipTags {
            project: "p".into(),
            address: format!("cluster.{}.node[0]", "x".repeat(40)).into(),
            token: "t".into(),
            lineage: "l".into(),
            workspace: None,
        };
        assert_eq!(ownership_tags(&o).unwrap_err().kind, ErrorKind::Invalid);
    }
}
