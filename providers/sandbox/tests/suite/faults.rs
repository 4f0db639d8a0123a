//! Fault injection (capacity, throttling, failures, quota, rate) and how
//! calls are counted (pages, concurrency).

use crate::common;

use common::*;
use gpuform_provider::{Cloud, ErrorKind, ResourceKind};
use serde_json::json;
use std::collections::HashSet;

#[tokio::test]
async fn injected_capacity_throttle_and_failure() {
    let o = offer(Cloud::Aws);
    // Capacity: one type in one zone.
    let dir = temp_dir("capacity");
    let sb = open_with(&dir, &format!("capacity={}@{}", o.instance_type, o.zone));
    let p = sb.provider(Cloud::Aws);
    let net = create_id(&*p, &network_req(&o.region, "p", "n")).await;
    let sg = create_id(
        &*p,
        &request(
            ResourceKind::Firewall,
            &o.region,
            json!({}),
            &[("network", &net)],
            ownership("p", "f"),
        ),
    )
    .await;
    let mut subnets = vec![];
    for (i, (z, cidr)) in [(&o.zone, "10.0.1.0/24"), (&o.other_zone, "10.0.2.0/24")]
        .into_iter()
        .enumerate()
    {
        let req = subnet_req(&o.region, (z, cidr), &net, ownership("p", &format!("s{i}")));
        subnets.push(create_id(&*p, &req).await);
    }
    let e = p
        .create(&instance_req(&o, &subnets[0], &sg, "p", "n0"))
        .await
        .expect_err("no capacity");
    assert_eq!(e.kind, ErrorKind::Capacity);
    assert_eq!(e.code.as_deref(), Some("InsufficientInstanceCapacity"));
    says(&e, &[&o.instance_type, &o.zone]);
    let mut req = instance_req(&o, &subnets[1], &sg, "p", "n0");
    req.attrs.insert("zone".into(), json!(o.other_zone));
    create(&*p, &req).await;
    drop((p, sb));

    // Throttle and fail: errors before any effect.
    for (spec, kind, code) in [
        ("throttle=1", ErrorKind::Throttled, "RequestLimitExceeded"),
        ("fail=1", ErrorKind::Transient, "InternalError"),
    ] {
        let sb = open_with(&temp_dir("flaky"), spec);
        let p = sb.provider(Cloud::Aws);
        let e = p
            .create(&network_req(&o.region, "p", "n"))
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
    let sb = open_with(&temp_dir("seeded"), &format!("throttle=0.5,seed={seed}"));
    let p = sb.provider(Cloud::Aws);
    let region = offer(Cloud::Aws).region;
    let mut out = vec![];
    for i in 0..40 {
        let r = p.create(&network_req(&region, "p", &format!("n{i}"))).await;
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
    let sb = open_with(&temp_dir("quota"), &format!("quota_gpus={}", o.gpus));
    let p = sb.provider(Cloud::Aws);
    let s = stack(&*p, &o, "q", "q").await;
    let e = p
        .create(&instance_req(&o, &s.subnet, &s.firewall, "q", "q.node[1]"))
        .await
        .expect_err("quota");
    assert_eq!(e.kind, ErrorKind::Quota);
    says(&e, &["quota", &o.region]);
    // Freeing the GPUs frees the quota.
    p.delete(&scope(&o.region), ResourceKind::Instance, &s.instance)
        .await
        .expect("delete");
    create(
        &*p,
        &instance_req(&o, &s.subnet, &s.firewall, "q", "q.node[1]"),
    )
    .await;
}

#[tokio::test]
async fn rate_limit_is_advertised_and_enforced() {
    let sb = open_with(&temp_dir("rate"), "rate=5");
    let p = sb.provider(Cloud::Aws);
    assert_eq!(p.rate_limit().per_second, 5.0);
    let region = offer(Cloud::Aws).region;
    let mut throttled = 0;
    for i in 0..50 {
        if let Err(e) = p.create(&network_req(&region, "p", &format!("n{i}"))).await {
            assert_eq!(e.kind, ErrorKind::Throttled);
            throttled += 1;
        }
    }
    // The burst (one second's worth) passes; far more than 5 calls a second do not.
    assert!(throttled >= 1, "{throttled} of 50 throttled");
}

#[tokio::test]
async fn pages_count_as_calls() {
    let (sb, p) = fresh_aws("pages");
    let region = offer(Cloud::Aws).region;
    let mut ids = vec![];
    for i in 0..2500 {
        let req = request(
            ResourceKind::Placement,
            &region,
            json!({"strategy": "cluster"}),
            &[],
            ownership("p", &format!("pg{i}")),
        );
        ids.push(create_id(&*p, &req).await);
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
            networks(&*p, &region, "p", &format!("n{t}."), 50).await
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
