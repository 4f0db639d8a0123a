//! Request builders for the calls whose shape matters most (RunInstances,
//! CreatePlacementGroup, security-group rules), kept apart from sending them
//! so that unit tests can check the built request without a server.

use aws_sdk_ec2::operation::create_placement_group::builders::CreatePlacementGroupFluentBuilder;
use aws_sdk_ec2::operation::run_instances::builders::RunInstancesFluentBuilder;
use aws_sdk_ec2::types::{
    BlockDeviceMapping, EbsBlockDevice, InstanceInterruptionBehavior, InstanceMarketOptionsRequest,
    InstanceNetworkInterfaceSpecification, InstanceType, IpPermission, IpRange, Ipv6Range,
    MarketType, Placement, PlacementStrategy, ResourceType, SpotInstanceType, SpotMarketOptions,
    Tag, TagSpecification, UserIdGroupPair, VolumeType,
};
use aws_sdk_ec2::Client;
use base64::Engine as _;
use gpuform_provider::{ErrorKind, ProviderError};

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

/// Everything RunInstances needs for one node, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct InstancePlan {
    pub instance_type: String,
    pub image_id: String,
    /// Root device of the image (from DescribeImages), for the root size.
    pub root_device_name: Option<String>,
    pub root_gb: Option<i32>,
    pub subnet_id: Option<String>,
    pub security_group_id: Option<String>,
    pub placement_group: Option<String>,
    pub zone: Option<String>,
    pub spot: bool,
    /// How many EFA interfaces to attach (0: plain networking).
    pub efa_interfaces: u32,
    pub user_data: Option<String>,
    pub client_token: String,
    pub instance_tags: Tags,
    pub volume_tags: Tags,
}

/// One node per call: MinCount = MaxCount = 1, the ownership token as the
/// ClientToken, and the ownership tags on the instance and its volumes set
/// atomically with the launch.
pub fn run_instances(client: &Client, p: &InstancePlan) -> RunInstancesFluentBuilder {
    let mut b = client
        .run_instances()
        .instance_type(InstanceType::from(p.instance_type.as_str()))
        .image_id(&p.image_id)
        .min_count(1)
        .max_count(1)
        .client_token(&p.client_token)
        .tag_specifications(tag_spec(ResourceType::Instance, &p.instance_tags))
        .tag_specifications(tag_spec(ResourceType::Volume, &p.volume_tags));

    if p.efa_interfaces > 0 {
        // With explicit interfaces, the subnet and groups go on each one. One
        // EFA interface per network card: card 0 carries the primary
        // interface (device index 0), the others device index 1.
        for card in 0..p.efa_interfaces as i32 {
            let ni = InstanceNetworkInterfaceSpecification::builder()
                .network_card_index(card)
                .device_index(if card == 0 { 0 } else { 1 })
                .interface_type("efa")
                .delete_on_termination(true)
                .set_subnet_id(p.subnet_id.clone())
                .set_groups(p.security_group_id.clone().map(|g| vec![g]))
                .build();
            b = b.network_interfaces(ni);
        }
    } else {
        b = b.set_subnet_id(p.subnet_id.clone());
        if let Some(g) = &p.security_group_id {
            b = b.security_group_ids(g);
        }
    }

    if p.placement_group.is_some() || p.zone.is_some() {
        b = b.placement(
            Placement::builder()
                .set_group_name(p.placement_group.clone())
                .set_availability_zone(p.zone.clone())
                .build(),
        );
    }

    if p.spot {
        b = b.instance_market_options(
            InstanceMarketOptionsRequest::builder()
                .market_type(MarketType::Spot)
                .spot_options(
                    SpotMarketOptions::builder()
                        .spot_instance_type(SpotInstanceType::OneTime)
                        .instance_interruption_behavior(InstanceInterruptionBehavior::Terminate)
                        .build(),
                )
                .build(),
        );
    }

    if let (Some(dev), Some(gb)) = (&p.root_device_name, p.root_gb) {
        b = b.block_device_mappings(
            BlockDeviceMapping::builder()
                .device_name(dev)
                .ebs(
                    EbsBlockDevice::builder()
                        .volume_size(gb)
                        .volume_type(VolumeType::Gp3)
                        .delete_on_termination(true)
                        .build(),
                )
                .build(),
        );
    }

    if let Some(ud) = &p.user_data {
        b = b.user_data(base64::engine::general_purpose::STANDARD.encode(ud.as_bytes()));
    }
    b
}

/// A `cluster` (or other strategy) placement group. Placement groups have no
/// ClientToken: the name is derived from the ownership token, so a retry of
/// the same create finds its group (InvalidPlacementGroup.Duplicate).
pub fn create_placement_group(
    client: &Client,
    name: &str,
    strategy: &str,
    tags: &Tags,
) -> Result<CreatePlacementGroupFluentBuilder, ProviderError> {
    let strategy = match strategy {
        "cluster" => PlacementStrategy::Cluster,
        "spread" => PlacementStrategy::Spread,
        "partition" => PlacementStrategy::Partition,
        other => {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("placement strategy `{other}` is not one of cluster, spread, partition"),
            ))
        }
    };
    Ok(client
        .create_placement_group()
        .group_name(name)
        .strategy(strategy)
        .tag_specifications(tag_spec(ResourceType::PlacementGroup, tags)))
}

/// A neutral ingress rule: `{protocol, from_port, to_port, cidr}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    pub protocol: String,
    pub from_port: Option<i32>,
    pub to_port: Option<i32>,
    pub cidr: String,
}

impl Rule {
    pub fn from_json(v: &serde_json::Value) -> Result<Rule, ProviderError> {
        let bad = |what: &str| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("firewall ingress rule {v}: {what}; expected {{protocol, from_port, to_port, cidr}}"),
            )
        };
        let obj = v.as_object().ok_or_else(|| bad("not an object"))?;
        let protocol = obj
            .get("protocol")
            .and_then(|p| p.as_str())
            .unwrap_or("tcp")
            .to_ascii_lowercase();
        let port = |k: &str| -> Result<Option<i32>, ProviderError> {
            match obj.get(k) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(p) => p
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| bad(&format!("`{k}` is not a port number"))),
            }
        };
        let from_port = port("from_port")?;
        let to_port = port("to_port")?.or(from_port);
        let cidr = obj
            .get("cidr")
            .and_then(|c| c.as_str())
            .ok_or_else(|| bad("`cidr` missing"))?
            .to_string();
        Ok(Rule {
            protocol: normalize_protocol(&protocol),
            from_port,
            to_port,
            cidr,
        })
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("protocol".into(), self.protocol.clone().into());
        if let Some(p) = self.from_port {
            m.insert("from_port".into(), p.into());
        }
        if let Some(p) = self.to_port {
            m.insert("to_port".into(), p.into());
        }
        m.insert("cidr".into(), self.cidr.clone().into());
        serde_json::Value::Object(m)
    }

    pub fn to_permission(&self) -> IpPermission {
        let proto = if self.protocol == "all" {
            "-1".to_string()
        } else {
            self.protocol.clone()
        };
        let mut b = IpPermission::builder().ip_protocol(proto);
        if self.protocol != "all" {
            b = b.set_from_port(self.from_port).set_to_port(self.to_port);
        }
        if self.cidr.contains(':') {
            b = b.ipv6_ranges(Ipv6Range::builder().cidr_ipv6(&self.cidr).build());
        } else {
            b = b.ip_ranges(IpRange::builder().cidr_ip(&self.cidr).build());
        }
        b.build()
    }

    /// The CIDR rules of an observed permission (group references are left
    /// out: they are the cluster-internal rule).
    pub fn from_permission(p: &IpPermission) -> Vec<Rule> {
        let protocol = normalize_protocol(p.ip_protocol().unwrap_or("-1"));
        let (from_port, to_port) = if protocol == "all" {
            (None, None)
        } else {
            (p.from_port(), p.to_port())
        };
        let v4 = p.ip_ranges().iter().filter_map(|r| r.cidr_ip());
        let v6 = p.ipv6_ranges().iter().filter_map(|r| r.cidr_ipv6());
        v4.chain(v6)
            .map(|c| Rule {
                protocol: protocol.clone(),
                from_port,
                to_port,
                cidr: c.to_string(),
            })
            .collect()
    }
}

fn normalize_protocol(p: &str) -> String {
    match p {
        "-1" | "all" | "any" => "all".into(),
        "6" => "tcp".into(),
        "17" => "udp".into(),
        "1" => "icmp".into(),
        other => other.to_string(),
    }
}

/// All traffic between members of the group.
pub fn self_permission(group_id: &str) -> IpPermission {
    IpPermission::builder()
        .ip_protocol("-1")
        .user_id_group_pairs(UserIdGroupPair::builder().group_id(group_id).build())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::config::{BehaviorVersion, Region};

    fn offline_client() -> Client {
        // Never sends anything: these tests only look at built requests.
        let conf = aws_sdk_ec2::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .build();
        Client::from_conf(conf)
    }

    fn plan() -> InstancePlan {
        InstancePlan {
            instance_type: "p4d.24xlarge".into(),
            image_id: "ami-03c3da4cfa8e8943a".into(),
            root_device_name: Some("/dev/xvda".into()),
            root_gb: Some(500),
            subnet_id: Some("subnet-1".into()),
            security_group_id: Some("sg-1".into()),
            placement_group: Some("gpuform-pg".into()),
            zone: None,
            spot: false,
            efa_interfaces: 4,
            user_data: Some("#!/bin/sh\necho hi\n".into()),
            client_token: "tok-1".into(),
            instance_tags: vec![("gpuform:project".into(), "p".into())],
            volume_tags: vec![
                ("gpuform:project".into(), "p".into()),
                (crate::KIND_TAG.into(), crate::ROOT_VOLUME_KIND.into()),
            ],
        }
    }

    #[test]
    fn run_instances_with_efa_placement_and_root_volume() {
        let c = offline_client();
        let b = run_instances(&c, &plan());
        let i = b.as_input();
        assert_eq!(i.get_min_count(), &Some(1));
        assert_eq!(i.get_max_count(), &Some(1));
        assert_eq!(i.get_client_token().as_deref(), Some("tok-1"));
        assert_eq!(
            i.get_instance_type().as_ref().map(|t| t.as_str()),
            Some("p4d.24xlarge")
        );
        // EFA: subnet and group on the interfaces, not on the request.
        assert_eq!(i.get_subnet_id(), &None);
        assert_eq!(i.get_security_group_ids(), &None);
        let nis = i.get_network_interfaces().as_ref().unwrap();
        assert_eq!(nis.len(), 4);
        for (n, ni) in nis.iter().enumerate() {
            assert_eq!(ni.interface_type(), Some("efa"));
            assert_eq!(ni.network_card_index(), Some(n as i32));
            assert_eq!(ni.device_index(), Some(if n == 0 { 0 } else { 1 }));
            assert_eq!(ni.subnet_id(), Some("subnet-1"));
            assert_eq!(ni.groups(), ["sg-1".to_string()]);
        }
        assert_eq!(
            i.get_placement().as_ref().and_then(|p| p.group_name()),
            Some("gpuform-pg")
        );
        let bdm = &i.get_block_device_mappings().as_ref().unwrap()[0];
        assert_eq!(bdm.device_name(), Some("/dev/xvda"));
        assert_eq!(bdm.ebs().and_then(|e| e.volume_size()), Some(500));
        assert_eq!(
            bdm.ebs().and_then(|e| e.delete_on_termination()),
            Some(true)
        );
        let specs = i.get_tag_specifications().as_ref().unwrap();
        assert_eq!(specs[0].resource_type(), Some(&ResourceType::Instance));
        assert_eq!(specs[1].resource_type(), Some(&ResourceType::Volume));
        assert_eq!(specs[1].tags().len(), 2);
        assert_eq!(
            i.get_user_data().as_deref(),
            Some("IyEvYmluL3NoCmVjaG8gaGkK")
        );
        assert_eq!(i.get_instance_market_options(), &None);
    }

    #[test]
    fn run_instances_spot_without_efa() {
        let c = offline_client();
        let mut p = plan();
        p.instance_type = "g4dn.xlarge".into();
        p.efa_interfaces = 0;
        p.spot = true;
        p.placement_group = None;
        p.zone = Some("us-east-1a".into());
        let b = run_instances(&c, &p);
        let i = b.as_input();
        assert_eq!(i.get_network_interfaces(), &None);
        assert_eq!(i.get_subnet_id().as_deref(), Some("subnet-1"));
        assert_eq!(
            i.get_security_group_ids().as_deref(),
            Some(&["sg-1".to_string()][..])
        );
        let mo = i.get_instance_market_options().as_ref().unwrap();
        assert_eq!(mo.market_type(), Some(&MarketType::Spot));
        assert_eq!(
            mo.spot_options().and_then(|s| s.spot_instance_type()),
            Some(&SpotInstanceType::OneTime)
        );
        let pl = i.get_placement().as_ref().unwrap();
        assert_eq!(pl.group_name(), None);
        assert_eq!(pl.availability_zone(), Some("us-east-1a"));
    }

    #[test]
    fn placement_group_request_shape() {
        let c = offline_client();
        let tags = vec![
            ("gpuform:project".to_string(), "p".to_string()),
            ("gpuform:token".into(), "t".into()),
        ];
        let b =
            create_placement_group(&c, "gpuform-p-cluster-trainer-1234", "cluster", &tags).unwrap();
        let i = b.as_input();
        assert_eq!(
            i.get_group_name().as_deref(),
            Some("gpuform-p-cluster-trainer-1234")
        );
        assert_eq!(i.get_strategy(), &Some(PlacementStrategy::Cluster));
        let spec = &i.get_tag_specifications().as_ref().unwrap()[0];
        assert_eq!(spec.resource_type(), Some(&ResourceType::PlacementGroup));
        assert_eq!(spec.tags().len(), 2);
        assert_eq!(spec.tags()[1].key(), Some("gpuform:token"));
        let err = create_placement_group(&c, "x", "packed", &tags).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Invalid);
    }

    #[test]
    fn ingress_rules_round_trip() {
        let v = serde_json::json!({"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "203.0.113.0/24"});
        let r = Rule::from_json(&v).unwrap();
        let p = r.to_permission();
        assert_eq!(p.ip_protocol(), Some("tcp"));
        assert_eq!(p.from_port(), Some(22));
        assert_eq!(p.ip_ranges()[0].cidr_ip(), Some("203.0.113.0/24"));
        assert_eq!(Rule::from_permission(&p), vec![r.clone()]);
        assert_eq!(r.to_json(), v);

        let all = Rule::from_json(&serde_json::json!({"protocol": "-1", "cidr": "::/0"})).unwrap();
        let p = all.to_permission();
        assert_eq!(p.ip_protocol(), Some("-1"));
        assert_eq!(p.from_port(), None);
        assert_eq!(p.ipv6_ranges()[0].cidr_ipv6(), Some("::/0"));
        assert_eq!(Rule::from_permission(&p)[0].protocol, "all");

        assert!(Rule::from_json(&serde_json::json!({"protocol": "tcp", "from_port": 22})).is_err());
        let sp = self_permission("sg-9");
        assert_eq!(sp.user_id_group_pairs()[0].group_id(), Some("sg-9"));
        assert!(Rule::from_permission(&sp).is_empty());
    }
}
