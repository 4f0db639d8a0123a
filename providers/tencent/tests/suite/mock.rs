//! The Tencent provider against the local Tencent Cloud stand-in
//! (`gpuform_standins::tencent::TencentMock`), which verifies every TC3
//! signature and answers as the API reference pages describe.

use crate::common;

use common::{
    all_owned, create, delete, network, node_request, placement, provider, provider_with, read,
    request, scope, started, update, url, volume, Net, PROJECT, REGION, TYPE, ZONE,
};
use gpuform_provider::provider::RateLimit;
use gpuform_provider::{Attrs, CreateRequest, ErrorKind, ObservedResource, Provider, ResourceKind};
use gpuform_signing::Credentials;
use gpuform_standins::tencent::{TencentMock, SECRET_ID, SECRET_KEY};
use gpuform_standins::MockCloud;
use gpuform_tencent::TencentProvider;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn instance_attrs(pricing: &str) -> Value {
    json!({
        "instance_type": TYPE, "zone": ZONE, "image": "ubuntu-22.04-cuda", "pricing": pricing,
        "root_gb": 100, "rdma": false, "gpu": "T4:1", "user_data": "#!/bin/sh\necho hi\n",
        "tags": {"team": "ml"}
    })
}

fn instance_req(net: &Net, i: usize, pricing: &str, placement: Option<&str>) -> CreateRequest {
    let address = format!("cluster.t.node[{i}]");
    node_request(net, &address, instance_attrs(pricing), placement)
}

/// An on-demand node outside any placement group.
fn node(net: &Net, i: usize) -> CreateRequest {
    instance_req(net, i, "on-demand", None)
}

/// A stand-in, a provider at it without a tight rate limit, a network and
/// `n` nodes in it (node `i` priced `pricing(i)`), with their ids.
async fn fleet(
    n: usize,
    pricing: fn(usize) -> &'static str,
) -> (TencentMock, TencentProvider, Net, Vec<String>) {
    let mock = TencentMock::start();
    let p = provider(&mock).with_rate_limit(RateLimit::new(1000.0, 1000));
    let net = network(&p).await;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            create(&p, &instance_req(&net, i, pricing(i), None))
                .await
                .id,
        );
    }
    (mock, p, net, ids)
}

fn by_id(list: &[ObservedResource], id: &str) -> Option<ObservedResource> {
    list.iter().find(|r| r.id == id).cloned()
}

/// Every observed key the engine sent must come back equal (the diff is clean).
fn assert_same_attrs(desired: &Attrs, observed: &ObservedResource) {
    for (k, v) in &observed.attrs {
        if let Some(d) = desired.get(k) {
            assert_eq!(d, v, "attribute `{k}` of {}", observed.id);
        }
    }
}

#[tokio::test]
async fn lifecycle_create_list_read_update_destroy() {
    let (mock, p, net) = started().await;
    let (vpc, subnet, sg) = (&net.network.id, &net.subnet.id, &net.firewall.id);
    assert!(vpc.starts_with("vpc-") && subnet.starts_with("subnet-") && sg.starts_with("sg-"));

    let strategy = json!({"strategy": "cluster"});
    let ps = create(&p, &placement("cluster.t.placement", strategy)).await;
    assert!(ps.id.starts_with("ps-"), "{}", ps.id);

    let mut instances = Vec::new();
    for (i, pricing) in ["on-demand", "spot", "reserved-3y"].iter().enumerate() {
        let req = instance_req(&net, i, pricing, Some(&ps.id));
        let obs = create(&p, &req).await;
        assert!(obs.id.starts_with("ins-"));
        assert_same_attrs(&req.attrs, &obs);
        assert_eq!(obs.attrs["tags"], json!({"team": "ml"}));
        instances.push((req, obs));
    }
    let vol_req = volume("cluster.t.volume[0]", 200, &instances[0].1.id);
    let vol = create(&p, &vol_req).await;
    assert!(vol.id.starts_with("disk-"));
    assert_eq!(vol.status, "attached");
    assert_same_attrs(&vol_req.attrs, &vol);

    // list_owned finds everything by its tags, with ownership, and the attrs diff clean.
    let owned = all_owned(&p).await;
    assert_eq!(owned.len(), 4 + 3 + 1, "{owned:#?}");
    for (req, obs) in &instances {
        let seen = by_id(&owned, &obs.id).expect("instance listed");
        assert_eq!(seen.ownership.as_ref(), Some(&req.ownership));
        assert_eq!(seen.status, "running");
        assert_same_attrs(&req.attrs, &seen);
        for k in [
            "instance_type",
            "zone",
            "image",
            "pricing",
            "root_gb",
            "tags",
            "private_ip",
        ] {
            assert!(seen.attrs.contains_key(k), "{k} not reported");
        }
    }
    // Each node reports its own private address in its subnet (10.0.0.0/20).
    let ips: std::collections::BTreeSet<String> = instances
        .iter()
        .filter_map(|(_, o)| {
            let seen = by_id(&owned, &o.id)?;
            Some(seen.attrs.get("private_ip")?.as_str()?.to_string())
        })
        .collect();
    assert_eq!(ips.len(), 3, "{ips:?}");
    assert!(ips.iter().all(|ip| ip.starts_with("10.0.")), "{ips:?}");
    assert!(by_id(&owned, &ps.id).and_then(|r| r.ownership).is_some());
    assert!(p
        .list_owned(&scope(), "other-project")
        .await
        .unwrap()
        .is_empty());

    // read, per kind.
    let ids: Vec<String> = instances.iter().map(|(_, o)| o.id.clone()).collect();
    assert_eq!(read(&p, ResourceKind::Instance, &ids).await.len(), 3);
    let vpcs = read(&p, ResourceKind::Network, std::slice::from_ref(vpc)).await;
    assert_eq!(vpcs[0].attrs["cidr"], json!("10.0.0.0/16"));
    let vols = read(&p, ResourceKind::Volume, std::slice::from_ref(&vol.id)).await;
    assert_eq!(vols.len(), 1);

    // update: firewall rules and volume size in place; tags refused clearly.
    let rules =
        json!([{"protocol": "tcp", "from_port": 8000, "to_port": 8010, "cidr": "10.0.0.0/8"}]);
    let fw = update(&p, ResourceKind::Firewall, sg, json!({ "ingress": rules }));
    let fw = fw.await.expect("update firewall");
    assert_eq!(&fw.id, sg);
    let (ingress, egress) = mock.security_group_policies(sg).unwrap();
    assert_eq!(ingress.len(), 2, "{ingress:?}");
    assert_eq!(ingress[0]["SecurityGroupId"], json!(sg));
    assert_eq!(ingress[1]["Port"], json!("8000-8010"));
    assert_eq!(egress.len(), 1);
    let grown = update(&p, ResourceKind::Volume, &vol.id, json!({"size_gb": 300})).await;
    assert_eq!(grown.unwrap().attrs["size_gb"], json!(300));
    let retag = update(
        &p,
        ResourceKind::Instance,
        &ids[0],
        json!({"tags": {"a": "b"}}),
    )
    .await;
    assert_eq!(retag.unwrap_err().kind, ErrorKind::Invalid);

    // A VPC that still has subnets cannot go: dependency violation, retryable.
    let e = p
        .delete(&scope(), ResourceKind::Network, vpc)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::DependencyViolation, "{e}");
    assert_eq!(e.code.as_deref(), Some("ResourceInUse"));
    assert!(e.request_id.is_some());

    // destroy in dependency order.
    let mut order = vec![(ResourceKind::Volume, vol.id.clone())];
    order.extend(ids.iter().map(|id| (ResourceKind::Instance, id.clone())));
    order.extend([
        (ResourceKind::Placement, ps.id.clone()),
        (ResourceKind::Firewall, sg.clone()),
        (ResourceKind::Subnet, subnet.clone()),
        (ResourceKind::Network, vpc.clone()),
    ]);
    for (kind, id) in &order {
        delete(&p, *kind, id).await;
    }
    assert!(all_owned(&p).await.is_empty());
    assert!(mock.resources().is_empty(), "{:?}", mock.resources());

    // Deleting what is gone succeeds.
    for (kind, id) in [
        (ResourceKind::Network, vpc),
        (ResourceKind::Instance, &ids[0]),
        (ResourceKind::Volume, &vol.id),
        (ResourceKind::Placement, &ps.id),
    ] {
        delete(&p, kind, id).await;
    }
}

#[tokio::test]
async fn refresh_of_fifty_instances_is_a_handful_of_calls() {
    let (mock, p, net, ids) = fleet(50, |_| "on-demand").await;
    assert_eq!(mock.resources().len(), 53);

    let before = mock.requests();
    assert_eq!(read(&p, ResourceKind::Instance, &ids).await.len(), 50);
    let read_calls = mock.requests() - before;
    assert_eq!(read_calls, 1, "one DescribeInstances of 50 ids");

    let before = mock.requests();
    assert_eq!(all_owned(&p).await.len(), 53);
    let list_calls = mock.requests() - before;
    // One page per kind: VPCs, subnets, groups, placement groups, instances,
    // disks; plus one DescribeSecurityGroupPolicies per group (its rules are
    // not part of DescribeSecurityGroups' answer).
    assert_eq!(list_calls, 6 + 1);

    // Past one page (Limit 100): pages, not resources, drive the cost.
    for i in 50..120 {
        create(&p, &node(&net, i)).await;
    }
    let before = mock.requests();
    assert_eq!(all_owned(&p).await.len(), 123);
    assert_eq!(mock.requests() - before, 7 + 1);
}

#[tokio::test]
async fn deleted_behind_our_back_is_gone() {
    let (mock, p, net) = started().await;
    let a = create(&p, &node(&net, 0)).await;
    let b = create(&p, &node(&net, 1)).await;
    assert!(mock.delete_behind(&a.id));

    let owned = all_owned(&p).await;
    assert!(by_id(&owned, &a.id).is_none());
    assert!(by_id(&owned, &b.id).is_some());
    let both = [a.id.clone(), b.id.clone()];
    let read_both = read(&p, ResourceKind::Instance, &both).await;
    assert_eq!(read_both.len(), 1);
    assert_eq!(read_both[0].id, b.id);
    // Deleting a gone instance succeeds.
    delete(&p, ResourceKind::Instance, &a.id).await;

    // Terminated instances are not returned while they wind down either.
    delete(&p, ResourceKind::Instance, &b.id).await;
    assert!(
        read(&p, ResourceKind::Instance, std::slice::from_ref(&b.id))
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn errors_map_to_neutral_kinds() {
    let (mock, p, net) = started().await;

    mock.set_sold_out("GN7.2XLARGE32", ZONE);
    let e = p.create(&node(&net, 0)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Capacity, "{e}");
    assert_eq!(
        e.code.as_deref(),
        Some("ResourceInsufficient.SpecifiedInstanceType")
    );
    assert!(e.request_id.is_some());
    mock.set_sold_out("none", "none");

    let mock2 = TencentMock::start();
    let p2 = provider(&mock2);
    let net2 = network(&p2).await;
    mock2.set_instance_quota(Some(1));
    create(&p2, &node(&net2, 0)).await;
    let e = p2.create(&node(&net2, 1)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Quota, "{e}");
    assert_eq!(e.code.as_deref(), Some("LimitExceeded.InstanceQuota"));

    mock.throttle_next(1);
    let e = p.list_owned(&scope(), PROJECT).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Throttled);
    assert_eq!(e.code.as_deref(), Some("RequestLimitExceeded"));

    let wrong_key = provider_with(&mock.endpoint(), SECRET_ID, "not-the-secret");
    let e = wrong_key.list_owned(&scope(), PROJECT).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.code.as_deref(), Some("AuthFailure.SignatureFailure"));
    assert!(!e.to_string().contains("not-the-secret") && !e.to_string().contains(SECRET_KEY));

    let wrong_id = provider_with(&mock.endpoint(), "AKIDunknown", SECRET_KEY);
    let e = wrong_id.list_owned(&scope(), PROJECT).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.code.as_deref(), Some("AuthFailure.SecretIdNotFound"));

    // A bad request: an unknown image name is refused before any call.
    let mut req = node(&net, 3);
    req.attrs.insert("image".into(), json!("windows-95"));
    assert_eq!(p.create(&req).await.unwrap_err().kind, ErrorKind::Invalid);
    // A subnet CIDR outside the VPC: the API's InvalidParameterValue.*.
    let outside = json!({"zone": ZONE, "cidr": "192.168.0.0/24"});
    let refs = [("network", net.network.id.as_str())];
    let subnet = request(ResourceKind::Subnet, "cluster.t.subnet[x]", outside, &refs);
    let e = p.create(&subnet).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.code.as_deref(), Some("InvalidParameterValue.SubnetRange"));

    let bucket = request(ResourceKind::Bucket, "bucket.b", json!({"name": "b"}), &[]);
    let e = p.create(&bucket).await.unwrap_err();
    // Buckets are COS's now: a name without the APPID is refused by COS's
    // naming rule before any call.
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("not valid on Tencent COS") && e.message.contains("APPID"),
        "{e}"
    );

    let mut rdma = placement("cluster.t.placement", json!({"rdma": true}));
    rdma.attrs.insert("strategy".into(), json!("cluster"));
    assert_eq!(p.create(&rdma).await.unwrap_err().kind, ErrorKind::Invalid);
}

#[tokio::test]
async fn the_same_token_creates_once() {
    let (mock, p, net) = started().await;
    // Network, subnet and firewall have no ClientToken: the token tag is looked up.
    let again = network(&p).await;
    let ids = |n: &Net| [&n.network.id, &n.subnet.id, &n.firewall.id].map(String::clone);
    assert_eq!(ids(&again), ids(&net));

    let req = node(&net, 0);
    let a = p.create(&req).await.unwrap();
    let b = p.create(&req).await.unwrap();
    assert_eq!(a.id, b.id);
    let vol = volume("cluster.t.volume[0]", 100, &a.id);
    let v1 = p.create(&vol).await.unwrap();
    let v2 = p.create(&vol).await.unwrap();
    assert_eq!(v1.id, v2.id);
    let ps = placement("cluster.t.placement", json!({"strategy": "cluster"}));
    assert_eq!(
        p.create(&ps).await.unwrap().id,
        p.create(&ps).await.unwrap().id
    );

    let kinds: BTreeMap<String, usize> =
        mock.resources().iter().fold(BTreeMap::new(), |mut m, r| {
            *m.entry(r.kind.to_string()).or_default() += 1;
            m
        });
    assert_eq!(
        kinds,
        [
            ("firewall", 1),
            ("instance", 1),
            ("network", 1),
            ("placement", 1),
            ("subnet", 1),
            ("volume", 1)
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    );
}

#[tokio::test]
async fn a_lost_answer_is_adopted_by_its_tags() {
    let (mock, p, net) = started().await;
    let req = instance_req(&net, 7, "spot", None);
    // Warm the image and subnet caches, so RunInstances is the next request.
    let warm = create(&p, &node(&net, 8)).await;
    delete(&p, ResourceKind::Instance, &warm.id).await;

    // The RunInstances answer never arrives: the stand-in drops the connection
    // after the instance was made (as a crash of gpuform right then would).
    let target = Arc::new(AtomicU64::new(mock.requests() + 1));
    let t = target.clone();
    mock.set_hook(Some(Arc::new(move |n| {
        if n == t.load(Ordering::SeqCst) {
            panic!("simulated crash after request {n}");
        }
    })));
    let e = p.create(&req).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient, "{e}");
    mock.set_hook(None);

    let owned = all_owned(&p).await;
    let adopted: Vec<_> = owned
        .iter()
        .filter(|r| r.kind == ResourceKind::Instance)
        .filter(|r| {
            r.ownership.as_ref().is_some_and(|o| {
                o.address == req.ownership.address && o.token == req.ownership.token
            })
        })
        .collect();
    assert_eq!(adopted.len(), 1, "{owned:#?}");
    assert_eq!(adopted[0].attrs["pricing"], json!("spot"));
    // Retrying with the same token returns the same instance.
    assert_eq!(p.create(&req).await.unwrap().id, adopted[0].id);
    assert_eq!(
        mock.resources()
            .iter()
            .filter(|r| r.kind == ResourceKind::Instance)
            .count(),
        1
    );
}

#[tokio::test]
async fn from_env_names_the_variables_and_uses_the_override() {
    // The only test that touches the environment.
    for k in [
        "TENCENTCLOUD_SECRET_ID",
        "TENCENTCLOUD_SECRET_KEY",
        "TENCENTCLOUD_SESSION_TOKEN",
        "GPUFORM_TENCENT_ENDPOINT",
    ] {
        std::env::remove_var(k);
    }
    let e = gpuform_tencent::from_env().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        e.message.contains("TENCENTCLOUD_SECRET_ID")
            && e.message.contains("TENCENTCLOUD_SECRET_KEY")
    );

    let mock = TencentMock::start();
    for (k, v) in mock.env() {
        std::env::set_var(k, v);
    }
    std::env::set_var("TENCENTCLOUD_SESSION_TOKEN", "sts-token-value");
    let p = gpuform_tencent::from_env().expect("from env");
    assert!(
        !format!("{p:?}").contains(SECRET_KEY) && !format!("{p:?}").contains("sts-token-value")
    );
    assert!(all_owned(&p).await.is_empty());
    assert_eq!(p.cloud(), gpuform_provider::Cloud::Tencent);
    for (k, _) in mock.env() {
        std::env::remove_var(k);
    }
    std::env::remove_var("TENCENTCLOUD_SESSION_TOKEN");
}

/// The stand-in recomputes the signature from what it received: a body
/// changed after signing is refused, the same request unchanged is served.
#[tokio::test]
async fn the_stand_in_verifies_signatures_over_the_received_bytes() {
    use gpuform_signing::{tc3, Request};
    let mock = TencentMock::start();
    let url = url(&mock.endpoint());
    let host = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let signed_body = br#"{"Limit": 1}"#.to_vec();
    let req = Request::new("POST", host, "/")
        .with_header("Content-Type", "application/json")
        .with_body(signed_body.clone());
    let sig = tc3::sign_now(&req, &Credentials::new(SECRET_ID, SECRET_KEY), "cvm").unwrap();
    let send = |body: Vec<u8>| {
        let mut rb = reqwest::Client::new()
            .post(url.clone())
            .header("Content-Type", "application/json")
            .header("X-TC-Action", "DescribeInstances")
            .header("X-TC-Version", "2017-03-12")
            .header("X-TC-Region", REGION);
        for (k, v) in &sig.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        async move {
            rb.body(body)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let ok = send(signed_body).await;
    assert_eq!(ok["Response"]["TotalCount"], json!(0), "{ok}");
    assert!(ok["Response"]["RequestId"].is_string());
    let tampered = send(br#"{"Limit": 2}"#.to_vec()).await;
    assert_eq!(
        tampered["Response"]["Error"]["Code"],
        json!("AuthFailure.SignatureFailure"),
        "{tampered}"
    );
    assert!(tampered["Response"]["RequestId"].is_string());
}

/// `gpuform audit`'s inventory: every instance (of every owner: the tag
/// filter is not used) and the unattached data disks, a few pages in all.
#[tokio::test]
async fn inventory_lists_every_instance_and_unattached_disk_in_a_few_pages() {
    use gpuform_provider::{InventoryApi, RunState};
    let (mock, p, _net, ids) = fleet(120, |i| if i == 0 { "spot" } else { "on-demand" }).await;
    let attached = create(&p, &volume("cluster.t.volume[0]", 200, &ids[1]))
        .await
        .id;
    let loose = create(&p, &volume("cluster.t.volume[1]", 60, &ids[2]))
        .await
        .id;
    // Volumes are made attached; this one is detached afterwards.
    let detach = json!({ "attached_to": null });
    let detached = update(&p, ResourceKind::Volume, &loose, detach).await;
    detached.expect("detach");
    let before = mock.requests();
    let inv = p.inventory(&scope()).await.unwrap();
    let calls = mock.requests() - before;
    // 120 instances at 100 a page, and one page of unattached data disks.
    assert_eq!(calls, 3, "inventory calls");
    assert_eq!(inv.instances.len(), 120);
    let spot = inv.instances.iter().find(|i| i.id == ids[0]).unwrap();
    assert_eq!(spot.pricing.as_deref(), Some("spot"));
    assert_eq!(spot.state, RunState::Running);
    assert_eq!(spot.project(), Some(PROJECT));
    assert!(spot.launch_time.is_some());
    let vols: Vec<&str> = inv.volumes.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(vols, vec![loose.as_str()]);
    assert!(!vols.contains(&attached.as_str()));
    assert_eq!(inv.volumes[0].size_gb, Some(60));
}
