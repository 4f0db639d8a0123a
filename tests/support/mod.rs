//! Helpers shared by the crash tests (double_crash.rs, failover.rs): running
//! the gpuform binary in a temporary directory against the sandbox or a
//! stand-in cloud, and the exactness check every crash test ends with.
//!
//! Each test binary that says `mod support;` uses only part of this.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

/// One resource alive in a cloud, as the cloud itself reports it.
#[derive(Debug, Clone)]
pub struct Live {
    pub id: String,
    /// The `gpuform:address` tag; `None` for an untagged resource.
    pub address: Option<String>,
    pub cloud: String,
    pub region: String,
    /// The zone attribute, empty when the resource has none.
    pub zone: String,
}

/// The resources a state file records: address → id.
pub fn recorded(dir: &Path, project: &str) -> BTreeMap<String, String> {
    let path = dir.join(format!(".gpuform/{project}.state.json"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let st: serde_json::Value = serde_json::from_slice(&bytes).expect("state json");
    st["resources"]
        .as_object()
        .expect("state.resources")
        .iter()
        .map(|(a, r)| (a.clone(), r["id"].as_str().expect("id").to_string()))
        .collect()
}

/// The invariant after a recovery: the cloud holds exactly one resource per
/// desired address and nothing else, and state records exactly those
/// addresses, each with the id the cloud knows it by.
pub fn assert_exact(
    live: &[Live],
    recorded: &BTreeMap<String, String>,
    expected: &BTreeSet<String>,
    context: &str,
) {
    let mut by_addr: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in live {
        let addr = r
            .address
            .as_deref()
            .unwrap_or_else(|| panic!("{context}: untagged resource {} in the cloud", r.id));
        by_addr.entry(addr).or_default().push(r.id.as_str());
    }
    for (addr, ids) in &by_addr {
        assert!(
            ids.len() == 1,
            "{context}: duplicate resources for {addr}: {ids:?}"
        );
        assert!(
            expected.contains(*addr),
            "{context}: orphan {addr} {ids:?} in the cloud"
        );
    }
    let in_cloud: BTreeSet<String> = by_addr.keys().map(|s| s.to_string()).collect();
    assert_eq!(
        &in_cloud, expected,
        "{context}: the cloud does not hold exactly the desired resources"
    );
    let in_state: BTreeSet<String> = recorded.keys().cloned().collect();
    assert_eq!(
        &in_state, expected,
        "{context}: state does not record exactly the desired resources"
    );
    for (addr, id) in recorded {
        assert_eq!(
            by_addr.get(addr.as_str()).map(|ids| ids[0]),
            Some(id.as_str()),
            "{context}: state records {addr} = {id}, which the cloud does not know by that id"
        );
    }
}

/// The run was ended by `signal` (not an error exit, not a panic).
pub fn assert_killed_by(out: &Output, signal: i32, context: &str) {
    assert_eq!(
        out.status.signal(),
        Some(signal),
        "{context}: expected death by signal {signal}, got {:?}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn assert_success(out: &Output, context: &str) {
    assert!(
        out.status.success(),
        "{context}: gpuform failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A working directory with one spec file, run against the sandbox cloud.
pub struct SandboxWork {
    dir: tempfile::TempDir,
    pub project: String,
}

impl SandboxWork {
    pub fn new(project: &str, spec: &str) -> SandboxWork {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("spec.yaml"), spec).expect("write spec");
        SandboxWork {
            dir,
            project: project.to_string(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write_spec(&self, spec: &str) {
        std::fs::write(self.path().join("spec.yaml"), spec).expect("write spec");
    }

    /// gpuform with `args`, with the given sandbox faults (none when `None`).
    pub fn run(&self, args: &[&str], faults: Option<&str>) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gpuform"));
        // Pinned: no output of a test depends on the day it runs.
        c.env("GPUFORM_TODAY", "2026-11-29");
        c.args(args).current_dir(self.path()).env("NO_COLOR", "1");
        match faults {
            Some(f) => c.env("GPUFORM_SANDBOX_FAULTS", f),
            None => c.env_remove("GPUFORM_SANDBOX_FAULTS"),
        };
        c.output().expect("run gpuform")
    }

    /// gpuform with `args` and no faults; it must succeed. Stdout then stderr.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, None);
        assert_success(&out, &format!("gpuform {args:?}"));
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// `plan --detailed-exitcode`: 0 no changes, 2 changes, 1 error.
    pub fn plan_exit(&self, extra: &[&str]) -> i32 {
        let mut args = vec!["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"];
        args.extend_from_slice(extra);
        let out = self.run(&args, None);
        out.status.code().unwrap_or_else(|| {
            panic!("plan was killed: {:?}", out.status);
        })
    }

    /// Everything alive in the sandbox, as `gpuform sandbox ls` reports it.
    pub fn live(&self) -> Vec<Live> {
        sandbox_live(self.path(), &self.project)
    }

    pub fn recorded(&self) -> BTreeMap<String, String> {
        recorded(self.path(), &self.project)
    }

    pub fn assert_exact(&self, expected: &BTreeSet<String>, context: &str) {
        assert_exact(&self.live(), &self.recorded(), expected, context);
    }
}

/// Everything alive in the sandbox of a working directory, as `gpuform
/// sandbox ls` reports it.
pub fn sandbox_live(dir: &Path, project: &str) -> Vec<Live> {
    let st = format!(".gpuform/{project}.state.json");
    let out = Command::new(env!("CARGO_BIN_EXE_gpuform"))
        .env("GPUFORM_TODAY", "2026-11-29")
        .args(["sandbox", "ls", "--json", "--state", &st])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("GPUFORM_SANDBOX_FAULTS")
        .output()
        .expect("run gpuform");
    assert_success(&out, "sandbox ls");
    let all: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("sandbox ls json");
    all.iter()
        .map(|r| Live {
            id: r["id"].as_str().expect("id").to_string(),
            address: r["tags"]["gpuform:address"].as_str().map(str::to_string),
            cloud: r["cloud"].as_str().unwrap_or("").to_string(),
            region: r["region"].as_str().unwrap_or("").to_string(),
            zone: r["attrs"]["zone"].as_str().unwrap_or("").to_string(),
        })
        .collect()
}

/// [`assert_exact`] for the sandbox of a working directory.
pub fn assert_sandbox_exact(dir: &Path, project: &str, expected: &BTreeSet<String>, context: &str) {
    assert_exact(
        &sandbox_live(dir, project),
        &recorded(dir, project),
        expected,
        context,
    );
}
