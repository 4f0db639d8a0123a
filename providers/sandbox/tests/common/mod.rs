//! Helpers shared by the sandbox's integration tests.
#![allow(dead_code)]

use gpuform_catalog::Catalog;
use gpuform_provider::{Attrs, Cloud, CreateRequest, OwnershipTags, Provider, ResourceKind, Scope};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

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
        address: address.to_string(),
        token: format!("tok-{project}-{address}"),
        lineage: "lineage-1".to_string(),
    }
}

pub fn request(
    kind: ResourceKind,
    region: &str,
    attrs: serde_json::Value,
    refs: &[(&str, &str)],
    own: OwnershipTags,
) -> CreateRequest {
    let attrs: Attrs = match attrs {
        serde_json::Value::Object(m) => m.into_iter().collect(),
        _ => Attrs::new(),
    };
    CreateRequest {
        kind,
        scope: scope(region),
        attrs,
        refs: refs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ownership: own,
    }
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
    let network = p
        .create(&request(
            ResourceKind::Network,
            r,
            json!({"cidr": "10.0.0.0/16"}),
            &[],
            ownership(project, &format!("{prefix}.network")),
        ))
        .await
        .expect("network")
        .id;
    let subnet = p
        .create(&request(
            ResourceKind::Subnet,
            r,
            json!({"cidr": "10.0.1.0/24", "zone": o.zone}),
            &[("network", &network)],
            ownership(project, &format!("{prefix}.subnet")),
        ))
        .await
        .expect("subnet")
        .id;
    let firewall = p
        .create(&request(
            ResourceKind::Firewall,
            r,
            json!({"ingress": [{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}]}),
            &[("network", &network)],
            ownership(project, &format!("{prefix}.firewall")),
        ))
        .await
        .expect("firewall")
        .id;
    let instance = p
        .create(&instance_req(
            o,
            &subnet,
            &firewall,
            project,
            &format!("{prefix}.node[0]"),
        ))
        .await
        .expect("instance")
        .id;
    Stack {
        network,
        subnet,
        firewall,
        instance,
    }
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
