//! The committed JSON Schema matches the Rust types, and every example is
//! valid against it and loads.

use gpuform::spec::{self, Vars};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn committed_schema_is_up_to_date() {
    let path = root().join(spec::SCHEMA_PATH);
    let want = spec::schema_text();
    if std::env::var_os("GPUFORM_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &want).expect("write schema");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        panic!(
            "{} is out of date with the Rust types in src/spec/model.rs.\n\
             Regenerate it with:\n\n    GPUFORM_UPDATE_SCHEMA=1 cargo test -p gpuform --test spec_schema\n\n{}",
            spec::SCHEMA_PATH,
            spec::format_diff(spec::SCHEMA_PATH, &have, &want)
        );
    }
}

fn examples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 3,
        "expected the example specs, found {files:?}"
    );
    files
}

#[test]
fn examples_validate_against_the_schema() {
    let schema = spec::schema_json();
    let compiled = jsonschema::JSONSchema::compile(&schema).expect("schema compiles");
    for path in examples() {
        let text = std::fs::read_to_string(&path).expect("read example");
        let value: serde_json::Value = serde_yaml::from_str(&text).expect("example is YAML");
        let errors: Vec<String> = match compiled.validate(&value) {
            Ok(()) => Vec::new(),
            Err(errs) => errs
                .map(|e| format!("{} at {}", e, e.instance_path))
                .collect(),
        };
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    }
}

#[test]
fn examples_load_and_start_with_the_schema_line() {
    for path in examples() {
        let loaded = spec::load(&path, &Vars::new()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!loaded.spec.clusters.is_empty(), "{}", path.display());
        assert!(
            loaded
                .text
                .starts_with("# yaml-language-server: $schema=../schemas/gpuform.schema.json\n"),
            "{} must start with the schema line",
            path.display()
        );
    }
}

#[test]
fn examples_are_formatted() {
    for path in examples() {
        let text = std::fs::read_to_string(&path).expect("read example");
        let formatted = spec::format(&text).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            formatted == text,
            "{} is not in canonical format:\n{}",
            path.display(),
            spec::format_diff(&path.display().to_string(), &text, &formatted)
        );
    }
}

#[test]
fn schema_rejects_what_the_loader_rejects() {
    let schema = spec::schema_json();
    let compiled = jsonschema::JSONSchema::compile(&schema).expect("schema compiles");
    let bad = [
        "project: p\nclusters:\n  a:\n    cloud: azure\n    region: r\n    nodes: 1\n    gpu: T4\n",
        "project: p\nclusters:\n  a:\n    cloud: aws\n    region: r\n    nodes: 0\n    gpu: T4\n",
        "project: p\nclusters:\n  a:\n    cloud: aws\n    region: r\n    nodes: 1\n    gpu: T4:0\n",
        "project: p\nclusters:\n  a:\n    cloud: aws\n    region: r\n    nodes: 1\n    gpu: T4\n    zone: x\n",
        "project: p\nclusters:\n  Bad_Name:\n    cloud: aws\n    region: r\n    nodes: 1\n    gpu: T4\n",
    ];
    for text in bad {
        let value: serde_json::Value = serde_yaml::from_str(text).unwrap();
        assert!(!compiled.is_valid(&value), "schema accepted:\n{text}");
        assert!(
            spec::load_str("bad.yaml", text, &Vars::new()).is_err(),
            "loader accepted:\n{text}"
        );
    }
}
