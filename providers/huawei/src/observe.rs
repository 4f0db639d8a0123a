//! How Huawei's answers read as neutral observations: [`ObservedResource`]s and their attributes.

use crate::client::s;
use crate::tags;
use base64::Engine as _;
use gpuform_provider::attr;
use gpuform_provider::resource::{egress_missing, member_rule_missing};
use gpuform_provider::{Attrs, IngressRule, ObservedResource, ResourceKind};
use serde_json::{json, Value};
use std::collections::HashMap;

/// The resource, with its ownership and user tags read from `tags`.
pub(crate) fn observed(
    kind: ResourceKind,
    id: &str,
    region: &str,
    tags: Option<&[(String, String)]>,
    mut attrs: Attrs,
    status: &str,
) -> ObservedResource {
    let ownership = tags.and_then(tags::ownership_from);
    if let Some(t) = tags {
        attrs.insert(attr::TAGS.into(), tags::observed_user_tags(t).to_value());
    }
    ObservedResource {
        kind,
        id: id.to_string(),
        region: region.to_string(),
        ownership,
        attrs,
        status: status.to_ascii_lowercase(),
    }
}

/// [`observed`] for an answer item that carries its own `id` and `status`.
fn observed_item(
    kind: ResourceKind,
    item: &Value,
    region: &str,
    tags: &[(String, String)],
    attrs: Attrs,
) -> ObservedResource {
    observed(
        kind,
        &s(item, "id"),
        region,
        Some(tags),
        attrs,
        &s(item, "status"),
    )
}

/// A VPC: `cidr`; `OK` is available ("Querying VPC Details": CREATING / OK).
pub(crate) fn observe_vpc(it: &Value) -> (Attrs, String) {
    let attrs = Attrs::from([("cidr".to_string(), json!(s(it, "cidr")))]);
    (attrs, ready_as_available(it, "OK"))
}

/// A subnet: `cidr`, `zone`; `ACTIVE` is available.
pub(crate) fn observe_subnet(it: &Value) -> (Attrs, String) {
    let attrs = Attrs::from([
        ("cidr".to_string(), json!(s(it, "cidr"))),
        (attr::ZONE.to_string(), json!(s(it, "availability_zone"))),
    ]);
    (attrs, ready_as_available(it, "ACTIVE"))
}

fn ready_as_available(it: &Value, ready: &str) -> String {
    match s(it, "status") {
        st if st == ready => "available".to_string(),
        other => other,
    }
}

/// The `ingress` attribute as observed: the CIDR ingress rules in the
/// group's order (a rule the neutral model cannot say, e.g. another
/// protocol, is shown as the cloud has it, so it reads as drift), then the
/// marker when the members' rule (ingress from the group itself,
/// `remote_group_id`) is missing.
pub(crate) fn observe_ingress(sg: &Value) -> Value {
    let rules = ingress_rules(sg);
    let mut out: Vec<Value> = rules
        .iter()
        .filter(|r| !s(r, "remote_ip_prefix").is_empty())
        .map(|r| {
            let raw = neutral_rule(r);
            IngressRule::parse(&raw).map_or(raw, |rule| rule.to_json())
        })
        .collect();
    let own = s(sg, "id");
    if !rules
        .iter()
        .any(|r| !own.is_empty() && s(r, "remote_group_id") == own)
    {
        out.push(member_rule_missing());
    }
    if !egress_open(sg) {
        out.push(egress_missing());
    }
    Value::Array(out)
}

/// An EVS disk ("Querying Details About an EVS Disk"): `zone`, `size_gb`,
/// `volume_type`, and `attached_to` (always set: null when detached).
pub fn observe_volume(v: &Value, region: &str) -> ObservedResource {
    let tag_list = tags::from_map(v.get("tags").unwrap_or(&Value::Null));
    let mut a = Attrs::new();
    a.insert(attr::ZONE.into(), json!(s(v, "availability_zone")));
    if let Some(n) = v.get("size").and_then(Value::as_u64) {
        a.insert(attr::SIZE_GB.into(), json!(n));
    }
    a.insert(
        "volume_type".into(),
        json!(crate::volume_types::observed(&s(v, "volume_type")).as_str()),
    );
    a.insert(
        attr::ATTACHED_TO.into(),
        attachment(v).map_or(Value::Null, Value::String),
    );
    observed_item(ResourceKind::Volume, v, region, &tag_list, a)
}

/// The private IPv4 address of an ECS: among `addresses` (network id →
/// list), the first with `OS-EXT-IPS:type` `fixed` ("the private IP
/// address"; `floating` is an EIP) and `version` 4 ("Data Structure for
/// Querying Details About ECSs", support.huaweicloud.com/api-ecs/ecs_05_0002.html).
/// The primary NIC's network comes first in gpuform's servers (one NIC).
fn private_ip(sv: &Value) -> Option<String> {
    sv.get("addresses")
        .and_then(Value::as_object)?
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .find(|a| s(a, "OS-EXT-IPS:type") == "fixed" && s(a, "version") == "4")
        .map(|a| s(a, "addr"))
        .filter(|ip| !ip.is_empty())
}

/// An ECS from the v1 detail listing: `instance_type`, `zone`, `image` (the
/// logical name it was made from, kept in its metadata), `pricing` (from
/// `charging_mode`), `root_gb`, `user_data`, `private_ip`. `tags` there are `key=value`
/// strings.
pub(crate) fn observe_server(
    sv: &Value,
    region: &str,
    root_sizes: &HashMap<String, u64>,
) -> ObservedResource {
    let tag_list = tags::from_pairs(sv.get("tags").unwrap_or(&Value::Null));
    let md = sv.get("metadata").cloned().unwrap_or(Value::Null);
    let mut a = Attrs::new();
    if let Some(f) = sv.pointer("/flavor/id").and_then(Value::as_str) {
        a.insert(attr::INSTANCE_TYPE.into(), json!(f));
    }
    a.insert(
        attr::ZONE.into(),
        json!(s(sv, "OS-EXT-AZ:availability_zone")),
    );
    let image = match s(&md, "gpuform_image") {
        i if !i.is_empty() => i,
        _ => sv
            .pointer("/image/id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    };
    a.insert(attr::IMAGE.into(), json!(image));
    let asked = s(&md, "gpuform_pricing");
    let pricing = match s(&md, "charging_mode").as_str() {
        "0" => "on-demand".to_string(),
        "2" => "spot".to_string(),
        "1" if asked.starts_with("reserved-") => asked,
        "1" => "reserved-1y".to_string(),
        _ => asked,
    };
    if !pricing.is_empty() {
        a.insert(attr::PRICING.into(), json!(pricing));
    }
    let boot = sv
        .get("os-extended-volumes:volumes_attached")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| s(v, "bootIndex") == "0")
        .map(|v| s(v, "id"));
    if let Some(size) = boot.and_then(|b| root_sizes.get(&b)) {
        a.insert(attr::ROOT_GB.into(), json!(size));
    }
    if let Some(ip) = private_ip(sv) {
        a.insert(attr::PRIVATE_IP.into(), json!(ip));
    }
    if let Some(u) = sv.get("OS-EXT-SRV-ATTR:user_data").and_then(Value::as_str) {
        if let Some(text) = base64::engine::general_purpose::STANDARD
            .decode(u)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        {
            a.insert(attr::USER_DATA.into(), json!(text));
        }
    }
    observed_item(ResourceKind::Instance, sv, region, &tag_list, a)
}

/// Whether a group lets all IPv4 traffic out: the egress rule every new
/// group has ("Creating a Security Group", vpc_sg01_0001: all outbound
/// traffic allowed), with no protocol and no remote (or 0.0.0.0/0).
pub fn egress_open(sg: &Value) -> bool {
    let empty = |r: &Value, k: &str| s(r, k).is_empty();
    sg.get("security_group_rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            s(r, "direction") == "egress"
                && s(r, "ethertype") == "IPv4"
                && empty(r, "protocol")
                && empty(r, "remote_group_id")
                && (empty(r, "remote_ip_prefix") || s(r, "remote_ip_prefix") == "0.0.0.0/0")
        })
}

/// A group's ingress rules (from CIDRs and from groups), in its order.
pub fn ingress_rules(sg: &Value) -> Vec<&Value> {
    sg.get("security_group_rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| s(r, "direction") == "ingress")
        .collect()
}

/// A group's CIDR rule in neutral words (`{protocol, from_port, to_port,
/// cidr}`), ICMP ports read back from the description `network::rule_body` wrote.
pub fn neutral_rule(r: &Value) -> Value {
    let (mut from, mut to) = (
        r.get("port_range_min").cloned().unwrap_or(Value::Null),
        r.get("port_range_max").cloned().unwrap_or(Value::Null),
    );
    if let Some((f, t)) = s(r, "description")
        .strip_prefix("gpuform-ports=")
        .and_then(|p| p.split_once('-'))
    {
        if let (Ok(f), Ok(t)) = (f.parse::<u64>(), t.parse::<u64>()) {
            from = json!(f);
            to = json!(t);
        }
    }
    json!({"protocol": s(r, "protocol"), "from_port": from, "to_port": to, "cidr": s(r, "remote_ip_prefix")})
}

/// The server a disk is attached to: the first of its `attachments`
/// ("Querying Details About an EVS Disk": server_id per attachment).
pub fn attachment(v: &Value) -> Option<String> {
    v.get("attachments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|at| s(at, "server_id"))
        .find(|sid| !sid.is_empty())
}
