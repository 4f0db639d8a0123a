//! Variables through the public API: CLI pairs, var files, environment, defaults.

use gpuform::spec::{self, Vars};

const SPEC: &str = "\
variables:
  nodes:
    default: \"2\"
  region: {}
project: vars-demo
clusters:
  a:
    cloud: sandbox
    region: ${var.region}
    nodes: ${var.nodes}
    gpu: T4
    user_data: |
      echo \"$${HOME} ${HOME}\"
";

#[test]
fn defaults_cli_and_escapes() {
    let vars = Vars::parse_with_env(&["region=us-east-1".into()], &[], Vec::new()).unwrap();
    let l = spec::load_str("v.yaml", SPEC, &vars).unwrap();
    let c = &l.spec.clusters["a"];
    assert_eq!(c.nodes, 2);
    assert_eq!(c.region, "us-east-1");
    assert_eq!(c.user_data.as_deref(), Some("echo \"${HOME} ${HOME}\"\n"));
}

#[test]
fn precedence_cli_over_file_over_env_over_default() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prod.vars");
    std::fs::write(&file, "nodes=6\nregion=eu-west-1\n").unwrap();
    let env = vec![
        ("GPUFORM_VAR_nodes".to_string(), "9".to_string()),
        ("GPUFORM_VAR_region".to_string(), "ap-south-1".to_string()),
    ];
    let vars = Vars::parse_with_env(&["nodes=8".into()], &[file], env).unwrap();
    let l = spec::load_str("v.yaml", SPEC, &vars).unwrap();
    assert_eq!(l.spec.clusters["a"].nodes, 8);
    assert_eq!(l.spec.clusters["a"].region, "eu-west-1");
}

#[test]
fn undefined_variable_is_located_and_explained() {
    let err = spec::load_str("v.yaml", SPEC, &Vars::new()).unwrap_err();
    assert_eq!(err.len(), 1, "{err}");
    let d = &err.0[0];
    assert_eq!(
        d.message,
        "variable `region` is declared without a default and was not given a value"
    );
    assert_eq!((d.line, d.column), (Some(9), Some(13)));
    assert_eq!(d.yaml_path.as_deref(), Some("clusters.a.region"));
    let hint = d.hint.as_deref().unwrap();
    for needle in [
        "--var region=...",
        "--var-file",
        "GPUFORM_VAR_region",
        "variables.region.default",
    ] {
        assert!(hint.contains(needle), "{hint}");
    }
}

#[test]
fn substituted_values_are_still_validated() {
    let vars =
        Vars::parse_with_env(&["region=r".into(), "nodes=four".into()], &[], Vec::new()).unwrap();
    let err = spec::load_str("v.yaml", SPEC, &vars).unwrap_err();
    let d = &err.0[0];
    assert!(d.message.contains("found \"four\""), "{err}");
    assert_eq!(d.yaml_path.as_deref(), Some("clusters.a.nodes"));
}

#[test]
fn parse_cli_reads_the_process_environment() {
    // Only checks that it runs; the environment of a test process is not ours to set.
    assert!(Vars::parse_cli(&["x=1".into()], &[]).unwrap().get("x") == Some("1"));
    assert!(Vars::parse_cli(&["=1".into()], &[]).is_err());
}
