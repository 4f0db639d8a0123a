//! Huawei Cloud behaviours of issue 15 that only show across commands: the
//! gpuform binary against the Huawei stand-in (tests/standins), killed
//! right after a chosen API call, or refreshed while the API throttles.

use crate::support;

use gpuform_provider::ResourceKind;
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::MockCloud;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

fn spec(project: &str, nodes: u32) -> String {
    format!(
        "project: {project}\nclusters:\n  infer:\n    cloud: huawei\n    region: cn-north-4\n    nodes: {nodes}\n    gpu: T4\n    disk:\n      data_gb: 50\n"
    )
}

fn gpuform(dir: &Path, mock: &HuaweiMock, args: &[&str]) -> Command {
    support::gpuform_at(dir, &[mock], args)
}

fn run(dir: &Path, mock: &HuaweiMock, args: &[&str]) -> Output {
    gpuform(dir, mock, args).output().expect("run gpuform")
}

fn ok(dir: &Path, mock: &HuaweiMock, args: &[&str]) -> String {
    support::succeeded(&run(dir, mock, args), args)
}

/// Recorded address → id, from the state file.
fn recorded(dir: &Path, project: &str) -> BTreeMap<String, String> {
    let st: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(format!(".gpuform/{project}.state.json"))).expect("state"),
    )
    .expect("state is JSON");
    st["resources"]
        .as_object()
        .expect("resources")
        .iter()
        .map(|(a, r)| (a.clone(), r["id"].as_str().unwrap_or_default().to_string()))
        .collect()
}

/// Runs `apply` and SIGKILLs it right after the first request for which
/// `is_target("METHOD /path")` holds has taken effect, before its answer.
fn apply_killed_after(dir: &Path, mock: &HuaweiMock, is_target: fn(&str) -> bool) {
    let log = mock.call_log();
    let pid = Arc::new(AtomicU32::new(0));
    let fired = Arc::new(AtomicBool::new(false));
    {
        let (pid, fired) = (pid.clone(), fired.clone());
        mock.set_hook(Some(Arc::new(move |_n: u64| {
            let last = log.lock().ok().and_then(|l| l.last().cloned());
            if last.as_deref().is_some_and(is_target) && !fired.swap(true, Ordering::SeqCst) {
                let p = pid.load(Ordering::SeqCst);
                if p != 0 {
                    gpuform_standins::kill_before_answer(p);
                }
            }
        })));
    }
    let child = gpuform(dir, mock, &support::SERIAL_APPLY)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn gpuform");
    pid.store(child.id(), Ordering::SeqCst);
    let out = child.wait_with_output().expect("wait");
    mock.set_hook(None);
    assert!(
        fired.load(Ordering::SeqCst),
        "the target call was never made"
    );
    assert!(
        out.status.code().is_none(),
        "expected a kill, got {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Point 13: a system disk carries its server's creation tags (ECS user
/// guide ecs_03_0902), address included. After a crash right after
/// CreateServers, the next apply must record the servers as the nodes (the
/// kind matches as well as the address) and keep every server alive.
#[test]
fn crash_after_create_servers_adopts_the_servers_not_their_system_disks() {
    let mock = HuaweiMock::start();
    let dir = tempfile::tempdir().unwrap();
    let project = "hw-boot-disks";
    std::fs::write(dir.path().join("spec.yaml"), spec(project, 3)).unwrap();
    apply_killed_after(dir.path(), &mock, |c| {
        c.starts_with("POST /v1.1/") && c.ends_with("/cloudservers")
    });
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );

    let servers: BTreeMap<String, String> = mock
        .resources()
        .into_iter()
        .filter(|r| r.kind == ResourceKind::Instance)
        .map(|r| (r.address.unwrap_or_default(), r.id))
        .collect();
    let state = recorded(dir.path(), project);
    for i in 0..3 {
        let a = format!("cluster.infer.node[{i}]");
        assert!(
            servers.contains_key(&a),
            "{a} has a live server: {servers:#?}"
        );
        assert_eq!(
            state.get(&a),
            servers.get(&a),
            "{a} is recorded as its server"
        );
    }
    assert_eq!(
        servers.len(),
        3,
        "no server lost or duplicated: {servers:#?}"
    );
    let plan = run(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        plan.status.code(),
        Some(0),
        "plan converges:\n{}",
        String::from_utf8_lossy(&plan.stdout)
    );
    ok(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    assert!(mock.resources().is_empty(), "{:?}", mock.resources());
}

/// Point 15: while ECS answers `202 Common.0024 exceeds flow over limit`,
/// a refresh must not conclude the servers are gone and plan their creation.
#[test]
fn throttled_refresh_never_plans_a_create_for_what_exists() {
    let mock = HuaweiMock::start();
    let dir = tempfile::tempdir().unwrap();
    let project = "hw-throttled";
    std::fs::write(dir.path().join("spec.yaml"), spec(project, 2)).unwrap();
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );

    mock.throttle_ecs(1_000);
    let plan = run(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    let stdout = String::from_utf8_lossy(&plan.stdout);
    let stderr = String::from_utf8_lossy(&plan.stderr);
    assert_ne!(
        plan.status.code(),
        Some(2),
        "a throttled refresh planned changes:\n{stdout}"
    );
    assert!(!stdout.contains("will be created"), "{stdout}");
    assert_eq!(plan.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("throttled"), "the error says why: {stderr}");

    // Throttled for a while only: refresh retries its reads with backoff,
    // as apply does, and the plan is clean.
    mock.throttle_ecs(3);
    let plan = run(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        plan.status.code(),
        Some(0),
        "3 throttled answers, then a clean plan:\n{}{}",
        String::from_utf8_lossy(&plan.stdout),
        String::from_utf8_lossy(&plan.stderr)
    );

    mock.throttle_ecs(0);
    let plan = run(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );
    ok(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
}

/// Point 17: a new EVS disk is not found until its create job has made it,
/// and CreateVolume takes no idempotency token. A crash right after it,
/// followed at once by another apply, must not make a second disk.
#[test]
fn crash_after_create_volume_does_not_duplicate_the_disk() {
    let mock = HuaweiMock::start();
    let dir = tempfile::tempdir().unwrap();
    let project = "hw-settle";
    std::fs::write(dir.path().join("spec.yaml"), spec(project, 1)).unwrap();
    apply_killed_after(dir.path(), &mock, |c| {
        c.starts_with("POST /v2.1/") && c.ends_with("/cloudvolumes")
    });
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );
    let disks: Vec<_> = mock
        .resources()
        .into_iter()
        .filter(|r| r.kind == ResourceKind::Volume)
        .collect();
    assert_eq!(disks.len(), 1, "one data disk, not a duplicate: {disks:#?}");
    assert_eq!(disks[0].address.as_deref(), Some("cluster.infer.volume[0]"));
    assert_eq!(
        recorded(dir.path(), project).get("cluster.infer.volume[0]"),
        Some(&disks[0].id)
    );
    ok(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    assert!(mock.resources().is_empty(), "{:?}", mock.resources());
}

/// Point 19: DeleteServers deletes only pay-per-use servers ("Deleting
/// ECSs"). A destroy that includes a yearly/monthly server says so before
/// anything is deleted, instead of deleting the data disks and then failing.
#[test]
fn destroy_refuses_prepaid_servers_before_deleting_anything() {
    let mock = HuaweiMock::start();
    let dir = tempfile::tempdir().unwrap();
    let project = "hw-prepaid";
    std::fs::write(dir.path().join("spec.yaml"), spec(project, 1)).unwrap();
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );
    let before = mock.resources();
    let server = before
        .iter()
        .find(|r| r.kind == ResourceKind::Instance)
        .expect("server");
    assert!(mock.make_prepaid(&server.id), "switched to yearly/monthly");

    let out = run(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cluster.infer.node[0]") && stderr.contains("unsubscribe"),
        "the refusal names the node and what to do: {stderr}"
    );
    assert_eq!(mock.resources(), before, "nothing was deleted");
}

/// Point 3: a server that goes to ERROR after CreateServers is a failed
/// create, not a node: it is deleted and the cluster fails over to its next
/// zone through the capacity path, with a fresh X-Client-Token there.
#[test]
fn a_server_in_error_fails_over_to_the_next_zone() {
    let mock = HuaweiMock::start();
    let dir = tempfile::tempdir().unwrap();
    let project = "hw-error";
    let spec = format!(
        "project: {project}\nclusters:\n  infer:\n    cloud: huawei\n    region: cn-north-4\n    zones: [cn-north-4a, cn-north-4b]\n    nodes: 1\n    gpu: T4\n"
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    mock.break_builds_in_zone("cn-north-4a");
    ok(
        dir.path(),
        &mock,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );

    let servers: Vec<_> = mock
        .resources()
        .into_iter()
        .filter(|r| r.kind == ResourceKind::Instance)
        .collect();
    assert_eq!(servers.len(), 1, "the ERROR server is gone: {servers:#?}");
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(format!(".gpuform/{project}.state.json"))).unwrap(),
    )
    .unwrap();
    let node = &state["resources"]["cluster.infer.node[0]"];
    assert_eq!(node["id"].as_str(), Some(servers[0].id.as_str()));
    assert_eq!(node["attrs"]["zone"], "cn-north-4b", "{node}");
    let plan = run(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );
    ok(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    assert!(mock.resources().is_empty(), "{:?}", mock.resources());
}
