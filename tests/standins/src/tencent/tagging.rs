//! What `gpuform import` calls beyond cvm, vpc and cbs: STS
//! GetCallerIdentity (the account's UIN) and the Tag API's TagResources
//! (tags on a resource named in six segments), both version 2018-08-13.

use super::actions::{bad, missing, parse_tags};
use super::state::{State, Tags};
use super::ApiError;
use gpuform_provider::ResourceKind;
use serde_json::{json, Value};

type R = Result<Value, ApiError>;

/// The root account the stand-in's keys belong to (an assumption: any UIN).
pub const ACCOUNT_UIN: &str = "100023456789";

/// GetCallerIdentity, https://www.tencentcloud.com/document/product/1150/49453:
/// no parameters; `Arn`, `AccountId` (the root account's UIN), `UserId`,
/// `PrincipalId`, `Type`. The stand-in's keys are the root account's.
pub(crate) fn get_caller_identity() -> R {
    Ok(json!({
        "Arn": format!("qcs::cam::uin/{ACCOUNT_UIN}:uin/{ACCOUNT_UIN}"),
        "AccountId": ACCOUNT_UIN,
        "UserId": ACCOUNT_UIN,
        "PrincipalId": ACCOUNT_UIN,
        "Type": "CAMUser",
    }))
}

/// TagResources, https://www.tencentcloud.com/document/product/651/46533:
/// `ResourceList.N` (N 0-9: at most 10) of six-segment names
/// `qcs::SERVICE:REGION:uin/UIN:PREFIX/ID` (CAM "Resource Description
/// Method", https://www.tencentcloud.com/document/product/598/10606) and
/// `Tags.N` (at most 10 `{Key, Value}`): each tag is bound to each
/// resource, a key already there takes the new value. Answers
/// `FailedResources` (empty when every resource was tagged); a resource
/// that does not exist is reported there (its code is the stand-in's
/// choice: the page lists none for it).
pub(crate) fn tag_resources(st: &mut State, p: &Value) -> R {
    let list = p
        .get("ResourceList")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or_else(|| missing("ResourceList"))?;
    if list.len() > 10 {
        return Err(bad("ResourceList", "at most 10 resources"));
    }
    let tags = parse_tags(p.get("Tags"), "Tags")?;
    if tags.is_empty() {
        return Err(missing("Tags"));
    }
    if tags.len() > 10 {
        return Err(bad("Tags", "at most 10 tags"));
    }
    let mut names = Vec::new();
    for r in list {
        let name = r
            .as_str()
            .ok_or_else(|| bad("ResourceList", "not a list of strings"))?;
        names.push((name.to_string(), six_segments(name)?));
    }
    let mut failed = Vec::new();
    for (name, (service, region, prefix, id)) in names {
        let found = resource_tags(st, &id).filter(|(kind, r, _)| {
            *r == region && kind_name(*kind) == Some((service.as_str(), prefix.as_str()))
        });
        let Some((_, _, have)) = found else {
            failed.push(json!({
                "Resource": name,
                "Code": "ResourceNotFound",
                "Message": format!("There is no {service} {prefix} `{id}` in {region}."),
            }));
            continue;
        };
        for (k, v) in &tags {
            match have.iter_mut().find(|(hk, _)| hk == k) {
                Some(t) => t.1 = v.clone(),
                None => have.push((k.clone(), v.clone())),
            }
        }
        if have.len() > 50 {
            return Err(ApiError::new(
                "LimitExceeded.TagResourceQuota",
                "At most 50 tags per resource.",
            ));
        }
    }
    Ok(json!({ "FailedResources": failed }))
}

/// `qcs::SERVICE:REGION:uin/UIN:PREFIX/ID` → (service, region, prefix, id),
/// refusing another account's resources.
fn six_segments(name: &str) -> Result<(String, String, String, String), ApiError> {
    let wrong = || {
        ApiError::new(
            "InvalidParameterValue.ResourceDescriptionError",
            format!("`{name}` is not a six-segment resource description."),
        )
    };
    let parts: Vec<&str> = name.split(':').collect();
    let [qcs, "", service, region, account, resource] = parts.as_slice() else {
        return Err(wrong());
    };
    let (prefix, id) = resource.split_once('/').ok_or_else(wrong)?;
    if *qcs != "qcs" || service.is_empty() || region.is_empty() || id.is_empty() {
        return Err(wrong());
    }
    if *account != format!("uin/{ACCOUNT_UIN}") {
        return Err(ApiError::new(
            "AuthFailure.UnauthorizedOperation",
            format!("`{account}` is not the account of these keys."),
        ));
    }
    Ok((
        service.to_string(),
        region.to_string(),
        prefix.to_string(),
        id.to_string(),
    ))
}

/// The (service, prefix) a kind is named with.
fn kind_name(kind: ResourceKind) -> Option<(&'static str, &'static str)> {
    match kind {
        ResourceKind::Network => Some(("vpc", "vpc")),
        ResourceKind::Subnet => Some(("vpc", "subnet")),
        ResourceKind::Firewall => Some(("cvm", "sg")),
        ResourceKind::Instance => Some(("cvm", "instance")),
        ResourceKind::Volume => Some(("cvm", "volume")),
        ResourceKind::Placement | ResourceKind::Bucket | ResourceKind::Block => None,
    }
}

/// A resource's kind, region and tags, by id.
fn resource_tags<'s>(st: &'s mut State, id: &str) -> Option<(ResourceKind, String, &'s mut Tags)> {
    if let Some(r) = st.vpcs.get_mut(id) {
        return Some((ResourceKind::Network, r.region.clone(), &mut r.tags));
    }
    if let Some(r) = st.subnets.get_mut(id) {
        return Some((ResourceKind::Subnet, r.region.clone(), &mut r.tags));
    }
    if let Some(r) = st.sgs.get_mut(id) {
        return Some((ResourceKind::Firewall, r.region.clone(), &mut r.tags));
    }
    if let Some(r) = st.groups.get_mut(id) {
        return Some((ResourceKind::Placement, r.region.clone(), &mut r.tags));
    }
    if let Some(r) = st.instances.get_mut(id) {
        return Some((ResourceKind::Instance, r.region.clone(), &mut r.tags));
    }
    st.disks
        .get_mut(id)
        .map(|r| (ResourceKind::Volume, r.region.clone(), &mut r.tags))
}

/// Removes gpuform's tags (`gpuform:*`) from a resource, as if a console or
/// another tool had made it; false if there is no such resource.
pub(crate) fn disown(st: &mut State, id: &str) -> bool {
    match resource_tags(st, id) {
        Some((_, _, tags)) => {
            tags.retain(|(k, _)| !k.starts_with("gpuform:"));
            true
        }
        None => false,
    }
}
