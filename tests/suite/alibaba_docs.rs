//! The gpuform binary against the Alibaba stand-in (tests/standins,
//! corrected to the ECS/VPC API references), for the issue-15 points that
//! only show at the level of a plan:
//! - point 15: a refresh that gets an answer without its documented body
//!   (a throttling proxy's bare 200) never plans a create for what exists;
//! - point 7: destroying an unexpired subscription is refused by the plan,
//!   saying why and until when, before anything is destroyed.

use crate::support;

use gpuform_provider::ResourceKind;
use gpuform_standins::alibaba::{AlibabaMock, Fault};
use gpuform_standins::{MockCloud, MockResource};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

fn spec(project: &str, pricing: &str) -> String {
    format!(
        "project: {project}\nclusters:\n  infer:\n    cloud: alibaba\n    region: cn-hangzhou\n    nodes: 2\n    gpu: A10\n    pricing: {pricing}\n    disk:\n      data_gb: 50\n"
    )
}

fn gpuform(dir: &Path, mock: &AlibabaMock, args: &[&str]) -> Output {
    support::gpuform_at(dir, &[mock], args)
        .output()
        .expect("run gpuform")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn applied(project: &str, pricing: &str) -> (AlibabaMock, tempfile::TempDir) {
    let mock = AlibabaMock::start();
    mock.set_pending_time(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec(project, pricing)).unwrap();
    let out = gpuform(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "apply: {}", text(&out));
    (mock, dir)
}

fn live(mock: &AlibabaMock) -> Vec<MockResource> {
    mock.resources()
}

#[test]
fn a_bare_answer_during_refresh_never_plans_a_create() {
    let (mock, dir) = applied("docs-bare", "on-demand");
    let before = live(&mock);
    assert_eq!(
        before
            .iter()
            .filter(|r| r.kind == ResourceKind::Instance)
            .count(),
        2
    );
    for action in [
        "DescribeInstances",
        "DescribeDisks",
        "DescribeSecurityGroups",
        "DescribeSecurityGroupAttribute",
        "DescribeVSwitches",
        "DescribeVpcs",
    ] {
        // Bare for the listing and for the by-id read that refresh makes of
        // what the listing missed (several times over, for retries).
        for _ in 0..4 {
            mock.inject(Fault::BareOnce {
                action: action.into(),
            });
        }
        let out = gpuform(
            dir.path(),
            &mock,
            &["plan", "spec.yaml", "--detailed-exitcode"],
        );
        let said = text(&out);
        // 0 (the read was retried and all is there) or 1 (an error), never
        // 2 with creates for resources that exist.
        assert_ne!(out.status.code(), Some(2), "{action}: {said}");
        assert!(!said.contains("will be created"), "{action}: {said}");
        mock.clear_faults();
    }
    assert_eq!(live(&mock), before, "a plan changes nothing");
}

#[test]
fn destroying_an_unexpired_subscription_is_refused_before_anything_goes() {
    let (mock, dir) = applied("docs-sub", "reserved-1y");
    let before = live(&mock);
    let node = before
        .iter()
        .find(|r| r.kind == ResourceKind::Instance)
        .expect("a node")
        .id
        .clone();

    let out = gpuform(dir.path(), &mock, &["plan", "spec.yaml", "--destroy"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&node) && said.contains("subscription") && said.contains("expired"),
        "the plan says what destroying a subscription means: {said}"
    );

    let out = gpuform(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        live(&mock),
        before,
        "nothing is destroyed, data disks included"
    );

    // Once the terms have run out, destroy releases everything.
    for r in before.iter().filter(|r| r.kind == ResourceKind::Instance) {
        assert!(mock.expire(&r.id));
    }
    let out = gpuform(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(live(&mock).is_empty(), "{:?}", live(&mock));
}

#[test]
fn a_launch_that_fails_after_run_instances_fails_over_to_the_next_zone() {
    let mock = AlibabaMock::start();
    mock.set_pending_time(Duration::from_millis(20));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        "project: docs-failover\nclusters:\n  infer:\n    cloud: alibaba\n    region: cn-hangzhou\n    zones: [cn-hangzhou-i, cn-hangzhou-j]\n    nodes: 1\n    gpu: A10\n    disk:\n      data_gb: 50\n",
    )
    .unwrap();
    let out = gpuform(dir.path(), &mock, &["plan", "spec.yaml", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan --json");
    let itype = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|c| c["after"]["instance_type"].as_str())
        .expect("a node in the plan")
        .to_string();
    // ECS "System events related to instance creation failures": accepted by
    // RunInstances, then Stopped and released (SystemFailure.Delete).
    mock.inject(Fault::LaunchFails {
        zone: "cn-hangzhou-i".into(),
        instance_type: itype,
    });
    let out = gpuform(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    let nodes: Vec<MockResource> = live(&mock)
        .into_iter()
        .filter(|r| r.kind == ResourceKind::Instance)
        .collect();
    assert_eq!(
        nodes.len(),
        1,
        "one node, the failed launch released: {nodes:?}"
    );
    let st: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(".gpuform/docs-failover.state.json")).unwrap(),
    )
    .unwrap();
    let node = &st["resources"]["cluster.infer.node[0]"];
    assert_eq!(node["id"], nodes[0].id.as_str());
    assert_eq!(node["attrs"]["zone"], "cn-hangzhou-j", "{node}");
    let out = gpuform(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// `Throttling.User` (the ECS error codes) on the reads of a refresh, for
/// a while: refresh retries them with backoff, as apply does, and the plan
/// is clean — never a create for what exists.
#[test]
fn a_throttled_refresh_is_retried() {
    let (mock, dir) = applied("docs-throttled", "on-demand");
    let before = live(&mock);
    for action in [
        "DescribeInstances",
        "DescribeDisks",
        "DescribeSecurityGroups",
    ] {
        for _ in 0..3 {
            mock.inject(Fault::Once {
                action: action.into(),
                status: 400,
                code: "Throttling.User".into(),
            });
        }
        let out = gpuform(
            dir.path(),
            &mock,
            &["plan", "spec.yaml", "--detailed-exitcode"],
        );
        assert_eq!(out.status.code(), Some(0), "{action}: {}", text(&out));
        mock.clear_faults();
    }
    assert_eq!(live(&mock), before, "a plan changes nothing");
}
