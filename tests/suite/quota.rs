//! Account quotas at plan time, on the sandbox's per-family quotas
//! (`quota=GROUP:LIMIT[@REGION]`): a plan that cannot fit exits 1 before
//! any create call, naming the quota; one that fits says `quota ok`; a
//! cluster with candidates lands where the quota fits; an unreadable quota
//! is a warning.

use crate::support;

use serde_json::Value;
use support::{assert_success, SandboxWork};

/// 4 × p5.48xlarge (192 vCPUs each: 768 of the P quota) in us-east-1.
const FOUR_P5: &str = "project: q\nclusters:\n  train:\n    cloud: aws\n    region: us-east-1\n    nodes: 4\n    gpu: H100:8\n    instance_type: p5.48xlarge\n";

/// The same nodes, anywhere in us-east-1 then us-west-2, in that order.
const TWO_REGIONS: &str = "project: q\nclusters:\n  train:\n    cloud: any\n    candidates: [aws/us-east-1, aws/us-west-2]\n    strategy: ordered\n    nodes: 4\n    gpu: H100:8\n";

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The sandbox inventory's log: every call that took effect is a line.
fn sandbox_log(w: &SandboxWork) -> String {
    std::fs::read_to_string(w.path().join(".gpuform/sandbox/inventory.jsonl")).unwrap_or_default()
}

#[test]
fn a_plan_over_the_p_quota_exits_1_before_any_create_naming_quota_need_have_raise_and_where_it_fits(
) {
    let w = SandboxWork::new("q", FOUR_P5);
    let faults = Some("quota=P:0@us-east-1,quota=P:1536");
    for cmd in ["plan", "apply"] {
        let mut args = vec![cmd, "spec.yaml", "--sandbox"];
        if cmd == "apply" {
            args.push("--auto-approve");
        }
        let out = w.run(&args, faults);
        let all = text(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {all}");
        for needle in [
            "Running On-Demand P instances (L-417A185B) in us-east-1",
            "needs 768 vCPUs, have 0 (used 0 of 0)",
            "nothing was created",
            "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-417A185B",
            // The first other region (by name) selling p5.48xlarge, with room.
            "it would fit in sandbox:aws ap-northeast-1 (1536 vCPUs left: used 0 of 1536)",
        ] {
            assert!(all.contains(needle), "{cmd}: missing `{needle}` in:\n{all}");
        }
        assert!(!all.contains("panicked"), "{all}");
        assert!(
            !sandbox_log(&w).contains("\"op\":\"create\""),
            "{cmd}: something was created:\n{}",
            sandbox_log(&w)
        );
    }
}

#[test]
fn a_plan_within_the_quota_says_quota_ok_with_used_and_limit_and_json_carries_it() {
    let w = SandboxWork::new("q", FOUR_P5);
    let faults = Some("quota=P:900");
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], faults);
    assert_success(&out, "plan within quota");
    let all = text(&out);
    assert!(
        all.contains(
            "quota ok: Running On-Demand P instances (L-417A185B) in us-east-1: need 768 vCPUs, used 0 of 900"
        ),
        "{all}"
    );
    let out = w.run(&["plan", "spec.yaml", "--sandbox", "--json"], faults);
    assert_success(&out, "plan --json");
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    let q = &plan["quotas"][0];
    assert_eq!(q["code"], "L-417A185B", "{plan:#}");
    assert_eq!(q["need"], 768);
    assert_eq!(q["used"], 0);
    assert_eq!(q["limit"], 900);
    assert_eq!(q["unit"], "vcpus");
    assert_eq!(q["fits"], true);
    assert_eq!(q["clusters"][0], "train");

    // Apply, then grow by one node: the used count comes from the
    // sandbox's own inventory, and 5 × 192 no longer fits 900.
    let out = w.run(
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
        faults,
    );
    assert_success(&out, "apply within quota");
    w.write_spec(&FOUR_P5.replace("nodes: 4", "nodes: 5"));
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], faults);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("needs 192 vCPUs, have 132 (used 768 of 900)"),
        "{all}"
    );
    // A running cluster is never moved by its quota (that is a migration):
    // the plan fails rather than planning the cluster elsewhere.
    assert!(all.contains("nothing was created"), "{all}");
    assert!(!all.contains("skips"), "{all}");
}

#[test]
fn a_cluster_whose_first_candidate_lacks_quota_lands_in_the_second() {
    let w = SandboxWork::new("q", TWO_REGIONS);
    let faults = Some("quota=P:0@us-east-1,quota=P:768@us-west-2");
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], faults);
    assert_success(&out, "plan with candidates");
    let all = text(&out);
    assert!(
        all.contains("cluster train skips sandbox:aws us-east-1: quota Running On-Demand P instances (L-417A185B) in us-east-1 has 0 vCPUs left, its new nodes need 768"),
        "{all}"
    );
    assert!(
        all.contains("quota ok: Running On-Demand P instances (L-417A185B) in us-west-2: need 768 vCPUs, used 0 of 768"),
        "{all}"
    );
    let out = w.run(
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
        faults,
    );
    assert_success(&out, "apply with candidates");
    let live = w.live();
    let nodes: Vec<_> = live.iter().filter(|l| l.kind == "instance").collect();
    assert_eq!(nodes.len(), 4, "{live:?}");
    assert!(nodes.iter().all(|n| n.region == "us-west-2"), "{nodes:?}");
}

#[test]
fn a_quota_that_cannot_be_read_is_a_warning_and_the_plan_goes_on() {
    let w = SandboxWork::new("q", FOUR_P5);
    let out = w.run(
        &["plan", "spec.yaml", "--sandbox"],
        Some("quota=P:0,quota_read=denied"),
    );
    assert_success(&out, "plan with quotas unreadable");
    let all = text(&out);
    assert!(
        all.contains("Warning: could not read the quota of on-demand p5.48xlarge on sandbox:aws in us-east-1"),
        "{all}"
    );
    assert!(all.contains("AccessDeniedException"), "{all}");
    assert!(
        all.contains("grant the credentials permission to read quotas"),
        "{all}"
    );
    assert!(all.contains("cluster.train.node[3]"), "{all}");
    // The create itself is still refused by the cloud's own check.
    let out = w.run(
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
        Some("quota=P:0,quota_read=denied"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("VcpuLimitExceeded"), "{}", text(&out));
}

/// Each Chinese cloud, against its stand-in: an apply whose plan is over
/// the account's quota exits 1 naming the quota, and nothing is created.
fn over_quota_on(
    cloud: &str,
    region: &str,
    gpu: &str,
    mock: &dyn gpuform_standins::MockCloud,
    code: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        format!("project: q\nclusters:\n  infer:\n    cloud: {cloud}\n    region: {region}\n    nodes: 2\n    gpu: {gpu}\n"),
    )
    .unwrap();
    let out = support::gpuform_at(
        dir.path(),
        &[mock],
        &["apply", "spec.yaml", "--auto-approve"],
    )
    .output()
    .expect("run gpuform");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{cloud}: {all}");
    for needle in [
        code,
        "nothing was created",
        "raise it:",
        "cluster infer needs",
    ] {
        assert!(
            all.contains(needle),
            "{cloud}: missing `{needle}` in:\n{all}"
        );
    }
    assert!(
        mock.resources().is_empty(),
        "{cloud}: something was created: {:?}",
        mock.resources()
    );
}

#[test]
fn alibaba_a_plan_over_the_postpaid_vcpu_quota_exits_1_naming_it() {
    let mock = gpuform_standins::alibaba::AlibabaMock::start();
    mock.set_vcpu_quota(gpuform_standins::alibaba::VcpuQuota {
        max_postpaid: 8,
        used_postpaid: 8,
        max_spot: 0,
        used_spot: 0,
    });
    over_quota_on(
        "alibaba",
        "cn-hangzhou",
        "A10",
        &mock,
        "max-postpaid-instance-vcpu-count",
    );
}

#[test]
fn tencent_a_plan_over_every_zones_instance_quota_exits_1_naming_it() {
    let mock = gpuform_standins::tencent::TencentMock::start();
    let zones = gpuform_catalog::Catalog::builtin()
        .region(gpuform_catalog::Cloud::Tencent, "ap-guangzhou")
        .expect("catalog region")
        .zones
        .clone();
    for z in &zones {
        mock.set_zone_quota("PostPaidQuotaSet", z, 1);
    }
    over_quota_on("tencent", "ap-guangzhou", "T4", &mock, "PostPaidQuotaSet");
}

#[test]
fn huawei_a_plan_over_the_core_quota_exits_1_naming_it() {
    let mock = gpuform_standins::huawei::HuaweiMock::start();
    mock.set_server_limits(gpuform_standins::huawei::ServerLimits {
        max_total_cores: 16,
        total_cores_used: 12,
        max_total_spot_cores: 0,
        total_spot_cores_used: 0,
    });
    over_quota_on("huawei", "cn-north-4", "T4", &mock, "maxTotalCores");
}
