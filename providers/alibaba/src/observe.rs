//! How the ECS and VPC Describe answers read as neutral observations
//! (`ObservedResource` and its attributes): every kind's `observe_*`, and
//! the maps they share with the part files (a group's rules as `Perm`).

use crate::client::{text, Params};
use crate::tags::{
    ownership_of, parse_placement_description, tags_of, user_tags_of, IMAGE_TAG, PRICING_TAG,
    RDMA_TAG,
};
use crate::volume_types;
use gpuform_provider::attr;
use gpuform_provider::{
    Attrs, IngressRule, ObservedIngress, ObservedResource, PlacementStrategy, Pricing, Protocol,
    ResourceKind,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// An observed resource from a Describe item: its id under `id_key`, its
/// status (lower case), ownership from its tags and the user tags in `tags`.
pub(crate) fn observed(
    kind: ResourceKind,
    item: &Value,
    id_key: &str,
    tags: &BTreeMap<String, String>,
    mut attrs: Attrs,
    region: &str,
) -> ObservedResource {
    attrs.insert(attr::TAGS.into(), user_tags_of(tags).to_value());
    ObservedResource {
        kind,
        id: text(item, id_key),
        region: region.to_string(),
        ownership: ownership_of(tags),
        attrs,
        status: text(item, "Status").to_ascii_lowercase(),
    }
}

// --------------------------------------------------------------------- firewall rules

/// A permission as AuthorizeSecurityGroup takes it (`Permissions.N.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Perm {
    /// `tcp`, `udp`, `icmp`, `all` (the API is case-insensitive; lower case here).
    protocol: String,
    /// `from/to`; `-1/-1` for icmp and all.
    port_range: String,
    source_cidr: Option<String>,
    source_group: Option<String>,
    /// For icmp and all, the ports the spec gave (they have none in the
    /// API), kept in the rule's description so that an unchanged rule reads
    /// back unchanged.
    description: String,
}

const PORTS_NOTE: &str = "gpuform ports=";

impl Perm {
    pub(crate) fn from_rule(r: &IngressRule) -> Perm {
        let (from, to) = r.port_range();
        Perm {
            protocol: r.protocol.as_str().to_string(),
            port_range: if r.protocol.has_ports() {
                format!("{from}/{to}")
            } else {
                "-1/-1".into()
            },
            source_cidr: Some(r.cidr.clone()),
            source_group: None,
            description: match (r.from_port, r.to_port) {
                (Some(f), Some(t)) => format!("{PORTS_NOTE}{f}-{t}"),
                _ => "gpuform".to_string(),
            },
        }
    }

    pub(crate) fn from_api(v: &Value) -> Option<Perm> {
        let opt = |k: &str| Some(text(v, k)).filter(|s| !s.is_empty());
        if text(v, "Policy").eq_ignore_ascii_case("drop") {
            return None;
        }
        Some(Perm {
            protocol: text(v, "IpProtocol").to_ascii_lowercase(),
            port_range: text(v, "PortRange"),
            source_cidr: opt("SourceCidrIp"),
            source_group: opt("SourceGroupId"),
            description: text(v, "Description"),
        })
    }

    /// The neutral rule, for a rule from a CIDR of a protocol gpuform names.
    fn to_rule(&self) -> Option<IngressRule> {
        let cidr = self.source_cidr.clone()?;
        let protocol = Protocol::parse(&self.protocol)?;
        let ports =
            |a: &str, b: &str| -> Option<(u16, u16)> { Some((a.parse().ok()?, b.parse().ok()?)) };
        let (from_port, to_port) = if protocol.has_ports() {
            let (a, b) = self.port_range.split_once('/')?;
            let (f, t) = ports(a, b)?;
            (Some(f), Some(t))
        } else {
            match self
                .description
                .strip_prefix(PORTS_NOTE)
                .and_then(|p| p.split_once('-'))
                .and_then(|(a, b)| ports(a, b))
            {
                Some((f, t)) => (Some(f), Some(t)),
                None => (None, None),
            }
        };
        Some(IngressRule {
            protocol,
            from_port,
            to_port,
            cidr,
        })
    }

    /// One Authorize/RevokeSecurityGroup call's parameters for `perms`.
    pub(crate) fn params(group: &str, perms: &[&Perm]) -> Params {
        let mut p = Params::one("SecurityGroupId", group);
        for (i, perm) in perms.iter().enumerate() {
            let k = |f: &str| format!("Permissions.{}.{f}", i + 1);
            p.push(k("IpProtocol"), perm.protocol.clone());
            p.push(k("PortRange"), perm.port_range.clone());
            if let Some(c) = &perm.source_cidr {
                p.push(k("SourceCidrIp"), c.clone());
            }
            if let Some(g) = &perm.source_group {
                p.push(k("SourceGroupId"), g.clone());
            }
            p.push(k("Policy"), "accept");
            p.push(k("Description"), perm.description.clone());
        }
        p
    }
}

/// A group's rules as DescribeSecurityGroupAttribute lists them.
pub(crate) struct GroupRules {
    pub ingress: Vec<Value>,
    pub egress: Vec<Value>,
    /// `InnerAccessPolicy`.
    pub inner: String,
}

/// Whether a rule drops the traffic it matches (`Policy` drop,
/// case-insensitive; absent means accept).
pub(crate) fn drops_traffic(rule: &Value) -> bool {
    text(rule, "Policy").eq_ignore_ascii_case("drop")
}

/// Whether members of a group reach each other (`InnerAccessPolicy`,
/// case-insensitive; absent means the documented default, Accept).
pub(crate) fn inner_access_accepted(policy: &str) -> bool {
    policy.is_empty() || policy.eq_ignore_ascii_case("accept")
}

// --------------------------------------------------------------------- network

pub(crate) fn observe_vpc(v: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert(attr::CIDR.into(), json!(text(v, "CidrBlock")));
    observed(ResourceKind::Network, v, "VpcId", &tags_of(v), a, region)
}

pub(crate) fn observe_vswitch(v: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert(attr::CIDR.into(), json!(text(v, "CidrBlock")));
    a.insert(attr::ZONE.into(), json!(text(v, "ZoneId")));
    observed(ResourceKind::Subnet, v, "VSwitchId", &tags_of(v), a, region)
}

/// A group, its inbound rules (DescribeSecurityGroupAttribute) and its
/// `InnerAccessPolicy`. Members reach each other through
/// InnerAccessPolicy=Accept, not a rule (see `sync_rules`); when someone set
/// it to Drop, `ingress` says the members' rule is missing, so the plan
/// updates the group (which sets it back).
pub(crate) fn observe_group(g: &Value, rules: &GroupRules, region: &str) -> ObservedResource {
    let ingress = ObservedIngress {
        rules: rules
            .ingress
            .iter()
            .filter_map(Perm::from_api)
            .filter_map(|p| p.to_rule())
            .collect(),
        member_rule: inner_access_accepted(&rules.inner),
        // A group allows all outbound traffic until an egress rule drops it
        // (CreateSecurityGroup: a basic group's default egress is accept),
        // and gpuform writes none: its create has no egress step for a kill
        // to cut off. A drop rule added since (by someone else) is
        // missing egress, which an update revokes (`open_egress`).
        egress: !rules.egress.iter().any(drops_traffic),
    };
    let mut a = Attrs::new();
    a.insert(attr::INGRESS.into(), ingress.to_value());
    let mut o = observed(
        ResourceKind::Firewall,
        g,
        "SecurityGroupId",
        &tags_of(g),
        a,
        region,
    );
    o.status = "available".into();
    o
}

// --------------------------------------------------------------------- compute

/// Observed attribute of a subscription instance: when its term ends
/// (DescribeInstances `ExpiredTime`, `yyyy-MM-ddTHH:mmZ` UTC).
pub const SUBSCRIPTION_ENDS: &str = "subscription_ends";

/// An instance as DescribeInstances reports it, with its system disk size
/// (DescribeDisks) for `root_gb`.
pub(crate) fn observe_instance(i: &Value, region: &str, root_gb: Option<u64>) -> ObservedResource {
    let tags = tags_of(i);
    let mut a = Attrs::new();
    a.insert(attr::INSTANCE_TYPE.into(), json!(text(i, "InstanceType")));
    a.insert(attr::ZONE.into(), json!(text(i, "ZoneId")));
    // The image asked for (logical name or id) while the instance still runs
    // the image gpuform resolved it to; the API's ImageId otherwise.
    let image = tags
        .get(IMAGE_TAG)
        .cloned()
        .unwrap_or_else(|| text(i, "ImageId"));
    a.insert(attr::IMAGE.into(), json!(image));
    let charge = text(i, "InstanceChargeType");
    let spot = text(i, "SpotStrategy");
    let pricing = if charge == "PrePaid" {
        match tags.get(PRICING_TAG).map(String::as_str) {
            Some(p @ ("reserved-1y" | "reserved-3y")) => p.to_string(),
            _ => "reserved".to_string(),
        }
    } else if spot == "SpotAsPriceGo" || spot == "SpotWithPriceLimit" {
        Pricing::Spot.to_string()
    } else {
        Pricing::OnDemand.to_string()
    };
    a.insert(attr::PRICING.into(), json!(pricing));
    if charge == "PrePaid" {
        a.insert(SUBSCRIPTION_ENDS.into(), json!(text(i, "ExpiredTime")));
    }
    if let Some(gb) = root_gb {
        a.insert(attr::ROOT_GB.into(), json!(gb));
    }
    if let Some(r) = tags.get(RDMA_TAG) {
        a.insert(attr::RDMA.into(), json!(r == "true"));
    }
    if let Some(ip) = private_ip(i) {
        a.insert(attr::PRIVATE_IP.into(), json!(ip));
    }
    observed(ResourceKind::Instance, i, "InstanceId", &tags, a, region)
}

/// The primary private IPv4 address of a VPC instance: DescribeInstances'
/// `VpcAttributes.PrivateIpAddress.IpAddress[0]`, else the primary ENI's
/// `NetworkInterfaces.NetworkInterface[].PrimaryIpAddress` (`Type` Primary).
/// `None` while none is assigned yet.
fn private_ip(i: &Value) -> Option<String> {
    let first = i
        .pointer("/VpcAttributes/PrivateIpAddress/IpAddress/0")
        .and_then(Value::as_str);
    let eni = || {
        i.pointer("/NetworkInterfaces/NetworkInterface")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|n| {
                matches!(
                    n.get("Type").and_then(Value::as_str),
                    None | Some("Primary")
                )
            })
            .find_map(|n| n.get("PrimaryIpAddress").and_then(Value::as_str))
    };
    first
        .or_else(eni)
        .filter(|ip| !ip.is_empty())
        .map(str::to_string)
}

/// A deployment set; its ownership is in its description.
pub(crate) fn observe_deployment_set(d: &Value, region: &str) -> ObservedResource {
    let either = |a: &str, b: &str| {
        Some(text(d, a))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| text(d, b))
    };
    let mut a = Attrs::new();
    let strategy = match either("DeploymentStrategy", "Strategy").as_str() {
        "LowLatency" => Some(PlacementStrategy::Cluster),
        "Availability" => Some(PlacementStrategy::Spread),
        _ => None,
    };
    if let Some(s) = strategy {
        a.insert(attr::STRATEGY.into(), json!(s.as_str()));
    }
    ObservedResource {
        kind: ResourceKind::Placement,
        id: text(d, "DeploymentSetId"),
        region: region.to_string(),
        ownership: parse_placement_description(&either("DeploymentSetDescription", "Description")),
        attrs: a,
        status: "available".into(),
    }
}

// --------------------------------------------------------------------- storage

/// A data disk as DescribeDisks reports it.
pub(crate) fn observe_disk(d: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert(attr::ZONE.into(), json!(text(d, "ZoneId")));
    if let Some(s) = d.get("Size").and_then(Value::as_u64) {
        a.insert(attr::SIZE_GB.into(), json!(s));
    }
    a.insert(
        "volume_type".into(),
        json!(volume_types::observed(&text(d, "Category")).as_str()),
    );
    // DescribeDisks: InstanceId is the instance the disk is attached to,
    // set only while it is In_use (or Attaching).
    let status = text(d, "Status");
    let instance = text(d, "InstanceId");
    a.insert(
        attr::ATTACHED_TO.into(),
        if matches!(status.as_str(), "In_use" | "Attaching") && !instance.is_empty() {
            json!(instance)
        } else {
            Value::Null
        },
    );
    observed(ResourceKind::Volume, d, "DiskId", &tags_of(d), a, region)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v: Value) -> IngressRule {
        IngressRule::parse(&v).unwrap()
    }

    fn api(p: &Perm) -> Value {
        json!({"IpProtocol": p.protocol.to_uppercase(), "PortRange": p.port_range,
               "SourceCidrIp": p.source_cidr, "Policy": "Accept", "Description": p.description})
    }

    #[test]
    fn rules_round_trip() {
        for r in [
            rule(json!({"protocol": "icmp", "from_port": 0, "to_port": 0, "cidr": "10.0.0.0/8"})),
            rule(json!({"protocol": "icmp", "cidr": "10.0.0.0/8"})),
            rule(json!({"protocol": "all", "cidr": "10.0.0.0/8"})),
            rule(json!({"protocol": "tcp", "from_port": 22, "cidr": "0.0.0.0/0"})),
            rule(
                json!({"protocol": "udp", "from_port": 4000, "to_port": 4100, "cidr": "0.0.0.0/0"}),
            ),
        ] {
            let p = Perm::from_rule(&r);
            assert_eq!(p.port_range == "-1/-1", !r.protocol.has_ports(), "{r:?}");
            assert_eq!(Perm::from_api(&api(&p)), Some(p.clone()));
            assert_eq!(p.to_rule(), Some(r));
        }
        let ssh = Perm::from_rule(&rule(json!({"from_port": 22, "cidr": "0.0.0.0/0"})));
        assert_eq!(
            (ssh.port_range.as_str(), ssh.description.as_str()),
            ("22/22", "gpuform ports=22-22")
        );
    }

    #[test]
    fn rules_gpuform_cannot_name_stay_out_of_ingress() {
        let group = json!({"SecurityGroupId": "sg-1"});
        let rules = [
            json!({"IpProtocol": "TCP", "PortRange": "22/22", "SourceCidrIp": "0.0.0.0/0"}),
            json!({"IpProtocol": "TCP", "PortRange": "80/80", "SourceCidrIp": "0.0.0.0/0", "Policy": "Drop"}),
            json!({"IpProtocol": "ALL", "PortRange": "-1/-1", "SourceGroupId": "sg-2"}),
        ];
        let of = |inner: &str, egress: Vec<Value>| GroupRules {
            ingress: rules.to_vec(),
            egress,
            inner: inner.into(),
        };
        let o = observe_group(&group, &of("Accept", Vec::new()), "r");
        assert_eq!(
            o.attrs["ingress"],
            json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}])
        );
        let dropped = observe_group(&group, &of("drop", Vec::new()), "r");
        let seen = ObservedIngress::from_value(dropped.attrs.get(attr::INGRESS)).unwrap();
        assert!(!seen.member_rule);
        assert!(seen.egress);
        // An egress rule that drops traffic: egress is missing; one that
        // accepts changes nothing.
        let accept = json!({"Direction": "egress", "IpProtocol": "ALL", "PortRange": "-1/-1", "DestCidrIp": "0.0.0.0/0", "Policy": "Accept"});
        let drop = json!({"Direction": "egress", "IpProtocol": "ALL", "PortRange": "-1/-1", "DestCidrIp": "0.0.0.0/0", "Policy": "Drop"});
        let read = |egress: Vec<Value>| {
            let o = observe_group(&group, &of("Accept", egress), "r");
            ObservedIngress::from_value(o.attrs.get(attr::INGRESS))
                .unwrap()
                .egress
        };
        assert!(read(vec![accept.clone()]));
        assert!(!read(vec![accept, drop]));
    }

    #[test]
    fn instances_read_back_as_asked() {
        let i = json!({"InstanceId": "i-1", "Status": "Running", "InstanceChargeType": "PrePaid",
            "ExpiredTime": "2027-11-29T16:00Z", "ImageId": "m-1",
            "Tags": {"Tag": [{"TagKey": PRICING_TAG, "TagValue": "reserved-3y"},
                             {"TagKey": RDMA_TAG, "TagValue": "true"}, {"TagKey": "team", "TagValue": "ml"}]}});
        let o = observe_instance(&i, "r", Some(100));
        assert_eq!(o.status, "running");
        assert_eq!(o.attrs["pricing"], "reserved-3y");
        assert_eq!(o.attrs["image"], "m-1");
        assert_eq!(o.attrs["rdma"], true);
        assert_eq!(o.attrs["root_gb"], 100);
        assert_eq!(o.attrs["tags"], json!({"team": "ml"}));
        assert_eq!(o.attrs[SUBSCRIPTION_ENDS], "2027-11-29T16:00Z");
        let spot = json!({"InstanceId": "i-2", "SpotStrategy": "SpotWithPriceLimit"});
        assert_eq!(observe_instance(&spot, "r", None).attrs["pricing"], "spot");
        // No address assigned yet: not reported.
        assert!(!observe_instance(&spot, "r", None)
            .attrs
            .contains_key(attr::PRIVATE_IP));
    }

    #[test]
    fn instances_report_their_private_address() {
        let vpc = json!({"InstanceId": "i-1",
            "VpcAttributes": {"VpcId": "vpc-1", "PrivateIpAddress": {"IpAddress": ["172.16.0.7"]}},
            "NetworkInterfaces": {"NetworkInterface": [{"Type": "Primary", "PrimaryIpAddress": "172.16.0.9"}]}});
        assert_eq!(
            observe_instance(&vpc, "r", None).attrs["private_ip"],
            "172.16.0.7"
        );
        // Only the ENI list: its primary interface's address.
        let eni = json!({"InstanceId": "i-2",
            "VpcAttributes": {"PrivateIpAddress": {"IpAddress": []}},
            "NetworkInterfaces": {"NetworkInterface": [
                {"Type": "Secondary", "PrimaryIpAddress": "172.16.1.5"},
                {"Type": "Primary", "PrimaryIpAddress": "172.16.0.8"}]}});
        assert_eq!(
            observe_instance(&eni, "r", None).attrs["private_ip"],
            "172.16.0.8"
        );
    }

    #[test]
    fn disks_read_back_as_asked() {
        let d = json!({"DiskId": "d-1", "Status": "In_use", "InstanceId": "i-1", "Size": 500,
                       "Category": "cloud_essd", "ZoneId": "z"});
        let o = observe_disk(&d, "r");
        assert_eq!(
            (o.status.as_str(), &o.attrs["attached_to"]),
            ("in_use", &json!("i-1"))
        );
        let detaching = json!({"DiskId": "d-1", "Status": "Detaching", "InstanceId": "i-1"});
        assert_eq!(
            observe_disk(&detaching, "r").attrs["attached_to"],
            Value::Null
        );
    }
}
