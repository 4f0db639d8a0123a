//! gpuform (the library and the binary) on the Tencent Cloud points of issue
//! 15, against the stand-in (tests/standins, which models each
//! documented behaviour and cites its page): tag rules in `validate`, a
//! failed launch failing over, system disks and the recycle bin at plan and
//! destroy, and refreshes that get no usable answer.

use crate::support;

use gpuform::spec::{self, Vars};
use gpuform_standins::tencent::TencentMock;
use gpuform_standins::MockCloud;
use std::path::Path;
use std::process::Output;

fn spec_text(project: &str, extra: &str) -> String {
    format!(
        "project: {project}\nclusters:\n  infer:\n    cloud: tencent\n    region: ap-guangzhou\n    nodes: 1\n    gpu: T4\n    disk:\n      data_gb: 50\n{extra}"
    )
}

fn gpuform(dir: &Path, mock: &TencentMock, args: &[&str]) -> Output {
    support::gpuform_at(dir, &[mock], args)
        .output()
        .expect("run gpuform")
}

fn ok(dir: &Path, mock: &TencentMock, args: &[&str]) -> String {
    support::succeeded(&gpuform(dir, mock, args), args)
}

fn plan_exit(dir: &Path, mock: &TencentMock) -> (i32, String) {
    let out = gpuform(dir, mock, &["plan", "spec.yaml", "--detailed-exitcode"]);
    (
        out.status.code().expect("exit code"),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn state(dir: &Path, project: &str) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(dir.join(format!(".gpuform/{project}.state.json"))).expect("state"),
    )
    .expect("state json")
}

/// Tag values (and keys) that Tencent refuses (its tag "Use Limits" page,
/// https://www.tencentcloud.com/document/product/651/13354) are reported by
/// validation with file, line:column, YAML path and hint, for clusters that
/// may run on Tencent Cloud only.
#[test]
fn validate_checks_tencent_tag_rules() {
    let text = spec_text(
        "tags",
        "    tags:\n      team: r&d\n      owner:\n      cost center: ml\n",
    );
    let d = match spec::load_str("spec.yaml", &text, &Vars::new()) {
        Ok(_) => panic!("accepted a tag value Tencent refuses:\n{text}"),
        Err(d) => d,
    };
    let team = d
        .iter()
        .find(|x| x.yaml_path.as_deref() == Some("clusters.infer.tags.team"))
        .unwrap_or_else(|| panic!("no diagnostic for tags.team in:\n{d}"));
    assert_eq!(team.file, "spec.yaml");
    assert_eq!((team.line, team.column), (Some(11), Some(13)), "{team:?}");
    assert!(team.message.contains('&'), "{team:?}");
    assert!(team.hint.as_deref().is_some_and(|h| !h.is_empty()));
    let owner = d
        .iter()
        .find(|x| x.yaml_path.as_deref() == Some("clusters.infer.tags.owner"))
        .unwrap_or_else(|| panic!("an empty value is refused (values are 1-255 characters):\n{d}"));
    assert!(owner.message.contains("empty"), "{owner:?}");
    assert!(
        !d.iter()
            .any(|x| x.yaml_path.as_deref() == Some("clusters.infer.tags.cost center")),
        "inner spaces are allowed:\n{d}"
    );

    // The same tags on AWS are not Tencent's business.
    let aws = text
        .replace("cloud: tencent", "cloud: aws")
        .replace("ap-guangzhou", "us-east-1");
    assert!(spec::load_str("spec.yaml", &aws, &Vars::new()).is_ok());
    // `cloud: any` may land on Tencent unless its candidates exclude it.
    let any = |candidates: &str| {
        text.replace("cloud: tencent", "cloud: any")
            .replace("    region: ap-guangzhou\n", candidates)
    };
    assert!(spec::load_str("spec.yaml", &any("    candidates: [aws]\n"), &Vars::new()).is_ok());
    assert!(spec::load_str(
        "spec.yaml",
        &any("    candidates: [aws, tencent/ap-guangzhou]\n"),
        &Vars::new()
    )
    .is_err());
    assert!(spec::load_str("spec.yaml", &any(""), &Vars::new()).is_err());
}

/// A launch that ends LAUNCH_FAILED (213/15753) is a failed create: the
/// capacity failover moves the node to the next zone, and nothing of the
/// failed launch stays.
#[test]
fn a_failed_launch_fails_over_to_the_next_zone() {
    let mock = TencentMock::start();
    mock.set_launch_fails("GN7.2XLARGE32", "ap-guangzhou-3");
    let dir = tempfile::tempdir().unwrap();
    let text = spec_text("launch", "    zones: [ap-guangzhou-3, ap-guangzhou-4]\n");
    std::fs::write(dir.path().join("spec.yaml"), text).unwrap();
    ok(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);
    let st = state(dir.path(), "launch");
    let node = &st["resources"]["cluster.infer.node[0]"];
    assert_eq!(node["attrs"]["zone"], "ap-guangzhou-4", "{node:#}");
    let id = node["id"].as_str().unwrap();
    assert_eq!(mock.instance_state(id).as_deref(), Some("RUNNING"));
    let instances = mock
        .resources()
        .into_iter()
        .filter(|r| r.kind == gpuform_provider::ResourceKind::Instance)
        .count();
    assert_eq!(instances, 1, "{:?}", mock.resources());
    assert_eq!(plan_exit(dir.path(), &mock).0, 0);
}

/// System disks carry their instance's tags (213/15730) and are no volumes:
/// the plan after an apply is clean. Terminated instances wait in the
/// recycle bin holding their subnet and group (213/4931): destroy releases
/// them, also one terminated in the console, and leaves nothing.
#[test]
fn plans_stay_clean_and_destroy_empties_the_recycle_bin() {
    let mock = TencentMock::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec_text("bin", "")).unwrap();
    ok(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);
    let (code, plan) = plan_exit(dir.path(), &mock);
    assert_eq!(code, 0, "apply then plan shows no changes:\n{plan}");

    let st = state(dir.path(), "bin");
    let node = st["resources"]["cluster.infer.node[0]"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(mock.terminate_behind(&node));
    assert_eq!(mock.instance_state(&node).as_deref(), Some("SHUTDOWN"));
    ok(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve"],
    );
    assert!(
        mock.resources().is_empty(),
        "destroy leaves nothing: {:?}",
        mock.resources()
    );
}

/// A refresh that gets no usable answer — throttled (RequestLimitExceeded,
/// the API 3.0 common error codes 213/15694) or a body without its
/// documented list — fails; it never plans a create for what exists.
#[test]
fn a_refresh_without_answers_plans_no_create() {
    let mock = TencentMock::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec_text("throttle", "")).unwrap();
    ok(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);

    mock.throttle_next(1_000_000);
    let (code, out) = plan_exit(dir.path(), &mock);
    assert_eq!(code, 1, "a throttled refresh is an error:\n{out}");
    assert!(!out.contains("will be created"), "{out}");
    mock.throttle_next(0);

    // Each Describe call of the refresh in turn answers without its list.
    let before = mock.requests();
    assert_eq!(plan_exit(dir.path(), &mock).0, 0);
    let calls = mock.requests() - before;
    assert!(calls >= 6, "one call per kind at least ({calls})");
    for n in 0..calls as u32 {
        mock.strip_answer(Some(n));
        let (code, out) = plan_exit(dir.path(), &mock);
        // The read is retried (as apply retries): the plan is clean.
        assert_eq!(
            code, 0,
            "answer {n} of the refresh without its body, then whole:\n{out}"
        );
        assert!(!out.contains("will be created"), "{out}");
        mock.strip_answer(None);
    }
    assert_eq!(plan_exit(dir.path(), &mock).0, 0);
}

/// RequestLimitExceeded (213/15694) for a while: refresh retries its reads
/// with backoff, as apply does, and the plan is clean, not a create.
#[test]
fn a_throttled_refresh_is_retried() {
    let mock = TencentMock::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec_text("retried", "")).unwrap();
    ok(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);
    for n in [1, 3] {
        mock.throttle_next(n);
        let (code, out) = plan_exit(dir.path(), &mock);
        assert_eq!(code, 0, "{n} throttled answers, then a clean plan:\n{out}");
        assert!(!out.contains("will be created"), "{out}");
    }
}

/// Whether a group has the policy letting its members reach each other.
fn has_member_rule(mock: &TencentMock, sg: &str) -> bool {
    let (ingress, _) = mock.security_group_policies(sg).expect("group");
    ingress
        .iter()
        .any(|p| p["SecurityGroupId"] == sg && p["Action"] == "ACCEPT")
}

/// A new group denies all traffic until policies are added (CreateSecurityGroup,
/// https://www.tencentcloud.com/document/api/215/15806). An apply killed after
/// CreateSecurityGroup and before CreateSecurityGroupPolicies leaves the group
/// bare: refresh reads the rules back (DescribeSecurityGroupPolicies, 215/15804)
/// and the plan updates the group to complete it. A rule removed later by
/// another client is drift the plan puts back.
#[test]
fn firewall_rules_are_read_back_and_completed() {
    let extra = "    ingress:\n      - ports: \"8000-8100\"\n        cidr: 10.1.0.0/16\n      - protocol: icmp\n        ports: \"8\"\n        cidr: 10.2.0.0/16\n";
    let mock = TencentMock::start();
    let killer = gpuform_standins::Killer::install(&mock);
    // Kill at call 1, 2, ... until the kill lands right after CreateSecurityGroup.
    let mut bare = None;
    for n in 1u64..40 {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("spec.yaml"),
            spec_text(&format!("rules-{n}"), extra),
        )
        .unwrap();
        let args = support::SERIAL_APPLY;
        let mut cmd = support::gpuform_at(dir.path(), &[&mock], &args);
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let out = killer.run(&mock, &mut cmd, Some(n));
        assert!(
            out.status.code().is_none(),
            "call {n}: expected a kill, got {:?}",
            out.status
        );
        let groups: Vec<_> = mock
            .resources()
            .into_iter()
            .filter(|r| {
                r.kind == gpuform_provider::ResourceKind::Firewall
                    && r.address.is_some()
                    && mock.tags(&r.id).is_some_and(|t| {
                        t.iter()
                            .any(|(k, v)| k == "gpuform:project" && *v == format!("rules-{n}"))
                    })
            })
            .collect();
        if let Some(g) = groups.first() {
            let (ingress, egress) = mock.security_group_policies(&g.id).unwrap();
            if ingress.is_empty() && egress.is_empty() {
                bare = Some((dir, n, g.id.clone()));
                break;
            }
        }
    }
    mock.set_hook(None);
    let (dir, n, sg) = bare.expect("some kill lands between CreateSecurityGroup and its policies");
    let (code, out) = plan_exit(dir.path(), &mock);
    assert_eq!(code, 2, "the bare group is a change:\n{out}");
    assert!(
        out.contains("cluster.infer.firewall will be updated in place"),
        "the plan completes the group's rules:\n{out}"
    );
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );
    assert_eq!(
        firewall_id_of(&mock, &format!("rules-{n}")),
        sg,
        "the same group, completed"
    );
    assert!(has_member_rule(&mock, &sg), "members reach each other");
    let (ingress, egress) = mock.security_group_policies(&sg).unwrap();
    for cidr in ["10.1.0.0/16", "10.2.0.0/16"] {
        assert!(
            ingress.iter().any(|p| p["CidrBlock"] == cidr),
            "{cidr} allowed: {ingress:?}"
        );
    }
    assert!(!egress.is_empty(), "egress opened: {egress:?}");
    let (code, out) = plan_exit(dir.path(), &mock);
    assert_eq!(
        code, 0,
        "rules read back as written (icmp, port ranges):\n{out}"
    );

    // Another client removes a CIDR rule: drift, and apply puts it back.
    assert_eq!(
        mock.remove_ingress_behind(&sg, |p| p["CidrBlock"] == "10.1.0.0/16"),
        1
    );
    let (code, out) = plan_exit(dir.path(), &mock);
    assert_eq!(code, 2, "a removed rule is drift:\n{out}");
    assert!(
        out.contains("cluster.infer.firewall will be updated in place"),
        "{out}"
    );
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );
    assert_eq!(plan_exit(dir.path(), &mock).0, 0);

    // ... or the members' rule.
    assert_eq!(
        mock.remove_ingress_behind(&sg, |p| p["SecurityGroupId"] == sg.as_str()),
        1
    );
    let (code, out) = plan_exit(dir.path(), &mock);
    assert_eq!(code, 2, "a removed members' rule is drift:\n{out}");
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );
    assert!(has_member_rule(&mock, &sg));
    assert_eq!(plan_exit(dir.path(), &mock).0, 0);
}

fn firewall_id_of(mock: &TencentMock, project: &str) -> String {
    mock.resources()
        .into_iter()
        .find(|r| {
            r.kind == gpuform_provider::ResourceKind::Firewall
                && mock.tags(&r.id).is_some_and(|t| {
                    t.iter()
                        .any(|(k, v)| k == "gpuform:project" && v == project)
                })
        })
        .expect("the project's group")
        .id
}
