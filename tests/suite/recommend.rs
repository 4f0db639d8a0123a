//! `gpuform recommend`: the guide's rules table-driven (each rule one case
//! that triggers it and one that does not), the memory arithmetic against
//! hand-computed cases, every written spec validated and planned on the
//! sandbox, the AMD option and rule-vs-numbers on a catalog made for them,
//! and bad input.

use crate::support;
use gpuform::recommend::{self as rec, Inputs, Task};
use gpuform_catalog::{Catalog, CatalogSources, Day, Source};
use gpuform_provider::Cloud;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const TODAY: &str = "2026-11-29";
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn today() -> Day {
    Day::from_ymd(2026, 11, 29)
}

fn gpuform(dir: &Path) -> Command {
    let mut c = support::gpuform_in_repo();
    c.current_dir(dir)
        .env("GPUFORM_TODAY", TODAY)
        .env("NO_COLOR", "1")
        .env_remove("GPUFORM_PRICES")
        .env_remove("GPUFORM_STATE_URL");
    c
}

/// `gpuform recommend ARGS --json`, which must succeed.
fn recommend_json(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = gpuform(dir.path())
        .arg("recommend")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "recommend {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("recommend --json prints JSON")
}

fn rule<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == id)
        .unwrap_or_else(|| panic!("no rule {id} in {r}"))
}

/// The observable effect of a rule on the recommendation, checked when it
/// applies (and, where meaningful, its absence when it does not).
fn check_effect(id: &str, applies: bool, r: &Value) {
    let top = &r["top"];
    match id {
        "large-model" | "small-model" => {
            // The pick is in the rule's class unless the numbers won a disagreement.
            let won_by_numbers = r["disagreements"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["rule"] == id && d["winner"] == "numbers");
            if applies && !won_by_numbers {
                assert_eq!(top["in_rule_class"], true, "{id}: {top}");
            }
        }
        "training-nvlink" => {
            if applies && top["gpus_per_node"].as_u64().unwrap() > 1 {
                assert_eq!(top["interconnect"], "nvlink", "{top}");
            }
        }
        "multi-node-rdma" => {
            if applies {
                for o in r["options"].as_array().unwrap() {
                    if o["nodes"].as_u64().unwrap() > 1 {
                        assert!(!o["rdma"].is_null(), "multi-node option without RDMA: {o}");
                    }
                }
            } else {
                assert_eq!(top["nodes"], 1, "{top}");
            }
        }
        "inference-pcie" => {
            if applies {
                assert_eq!(top["checkpoint"], Value::Null);
            }
        }
        "short-spot" => {
            if applies {
                assert_eq!(top["pricing"], "spot", "{top}");
                let c = &top["checkpoint"];
                assert!(c["interval_minutes"].as_u64().unwrap() >= 10, "{c}");
                assert!(c["notice_seconds"].as_u64().unwrap() > 0, "{c}");
            } else {
                assert_ne!(top["pricing"], "spot", "{top}");
            }
        }
        "long-reserved" => {
            if !applies {
                assert!(
                    !top["pricing"].as_str().unwrap().starts_with("reserved"),
                    "{top}"
                );
            }
        }
        "no-ops-managed" => {
            let names: Vec<&str> = r["managed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["name"].as_str().unwrap())
                .collect();
            if applies {
                assert!(names.iter().any(|n| n.contains("SageMaker")), "{names:?}");
                assert!(names.iter().any(|n| n.contains("PAI")), "{names:?}");
                assert!(names.iter().any(|n| n.contains("ModelArts")), "{names:?}");
                assert!(names.iter().any(|n| n.contains("TI")), "{names:?}");
                assert!(rule(r, id)["effect"]
                    .as_str()
                    .unwrap()
                    .contains("does not schedule"));
            } else {
                assert!(names.is_empty(), "{names:?}");
            }
        }
        "users-southeast-asia" => {
            if applies {
                let area = top["area"].as_str().unwrap();
                assert!(area == "hong-kong" || area == "singapore", "{top}");
            }
        }
        "users-china" => {
            if applies {
                assert_eq!(top["area"], "china-mainland", "{top}");
            }
        }
        other => panic!("no effect check for rule {other}"),
    }
}

/// (rule, arguments that trigger it, arguments that do not).
const RULES: &[(&str, &[&str], &[&str])] = &[
    (
        "large-model",
        &["--params", "175B", "--task", "training"],
        &["--params", "70B", "--task", "training"],
    ),
    (
        "small-model",
        &["--params", "350M", "--task", "inference"],
        &["--params", "7B", "--task", "inference"],
    ),
    (
        "training-nvlink",
        &["--params", "70B", "--task", "fine-tuning"],
        &["--params", "70B", "--task", "inference"],
    ),
    (
        "multi-node-rdma",
        // 70e9 × 20 B = 1304 GiB: more than any one node of the catalog.
        &["--params", "70B", "--task", "training"],
        // 300e6 × 20 B = 5.6 GiB: one GPU of any type holds it.
        &["--params", "300M", "--task", "training"],
    ),
    (
        "inference-pcie",
        &["--params", "13B", "--task", "inference"],
        &["--params", "13B", "--task", "fine-tuning"],
    ),
    (
        "short-spot",
        &[
            "--params",
            "7B",
            "--task",
            "fine-tuning",
            "--duration",
            "2w",
            "--clouds",
            "aws",
        ],
        &[
            "--params",
            "7B",
            "--task",
            "fine-tuning",
            "--duration",
            "3mo",
            "--clouds",
            "aws",
        ],
    ),
    (
        "long-reserved",
        &[
            "--params",
            "7B",
            "--task",
            "inference",
            "--duration",
            "3y",
            "--clouds",
            "aws",
        ],
        &[
            "--params",
            "7B",
            "--task",
            "inference",
            "--duration",
            "2w",
            "--clouds",
            "aws",
        ],
    ),
    (
        "no-ops-managed",
        &["--params", "7B", "--task", "inference", "--ops", "none"],
        &["--params", "7B", "--task", "inference", "--ops", "devops"],
    ),
    (
        "users-southeast-asia",
        &[
            "--params",
            "7B",
            "--task",
            "inference",
            "--users",
            "southeast-asia",
        ],
        &["--params", "7B", "--task", "inference", "--users", "europe"],
    ),
    (
        "users-china",
        &["--params", "7B", "--task", "inference", "--users", "china"],
        &[
            "--params",
            "7B",
            "--task",
            "inference",
            "--users",
            "us-east",
        ],
    ),
];

#[test]
fn each_rule_triggers_on_one_case_and_not_on_the_other() {
    for (id, on, off) in RULES {
        let r = recommend_json(on);
        let x = rule(&r, id);
        assert_eq!(x["applies"], true, "{id} should apply to {on:?}: {x}");
        assert!(!x["reason"].as_str().unwrap().is_empty());
        assert!(!x["effect"].as_str().unwrap().is_empty(), "{id}: {x}");
        check_effect(id, true, &r);

        let r = recommend_json(off);
        let x = rule(&r, id);
        assert_eq!(x["applies"], false, "{id} should not apply to {off:?}: {x}");
        assert!(!x["reason"].as_str().unwrap().is_empty());
        check_effect(id, false, &r);
    }
    // Every rule of the guide has its row.
    let r = recommend_json(RULES[0].1);
    let ids: Vec<&str> = r["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    let tested: Vec<&str> = RULES.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, tested);
}

#[test]
fn multi_node_training_without_rdma_is_left_out() {
    // Neither Tencent's nor Alibaba's priced NVLink types in the catalog have
    // RDMA, and 1304 GiB (70e9 × 20 B) needs several nodes: nothing fits.
    for cloud in ["tencent", "alibaba"] {
        let dir = tempfile::tempdir().unwrap();
        let out = gpuform(dir.path())
            .args([
                "recommend",
                "--params",
                "70B",
                "--task",
                "training",
                "--clouds",
                cloud,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{cloud}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no configuration of the allowed clouds fits")
                && err.contains("would span nodes without RDMA"),
            "{cloud}: {err}"
        );
    }
    // One node holds 7B fine-tuning (7e9 × 17.6 B = 115 GiB) on 8 × A100: no RDMA needed.
    let r = recommend_json(&[
        "--params",
        "7B",
        "--task",
        "fine-tuning",
        "--clouds",
        "tencent",
    ]);
    assert_eq!(r["top"]["nodes"], 1, "{}", r["top"]);
}

#[test]
fn a_model_nothing_holds_is_an_error_that_says_why() {
    // 100e12 × 2 B = 182,000 GiB of weights alone: more than 64 nodes of anything.
    let dir = tempfile::tempdir().unwrap();
    let out = gpuform(dir.path())
        .args([
            "recommend",
            "--params",
            "100T",
            "--task",
            "inference",
            "--write",
            "s.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no configuration of the allowed clouds fits")
            && err.contains("would need more than 64 nodes")
            && err.contains("hint:"),
        "{err}"
    );
    assert!(!dir.path().join("s.yaml").exists());
}

#[test]
fn long_project_below_break_even_keeps_on_demand_and_says_the_numbers_win() {
    // 100 h of 730 a month (14%) is below any reservation's break-even.
    let r = recommend_json(&[
        "--params",
        "7B",
        "--task",
        "inference",
        "--duration",
        "3y",
        "--hours-per-month",
        "100",
        "--clouds",
        "aws",
    ]);
    assert_eq!(rule(&r, "long-reserved")["applies"], true);
    assert_eq!(r["top"]["pricing"], "on-demand", "{}", r["top"]);
    let d = r["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == "long-reserved")
        .expect("the reserved rule and the numbers disagree");
    assert_eq!(d["winner"], "numbers");
    // At 730 h a month the rule wins where a reservation is priced.
    let r = recommend_json(&[
        "--params",
        "7B",
        "--task",
        "inference",
        "--duration",
        "3y",
        "--clouds",
        "aws",
    ]);
    let p = r["top"]["pricing"].as_str().unwrap();
    assert!(p.starts_with("reserved"), "{}", r["top"]);
}

fn need(params: f64, task: Task, precision: &str, context: u32, batch: u32) -> rec::MemoryNeed {
    rec::fit::memory_need(
        params,
        task,
        rec::parse_precision(precision).unwrap(),
        context,
        batch,
    )
}

#[test]
fn memory_fit_matches_hand_computed_cases() {
    // 70B fine-tuning, bf16: 2 + 2 + 4 + 8 = 16 B/param, +10% activations:
    // 70e9 × 16 × 1.10 = 1.232e12 B = 1.232e12 / 1073741824 = 1147.38 GiB.
    let n = need(70e9, Task::FineTuning, "bf16", 4096, 8);
    assert_eq!(n.bytes_per_param, 16.0);
    assert!((n.total_gib - 1147.38).abs() < 0.01, "{}", n.total_gib);
    // 8 × 80 GiB = 640 GiB a node → 1147.38 / 640 = 1.79 → 2 nodes;
    // 8 × 40 GiB = 320 GiB → 3.59 → 4 nodes.
    assert_eq!(rec::fit::nodes_needed(n.total_gib, 8, 80.0), 2);
    assert_eq!(rec::fit::nodes_needed(n.total_gib, 8, 40.0), 4);

    // 7B training, fp32: 4 + 4 + 8 = 16 B/param, +25% activations:
    // 7e9 × 16 × 1.25 = 1.4e11 B = 130.39 GiB.
    let n = need(7e9, Task::Training, "fp32", 4096, 8);
    assert!((n.total_gib - 130.39).abs() < 0.01, "{}", n.total_gib);

    // 70B inference, bf16, 4096 tokens × 8 sequences:
    // weights 70e9 × 2 = 1.4e11 B = 130.385 GiB;
    // shape: ∛(70e9 × 128 / 12) = 9071.6 → 71 × 128 = 9088, 71 layers;
    // KV = 2 × 71 × 9088 × 4096 × 8 × 2 B = 84,573,945,856 B = 78.766 GiB;
    // total = (130.385 + 78.766) × 1.10 = 230.07 GiB.
    let n = need(70e9, Task::Inference, "bf16", 4096, 8);
    assert_eq!((n.layers, n.d_model), (Some(71), Some(9088)));
    assert!(
        (n.kv_cache_gib - 78.766).abs() < 0.001,
        "{}",
        n.kv_cache_gib
    );
    assert!((n.total_gib - 230.07).abs() < 0.01, "{}", n.total_gib);
    // 8 × 80 GiB holds it on one node; 4 × 24 GiB (96) does not: 3 nodes.
    assert_eq!(rec::fit::nodes_needed(n.total_gib, 8, 80.0), 1);
    assert_eq!(rec::fit::nodes_needed(n.total_gib, 4, 24.0), 3);

    // 7B inference, int4, 2048 tokens × 1 sequence:
    // weights 7e9 × 0.5 = 3.5e9 B = 3.2596 GiB;
    // shape: ∛(7e9 × 128 / 12) = 4210.6 → 33 × 128 = 4224, 33 layers;
    // KV = 2 × 33 × 4224 × 2048 × 1 × 2 B = 1,141,899,264 B = 1.0635 GiB;
    // total = (3.2596 + 1.0635) × 1.10 = 4.7554 GiB.
    let n = need(7e9, Task::Inference, "int4", 2048, 1);
    assert!((n.states_gib - 3.5e9 / GIB).abs() < 1e-9);
    assert!((n.kv_cache_gib - 1_141_899_264.0 / GIB).abs() < 1e-9);
    assert!((n.total_gib - 4.7554).abs() < 0.001, "{}", n.total_gib);
}

#[test]
fn the_binary_prints_the_formula_and_fits_it_to_instance_types() {
    let r = recommend_json(&[
        "--params",
        "70B",
        "--task",
        "fine-tuning",
        "--clouds",
        "aws",
    ]);
    assert!((r["memory"]["total_gib"].as_f64().unwrap() - 1147.38).abs() < 0.01);
    // Every option holds the need on its nodes.
    for o in r["options"].as_array().unwrap() {
        let per_node = o["gpus_per_node"].as_f64().unwrap() * o["gpu_mem_gib"].as_f64().unwrap();
        let nodes = o["nodes"].as_f64().unwrap();
        assert!(nodes * per_node >= 1147.38, "{o}");
        assert!(
            (nodes - 1.0) * per_node < 1147.38,
            "not the fewest nodes: {o}"
        );
        assert_eq!(o["interconnect"], "nvlink", "{o}");
        // $/month at 730 h = $/h × 730; $/FP16-PFLOP-h from the node rate.
        let h = o["hourly_usd"].as_f64().unwrap();
        assert!((o["monthly_usd"].as_f64().unwrap() - h * 730.0).abs() < 1e-6);
        assert!(
            (h - o["node_hourly_usd"].as_f64().unwrap() * nodes).abs() < 1e-9,
            "{o}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = gpuform(dir.path())
        .args(["recommend", "--params", "70B", "--task", "fine-tuning"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "1. Memory fit",
        "16 = 2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32 master weights) + 8 (Adam m and v, fp32)",
        "70B params × 16 B × (1 + 0.10 activations) = 1147.4 GiB",
        "2. The guide's rules",
        "3. Price-performance",
        "$/FP16-PFLOP-h",
        "AMD: no allowed cloud offers MI250X/MI300X",
        "4. Recommended",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
}

/// Writes the recommendation for `args` as a spec, then validates and
/// plans it on the sandbox; the plan uses the recommended instance type.
fn write_validate_plan(args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let r = recommend_json(args);
    let out = gpuform(dir.path())
        .arg("recommend")
        .args(args)
        .args(["--write", "spec.yaml", "--project", "rec-test"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = std::fs::read_to_string(dir.path().join("spec.yaml")).unwrap();
    assert!(spec.contains("# Why this configuration:"), "{spec}");
    assert!(spec.contains("# - memory:"), "{spec}");
    let top = &r["top"];
    assert!(spec.contains(&format!("nodes: {}", top["nodes"])), "{spec}");
    // Written in gpuform's canonical layout.
    let out = gpuform(dir.path())
        .args(["fmt", "--check", "spec.yaml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fmt --check {args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = gpuform(dir.path())
        .args(["validate", "spec.yaml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "validate {args:?}: {}\n{spec}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = gpuform(dir.path())
        .args(["plan", "spec.yaml", "--sandbox"])
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "plan {args:?}: {}\n{plan}\n{spec}",
        String::from_utf8_lossy(&out.stderr)
    );
    let it = top["instance_type"].as_str().unwrap();
    assert!(
        plan.contains(it),
        "{args:?}: the plan does not use {it}:\n{plan}\n{spec}"
    );
}

#[test]
fn every_written_spec_validates_and_plans_on_the_sandbox() {
    for args in [
        &[
            "--params",
            "70B",
            "--task",
            "fine-tuning",
            "--duration",
            "2w",
        ][..],
        &[
            "--params",
            "175B",
            "--task",
            "training",
            "--duration",
            "3y",
            "--clouds",
            "aws",
        ],
        &[
            "--params",
            "7B",
            "--task",
            "inference",
            "--users",
            "southeast-asia",
            "--ops",
            "none",
        ],
        &[
            "--params",
            "7B",
            "--task",
            "inference",
            "--users",
            "china",
            "--budget",
            "3000",
        ],
        &[
            "--params",
            "350M",
            "--task",
            "inference",
            "--clouds",
            "tencent",
        ],
        &[
            "--params", "13B", "--task", "training", "--tokens", "300B", "--clouds", "alibaba",
        ],
    ] {
        write_validate_plan(args);
    }
}

#[test]
fn write_refuses_to_replace_a_file_without_force() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), "mine\n").unwrap();
    let args = [
        "recommend",
        "--params",
        "7B",
        "--task",
        "inference",
        "--write",
        "spec.yaml",
    ];
    let out = gpuform(dir.path()).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.yaml already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("spec.yaml")).unwrap(),
        "mine\n"
    );
    let out = gpuform(dir.path())
        .args(args)
        .arg("--force")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(dir.path().join("spec.yaml"))
        .unwrap()
        .starts_with("# Written by `gpuform recommend`"));
}

#[test]
fn bad_input_says_what_where_and_how_to_fix() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--params", "70Q", "--task", "training"],
            &["--params", "`70Q`", "hint:", "70B"],
        ),
        (
            &["--params", "70B", "--task", "pretraining-ish"],
            &["--task", "`pretraining-ish`", "hint:", "fine-tuning"],
        ),
        (
            &[
                "--params", "70B", "--task", "training", "--clouds", "aws,gcp",
            ],
            &["--clouds", "`gcp`", "hint:", "alibaba"],
        ),
        (
            &["--params", "70B", "--task", "training", "--duration", "6m"],
            &["--duration", "ambiguous", "hint:", "6mo"],
        ),
        (
            &[
                "--params",
                "70B",
                "--task",
                "training",
                "--precision",
                "int4",
            ],
            &["--precision int4", "hint:", "bf16"],
        ),
        (
            &["--params", "70B", "--task", "inference", "--users", "mars"],
            &["--users", "`mars`", "hint:", "southeast-asia"],
        ),
        (
            &["--params", "70B", "--task", "inference", "--budget", "-5"],
            &["--budget", "hint:"],
        ),
        (
            &[
                "--params",
                "70B",
                "--task",
                "inference",
                "--hours-per-month",
                "800",
            ],
            &["--hours-per-month", "hint:"],
        ),
        (
            &["--task", "inference"],
            &["--params is missing", "hint:", "--params 70B"],
        ),
        (&["--params", "7B"], &["--task is missing", "hint:"]),
        (
            &[
                "--params",
                "7B",
                "--task",
                "inference",
                "--write",
                "x.yaml",
                "--project",
                "bad name",
            ],
            &["--project", "`bad name`", "hint:"],
        ),
    ];
    for (args, wants) in cases {
        let dir = tempfile::tempdir().unwrap();
        // stdin is not a terminal here: recommend never prompts.
        let out = gpuform(dir.path())
            .arg("recommend")
            .args(*args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for w in *wants {
            assert!(err.contains(w), "{args:?}: missing `{w}` in {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!dir.path().join("x.yaml").exists());
    }
}

/// The builtin catalog plus extra AWS rows (instance types, availability, prices).
fn catalog_with(types: &str, availability: &str, prices: &str) -> Catalog {
    let base = CatalogSources::builtin();
    let aws = base.clouds.iter().find(|c| c.cloud == Cloud::Aws).unwrap();
    let it = format!("{}{types}", aws.instance_types.text);
    let av = format!("{}{availability}", aws.availability.text);
    let pr = format!("{}{prices}", aws.prices.text);
    let mut sources: CatalogSources<'_> = base.clone();
    for c in &mut sources.clouds {
        if c.cloud == Cloud::Aws {
            c.instance_types = Source {
                file: "it.csv",
                text: &it,
            };
            c.availability = Source {
                file: "av.csv",
                text: &av,
            };
            c.prices = Source {
                file: "pr.csv",
                text: &pr,
            };
        }
    }
    Catalog::from_sources(&sources).expect("the test catalog loads")
}

#[test]
fn an_amd_option_is_shown_with_its_caveat_and_never_picked() {
    let c = catalog_with(
        "test.mi300x,MI300X,8,192,192,2048,,efa,400,test row\n",
        "us-east-1,test.mi300x,,test row\n",
        "us-east-1,test.mi300x,on-demand,1.00,USD,test row,2026-11\n",
    );
    let mut i = Inputs::new(70e9, Task::FineTuning);
    i.clouds = vec![Cloud::Aws];
    let r = rec::recommend(&c, &i, today()).unwrap();
    assert!(r.amd.offered);
    let amd = r.amd.options.first().expect("an AMD option");
    assert_eq!(amd.gpu_model, "MI300X");
    // 1147.38 GiB / (8 × 192 GiB = 1536) → one node.
    assert_eq!(amd.nodes, 1);
    assert!(r.amd.caveat.contains("ROCm"));
    // Far cheaper, still not the pick: the ecosystem caveat.
    let top = r.top.unwrap();
    assert_eq!(top.vendor, "NVIDIA");
    assert!(r.options.iter().all(|o| o.vendor == "NVIDIA"));
    let text = rec::render::render(&rec::recommend(&c, &i, today()).unwrap());
    assert!(
        text.contains("test.mi300x") && text.contains("AMD caveat"),
        "{text}"
    );

    // The builtin catalog has no AMD instance type.
    let r = rec::recommend(Catalog::builtin(), &i, today()).unwrap();
    assert!(!r.amd.offered && r.amd.options.is_empty());
}

#[test]
fn rule_and_numbers_disagree_and_the_winner_is_explained() {
    // 350M inference on AWS: the small-model rule names T4/V100/L4/A10.
    let mut i = Inputs::new(350e6, Task::Inference);
    i.clouds = vec![Cloud::Aws];
    let base = rec::recommend(Catalog::builtin(), &i, today()).unwrap();
    let rule_best = base.top.clone().unwrap();
    assert!(rule_best.in_rule_class);
    assert!(base.disagreements.is_empty());

    // An L40S (outside the class) at a tenth of the rule's best price: the
    // numbers win (≥ 10% cheaper, one node like the rule's pick).
    let cheap = rule_best.hourly_usd / 10.0;
    let c = catalog_with(
        "test.l40s,L40S,1,48,8,64,pcie,,25,test row\n",
        "us-east-1,test.l40s,,test row\n",
        &format!("us-east-1,test.l40s,on-demand,{cheap},USD,test row,2026-11\n"),
    );
    let r = rec::recommend(&c, &i, today()).unwrap();
    let d = r.disagreements.first().expect("a disagreement");
    assert_eq!(d.rule, "small-model");
    assert_eq!(d.winner, "numbers", "{d:?}");
    assert_eq!(r.top.as_ref().unwrap().instance_type, "test.l40s");
    assert!(d.rule_says.contains(&rule_best.instance_type), "{d:?}");

    // At 95% of the rule's best price the margin is too small: the rule wins.
    let close = rule_best.hourly_usd * 0.95;
    let c = catalog_with(
        "test.l40s,L40S,1,48,8,64,pcie,,25,test row\n",
        "us-east-1,test.l40s,,test row\n",
        &format!("us-east-1,test.l40s,on-demand,{close},USD,test row,2026-11\n"),
    );
    let r = rec::recommend(&c, &i, today()).unwrap();
    let d = r.disagreements.first().expect("a disagreement");
    assert_eq!(d.winner, "rule", "{d:?}");
    assert_eq!(r.options[0].instance_type, "test.l40s");
    assert_eq!(
        r.top.as_ref().unwrap().instance_type,
        rule_best.instance_type
    );
    let text = rec::render::render(&r);
    assert!(
        text.contains("Rule and numbers disagree (small-model)"),
        "{text}"
    );
    assert!(text.contains("rule wins"), "{text}");
}

#[test]
fn spot_checkpoint_interval_follows_each_clouds_reclaim_notice() {
    let i = Inputs::new(7e9, Task::FineTuning);
    let need = rec::fit::memory_need(7e9, Task::FineTuning, i.precision, 4096, 8);
    // 7e9 × 14 B = 98 GB over 1 node at 1 GB/s = 98 s.
    let aws = rec::checkpoint_plan(Cloud::Aws, &need, i.precision, 1);
    let ali = rec::checkpoint_plan(Cloud::Alibaba, &need, i.precision, 1);
    assert_eq!((aws.notice_seconds, ali.notice_seconds), (120, 300));
    assert!((aws.save_seconds - 98.0).abs() < 1e-9);
    // AWS: max(10 × 120 s, 20 × 98 s) = 1960 s → 33 min; a 98 s save does
    // not fit half of 120 s. Alibaba: max(3000 s, 1960 s) → 50 min; it fits half of 300 s.
    assert_eq!(aws.interval_minutes, 33);
    assert!(!aws.save_fits_notice);
    assert_eq!(ali.interval_minutes, 50);
    assert!(ali.save_fits_notice);
    assert_eq!(
        rec::reclaim_notice(Cloud::Tencent).0,
        rec::reclaim_notice(Cloud::Aws).0
    );
}

#[test]
fn inputs_parse_with_units() {
    assert_eq!(rec::parse_params("70B").unwrap(), 70e9);
    assert_eq!(rec::parse_params("1.5b").unwrap(), 1.5e9);
    assert_eq!(rec::parse_params("350M").unwrap(), 350e6);
    assert_eq!(rec::parse_params("7000000000").unwrap(), 7e9);
    assert!(rec::parse_params("70Q").is_err());
    assert!(rec::parse_params("0B").is_err());
    assert!(rec::parse_params("-7B").is_err());
    assert_eq!(rec::parse_duration("2w").unwrap(), 336.0);
    assert_eq!(rec::parse_duration("6mo").unwrap(), 6.0 * 730.0);
    assert_eq!(rec::parse_duration("1y").unwrap(), 8760.0);
    assert_eq!(rec::parse_duration("36h").unwrap(), 36.0);
    assert!(rec::parse_duration("6m").is_err());
    assert_eq!(rec::parse_tokens("2T").unwrap(), 2e12);
    assert_eq!(
        rec::parse_clouds("aws, tencent").unwrap(),
        vec![Cloud::Aws, Cloud::Tencent]
    );
}

/// On a terminal (util-linux `script` gives the binary one), missing
/// --params and --task are asked for; an empty answer is an error.
#[test]
fn a_terminal_is_asked_for_what_is_missing() {
    if !support::tool_present("script", "util-linux: the terminal case of recommend") {
        return;
    }
    let bin = support::gpuform_bin();
    let run = |answers: &str| {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("script");
        c.current_dir(dir.path())
            .env("GPUFORM_TODAY", TODAY)
            .env("NO_COLOR", "1")
            .args([
                "-qec",
                &format!("{} recommend --clouds aws", bin.display()),
                "/dev/null",
            ]);
        let out = support::output_with_input(&mut c, answers, std::time::Duration::from_secs(60));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (code, text) = run("7B\ninference\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Model size in parameters"), "{text}");
    assert!(
        text.contains("Task (training, fine-tuning, inference)"),
        "{text}"
    );
    assert!(
        text.contains("Recommendation for 7B parameters, inference"),
        "{text}"
    );
    let (code, text) = run("\n");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("--params is required"), "{text}");
}

/// A single-node pick is not held to the multi-node RDMA rule, even when
/// smaller types would have needed several nodes: the rule does not apply,
/// and its reason says what it still did.
#[test]
fn a_single_node_pick_is_not_under_the_multi_node_rule() {
    // 7e9 × 17.6 B = 115 GiB: one 8-GPU node holds it, one 24 GiB GPU does not.
    let r = recommend_json(&["--params", "7B", "--task", "fine-tuning"]);
    assert_eq!(r["top"]["nodes"], 1, "{}", r["top"]);
    let rule = rule(&r, "multi-node-rdma");
    assert_eq!(rule["applies"], false, "{rule}");
    let reason = rule["reason"].as_str().unwrap();
    assert!(reason.contains("on one node"), "{reason}");
    assert!(reason.contains("held to the rule"), "{reason}");
}

/// bf16 (the default) on a GPU without native bf16 is said, with the fix.
#[test]
fn bf16_on_a_gpu_without_it_is_flagged() {
    let r = recommend_json(&["--params", "300M", "--task", "inference"]);
    let mut flagged = 0;
    for o in r["options"].as_array().unwrap() {
        let model = o["gpu_model"].as_str().unwrap();
        let note = o["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("no native bf16"));
        let old = model.starts_with("T4") || model.starts_with("V100") || model == "P100";
        assert_eq!(note, old, "{model}: {o}");
        flagged += usize::from(note);
    }
    assert!(flagged > 0, "no T4/V100 among the options: {r}");
    // fp16 asked for: nothing to flag.
    let r = recommend_json(&[
        "--params",
        "300M",
        "--task",
        "inference",
        "--precision",
        "fp16",
    ]);
    for o in r["options"].as_array().unwrap() {
        assert!(!o["notes"].to_string().contains("no native bf16"), "{o}");
    }
}
