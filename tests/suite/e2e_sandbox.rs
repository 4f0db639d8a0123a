//! End to end: the gpuform binary against the sandbox cloud, in a temporary
//! working directory per test (state in .gpuform/, sandbox inventory beside it).

use crate::support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SPEC: &str = r#"project: e2e
variables:
  nodes:
    default: "2"
clusters:
  trainer:
    cloud: aws
    region: us-east-1
    zones: [us-east-1a, us-east-1b]
    nodes: ${var.nodes}
    gpu: A100-80GB:8
    interconnect: nvlink
    fabric: rdma
    pricing: on-demand
    disk:
      root_gb: 200
      data_gb: 500
  inference:
    cloud: aws
    region: us-west-2
    nodes: 1
    gpu: T4
    pricing: spot
buckets:
  datasets:
    cloud: aws
    region: us-east-1
"#;

struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("spec.yaml"), SPEC).expect("write spec");
        Work { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        support::gpuform_cmd(self.path(), args)
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run gpuform")
    }

    fn run_with_faults(&self, args: &[&str], faults: &str) -> Output {
        self.cmd(args)
            .env("GPUFORM_SANDBOX_FAULTS", faults)
            .output()
            .expect("run gpuform")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "gpuform {args:?} failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn apply(&self, extra: &[&str]) -> String {
        let mut args = vec!["apply", "spec.yaml", "--sandbox", "--auto-approve"];
        args.extend_from_slice(extra);
        self.ok(&args)
    }

    fn plan_json(&self, extra: &[&str]) -> Value {
        let mut args = vec!["plan", "spec.yaml", "--sandbox", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&self.ok(&args)).expect("plan json")
    }

    fn plan_exit(&self, extra: &[&str]) -> i32 {
        let mut args = vec!["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"];
        args.extend_from_slice(extra);
        self.run(&args).status.code().expect("exit code")
    }

    /// Everything alive in the sandbox cloud, as `sandbox ls --json` reports it.
    fn cloud_json(&self) -> Vec<Value> {
        let out = self.ok(&[
            "sandbox",
            "ls",
            "--json",
            "--state",
            ".gpuform/e2e.state.json",
        ]);
        serde_json::from_str(&out).expect("sandbox json")
    }

    /// Everything alive in the sandbox cloud: id → address tag.
    fn cloud(&self) -> BTreeMap<String, String> {
        let out = self.ok(&[
            "sandbox",
            "ls",
            "--json",
            "--state",
            ".gpuform/e2e.state.json",
        ]);
        let all: Vec<Value> = serde_json::from_str(&out).expect("sandbox json");
        all.iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap().to_string(),
                    r["tags"]["gpuform:address"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect()
    }

    fn state(&self) -> Value {
        let p: PathBuf = self.path().join(".gpuform/e2e.state.json");
        serde_json::from_slice(&std::fs::read(p).expect("state")).expect("state json")
    }

    /// The invariant: the cloud holds exactly one resource per desired
    /// address, and state records exactly those, with their real ids.
    fn assert_exact(&self, expected: &BTreeSet<String>, context: &str) {
        let cloud = self.cloud();
        let mut by_addr: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (id, addr) in &cloud {
            by_addr.entry(addr.as_str()).or_default().push(id.as_str());
        }
        for (addr, ids) in &by_addr {
            assert!(
                ids.len() == 1,
                "{context}: duplicate resources for {addr}: {ids:?}"
            );
            assert!(
                expected.contains(*addr),
                "{context}: orphan {addr} {ids:?} in the cloud"
            );
        }
        let got: BTreeSet<String> = by_addr.keys().map(|s| s.to_string()).collect();
        assert_eq!(
            &got, expected,
            "{context}: cloud does not hold exactly the desired resources"
        );
        let state = self.state();
        let recorded: BTreeMap<String, String> = state["resources"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(a, r)| (a.clone(), r["id"].as_str().unwrap().to_string()))
            .collect();
        let recorded_addrs: BTreeSet<String> = recorded.keys().cloned().collect();
        assert_eq!(
            &recorded_addrs, expected,
            "{context}: state does not record exactly the desired resources"
        );
        for (addr, id) in &recorded {
            assert_eq!(
                cloud.get(id).map(|s| s.as_str()),
                Some(addr.as_str()),
                "{context}: state id {id} of {addr} is not real"
            );
        }
        self.assert_complete(&recorded, context);
    }

    /// What a whole create makes true, not only that the resource exists:
    /// each resource is of the kind its address names (and recorded so),
    /// each data volume is attached to its own node's instance, and each
    /// firewall carries its rules (the members' rule and the spec's).
    fn assert_complete(&self, recorded: &BTreeMap<String, String>, context: &str) {
        let state = self.state();
        for r in self.cloud_json() {
            let id = r["id"].as_str().unwrap();
            let addr = r["tags"]["gpuform:address"].as_str().unwrap_or("");
            let kind = r["kind"].as_str().unwrap();
            let want_kind = kind_of(addr);
            assert_eq!(kind, want_kind, "{context}: {addr} ({id}) is a {kind}");
            assert_eq!(
                state["resources"][addr]["kind"], want_kind,
                "{context}: state records {addr} as the wrong kind"
            );
            match kind {
                "volume" => {
                    let node = addr.replace(".volume[", ".node[");
                    let want = recorded.get(&node).map(String::as_str);
                    assert!(want.is_some(), "{context}: {addr} has no recorded node");
                    assert_eq!(
                        r["attrs"]["attached_to"].as_str(),
                        want,
                        "{context}: {addr} ({id}) is not attached to {node}"
                    );
                }
                "firewall" => {
                    let ingress = r["attrs"]["ingress"].as_array();
                    assert!(
                        ingress
                            .is_some_and(|rules| rules.iter().all(|x| x.get("missing").is_none())),
                        "{context}: {addr} ({id}) lacks its rules: {}",
                        r["attrs"]
                    );
                }
                _ => {}
            }
        }
    }
}

/// The kind an address names, from the resolver's naming scheme.
fn kind_of(address: &str) -> &'static str {
    let last = address.rsplit('.').next().unwrap_or("");
    let name = last.split('[').next().unwrap_or("");
    match (address.starts_with("bucket."), name) {
        (true, _) => "bucket",
        (_, "node") => "instance",
        (_, "volume") => "volume",
        (_, "subnet") => "subnet",
        (_, "network") => "network",
        (_, "firewall") => "firewall",
        (_, "placement") => "placement",
        _ => panic!("unknown address {address}"),
    }
}

fn desired_addresses(nodes: usize) -> BTreeSet<String> {
    let mut s: BTreeSet<String> = [
        "bucket.datasets",
        "cluster.inference.firewall",
        "cluster.inference.network",
        "cluster.inference.node[0]",
        "cluster.inference.subnet[us-west-2a]",
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

#[test]
fn apply_then_plan_shows_no_changes_and_scaling_plans_only_new_nodes() {
    let w = Work::new();
    assert_eq!(w.plan_exit(&[]), 2, "an empty state has changes to make");
    w.apply(&[]);
    w.assert_exact(&desired_addresses(2), "after apply");
    assert_eq!(w.plan_exit(&[]), 0, "apply then plan must show no changes");

    // nodes 2 → 4 plans exactly the two new nodes and their volumes.
    let plan = w.plan_json(&["--var", "nodes=4"]);
    let changes: BTreeSet<(String, String)> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] != "no-op")
        .map(|c| {
            (
                c["action"].as_str().unwrap().to_string(),
                c["address"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, String)> = [
        "cluster.trainer.node[2]",
        "cluster.trainer.node[3]",
        "cluster.trainer.volume[2]",
        "cluster.trainer.volume[3]",
    ]
    .iter()
    .map(|a| ("create".to_string(), a.to_string()))
    .collect();
    assert_eq!(changes, expected);
    assert!(
        plan["cost"]["hourly_usd_delta"].as_f64().unwrap() > 0.0,
        "two more A100 nodes cost more"
    );
    w.apply(&["--var", "nodes=4"]);
    w.assert_exact(&desired_addresses(4), "after scale up");

    // ... and back down, then destroy leaves nothing.
    w.apply(&["--var", "nodes=1"]);
    w.assert_exact(&desired_addresses(1), "after scale down");
    w.ok(&["destroy", "spec.yaml", "--sandbox", "--auto-approve"]);
    w.assert_exact(&BTreeSet::new(), "after destroy");
}

#[test]
fn a_resource_deleted_behind_gpuforms_back_is_recreated() {
    let w = Work::new();
    w.apply(&[]);
    w.ok(&[
        "sandbox",
        "delete",
        "cluster.trainer.node[1]",
        "--state",
        ".gpuform/e2e.state.json",
    ]);
    let plan = w.plan_json(&[]);
    let node = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "cluster.trainer.node[1]")
        .unwrap();
    assert_eq!(node["action"], "create");
    assert!(node["reason"]
        .as_str()
        .unwrap()
        .contains("deleted outside gpuform"));
    w.apply(&[]);
    w.assert_exact(&desired_addresses(2), "after re-create");
    assert_eq!(w.plan_exit(&[]), 0);
}

#[test]
fn an_attribute_changed_behind_gpuforms_back_is_planned_back() {
    let w = Work::new();
    w.apply(&[]);
    w.ok(&[
        "sandbox",
        "set",
        "cluster.trainer.node[0]",
        "tags={\"team\":\"x\"}",
        "--state",
        ".gpuform/e2e.state.json",
    ]);
    let plan = w.plan_json(&[]);
    let node = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "cluster.trainer.node[0]")
        .unwrap();
    assert_eq!(node["action"], "update", "{node}");
    w.apply(&[]);
    assert_eq!(w.plan_exit(&[]), 0);
}

/// Aborts the process at every API call N of an apply, a scale-up and a
/// destroy; the next apply must leave exactly the desired resources.
#[test]
fn a_crash_at_any_api_call_then_apply_leaves_exactly_the_desired_resources() {
    for (phase, setup_nodes, target_nodes, destroy) in [
        ("create", None, 2usize, false),
        ("scale", Some(1usize), 3usize, false),
        ("destroy", Some(2usize), 0usize, true),
    ] {
        let mut crashed_at_least_once = false;
        for n in 1.. {
            let w = Work::new();
            if let Some(k) = setup_nodes {
                w.apply(&["--var", &format!("nodes={k}")]);
            }
            let nodes_var = format!("nodes={}", target_nodes.max(1));
            let mut args = vec![
                if destroy { "destroy" } else { "apply" },
                "spec.yaml",
                "--sandbox",
                "--auto-approve",
            ];
            args.extend_from_slice(&["--var", &nodes_var]);
            let out = w.run_with_faults(&args, &format!("crash_after={n}"));
            if out.status.success() {
                // N is past the last call: the run completed; every N before it crashed.
                assert!(
                    crashed_at_least_once,
                    "{phase}: crash injection never fired"
                );
                break;
            }
            assert!(
                out.status.code().is_none(),
                "{phase} N={n}: expected an abort, got {:?}",
                out.status
            );
            crashed_at_least_once = true;
            // Recover: the same command again, no faults.
            let out = w.run(&args);
            assert!(
                out.status.success(),
                "{phase} N={n}: re-apply failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let expected = if destroy {
                BTreeSet::new()
            } else {
                desired_addresses(target_nodes)
            };
            w.assert_exact(&expected, &format!("{phase}, crash at call {n}"));
            if !destroy {
                assert_eq!(
                    w.plan_exit(&["--var", &nodes_var]),
                    0,
                    "{phase} N={n}: plan after recovery must be clean"
                );
            }
            assert!(n < 200, "{phase}: runaway");
        }
    }
}

#[test]
fn a_second_apply_on_a_locked_state_fails_at_once_naming_the_holder() {
    let w = Work::new();
    // The first apply is slow (300 ms per API call), so it holds the lock a while.
    let mut first = w
        .cmd(&[
            "apply",
            "spec.yaml",
            "--sandbox",
            "--auto-approve",
            "--parallelism",
            "1",
        ])
        .env("GPUFORM_SANDBOX_FAULTS", "latency=300ms")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = w.path().join(".gpuform/e2e.state.json.lock");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !lock.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first apply never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let started = std::time::Instant::now();
    let second = w.run(&["apply", "spec.yaml", "--sandbox", "--auto-approve"]);
    let waited = started.elapsed();
    assert_eq!(second.status.code(), Some(1));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("is locked by"), "{err}");
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    assert!(err.contains("force-unlock"), "{err}");
    assert!(
        waited < std::time::Duration::from_secs(5),
        "refused at once, not after waiting ({waited:?})"
    );
    assert!(first.wait().unwrap().success());
    w.assert_exact(&desired_addresses(2), "after the first apply");
}

#[test]
fn a_saved_plan_applies_once_and_only_to_its_state() {
    let w = Work::new();
    w.ok(&["plan", "spec.yaml", "--sandbox", "--out", "p.json"]);
    w.ok(&["apply", "p.json"]);
    w.assert_exact(&desired_addresses(2), "after saved plan");
    let again = w.run(&["apply", "p.json"]);
    assert_eq!(again.status.code(), Some(1));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("no state") || err.contains("serial"), "{err}");

    w.ok(&[
        "plan",
        "spec.yaml",
        "--sandbox",
        "--var",
        "nodes=3",
        "--out",
        "p2.json",
    ]);
    w.apply(&["--var", "nodes=4"]);
    let stale = w.run(&["apply", "p2.json"]);
    assert_eq!(stale.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&stale.stderr).contains("state changed since this plan was made")
    );
}

/// A saved plan proves it is the plan that was shown: an edited action,
/// a truncated file, a plan moved to another state's serial or (with a
/// passphrase) an unsealed file are refused, and nothing is touched.
#[test]
fn a_saved_plan_that_was_changed_is_refused() {
    let w = Work::new();
    w.apply(&[]);
    let before = w.cloud();
    w.ok(&["plan", "spec.yaml", "--sandbox", "--out", "p.json"]);
    let text = std::fs::read_to_string(w.path().join("p.json")).unwrap();
    let refused = |name: &str, body: &str, needle: &str| {
        std::fs::write(w.path().join(name), body).unwrap();
        let out = w.run(&["apply", name]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(!err.contains("YAML"), "{name}: {err}");
        assert_eq!(w.cloud(), before, "{name}: nothing may change");
    };
    // One no-op edited into a delete of the bucket.
    let edited = text.replacen("\"action\": \"no-op\"", "\"action\": \"delete\"", 1);
    assert_ne!(edited, text);
    refused(
        "edited.json",
        &edited,
        "this plan file was changed after it was made",
    );
    // The serial edited to pass as a plan of another state.
    let serial = w.plan_json(&[])["state"]["serial"].as_u64().unwrap();
    let moved = text.replace(
        &format!("\"serial\": {serial}"),
        &format!("\"serial\": {}", serial + 1),
    );
    assert_ne!(moved, text);
    refused(
        "moved.json",
        &moved,
        "this plan file was changed after it was made",
    );
    // Truncated.
    refused(
        "cut.json",
        &text[..text.len() / 2],
        "is a damaged plan file",
    );
    // The checksum line removed: nothing proves it.
    let bare: String = text
        .lines()
        .filter(|l| !l.contains("\"checksum\""))
        .collect::<Vec<_>>()
        .join("\n");
    refused("bare.json", &bare, "without a checksum");
    // With a passphrase, a plain plan file (anyone can recompute its
    // checksum) is refused; a sealed one made under it applies.
    let out = w
        .cmd(&["apply", "p.json"])
        .env("GPUFORM_STATE_PASSPHRASE", "s3cret")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not encrypted, but GPUFORM_STATE_PASSPHRASE is set"),
        "{err}"
    );
    // The untouched plan still applies (made against this state).
    w.ok(&["apply", "p.json"]);
    assert_eq!(w.cloud(), before);
}

#[test]
fn bad_input_gets_a_clear_error_and_writes_nothing() {
    let w = Work::new();
    std::fs::write(w.path().join("bad.yaml"), "project: x\nclusters:\n  a:\n    cloud: aws\n    region: us-east-1\n    nodes: 2\n    gpu: A100-80GB:0\n").unwrap();
    let out = w.run(&["apply", "bad.yaml", "--sandbox", "--auto-approve"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yaml"), "{err}");
    assert!(
        !w.path().join(".gpuform").exists(),
        "nothing may be written for bad input"
    );

    std::fs::create_dir_all(w.path().join(".gpuform")).unwrap();
    std::fs::write(
        w.path().join(".gpuform/e2e.state.json"),
        "{\"format_version\": 7}",
    )
    .unwrap();
    let out = w.run(&["plan", "spec.yaml", "--sandbox"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("upgrade gpuform"));
}

#[test]
fn apply_refuses_without_a_terminal_unless_auto_approved() {
    let w = Work::new();
    let out = w.run(&["apply", "spec.yaml", "--sandbox"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--auto-approve"));
    assert!(w.cloud().is_empty());
}

#[test]
fn throttling_and_transient_failures_are_retried_to_an_exact_result() {
    let w = Work::new();
    let out = w.run_with_faults(
        &["apply", "spec.yaml", "--sandbox", "--auto-approve", "-q"],
        "throttle=0.3,fail=0.1,seed=11",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w.assert_exact(&desired_addresses(2), "after a flaky apply");
    assert_eq!(w.plan_exit(&[]), 0);
    // A throttled refresh is retried, never read as "nothing there": the
    // plan is clean, not a create of what exists.
    for seed in 1..=4 {
        let out = w.run_with_faults(
            &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
            &format!("throttle=0.5,seed={seed}"),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "seed {seed}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_failed_resource_stops_only_its_dependents() {
    let w = Work::new();
    // A GPU quota of 8 per region: one 8-GPU trainer node fits, the second does not.
    let out = w.run_with_faults(
        &[
            "apply",
            "spec.yaml",
            "--sandbox",
            "--auto-approve",
            "--parallelism",
            "1",
        ],
        "quota_gpus=8",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("quota"), "{err}");
    let state = w.state();
    let recorded = state["resources"].as_object().unwrap();
    let nodes: Vec<&String> = recorded
        .keys()
        .filter(|a| a.starts_with("cluster.trainer.node"))
        .collect();
    assert_eq!(nodes.len(), 1, "one trainer node fits the quota: {nodes:?}");
    let failed = if nodes[0].ends_with("[0]") { 1 } else { 0 };
    // The volume needs only its zone to be made; attaching it needs the node.
    assert!(
        err.contains(&format!("skipped: attach cluster.trainer.volume[{failed}]")),
        "its dependent step is skipped:\n{err}"
    );
    assert!(
        !err.contains("skipped: create cluster.trainer.volume"),
        "a volume's create does not wait for its node:\n{err}"
    );
    assert!(
        recorded.contains_key("cluster.inference.node[0]"),
        "independent branches finish"
    );
    assert!(recorded.contains_key("bucket.datasets"));
    assert!(
        recorded.contains_key(&format!("cluster.trainer.volume[{}]", 1 - failed)),
        "what succeeded is recorded"
    );
    assert!(
        state.get("pending").is_none(),
        "a refused create leaves no pending intent"
    );
    // The quota is raised: the next apply completes the rest.
    w.apply(&[]);
    w.assert_exact(&desired_addresses(2), "after the quota was raised");
}

/// The id of the resource recorded at `address`.
fn recorded_id(w: &Work, address: &str) -> String {
    w.state()["resources"][address]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{address} is not recorded"))
        .to_string()
}

fn action_of(plan: &Value, address: &str) -> (String, String) {
    let c = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == address)
        .unwrap_or_else(|| panic!("{address} is not in the plan"));
    (
        c["action"].as_str().unwrap().to_string(),
        c["reason"].as_str().unwrap_or("").to_string(),
    )
}

/// A node re-created (deleted outside gpuform, or replaced for a changed
/// attribute) keeps its data volume: detached, then attached to the new
/// instance, never deleted with it.
#[test]
fn a_replaced_node_keeps_its_data_volume_and_gets_it_reattached() {
    let w = Work::new();
    w.apply(&[]);
    let volume = recorded_id(&w, "cluster.trainer.volume[1]");

    // Deleted behind gpuform's back: the node is re-created, the volume re-attached.
    w.ok(&[
        "sandbox",
        "delete",
        "cluster.trainer.node[1]",
        "--state",
        ".gpuform/e2e.state.json",
    ]);
    let plan = w.plan_json(&[]);
    assert_eq!(action_of(&plan, "cluster.trainer.node[1]").0, "create");
    let (action, reason) = action_of(&plan, "cluster.trainer.volume[1]");
    assert_eq!(action, "update", "{reason}");
    assert!(reason.contains("re-attached"), "{reason}");
    w.apply(&[]);
    w.assert_exact(&desired_addresses(2), "after the node was re-created");
    assert_eq!(recorded_id(&w, "cluster.trainer.volume[1]"), volume);
    assert_eq!(w.plan_exit(&[]), 0);

    // Replaced for an attribute that cannot change in place: the volume is
    // detached before the old instance goes and attached to the new one.
    let old_node = recorded_id(&w, "cluster.trainer.node[1]");
    w.ok(&[
        "sandbox",
        "set",
        "cluster.trainer.node[1]",
        "image=someone-elses-image",
        "--state",
        ".gpuform/e2e.state.json",
    ]);
    let plan = w.plan_json(&[]);
    assert_eq!(action_of(&plan, "cluster.trainer.node[1]").0, "replace");
    assert_eq!(action_of(&plan, "cluster.trainer.volume[1]").0, "update");
    w.apply(&[]);
    w.assert_exact(&desired_addresses(2), "after the node was replaced");
    assert_ne!(recorded_id(&w, "cluster.trainer.node[1]"), old_node);
    assert_eq!(recorded_id(&w, "cluster.trainer.volume[1]"), volume);
    assert_eq!(w.plan_exit(&[]), 0);
}

/// A volume detached and a firewall's rules revoked behind gpuform's back
/// are planned back as updates (attach, authorize), not ignored.
#[test]
fn a_detached_volume_and_a_bare_firewall_are_completed() {
    let w = Work::new();
    w.apply(&[]);
    let st = ["--state", ".gpuform/e2e.state.json"];
    let mut detach = vec![
        "sandbox",
        "set",
        "cluster.trainer.volume[0]",
        "attached_to=null",
    ];
    detach.extend_from_slice(&st);
    w.ok(&detach);
    let mut revoke = vec![
        "sandbox",
        "set",
        "cluster.trainer.firewall",
        "members=false",
    ];
    revoke.extend_from_slice(&st);
    w.ok(&revoke);
    let plan = w.plan_json(&[]);
    assert_eq!(action_of(&plan, "cluster.trainer.volume[0]").0, "update");
    assert_eq!(action_of(&plan, "cluster.trainer.firewall").0, "update");
    w.apply(&[]);
    w.assert_exact(&desired_addresses(2), "after completion");
    assert_eq!(w.plan_exit(&[]), 0);
}

/// Moving a cluster to another region replaces its volumes, and the plan
/// says that their data does not follow.
#[test]
fn a_move_says_the_data_does_not_follow() {
    let w = Work::new();
    w.apply(&[]);
    let moved = SPEC.replace(
        "region: us-east-1\n    zones: [us-east-1a, us-east-1b]",
        "region: us-west-2\n    zones: [us-west-2a]",
    );
    std::fs::write(w.path().join("spec.yaml"), moved).unwrap();
    let plan = w.plan_json(&[]);
    let (action, reason) = action_of(&plan, "cluster.trainer.volume[0]");
    assert_eq!(action, "replace");
    assert!(reason.contains("does not follow"), "{reason}");
}

/// The lineage a state file records.
fn lineage_of(path: &Path) -> String {
    let st: Value = serde_json::from_slice(&std::fs::read(path).expect("state file")).unwrap();
    st["lineage"].as_str().expect("lineage").to_string()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A state moved away (lost) is not a reason to make a second copy of every
/// node: a plan from the new, empty state lists the project's tagged
/// resources, refuses to create where another state's resource sits, names
/// that state's lineage, and `--adopt-lineage` takes them over, ids and all.
#[test]
fn a_lost_state_never_duplicates_and_is_adopted_by_its_lineage() {
    let w = Work::new();
    w.apply(&[]);
    let made = w.cloud();
    let state = w.path().join(".gpuform/e2e.state.json");
    let lineage = lineage_of(&state);
    std::fs::rename(&state, w.path().join("lost.state.json")).unwrap();
    std::fs::remove_file(w.path().join(".gpuform/e2e.state.json.backup")).ok();

    for args in [
        &["plan", "spec.yaml", "--sandbox"][..],
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    ] {
        let verb = args[0];
        let out = w.run(args);
        assert_eq!(out.status.code(), Some(1), "{verb}: {}", stderr_of(&out));
        let err = stderr_of(&out);
        assert!(
            err.contains(&format!("--adopt-lineage {lineage}"))
                && err.contains("cluster.trainer.node[1]")
                && err.contains("a second time"),
            "{verb} must name what it found and the lineage to adopt:\n{err}"
        );
        assert_eq!(w.cloud(), made, "{verb} refused: nothing may be made");
    }

    let out = w.apply(&["--adopt-lineage", &lineage]);
    assert!(out.contains("0 created"), "{out}");
    assert_eq!(w.cloud(), made, "adoption makes and deletes nothing");
    w.assert_exact(&desired_addresses(2), "after adopting the lost state");
    assert_eq!(
        lineage_of(&state),
        lineage,
        "a new state takes the lineage over"
    );
    assert_eq!(w.plan_exit(&[]), 0, "adopted: the plan is clean");
}

/// State lives beside the spec: a run from another directory finds the same
/// state (and sandbox), and writes nothing where it was run.
#[test]
fn a_spec_run_from_another_directory_uses_the_state_beside_it() {
    let w = Work::new();
    w.apply(&[]);
    let made = w.cloud();
    let elsewhere = tempfile::tempdir().unwrap();
    let spec = w.path().join("spec.yaml");
    let spec = spec.to_str().unwrap();
    let out = support::gpuform_cmd(
        elsewhere.path(),
        &["plan", spec, "--sandbox", "--detailed-exitcode"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = support::gpuform_cmd(
        elsewhere.path(),
        &[
            "apply",
            spec,
            "--sandbox",
            "--auto-approve",
            "--var",
            "nodes=3",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        !elsewhere.path().join(".gpuform").exists(),
        "nothing is written in the working directory"
    );
    assert_eq!(
        w.cloud().len(),
        made.len() + 2,
        "one node and its volume more"
    );
    w.assert_exact(&desired_addresses(3), "after a scale-up from elsewhere");
}

/// `state rm` forgets; the next plan finds the resource by its tags and
/// records it as it is: no replacement, of it or of what depends on it
/// (a forgotten firewall used to replace every node).
#[test]
fn state_rm_then_plan_adopts_without_replacing_anything() {
    let w = Work::new();
    w.apply(&[]);
    let made = w.cloud();
    w.ok(&[
        "state",
        "rm",
        "cluster.trainer.node[0]",
        "cluster.trainer.firewall",
        "cluster.trainer.volume[1]",
        "-f",
        "spec.yaml",
    ]);
    let plan = w.plan_json(&[]);
    let changed: Vec<&Value> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] != "no-op")
        .collect();
    assert!(changed.is_empty(), "forgotten, then adopted: {changed:?}");
    assert!(
        plan["warnings"]
            .to_string()
            .contains("cluster.trainer.firewall"),
        "the plan says what it adopts: {}",
        plan["warnings"]
    );
    assert_eq!(w.plan_exit(&[]), 0);
    w.apply(&[]);
    assert_eq!(w.cloud(), made, "nothing made or deleted");
    w.assert_exact(&desired_addresses(2), "after adopting what state rm forgot");
}

/// Two workspaces of one project in one region of one cloud: each state
/// makes and sees only its own resources (the workspace is an ownership
/// tag), so neither refuses, adopts or deletes the other's, although their
/// addresses are the same.
#[test]
fn two_workspaces_share_a_region_without_meeting() {
    let w = Work::new();
    // Bucket names are global, in every workspace: the clusters only.
    let spec = SPEC.split("buckets:").next().unwrap();
    std::fs::write(w.path().join("spec.yaml"), spec).unwrap();
    let sandbox = w.path().join("shared-sandbox");
    let sandbox = sandbox.to_str().unwrap();
    let run = |ws: &str, args: &[&str]| -> Output {
        w.cmd(args)
            .env("GPUFORM_SANDBOX_DIR", sandbox)
            .env("GPUFORM_WORKSPACE", ws)
            .output()
            .unwrap()
    };
    let apply = ["apply", "spec.yaml", "--sandbox", "--auto-approve"];
    let plan = ["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"];
    for ws in ["default", "staging"] {
        let out = run(ws, &apply);
        assert!(out.status.success(), "{ws}: {}", stderr_of(&out));
    }
    for ws in ["default", "staging"] {
        assert_eq!(run(ws, &plan).status.code(), Some(0), "{ws}: clean");
    }
    let staging = w.path().join(".gpuform/workspaces/staging/e2e.state.json");
    assert!(
        staging.exists(),
        "the staging workspace has its own state file"
    );
    let ls = |ws: &str| -> Vec<Value> {
        let out = run(
            ws,
            &[
                "sandbox",
                "ls",
                "--json",
                "--state",
                ".gpuform/e2e.state.json",
            ],
        );
        serde_json::from_slice(&out.stdout).expect("sandbox ls json")
    };
    let all = ls("default");
    let tagged = |ws: Option<&str>| {
        all.iter()
            .filter(|r| r["tags"]["gpuform:workspace"].as_str() == ws)
            .count()
    };
    let per_workspace = desired_addresses(2).len() - 1; // no bucket
    assert_eq!(tagged(None), per_workspace, "default's, untagged");
    assert_eq!(tagged(Some("staging")), per_workspace, "staging's, tagged");

    let out = run(
        "staging",
        &["destroy", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        ls("default").len(),
        per_workspace,
        "default's are untouched"
    );
    assert_eq!(run("default", &plan).status.code(), Some(0));
}

/// A plan that changes nothing says so briefly: one line and the cost
/// totals, no per-cluster cost lines or notes unless `--verbose` asks.
#[test]
fn a_no_op_plan_is_brief_unless_verbose() {
    let w = Work::new();
    w.apply(&[]);
    let brief = w.ok(&["plan", "spec.yaml", "--sandbox"]);
    assert!(brief.contains("No changes."), "{brief}");
    assert!(brief.contains("Cost:"), "the totals stay: {brief}");
    assert!(
        !brief.contains("cluster trainer:") && !brief.contains("note:"),
        "{brief}"
    );
    let verbose = w.ok(&["plan", "spec.yaml", "--sandbox", "--verbose"]);
    assert!(
        verbose.contains("cluster trainer:") && verbose.contains("note:"),
        "{verbose}"
    );
    // A plan with changes still shows its cost lines.
    let changes = w.ok(&["plan", "spec.yaml", "--sandbox", "--var", "nodes=3"]);
    assert!(changes.contains("cluster trainer:"), "{changes}");
}
