//! Double crash: the apply dies at its API call N, the run that should
//! recover from it dies too, at its own call M, and one more apply must still
//! leave exactly the desired resources: each address once in the cloud, state
//! recording exactly those with their real ids, and a clean next plan.
//!
//! The grid is every (N, M): N over every call of the first apply, M over
//! every call of the recovery run that follows a crash at N (the recovery's
//! call count depends on N: it refreshes, adopts what the first run left
//! half-made, then creates the rest). Both runs use `--parallelism 1`, so the
//! N-th call is the same call on every run and a failure names a cell that
//! reproduces.
//!
//! Two clouds: the sandbox (`crash_after=N` aborts the process right after
//! the N-th call took effect: SIGABRT), for a create, a scale-up and a
//! destroy; and the Tencent stand-in (the server SIGKILLs gpuform after the
//! N-th request took effect and before answering), for a create. Tencent's
//! single-crash suite is the quickest of the three stand-ins (5.8 s against
//! 18 s for Alibaba and 98 s for Huawei, debug build), and its creates take
//! several calls (CreateSecurityGroup then its policies; RunInstances then
//! DescribeInstances; CreateDisks then AttachDisks), which is where a second
//! crash lands between the steps of a half-made resource.
//!
//! What this adds to the single-crash tests: with the adoption of stray
//! tagged resources disabled in src/refresh.rs, e2e_sandbox's and
//! e2e_clouds' single-crash loops stay green while this grid goes red
//! (sandbox scale 1→3, N=2 M=7: two volumes for cluster.trainer.volume[0]).

use crate::support;

use gpuform_standins::{tencent::TencentMock, Killer, MockCloud};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use support::{assert_exact, assert_killed_by, assert_success, recorded, Live, SandboxWork};

/// Guards against a crash switch that never stops firing.
const RUNAWAY: u64 = 200;

// ---------------------------------------------------------------- sandbox

/// Every kind of resource the sandbox makes: network, subnet, firewall,
/// placement group, instances with data volumes, and a bucket.
const SANDBOX_SPEC: &str = r#"project: dc
variables:
  nodes:
    default: "2"
clusters:
  trainer:
    cloud: aws
    region: us-east-1
    zones: [us-east-1a]
    nodes: ${var.nodes}
    gpu: A100-80GB:8
    interconnect: nvlink
    fabric: rdma
    disk:
      data_gb: 500
    ingress:
      - {protocol: tcp, ports: "22", cidr: 10.1.0.0/16}
buckets:
  datasets:
    cloud: aws
    region: us-east-1
"#;

/// The ingress rule both specs give, as [`support::Live::ingress`] lists it.
fn spec_rules() -> Vec<String> {
    vec![support::rule("tcp", 22, 22, "10.1.0.0/16")]
}

fn sandbox_desired(nodes: usize) -> BTreeSet<String> {
    let mut s: BTreeSet<String> = [
        "bucket.datasets",
        "cluster.trainer.firewall",
        "cluster.trainer.network",
        "cluster.trainer.subnet[us-east-1a]",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if nodes > 1 {
        s.insert("cluster.trainer.placement".into());
    }
    for i in 0..nodes {
        s.insert(format!("cluster.trainer.node[{i}]"));
        s.insert(format!("cluster.trainer.volume[{i}]"));
    }
    s
}

fn crash_after(n: u64) -> String {
    format!("crash_after={n}")
}

/// One command whose every double crash is checked.
struct Phase {
    name: &'static str,
    /// Nodes applied, without faults, before the command (`None`: nothing).
    setup: Option<usize>,
    command: &'static str,
    nodes: usize,
    /// What must exist after the command completed.
    want: BTreeSet<String>,
}

/// The grid of one phase; returns (calls of the uninterrupted command,
/// double crashes checked).
fn sandbox_grid(p: &Phase) -> (u64, u32) {
    let nodes = format!("nodes={}", p.nodes);
    let command = [
        p.command,
        "spec.yaml",
        "--sandbox",
        "--auto-approve",
        "--var",
        &nodes,
        "--parallelism",
        "1",
    ];
    let check = |w: &SandboxWork, context: &str| {
        w.assert_exact(&p.want, context);
        // Complete, not only counted: kinds, attachment, rules.
        support::assert_sandbox_complete(w.path(), &w.project, &spec_rules(), context);
        if p.command == "apply" {
            assert_eq!(
                w.plan_exit(&["--var", &nodes]),
                0,
                "{context}: the next plan must be clean"
            );
        }
    };
    let mut cells = 0;
    for n in 1..RUNAWAY {
        let mut recovered_alone = false;
        for m in 1..RUNAWAY {
            let cell = format!("sandbox {} N={n} M={m}", p.name);
            let w = SandboxWork::new("dc", SANDBOX_SPEC);
            if let Some(k) = p.setup {
                w.ok(&[
                    "apply",
                    "spec.yaml",
                    "--sandbox",
                    "--auto-approve",
                    "--var",
                    &format!("nodes={k}"),
                ]);
            }
            let first = w.run(&command, Some(&crash_after(n)));
            if first.status.success() {
                // N is past the command's last call; every N before crashed it.
                check(&w, &format!("{cell}, no crash"));
                assert!(n > 3, "sandbox {}: only {} calls", p.name, n - 1);
                return (n - 1, cells);
            }
            assert_killed_by(&first, libc::SIGABRT, &format!("{cell}, first run"));
            let second = w.run(&command, Some(&crash_after(m)));
            if second.status.success() {
                // M is past the recovery's last call: it recovered alone.
                check(&w, &format!("{cell}, recovery ran through"));
                recovered_alone = true;
                break;
            }
            assert_killed_by(&second, libc::SIGABRT, &format!("{cell}, recovery"));
            let third = w.run(&command[..6], None);
            assert_success(&third, &format!("{cell}, final run"));
            check(&w, &cell);
            cells += 1;
        }
        assert!(
            recovered_alone,
            "sandbox {} N={n}: runaway recovery",
            p.name
        );
    }
    panic!("sandbox {}: runaway first run", p.name);
}

#[test]
fn sandbox_a_crash_then_a_crash_of_the_recovery_then_one_more_run_is_exact() {
    for phase in [
        Phase {
            name: "create",
            setup: None,
            command: "apply",
            nodes: 2,
            want: sandbox_desired(2),
        },
        Phase {
            name: "scale 1→3",
            setup: Some(1),
            command: "apply",
            nodes: 3,
            want: sandbox_desired(3),
        },
        Phase {
            name: "destroy",
            setup: Some(2),
            command: "destroy",
            nodes: 2,
            want: BTreeSet::new(),
        },
    ] {
        let (calls, cells) = sandbox_grid(&phase);
        eprintln!(
            "sandbox {}: {calls} calls, {cells} double crashes checked",
            phase.name
        );
    }
}

// ---------------------------------------------------------------- Tencent stand-in

const TENCENT_ZONE: &str = "ap-guangzhou-3";

fn tencent_spec(project: &str) -> String {
    format!(
        "project: {project}\nclusters:\n  infer:\n    cloud: tencent\n    region: ap-guangzhou\n    zones: [{TENCENT_ZONE}]\n    nodes: 2\n    gpu: T4\n    disk:\n      data_gb: 50\n    ingress:\n      - {{protocol: tcp, ports: \"22\", cidr: 10.1.0.0/16}}\n"
    )
}

fn tencent_desired() -> BTreeSet<String> {
    let mut s: BTreeSet<String> = [
        "cluster.infer.network".to_string(),
        "cluster.infer.firewall".to_string(),
        format!("cluster.infer.subnet[{TENCENT_ZONE}]"),
    ]
    .into_iter()
    .collect();
    for i in 0..2 {
        s.insert(format!("cluster.infer.node[{i}]"));
        s.insert(format!("cluster.infer.volume[{i}]"));
    }
    s
}

/// gpuform in `dir` against `mock`, its output captured.
fn gpuform(dir: &Path, mock: &dyn MockCloud, args: &[&str]) -> Command {
    let mut cmd = support::gpuform_at(dir, &[mock], args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn mock_live(mock: &dyn MockCloud) -> Vec<Live> {
    support::mock_live(mock, "tencent")
}

#[test]
fn tencent_a_crash_then_a_crash_of_the_recovery_then_apply_is_exact() {
    let mock = TencentMock::start();
    let killer = Killer::install(&mock);
    let want = tencent_desired();
    let apply = support::SERIAL_APPLY;
    let destroy = ["destroy", "spec.yaml", "--auto-approve", "-q"];
    let plan = ["plan", "spec.yaml", "--detailed-exitcode"];
    let mut cells = 0;
    let mut first_calls = None;
    'grid: for n in 1..RUNAWAY {
        for m in 1..RUNAWAY {
            let cell = format!("tencent N={n} M={m}");
            // A project per cell: the stand-in outlives the cells, and each
            // cell ends by destroying what it made.
            let project = format!("dc-{n}-{m}");
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join("spec.yaml"), tencent_spec(&project)).unwrap();
            let first = killer.run(&mock, &mut gpuform(dir.path(), &mock, &apply), Some(n));
            let recovered = if first.status.success() {
                first_calls = Some(n - 1);
                None
            } else {
                assert_killed_by(&first, libc::SIGKILL, &format!("{cell}, first apply"));
                let second = killer.run(&mock, &mut gpuform(dir.path(), &mock, &apply), Some(m));
                if second.status.success() {
                    Some(false)
                } else {
                    assert_killed_by(&second, libc::SIGKILL, &format!("{cell}, recovery"));
                    let third = killer.run(&mock, &mut gpuform(dir.path(), &mock, &apply), None);
                    assert_success(&third, &format!("{cell}, final apply"));
                    cells += 1;
                    Some(true)
                }
            };
            assert_exact(
                &mock_live(&mock),
                &recorded(dir.path(), &project),
                &want,
                &cell,
            );
            support::assert_complete(
                &mock_live(&mock),
                &support::recorded_kinds(dir.path(), &project),
                &spec_rules(),
                &cell,
            );
            let p = killer.run(&mock, &mut gpuform(dir.path(), &mock, &plan), None);
            assert_eq!(p.status.code(), Some(0), "{cell}: plan after recovery");
            let d = killer.run(&mock, &mut gpuform(dir.path(), &mock, &destroy), None);
            assert_success(&d, &format!("{cell}, destroy"));
            assert!(
                mock.resources().is_empty(),
                "{cell}: destroy leaves nothing: {:?}",
                mock.resources()
            );
            match recovered {
                None => break 'grid,
                // The recovery ran through before its call M: next N.
                Some(false) => break,
                Some(true) => {}
            }
        }
    }
    let n = first_calls.expect("runaway first apply");
    assert!(n >= 7, "the first apply made only {n} calls");
    eprintln!("tencent: {n} crash points of the first apply, {cells} double crashes checked");
}
