//! Networks (VPC `CreateVpc`), subnets (VPC `CreateVSwitch`) and firewalls
//! (ECS security groups and their inbound rules).

use crate::client::{required, text, Params};
use crate::refresh::observed;
use crate::tags::{naming, tags_of};
use crate::AlibabaProvider;
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::ok_if_gone;
use gpuform_provider::Result;
use gpuform_provider::{
    Attrs, Create, ErrorKind, FirewallSpec, IngressRule, NetworkApi, NetworkSpec, ObservedIngress,
    ObservedResource, Protocol, ResourceKind, Scope, SubnetSpec, Update,
};
use serde_json::{json, Value};

impl AlibabaProvider {
    /// A VPC API create of a network (CreateVpc) or a subnet
    /// (CreateVSwitch): `p` plus the name, description, ClientToken and
    /// tags; the create is asynchronous (Creating → Available), so it waits.
    async fn create_in_vpc<T>(
        &self,
        req: &Create<T>,
        kind: ResourceKind,
        mut p: Params,
    ) -> Result<ObservedResource> {
        let region = req.region();
        // The action, its name parameter and the id it answers.
        let (action, name_key, id_key) = if kind == ResourceKind::Network {
            ("CreateVpc", "VpcName", "VpcId")
        } else {
            ("CreateVSwitch", "VSwitchName", "VSwitchId")
        };
        naming(&mut p, name_key, req, kind, &[])?;
        let body = self.vpc(region, action, &p).await?;
        let id = required(&body, id_key, action)?;
        self.wait_for(region, kind, &id, "available", |o| o.status == "available")
            .await
    }

    /// Lets all traffic out again: revokes the egress rules that drop
    /// traffic (someone else's; gpuform writes none), by their
    /// SecurityGroupRuleId — RevokeSecurityGroupEgress, ECS API reference
    /// (help.aliyun.com/document_detail/25561): SecurityGroupId,
    /// SecurityGroupRuleId.N. A rule already gone answers
    /// InvalidSecurityGroupRule.RuleNotExist: what was wanted.
    async fn open_egress(&self, region: &str, group: &str, egress: &[Value]) -> Result<()> {
        let drops: Vec<String> = egress
            .iter()
            .filter(|r| drops_traffic(r))
            .map(|r| text(r, "SecurityGroupRuleId"))
            .collect();
        for chunk in drops.chunks(100) {
            let mut p = Params::one("SecurityGroupId", group);
            for (n, id) in chunk.iter().enumerate() {
                p.push(format!("SecurityGroupRuleId.{}", n + 1), id.clone());
            }
            match self.ecs(region, "RevokeSecurityGroupEgress", &p).await {
                Err(e) if e.code.as_deref() == Some("InvalidSecurityGroupRule.RuleNotExist") => {}
                r => {
                    r?;
                }
            }
        }
        Ok(())
    }

    /// Makes the inbound rules of `group` exactly `rules`:
    /// AuthorizeSecurityGroup for what is missing, RevokeSecurityGroup for
    /// what is extra (`Permissions.N.*`, ≤ 100 per call).
    ///
    /// Traffic between members needs no rule, and cannot have one: a rule
    /// whose SourceGroupId is the group itself is refused with 403
    /// InvalidParamter.Conflict ("The specified SecurityGroupId should be
    /// different from the SourceGroupId", AuthorizeSecurityGroup and
    /// RevokeSecurityGroup error codes, help doc 25554). Instances of one basic group reach
    /// each other while its InnerAccessPolicy is Accept, the default
    /// (RunInstances: 同一个安全组内的实例之间可以互相访问;
    /// ModifySecurityGroupPolicy, alibabacloud.com/help/en/ecs/developer-reference/
    /// api-ecs-2014-05-26-modifysecuritygrouppolicy; DescribeSecurityGroupAttribute
    /// `InnerAccessPolicy`); a group found with Drop is set back to Accept.
    async fn sync_rules(
        &self,
        region: &str,
        group: &str,
        rules: &[IngressRule],
        fresh: bool,
    ) -> Result<()> {
        let current: Vec<Value> = if fresh {
            Vec::new()
        } else {
            let current = self.group_rules(region, group).await?;
            if !inner_access_accepted(&current.inner) {
                // ModifySecurityGroupPolicy (ECS): SecurityGroupId, InnerAccessPolicy.
                let mut p = Params::one("SecurityGroupId", group);
                p.push("InnerAccessPolicy", "Accept");
                self.ecs(region, "ModifySecurityGroupPolicy", &p).await?;
            }
            self.open_egress(region, group, &current.egress).await?;
            current.ingress
        };
        let want: Vec<Perm> = rules.iter().map(Perm::from_rule).collect();
        let have: Vec<Perm> = current.iter().filter_map(Perm::from_api).collect();
        let add: Vec<&Perm> = want.iter().filter(|w| !have.contains(w)).collect();
        let remove: Vec<&Perm> = have.iter().filter(|h| !want.contains(h)).collect();
        for chunk in remove.chunks(100) {
            match self
                .ecs(region, "RevokeSecurityGroup", &Perm::params(group, chunk))
                .await
            {
                Ok(_) => {}
                Err(e)
                    if e.kind == ErrorKind::NotFound
                        && e.code.as_deref() != Some("InvalidSecurityGroupId.NotFound") => {}
                Err(e) => return Err(e),
            }
        }
        for chunk in add.chunks(100) {
            self.ecs(
                region,
                "AuthorizeSecurityGroup",
                &Perm::params(group, chunk),
            )
            .await?;
        }
        Ok(())
    }
}

#[async_trait]
impl NetworkApi for AlibabaProvider {
    async fn create_network(&self, req: &Create<NetworkSpec>) -> Result<ObservedResource> {
        // CreateVpc (VPC 2016-04-28): CidrBlock, VpcName, Description,
        // ClientToken, Tag.N.Key/Value; answers VpcId.
        let p = Params::one("CidrBlock", req.spec.cidr.clone());
        self.create_in_vpc(req, ResourceKind::Network, p).await
    }

    async fn create_subnet(&self, req: &Create<SubnetSpec>) -> Result<ObservedResource> {
        let s = &req.spec;
        // CreateVSwitch (VPC 2016-04-28): VpcId, ZoneId, CidrBlock,
        // VSwitchName, Description, ClientToken, Tag.N; answers VSwitchId.
        let mut p = Params::one("VpcId", s.network.clone());
        p.push("ZoneId", s.zone.clone());
        p.push("CidrBlock", s.cidr.clone());
        self.create_in_vpc(req, ResourceKind::Subnet, p).await
    }

    async fn create_firewall(&self, req: &Create<FirewallSpec>) -> Result<ObservedResource> {
        let region = req.region();
        // CreateSecurityGroup (ECS): VpcId, SecurityGroupName, Description,
        // SecurityGroupType, ClientToken, Tag.N; answers SecurityGroupId.
        let mut p = Params::one("VpcId", req.spec.network.clone());
        p.push("SecurityGroupType", "normal");
        naming(
            &mut p,
            "SecurityGroupName",
            req,
            ResourceKind::Firewall,
            &[],
        )?;
        let body = self.ecs(region, "CreateSecurityGroup", &p).await?;
        let id = required(&body, "SecurityGroupId", "CreateSecurityGroup")?;
        // Members reach each other without a rule: a new basic group's
        // InnerAccessPolicy is Accept (see `sync_rules`). A crash between
        // these two calls leaves a tagged group without the spec's rules:
        // adoption finds it, its observed `ingress` differs from the
        // desired one, and the next plan updates it in place.
        // Bare: the rules come by update_ingress (the engine's split create).
        if !req.spec.bare {
            self.sync_rules(region, &id, &req.spec.ingress, true)
                .await?;
        }
        self.read_one(region, ResourceKind::Firewall, &id).await
    }

    /// See [`gpuform_provider::CloudDriver::update_ingress`].
    async fn update_ingress(&self, u: &Update<'_, [IngressRule]>) -> Result<()> {
        let (region, current, want) = (u.region(), u.current, u.want);
        self.sync_rules(region, &current.id, want, false).await
    }

    async fn delete_firewall(&self, scope: &Scope, id: &str) -> Result<()> {
        let p = Params::one("SecurityGroupId", id);
        ok_if_gone(self.ecs(&scope.region, "DeleteSecurityGroup", &p).await)
    }

    async fn delete_network(&self, scope: &Scope, id: &str) -> Result<()> {
        let p = Params::one("VpcId", id);
        ok_if_gone(self.vpc(&scope.region, "DeleteVpc", &p).await)
    }

    /// DeleteVSwitch, then waits until the vSwitch is gone: the delete is
    /// asynchronous (VPC API reference "DeleteVSwitch": `Pending` while it
    /// is deleted, gone once deleted), and until then it holds its CIDR
    /// block and its VPC — a failover's next-zone vSwitch with the same
    /// range would be refused (InvalidCidrBlock.Overlapped), and so would
    /// DeleteVpc. A vSwitch already being deleted (IncorrectVSwitchStatus)
    /// is waited for the same way.
    async fn delete_subnet(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let p = Params::one("VSwitchId", id);
        match self.vpc(region, "DeleteVSwitch", &p).await {
            Ok(_) => {}
            Err(e) if e.code.as_deref() == Some("IncorrectVSwitchStatus") => {}
            Err(e) => return ok_if_gone::<()>(Err(e)),
        }
        self.wait_gone(region, ResourceKind::Subnet, id).await
    }
}

// --------------------------------------------------------------------- rules

/// A permission as AuthorizeSecurityGroup takes it (`Permissions.N.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Perm {
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
    fn from_rule(r: &IngressRule) -> Perm {
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

    fn from_api(v: &Value) -> Option<Perm> {
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
    fn params(group: &str, perms: &[&Perm]) -> Params {
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
fn drops_traffic(rule: &Value) -> bool {
    text(rule, "Policy").eq_ignore_ascii_case("drop")
}

/// Whether members of a group reach each other (`InnerAccessPolicy`,
/// case-insensitive; absent means the documented default, Accept).
pub(crate) fn inner_access_accepted(policy: &str) -> bool {
    policy.is_empty() || policy.eq_ignore_ascii_case("accept")
}

// --------------------------------------------------------------------- observe

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
}
