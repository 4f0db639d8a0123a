//! A cluster names the buckets it reads (`clusters.X.reads`): each key is
//! checked against `buckets:`, the nodes wait for the bucket (an
//! ordering-only dependency: never a reason to replace a node), and a read
//! across regions or clouds is flagged in the plan — text, `--json` and
//! `--markdown` — with the per-GB transfer price where the catalog has one.

use crate::support;

use gpuform::spec::{self, Vars};
use support::{at, errors, find, stdout_of};

use serde_json::Value;

#[test]
fn reads_name_buckets_of_the_spec_with_a_located_did_you_mean() {
    let d = errors(
        "\
project: lab
buckets:
  datasets:
    cloud: aws
    region: us-east-1
clusters:
  t:
    cloud: aws
    region: us-east-1
    nodes: 1
    gpu: T4
    reads: [datasets, datasts, datasets]
  u:
    cloud: aws
    region: us-east-1
    nodes: 1
    gpu: T4
    reads: [checkpoints]
  v:
    cloud: aws
    region: us-east-1
    nodes: 1
    gpu: T4
    reads: datasets
",
    );
    let typo = find(&d, "reads bucket `datasts`, which is not in `buckets:`");
    assert_eq!(at(typo), (12, 23, "clusters.t.reads[1]"));
    assert_eq!(typo.hint.as_deref(), Some("did you mean `datasets`?"));
    let twice = find(&d, "bucket `datasets` is listed twice (first at line 12)");
    assert_eq!(at(twice), (12, 32, "clusters.t.reads[2]"));
    let unknown = find(&d, "cluster `u` reads bucket `checkpoints`");
    assert_eq!(at(unknown), (18, 13, "clusters.u.reads[0]"));
    assert_eq!(
        unknown.hint.as_deref(),
        Some("the buckets are `datasets`; or declare `checkpoints` under `buckets:`")
    );
    let scalar = find(&d, "expected `reads` as a list of buckets");
    assert_eq!(at(scalar).2, "clusters.v.reads");
    assert_eq!(
        scalar.hint.as_deref(),
        Some("write a list: `reads: [datasets]`")
    );
    assert_eq!(d.len(), 4, "{d}");

    // No buckets at all: the hint says where to declare one.
    let d = errors(
        "project: lab\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n    reads: [data]\n",
    );
    assert!(find(&d, "reads bucket `data`")
        .hint
        .as_deref()
        .unwrap()
        .starts_with("the spec has no `buckets:`"));

    // Valid: read back in the model.
    let ok = spec::load_str(
        "ok.yaml",
        "project: lab\nbuckets:\n  data: {cloud: aws, region: us-east-1}\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n    reads: [data]\n",
        &Vars::new(),
    )
    .unwrap();
    assert_eq!(ok.spec.clusters["t"].reads, vec!["data".to_string()]);
}

const SPEC: &str = r#"project: reads
buckets:
  data:
    cloud: aws
    region: us-east-1
  cn:
    cloud: alibaba
    region: cn-hangzhou
  obs:
    cloud: huawei
    region: cn-east-3
clusters:
  near:
    cloud: aws
    region: us-east-1
    nodes: 2
    gpu: T4
    reads: [data]
  far:
    cloud: aws
    region: eu-west-1
    nodes: 1
    gpu: T4
    reads: [data]
  abroad:
    cloud: alibaba
    region: cn-hangzhou
    nodes: 1
    gpu: T4
    reads: [data, cn]
  unpriced:
    cloud: aws
    region: us-east-1
    nodes: 1
    gpu: T4
    reads: [obs]
"#;

const PLAN: [&str; 5] = ["plan", "spec.yaml", "--sandbox", "--cny-per-usd", "7.2"];

#[test]
fn a_read_across_regions_or_clouds_is_flagged_with_its_transfer_price() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let plan: Value =
        serde_json::from_str(&stdout_of(dir.path(), &[&PLAN[..], &["--json"]].concat())).unwrap();
    let transfers = plan["transfers"].as_array().unwrap();
    let find = |cluster: &str, bucket: &str| {
        transfers
            .iter()
            .find(|t| t["cluster"] == cluster && t["bucket"] == format!("bucket.{bucket}"))
            .unwrap_or_else(|| panic!("no transfer {cluster} ← {bucket}: {transfers:?}"))
    };
    // Same region (near ← data, abroad ← cn): nothing to flag.
    assert_eq!(transfers.len(), 3, "{transfers:?}");
    // Same cloud, another region: S3 inter-region out of us-east-1, sourced.
    let far = find("far", "data");
    assert_eq!(far["cluster_location"], "aws/eu-west-1");
    assert_eq!(far["bucket_location"], "aws/us-east-1");
    assert_eq!(far["kind"], "inter-region");
    assert_eq!(far["usd_per_gb"], 0.02);
    assert_eq!(far["price_basis"], "sourced, as of 2026");
    // Another cloud: S3 egress to the internet, region-less so assumed.
    let abroad = find("abroad", "data");
    assert_eq!(abroad["kind"], "internet");
    assert_eq!(abroad["usd_per_gb"], 0.09);
    assert!(abroad["price_basis"]
        .as_str()
        .unwrap()
        .starts_with("assumed"));
    // No source for Huawei OBS egress: said, not guessed.
    let unpriced = find("unpriced", "obs");
    assert_eq!(unpriced.get("usd_per_gb"), None);
    assert_eq!(
        unpriced["price_basis"],
        "price unknown: the catalog has no internet price out of huawei cn-east-3"
    );
    let warnings: Vec<&str> = plan["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let far_line = "cross-region data transfer: cluster far (aws/eu-west-1) reads bucket data (aws/us-east-1): $0.0200/GB [inter-region price sourced, as of 2026]";
    assert!(warnings.contains(&far_line), "{warnings:?}");
    assert!(
        warnings.contains(&"cross-region data transfer: cluster unpriced (aws/us-east-1) reads bucket obs (huawei/cn-east-3): price unknown: the catalog has no internet price out of huawei cn-east-3"),
        "{warnings:?}"
    );
    assert!(
        !warnings.iter().any(|w| w.contains("cluster near")),
        "{warnings:?}"
    );

    let text = stdout_of(dir.path(), &PLAN);
    assert!(text.contains(&format!("Warning: {far_line}")), "{text}");
    assert!(
        text.contains("cluster abroad (alibaba/cn-hangzhou) reads bucket data (aws/us-east-1): $0.0900/GB [internet price assumed"),
        "{text}"
    );
    let md = stdout_of(dir.path(), &[&PLAN[..], &["--markdown"]].concat());
    assert!(
        md.contains("> ⚠️ cross-region data transfer: cluster far (aws/eu-west-1) reads bucket data (aws/us-east-1): $0.0200/GB"),
        "{md}"
    );
}

#[test]
fn nodes_wait_for_the_bucket_they_read_but_are_not_replaced_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "\
project: order
buckets:
  data:
    cloud: aws
    region: us-east-1
clusters:
  t:
    cloud: aws
    region: us-east-1
    nodes: 2
    gpu: T4
";
    let reading = spec.replace("    gpu: T4\n", "    gpu: T4\n    reads: [data]\n");
    std::fs::write(dir.path().join("spec.yaml"), &reading).unwrap();
    let json = stdout_of(dir.path(), &[&PLAN[..], &["--json"]].concat());
    let plan: gpuform::plan::Plan = serde_json::from_str(&json).unwrap();
    let node = plan
        .changes
        .iter()
        .find(|c| c.address == "cluster.t.node[1]")
        .unwrap();
    assert_eq!(
        node.deps.get("reads:data").map(|a| a.as_str()),
        Some("bucket.data")
    );
    // In the apply graph, the bucket's create comes before every node's.
    let g = gpuform::apply::graph::build_graph(&plan).unwrap();
    let create_of = |address: &str| {
        g.node_indices()
            .find(|&n| plan.changes[g[n].change].address == address)
            .unwrap()
    };
    for n in ["cluster.t.node[0]", "cluster.t.node[1]"] {
        assert!(
            petgraph::algo::has_path_connecting(&g, create_of("bucket.data"), create_of(n), None),
            "{n} does not wait for bucket.data"
        );
    }

    // A cluster applied without `reads` that starts reading: its running
    // nodes are left alone (the dependency only orders operations).
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    stdout_of(
        dir.path(),
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    std::fs::write(dir.path().join("spec.yaml"), &reading).unwrap();
    let plan: Value =
        serde_json::from_str(&stdout_of(dir.path(), &[&PLAN[..], &["--json"]].concat())).unwrap();
    assert_eq!(plan["summary"]["replace"], 0, "{}", plan["changes"]);
    assert_eq!(plan["summary"]["create"], 0, "{}", plan["changes"]);
}
