//! Networks (VPCs), subnets and firewalls (security groups) on Huawei's VPC
//! service. None of their creates takes an idempotency token: each resource
//! is named after gpuform's token ([`tags::name_for`]) and looked up by that
//! name first, so an interrupted create is adopted, not duplicated.

use crate::client::{list_field, s, Call, Service};
use crate::observe::{egress_open, ingress_rules};
use crate::refresh::{list_v1, read_one, wait_subnet_ready};
use crate::{tags, HuaweiProvider};
use async_trait::async_trait;
use gpuform_provider::Result;
use gpuform_provider::{
    Create, ErrorKind, FirewallSpec, IngressRule, NetworkApi, NetworkSpec, ObservedResource,
    Protocol, ProviderError, ResourceKind, Scope, SubnetSpec, Update,
};
use serde_json::{json, Value};

/// The VPC-service resource named `name` (see [`tags::name_for`]) among
/// the v1 list of `what`, narrowed by `extra` (`vpc_id`).
async fn find_named(
    p: &HuaweiProvider,
    region: &str,
    what: &str,
    extra: &[(&str, &str)],
    name: &str,
) -> Result<Option<Value>> {
    let pid = p.project(region)?;
    let all = list_v1(p, region, pid, what, extra).await?;
    Ok(all.into_iter().find(|v| s(v, "name") == name))
}

/// What each create here starts from: its region, the region's project id,
/// the name derived from the create token and the tags to set.
fn creating<'a, T>(
    p: &'a HuaweiProvider,
    req: &'a Create<T>,
) -> Result<(&'a str, &'a str, String, tags::TagList)> {
    let region = req.region();
    let pid = p.project(region)?;
    Ok((
        region,
        pid,
        tags::name_for(&req.ownership.token),
        tags::for_create(req)?,
    ))
}

/// POST /v1/{project_id}/{collection} with `{key: item}` ("Creating a
/// VPC", "Creating a Subnet", "Creating a Security Group"): the item made,
/// as the answer's `key` gives it.
async fn create_v1(
    p: &HuaweiProvider,
    region: &str,
    collection: &str,
    key: &str,
    item: Value,
) -> Result<Value> {
    let pid = p.project(region)?;
    let path = format!("/v1/{pid}/{collection}");
    let body = json!({ key: item });
    let v = p
        .send(Call::new(Service::Vpc, region, "POST", path).body(body))
        .await?;
    Ok(v.get(key).cloned().unwrap_or(Value::Null))
}

/// The item of `collection` named `name` (a create retried after a crash
/// adopts what the first attempt made), else the one [`create_v1`] makes
/// from the body `item` builds.
async fn named_or_created(
    p: &HuaweiProvider,
    region: &str,
    (collection, key): (&str, &str),
    extra: &[(&str, &str)],
    name: &str,
    item: impl AsyncFnOnce() -> Result<Value>,
) -> Result<Value> {
    match find_named(p, region, collection, extra, name).await? {
        Some(found) => Ok(found),
        None => create_v1(p, region, collection, key, item().await?).await,
    }
}

#[async_trait]
impl NetworkApi for HuaweiProvider {
    /// "Creating a VPC", POST /v1/{project_id}/vpcs
    /// (support.huaweicloud.com/api-vpc/vpc_api01_0001.html): `tags` as
    /// `key*value` strings, set atomically with the VPC.
    async fn create_network(&self, req: &Create<NetworkSpec>) -> Result<ObservedResource> {
        let NetworkSpec { cidr } = &req.spec;
        let (region, pid, name, tag_list) = creating(self, req)?;
        let vpc = named_or_created(self, region, ("vpcs", "vpc"), &[], &name, async || {
            Ok(json!({
                "name": name,
                "description": format!("gpuform {}", req.ownership.address).replace(['<', '>'], ""),
                "tags": tags::starred(&tag_list),
                "cidr": cidr,
            }))
        })
        .await?;
        let id = s(&vpc, "id");
        wait_vpc_ready(self, region, pid, &id).await?;
        read_one(self, region, ResourceKind::Network, &id).await
    }

    /// "Creating a Subnet", POST /v1/{project_id}/subnets
    /// (support.huaweicloud.com/api-vpc/vpc_subnet01_0001.html).
    async fn create_subnet(&self, req: &Create<SubnetSpec>) -> Result<ObservedResource> {
        let SubnetSpec {
            network: vpc,
            zone,
            cidr,
        } = &req.spec;
        let (region, pid, name, tag_list) = creating(self, req)?;
        let in_vpc = [("vpc_id", vpc.as_str())];
        let subnet = named_or_created(
            self,
            region,
            ("subnets", "subnet"),
            &in_vpc,
            &name,
            async || {
                // The VPC may have been adopted after a crash while still CREATING.
                wait_vpc_ready(self, region, pid, vpc).await?;
                let dns = private_dns(self, region).await?;
                let mut subnet = json!({
                    "name": name,
                    "cidr": cidr,
                    "gateway_ip": gateway_of(cidr)?,
                    "vpc_id": vpc,
                    "availability_zone": zone,
                    "primary_dns": dns[0],
                    "dnsList": dns,
                    "tags": tags::starred(&tag_list),
                });
                if let Some(second) = dns.get(1) {
                    subnet["secondary_dns"] = json!(second);
                }
                Ok(subnet)
            },
        )
        .await?;
        let id = s(&subnet, "id");
        wait_subnet_ready(self, region, pid, &id).await?;
        read_one(self, region, ResourceKind::Subnet, &id).await
    }

    /// "Creating a Security Group", POST /v1/{project_id}/security-groups
    /// (support.huaweicloud.com/api-vpc/vpc_sg01_0001.html), then its tags
    /// ("Batch Creating Security Group Tags", POST
    /// /v2.0/{project_id}/security-groups/{id}/tags/action) and rules.
    async fn create_firewall(&self, req: &Create<FirewallSpec>) -> Result<ObservedResource> {
        let FirewallSpec {
            network: vpc,
            ingress,
            bare,
        } = &req.spec;
        let (region, pid, name, tag_list) = creating(self, req)?;
        let in_vpc = [("vpc_id", vpc.as_str())];
        let groups = ("security-groups", "security_group");
        let sg = named_or_created(self, region, groups, &in_vpc, &name, async || {
            Ok(json!({"name": name, "vpc_id": vpc}))
        })
        .await?;
        let id = s(&sg, "id");
        let base = format!("/v2.0/{pid}/security-groups/{id}");
        tags::tag_action(self, Service::Vpc, region, &base, "create", &tag_list).await?;
        // Bare: the rules come by update_ingress (the engine's split create).
        if !bare {
            sync_rules(self, region, pid, &sg, ingress).await?;
        }
        read_one(self, region, ResourceKind::Firewall, &id).await
    }

    /// Makes a group's rules exactly `want` plus the members' rule ("Querying
    /// Security Group Details", GET /v1/{project_id}/security-groups/{id}, for
    /// its rules with their ids).
    async fn update_ingress(&self, u: &Update<'_, [IngressRule]>) -> Result<()> {
        let (region, id, want) = (u.region(), u.id(), u.want);
        let pid = self.project(region)?;
        let path = format!("/v1/{pid}/security-groups/{id}");
        let v = self.client.get(Service::Vpc, region, path).await?;
        let sg = v.get("security_group").unwrap_or(&Value::Null);
        sync_rules(self, region, pid, sg, want).await
    }

    /// "Deleting a VPC", DELETE /v1/{project_id}/vpcs/{vpc_id}.
    async fn delete_network(&self, scope: &Scope, id: &str) -> Result<()> {
        let path = |pid: &str| format!("/v1/{pid}/vpcs/{id}");
        self.delete_in_project(Service::Vpc, scope, path).await
    }

    /// "Deleting a Subnet", DELETE /v1/{project_id}/vpcs/{vpc_id}/subnets/{subnet_id}:
    /// the subnet's VPC is read first ("Querying Subnet Details").
    async fn delete_subnet(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let pid = self.project(region)?;
        let sn = self
            .client
            .get(Service::Vpc, region, format!("/v1/{pid}/subnets/{id}"))
            .await?;
        let vpc = s(sn.get("subnet").unwrap_or(&Value::Null), "vpc_id");
        let path = format!("/v1/{pid}/vpcs/{vpc}/subnets/{id}");
        self.client.delete(Service::Vpc, region, path).await?;
        Ok(())
    }

    /// "Deleting a Security Group", DELETE /v1/{project_id}/security-groups/{id}.
    async fn delete_firewall(&self, scope: &Scope, id: &str) -> Result<()> {
        let path = |pid: &str| format!("/v1/{pid}/security-groups/{id}");
        self.delete_in_project(Service::Vpc, scope, path).await
    }
}

/// Polls a VPC until it is `OK`: it is `CREATING` at first ("Querying VPC
/// Details", support.huaweicloud.com/api-vpc/vpc_api01_0002.html, field
/// `status`: CREATING / OK), and a subnet made in it meanwhile is refused
/// with `400 VPC.0004 VPC is not active, please try later` ("Error Codes",
/// support.huaweicloud.com/api-vpc/vpc_api_0003.html).
async fn wait_vpc_ready(p: &HuaweiProvider, region: &str, pid: &str, id: &str) -> Result<()> {
    let path = format!("/v1/{pid}/vpcs/{id}");
    p.client
        .wait_status(Service::Vpc, region, path, "vpc", &["OK"], &["ERROR"])
        .await
        .map(|_| ())
}

/// The region's private (intranet) DNS servers, by priority: "Querying
/// Name Servers", GET /v2/nameservers?type=private&region=…
/// (support.huaweicloud.com/api-dns/dns_api_69001.html). A subnet created
/// without DNS servers cannot use the cloud's internal DNS ("Creating a
/// Subnet", `dnsList`: empty by default, and then 无法使用云内网DNS功能).
async fn private_dns(p: &HuaweiProvider, region: &str) -> Result<Vec<String>> {
    let v = p
        .send(
            Call::new(Service::Dns, region, "GET", "/v2/nameservers".into())
                .query("type", "private")
                .query("region", region),
        )
        .await?;
    let mut records: Vec<(u64, String)> = list_field(&v, "nameservers", "listing name servers")?
        .iter()
        .filter(|n| s(n, "type") == "private")
        .flat_map(|n| {
            n.get("ns_records")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|r| {
            let a = s(&r, "address");
            let priority = r
                .get("priority")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            (!a.is_empty()).then_some((priority, a))
        })
        .collect();
    records.sort();
    if records.is_empty() {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("Huawei Cloud lists no private DNS server for region {region}; a subnet without one cannot resolve internal names"),
        ));
    }
    Ok(records.into_iter().map(|(_, a)| a).collect())
}

/// First host of an IPv4 CIDR: Huawei subnets need an explicit `gateway_ip`.
fn gateway_of(cidr: &str) -> Result<String> {
    let bad = || ProviderError::new(ErrorKind::Invalid, format!("`{cidr}` is not an IPv4 CIDR"));
    let (ip, len) = cidr.split_once('/').ok_or_else(bad)?;
    let len: u32 = len.parse().map_err(|_| bad())?;
    let octets: Vec<u8> = ip
        .split('.')
        .map(|o| o.parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    if octets.len() != 4 || len > 30 {
        return Err(bad());
    }
    let n = u32::from_be_bytes([octets[0], octets[1], octets[2], octets[3]]);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let g = (n & mask) + 1;
    let b = g.to_be_bytes();
    Ok(format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]))
}

/// Makes the group's rules: all traffic from members (a rule whose
/// `remote_group_id` is the group itself) plus exactly the `ingress`
/// CIDR rules ("Creating a Security Group Rule", POST
/// /v1/{project_id}/security-group-rules; "Deleting a Security Group Rule",
/// DELETE /v1/{project_id}/security-group-rules/{id}). Egress rules and
/// other group rules are left alone.
async fn sync_rules(
    p: &HuaweiProvider,
    region: &str,
    pid: &str,
    sg: &Value,
    ingress: &[IngressRule],
) -> Result<()> {
    let id = s(sg, "id");
    let rules = ingress_rules(sg);
    let has_self = rules.iter().any(|r| {
        s(r, "remote_group_id") == id
            && s(r, "ethertype") == "IPv4"
            && r.get("protocol").is_none_or(Value::is_null)
    });
    let wanted = ingress
        .iter()
        .map(|i| rule_body(&id, i))
        .collect::<Result<Vec<_>, _>>()?;
    // Delete CIDR ingress rules that are no longer wanted.
    for r in rules
        .iter()
        .filter(|r| !s(r, "remote_ip_prefix").is_empty())
    {
        if !wanted.iter().any(|w| same_rule(w, r)) {
            let rid = s(r, "id");
            let path = format!("/v1/{pid}/security-group-rules/{rid}");
            match p.client.delete(Service::Vpc, region, path).await {
                Err(e) if e.kind != ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    let mut to_add = Vec::new();
    if !has_self {
        to_add.push(json!({"security_group_id": id, "direction": "ingress", "ethertype": "IPv4", "remote_group_id": id}));
    }
    if !egress_open(sg) {
        // The default egress rule a new group has, deleted behind gpuform's back.
        to_add.push(json!({"security_group_id": id, "direction": "egress", "ethertype": "IPv4"}));
    }
    to_add.extend(
        wanted
            .into_iter()
            .filter(|w| !rules.iter().any(|r| same_rule(w, r))),
    );
    for body in to_add {
        p.send(
            Call::new(
                Service::Vpc,
                region,
                "POST",
                format!("/v1/{pid}/security-group-rules"),
            )
            .body(json!({"security_group_rule": body})),
        )
        .await?;
    }
    Ok(())
}

/// A neutral rule as a Huawei security group rule. ICMP rules have no
/// ports; the spec's range is kept in the description so the rule reads
/// back as it was asked (see [`crate::observe::neutral_rule`]).
fn rule_body(sg: &str, rule: &IngressRule) -> Result<Value> {
    let IngressRule {
        protocol,
        from_port,
        to_port,
        cidr,
    } = rule;
    let mut r = json!({
        "security_group_id": sg,
        "direction": "ingress",
        "ethertype": "IPv4",
        "protocol": protocol.as_str(),
        "remote_ip_prefix": cidr,
    });
    match protocol {
        Protocol::Tcp | Protocol::Udp => {
            r["port_range_min"] = json!(from_port);
            r["port_range_max"] = json!(to_port);
        }
        Protocol::Icmp => {
            if let (Some(f), Some(t)) = (from_port, to_port) {
                r["description"] = json!(format!("gpuform-ports={f}-{t}"));
            }
        }
        Protocol::All => {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("protocol `{protocol}` is not tcp, udp or icmp"),
            ))
        }
    }
    Ok(r)
}

/// Whether a wanted rule body and a rule the group has are the same rule.
fn same_rule(want: &Value, have: &Value) -> bool {
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    s(want, "protocol") == s(have, "protocol")
        && s(want, "remote_ip_prefix") == s(have, "remote_ip_prefix")
        && n(want, "port_range_min") == n(have, "port_range_min")
        && n(want, "port_range_max") == n(have, "port_range_max")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::neutral_rule;

    #[test]
    fn gateway() {
        assert_eq!(gateway_of("10.0.0.0/24").unwrap(), "10.0.0.1");
        assert_eq!(gateway_of("10.0.7.0/20").unwrap(), "10.0.0.1");
        assert!(gateway_of("nope").is_err());
    }

    #[test]
    fn icmp_ports_survive_the_round_trip_through_the_description() {
        let want = IngressRule::parse(
            &json!({"protocol": "icmp", "from_port": 0, "to_port": 8, "cidr": "10.0.0.0/8"}),
        )
        .unwrap();
        let body = rule_body("sg-1", &want).unwrap();
        assert_eq!(body.get("port_range_min"), None);
        let back = IngressRule::parse(&neutral_rule(&body)).unwrap();
        assert_eq!(back, want);
        let all = IngressRule::parse(&json!({"protocol": "all", "cidr": "10.0.0.0/8"})).unwrap();
        assert_eq!(
            rule_body("sg-1", &all).unwrap_err().kind,
            ErrorKind::Invalid
        );
    }
}
