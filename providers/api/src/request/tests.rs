//! Reading a `CreateRequest` into typed specs: what is required, what is malformed, and the one message each gets.

use super::*;
use serde_json::json;
use std::collections::BTreeMap;

fn req(kind: ResourceKind, attrs: Value, refs: &[(&str, &str)]) -> CreateRequest {
    CreateRequest {
        kind,
        scope: Scope {
            region: "r1".into(),
        },
        attrs: serde_json::from_value(attrs).unwrap(),
        refs: refs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ownership: OwnershipTags {
            project: "p".into(),
            address: "cluster.a.node[0]".into(),
            token: "t".into(),
            lineage: "l".into(),
            workspace: None,
        },
    }
}

fn parse(r: &CreateRequest) -> Result<Desired> {
    Desired::parse(r, UserTags::default())
}

#[test]
fn an_instance_reads_every_field_and_defaults_the_rest() {
    let r = req(
        ResourceKind::Instance,
        json!({"instance_type": "p4d.24xlarge", "image": "ubuntu-22.04", "zone": "z1",
               "pricing": "reserved-3y", "root_gb": 200, "rdma": true, "gpu": "A100:8"}),
        &[("subnet", "s-1"), ("firewall", "f-1")],
    );
    let Desired::Instance(i) = parse(&r).unwrap() else {
        panic!("not an instance")
    };
    assert_eq!(i.spec.pricing, Pricing::Reserved3y);
    assert_eq!(i.spec.pricing.commitment_months(), Some(36));
    assert_eq!(i.spec.root_gb, Some(200));
    assert!(i.spec.rdma);
    assert_eq!(i.spec.subnet.as_deref(), Some("s-1"));
    assert_eq!(i.spec.placement, None);
    assert_eq!(i.ownership.address, "cluster.a.node[0]");

    let bare = req(
        ResourceKind::Instance,
        json!({"instance_type": "t", "image": "i"}),
        &[],
    );
    let Desired::Instance(i) = parse(&bare).unwrap() else {
        panic!()
    };
    assert_eq!(
        (
            i.spec.pricing,
            i.spec.rdma,
            i.spec.root_gb,
            i.spec.spot_max_price
        ),
        (Pricing::OnDemand, false, None, None)
    );
}

#[test]
fn a_spot_cap_is_a_positive_price_on_spot_instances_only() {
    let spot = |cap: Value| {
        req(
            ResourceKind::Instance,
            json!({"instance_type": "t", "image": "i", "pricing": "spot", "spot_max_price": cap}),
            &[],
        )
    };
    let Desired::Instance(i) = parse(&spot(json!(12.5))).unwrap() else {
        panic!()
    };
    assert_eq!(i.spec.spot_max_price, Some(12.5));
    for bad in [json!(0), json!(-1.5), json!("12.5")] {
        let e = parse(&spot(bad.clone())).unwrap_err();
        assert_eq!(
            e.message,
            format!("instance `spot_max_price`: must be a price above 0, got {bad}")
        );
    }
    let e = parse(&req(
        ResourceKind::Instance,
        json!({"instance_type": "t", "image": "i", "spot_max_price": 3}),
        &[],
    ))
    .unwrap_err();
    assert_eq!(
        e.message,
        "instance `spot_max_price`: only applies with `pricing: spot`, not `on-demand`"
    );
}

#[test]
fn one_message_per_problem_whatever_the_cloud() {
    let e = parse(&req(ResourceKind::Network, json!({}), &[])).unwrap_err();
    assert_eq!(e.message, "a network needs `cidr`");
    let e = parse(&req(
        ResourceKind::Subnet,
        json!({"zone": "z", "cidr": "10.0.0.0/20"}),
        &[],
    ))
    .unwrap_err();
    assert_eq!(e.message, "a subnet needs a `network` to belong to");
    let e = parse(&req(
        ResourceKind::Instance,
        json!({"instance_type": "t", "image": "i", "pricing": "monthly"}),
        &[],
    ))
    .unwrap_err();
    assert_eq!(
        e.message,
        "instance `pricing`: `monthly` is not one of on-demand, spot, reserved-1y, reserved-3y"
    );
    let e = parse(&req(ResourceKind::Volume, json!({"size_gb": -5}), &[])).unwrap_err();
    assert_eq!(
        e.message,
        "volume `size_gb`: must be a whole number, got -5"
    );
    let e = parse(&req(
        ResourceKind::Instance,
        json!({"instance_type": 3, "image": "i"}),
        &[],
    ))
    .unwrap_err();
    assert_eq!(e.message, "instance `instance_type`: must be text, got 3");
    assert!(e.kind == ErrorKind::Invalid);
}

#[test]
fn firewalls_placements_volumes_and_buckets() {
    let r = req(
        ResourceKind::Firewall,
        json!({"ingress": [{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}]}),
        &[("network", "vpc-1")],
    );
    let Desired::Firewall(f) = parse(&r).unwrap() else {
        panic!()
    };
    assert_eq!(f.spec.ingress.len(), 1);
    let r = req(ResourceKind::Placement, json!({"strategy": "pack"}), &[]);
    assert!(parse(&r).unwrap_err().message.contains("cluster or spread"));
    let r = req(ResourceKind::Placement, json!({"rdma": true}), &[]);
    let Desired::Placement(g) = parse(&r).unwrap() else {
        panic!()
    };
    assert_eq!(
        (g.spec.strategy, g.spec.rdma),
        (PlacementStrategy::Cluster, true)
    );
    let r = req(
        ResourceKind::Volume,
        json!({"size_gb": 100}),
        &[("instance", "i-1")],
    );
    let Desired::Volume(v) = parse(&r).unwrap() else {
        panic!()
    };
    assert_eq!(
        (v.spec.size_gb, v.spec.instance.as_deref()),
        (100, Some("i-1"))
    );
    // No type: the one default, which every cloud's table maps.
    assert_eq!(v.spec.volume_type, VolumeType::Ssd);
    let typed = |t: &str| {
        req(
            ResourceKind::Volume,
            json!({"size_gb": 100, "volume_type": t}),
            &[],
        )
    };
    let Desired::Volume(v) = parse(&typed("hdd")).unwrap() else {
        panic!()
    };
    assert_eq!(v.spec.volume_type, VolumeType::Hdd);
    // A cloud's own name is no neutral type: refused, never passed through.
    for cloud_name in ["standard", "gp3", "CLOUD_PREMIUM", "SSD"] {
        assert_eq!(
            parse(&typed(cloud_name)).unwrap_err().message,
            format!("volume `volume_type`: `{cloud_name}` is not one of ssd, hdd")
        );
    }
    let r = req(ResourceKind::Bucket, json!({"name": "b1"}), &[]);
    let Desired::Bucket(b) = parse(&r).unwrap() else {
        panic!("not a bucket")
    };
    // What a request without the settings means: private, encrypted.
    assert_eq!(
        b.spec,
        BucketSpec {
            name: "b1".into(),
            storage_class: StorageClass::Standard,
            versioning: false,
            encryption: true,
            lifecycle: BucketLifecycle::default(),
            public_access_blocked: true,
            force_destroy: false,
        }
    );
    let r = req(
        ResourceKind::Bucket,
        json!({"name": "b1", "storage_class": "archive", "versioning": true,
               "lifecycle": {"expire_noncurrent_after_days": 7}, "force_destroy": true}),
        &[],
    );
    let Desired::Bucket(b) = parse(&r).unwrap() else {
        panic!("not a bucket")
    };
    assert_eq!(b.spec.storage_class, StorageClass::Archive);
    assert!(b.spec.versioning && b.spec.force_destroy);
    assert_eq!(b.spec.lifecycle.expire_noncurrent_after_days, Some(7));
    assert_eq!(
        b.spec.lifecycle.to_value(),
        json!({"expire_noncurrent_after_days": 7})
    );
    let r = req(
        ResourceKind::Bucket,
        json!({"name": "b1", "storage_class": "cold"}),
        &[],
    );
    assert_eq!(
        parse(&r).unwrap_err().message,
        "bucket `storage_class`: `cold` is not one of standard, infrequent, archive"
    );
    let r = req(
        ResourceKind::Bucket,
        json!({"name": "b1", "lifecycle": {"delete_after_days": 3}}),
        &[],
    );
    assert_eq!(
        parse(&r).unwrap_err().message,
        "bucket `lifecycle`: unknown rule `delete_after_days`"
    );
    let r = req(ResourceKind::Bucket, json!({"name": ""}), &[]);
    assert_eq!(parse(&r).unwrap_err().message, "a bucket needs `name`");
}

#[test]
fn what_a_cloud_needs_is_refused_with_one_message() {
    let r = req(
        ResourceKind::Volume,
        json!({"size_gb": 100, "zone": "z1"}),
        &[],
    );
    let Desired::Volume(v) = parse(&r).unwrap() else {
        panic!("not a volume")
    };
    assert_eq!(v.needs(Cloud::Huawei, "zone", &v.spec.zone), Ok("z1"));
    let e = v
        .needs(Cloud::Tencent, "instance", &v.spec.instance)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(
        e.message,
        "volume cluster.a.node[0]: tencent needs `instance` to create it, and the request has none"
    );
}
