//! Diagnostics of the spec loader: many errors in one run, each located.

use crate::support;

use gpuform::spec::{self, Diagnostics, Vars};
use support::{errors, find};

const MANY: &str = "\
project: demo
clusters:
  trainer:
    cloud: azure
    region: us-east-1
    zone: [us-east-1a]
    nodes: four
    gpu: A100-80GB:0
  infer:
    cloud: aws
    region: us-east-1
    zones: [us-east-1a, us-east-1b, us-east-1a]
    nodes: 0
    gpu: T4
    cidr: 10.0.0.0/33
    ingress:
      - ports: 9000-80
        cidr: 0.0.0.0/0
  Bad_Name:
    cloud: aws
    region: us-east-1
    nodes: 1
    gpu: T4
budget:
  max_hourly_usd: 0
";

#[test]
fn reports_every_error_with_location_path_and_hint() {
    let d = errors(MANY);
    assert!(d.len() >= 9, "{d}");
    for x in d.iter() {
        assert_eq!(x.file, "bad.yaml");
        assert!(x.line.is_some() && x.column.is_some(), "{x:?}");
        assert!(x.yaml_path.is_some(), "{x:?}");
        assert!(x.hint.is_some(), "{x:?}");
    }
    let cloud = find(&d, "unknown cloud `azure`");
    assert_eq!((cloud.line, cloud.column), (Some(4), Some(12)));
    assert_eq!(cloud.yaml_path.as_deref(), Some("clusters.trainer.cloud"));
    assert!(cloud
        .hint
        .as_deref()
        .unwrap()
        .contains("`aws`, `alibaba`, `tencent`, `huawei`, `sandbox`"));

    let zone = find(&d, "unknown key `zone`");
    assert_eq!((zone.line, zone.column), (Some(6), Some(5)));
    assert_eq!(zone.hint.as_deref(), Some("did you mean `zones`?"));

    let nodes = find(&d, "found \"four\"");
    assert_eq!(nodes.yaml_path.as_deref(), Some("clusters.trainer.nodes"));
    assert_eq!(nodes.line, Some(7));

    let gpu = find(&d, "GPU count in `A100-80GB:0` must be at least 1");
    assert_eq!((gpu.line, gpu.column), (Some(8), Some(10)));

    let dup = find(&d, "zone `us-east-1a` is listed twice");
    assert_eq!(dup.yaml_path.as_deref(), Some("clusters.infer.zones[2]"));
    assert_eq!((dup.line, dup.column), (Some(12), Some(37)));

    find(&d, "`nodes` must be at least 1, found 0");
    let cidr = find(&d, "larger than 32");
    assert_eq!(cidr.yaml_path.as_deref(), Some("clusters.infer.cidr"));
    let ports = find(&d, "port range `9000-80` is reversed");
    assert_eq!(
        ports.yaml_path.as_deref(),
        Some("clusters.infer.ingress[0].ports")
    );
    assert_eq!(ports.hint.as_deref(), Some("write `80-9000`"));
    let name = find(&d, "invalid cluster name `Bad_Name`");
    assert!(name.hint.as_deref().unwrap().contains("bad-name"));
    let budget = find(&d, "`max_hourly_usd` must be greater than 0");
    assert_eq!(budget.yaml_path.as_deref(), Some("budget.max_hourly_usd"));

    // Sorted by position.
    let lines: Vec<usize> = d.iter().filter_map(|x| x.line).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
}

#[test]
fn display_is_file_line_col_then_path_hint_and_excerpt() {
    let d = errors(MANY);
    let text = d.to_string();
    assert!(text.contains("bad.yaml:4:12: error: unknown cloud `azure`\n  at clusters.trainer.cloud\n  hint: expected one of"), "{text}");
    assert!(
        text.contains("  4 |     cloud: azure\n    |            ^^^^^\n"),
        "{text}"
    );
    let json = d.to_json();
    assert_eq!(json.as_array().map(Vec::len), Some(d.len()));
    assert_eq!(json[0]["file"], "bad.yaml");
}

#[test]
fn malformed_yaml_reports_the_parser_position() {
    let d = errors("project: demo\nclusters:\n  a:\n    zones: [a, b\n    nodes: 2\n");
    assert_eq!(d.len(), 1, "{d}");
    assert!(d.0[0].message.starts_with("invalid YAML"), "{d}");
    assert_eq!(d.0[0].line, Some(5));
    assert!(d.0[0].hint.is_some());
}

#[test]
fn duplicate_keys_are_errors() {
    let d = errors("project: demo\nclusters:\n  a:\n    cloud: aws\n    region: r\n    nodes: 1\n    nodes: 2\n    gpu: T4\n");
    let dup = find(&d, "duplicate key `nodes` (first defined at line 6)");
    assert_eq!((dup.line, dup.column), (Some(7), Some(5)));
}

#[test]
fn missing_and_empty_values() {
    let d = errors("project: \"\"\nclusters:\n  a:\n    cloud: aws\n    region:\n    gpu: T4\n");
    find(&d, "the project name is empty");
    let region = find(&d, "`region` needs a value");
    assert_eq!(region.line, Some(5));
    let nodes = find(&d, "missing the required key `nodes`");
    assert_eq!((nodes.line, nodes.column), (Some(3), Some(3)));
    assert_eq!(nodes.yaml_path.as_deref(), Some("clusters.a"));
}

#[test]
fn wrong_types() {
    let d = errors("project: demo\nclusters:\n  a:\n    cloud: [aws]\n    region: r\n    nodes: \"2\"\n    gpu: {model: T4}\n    zones: us-east-1a\n    disk: 100\n    tags: [a]\n");
    find(&d, "expected a cloud, found a list");
    let n = find(&d, "found the string \"2\"");
    assert_eq!(n.hint.as_deref(), Some("remove the quotes: `nodes: 2`"));
    find(&d, "expected a GPU as MODEL[:COUNT], found a mapping");
    let z = find(&d, "expected `zones` as a list");
    assert_eq!(
        z.hint.as_deref(),
        Some("write a list: `zones: [us-east-1a]`")
    );
    find(&d, "expected `disk` as a mapping");
    find(&d, "expected `tags` as a mapping");
}

#[test]
fn gpu_syntax_errors() {
    for (gpu, needle) in [
        ("\"A100 :8\"", "contains spaces"),
        ("A100:x", "is not a whole number"),
        ("\":8\"", "has no model"),
        ("A100:-2", "is not a whole number"),
        ("A/100", "may contain only"),
    ] {
        let text = format!("project: p\nclusters:\n  a:\n    cloud: aws\n    region: r\n    nodes: 1\n    gpu: {gpu}\n");
        let d = errors(&text);
        let g = find(&d, needle);
        assert_eq!(g.yaml_path.as_deref(), Some("clusters.a.gpu"));
    }
}

#[test]
fn unknown_nested_keys_suggest_or_list() {
    let d = errors("project: p\nclustres: {}\nclusters:\n  a:\n    cloud: aws\n    region: r\n    nodes: 1\n    gpu: T4\n    root_gb: 5\n    disk: {rootgb: 5}\n");
    assert_eq!(
        find(&d, "unknown key `clustres`").hint.as_deref(),
        Some("did you mean `clusters`?")
    );
    assert_eq!(
        find(&d, "unknown key `root_gb`").hint.as_deref(),
        Some("`root_gb` belongs under `disk:`")
    );
    assert_eq!(
        find(&d, "unknown key `rootgb`").hint.as_deref(),
        Some("did you mean `root_gb`?")
    );
}

#[test]
fn other_value_checks() {
    let d = errors("project: \"a/b\"\nclusters:\n  a:\n    cloud: aws\n    region: r\n    nodes: 1\n    gpu: T4\n    pricing: reserved\n    cidr: 10.0.1.0/16\n    ingress:\n      - {protocol: sctp, ports: 70000, cidr: 1.2.3.4/24}\n    tags: {\"gpuform:project\": x}\nbuckets:\n  b1:\n    cloud: aws\nstate: {backend: gcs}\nvariables:\n  bad-name: {}\n");
    find(&d, "invalid project name");
    assert!(find(&d, "unknown pricing model `reserved`")
        .hint
        .as_deref()
        .unwrap()
        .contains("`reserved-1y`"));
    assert_eq!(
        find(&d, "`10.0.1.0/16` has host bits set").hint.as_deref(),
        Some("did you mean `10.0.0.0/16`?")
    );
    find(&d, "unknown protocol `sctp`");
    find(&d, "port 70000 in `70000` is out of range");
    find(&d, "`1.2.3.4/24` has host bits set");
    find(&d, "reserved prefix `gpuform:`");
    find(&d, "a bucket is missing the required key `region`");
    find(&d, "unknown state backend `gcs`");
    find(&d, "invalid variable name `bad-name`");
}

#[test]
fn a_spot_cap_is_positive_and_only_with_spot() {
    let base = "project: p\nclusters:\n  a:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n";
    let d = errors(&format!("{base}    spot_max_price: 0.5\n"));
    let x = find(
        &d,
        "`spot_max_price` only applies with `pricing: spot`, not `on-demand`",
    );
    assert_eq!((x.line, x.column), (Some(8), Some(5)));
    assert_eq!(x.yaml_path.as_deref(), Some("clusters.a.spot_max_price"));
    assert!(x.hint.as_deref().unwrap().contains("pricing: spot"));
    let d = errors(&format!(
        "{base}    pricing: reserved-1y\n    spot_max_price: 0.5\n"
    ));
    find(&d, "only applies with `pricing: spot`, not `reserved-1y`");
    let d = errors(&format!("{base}    pricing: spot\n    spot_max_price: 0\n"));
    let x = find(&d, "`spot_max_price` must be greater than 0");
    assert_eq!(x.yaml_path.as_deref(), Some("clusters.a.spot_max_price"));
    let d = errors(&format!(
        "{base}    pricing: spot\n    spot_max_price: cheap\n"
    ));
    assert_eq!(d.len(), 1, "{d}");
    let ok = spec::load_str(
        "ok.yaml",
        &format!("{base}    pricing: spot\n    spot_max_price: 0.35\n"),
        &Vars::new(),
    )
    .unwrap();
    assert_eq!(ok.spec.clusters["a"].spot_max_price, Some(0.35));
}

#[test]
fn empty_and_non_mapping_documents() {
    find(&errors(""), "the spec is empty");
    find(
        &errors("- a\n- b\n"),
        "expected the spec as a mapping, found a list",
    );
    find(&errors("just text"), "expected the spec as a mapping");
    find(&errors("a: 1\n---\nb: 2\n"), "one YAML document");
}

#[test]
fn diagnostic_for_later_layers() {
    let text = "project: p\nclusters:\n  trainer:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a, us-east-1z]\n    nodes: 1\n    gpu: B300:8\n";
    let loaded = spec::load_str("later.yaml", text, &Vars::new()).expect("valid syntax");
    let d = loaded.diagnostic(
        "clusters.trainer.gpu",
        "unknown GPU model `B300`",
        Some("`gpuform catalog gpus` lists the models".into()),
    );
    assert_eq!((d.line, d.column), (Some(8), Some(10)));
    let z = loaded.diagnostic("clusters.trainer.zones[1]", "zone not offered", None);
    assert_eq!((z.line, z.column), (Some(6), Some(25)));
    let text = Diagnostics::from(d).to_string();
    assert!(
        text.starts_with(
            "later.yaml:8:10: error: unknown GPU model `B300`\n  at clusters.trainer.gpu\n  hint: "
        ),
        "{text}"
    );
    assert!(
        text.contains("  8 |     gpu: B300:8\n    |          ^^^^^^\n"),
        "{text}"
    );
}

/// Validation reports every problem in one run, across clusters and across
/// phases: a typo'd `cloud:` in one cluster does not hide the catalog's
/// region check of another, and a bad port or CIDR does not hide `mig:` on
/// a GPU without MIG (issue 30, point 7). Through the binary, where the
/// loader's and the catalog's checks meet, for `validate` and `plan`.
#[test]
fn one_run_reports_the_catalog_problems_beside_the_structural_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    /// A file, its text, and the (location, message) of each error it must get.
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Case; 2] = [
        (
            "clouds.yaml",
            "project: v\nclusters:\n  a:\n    cloud: huwaei\n    region: cn-north-4\n    nodes: 1\n    gpu: A100-80GB:8\n  b:\n    cloud: tencent\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n",
            &[
                ("clouds.yaml:4:12", "unknown cloud `huwaei`"),
                (
                    "clouds.yaml:10:13",
                    "region `us-east-1` is not a tencent region gpuform knows",
                ),
            ],
        ),
        (
            "mig.yaml",
            "project: v\nclusters:\n  a:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n    mig: [1g.5gb]\n    ingress:\n      - ports: \"70000\"\n        cidr: 10.0.0.1/16\n      - ports: \"22\"\n        cidr: 10.1.0.0/16\n",
            &[
                ("mig.yaml:8:10", "T4 does not support MIG"),
                ("mig.yaml:10:16", "port 70000 in `70000` is out of range"),
                ("mig.yaml:11:15", "`10.0.0.1/16` has host bits set"),
            ],
        ),
    ];
    for (file, text, want) in cases {
        std::fs::write(d.join(file), text).unwrap();
        for args in [vec!["validate", file], vec!["plan", file, "--sandbox"]] {
            let out = support::gpuform_cmd(d, &args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            for (at, message) in want {
                assert!(
                    err.contains(&format!("{at}: error: {message}")),
                    "{args:?}: missing {at} {message}:\n{err}"
                );
            }
            assert!(
                err.contains(&format!("{} errors", want.len())),
                "{args:?}: {err}"
            );
        }
    }
    // The cluster whose cloud is unknown is not checked against a catalog
    // (that check depends on the failed value): no guess at its region.
    let out = support::gpuform_cmd(d, &["validate", "clouds.yaml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("cn-north-4` is not"), "{err}");
}
