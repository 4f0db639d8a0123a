//! What a person sees: rendered plans (snapshots), help texts, exit codes,
//! and Ctrl-C during apply.
//!
//! Snapshots live in tests/snapshots/; regenerate after an intended change
//! with `GPUFORM_UPDATE_SNAPSHOTS=1 cargo test -p gpuform --test cli_output`.

use crate::support;

use std::path::Path;
use std::process::Output;

fn gpuform(dir: &Path, args: &[&str]) -> Output {
    gpuform_on(support::TODAY, dir, args)
}

fn gpuform_on(today: &str, dir: &Path, args: &[&str]) -> Output {
    support::gpuform_cmd(dir, args)
        .env("GPUFORM_TODAY", today)
        .output()
        .expect("run gpuform")
}

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("GPUFORM_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no snapshot {}; run with GPUFORM_UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let diff = similar::TextDiff::from_lines(expected.as_str(), actual)
            .unified_diff()
            .header("expected", "actual")
            .to_string();
        panic!("rendered output differs from {}:\n{diff}", path.display());
    }
}

/// Ids are random; keep the shape.
fn mask_ids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_inclusive(|c: char| c.is_whitespace() || c == '(' || c == ')') {
        let w = word.trim_end_matches(|c: char| c.is_whitespace() || c == '(' || c == ')');
        let tail = &word[w.len()..];
        let masked = ["i-", "vpc-", "subnet-", "sg-", "vol-", "pg-"]
            .iter()
            .find(|p| {
                w.starts_with(*p)
                    && w.len() > p.len() + 8
                    && w[p.len()..].chars().all(|c| c.is_ascii_hexdigit())
            })
            .map(|p| format!("{p}<id>"));
        out.push_str(masked.as_deref().unwrap_or(w));
        out.push_str(tail);
    }
    out
}

const SPEC: &str = r#"project: render
variables:
  type:
    default: "A10G:1"
clusters:
  web:
    cloud: aws
    region: us-east-1
    nodes: 2
    gpu: ${var.type}
    user_data: |
      #!/bin/sh
      echo hello
      nvidia-smi
    tags:
      team: ml
"#;

#[test]
fn plans_render_like_terraform_with_costs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let create = gpuform(dir.path(), &["plan", "spec.yaml", "--sandbox"]);
    assert!(create.status.success());
    snapshot("plan_create.txt", &String::from_utf8_lossy(&create.stdout));

    let apply = gpuform(
        dir.path(),
        &["apply", "spec.yaml", "--sandbox", "--auto-approve", "-q"],
    );
    assert!(
        apply.status.success(),
        "{}",
        String::from_utf8_lossy(&apply.stderr)
    );

    // Change user-data (a multi-line diff, forcing replacement), tags (in place) and the GPU.
    let changed = SPEC
        .replace("echo hello", "echo hello, world")
        .replace("team: ml", "team: research");
    std::fs::write(dir.path().join("spec.yaml"), &changed).unwrap();
    let replace = gpuform(
        dir.path(),
        &["plan", "spec.yaml", "--sandbox", "--var", "type=L4:1"],
    );
    assert!(replace.status.success());
    snapshot(
        "plan_replace.txt",
        &mask_ids(&String::from_utf8_lossy(&replace.stdout)),
    );

    let update = gpuform(
        dir.path(),
        &[
            "plan",
            "spec.yaml",
            "--sandbox",
            "--target",
            "cluster.web.firewall",
        ],
    );
    assert!(update.status.success());
    let nothing = String::from_utf8_lossy(&update.stdout);
    assert!(nothing.starts_with("No changes."), "{nothing}");
}

/// The pinned date moves only what depends on it: the price-age warning.
/// 33 days later the age grows by 33 and nothing else changes; on a day when
/// the price is young the warning goes and every other line stays.
#[test]
fn the_pinned_date_changes_only_the_price_age() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let plan_on = |today: &str| {
        let out = gpuform_on(today, dir.path(), &["plan", "spec.yaml", "--sandbox"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let base = plan_on("2026-11-29");
    let later = plan_on("2027-01-01");
    let fresh = plan_on("2025-12-15");

    let changed: Vec<(&str, &str)> = base
        .lines()
        .zip(later.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(base.lines().count(), later.lines().count());
    assert_eq!(
        changed.len(),
        1,
        "only the price-age line may change: {changed:?}"
    );
    let (a, b) = changed[0];
    assert!(a.contains("393 days ago"), "{a}");
    assert_eq!(b, a.replace("393 days ago", "426 days ago"));

    // 2025-11 is 44 days before 2025-12-15: not stale, so no warning at all.
    assert!(!fresh.contains("days ago"), "{fresh}");
    let without_warning: Vec<&str> = base
        .lines()
        .filter(|l| !l.starts_with("Warning: prices older"))
        .collect();
    assert_eq!(fresh.lines().collect::<Vec<_>>(), without_warning);
}

#[test]
fn a_malformed_pinned_date_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let out = gpuform_on(
        "2026-02-30",
        dir.path(),
        &["plan", "spec.yaml", "--sandbox"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GPUFORM_TODAY") && err.contains("YYYY-MM-DD"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn help_teaches_commands_flags_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let help = gpuform(dir.path(), &["--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    for needle in [
        "plan",
        "apply",
        "destroy",
        "validate",
        "fmt",
        "force-unlock",
        "Exit codes",
        "--sandbox",
    ] {
        assert!(
            text.contains(needle),
            "`gpuform --help` lacks {needle}:\n{text}"
        );
    }
    let plan = gpuform(dir.path(), &["plan", "--help"]);
    let text = String::from_utf8_lossy(&plan.stdout);
    for needle in [
        "--detailed-exitcode",
        "--out",
        "--json",
        "--target",
        "--refresh",
        "--destroy",
        "--var",
    ] {
        assert!(
            text.contains(needle),
            "`gpuform plan --help` lacks {needle}"
        );
    }
    let bad = gpuform(dir.path(), &["plan"]);
    assert_ne!(bad.status.code(), Some(0));
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_starting_work_saves_state_and_the_next_apply_finishes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        SPEC.replace("nodes: 2", "nodes: 12"),
    )
    .unwrap();
    let args = [
        "apply",
        "spec.yaml",
        "--sandbox",
        "--auto-approve",
        "--parallelism",
        "2",
    ];
    let child = support::gpuform_cmd(dir.path(), &args)
        .env("GPUFORM_SANDBOX_FAULTS", "latency=150ms")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it get some work done, then interrupt once.
    let journal = dir.path().join(".gpuform/render.state.json.journal");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !journal.exists() {
        assert!(std::time::Instant::now() < deadline, "apply never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        !journal.exists(),
        "the journal is folded into state on the way out"
    );
    assert!(!dir.path().join(".gpuform/render.state.json.lock").exists());
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(".gpuform/render.state.json")).unwrap(),
    )
    .unwrap();
    let done = state["resources"].as_object().unwrap().len();
    assert!(
        done > 0 && done < 15,
        "some but not all resources were made before the interrupt ({done})"
    );

    let again = gpuform(
        dir.path(),
        &["apply", "spec.yaml", "--sandbox", "--auto-approve", "-q"],
    );
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let plan = gpuform(
        dir.path(),
        &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert_eq!(plan.status.code(), Some(0));
}

/// Every subcommand path gpuform has (`plan`, `state rm`, `prices refresh`…),
/// read from the CLI's own definition so a new one is covered by default.
fn every_subcommand() -> Vec<Vec<String>> {
    fn walk(c: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for s in c.get_subcommands().filter(|s| s.get_name() != "help") {
            path.push(s.get_name().to_string());
            out.push(path.clone());
            walk(s, path, out);
            path.pop();
        }
    }
    use clap::CommandFactory;
    let mut out = Vec::new();
    walk(&gpuform::cli::Cli::command(), &mut Vec::new(), &mut out);
    out
}

/// A usage error exits 1, never 2: under `--detailed-exitcode` 2 means
/// "changes present", and a CI job reading it would apply nothing and pass.
#[test]
fn a_usage_error_exits_1_on_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let commands = every_subcommand();
    assert!(commands.len() > 25, "{commands:?}");
    for cmd in &commands {
        let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        args.extend(["--detailed-exitcode", "--bogus"]);
        let out = gpuform(dir.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "gpuform {args:?}: {err}");
        assert!(
            err.contains("error: unexpected argument"),
            "{args:?}: {err}"
        );
        // Help is not an error.
        let mut help: Vec<&str> = cmd.iter().map(String::as_str).collect();
        help.push("--help");
        let out = gpuform(dir.path(), &help);
        assert_eq!(out.status.code(), Some(0), "gpuform {help:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: gpuform"));
    }
    // A bad value, a missing argument, an unknown subcommand: 1 too.
    for args in [
        &[
            "plan",
            "spec.yaml",
            "--detailed-exitcode",
            "--parallelism",
            "many",
        ][..],
        &["plan", "--detailed-exitcode"],
        &["plna", "spec.yaml"],
        &[],
    ] {
        let out = gpuform(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "gpuform {args:?}");
    }
}

/// Runs gpuform with a stdout whose reader is already gone: every write
/// fails with EPIPE, deterministically (no race with a reader like `head`).
fn to_a_closed_pipe(dir: &Path, args: &[&str]) -> Output {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors, each then owned once.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    support::gpuform_cmd(dir, args)
        .env("GPUFORM_TODAY", support::TODAY)
        .stdout(std::process::Stdio::from(write))
        .output()
        .expect("run gpuform")
}

/// `gpuform … | head -1` never panics: a closed stdout ends the printing
/// quietly and the command keeps its own exit status.
#[test]
fn printing_into_a_closed_pipe_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart.yaml"),
        dir.path().join("spec.yaml"),
    )
    .unwrap();
    let spec = "spec.yaml";
    let cases: &[(&[&str], i32)] = &[
        (&["completions", "bash"], 0),
        (&["offers", "T4", "--json"], 0),
        (&["offers", "T4"], 0),
        (&["graph", spec, "--sandbox"], 0),
        (&["plan", spec, "--sandbox", "--detailed-exitcode"], 2),
        (&["breakeven", "T4:1", "--hours", "300"], 0),
        (&["lockin", spec], 0),
        (&["validate", spec, "--sandbox"], 0),
        (&["--help"], 0),
        (&["version"], 0),
    ];
    let check = |args: &[&str], code: i32| {
        let out = to_a_closed_pipe(dir.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "gpuform {args:?}: {err}");
        assert_eq!(out.status.code(), Some(code), "gpuform {args:?}: {err}");
    };
    for (args, code) in cases {
        check(args, *code);
    }
    // An apply into a closed pipe still finishes (nothing half-made), then
    // what reads the state and the sandbox prints into one too.
    check(&["apply", spec, "--auto-approve"], 0);
    let out = gpuform(dir.path(), &["plan", spec, "--detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "the apply did not finish");
    for args in [
        &["sandbox", "ls", "-f", spec][..],
        &["state", "list", "-f", spec],
        &["show", "-f", spec],
        &["output", "-f", spec],
    ] {
        check(args, 0);
    }
}

/// `--help` teaches every flag: each option of each subcommand says what it
/// does (read from the CLI's own definition, so a new flag is covered).
#[test]
fn every_flag_of_every_subcommand_has_help() {
    use clap::CommandFactory;
    let root = gpuform::cli::Cli::command();
    let mut missing = Vec::new();
    for path in every_subcommand() {
        let mut c = &root;
        for name in &path {
            c = c.find_subcommand(name).expect("a listed subcommand");
        }
        for a in c.get_arguments() {
            let id = a.get_id().as_str();
            if a.is_positional() || matches!(id, "help" | "version") {
                continue;
            }
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!(
                    "gpuform {} --{}",
                    path.join(" "),
                    a.get_long().unwrap_or(id)
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags without help:\n{}",
        missing.join("\n")
    );
}
