//! Fixtures shared by the Tencent provider's tests: a provider against the
//! local stand-in (`gpuform_standins::tencent::TencentMock`), requests as
//! the engine sends them, and a network to put nodes in.

#![allow(dead_code)] // each test file uses a part

use gpuform_provider::{Attrs, CreateRequest, OwnershipTags, Provider, ResourceKind, Scope};
use gpuform_signing::Credentials;
use gpuform_standins::tencent::{TencentMock, SECRET_ID, SECRET_KEY};
use gpuform_standins::MockCloud;
use gpuform_tencent::TencentProvider;
use serde_json::{json, Value};

pub const REGION: &str = "ap-guangzhou";
pub const ZONE: &str = "ap-guangzhou-3";
pub const TYPE: &str = "GN7.2XLARGE32";
pub const PROJECT: &str = "llm";

pub fn provider(mock: &TencentMock) -> TencentProvider {
    provider_with(&mock.endpoint(), SECRET_ID, SECRET_KEY)
}

/// A provider with these credentials, calling `endpoint`.
pub fn provider_with(endpoint: &str, id: &str, key: &str) -> TencentProvider {
    TencentProvider::new(Credentials::new(id, key), None, Some(url(endpoint))).expect("provider")
}

pub fn url(s: &str) -> reqwest::Url {
    reqwest::Url::parse(s).expect("url")
}

pub fn scope() -> Scope {
    Scope {
        region: REGION.into(),
    }
}

pub fn attrs(pairs: &[(&str, Value)]) -> Attrs {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Attributes from a JSON object.
pub fn json_attrs(v: Value) -> Attrs {
    v.as_object()
        .expect("an object")
        .clone()
        .into_iter()
        .collect()
}

/// A create of `kind` at `address` in project [`PROJECT`], with a token
/// derived from the address.
pub fn request(
    kind: ResourceKind,
    address: &str,
    a: Attrs,
    refs: &[(&str, &str)],
) -> CreateRequest {
    CreateRequest {
        kind,
        scope: scope(),
        attrs: a,
        refs: refs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ownership: OwnershipTags {
            project: PROJECT.into(),
            address: address.into(),
            token: format!("tok-{}", address.replace(['[', ']', '.'], "-")),
            lineage: "lineage-1".into(),
        },
    }
}

pub struct Net {
    pub vpc: String,
    pub subnet: String,
    pub sg: String,
}

/// A VPC, a subnet in [`ZONE`] and a security group letting ssh in.
pub async fn network(p: &TencentProvider) -> Net {
    let vpc = p
        .create(&request(
            ResourceKind::Network,
            "cluster.t.network",
            attrs(&[("cidr", json!("10.0.0.0/16"))]),
            &[],
        ))
        .await
        .expect("vpc");
    let subnet = p
        .create(&request(
            ResourceKind::Subnet,
            &format!("cluster.t.subnet[{ZONE}]"),
            attrs(&[("zone", json!(ZONE)), ("cidr", json!("10.0.0.0/20"))]),
            &[("network", &vpc.id)],
        ))
        .await
        .expect("subnet");
    let sg = p
        .create(&request(
            ResourceKind::Firewall,
            "cluster.t.firewall",
            attrs(&[(
                "ingress",
                json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}]),
            )]),
            &[("network", &vpc.id)],
        ))
        .await
        .expect("firewall");
    Net {
        vpc: vpc.id,
        subnet: subnet.id,
        sg: sg.id,
    }
}

/// An instance at `address` in the network's subnet and security group,
/// and in the placement group when there is one.
pub fn node_request(net: &Net, address: &str, a: Attrs, placement: Option<&str>) -> CreateRequest {
    let mut refs = vec![
        ("subnet", net.subnet.as_str()),
        ("firewall", net.sg.as_str()),
    ];
    if let Some(p) = placement {
        refs.push(("placement", p));
    }
    request(ResourceKind::Instance, address, a, &refs)
}

/// A fresh stand-in, a provider against it and a [`network`] in it.
pub async fn started() -> (TencentMock, TencentProvider, Net) {
    let mock = TencentMock::start();
    let p = provider(&mock);
    let net = network(&p).await;
    (mock, p, net)
}

/// The ids of the stand-in's resources of one kind.
pub fn ids_of(mock: &TencentMock, kind: ResourceKind) -> Vec<String> {
    mock.resources()
        .into_iter()
        .filter(|r| r.kind == kind)
        .map(|r| r.id)
        .collect()
}
