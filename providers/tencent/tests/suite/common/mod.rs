//! Fixtures shared by the Tencent provider's tests: a provider against the
//! local stand-in (`gpuform_standins::tencent::TencentMock`), typed create
//! requests built on the shared harness (`gpuform_standins::harness`), as
//! the Alibaba and Huawei tests build theirs, and a network to put nodes in.

#![allow(dead_code)] // each test file uses a part

use gpuform_provider::{Attrs, CreateRequest, ObservedResource, ResourceKind, Scope};
use gpuform_signing::Credentials;
pub use gpuform_standins::harness::Net;
use gpuform_standins::harness::{self, create_net, ssh, token_of, Owner};
use gpuform_standins::tencent::{TencentMock, SECRET_ID, SECRET_KEY};
use gpuform_standins::MockCloud;
use gpuform_tencent::TencentProvider;
use serde_json::Value;

pub const REGION: &str = "ap-guangzhou";
pub const ZONE: &str = "ap-guangzhou-3";
pub const TYPE: &str = "GN7.2XLARGE32";
pub const PROJECT: &str = "llm";

/// The project [`PROJECT`] in [`REGION`].
pub const OWNER: Owner = Owner {
    region: REGION,
    project: PROJECT,
    lineage: "lineage-1",
};

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
    OWNER.scope()
}

/// Attributes from a JSON object.
pub fn attrs(v: Value) -> Attrs {
    harness::attrs_of(v)
}

/// A create of `kind` at `address` in project [`PROJECT`], with a token
/// derived from the address; `a` is a JSON object.
pub fn request(
    kind: ResourceKind,
    address: &str,
    a: Value,
    refs: &[(&str, &str)],
) -> CreateRequest {
    OWNER.request(kind, address, token_of(address), a, refs)
}

/// A placement group at `address` with the attributes `a`.
pub fn placement(address: &str, a: Value) -> CreateRequest {
    OWNER.standalone(ResourceKind::Placement, address, a)
}

/// An SSD data disk of `size_gb` in [`ZONE`], attached to `instance`.
pub fn volume(address: &str, size_gb: u64, instance: &str) -> CreateRequest {
    OWNER.volume(address, ZONE, size_gb, instance)
}

/// `cluster.t.network` (10.0.0.0/16), its subnet in [`ZONE`]
/// (10.0.0.0/20) and a security group letting ssh in.
pub async fn network(p: &TencentProvider) -> Net {
    create_net(p, ZONE, "10.0.0.0/20", ssh(), |kind, a, refs| {
        let address = match kind {
            ResourceKind::Network => "cluster.t.network".to_string(),
            ResourceKind::Subnet => format!("cluster.t.subnet[{ZONE}]"),
            _ => "cluster.t.firewall".to_string(),
        };
        request(kind, &address, a, refs)
    })
    .await
}

/// An instance at `address` in the network's subnet and security group,
/// and in the placement group when there is one.
pub fn node_request(net: &Net, address: &str, a: Value, placement: Option<&str>) -> CreateRequest {
    let mut refs = vec![
        ("subnet", net.subnet.id.as_str()),
        ("firewall", net.firewall.id.as_str()),
    ];
    refs.extend(placement.map(|p| ("placement", p)));
    request(ResourceKind::Instance, address, a, &refs)
}

/// Reads `ids` of `kind` in [`REGION`].
pub async fn read(
    p: &TencentProvider,
    kind: ResourceKind,
    ids: &[String],
) -> Vec<ObservedResource> {
    OWNER.read(p, kind, ids).await
}

/// Updates `id` of `kind` in [`REGION`] with `changes` (a JSON object).
pub async fn update(
    p: &TencentProvider,
    kind: ResourceKind,
    id: &str,
    changes: Value,
) -> gpuform_provider::Result<ObservedResource> {
    OWNER.update(p, kind, id, changes).await
}

/// Deletes `id` of `kind` in [`REGION`], which must succeed.
pub async fn delete(p: &TencentProvider, kind: ResourceKind, id: &str) {
    OWNER.delete(p, kind, id).await
}

/// What [`PROJECT`] owns in [`REGION`].
pub async fn all_owned(p: &TencentProvider) -> Vec<ObservedResource> {
    OWNER.owned(p).await
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

/// Creates `req` through `p`, panicking with its address when that fails.
pub async fn create(p: &TencentProvider, req: &CreateRequest) -> ObservedResource {
    gpuform_standins::harness::create(p, req).await
}
