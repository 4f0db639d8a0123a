//! One cluster of the spec → its resources, in the order a reader follows:
//! where it runs (cloud, region, zones), which instance type, which
//! capacity sources, which zone, then the network, the nodes and their
//! volumes. Each step is a function; errors are located diagnostics.

use super::capacity::{self, Filled};
use super::{
    attrs, bootstrap_base, canonical_ingress, first_subnet, mig_layout, node_market, node_query,
    placement, port_range, suggest, target_for, Desired, DesiredResource, Exhausted, LockIn,
    ResolveOptions, Target, CAPACITY_BLOCK, MAX_USER_DATA_BYTES, OWN_USER_DATA, USER_DATA_SHA256,
};
use crate::address::Address;
use crate::bootstrap;
use crate::spec::{
    CloudName, Cluster, Diagnostic, Fabric, InterconnectReq, KubernetesMode, LoadedSpec,
};
use gpuform_catalog::{Catalog, GpuModel, OfferQuery, PricingModel};
use gpuform_provider::attr;
use gpuform_provider::{Attrs, Cloud, ResourceKind};
use serde_json::json;
use std::collections::BTreeMap;

type Diags = Vec<Diagnostic>;

/// What every step of one cluster reads.
struct Ctx<'a> {
    loaded: &'a LoadedSpec,
    catalog: &'a Catalog,
    opts: &'a ResolveOptions,
    name: &'a str,
    c: &'a Cluster,
    /// `clusters.<name>`, the YAML path of the cluster.
    path: String,
}

impl Ctx<'_> {
    /// A diagnostic at `clusters.<name><suffix>` (`suffix` "" or ".zones").
    fn diag(&self, suffix: &str, message: String, hint: Option<String>) -> Diagnostic {
        self.loaded
            .diagnostic(&format!("{}{suffix}", self.path), message, hint)
    }

    fn at(&self, local: &str) -> Address {
        Address::in_cluster(self.name, local)
    }
}

pub(super) fn resolve_cluster(
    loaded: &LoadedSpec,
    catalog: &Catalog,
    opts: &ResolveOptions,
    name: &str,
    c: &Cluster,
    out: &mut Desired,
) -> Result<(), Diags> {
    let cx = Ctx {
        loaded,
        catalog,
        opts,
        name,
        c,
        path: format!("clusters.{name}"),
    };
    let gpu = catalog
        .gpu(&c.gpu.model)
        .map_err(|e| vec![cx.diag(".gpu", e.to_string(), None)])?;
    let mut errors = Vec::new();
    let mig_layout = match mig_layout(loaded, &cx.path, gpu, c) {
        Ok(l) => l,
        Err(d) => {
            errors.push(d);
            None
        }
    };
    let template = node_query(c, &gpu.name, capacity::market(c), opts.cny_per_usd);
    let (target, region) = place(&cx, &template, out)?;
    let cloud = target.cloud;
    let (zones, usable) = zones_of(&cx, cloud, region, &mut errors);
    let query = OfferQuery {
        cloud: Some(cloud),
        region: Some(region.to_string()),
        ..template.clone()
    };
    let (instance_type, hourly_usd) = match instance_type_of(&cx, gpu, cloud, region, &query, out) {
        Ok(chosen) => chosen,
        Err(d) => {
            errors.push(d);
            return Err(errors);
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    if gpuform_provider::is_raw_image_id(cloud, &c.image) {
        out.lockin.push(LockIn {
            yaml_path: format!("{}.image", cx.path),
            reason: format!("raw image id `{}`", c.image),
        });
    }
    let filled = fill_capacity(&cx, &instance_type, &zones, out)?;
    let zone = zone_of(&cx, cloud, region, &instance_type, &usable, filled.as_ref())
        .map_err(|d| vec![d])?;
    let (boot, boot_note) =
        bootstrap_base(loaded, &cx.path, gpu, c, cloud, &instance_type, mig_layout)
            .map_err(|d| vec![d])?;
    let mut emit = Emit {
        cx: &cx,
        out,
        target,
        region,
    };
    for (address, b) in filled.iter().flat_map(|f| &f.blocks) {
        // Capacity Blocks to buy (or bought): paid up front, no hourly price.
        let local = address.local_in(name).unwrap_or(address);
        emit.push(local, ResourceKind::Block, b.attrs.clone(), &[], None);
    }
    let network = emit_network(&mut emit, cloud, &zone);
    let node_type = NodeType {
        gpu,
        instance_type: &instance_type,
        hourly_usd,
        zone: &zone,
    };
    emit_nodes(&mut emit, &node_type, filled.as_ref(), &network, boot)?;
    out.notes.extend(boot_note);
    Ok(())
}

/// The cloud and region: `cloud: any` is placed (and the plan says why),
/// else the spec's, checked against the catalog.
fn place<'c>(
    cx: &Ctx<'c>,
    template: &OfferQuery,
    out: &mut Desired,
) -> Result<(Target, &'c str), Diags> {
    let (c, name) = (cx.c, cx.name);
    if c.cloud != CloudName::Any {
        return target_for(cx.loaded, cx.catalog, cx.opts, &cx.path, c.cloud, &c.region)
            .map_err(|d| vec![d]);
    }
    let chosen = placement::choose(cx.catalog, name, c, template, cx.opts)
        .map_err(|why| vec![cx.diag(".cloud", why.0, Some(why.1))])?;
    out.notes.push(format!(
        "cluster.{name}: placed in {} {} — {}",
        chosen.cloud, chosen.region, chosen.why
    ));
    let region = cx
        .catalog
        .region(chosen.cloud, &chosen.region)
        .map(|r| r.name.as_str())
        .unwrap_or_default();
    Ok((
        Target {
            cloud: chosen.cloud,
            sandbox: cx.opts.sandbox,
        },
        region,
    ))
}

/// The cluster's zones (the spec's, checked, or all the region's) and,
/// for capacity failover, those that have not run out for this cluster
/// during this apply, in preference order.
fn zones_of(
    cx: &Ctx<'_>,
    cloud: Cloud,
    region: &str,
    errors: &mut Diags,
) -> (Vec<String>, Vec<String>) {
    let (c, name) = (cx.c, cx.name);
    let region_zones = &cx
        .catalog
        .region(cloud, region)
        .expect("checked above")
        .zones;
    let zones: Vec<String> = if c.zones.is_empty() {
        region_zones.clone()
    } else {
        for (i, z) in c.zones.iter().enumerate() {
            if !region_zones.contains(z) {
                errors.push(cx.diag(
                    &format!(".zones[{i}]"),
                    format!("zone `{z}` is not in {cloud} region {region}"),
                    Some(format!("zones of {region}: {}", region_zones.join(", "))),
                ));
            }
        }
        c.zones.clone()
    };
    if zones.is_empty() {
        errors.push(cx.diag(
            ".region",
            format!("gpuform knows no zones of {cloud} region {region}"),
            Some("list the zones to use under `zones:`".into()),
        ));
    }
    let usable: Vec<String> = zones
        .iter()
        .filter(|z| {
            !cx.opts
                .exhausted
                .contains(&Exhausted::zone(name, cloud, region, z))
        })
        .cloned()
        .collect();
    if usable.is_empty() && !zones.is_empty() && errors.is_empty() {
        errors.push(cx.diag(
            "",
            format!(
                "no capacity for cluster {name} in any zone of {cloud} {region} (tried {})",
                zones.join(", ")
            ),
            Some(if c.cloud == CloudName::Any {
                "add more `candidates`, or try again later".into()
            } else {
                "add zones, use `cloud: any` with candidates, or try again later".into()
            }),
        ));
    }
    (zones, usable)
}

/// The instance type and its hourly price: the escape hatch
/// (`instance_type:`), or the cheapest catalog offer meeting the GPU,
/// interconnect and fabric constraints.
fn instance_type_of(
    cx: &Ctx<'_>,
    gpu: &GpuModel,
    cloud: Cloud,
    region: &str,
    query: &OfferQuery,
    out: &mut Desired,
) -> Result<(String, Option<f64>), Diagnostic> {
    let (c, name, catalog) = (cx.c, cx.name, cx.catalog);
    if let Some(raw) = &c.instance_type {
        out.lockin.push(LockIn {
            yaml_path: format!("{}.instance_type", cx.path),
            reason: format!("raw {cloud} instance type `{raw}`"),
        });
        return match catalog.offering(cloud, region, raw) {
            Some(o) => Ok((
                raw.clone(),
                o.prices
                    .get(&c.pricing)
                    .map(|p| p.hourly_usd(cx.opts.cny_per_usd)),
            )),
            None => Err(cx.diag(
                ".instance_type",
                format!("{cloud} does not offer `{raw}` in {region} (per gpuform's catalog)"),
                Some(suggest(catalog, query)),
            )),
        };
    }
    let matches = catalog.matching(query);
    let Some(m) = matches.first() else {
        return Err(cx.diag(
            ".gpu",
            format!(
                "{cloud} {region} offers no instance with {} × {}{}{}",
                c.gpu.count,
                gpu.name,
                match c.interconnect {
                    InterconnectReq::Nvlink => " over NVLink",
                    InterconnectReq::Pcie => " over PCIe",
                    InterconnectReq::Any => "",
                },
                if c.fabric == Fabric::Rdma {
                    " with RDMA"
                } else {
                    ""
                }
            ),
            Some(suggest(catalog, query)),
        ));
    };
    out.notes.push(format!(
        "cluster.{name}: {} ({} × {}{}) — {}",
        m.instance.name,
        m.instance.gpu_count,
        m.instance.gpu_model,
        m.instance
            .rdma
            .map(|r| format!(", {r:?}").to_lowercase())
            .unwrap_or_default(),
        match m.hourly_usd {
            Some(p) => format!(
                "cheapest of {} matching offer(s) at ${p:.2}/h {}",
                matches.len(),
                c.pricing.as_str()
            ),
            None => format!("no {} price in the catalog", c.pricing.as_str()),
        }
    ));
    Ok((m.instance.name.clone(), m.hourly_usd))
}

/// A `capacity:` list: which node goes where. Reservations pin the zone
/// and must hold the type chosen.
fn fill_capacity(
    cx: &Ctx<'_>,
    instance_type: &str,
    zones: &[String],
    out: &mut Desired,
) -> Result<Option<Filled>, Diags> {
    let (c, name) = (cx.c, cx.name);
    if c.capacity.is_empty() {
        return Ok(None);
    }
    let f = capacity::fill(name, &cx.path, c, &cx.opts.capacity)
        .map_err(|(at, m, h)| vec![cx.loaded.diagnostic(&at, m, Some(h))])?;
    if let Some((zone, itype)) = &f.pinned {
        if itype != instance_type {
            return Err(vec![cx.diag(
                ".capacity",
                format!("the reservations hold {itype}, but cluster {name} resolves to {instance_type}"),
                Some(format!("write `instance_type: {itype}` (it must carry the cluster's GPUs), or list reservations of {instance_type}")),
            )]);
        }
        if !zones.contains(zone) {
            return Err(vec![cx.diag(
                ".capacity",
                format!(
                    "the reservations are in {zone}, which cluster {name} does not use (zones: {})",
                    zones.join(", ")
                ),
                Some(format!("add {zone} to `zones`, or leave `zones` out")),
            )]);
        }
    }
    out.notes.extend(f.notes.iter().cloned());
    Ok(Some(f))
}

/// The zone the cluster's nodes run in: its reservations' zone; else the
/// zone it runs in now while that is usable and sells the type; else the
/// first usable zone where the catalog says the type is sold (when it knows).
fn zone_of(
    cx: &Ctx<'_>,
    cloud: Cloud,
    region: &str,
    instance_type: &str,
    usable: &[String],
    filled: Option<&Filled>,
) -> Result<String, Diagnostic> {
    let name = cx.name;
    let sold_in = cx
        .catalog
        .availability(cloud, region, instance_type)
        .and_then(|a| a.zones.clone());
    let sold_here = |z: &String| sold_in.as_ref().is_none_or(|s| s.contains(z));
    if let Some((z, _)) = filled.and_then(|f| f.pinned.as_ref()) {
        // Failover cannot move a cluster off its reservations' zone: when that
        // zone ran out during this apply, say so instead of trying it again.
        if cx
            .opts
            .exhausted
            .contains(&Exhausted::zone(name, cloud, region, z))
        {
            return Err(cx.diag(
                ".capacity",
                format!("{z}, the zone of cluster {name}'s reservations, has no capacity left for its nodes during this apply"),
                Some("add reservations with room, lower `nodes`, or try again later".into()),
            ));
        }
        return Ok(z.clone());
    }
    let staying = cx
        .opts
        .current
        .get(name)
        .filter(|p| p.cloud == cloud && p.region == region)
        .and_then(|p| usable.iter().find(|z| **z == p.zone && sold_here(z)));
    match (staying, &sold_in) {
        (Some(z), _) => Ok(z.clone()),
        (None, Some(sold)) => match usable.iter().find(|z| sold.contains(z)) {
            Some(z) => Ok(z.clone()),
            None => Err(cx.diag(
                ".zones",
                format!(
                    "{instance_type} is sold only in {} of {cloud} {region}, and none of those is usable here",
                    sold.join(", ")
                ),
                Some("use one of those zones (or leave `zones` out)".into()),
            )),
        },
        (None, None) => Ok(usable[0].clone()),
    }
}

/// Adds the cluster's resources to the desired set.
struct Emit<'a, 'c> {
    cx: &'a Ctx<'c>,
    out: &'a mut Desired,
    target: Target,
    region: &'a str,
}

impl Emit<'_, '_> {
    fn push(
        &mut self,
        local: &str,
        kind: ResourceKind,
        attrs: Attrs,
        deps: &[(&str, Address)],
        hourly_usd: Option<f64>,
    ) {
        self.out.resources.push(DesiredResource {
            address: self.cx.at(local),
            kind,
            target: self.target,
            region: self.region.to_string(),
            attrs,
            deps: deps
                .iter()
                .map(|(r, a)| (r.to_string(), a.clone()))
                .collect(),
            hourly_usd,
            yaml_path: self.cx.path.clone(),
        })
    }
}

/// The addresses nodes depend on.
struct Network {
    subnet: Address,
    firewall: Address,
    placement: Option<Address>,
}

/// The network, the subnet of `zone`, the firewall and, for nodes that
/// talk over NVLink-class or RDMA links, a packed placement group.
fn emit_network(emit: &mut Emit<'_, '_>, cloud: Cloud, zone: &str) -> Network {
    let (c, name) = (emit.cx.c, emit.cx.name);
    let network = emit.cx.at("network");
    emit.push(
        "network",
        ResourceKind::Network,
        attrs([(attr::CIDR, json!(c.cidr))]),
        &[],
        None,
    );
    let subnet_suffix = format!("subnet[{zone}]");
    emit.push(
        &subnet_suffix,
        ResourceKind::Subnet,
        attrs([
            (attr::ZONE, json!(zone)),
            (attr::CIDR, json!(first_subnet(&c.cidr))),
        ]),
        &[("network", network.clone())],
        None,
    );
    let ingress = canonical_ingress(c.ingress.iter().map(|i| {
        let (from, to) = port_range(&i.ports);
        json!({"protocol": i.protocol, "from_port": from, "to_port": to, "cidr": i.cidr})
    }));
    emit.push(
        "firewall",
        ResourceKind::Firewall,
        attrs([(attr::INGRESS, json!(ingress))]),
        &[("network", network)],
        None,
    );
    // Packed placement pays off only when nodes talk over NVLink-class or RDMA links.
    let wants_packing =
        c.nodes > 1 && (c.interconnect == InterconnectReq::Nvlink || c.fabric == Fabric::Rdma);
    // Huawei's server groups only spread nodes apart (anti-affinity); there
    // is nothing to ask for packing, so its scheduler places the nodes.
    if wants_packing && cloud == Cloud::Huawei {
        emit.out.notes.push(format!(
            "cluster.{name}: no placement group on huawei (its server groups are anti-affinity only); nodes are placed by the scheduler"
        ));
    }
    let placement = (wants_packing && cloud != Cloud::Huawei).then(|| emit.cx.at("placement"));
    if placement.is_some() {
        emit.push(
            "placement",
            ResourceKind::Placement,
            attrs([(attr::STRATEGY, json!("cluster"))]),
            &[],
            None,
        );
    }
    Network {
        subnet: emit.cx.at(&subnet_suffix),
        firewall: emit.cx.at("firewall"),
        placement,
    }
}

/// What the cluster's nodes are.
struct NodeType<'a> {
    gpu: &'a GpuModel,
    instance_type: &'a str,
    /// The type's price in the cluster's market.
    hourly_usd: Option<f64>,
    zone: &'a str,
}

/// Each role's bootstrap attributes (`None`: no bootstrap), rendered once
/// and cloned: nodes differ only in their Kubernetes role.
type BootAttrs = Option<(serde_json::Value, serde_json::Value)>;

/// The nodes, each with its market, capacity source, bootstrap and
/// dependencies, and a data volume per node when the spec asks for one.
fn emit_nodes(
    emit: &mut Emit<'_, '_>,
    t: &NodeType<'_>,
    filled: Option<&Filled>,
    network: &Network,
    boot: bootstrap::NodePlan,
) -> Result<(), Diags> {
    let cx = emit.cx;
    let c = cx.c;
    let mut rendered: Vec<(Option<bootstrap::Kube>, BootAttrs)> = Vec::new();
    let mut docs: BTreeMap<String, String> = BTreeMap::new();
    // What every node of the cluster shares, built once (not per node).
    let mut node_attrs = attrs([
        (attr::INSTANCE_TYPE, json!(t.instance_type)),
        (attr::ZONE, json!(t.zone)),
        (attr::IMAGE, json!(c.image)),
        (attr::PRICING, json!(c.pricing.as_str())),
        (attr::ROOT_GB, json!(c.disk.root_gb)),
        (attr::RDMA, json!(c.fabric == Fabric::Rdma)),
        ("gpu", json!(format!("{}:{}", t.gpu.name, c.gpu.count))),
    ]);
    if let Some(m) = &c.mig {
        node_attrs.insert(attr::MIG.into(), json!(m.to_string()));
    }
    if let Some(cap) = c.spot_max_price.filter(|_| filled.is_none()) {
        node_attrs.insert(attr::SPOT_MAX_PRICE.into(), json!(cap));
    }
    if !c.tags.is_empty() {
        node_attrs.insert(attr::TAGS.into(), json!(c.tags));
    }
    let (cloud, region) = (emit.target.cloud, emit.region.to_string());
    let price_of = |p: PricingModel| {
        cx.catalog
            .offering(cloud, &region, t.instance_type)
            .and_then(|o| o.prices.get(&p))
            .map(|q| q.hourly_usd(cx.opts.cny_per_usd))
    };
    let volume_attrs = c.disk.data_gb.map(|size| {
        attrs([
            (attr::ZONE, json!(t.zone)),
            (attr::SIZE_GB, json!(size)),
            (attr::VOLUME_TYPE, json!(c.disk.data_type.as_str())),
        ])
    });
    for i in 0..c.nodes {
        let mut a = node_attrs.clone();
        let mut node_hourly = t.hourly_usd;
        let source = filled.map(|f| &f.nodes[i as usize]);
        if let Some(source) = source {
            a.insert(attr::PRICING.into(), json!(source.pricing.as_str()));
            node_hourly = price_of(source.pricing);
            if let Some(id) = &source.reservation {
                a.insert(
                    gpuform_provider::request::CAPACITY_RESERVATION.into(),
                    json!(id),
                );
            }
            if let Some(block) = &source.block {
                // Paid with the block: nothing by the hour.
                a.insert(CAPACITY_BLOCK.into(), json!(block));
                node_hourly = Some(0.0);
            }
            if let Some(cap) = c
                .spot_max_price
                .filter(|_| source.pricing == PricingModel::Spot)
            {
                a.insert(attr::SPOT_MAX_PRICE.into(), json!(cap));
            }
        }
        let mut deps = vec![
            ("subnet", network.subnet.clone()),
            ("firewall", network.firewall.clone()),
        ];
        if let Some(block) = source.and_then(|s| s.block.clone()) {
            deps.push(("block", block));
        }
        if let Some(p) = &network.placement {
            deps.push(("placement", p.clone()));
        }
        let kube = kube_role(c, i, cx, &mut deps);
        let boot_attrs = match rendered.iter().position(|(k, _)| *k == kube) {
            Some(hit) => &rendered[hit].1,
            None => {
                let made = render_boot(cx, &boot, kube.clone(), i, &mut docs)?;
                rendered.push((kube, made));
                &rendered[rendered.len() - 1].1
            }
        };
        match boot_attrs {
            None => {
                // Nothing to set up: the user's user_data goes as written.
                if let Some(u) = &c.user_data {
                    a.insert(attr::USER_DATA.into(), json!(u));
                }
            }
            Some((sha, steps)) => {
                a.insert(USER_DATA_SHA256.into(), sha.clone());
                a.insert("bootstrap".into(), steps.clone());
                // The user's own part, as before: recorded, so its change
                // reads as a diff in the plan.
                if let Some(u) = &c.user_data {
                    a.insert(OWN_USER_DATA.into(), json!(u));
                }
            }
        }
        let node = format!("node[{i}]");
        if let Some(policy) = &c.spot_policy {
            let market = node_market(policy, i, &cx.at(&node), cx.name, cx.opts);
            if market != "spot" {
                a.insert(attr::PRICING.into(), json!(market));
                node_hourly = price_of(PricingModel::OnDemand);
            }
        }
        emit.push(&node, ResourceKind::Instance, a, &deps, node_hourly);
        if let Some(volume_attrs) = &volume_attrs {
            emit.push(
                &format!("volume[{i}]"),
                ResourceKind::Volume,
                volume_attrs.clone(),
                &[("instance", cx.at(&node))],
                None,
            );
        }
    }
    emit.out.documents.extend(docs);
    Ok(())
}

/// Node `i`'s Kubernetes role; a k3s agent depends on the server node.
fn kube_role(
    c: &Cluster,
    i: u32,
    cx: &Ctx<'_>,
    deps: &mut Vec<(&str, Address)>,
) -> Option<bootstrap::Kube> {
    let k = c.kubernetes.as_ref()?;
    Some(match k.mode {
        KubernetesMode::K3s if i == 0 => bootstrap::Kube::K3sServer {
            version: k.version.clone(),
        },
        KubernetesMode::K3s => {
            deps.push((bootstrap::K3S_SERVER_ROLE, cx.at("node[0]")));
            bootstrap::Kube::K3sAgent {
                version: k.version.clone(),
            }
        }
        KubernetesMode::KubeadmJoin => bootstrap::Kube::Kubeadm {
            endpoint: k.endpoint.clone().unwrap_or_default(),
            ca_cert_hash: k.ca_cert_hash.clone().unwrap_or_default(),
        },
    })
}

/// The boot document of a node in role `kube`, kept once in `docs` by its
/// SHA-256; refused when it would exceed what clouds take once filled in.
fn render_boot(
    cx: &Ctx<'_>,
    boot: &bootstrap::NodePlan,
    kube: Option<bootstrap::Kube>,
    i: u32,
    docs: &mut BTreeMap<String, String>,
) -> Result<BootAttrs, Diags> {
    let mut node_boot = boot.clone();
    node_boot.kube = kube;
    if node_boot.is_empty() {
        return Ok(None);
    }
    let r = node_boot.render();
    let len = bootstrap::max_filled_len(&r.document);
    if len > MAX_USER_DATA_BYTES {
        return Err(vec![cx.diag(
            if cx.c.user_data.is_some() {
                ".user_data"
            } else {
                ""
            },
            format!(
                "the boot document of {} is up to {} bytes once its credentials are filled in; clouds take at most {MAX_USER_DATA_BYTES} (16 KiB once base64-encoded: EC2, Tencent CVM)",
                cx.at(&format!("node[{i}]")),
                len
            ),
            Some("shorten user_data, or fetch a larger script from it (`#include URL`)".into()),
        )]);
    }
    docs.insert(r.sha256.clone(), r.document);
    Ok(Some((json!(r.sha256), json!(r.steps))))
}
