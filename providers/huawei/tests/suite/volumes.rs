//! A data disk in two steps, as apply makes it on the critical path: made in
//! its zone while its server boots (EVS create without a server), then
//! attached with an update (ECS attachvolume) once both exist.

use crate::common;

use common::{create, owner, request, start, Net, ZONE};
use gpuform_huawei::HuaweiProvider;
use gpuform_provider::{CreateRequest, ErrorKind, Provider, ResourceKind};
use gpuform_standins::harness::ssh;
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::MockCloud;
use serde_json::{json, Value};

fn req(
    kind: ResourceKind,
    address: &str,
    token: &str,
    attrs: Value,
    refs: &[(&str, &str)],
) -> CreateRequest {
    request("llm", kind, address, token.to_string(), attrs, refs)
}

async fn network(p: &HuaweiProvider) -> Net {
    common::network(p, "llm", "v", |short| format!("gf-{short}2"), ssh()).await
}

fn server(net: &Net) -> CreateRequest {
    let a = json!({"instance_type": "p2s.2xlarge.8", "zone": ZONE, "image": "ubuntu-22.04-cuda",
                   "pricing": "on-demand", "root_gb": 100, "rdma": false});
    let refs = [
        ("subnet", net.subnet.id.as_str()),
        ("firewall", net.firewall.id.as_str()),
    ];
    req(
        ResourceKind::Instance,
        "cluster.v.node[0]",
        "gf-vnode0",
        a,
        &refs,
    )
}

/// What the stand-in says `volume` is attached to.
fn attached_in(mock: &HuaweiMock, volume: &str) -> Option<String> {
    let all = mock.resources();
    let v = all.iter().find(|r| r.id == volume);
    v.unwrap_or_else(|| panic!("{volume} is not in the stand-in"))
        .attached_to
        .clone()
}

/// `hdd` reaches EVS as one of its `volume_type`s (the stand-in refuses
/// any other, so gpuform's own word would fail) and reads back as `hdd`
/// through the same table.
#[tokio::test]
async fn an_hdd_volume_is_made_with_an_evs_type_and_reads_back_hdd() {
    let (_mock, p, _net) = start(network).await;
    let a = json!({"zone": ZONE, "size_gb": 100, "volume_type": "hdd"});
    let disk = req(
        ResourceKind::Volume,
        "cluster.v.volume[5]",
        "gf-vvol5",
        a,
        &[],
    );
    let vol = create(&p, &disk).await;
    assert_eq!(vol.attrs["volume_type"], json!("hdd"));
}

#[tokio::test]
async fn a_volume_made_while_its_server_boots_is_attached_after() {
    let (mock, p, net) = start(network).await;
    let a = json!({"zone": ZONE, "size_gb": 100, "volume_type": "ssd"});
    let disk = req(
        ResourceKind::Volume,
        "cluster.v.volume[0]",
        "gf-vvol0",
        a,
        &[],
    );
    // Both creates at once, as apply runs them: the disk needs only its zone.
    let node = server(&net);
    let (vol, node) = tokio::join!(create(&p, &disk), create(&p, &node));
    assert_eq!(
        vol.status, "available",
        "the create job made it: it can be attached"
    );
    assert_eq!(vol.attrs["attached_to"], Value::Null);
    assert_eq!(vol.attrs["zone"], json!(ZONE));
    assert_eq!(vol.attrs["size_gb"], json!(100));
    let ownership = vol.ownership.as_ref().expect("tagged at create");
    assert_eq!(ownership.address, "cluster.v.volume[0]");
    assert_eq!(attached_in(&mock, &vol.id), None);

    let llm = owner("llm");
    let attach = json!({ "attached_to": node.id });
    let v = llm
        .update(&p, ResourceKind::Volume, &vol.id, attach.clone())
        .await;
    let v = v.unwrap_or_else(|e| panic!("attach: {e}"));
    assert_eq!(v.attrs["attached_to"], json!(node.id));
    assert_eq!(v.status, "in-use");
    assert_eq!(attached_in(&mock, &vol.id), Some(node.id.clone()));
    // The same create again (same name) finds the disk, attached, and leaves it so.
    let again = create(&p, &disk).await;
    assert_eq!(again.id, vol.id);
    assert_eq!(again.attrs["attached_to"], json!(node.id));
}

/// The disk's zone is required by the EVS create: without it (and without a
/// server) the create is refused before any call.
#[tokio::test]
async fn a_volume_needs_its_zone() {
    let mock = HuaweiMock::start();
    let p = common::provider(&mock);
    let before = mock.requests();
    let r = req(
        ResourceKind::Volume,
        "cluster.v.volume[1]",
        "gf-vvol1",
        json!({"size_gb": 10}),
        &[],
    );
    let e = p.create(&r).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(e.message.contains("`zone`"), "{e}");
    assert_eq!(mock.requests(), before, "refused before any call");
}
