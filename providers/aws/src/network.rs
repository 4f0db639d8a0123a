//! Networks (VPCs), subnets and firewalls (security groups), and the
//! translation of neutral ingress rules to EC2's `IpPermission` (EC2's
//! permissions read back as rules in `observe`).

use crate::client::{by_id, describe_groups, empty_answer, filter};
use crate::errors::{done, map_sdk, sent, Op};
use crate::observe::{observe_group, observe_subnet, observe_vpc};
use crate::tags::{derived_name, new_tag_spec, sanitize, tag_value};
use crate::AwsProvider;
use async_trait::async_trait;
use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::types::{IpPermission, IpRange, Ipv6Range, ResourceType, UserIdGroupPair};
use aws_sdk_ec2::Client;
use gpuform_provider::attr;
use gpuform_provider::resource::{egress_missing, member_rule_missing};
use gpuform_provider::Result;
use gpuform_provider::{
    Create, ErrorKind, FirewallSpec, IngressRule, NetworkApi, NetworkSpec, ObservedIngress,
    ObservedResource, OwnershipTags, Protocol, ProviderError, Scope, SubnetSpec, Update,
};
use serde_json::Value;
use std::collections::BTreeSet;

#[async_trait]
impl NetworkApi for AwsProvider {
    async fn create_network(&self, req: &Create<NetworkSpec>) -> Result<ObservedResource> {
        let NetworkSpec { cidr } = &req.spec;
        let request = self
            .client(&req.scope)?
            .create_vpc()
            .cidr_block(cidr)
            .tag_specifications(new_tag_spec(req, "network", ResourceType::Vpc));
        let out = sent("CreateVpc", Op::Create, request.send()).await?;
        let vpc = out.vpc().ok_or_else(|| empty_answer("CreateVpc"))?;
        Ok(observe_vpc(vpc, req.region()))
    }

    async fn create_subnet(&self, req: &Create<SubnetSpec>) -> Result<ObservedResource> {
        let SubnetSpec {
            network,
            zone,
            cidr,
        } = &req.spec;
        let request = self
            .client(&req.scope)?
            .create_subnet()
            .vpc_id(network)
            .cidr_block(cidr)
            .availability_zone(zone)
            .tag_specifications(new_tag_spec(req, "subnet", ResourceType::Subnet));
        let out = sent("CreateSubnet", Op::Create, request.send()).await?;
        let s = out.subnet().ok_or_else(|| empty_answer("CreateSubnet"))?;
        Ok(observe_subnet(s, req.region()))
    }

    /// A security group named after the ownership token (security groups have
    /// no ClientToken), then its rules: all traffic between members plus the
    /// ingress rules.
    async fn create_firewall(&self, req: &Create<FirewallSpec>) -> Result<ObservedResource> {
        let c = self.client(&req.scope)?;
        let FirewallSpec {
            network: vpc,
            ingress,
            bare,
        } = &req.spec;
        let own = &req.ownership;
        let name = derived_name(own);
        let description = sanitize(&format!("gpuform {} {}", own.project, own.address), 255);
        let created = c
            .create_security_group()
            .group_name(&name)
            .description(description)
            .vpc_id(vpc)
            .tag_specifications(new_tag_spec(req, "firewall", ResourceType::SecurityGroup))
            .send()
            .await;
        let group_id = match created {
            Ok(out) => out
                .group_id()
                .ok_or_else(|| empty_answer("CreateSecurityGroup"))?
                .to_string(),
            Err(e) if e.code() == Some("InvalidGroup.Duplicate") => {
                // A retry of this very create (the name comes from the token):
                // adopt the group if it carries our token.
                let groups = describe_groups(
                    &c,
                    vec![
                        filter("vpc-id", [vpc.clone()]),
                        filter("group-name", [name.clone()]),
                    ],
                )
                .await?;
                let g = groups
                    .into_iter()
                    .find(|g| tag_value(g.tags(), OwnershipTags::TOKEN) == Some(own.token.as_str()))
                    .ok_or_else(|| {
                        ProviderError::new(
                            ErrorKind::Invalid,
                            format!("security group `{name}` already exists in {vpc} and is not this resource's"),
                        )
                        .with_code("InvalidGroup.Duplicate")
                    })?;
                g.group_id().unwrap_or_default().to_string()
            }
            Err(e) => return Err(map_sdk("CreateSecurityGroup", Op::Create, e)),
        };
        // Bare: the rules, the members' one included, come by update_ingress.
        if !bare {
            let mut perms = vec![self_permission(&group_id)];
            perms.extend(ingress.iter().map(to_permission));
            authorize(&c, &group_id, perms).await?;
        }
        let g = describe_groups(&c, by_id("group-id", &group_id)).await?;
        let g = g
            .first()
            .ok_or_else(|| empty_answer("DescribeSecurityGroups"))?;
        Ok(observe_group(g, req.region()))
    }

    /// Authorizes what `want` adds (and the members' rule when it is missing:
    /// a create interrupted before AuthorizeSecurityGroupIngress), then revokes
    /// what it no longer has.
    async fn update_ingress(&self, u: &Update<'_, [IngressRule]>) -> Result<()> {
        let (scope, current, want) = (u.scope, u.current, u.want);
        let c = self.client(scope)?;
        let id = current.id.as_str();
        let (have, foreign) = read_observed(current.attrs.get(attr::INGRESS));
        let (add, remove) = have.changes_to(want);
        let mut add: Vec<IpPermission> = add.into_iter().map(to_permission).collect();
        if !have.member_rule {
            add.push(self_permission(id));
        }
        let mut remove: Vec<IpPermission> = remove.into_iter().map(to_permission).collect();
        remove.extend(foreign);
        if !add.is_empty() {
            authorize(&c, id, add).await?;
        }
        if !have.egress {
            let request = c
                .authorize_security_group_egress()
                .group_id(id)
                .ip_permissions(all_egress());
            match request.send().await {
                Err(e) if e.code() != Some("InvalidPermission.Duplicate") => {
                    return Err(map_sdk("AuthorizeSecurityGroupEgress", Op::Other, e))
                }
                _ => {}
            }
        }
        if !remove.is_empty() {
            let request = c
                .revoke_security_group_ingress()
                .group_id(id)
                .set_ip_permissions(Some(remove));
            done("RevokeSecurityGroupIngress", Op::Other, request.send()).await?;
        }
        Ok(())
    }

    async fn delete_network(&self, scope: &Scope, id: &str) -> Result<()> {
        let request = self.client(scope)?.delete_vpc().vpc_id(id);
        done("DeleteVpc", Op::Other, request.send()).await
    }

    async fn delete_subnet(&self, scope: &Scope, id: &str) -> Result<()> {
        let request = self.client(scope)?.delete_subnet().subnet_id(id);
        done("DeleteSubnet", Op::Other, request.send()).await
    }

    async fn delete_firewall(&self, scope: &Scope, id: &str) -> Result<()> {
        let request = self.client(scope)?.delete_security_group().group_id(id);
        done("DeleteSecurityGroup", Op::Other, request.send()).await
    }
}

async fn authorize(c: &Client, group_id: &str, perms: Vec<IpPermission>) -> Result<()> {
    let send = |perms: Vec<IpPermission>| {
        c.authorize_security_group_ingress()
            .group_id(group_id)
            .set_ip_permissions(Some(perms))
            .send()
    };
    match send(perms.clone()).await {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some("InvalidPermission.Duplicate") => {
            // Some rules exist already (a retried create): add the rest one by one.
            for p in perms {
                match send(vec![p]).await {
                    Ok(_) => {}
                    Err(e) if e.code() == Some("InvalidPermission.Duplicate") => {}
                    Err(e) => return Err(map_sdk("AuthorizeSecurityGroupIngress", Op::Other, e)),
                }
            }
            Ok(())
        }
        Err(e) => Err(map_sdk("AuthorizeSecurityGroupIngress", Op::Create, e)),
    }
}

// ----- ingress rules <-> IpPermission ----------------------------------------

/// All traffic between members of the group.
pub(crate) fn self_permission(group_id: &str) -> IpPermission {
    IpPermission::builder()
        .ip_protocol("-1")
        .user_id_group_pairs(UserIdGroupPair::builder().group_id(group_id).build())
        .build()
}

/// EC2's protocol name: `-1` for all, else the neutral name.
fn ec2_protocol(p: Protocol) -> &'static str {
    match p {
        Protocol::All => "-1",
        other => other.as_str(),
    }
}

/// One permission for one CIDR (IPv6 when it has a `:`).
fn permission(
    protocol: &str,
    ports: Option<(Option<i32>, Option<i32>)>,
    cidr: &str,
) -> IpPermission {
    let mut b = IpPermission::builder().ip_protocol(protocol);
    if let Some((from, to)) = ports {
        b = b.set_from_port(from).set_to_port(to);
    }
    if cidr.contains(':') {
        b = b.ipv6_ranges(Ipv6Range::builder().cidr_ipv6(cidr).build());
    } else {
        b = b.ip_ranges(IpRange::builder().cidr_ip(cidr).build());
    }
    b.build()
}

/// A neutral rule as EC2 takes it. Rules for all protocols carry no ports;
/// an ICMP rule without ports is every type and code (-1, as EC2 reports it).
pub(crate) fn to_permission(r: &IngressRule) -> IpPermission {
    let ports = match r.protocol {
        Protocol::All => None,
        Protocol::Icmp if r.from_port.is_none() && r.to_port.is_none() => {
            Some((Some(-1), Some(-1)))
        }
        _ => Some((r.from_port.map(i32::from), r.to_port.map(i32::from))),
    };
    permission(ec2_protocol(r.protocol), ports, &r.cidr)
}

/// EC2's default outbound rule, for a group that lost it.
fn all_egress() -> IpPermission {
    IpPermission::builder()
        .ip_protocol("-1")
        .ip_ranges(IpRange::builder().cidr_ip("0.0.0.0/0").build())
        .build()
}

/// An observed `ingress` read back: the neutral rules (and whether the
/// members' rule and egress are there), and the foreign ones as
/// permissions to revoke.
fn read_observed(v: Option<&Value>) -> (ObservedIngress, Vec<IpPermission>) {
    let marker = member_rule_missing();
    let no_egress = egress_missing();
    let list = match v {
        Some(Value::Array(l)) => l.as_slice(),
        _ => &[],
    };
    let mut have = ObservedIngress {
        rules: BTreeSet::new(),
        member_rule: !list.contains(&marker),
        egress: !list.contains(&no_egress),
    };
    let mut foreign = Vec::new();
    for entry in list.iter().filter(|e| **e != marker && **e != no_egress) {
        match IngressRule::parse(entry) {
            Ok(r) => {
                have.rules.insert(r);
            }
            Err(_) => foreign.extend(foreign_permission(entry)),
        }
    }
    (have, foreign)
}

fn foreign_permission(v: &Value) -> Option<IpPermission> {
    let port = |k: &str| {
        v.get(k)
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
    };
    let protocol = match v.get("protocol")?.as_str()? {
        "all" => "-1",
        other => other,
    };
    let ports = (protocol != "-1").then(|| (port("from_port"), port("to_port")));
    Some(permission(protocol, ports, v.get("cidr")?.as_str()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{egress_open, observed_ingress};
    use serde_json::json;

    /// An observed rule in EC2's words.
    fn foreign(protocol: &str, from: i32, to: i32, cidr: &str) -> Value {
        json!({"protocol": protocol, "from_port": from, "to_port": to, "cidr": cidr})
    }

    fn rule(v: Value) -> IngressRule {
        IngressRule::parse(&v).unwrap()
    }

    /// An outbound permission to one port only: not all egress.
    fn ssh_out() -> IpPermission {
        to_permission(&rule(json!({"from_port": 22, "cidr": "0.0.0.0/0"})))
    }

    #[test]
    fn ingress_rules_round_trip() {
        let v =
            json!({"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "203.0.113.0/24"});
        let r = rule(v.clone());
        let p = to_permission(&r);
        assert_eq!(p.ip_protocol(), Some("tcp"));
        assert_eq!(p.from_port(), Some(22));
        assert_eq!(p.ip_ranges()[0].cidr_ip(), Some("203.0.113.0/24"));
        assert_eq!(
            observed_ingress(std::slice::from_ref(&p), None, true),
            json!([v, member_rule_missing()])
        );

        let all = rule(json!({"protocol": "-1", "cidr": "::/0"}));
        let p = to_permission(&all);
        assert_eq!(p.ip_protocol(), Some("-1"));
        assert_eq!(p.from_port(), None);
        assert_eq!(p.ipv6_ranges()[0].cidr_ipv6(), Some("::/0"));
        assert_eq!(
            observed_ingress(&[p], Some("sg-9"), true),
            json!([{"protocol": "all", "cidr": "::/0"}, member_rule_missing()])
        );

        let sp = self_permission("sg-9");
        assert_eq!(sp.user_id_group_pairs()[0].group_id(), Some("sg-9"));
        assert_eq!(observed_ingress(&[sp], Some("sg-9"), true), json!([]));
    }

    #[test]
    fn rules_no_spec_can_give_are_observed_and_revoked_exactly() {
        let icmpv6 = permission("58", Some((Some(-1), Some(-1))), "::/0");
        let echo_any_code = permission("icmp", Some((Some(8), Some(-1))), "10.0.0.0/8");
        let every_icmp = permission("icmp", Some((Some(-1), Some(-1))), "10.0.0.0/8");
        let ssh = to_permission(&rule(json!({"from_port": 22, "cidr": "0.0.0.0/0"})));
        let seen = observed_ingress(
            &[
                icmpv6,
                echo_any_code,
                every_icmp,
                ssh,
                self_permission("sg-1"),
            ],
            Some("sg-1"),
            false,
        );
        // Foreign rules before the marker of the missing egress, last.
        assert_eq!(
            seen,
            json!([
                {"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"},
                {"protocol": "icmp", "cidr": "10.0.0.0/8"},
                foreign("icmp", 8, -1, "10.0.0.0/8"),
                foreign("58", -1, -1, "::/0"),
                egress_missing(),
            ])
        );
        let (have, revoke) = read_observed(Some(&seen));
        assert!(have.member_rule);
        assert!(
            !have.egress,
            "the marker is read back, not taken for a rule"
        );
        assert!(egress_open(&[all_egress()]));
        assert!(!egress_open(&[ssh_out()]));
        assert_eq!(have.rules.len(), 2);
        assert_eq!(revoke.len(), 2);
        assert_eq!(
            (revoke[0].from_port(), revoke[0].to_port()),
            (Some(8), Some(-1))
        );
        assert_eq!(revoke[1].ip_protocol(), Some("58"));
        assert_eq!(revoke[1].ipv6_ranges()[0].cidr_ipv6(), Some("::/0"));
        // The neutral ICMP rule goes back as EC2 reported it: -1/-1.
        let (_, remove) = have.changes_to(&[]);
        let icmp = remove
            .iter()
            .find(|r| r.protocol == Protocol::Icmp)
            .unwrap();
        let p = to_permission(icmp);
        assert_eq!((p.from_port(), p.to_port()), (Some(-1), Some(-1)));
    }
}
