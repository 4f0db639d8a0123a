//! Data volumes on moto: created, attached, listed apart from root volumes,
//! deleted.

use crate::common;

use common::*;
use gpuform_provider::ResourceKind;
use serde_json::json;

#[tokio::test]
async fn data_volume_created_attached_listed_and_deleted() {
    let p = provider().await;
    let project = unique_project("volume");
    let net = network(&p, &project).await;
    let a = json!({"instance_type": "g5.xlarge", "image": "amazon-linux-2023", "root_gb": 100});
    let inst = create(&p, &node(&net, &project, "cluster.a.node[0]", a)).await;
    let a = json!({"size_gb": 250, "volume_type": "gp3"});
    let refs = [("instance", inst.id.as_str())];
    let data = req(
        ResourceKind::Volume,
        &project,
        "cluster.a.node[0].data",
        a,
        &refs,
    );
    let vol = create(&p, &data).await;
    assert!(vol.id.starts_with("vol-"));
    assert_eq!(vol.attrs["size_gb"], json!(250));
    assert_eq!(
        vol.attrs["zone"],
        json!(ZONE),
        "zone taken from the instance"
    );
    assert_eq!(vol.status, "in-use");

    let owned = owned_by(&p, &project).await;
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

    delete(&p, ResourceKind::Volume, &vol.id).await;
    delete(&p, ResourceKind::Volume, &vol.id).await;
    let gone = read_back(&p, ResourceKind::Volume, std::slice::from_ref(&vol.id)).await;
    assert!(gone.is_empty(), "{gone:#?}");
    delete_all(&p, &[(ResourceKind::Instance, &inst.id)]).await;
    delete_network(&p, &net).await;
    assert!(owned_by(&p, &project).await.is_empty());
}
