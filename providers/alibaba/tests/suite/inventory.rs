//! The inventory `gpuform audit` reads, against the Alibaba stand-in.

use crate::common;

use common::*;
use gpuform_provider::ResourceKind;
use gpuform_standins::harness::{assert_running_on_demand, counted, token_of};
use serde_json::json;

/// `gpuform audit`'s inventory: every instance of every owner and the
/// unattached data disks, in a few paginated calls whatever the count.
#[tokio::test]
async fn inventory_lists_every_owner_in_a_few_pages() {
    use gpuform_provider::InventoryApi;
    let (mock, p, net) = start(ingress(), true).await;
    let mut ours = Vec::new();
    for i in 0..120 {
        ours.push(create(&p, &node(&net, i, None)).await.id);
    }
    // Another project's instance: listed too, with its own tags.
    let other = gpuform_standins::harness::Owner {
        region: REGION,
        project: "someone-else",
        lineage: "lineage-2",
    };
    let refs = [("subnet", net.vsw.as_str()), ("firewall", net.sg.as_str())];
    let token = token_of("other");
    let theirs = other.request(
        ResourceKind::Instance,
        "c.node[0]",
        token,
        instance_attrs(0),
        &refs,
    );
    let theirs = create(&p, &theirs).await.id;
    let loose = OWNER.volume("c.volume[9]", ZONE, 40, &ours[119]);
    let loose = create(&p, &loose).await.id;
    // Volumes are made attached; this one is detached afterwards.
    let detach = json!({"attached_to": null});
    let detached = OWNER.update(&p, ResourceKind::Volume, &loose, detach);
    detached.await.unwrap();
    let attached = OWNER.volume("c.volume[0]", ZONE, 500, &ours[0]);
    let attached = create(&p, &attached).await.id;

    let (inv, calls) = counted(&mock, p.inventory(&scope())).await;
    let inv = inv.unwrap();
    // 121 instances at 100 a page, 243 disks at 100 a page: 2 + 3 calls.
    assert!(calls <= 5, "inventory took {calls} calls");
    assert_eq!(inv.instances.len(), 121);
    let t = assert_running_on_demand(&inv, &theirs, "someone-else", GPU);
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
