//! Resolve: spec + catalog → the concrete resources a spec asks for, with
//! their dependency edges. Pure: no API calls, so it runs in microseconds and
//! `plan` works offline.

use crate::bootstrap;
use crate::spec::{CloudName, Cluster, Diagnostic, Diagnostics, Fabric, LoadedSpec, MigSpec};
use gpuform_catalog::{Catalog, OfferQuery, PricingModel, DEFAULT_CNY_PER_USD};
use gpuform_provider::{attr, Attrs, Cloud, ResourceKind};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

pub mod capacity;
mod cluster;
pub mod placement;

use crate::address::Address;
pub use crate::address::Target;

#[derive(Debug, Clone)]
pub struct ResolveOptions {
    /// Run every cluster on the sandbox, mirroring its own cloud.
    pub sandbox: bool,
    pub cny_per_usd: f64,
    /// Zones found out of capacity during this apply (capacity failover).
    pub exhausted: BTreeSet<Exhausted>,
    /// Where each cluster runs now (from state), kept while it still fits.
    pub current: BTreeMap<String, Placement>,
    /// Nodes of clusters with a `spot_policy`: the market each runs in now
    /// (from state), kept so that a fallback's on-demand node is not
    /// replaced while the fallback lasts.
    pub node_pricing: BTreeMap<Address, String>,
    /// Clusters whose spot fallback is on now (their reclaims, from state).
    pub spot_fallback: BTreeSet<String>,
    /// Nodes to make on-demand whatever state says: reclaimed nodes of a
    /// cluster whose fallback is on (`engine::reconcile`).
    pub on_demand_nodes: BTreeSet<Address>,
    /// The reservations clusters' `capacity:` lists name, read at plan time.
    pub capacity: capacity::CapacityFacts,
}

/// Where a cluster's nodes run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub cloud: Cloud,
    pub region: String,
    pub zone: String,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            sandbox: false,
            cny_per_usd: DEFAULT_CNY_PER_USD,
            exhausted: BTreeSet::new(),
            current: BTreeMap::new(),
            node_pricing: BTreeMap::new(),
            spot_fallback: BTreeSet::new(),
            on_demand_nodes: BTreeSet::new(),
            capacity: capacity::CapacityFacts::default(),
        }
    }
}

/// A (cluster, cloud, region, zone) that reported no capacity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Exhausted {
    pub cluster: String,
    pub cloud: Cloud,
    pub region: String,
    pub zone: String,
}

impl Exhausted {
    pub fn zone(cluster: &str, cloud: Cloud, region: &str, zone: &str) -> Exhausted {
        Exhausted {
            cluster: cluster.to_string(),
            cloud,
            region: region.to_string(),
            zone: zone.to_string(),
        }
    }
}

/// One resource the spec asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesiredResource {
    /// e.g. `cluster.trainer.node[3]`.
    pub address: Address,
    pub kind: ResourceKind,
    pub target: Target,
    pub region: String,
    pub attrs: Attrs,
    /// Dependencies: role → address.
    pub deps: gpuform_provider::Deps,
    /// USD per hour, when the catalog knows the price.
    pub hourly_usd: Option<f64>,
    /// Where it comes from in the spec, for messages.
    pub yaml_path: String,
}

/// A use of something that ties a cluster to one cloud.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockIn {
    pub yaml_path: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default)]
pub struct Desired {
    pub resources: Vec<DesiredResource>,
    pub lockin: Vec<LockIn>,
    /// Why each cluster got its instance type, and what the catalog lacks.
    pub notes: Vec<String>,
    /// What the user must know even when nothing changes (a lifetime ending soon).
    pub warnings: Vec<String>,
    /// Node bootstrap documents by SHA-256 (an instance's `user_data_sha256`):
    /// one per distinct document, not one per node.
    pub documents: BTreeMap<String, String>,
    /// Which cluster reads which bucket (`clusters.X.reads`), where each is.
    pub reads: Vec<BucketRead>,
}

/// A cluster reading a bucket, with where each ended up (after `cloud: any`
/// chose the cluster's place): the plan flags a read across regions or
/// clouds with its data-transfer price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketRead {
    /// The cluster's name (`trainer`).
    pub cluster: String,
    pub cluster_cloud: Cloud,
    pub cluster_region: String,
    /// The bucket's address (`bucket.datasets`).
    pub bucket: Address,
    pub bucket_cloud: Cloud,
    pub bucket_region: String,
}

impl BucketRead {
    /// Whether the data leaves the bucket's region to reach the nodes.
    pub fn crosses(&self) -> bool {
        self.cluster_cloud != self.bucket_cloud || self.cluster_region != self.bucket_region
    }
}

/// The dependency role under which a node waits for a bucket it reads
/// (`reads:<key>`). Ordering only: the bucket is made before the nodes, but
/// a node is never replaced for it (adding a bucket to `reads`, or the
/// bucket moving, leaves running nodes alone).
pub const READS_ROLE: &str = "reads:";

/// Whether a dependency role only orders operations (see [`READS_ROLE`]).
pub fn ordering_only(role: &str) -> bool {
    role.starts_with(READS_ROLE)
}

impl Desired {
    pub fn get(&self, address: &str) -> Option<&DesiredResource> {
        self.resources
            .binary_search_by(|r| r.address.as_str().cmp(address))
            .ok()
            .map(|i| &self.resources[i])
    }
}

pub fn resolve(
    loaded: &LoadedSpec,
    catalog: &Catalog,
    opts: &ResolveOptions,
) -> Result<Desired, Diagnostics> {
    let spec = &loaded.spec;
    let mut out = Desired::default();
    let mut errors: Vec<Diagnostic> = Vec::new();
    let now = crate::clock::now_secs();
    let expired = expired_clusters(spec, now);
    // Sized once (a node and its data disk, and a few shared resources per
    // cluster): grown by doubling, a 50k-resource plan left ~10 MB of freed
    // buffers behind.
    out.resources.reserve(
        spec.clusters
            .values()
            .map(|c| c.nodes as usize * (1 + usize::from(c.disk.data_gb.is_some())) + 8)
            .sum::<usize>()
            + spec.buckets.len(),
    );
    for (name, at) in &expired {
        out.notes.push(format!(
            "cluster {name}'s lifetime ended at {} (expires_at): it is deleted",
            crate::clock::format_instant(*at)
        ));
    }
    for (name, cluster) in &spec.clusters {
        if expired.iter().any(|(n, _)| n == name) {
            continue;
        }
        if let Some(at) = cluster.expires_at_secs().filter(|at| at - now <= 86_400) {
            out.warnings.push(format!(
                "cluster {name}'s lifetime ends at {} (expires_at), within 24 h: plans from then on delete it",
                crate::clock::format_instant(at)
            ));
        }
        if let Err(d) = cluster::resolve_cluster(loaded, catalog, opts, name, cluster, &mut out) {
            errors.extend(d);
        }
    }
    for (name, bucket) in &spec.buckets {
        let path = format!("buckets.{name}");
        let (target, region) =
            match target_for(loaded, catalog, opts, &path, bucket.cloud, &bucket.region) {
                Ok(t) => t,
                Err(d) => {
                    errors.push(d);
                    continue;
                }
            };
        if !target.sandbox && target.cloud == Cloud::Aws && !bucket.encryption {
            errors.push(loaded.diagnostic(
                &format!("{path}.encryption"),
                "S3 encrypts every object (SSE-S3) since January 2023 and this cannot be turned off, so `encryption: false` cannot be honoured on AWS",
                Some("remove `encryption: false` (or set it to true)".into()),
            ));
            continue;
        }
        let attrs = bucket_attrs(&spec.project, name, bucket);
        out.resources.push(DesiredResource {
            address: Address::of_bucket(name),
            kind: ResourceKind::Bucket,
            target,
            region: region.to_string(),
            attrs,
            deps: Default::default(),
            hourly_usd: None,
            yaml_path: path,
        });
    }
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    out.resources.sort_by(|a, b| a.address.cmp(&b.address));
    link_reads(spec, &mut out);
    Ok(out)
}

/// The clusters whose `expires_at` is at or before `now`, with that instant:
/// nothing of theirs is desired any more.
pub fn expired_clusters(spec: &crate::spec::Spec, now: i64) -> Vec<(String, i64)> {
    spec.clusters
        .iter()
        .filter_map(|(name, c)| Some((name.clone(), c.expires_at_secs()?)))
        .filter(|(_, at)| *at <= now)
        .collect()
}

/// Each cluster's `reads`: its nodes wait for the bucket (an ordering-only
/// dependency), and where each is placed is kept for the plan's transfer
/// check. Validation made sure every key names a bucket.
fn link_reads(spec: &crate::spec::Spec, out: &mut Desired) {
    for (name, cluster) in &spec.clusters {
        if cluster.reads.is_empty() {
            continue;
        }
        let Some(net) = out.get(&Address::in_cluster(name, "network")) else {
            continue;
        };
        let (cluster_cloud, cluster_region) = (net.target.cloud, net.region.clone());
        for key in &cluster.reads {
            let bucket = Address::of_bucket(key);
            let Some(b) = out.get(&bucket) else {
                continue;
            };
            out.reads.push(BucketRead {
                cluster: name.clone(),
                cluster_cloud,
                cluster_region: cluster_region.clone(),
                bucket: bucket.clone(),
                bucket_cloud: b.target.cloud,
                bucket_region: b.region.clone(),
            });
            for r in out.resources.iter_mut().filter(|r| {
                r.kind == ResourceKind::Instance
                    && r.address
                        .local_in(name)
                        .is_some_and(|l| l.starts_with("node["))
            }) {
                r.deps
                    .insert(format!("{READS_ROLE}{key}").into(), bucket.clone());
            }
        }
    }
}

/// A bucket's neutral attributes (see `ResourceKind`): every setting
/// explicit, so that one changed by another client shows as drift, except
/// `storage_class: standard`, which is the absence of the key (records
/// made before it existed stay as they are).
/// The catalog query for a node of cluster `c` (`gpu_model`: its GPU as the
/// catalog names it) paid for under `pricing`: same GPUs, link and fabric.
pub fn node_query(
    c: &Cluster,
    gpu_model: &str,
    pricing: PricingModel,
    cny_per_usd: f64,
) -> OfferQuery {
    OfferQuery {
        gpu_model: Some(gpu_model.to_string()),
        gpu_count: Some(c.gpu.count),
        interconnect: c.interconnect.required(),
        rdma: (c.fabric == Fabric::Rdma).then_some(true),
        pricing,
        cny_per_usd,
        ..OfferQuery::default()
    }
}

pub fn bucket_attrs(project: &str, key: &str, bucket: &crate::spec::Bucket) -> Attrs {
    let mut attrs = Attrs::new();
    let name = bucket
        .name
        .clone()
        .unwrap_or_else(|| format!("{project}-{key}"));
    attrs.insert(attr::NAME.into(), json!(name));
    if bucket.storage_class != crate::spec::StorageClass::Standard {
        attrs.insert(
            attr::STORAGE_CLASS.into(),
            json!(bucket.storage_class.as_str()),
        );
    }
    attrs.insert(attr::VERSIONING.into(), json!(bucket.versioning));
    attrs.insert(attr::ENCRYPTION.into(), json!(bucket.encryption));
    let lifecycle = gpuform_provider::BucketLifecycle {
        archive_after_days: bucket.lifecycle.as_ref().and_then(|l| l.archive_after_days),
        expire_noncurrent_after_days: bucket
            .lifecycle
            .as_ref()
            .and_then(|l| l.expire_noncurrent_after_days),
    };
    attrs.insert(attr::LIFECYCLE.into(), lifecycle.to_value());
    attrs.insert(attr::PUBLIC_ACCESS_BLOCKED.into(), json!(true));
    attrs.insert(attr::FORCE_DESTROY.into(), json!(bucket.force_destroy));
    if let Some(gb) = bucket.size_gb {
        attrs.insert(attr::SIZE_GB.into(), json!(gb));
    }
    if !bucket.tags.is_empty() {
        attrs.insert(attr::TAGS.into(), json!(bucket.tags));
    }
    attrs
}

fn target_for<'c>(
    loaded: &LoadedSpec,
    catalog: &'c Catalog,
    opts: &ResolveOptions,
    path: &str,
    cloud: CloudName,
    region: &str,
) -> Result<(Target, &'c str), Diagnostic> {
    let (cloud, sandbox) = match cloud {
        CloudName::Aws => (Cloud::Aws, opts.sandbox),
        CloudName::Alibaba => (Cloud::Alibaba, opts.sandbox),
        CloudName::Tencent => (Cloud::Tencent, opts.sandbox),
        CloudName::Huawei => (Cloud::Huawei, opts.sandbox),
        // `cloud: sandbox` simulates AWS, whose catalog is the most complete.
        CloudName::Sandbox => (Cloud::Aws, true),
        CloudName::Any => {
            return Err(loaded.diagnostic(
                &format!("{path}.cloud"),
                "`cloud: any` is for clusters; a bucket needs a cloud and region",
                Some("write one of aws, alibaba, tencent, huawei, sandbox".into()),
            ))
        }
    };
    match catalog.region(cloud, region) {
        Some(r) => Ok((Target { cloud, sandbox }, r.name.as_str())),
        None => {
            let known: Vec<&str> = catalog
                .regions(cloud)
                .iter()
                .map(|r| r.name.as_str())
                .collect();
            let close = closest_names(region, &known);
            Err(loaded.diagnostic(
                &format!("{path}.region"),
                format!("region `{region}` is not a {cloud} region gpuform knows"),
                Some(if close.is_empty() {
                    format!("{cloud} regions: {}", known.join(", "))
                } else {
                    format!(
                        "did you mean {}? ({cloud} regions: {})",
                        close.join(" or "),
                        known.join(", ")
                    )
                }),
            ))
        }
    }
}

/// The market node `i` of a spot cluster with a policy runs in: its base is
/// on-demand; a node made on-demand by a fallback stays so while the
/// fallback is on (then the plan replaces it with a spot node, for review);
/// a reclaimed node of a cluster in fallback comes back on-demand.
fn node_market(
    policy: &crate::spec::SpotPolicy,
    i: u32,
    address: &Address,
    cluster: &str,
    opts: &ResolveOptions,
) -> &'static str {
    let fallback = opts.spot_fallback.contains(cluster);
    if i < policy.on_demand_base || opts.on_demand_nodes.contains(address) {
        return "on-demand";
    }
    match opts.node_pricing.get(address).map(String::as_str) {
        Some("on-demand") if fallback => "on-demand",
        _ => "spot",
    }
}

/// A node's Capacity Block (its address): it launches into the block's
/// reservation (the `block` dependency) with the capacity-block market.
pub const CAPACITY_BLOCK: &str = "capacity_block";

/// The attribute that stands for a rendered `user_data` in state: the
/// document itself (which `apply` fills with secrets) is never recorded.
pub const USER_DATA_SHA256: &str = "user_data_sha256";

/// With a bootstrap, the spec's own `user_data` (one part of the document),
/// kept readable for plans and state like `user_data` without one.
pub const OWN_USER_DATA: &str = "own_user_data";

/// The per-GPU MIG layout `mig:` asks for, checked against the GPU's slice
/// budget from the catalog's MIG table.
fn mig_layout(
    loaded: &LoadedSpec,
    path: &str,
    gpu: &gpuform_catalog::GpuModel,
    c: &Cluster,
) -> Result<Option<Vec<String>>, Diagnostic> {
    let Some(mig) = &c.mig else { return Ok(None) };
    let at = format!("{path}.mig");
    let Some(table) = gpuform_catalog::node::mig_table(&gpu.name) else {
        return Err(loaded.diagnostic(
            &at,
            format!("{} does not support MIG", gpu.name),
            Some(
                "remove `mig:`, or pick a MIG GPU (A100, A30, H100, H200, H20, H800, B200)".into(),
            ),
        ));
    };
    let profiles: Vec<String> = table
        .profiles
        .iter()
        .map(|p| {
            format!(
                "{} ({}c/{}m, ≤{})",
                p.profile, p.compute_slices, p.memory_slices, p.max_instances
            )
        })
        .collect();
    let budget = format!(
        "one {} has {} compute and {} memory slices; profiles (compute/memory slices, max per GPU): {}",
        gpu.name,
        table.compute_slices,
        table.memory_slices,
        profiles.join(", ")
    );
    let layout = match mig {
        MigSpec::Single(p) => match table.fill(p) {
            Some(l) => l,
            None => {
                return Err(loaded.diagnostic(
                    &at,
                    format!("MIG profile `{p}` does not exist on {}", gpu.name),
                    Some(budget),
                ))
            }
        },
        MigSpec::Mixed(list) => list.clone(),
    };
    if let Err(e) = table.check_layout(&layout) {
        return Err(loaded.diagnostic(
            &at,
            format!("MIG layout {mig} does not fit one {}: {e}", gpu.name),
            Some(budget),
        ));
    }
    Ok(Some(layout))
}

/// The bootstrap every node of a cluster shares (Kubernetes roles are per node).
fn bootstrap_base(
    loaded: &LoadedSpec,
    path: &str,
    gpu: &gpuform_catalog::GpuModel,
    c: &Cluster,
    cloud: Cloud,
    instance_type: &str,
    mig: Option<Vec<String>>,
) -> Result<(bootstrap::NodePlan, Option<String>), Diagnostic> {
    let mut note = None;
    let amd = gpu.vendor.eq_ignore_ascii_case("AMD");
    let image = c.image.to_ascii_lowercase();
    let prebuilt = if amd {
        image.contains("rocm")
    } else {
        image.contains("cuda")
    };
    let driver = match c.driver.as_deref() {
        Some("none") => None,
        _ if prebuilt => None,
        Some(v) if amd => {
            if v.split('.').count() < 2 {
                return Err(loaded.diagnostic(
                    &format!("{path}.driver"),
                    format!("`{v}` is not a ROCm release; {} is an AMD GPU", gpu.name),
                    Some("write a ROCm release like `driver: \"6.2\"`, or `none`".into()),
                ));
            }
            Some(bootstrap::Driver::Rocm(v.to_string()))
        }
        Some(v) => {
            if v.contains('.') {
                return Err(loaded.diagnostic(
                    &format!("{path}.driver"),
                    format!("`{v}` is not an NVIDIA driver branch"),
                    Some("write the branch, e.g. `driver: 550` (NVIDIA's repositories package `cuda-drivers-550`)".into()),
                ));
            }
            Some(bootstrap::Driver::Nvidia(v.to_string()))
        }
        None if amd => Some(bootstrap::Driver::Rocm(DEFAULT_ROCM.into())),
        None => Some(bootstrap::Driver::Nvidia(DEFAULT_NVIDIA_BRANCH.into())),
    };
    // Opt-in: a node that had no bootstrap must not be replaced because
    // gpuform learned that its type has local disks.
    let nvme = match c.local_nvme.as_deref() {
        None | Some("none") | Some("false") => None,
        Some(mount) => {
            let mount = if mount == "true" { "/data" } else { mount };
            // A portable spec may ask for local disks everywhere; where the
            // type has none (or the catalog does not know), it is a note.
            match gpuform_catalog::node::instance_store(cloud, instance_type) {
                Some(s) => Some((s.devices, mount.to_string())),
                None => {
                    note = Some(format!(
                        "{}: {cloud} {instance_type} has no local NVMe disks gpuform knows of; `local_nvme` is not set up (use `disk.data_gb` for a network disk)",
                        path.replacen("clusters.", "cluster.", 1)
                    ));
                    None
                }
            }
        }
    };
    let plan = bootstrap::NodePlan {
        cluster: path.trim_start_matches("clusters.").to_string(),
        gpu_model: gpu.name.clone(),
        gpu_count: c.gpu.count,
        gpu_memory_mib: (gpu.mem_gib * 1024.0).round() as u32,
        nvidia: gpu.vendor.eq_ignore_ascii_case("NVIDIA"),
        driver,
        mig,
        nvme,
        kube: None,
        token_env: c.kubernetes.as_ref().map(|k| k.token_env.clone()),
        taint: c.kubernetes.as_ref().and_then(|k| k.taint.clone()),
        dcgm_exporter: c.kubernetes.as_ref().is_some_and(|k| k.dcgm_exporter),
        kubeflow_training_operator: c.kubernetes.as_ref().is_some_and(|k| {
            k.addons
                .contains(&crate::spec::KubeAddon::KubeflowTrainingOperator)
        }),
        user_data: c.user_data.clone(),
    };
    // Only a document gpuform makes needs to know what user_data is.
    if !plan.is_empty() || c.kubernetes.is_some() {
        if let Some(u) = &c.user_data {
            if let Err(why) = bootstrap::check_user_data(u) {
                return Err(loaded.diagnostic(
                    &format!("{path}.user_data"),
                    why,
                    Some("start user_data with `#!/bin/bash` (a script) or `#cloud-config`".into()),
                ));
            }
        }
    }
    Ok((plan, note))
}

/// The largest user data every cloud takes: 16 KiB base64-encoded.
pub const MAX_USER_DATA_BYTES: usize = 12 * 1024;

/// Driver versions installed when the spec names none (and the image has none).
pub const DEFAULT_NVIDIA_BRANCH: &str = "550";
pub const DEFAULT_ROCM: &str = "6.2";

fn attrs<const N: usize>(pairs: [(&str, serde_json::Value); N]) -> Attrs {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn suggest(catalog: &Catalog, q: &OfferQuery) -> String {
    let close = catalog.closest(q, 3);
    if close.is_empty() {
        return "run `gpuform offers` to see what each cloud offers".into();
    }
    let list: Vec<String> = close
        .iter()
        .map(|m| {
            format!(
                "{} {} {} ({} × {}){}",
                m.offering.cloud,
                m.offering.region,
                m.instance.name,
                m.instance.gpu_count,
                m.instance.gpu_model,
                m.difference
                    .as_ref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    format!("closest offers: {}", list.join("; "))
}

fn closest_names<'a>(given: &str, known: &[&'a str]) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = known
        .iter()
        .map(|k| (strsim::jaro_winkler(given, k), *k))
        .filter(|(s, _)| *s > 0.85)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(2).map(|(_, k)| k).collect()
}

/// The first subnet of a network: four more prefix bits (a /16 gives a /20),
/// leaving room for one subnet per zone.
fn first_subnet(cidr: &str) -> String {
    match cidr.split_once('/') {
        Some((addr, bits)) => match bits.parse::<u8>() {
            Ok(b) => format!("{addr}/{}", (b + 4).min(28)),
            Err(_) => cidr.to_string(),
        },
        None => cidr.to_string(),
    }
}

/// `22` → (22, 22); `8000-8100` → (8000, 8100). The spec layer has validated the syntax.
/// The rules in one order, the one providers report them in
/// ([`gpuform_provider::ObservedIngress`] keeps a set), without repeats:
/// a firewall's rules are a set, so a spec listing them in another order
/// must not plan an update on every run.
fn canonical_ingress(rules: impl Iterator<Item = serde_json::Value>) -> Vec<serde_json::Value> {
    let mut typed = std::collections::BTreeSet::new();
    let mut untyped = Vec::new();
    for r in rules {
        // Validation has checked every rule; one the provider types cannot
        // read is kept as written, for the provider to refuse with its message.
        match gpuform_provider::IngressRule::parse(&r) {
            Ok(rule) => {
                typed.insert(rule);
            }
            Err(_) => untyped.push(r),
        }
    }
    typed.iter().map(|r| r.to_json()).chain(untyped).collect()
}

fn port_range(ports: &str) -> (u32, u32) {
    match ports.split_once('-') {
        Some((a, b)) => (a.trim().parse().unwrap_or(0), b.trim().parse().unwrap_or(0)),
        None => {
            let p = ports.trim().parse().unwrap_or(0);
            (p, p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingress_is_one_set_whatever_order_the_spec_lists_it_in() {
        let ssh = json!({"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"});
        let web =
            json!({"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "10.0.0.0/8"});
        let ping = json!({"protocol": "icmp", "from_port": 0, "to_port": 0, "cidr": "10.0.0.0/8"});
        let a = canonical_ingress([web.clone(), ping.clone(), ssh.clone()].into_iter());
        let b =
            canonical_ingress([ssh.clone(), web.clone(), ping.clone(), ssh.clone()].into_iter());
        assert_eq!(a, b);
        assert_eq!(
            a,
            vec![ssh, web, ping],
            "the order providers report rules in"
        );
        // What a provider cannot type is kept, for it to refuse with its own message.
        let odd = json!({"protocol": "gre", "cidr": "1.2.3.4/32"});
        assert_eq!(canonical_ingress([odd.clone()].into_iter()), vec![odd]);
    }
}
