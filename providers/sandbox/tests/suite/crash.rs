//! `crash_after`: the N-th call takes full effect, then the process aborts
//! before the caller hears of it. The crashing part runs in a child process:
//! this test binary itself, started with `CRASH_CHILD_DIR` set.

use crate::common;

use common::*;
use gpuform_provider::{Cloud, ResourceKind};
use gpuform_sandbox::{Faults, SandboxCloud};
use std::process::Command;

const CHILD_ENV: &str = "GPUFORM_SANDBOX_CRASH_CHILD_DIR";

/// In the child: network, subnet, firewall (two calls: create, then its
/// rules), instance with crash_after=5.
#[tokio::test]
async fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return; // only meaningful as the child of `crash_after_keeps_the_effect`
    };
    let faults = Faults::parse("crash_after=5").expect("faults");
    let sb = SandboxCloud::open(std::path::Path::new(&dir), faults).expect("open");
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    stack(&*p, &o, "crash", "c").await;
    // Never reached: the 5th call (the instance) aborts the process.
    println!("CHILD SURVIVED");
}

#[tokio::test]
async fn crash_after_keeps_the_effect() {
    let dir = temp_dir("crash");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        // The suite names each test by its module: `crash::crash_child`.
        .args([
            "--exact",
            "crash::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &dir)
        .output()
        .expect("spawn child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the child must die: {stdout}\n{stderr}"
    );
    assert!(!stdout.contains("CHILD SURVIVED"), "{stdout}");
    assert!(stderr.contains("crash_after=5 reached"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "SIGABRT: {:?}", out.status);
    }

    // The cloud has the instance the caller never heard about.
    let sb = SandboxCloud::open(&dir, Faults::default()).expect("reopen");
    let all = sb.list_all();
    assert_eq!(all.len(), 4, "{all:?}");
    let inst = all
        .iter()
        .find(|r| r.kind == ResourceKind::Instance)
        .expect("the 5th call's effect");
    assert_eq!(inst.token, "tok-crash-c.node[0]");

    // The next apply adopts it: the same token yields the same instance, and
    // list_owned finds it.
    let p = sb.provider(Cloud::Aws);
    let o = offer(Cloud::Aws);
    let owned = p
        .list_owned(&scope(&o.region), "crash")
        .await
        .expect("list");
    assert_eq!(owned.len(), 4);
    let subnet = all
        .iter()
        .find(|r| r.kind == ResourceKind::Subnet)
        .expect("subnet");
    let firewall = all
        .iter()
        .find(|r| r.kind == ResourceKind::Firewall)
        .expect("firewall");
    let again = create(
        &*p,
        &instance_req(&o, &subnet.id, &firewall.id, "crash", "c.node[0]"),
    )
    .await;
    assert_eq!(again.id, inst.id);
    assert_eq!(sb.list_all().len(), 4, "no duplicate");
}
