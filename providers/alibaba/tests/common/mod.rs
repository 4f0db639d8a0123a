//! What every test of this crate builds on: a provider pointed at the local
//! stand-in (`gpuform_standins::alibaba`), typed create requests and a
//! network with a vSwitch and a security group.
#![allow(dead_code)]

use gpuform_alibaba::{AlibabaProvider, Endpoint};
use gpuform_standins::alibaba::{AlibabaMock, ACCESS_KEY_ID, ACCESS_KEY_SECRET};
use gpuform_provider::{Attrs, CreateRequest, OwnershipTags, Provider, ResourceKind, Scope};
use gpuform_signing::Credentials;
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
        Some(Endpoint::parse(endpoint).unwrap()),
    )
    .unwrap()
    .with_polling(Duration::from_millis(20), Duration::from_secs(10))
}

pub fn provider(mock: &AlibabaMock) -> AlibabaProvider {
    provider_at(&mock.endpoint(), ACCESS_KEY_SECRET)
}

pub fn scope() -> Scope {
    Scope {
        region: REGION.into(),
    }
}

/// Ownership of `address` in project `llm`, with a token derived from it.
pub fn own(address: &str) -> OwnershipTags {
    OwnershipTags {
        project: "llm".into(),
        address: address.into(),
        token: format!("gf-{}", address.replace(['.', '[', ']'], "-")),
        lineage: "lineage-1".into(),
    }
}

pub fn attrs(v: Value) -> Attrs {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

pub fn req(kind: ResourceKind, address: &str, a: Value, refs: &[(&str, &str)]) -> CreateRequest {
    CreateRequest {
        kind,
        scope: scope(),
        attrs: attrs(a),
        refs: refs
            .iter()
            .map(|(r, id)| (r.to_string(), id.to_string()))
            .collect(),
        ownership: own(address),
    }
}

pub struct Net {
    pub vpc: String,
    pub vsw: String,
    pub sg: String,
}

/// `c.network` (10.0.0.0/16), `c.subnet[i]` in [`ZONE`] and `c.firewall`
/// with the rules `ingress`.
pub async fn network(p: &AlibabaProvider, ingress: Value) -> Net {
    let vpc = p
        .create(&req(
            ResourceKind::Network,
            "c.network",
            json!({"cidr": "10.0.0.0/16"}),
            &[],
        ))
        .await
        .unwrap();
    let vsw = p
        .create(&req(
            ResourceKind::Subnet,
            "c.subnet[i]",
            json!({"zone": ZONE, "cidr": "10.0.0.0/20"}),
            &[("network", &vpc.id)],
        ))
        .await
        .unwrap();
    let sg = p
        .create(&req(
            ResourceKind::Firewall,
            "c.firewall",
            json!({ "ingress": ingress }),
            &[("network", &vpc.id)],
        ))
        .await
        .expect("the security group is created without a self-referencing rule");
    Net {
        vpc: vpc.id,
        vsw: vsw.id,
        sg: sg.id,
    }
}

/// SSH from anywhere, as a neutral `ingress`.
pub fn ssh() -> Value {
    json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}])
}
