//! A cluster's `maintenance_window` on the sandbox: inside it reconcile
//! makes the disruptive change its spot policy calls for (a fallback's
//! on-demand node back to spot, a replacement); outside it that change is
//! postponed and reported with the window's next opening, while a reclaimed
//! node is repaired at once. "Now" is pinned per run with `GPUFORM_TODAY`
//! (00:00 UTC of that day): 2026-11-29 is a Sunday, 2026-11-30 a Monday.

use crate::reconcile::{
    applied, expected, pricing_of_nodes, reclaim, rules, spec, text, POLICY, PROJECT,
};
use crate::support::{self, SandboxWork, TODAY};
use std::process::Output;

/// Sunday 23:00 UTC for two hours: closed at Sunday 00:00, open at Monday 00:00.
const SUNDAY_NIGHT: &str = r#"    maintenance_window:
      days: [sun]
      start: "23:00"
      duration: 2h
"#;

/// Saturday and Sunday 02:00 UTC for four hours: closed at 00:00 of any day.
const WEEKEND: &str = r#"    maintenance_window: {days: [sat, sun], start: "02:00", duration: 4h, timezone: UTC}
"#;

const MONDAY: &str = "2026-11-30";

/// `gpuform ARGS` with now pinned at 00:00 UTC of `day`.
fn on(w: &SandboxWork, day: &str, args: &[&str]) -> Output {
    support::gpuform_cmd(w.path(), args)
        .env("GPUFORM_TODAY", day)
        .output()
        .expect("run gpuform")
}

fn reconcile_on(w: &SandboxWork, day: &str) -> Output {
    on(
        w,
        day,
        &[
            "reconcile",
            "spec.yaml",
            "--sandbox",
            "--once",
            "--detailed-exitcode",
        ],
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Four spot nodes (node[0] the on-demand base) with `window`; two reclaims
/// on Sunday, while the window is closed, turn the fallback on: node[2] is
/// repaired at once, on-demand.
fn fallen_back(window: &str) -> SandboxWork {
    let w = applied(4, &format!("{POLICY}{window}"));
    reclaim(&w, "cluster.pool.node[1]");
    let out = reconcile_on(&w, TODAY);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    reclaim(&w, "cluster.pool.node[2]");
    let out = reconcile_on(&w, TODAY);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let log = stdout(&out);
    assert!(
        log.contains("repair: create cluster.pool.node[2]") && log.contains("back on-demand"),
        "a reclaim is repaired outside the window: {log}"
    );
    assert!(!log.contains("postponed:"), "{log}");
    assert_eq!(
        pricing_of_nodes(&w),
        ["on-demand", "spot", "on-demand", "spot"]
    );
    w
}

#[test]
fn in_its_maintenance_window_reconcile_moves_a_fallen_back_node_to_spot() {
    let w = fallen_back(SUNDAY_NIGHT);
    let before = w.recorded();
    // Monday 00:00: the hold is over and the window open.
    let out = reconcile_on(&w, MONDAY);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let log = stdout(&out);
    assert!(
        log.contains("repair: replace cluster.pool.node[2]") && log.contains("back to spot"),
        "{log}"
    );
    assert!(!log.contains("postponed:"), "{log}");
    assert_eq!(pricing_of_nodes(&w), ["on-demand", "spot", "spot", "spot"]);
    w.assert_exact(&expected(4, false), "after the move back to spot");
    support::assert_sandbox_complete(w.path(), PROJECT, &rules(), "after the move back to spot");
    let after = w.recorded();
    assert_ne!(
        after["cluster.pool.node[2]"],
        before["cluster.pool.node[2]"]
    );
    for a in [
        "cluster.pool.node[0]",
        "cluster.pool.node[1]",
        "cluster.pool.node[3]",
    ] {
        assert_eq!(after[a], before[a], "{a} was touched");
    }
    let plan = on(
        &w,
        MONDAY,
        &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    // The same pass without a window leaves the move for review (see
    // reconcile::a_spot_pool_falls_back_…); nothing is left here.
    let again = reconcile_on(&w, MONDAY);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

#[test]
fn outside_its_window_the_move_is_postponed_and_a_reclaim_still_repaired() {
    let w = fallen_back(WEEKEND);
    let fallen = w.recorded()["cluster.pool.node[2]"].clone();
    // Monday 00:00: the hold is over, the window closed until Saturday
    // 02:00; node[3] is reclaimed meanwhile.
    reclaim(&w, "cluster.pool.node[3]");
    let out = reconcile_on(&w, MONDAY);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let log = stdout(&out);
    assert!(
        log.contains("repair: create cluster.pool.node[3]") && log.contains("was reclaimed"),
        "{log}"
    );
    assert!(
        log.contains("postponed: replace cluster.pool.node[2]")
            && log.contains("back to spot")
            && log.contains("postponed until the maintenance window 2026-12-05T02:00:00Z"),
        "{log}"
    );
    // Its volume's re-attachment waits with it.
    assert!(
        log.contains("postponed: update cluster.pool.volume[2] (waits for cluster.pool.node[2]"),
        "{log}"
    );
    assert!(!log.contains("repair: replace"), "{log}");
    assert!(log.contains("2 postponed"), "{log}");
    assert_eq!(
        pricing_of_nodes(&w),
        ["on-demand", "spot", "on-demand", "spot"]
    );
    assert_eq!(w.recorded()["cluster.pool.node[2]"], fallen);
    w.assert_exact(&expected(4, false), "after the postponement");
    support::assert_sandbox_complete(w.path(), PROJECT, &rules(), "after the postponement");

    // Saturday 00:00 is still before the window: postponed again, said in
    // the JSON log with the instant it opens; nothing changed, exit 0.
    let out = on(
        &w,
        "2026-12-05",
        &[
            "reconcile",
            "spec.yaml",
            "--sandbox",
            "--once",
            "--detailed-exitcode",
            "--log-format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON log line"))
        .collect();
    let p = lines
        .iter()
        .find(|v| v["event"] == "postponed")
        .unwrap_or_else(|| panic!("no postponed line: {lines:?}"));
    assert_eq!(p["address"], "cluster.pool.node[2]", "{p}");
    assert_eq!(p["action"], "replace", "{p}");
    assert_eq!(p["until"], "2026-12-05T02:00:00Z", "{p}");
    let pass = lines.iter().find(|v| v["event"] == "pass").expect("pass");
    assert_eq!(pass["postponed"], 2, "{pass}");
    assert_eq!(pass["repairs"], 0, "{pass}");

    // `--apply-all` waits for the window too: a node the spec dropped is
    // not deleted outside it.
    w.write_spec(&spec(3, &format!("{POLICY}{WEEKEND}")));
    let out = on(
        &w,
        MONDAY,
        &[
            "reconcile",
            "spec.yaml",
            "--sandbox",
            "--once",
            "--apply-all",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let log = stdout(&out);
    assert!(
        log.contains("postponed: delete cluster.pool.node[3]")
            && log.contains("postponed: replace cluster.pool.node[2]"),
        "{log}"
    );
    w.assert_exact(&expected(4, false), "after --apply-all outside the window");
}

#[test]
fn a_bad_maintenance_window_is_a_located_error() {
    let w = SandboxWork::new(
        PROJECT,
        &spec(
            1,
            "    maintenance_window:\n      days: [sat, sunday]\n      start: 2am\n      duration: 4h\n      timezone: Europe/Berlin\n",
        ),
    );
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    for want in [
        "spec.yaml:16:19",
        "unknown day `sunday`",
        "write `sun`",
        "spec.yaml:17:14",
        "`HH:MM`",
        "spec.yaml:19:17",
        "daylight saving",
    ] {
        assert!(err.contains(want), "{want:?} not in:\n{err}");
    }
    let w = SandboxWork::new(
        PROJECT,
        &spec(
            1,
            "    maintenance_window: {start: \"02:00\", duration: 9d}\n",
        ),
    );
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.yaml:15:") && err.contains("`9d` is not a duration from `1m` to `7d`"),
        "{err}"
    );
    let w = SandboxWork::new(PROJECT, &spec(1, "    maintenance_window: {days: [sat]}\n"));
    let out = w.run(&["plan", "spec.yaml", "--sandbox"], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("missing the required key `start`")
            && err.contains("missing the required key `duration`"),
        "{err}"
    );
}
