//! Helpers shared by the sandbox's integration tests.
#![allow(dead_code)]

use gpuform_catalog::Catalog;
use gpuform_provider::{
    Attrs, Cloud, CreateRequest, ObservedResource, OwnershipTags, Provider, ResourceKind, Scope,
};
use gpuform_sandbox::{Faults, SandboxCloud, SandboxResource, INVENTORY_FILE};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// A fresh, empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "gpuform-sandbox-test-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The sandbox in `dir`, without faults.
pub fn open(dir: &Path) -> Arc<SandboxCloud> {
    SandboxCloud::open(dir, Faults::default()).expect("open sandbox")
}

/// The sandbox in `dir` with the faults of `spec`.
pub fn open_with(dir: &Path, spec: &str) -> Arc<SandboxCloud> {
    SandboxCloud::open(dir, Faults::parse(spec).expect("faults")).expect("open sandbox")
}

/// A fresh sandbox without faults, and its AWS provider.
pub fn fresh_aws(name: &str) -> (Arc<SandboxCloud>, Arc<dyn Provider>) {
    let sb = open(&temp_dir(name));
    let p = sb.provider(Cloud::Aws);
    (sb, p)
}

/// Asserts that an error's message names every one of `words`.
pub fn says(e: &gpuform_provider::ProviderError, words: &[&str]) {
    for w in words {
        assert!(e.message.contains(w), "`{w}` not in: {e}");
    }
}

/// The inventory log of the sandbox in `dir`.
pub fn log_path(dir: &Path) -> PathBuf {
    dir.join(INVENTORY_FILE)
}

/// A region, one of its zones and a GPU instance type offered there, from
/// the built-in catalog (so the tests follow the catalog's data).
pub struct Offer {
    pub region: String,
    pub zone: String,
    pub other_zone: String,
    pub instance_type: String,
    pub gpus: u32,
}

pub fn offer(cloud: Cloud) -> Offer {
    let cat = Catalog::builtin();
    for o in cat.offerings().iter().filter(|o| o.cloud == cloud) {
        let Some(region) = cat.region(cloud, &o.region) else {
            continue;
        };
        let Some(ty) = cat.instance_type(cloud, &o.instance_type) else {
            continue;
        };
        if region.zones.len() < 2 || ty.gpu_count == 0 {
            continue;
        }
        // A zone the catalog does not rule out for this type.
        let allowed = |z: &String| match cat.availability(cloud, &o.region, &o.instance_type) {
            Some(av) if !av.assumed => match &av.zones {
                Some(zs) => zs.contains(z),
                None => true,
            },
            _ => true,
        };
        let zones: Vec<&String> = region.zones.iter().filter(|z| allowed(z)).collect();
        if zones.len() < 2 {
            continue;
        }
        return Offer {
            region: o.region.clone(),
            zone: zones[0].clone(),
            other_zone: zones[1].clone(),
            instance_type: o.instance_type.clone(),
            gpus: ty.gpu_count,
        };
    }
    panic!("the built-in catalog has no usable {cloud} offering")
}

pub fn scope(region: &str) -> Scope {
    Scope {
        region: region.to_string(),
    }
}

pub fn ownership(project: &str, address: &str) -> OwnershipTags {
    OwnershipTags {
        project: project.to_string(),
        address: address.into(),
        token: format!("tok-{project}-{address}"),
        lineage: "lineage-1".to_string(),
        workspace: None,
    }
}

pub fn request(
    kind: ResourceKind,
    region: &str,
    attrs_json: serde_json::Value,
    refs: &[(&str, &str)],
    own: OwnershipTags,
) -> CreateRequest {
    CreateRequest {
        kind,
        scope: scope(region),
        attrs: attrs(attrs_json),
        refs: refs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ownership: own,
    }
}

/// An attribute map from a JSON object (changes of an update).
pub fn attrs(v: serde_json::Value) -> Attrs {
    match v {
        serde_json::Value::Object(m) => m.into_iter().collect(),
        _ => Attrs::new(),
    }
}

/// A network of `10.0.0.0/16` at `address`, owned by `project`.
pub fn network_req(region: &str, project: &str, address: &str) -> CreateRequest {
    request(
        ResourceKind::Network,
        region,
        json!({"cidr": "10.0.0.0/16"}),
        &[],
        ownership(project, address),
    )
}

/// A subnet of `network` in `zone`.
pub fn subnet_req(
    region: &str,
    (zone, cidr): (&str, &str),
    network: &str,
    own: OwnershipTags,
) -> CreateRequest {
    request(
        ResourceKind::Subnet,
        region,
        json!({"zone": zone, "cidr": cidr}),
        &[("network", network)],
        own,
    )
}

/// Creates what `req` asks for, which must succeed.
pub async fn create(p: &dyn Provider, req: &CreateRequest) -> ObservedResource {
    p.create(req)
        .await
        .unwrap_or_else(|e| panic!("create {} {}: {e}", req.kind, req.ownership.address))
}

/// Creates what `req` asks for and returns its id.
pub async fn create_id(p: &dyn Provider, req: &CreateRequest) -> String {
    create(p, req).await.id
}

/// The sandbox's record of `id`, which must be listed.
pub fn listed(sb: &SandboxCloud, id: &str) -> SandboxResource {
    let all = sb.list_all();
    all.into_iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("{id} is not listed"))
}

/// Creates `n` networks of `project` at `{prefix}{i}` and returns their ids.
pub async fn networks(
    p: &dyn Provider,
    region: &str,
    project: &str,
    prefix: &str,
    n: usize,
) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        ids.push(create_id(p, &network_req(region, project, &format!("{prefix}{i}"))).await);
    }
    ids
}

/// Reads one resource (empty when it is gone).
pub async fn read_one(
    p: &dyn Provider,
    region: &str,
    kind: ResourceKind,
    id: &str,
) -> Vec<ObservedResource> {
    p.read(&scope(region), kind, &[id.to_string()])
        .await
        .expect("read")
}

/// The ids of a network, subnet, firewall and instance made in `o`.
pub struct Stack {
    pub network: String,
    pub subnet: String,
    pub firewall: String,
    pub instance: String,
}

pub async fn stack(p: &dyn Provider, o: &Offer, project: &str, prefix: &str) -> Stack {
    let r = &o.region;
    let own = |what: &str| ownership(project, &format!("{prefix}.{what}"));
    let network = network_req(r, project, &format!("{prefix}.network"));
    let network = create_id(p, &network).await;
    let subnet = subnet_req(r, (&o.zone, "10.0.1.0/24"), &network, own("subnet"));
    let subnet = create_id(p, &subnet).await;
    let firewall = request(
        ResourceKind::Firewall,
        r,
        json!({"ingress": [{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}]}),
        &[("network", &network)],
        own("firewall"),
    );
    let firewall = create_id(p, &firewall).await;
    let node = format!("{prefix}.node[0]");
    let instance = create_id(p, &instance_req(o, &subnet, &firewall, project, &node)).await;
    Stack {
        network,
        subnet,
        firewall,
        instance,
    }
}

/// A fresh sandbox (in `dir`) with an AWS stack of `project` at `prefix`.
pub struct World {
    pub dir: PathBuf,
    pub sb: Arc<SandboxCloud>,
    pub p: Arc<dyn Provider>,
    pub o: Offer,
    pub s: Stack,
}

pub async fn world(name: &str, project: &str, prefix: &str) -> World {
    let dir = temp_dir(name);
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let s = stack(&*p, &o, project, prefix).await;
    World { dir, sb, p, o, s }
}

pub fn instance_req(
    o: &Offer,
    subnet: &str,
    firewall: &str,
    project: &str,
    address: &str,
) -> CreateRequest {
    request(
        ResourceKind::Instance,
        &o.region,
        json!({
            "instance_type": o.instance_type,
            "zone": o.zone,
            "image": "ubuntu-22.04-cuda",
            "pricing": "on-demand",
            "root_gb": 500,
            "tags": {"team": "research"},
        }),
        &[("subnet", subnet), ("firewall", firewall)],
        ownership(project, address),
    )
}
