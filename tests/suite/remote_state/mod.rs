//! Helpers shared by the remote state backend tests (state_postgres.rs,
//! state_s3.rs): CI runners as working directories of their own running the
//! gpuform binary against one remote state and one shared sandbox cloud.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A project name of this run only: the shared servers keep states between runs.
pub fn unique(name: &str) -> String {
    // Random, not the clock: tests never read the wall clock.
    format!(
        "{name}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

pub fn spec(project: &str, nodes: u32) -> String {
    format!(
        r#"project: {project}
clusters:
  trainer:
    cloud: sandbox
    region: us-east-1
    nodes: {nodes}
    gpu: A10G:1
    disk:
      root_gb: 100
      data_gb: 100
"#
    )
}

/// One CI runner: its own working directory, the shared sandbox, and the
/// environment that points it at the remote state.
pub struct Runner {
    pub dir: tempfile::TempDir,
    pub sandbox: PathBuf,
    pub lease: Option<u32>,
    env: Vec<(String, String)>,
}

impl Runner {
    pub fn new(project: &str, nodes: u32, sandbox: &Path, env: &[(&str, &str)]) -> Runner {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spec.yaml"), spec(project, nodes)).unwrap();
        Runner {
            dir,
            sandbox: sandbox.to_path_buf(),
            lease: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    pub fn cmd(&self, args: &[&str], faults: &str) -> Command {
        let mut c = crate::support::gpuform_cmd(self.dir.path(), args);
        c.env("GPUFORM_SANDBOX_DIR", &self.sandbox)
            .env("GPUFORM_SANDBOX_FAULTS", faults)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(l) = self.lease {
            c.env("GPUFORM_STATE_LEASE_SECONDS", l.to_string());
        }
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args, "").output().unwrap()
    }

    pub fn spawn_apply(&self, faults: &str) -> Child {
        self.cmd(&["apply", "spec.yaml", "--auto-approve"], faults)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub fn state(&self) -> Value {
        let out = self.run(&["show", "-f", "spec.yaml", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `f` is true, failing at once if `child` ends first.
pub fn wait_while_running(
    child: &mut Child,
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> bool,
) {
    wait_until(what, timeout, || {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("the apply ended early ({status:?}) waiting for {what}: {err}");
        }
        f()
    });
}

/// Live sandbox resources by address; panics on a duplicate address.
pub fn sandbox_addresses(r: &Runner) -> BTreeSet<String> {
    let out = r.run(&["sandbox", "ls", "--json", "-f", "spec.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut seen = BTreeSet::new();
    for res in all.as_array().unwrap() {
        let address = res["tags"]["gpuform:address"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(seen.insert(address.clone()), "duplicate {address}: {all:#}");
    }
    seen
}

pub fn state_addresses(state: &Value) -> BTreeSet<String> {
    state["resources"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}
