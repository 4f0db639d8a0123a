//! Capacity Blocks on the sandbox: a cluster filling a reservation, then a
//! block bought by apply (only with `--allow-purchase`), then on-demand;
//! a kill after each call of the purchase never buys twice; a block that
//! has ended takes no node; the plan counts the block as paid up front.
//! The suite's pinned day is 2026-11-29, so a block starting that day
//! starts at once (the sandbox's clock is the pinned day at 00:00 UTC).

use crate::support::{self, SandboxWork};

const SPEC: &str = "\
project: cap
clusters:
  trainer:
    cloud: sandbox
    region: us-east-1
    nodes: NODES
    gpu: A100-40GB:8
    instance_type: p4d.24xlarge
    capacity: [{reservation: {tags: {team: ml}}}, {block: {start: 2026-11-29, hours: 48, count: 2}}, on-demand]
";

fn reserve(w: &SandboxWork) -> String {
    // In the zone the block's first offering is in (the region's first).
    w.ok(&[
        "sandbox",
        "reserve",
        "-f",
        "spec.yaml",
        "p4d.24xlarge",
        "--region",
        "us-east-1",
        "--zone",
        "us-east-1a",
        "--count",
        "1",
        "--until",
        "2027-01-01",
        "--tag",
        "team=ml",
    ])
    .trim()
    .to_string()
}

fn state(w: &SandboxWork) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(w.path().join(".gpuform/cap.state.json")).expect("state"),
    )
    .expect("state json")
}

fn attr(w: &SandboxWork, address: &str, key: &str) -> Option<String> {
    state(w)["resources"][address]["attrs"][key]
        .as_str()
        .map(str::to_string)
}

/// Capacity Blocks the sandbox account holds: purchases in its log.
fn blocks_bought(w: &SandboxWork) -> usize {
    let dir = w.path().join(".gpuform/sandbox");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("sandbox dir").flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        n += text
            .lines()
            .filter(|l| l.contains("\"op\":\"create\"") && l.contains("\"kind\":\"block\""))
            .count();
    }
    n
}

#[test]
fn nodes_fill_a_reservation_then_a_bought_block_then_on_demand() {
    let w = SandboxWork::new("cap", &SPEC.replace("NODES", "4"));
    let cr = reserve(&w);
    let plan = w.ok(&["plan", "spec.yaml"]);
    for want in [
        "cluster.trainer.block[1]: buys Capacity Block offering 2 x p4d.24xlarge in us-east-1a, 2026-11-29T00:00:00Z to 2026-12-01T11:30:00Z",
        "cannot be cancelled",
        "EC2 begins terminating its instances 30 minutes before its end",
        "node[1..2] in Capacity Block cluster.trainer.block[1]",
        "node[3] on-demand",
        "paid up front: $",
    ] {
        assert!(plan.contains(want), "{want}\n{plan}");
    }
    // The block's nodes add nothing hourly: one reservation node and one
    // on-demand node at the on-demand rate.
    let json: serde_json::Value =
        serde_json::from_str(&w.ok(&["plan", "spec.yaml", "--json"])).expect("plan json");
    let hourly = json["cost"]["hourly_usd_after"].as_f64().unwrap();
    let upfront = json["cost"]["upfront_usd"].as_f64().unwrap();
    let node_rate = hourly / 2.0;
    assert!(node_rate > 1.0, "{hourly}");
    // 2 instances × 48 h, paid once.
    assert!(
        (upfront - node_rate * 96.0).abs() < 1.0,
        "{upfront} vs {node_rate}"
    );

    // --auto-approve alone never buys: exit 1, before any call.
    let out = w.run(&["apply", "spec.yaml", "--auto-approve"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("would buy 1 Capacity Block(s) (cluster.trainer.block[1])")
            && err.contains("--allow-purchase"),
        "{err}"
    );
    assert_eq!(blocks_bought(&w), 0);
    // Nothing was made, so nothing was recorded.
    let recorded = std::fs::read_to_string(w.path().join(".gpuform/cap.state.json"))
        .map(|t| t.contains("cluster.trainer"))
        .unwrap_or(false);
    assert!(!recorded);

    w.ok(&["apply", "spec.yaml", "--auto-approve", "--allow-purchase"]);
    assert_eq!(blocks_bought(&w), 1);
    let block = state(&w)["resources"]["cluster.trainer.block[1]"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(block.starts_with("cr-"), "{block}");
    assert_eq!(
        attr(&w, "cluster.trainer.node[0]", "capacity_reservation"),
        Some(cr)
    );
    for n in [1, 2] {
        let node = format!("cluster.trainer.node[{n}]");
        assert_eq!(
            attr(&w, &node, "capacity_block").as_deref(),
            Some("cluster.trainer.block[1]")
        );
        assert_eq!(
            state(&w)["resources"][&node]["deps"]["block"].as_str(),
            Some("cluster.trainer.block[1]")
        );
    }
    assert_eq!(attr(&w, "cluster.trainer.node[3]", "capacity_block"), None);
    // Stable: nothing more to buy or make.
    assert_eq!(w.plan_exit(&[]), 0);

    // Destroying forgets the block and says it cannot be deleted.
    let out = w.ok(&["destroy", "spec.yaml", "--auto-approve"]);
    assert!(
        out.contains("a Capacity Block cannot be deleted or cancelled"),
        "{out}"
    );
    assert_eq!(blocks_bought(&w), 1);
}

#[test]
fn a_kill_after_each_call_of_the_purchase_never_buys_twice() {
    let spec = SPEC
        .replace("NODES", "2")
        .replace("{reservation: {tags: {team: ml}}}, ", "");
    // Calls of a fresh apply, counted from 1: find where the purchase's
    // calls are by running one whole apply and counting.
    let mut seen_purchase = false;
    for n in 1..=40u64 {
        let w = SandboxWork::new("cap", &spec);
        let out = w.run(
            &["apply", "spec.yaml", "--auto-approve", "--allow-purchase"],
            Some(&format!("crash_after={n}")),
        );
        let crashed = !out.status.success();
        w.ok(&["apply", "spec.yaml", "--auto-approve", "--allow-purchase"]);
        assert_eq!(blocks_bought(&w), 1, "crash_after={n}");
        assert!(
            state(&w)["resources"]["cluster.trainer.block[0]"]["id"].is_string(),
            "crash_after={n}"
        );
        assert_eq!(w.plan_exit(&[]), 0, "crash_after={n}");
        seen_purchase |= crashed;
        if !crashed {
            // The whole apply took fewer calls: every call was crossed.
            assert!(seen_purchase && n > 3, "crash_after={n}");
            return;
        }
    }
    panic!("an apply of 2 nodes and a block took more than 40 calls");
}

#[test]
fn a_block_that_has_ended_takes_no_node() {
    let spec = SPEC.replace("{reservation: {tags: {team: ml}}}, ", "");
    let w = SandboxWork::new("cap", &spec.replace("NODES", "1"));
    w.ok(&["apply", "spec.yaml", "--auto-approve", "--allow-purchase"]);
    // Two days on, the block (2026-11-29 to 2026-12-01T11:30Z) is over: a
    // second node planned into it is refused by apply with its window.
    w.write_spec(&spec.replace("NODES", "2"));
    let out = support::gpuform_cmd(w.path(), &["plan", "spec.yaml"])
        .env("GPUFORM_TODAY", "2026-12-02")
        .output()
        .unwrap();
    let plan = support::succeeded(&out, &["plan"]);
    assert!(
        plan.contains("cluster.trainer.block[0]: Capacity Block ended at 2026-12-01T11:30:00Z"),
        "{plan}"
    );
    let out = support::gpuform_cmd(w.path(), &["apply", "spec.yaml", "--auto-approve"])
        .env("GPUFORM_TODAY", "2026-12-02")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cluster.trainer.node[1]: Capacity Block cluster.trainer.block[0] has ended (2026-12-01T11:30:00Z"),
        "{err}"
    );
}

#[test]
fn a_budget_counts_the_upfront_price() {
    let spec = SPEC
        .replace("NODES", "2")
        .replace("{reservation: {tags: {team: ml}}}, ", "")
        + "budget: {max_monthly_usd: 100}\n";
    let w = SandboxWork::new("cap", &spec);
    let out = w.run(&["plan", "spec.yaml"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("paid up front for Capacity Blocks"), "{err}");
}

/// A lost state never buys twice: refresh lists blocks by the project's
/// tags like every other kind, so an apply without the state finds the
/// block it bought (another lineage's: refused until `--adopt-lineage`),
/// then adopts it instead of buying a second one.
#[test]
fn a_lost_state_adopts_its_block_instead_of_buying_another() {
    let spec = SPEC
        .replace("NODES", "1")
        .replace("{reservation: {tags: {team: ml}}}, ", "");
    let w = SandboxWork::new("cap", &spec);
    w.ok(&["apply", "spec.yaml", "--auto-approve", "--allow-purchase"]);
    assert_eq!(blocks_bought(&w), 1);
    let block = state(&w)["resources"]["cluster.trainer.block[0]"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let lineage = state(&w)["lineage"].as_str().unwrap().to_string();
    let gpuform_dir = w.path().join(".gpuform");
    for f in ["cap.state.json", "cap.state.json.backup"] {
        std::fs::remove_file(gpuform_dir.join(f)).ok();
    }

    let out = w.run(
        &["apply", "spec.yaml", "--auto-approve", "--allow-purchase"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("--adopt-lineage {lineage}")), "{err}");
    assert_eq!(blocks_bought(&w), 1, "refused: nothing bought");

    w.ok(&[
        "apply",
        "spec.yaml",
        "--auto-approve",
        "--allow-purchase",
        "--adopt-lineage",
        &lineage,
    ]);
    assert_eq!(blocks_bought(&w), 1, "adopted, not bought again");
    assert_eq!(
        state(&w)["resources"]["cluster.trainer.block[0]"]["id"].as_str(),
        Some(block.as_str())
    );
    assert_eq!(w.plan_exit(&[]), 0);
}

/// `gpuform reconcile` never buys: a block to buy is a change for review,
/// not a repair, even with `--apply-all` (which makes every other change
/// one); the engine's purchase guard stands behind it.
#[test]
fn reconcile_never_buys_a_block() {
    let spec = SPEC
        .replace("NODES", "1")
        .replace("{reservation: {tags: {team: ml}}}, ", "");
    let w = SandboxWork::new("cap", &spec);
    for extra in [&[][..], &["--apply-all"][..]] {
        let mut args = vec!["reconcile", "spec.yaml", "--once"];
        args.extend_from_slice(extra);
        let out = w.run(&args, None);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {text}");
        assert!(
            text.contains("cluster.trainer.block[0]"),
            "{extra:?}: {text}"
        );
        assert!(text.contains("never a repair"), "{extra:?}: {text}");
        assert_eq!(blocks_bought(&w), 0, "{extra:?}: reconcile bought a block");
    }
}
