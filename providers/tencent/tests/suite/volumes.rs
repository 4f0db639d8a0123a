//! A data disk in two steps, as apply makes it on the critical path: made in
//! its zone while its instance boots (CreateDisks without an instance), then
//! attached with an update (AttachDisks) once both exist.

use crate::common;

use common::{create, node_request, provider, request, started, update, TYPE, ZONE};
use gpuform_provider::{ErrorKind, Provider, ResourceKind};
use gpuform_standins::tencent::TencentMock;
use gpuform_standins::MockCloud;
use serde_json::{json, Value};

/// What the stand-in says `volume` is attached to.
fn attached_in(mock: &TencentMock, volume: &str) -> Option<String> {
    let all = mock.resources();
    let v = all.iter().find(|r| r.id == volume);
    v.unwrap_or_else(|| panic!("{volume} is not in the stand-in"))
        .attached_to
        .clone()
}

#[tokio::test]
async fn a_volume_made_while_its_instance_boots_is_attached_after() {
    let (mock, p, net) = started().await;
    let a = json!({"zone": ZONE, "size_gb": 100, "volume_type": "ssd"});
    let disk = request(ResourceKind::Volume, "cluster.t.volume[0]", a, &[]);
    let a = json!({"instance_type": TYPE, "zone": ZONE, "image": "ubuntu-22.04-cuda",
                   "pricing": "on-demand", "root_gb": 100, "rdma": false});
    let node = node_request(&net, "cluster.t.node[0]", a, None);
    // Both creates at once, as apply runs them: the disk needs only its zone.
    let (vol, node) = tokio::join!(create(&p, &disk), create(&p, &node));
    assert!(vol.id.starts_with("disk-"), "{vol:?}");
    assert_eq!(
        vol.status, "unattached",
        "created: DescribeDisks shows it UNATTACHED"
    );
    assert_eq!(vol.attrs["attached_to"], Value::Null);
    assert_eq!(vol.attrs["zone"], json!(ZONE));
    assert_eq!(vol.attrs["size_gb"], json!(100));
    assert_eq!(
        vol.ownership.as_ref().unwrap().address,
        "cluster.t.volume[0]"
    );
    assert_eq!(attached_in(&mock, &vol.id), None);

    let attach = json!({ "attached_to": node.id });
    let v = update(&p, ResourceKind::Volume, &vol.id, attach).await;
    let v = v.unwrap_or_else(|e| panic!("attach: {e}"));
    assert_eq!(v.attrs["attached_to"], json!(node.id));
    assert_eq!(v.status, "attached");
    assert_eq!(attached_in(&mock, &vol.id), Some(node.id.clone()));
    // The same create again (same ClientToken) returns the disk as it is.
    let again = create(&p, &disk).await;
    assert_eq!(again.id, vol.id);
    assert_eq!(again.attrs["attached_to"], json!(node.id));
}

/// `hdd` reaches CBS as a DiskType of CreateDisks' list (the stand-in
/// refuses any other, so gpuform's own word would fail) and reads back as
/// `hdd` through the same table.
#[tokio::test]
async fn an_hdd_volume_is_made_with_a_cbs_disk_type_and_reads_back_hdd() {
    let (_mock, p, _net) = started().await;
    let a = json!({"zone": ZONE, "size_gb": 100, "volume_type": "hdd"});
    let disk = request(ResourceKind::Volume, "cluster.t.volume[2]", a, &[]);
    let vol = create(&p, &disk).await;
    assert_eq!(vol.attrs["volume_type"], json!("hdd"));
}

/// CreateDisks needs Placement.Zone: a volume without one is refused
/// before any call.
#[tokio::test]
async fn a_volume_needs_its_zone() {
    let mock = TencentMock::start();
    let p = provider(&mock);
    let before = mock.requests();
    let r = request(
        ResourceKind::Volume,
        "cluster.t.volume[1]",
        json!({"size_gb": 10}),
        &[],
    );
    let e = p.create(&r).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(e.message.contains("`zone`"), "{e}");
    assert_eq!(mock.requests(), before, "refused before any call");
}
