//! The Tencent provider against what Tencent Cloud's documentation says, as
//! the stand-in (`gpuform_standins::tencent::TencentMock`) models it: failed
//! launches, system disks tagged like their instance, the recycle bin,
//! placement group quotas, the China site's image names, tag rules, and
//! answers missing their documented body. Each test cites its page.

use gpuform_standins::tencent::{TencentMock, SECRET_ID, SECRET_KEY};
use gpuform_standins::MockCloud;
use gpuform_provider::{
    Attrs, CreateRequest, ErrorKind, OwnershipTags, Provider, ResourceKind, Scope,
};
use gpuform_signing::Credentials;
use gpuform_tencent::TencentProvider;
use serde_json::{json, Value};

const REGION: &str = "ap-guangzhou";
const ZONE: &str = "ap-guangzhou-3";
const TYPE: &str = "GN7.2XLARGE32";
const PROJECT: &str = "docs";

fn provider(mock: &TencentMock) -> TencentProvider {
    let url = reqwest::Url::parse(&mock.endpoint()).expect("url");
    TencentProvider::new(Credentials::new(SECRET_ID, SECRET_KEY), None, Some(url))
        .expect("provider")
}

fn scope() -> Scope {
    Scope {
        region: REGION.into(),
    }
}

fn attrs(pairs: &[(&str, Value)]) -> Attrs {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn request(kind: ResourceKind, address: &str, a: Attrs, refs: &[(&str, &str)]) -> CreateRequest {
    CreateRequest {
        kind,
        scope: scope(),
        attrs: a,
        refs: refs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ownership: OwnershipTags {
            project: PROJECT.into(),
            address: address.into(),
            token: format!("tok-{}", address.replace(['[', ']', '.'], "-")),
            lineage: "lineage-docs".into(),
        },
    }
}

struct Net {
    subnet: String,
    sg: String,
}

async fn network(p: &TencentProvider) -> Net {
    let vpc = p
        .create(&request(
            ResourceKind::Network,
            "cluster.d.network",
            attrs(&[("cidr", json!("10.0.0.0/16"))]),
            &[],
        ))
        .await
        .expect("vpc");
    let subnet = p
        .create(&request(
            ResourceKind::Subnet,
            &format!("cluster.d.subnet[{ZONE}]"),
            attrs(&[("zone", json!(ZONE)), ("cidr", json!("10.0.0.0/20"))]),
            &[("network", &vpc.id)],
        ))
        .await
        .expect("subnet");
    let sg = p
        .create(&request(
            ResourceKind::Firewall,
            "cluster.d.firewall",
            attrs(&[("ingress", json!([]))]),
            &[("network", &vpc.id)],
        ))
        .await
        .expect("firewall");
    Net {
        subnet: subnet.id,
        sg: sg.id,
    }
}

fn node(net: &Net, i: usize, image: &str, placement: Option<&str>) -> CreateRequest {
    let mut refs = vec![
        ("subnet", net.subnet.as_str()),
        ("firewall", net.sg.as_str()),
    ];
    if let Some(p) = placement {
        refs.push(("placement", p));
    }
    request(
        ResourceKind::Instance,
        &format!("cluster.d.node[{i}]"),
        attrs(&[
            ("instance_type", json!(TYPE)),
            ("zone", json!(ZONE)),
            ("image", json!(image)),
            ("pricing", json!("on-demand")),
        ]),
        &refs,
    )
}

fn instances(mock: &TencentMock) -> Vec<String> {
    mock.resources()
        .into_iter()
        .filter(|r| r.kind == ResourceKind::Instance)
        .map(|r| r.id)
        .collect()
}

/// 213/15753 (InstanceState): a launch can end LAUNCH_FAILED. That is a
/// failed create, not a node: the instance is released (it would keep its
/// subnet) and the error is `capacity`, which the engine fails over on.
#[tokio::test]
async fn a_failed_launch_is_released_and_fails_over() {
    let mock = TencentMock::start();
    let p = provider(&mock);
    let net = network(&p).await;
    mock.set_launch_fails(TYPE, ZONE);
    let e = p
        .create(&node(&net, 0, "ubuntu-22.04", None))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Capacity, "{e}");
    assert_eq!(e.code.as_deref(), Some("LAUNCH_FAILED"));
    assert!(
        instances(&mock).is_empty(),
        "the failed instance is released: {:?}",
        mock.resources()
    );
    let listed = p.list_owned(&scope(), PROJECT).await.unwrap();
    assert!(listed.iter().all(|r| r.kind != ResourceKind::Instance));
    // Nothing holds the subnet any more.
    p.delete(&scope(), ResourceKind::Subnet, &net.subnet)
        .await
        .expect("subnet free");
}

/// RunInstances' TagSpecification tags are bound to the instance's CBS disks
/// too (https://cloud.tencent.com/document/api/213/15730): its system disk
/// carries the node's address and token. Only data disks are volumes
/// (DescribeDisks `disk-usage`, 362/16315).
#[tokio::test]
async fn system_disks_are_not_volumes() {
    let mock = TencentMock::start();
    let p = provider(&mock);
    let net = network(&p).await;
    let inst = p
        .create(&node(&net, 0, "ubuntu-22.04", None))
        .await
        .expect("instance");
    let vol = p
        .create(&request(
            ResourceKind::Volume,
            "cluster.d.volume[0]",
            attrs(&[("zone", json!(ZONE)), ("size_gb", json!(50))]),
            &[("instance", &inst.id)],
        ))
        .await
        .expect("volume");

    // The stand-in models the page: the system disk has the node's tags.
    let system = mock.system_disk(&inst.id).expect("system disk");
    let tags = mock.tags(&system).expect("tags");
    assert!(tags.contains(&("gpuform:address".into(), "cluster.d.node[0]".into())));

    let listed = p.list_owned(&scope(), PROJECT).await.unwrap();
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
    let read = p
        .read(&scope(), ResourceKind::Volume, &[system])
        .await
        .unwrap();
    assert!(read.is_empty(), "{read:#?}");
}

/// TerminateInstances puts a pay-as-you-go instance in the recycle bin, where
/// it keeps its subnet and security groups for up to 2 hours
/// (https://www.tencentcloud.com/document/product/213/4931, 213/4856). Delete
/// terminates it again from there and waits for the release, so that the
/// subnet and group can go next.
#[tokio::test]
async fn deleting_an_instance_releases_it_from_the_recycle_bin() {
    let mock = TencentMock::start();
    let p = provider(&mock);
    let net = network(&p).await;
    let a = p
        .create(&node(&net, 0, "ubuntu-22.04", None))
        .await
        .expect("node 0");
    p.delete(&scope(), ResourceKind::Instance, &a.id)
        .await
        .expect("delete");
    assert_eq!(mock.instance_state(&a.id), None, "released, not in the bin");

    // One terminated in the console sits in the recycle bin (SHUTDOWN):
    // deleting the subnet and group releases gpuform's recycled instances.
    let b = p
        .create(&node(&net, 1, "ubuntu-22.04", None))
        .await
        .expect("node 1");
    assert!(mock.terminate_behind(&b.id));
    assert_eq!(mock.instance_state(&b.id).as_deref(), Some("SHUTDOWN"));
    let listed = p.list_owned(&scope(), PROJECT).await.unwrap();
    assert!(by_kind(&listed, ResourceKind::Instance).is_empty());
    p.delete(&scope(), ResourceKind::Subnet, &net.subnet)
        .await
        .expect("subnet");
    p.delete(&scope(), ResourceKind::Firewall, &net.sg)
        .await
        .expect("security group");
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
    let mock = TencentMock::start();
    let p = provider(&mock);
    let net = network(&p).await;
    let group = p
        .create(&request(
            ResourceKind::Placement,
            "cluster.d.placement",
            Attrs::new(),
            &[],
        ))
        .await
        .expect("placement group");
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
    let inst = p
        .create(&node(&net, 0, "ubuntu-22.04", None))
        .await
        .expect("the logical name resolves on the China site");
    assert_eq!(inst.attrs["image"], json!("ubuntu-22.04"));
}

/// An answer without the list its page documents is an error, never an
/// empty list: read as "nothing exists" it would plan creates for what does.
#[tokio::test]
async fn an_answer_without_its_documented_body_is_an_error() {
    let mock = TencentMock::start();
    let p = provider(&mock);
    let _net = network(&p).await;
    assert!(!p.list_owned(&scope(), PROJECT).await.unwrap().is_empty());
    mock.strip_answer(Some(0));
    let e = p.list_owned(&scope(), PROJECT).await.unwrap_err();
    assert!(e.message.contains("VpcSet"), "{e}");

    // A throttled refresh is an error too, never a shorter list.
    mock.throttle_next(1);
    let e = p.list_owned(&scope(), PROJECT).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Throttled);
    assert_eq!(p.list_owned(&scope(), PROJECT).await.unwrap().len(), 3);

    // A create answer without its documented object is an error, not a
    // resource with an empty id; the retry (same token) makes exactly one.
    let req = request(
        ResourceKind::Network,
        "cluster.e.network",
        attrs(&[("cidr", json!("10.1.0.0/16"))]),
        &[],
    );
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
    let bad = request(
        ResourceKind::Network,
        "cluster.d.network",
        attrs(&[
            ("cidr", json!("10.0.0.0/16")),
            ("tags", json!({"team": "r&d"})),
        ]),
        &[],
    );
    let e = p.create(&bad).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(e.message.contains('&'), "{e}");
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
    let mock = TencentMock::start();
    let p = provider(&mock);
    let vpc = p
        .create(&request(
            ResourceKind::Network,
            "cluster.d.network",
            attrs(&[("cidr", json!("10.0.0.0/16"))]),
            &[],
        ))
        .await
        .expect("vpc");
    let ingress = json!([
        {"protocol": "tcp", "from_port": 8000, "to_port": 8100, "cidr": "10.1.0.0/16"},
        {"protocol": "tcp", "from_port": 0, "to_port": 65535, "cidr": "10.3.0.0/16"},
        {"protocol": "icmp", "from_port": 0, "to_port": 0, "cidr": "10.2.0.0/16"},
    ]);
    let sg = p
        .create(&request(
            ResourceKind::Firewall,
            "cluster.d.firewall",
            attrs(&[("ingress", ingress.clone())]),
            &[("network", &vpc.id)],
        ))
        .await
        .expect("firewall");
    assert_eq!(sg.attrs["ingress"], ingress, "create reports what it wrote");
    let read = p
        .read(
            &scope(),
            ResourceKind::Firewall,
            std::slice::from_ref(&sg.id),
        )
        .await
        .unwrap();
    assert_eq!(read[0].attrs["ingress"], ingress, "read back as written");
    let listed = p.list_owned(&scope(), PROJECT).await.unwrap();
    let fw = listed.iter().find(|o| o.id == sg.id).expect("listed");
    assert_eq!(fw.attrs["ingress"], ingress, "listed as written");

    // Another client removes a CIDR policy: read reports the rest.
    assert_eq!(
        mock.remove_ingress_behind(&sg.id, |p| p["CidrBlock"] == "10.1.0.0/16"),
        1
    );
    let read = p
        .read(
            &scope(),
            ResourceKind::Firewall,
            std::slice::from_ref(&sg.id),
        )
        .await
        .unwrap();
    assert_eq!(
        read[0].attrs["ingress"],
        json!([ingress[1], ingress[2]]),
        "the removed rule is gone from what is observed"
    );

    // ... and the members' policy: the marker says so.
    let id = sg.id.clone();
    assert_eq!(
        mock.remove_ingress_behind(&sg.id, move |p| p["SecurityGroupId"] == id.as_str()),
        1
    );
    let read = p
        .read(
            &scope(),
            ResourceKind::Firewall,
            std::slice::from_ref(&sg.id),
        )
        .await
        .unwrap();
    assert_eq!(
        read[0].attrs["ingress"],
        json!([
            ingress[1],
            ingress[2],
            gpuform_provider::resource::member_rule_missing()
        ]),
    );

    // An update writes the whole set back.
    let mut changes = Attrs::new();
    changes.insert("ingress".into(), ingress.clone());
    let updated = p
        .update(&scope(), ResourceKind::Firewall, &sg.id, &changes)
        .await
        .unwrap();
    assert_eq!(updated.attrs["ingress"], ingress);
}
