//! The rest of the command surface, through the binary: every example plans,
//! state commands, show/output/graph, plan flags, the budget guard, and a
//! `migrate --write` applied on the sandbox.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gpuform(dir: &Path, args: &[&str]) -> Output {
    support::gpuform_cmd(dir, args)
        .output()
        .expect("run gpuform")
}

fn ok(dir: &Path, args: &[&str]) -> String {
    support::succeeded(&gpuform(dir, args), args)
}

#[test]
fn every_example_validates_and_plans_on_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let p = path.to_str().unwrap();
        ok(dir.path(), &["validate", p, "--sandbox"]);
        let out = gpuform(
            dir.path(),
            &[
                "plan",
                p,
                "--sandbox",
                "--detailed-exitcode",
                "--state",
                "s.json",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{p}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Cost:"), "{p}: a plan shows its cost");
        n += 1;
    }
    assert!(n >= 8, "examples found: {n}");
}

const SPEC: &str = "project: cmds\nclusters:\n  a:\n    cloud: aws\n    region: us-east-1\n    nodes: 2\n    gpu: T4\n";

#[test]
fn state_show_output_graph_and_plan_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), SPEC).unwrap();
    let graph = ok(d, &["graph", "spec.yaml", "--sandbox"]);
    assert!(
        graph.starts_with("digraph") && graph.contains("cluster.a.node[1]"),
        "{graph}"
    );
    ok(
        d,
        &["apply", "spec.yaml", "--sandbox", "--auto-approve", "-q"],
    );

    let list = ok(d, &["state", "list", "-f", "spec.yaml"]);
    assert!(list.lines().any(|l| l == "cluster.a.node[0]"), "{list}");
    let one: Value = serde_json::from_str(&ok(
        d,
        &["state", "show", "cluster.a.node[0]", "-f", "spec.yaml"],
    ))
    .unwrap();
    assert_eq!(one["kind"], "instance");
    let shown: Value =
        serde_json::from_str(&ok(d, &["show", "--json", "-f", "spec.yaml"])).unwrap();
    assert_eq!(shown["project"], "cmds");
    let nodes: Value =
        serde_json::from_str(&ok(d, &["output", "--json", "-f", "spec.yaml"])).unwrap();
    assert_eq!(nodes.as_array().unwrap().len(), 2);
    let table = ok(d, &["output", "-f", "spec.yaml"]);
    assert!(table.contains("g4dn.xlarge"), "{table}");
    // Each node's private address is the one the cloud itself reports.
    let live: Value =
        serde_json::from_str(&ok(d, &["sandbox", "ls", "--json", "-f", "spec.yaml"])).unwrap();
    for n in nodes.as_array().unwrap() {
        let id = n["id"].as_str().unwrap();
        let cloud = live
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id} is not in the sandbox: {live}"));
        let ip = n["private_ip"]
            .as_str()
            .unwrap_or_else(|| panic!("no private_ip: {n}"));
        assert_eq!(ip, cloud["attrs"]["private_ip"], "{n}");
        assert!(table.contains(ip), "{table}");
    }

    // --refresh=false plans from state alone: drift is not seen.
    ok(
        d,
        &["sandbox", "delete", "cluster.a.node[1]", "-f", "spec.yaml"],
    );
    let quiet = gpuform(
        d,
        &[
            "plan",
            "spec.yaml",
            "--sandbox",
            "--refresh=false",
            "--detailed-exitcode",
        ],
    );
    assert_eq!(quiet.status.code(), Some(0));
    let seen = gpuform(
        d,
        &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert_eq!(seen.status.code(), Some(2));

    // --destroy plans deleting everything.
    let plan: Value = serde_json::from_str(&ok(
        d,
        &["plan", "spec.yaml", "--sandbox", "--destroy", "--json"],
    ))
    .unwrap();
    assert!(plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["action"] == "delete"));
    assert_eq!(
        plan["summary"]["delete"].as_u64(),
        Some(5),
        "network, subnet, firewall, 2 nodes"
    );

    // state mv / rm: renames and forgets without touching the cloud.
    ok(
        d,
        &[
            "state",
            "mv",
            "cluster.a.node[0]",
            "cluster.a.node[9]",
            "-f",
            "spec.yaml",
        ],
    );
    assert!(ok(d, &["state", "list", "-f", "spec.yaml"]).contains("cluster.a.node[9]"));
    let bad = gpuform(d, &["state", "rm", "cluster.nope", "-f", "spec.yaml"]);
    assert_eq!(bad.status.code(), Some(1));
    ok(d, &["state", "rm", "cluster.a.node[9]", "-f", "spec.yaml"]);
    assert!(!ok(d, &["state", "list", "-f", "spec.yaml"]).contains("node[9]"));
    // The forgotten node is still in the cloud, tagged: the next apply adopts it under its address.
    ok(
        d,
        &["apply", "spec.yaml", "--sandbox", "--auto-approve", "-q"],
    );
    assert_eq!(
        gpuform(
            d,
            &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"]
        )
        .status
        .code(),
        Some(0)
    );
    let live = ok(d, &["sandbox", "ls", "-f", "spec.yaml"]);
    assert_eq!(
        live.lines()
            .filter(|l| l.contains("cluster.a.node["))
            .count(),
        2,
        "{live}"
    );

    assert!(ok(d, &["version"]).starts_with("gpuform "));
    assert!(ok(d, &["completions", "bash"]).contains("gpuform"));
}

#[test]
fn a_plan_over_budget_fails_naming_the_cheapest_fit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("spec.yaml"),
        "project: b\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    nodes: 4\n    gpu: A100-80GB:8\nbudget:\n  max_hourly_usd: 60\n",
    )
    .unwrap();
    let out = gpuform(d, &["plan", "spec.yaml", "--sandbox"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("over budget") && err.contains("by $"), "{err}");
    assert!(
        err.contains("cheapest compliant alternative: cluster `t` as spot"),
        "{err}"
    );
    // Negotiated prices make it fit.
    std::fs::write(
        d.join("prices.csv"),
        "cloud,region,instance_type,pricing,price,currency,source,as_of\naws,us-east-1,p4de.24xlarge,on-demand,14.0,USD,EDP,2026-11-01\n",
    )
    .unwrap();
    let plan: Value = serde_json::from_str(&ok(
        d,
        &[
            "plan",
            "spec.yaml",
            "--sandbox",
            "--json",
            "--prices",
            "prices.csv",
        ],
    ))
    .unwrap();
    assert!((plan["cost"]["hourly_usd_after"].as_f64().unwrap() - 56.0).abs() < 1e-6);
    assert_eq!(plan["cost"]["clusters"][0]["nodes_after"], 4);
}

/// Budgets fail closed: a node without a price for its pricing (Huawei's
/// A100s, AWS p3 reserved-3y, which no source prices) fails a plan with a
/// budget, naming each and how to price it, unless `allow_unpriced`; and
/// the plan says the cost after is unknown, never $0.
#[test]
fn a_budget_fails_closed_on_unpriced_nodes_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = |extra: &str| {
        format!(
            "project: b\nclusters:\n  big:\n    cloud: huawei\n    region: cn-north-4\n    nodes: 3\n    gpu: A100-80GB:8\n  v:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: V100-16GB:8\n    pricing: reserved-3y\nbudget:\n  max_hourly_usd: 1\n{extra}"
        )
    };
    std::fs::write(d.join("spec.yaml"), spec("")).unwrap();
    let out = gpuform(d, &["plan", "spec.yaml", "--sandbox"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("spec.yaml:14:1"),
        "located at `budget:`: {err}"
    );
    assert!(
        err.contains("the budget cannot be checked: 4 resource(s) have no price"),
        "{err}"
    );
    for node in [
        "cluster.big.node[0]",
        "cluster.big.node[2]",
        "cluster.v.node[0]",
    ] {
        assert!(err.contains(node), "{node}: {err}");
    }
    assert!(
        err.contains("aws us-east-1 p3.16xlarge reserved-3y"),
        "{err}"
    );
    assert!(
        err.contains("gpuform prices refresh --cloud huawei --region cn-north-4 --type"),
        "{err}"
    );
    assert!(
        err.contains("--prices FILE") && err.contains("allow_unpriced: true"),
        "{err}"
    );
    assert!(!err.contains("over budget"), "{err}");

    // Opting in: the plan passes, and says what counted as $0.
    std::fs::write(d.join("spec.yaml"), spec("  allow_unpriced: true\n")).unwrap();
    let text = ok(d, &["plan", "spec.yaml", "--sandbox"]);
    assert!(
        text.contains("note: budget.allow_unpriced: 4 resource(s) without a price count as $0"),
        "{text}"
    );
    assert!(
        text.contains("→ unknown ($0.00/h priced + 4 unpriced instance(s))"),
        "{text}"
    );
    assert!(
        text.contains("cluster big: 0 → 3 × p3.16xlarge.8 on-demand: $0.00/h → unknown"),
        "{text}"
    );

    // Without a budget, unpriced stays a note.
    std::fs::write(
        d.join("spec.yaml"),
        spec("").replace("budget:\n  max_hourly_usd: 1\n", ""),
    )
    .unwrap();
    let text = ok(d, &["plan", "spec.yaml", "--sandbox"]);
    assert!(text.contains("have no price in the catalog"), "{text}");

    // The setting is validated like the rest of the spec.
    std::fs::write(d.join("spec.yaml"), spec("  allow_unpriced: maybe\n")).unwrap();
    let out = gpuform(d, &["validate", "spec.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("spec.yaml:16:") && err.contains("budget.allow_unpriced"),
        "{err}"
    );
}

/// AWS reserved-3y has the price of the catalog's sourced snapshot row
/// (read here from the CSV itself, not through the catalog code).
#[test]
fn an_aws_reserved_3y_plan_shows_its_sourced_price() {
    let csv =
        std::fs::read_to_string(root().join("providers/catalog/data/aws/prices.csv")).unwrap();
    let row = csv
        .lines()
        .find(|l| l.starts_with("us-east-1,p4d.24xlarge,reserved-3y,"))
        .expect("a sourced 3-year row");
    let want: f64 = row.split(',').nth(3).unwrap().parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("spec.yaml"),
        "project: r\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    nodes: 2\n    gpu: A100-40GB:8\n    pricing: reserved-3y\nbudget:\n  max_hourly_usd: 100\n",
    )
    .unwrap();
    let plan: Value =
        serde_json::from_str(&ok(d, &["plan", "spec.yaml", "--sandbox", "--json"])).unwrap();
    let got = plan["cost"]["hourly_usd_after"].as_f64().unwrap();
    assert!((got - 2.0 * want).abs() < 1e-9, "{got} vs 2 × {want}");
    let c = &plan["cost"]["clusters"][0];
    assert_eq!(c["instance_type"], "p4d.24xlarge");
    assert_eq!(c["price_basis"], "sourced, as of 2025-11", "{c}");
    assert!(plan["cost"].get("unpriced").is_none(), "{plan:#}");
}

#[test]
fn a_migrated_cluster_applies_on_the_sandbox_creating_before_destroying() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(
        root().join("examples/mixed-training-inference.yaml"),
        d.join("spec.yaml"),
    )
    .unwrap();
    ok(
        d,
        &["apply", "spec.yaml", "--sandbox", "--auto-approve", "-q"],
    );
    ok(
        d,
        &[
            "migrate",
            "serve",
            "--to",
            "tencent/ap-guangzhou",
            "spec.yaml",
            "--write",
        ],
    );
    // The target has no spot price, and the spec has a budget: the plan
    // fails closed rather than counting the moved nodes as $0.
    let out = gpuform(d, &["plan", "spec.yaml", "--sandbox"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the budget cannot be checked") && err.contains("cluster.serve.node[0]"),
        "{err}"
    );
    // Priced (a negotiated price, as a user would pass it), it plans.
    std::fs::write(
        d.join("prices.csv"),
        "cloud,region,instance_type,pricing,price,currency,source,as_of\ntencent,ap-guangzhou,GI3X.8XLARGE64,spot,0.5,USD,test quote,2026-11-01\n",
    )
    .unwrap();
    let plan: Value = serde_json::from_str(&ok(
        d,
        &[
            "plan",
            "spec.yaml",
            "--sandbox",
            "--json",
            "--prices",
            "prices.csv",
        ],
    ))
    .unwrap();
    let serve: Vec<&Value> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["address"].as_str().unwrap().starts_with("cluster.serve."))
        .collect();
    // Everything moves (the subnet is per zone: a new one, and the old one deleted).
    assert!(
        serve.iter().all(|c| c["action"] == "replace"
            || c["action"] == "create"
            || (c["action"] == "delete"
                && c["address"].as_str().unwrap().contains(".subnet[us-east-1"))),
        "{serve:#?}"
    );
    assert!(serve.iter().any(|c| c["reason"]
        .as_str()
        .is_some_and(|r| r.contains("moves from sandbox:aws"))));
    ok(
        d,
        &[
            "apply",
            "spec.yaml",
            "--sandbox",
            "--auto-approve",
            "-q",
            "--prices",
            "prices.csv",
        ],
    );
    assert_eq!(
        gpuform(
            d,
            &[
                "plan",
                "spec.yaml",
                "--sandbox",
                "--detailed-exitcode",
                "--prices",
                "prices.csv"
            ]
        )
        .status
        .code(),
        Some(0)
    );
    let live: Vec<Value> =
        serde_json::from_str(&ok(d, &["sandbox", "ls", "--json", "-f", "spec.yaml"])).unwrap();
    let serve_clouds: std::collections::BTreeSet<&str> = live
        .iter()
        .filter(|r| {
            r["tags"]["gpuform:address"]
                .as_str()
                .is_some_and(|a| a.starts_with("cluster.serve."))
        })
        .map(|r| r["cloud"].as_str().unwrap())
        .collect();
    assert_eq!(
        serve_clouds.into_iter().collect::<Vec<_>>(),
        vec!["tencent"],
        "nothing of serve is left on aws"
    );
}

/// A typo in what the user named on purpose is an error with a "did you
/// mean", never a plan of "no changes": an undeclared `--var` (or var-file
/// entry) and a `--target` that selects nothing.
#[test]
fn a_misspelt_variable_or_target_is_an_error_not_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        "variables:\n  nodes:\n    default: \"1\"\nproject: typo\nclusters:\n  dev:\n    cloud: sandbox\n    region: us-east-1\n    nodes: ${var.nodes}\n    gpu: T4\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("prod.vars"), "nodez = 8\n").unwrap();
    for (args, needles) in [
        (
            &[
                "plan",
                "spec.yaml",
                "--var",
                "nodez=8",
                "--detailed-exitcode",
            ][..],
            &[
                "variable `nodez` is not declared or used",
                "did you mean `nodes`?",
            ][..],
        ),
        (
            &["plan", "spec.yaml", "--var-file", "prod.vars"],
            &[
                "prod.vars: error: variable `nodez`",
                "did you mean `nodes`?",
            ],
        ),
        (
            &[
                "plan",
                "spec.yaml",
                "--target",
                "cluster.deb",
                "--detailed-exitcode",
            ],
            &[
                "--target cluster.deb matches nothing",
                "did you mean `--target cluster.dev`?",
            ],
        ),
        (
            &[
                "apply",
                "spec.yaml",
                "--target",
                "cluster.zzzzzzzzzz",
                "--auto-approve",
            ],
            &["matches nothing", "such as cluster.dev"],
        ),
    ] {
        let out = gpuform(dir.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "gpuform {args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "gpuform {args:?}: want {n:?} in {err}");
        }
    }
    // Nothing was made by the refused apply; the right names still work.
    let plan = ok(
        dir.path(),
        &[
            "plan",
            "spec.yaml",
            "--var",
            "nodes=2",
            "--target",
            "cluster.dev.node[1]",
        ],
    );
    assert!(plan.contains("cluster.dev.node[1]"), "{plan}");
    assert!(!dir.path().join(".gpuform/typo.state.json").exists());
}

/// `gpuform init` writes a starter spec that validates, plans and applies on
/// the sandbox under the directory's name; it never overwrites a file, and a
/// project name the spec cannot take writes nothing.
#[test]
fn init_writes_a_starter_spec_that_applies_and_never_overwrites() {
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("My Team_GPUs");
    std::fs::create_dir(&dir).unwrap();
    let said = ok(&dir, &["init"]);
    assert!(
        said.contains("Wrote gpuform.yaml (project my-team-gpus)"),
        "{said}"
    );
    let text = std::fs::read_to_string(dir.join("gpuform.yaml")).unwrap();
    assert!(text.contains("project: my-team-gpus\n"), "{text}");
    assert!(!text.contains("yaml-language-server"), "{text}");
    ok(&dir, &["validate", "gpuform.yaml"]);
    let applied = ok(&dir, &["apply", "gpuform.yaml", "--auto-approve"]);
    assert!(applied.contains("Apply complete"), "{applied}");

    // A second init refuses and leaves the file as it was.
    std::fs::write(dir.join("gpuform.yaml"), "# mine\n").unwrap();
    let out = gpuform(&dir, &["init"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert_eq!(
        std::fs::read_to_string(dir.join("gpuform.yaml")).unwrap(),
        "# mine\n"
    );

    // An invalid --project: exit 1, nothing written.
    let out = gpuform(&dir, &["init", "other.yaml", "--project", "bad name!"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("invalid project name"), "{err}");
    assert!(!dir.join("other.yaml").exists());
    ok(&dir, &["init", "other.yaml", "--project", "team-b"]);
    assert!(std::fs::read_to_string(dir.join("other.yaml"))
        .unwrap()
        .contains("project: team-b\n"));
}
