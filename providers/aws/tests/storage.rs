//! Data volumes on moto: created, attached, listed apart from root volumes,
//! deleted.

mod common;

use common::*;
use gpuform_provider::{Provider, ResourceKind};
use serde_json::json;

#[tokio::test]
async fn data_volume_created_attached_listed_and_deleted() {
    let p = provider().await;
    let project = unique_project("volume");
    let net = network(&p, &project).await;
    let inst = p
        .create(&req(
            ResourceKind::Instance,
            &project,
            "cluster.a.node[0]",
            json!({"instance_type": "g5.xlarge", "image": "amazon-linux-2023", "root_gb": 100}),
            &[("subnet", &net.subnet), ("firewall", &net.sg)],
        ))
        .await
        .unwrap();
    let vol = p
        .create(&req(
            ResourceKind::Volume,
            &project,
            "cluster.a.node[0].data",
            json!({"size_gb": 250, "volume_type": "gp3"}),
            &[("instance", &inst.id)],
        ))
        .await
        .unwrap();
    assert!(vol.id.starts_with("vol-"));
    assert_eq!(vol.attrs["size_gb"], json!(250));
    assert_eq!(
        vol.attrs["zone"],
        json!(ZONE),
        "zone taken from the instance"
    );
    assert_eq!(vol.status, "in-use");

    let owned = p.list_owned(&scope(), &project).await.unwrap();
    let vols = by_kind(&owned, ResourceKind::Volume);
    assert_eq!(
        vols.len(),
        1,
        "only the data volume, not the root volume: {vols:#?}"
    );
    assert_eq!(vols[0].id, vol.id);
    assert_eq!(
        vols[0].ownership.as_ref().unwrap().address,
        "cluster.a.node[0].data"
    );

    p.delete(&scope(), ResourceKind::Volume, &vol.id)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Volume, &vol.id)
        .await
        .unwrap();
    assert!(p
        .read(
            &scope(),
            ResourceKind::Volume,
            std::slice::from_ref(&vol.id)
        )
        .await
        .unwrap()
        .is_empty());
    delete_all(&p, &[(ResourceKind::Instance, &inst.id)]).await;
    delete_network(&p, &net).await;
    assert!(p.list_owned(&scope(), &project).await.unwrap().is_empty());
}
