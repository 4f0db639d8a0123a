//! The Huawei provider against the local stand-in (gpuform-standins):
//! every request is signed and verified, jobs are polled, tags filtered.

use crate::common;

use common::{count, create, owner, request, scope, start, Net};
use gpuform_huawei::HuaweiProvider;
use gpuform_provider::{Attrs, CreateRequest, ErrorKind, Provider, ResourceKind};
use gpuform_standins::harness::{assert_running_on_demand, counted, refused, ssh};
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
    common::network(p, "llm", "t", |short| format!("gf-{short}1"), ssh()).await
}

/// An SSD data disk of `size_gb` at `address`, owned with `token` and
/// attached to `instance`.
fn volume(address: &str, token: &str, size_gb: u64, instance: &str) -> CreateRequest {
    let a = json!({"zone": "cn-north-4a", "size_gb": size_gb, "volume_type": "ssd"});
    let refs = [("instance", instance)];
    req(ResourceKind::Volume, address, token, a, &refs)
}

/// A placement group at `address` with `strategy`, owned with `token`.
fn placement(address: &str, token: &str, strategy: &str) -> CreateRequest {
    let a = json!({ "strategy": strategy });
    req(ResourceKind::Placement, address, token, a, &[])
}

fn instance_req(net: &Net, i: usize, token: &str) -> CreateRequest {
    req(
        ResourceKind::Instance,
        &format!("cluster.t.node[{i}]"),
        token,
        json!({"instance_type": "p2s.2xlarge.8", "zone": "cn-north-4a", "image": "ubuntu-22.04-cuda",
               "pricing": "on-demand", "root_gb": 200, "rdma": false, "user_data": "#!/bin/sh\necho hi\n",
               "tags": {"team": "ml"}}),
        &[("subnet", &net.subnet.id), ("firewall", &net.firewall.id)],
    )
}

#[tokio::test]
async fn lifecycle_list_read_drift_destroy() {
    let (mock, p, net) = start(network).await;
    assert_eq!(net.network.attrs["cidr"], json!("10.0.0.0/16"));
    assert_eq!(net.subnet.attrs["zone"], json!("cn-north-4a"));
    assert_eq!(
        net.firewall.attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}])
    );
    assert_eq!(
        net.network.ownership.as_ref().map(|o| o.address.as_str()),
        Some("cluster.t.network")
    );

    let mut nodes = Vec::new();
    for i in 0..3 {
        let n = create(&p, &instance_req(&net, i, &format!("gf-node{i}"))).await;
        assert_eq!(n.status, "active", "job polled to SUCCESS");
        assert_eq!(n.attrs["instance_type"], json!("p2s.2xlarge.8"));
        assert_eq!(n.attrs["image"], json!("ubuntu-22.04-cuda"));
        assert_eq!(n.attrs["pricing"], json!("on-demand"));
        assert_eq!(n.attrs["root_gb"], json!(200));
        assert_eq!(n.attrs["zone"], json!("cn-north-4a"));
        assert_eq!(n.attrs["tags"], json!({"team": "ml"}));
        assert_eq!(n.attrs["user_data"], json!("#!/bin/sh\necho hi\n"));
        // Its fixed (private) address, in the subnet 10.0.0.0/24, its own.
        let ip = n.attrs["private_ip"].as_str().expect("private_ip");
        assert!(ip.starts_with("10.0.0."), "{ip}");
        assert!(
            nodes
                .iter()
                .all(|o: &gpuform_provider::ObservedResource| o.attrs["private_ip"] != ip),
            "{ip} given twice"
        );
        assert_eq!(
            n.ownership.as_ref().map(|o| o.address.to_string()),
            Some(format!("cluster.t.node[{i}]"))
        );
        nodes.push(n);
    }
    let vol = create(
        &p,
        &volume("cluster.t.volume[0]", "gf-vol0", 500, &nodes[0].id),
    )
    .await;
    assert_eq!(vol.status, "in-use");
    assert_eq!(vol.attrs["size_gb"], json!(500));
    assert_eq!(vol.attrs["volume_type"], json!("ssd"));

    // list_owned finds everything by tags, in a handful of requests.
    let before = mock.requests();
    let owned = owner("llm").owned(&p).await;
    let list_cost = mock.requests() - before;
    let count = |k| count(&owned, k);
    assert_eq!(
        (
            count(ResourceKind::Network),
            count(ResourceKind::Subnet),
            count(ResourceKind::Firewall),
            count(ResourceKind::Instance),
            count(ResourceKind::Volume)
        ),
        (1, 1, 1, 3, 1),
        "{owned:#?}"
    );
    assert!(list_cost <= 10, "list_owned took {list_cost} requests");
    assert!(p
        .list_owned(&scope(), "someone-else")
        .await
        .expect("list")
        .is_empty());

    // read is batched: cost does not grow with the number of ids.
    let ids: Vec<String> = nodes.iter().map(|n| n.id.clone()).collect();
    let before = mock.requests();
    let read = owner("llm").read(&p, ResourceKind::Instance, &ids).await;
    assert_eq!(read.len(), 3);
    assert!(
        mock.requests() - before <= 2,
        "read of 3 servers took {} requests",
        mock.requests() - before
    );
    // Unchanged resources read back the same neutral attributes.
    for (n, r) in nodes.iter().zip(&read) {
        assert_eq!(n.attrs, r.attrs);
    }

    // Update: tags and firewall rules in place.
    let mut changes = Attrs::new();
    changes.insert("tags".into(), json!({"team": "infra", "cost": "42"}));
    let upd = p
        .update(&scope(), ResourceKind::Instance, &nodes[1].id, &changes)
        .await
        .expect("update tags");
    assert_eq!(upd.attrs["tags"], json!({"team": "infra", "cost": "42"}));
    assert!(upd.ownership.is_some(), "ownership tags kept");
    let mut changes = Attrs::new();
    changes.insert(
        "ingress".into(),
        json!([{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "10.1.0.0/16"}]),
    );
    let fw = p
        .update(&scope(), ResourceKind::Firewall, &net.firewall.id, &changes)
        .await
        .expect("update rules");
    assert_eq!(
        fw.attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "10.1.0.0/16"}])
    );

    // Drift: a server deleted behind gpuform's back is gone from list_owned.
    assert!(mock.delete_behind(&nodes[2].id));
    let owned = owner("llm").owned(&p).await;
    assert!(!owned.iter().any(|o| o.id == nodes[2].id));
    assert_eq!(
        owner("llm")
            .read(&p, ResourceKind::Instance, &[nodes[2].id.clone()])
            .await
            .len(),
        0
    );
    owner("llm")
        .delete(&p, ResourceKind::Instance, &nodes[2].id)
        .await;

    // A VPC with subnets cannot go first.
    let e = p
        .delete(&scope(), ResourceKind::Network, &net.network.id)
        .await
        .expect_err("vpc in use");
    assert_eq!(e.kind, ErrorKind::DependencyViolation, "{e}");

    // Destroy in dependency order.
    let llm = owner("llm");
    llm.delete(&p, ResourceKind::Volume, &vol.id).await;
    for n in &nodes[..2] {
        llm.delete(&p, ResourceKind::Instance, &n.id).await;
    }
    // The network twice: deleting what is missing succeeds.
    for (kind, id) in [
        (ResourceKind::Firewall, &net.firewall.id),
        (ResourceKind::Subnet, &net.subnet.id),
        (ResourceKind::Network, &net.network.id),
        (ResourceKind::Network, &net.network.id),
    ] {
        llm.delete(&p, kind, id).await;
    }
    assert!(mock.resources().is_empty(), "{:?}", mock.resources());
    assert!(owner("llm").owned(&p).await.is_empty());
}

#[tokio::test]
async fn idempotent_create_and_crash_adoption() {
    let (mock, p, net) = start(network).await;
    let a = create(&p, &instance_req(&net, 0, "gf-same-token")).await;
    // The same X-Client-Token: the same server, not a second one.
    let b = create(&p, &instance_req(&net, 0, "gf-same-token")).await;
    assert_eq!(a.id, b.id);
    assert_eq!(
        mock.resources()
            .iter()
            .filter(|r| r.kind == ResourceKind::Instance)
            .count(),
        1
    );
    // Network kinds are found again by their token-derived names.
    let again = network(&p).await;
    assert_eq!(
        (again.network.id, again.subnet.id, again.firewall.id),
        (
            net.network.id.clone(),
            net.subnet.id.clone(),
            net.firewall.id.clone()
        )
    );

    // Crash adoption: the result of a create is lost; list_owned finds it by
    // its address and token tags.
    let _ = create(&p, &instance_req(&net, 1, "gf-lost")).await;
    let owned = owner("llm").owned(&p).await;
    let found = owned.iter().find(|o| {
        o.ownership
            .as_ref()
            .map(|x| (x.address.as_str(), x.token.as_str()))
            == Some(("cluster.t.node[1]", "gf-lost"))
    });
    assert!(found.is_some(), "{owned:#?}");
    assert_eq!(
        mock.resources()
            .iter()
            .find(|r| r.kind == ResourceKind::Instance
                && r.address.as_deref() == Some("cluster.t.node[1]"))
            .map(|_| ()),
        Some(())
    );
}

#[tokio::test]
async fn error_mapping() {
    let (mock, p, net) = start(network).await;

    mock.sell_out("p2s.2xlarge.8");
    let e = refused(&p, &instance_req(&net, 0, "gf-cap"), "sold out").await;
    assert_eq!(e.kind, ErrorKind::Capacity, "{e}");
    assert!(e.code.is_some());

    let mut r = instance_req(&net, 0, "gf-quota");
    r.attrs
        .insert("instance_type".into(), json!("g6.4xlarge.4"));
    mock.set_server_quota(Some(0));
    let e = refused(&p, &r, "quota").await;
    assert_eq!(e.kind, ErrorKind::Quota, "{e}");
    assert_eq!(e.code.as_deref(), Some("Ecs.0001"));
    assert!(e.request_id.is_some());
    mock.set_server_quota(None);

    // A wrong secret: the stand-in recomputes the signature and refuses.
    let mut env = mock.env();
    for (k, v) in env.iter_mut() {
        if k == "HUAWEICLOUD_SDK_SK" {
            *v = "not-the-secret".into();
        }
    }
    let bad = HuaweiProvider::from_vars(env).expect("provider");
    let e = bad
        .list_owned(&scope(), "llm")
        .await
        .expect_err("bad signature");
    assert_eq!(e.kind, ErrorKind::Auth, "{e}");
    assert_eq!(e.code.as_deref(), Some("APIGW.0301"));
    assert!(!e.to_string().contains("not-the-secret"));

    // Placement: Huawei only has anti-affinity, so packed placement is refused.
    let packed = placement("cluster.t.placement", "gf-pl", "cluster");
    let e = refused(&p, &packed, "Huawei has no packed placement").await;
    assert_eq!(e.kind, ErrorKind::Invalid);
    let g = create(&p, &placement("cluster.t.spread", "gf-sp", "spread")).await;
    let mut r = instance_req(&net, 3, "gf-in-group");
    r.attrs
        .insert("instance_type".into(), json!("g6.4xlarge.4"));
    r.refs.insert("placement".into(), g.id.clone());
    create(&p, &r).await;

    let bucket = req(
        ResourceKind::Bucket,
        "bucket.b",
        "gf-b",
        json!({"name": "b"}),
        &[],
    );
    let e = refused(&p, &bucket, "a bucket named \"b\"").await;
    assert_eq!(e.kind, ErrorKind::Invalid);

    let mut r = instance_req(&net, 4, "gf-img");
    r.attrs.insert("image".into(), json!("windows-95"));
    assert_eq!(
        refused(&p, &r, "unknown image").await.kind,
        ErrorKind::Invalid
    );
}

/// Huawei's tag alphabet and lengths are checked before any call, on create
/// and on update, so a tag the cloud would refuse halfway through a create
/// (after the VPC, before the server) never gets that far.
#[tokio::test]
async fn tags_huawei_would_refuse_are_refused_before_any_call() {
    let (mock, p, net) = start(network).await;
    let before = mock.requests();
    for tags in [
        json!({"team": "r&d"}),
        json!({"cost:center": "42"}),
        json!({"gpuform_address": "x"}),
        json!({"k": "v".repeat(44)}),
    ] {
        let mut r = instance_req(&net, 0, "gf-badtag");
        r.attrs.insert("tags".into(), tags.clone());
        let e = refused(&p, &r, "refused").await;
        assert_eq!(e.kind, ErrorKind::Invalid, "{tags}: {e}");
        let mut changes = Attrs::new();
        changes.insert("tags".into(), tags.clone());
        let e = p
            .update(&scope(), ResourceKind::Network, &net.network.id, &changes)
            .await
            .expect_err("refused");
        assert_eq!(e.kind, ErrorKind::Invalid, "{tags}: {e}");
    }
    assert_eq!(mock.requests(), before, "no call was made");
}

/// `gpuform audit`'s inventory: every server (of every project, no tag
/// filter) and the unattached data disks, one page of each; and, for
/// `gpuform import`, what each server is in (one page of subnets).
#[tokio::test]
async fn inventory_lists_every_server_and_unattached_disk() {
    use gpuform_provider::InventoryApi;
    let (mock, p, net) = start(network).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            create(&p, &instance_req(&net, i, &format!("gf-inv{i}")))
                .await
                .id,
        );
    }
    let theirs = request(
        "other",
        ResourceKind::Instance,
        "cluster.o.node[0]",
        "gf-other0".into(),
        json!({"instance_type": "p2s.2xlarge.8", "zone": "cn-north-4a", "image": "ubuntu-22.04-cuda",
               "pricing": "on-demand", "root_gb": 100, "rdma": false}),
        &[("subnet", &net.subnet.id), ("firewall", &net.firewall.id)],
    );
    let theirs = create(&p, &theirs).await.id;
    let loose = create(&p, &volume("cluster.t.volume[9]", "gf-vol9", 30, &ids[2]))
        .await
        .id;
    // Volumes are made attached; this one is detached afterwards.
    let detach = json!({"attached_to": null});
    let llm = owner("llm");
    let detached = llm.update(&p, ResourceKind::Volume, &loose, detach).await;
    detached.expect("detach");
    let (inv, calls) = counted(&mock, p.inventory(&scope())).await;
    let inv = inv.unwrap();
    assert!(calls <= 3, "inventory took {calls} calls");
    assert_eq!(inv.instances.len(), 4);
    assert_running_on_demand(&inv, &theirs, "other", "p2s.2xlarge.8");
    let mine = inv.instances.iter().find(|i| i.id == ids[0]).unwrap();
    assert_eq!(mine.project(), Some("llm"));
    assert_eq!(mine.disk_gb, Some(200));
    assert_eq!(mine.uses.get("subnet"), Some(&net.subnet.id));
    assert_eq!(mine.firewalls, vec![net.firewall.id.clone()]);
    let vols: Vec<&str> = inv.volumes.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(
        vols,
        vec![loose.as_str()],
        "system disks are not data volumes"
    );
}
