//! Helpers shared by the binary's tests (the crash tests double_crash.rs and
//! failover.rs, the audit and bucket tests): running the gpuform binary in a
//! temporary directory against the sandbox or a stand-in cloud, and the
//! exactness check every crash test ends with; and the spec loader's
//! diagnostics, found by message and located.
//!
//! Each test binary that says `mod support;` uses only part of this.
#![allow(dead_code)]

use gpuform::spec::{self, Diagnostic, Diagnostics, Vars};
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
    /// `instance`, `volume`, `firewall`...
    pub kind: String,
    /// A volume: the instance the cloud says it is attached to.
    pub attached_to: Option<String>,
    /// A firewall: [`MEMBERS`] when members reach each other, [`EGRESS`]
    /// when all traffic may leave, then one entry per CIDR rule (see [`rule`]).
    pub ingress: Vec<String>,
}

/// A firewall lets its members reach each other (the stand-ins' word too).
pub const MEMBERS: &str = gpuform_standins::MEMBERS;

/// A firewall lets all traffic out (the stand-ins' word too).
pub const EGRESS: &str = gpuform_standins::EGRESS;

/// A CIDR rule as [`Live::ingress`] lists it: `tcp 8000-8100 10.1.0.0/16`.
pub fn rule(protocol: &str, from: u64, to: u64, cidr: &str) -> String {
    format!("{} {from}-{to} {cidr}", protocol.to_ascii_lowercase())
}

/// The kind of resource an address stands for.
pub fn kind_of_address(addr: &str) -> &'static str {
    if addr.starts_with("bucket.") {
        return "bucket";
    }
    let last = addr.rsplit('.').next().unwrap_or(addr);
    let base = last.split('[').next().unwrap_or(last);
    match base {
        "node" => "instance",
        "volume" => "volume",
        "firewall" => "firewall",
        "network" => "network",
        "subnet" => "subnet",
        "placement" => "placement",
        "bucket" => "bucket",
        other => panic!("address {addr}: unknown resource `{other}`"),
    }
}

/// What state records: address → (kind, id).
pub fn recorded_kinds(dir: &Path, project: &str) -> BTreeMap<String, (String, String)> {
    let path = dir.join(format!(".gpuform/{project}.state.json"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let st: serde_json::Value = serde_json::from_slice(&bytes).expect("state json");
    st["resources"]
        .as_object()
        .expect("state.resources")
        .iter()
        .map(|(a, r)| {
            (
                a.clone(),
                (
                    r["kind"].as_str().expect("kind").to_string(),
                    r["id"].as_str().expect("id").to_string(),
                ),
            )
        })
        .collect()
}

/// Beyond counts, what a recovery must leave (issue 15): every recorded
/// resource is of the kind its address stands for, in state and in the
/// cloud (no boot disk recorded as a node or a volume); every data volume
/// `volume[i]` is attached to the node `node[i]` as recorded; every
/// firewall lets its members in and has each of `rules` ([`rule`]).
pub fn assert_complete(
    live: &[Live],
    recorded: &BTreeMap<String, (String, String)>,
    rules: &[String],
    context: &str,
) {
    let by_id: BTreeMap<&str, &Live> = live.iter().map(|l| (l.id.as_str(), l)).collect();
    for (addr, (kind, id)) in recorded {
        let want = kind_of_address(addr);
        assert_eq!(
            kind, want,
            "{context}: state records {addr} ({id}) as a {kind}"
        );
        let l = by_id
            .get(id.as_str())
            .unwrap_or_else(|| panic!("{context}: {addr} = {id} is not in the cloud"));
        assert_eq!(
            l.kind, want,
            "{context}: {addr} = {id} is a {} in the cloud",
            l.kind
        );
        match want {
            "volume" => {
                let node = addr.replace(".volume[", ".node[");
                let node_id = recorded.get(&node).map(|(_, i)| i.as_str());
                assert!(node_id.is_some(), "{context}: {addr} without {node}");
                assert_eq!(
                    l.attached_to.as_deref(),
                    node_id,
                    "{context}: data volume {addr} ({id}) is not attached to {node}"
                );
            }
            "firewall" => {
                assert!(
                    l.ingress.iter().any(|r| r == MEMBERS),
                    "{context}: firewall {addr} ({id}) does not let its members in: {:?}",
                    l.ingress
                );
                assert!(
                    l.ingress.iter().any(|r| r == EGRESS),
                    "{context}: firewall {addr} ({id}) does not let traffic out: {:?}",
                    l.ingress
                );
                for r in rules {
                    assert!(
                        l.ingress.contains(r),
                        "{context}: firewall {addr} ({id}) lacks the spec's rule `{r}`: {:?}",
                        l.ingress
                    );
                }
            }
            _ => {}
        }
    }
}

/// Everything alive in a stand-in cloud (tests/standins), as [`Live`].
pub fn mock_live(mock: &dyn gpuform_standins::MockCloud, cloud: &str) -> Vec<Live> {
    mock.resources()
        .into_iter()
        .map(|r| Live {
            id: r.id,
            address: r.address,
            cloud: cloud.into(),
            region: r.region,
            zone: String::new(),
            kind: r.kind.to_string(),
            attached_to: r.attached_to,
            ingress: r.ingress,
        })
        .collect()
}

/// [`assert_complete`] for the sandbox of a working directory.
pub fn assert_sandbox_complete(dir: &Path, project: &str, rules: &[String], context: &str) {
    assert_complete(
        &sandbox_live(dir, project),
        &recorded_kinds(dir, project),
        rules,
        context,
    );
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

/// The day every test's gpuform believes it is: no output of a test
/// depends on the day it runs.
pub const TODAY: &str = "2026-11-29";

/// Variables that change what gpuform does, which a test must never inherit
/// from the shell that started it: a test that wants one sets it.
const INHERITED: [&str; 5] = [
    "GPUFORM_SANDBOX_FAULTS",
    "GPUFORM_PRICES",
    "GPUFORM_STATE_URL",
    "GPUFORM_STATE_PASSPHRASE",
    "GPUFORM_STATE_PASSPHRASE_OLD",
];

/// The gpuform binary, to run in `dir` with `args` as every test runs it:
/// on [`TODAY`], without colour, with none of the [`INHERITED`] variables.
/// What a test adds to the command after this wins.
pub fn gpuform_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpuform"));
    c.args(args)
        .current_dir(dir)
        .env("GPUFORM_TODAY", TODAY)
        .env("NO_COLOR", "1");
    for v in INHERITED {
        c.env_remove(v);
    }
    c
}

/// [`gpuform_cmd`] pointed at stand-in clouds: their endpoints and the
/// credentials they check signatures with.
pub fn gpuform_at(
    dir: &Path,
    mocks: &[&dyn gpuform_standins::MockCloud],
    args: &[&str],
) -> Command {
    let mut c = gpuform_cmd(dir, args);
    for m in mocks {
        c.envs(m.env());
    }
    c
}

/// The apply a crash test kills at its N-th cloud call: one call at a
/// time, so that the N-th call is the same call on every run; quiet.
pub const SERIAL_APPLY: [&str; 6] = [
    "apply",
    "spec.yaml",
    "--auto-approve",
    "--parallelism",
    "1",
    "-q",
];

/// The standard output of a run of gpuform with `args` that must have
/// succeeded; both outputs in the failure otherwise.
pub fn succeeded(out: &Output, args: &[&str]) -> String {
    assert_success(out, &format!("gpuform {args:?}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// gpuform in `dir` with `args`, with the given sandbox faults (none when
/// `None`).
pub fn run_in(dir: &Path, args: &[&str], faults: Option<&str>) -> Output {
    let mut c = gpuform_cmd(dir, args);
    if let Some(f) = faults {
        c.env("GPUFORM_SANDBOX_FAULTS", f);
    }
    c.output().expect("run gpuform")
}

/// The standard output of gpuform in `dir` with `args` and no faults, which
/// must succeed.
pub fn stdout_of(dir: &Path, args: &[&str]) -> String {
    let out = run_in(dir, args, None);
    assert_success(&out, &format!("gpuform {args:?}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
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
        run_in(self.path(), args, faults)
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
    let out = gpuform_cmd(dir, &["sandbox", "ls", "--json", "--state", &st])
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
            kind: r["kind"].as_str().unwrap_or("").to_string(),
            attached_to: r["attrs"]["attached_to"].as_str().map(str::to_string),
            ingress: sandbox_ingress(&r["attrs"]["ingress"]),
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

/// A sandbox firewall's reported `ingress` as [`Live::ingress`]: the
/// members' rule and egress unless a `missing` marker says otherwise, then
/// the rules.
fn sandbox_ingress(v: &serde_json::Value) -> Vec<String> {
    use gpuform_provider::resource::{egress_missing, member_rule_missing};
    let list = v.as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    if !list.contains(&member_rule_missing()) {
        out.push(MEMBERS.to_string());
    }
    if !list.contains(&egress_missing()) {
        out.push(EGRESS.to_string());
    }
    for r in list.iter().filter(|r| r.get("cidr").is_some()) {
        let from = r["from_port"].as_u64().unwrap_or(0);
        let to = r["to_port"].as_u64().unwrap_or(from);
        out.push(rule(
            r["protocol"].as_str().unwrap_or("tcp"),
            from,
            to,
            r["cidr"].as_str().unwrap_or(""),
        ));
    }
    out
}

/// The spec loader's diagnostics for `text`, which it must refuse.
pub fn errors(text: &str) -> Diagnostics {
    match spec::load_str("bad.yaml", text, &Vars::new()) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(d) => d,
    }
}

/// The diagnostic whose message contains `needle`.
pub fn find<'a>(d: &'a Diagnostics, needle: &str) -> &'a Diagnostic {
    d.iter()
        .find(|x| x.message.contains(needle))
        .unwrap_or_else(|| panic!("no diagnostic containing {needle:?} in:\n{d}"))
}

/// (line, column, YAML path) of a diagnostic.
pub fn at(e: &Diagnostic) -> (usize, usize, &str) {
    (
        e.line.unwrap_or(0),
        e.column.unwrap_or(0),
        e.yaml_path.as_deref().unwrap_or(""),
    )
}

/// Stops process `pid` (SIGSTOP) and returns once it *is* stopped. A stop
/// is asynchronous: it lands when each thread reaches a point where signals
/// are taken, and a thread in an uninterruptible wait (an fsync on a loaded
/// CI disk) delays it by as long. Timing from the `kill` call let such a
/// process renew its lease after the "pause" began, so a rival that waited
/// out one lease found it still running and was refused.
pub fn stop_process(pid: i32) {
    assert_eq!(
        unsafe { libc::kill(pid, libc::SIGSTOP) },
        0,
        "SIGSTOP {pid}"
    );
    let stat = format!("/proc/{pid}/stat");
    for _ in 0..2000 {
        let text = std::fs::read_to_string(&stat).unwrap_or_default();
        // pid (comm) STATE ...: the state follows the last ')'.
        let state = text
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        if matches!(state, Some("T") | Some("t")) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("process {pid} did not stop within 10 s of SIGSTOP");
}

/// The gpuform binary this suite was built with.
pub fn gpuform_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_gpuform"))
}

/// [`gpuform_cmd`] in the repository's root (where the examples are), with
/// `args`; what the test adds after this (another directory too) wins.
pub fn gpuform_in_repo() -> Command {
    gpuform_cmd(Path::new(env!("CARGO_MANIFEST_DIR")), &[])
}

/// Whether a test is running under CI (`CI` set and not `false`), where
/// a missing server or tool is a failure and never a silent pass.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false")
}

/// Whether `tool` is on PATH. Missing under CI: a failure; elsewhere the
/// test says what it skips (`what`) and the caller returns.
pub fn tool_present(tool: &str, what: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            !under_ci(),
            "`{tool}` ({what}) is not installed under CI: .ci/run must install it"
        );
        eprintln!("skipped: `{tool}` ({what}) is not installed");
    }
    found
}

/// The URL of a test server named by the variable `var`. Unset under CI:
/// a failure; elsewhere the test says it skipped (`start` says how to
/// start the server) and gets `None`.
pub fn server_url(var: &str, start: &str) -> Option<String> {
    let url = std::env::var(var).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        assert!(!under_ci(), "{var} is not set under CI: .ci/run (through scripts/test.sh) must start the server ({start})");
        eprintln!("skipped: {var} is not set ({start})");
    }
    url
}

/// Runs `cmd` with `input` on its standard input and waits at most
/// `timeout` for it (then kills it and fails).
pub fn output_with_input(cmd: &mut Command, input: &str, timeout: std::time::Duration) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    // A child that exits before reading all of it closes the pipe: not an error.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    // Read both pipes while waiting, so a chatty child never blocks on a full pipe.
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => out.expect("output"),
        Err(_) => {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{cmd:?} did not exit within {timeout:?}");
        }
    }
}

/// What a k3s apply leaves in `state` (the state document): never the join
/// `token`; the server's address only where the server's record (at
/// `server`) keeps what the cloud reported (`reported.private_ip`, for
/// `gpuform output`), never in what was asked for (filled user data).
pub fn assert_k3s_state_clean(
    state: &serde_json::Value,
    server: &str,
    server_ip: &str,
    token: &str,
) {
    let text = state.to_string();
    assert!(!text.contains(token), "the join token is in state: {text}");
    let mut rest = state.clone();
    let reported = &mut rest["resources"][server]["reported"];
    assert_eq!(reported["private_ip"], server_ip, "{text}");
    *reported = serde_json::Value::Null;
    assert!(
        !rest.to_string().contains(server_ip),
        "the server's address is in state beside its reported one: {text}"
    );
}
