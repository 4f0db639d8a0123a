//! The inventory `gpuform audit` reads, against the Alibaba stand-in.

mod common;

use common::*;
use gpuform_provider::{Provider, ResourceKind};
use gpuform_standins::MockCloud;
use serde_json::json;

/// `gpuform audit`'s inventory: every instance of every owner and the
/// unattached data disks, in a few paginated calls whatever the count.
#[tokio::test]
async fn inventory_lists_every_owner_in_a_few_pages() {
    use gpuform_provider::{InventoryApi, RunState};
    let (mock, p, net) = start(ingress(), true).await;
    let mut ours = Vec::new();
    for i in 0..120 {
        ours.push(p.create(&node(&net, i, None)).await.unwrap().id);
    }
    // Another project's instance: listed too, with its own tags.
    let other = gpuform_standins::harness::Owner {
        region: REGION,
        project: "someone-else",
        lineage: "lineage-2",
    };
    let theirs = p
        .create(&other.request(
            ResourceKind::Instance,
            "c.node[0]",
            gpuform_standins::harness::token_of("other"),
            instance_attrs(0),
            &[("subnet", net.vsw.as_str()), ("firewall", net.sg.as_str())],
        ))
        .await
        .unwrap()
        .id;
    let loose = p
        .create(&req(
            ResourceKind::Volume,
            "c.volume[9]",
            json!({"zone": ZONE, "size_gb": 40, "volume_type": "ssd"}),
            &[("instance", ours[119].as_str())],
        ))
        .await
        .unwrap()
        .id;
    // Volumes are made attached; this one is detached afterwards.
    p.update(
        &scope(),
        ResourceKind::Volume,
        &loose,
        &attrs(json!({"attached_to": null})),
    )
    .await
    .unwrap();
    let attached = p
        .create(&req(
            ResourceKind::Volume,
            "c.volume[0]",
            json!({"zone": ZONE, "size_gb": 500, "volume_type": "ssd"}),
            &[("instance", ours[0].as_str())],
        ))
        .await
        .unwrap()
        .id;

    let before = mock.requests();
    let inv = p.inventory(&scope()).await.unwrap();
    let calls = mock.requests() - before;
    // 121 instances at 100 a page, 243 disks at 100 a page: 2 + 3 calls.
    assert!(calls <= 5, "inventory took {calls} calls");
    assert_eq!(inv.instances.len(), 121);
    let t = inv.instances.iter().find(|i| i.id == theirs).unwrap();
    assert_eq!(t.project(), Some("someone-else"));
    assert_eq!(t.state, RunState::Running);
    assert_eq!(t.pricing.as_deref(), Some("on-demand"));
    assert_eq!(t.instance_type, GPU);
    assert!(t.launch_time.is_some());
    let first = inv.instances.iter().find(|i| i.id == ours[0]).unwrap();
    assert_eq!(first.project(), Some("llm"));
    assert_eq!(first.tags.get("team").map(String::as_str), Some("ml"));
    // Its 200 GB system disk and the 500 GB data disk.
    assert_eq!(first.disk_gb, Some(700));
    let last = inv.instances.iter().find(|i| i.id == ours[119]).unwrap();
    assert_eq!(
        last.disk_gb,
        Some(200),
        "the detached disk is not its any more"
    );
    let vols: Vec<&str> = inv.volumes.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(vols, vec![loose.as_str()], "only the unattached data disk");
    assert_eq!(inv.volumes[0].size_gb, Some(40));
    assert!(!vols.contains(&attached.as_str()));
}
