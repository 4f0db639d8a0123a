//! What every test of this crate builds on: a provider pointed at the local
//! stand-in (`gpuform_standins::alibaba`), typed create requests and a
//! network with a vSwitch and a security group.
#![allow(dead_code)]

use gpuform_alibaba::{AlibabaProvider, Endpoint};
use gpuform_provider::{
    Attrs, CreateRequest, ObservedResource, OwnershipTags, ResourceKind, Scope,
};
use gpuform_signing::Credentials;
use gpuform_standins::alibaba::{AlibabaMock, Fault, ACCESS_KEY_ID, ACCESS_KEY_SECRET};
use gpuform_standins::harness::{self, create_net, token_of, Owner};
use serde_json::{json, Value};
use std::time::Duration;

pub const REGION: &str = "cn-hangzhou";
pub const ZONE: &str = "cn-hangzhou-i";
pub const GPU: &str = "ecs.gn7i-c8g1.2xlarge";

/// A provider signing with `secret` and calling `endpoint` (the stand-in,
/// or a tap in front of it), polling fast.
pub fn provider_at(endpoint: &str, secret: &str) -> AlibabaProvider {
    AlibabaProvider::new(
        Credentials::new(ACCESS_KEY_ID, secret),
        None,
        Some(Endpoint::parse(endpoint, "test").unwrap()),
    )
    .unwrap()
    .with_polling(Duration::from_millis(20), Duration::from_secs(10))
}

pub fn provider(mock: &AlibabaMock) -> AlibabaProvider {
    provider_at(&mock.endpoint(), ACCESS_KEY_SECRET)
}

/// The project `llm` in [`REGION`].
pub const OWNER: Owner = Owner {
    region: REGION,
    project: "llm",
    lineage: "lineage-1",
};

pub fn scope() -> Scope {
    OWNER.scope()
}

/// Ownership of `address` in project `llm`, with a token derived from it.
pub fn own(address: &str) -> OwnershipTags {
    OWNER.ownership(address, token_of(address))
}

pub fn attrs(v: Value) -> Attrs {
    harness::attrs_of(v)
}

pub fn req(kind: ResourceKind, address: &str, a: Value, refs: &[(&str, &str)]) -> CreateRequest {
    OWNER.request(kind, address, token_of(address), a, refs)
}

/// `c.placement` with the attributes `a`.
pub fn placement(a: Value) -> CreateRequest {
    OWNER.standalone(ResourceKind::Placement, "c.placement", a)
}

/// The VPC `c.network` with `cidr`.
pub fn vpc(cidr: &str) -> CreateRequest {
    OWNER.standalone(ResourceKind::Network, "c.network", json!({ "cidr": cidr }))
}

pub struct Net {
    pub vpc: String,
    pub vsw: String,
    pub sg: String,
}

/// `c.network` (10.0.0.0/16), `c.subnet[i]` in [`ZONE`] and `c.firewall`
/// with the rules `ingress`.
pub async fn network(p: &AlibabaProvider, ingress: Value) -> Net {
    let net = create_net(p, ZONE, "10.0.0.0/20", ingress, |kind, a, refs| {
        let address = match kind {
            ResourceKind::Network => "c.network",
            ResourceKind::Subnet => "c.subnet[i]",
            _ => "c.firewall",
        };
        req(kind, address, a, refs)
    })
    .await;
    Net {
        vpc: net.network.id,
        vsw: net.subnet.id,
        sg: net.firewall.id,
    }
}

/// The stand-in (its instances leave Pending at once when `instant`), a
/// provider at it and a network whose firewall lets `ingress` in.
pub async fn start(ingress: Value, instant: bool) -> (AlibabaMock, AlibabaProvider, Net) {
    let mock = AlibabaMock::start();
    if instant {
        mock.set_pending_time(Duration::ZERO);
    }
    let p = provider(&mock);
    let net = network(&p, ingress).await;
    (mock, p, net)
}

pub fn instance_attrs(i: usize) -> Value {
    json!({
        "instance_type": GPU, "zone": ZONE, "image": "ubuntu-22.04-cuda", "pricing": "on-demand",
        "root_gb": 200, "rdma": false, "gpu": "A10:1", "user_data": format!("#!/bin/sh\necho node {i}\n"),
        "tags": {"team": "ml"}
    })
}

/// SSH from anywhere, ICMP from the private range.
pub fn ingress() -> Value {
    json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"},
           {"protocol": "icmp", "from_port": 0, "to_port": 0, "cidr": "10.0.0.0/8"}])
}

pub fn node(net: &Net, i: usize, placement: Option<&str>) -> CreateRequest {
    let mut refs = vec![("subnet", net.vsw.as_str()), ("firewall", net.sg.as_str())];
    if let Some(p) = placement {
        refs.push(("placement", p));
    }
    req(
        ResourceKind::Instance,
        &format!("c.node[{i}]"),
        instance_attrs(i),
        &refs,
    )
}

/// Creates `req` through `p`, panicking with its address when that fails.
pub async fn create(p: &AlibabaProvider, req: &CreateRequest) -> ObservedResource {
    gpuform_standins::harness::create(p, req).await
}

/// [`GPU`] sold out in `zone` (RunInstances answers `NoStock`); injected
/// again with an empty zone, in stock everywhere.
pub fn no_stock(zone: &str) -> Fault {
    Fault::NoStock {
        zone: zone.into(),
        instance_type: GPU.into(),
    }
}

/// Launches of [`GPU`] in `zone` accepted, then failed; with an empty
/// zone, launches succeed again.
pub fn launch_fails(zone: &str) -> Fault {
    Fault::LaunchFails {
        zone: zone.into(),
        instance_type: GPU.into(),
    }
}
