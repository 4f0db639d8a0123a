//! `gpuform reconcile` against the sandbox: repairs what was undone behind
//! gpuform's back (spot reclaims, deletions, detached volumes, removed
//! rules), leaves spec edits for review, survives a kill at every call, and
//! ends a cluster's lifetime.

use crate::support::{self, SandboxWork};
use std::collections::BTreeSet;
use std::process::Output;

pub(crate) const PROJECT: &str = "rec";

pub(crate) fn spec(nodes: u32, extra: &str) -> String {
    format!(
        r#"project: {PROJECT}
clusters:
  pool:
    cloud: aws
    region: us-east-1
    nodes: {nodes}
    gpu: A10G:1
    pricing: spot
    ingress:
      - ports: "22"
        cidr: 203.0.113.0/24
    disk:
      root_gb: 100
      data_gb: 50
{extra}"#
    )
}

/// A second cluster that must come through every repair untouched.
const KEEP: &str = r#"  keep:
    cloud: aws
    region: us-west-2
    nodes: 1
    gpu: T4
    ingress:
      - ports: "22"
        cidr: 203.0.113.0/24
"#;

pub(crate) fn expected(nodes: u32, keep: bool) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = [
        "cluster.pool.network",
        "cluster.pool.subnet[us-east-1a]",
        "cluster.pool.firewall",
    ]
    .map(String::from)
    .into();
    for i in 0..nodes {
        out.insert(format!("cluster.pool.node[{i}]"));
        out.insert(format!("cluster.pool.volume[{i}]"));
    }
    if keep {
        for a in [
            "cluster.keep.network",
            "cluster.keep.subnet[us-west-2a]",
            "cluster.keep.firewall",
            "cluster.keep.node[0]",
        ] {
            out.insert(a.to_string());
        }
    }
    out
}

fn reconcile_once(w: &SandboxWork, faults: Option<&str>) -> Output {
    w.run(
        &[
            "reconcile",
            "spec.yaml",
            "--sandbox",
            "--once",
            "--detailed-exitcode",
        ],
        faults,
    )
}

pub(crate) fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(crate) fn rules() -> Vec<String> {
    vec![support::rule("tcp", 22, 22, "203.0.113.0/24")]
}

/// Reclaims a spot node behind gpuform's back, as the cloud would.
pub(crate) fn reclaim(w: &SandboxWork, address: &str) {
    w.ok(&["sandbox", "reclaim", address, "-f", "spec.yaml"]);
}

pub(crate) fn applied(nodes: u32, extra: &str) -> SandboxWork {
    let w = SandboxWork::new(PROJECT, &spec(nodes, extra));
    w.ok(&["apply", "spec.yaml", "--sandbox", "--auto-approve"]);
    w
}

#[test]
fn a_reclaimed_spot_node_is_made_again_with_its_volume_attached() {
    let w = applied(3, KEEP);
    let before = w.recorded();
    reclaim(&w, "cluster.pool.node[1]");
    let out = reconcile_once(&w, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("repair: create cluster.pool.node[1]")
            && log.contains(&format!(
                "spot instance {} was reclaimed",
                before["cluster.pool.node[1]"]
            )),
        "{log}"
    );
    w.assert_exact(&expected(3, true), "after the repair");
    support::assert_sandbox_complete(w.path(), PROJECT, &rules(), "after the repair");
    let after = w.recorded();
    for (a, id) in &before {
        if a != "cluster.pool.node[1]" {
            assert_eq!(&after[a], id, "{a} was touched by the repair");
        }
    }
    assert_eq!(w.plan_exit(&[]), 0, "the plan after a repair is clean");
    // Nothing left to do: exit 0.
    let again = reconcile_once(&w, None);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

#[test]
fn a_reclaim_storm_ends_with_exactly_the_spec() {
    // A running reconciler (a pass every 10 ms) over 10 spot nodes; 3 of
    // them (30%) get their notice at calls 3, 9 and 20 of its run and are
    // reclaimed five calls later, while it refreshes and repairs. It is
    // stopped with SIGTERM once it repaired all three.
    use std::io::BufRead;
    let w = applied(10, "");
    let mut child = support::gpuform_cmd(
        w.path(),
        &["reconcile", "spec.yaml", "--sandbox", "--interval", "10ms"],
    )
    .env(
        "GPUFORM_SANDBOX_FAULTS",
        "reclaim_at=3,reclaim_at=9,reclaim_at=20,seed=11",
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("start reconcile");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut log = String::new();
    let mut reclaimed = 0;
    while reclaimed < 3 {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no repair of the third reclaim:\n{log}"));
        if line.contains("was reclaimed") && line.contains("created i-") {
            reclaimed += 1;
        }
        log.push_str(&line);
        log.push('\n');
    }
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().expect("wait");
    assert!(
        status.success(),
        "SIGTERM ends the loop cleanly: {status:?}\n{log}"
    );
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(5)) {
        log.push_str(&line);
        log.push('\n');
    }
    assert_eq!(
        log.matches("was reclaimed").count(),
        3,
        "each reclaim repaired once:\n{log}"
    );
    // A pass after the storm repairs whatever the stopped one had not.
    let out = reconcile_once(&w, None);
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", text(&out));
    w.assert_exact(&expected(10, false), "after the storm");
    support::assert_sandbox_complete(w.path(), PROJECT, &rules(), "after the storm");
    assert_eq!(w.plan_exit(&[]), 0);
}

#[test]
fn drift_is_repaired_and_spec_edits_wait_for_review() {
    let w = applied(2, "");
    w.ok(&[
        "sandbox",
        "delete",
        "cluster.pool.volume[0]",
        "-f",
        "spec.yaml",
    ]);
    w.ok(&[
        "sandbox",
        "set",
        "cluster.pool.firewall",
        "ingress=[]",
        "-f",
        "spec.yaml",
    ]);
    // A spec edit at the same time: a third node is for a person to apply.
    w.write_spec(&spec(3, ""));
    let out = w.run(
        &[
            "reconcile",
            "spec.yaml",
            "--sandbox",
            "--once",
            "--detailed-exitcode",
            "--log-format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let of = |event: &str| -> BTreeSet<String> {
        events
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| {
                format!(
                    "{} {}",
                    e["action"].as_str().unwrap(),
                    e["address"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        of("repair"),
        [
            "create cluster.pool.volume[0]",
            "update cluster.pool.firewall"
        ]
        .map(String::from)
        .into(),
        "{events:#?}"
    );
    assert_eq!(
        of("pending"),
        [
            "create cluster.pool.node[2]",
            "create cluster.pool.volume[2]"
        ]
        .map(String::from)
        .into(),
        "{events:#?}"
    );
    let pass = events
        .iter()
        .find(|e| e["event"] == "pass")
        .expect("a pass event");
    assert_eq!(pass["nodes"]["pool"]["desired"], 3);
    assert_eq!(pass["nodes"]["pool"]["running"], 2);
    // The repairs are made, the edit is not.
    w.write_spec(&spec(2, ""));
    w.assert_exact(&expected(2, false), "after the repair");
    support::assert_sandbox_complete(w.path(), PROJECT, &rules(), "after the repair");
    assert_eq!(w.plan_exit(&[]), 0);
}

#[test]
fn apply_all_applies_the_edits_too() {
    let w = applied(1, "");
    w.write_spec(&spec(2, ""));
    let out = w.run(
        &[
            "reconcile",
            "spec.yaml",
            "--sandbox",
            "--once",
            "--apply-all",
            "--detailed-exitcode",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    w.assert_exact(&expected(2, false), "after --apply-all");
}

/// A reconciler killed at every call of a repair (the sandbox aborts the
/// process after call N took effect), then a second one: exactly the spec,
/// never a second copy of the replacement.
#[test]
fn a_reconciler_killed_at_any_call_is_finished_by_the_next() {
    let mut crashes = 0;
    for n in 1.. {
        assert!(n < 60, "the repair never ran to its end");
        let w = applied(2, "");
        reclaim(&w, "cluster.pool.node[0]");
        let out = reconcile_once(&w, Some(&format!("crash_after={n}")));
        let crashed = out.status.code().is_none();
        if crashed {
            crashes += 1;
            support::assert_killed_by(&out, libc::SIGABRT, &format!("crash_after={n}"));
        } else {
            assert!(
                matches!(out.status.code(), Some(2)),
                "crash_after={n}: {}",
                text(&out)
            );
        }
        let next = reconcile_once(&w, None);
        assert!(
            matches!(next.status.code(), Some(0 | 2)),
            "after crash_after={n}: {}",
            text(&next)
        );
        let context = format!("crash_after={n}");
        w.assert_exact(&expected(2, false), &context);
        support::assert_sandbox_complete(w.path(), PROJECT, &rules(), &context);
        assert_eq!(w.plan_exit(&[]), 0, "{context}: plan not clean");
        if !crashed {
            break;
        }
    }
    // Refresh, then the create, the attach: a repair is several calls.
    assert!(crashes >= 3, "only {crashes} crash point(s) in a repair");
}

#[test]
fn a_cluster_past_its_lifetime_is_deleted_and_nothing_else() {
    // support pins today at 2026-11-29 (00:00 UTC is "now").
    let w = applied(2, &format!("    expires_at: 2026-11-30T00:00:00Z\n{KEEP}"));
    // Not yet: the plan says it ends within a day, and nothing changes.
    let plan = w.ok(&["plan", "spec.yaml", "--sandbox"]);
    assert!(
        plan.contains("lifetime ends at 2026-11-30T00:00:00Z"),
        "{plan}"
    );
    assert_eq!(reconcile_once(&w, None).status.code(), Some(0));
    let keep_before: Vec<(String, String)> = w
        .recorded()
        .into_iter()
        .filter(|(a, _)| a.starts_with("cluster.keep."))
        .collect();
    w.write_spec(&spec(2, &format!("    expires_at: 2026-11-29\n{KEEP}")));
    let out = reconcile_once(&w, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("lifetime ended"), "{log}");
    let keep_only: BTreeSet<String> = expected(0, true)
        .into_iter()
        .filter(|a| a.starts_with("cluster.keep."))
        .collect();
    w.assert_exact(&keep_only, "after the lifetime");
    let keep_after: Vec<(String, String)> = w.recorded().into_iter().collect();
    assert_eq!(keep_after, keep_before, "the other cluster was touched");
}

#[test]
fn a_bad_expires_at_is_a_located_error() {
    let w = SandboxWork::new(PROJECT, &spec(1, "    expires_at: next tuesday\n"));
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.yaml:15:17") && err.contains("2026-12-24T18:00:00Z"),
        "{err}"
    );
}

#[test]
fn reconcile_without_state_or_with_a_bad_spec_fails_clearly() {
    let w = SandboxWork::new(PROJECT, "project: rec\nclusters: [\n");
    let out = reconcile_once(&w, None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // --detailed-exitcode needs --once.
    let w = SandboxWork::new(PROJECT, &spec(1, ""));
    let out = w.run(
        &["reconcile", "spec.yaml", "--sandbox", "--detailed-exitcode"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--once"));
}

pub(crate) fn pricing_of_nodes(w: &SandboxWork) -> Vec<String> {
    let path = w.path().join(format!(".gpuform/{PROJECT}.state.json"));
    let st: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("state")).expect("state json");
    (0..)
        .map_while(|i| {
            st["resources"][format!("cluster.pool.node[{i}]")]["attrs"]["pricing"]
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

pub(crate) const POLICY: &str = r#"    spot_policy:
      on_demand_base: 1
      fallback: {after: 2, within: 1h, hold: 6h}
"#;

#[test]
fn a_spot_pool_falls_back_to_on_demand_after_reclaims_and_back_after_its_hold() {
    let w = applied(4, POLICY);
    // The base is on-demand from the start.
    assert_eq!(pricing_of_nodes(&w), ["on-demand", "spot", "spot", "spot"]);
    // One reclaim: below the fallback's threshold, the node comes back spot.
    reclaim(&w, "cluster.pool.node[1]");
    let out = reconcile_once(&w, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("back on-demand"));
    assert_eq!(pricing_of_nodes(&w), ["on-demand", "spot", "spot", "spot"]);
    // The second within the hour turns the fallback on: back on-demand, reported.
    reclaim(&w, "cluster.pool.node[2]");
    let out = reconcile_once(&w, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains("repair: create cluster.pool.node[2]") && log.contains("back on-demand"),
        "{log}"
    );
    assert_eq!(
        pricing_of_nodes(&w),
        ["on-demand", "spot", "on-demand", "spot"]
    );
    w.assert_exact(&expected(4, false), "after the fallback");
    support::assert_sandbox_complete(w.path(), PROJECT, &rules(), "after the fallback");
    // While the fallback lasts the on-demand node is what the spec wants.
    assert_eq!(w.plan_exit(&[]), 0);
    // A day later the hold is over: going back to spot is a replacement,
    // left for review, never made by reconcile on its own.
    let later = support::gpuform_cmd(
        w.path(),
        &[
            "reconcile",
            "spec.yaml",
            "--sandbox",
            "--once",
            "--detailed-exitcode",
        ],
    )
    .env("GPUFORM_TODAY", "2026-11-30")
    .output()
    .expect("run gpuform");
    assert_eq!(later.status.code(), Some(0), "{}", text(&later));
    let log = String::from_utf8_lossy(&later.stdout);
    assert!(
        log.contains("pending review: replace cluster.pool.node[2]"),
        "{log}"
    );
    assert_eq!(
        pricing_of_nodes(&w),
        ["on-demand", "spot", "on-demand", "spot"]
    );
}

#[test]
fn a_spot_policy_is_checked_where_it_is_written() {
    let w = SandboxWork::new(
        PROJECT,
        &spec(2, POLICY).replace("pricing: spot", "pricing: on-demand"),
    );
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`spot_policy` only applies with `pricing: spot`"),
        "{err}"
    );
    let w = SandboxWork::new(
        PROJECT,
        &spec(2, &POLICY.replace("within: 1h", "within: soon")),
    );
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.yaml:17:") && err.contains("a duration like `30m`"),
        "{err}"
    );
}
