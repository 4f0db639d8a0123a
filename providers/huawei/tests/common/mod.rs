//! Fixtures shared by the tests against the Huawei stand-in
//! (`gpuform_standins::huawei::HuaweiMock`).
#![allow(dead_code)] // each test file uses its own subset

use gpuform_huawei::{HuaweiProvider, JobPolling};
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::MockCloud;
use gpuform_provider::{
    CreateRequest, ObservedResource, OwnershipTags, Provider, ResourceKind, Scope,
};
use serde_json::{json, Value};
use std::time::Duration;

pub const REGION: &str = "cn-north-4";
pub const ZONE: &str = "cn-north-4a";
pub const LINEAGE: &str = "2b1c7f0e-0000-4000-8000-000000000001";

/// Fast job polling: the stand-in's jobs finish within milliseconds.
pub fn fast_polling() -> JobPolling {
    JobPolling {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(50),
        deadline: Duration::from_secs(20),
    }
}

pub fn provider_from(env: impl IntoIterator<Item = (String, String)>) -> HuaweiProvider {
    HuaweiProvider::from_vars(env)
        .expect("provider from mock env")
        .with_job_polling(fast_polling())
}

pub fn provider(mock: &HuaweiMock) -> HuaweiProvider {
    provider_from(mock.env())
}

pub fn scope() -> Scope {
    Scope {
        region: REGION.into(),
    }
}

/// A create request of `project`, owned by `address` with `token`.
pub fn request(
    project: &str,
    kind: ResourceKind,
    address: &str,
    token: String,
    attrs: Value,
    refs: &[(&str, &str)],
) -> CreateRequest {
    CreateRequest {
        kind,
        scope: scope(),
        attrs: attrs
            .as_object()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        refs: refs
            .iter()
            .map(|(role, id)| (role.to_string(), id.to_string()))
            .collect(),
        ownership: OwnershipTags {
            project: project.into(),
            address: address.into(),
            token,
            lineage: LINEAGE.into(),
        },
    }
}

/// A VPC (10.0.0.0/16), its subnet in [`ZONE`] and a firewall.
pub struct Net {
    pub vpc: ObservedResource,
    pub subnet: ObservedResource,
    pub fw: ObservedResource,
}

/// Creates a [`Net`] for cluster `cluster` of `project`; `token` turns a
/// short name into the ownership token.
pub async fn network(
    p: &HuaweiProvider,
    project: &str,
    cluster: &str,
    token: fn(&str) -> String,
    ingress: Value,
) -> Net {
    let make = |kind, what: &str, short: &str, attrs: Value, refs: &[(&str, &str)]| {
        let address = format!("cluster.{cluster}.{what}");
        let req = request(project, kind, &address, token(short), attrs, refs);
        async move {
            p.create(&req)
                .await
                .unwrap_or_else(|e| panic!("{address}: {e}"))
        }
    };
    let vpc = make(
        ResourceKind::Network,
        "network",
        "net",
        json!({"cidr": "10.0.0.0/16"}),
        &[],
    )
    .await;
    let refs = [("network", vpc.id.as_str())];
    let subnet_at = format!("subnet[{ZONE}]");
    let subnet_attrs = json!({"cidr": "10.0.0.0/24", "zone": ZONE});
    let subnet = make(ResourceKind::Subnet, &subnet_at, "sub", subnet_attrs, &refs).await;
    let fw = make(
        ResourceKind::Firewall,
        "firewall",
        "fw",
        json!({ "ingress": ingress }),
        &refs,
    )
    .await;
    Net { vpc, subnet, fw }
}

pub fn count(owned: &[ObservedResource], kind: ResourceKind) -> usize {
    owned.iter().filter(|o| o.kind == kind).count()
}
