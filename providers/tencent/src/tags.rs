//! Tags on Tencent Cloud: how gpuform's ownership and record tags and the
//! user's tags are written (`Tags` / `TagSpecification` lists of `{Key,
//! Value}`) and read back, and Tencent's tag naming rules.
//!
//! The naming rules ("Use Limits",
//! https://www.tencentcloud.com/document/product/651/13354): a key is 1 to 127
//! and a value 1 to 255 Unicode characters; letters of any script, digits,
//! spaces (never first or last) and `+ - = . _ : / @ ( ) [ ] , ; > <` (typed
//! in Chinese also `【 】 ： （ ）`); keys starting with `qcs:` or `project:`
//! are reserved. CreateVpc and the other creating calls refuse a tag that
//! breaks them, so `gpuform validate` checks them first.

use crate::client::{s, STS, TAG};
use crate::TencentProvider;
use async_trait::async_trait;
use gpuform_provider::resource::record_tags;
use gpuform_provider::tags::reserved_prefixes;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, ErrorKind, ExistingResource, OwnershipTags, ProviderError, ResourceKind, TagApi, Update,
    UserTags,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The image the engine asked for (a logical name), on instances.
pub(crate) const TAG_IMAGE: &str = record_tags::IMAGE;
/// The neutral kind, on instances and data disks: RunInstances binds the
/// instance's tags to its system disk too (213/15730), so a disk tagged
/// `instance` is a system disk, never a volume.
pub(crate) const TAG_KIND: &str = record_tags::KIND;
/// The pricing model asked for: a PREPAID period is not reported back.
pub(crate) const TAG_PRICING: &str = record_tags::PRICING;

/// Why a tag breaks the rules, and what to write instead.
pub type TagProblem = gpuform_provider::UserError;

const PUNCTUATION: &str = "+-=._:/@()[],;><【】：（）";
const KEY_MAX: usize = 127;
const VALUE_MAX: usize = 255;

fn allowed(c: char) -> bool {
    c.is_alphanumeric() || c == ' ' || PUNCTUATION.contains(c)
}

fn check_text(text: &str, what: &str, max: usize) -> Result<(), TagProblem> {
    let n = text.chars().count();
    if n == 0 {
        return Err(TagProblem {
            message: format!("a Tencent Cloud tag {what} cannot be empty"),
            hint: format!("give it 1 to {max} characters"),
        });
    }
    if n > max {
        return Err(TagProblem {
            message: format!("this tag {what} has {n} characters; Tencent Cloud allows {max}"),
            hint: format!("shorten it to at most {max} characters"),
        });
    }
    if text.starts_with(' ') || text.ends_with(' ') {
        return Err(TagProblem {
            message: format!("a Tencent Cloud tag {what} cannot start or end with a space"),
            hint: "remove the leading or trailing spaces".into(),
        });
    }
    if let Some(c) = text.chars().find(|c| !allowed(*c)) {
        return Err(TagProblem {
            message: format!("Tencent Cloud does not allow `{c}` in a tag {what}"),
            hint: "use letters, digits, spaces and + - = . _ : / @ ( ) [ ] , ; > < only".into(),
        });
    }
    Ok(())
}

/// Checks a tag key against Tencent's rules.
pub fn check_key(key: &str) -> Result<(), TagProblem> {
    check_text(key, "key", KEY_MAX)?;
    let lower = key.to_lowercase();
    // `qcs:` and `project:` (651/13354), and `qcloud`, `tencent`, `project`
    // in CreateTag's error table (651/33015): the list the provider API keeps.
    if let Some(p) = reserved_prefixes(Cloud::Tencent)
        .iter()
        .find(|p| lower.starts_with(*p))
    {
        return Err(TagProblem {
            message: format!("tag keys starting with `{p}` are reserved by Tencent Cloud"),
            hint: "choose another key".into(),
        });
    }
    Ok(())
}

/// Checks a tag value against Tencent's rules.
pub fn check_value(value: &str) -> Result<(), TagProblem> {
    check_text(value, "value", VALUE_MAX)
}

/// Checks a user tag (key and value) against Tencent's rules.
pub fn check(key: &str, value: &str) -> Result<(), TagProblem> {
    check_key(key)?;
    check_value(value)
}

#[async_trait]
impl TagApi for TencentProvider {
    /// [`check`] as the provider's `check_tag`: the message and its hint.
    fn check_tag(key: &str, value: &str) -> Result<(), String> {
        check(key, value).map_err(|p| format!("{}\n  hint: {}", p.message, p.hint))
    }

    async fn update_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let current = u.current;
        Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{} {}: changing tags in place is not supported by the Tencent Cloud provider yet \
                 (it needs the Tag API with the account's UIN); tags are set at creation",
                current.kind, current.id
            ),
        ))
    }

    /// One TagResources of the ownership tags on the resource's six-segment
    /// name (https://www.tencentcloud.com/document/product/651/46533): a key
    /// already there gets the new value, so the same call again changes
    /// nothing, and all tags land in one call, so a kill never leaves a
    /// resource half-owned.
    async fn set_ownership(
        &self,
        ExistingResource { scope, kind, id }: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        let (service, prefix) = six_segment_type(kind)?;
        let uin = account_uin(self, &scope.region).await?;
        let region = scope.region.as_str();
        let resource = format!("qcs::{service}:{region}:uin/{uin}:{prefix}/{id}");
        let tags: Vec<Value> = ownership
            .to_tags()
            .into_iter()
            .map(|(k, v)| json!({"Key": k, "Value": v}))
            .collect();
        let body = json!({"ResourceList": [resource], "Tags": tags});
        let resp = self.client.call(TAG, "TagResources", region, &body).await?;
        // FailedResources lists what was not tagged (empty on success).
        let failed = resp
            .get("FailedResources")
            .and_then(Value::as_array)
            .and_then(|f| f.first());
        if let Some(f) = failed {
            let code = s(f, "Code");
            return Err(ProviderError::new(
                crate::errors::classify(code),
                format!(
                    "TagResources: {kind} {id} was not tagged: {} {}",
                    code,
                    s(f, "Message")
                ),
            )
            .with_code(code.to_string()));
        }
        Ok(())
    }
}

/// The service and resource prefix of a kind's six-segment name
/// (`qcs::SERVICE:REGION:uin/UIN:PREFIX/ID`, CAM "Resource Description
/// Method", https://www.tencentcloud.com/document/product/598/10606; CBS
/// disks and security groups are named under `cvm`).
fn six_segment_type(kind: ResourceKind) -> Result<(&'static str, &'static str)> {
    match kind {
        ResourceKind::Network => Ok(("vpc", "vpc")),
        ResourceKind::Subnet => Ok(("vpc", "subnet")),
        ResourceKind::Firewall => Ok(("cvm", "sg")),
        ResourceKind::Instance => Ok(("cvm", "instance")),
        ResourceKind::Volume => Ok(("cvm", "volume")),
        ResourceKind::Placement | ResourceKind::Bucket | ResourceKind::Block => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("gpuform cannot import a Tencent Cloud {kind}: it makes none on an imported cluster"),
        )),
    }
}

/// The root account's UIN, which a six-segment name carries: STS
/// GetCallerIdentity's `AccountId`
/// (https://www.tencentcloud.com/document/product/1150/49453), read once.
async fn account_uin(p: &TencentProvider, region: &str) -> Result<String> {
    if let Some(uin) = p.account.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return Ok(uin);
    }
    let resp = p
        .client
        .call(STS, "GetCallerIdentity", region, &json!({}))
        .await?;
    let uin = s(&resp, "AccountId").to_string();
    if uin.is_empty() {
        return Err(crate::errors::undocumented(
            "GetCallerIdentity",
            "AccountId",
        ));
    }
    *p.account.lock().unwrap_or_else(|e| e.into_inner()) = Some(uin.clone());
    Ok(uin)
}

/// A Describe filter on one tag's value.
pub(crate) fn tag_filter(key: &str, value: &str) -> Value {
    json!({"Name": format!("tag:{key}"), "Values": [value]})
}

/// `[{Key, Value}]`: ownership tags, gpuform's record tags, then user tags.
pub(crate) fn tag_list(own: &OwnershipTags, extra: &[(&str, &str)], user: &UserTags) -> Vec<Value> {
    own.to_tags()
        .into_iter()
        .chain(extra.iter().copied())
        .chain(user.iter())
        .map(|(k, v)| json!({"Key": k, "Value": v}))
        .collect()
}

/// Tags of a described resource (`Tags` / `TagSet`, items `{Key, Value}`).
pub(crate) fn tags_of(item: &Value) -> BTreeMap<String, String> {
    let list = item
        .get("Tags")
        .or_else(|| item.get("TagSet"))
        .and_then(Value::as_array);
    let mut out = BTreeMap::new();
    for t in list.into_iter().flatten() {
        if let (Some(k), Some(v)) = (
            t.get("Key").and_then(Value::as_str),
            t.get("Value").and_then(Value::as_str),
        ) {
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

/// The tags a [`tag_list`] writes, as they will read back.
pub(crate) fn tags_from_list(list: &[Value]) -> BTreeMap<String, String> {
    tags_of(&json!({ "Tags": list }))
}

pub(crate) fn ownership_of(tags: &BTreeMap<String, String>) -> Option<OwnershipTags> {
    OwnershipTags::from_tags(|k| tags.get(k).map(String::as_str))
}

/// The neutral `tags` attribute: the user's tags among a resource's tags.
pub(crate) fn user_tags_value(tags: &BTreeMap<String, String>) -> Value {
    UserTags::observed(
        Cloud::Tencent,
        tags.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .to_value()
}

/// A resource name from the ownership tags, within `max` characters.
pub(crate) fn resource_name(own: &OwnershipTags, max: usize) -> String {
    let full = format!("{}-{}", own.project, own.address);
    full.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_rules() {
        assert!(check("team", "research").is_ok());
        assert!(check("成本中心", "研发部 (北京)").is_ok());
        assert!(check("owner", "a.b_c-d+e=f:g/h@i[j],k;l>m<").is_ok());
        assert!(check("team", "").is_err(), "values are 1-255 characters");
        assert!(check("team", &"x".repeat(256)).is_err());
        assert!(check(&"k".repeat(128), "v").is_err());
        assert!(check("team", " research").is_err());
        assert!(check("team", "r&d").is_err());
        assert!(check("team", "a*b").is_err());
        assert!(check("qcs:x", "v").is_err());
        assert!(check("project:x", "v").is_err());
        let e = TencentProvider::check_tag("team", "r&d").unwrap_err();
        assert!(e.contains('&') && e.contains("hint: use letters"), "{e}");
    }

    #[test]
    fn written_tags_read_back_and_only_user_tags_are_observed() {
        let own = OwnershipTags {
            project: "p".into(),
            address: "cluster.a.node[0]".into(),
            token: "t".into(),
            lineage: "l".into(),
            workspace: None,
        };
        let user = UserTags::from_map([("team".to_string(), "ml".to_string())].into());
        let list = tag_list(&own, &[(TAG_KIND, "instance")], &user);
        assert_eq!(list[0], json!({"Key": "gpuform:project", "Value": "p"}));
        let back = tags_from_list(&list);
        assert_eq!(ownership_of(&back), Some(own.clone()));
        assert_eq!(user_tags_value(&back), json!({"team": "ml"}));
        assert_eq!(resource_name(&own, 5), "p-clu");
    }
}
