//! How EC2's answers read as `ObservedResource`s: refresh and the part files share it.

use crate::tags::{observed_user_tags, ownership, tag_value, IMAGE_TAG, PRICING_TAG, RDMA_TAG};
use aws_sdk_ec2::types::{
    Instance, InstanceStateName, IpPermission, PlacementGroup, SecurityGroup, Subnet, Tag, Volume,
    VolumeState, Vpc,
};
use gpuform_provider::attr;
use gpuform_provider::{
    Attrs, IngressRule, ObservedIngress, ObservedResource, Protocol, ResourceKind,
};
use serde_json::Value;
use std::collections::BTreeSet;

// ----- observed resources ----------------------------------------------------

/// The neutral resource: ownership and user tags from the EC2 tags, the
/// status lower case (`available` when EC2 reports none).
fn observed(
    kind: ResourceKind,
    id: Option<&str>,
    region: &str,
    tags: &[Tag],
    mut attrs: Attrs,
    status: Option<&str>,
) -> ObservedResource {
    let own = ownership(tags);
    attrs.insert(
        "tags".into(),
        observed_user_tags(tags, own.as_ref()).to_value(),
    );
    ObservedResource {
        kind,
        id: id.unwrap_or_default().to_string(),
        region: region.to_string(),
        ownership: own,
        attrs,
        status: status.unwrap_or("available").to_ascii_lowercase(),
    }
}

/// Neutral attributes from the fields EC2 reported (absent ones are left out).
fn attrs<const N: usize>(fields: [(&str, Option<Value>); N]) -> Attrs {
    fields
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
}

fn text(s: Option<&str>) -> Option<Value> {
    s.map(Value::from)
}

pub(crate) fn observe_vpc(v: &Vpc, region: &str) -> ObservedResource {
    let a = attrs([(attr::CIDR, text(v.cidr_block()))]);
    let status = v.state().map(|s| s.as_str());
    observed(
        ResourceKind::Network,
        v.vpc_id(),
        region,
        v.tags(),
        a,
        status,
    )
}

pub(crate) fn observe_subnet(s: &Subnet, region: &str) -> ObservedResource {
    let a = attrs([
        (attr::CIDR, text(s.cidr_block())),
        (attr::ZONE, text(s.availability_zone())),
    ]);
    let status = s.state().map(|s| s.as_str());
    observed(
        ResourceKind::Subnet,
        s.subnet_id(),
        region,
        s.tags(),
        a,
        status,
    )
}

pub(crate) fn observe_group(g: &SecurityGroup, region: &str) -> ObservedResource {
    let a = attrs([(
        attr::INGRESS,
        Some(observed_ingress(
            g.ip_permissions(),
            g.group_id(),
            egress_open(g.ip_permissions_egress()),
        )),
    )]);
    observed(
        ResourceKind::Firewall,
        g.group_id(),
        region,
        g.tags(),
        a,
        None,
    )
}

/// The placement groups that are not deleted or being deleted.
pub(crate) fn observe_placements<'a>(
    groups: &'a [PlacementGroup],
    region: &'a str,
) -> impl Iterator<Item = ObservedResource> + 'a {
    groups
        .iter()
        .filter(|g| {
            !matches!(
                g.state().map(|s| s.as_str()),
                Some("deleted") | Some("deleting")
            )
        })
        .map(move |g| observe_placement(g, region))
}

pub(crate) fn observe_placement(g: &PlacementGroup, region: &str) -> ObservedResource {
    let a = attrs([
        (attr::STRATEGY, text(g.strategy().map(|s| s.as_str()))),
        ("group_id", text(g.group_id())),
    ]);
    let status = g.state().map(|s| s.as_str());
    observed(
        ResourceKind::Placement,
        g.group_name(),
        region,
        g.tags(),
        a,
        status,
    )
}

pub(crate) fn volume_gone(v: &Volume) -> bool {
    matches!(
        v.state(),
        Some(VolumeState::Deleting) | Some(VolumeState::Deleted)
    )
}

pub(crate) fn observe_volume(v: &Volume, region: &str) -> ObservedResource {
    let a = attrs([
        (attr::ZONE, text(v.availability_zone())),
        ("size_gb", v.size().map(Value::from)),
        (
            "volume_type",
            v.volume_type()
                .map(|t| Value::from(crate::volume_types::observed(t.as_str()).as_str())),
        ),
        (
            attr::ATTACHED_TO,
            Some(attachment(v).map_or(Value::Null, Value::String)),
        ),
    ]);
    let status = Some(v.state().map(|s| s.as_str()).unwrap_or_default());
    observed(
        ResourceKind::Volume,
        v.volume_id(),
        region,
        v.tags(),
        a,
        status,
    )
}

/// Terminated and shutting-down instances are gone for gpuform.
pub(crate) fn is_gone(i: &Instance) -> bool {
    matches!(
        i.state().and_then(|s| s.name()),
        Some(InstanceStateName::Terminated) | Some(InstanceStateName::ShuttingDown)
    )
}

pub(crate) fn root_volume_id(i: &Instance) -> Option<String> {
    let root = i.root_device_name()?;
    i.block_device_mappings()
        .iter()
        .find(|m| m.device_name() == Some(root))
        .and_then(|m| m.ebs())
        .and_then(|e| e.volume_id())
        .map(str::to_string)
}

pub(crate) fn observe_instance(
    i: &Instance,
    region: &str,
    root_gb: Option<i32>,
) -> ObservedResource {
    let tags = i.tags();
    // The image as the engine named it (a logical name maps to a different
    // AMI over time); the AMI id for instances gpuform did not launch.
    let image = tag_value(tags, IMAGE_TAG).or(i.image_id());
    let spot = i.instance_lifecycle().map(|l| l.as_str()) == Some("spot");
    let pricing = match tag_value(tags, PRICING_TAG) {
        _ if spot => "spot",
        Some(p) if p != "spot" => p,
        _ => "on-demand",
    };
    // EFA shows as interface type `efa`; when gpuform launched the instance,
    // the request is kept in a tag (an rdma request on a type without EFA
    // gets plain networking, and must not look like drift).
    let has_efa = i
        .network_interfaces()
        .iter()
        .any(|n| n.interface_type() == Some("efa"));
    let rdma = tag_value(tags, RDMA_TAG).map_or(has_efa, |v| v == "true");
    let a = attrs([
        (
            attr::INSTANCE_TYPE,
            text(i.instance_type().map(|t| t.as_str())),
        ),
        (
            attr::ZONE,
            text(i.placement().and_then(|p| p.availability_zone())),
        ),
        (attr::IMAGE, text(image)),
        (attr::PRICING, text(Some(pricing))),
        ("root_gb", root_gb.map(Value::from)),
        ("rdma", Some(rdma.into())),
        // The primary private IPv4 address (a reported attribute).
        (attr::PRIVATE_IP, text(i.private_ip_address())),
    ]);
    let status = Some(
        i.state()
            .and_then(|s| s.name())
            .map(|n| n.as_str())
            .unwrap_or_default(),
    );
    observed(
        ResourceKind::Instance,
        i.instance_id(),
        region,
        tags,
        a,
        status,
    )
}

// ----- volume attachments ----------------------------------------------------

/// The instance a volume is attached (or attaching) to, per DescribeVolumes'
/// `Attachments` (a volume detaching is on its way out).
pub(crate) fn attachment(v: &Volume) -> Option<String> {
    live_attachments(v)
        .next()
        .and_then(|a| a.instance_id())
        .map(str::to_string)
}

pub(crate) fn live_attachments(
    v: &Volume,
) -> impl Iterator<Item = &aws_sdk_ec2::types::VolumeAttachment> {
    v.attachments().iter().filter(|a| {
        matches!(
            a.state().map(|s| s.as_str()),
            Some("attached") | Some("attaching")
        )
    })
}

// ----- ingress rules as EC2 reports them -------------------------------------

/// An observed CIDR rule: a neutral rule when it is one, else EC2's words
/// (a protocol or port range no spec can give, e.g. ICMPv6 or one ICMP
/// type with every code), kept so that an update can revoke it exactly.
enum Seen {
    Rule(IngressRule),
    Foreign(Value),
}

fn seen(protocol: &str, from: Option<i32>, to: Option<i32>, cidr: &str) -> Seen {
    let neutral = Protocol::parse(protocol).and_then(|p| {
        let port = |n: Option<i32>| n.and_then(|n| u16::try_from(n).ok());
        let (f, t) = match p {
            Protocol::All => (None, None),
            // -1/-1: every ICMP type and code, as a rule without ports reads.
            Protocol::Icmp if from == Some(-1) && to == Some(-1) => (None, None),
            _ => (Some(port(from)?), Some(port(to)?)),
        };
        if matches!((f, t), (Some(a), Some(b)) if a > b) {
            return None;
        }
        Some(IngressRule {
            protocol: p,
            from_port: f,
            to_port: t,
            cidr: cidr.to_string(),
        })
    });
    match neutral {
        Some(r) => Seen::Rule(r),
        None => {
            let mut m = serde_json::Map::new();
            m.insert("protocol".into(), protocol.into());
            if let Some(p) = from {
                m.insert("from_port".into(), p.into());
            }
            if let Some(p) = to {
                m.insert("to_port".into(), p.into());
            }
            m.insert("cidr".into(), cidr.into());
            Seen::Foreign(Value::Object(m))
        }
    }
}

/// The observed `ingress` of a group: its CIDR rules (group references are
/// the members' rule, reported only by its absence, see
/// [`gpuform_provider::resource::MEMBER_RULE_MISSING`]), then any rules in
/// EC2's own words.
/// `egress` says whether the group lets all traffic out ([`egress_open`]).
pub(crate) fn observed_ingress(
    perms: &[IpPermission],
    group_id: Option<&str>,
    egress: bool,
) -> Value {
    let mut seen_rules = ObservedIngress {
        rules: BTreeSet::new(),
        member_rule: perms.iter().any(|p| {
            p.user_id_group_pairs()
                .iter()
                .any(|pair| pair.group_id().is_some() && pair.group_id() == group_id)
        }),
        egress,
    };
    // In a stable order: by their JSON text.
    let mut foreign = BTreeSet::new();
    for p in perms {
        let protocol = p.ip_protocol().unwrap_or("-1");
        let v4 = p.ip_ranges().iter().filter_map(|r| r.cidr_ip());
        let v6 = p.ipv6_ranges().iter().filter_map(|r| r.cidr_ipv6());
        for cidr in v4.chain(v6) {
            match seen(protocol, p.from_port(), p.to_port(), cidr) {
                Seen::Rule(r) => {
                    seen_rules.rules.insert(r);
                }
                Seen::Foreign(v) => {
                    foreign.insert(v.to_string());
                }
            }
        }
    }
    let mut out = match seen_rules.to_value() {
        Value::Array(list) => list,
        _ => Vec::new(),
    };
    // Foreign rules go before the markers, which stay last.
    let at = out.len() - usize::from(!seen_rules.member_rule) - usize::from(!seen_rules.egress);
    let foreign = foreign.iter().filter_map(|s| serde_json::from_str(s).ok());
    out.splice(at..at, foreign);
    Value::Array(out)
}

/// Whether a group's outbound permissions let all traffic out: EC2's
/// default rule of a new VPC group (protocol `-1` to 0.0.0.0/0, "Default
/// security group rules", EC2 User Guide), which gpuform keeps.
pub(crate) fn egress_open(perms: &[IpPermission]) -> bool {
    perms.iter().any(|p| {
        p.ip_protocol() == Some("-1")
            && p.ip_ranges()
                .iter()
                .any(|r| r.cidr_ip() == Some("0.0.0.0/0"))
    })
}
