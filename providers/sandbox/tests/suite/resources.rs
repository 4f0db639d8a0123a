//! The sandbox as a provider: resource semantics (tokens, ownership, refs,
//! dependencies), validation against the mirrored cloud's catalog, and
//! the request checks it shares with every cloud.

use crate::common;

use common::*;
use gpuform_catalog::Catalog;
use gpuform_provider::{
    ChangeSet, Cloud, Desired, ErrorKind, OwnershipTags, ProviderError, ResourceKind, UserTags,
};
use serde_json::json;
use std::collections::HashSet;

#[tokio::test]
async fn idempotent_create_by_token() {
    let World { sb, p, o, s, .. } = world("idem", "proj", "c").await;
    assert_eq!(p.label(), "sandbox(aws)");
    let before = sb.list_all().len();
    let again = create(
        &*p,
        &instance_req(&o, &s.subnet, &s.firewall, "proj", "c.node[0]"),
    )
    .await;
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
    let other = create_id(
        &*p,
        &instance_req(&o, &s.subnet, &s.firewall, "proj", "c.node[1]"),
    )
    .await;
    assert_ne!(other, s.instance);
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
    let (sb, aws) = fresh_aws("owned");
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
        let there = aws
            .list_owned(&scope(&other.name), "alpha")
            .await
            .expect("list");
        assert!(there.is_empty());
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
    let tag = |k: &str| r.tags.get(k).map(String::as_str);
    assert_eq!(tag(OwnershipTags::PROJECT), Some("alpha"));
    assert_eq!(tag(OwnershipTags::ADDRESS), Some("a.node[0]"));
    assert_eq!(tag(OwnershipTags::LINEAGE), Some("lineage-1"));
    assert_eq!(tag("team"), Some("research"));
    assert_eq!(r.token, "tok-alpha-a.node[0]");
    let sorted: Vec<_> = all.iter().map(|r| r.id.clone()).collect();
    let mut expect = sorted.clone();
    expect.sort();
    assert_eq!(sorted, expect, "list_all is sorted by id");
}

#[tokio::test]
async fn dependency_violation_on_delete() {
    let World { sb, p, o, s, .. } = world("deps", "proj", "c").await;
    let sc = scope(&o.region);
    for (kind, id, what) in [
        (ResourceKind::Network, &s.network, "vpc in use"),
        (ResourceKind::Subnet, &s.subnet, "subnet in use"),
        (ResourceKind::Firewall, &s.firewall, "sg in use"),
    ] {
        let e = p.delete(&sc, kind, id).await.expect_err(what);
        assert_eq!(e.kind, ErrorKind::DependencyViolation, "{what}");
        assert_eq!(e.code.as_deref(), Some("DependencyViolation"), "{what}");
    }

    // Volumes do not block their instance (ending an instance detaches them).
    let vol = create_id(
        &*p,
        &request(
            ResourceKind::Volume,
            &o.region,
            json!({"size_gb": 100, "volume_type": "ssd"}),
            &[("instance", &s.instance)],
            ownership("proj", "c.vol"),
        ),
    )
    .await;
    assert!(vol.starts_with("vol-"));

    // In order, everything goes; deleting again is fine.
    for (kind, id) in [
        (ResourceKind::Instance, &s.instance),
        (ResourceKind::Subnet, &s.subnet),
        (ResourceKind::Firewall, &s.firewall),
        (ResourceKind::Network, &s.network),
        (ResourceKind::Volume, &vol),
    ] {
        p.delete(&sc, kind, id).await.expect("delete");
        p.delete(&sc, kind, id)
            .await
            .expect("delete again is idempotent");
    }
    assert!(sb.list_all().is_empty());
    let read = read_one(&*p, &o.region, ResourceKind::Instance, &s.instance).await;
    assert!(read.is_empty(), "read never returns what is gone");
}

#[tokio::test]
async fn refs_must_exist() {
    let (_sb, p) = fresh_aws("refs");
    let o = offer(Cloud::Aws);
    let subnet = |network: &str| {
        subnet_req(
            &o.region,
            (&o.zone, "10.0.1.0/24"),
            network,
            ownership("p", "s"),
        )
    };
    let e = p
        .create(&subnet("vpc-0000000000000000"))
        .await
        .expect_err("no such vpc");
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert_eq!(e.code.as_deref(), Some("InvalidVpcID.NotFound"));
    let mut req = subnet("");
    req.refs.clear();
    let e = p.create(&req).await.expect_err("no network ref");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.message, "a subnet needs a `network` to belong to");
    let s = stack(&*p, &o, "p", "x").await;
    // An instance in a zone other than its subnet's.
    let mut req = instance_req(&o, &s.subnet, &s.firewall, "p", "x.node[9]");
    req.attrs.insert("zone".into(), json!(o.other_zone));
    let e = p.create(&req).await.expect_err("zone mismatch");
    assert_eq!(e.kind, ErrorKind::Invalid);
    says(&e, &[&o.other_zone, &o.zone]);
    // A ref of the wrong kind.
    let req = instance_req(&o, &s.firewall, &s.firewall, "p", "x.node[8]");
    let e = p.create(&req).await.expect_err("wrong kind");
    assert_eq!(e.kind, ErrorKind::Invalid);
    // A volume in a zone other than its instance's.
    let e = p
        .create(&request(
            ResourceKind::Volume,
            &o.region,
            json!({"size_gb": 10, "zone": o.other_zone}),
            &[("instance", s.instance.as_str())],
            ownership("p", "v"),
        ))
        .await
        .expect_err("zone mismatch");
    assert_eq!(e.kind, ErrorKind::Invalid);
    says(&e, &[&format!("zone {} is not", o.other_zone), &o.zone]);
    // A volume needs a zone or an instance to take it from.
    let e = p
        .create(&request(
            ResourceKind::Volume,
            &o.region,
            json!({"size_gb": 10}),
            &[],
            ownership("p", "v"),
        ))
        .await
        .expect_err("no zone, no instance");
    assert_eq!(e.kind, ErrorKind::Invalid);
    says(&e, &["`zone`", "`instance`"]);
    // A volume's instance must exist.
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
    let (sb, p) = fresh_aws("catalog");
    let o = offer(Cloud::Aws);
    let e = p
        .create(&network_req("mars-north-1", "p", "n"))
        .await
        .expect_err("unknown region");
    assert_eq!(e.kind, ErrorKind::Invalid);
    says(&e, &["mars-north-1", &o.region]);

    let mut req = network_req(&o.region, "p", "n");
    req.attrs.insert("cidr".into(), json!("10.1.0.0/16"));
    let net = create_id(&*p, &req).await;
    let subnet =
        |zone: &str, cidr: &str| subnet_req(&o.region, (zone, cidr), &net, ownership("p", "s"));
    let e = p
        .create(&subnet("atlantis-1z", "10.1.1.0/24"))
        .await
        .expect_err("bad zone");
    assert_eq!(e.kind, ErrorKind::Invalid);
    says(&e, &["atlantis-1z", &o.zone]);
    let e = p
        .create(&subnet(&o.zone, "10.2.0.0/24"))
        .await
        .expect_err("cidr outside the vpc");
    says(&e, &["10.1.0.0/16"]);
    let mut req = network_req(&o.region, "p", "n2");
    req.attrs.insert("cidr".into(), json!("10.1.0.1/16"));
    let e = p.create(&req).await.expect_err("host bits");
    assert_eq!(e.kind, ErrorKind::Invalid);

    let s = stack(&*p, &o, "p", "v").await;
    let mut req = instance_req(&o, &s.subnet, &s.firewall, "p", "v.node[1]");
    req.attrs
        .insert("instance_type".into(), json!("p4d.24xlarg"));
    let e = p.create(&req).await.expect_err("unknown type");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.code.as_deref(), Some("InvalidInstanceType"));
    says(&e, &["p4d.24xlarg"]);

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
        says(&e, &[&t.name, &o.region]);
    }

    // A zone is the sandbox's to require (the neutral request may omit it).
    let mut req = instance_req(&o, &s.subnet, &s.firewall, "p", "v.node[3]");
    req.attrs.remove("zone");
    let e = p.create(&req).await.expect_err("missing zone");
    assert_eq!(e.code.as_deref(), Some("MissingParameter"));
    assert_eq!(e.message, "a instance needs the attribute `zone`");
    assert!(sb
        .list_all()
        .iter()
        .all(|r| r.kind != ResourceKind::Instance || r.id == s.instance));
}

/// Every cloud refuses a subnet whose range overlaps another subnet of the
/// same network (a nested range too), with its own code; the range is free
/// again once that subnet is gone, and another network's subnets do not count.
#[tokio::test]
async fn overlapping_subnets_in_one_network_are_refused_until_the_first_is_gone() {
    for (cloud, code) in [
        (Cloud::Aws, "InvalidSubnet.Conflict"),
        (Cloud::Alibaba, "InvalidCidrBlock.Overlapped"),
        (Cloud::Tencent, "InvalidParameterValue.SubnetConflict"),
        (Cloud::Huawei, "VPC.0002"),
    ] {
        let dir = temp_dir(&format!("overlap-{cloud}"));
        let p = open(&dir).provider(cloud);
        let o = offer(cloud);
        let sc = scope(&o.region);
        let net = create_id(&*p, &network_req(&o.region, "p", "n")).await;
        let other_net = create_id(&*p, &network_req(&o.region, "p", "m")).await;
        // Each request its own address, so no idempotency token is reused.
        let subnet = |network: &str, cidr: &str, address: &str| {
            subnet_req(&o.region, (&o.zone, cidr), network, ownership("p", address))
        };
        let first = create_id(&*p, &subnet(&net, "10.0.0.0/20", "a")).await;
        for cidr in ["10.0.0.0/20", "10.0.8.0/24", "10.0.0.0/16"] {
            let e = p.create(&subnet(&net, cidr, "b")).await.expect_err(cidr);
            assert_eq!(e.kind, ErrorKind::Invalid, "{cloud} {cidr}");
            assert_eq!(e.code.as_deref(), Some(code), "{cloud} {cidr}");
            says(&e, &[cidr, "10.0.0.0/20", &first]);
        }
        create_id(&*p, &subnet(&net, "10.0.16.0/20", "c")).await;
        create_id(&*p, &subnet(&other_net, "10.0.0.0/20", "d")).await;
        p.delete(&sc, ResourceKind::Subnet, &first)
            .await
            .expect("delete");
        create_id(&*p, &subnet(&net, "10.0.0.0/20", "e")).await;
    }
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
    let World { sb, p, o, s, .. } = world("update", "p", "u").await;
    let sc = scope(&o.region);
    let tags = attrs(json!({"tags": {"team": "infra"}}));
    let r = p
        .update(&sc, ResourceKind::Instance, &s.instance, &tags)
        .await
        .expect("tags");
    assert_eq!(r.attrs["tags"], json!({"team": "infra"}));
    let listed = listed(&sb, &s.instance);
    assert_eq!(listed.tags.get("team").map(String::as_str), Some("infra"));

    let changes = attrs(json!({"instance_type": "g5.xlarge"}));
    let e = p
        .update(&sc, ResourceKind::Instance, &s.instance, &changes)
        .await
        .expect_err("not updatable");
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(
        e.message,
        "`instance_type` of a instance cannot change in place on aws; it needs a replacement"
    );

    let e = p
        .update(&sc, ResourceKind::Instance, "i-00000000000000000", &tags)
        .await
        .expect_err("gone");
    assert_eq!(e.kind, ErrorKind::NotFound);

    let ingress = attrs(json!({"ingress": []}));
    p.update(&sc, ResourceKind::Firewall, &s.firewall, &ingress)
        .await
        .expect("ingress");
    let read = read_one(&*p, &o.region, ResourceKind::Firewall, &s.firewall).await;
    assert_eq!(read[0].attrs["ingress"], json!([]));
}

/// The two steps of the engine's split creates, as the clouds allow them:
/// a volume made in its zone, attached afterwards to an instance of that
/// zone; a firewall made bare (no rule, not even the members'), its rules
/// written by an update. Each step is one call.
#[tokio::test]
async fn a_volume_made_alone_is_attached_and_a_bare_firewall_gets_its_rules() {
    let World { sb, p, o, s, .. } = world("split", "p", "s").await;
    let sc = scope(&o.region);
    let calls = sb.api_calls();
    let v = create(
        &*p,
        &request(
            ResourceKind::Volume,
            &o.region,
            json!({"size_gb": 10, "zone": o.zone}),
            &[],
            ownership("p", "s.volume[0]"),
        ),
    )
    .await;
    assert_eq!(v.attrs["attached_to"], json!(null), "made detached");
    assert_eq!(v.attrs["zone"], json!(o.zone));
    let attach = attrs(json!({"attached_to": s.instance}));
    p.update(&sc, ResourceKind::Volume, &v.id, &attach)
        .await
        .expect("attach");
    let read = read_one(&*p, &o.region, ResourceKind::Volume, &v.id).await;
    assert_eq!(read[0].attrs["attached_to"], json!(s.instance));

    let fw = create(
        &*p,
        &request(
            ResourceKind::Firewall,
            &o.region,
            json!({"ingress": [{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "10.0.0.0/8"}], "bare": true}),
            &[("network", s.network.as_str())],
            ownership("p", "s.other-firewall"),
        ),
    )
    .await;
    assert_eq!(
        fw.attrs["ingress"],
        json!([gpuform_provider::resource::member_rule_missing()]),
        "a bare group has no rule, the members' included"
    );
    assert!(
        !fw.attrs.contains_key("bare"),
        "`bare` is a request, not an attribute"
    );
    let rules = json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "10.0.0.0/8"}]);
    p.update(
        &sc,
        ResourceKind::Firewall,
        &fw.id,
        &attrs(json!({"ingress": rules})),
    )
    .await
    .expect("rules");
    let read = read_one(&*p, &o.region, ResourceKind::Firewall, &fw.id).await;
    assert_eq!(read[0].attrs["ingress"], rules);
    // create, attach, create, authorize; and the reads.
    assert_eq!(sb.api_calls() - calls, 4 + 2);
}

/// A request refused before it reaches any cloud is refused by the sandbox
/// with the same words, and without an API call (no fault can hit it).
#[tokio::test]
async fn bad_requests_get_the_message_every_cloud_gives() {
    let World { sb, p, o, s, .. } = world("shared", "p", "b").await;
    let calls = sb.api_calls();
    let every_cloud = |req: &gpuform_provider::CreateRequest| -> ProviderError {
        UserTags::parse(req.attrs.get("tags"), Cloud::Aws, |_, _| Ok(()))
            .and_then(|t| Desired::parse(req, t))
            .expect_err("refused by the shared parsers")
    };
    let instance = || instance_req(&o, &s.subnet, &s.firewall, "p", "b.node[5]");
    let mut bad = vec![];
    for (key, value) in [
        ("pricing", json!("monthly")),
        ("root_gb", json!(-1)),
        ("rdma", json!("yes")),
        ("tags", json!({"gpuform:address": "x"})),
        ("tags", json!({"aws:cloudformation": "x"})),
        ("tags", json!({"team": ["a"]})),
    ] {
        let mut req = instance();
        req.attrs.insert(key.into(), value);
        bad.push(req);
    }
    let mut req = instance();
    req.attrs.remove("image");
    bad.push(req);
    let mut req = network_req(&o.region, "p", "b.n");
    req.attrs.remove("cidr");
    bad.push(req);
    bad.push(request(
        ResourceKind::Firewall,
        &o.region,
        json!({"ingress": [{"protocol": "gre", "from_port": 1, "cidr": "0.0.0.0/0"}]}),
        &[("network", &s.network)],
        ownership("p", "b.fw"),
    ));
    bad.push(request(
        ResourceKind::Placement,
        &o.region,
        json!({"strategy": "pack"}),
        &[],
        ownership("p", "b.pg"),
    ));
    for req in &bad {
        let e = p.create(req).await.expect_err("bad request");
        let want = every_cloud(req);
        assert_eq!((e.kind, &e.message), (want.kind, &want.message));
        assert_eq!(e.code, None, "{e}");
    }

    let sc = scope(&o.region);
    for (kind, id, changes) in [
        (
            ResourceKind::Instance,
            &s.instance,
            json!({"root_gb": 1000}),
        ),
        (
            ResourceKind::Instance,
            &s.instance,
            json!({"tags": {"aws:x": "1"}}),
        ),
        (
            ResourceKind::Firewall,
            &s.firewall,
            json!({"ingress": [{"cidr": "x"}]}),
        ),
        (
            ResourceKind::Firewall,
            &s.firewall,
            json!({"ingress": {"a": 1}}),
        ),
    ] {
        let changes = attrs(changes);
        let e = p
            .update(&sc, kind, id, &changes)
            .await
            .expect_err("bad update");
        let want = ChangeSet::parse(kind, &changes, Cloud::Aws, |_, _| Ok(())).expect_err("shared");
        assert_eq!((e.kind, &e.message), (want.kind, &want.message));
    }
    assert_eq!(sb.api_calls(), calls, "refused before any call");
}

/// The reserved tag prefixes are the mirrored cloud's: `acs:` is Alibaba's,
/// an ordinary key on AWS. Tag values are kept as the clouds report them.
#[tokio::test]
async fn reserved_tag_prefixes_are_the_mirrored_clouds() {
    let dir = temp_dir("prefixes");
    let sb = open(&dir);
    let mut req = network_req(&offer(Cloud::Alibaba).region, "p", "n");
    req.attrs.insert("tags".into(), json!({"acs:team": "ml"}));
    let e = sb
        .provider(Cloud::Alibaba)
        .create(&req)
        .await
        .expect_err("reserved on alibaba");
    assert_eq!(
        e.message,
        "tag `acs:team`: keys starting with `acs:` are reserved by alibaba; choose another key"
    );
    let aws = sb.provider(Cloud::Aws);
    let mut req = network_req(&offer(Cloud::Aws).region, "p", "n");
    req.attrs
        .insert("tags".into(), json!({"acs:team": "ml", "n": 3}));
    let made = create(&*aws, &req).await;
    assert_eq!(made.attrs["tags"], json!({"acs:team": "ml", "n": "3"}));
    let listed = listed(&sb, &made.id);
    assert_eq!(listed.tags.get("n").map(String::as_str), Some("3"));
}

#[tokio::test]
async fn a_spot_cap_is_accepted_and_recorded() {
    let World { p, o, s, .. } = world("spotcap", "proj", "c").await;
    let mut req = instance_req(&o, &s.subnet, &s.firewall, "proj", "c.node[5]");
    req.attrs.insert("pricing".into(), json!("spot"));
    req.attrs.insert("spot_max_price".into(), json!(1.25));
    let made = create(&*p, &req).await;
    assert_eq!(made.attrs["spot_max_price"], json!(1.25));
    let read = read_one(&*p, &o.region, ResourceKind::Instance, &made.id).await;
    assert_eq!(
        read[0].attrs["spot_max_price"],
        json!(1.25),
        "kept in the inventory"
    );
}
