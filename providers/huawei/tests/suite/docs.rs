//! Documented Huawei Cloud behaviours (issue 15, points 3 and 13–20), each
//! against the stand-in, which follows the page cited beside its handler.
//! Every test here failed before the provider followed that page.

use crate::common;

use common::{count, create, owner, provider, request, scope, start, Net};
use gpuform_huawei::{HuaweiProvider, JobPolling};
use gpuform_provider::{CreateRequest, ErrorKind, ObservedResource, Provider, ResourceKind};
use gpuform_standins::harness::refused;
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::MockCloud;
use serde_json::{json, Value};
use std::time::Duration;

const FLAVOR: &str = "p2s.2xlarge.8";

/// gpuform's own token shape: `gf-` + 32 hex digits, not a UUID.
fn token(short: &str) -> String {
    format!("gf-{short:0>32}")
}

fn req(
    kind: ResourceKind,
    address: &str,
    short: &str,
    attrs: Value,
    refs: &[(&str, &str)],
) -> CreateRequest {
    request("docs", kind, address, token(short), attrs, refs)
}

async fn network(p: &HuaweiProvider) -> Net {
    common::network(p, "docs", "d", token, json!([])).await
}

fn node(net: &Net, i: usize, pricing: &str) -> CreateRequest {
    req(
        ResourceKind::Instance,
        &format!("cluster.d.node[{i}]"),
        &format!("b{i}"),
        json!({"instance_type": FLAVOR, "zone": "cn-north-4a", "image": "ubuntu-22.04", "pricing": pricing, "root_gb": 100}),
        &[("subnet", &net.subnet.id), ("firewall", &net.firewall.id)],
    )
}

fn volume(server: &str, i: usize) -> CreateRequest {
    req(
        ResourceKind::Volume,
        &format!("cluster.d.volume[{i}]"),
        &format!("c{i}"),
        json!({"zone": "cn-north-4a", "size_gb": 100, "volume_type": "ssd"}),
        &[("instance", server)],
    )
}

/// Point 16: a new VPC is CREATING and a subnet made in it then gets
/// VPC.0004; a new subnet is UNKNOWN until attached, and servers wait for it.
#[tokio::test]
async fn creates_wait_for_the_documented_ready_state() {
    let (_mock, p, net) = start(network).await;
    assert_eq!(
        net.subnet.status, "available",
        "subnet returned once ACTIVE"
    );
    let n = create(&p, &node(&net, 0, "on-demand")).await;
    assert_eq!(n.status, "active");
}

/// Point 20: subnets get the region's private DNS servers ("Creating a
/// Subnet", `dnsList`: without it the internal DNS is unusable), as "Querying
/// Name Servers" lists them.
#[tokio::test]
async fn subnets_get_the_private_dns_servers() {
    let (mock, _p, net) = start(network).await;
    let sn = mock.subnet(&net.subnet.id).expect("subnet in the stand-in");
    assert_eq!(
        sn["dnsList"],
        json!(["100.125.1.250", "100.125.129.250"]),
        "{sn}"
    );
    assert_eq!(sn["primary_dns"], json!("100.125.1.250"));
}

/// Point 14: the X-Client-Token must be a UUID; a retry sends the same one.
#[tokio::test]
async fn server_create_sends_a_uuid_client_token_and_retries_with_it() {
    let (mock, p, net) = start(network).await;
    let a = create(&p, &node(&net, 0, "on-demand")).await;
    let b = create(&p, &node(&net, 0, "on-demand")).await;
    assert_eq!(a.id, b.id, "the retry is answered with the first server");
    let servers = mock
        .resources()
        .into_iter()
        .filter(|r| r.kind == ResourceKind::Instance)
        .count();
    assert_eq!(servers, 1);
}

/// Point 13: tags given at creation are copied onto the system disk; it is
/// part of the server, never listed as a (duplicate) volume.
#[tokio::test]
async fn system_disks_are_not_volumes() {
    let (_mock, p, net) = start(network).await;
    let n = create(&p, &node(&net, 0, "on-demand")).await;
    let v = create(&p, &volume(&n.id, 0)).await;
    let owned = owner("docs").owned(&p).await;
    assert_eq!(count(&owned, ResourceKind::Instance), 1);
    let vols: Vec<&ObservedResource> = owned
        .iter()
        .filter(|o| o.kind == ResourceKind::Volume)
        .collect();
    assert_eq!(vols.len(), 1, "only the data disk: {vols:#?}");
    assert_eq!(vols[0].id, v.id);
    assert_eq!(
        vols[0].ownership.as_ref().map(|o| o.address.as_str()),
        Some("cluster.d.volume[0]")
    );
}

/// Point 15: `202 Common.0024 exceeds flow over limit` is an error (throttled),
/// never an empty list of servers.
#[tokio::test]
async fn flow_control_is_an_error_not_an_empty_list() {
    let (mock, p, net) = start(network).await;
    create(&p, &node(&net, 0, "on-demand")).await;
    mock.throttle_ecs(1);
    match p.list_owned(&scope(), "docs").await {
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::Throttled, "{e}");
            assert_eq!(e.code.as_deref(), Some("Common.0024"));
        }
        Ok(owned) => panic!(
            "a throttled listing was read as {} servers",
            count(&owned, ResourceKind::Instance)
        ),
    }
    let owned = owner("docs").owned(&p).await;
    assert_eq!(count(&owned, ResourceKind::Instance), 1);
}

/// Point 18: deleting a server keeps the data disks attached outside
/// gpuform (`delete_volume: false` detaches and reserves them).
#[tokio::test]
async fn deleting_a_server_keeps_disks_gpuform_does_not_own() {
    let (mock, p, net) = start(network).await;
    let n = create(&p, &node(&net, 0, "on-demand")).await;
    let foreign = mock
        .attach_foreign_disk(&n.id, 20)
        .expect("attached by hand");
    owner("docs")
        .delete(&p, ResourceKind::Instance, &n.id)
        .await;
    assert!(
        !mock.resources().iter().any(|r| r.id == n.id),
        "server gone"
    );
    assert!(
        mock.disk_exists(&foreign),
        "a disk gpuform does not own survives the server"
    );
}

/// Point 19: DeleteServers deletes only pay-per-use servers; a prepaid one is
/// refused with a hint before any delete call is made.
#[tokio::test]
async fn prepaid_servers_are_refused_before_any_delete_call() {
    let (mock, p, net) = start(network).await;
    let n = create(&p, &node(&net, 0, "reserved-1y")).await;
    let log = mock.call_log();
    let before = log.lock().unwrap().len();
    let e = p
        .delete(&scope(), ResourceKind::Instance, &n.id)
        .await
        .expect_err("prepaid");
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(e.message.contains("unsubscribe"), "{e}");
    let calls: Vec<String> = log.lock().unwrap()[before..].to_vec();
    assert!(
        !calls.iter().any(|c| c.ends_with("/cloudservers/delete")),
        "{calls:?}"
    );
    assert!(mock.resources().iter().any(|r| r.id == n.id));
}

/// Point 20: EVS answers in `badRequest` / `itemNotFound` wrappers; a sold-out
/// disk type is a capacity error.
#[tokio::test]
async fn evs_fault_bodies_are_read() {
    let (mock, p, net) = start(network).await;
    let n = create(&p, &node(&net, 0, "on-demand")).await;
    mock.sell_out_disks("SSD");
    let e = refused(&p, &volume(&n.id, 0), "sold out").await;
    assert_eq!(e.kind, ErrorKind::Capacity, "{e}");
    assert_eq!(e.code.as_deref(), Some("EVS.5405"));
}

/// Point 20: a yearly/monthly order waiting for payment is reported at once
/// with what to do, not polled until the deadline.
#[tokio::test]
async fn pending_payment_is_reported_with_a_hint() {
    let mock = HuaweiMock::start();
    let p = provider(&mock).with_job_polling(JobPolling {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(20),
        deadline: Duration::from_secs(5),
    });
    let net = network(&p).await;
    mock.hold_payments(true);
    let e = refused(&p, &node(&net, 0, "reserved-1y"), "unpaid").await;
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(
        e.message.contains("awaits payment") && e.message.contains("Billing Center"),
        "{e}"
    );
}

/// Point 3: a server in ERROR after CreateServers is a failed create: it is
/// deleted and reported as capacity, so the engine fails over.
#[tokio::test]
async fn a_server_in_error_is_cleaned_up_and_reported_as_capacity() {
    let (mock, p, net) = start(network).await;
    mock.break_builds(FLAVOR);
    let e = refused(&p, &node(&net, 0, "on-demand"), "build fails").await;
    assert_eq!(e.kind, ErrorKind::Capacity, "{e}");
    let left: Vec<_> = mock
        .resources()
        .into_iter()
        .filter(|r| r.kind == ResourceKind::Instance)
        .collect();
    assert!(left.is_empty(), "the ERROR server is deleted: {left:?}");
}

/// Point 17: a settle time covers the window in which a new disk is not
/// found yet (the stand-in tells gpuform how long that is).
#[test]
fn settle_time_covers_invisible_new_disks() {
    let mock = HuaweiMock::start();
    let p = provider(&mock);
    assert_eq!(p.settle_time(), Duration::from_millis(1200));
    let default = HuaweiProvider::from_vars(
        mock.env()
            .into_iter()
            .filter(|(k, _)| k != gpuform_huawei::ENV_SETTLE_MS),
    )
    .expect("provider");
    assert_eq!(default.settle_time(), gpuform_huawei::DEFAULT_SETTLE);
    assert!(!default.settle_time().is_zero());
}
