//! A data disk in two steps, as apply makes it on the critical path: made in
//! its zone while its instance boots (CreateDisk without InstanceId), then
//! attached with an update (AttachDisk) once both exist.

use crate::common;

use common::*;
use gpuform_provider::{ErrorKind, ObservedResource, Provider, ResourceKind};
use gpuform_standins::alibaba::AlibabaMock;
use gpuform_standins::MockCloud;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// `c.volume[0]`: 100 GB of SSD in [`ZONE`], no instance.
fn unattached_volume() -> gpuform_provider::CreateRequest {
    let a = json!({"zone": ZONE, "size_gb": 100, "volume_type": "ssd"});
    req(ResourceKind::Volume, "c.volume[0]", a, &[])
}

/// The update that puts `volume` on `instance`, which must succeed.
async fn attach(p: &impl Provider, volume: &str, instance: &str) -> ObservedResource {
    let changes = json!({ "attached_to": instance });
    OWNER
        .update(p, ResourceKind::Volume, volume, changes)
        .await
        .unwrap_or_else(|e| panic!("attach {volume} to {instance}: {e}"))
}

/// What the stand-in says `volume` is attached to.
fn attached_in(mock: &AlibabaMock, volume: &str) -> Option<String> {
    let all = mock.resources();
    let v = all.iter().find(|r| r.id == volume);
    v.unwrap_or_else(|| panic!("{volume} is not in the stand-in"))
        .attached_to
        .clone()
}

/// Creates `r` with the answer of its `nth` request from now lost, as when
/// gpuform is killed right after the cloud acted; the create fails.
async fn lose_answer(
    mock: &AlibabaMock,
    p: &impl Provider,
    r: &gpuform_provider::CreateRequest,
    nth: u64,
) {
    let n = mock.requests() + nth;
    mock.set_hook(Some(Arc::new(move |i| {
        if i == n {
            panic!("simulated crash before the answer of request {n}");
        }
    })));
    let e = p.create(r).await.unwrap_err();
    mock.set_hook(None);
    assert_eq!(e.kind, ErrorKind::Transient, "{e}");
}

/// The resource `address` as the next run adopts it by its tags.
async fn adopted(p: &impl Provider, address: &str) -> ObservedResource {
    let owned = OWNER.owned(p).await;
    let found = owned
        .into_iter()
        .find(|o| o.ownership.as_ref().is_some_and(|w| w.address == address));
    found.unwrap_or_else(|| panic!("{address} was not adopted"))
}

#[tokio::test]
async fn a_volume_made_while_its_instance_boots_is_attached_after() {
    let (mock, p, net) = start(ingress(), false).await;
    // Both creates at once, as apply runs them: the disk needs only its zone.
    let (disk, node) = (unattached_volume(), node(&net, 0, None));
    let (vol, node) = tokio::join!(create(&p, &disk), create(&p, &node));
    assert!(vol.id.starts_with("d-"), "{vol:?}");
    assert_eq!(
        vol.status, "available",
        "CreateDisk's disk has left Creating"
    );
    assert_eq!(vol.attrs["attached_to"], Value::Null);
    assert_eq!(vol.attrs["zone"], ZONE);
    assert_eq!(vol.attrs["size_gb"], 100);
    assert_eq!(vol.ownership.as_ref().unwrap().address, "c.volume[0]");
    assert_eq!(attached_in(&mock, &vol.id), None);

    let v = attach(&p, &vol.id, &node.id).await;
    assert_eq!(v.attrs["attached_to"], json!(node.id));
    assert_eq!(v.status, "in_use");
    assert_eq!(attached_in(&mock, &vol.id), Some(node.id.clone()));
    // Attached where it should be: the same update again changes nothing.
    let before = mock.requests();
    let again = attach(&p, &vol.id, &node.id).await;
    assert_eq!(again.attrs["attached_to"], json!(node.id));
    let calls = mock.requests() - before;
    assert!(calls <= 3, "a no-op attach took {calls} calls");
}

/// A run killed after RunInstances: the next one adopts the instance while
/// it is still Pending and attaches a new disk to it at once. AttachDisk
/// refuses a Pending instance, so the attach waits until it runs.
#[tokio::test]
async fn the_attach_waits_for_an_adopted_instance_still_pending() {
    let (mock, p, net) = start(ingress(), false).await;
    mock.set_pending_time(Duration::from_millis(800));
    // An explicit image id: RunInstances is the very next request.
    let mut r = node(&net, 3, None);
    r.attrs.insert(
        "image".into(),
        json!("ubuntu_22_04_x64_20G_alibase_20240130.vhd"),
    );
    lose_answer(&mock, &p, &r, 1).await;
    let node = adopted(&p, "c.node[3]").await;
    assert_eq!(node.status, "pending", "adopted before it runs");

    let vol = create(&p, &unattached_volume()).await;
    assert_eq!(vol.status, "available");
    let v = attach(&p, &vol.id, &node.id).await;
    assert_eq!(v.attrs["attached_to"], json!(node.id));
    assert_eq!(mock.status(&node.id).as_deref(), Some("Running"));
    assert_eq!(attached_in(&mock, &vol.id), Some(node.id.clone()));
}

/// A run killed after CreateDisk: the next one adopts the disk while it is
/// still Creating and attaches it at once. AttachDisk wants it Available,
/// so the attach waits for that.
#[tokio::test]
async fn the_attach_waits_for_an_adopted_disk_still_creating() {
    let (mock, p, net) = start(ingress(), true).await;
    let node = create(&p, &node(&net, 0, None)).await;
    mock.set_disk_creating_time(Duration::from_millis(800));
    // CreateDisk is the first request of a create without an instance.
    lose_answer(&mock, &p, &unattached_volume(), 1).await;
    let vol = adopted(&p, "c.volume[0]").await;
    assert_eq!(vol.status, "creating", "adopted before it is Available");
    assert_eq!(vol.attrs["zone"], ZONE);

    let v = attach(&p, &vol.id, &node.id).await;
    assert_eq!(v.attrs["attached_to"], json!(node.id));
    assert_eq!(attached_in(&mock, &vol.id), Some(node.id.clone()));
}

/// Without an instance the disk's zone cannot come from it: a volume with
/// neither is refused before any call.
#[tokio::test]
async fn a_volume_needs_a_zone_or_an_instance() {
    let mock = AlibabaMock::start();
    let p = provider(&mock);
    let r = req(
        ResourceKind::Volume,
        "c.volume[0]",
        json!({"size_gb": 100}),
        &[],
    );
    let before = mock.requests();
    let e = p.create(&r).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(
        e.message.contains("`zone`") && e.message.contains("c.volume[0]"),
        "{e}"
    );
    assert_eq!(mock.requests(), before, "refused before any call");
}
