//! Alibaba OSS buckets through the gpuform binary, against the
//! object-storage stand-in (OSS flavor: OSS V4 signatures checked by its
//! own verifier) beside the ECS/VPC stand-in: create, a clean plan, drift,
//! the non-empty refusal, destroy, a crash at every OSS call of an apply,
//! and the secret never in state, plans or logs.

use gpuform_standins::alibaba::{AlibabaMock, ACCESS_KEY_SECRET};
use gpuform_standins::objstore::{oss::OSS, ObjStoreMock};
use gpuform_standins::MockCloud;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

struct Clouds {
    ecs: AlibabaMock,
    oss: ObjStoreMock,
}

fn start() -> Clouds {
    Clouds {
        ecs: AlibabaMock::start(),
        oss: ObjStoreMock::start(OSS),
    }
}

fn spec(project: &str, name: &str, force: bool) -> String {
    format!(
        "project: {project}\nbuckets:\n  data:\n    cloud: alibaba\n    region: cn-hangzhou\n    name: {name}\n    versioning: true\n    force_destroy: {force}\n    lifecycle:\n      archive_after_days: 30\n      expire_noncurrent_after_days: 7\n    tags: {{team: ml}}\n"
    )
}

fn gpuform(dir: &Path, c: &Clouds, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuform"));
    cmd.env("GPUFORM_TODAY", "2026-11-29");
    // Every log line, so the secret check below reads them all.
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("GPUFORM_LOG", "trace");
    for (k, v) in c.ecs.env().into_iter().chain(c.oss.env()) {
        cmd.env(k, v);
    }
    cmd
}

fn run(dir: &Path, c: &Clouds, args: &[&str]) -> Output {
    gpuform(dir, c, args).output().expect("run gpuform")
}

fn ok(dir: &Path, c: &Clouds, args: &[&str]) -> String {
    let out = run(dir, c, args);
    assert!(
        out.status.success(),
        "gpuform {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn plan_exit(dir: &Path, c: &Clouds) -> i32 {
    run(dir, c, &["plan", "spec.yaml", "--detailed-exitcode"])
        .status
        .code()
        .unwrap()
}

/// Every file gpuform wrote under `.gpuform`, as text.
fn files(dir: &Path) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(dir.join(".gpuform")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            all.push_str(&String::from_utf8_lossy(&std::fs::read(p).unwrap()));
        }
    }
    all
}

#[test]
fn buckets_on_oss_from_create_to_destroy() {
    let c = start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), spec("lab", "lab-data-2026", false)).unwrap();
    let mut logs = String::new();
    assert_eq!(plan_exit(d, &c), 2);
    logs += &ok(d, &c, &["apply", "spec.yaml", "--auto-approve"]);
    let b = c.oss.bucket("lab-data-2026").expect("the bucket");
    assert_eq!(b.versioning.as_deref(), Some("Enabled"));
    assert_eq!(
        b.tags.get("gpuform:address").map(String::as_str),
        Some("bucket.data")
    );
    assert_eq!(plan_exit(d, &c), 0, "apply then plan shows no changes");

    // Drift: another client removes the lifecycle rule.
    assert!(c.oss.edit_behind("lab-data-2026", |b| b.lifecycle = None));
    let plan = ok(d, &c, &["plan", "spec.yaml"]);
    logs += &plan;
    assert!(plan.contains("lifecycle"), "{plan}");
    assert_eq!(plan_exit(d, &c), 2);
    logs += &ok(d, &c, &["apply", "spec.yaml", "--auto-approve"]);
    assert!(c.oss.bucket("lab-data-2026").unwrap().lifecycle.is_some());
    assert_eq!(plan_exit(d, &c), 0);

    // Objects in it: destroy is refused with the count, before any call.
    c.oss.put_object("lab-data-2026", "a");
    c.oss.put_object("lab-data-2026", "b");
    let out = run(d, &c, &["destroy", "spec.yaml", "--auto-approve"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("2 object(s)") && said.contains("force_destroy"),
        "{said}"
    );
    assert!(c.oss.bucket("lab-data-2026").is_some());
    // force_destroy: the apply tags it, then destroy empties and deletes it.
    std::fs::write(d.join("spec.yaml"), spec("lab", "lab-data-2026", true)).unwrap();
    logs += &ok(d, &c, &["apply", "spec.yaml", "--auto-approve"]);
    logs += &ok(d, &c, &["destroy", "spec.yaml", "--auto-approve"]);
    assert!(c.oss.bucket("lab-data-2026").is_none());

    // The secret never reaches state, plans or logs.
    logs += &files(d);
    assert!(
        logs.contains("object storage call"),
        "the trace logs were read"
    );
    assert!(logs.contains("lab-data-2026"), "state and plans were read");
    assert!(!logs.contains(ACCESS_KEY_SECRET));
}

#[test]
fn a_crash_at_every_oss_call_converges_to_one_bucket() {
    let c = start();
    let pid = Arc::new(AtomicU32::new(0));
    let target = Arc::new(AtomicU64::new(u64::MAX));
    {
        let (pid, target) = (pid.clone(), target.clone());
        c.oss.set_hook(Some(Arc::new(move |n: u64| {
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
        let project = format!("crash-{n}");
        let name = format!("crash-bucket-{n}");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("spec.yaml"), spec(&project, &name, false)).unwrap();
        target.store(c.oss.requests() + n, Ordering::SeqCst);
        let args = [
            "apply",
            "spec.yaml",
            "--auto-approve",
            "--parallelism",
            "1",
            "-q",
        ];
        let child = gpuform(d, &c, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        pid.store(child.id(), Ordering::SeqCst);
        let out = child.wait_with_output().unwrap();
        pid.store(0, Ordering::SeqCst);
        target.store(u64::MAX, Ordering::SeqCst);
        if out.status.success() {
            assert!(n > 6, "crash injection fired only {} times", n - 1);
            ok(d, &c, &["destroy", "spec.yaml", "--auto-approve", "-q"]);
            break;
        }
        assert!(
            out.status.code().is_none(),
            "N={n}: expected a kill, got {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        ok(d, &c, &["apply", "spec.yaml", "--auto-approve", "-q"]);
        let live = c.oss.resources();
        assert_eq!(live.len(), 1, "N={n}: {live:?}");
        assert_eq!(live[0].id, name);
        assert_eq!(live[0].address.as_deref(), Some("bucket.data"), "N={n}");
        let b = c.oss.bucket(&name).unwrap();
        assert_eq!(b.versioning.as_deref(), Some("Enabled"), "N={n}");
        assert!(b.lifecycle.is_some(), "N={n}");
        let st: serde_json::Value = serde_json::from_slice(
            &std::fs::read(d.join(format!(".gpuform/{project}.state.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            st["resources"]["bucket.data"]["id"],
            serde_json::json!(name),
            "N={n}"
        );
        assert_eq!(plan_exit(d, &c), 0, "N={n}: plan after recovery");
        ok(d, &c, &["destroy", "spec.yaml", "--auto-approve", "-q"]);
        assert!(
            c.oss.resources().is_empty(),
            "N={n}: destroy after recovery"
        );
        assert!(n < 100);
    }
    c.oss.set_hook(None);
}
