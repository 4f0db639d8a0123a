//! Ownership and user tags as ECS and VPC take them, and gpuform's names
//! and descriptions for what it creates.
//!
//! VPCs, vSwitches, security groups, instances and disks get their tags in
//! the create call itself (`Tag.N.Key` / `Tag.N.Value`). Deployment sets
//! have no tags in the API: their ownership goes into their description
//! ([`placement_description`]), in the same call.

use crate::api::Api;
use crate::client::{items, Params};
use crate::AlibabaProvider;
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, Create, ErrorKind, ExistingResource, OwnershipTags, ProviderError, ResourceKind, TagApi,
    Update, UserTags,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Tag naming the neutral kind of what gpuform created.
pub const KIND_TAG: &str = gpuform_provider::resource::record_tags::KIND;
/// Tag keeping the image the engine asked for (a logical name or an id).
pub const IMAGE_TAG: &str = gpuform_provider::resource::record_tags::IMAGE;
/// Tag keeping the pricing model the engine asked for (`reserved-1y` and
/// `reserved-3y` are both `PrePaid` to ECS).
pub const PRICING_TAG: &str = gpuform_provider::resource::record_tags::PRICING;
/// Tag keeping whether RDMA was asked for.
pub const RDMA_TAG: &str = gpuform_provider::resource::record_tags::RDMA;

/// Prefix of a deployment set description that carries gpuform ownership.
pub const PLACEMENT_MARK: &str = "gpuform-owned";

/// Tags per resource (ECS and VPC: at most 20).
const MAX_TAGS: usize = 20;
/// Characters per tag key and per value (TagResources).
const MAX_TAG_CHARS: usize = 128;

/// Ownership + kind + extra + user tags, as sent at creation.
pub(crate) fn creation_tags(
    own: &OwnershipTags,
    kind: ResourceKind,
    user: &UserTags,
    extra: &[(&str, String)],
) -> Result<Vec<(String, String)>> {
    let mut tags: Vec<(String, String)> = own.owned_tags().collect();
    tags.push((KIND_TAG.to_string(), kind.as_str().to_string()));
    tags.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    tags.extend(user.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    if tags.len() > MAX_TAGS {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "Alibaba Cloud takes at most {MAX_TAGS} tags per resource; gpuform uses {} and the spec adds {}",
                tags.len() - user.len(),
                user.len()
            ),
        ));
    }
    for (k, v) in &tags {
        if k.chars().count() > MAX_TAG_CHARS || v.chars().count() > MAX_TAG_CHARS {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("tag `{k}`: keys and values are at most {MAX_TAG_CHARS} characters on Alibaba Cloud"),
            ));
        }
    }
    Ok(tags)
}

/// Tags of a Describe item: ECS answers `Tags.Tag[].TagKey/TagValue`, VPC
/// `Tags.Tag[].Key/Value`.
pub(crate) fn tags_of(item: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for t in items(item, "Tags", "Tag") {
        let k = t
            .get("TagKey")
            .or_else(|| t.get("Key"))
            .and_then(Value::as_str);
        let v = t
            .get("TagValue")
            .or_else(|| t.get("Value"))
            .and_then(Value::as_str);
        if let Some(k) = k {
            out.insert(k.to_string(), v.unwrap_or_default().to_string());
        }
    }
    out
}

/// The user tags among a resource's tags (ownership, record and Alibaba's
/// own tags left out).
pub(crate) fn user_tags_of(tags: &BTreeMap<String, String>) -> UserTags {
    UserTags::observed(
        Cloud::Alibaba,
        tags.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

pub(crate) fn ownership_of(tags: &BTreeMap<String, String>) -> Option<OwnershipTags> {
    OwnershipTags::from_tags(|k| tags.get(k).map(String::as_str))
}

/// The Describe filter for everything of a project.
pub(crate) fn tag_filter(project: &str) -> Params {
    let mut p = Params::default();
    p.tags(&[(OwnershipTags::PROJECT.to_string(), project.to_string())]);
    p
}

#[async_trait]
impl TagApi for AlibabaProvider {
    /// Tag rules of ECS and VPC (TagResources) beyond the reserved prefixes
    /// (`aliyun`, `acs:`, which the wrapper refuses): keys not empty, at most
    /// 128 characters each side, no `http://` / `https://` in keys or values.
    fn check_tag(key: &str, value: &str) -> Result<(), String> {
        if key.is_empty() {
            return Err("the key is empty".into());
        }
        if [key, value]
            .iter()
            .any(|s| s.contains("http://") || s.contains("https://"))
        {
            return Err("contains http:// or https://, which Alibaba Cloud refuses".into());
        }
        if key.chars().count() > MAX_TAG_CHARS || value.chars().count() > MAX_TAG_CHARS {
            return Err(format!(
                "keys and values are at most {MAX_TAG_CHARS} characters on Alibaba Cloud"
            ));
        }
        Ok(())
    }

    /// Makes the user tags of `current` exactly `want`: ECS UntagResources /
    /// VPC UnTagResources (`ResourceType`, `ResourceId.1`, `TagKey.N`) for
    /// the keys to drop, then TagResources (`Tag.N`) for the rest.
    async fn update_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let (region, current, want) = (u.region(), u.current, u.want);
        let api = Api::of(current.kind)?;
        let Some(rtype) = api.resource_type() else {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "Alibaba deployment sets carry no tags; change the spec's tags elsewhere",
            ));
        };
        let product = api.listing().product;
        let have: BTreeMap<String, String> = current
            .attrs
            .get(attr::TAGS)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let diff = want.diff_from(&UserTags::from_map(have));
        if !diff.remove.is_empty() {
            let mut p = Params::one("ResourceType", rtype);
            p.push("ResourceId.1", current.id.clone());
            for (i, k) in diff.remove.iter().enumerate() {
                p.push(format!("TagKey.{}", i + 1), k.clone());
            }
            let action = if product == crate::Product::Vpc {
                "UnTagResources"
            } else {
                "UntagResources"
            };
            self.client.call(product, region, action, &p.0).await?;
        }
        if !diff.set.is_empty() {
            let mut p = Params::one("ResourceType", rtype);
            p.push("ResourceId.1", current.id.clone());
            p.tags(&diff.set);
            self.client
                .call(product, region, "TagResources", &p.0)
                .await?;
        }
        Ok(())
    }

    /// One TagResources of the ownership tags (ECS or VPC, by kind): tags
    /// already there stay, the same call again changes nothing
    /// (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-tagresources).
    async fn set_ownership(
        &self,
        ExistingResource { scope, kind, id }: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let api = Api::of(kind)?;
        let Some(rtype) = api.resource_type() else {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "Alibaba deployment sets carry no tags, so gpuform cannot import one",
            ));
        };
        let mut p = Params::one("ResourceType", rtype);
        p.push("ResourceId.1", id.to_string());
        let tags: Vec<(String, String)> = ownership.owned_tags().collect();
        p.tags(&tags);
        self.client
            .call(api.listing().product, &scope.region, "TagResources", &p.0)
            .await?;
        Ok(())
    }
}

// --------------------------------------------------------------------- naming

/// A name Alibaba accepts for VPCs, vSwitches, groups, deployment sets,
/// instances and disks: 2-128 characters, starting with a letter, letters,
/// digits, `.` `_` `-` `:` only (deployment sets: no `.`).
pub(crate) fn resource_name(own: &OwnershipTags) -> String {
    let raw = format!("gpuform-{}-{}", own.project, own.address);
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(128);
    s
}

/// A free-text description: `gpuform <project> <address>`.
pub(crate) fn description(own: &OwnershipTags) -> String {
    let mut d = format!("gpuform {} {}", own.project, own.address);
    d.retain(|c| !c.is_control());
    d.truncate(256);
    d
}

/// ClientToken: at most 64 ASCII characters (every Create* page).
pub(crate) fn client_token(token: &str) -> Result<String> {
    if token.is_empty() || token.len() > 64 || !token.is_ascii() {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "idempotency token `{token}` is not 1-64 ASCII characters, as ClientToken requires"
            ),
        ));
    }
    Ok(token.to_string())
}

/// The parameters every create sends: its name under `name_key`, the
/// description, the ownership token as `ClientToken`, and `Tag.N`: the
/// creation tags of a `kind` with the `extra` gpuform tags.
pub(crate) fn naming<S>(
    p: &mut Params,
    name_key: &str,
    req: &Create<S>,
    kind: ResourceKind,
    extra: &[(&str, String)],
) -> Result<()> {
    let own = &req.ownership;
    p.push(name_key, resource_name(own));
    p.push("Description", description(own));
    p.push("ClientToken", client_token(&own.token)?);
    p.tags(&creation_tags(own, kind, &req.tags, extra)?);
    Ok(())
}

/// The ownership of a deployment set, in its description (at most 256
/// characters): `gpuform-owned project=P address=A token=T lineage=L`, each
/// value percent-encoded so spaces and `=` cannot confuse the parse.
pub fn placement_description(own: &OwnershipTags) -> Result<String> {
    let mut d = format!(
        "{PLACEMENT_MARK} project={} address={} token={} lineage={}",
        pct(&own.project),
        pct(&own.address),
        pct(&own.token),
        pct(&own.lineage)
    );
    if let Some(w) = &own.workspace {
        d.push_str(&format!(" workspace={}", pct(w)));
    }
    if d.len() > 256 {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "the ownership of placement {} does not fit a deployment set description (256 characters); use a shorter project name",
                own.address
            ),
        ));
    }
    Ok(d)
}

/// Reads back what [`placement_description`] wrote.
pub fn parse_placement_description(d: &str) -> Option<OwnershipTags> {
    let rest = d.strip_prefix(PLACEMENT_MARK)?;
    let mut fields: HashMap<&str, String> = HashMap::new();
    for part in rest.split_whitespace() {
        let (k, v) = part.split_once('=')?;
        fields.insert(k, unpct(v)?);
    }
    Some(OwnershipTags {
        project: fields.remove("project")?,
        address: fields.remove("address")?.into(),
        token: fields.remove("token")?,
        lineage: fields.remove("lineage")?,
        workspace: fields.remove("workspace"),
    })
}

fn pct(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.:[]".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn unpct(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let h = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> OwnershipTags {
        OwnershipTags {
            project: "llm research".into(),
            address: "cluster.trainer.placement".into(),
            token: "gf-0123456789abcdef0123456789abcdef".into(),
            lineage: "5f0c2d3e-1111-2222-3333-444455556666".into(),
            workspace: None,
        }
    }

    fn user(pairs: &[(&str, &str)]) -> UserTags {
        UserTags::from_map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn placement_description_round_trips() {
        let d = placement_description(&own()).unwrap();
        assert!(d.len() <= 256 && d.starts_with(PLACEMENT_MARK));
        assert_eq!(parse_placement_description(&d), Some(own()));
        assert_eq!(parse_placement_description("someone else's set"), None);
    }

    #[test]
    fn tags_at_creation() {
        let t = creation_tags(
            &own(),
            ResourceKind::Instance,
            &user(&[("team", "ml")]),
            &[(IMAGE_TAG, "ubuntu-22.04-cuda".into())],
        )
        .unwrap();
        assert_eq!(t.len(), 7);
        assert!(t.contains(&("gpuform:token".into(), own().token)));
        let many: Vec<(String, String)> = (0..16).map(|i| (format!("k{i}"), "v".into())).collect();
        let many = UserTags::from_map(many.into_iter().collect());
        assert!(creation_tags(&own(), ResourceKind::Network, &many, &[]).is_err());
        let mut long = own();
        long.address = "a".repeat(129).into();
        assert!(creation_tags(&long, ResourceKind::Network, &user(&[]), &[]).is_err());
    }

    #[test]
    fn alibaba_tag_rules() {
        assert!(AlibabaProvider::check_tag("team", "ml").is_ok());
        assert!(AlibabaProvider::check_tag("", "ml").is_err());
        assert!(AlibabaProvider::check_tag("site", "https://example.com")
            .unwrap_err()
            .contains("http://"));
        assert!(AlibabaProvider::check_tag("http://x", "v").is_err());
        assert!(AlibabaProvider::check_tag(&"k".repeat(129), "v").is_err());
        assert!(AlibabaProvider::check_tag("k", &"v".repeat(128)).is_ok());
    }

    #[test]
    fn names_and_tokens() {
        let n = resource_name(&own());
        assert!(n.starts_with("gpuform-llm-research-cluster-trainer-placement"));
        assert!(client_token(&"x".repeat(65)).is_err());
        assert!(client_token("gf-1").is_ok());
    }
}
