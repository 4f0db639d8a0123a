//! Networks (VPCs), subnets and firewalls (security groups) on Tencent VPC.
//!
//! CreateVpc, CreateSubnet and CreateSecurityGroup take no ClientToken, so
//! each create first looks its token tag up: a retry after a lost answer
//! finds the first resource instead of making a second.

use crate::client::{documented_object, s, VPC};
use crate::observe::{observed_ingress, PORTS_NOTE};
use crate::refresh::{self, Listing};
use crate::tags::{ownership_of, resource_name, tag_filter, tag_list, tags_of};
use crate::TencentProvider;
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::ok_if_gone;
use gpuform_provider::Result;
use gpuform_provider::{
    ComputeApi, Create, ErrorKind, FirewallSpec, IngressRule, NetworkApi, NetworkSpec,
    ObservedResource, OwnershipTags, Protocol, Scope, SubnetSpec, Update,
};
use serde_json::{json, Map, Value};

/// The resource of a create without ClientToken: the one already made with
/// this token (by a call whose answer was lost), found by its token tag, or
/// else one made now.
enum Made {
    Found(Value),
    New(Value),
}

impl Made {
    fn into_value(self) -> Value {
        match self {
            Made::Found(v) | Made::New(v) => v,
        }
    }
}

/// Looks the token up with the kind's Describe call, or calls `action` with
/// `body` and takes the documented `object` of its answer.
async fn create_once(
    p: &TencentProvider,
    l: &Listing,
    region: &str,
    token: &str,
    (action, object): (&str, &str),
    body: Value,
) -> Result<Made> {
    let mut filter = Map::new();
    filter.insert(
        "Filters".into(),
        json!([tag_filter(OwnershipTags::TOKEN, token)]),
    );
    let found = p
        .client
        .describe_all(l.api, l.action, region, filter, l.set_key)
        .await?;
    if let Some(v) = found.into_iter().next() {
        return Ok(Made::Found(v));
    }
    let resp = p.client.call(l.api, action, region, &body).await?;
    documented_object(&resp, action, object, l.id_key).map(Made::New)
}

#[async_trait]
impl NetworkApi for TencentProvider {
    /// https://www.tencentcloud.com/document/api/215/15774 (CreateVpc)
    async fn create_network(&self, req: &Create<NetworkSpec>) -> Result<ObservedResource> {
        let body = json!({
            "VpcName": resource_name(&req.ownership, 60),
            "CidrBlock": req.spec.cidr,
            "Tags": tag_list(&req.ownership, &[], &req.tags),
        });
        let (l, region) = (&refresh::NETWORK, req.region());
        let made = create_once(
            self,
            l,
            region,
            &req.ownership.token,
            ("CreateVpc", "Vpc"),
            body,
        )
        .await?;
        Ok(refresh::observe(l, &made.into_value(), region))
    }

    /// https://www.tencentcloud.com/document/api/215/15782 (CreateSubnet)
    async fn create_subnet(&self, req: &Create<SubnetSpec>) -> Result<ObservedResource> {
        let vpc = &req.spec.network;
        let body = json!({
            "VpcId": vpc,
            "SubnetName": resource_name(&req.ownership, 60),
            "CidrBlock": req.spec.cidr,
            "Zone": req.spec.zone,
            "Tags": tag_list(&req.ownership, &[], &req.tags),
        });
        let (l, region) = (&refresh::SUBNET, req.region());
        let token = &req.ownership.token;
        let subnet = create_once(self, l, region, token, ("CreateSubnet", "Subnet"), body)
            .await?
            .into_value();
        if let Ok(mut m) = self.subnet_vpc.lock() {
            m.insert(s(&subnet, "SubnetId").to_string(), vpc.clone());
        }
        Ok(refresh::observe(l, &subnet, region))
    }

    /// https://www.tencentcloud.com/document/api/215/15806 (CreateSecurityGroup),
    /// then its rules with CreateSecurityGroupPolicies (215/15807), one direction
    /// per call.
    async fn create_firewall(&self, req: &Create<FirewallSpec>) -> Result<ObservedResource> {
        let body = json!({
            "GroupName": resource_name(&req.ownership, 60),
            "GroupDescription": format!("gpuform {}", req.ownership.address),
            "Tags": tag_list(&req.ownership, &[], &req.tags),
        });
        let (l, region) = (&refresh::FIREWALL, req.region());
        let token = &req.ownership.token;
        let action = ("CreateSecurityGroup", "SecurityGroup");
        let FirewallSpec {
            // Tencent security groups belong to the region, not to a VPC
            // (CreateSecurityGroup takes none).
            network: _,
            ingress: rules,
            bare,
        } = &req.spec;
        let sg = match create_once(self, l, region, token, action, body).await? {
            // Bare: the policies come by update_ingress, which sets them whole.
            Made::Found(v) | Made::New(v) if *bare => v,
            Made::Found(v) => {
                // The group exists; its rules may not (the answer to an earlier
                // call was lost): set them whole, which is idempotent.
                replace_policies(self, region, s(&v, "SecurityGroupId"), rules).await?;
                v
            }
            Made::New(v) => {
                let id = s(&v, "SecurityGroupId");
                for set in [
                    json!({"Ingress": ingress_policies(id, rules)}),
                    json!({"Egress": egress_policies()}),
                ] {
                    let body = json!({"SecurityGroupId": id, "SecurityGroupPolicySet": set});
                    self.client
                        .call(VPC, "CreateSecurityGroupPolicies", region, &body)
                        .await?;
                }
                v
            }
        };
        let mut observed = refresh::observe(l, &sg, region);
        let id = observed.id.clone();
        observed
            .attrs
            .insert(attr::INGRESS.into(), written_ingress(&id, rules));
        Ok(observed)
    }

    /// https://www.tencentcloud.com/document/api/215/15775 (DeleteVpc)
    async fn delete_network(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        self.client
            .call(VPC, "DeleteVpc", region, &json!({"VpcId": id}))
            .await?;
        Ok(())
    }

    /// https://www.tencentcloud.com/document/api/215/15783 (DeleteSubnet)
    async fn delete_subnet(&self, scope: &Scope, id: &str) -> Result<()> {
        delete_network_member(self, scope, ("DeleteSubnet", "SubnetId"), "subnet-id", id).await
    }

    /// https://www.tencentcloud.com/document/api/215/15803 (DeleteSecurityGroup)
    async fn delete_firewall(&self, scope: &Scope, id: &str) -> Result<()> {
        delete_network_member(
            self,
            scope,
            ("DeleteSecurityGroup", "SecurityGroupId"),
            "security-group-id",
            id,
        )
        .await
    }

    /// See [`replace_policies`]: the group's rules become exactly `want`.
    async fn update_ingress(&self, u: &Update<'_, [IngressRule]>) -> Result<()> {
        let (region, current, want) = (u.region(), u.current, u.want);
        replace_policies(self, region, &current.id, want).await
    }
}

/// https://www.tencentcloud.com/document/api/215/15810 (ModifySecurityGroupPolicies):
/// replaces every rule of the group with the members' rule, `rules` and all
/// egress.
pub(crate) async fn replace_policies(
    p: &TencentProvider,
    region: &str,
    sg: &str,
    rules: &[IngressRule],
) -> Result<()> {
    let body = json!({
        "SecurityGroupId": sg,
        "SecurityGroupPolicySet": {
            "Ingress": ingress_policies(sg, rules),
            "Egress": egress_policies(),
        },
    });
    p.client
        .call(VPC, "ModifySecurityGroupPolicies", region, &body)
        .await?;
    Ok(())
}

/// A rule's `Port`: one port, a range, or `ALL` for every port.
fn port_of(rule: &IngressRule) -> String {
    match rule.port_range() {
        (f, t) if f <= 0 && (t <= 0 || t >= 65535) => "ALL".into(),
        (f, t) if f == t => f.to_string(),
        (f, t) => format!("{f}-{t}"),
    }
}

/// Ingress policies: all traffic from the group's own members, then `rules`.
fn ingress_policies(sg: &str, rules: &[IngressRule]) -> Vec<Value> {
    let mut v = vec![json!({
        "Protocol": "ALL",
        "SecurityGroupId": sg,
        "Action": "ACCEPT",
        "PolicyDescription": "gpuform: members of this group",
    })];
    for r in rules {
        let proto = r.protocol.as_str().to_ascii_uppercase();
        let note = match (r.from_port, r.to_port) {
            (Some(f), Some(t)) => format!("{PORTS_NOTE}{f}-{t}"),
            _ => "gpuform".to_string(),
        };
        let mut p = json!({"Protocol": proto, "CidrBlock": r.cidr, "Action": "ACCEPT", "PolicyDescription": note});
        // `Port` only applies to TCP and UDP (CreateSecurityGroupPolicies page).
        if matches!(r.protocol, Protocol::Tcp | Protocol::Udp) {
            p["Port"] = json!(port_of(r));
        }
        v.push(p);
    }
    v
}

/// What a create or an update wrote, as refresh will read it back.
fn written_ingress(sg: &str, rules: &[IngressRule]) -> Value {
    observed_ingress(sg, &ingress_policies(sg, rules), &egress_policies())
}

/// New groups deny everything in both directions (CreateSecurityGroup page),
/// so egress is opened explicitly.
fn egress_policies() -> Vec<Value> {
    vec![
        json!({"Protocol": "ALL", "CidrBlock": "0.0.0.0/0", "Action": "ACCEPT", "PolicyDescription": "gpuform: all egress"}),
    ]
}

/// DeleteSubnet or DeleteSecurityGroup; on ResourceInUse, gpuform's
/// instances still in the recycle bin are released (`filter` = `id` is the
/// DescribeInstances filter that finds them) and the call made once more.
async fn delete_network_member(
    p: &TencentProvider,
    scope: &Scope,
    (action, id_key): (&str, &str),
    filter: &str,
    id: &str,
) -> Result<()> {
    let region = scope.region.as_str();
    let mut body = Map::new();
    body.insert(id_key.into(), json!(id));
    let body = Value::Object(body);
    match p.client.call(VPC, action, region, &body).await {
        Err(e) if e.kind == ErrorKind::DependencyViolation => {
            if release_recycled(p, scope, filter, id).await? == 0 {
                return Err(e);
            }
            ok_if_gone(p.client.call(VPC, action, region, &body).await)
        }
        other => ok_if_gone(other),
    }
}

/// After DeleteSubnet / DeleteSecurityGroup answered ResourceInUse:
/// releases gpuform's instances that hold `filter` = `id` from the
/// recycle bin (213/4931), and its failed launches, so that the next try
/// can succeed. Instances without gpuform's tags are left alone. Each goes
/// the way of any instance's delete (`ComputeApi::delete_instance`: terminated
/// again from the recycle bin until it is released).
async fn release_recycled(
    p: &TencentProvider,
    scope: &Scope,
    filter: &str,
    id: &str,
) -> Result<usize> {
    let mut body = Map::new();
    body.insert(
        "Filters".into(),
        json!([
            {"Name": filter, "Values": [id]},
            {"Name": "instance-state", "Values": ["SHUTDOWN", "LAUNCH_FAILED"]},
        ]),
    );
    let (l, region) = (&refresh::INSTANCE, scope.region.as_str());
    let recycled = p
        .client
        .describe_all(l.api, l.action, region, body, l.set_key)
        .await?;
    let mut released = 0;
    for v in recycled {
        if ownership_of(&tags_of(&v)).is_some() {
            p.delete_instance(scope, s(&v, "InstanceId")).await?;
            released += 1;
        }
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuform_provider::ObservedIngress;
    use std::collections::BTreeSet;

    fn rule(v: Value) -> IngressRule {
        IngressRule::parse(&v).unwrap()
    }

    #[test]
    fn ports() {
        let one = rule(json!({"from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}));
        assert_eq!(port_of(&one), "22");
        let range = rule(json!({"from_port": 8000, "to_port": 8010, "cidr": "0.0.0.0/0"}));
        assert_eq!(port_of(&range), "8000-8010");
        let all = rule(json!({"from_port": 0, "to_port": 65535, "cidr": "0.0.0.0/0"}));
        assert_eq!(port_of(&all), "ALL");
        let icmp = rule(json!({"protocol": "icmp", "cidr": "10.0.0.0/8"}));
        assert_eq!(port_of(&icmp), "ALL");
    }

    #[test]
    fn policies_read_back_as_the_rules_that_wrote_them() {
        let rules = [
            rule(json!({"from_port": 8000, "to_port": 8100, "cidr": "10.1.0.0/16"})),
            rule(json!({"from_port": 0, "to_port": 65535, "cidr": "10.3.0.0/16"})),
            rule(json!({"protocol": "icmp", "from_port": 8, "to_port": 8, "cidr": "10.2.0.0/16"})),
            rule(json!({"protocol": "icmp", "cidr": "10.4.0.0/16"})),
            rule(json!({"protocol": "all", "cidr": "10.5.0.0/16"})),
        ];
        let seen = ObservedIngress::from_value(Some(&written_ingress("sg-1", &rules))).unwrap();
        assert!(seen.member_rule);
        assert!(seen.egress);
        assert_eq!(seen.rules, rules.iter().cloned().collect());
    }

    #[test]
    fn a_group_without_its_egress_policy_reads_as_missing_egress() {
        let ingress = ingress_policies("sg-1", &[]);
        let read = |egress: &[Value]| {
            ObservedIngress::from_value(Some(&observed_ingress("sg-1", &ingress, egress))).unwrap()
        };
        // Killed between the two CreateSecurityGroupPolicies calls.
        assert!(!read(&[]).egress);
        assert!(read(&egress_policies()).egress);
        // The first match wins: a DROP of everything ahead of the ACCEPT.
        let drop = json!({"Protocol": "ALL", "CidrBlock": "0.0.0.0/0", "Action": "DROP"});
        let mut dropped = vec![drop];
        dropped.extend(egress_policies());
        assert!(!read(&dropped).egress);
        // Egress to one port only is not all egress.
        let one =
            json!({"Protocol": "TCP", "Port": "443", "CidrBlock": "0.0.0.0/0", "Action": "ACCEPT"});
        assert!(!read(&[one]).egress);
    }

    #[test]
    fn policies_of_other_clients_read_as_neutral_rules_or_not_at_all() {
        let policies = [
            // No note: TCP `ALL` is every port, ICMP has none.
            json!({"Protocol": "TCP", "Port": "ALL", "CidrBlock": "10.0.0.0/8", "Action": "ACCEPT"}),
            json!({"Protocol": "ICMP", "CidrBlock": "10.0.0.0/8", "Action": "ACCEPT"}),
            json!({"Protocol": "UDP", "Port": "53", "CidrBlock": "10.0.0.0/8", "Action": "DROP"}),
            json!({"Protocol": "GRE", "CidrBlock": "10.0.0.0/8", "Action": "ACCEPT"}),
            json!({"Protocol": "ALL", "SecurityGroupId": "sg-other", "Action": "ACCEPT"}),
        ];
        let seen =
            ObservedIngress::from_value(Some(&observed_ingress("sg-1", &policies, &[]))).unwrap();
        assert!(
            !seen.member_rule,
            "another group's policy is not the members' rule"
        );
        let want: BTreeSet<IngressRule> = [
            rule(json!({"from_port": 0, "to_port": 65535, "cidr": "10.0.0.0/8"})),
            rule(json!({"protocol": "icmp", "cidr": "10.0.0.0/8"})),
        ]
        .into();
        assert_eq!(seen.rules, want);
    }

    #[test]
    fn policies_open_the_members_then_the_rules_with_ports_for_tcp_and_udp_only() {
        let rules = [
            rule(json!({"from_port": 22, "cidr": "0.0.0.0/0"})),
            rule(json!({"protocol": "icmp", "cidr": "10.0.0.0/8"})),
        ];
        let v = ingress_policies("sg-1", &rules);
        assert_eq!(v[0]["SecurityGroupId"], json!("sg-1"));
        assert_eq!(v[1]["Protocol"], json!("TCP"));
        assert_eq!(v[1]["Port"], json!("22"));
        assert_eq!(v[2]["Protocol"], json!("ICMP"));
        assert!(v[2].get("Port").is_none());
    }
}
