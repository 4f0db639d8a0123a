//! What CI pipelines read: `plan --markdown` (the pull-request comment) and
//! client-side encryption of state and saved plans.

use crate::support;

use std::path::Path;
use std::process::Output;

const SPEC: &str = r#"project: ci
clusters:
  trainer:
    cloud: sandbox
    region: us-east-1
    nodes: 2
    gpu: A10G:1
  web:
    cloud: sandbox
    region: us-east-1
    nodes: 1
    gpu: T4
budget:
  max_hourly_usd: 50
"#;

fn run(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    support::gpuform_cmd(dir, args)
        .envs(envs.iter().copied())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{:?}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn plan_markdown_reads_as_a_pull_request_comment() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let out = run(dir.path(), &["plan", "spec.yaml", "--markdown"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let md = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = md.lines().collect();
    assert_eq!(lines[0], "### gpuform plan · `ci`");
    // The summary line: counts and monthly cost before → after.
    let summary = lines.iter().find(|l| l.starts_with("**")).unwrap();
    assert!(
        summary.contains("to create, 0 to update, 0 to replace, 0 to delete"),
        "{summary}"
    );
    assert!(summary.contains("monthly cost $0.00 → $"), "{summary}");
    // One table row per cluster with its node count and cost, and a total.
    let row = |name: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("| `{name}`")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{md}"))
    };
    assert!(row("trainer").contains("| 0 → 2 |"), "{}", row("trainer"));
    assert!(row("web").contains("| 0 → 1 |"), "{}", row("web"));
    assert!(row("trainer").contains("$0.00 → $"), "{}", row("trainer"));
    assert!(lines.iter().any(|l| l.starts_with("| **total**")), "{md}");
    assert!(md.contains("**Budget:** within $50.00/h"), "{md}");
    // The full plan, collapsed, without colour codes.
    assert!(md.contains("<details><summary>Full plan</summary>"), "{md}");
    assert!(
        md.contains("cluster.trainer.node[1] will be created"),
        "{md}"
    );
    assert!(!md.contains('\u{1b}'), "{md}");
    assert!(md.trim_end().ends_with("</details>"), "{md}");
    // After the apply: no changes, said so.
    let out = run(dir.path(), &["apply", "spec.yaml", "--auto-approve"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(dir.path(), &["plan", "spec.yaml", "--markdown"], &[]);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("**No changes.**"), "{md}");
}

#[test]
fn plan_format_names_the_same_outputs_as_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let same = |flag: &str, format: &str| {
        let a = run(dir.path(), &["plan", "spec.yaml", flag], &[]);
        let b = run(dir.path(), &["plan", "spec.yaml", "--format", format], &[]);
        assert!(
            a.status.success() && b.status.success(),
            "{}\n{}",
            text(&a),
            text(&b)
        );
        assert_eq!(a.stdout, b.stdout, "{flag} vs --format {format}");
        String::from_utf8(b.stdout).unwrap()
    };
    assert!(same("--markdown", "markdown").starts_with("### gpuform plan"));
    let json: serde_json::Value = serde_json::from_str(&same("--json", "json")).unwrap();
    assert!(json.is_object(), "{json}");
    let textual = run(dir.path(), &["plan", "spec.yaml", "--format", "text"], &[]);
    let plain = run(dir.path(), &["plan", "spec.yaml"], &[]);
    assert_eq!(textual.stdout, plain.stdout);
    // Two formats at once, or an unknown one: a usage error, exit 1 (2 is
    // only "changes present").
    let both = run(
        dir.path(),
        &["plan", "spec.yaml", "--json", "--format", "markdown"],
        &[],
    );
    assert_eq!(both.status.code(), Some(1), "{}", text(&both));
    let bad = run(dir.path(), &["plan", "spec.yaml", "--format", "html"], &[]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("markdown"));
}

#[test]
fn encrypted_state_and_plans_open_only_with_the_key_and_keys_roll_over() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), SPEC).unwrap();
    let key1 = [("GPUFORM_STATE_PASSPHRASE", "correct horse")];
    let out = run(d, &["apply", "spec.yaml", "--auto-approve"], &key1);
    assert!(out.status.success(), "{}", text(&out));
    let state_file = d.join(".gpuform/ci.state.json");
    let raw = std::fs::read_to_string(&state_file).unwrap();
    assert!(raw.starts_with("{\"gpuform_encrypted\":1"), "{raw}");
    assert!(
        !raw.contains("trainer"),
        "state is readable without the key: {raw}"
    );
    // A saved plan is encrypted too.
    let out = run(d, &["plan", "spec.yaml", "--out", "plan.json"], &key1);
    assert!(out.status.success(), "{}", text(&out));
    let plan_raw = std::fs::read_to_string(d.join("plan.json")).unwrap();
    assert!(!plan_raw.contains("trainer"), "{plan_raw}");
    // Missing key: a clear error, exit 1, nothing written.
    let before = std::fs::read(&state_file).unwrap();
    let out = run(d, &["apply", "spec.yaml", "--auto-approve"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("encrypted and no key is set"), "{err}");
    assert!(err.contains("hint: set GPUFORM_STATE_PASSPHRASE"), "{err}");
    // Wrong key: the same.
    let out = run(
        d,
        &["show", "-f", "spec.yaml"],
        &[("GPUFORM_STATE_PASSPHRASE", "wrong")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not decrypt"), "{err}");
    assert!(!err.contains("wrong\n"), "{err}");
    let out = run(
        d,
        &["apply", "plan.json"],
        &[("GPUFORM_STATE_PASSPHRASE", "wrong")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(std::fs::read(&state_file).unwrap(), before);
    // Rollover: a new key, the old one as fallback; the next write uses the new key.
    let roll = [
        ("GPUFORM_STATE_PASSPHRASE", "battery staple"),
        ("GPUFORM_STATE_PASSPHRASE_OLD", "correct horse"),
    ];
    let out = run(d, &["apply", "plan.json"], &roll);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(
        d,
        &["show", "-f", "spec.yaml"],
        &[("GPUFORM_STATE_PASSPHRASE", "battery staple")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = run(d, &["show", "-f", "spec.yaml"], &key1);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the old key still opens it: {}",
        text(&out)
    );
}

#[test]
fn a_spec_state_block_names_postgres_without_a_password_and_bad_urls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let with = |state: &str| SPEC.replace("budget:", &format!("state: {state}\nbudget:"));
    // A password in a committed spec is an error that does not echo it in the message.
    std::fs::write(
        d.join("spec.yaml"),
        with("{ backend: postgres, url: \"postgres://ci:hunter2@db/infra\" }"),
    )
    .unwrap();
    let out = run(d, &["validate", "spec.yaml"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the state URL holds a password"), "{err}");
    assert!(err.contains("PGPASSWORD"), "{err}");
    // Not a postgres URL.
    std::fs::write(
        d.join("spec.yaml"),
        with("{ backend: postgres, url: \"http://db\" }"),
    )
    .unwrap();
    let out = run(d, &["validate", "spec.yaml"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected a postgres:// URL"));
    // A valid block; --state (a local file) and a URL together are refused.
    std::fs::write(
        d.join("spec.yaml"),
        with("{ backend: postgres, url: \"postgres://ci@127.0.0.1:1/infra\", lease_seconds: 30 }"),
    )
    .unwrap();
    let out = run(d, &["validate", "spec.yaml"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(d, &["plan", "spec.yaml", "--state", "x.json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("were both given"),
        "{}",
        text(&out)
    );
    assert!(!d.join(".gpuform").exists());
}

#[test]
fn the_local_journal_of_an_interrupted_apply_is_encrypted_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), SPEC).unwrap();
    let key = ("GPUFORM_STATE_PASSPHRASE", "correct horse");
    let out = run(d, &["apply", "spec.yaml", "--auto-approve"], &[key]);
    assert!(out.status.success(), "{}", text(&out));
    // A scale-up that aborts at the sandbox's 3rd call: the journal is left behind.
    std::fs::write(d.join("spec.yaml"), SPEC.replace("nodes: 2", "nodes: 5")).unwrap();
    let out = run(
        d,
        &["apply", "spec.yaml", "--auto-approve"],
        &[key, ("GPUFORM_SANDBOX_FAULTS", "crash_after=3")],
    );
    assert!(
        out.status.code().is_none(),
        "expected an abort: {}",
        text(&out)
    );
    let journal = d.join(".gpuform/ci.state.json.journal");
    let raw = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = raw.lines().collect();
    assert!(lines.len() >= 2, "{raw}");
    for l in &lines {
        assert!(
            l.starts_with("{\"gpuform_encrypted\":1"),
            "a plain line: {l}"
        );
    }
    assert!(
        !raw.contains("trainer") && !raw.contains("lineage"),
        "{raw}"
    );
    // Without the key the journal cannot be read: a clear error, nothing changed.
    let out = run(d, &["show", "-f", "spec.yaml", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("GPUFORM_STATE_PASSPHRASE"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), raw);
    // With it, the next apply folds the journal in and finishes the job.
    let out = run(d, &["apply", "spec.yaml", "--auto-approve"], &[key]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!journal.exists());
    let out = run(d, &["plan", "spec.yaml", "--detailed-exitcode"], &[key]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}
