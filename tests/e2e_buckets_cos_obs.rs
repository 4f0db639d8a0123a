//! Buckets on Tencent COS and Huawei OBS end to end: the gpuform binary
//! against the cloud's API stand-in and the object-storage stand-in in its
//! flavor (which verifies every signature with its own verifier and parses
//! every XML body with its own reader). One scenario per cloud — create
//! and read back, no-op plan, drift repaired, a non-empty bucket's destroy
//! refused with its count then forced, a name of another account a clear
//! error — a crash at every object-storage call of an apply, and the
//! secret never in state, plans or logs.

use gpuform_standins::objstore::{cos::COS, obs::OBS, ObjStoreMock};
use gpuform_standins::{huawei::HuaweiMock, tencent::TencentMock, MockCloud};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// One cloud: its compute stand-in (refresh lists its resources too),
/// its object-storage stand-in, a region and a bucket name of its rules.
struct Case {
    cloud: &'static str,
    region: &'static str,
    /// The bucket name for a project (COS: `<name>-<APPID>`).
    name: fn(&str) -> String,
    /// The secret the binary is given, which must never be shown.
    secret: &'static str,
}

const TENCENT: Case = Case {
    cloud: "tencent",
    region: "ap-guangzhou",
    name: |p| format!("{p}-data-{}", gpuform_standins::objstore::cos::APPID),
    secret: gpuform_standins::tencent::SECRET_KEY,
};

const HUAWEI: Case = Case {
    cloud: "huawei",
    region: "cn-north-4",
    name: |p| format!("{p}-data"),
    secret: gpuform_standins::huawei::TEST_SK,
};

fn spec(c: &Case, project: &str, force: bool) -> String {
    format!(
        "project: {project}\nbuckets:\n  data:\n    cloud: {}\n    region: {}\n    name: {}\n    storage_class: infrequent\n    versioning: true\n    encryption: true\n    lifecycle:\n      archive_after_days: 30\n      expire_noncurrent_after_days: 7\n    force_destroy: {force}\n    size_gb: 100\n    tags:\n      team: ml\n",
        c.cloud,
        c.region,
        (c.name)(project)
    )
}

fn gpuform(dir: &Path, mocks: &[&dyn MockCloud], args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuform"));
    // Pinned: no output of a test depends on the day it runs.
    cmd.env("GPUFORM_TODAY", "2026-11-29")
        .env("NO_COLOR", "1")
        .env("GPUFORM_HUAWEI_SETTLE_MS", "0")
        .args(args)
        .current_dir(dir);
    for m in mocks {
        for (k, v) in m.env() {
            cmd.env(k, v);
        }
    }
    cmd
}

fn run(dir: &Path, mocks: &[&dyn MockCloud], args: &[&str]) -> Output {
    gpuform(dir, mocks, args).output().expect("run gpuform")
}

fn ok(dir: &Path, mocks: &[&dyn MockCloud], args: &[&str]) -> String {
    let out = run(dir, mocks, args);
    assert!(
        out.status.success(),
        "gpuform {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn plan_exit(dir: &Path, mocks: &[&dyn MockCloud]) -> i32 {
    run(dir, mocks, &["plan", "spec.yaml", "--detailed-exitcode"])
        .status
        .code()
        .unwrap()
}

/// Every file gpuform wrote under `dir`, as text.
fn written(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn start(c: &Case) -> (Box<dyn MockCloud>, ObjStoreMock) {
    match c.cloud {
        "tencent" => (Box::new(TencentMock::start()), ObjStoreMock::start(COS)),
        _ => (Box::new(HuaweiMock::start()), ObjStoreMock::start(OBS)),
    }
}

fn scenario(c: &Case) {
    let (api, store) = start(c);
    let mocks: [&dyn MockCloud; 2] = [api.as_ref(), &store];
    let project = format!("b{}", &c.cloud[..3]);
    let name = (c.name)(&project);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec(c, &project, false)).unwrap();

    // Create; the bucket holds every setting; a plan then has nothing to do.
    assert_eq!(plan_exit(dir.path(), &mocks), 2);
    let shown = ok(
        dir.path(),
        &mocks,
        &["apply", "spec.yaml", "--auto-approve"],
    );
    let b = store.bucket(&name).expect("the bucket exists");
    assert_eq!(b.region, c.region);
    assert_eq!(b.versioning.as_deref(), Some("Enabled"));
    assert!(b.sse.is_some() && b.lifecycle.is_some(), "{}", c.cloud);
    assert_eq!(b.acl, "private");
    assert_eq!(
        b.tags.get("gpuform:address").map(String::as_str),
        Some("bucket.data")
    );
    assert_eq!(b.tags.get("team").map(String::as_str), Some("ml"));
    assert_eq!(
        plan_exit(dir.path(), &mocks),
        0,
        "{}: apply then plan",
        c.cloud
    );

    // Drift: another client removes the lifecycle rule; the plan shows it
    // and an apply puts it back.
    assert!(store.edit_behind(&name, |b| b.lifecycle = None));
    let plan = ok(dir.path(), &mocks, &["plan", "spec.yaml"]);
    assert!(plan.contains("lifecycle"), "{}: {plan}", c.cloud);
    ok(
        dir.path(),
        &mocks,
        &["apply", "spec.yaml", "--auto-approve"],
    );
    assert!(store.bucket(&name).unwrap().lifecycle.is_some());
    assert_eq!(
        plan_exit(dir.path(), &mocks),
        0,
        "{}: after repair",
        c.cloud
    );

    // A bucket holding objects: destroy is refused with the count.
    for k in ["a", "b"] {
        assert!(store.put_object(&name, k));
    }
    let out = run(
        dir.path(),
        &mocks,
        &["destroy", "spec.yaml", "--auto-approve"],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{}: {said}", c.cloud);
    assert!(said.contains("2 object(s)"), "{}: {said}", c.cloud);
    assert_eq!(store.object_count(&name), Some(2));
    // `force_destroy: true`, applied, lets destroy empty it.
    std::fs::write(dir.path().join("spec.yaml"), spec(c, &project, true)).unwrap();
    ok(
        dir.path(),
        &mocks,
        &["apply", "spec.yaml", "--auto-approve"],
    );
    ok(
        dir.path(),
        &mocks,
        &["destroy", "spec.yaml", "--auto-approve"],
    );
    assert!(store.bucket(&name).is_none(), "{}: destroyed", c.cloud);

    // A name another account holds: a clear error, and their bucket stays.
    store.add_foreign(&name, c.region);
    let out = run(
        dir.path(),
        &mocks,
        &["apply", "spec.yaml", "--auto-approve"],
    );
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(
        said.contains("taken by another account"),
        "{}: {said}",
        c.cloud
    );
    assert!(store.bucket(&name).unwrap().foreign);

    // The secret is never written nor shown, even in debug logs.
    let logged = run(dir.path(), &mocks, &["plan", "spec.yaml", "--json"]);
    let mut seen = written(dir.path());
    seen.push_str(&shown);
    seen.push_str(&String::from_utf8_lossy(&logged.stdout));
    let debug = gpuform(dir.path(), &mocks, &["plan", "spec.yaml"])
        .env("GPUFORM_LOG", "debug")
        .output()
        .unwrap();
    seen.push_str(&String::from_utf8_lossy(&debug.stderr));
    assert!(!seen.is_empty());
    assert!(
        !seen.contains(c.secret),
        "{}: the secret was shown",
        c.cloud
    );
}

/// Kills gpuform right after the N-th object-storage request took effect
/// and before its answer, for every N of an apply of one bucket; one more
/// apply must leave exactly that bucket, complete, and a plan with nothing
/// to do.
fn crash_at_every_call(c: &Case) {
    let (api, store) = start(c);
    let mocks: [&dyn MockCloud; 2] = [api.as_ref(), &store];
    let pid = Arc::new(AtomicU32::new(0));
    let target = Arc::new(AtomicU64::new(u64::MAX));
    {
        let (pid, target) = (pid.clone(), target.clone());
        store.set_hook(Some(Arc::new(move |n: u64| {
            if n == target.load(Ordering::SeqCst) {
                let p = pid.load(Ordering::SeqCst);
                if p != 0 {
                    unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
        })));
    }
    for n in 1u64.. {
        let project = format!("k{}{n}", &c.cloud[..3]);
        let name = (c.name)(&project);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spec.yaml"), spec(c, &project, false)).unwrap();
        target.store(store.requests() + n, Ordering::SeqCst);
        let child = gpuform(
            dir.path(),
            &mocks,
            &["apply", "spec.yaml", "--auto-approve", "-q"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        pid.store(child.id(), Ordering::SeqCst);
        let out = child.wait_with_output().unwrap();
        pid.store(0, Ordering::SeqCst);
        target.store(u64::MAX, Ordering::SeqCst);
        if out.status.success() {
            assert!(
                n - 1 > 5,
                "{}: crash injection fired {} times",
                c.cloud,
                n - 1
            );
            ok(
                dir.path(),
                &mocks,
                &["destroy", "spec.yaml", "--auto-approve", "-q"],
            );
            break;
        }
        assert!(
            out.status.code().is_none(),
            "{} N={n}: expected a kill, got {:?}: {}",
            c.cloud,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        ok(
            dir.path(),
            &mocks,
            &["apply", "spec.yaml", "--auto-approve", "-q"],
        );
        let live: Vec<_> = store
            .resources()
            .into_iter()
            .filter(|r| r.address.is_some())
            .collect();
        assert_eq!(live.len(), 1, "{} N={n}: {live:?}", c.cloud);
        let b = store.bucket(&name).expect("the bucket");
        assert_eq!(
            b.versioning.as_deref(),
            Some("Enabled"),
            "{} N={n}",
            c.cloud
        );
        assert!(
            b.sse.is_some() && b.lifecycle.is_some(),
            "{} N={n}",
            c.cloud
        );
        assert_eq!(
            b.tags.get("gpuform:project").map(String::as_str),
            Some(project.as_str()),
            "{} N={n}",
            c.cloud
        );
        assert_eq!(
            plan_exit(dir.path(), &mocks),
            0,
            "{} N={n}: plan after recovery",
            c.cloud
        );
        ok(
            dir.path(),
            &mocks,
            &["destroy", "spec.yaml", "--auto-approve", "-q"],
        );
        assert!(
            store.resources().is_empty(),
            "{} N={n}: destroy after recovery",
            c.cloud
        );
        assert!(n < 100);
    }
    store.set_hook(None);
}

#[test]
fn cos_bucket_scenario() {
    scenario(&TENCENT);
}

#[test]
fn cos_crash_at_every_call() {
    crash_at_every_call(&TENCENT);
}

#[test]
fn obs_bucket_scenario() {
    scenario(&HUAWEI);
}

#[test]
fn obs_crash_at_every_call() {
    crash_at_every_call(&HUAWEI);
}
