//! Request shapes, checked on the built request (nothing is sent).

use super::*;
use crate::instances::launch_failure;
use aws_sdk_ec2::config::{BehaviorVersion, Region};
use aws_sdk_ec2::types::{Instance, InstanceStateName};

fn offline_client() -> Client {
    // Never sends anything: these tests only look at built requests.
    let conf = aws_sdk_ec2::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .build();
    Client::from_conf(conf)
}

fn plan() -> InstancePlan {
    InstancePlan {
        instance_type: "p4d.24xlarge".into(),
        image_id: "ami-03c3da4cfa8e8943a".into(),
        root_device_name: Some("/dev/xvda".into()),
        root_gb: Some(500),
        subnet_id: Some("subnet-1".into()),
        security_group_id: Some("sg-1".into()),
        placement_group: Some("gpuform-pg".into()),
        zone: None,
        spot: false,
        spot_max_price: None,
        efa_interfaces: 4,
        capacity_reservation: None,
        capacity_block: false,
        user_data: Some("#!/bin/sh\necho hi\n".into()),
        client_token: "tok-1".into(),
        instance_tags: vec![("gpuform:project".into(), "p".into())],
        volume_tags: vec![
            ("gpuform:project".into(), "p".into()),
            (
                crate::tags::KIND_TAG.into(),
                crate::tags::ROOT_VOLUME_KIND.into(),
            ),
        ],
    }
}

#[test]
fn run_instances_with_efa_placement_and_root_volume() {
    let c = offline_client();
    let b = run_instances(&c, &plan());
    let i = b.as_input();
    assert_eq!(i.get_min_count(), &Some(1));
    assert_eq!(i.get_max_count(), &Some(1));
    assert_eq!(i.get_client_token().as_deref(), Some("tok-1"));
    assert_eq!(
        i.get_instance_type().as_ref().map(|t| t.as_str()),
        Some("p4d.24xlarge")
    );
    // EFA: subnet and group on the interfaces, not on the request.
    assert_eq!(i.get_subnet_id(), &None);
    assert_eq!(i.get_security_group_ids(), &None);
    let nis = i.get_network_interfaces().as_ref().unwrap();
    assert_eq!(nis.len(), 4);
    for (n, ni) in nis.iter().enumerate() {
        assert_eq!(ni.interface_type(), Some("efa"));
        assert_eq!(ni.network_card_index(), Some(n as i32));
        assert_eq!(ni.device_index(), Some(if n == 0 { 0 } else { 1 }));
        assert_eq!(ni.subnet_id(), Some("subnet-1"));
        assert_eq!(ni.groups(), ["sg-1".to_string()]);
    }
    assert_eq!(
        i.get_placement().as_ref().and_then(|p| p.group_name()),
        Some("gpuform-pg")
    );
    let bdm = &i.get_block_device_mappings().as_ref().unwrap()[0];
    assert_eq!(bdm.device_name(), Some("/dev/xvda"));
    assert_eq!(bdm.ebs().and_then(|e| e.volume_size()), Some(500));
    assert_eq!(
        bdm.ebs().and_then(|e| e.delete_on_termination()),
        Some(true)
    );
    let specs = i.get_tag_specifications().as_ref().unwrap();
    assert_eq!(specs[0].resource_type(), Some(&ResourceType::Instance));
    assert_eq!(specs[1].resource_type(), Some(&ResourceType::Volume));
    assert_eq!(specs[1].tags().len(), 2);
    assert_eq!(
        i.get_user_data().as_deref(),
        Some("IyEvYmluL3NoCmVjaG8gaGkK")
    );
    assert_eq!(i.get_instance_market_options(), &None);
    assert_eq!(i.get_capacity_reservation_specification(), &None);
}

#[test]
fn run_instances_into_a_reservation_names_only_its_target() {
    let c = offline_client();
    let mut p = plan();
    p.capacity_reservation = Some("cr-0123456789abcdef0".into());
    let b = run_instances(&c, &p);
    let spec = b
        .as_input()
        .get_capacity_reservation_specification()
        .clone()
        .unwrap();
    assert_eq!(
        spec.capacity_reservation_target()
            .and_then(|t| t.capacity_reservation_id()),
        Some("cr-0123456789abcdef0")
    );
    // A preference beside a target is refused by EC2 unless it is
    // capacity-reservations-only: none is sent.
    assert_eq!(spec.capacity_reservation_preference(), None);
}

#[test]
fn run_instances_spot_without_efa() {
    let c = offline_client();
    let mut p = plan();
    p.instance_type = "g4dn.xlarge".into();
    p.efa_interfaces = 0;
    p.spot = true;
    p.placement_group = None;
    p.zone = Some("us-east-1a".into());
    let b = run_instances(&c, &p);
    let i = b.as_input();
    assert_eq!(i.get_network_interfaces(), &None);
    assert_eq!(i.get_subnet_id().as_deref(), Some("subnet-1"));
    assert_eq!(
        i.get_security_group_ids().as_deref(),
        Some(&["sg-1".to_string()][..])
    );
    let mo = i.get_instance_market_options().as_ref().unwrap();
    assert_eq!(mo.market_type(), Some(&MarketType::Spot));
    assert_eq!(
        mo.spot_options().and_then(|s| s.spot_instance_type()),
        Some(&SpotInstanceType::OneTime)
    );
    assert_eq!(mo.spot_options().and_then(|s| s.max_price()), None);
    p.spot_max_price = Some("1.25".into());
    let capped = run_instances(&c, &p);
    let capped = capped.as_input().get_instance_market_options().as_ref();
    assert_eq!(
        capped.and_then(|m| m.spot_options()?.max_price()),
        Some("1.25"),
        "the spot cap is SpotOptions.MaxPrice"
    );
    let pl = i.get_placement().as_ref().unwrap();
    assert_eq!(pl.group_name(), None);
    assert_eq!(pl.availability_zone(), Some("us-east-1a"));
}

#[test]
fn placement_group_request_shape() {
    let c = offline_client();
    let tags = vec![
        ("gpuform:project".to_string(), "p".to_string()),
        ("gpuform:token".into(), "t".into()),
    ];
    let b = create_placement_group(
        &c,
        "gpuform-p-cluster-trainer-1234",
        PlacementStrategy::Cluster,
        &tags,
    );
    let i = b.as_input();
    assert_eq!(
        i.get_group_name().as_deref(),
        Some("gpuform-p-cluster-trainer-1234")
    );
    assert_eq!(i.get_strategy(), &Some(Ec2Strategy::Cluster));
    let spec = &i.get_tag_specifications().as_ref().unwrap()[0];
    assert_eq!(spec.resource_type(), Some(&ResourceType::PlacementGroup));
    assert_eq!(spec.tags().len(), 2);
    assert_eq!(spec.tags()[1].key(), Some("gpuform:token"));
    let spread = create_placement_group(&c, "x", PlacementStrategy::Spread, &tags);
    assert_eq!(spread.as_input().get_strategy(), &Some(Ec2Strategy::Spread));
}

fn launched(state: InstanceStateName, reason: Option<&str>) -> Instance {
    let mut b = Instance::builder()
        .instance_id("i-0123456789abcdef0")
        .state(
            aws_sdk_ec2::types::InstanceState::builder()
                .name(state)
                .build(),
        );
    if let Some(code) = reason {
        b = b.state_reason(
            aws_sdk_ec2::types::StateReason::builder()
                .code(code)
                .message("reason text")
                .build(),
        );
    }
    b.build()
}

/// Issue 15 point 3: `pending` → `terminated` is a failed create, and
/// its StateReason decides what the engine does with it.
#[test]
fn a_launch_that_terminates_is_a_failed_create() {
    for state in [InstanceStateName::Pending, InstanceStateName::Running] {
        assert!(launch_failure(&launched(state, None)).is_none());
    }
    let cases = [
        ("Server.InsufficientInstanceCapacity", ErrorKind::Capacity),
        ("Server.InternalError", ErrorKind::Capacity),
        ("Server.SpotInstanceTermination", ErrorKind::Capacity),
        ("Client.VolumeLimitExceeded", ErrorKind::Quota),
        ("Client.InternalError", ErrorKind::Invalid),
        ("Client.InvalidSnapshot.NotFound", ErrorKind::Invalid),
    ];
    for state in [
        InstanceStateName::Terminated,
        InstanceStateName::ShuttingDown,
    ] {
        for (code, kind) in cases {
            let e = launch_failure(&launched(state.clone(), Some(code)))
                .unwrap_or_else(|| panic!("{state:?} {code} is a failed launch"));
            assert_eq!(e.kind, kind, "{code}: {e}");
            assert_eq!(e.code.as_deref(), Some(code));
            assert!(e.to_string().contains("i-0123456789abcdef0"), "{e}");
        }
    }
    let e = launch_failure(&launched(InstanceStateName::Terminated, None)).expect("failed");
    assert_eq!(e.kind, ErrorKind::Capacity);
}

/// A node reports its primary private address (DescribeInstances'
/// `PrivateIpAddress`): a k3s agent's user data is filled with its server's.
#[test]
fn an_instance_reports_its_private_address() {
    let i = Instance::builder()
        .instance_id("i-0123456789abcdef0")
        .private_ip_address("10.0.1.23")
        .state(
            aws_sdk_ec2::types::InstanceState::builder()
                .name(InstanceStateName::Running)
                .build(),
        )
        .build();
    let o = observe_instance(&i, "us-east-1", None);
    assert_eq!(o.attrs["private_ip"], "10.0.1.23");
    // Before EC2 has assigned one, the key is left out (not reported).
    let o = observe_instance(
        &launched(InstanceStateName::Pending, None),
        "us-east-1",
        None,
    );
    assert!(!o.attrs.contains_key("private_ip"));
}
