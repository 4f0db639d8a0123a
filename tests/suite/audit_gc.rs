//! `gpuform audit` and `gpuform gc` on the sandbox, through the binary:
//! every finding asserted one by one, ownership from the states, bad input,
//! and gc deleting the strays of another state of the project (crash-safe:
//! killed at a call, then run again) while keeping what its state records.

use crate::support;

use serde_json::Value;
use std::collections::BTreeSet;
use support::{assert_success, SandboxWork};

/// Two pools on the sandbox (AWS catalog, us-east-1): an inference pool of
/// one 8×A100 node without a data volume (MIG and spot candidate, over the
/// budget), and a batch pool of two T4 nodes with data volumes.
const SPEC: &str = "project: shop
clusters:
  serve:
    cloud: sandbox
    region: us-east-1
    nodes: 1
    gpu: A100-40GB:8
    tags:
      workload: inference
  batch:
    cloud: sandbox
    region: us-east-1
    nodes: 2
    gpu: T4:1
    disk:
      root_gb: 100
      data_gb: 50
";

/// The budget the audit checks (an apply over it would be refused by the
/// plan's budget guard, so the nodes are made without it).
const BUDGET: &str = "budget:
  max_monthly_usd: 1000
";

const STATE: &str = ".gpuform/shop.state.json";
const OTHER: &str = ".gpuform/other.state.json";

/// Another state of the same project in the same sandbox (a lost state, or
/// a copy of the spec applied elsewhere): its resources carry `shop`'s tags
/// and another lineage, and `shop`'s state does not record them. Its
/// clusters are named apart: where their addresses met, the second apply
/// would refuse to make a second copy (see `e2e_sandbox`'s lost-state test).
fn apply_other_state(w: &SandboxWork) {
    let other = SPEC
        .replace("  serve:", "  old-serve:")
        .replace("  batch:", "  old-batch:");
    std::fs::write(w.path().join("other.yaml"), other).unwrap();
    w.ok(&[
        "apply",
        "other.yaml",
        "--sandbox",
        "--auto-approve",
        "--state",
        OTHER,
    ]);
}

fn audit_json(w: &SandboxWork, extra: &[&str]) -> Value {
    let mut args = vec!["audit", "spec.yaml", "--json"];
    args.extend_from_slice(extra);
    let out = w.run(&args, None);
    assert_success(&out, "audit --json");
    serde_json::from_slice(&out.stdout).expect("audit JSON")
}

fn state_id(w: &SandboxWork, state: &str, address: &str) -> String {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(w.path().join(state)).unwrap()).unwrap();
    doc["resources"][address]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{address} not in {state}"))
        .to_string()
}

fn set(w: &SandboxWork, address: &str, assignment: &str) {
    w.ok(&["sandbox", "set", address, assignment, "--state", STATE]);
}

fn findings(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["subject"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn instance<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in the audit"))
}

#[test]
fn audit_reports_owners_costs_and_each_finding() {
    let w = SandboxWork::new("shop", SPEC);
    w.ok(&["apply", "spec.yaml", "--sandbox", "--auto-approve"]);
    let serve = state_id(&w, STATE, "cluster.serve.node[0]");
    let b0 = state_id(&w, STATE, "cluster.batch.node[0]");
    let b1 = state_id(&w, STATE, "cluster.batch.node[1]");
    let v1 = state_id(&w, STATE, "cluster.batch.volume[1]");
    // Behind gpuform's back: batch node 0 launched on the 1st (672 h before
    // the pinned now, 2026-11-29T00:00Z), node 1 stopped, volume 1 detached.
    set(
        &w,
        "cluster.batch.node[0]",
        "launch_time=2026-11-01T00:00:00Z",
    );
    set(
        &w,
        "cluster.serve.node[0]",
        "launch_time=2026-10-15T12:00:00Z",
    );
    set(&w, "cluster.batch.node[1]", "status=stopped");
    set(&w, "cluster.batch.volume[1]", "attached_to=null");
    w.write_spec(&format!("{SPEC}{BUDGET}"));

    let r = audit_json(&w, &[]);
    assert_eq!(r["now"], "2026-11-29T00:00:00Z");
    assert_eq!(r["regions"], serde_json::json!(["sandbox:aws us-east-1"]));
    assert_eq!(r["instances"].as_array().unwrap().len(), 3, "{r:#}");

    let s = instance(&r, &serve);
    assert_eq!(s["owner"], "managed");
    assert_eq!(s["project"], "shop");
    assert_eq!(s["instance_type"], "p4d.24xlarge");
    assert_eq!(s["gpu_model"], "A100-40GB");
    assert_eq!(s["gpu_count"], 8);
    assert_eq!(s["state"], "running");
    assert_eq!(s["pricing"], "on-demand");
    // Launched mid-October: 44.5 days up, this month's bill since the 1st.
    assert_eq!(s["uptime_hours"], 44.5 * 24.0);
    let hourly = s["hourly_usd"].as_f64().unwrap();
    assert_eq!(hourly, 21.957642);
    let mtd = s["month_to_date_usd"].as_f64().unwrap();
    assert!((mtd - 672.0 * hourly).abs() < 1e-6, "{mtd}");
    assert!((s["monthly_usd"].as_f64().unwrap() - 730.0 * hourly).abs() < 1e-6);
    assert!(
        s["price_basis"].as_str().unwrap().starts_with("sourced "),
        "{s}"
    );

    let stopped = instance(&r, &b1);
    assert_eq!(stopped["state"], "stopped");
    assert_eq!(stopped["monthly_usd"], 0.0);
    assert_eq!(stopped["month_to_date_usd"], Value::Null);

    let got: BTreeSet<(String, String)> = findings(&r).into_iter().collect();
    let want: BTreeSet<(String, String)> = [
        ("stopped-paying-for-disks", b1.as_str()),
        ("unattached-volume", v1.as_str()),
        // 672 h on-demand this month > 0.331/0.526 × 730 = 459 h.
        ("past-reserved-break-even", b0.as_str()),
        // The serve node too: up since October, so 672 h this month.
        ("past-reserved-break-even", serve.as_str()),
        // 8 whole A100s for inference; 7 slices per GPU fit them on 2.
        ("mig-consolidation", "shop/serve"),
        // No data volume, on-demand.
        ("spot-candidate", "shop/serve"),
        // 730 × (21.96 + 0.526) ≫ 1,000 a month.
        ("over-budget", "shop"),
    ]
    .into_iter()
    .map(|(k, s)| (k.to_string(), s.to_string()))
    .collect();
    assert_eq!(got, want, "{r:#}");
    let msg = |kind: &str| {
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == kind)
            .unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        msg("mig-consolidation").contains("fit on 2 GPU(s)"),
        "{}",
        msg("mig-consolidation")
    );
    assert!(
        msg("over-budget").contains("$1,000.00 a month"),
        "{}",
        msg("over-budget")
    );
    assert!(
        msg("spot-candidate").contains("would save about"),
        "{}",
        msg("spot-candidate")
    );
    assert!(
        msg("unattached-volume").contains("50 GB"),
        "{}",
        msg("unattached-volume")
    );

    // The same report as a table and as markdown.
    let table = w.ok(&["audit", "spec.yaml"]);
    assert!(
        table.contains("Findings (7)") && table.contains("p4d.24xlarge"),
        "{table}"
    );
    let md = w.ok(&["audit", "spec.yaml", "--markdown"]);
    assert!(
        md.contains("### Findings (7)") && md.contains("| where |"),
        "{md}"
    );
}

#[test]
fn ownership_is_managed_orphaned_or_unknown_by_state() {
    let w = SandboxWork::new("shop", SPEC);
    w.ok(&["apply", "spec.yaml", "--sandbox", "--auto-approve"]);
    apply_other_state(&w);
    let mine = state_id(&w, STATE, "cluster.serve.node[0]");
    let theirs = state_id(&w, OTHER, "cluster.old-serve.node[0]");
    let r = audit_json(&w, &[]);
    assert_eq!(r["instances"].as_array().unwrap().len(), 6);
    assert_eq!(instance(&r, &mine)["owner"], "managed");
    assert_eq!(instance(&r, &theirs)["owner"], "orphaned");
    assert!(findings(&r).contains(&("orphaned".into(), theirs.clone())));

    // Without a spec, no state is read: tagged resources are `unknown`.
    let out = w.run(
        &[
            "audit",
            "--cloud",
            "aws",
            "--region",
            "us-east-1",
            "--sandbox",
            "--json",
        ],
        None,
    );
    assert_success(&out, "audit without spec");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(instance(&r, &mine)["owner"], "unknown");
    assert_eq!(instance(&r, &theirs)["owner"], "unknown");

    // A spec whose state does not exist: unknown too, with a note.
    let out = w.run(
        &[
            "audit",
            "spec.yaml",
            "--json",
            "--state",
            ".gpuform/nowhere.json",
        ],
        None,
    );
    assert_success(&out, "audit with a missing state");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(instance(&r, &mine)["owner"], "unknown");
    assert!(
        r["notes"][0].as_str().unwrap().contains("no state at"),
        "{r}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let w = SandboxWork::new("shop", SPEC);
    let err = |args: &[&str]| {
        let out = w.run(args, None);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = err(&["audit", "--cloud", "aws", "--region", "mars-north-1"]);
    assert!(
        e.contains("unknown region `mars-north-1` for aws") && e.contains("us-east-1"),
        "{e}"
    );
    let e = err(&["audit", "--cloud", "gcp", "--region", "us-east-1"]);
    assert!(e.contains("unknown cloud `gcp`"), "{e}");
    let e = err(&["audit", "--region", "us-east-1"]);
    assert!(e.contains("--region needs --cloud"), "{e}");
    let e = err(&["audit"]);
    assert!(e.contains("nothing to audit"), "{e}");
    std::fs::create_dir_all(w.path().join(".gpuform")).unwrap();
    std::fs::write(w.path().join(STATE), "{ not json").unwrap();
    let e = err(&["audit", "spec.yaml"]);
    assert!(e.contains("shop.state.json"), "{e}");
}

/// Ids of everything alive in the sandbox, from `sandbox ls --json`.
fn live_ids(w: &SandboxWork) -> BTreeSet<String> {
    let out = w.ok(&["sandbox", "ls", "--json", "--state", STATE]);
    let v: Value = serde_json::from_str(out.trim()).expect("sandbox ls JSON");
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn state_ids(w: &SandboxWork, state: &str) -> BTreeSet<String> {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(w.path().join(state)).unwrap()).unwrap();
    doc["resources"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn gc_deletes_the_projects_strays_and_survives_a_crash() {
    let w = SandboxWork::new("shop", SPEC);
    w.ok(&["apply", "spec.yaml", "--sandbox", "--auto-approve"]);
    apply_other_state(&w);
    let mine = state_ids(&w, STATE);
    let strays = state_ids(&w, OTHER);
    assert_eq!(live_ids(&w), &mine | &strays);

    // Another state's resources are left alone unless asked for: that
    // state may be another workspace's live one.
    let kept = w.ok(&["gc", "spec.yaml", "--sandbox", "--auto-approve"]);
    assert!(
        kept.contains("by another state") && kept.contains("--other-states"),
        "{kept}"
    );
    assert_eq!(
        live_ids(&w),
        &mine | &strays,
        "gc deleted another state's resources unasked"
    );

    // Without confirmation (stdin is not a terminal) nothing happens.
    let out = w.run(&["gc", "spec.yaml", "--sandbox", "--other-states"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--auto-approve"));
    assert_eq!(live_ids(&w), &mine | &strays);

    // Killed at its 3rd call; then run again.
    let out = w.run(
        &[
            "gc",
            "spec.yaml",
            "--sandbox",
            "--auto-approve",
            "--other-states",
        ],
        Some("crash_after=3"),
    );
    assert!(!out.status.success(), "the crash must stop gc");
    let left = live_ids(&w);
    assert!(mine.is_subset(&left), "gc deleted a recorded resource");
    let plan = w.ok(&[
        "gc",
        "spec.yaml",
        "--sandbox",
        "--auto-approve",
        "--other-states",
    ]);
    assert!(plan.contains("by another state"), "{plan}");
    assert_eq!(live_ids(&w), mine, "strays left or recorded ones deleted");
    assert_eq!(state_ids(&w, STATE), mine);
    // Nothing left to collect; the spec's own resources plan clean.
    let again = w.ok(&[
        "gc",
        "spec.yaml",
        "--sandbox",
        "--auto-approve",
        "--other-states",
    ]);
    assert!(again.contains("Nothing to collect"), "{again}");
    assert_eq!(w.plan_exit(&[]), 0);
}
