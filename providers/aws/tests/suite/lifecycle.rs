//! The whole life of a project on moto: create, list, read, update, drift,
//! delete; and the requests as they went over the wire.

use crate::common;

use common::*;
use gpuform_provider::{Attrs, ErrorKind, ObservedResource, Provider, ResourceKind};
use serde_json::json;

#[tokio::test]
async fn lifecycle_create_list_read_drift_delete() {
    // Through the proxy, to look at the requests as sent.
    let proxy = CountingProxy::start(&moto_url()).await;
    let p = provider_at(&proxy.url).await;
    let project = unique_project("lifecycle");
    let net = network(&p, &project).await;

    // The firewall: the self rule (all traffic between members) plus ingress.
    let ec2 = raw_client(&p).await;
    let g = described_group(&ec2, &net.sg).await;
    let perms = g.ip_permissions();
    assert!(
        perms.iter().any(|p| p.ip_protocol() == Some("-1")
            && p.user_id_group_pairs()
                .iter()
                .any(|u| u.group_id() == Some(&net.sg))),
        "self-referencing allow-all rule missing: {perms:?}"
    );
    assert!(perms.iter().any(|p| p.from_port() == Some(22)
        && p.ip_ranges()
            .iter()
            .any(|r| r.cidr_ip() == Some("203.0.113.0/24"))));

    let a = json!({"instance_type": "p4d.24xlarge", "zone": ZONE, "image": "amazon-linux-2023", "pricing": "on-demand",
                   "root_gb": 200, "rdma": true, "user_data": "#!/bin/sh\necho hi\n", "tags": {"team": "ml"}});
    let trainer = create(&p, &node(&net, &project, "cluster.trainer.node[0]", a)).await;
    let a = json!({"instance_type": "g4dn.xlarge", "zone": ZONE, "image": "amazon-linux-2023", "pricing": "spot",
                   "spot_max_price": 0.35, "root_gb": 120, "rdma": false});
    let infer = create(&p, &node(&net, &project, "cluster.inference.node[0]", a)).await;
    assert!(trainer.id.starts_with("i-") && infer.id.starts_with("i-"));

    // EFA: p4d.24xlarge allows 4 EFA interfaces (one per network card).
    // moto stores them as plain interfaces (and merges those with the same
    // device index), so check the request as it went over the wire.
    let runs = proxy.bodies_of("RunInstances");
    assert_eq!(runs.len(), 2, "one RunInstances per node");
    let p4d = runs
        .iter()
        .find(|b| b.contains("InstanceType=p4d.24xlarge"))
        .unwrap();
    assert_eq!(p4d.matches("InterfaceType=efa").count(), 4, "{p4d}");
    for n in 0..4 {
        assert!(
            p4d.contains(&format!("NetworkInterface.{}.NetworkCardIndex={n}", n + 1)),
            "{p4d}"
        );
    }
    assert!(
        p4d.contains("NetworkInterface.1.DeviceIndex=0")
            && p4d.contains("NetworkInterface.2.DeviceIndex=1"),
        "{p4d}"
    );
    assert!(
        p4d.contains("NetworkInterface.1.SubnetId=subnet-") && !p4d.contains("&SubnetId="),
        "{p4d}"
    );
    assert!(
        p4d.contains("MinCount=1") && p4d.contains("MaxCount=1"),
        "{p4d}"
    );
    assert!(
        p4d.contains(&format!(
            "ClientToken={}",
            own(&project, "cluster.trainer.node[0]").token
        )),
        "{p4d}"
    );
    assert!(
        p4d.contains("BlockDeviceMapping.1.DeviceName=/dev/xvda")
            && p4d.contains("BlockDeviceMapping.1.Ebs.VolumeSize=200"),
        "{p4d}"
    );
    assert!(
        p4d.contains("TagSpecification.1.ResourceType=instance")
            && p4d.contains("TagSpecification.2.ResourceType=volume"),
        "{p4d}"
    );
    assert!(p4d.contains("UserData=IyEvYmluL3NoCmVjaG8gaGkK"), "{p4d}");
    assert!(!p4d.contains("InstanceMarketOptions"), "{p4d}");
    let g4 = runs
        .iter()
        .find(|b| b.contains("InstanceType=g4dn.xlarge"))
        .unwrap();
    assert!(g4.contains("InstanceMarketOptions.MarketType=spot"), "{g4}");
    assert!(
        g4.contains("InstanceMarketOptions.SpotOptions.MaxPrice=0.35"),
        "the spot cap goes on the wire: {g4}"
    );
    assert!(
        !g4.contains("InterfaceType=efa")
            && g4.contains("SubnetId=subnet-")
            && g4.contains("SecurityGroupId.1=sg-"),
        "{g4}"
    );
    let inst = &described_instance(&ec2, &trainer.id).await;
    assert_eq!(
        inst.image_id(),
        Some("ami-03c3da4cfa8e8943a"),
        "amazon-linux-2023 maps to the al2023 kernel-6.1 x86_64 AMI"
    );
    assert_eq!(
        p.type_info(REGION, "g4dn.xlarge")
            .await
            .unwrap()
            .efa_interfaces,
        0
    );
    assert_eq!(
        p.type_info(REGION, "p4d.24xlarge")
            .await
            .unwrap()
            .efa_interfaces,
        4
    );

    // list_owned finds everything, with its ownership tags and neutral attrs.
    let owned = owned_by(&p, &project).await;
    assert_eq!(by_kind(&owned, ResourceKind::Network).len(), 1);
    assert_eq!(by_kind(&owned, ResourceKind::Subnet).len(), 1);
    assert_eq!(by_kind(&owned, ResourceKind::Firewall).len(), 1);
    assert_eq!(
        by_kind(&owned, ResourceKind::Volume).len(),
        0,
        "root volumes are part of their instance: {owned:#?}"
    );
    let instances = by_kind(&owned, ResourceKind::Instance);
    assert_eq!(instances.len(), 2);
    for r in &owned {
        let o = r.ownership.as_ref().expect("ownership tags");
        assert_eq!(o.project, project);
        assert_eq!(o.lineage, format!("lineage-{project}"));
        assert_eq!(r.region, REGION);
    }
    let t = instances.iter().find(|r| r.id == trainer.id).unwrap();
    assert_eq!(
        t.ownership.as_ref().unwrap().address,
        "cluster.trainer.node[0]"
    );
    assert_eq!(
        t.ownership.as_ref().unwrap().token,
        own(&project, "cluster.trainer.node[0]").token
    );
    assert_eq!(t.attrs["instance_type"], json!("p4d.24xlarge"));
    assert_eq!(t.attrs["zone"], json!(ZONE));
    assert_eq!(t.attrs["image"], json!("amazon-linux-2023"));
    assert_eq!(t.attrs["pricing"], json!("on-demand"));
    assert_eq!(t.attrs["root_gb"], json!(200));
    assert_eq!(t.attrs["rdma"], json!(true));
    assert_eq!(t.attrs["tags"], json!({"team": "ml"}));
    assert_eq!(t.status, "running");
    let i = instances.iter().find(|r| r.id == infer.id).unwrap();
    assert_eq!(i.attrs["pricing"], json!("spot"));
    assert_eq!(i.attrs["root_gb"], json!(120));
    assert_eq!(i.attrs["rdma"], json!(false));
    let fw = by_kind(&owned, ResourceKind::Firewall)[0];
    assert_eq!(
        fw.attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "203.0.113.0/24"}])
    );
    let sn = by_kind(&owned, ResourceKind::Subnet)[0];
    assert_eq!(sn.attrs["cidr"], json!(unique_cidr_of(&owned)));

    // read by ids, batched; an id that does not exist is left out, not an error.
    let ids = vec![
        trainer.id.clone(),
        infer.id.clone(),
        "i-0123456789abcdef0".to_string(),
    ];
    let read = read_back(&p, ResourceKind::Instance, &ids).await;
    assert_eq!(read.len(), 2, "{read:#?}");
    assert_eq!(
        read.iter().find(|r| r.id == trainer.id).unwrap().attrs,
        t.attrs
    );
    let subnets = [net.subnet.clone(), "subnet-00000000000000000".into()];
    assert_eq!(read_back(&p, ResourceKind::Subnet, &subnets).await.len(), 1);

    // Updates in place: tags and ingress.
    let mut changes = Attrs::new();
    changes.insert("tags".into(), json!({"team": "ml", "cost-center": "42"}));
    let u = p
        .update(&scope(), ResourceKind::Instance, &trainer.id, &changes)
        .await
        .unwrap();
    assert_eq!(u.attrs["tags"], json!({"team": "ml", "cost-center": "42"}));
    let mut changes = Attrs::new();
    changes.insert(
        "ingress".into(),
        json!([{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "0.0.0.0/0"}]),
    );
    let u = p
        .update(&scope(), ResourceKind::Firewall, &net.sg, &changes)
        .await
        .unwrap();
    assert_eq!(
        u.attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "0.0.0.0/0"}])
    );
    let mut bad = Attrs::new();
    bad.insert("instance_type".into(), json!("p5.48xlarge"));
    assert_eq!(
        p.update(&scope(), ResourceKind::Instance, &trainer.id, &bad)
            .await
            .unwrap_err()
            .kind,
        ErrorKind::Invalid
    );

    // Drift: an instance terminated behind the provider's back is gone.
    ec2.terminate_instances()
        .instance_ids(&infer.id)
        .send()
        .await
        .unwrap();
    let owned = owned_by(&p, &project).await;
    let left: Vec<_> = by_kind(&owned, ResourceKind::Instance)
        .iter()
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(left, vec![trainer.id.clone()]);
    assert_eq!(
        read_back(&p, ResourceKind::Instance, std::slice::from_ref(&infer.id))
            .await
            .len(),
        0
    );

    // Delete everything; deleting again is fine; nothing is left.
    let everything = [
        (ResourceKind::Instance, trainer.id.as_str()),
        (ResourceKind::Instance, infer.id.as_str()),
        (ResourceKind::Firewall, net.sg.as_str()),
        (ResourceKind::Subnet, net.subnet.as_str()),
        (ResourceKind::Network, net.vpc.as_str()),
    ];
    delete_all(&p, &everything).await;
    delete_all(&p, &everything).await;
    let owned = owned_by(&p, &project).await;
    assert!(owned.is_empty(), "left over: {owned:#?}");
}

fn unique_cidr_of(owned: &[ObservedResource]) -> String {
    by_kind(owned, ResourceKind::Network)[0].attrs["cidr"]
        .as_str()
        .unwrap()
        .replace(".0.0/16", ".1.0/24")
}
