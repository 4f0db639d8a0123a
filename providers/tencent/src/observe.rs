//! How Tencent's answers read as neutral observations: [`ObservedResource`]s and their attributes.

use crate::client::s;
use crate::tags::{ownership_of, tags_of, user_tags_value, TAG_IMAGE, TAG_PRICING};
use gpuform_provider::attr;
use gpuform_provider::{
    Attrs, IngressRule, ObservedIngress, ObservedResource, Pricing, Protocol, ResourceKind,
};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A described item as the neutral resource of `kind`, its id under
/// `id_key` (a listing's, see `refresh::observe`).
pub(crate) fn described(
    kind: ResourceKind,
    id_key: &str,
    v: &Value,
    region: &str,
) -> ObservedResource {
    let tags = tags_of(v);
    let mut a = Attrs::new();
    let status = match kind {
        ResourceKind::Network => {
            a.insert(attr::CIDR.into(), json!(s(v, "CidrBlock")));
            "available"
        }
        ResourceKind::Subnet => {
            a.insert(attr::CIDR.into(), json!(s(v, "CidrBlock")));
            a.insert(attr::ZONE.into(), json!(s(v, "Zone")));
            "available"
        }
        // A group's rules come from another call (see `refresh::observe_all`).
        ResourceKind::Firewall
        | ResourceKind::Placement
        | ResourceKind::Bucket
        | ResourceKind::Block => "available",
        ResourceKind::Instance => {
            instance_attrs(v, &tags, &mut a);
            s(v, "InstanceState")
        }
        ResourceKind::Volume => {
            disk_attrs(v, &mut a);
            s(v, "DiskState")
        }
    };
    observed(kind, s(v, id_key), region, &tags, a, status)
}

/// The neutral resource, with the user's tags as its `tags`.
pub(crate) fn observed(
    kind: ResourceKind,
    id: &str,
    region: &str,
    tags: &std::collections::BTreeMap<String, String>,
    mut attrs: Attrs,
    status: &str,
) -> ObservedResource {
    attrs.insert(attr::TAGS.into(), user_tags_value(tags));
    ObservedResource {
        kind,
        id: id.to_string(),
        region: region.to_string(),
        ownership: ownership_of(tags),
        attrs,
        status: status.to_ascii_lowercase(),
    }
}

fn zone_of(v: &Value) -> Option<&str> {
    v.get("Placement")
        .and_then(|p| p.get("Zone"))
        .and_then(Value::as_str)
}

fn pricing_of(
    charge_type: &str,
    tags: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    match charge_type {
        "POSTPAID_BY_HOUR" => Some(Pricing::OnDemand.to_string()),
        "SPOTPAID" => Some(Pricing::Spot.to_string()),
        // The period is not reported back; gpuform tags what it asked for.
        "PREPAID" => Some(
            tags.get(TAG_PRICING)
                .cloned()
                .unwrap_or_else(|| Pricing::Reserved1y.to_string()),
        ),
        _ => None,
    }
}

fn instance_attrs(v: &Value, tags: &std::collections::BTreeMap<String, String>, a: &mut Attrs) {
    a.insert(attr::INSTANCE_TYPE.into(), json!(s(v, "InstanceType")));
    if let Some(z) = zone_of(v) {
        a.insert(attr::ZONE.into(), json!(z));
    }
    let image = tags
        .get(TAG_IMAGE)
        .cloned()
        .unwrap_or_else(|| s(v, "ImageId").to_string());
    a.insert(attr::IMAGE.into(), json!(image));
    if let Some(p) = pricing_of(s(v, "InstanceChargeType"), tags) {
        a.insert(attr::PRICING.into(), json!(p));
    }
    if let Some(size) = v
        .get("SystemDisk")
        .and_then(|d| d.get("DiskSize"))
        .and_then(Value::as_u64)
    {
        a.insert(attr::ROOT_GB.into(), json!(size));
    }
    // The primary private address: DescribeInstances' `PrivateIpAddresses`
    // (https://www.tencentcloud.com/document/api/213/15753, Instance), the
    // primary ENI's first.
    if let Some(ip) = v
        .pointer("/PrivateIpAddresses/0")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
    {
        a.insert(attr::PRIVATE_IP.into(), json!(ip));
    }
}

fn disk_attrs(v: &Value, a: &mut Attrs) {
    if let Some(z) = zone_of(v) {
        a.insert(attr::ZONE.into(), json!(z));
    }
    if let Some(size) = v.get("DiskSize").and_then(Value::as_u64) {
        a.insert(attr::SIZE_GB.into(), json!(size));
    }
    a.insert(
        "volume_type".into(),
        json!(crate::volume_types::observed(s(v, "DiskType")).as_str()),
    );
    a.insert(
        attr::ATTACHED_TO.into(),
        attachment(v).map_or(Value::Null, Value::String),
    );
}

/// The instance a disk is attached (or attaching) to: DescribeDisks'
/// `InstanceId` while `DiskState` is ATTACHED or ATTACHING
/// (https://www.tencentcloud.com/document/api/362/16315).
pub(crate) fn attachment(v: &Value) -> Option<String> {
    let i = s(v, "InstanceId");
    (matches!(s(v, "DiskState"), "ATTACHED" | "ATTACHING") && !i.is_empty()).then(|| i.to_string())
}

/// The description gpuform gives a CIDR policy: the port range as the spec
/// wrote it, for what `Port` cannot say (ICMP has no port; `ALL` is 0-65535
/// or whatever full range the spec spelled).
pub(crate) const PORTS_NOTE: &str = "gpuform ports=";

/// Whether Egress `policies` let all traffic out: a policy that ACCEPTs
/// every protocol to 0.0.0.0/0, as `network::egress_policies` writes, ahead of any
/// DROP (policies apply in order, the first match wins: 215/20089).
fn egress_open(policies: &[Value]) -> bool {
    for p in policies {
        let all = matches!(s(p, "Protocol").to_ascii_lowercase().as_str(), "all" | "");
        let everywhere = s(p, "CidrBlock") == "0.0.0.0/0";
        if all && everywhere {
            return s(p, "Action").eq_ignore_ascii_case("ACCEPT");
        }
    }
    false
}

/// The `ingress` attribute as a group's Ingress policies say it is: the
/// CIDR rules that ACCEPT, as an [`ObservedIngress`] (a set, in the neutral
/// rules' order), with the members' rule missing when no policy accepts all
/// traffic from the group itself, and the egress marker when `egress`
/// does not let all traffic out. A new group denies everything in both
/// directions (CreateSecurityGroup, 215/15806): a create interrupted
/// before either CreateSecurityGroupPolicies call leaves it so, and this is
/// how refresh sees it.
pub(crate) fn observed_ingress(sg: &str, policies: &[Value], egress: &[Value]) -> Value {
    let mut seen = ObservedIngress {
        rules: BTreeSet::new(),
        member_rule: false,
        egress: egress_open(egress),
    };
    for p in policies {
        if !s(p, "Action").eq_ignore_ascii_case("ACCEPT") {
            continue;
        }
        let group = s(p, "SecurityGroupId");
        if !group.is_empty() {
            let all = matches!(s(p, "Protocol").to_ascii_lowercase().as_str(), "all" | "");
            seen.member_rule |= group == sg && all;
            continue;
        }
        // A policy gpuform cannot write (another protocol, an address
        // template) is no neutral rule.
        if let Some(rule) = rule_of_policy(p) {
            seen.rules.insert(rule);
        }
    }
    seen.to_value()
}

/// A CIDR policy as a neutral rule. Its ports: `Port` ("80", "8000-8010");
/// when that is `ALL` or absent, the range gpuform noted in
/// `PolicyDescription`; else every port for tcp and udp, none for the rest.
fn rule_of_policy(p: &Value) -> Option<IngressRule> {
    let protocol = Protocol::parse(s(p, "Protocol"))?;
    let cidr = Some(s(p, "CidrBlock")).filter(|c| !c.is_empty())?;
    let num = |x: &str| x.trim().parse::<u16>().ok();
    let range = |r: &str| {
        r.split_once('-')
            .and_then(|(a, b)| Some((num(a)?, num(b)?)))
    };
    let port = s(p, "Port").trim();
    let noted = s(p, "PolicyDescription").strip_prefix(PORTS_NOTE);
    let ports = num(port)
        .map(|n| (n, n))
        .or_else(|| range(port))
        .or_else(|| noted.and_then(range))
        .or(protocol.has_ports().then_some((0, 65535)));
    Some(IngressRule {
        protocol,
        from_port: ports.map(|(f, _)| f),
        to_port: ports.map(|(_, t)| t),
        cidr: cidr.to_string(),
    })
}
