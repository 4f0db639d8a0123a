//! Fixtures shared by the tests against the Huawei stand-in
//! (`gpuform_standins::huawei::HuaweiMock`).
#![allow(dead_code)] // each test file uses its own subset

use gpuform_huawei::{HuaweiProvider, JobPolling};
use gpuform_provider::{CreateRequest, ObservedResource, ResourceKind, Scope};
pub use gpuform_standins::harness::Net;
use gpuform_standins::harness::{create_net, Owner};
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::MockCloud;
use serde_json::Value;
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
    owner("").scope()
}

/// Resources of `project` in [`REGION`].
pub fn owner(project: &str) -> Owner<'_> {
    Owner {
        region: REGION,
        project,
        lineage: LINEAGE,
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
    owner(project).request(kind, address, token, attrs, refs)
}

/// Creates a [`Net`] (VPC 10.0.0.0/16, its subnet in [`ZONE`], a firewall
/// with `ingress`) for cluster `cluster` of `project`; `token` turns a
/// short name into the ownership token.
pub async fn network(
    p: &HuaweiProvider,
    project: &str,
    cluster: &str,
    token: fn(&str) -> String,
    ingress: Value,
) -> Net {
    create_net(p, ZONE, "10.0.0.0/24", ingress, |kind, attrs, refs| {
        let (what, short) = match kind {
            ResourceKind::Network => ("network".to_string(), "net"),
            ResourceKind::Subnet => (format!("subnet[{ZONE}]"), "sub"),
            _ => ("firewall".to_string(), "fw"),
        };
        let address = format!("cluster.{cluster}.{what}");
        request(project, kind, &address, token(short), attrs, refs)
    })
    .await
}

pub fn count(owned: &[ObservedResource], kind: ResourceKind) -> usize {
    owned.iter().filter(|o| o.kind == kind).count()
}

/// The stand-in, a provider at it and the network `net` makes.
pub async fn start(net: impl AsyncFn(&HuaweiProvider) -> Net) -> (HuaweiMock, HuaweiProvider, Net) {
    let mock = HuaweiMock::start();
    let p = provider(&mock);
    let net = net(&p).await;
    (mock, p, net)
}

/// Creates `req` through `p`, panicking with its address when that fails.
pub async fn create(p: &HuaweiProvider, req: &CreateRequest) -> ObservedResource {
    gpuform_standins::harness::create(p, req).await
}
