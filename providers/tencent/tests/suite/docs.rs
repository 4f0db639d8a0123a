//! The Tencent provider against what Tencent Cloud's documentation says, as
//! the stand-in (`gpuform_standins::tencent::TencentMock`) models it: failed
//! launches, system disks tagged like their instance, the recycle bin,
//! placement group quotas, the China site's image names, tag rules, and
//! answers missing their documented body. Each test cites its page.

use crate::common;

use common::{
    all_owned, create, delete, ids_of, network, node_request, placement, provider, read, request,
    scope, started, update, Net, PROJECT, TYPE, ZONE,
};
use gpuform_provider::{CreateRequest, ErrorKind, Provider, ResourceKind};
use gpuform_standins::tencent::TencentMock;
use gpuform_standins::MockCloud;
use serde_json::json;

fn node(net: &Net, i: usize, image: &str, placement: Option<&str>) -> CreateRequest {
    let a = json!({"instance_type": TYPE, "zone": ZONE, "image": image, "pricing": "on-demand"});
    node_request(net, &format!("cluster.d.node[{i}]"), a, placement)
}

/// 213/15753 (InstanceState): a launch can end LAUNCH_FAILED. That is a
/// failed create, not a node: the instance is released (it would keep its
/// subnet) and the error is `capacity`, which the engine fails over on.
#[tokio::test]
async fn a_failed_launch_is_released_and_fails_over() {
    let (mock, p, net) = started().await;
    mock.set_launch_fails(TYPE, ZONE);
    let e = p
        .create(&node(&net, 0, "ubuntu-22.04", None))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Capacity, "{e}");
    assert_eq!(e.code.as_deref(), Some("LAUNCH_FAILED"));
    assert!(
        ids_of(&mock, ResourceKind::Instance).is_empty(),
        "the failed instance is released: {:?}",
        mock.resources()
    );
    let listed = all_owned(&p).await;
    assert!(listed.iter().all(|r| r.kind != ResourceKind::Instance));
    // Nothing holds the subnet any more.
    delete(&p, ResourceKind::Subnet, &net.subnet.id).await;
}

/// RunInstances' TagSpecification tags are bound to the instance's CBS disks
/// too (https://cloud.tencent.com/document/api/213/15730): its system disk
/// carries the node's address and token. Only data disks are volumes
/// (DescribeDisks `disk-usage`, 362/16315).
#[tokio::test]
async fn system_disks_are_not_volumes() {
    let (mock, p, net) = started().await;
    let inst = create(&p, &node(&net, 0, "ubuntu-22.04", None)).await;
    let disk = json!({"zone": ZONE, "size_gb": 50});
    let refs = [("instance", inst.id.as_str())];
    let vol = create(
        &p,
        &request(ResourceKind::Volume, "cluster.d.volume[0]", disk, &refs),
    )
    .await;

    // The stand-in models the page: the system disk has the node's tags.
    let system = mock.system_disk(&inst.id).expect("system disk");
    let tags = mock.tags(&system).expect("tags");
    assert!(tags.contains(&("gpuform:address".into(), "cluster.d.node[0]".into())));

    let listed = all_owned(&p).await;
    let volumes: Vec<_> = listed
        .iter()
        .filter(|r| r.kind == ResourceKind::Volume)
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(volumes, vec![vol.id.clone()], "{listed:#?}");
    let node_address: Vec<_> = listed
        .iter()
        .filter(|r| r.ownership.as_ref().unwrap().address == "cluster.d.node[0]")
        .map(|r| (r.kind, r.id.clone()))
        .collect();
    assert_eq!(
        node_address,
        vec![(ResourceKind::Instance, inst.id.clone())]
    );
    // Read by id, a system disk is no volume either.
    let read = read(&p, ResourceKind::Volume, &[system]).await;
    assert!(read.is_empty(), "{read:#?}");
}

/// TerminateInstances puts a pay-as-you-go instance in the recycle bin, where
/// it keeps its subnet and security groups for up to 2 hours
/// (https://www.tencentcloud.com/document/product/213/4931, 213/4856). Delete
/// terminates it again from there and waits for the release, so that the
/// subnet and group can go next.
#[tokio::test]
async fn deleting_an_instance_releases_it_from_the_recycle_bin() {
    let (mock, p, net) = started().await;
    let a = create(&p, &node(&net, 0, "ubuntu-22.04", None)).await;
    delete(&p, ResourceKind::Instance, &a.id).await;
    assert_eq!(mock.instance_state(&a.id), None, "released, not in the bin");

    // One terminated in the console sits in the recycle bin (SHUTDOWN):
    // deleting the subnet and group releases gpuform's recycled instances.
    let b = create(&p, &node(&net, 1, "ubuntu-22.04", None)).await;
    assert!(mock.terminate_behind(&b.id));
    assert_eq!(mock.instance_state(&b.id).as_deref(), Some("SHUTDOWN"));
    assert!(by_kind(&all_owned(&p).await, ResourceKind::Instance).is_empty());
    delete(&p, ResourceKind::Subnet, &net.subnet.id).await;
    delete(&p, ResourceKind::Firewall, &net.firewall.id).await;
    assert_eq!(mock.instance_state(&b.id), None);
}

fn by_kind(list: &[gpuform_provider::ObservedResource], kind: ResourceKind) -> Vec<String> {
    list.iter()
        .filter(|r| r.kind == kind)
        .map(|r| r.id.clone())
        .collect()
}

/// A spread placement group holds a bounded number of instances
/// (CvmInHostGroupQuota, DescribeDisasterRecoverGroupQuota
/// https://cloud.tencent.com/document/api/213/17811): RunInstances past it
/// answers ResourceInsufficient.DisasterRecoverGroupCvmQuota, a quota, which
/// another zone would not cure.
#[tokio::test]
async fn a_full_placement_group_is_a_quota_not_capacity() {
    let (_mock, p, net) = started().await;
    let group = create(&p, &placement("cluster.d.placement", json!({}))).await;
    let mut i = 0;
    let e = loop {
        match p
            .create(&node(&net, i, "ubuntu-22.04", Some(&group.id)))
            .await
        {
            Ok(_) => i += 1,
            Err(e) => break e,
        }
        assert!(i <= 100, "the group never filled up");
    };
    assert_eq!(
        e.code.as_deref(),
        Some("ResourceInsufficient.DisasterRecoverGroupCvmQuota")
    );
    assert_eq!(e.kind, ErrorKind::Quota, "{e}");
}

/// The China site names public images "… 64位" where the international
/// site writes "… 64bit" (https://cloud.tencent.com/document/api/213/1272).
#[tokio::test]
async fn china_site_image_names_resolve() {
    let mock = TencentMock::start();
    mock.use_china_site_image_names();
    let p = provider(&mock);
    let net = network(&p).await;
    // The logical name resolves on the China site.
    let inst = create(&p, &node(&net, 0, "ubuntu-22.04", None)).await;
    assert_eq!(inst.attrs["image"], json!("ubuntu-22.04"));
}

/// An answer without the list its page documents is an error, never an
/// empty list: read as "nothing exists" it would plan creates for what does.
#[tokio::test]
async fn an_answer_without_its_documented_body_is_an_error() {
    let (mock, p, _net) = started().await;
    assert!(!all_owned(&p).await.is_empty());
    mock.strip_answer(Some(0));
    let e = p.list_owned(&scope(), PROJECT).await.unwrap_err();
    assert!(e.message.contains("VpcSet"), "{e}");

    // A throttled refresh is an error too, never a shorter list.
    mock.throttle_next(1);
    let e = p.list_owned(&scope(), PROJECT).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Throttled);
    assert_eq!(all_owned(&p).await.len(), 3);

    // A create answer without its documented object is an error, not a
    // resource with an empty id; the retry (same token) makes exactly one.
    let cidr = json!({"cidr": "10.1.0.0/16"});
    let req = request(ResourceKind::Network, "cluster.e.network", cidr, &[]);
    mock.strip_answer(Some(0));
    assert!(p.create(&req).await.is_err());
    let vpc = p.create(&req).await.expect("retry");
    assert!(vpc.id.starts_with("vpc-"), "{vpc:?}");
    let made: Vec<_> = mock
        .resources()
        .into_iter()
        .filter(|r| r.address.as_deref() == Some("cluster.e.network"))
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
}

/// Tag values follow the rules of the tag "Use Limits" page
/// (https://www.tencentcloud.com/document/product/651/13354): refused before
/// any call.
#[tokio::test]
async fn tags_follow_tencent_rules() {
    let mock = TencentMock::start();
    let p = provider(&mock);
    let before = mock.requests();
    let a = json!({"cidr": "10.0.0.0/16", "tags": {"team": "r&d"}});
    let bad = request(ResourceKind::Network, "cluster.d.network", a, &[]);
    let e = p.create(&bad).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(e.message.contains('&'), "{e}");
    assert!(e.message.contains("hint: use letters"), "{e}");
    // gpuform's namespace and Tencent's reserved prefixes, on updates too.
    for (key, says) in [
        ("gpuform:x", "reserved for gpuform"),
        ("QCS:x", "reserved by tencent"),
        ("project-x", "reserved by tencent"),
    ] {
        let mut req = bad.clone();
        req.attrs.insert("tags".into(), json!({ key: "1" }));
        let e = p.create(&req).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
        assert!(e.message.contains(says), "{key}: {e}");
        let changes = json!({"tags": { key: "1" }});
        let e = update(&p, ResourceKind::Network, "vpc-x", changes).await;
        let e = e.unwrap_err();
        assert!(e.message.contains(says), "{key}: {e}");
    }
    assert_eq!(mock.requests(), before, "refused before any call");
}

/// A group's rules are read back (DescribeSecurityGroupPolicies,
/// https://www.tencentcloud.com/document/api/215/15804): what create wrote
/// reads back as the neutral `ingress` it was given (port ranges, ICMP),
/// a group without the members' policy reports `MEMBER_RULE_MISSING` (a new
/// group denies everything, 215/15806), and a policy removed by another
/// client is missing from what read and list_owned report.
#[tokio::test]
async fn firewall_rules_are_read_back() {
    let (mock, p, net) = started().await;
    let ingress = json!([
        {"protocol": "tcp", "from_port": 8000, "to_port": 8100, "cidr": "10.1.0.0/16"},
        {"protocol": "tcp", "from_port": 0, "to_port": 65535, "cidr": "10.3.0.0/16"},
        {"protocol": "icmp", "from_port": 0, "to_port": 0, "cidr": "10.2.0.0/16"},
    ]);
    // Rules are a set: observed in the one order resolve writes them in and
    // every provider reports them in (`ObservedIngress`), whatever order the
    // request listed them in.
    let canonical = json!([ingress[1], ingress[0], ingress[2]]);
    let a = json!({ "ingress": ingress });
    let refs = [("network", net.network.id.as_str())];
    let sg = create(
        &p,
        &request(ResourceKind::Firewall, "cluster.d.firewall", a, &refs),
    )
    .await;
    let read_ingress = || async {
        let read = read(&p, ResourceKind::Firewall, std::slice::from_ref(&sg.id)).await;
        read[0].attrs["ingress"].clone()
    };
    assert_eq!(
        sg.attrs["ingress"], canonical,
        "create reports what it wrote"
    );
    assert_eq!(read_ingress().await, canonical, "read back as written");
    let listed = all_owned(&p).await;
    let fw = listed.iter().find(|o| o.id == sg.id).expect("listed");
    assert_eq!(fw.attrs["ingress"], canonical, "listed as written");

    // Another client removes a CIDR policy: read reports the rest.
    assert_eq!(
        mock.remove_ingress_behind(&sg.id, |p| p["CidrBlock"] == "10.1.0.0/16"),
        1
    );
    assert_eq!(
        read_ingress().await,
        json!([ingress[1], ingress[2]]),
        "the removed rule is gone from what is observed"
    );

    // ... and the members' policy: the marker says so.
    let id = sg.id.clone();
    assert_eq!(
        mock.remove_ingress_behind(&sg.id, move |p| p["SecurityGroupId"] == id.as_str()),
        1
    );
    assert_eq!(
        read_ingress().await,
        json!([
            ingress[1],
            ingress[2],
            gpuform_provider::resource::member_rule_missing()
        ]),
    );

    // ... and egress (a group with no Egress policy lets nothing out):
    // its marker too, so the plan repairs what a clean diff would hide.
    assert_eq!(mock.remove_egress_behind(&sg.id), 1);
    assert_eq!(
        read_ingress().await,
        json!([
            ingress[1],
            ingress[2],
            gpuform_provider::resource::member_rule_missing(),
            gpuform_provider::resource::egress_missing()
        ]),
    );

    // An update writes the whole set back, egress included.
    let changes = json!({ "ingress": ingress });
    let updated = update(&p, ResourceKind::Firewall, &sg.id, changes);
    let updated = updated.await.unwrap();
    assert_eq!(updated.attrs["ingress"], canonical);
    assert_eq!(read_ingress().await, canonical, "egress is back");
}
