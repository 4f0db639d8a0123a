//! The sandbox as a provider: resource semantics, catalog validation,
//! faults, and the durable inventory.

mod common;

use common::*;
use gpuform_catalog::Catalog;
use gpuform_provider::{Cloud, ErrorKind, OwnershipTags, ResourceKind};
use gpuform_sandbox::{Faults, SandboxCloud, SandboxError, INVENTORY_FILE};
use serde_json::json;
use std::collections::HashSet;
use std::io::Write;

fn open(dir: &std::path::Path) -> std::sync::Arc<SandboxCloud> {
    SandboxCloud::open(dir, Faults::default()).expect("open sandbox")
}

#[tokio::test]
async fn idempotent_create_by_token() {
    let dir = temp_dir("idem");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    assert_eq!(p.label(), "sandbox(aws)");
    let o = offer(Cloud::Aws);
    let s = stack(&*p, &o, "proj", "c").await;
    let before = sb.list_all().len();
    let again = p
        .create(&instance_req(
            &o,
            &s.subnet,
            &s.firewall,
            "proj",
            "c.node[0]",
        ))
        .await
        .expect("same token");
    assert_eq!(again.id, s.instance);
    assert_eq!(
        sb.list_all().len(),
        before,
        "a retried create makes nothing new"
    );
    assert_eq!(again.status, "running");
    assert_eq!(again.attrs["instance_type"], json!(o.instance_type));
    assert_eq!(
        again.ownership.as_ref().map(|t| t.token.as_str()),
        Some("tok-proj-c.node[0]")
    );

    // A new token makes a new instance.
    let other = p
        .create(&instance_req(
            &o,
            &s.subnet,
            &s.firewall,
            "proj",
            "c.node[1]",
        ))
        .await
        .expect("new token");
    assert_ne!(other.id, s.instance);
    assert!(s.instance.starts_with("i-") && s.network.starts_with("vpc-"));
    assert!(s.subnet.starts_with("subnet-") && s.firewall.starts_with("sg-"));

    // The same token for another kind is a mismatch, as on AWS.
    let mut req = instance_req(&o, &s.subnet, &s.firewall, "proj", "c.node[0]");
    req.kind = ResourceKind::Placement;
    let e = p.create(&req).await.expect_err("mismatch");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.code.as_deref(), Some("IdempotentParameterMismatch"));
}

#[tokio::test]
async fn tags_and_list_owned_by_project_and_region() {
    let dir = temp_dir("owned");
    let sb = open(&dir);
    let aws = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let a = stack(&*aws, &o, "alpha", "a").await;
    let _b = stack(&*aws, &o, "beta", "b").await;

    let owned = aws
        .list_owned(&scope(&o.region), "alpha")
        .await
        .expect("list");
    let ids: HashSet<_> = owned.iter().map(|r| r.id.clone()).collect();
    assert_eq!(
        ids,
        HashSet::from([a.network, a.subnet, a.firewall, a.instance.clone()])
    );
    let inst = owned
        .iter()
        .find(|r| r.id == a.instance)
        .expect("instance listed");
    assert_eq!(
        inst.ownership.as_ref().map(|t| t.address.as_str()),
        Some("a.node[0]")
    );

    // Another region of the same cloud, and another mirrored cloud, see nothing.
    let cat = Catalog::builtin();
    if let Some(other) = cat
        .regions(Cloud::Aws)
        .into_iter()
        .find(|r| r.name != o.region)
    {
        assert!(aws
            .list_owned(&scope(&other.name), "alpha")
            .await
            .expect("list")
            .is_empty());
    }
    let ali = sb.provider(Cloud::Alibaba);
    assert!(ali
        .list_owned(&scope(&o.region), "alpha")
        .await
        .expect("list")
        .is_empty());

    // Tags: ownership tags plus the user's.
    let all = sb.list_all();
    let r = all
        .iter()
        .find(|r| r.id == a.instance)
        .expect("in list_all");
    assert_eq!(
        r.tags.get(OwnershipTags::PROJECT).map(String::as_str),
        Some("alpha")
    );
    assert_eq!(
        r.tags.get(OwnershipTags::ADDRESS).map(String::as_str),
        Some("a.node[0]")
    );
    assert_eq!(
        r.tags.get(OwnershipTags::LINEAGE).map(String::as_str),
        Some("lineage-1")
    );
    assert_eq!(r.tags.get("team").map(String::as_str), Some("research"));
    assert_eq!(r.token, "tok-alpha-a.node[0]");
    let sorted: Vec<_> = all.iter().map(|r| r.id.clone()).collect();
    let mut expect = sorted.clone();
    expect.sort();
    assert_eq!(sorted, expect, "list_all is sorted by id");
}

#[tokio::test]
async fn dependency_violation_on_delete() {
    let dir = temp_dir("deps");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let s = stack(&*p, &o, "proj", "c").await;
    let sc = scope(&o.region);
    let e = p
        .delete(&sc, ResourceKind::Network, &s.network)
        .await
        .expect_err("vpc in use");
    assert_eq!(e.kind, ErrorKind::DependencyViolation);
    assert_eq!(e.code.as_deref(), Some("DependencyViolation"));
    let e = p
        .delete(&sc, ResourceKind::Subnet, &s.subnet)
        .await
        .expect_err("subnet in use");
    assert_eq!(e.kind, ErrorKind::DependencyViolation);
    let e = p
        .delete(&sc, ResourceKind::Firewall, &s.firewall)
        .await
        .expect_err("sg in use");
    assert_eq!(e.kind, ErrorKind::DependencyViolation);

    // Volumes do not block their instance (ending an instance detaches them).
    let vol = p
        .create(&request(
            ResourceKind::Volume,
            &o.region,
            json!({"size_gb": 100, "volume_type": "gp3"}),
            &[("instance", &s.instance)],
            ownership("proj", "c.vol"),
        ))
        .await
        .expect("volume");
    assert!(vol.id.starts_with("vol-"));

    // In order, everything goes; deleting again is fine.
    for (kind, id) in [
        (ResourceKind::Instance, &s.instance),
        (ResourceKind::Subnet, &s.subnet),
        (ResourceKind::Firewall, &s.firewall),
        (ResourceKind::Network, &s.network),
        (ResourceKind::Volume, &vol.id),
    ] {
        p.delete(&sc, kind, id).await.expect("delete");
        p.delete(&sc, kind, id)
            .await
            .expect("delete again is idempotent");
    }
    assert!(sb.list_all().is_empty());
    let read = p
        .read(
            &sc,
            ResourceKind::Instance,
            std::slice::from_ref(&s.instance),
        )
        .await
        .expect("read");
    assert!(read.is_empty(), "read never returns what is gone");
}

#[tokio::test]
async fn refs_must_exist() {
    let dir = temp_dir("refs");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let e = p
        .create(&request(
            ResourceKind::Subnet,
            &o.region,
            json!({"zone": o.zone}),
            &[("network", "vpc-0000000000000000")],
            ownership("p", "s"),
        ))
        .await
        .expect_err("no such vpc");
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert_eq!(e.code.as_deref(), Some("InvalidVpcID.NotFound"));
    let e = p
        .create(&request(
            ResourceKind::Subnet,
            &o.region,
            json!({"zone": o.zone}),
            &[],
            ownership("p", "s"),
        ))
        .await
        .expect_err("no network ref");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("`network` ref"), "{e}");
    let s = stack(&*p, &o, "p", "x").await;
    // An instance in a zone other than its subnet's.
    let mut req = instance_req(&o, &s.subnet, &s.firewall, "p", "x.node[9]");
    req.attrs.insert("zone".into(), json!(o.other_zone));
    let e = p.create(&req).await.expect_err("zone mismatch");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains(&o.other_zone) && e.message.contains(&o.zone),
        "{e}"
    );
    // A ref of the wrong kind.
    let req = instance_req(&o, &s.firewall, &s.firewall, "p", "x.node[8]");
    let e = p.create(&req).await.expect_err("wrong kind");
    assert_eq!(e.kind, ErrorKind::Invalid);
    // A volume needs its instance.
    let e = p
        .create(&request(
            ResourceKind::Volume,
            &o.region,
            json!({"size_gb": 10}),
            &[("instance", "i-00000000000000000")],
            ownership("p", "v"),
        ))
        .await
        .expect_err("no instance");
    assert_eq!(e.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn catalog_validation_errors() {
    let dir = temp_dir("catalog");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let e = p
        .create(&request(
            ResourceKind::Network,
            "mars-north-1",
            json!({}),
            &[],
            ownership("p", "n"),
        ))
        .await
        .expect_err("unknown region");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("mars-north-1") && e.message.contains(&o.region),
        "{e}"
    );

    let net = p
        .create(&request(
            ResourceKind::Network,
            &o.region,
            json!({"cidr": "10.1.0.0/16"}),
            &[],
            ownership("p", "n"),
        ))
        .await
        .expect("network")
        .id;
    let e = p
        .create(&request(
            ResourceKind::Subnet,
            &o.region,
            json!({"zone": "atlantis-1z"}),
            &[("network", &net)],
            ownership("p", "s"),
        ))
        .await
        .expect_err("bad zone");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("atlantis-1z") && e.message.contains(&o.zone),
        "{e}"
    );
    let e = p
        .create(&request(
            ResourceKind::Subnet,
            &o.region,
            json!({"zone": o.zone, "cidr": "10.2.0.0/24"}),
            &[("network", &net)],
            ownership("p", "s"),
        ))
        .await
        .expect_err("cidr outside the vpc");
    assert!(e.message.contains("10.1.0.0/16"), "{e}");
    let e = p
        .create(&request(
            ResourceKind::Network,
            &o.region,
            json!({"cidr": "10.1.0.1/16"}),
            &[],
            ownership("p", "n2"),
        ))
        .await
        .expect_err("host bits");
    assert_eq!(e.kind, ErrorKind::Invalid);

    let s = stack(&*p, &o, "p", "v").await;
    let mut req = instance_req(&o, &s.subnet, &s.firewall, "p", "v.node[1]");
    req.attrs
        .insert("instance_type".into(), json!("p4d.24xlarg"));
    let e = p.create(&req).await.expect_err("unknown type");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.code.as_deref(), Some("InvalidInstanceType"));
    assert!(e.message.contains("p4d.24xlarg"), "{e}");

    // A type the catalog knows but does not offer in this region, if any.
    let cat = Catalog::builtin();
    if let Some(t) = cat
        .instance_types(Cloud::Aws)
        .into_iter()
        .find(|t| cat.offering(Cloud::Aws, &o.region, &t.name).is_none())
    {
        let mut req = instance_req(&o, &s.subnet, &s.firewall, "p", "v.node[2]");
        req.attrs.insert("instance_type".into(), json!(t.name));
        let e = p.create(&req).await.expect_err("not offered");
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert_eq!(e.code.as_deref(), Some("Unsupported"));
        assert!(
            e.message.contains(&t.name) && e.message.contains(&o.region),
            "{e}"
        );
    }

    let mut req = instance_req(&o, &s.subnet, &s.firewall, "p", "v.node[3]");
    req.attrs.remove("instance_type");
    let e = p.create(&req).await.expect_err("missing type");
    assert_eq!(e.code.as_deref(), Some("MissingParameter"));
    assert!(sb
        .list_all()
        .iter()
        .all(|r| r.kind != ResourceKind::Instance || r.id == s.instance));
}

#[tokio::test]
async fn other_clouds_have_their_own_ids_and_catalog() {
    let dir = temp_dir("clouds");
    let sb = open(&dir);
    for (cloud, net, sub, inst) in [
        (Cloud::Alibaba, "vpc-", "vsw-", "i-"),
        (Cloud::Tencent, "vpc-", "subnet-", "ins-"),
        (Cloud::Huawei, "", "", ""),
    ] {
        let p = sb.provider(cloud);
        let o = offer(cloud);
        let s = stack(&*p, &o, "multi", cloud.as_str()).await;
        assert!(
            s.network.starts_with(net) && s.subnet.starts_with(sub) && s.instance.starts_with(inst)
        );
        if cloud == Cloud::Huawei {
            assert_eq!(s.instance.len(), 36, "{}", s.instance);
        }
        // The aws catalog's types are not this cloud's.
        let mut req = instance_req(&o, &s.subnet, &s.firewall, "multi", "x");
        req.attrs
            .insert("instance_type".into(), json!("p4d.24xlarge"));
        let e = p.create(&req).await.expect_err("aws type on another cloud");
        assert_eq!(e.kind, ErrorKind::Invalid, "{cloud}: {e}");
    }
}

#[tokio::test]
async fn update_changes_only_updatable_attrs() {
    let dir = temp_dir("update");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let s = stack(&*p, &o, "p", "u").await;
    let sc = scope(&o.region);
    let mut changes = gpuform_provider::Attrs::new();
    changes.insert("tags".into(), json!({"team": "infra"}));
    let r = p
        .update(&sc, ResourceKind::Instance, &s.instance, &changes)
        .await
        .expect("tags");
    assert_eq!(r.attrs["tags"], json!({"team": "infra"}));
    let tags = &sb
        .list_all()
        .into_iter()
        .find(|r| r.id == s.instance)
        .expect("listed")
        .tags;
    assert_eq!(tags.get("team").map(String::as_str), Some("infra"));

    let mut changes = gpuform_provider::Attrs::new();
    changes.insert("instance_type".into(), json!("g5.xlarge"));
    let e = p
        .update(&sc, ResourceKind::Instance, &s.instance, &changes)
        .await
        .expect_err("not updatable");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("instance_type") && e.message.contains("tags"),
        "{e}"
    );

    let e = p
        .update(&sc, ResourceKind::Instance, "i-00000000000000000", &changes)
        .await
        .expect_err("gone");
    assert_eq!(e.kind, ErrorKind::NotFound);

    let mut ingress = gpuform_provider::Attrs::new();
    ingress.insert("ingress".into(), json!([]));
    p.update(&sc, ResourceKind::Firewall, &s.firewall, &ingress)
        .await
        .expect("ingress");
    let read = p
        .read(
            &sc,
            ResourceKind::Firewall,
            std::slice::from_ref(&s.firewall),
        )
        .await
        .expect("read");
    assert_eq!(read[0].attrs["ingress"], json!([]));
}

#[tokio::test]
async fn injected_capacity_throttle_and_failure() {
    let o = offer(Cloud::Aws);
    // Capacity: one type in one zone.
    let dir = temp_dir("capacity");
    let faults =
        Faults::parse(&format!("capacity={}@{}", o.instance_type, o.zone)).expect("faults");
    let sb = SandboxCloud::open(&dir, faults).expect("open");
    let p = sb.provider(Cloud::Aws);
    let net = p
        .create(&request(
            ResourceKind::Network,
            &o.region,
            json!({}),
            &[],
            ownership("p", "n"),
        ))
        .await
        .expect("network")
        .id;
    let sg = p
        .create(&request(
            ResourceKind::Firewall,
            &o.region,
            json!({}),
            &[("network", &net)],
            ownership("p", "f"),
        ))
        .await
        .expect("firewall")
        .id;
    let mut subnets = vec![];
    for (i, z) in [&o.zone, &o.other_zone].into_iter().enumerate() {
        subnets.push(
            p.create(&request(
                ResourceKind::Subnet,
                &o.region,
                json!({"zone": z}),
                &[("network", &net)],
                ownership("p", &format!("s{i}")),
            ))
            .await
            .expect("subnet")
            .id,
        );
    }
    let e = p
        .create(&instance_req(&o, &subnets[0], &sg, "p", "n0"))
        .await
        .expect_err("no capacity");
    assert_eq!(e.kind, ErrorKind::Capacity);
    assert_eq!(e.code.as_deref(), Some("InsufficientInstanceCapacity"));
    assert!(
        e.message.contains(&o.instance_type) && e.message.contains(&o.zone),
        "{e}"
    );
    let mut req = instance_req(&o, &subnets[1], &sg, "p", "n0");
    req.attrs.insert("zone".into(), json!(o.other_zone));
    p.create(&req).await.expect("the other zone has capacity");
    drop((p, sb));

    // Throttle and fail: errors before any effect.
    for (spec, kind, code) in [
        ("throttle=1", ErrorKind::Throttled, "RequestLimitExceeded"),
        ("fail=1", ErrorKind::Transient, "InternalError"),
    ] {
        let dir = temp_dir("flaky");
        let sb = SandboxCloud::open(&dir, Faults::parse(spec).expect("faults")).expect("open");
        let p = sb.provider(Cloud::Aws);
        let e = p
            .create(&request(
                ResourceKind::Network,
                &o.region,
                json!({}),
                &[],
                ownership("p", "n"),
            ))
            .await
            .expect_err(spec);
        assert_eq!(e.kind, kind, "{spec}");
        assert_eq!(e.code.as_deref(), Some(code), "{spec}");
        assert!(e.request_id.is_some());
        assert!(sb.list_all().is_empty(), "{spec}: no effect");
        assert_eq!(sb.api_calls(), 1);
    }
}

async fn throttle_pattern(seed: u64) -> Vec<bool> {
    let dir = temp_dir("seeded");
    let sb = SandboxCloud::open(
        &dir,
        Faults::parse(&format!("throttle=0.5,seed={seed}")).expect("faults"),
    )
    .expect("open");
    let p = sb.provider(Cloud::Aws);
    let region = offer(Cloud::Aws).region;
    let mut out = vec![];
    for i in 0..40 {
        let r = p
            .create(&request(
                ResourceKind::Network,
                &region,
                json!({}),
                &[],
                ownership("p", &format!("n{i}")),
            ))
            .await;
        out.push(r.is_ok());
    }
    out
}

#[tokio::test]
async fn randomness_is_deterministic_per_seed() {
    let a = throttle_pattern(7).await;
    assert_eq!(a, throttle_pattern(7).await);
    assert!(a.contains(&true) && a.contains(&false), "{a:?}");
    assert_ne!(a, throttle_pattern(8).await);
}

#[tokio::test]
async fn gpu_quota_per_region() {
    let o = offer(Cloud::Aws);
    let dir = temp_dir("quota");
    let sb = SandboxCloud::open(
        &dir,
        Faults::parse(&format!("quota_gpus={}", o.gpus)).expect("faults"),
    )
    .expect("open");
    let p = sb.provider(Cloud::Aws);
    let s = stack(&*p, &o, "q", "q").await;
    let e = p
        .create(&instance_req(&o, &s.subnet, &s.firewall, "q", "q.node[1]"))
        .await
        .expect_err("quota");
    assert_eq!(e.kind, ErrorKind::Quota);
    assert!(
        e.message.contains("quota") && e.message.contains(&o.region),
        "{e}"
    );
    // Freeing the GPUs frees the quota.
    p.delete(&scope(&o.region), ResourceKind::Instance, &s.instance)
        .await
        .expect("delete");
    p.create(&instance_req(&o, &s.subnet, &s.firewall, "q", "q.node[1]"))
        .await
        .expect("fits again");
}

#[tokio::test]
async fn rate_limit_is_advertised_and_enforced() {
    let dir = temp_dir("rate");
    let sb = SandboxCloud::open(&dir, Faults::parse("rate=5").expect("faults")).expect("open");
    let p = sb.provider(Cloud::Aws);
    assert_eq!(p.rate_limit().per_second, 5.0);
    let region = offer(Cloud::Aws).region;
    let mut throttled = 0;
    for i in 0..50 {
        if let Err(e) = p
            .create(&request(
                ResourceKind::Network,
                &region,
                json!({}),
                &[],
                ownership("p", &format!("n{i}")),
            ))
            .await
        {
            assert_eq!(e.kind, ErrorKind::Throttled);
            throttled += 1;
        }
    }
    // The burst (one second's worth) passes; far more than 5 calls a second do not.
    assert!(throttled >= 1, "{throttled} of 50 throttled");
}

#[tokio::test]
async fn pages_count_as_calls() {
    let dir = temp_dir("pages");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let region = offer(Cloud::Aws).region;
    let mut ids = vec![];
    for i in 0..2500 {
        ids.push(
            p.create(&request(
                ResourceKind::Placement,
                &region,
                json!({"strategy": "cluster"}),
                &[],
                ownership("p", &format!("pg{i}")),
            ))
            .await
            .expect("create")
            .id,
        );
    }
    assert_eq!(sb.api_calls(), 2500);
    let read = p
        .read(&scope(&region), ResourceKind::Placement, &ids)
        .await
        .expect("read");
    assert_eq!(read.len(), 2500);
    assert_eq!(sb.api_calls(), 2503, "3 pages");
    let owned = p.list_owned(&scope(&region), "p").await.expect("list");
    assert_eq!(owned.len(), 2500);
    assert_eq!(sb.api_calls(), 2506, "3 pages");
    p.list_owned(&scope(&region), "nobody").await.expect("list");
    assert_eq!(sb.api_calls(), 2507, "an empty list is one call");
}

#[tokio::test]
async fn concurrent_creates_from_many_tasks() {
    let dir = temp_dir("concurrent");
    let sb = open(&dir);
    let region = offer(Cloud::Aws).region;
    let mut tasks = vec![];
    for t in 0..16 {
        let p = sb.provider(Cloud::Aws);
        let region = region.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = vec![];
            for i in 0..50 {
                let req = request(
                    ResourceKind::Network,
                    &region,
                    json!({}),
                    &[],
                    ownership("p", &format!("n{t}.{i}")),
                );
                ids.push(p.create(&req).await.expect("create").id);
            }
            ids
        }));
    }
    let mut all = HashSet::new();
    for t in tasks {
        for id in t.await.expect("task") {
            assert!(all.insert(id));
        }
    }
    assert_eq!(all.len(), 800);
    drop(sb);
    assert_eq!(open(&dir).list_all().len(), 800);
}

#[tokio::test]
async fn replay_after_reopen() {
    let dir = temp_dir("replay");
    let o = offer(Cloud::Aws);
    let (s, before) = {
        let sb = open(&dir);
        let p = sb.provider(Cloud::Aws);
        let s = stack(&*p, &o, "p", "r").await;
        let mut changes = gpuform_provider::Attrs::new();
        changes.insert("tags".into(), json!({"v": "2"}));
        p.update(
            &scope(&o.region),
            ResourceKind::Instance,
            &s.instance,
            &changes,
        )
        .await
        .expect("update");
        let extra = stack(&*p, &o, "p", "gone").await;
        p.delete(&scope(&o.region), ResourceKind::Instance, &extra.instance)
            .await
            .expect("delete");
        (s, sb.list_all())
    };
    let sb = open(&dir);
    assert_eq!(sb.list_all(), before);
    let p = sb.provider(Cloud::Aws);
    // Dependencies were rebuilt.
    let e = p
        .delete(&scope(&o.region), ResourceKind::Subnet, &s.subnet)
        .await
        .expect_err("in use");
    assert_eq!(e.kind, ErrorKind::DependencyViolation);
    // Tokens were rebuilt.
    let again = p
        .create(&instance_req(&o, &s.subnet, &s.firewall, "p", "r.node[0]"))
        .await
        .expect("same");
    assert_eq!(again.id, s.instance);
    assert_eq!(again.attrs["tags"], json!({"v": "2"}));
    // New ids do not collide with old ones.
    let n = stack(&*p, &o, "p", "new").await;
    let ids: HashSet<_> = sb.list_all().into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), before.len() + 4);
    assert!(!before.iter().any(|r| r.id == n.instance));
}

#[tokio::test]
async fn torn_last_line_is_ignored() {
    let dir = temp_dir("torn");
    let region = offer(Cloud::Aws).region;
    let before = {
        let sb = open(&dir);
        let p = sb.provider(Cloud::Aws);
        for i in 0..3 {
            p.create(&request(
                ResourceKind::Network,
                &region,
                json!({}),
                &[],
                ownership("p", &format!("n{i}")),
            ))
            .await
            .expect("create");
        }
        sb.list_all()
    };
    let log = dir.join(INVENTORY_FILE);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("log");
    f.write_all(br#"{"op":"create","seq":99,"cloud":"aws","kind":"net"#)
        .expect("tear");
    drop(f);
    {
        let sb = open(&dir);
        assert_eq!(sb.list_all(), before);
        // The next append starts on a line of its own.
        sb.provider(Cloud::Aws)
            .create(&request(
                ResourceKind::Network,
                &region,
                json!({}),
                &[],
                ownership("p", "n3"),
            ))
            .await
            .expect("create");
    }
    let sb = open(&dir);
    assert_eq!(sb.list_all().len(), 4);
}

#[tokio::test]
async fn corrupt_line_is_reported_with_its_number() {
    let dir = temp_dir("corrupt");
    let region = offer(Cloud::Aws).region;
    {
        let sb = open(&dir);
        let p = sb.provider(Cloud::Aws);
        for i in 0..3 {
            p.create(&request(
                ResourceKind::Network,
                &region,
                json!({}),
                &[],
                ownership("p", &format!("n{i}")),
            ))
            .await
            .expect("create");
        }
    }
    let log = dir.join(INVENTORY_FILE);
    let text = std::fs::read_to_string(&log).expect("log");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{not json";
    std::fs::write(&log, lines.join("\n") + "\n").expect("write");
    match SandboxCloud::open(&dir, Faults::default()) {
        Err(e @ SandboxError::Corrupt { line: 3, .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("line 3") && msg.contains(INVENTORY_FILE),
                "{msg}"
            );
        }
        other => panic!("expected a corrupt-inventory error on line 3, got {other:?}"),
    }
    // The way out: reset without opening; ids are still not reused.
    SandboxCloud::reset_dir(&dir).expect("reset a corrupt inventory");
    let sb = open(&dir);
    assert!(sb.list_all().is_empty());
    let old_ids: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["id"].clone())
        .collect();
    let id = sb
        .provider(Cloud::Aws)
        .create(&request(
            ResourceKind::Network,
            &region,
            json!({}),
            &[],
            ownership("p", "n0"),
        ))
        .await
        .expect("create")
        .id;
    assert!(!old_ids.contains(&json!(id)), "{id} reused");
}

#[tokio::test]
async fn whole_last_record_without_newline_is_kept() {
    let dir = temp_dir("nonewline");
    let region = offer(Cloud::Aws).region;
    {
        let sb = open(&dir);
        let p = sb.provider(Cloud::Aws);
        for i in 0..2 {
            p.create(&request(
                ResourceKind::Network,
                &region,
                json!({}),
                &[],
                ownership("p", &format!("n{i}")),
            ))
            .await
            .expect("create");
        }
    }
    let log = dir.join(INVENTORY_FILE);
    let text = std::fs::read_to_string(&log).expect("log");
    std::fs::write(&log, text.trim_end_matches('\n')).expect("write");
    {
        let sb = open(&dir);
        assert_eq!(sb.list_all().len(), 2);
        sb.provider(Cloud::Aws)
            .create(&request(
                ResourceKind::Network,
                &region,
                json!({}),
                &[],
                ownership("p", "n2"),
            ))
            .await
            .expect("create");
    }
    assert_eq!(open(&dir).list_all().len(), 3);
}

#[tokio::test]
async fn compaction_on_open() {
    let dir = temp_dir("compact");
    let region = offer(Cloud::Aws).region;
    let log = dir.join(INVENTORY_FILE);
    let (kept, max_id) = {
        let sb = open(&dir);
        let p = sb.provider(Cloud::Aws);
        let sc = scope(&region);
        let mut last = String::new();
        for i in 0..1500 {
            let id = p
                .create(&request(
                    ResourceKind::Network,
                    &region,
                    json!({}),
                    &[],
                    ownership("p", &format!("n{i}")),
                ))
                .await
                .expect("create")
                .id;
            if i % 100 != 0 {
                p.delete(&sc, ResourceKind::Network, &id)
                    .await
                    .expect("delete");
            }
            last = id;
        }
        (sb.list_all(), last)
    };
    let lines_before = std::fs::read_to_string(&log).expect("log").lines().count();
    assert_eq!(lines_before, 1 + 1500 + 1485);
    let sb = open(&dir);
    let lines_after = std::fs::read_to_string(&log).expect("log").lines().count();
    assert_eq!(
        lines_after,
        1 + kept.len(),
        "compacted to header + live resources"
    );
    assert_eq!(sb.list_all(), kept);
    // The id sequence survives compaction.
    let p = sb.provider(Cloud::Aws);
    let id = p
        .create(&request(
            ResourceKind::Network,
            &region,
            json!({}),
            &[],
            ownership("p", "after"),
        ))
        .await
        .expect("create")
        .id;
    assert_ne!(id, max_id);
    assert!(!kept.iter().any(|r| r.id == id));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[tokio::test]
async fn behind_the_back_operations() {
    let dir = temp_dir("behind");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let s = stack(&*p, &o, "p", "b").await;
    let sc = scope(&o.region);

    // Drift: an attribute changed in the console.
    sb.set_attr_behind(&s.instance, "root_gb", json!(1000))
        .expect("set");
    let r = p
        .read(
            &sc,
            ResourceKind::Instance,
            std::slice::from_ref(&s.instance),
        )
        .await
        .expect("read");
    assert_eq!(r[0].attrs["root_gb"], json!(1000));
    sb.set_attr_behind("b.node[0]", "root_gb", serde_json::Value::Null)
        .expect("by address");
    let r = p
        .read(
            &sc,
            ResourceKind::Instance,
            std::slice::from_ref(&s.instance),
        )
        .await
        .expect("read");
    assert!(!r[0].attrs.contains_key("root_gb"));

    // Dependencies hold behind the back too.
    assert!(matches!(
        sb.delete_behind(&s.network),
        Err(SandboxError::DependencyViolation(_))
    ));
    let gone = sb.delete_behind("b.node[0]").expect("delete by address");
    assert_eq!(gone.id, s.instance);
    assert!(p
        .read(
            &sc,
            ResourceKind::Instance,
            std::slice::from_ref(&s.instance)
        )
        .await
        .expect("read")
        .is_empty());
    assert!(matches!(
        sb.delete_behind("no-such-thing"),
        Err(SandboxError::NotFound(_))
    ));

    // The same address in two projects is ambiguous.
    let _ = stack(&*p, &o, "q", "b").await;
    assert!(matches!(
        sb.delete_behind("b.network"),
        Err(SandboxError::Ambiguous { .. })
    ));

    // Survives a reopen.
    let n = sb.list_all().len();
    drop((p, sb));
    assert_eq!(open(&dir).list_all().len(), n);
}

#[tokio::test]
async fn changes_by_another_process_are_seen() {
    let dir = temp_dir("external");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let region = offer(Cloud::Aws).region;
    let id = p
        .create(&request(
            ResourceKind::Network,
            &region,
            json!({}),
            &[],
            ownership("p", "n"),
        ))
        .await
        .expect("create")
        .id;
    // What a `gpuform sandbox delete` in another process appends.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(INVENTORY_FILE))
        .expect("log");
    writeln!(f, r#"{{"op":"delete","cloud":"aws","id":"{id}"}}"#).expect("append");
    drop(f);
    assert!(p
        .read(&scope(&region), ResourceKind::Network, &[id])
        .await
        .expect("read")
        .is_empty());
}

#[tokio::test]
async fn reset_empties_but_never_reuses_ids() {
    let dir = temp_dir("reset");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let region = offer(Cloud::Aws).region;
    let mk = |n: &str| {
        request(
            ResourceKind::Network,
            &region,
            json!({}),
            &[],
            ownership("p", n),
        )
    };
    let a = p.create(&mk("a")).await.expect("create").id;
    sb.reset().expect("reset");
    assert!(sb.list_all().is_empty());
    let b = p.create(&mk("a")).await.expect("create after reset").id;
    assert_ne!(a, b);
    drop((p, sb));
    let sb = open(&dir);
    assert_eq!(sb.list_all().len(), 1);
}

#[test]
fn open_twice_in_a_process() {
    let dir = temp_dir("twice");
    let a = open(&dir);
    let b = open(&dir);
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let e = SandboxCloud::open(&dir, Faults::parse("seed=3").expect("faults"))
        .expect_err("other faults");
    assert!(matches!(e, SandboxError::AlreadyOpen { .. }));
}
