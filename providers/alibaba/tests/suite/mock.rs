//! The Alibaba provider against the local stand-in
//! (`gpuform_standins::alibaba`), which verifies every request's ACS3
//! signature and answers as the ECS/VPC API references document.

use crate::common;

use common::*;
use gpuform_alibaba::{AlibabaProvider, Endpoint};
use gpuform_provider::{ErrorKind, ObservedResource, Provider, ResourceKind};
use gpuform_signing::Credentials;
use gpuform_standins::alibaba::{AlibabaMock, Fault, ACCESS_KEY_SECRET};
use gpuform_standins::MockCloud;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn provider_with(mock: &AlibabaMock, secret: &str) -> AlibabaProvider {
    provider_at(&mock.endpoint(), secret)
}

fn by_address(list: &[ObservedResource]) -> BTreeMap<String, &ObservedResource> {
    list.iter()
        .filter_map(|o| Some((o.ownership.as_ref()?.address.to_string(), o)))
        .collect()
}

#[tokio::test]
async fn lifecycle_create_refresh_update_destroy() {
    let (mock, p, net) = start(ingress(), false).await;
    assert!(
        net.vpc.starts_with("vpc-") && net.vsw.starts_with("vsw-") && net.sg.starts_with("sg-")
    );

    let ds = create(&p, &placement(json!({"strategy": "cluster"}))).await;
    assert!(ds.id.starts_with("ds-"));
    assert_eq!(ds.attrs["strategy"], "cluster");
    assert_eq!(ds.ownership.as_ref().unwrap().address, "c.placement");

    let mut nodes = Vec::new();
    for i in 0..2 {
        let o = create(&p, &node(&net, i, Some(&ds.id))).await;
        assert!(o.id.starts_with("i-"));
        nodes.push(o);
    }
    // What was asked reads back the same: an unchanged resource diffs clean.
    let want = instance_attrs(0);
    for key in [
        "instance_type",
        "zone",
        "image",
        "pricing",
        "root_gb",
        "rdma",
        "tags",
    ] {
        assert_eq!(nodes[0].attrs[key], want[key], "{key}");
    }
    // Each node reports its own private address in its vSwitch (10.0.0.0/20).
    let ips: Vec<&str> = nodes
        .iter()
        .filter_map(|n| n.attrs.get("private_ip")?.as_str())
        .collect();
    assert_eq!(ips.len(), 2, "{nodes:#?}");
    assert_ne!(ips[0], ips[1]);
    assert!(ips.iter().all(|ip| ip.starts_with("10.0.")), "{ips:?}");
    let vol = create(&p, &OWNER.volume("c.volume[0]", ZONE, 500, &nodes[0].id)).await;
    assert!(vol.id.starts_with("d-"));
    assert_eq!(vol.status, "in_use");
    assert_eq!(vol.attrs["size_gb"], 500);
    assert_eq!(vol.attrs["volume_type"], "ssd");

    // list_owned finds everything by its tags (system disks are not volumes).
    let owned = OWNER.owned(&p).await;
    let m = by_address(&owned);
    let addresses: Vec<&str> = m.keys().map(String::as_str).collect();
    assert_eq!(
        addresses,
        [
            "c.firewall",
            "c.network",
            "c.node[0]",
            "c.node[1]",
            "c.placement",
            "c.subnet[i]",
            "c.volume[0]"
        ]
    );
    assert_eq!(owned.len(), 7);
    assert_eq!(m["c.network"].attrs["cidr"], "10.0.0.0/16");
    assert_eq!(m["c.subnet[i]"].attrs["zone"], ZONE);
    assert_eq!(
        m["c.firewall"].attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"},
               {"protocol": "icmp", "from_port": 0, "to_port": 0, "cidr": "10.0.0.0/8"}])
    );
    assert_eq!(m["c.node[1]"].status, "running");
    assert_eq!(m["c.node[1]"].attrs["root_gb"], 200);
    assert!(p
        .list_owned(&scope(), "someone-else")
        .await
        .unwrap()
        .is_empty());

    // read, per kind, by id.
    for o in &owned {
        let r = OWNER
            .read(&p, o.kind, &[o.id.clone(), "i-doesnotexist".into()])
            .await;
        assert_eq!(r.len(), 1, "{:?}", o.kind);
        assert_eq!(r[0].attrs, o.attrs);
    }

    // Updates in place: tags, firewall rules, volume size.
    let changed = p
        .update(
            &scope(),
            ResourceKind::Instance,
            &nodes[0].id,
            &attrs(json!({"tags": {"team": "infra", "cost": "42"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        changed.attrs["tags"],
        json!({"team": "infra", "cost": "42"})
    );
    assert!(
        changed.ownership.is_some(),
        "ownership tags survive a tag update"
    );
    let fw = p
        .update(&scope(), ResourceKind::Firewall, &net.sg, &attrs(json!({"ingress": [{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "0.0.0.0/0"}]})))
        .await
        .unwrap();
    assert_eq!(
        fw.attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "0.0.0.0/0"}])
    );
    let v = p
        .update(
            &scope(),
            ResourceKind::Volume,
            &vol.id,
            &attrs(json!({"size_gb": 800})),
        )
        .await
        .unwrap();
    assert_eq!(v.attrs["size_gb"], 800);
    let e = p
        .update(
            &scope(),
            ResourceKind::Instance,
            &nodes[0].id,
            &attrs(json!({"instance_type": "ecs.x"})),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);

    // Deleting the network first is refused while it has vSwitches.
    let e = p
        .delete(&scope(), ResourceKind::Network, &net.vpc)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::DependencyViolation);
    assert_eq!(e.code.as_deref(), Some("DependencyViolation.VSwitch"));
    assert!(e.request_id.is_some());

    // Destroy in dependency order; every delete is idempotent.
    OWNER.delete(&p, ResourceKind::Volume, &vol.id).await;
    for n in &nodes {
        OWNER.delete(&p, ResourceKind::Instance, &n.id).await;
    }
    OWNER.delete(&p, ResourceKind::Placement, &ds.id).await;
    OWNER.delete(&p, ResourceKind::Firewall, &net.sg).await;
    OWNER.delete(&p, ResourceKind::Subnet, &net.vsw).await;
    OWNER.delete(&p, ResourceKind::Network, &net.vpc).await;
    for (kind, id) in [
        (ResourceKind::Network, &net.vpc),
        (ResourceKind::Instance, &nodes[0].id),
        (ResourceKind::Volume, &vol.id),
        (ResourceKind::Placement, &ds.id),
    ] {
        OWNER.delete(&p, kind, id).await;
    }
    assert!(OWNER.owned(&p).await.is_empty());
    assert!(mock.resources().is_empty(), "{:?}", mock.resources());
}

#[tokio::test]
async fn refresh_is_batched() {
    let mock = AlibabaMock::start();
    mock.set_pending_time(Duration::ZERO);
    let p = provider(&mock);
    let net = network(&p, ingress()).await;
    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(create(&p, &node(&net, i, None)).await.id);
    }
    let before = mock.requests();
    let owned = OWNER.owned(&p).await;
    let list_calls = mock.requests() - before;
    assert_eq!(
        owned
            .iter()
            .filter(|o| o.kind == ResourceKind::Instance)
            .count(),
        50
    );
    // vpcs, vswitches, groups (+1 attribute), deployment sets, instances, disks (100 disks = 1 page).
    assert!(list_calls <= 8, "list_owned took {list_calls} calls");

    let before = mock.requests();
    let read = OWNER.read(&p, ResourceKind::Instance, &ids).await;
    let read_calls = mock.requests() - before;
    assert_eq!(read.len(), 50);
    assert!(read.iter().all(|o| o.attrs["root_gb"] == 200));
    assert!(read_calls <= 2, "read took {read_calls} calls");

    // 150 instances cross DescribeInstances' 100-per-page limit: still pages, not resources.
    for i in 50..120 {
        create(&p, &node(&net, i, None)).await;
    }
    let before = mock.requests();
    let owned = OWNER.owned(&p).await;
    assert_eq!(
        owned
            .iter()
            .filter(|o| o.kind == ResourceKind::Instance)
            .count(),
        120
    );
    let calls = mock.requests() - before;
    assert!(
        calls <= 11,
        "list_owned of 120 instances took {calls} calls"
    );
}

#[tokio::test]
async fn deleted_behind_the_back_is_gone() {
    let (mock, p, net) = start(ingress(), false).await;
    let a = create(&p, &node(&net, 0, None)).await;
    let b = create(&p, &node(&net, 1, None)).await;
    assert!(mock.delete_behind(&a.id));
    assert!(!mock.delete_behind(&a.id));
    let owned = OWNER.owned(&p).await;
    assert!(owned.iter().all(|o| o.id != a.id));
    assert!(owned.iter().any(|o| o.id == b.id));
    let read = OWNER
        .read(&p, ResourceKind::Instance, &[a.id.clone(), b.id.clone()])
        .await;
    assert_eq!(read.len(), 1);
    // Deleting what is already gone succeeds.
    OWNER.delete(&p, ResourceKind::Instance, &a.id).await;
}

#[tokio::test]
async fn same_token_same_resource() {
    let (mock, p, net) = start(ingress(), false).await;
    let again = create(&p, &vpc("10.0.0.0/16")).await;
    assert_eq!(again.id, net.vpc);
    let r = node(&net, 0, None);
    let first = create(&p, &r).await;
    let second = create(&p, &r).await;
    assert_eq!(first.id, second.id);
    let vol = req(
        ResourceKind::Volume,
        "c.volume[0]",
        json!({"size_gb": 100, "volume_type": "ssd"}),
        &[("instance", &first.id)],
    );
    let v1 = create(&p, &vol).await;
    let v2 = create(&p, &vol).await;
    assert_eq!(v1.id, v2.id);
    assert_eq!(
        v1.attrs["zone"], ZONE,
        "the volume's zone defaults to its instance's"
    );
    let kinds: Vec<ResourceKind> = mock.resources().iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == ResourceKind::Instance)
            .count(),
        1
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == ResourceKind::Volume).count(),
        1
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == ResourceKind::Network)
            .count(),
        1
    );
}

#[tokio::test]
async fn crash_after_the_call_is_adopted_by_tags() {
    let (mock, p, net) = start(ingress(), false).await;
    // An explicit image id: RunInstances is the very next request.
    let mut r = node(&net, 7, None);
    r.attrs.insert(
        "image".into(),
        json!("ubuntu_22_04_x64_20G_alibase_20240130.vhd"),
    );
    let n = mock.requests() + 1;
    // The cloud makes the instance, then the answer is lost (the connection
    // dies before the response), as if gpuform crashed right after sending.
    mock.set_hook(Some(Arc::new(move |i| {
        if i == n {
            panic!("simulated crash before the RunInstances answer");
        }
    })));
    let e = p.create(&r).await.unwrap_err();
    mock.set_hook(None);
    assert_eq!(e.kind, ErrorKind::Transient, "{e}");
    // The next run adopts it by address + token ...
    let owned = OWNER.owned(&p).await;
    let found: Vec<&ObservedResource> = owned
        .iter()
        .filter(|o| {
            o.ownership
                .as_ref()
                .is_some_and(|w| w.address == "c.node[7]" && w.token == r.ownership.token)
        })
        .collect();
    assert_eq!(found.len(), 1);
    // ... and a retry with the same token returns it rather than a twin.
    let again = create(&p, &r).await;
    assert_eq!(again.id, found[0].id);
    assert_eq!(
        mock.resources()
            .iter()
            .filter(|x| x.kind == ResourceKind::Instance)
            .count(),
        1
    );
    assert_eq!(
        mock.resources()
            .iter()
            .find(|x| x.id == again.id)
            .and_then(|x| x.address.clone())
            .as_deref(),
        Some("c.node[7]")
    );
}

#[tokio::test]
async fn errors_map_to_neutral_kinds() {
    let (mock, p, net) = start(ingress(), false).await;

    mock.inject(no_stock(ZONE));
    let e = p.create(&node(&net, 0, None)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Capacity);
    assert_eq!(e.code.as_deref(), Some("OperationDenied.NoStock"));
    assert!(e.request_id.as_deref().is_some_and(|r| r.len() == 36));
    mock.inject(no_stock(""));

    mock.inject(Fault::InstanceQuota(0));
    let e = p.create(&node(&net, 0, None)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Quota);
    assert_eq!(e.code.as_deref(), Some("QuotaExceed.ElasticQuotaNo"));
    mock.inject(Fault::InstanceQuota(1000));

    mock.inject(Fault::Once {
        action: "DescribeInstances".into(),
        status: 400,
        code: "Throttling.User".into(),
    });
    let e = p.list_owned(&scope(), "llm").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Throttled);
    // The throttled listing's other calls were dropped mid-flight; a clean
    // listing lets the stand-in finish them before the next fault is set,
    // so none of them can take it (and shows that a throttle does not stick).
    OWNER.owned(&p).await;
    mock.inject(Fault::Once {
        action: "DescribeVpcs".into(),
        status: 503,
        code: "ServiceUnavailable".into(),
    });
    assert_eq!(
        p.list_owned(&scope(), "llm").await.unwrap_err().kind,
        ErrorKind::Transient
    );

    // A wrong secret: the stand-in recomputes the signature and refuses it.
    let bad = provider_with(&mock, "not-the-secret");
    let e = bad.list_owned(&scope(), "llm").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.code.as_deref(), Some("SignatureDoesNotMatch"));
    assert!(!e.to_string().contains("not-the-secret"));
    let stranger = AlibabaProvider::new(
        Credentials::new("LTAIunknown", ACCESS_KEY_SECRET),
        None,
        Some(Endpoint::parse(&mock.endpoint(), "test").unwrap()),
    )
    .unwrap();
    let e = stranger.list_owned(&scope(), "llm").await.unwrap_err();
    assert_eq!(
        (e.kind, e.code.as_deref()),
        (ErrorKind::Auth, Some("InvalidAccessKeyId.NotFound"))
    );

    let mut r = node(&net, 0, None);
    r.attrs.insert("image".into(), json!("m-doesnotexist"));
    let e = p.create(&r).await.unwrap_err();
    assert_eq!(
        (e.kind, e.code.as_deref()),
        (ErrorKind::NotFound, Some("InvalidImageId.NotFound"))
    );
    r.attrs.insert("image".into(), json!("windows-95"));
    assert_eq!(p.create(&r).await.unwrap_err().kind, ErrorKind::Invalid);

    let e = p
        .create(&req(ResourceKind::Bucket, "b", json!({"name": "x"}), &[]))
        .await
        .unwrap_err();
    // Buckets are OSS's now: a one-letter name is refused by OSS's naming
    // rule (3 to 63 characters) before any call.
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("not valid on Alibaba OSS") && e.message.contains("Rule:"),
        "{e}"
    );

    // Nothing was made by the refused calls.
    assert_eq!(
        mock.resources()
            .iter()
            .filter(|x| x.kind == ResourceKind::Instance)
            .count(),
        0
    );
}

#[tokio::test]
async fn pricing_models_and_images() {
    let (_mock, p, net) = start(ingress(), false).await;
    for (i, pricing) in ["spot", "reserved-1y", "reserved-3y", "on-demand"]
        .iter()
        .enumerate()
    {
        let mut r = node(&net, i, None);
        r.attrs.insert("pricing".into(), json!(pricing));
        let o = create(&p, &r).await;
        assert_eq!(o.attrs["pricing"], json!(pricing));
        assert_eq!(o.attrs["image"], "ubuntu-22.04-cuda");
    }
    assert_eq!(
        p.resolve_image(REGION, "ubuntu-22.04-cuda").await.unwrap(),
        "ubuntu_22_04_x64_20G_alibase_20240130.vhd"
    );
    assert_eq!(
        p.resolve_image(REGION, "m-bp1custom").await.unwrap(),
        "m-bp1custom"
    );
}

#[tokio::test]
async fn from_env_uses_the_stand_in() {
    let mock = AlibabaMock::start();
    let env = mock.env();
    for key in [
        "GPUFORM_ALIBABA_ENDPOINT",
        "ALIBABA_CLOUD_ACCESS_KEY_ID",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    ] {
        assert!(env.iter().any(|(k, _)| k == key), "{key}");
    }
    for (k, v) in &env {
        std::env::set_var(k, v);
    }
    let p = AlibabaProvider::from_env().unwrap();
    assert_eq!(p.endpoint().map(|e| e.scheme.as_str()), Some("http"));
    let o = create(&p, &vpc("10.1.0.0/16")).await;
    assert!(o.id.starts_with("vpc-"));
    let d = format!("{p:?}");
    assert!(!d.contains(ACCESS_KEY_SECRET), "{d}");
    assert!(p.label().starts_with("alibaba("));
}

/// Tag rules of ECS and VPC TagResources: keys starting with `aliyun` or
/// `acs:` and anything containing `http://` / `https://` are refused before
/// any call, at create and at update; a portless rule reads back as given.
#[tokio::test]
async fn alibaba_tag_rules_and_portless_rules() {
    let mock = AlibabaMock::start();
    let p = provider(&mock);
    let before = mock.requests();
    for (tags, says) in [
        (json!({"acs:team": "ml"}), "reserved by alibaba"),
        (json!({"AliyunTeam": "ml"}), "reserved by alibaba"),
        (json!({"site": "https://example.com"}), "http://"),
        (json!({"gpuform:address": "x"}), "reserved for gpuform"),
    ] {
        let r = req(
            ResourceKind::Network,
            "c.network",
            json!({"cidr": "10.0.0.0/16", "tags": tags}),
            &[],
        );
        let e = p.create(&r).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{tags}");
        assert!(e.message.contains(says), "{tags}: {e}");
    }
    assert_eq!(mock.requests(), before, "refused before any call");

    let portless = json!([{"protocol": "icmp", "cidr": "10.0.0.0/8"},
                          {"protocol": "all", "cidr": "10.1.0.0/16"}]);
    let net = network(&p, portless.clone()).await;
    let e = p
        .update(
            &scope(),
            ResourceKind::Firewall,
            &net.sg,
            &attrs(json!({"tags": {"site": "http://x"}})),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("http://"), "{e}");
    let r = OWNER
        .read(&p, ResourceKind::Firewall, std::slice::from_ref(&net.sg))
        .await;
    assert_eq!(r[0].attrs["ingress"], portless);
    assert_eq!(r[0].attrs["tags"], json!({}));
}
