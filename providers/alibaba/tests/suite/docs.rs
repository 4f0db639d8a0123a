//! The Alibaba provider against what the ECS/VPC API references document,
//! as the corrected stand-in (`gpuform_standins::alibaba`) enforces it:
//! issue 15, points 3, 5, 6, 7, 8 and 15. Each test names the page it
//! follows; the stand-in's own behaviour is checked through the raw signed
//! client too, so that a test cannot pass because gpuform and the stand-in
//! share a mistake.

use crate::common;

use common::*;
use gpuform_alibaba::{Endpoint, Product, RpcClient, SUBSCRIPTION_ENDS};
use gpuform_provider::{
    Attrs, CreateRequest, ErrorKind, ObservedResource, Provider, ProviderError, ResourceKind,
};
use gpuform_signing::Credentials;
use gpuform_standins::alibaba::{
    AlibabaMock, Fault, ACCESS_KEY_ID, ACCESS_KEY_SECRET, TAG_FILTER_CAP,
};
use gpuform_standins::harness::ssh;
use gpuform_standins::MockCloud;
use serde_json::{json, Value};

const IMAGE: &str = "ubuntu_22_04_x64_20G_alibase_20240130.vhd";

/// The signed client alone: calls the stand-in exactly as asked.
fn raw(mock: &AlibabaMock) -> RpcClient {
    RpcClient::new(
        Credentials::new(ACCESS_KEY_ID, ACCESS_KEY_SECRET),
        None,
        Some(Endpoint::parse(&mock.endpoint(), "test").unwrap()),
    )
    .unwrap()
}

async fn call(
    mock: &AlibabaMock,
    product: Product,
    action: &str,
    params: &[(&str, &str)],
) -> Result<Value, ProviderError> {
    let p: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    raw(mock).call(product, REGION, action, &p).await
}

fn node(net: &Net, i: usize, pricing: &str) -> CreateRequest {
    req(
        ResourceKind::Instance,
        &format!("c.node[{i}]"),
        json!({"instance_type": GPU, "zone": ZONE, "image": IMAGE, "pricing": pricing, "root_gb": 100}),
        &[("subnet", &net.vsw), ("firewall", &net.sg)],
    )
}

fn find<'a>(list: &'a [ObservedResource], id: &str) -> &'a ObservedResource {
    list.iter().find(|o| o.id == id).expect("listed")
}

/// Point 5. AuthorizeSecurityGroup / RevokeSecurityGroup error codes: 403
/// InvalidParamter.Conflict "The specified SecurityGroupId should be
/// different from the SourceGroupId". Members of a basic group reach each
/// other through InnerAccessPolicy=Accept (RunInstances: 同一个安全组内的实例之间
/// 可以互相访问; DescribeSecurityGroupAttribute; ModifySecurityGroupPolicy).
#[tokio::test]
async fn members_reach_each_other_without_a_self_rule() {
    let (mock, p, net) = start(ssh(), false).await;

    // The stand-in refuses a rule whose source is the group itself.
    let e = call(
        &mock,
        Product::Ecs,
        "AuthorizeSecurityGroup",
        &[
            ("SecurityGroupId", &net.sg),
            ("Permissions.1.IpProtocol", "all"),
            ("Permissions.1.PortRange", "-1/-1"),
            ("Permissions.1.SourceGroupId", &net.sg),
        ],
    )
    .await
    .unwrap_err();
    assert_eq!(e.code.as_deref(), Some("InvalidParamter.Conflict"), "{e}");

    // gpuform sent none: only the spec's rule is there, and refresh reads
    // the group back exactly as asked (no "missing member rule").
    let rules = mock.rules(&net.sg).unwrap();
    assert_eq!(
        rules,
        [(
            "TCP".into(),
            "22/22".into(),
            "0.0.0.0/0".into(),
            String::new()
        )]
    );
    let owned = OWNER.owned(&p).await;
    assert_eq!(find(&owned, &net.sg).attrs["ingress"], ssh());

    // Someone isolates the members (InnerAccessPolicy=Drop): refresh shows it,
    // and the update that follows sets it back to Accept.
    assert!(mock.set_inner_policy(&net.sg, "Drop"));
    let owned = OWNER.owned(&p).await;
    assert_ne!(find(&owned, &net.sg).attrs["ingress"], ssh());
    let mut change = Attrs::new();
    change.insert("ingress".into(), ssh());
    let fixed = p
        .update(&scope(), ResourceKind::Firewall, &net.sg, &change)
        .await
        .unwrap();
    assert_eq!(fixed.attrs["ingress"], ssh());
    let attr = call(
        &mock,
        Product::Ecs,
        "DescribeSecurityGroupAttribute",
        &[("SecurityGroupId", &net.sg)],
    )
    .await
    .unwrap();
    assert_eq!(attr["InnerAccessPolicy"], "Accept");

    // Someone drops all outbound traffic (an egress rule, Policy=drop): the
    // nodes could no longer download a driver or join Kubernetes. Refresh
    // says egress is missing; the update revokes the rule.
    assert!(mock.drop_egress_behind(&net.sg));
    let owned = OWNER.owned(&p).await;
    let seen = find(&owned, &net.sg).attrs["ingress"].clone();
    assert_eq!(
        seen.as_array().unwrap().last(),
        Some(&gpuform_provider::resource::egress_missing()),
        "{seen}"
    );
    let fixed = p
        .update(&scope(), ResourceKind::Firewall, &net.sg, &change)
        .await
        .unwrap();
    assert_eq!(fixed.attrs["ingress"], ssh());
    let egress = call(
        &mock,
        Product::Ecs,
        "DescribeSecurityGroupAttribute",
        &[("SecurityGroupId", &net.sg), ("Direction", "egress")],
    )
    .await
    .unwrap();
    assert_eq!(egress["Permissions"]["Permission"], json!([]), "{egress}");
}

/// Point 6. RunInstances, `PeriodUnit`: Week | Month (no Year); `Period`
/// with Month: 1-9, 12, 24, 36, 48, 60.
#[tokio::test]
async fn reserved_pricing_is_sent_in_months() {
    let (mock, p, net) = start(ssh(), true).await;

    // The stand-in rejects what RunInstances rejects.
    let run = |unit: &'static str, period: &'static str| {
        let (vsw, sg) = (net.vsw.clone(), net.sg.clone());
        let mock = &mock;
        async move {
            call(
                mock,
                Product::Ecs,
                "RunInstances",
                &[
                    ("ZoneId", ZONE),
                    ("InstanceType", GPU),
                    ("ImageId", IMAGE),
                    ("VSwitchId", &vsw),
                    ("SecurityGroupId", &sg),
                    ("InstanceChargeType", "PrePaid"),
                    ("PeriodUnit", unit),
                    ("Period", period),
                ],
            )
            .await
        }
    };
    let e = run("Year", "1").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    let e = run("Month", "10").await.unwrap_err();
    assert_eq!(e.code.as_deref(), Some("InvalidPeriod"), "{e}");
    let e = run("Week", "5").await.unwrap_err();
    assert_eq!(e.code.as_deref(), Some("InvalidPeriod"), "{e}");
    for (unit, period) in [("Month", "36"), ("Week", "4"), ("Month", "9")] {
        run(unit, period).await.unwrap();
    }

    // gpuform's reserved nodes are accepted and read back as asked.
    for (i, pricing) in ["reserved-1y", "reserved-3y"].iter().enumerate() {
        let o = create(&p, &node(&net, i, pricing)).await;
        assert_eq!(o.attrs["pricing"], json!(pricing));
        let ends = o.attrs[SUBSCRIPTION_ENDS].as_str().unwrap();
        assert!(ends.ends_with('Z') && ends.len() == 17, "{ends}");
    }
}

/// Point 7. DeleteInstances "releases one or more pay-as-you-go instances
/// or expired subscription instances" (TerminateSubscription=true for the
/// latter); nothing releases an unexpired subscription.
#[tokio::test]
async fn subscriptions_are_released_only_once_expired() {
    let (mock, p, net) = start(ssh(), true).await;
    let sub = create(&p, &node(&net, 0, "reserved-1y")).await;
    let payg = create(&p, &node(&net, 1, "on-demand")).await;

    // The plan's question, from the refreshed observation alone.
    let owned = OWNER.owned(&p).await;
    let why = p
        .delete_refusal(find(&owned, &sub.id))
        .expect("an unexpired subscription cannot be deleted");
    assert!(
        why.contains(&sub.id) && why.contains("expired") && why.contains("NotRenewal"),
        "{why}"
    );
    assert_eq!(p.delete_refusal(find(&owned, &payg.id)), None);

    // The stand-in refuses DeleteInstances for it, with or without TerminateSubscription.
    for extra in [None, Some(("TerminateSubscription", "true"))] {
        let mut params = vec![("InstanceId.1", sub.id.as_str()), ("Force", "true")];
        params.extend(extra);
        let e = call(&mock, Product::Ecs, "DeleteInstances", &params)
            .await
            .unwrap_err();
        assert_eq!(e.code.as_deref(), Some("ChargeTypeViolation"), "{e}");
    }

    // A delete that gets this far stops renewal and refuses, keeping the node.
    assert_eq!(mock.renewal(&sub.id).as_deref(), Some("Normal"));
    let e = p
        .delete(&scope(), ResourceKind::Instance, &sub.id)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert_eq!(mock.renewal(&sub.id).as_deref(), Some("NotRenewal"));
    assert_eq!(mock.status(&sub.id).as_deref(), Some("Running"));

    // Once expired it is released (TerminateSubscription=true), like pay-as-you-go.
    assert!(mock.expire(&sub.id));
    let owned = OWNER.owned(&p).await;
    assert_eq!(p.delete_refusal(find(&owned, &sub.id)), None);
    for id in [&sub.id, &payg.id] {
        OWNER.delete(&p, ResourceKind::Instance, id).await;
        assert_eq!(mock.status(id), None, "{id} released");
    }
}

/// Point 8. DescribeInstances / DescribeDisks / DescribeSecurityGroups /
/// DescribeVpcs / DescribeVSwitches `Tag.N.Key`: a tag-filtered listing
/// holds at most 1,000 resources; ListTagResources lists past that.
#[tokio::test]
async fn tagged_listings_past_the_cap_are_complete() {
    let (mock, p, net) = start(ssh(), true).await;
    // 1,100 tagged instances, 100 per RunInstances (Amount ≤ 100), straight
    // through the signed client.
    let want = TAG_FILTER_CAP + 100;
    for batch in 0..want / 100 {
        let token = format!("bulk-{batch}");
        let owner = own("c.bulk");
        let tags = owner.to_tags();
        let mut params: Vec<(String, String)> = [
            ("ZoneId", ZONE),
            ("InstanceType", GPU),
            ("ImageId", IMAGE),
            ("VSwitchId", net.vsw.as_str()),
            ("SecurityGroupId", net.sg.as_str()),
            ("Amount", "100"),
            ("ClientToken", token.as_str()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (n, (k, v)) in tags.iter().enumerate() {
            params.push((format!("Tag.{}.Key", n + 1), k.to_string()));
            params.push((format!("Tag.{}.Value", n + 1), v.to_string()));
        }
        raw(&mock)
            .call(Product::Ecs, REGION, "RunInstances", &params)
            .await
            .unwrap();
    }

    // The stand-in cuts a tag-filtered listing at the cap, as documented.
    let mut seen = 0;
    let mut next = String::new();
    loop {
        let mut params = vec![
            ("Tag.1.Key", "gpuform:project"),
            ("Tag.1.Value", "llm"),
            ("MaxResults", "100"),
        ];
        if !next.is_empty() {
            params.push(("NextToken", &next));
        }
        let page = call(&mock, Product::Ecs, "DescribeInstances", &params)
            .await
            .unwrap();
        seen += page["Instances"]["Instance"].as_array().unwrap().len();
        next = page["NextToken"].as_str().unwrap_or_default().to_string();
        if next.is_empty() {
            break;
        }
    }
    assert_eq!(seen, TAG_FILTER_CAP);

    // gpuform lists every one of them, and every system disk's size.
    let owned = OWNER.owned(&p).await;
    let instances: Vec<&ObservedResource> = owned
        .iter()
        .filter(|o| o.kind == ResourceKind::Instance)
        .collect();
    assert_eq!(instances.len(), want);
    assert!(instances.iter().all(|o| o.attrs.contains_key("root_gb")));
    let ids: Vec<String> = instances.iter().map(|o| o.id.clone()).collect();
    let read = OWNER.read(&p, ResourceKind::Instance, &ids).await;
    assert_eq!(read.len(), want);
    assert!(read.iter().all(|o| o.attrs.contains_key("root_gb")));
}

/// Point 3. "System events related to instance creation failures": after
/// RunInstances answered, an instance whose creation fails shows Stopped
/// (SystemFailure.Delete) and is released. It is not a node: the create
/// fails as capacity (so the apply fails over) and leaves nothing behind.
#[tokio::test]
async fn a_failed_launch_is_a_capacity_failure_not_a_node() {
    let (mock, p, net) = start(ssh(), false).await;
    mock.inject(launch_fails(ZONE));
    let e = p.create(&node(&net, 0, "on-demand")).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Capacity, "{e}");
    assert_eq!(e.code.as_deref(), Some("SystemFailure.Delete"));
    assert!(
        mock.resources()
            .iter()
            .all(|r| r.kind != ResourceKind::Instance),
        "the failed instance was released: {:?}",
        mock.resources()
    );
    mock.inject(launch_fails(""));
    // A new attempt (a new token, as after a failover) makes a running node.
    let mut again = node(&net, 0, "on-demand");
    again.ownership.token = "gf-second-attempt".into();
    let o = create(&p, &again).await;
    assert_eq!(o.status, "running");
}

/// Point 15. A 2xx answer without the documented body (what a throttling
/// proxy hands back) is an error, never an empty listing: every Describe
/// call a refresh makes, and the group rules.
#[tokio::test]
async fn answers_without_the_documented_body_are_errors() {
    let (mock, p, net) = start(ssh(), true).await;
    let n = create(&p, &node(&net, 0, "on-demand")).await;
    let full = OWNER.owned(&p).await;
    for action in [
        "DescribeVpcs",
        "DescribeVSwitches",
        "DescribeSecurityGroups",
        "DescribeSecurityGroupAttribute",
        "DescribeDeploymentSets",
        "DescribeInstances",
        "DescribeDisks",
    ] {
        // Several times: a call of the previous round that list_owned gave
        // up on (try_join) may still reach the stand-in and take one.
        for _ in 0..3 {
            mock.inject(Fault::BareOnce {
                action: action.into(),
            });
        }
        match p.list_owned(&scope(), "llm").await {
            Err(e) => assert_eq!(e.kind, ErrorKind::Transient, "{action}: {e}"),
            Ok(got) => panic!(
                "{action} answered without its body and list_owned saw {} of {} resources",
                got.len(),
                full.len()
            ),
        }
        mock.clear_faults();
    }
    for _ in 0..3 {
        mock.inject(Fault::BareOnce {
            action: "DescribeInstances".into(),
        });
    }
    let e = p
        .read(
            &scope(),
            ResourceKind::Instance,
            std::slice::from_ref(&n.id),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient, "{e}");
    mock.clear_faults();
    // Once the answers are whole again, so is the listing.
    assert_eq!(OWNER.owned(&p).await.len(), full.len());
}
