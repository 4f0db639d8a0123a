//! Reading what exists: `read` by ids, `list_owned` by the project tag, and
//! the `Listing::observe_*` methods that turn Huawei's answers into neutral
//! [`ObservedResource`]s. Every list is read page by page with 1000 per page
//! (see [`client::PAGE`]), so cost grows with pages, not resources.

use crate::client::{self, s, Call, Service, PAGE};
use crate::{network, storage, tags, HuaweiProvider};
use async_trait::async_trait;
use base64::Engine as _;
use gpuform_provider::attr;
use gpuform_provider::resource::{egress_missing, member_rule_missing};
use gpuform_provider::Result;
use gpuform_provider::{
    Attrs, ErrorKind, IngressRule, Inventory, InventoryApi, InventoryInstance, InventoryVolume,
    Lookup, ObservedResource, ProviderError, RefreshApi, ResourceKind, Scope,
};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

/// One listing of a region: the provider, the region, and which resources
/// to keep. Each kind's `observe_*` method reads it.
struct Listing<'a> {
    p: &'a HuaweiProvider,
    region: &'a str,
    filter: Filter<'a>,
}

/// Which resources a list should keep.
enum Filter<'a> {
    Project(&'a str),
    Ids(HashSet<&'a str>),
}

impl Filter<'_> {
    fn keeps(&self, o: &ObservedResource) -> bool {
        match self {
            Filter::Project(p) => o.ownership.as_ref().map(|x| x.project.as_str()) == Some(*p),
            Filter::Ids(ids) => ids.contains(o.id.as_str()),
        }
    }

    fn project(&self) -> Option<&str> {
        match self {
            Filter::Project(p) => Some(p),
            Filter::Ids(_) => None,
        }
    }
}

/// The given resources of one kind; absent ones are left out.
pub async fn read(
    p: &HuaweiProvider,
    region: &str,
    kind: ResourceKind,
    ids: &[String],
) -> Result<Vec<ObservedResource>> {
    let filter = Filter::Ids(ids.iter().map(String::as_str).collect());
    Listing { p, region, filter }.observe(kind).await
}

/// One resource, or `not-found`.
pub async fn read_one(
    p: &HuaweiProvider,
    region: &str,
    kind: ResourceKind,
    id: &str,
) -> Result<ObservedResource> {
    read(p, region, kind, &[id.to_string()])
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| ProviderError::new(ErrorKind::NotFound, format!("{kind} {id} not found")))
}

#[async_trait]
impl RefreshApi for HuaweiProvider {
    async fn read(&self, q: &Lookup<'_>) -> Result<Vec<ObservedResource>> {
        let (scope, kind, ids) = (q.scope, q.kind, q.ids);
        read(self, &scope.region, kind, ids).await
    }

    /// Everything tagged with `project`. Server groups carry no tags, so
    /// placements are found by their recorded ids only.
    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>> {
        let region = scope.region.as_str();
        let mut out = Vec::new();
        for kind in [
            ResourceKind::Network,
            ResourceKind::Subnet,
            ResourceKind::Firewall,
            ResourceKind::Instance,
            ResourceKind::Volume,
        ] {
            let filter = Filter::Project(project);
            let listing = Listing {
                p: self,
                region,
                filter,
            };
            out.extend(listing.observe(kind).await?);
        }
        Ok(out)
    }
}

impl Listing<'_> {
    async fn observe(&self, kind: ResourceKind) -> Result<Vec<ObservedResource>> {
        match kind {
            ResourceKind::Network | ResourceKind::Subnet | ResourceKind::Firewall => {
                self.observe_vpc_kind(kind).await
            }
            ResourceKind::Instance => self.observe_servers().await,
            ResourceKind::Volume => self.observe_volumes().await,
            ResourceKind::Placement => self.observe_groups().await,
            ResourceKind::Bucket | ResourceKind::Block => Ok(Vec::new()),
        }
    }

    /// VPCs, subnets and security groups: the tag filter for ownership, the v1
    /// list for the attributes.
    async fn observe_vpc_kind(&self, kind: ResourceKind) -> Result<Vec<ObservedResource>> {
        let (p, region, filter) = (self.p, self.region, &self.filter);
        let pid = p.project(region)?;
        let what = match kind {
            ResourceKind::Network => "vpcs",
            ResourceKind::Subnet => "subnets",
            _ => "security-groups",
        };
        let tagged = tagged(p, region, pid, what, filter.project()).await?;
        if filter.project().is_some() && tagged.is_empty() {
            return Ok(Vec::new());
        }
        let items = list_v1(p, region, pid, what, &[]).await?;
        Ok(items
            .iter()
            .map(|it| {
                let id = s(it, "id");
                let (attrs, status) = match kind {
                    ResourceKind::Network => observe_vpc(it),
                    ResourceKind::Subnet => observe_subnet(it),
                    _ => (
                        Attrs::from([(attr::INGRESS.to_string(), observe_ingress(it))]),
                        "available".to_string(),
                    ),
                };
                observed(
                    kind,
                    &id,
                    region,
                    tagged.get(&id).map(Vec::as_slice),
                    attrs,
                    &status,
                )
            })
            .filter(|o| filter.keeps(o))
            .collect())
    }

    async fn observe_volumes(&self) -> Result<Vec<ObservedResource>> {
        let (p, region, filter) = (self.p, self.region, &self.filter);
        let pid = p.project(region)?;
        Ok(all_volumes(p, region, pid)
            .await?
            .iter()
            // System disks inherit the server's creation tags ("tags added
            // during ECS creation are also added to the system disk", ECS
            // user guide ecs_03_0902), gpuform's address included: they are
            // part of their server, never a volume of ours.
            .filter(|v| !is_system_disk(v))
            .map(|v| observe_volume(v, region))
            .filter(|o| filter.keeps(o) && o.status != "deleting" && o.status != "deleted")
            .collect())
    }

    /// "Querying Details About ECSs", GET /v1/{project_id}/cloudservers/detail
    /// (support.huaweicloud.com/api-ecs/zh-cn_topic_0094148850.html): `limit`
    /// ≤ 1000, `offset` = page number from 1, `tags` = `key=value`.
    async fn observe_servers(&self) -> Result<Vec<ObservedResource>> {
        let (p, region, filter) = (self.p, self.region, &self.filter);
        let pid = p.project(region)?;
        let call = |c: &client::Cursor| {
            let call = Call::new(
                Service::Ecs,
                region,
                "GET",
                format!("/v1/{pid}/cloudservers/detail"),
            )
            .query("limit", PAGE.to_string())
            .query("offset", (c.page + 1).to_string());
            match filter.project() {
                Some(project) => call.query(
                    "tags",
                    format!("{}={}", tags::PROJECT, tags::encode(project)),
                ),
                None => call,
            }
        };
        let mut servers = p
            .client
            .pages("servers", "listing ECSs", call, |_, c| c.full())
            .await?;
        servers.retain(|sv| !matches!(s(sv, "status").as_str(), "DELETED" | "SOFT_DELETED"));
        if servers.is_empty() {
            return Ok(Vec::new());
        }
        // Root disk sizes: one batched EVS listing, not one call per server.
        let sizes: HashMap<String, u64> = all_volumes(p, region, pid)
            .await?
            .iter()
            .filter_map(|v| Some((s(v, "id"), v.get("size")?.as_u64()?)))
            .collect();
        Ok(servers
            .iter()
            .map(|sv| observe_server(sv, region, &sizes))
            .filter(|o| filter.keeps(o))
            .collect())
    }

    /// ECS groups ("Querying ECS Groups", GET
    /// /v1/{project_id}/cloudservers/os-server-groups). They carry no tags: only
    /// a read by id finds them; gpuform makes only `spread` ones.
    async fn observe_groups(&self) -> Result<Vec<ObservedResource>> {
        let (p, region, filter) = (self.p, self.region, &self.filter);
        if filter.project().is_some() {
            return Ok(Vec::new());
        }
        Ok(crate::compute::server_groups(p, region)
            .await?
            .iter()
            .map(|g| {
                let a = Attrs::from([("strategy".to_string(), json!("spread"))]);
                observed(
                    ResourceKind::Placement,
                    &s(g, "id"),
                    region,
                    None,
                    a,
                    "available",
                )
            })
            .filter(|o| filter.keeps(o))
            .collect())
    }
}

/// The resource, with its ownership and user tags read from `tags`.
fn observed(
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

/// All pages of a marker-paginated v1 list (VPC "Querying VPCs"
/// GET /v1/{project_id}/vpcs, "Querying Subnets" GET /v1/{project_id}/subnets,
/// "Querying Security Groups" GET /v1/{project_id}/security-groups:
/// `limit` + `marker` = id of the last item).
pub async fn list_v1(
    p: &HuaweiProvider,
    region: &str,
    pid: &str,
    what: &str,
    extra: &[(&str, &str)],
) -> Result<Vec<Value>> {
    let key = what.replace('-', "_");
    let call = |c: &client::Cursor| {
        let mut call = Call::new(Service::Vpc, region, "GET", format!("/v1/{pid}/{what}"))
            .query("limit", PAGE.to_string());
        for (k, v) in extra {
            call = call.query(k, *v);
        }
        match &c.marker {
            Some(m) => call.query("marker", m.clone()),
            None => call,
        }
    };
    p.client
        .pages(&key, &format!("listing {what}"), call, |_, c| c.full())
        .await
}

/// Tags of VPC-service resources through the tag filter call ("Querying
/// VPCs by Tag", POST /v2.0/{project_id}/vpcs/resource_instances/action,
/// support.huaweicloud.com/api-vpc/vpc_tag_0005.html; the same for
/// subnets and security-groups). `project` None = any gpuform project.
async fn tagged(
    p: &HuaweiProvider,
    region: &str,
    pid: &str,
    what: &str,
    project: Option<&str>,
) -> Result<HashMap<String, tags::TagList>> {
    let values: Vec<String> = project.map(tags::encode).into_iter().collect();
    let call = |c: &client::Cursor| {
        Call::new(
            Service::Vpc,
            region,
            "POST",
            format!("/v2.0/{pid}/{what}/resource_instances/action"),
        )
        .body(json!({
            "action": "filter",
            "limit": PAGE,
            "offset": c.seen,
            "tags": [{"key": tags::PROJECT, "values": values}],
        }))
    };
    let total = |v: &Value| v.get("total_count").and_then(Value::as_u64).unwrap_or(0) as usize;
    let found = p
        .client
        .pages(
            "resources",
            &format!("tag filter of {what}"),
            call,
            |v, c| c.last_len > 0 && c.seen < total(v),
        )
        .await?;
    Ok(found
        .iter()
        .map(|r| {
            (
                s(r, "resource_id"),
                tags::from_objects(r.get("tags").unwrap_or(&Value::Null)),
            )
        })
        .collect())
}

/// A VPC: `cidr`; `OK` is available ("Querying VPC Details": CREATING / OK).
fn observe_vpc(it: &Value) -> (Attrs, String) {
    let attrs = Attrs::from([("cidr".to_string(), json!(s(it, "cidr")))]);
    (attrs, ready_as_available(it, "OK"))
}

/// A subnet: `cidr`, `zone`; `ACTIVE` is available.
fn observe_subnet(it: &Value) -> (Attrs, String) {
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
fn observe_ingress(sg: &Value) -> Value {
    let rules = network::ingress_rules(sg);
    let mut out: Vec<Value> = rules
        .iter()
        .filter(|r| !s(r, "remote_ip_prefix").is_empty())
        .map(|r| {
            let raw = network::neutral_rule(r);
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
    if !network::egress_open(sg) {
        out.push(egress_missing());
    }
    Value::Array(out)
}

/// Every EVS disk of the project ("Querying EVS Disks (Batch)",
/// GET /v2/{project_id}/cloudvolumes/detail, support.huaweicloud.com/api-evs/evs_04_2006.html:
/// `limit` ≤ 1000, `offset` = records to skip).
async fn all_volumes(p: &HuaweiProvider, region: &str, pid: &str) -> Result<Vec<Value>> {
    let call = |c: &client::Cursor| {
        Call::new(
            Service::Evs,
            region,
            "GET",
            format!("/v2/{pid}/cloudvolumes/detail"),
        )
        .query("limit", PAGE.to_string())
        .query("offset", c.seen.to_string())
    };
    p.client
        .pages("volumes", "listing EVS disks", call, |_, c| c.full())
        .await
}

/// A server's system disk: EVS reports it `bootable` ("Querying EVS Disks
/// (Batch)", support.huaweicloud.com/api-evs/evs_04_2006.html). gpuform's data
/// disks are made empty, never from an image, so they are never bootable.
fn is_system_disk(v: &Value) -> bool {
    s(v, "bootable") == "true"
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
        storage::attachment(v).map_or(Value::Null, Value::String),
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
fn observe_server(sv: &Value, region: &str, root_sizes: &HashMap<String, u64>) -> ObservedResource {
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

/// Everything in the region, of every owner (`gpuform audit`, `gpuform
/// import`): one ECS listing (GET /v1/{project_id}/cloudservers/detail,
/// 1,000 a page, no tag filter; `created` is its launch), one EVS listing
/// (GET /v2/{project_id}/cloudvolumes/detail): the disks attached to a
/// server give its disk size, the `available` data disks are the unattached
/// ones; and one subnet listing (GET /v1/{project_id}/subnets), which says
/// what subnet each server is in ([`built_on`]).
#[async_trait]
impl InventoryApi for HuaweiProvider {
    async fn inventory(&self, scope: &Scope) -> Result<Inventory> {
        let region = scope.region.as_str();
        let pid = self.project(region)?;
        let call = |c: &client::Cursor| {
            Call::new(
                Service::Ecs,
                region,
                "GET",
                format!("/v1/{pid}/cloudservers/detail"),
            )
            .query("limit", PAGE.to_string())
            .query("offset", (c.page + 1).to_string())
        };
        let (servers, volumes, subnets) = tokio::try_join!(
            self.client
                .pages("servers", "listing ECSs", call, |_, c| c.full()),
            all_volumes(self, region, pid),
            list_v1(self, region, pid, "subnets", &[]),
        )?;
        let sizes: HashMap<String, u64> = volumes
            .iter()
            .filter_map(|v| Some((s(v, "id"), v.get("size")?.as_u64()?)))
            .collect();
        let mut out = Inventory::default();
        for sv in servers
            .iter()
            .filter(|sv| !matches!(s(sv, "status").as_str(), "DELETED" | "SOFT_DELETED"))
        {
            let attached: Vec<u64> = sv
                .get("os-extended-volumes:volumes_attached")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| sizes.get(&s(v, "id")).copied())
                .collect();
            let disk_gb = (!attached.is_empty()).then(|| attached.iter().sum());
            let o = observe_server(sv, region, &sizes);
            let mut row = InventoryInstance::from_observed(&o, Some(s(sv, "created")), disk_gb);
            row.tags
                .extend(tags::from_pairs(sv.get("tags").unwrap_or(&Value::Null)));
            built_on(sv, &subnets, &mut row);
            out.instances.push(row);
        }
        for v in volumes
            .iter()
            .filter(|v| !is_system_disk(v) && s(v, "status") == "available")
        {
            let mut row = InventoryVolume::from_observed(&observe_volume(v, region));
            row.tags
                .extend(tags::from_map(v.get("tags").unwrap_or(&Value::Null)));
            out.volumes.push(row);
        }
        Ok(out)
    }
}

/// What a server is built on, from its detail ("Querying Details About
/// ECSs", support.huaweicloud.com/api-ecs/zh-cn_topic_0094148850.html):
/// `metadata.vpc_id`; `security_groups` [{`id`}];
/// `os-extended-volumes:volumes_attached` [{`id`, `bootIndex`}], the data
/// disks being those not booted from (`bootIndex` other than "0"); and its
/// subnet, which the detail does not name: the subnet of its VPC whose
/// `cidr` holds the server's fixed address in `addresses.{vpc_id}` (VPC
/// "Querying Subnets", support.huaweicloud.com/api-vpc/vpc_subnet01_0003.html:
/// subnets of one VPC never overlap).
fn built_on(sv: &Value, subnets: &[Value], row: &mut InventoryInstance) {
    let md = sv.get("metadata").cloned().unwrap_or(Value::Null);
    let vpc = s(&md, "vpc_id");
    let addrs: Vec<std::net::Ipv4Addr> = sv
        .get("addresses")
        .and_then(|a| a.get(&vpc))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| s(a, "OS-EXT-IPS:type") != "floating")
        .filter_map(|a| s(a, "addr").parse().ok())
        .collect();
    let subnet = subnets
        .iter()
        .filter(|n| s(n, "vpc_id") == vpc)
        .find(|n| addrs.iter().any(|ip| in_cidr(*ip, &s(n, "cidr"))))
        .map(|n| s(n, "id"));
    if !vpc.is_empty() {
        row.uses.insert("network".into(), vpc);
    }
    if let Some(n) = subnet {
        row.uses.insert("subnet".into(), n);
    }
    row.firewalls = sv
        .get("security_groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|g| s(g, "id"))
        .filter(|g| !g.is_empty())
        .collect();
    row.data_volumes = sv
        .get("os-extended-volumes:volumes_attached")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| s(v, "bootIndex") != "0")
        .map(|v| s(v, "id"))
        .collect();
    row.data_volumes.sort();
}

/// Whether `ip` is in `cidr` (`a.b.c.d/n`).
fn in_cidr(ip: std::net::Ipv4Addr, cidr: &str) -> bool {
    let Some((net, len)) = cidr.split_once('/') else {
        return false;
    };
    let (Ok(net), Ok(len)) = (net.parse::<std::net::Ipv4Addr>(), len.parse::<u32>()) else {
        return false;
    };
    if len > 32 {
        return false;
    }
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

#[cfg(test)]
mod built_on_tests {
    use super::in_cidr;

    #[test]
    fn an_address_is_in_its_range() {
        let ip = |s: &str| s.parse().unwrap();
        assert!(in_cidr(ip("10.8.1.7"), "10.8.1.0/24"));
        assert!(!in_cidr(ip("10.8.2.7"), "10.8.1.0/24"));
        assert!(in_cidr(ip("10.8.2.7"), "0.0.0.0/0"));
        assert!(!in_cidr(ip("10.8.2.7"), "junk"));
    }
}
