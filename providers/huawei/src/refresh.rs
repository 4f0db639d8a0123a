//! Reading what exists: `read` by ids, `list_owned` by the project tag, and
//! the `Listing::observe_*` methods that list each kind and turn Huawei's
//! answers into neutral [`ObservedResource`]s (with [`crate::observe`]). Every list is read page by page with 1000 per page
//! (see [`client::PAGE`]), so cost grows with pages, not resources.

use crate::client::{self, list_field, s, Call, Service, PAGE};
use crate::observe::{
    observe_ingress, observe_server, observe_subnet, observe_volume, observe_vpc, observed,
};
use crate::{tags, HuaweiProvider};
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    Attrs, ErrorKind, Inventory, InventoryApi, InventoryInstance, InventoryVolume, Lookup,
    ObservedResource, ProviderError, RefreshApi, ResourceKind, Scope,
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
        Ok(server_groups(p, region)
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

/// "Querying ECS Groups", GET /v1/{project_id}/cloudservers/os-server-groups.
pub async fn server_groups(p: &HuaweiProvider, region: &str) -> Result<Vec<Value>> {
    let pid = p.project(region)?;
    let path = format!("/v1/{pid}/cloudservers/os-server-groups");
    let v = p.client.get(Service::Ecs, region, path).await?;
    list_field(&v, "server_groups", "listing ECS groups")
}

/// Polls a subnet until it is `ACTIVE` and answers it: a new subnet is
/// `UNKNOWN` until it is attached to its VPC ("Querying Subnet Details",
/// support.huaweicloud.com/api-vpc/vpc_subnet01_0002.html: ACTIVE = attached
/// to the VPC, UNKNOWN = not yet, ERROR = failed).
pub async fn wait_subnet_ready(
    p: &HuaweiProvider,
    region: &str,
    pid: &str,
    id: &str,
) -> Result<Value> {
    let path = format!("/v1/{pid}/subnets/{id}");
    p.client
        .wait_status(
            Service::Vpc,
            region,
            path,
            "subnet",
            &["ACTIVE"],
            &["ERROR"],
        )
        .await
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
