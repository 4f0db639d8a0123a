//! Data volumes on moto: created, attached, listed apart from root volumes,
//! deleted.

use crate::common;

use aws_sdk_ec2::types::VolumeType;
use common::*;
use gpuform_provider::{Provider, ResourceKind};
use serde_json::json;

/// The EBS type EC2 holds, read with the SDK, not through gpuform's table.
async fn ebs_type(p: &gpuform_aws::AwsProvider, id: &str) -> VolumeType {
    let out = raw_client(p)
        .await
        .describe_volumes()
        .volume_ids(id)
        .send()
        .await
        .unwrap();
    out.volumes()[0].volume_type().cloned().unwrap()
}

#[tokio::test]
async fn data_volume_created_attached_listed_and_deleted() {
    let p = provider().await;
    let project = unique_project("volume");
    let net = network(&p, &project).await;
    let a = json!({"instance_type": "g5.xlarge", "image": "amazon-linux-2023", "root_gb": 100});
    let inst = create(&p, &node(&net, &project, "cluster.a.node[0]", a)).await;
    // No type: the neutral default, which EBS gets as gp3.
    let a = json!({"size_gb": 250});
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
    assert_eq!(vol.attrs["volume_type"], json!("ssd"));
    assert_eq!(ebs_type(&p, &vol.id).await, VolumeType::Gp3);

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

/// A data volume in two steps, as apply makes it on the critical path:
/// created in its zone while its instance launches, then attached by an
/// update once both exist.
#[tokio::test]
async fn data_volume_made_in_its_zone_then_attached_by_an_update() {
    let p = provider().await;
    let project = unique_project("volume-steps");
    let net = network(&p, &project).await;
    // st1 volumes are at least 125 GiB.
    let a = json!({"size_gb": 500, "volume_type": "hdd", "zone": ZONE});
    let data = req(ResourceKind::Volume, &project, "cluster.a.data", a, &[]);
    let a = json!({"instance_type": "g5.xlarge", "image": "amazon-linux-2023", "root_gb": 100});
    let node = node(&net, &project, "cluster.a.node[0]", a);
    let (vol, inst) = tokio::join!(create(&p, &data), create(&p, &node));
    assert!(vol.id.starts_with("vol-"));
    assert_eq!(
        vol.status, "available",
        "out of `creating`, ready to attach"
    );
    assert_eq!(vol.attrs["attached_to"], json!(null));
    assert_eq!(vol.attrs["zone"], json!(ZONE));
    // EC2 got its own name for the neutral `hdd`, and it reads back neutral.
    assert_eq!(ebs_type(&p, &vol.id).await, VolumeType::St1);
    assert_eq!(vol.attrs["volume_type"], json!("hdd"));

    let to = serde_json::from_value(json!({ "attached_to": inst.id })).unwrap();
    let v = p.update(&scope(), ResourceKind::Volume, &vol.id, &to).await;
    let v = v.unwrap_or_else(|e| panic!("attach: {e}"));
    assert_eq!(v.attrs["attached_to"], json!(inst.id));
    assert_eq!(v.status, "in-use");

    let no_zone = req(
        ResourceKind::Volume,
        &project,
        "cluster.a.data2",
        json!({"size_gb": 10}),
        &[],
    );
    let e = refused(&p, no_zone).await;
    assert_eq!(e.kind, gpuform_provider::ErrorKind::Invalid, "{e}");
    assert!(e.message.contains("`zone`"), "{e}");

    delete(&p, ResourceKind::Volume, &vol.id).await;
    delete_all(&p, &[(ResourceKind::Instance, &inst.id)]).await;
    delete_network(&p, &net).await;
    assert!(owned_by(&p, &project).await.is_empty());
}
