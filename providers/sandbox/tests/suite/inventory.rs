//! The durable inventory: replay after reopening, torn and corrupt logs,
//! compaction, changes by other processes and behind gpuform's back, reset.

use crate::common;

use common::*;
use gpuform_provider::{Cloud, ResourceKind};
use gpuform_sandbox::{Faults, SandboxCloud, SandboxError, INVENTORY_FILE};
use serde_json::json;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Appends raw text to the log, as another process (or a torn write) would.
fn append_to_log(dir: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(log_path(dir))
        .expect("log");
    f.write_all(text.as_bytes()).expect("append");
}

/// Lines of the log now.
fn log_lines(dir: &Path) -> usize {
    std::fs::read_to_string(log_path(dir))
        .expect("log")
        .lines()
        .count()
}

#[tokio::test]
async fn replay_after_reopen() {
    let dir = temp_dir("replay");
    let o = offer(Cloud::Aws);
    let sc = scope(&o.region);
    let (s, before) = {
        let sb = open(&dir);
        let p = sb.provider(Cloud::Aws);
        let s = stack(&*p, &o, "p", "r").await;
        let changes = attrs(json!({"tags": {"v": "2"}}));
        p.update(&sc, ResourceKind::Instance, &s.instance, &changes)
            .await
            .expect("update");
        let extra = stack(&*p, &o, "p", "gone").await;
        p.delete(&sc, ResourceKind::Instance, &extra.instance)
            .await
            .expect("delete");
        (s, sb.list_all())
    };
    let sb = open(&dir);
    assert_eq!(sb.list_all(), before);
    let p = sb.provider(Cloud::Aws);
    // Dependencies were rebuilt.
    let e = p
        .delete(&sc, ResourceKind::Subnet, &s.subnet)
        .await
        .expect_err("in use");
    assert_eq!(e.kind, gpuform_provider::ErrorKind::DependencyViolation);
    // Tokens were rebuilt.
    let again = create(
        &*p,
        &instance_req(&o, &s.subnet, &s.firewall, "p", "r.node[0]"),
    )
    .await;
    assert_eq!(again.id, s.instance);
    assert_eq!(again.attrs["tags"], json!({"v": "2"}));
    // New ids do not collide with old ones.
    let n = stack(&*p, &o, "p", "new").await;
    let ids: HashSet<_> = sb.list_all().into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), before.len() + 4);
    assert!(!before.iter().any(|r| r.id == n.instance));
}

#[tokio::test]
async fn torn_last_line_is_ignored() {
    let dir = temp_dir("torn");
    let region = offer(Cloud::Aws).region;
    let before = {
        let sb = open(&dir);
        networks(&*sb.provider(Cloud::Aws), &region, "p", "n", 3).await;
        sb.list_all()
    };
    append_to_log(&dir, r#"{"op":"create","seq":99,"cloud":"aws","kind":"net"#);
    {
        let sb = open(&dir);
        assert_eq!(sb.list_all(), before);
        // The next append starts on a line of its own.
        create_id(&*sb.provider(Cloud::Aws), &network_req(&region, "p", "n3")).await;
    }
    assert_eq!(open(&dir).list_all().len(), 4);
}

#[tokio::test]
async fn corrupt_line_is_reported_with_its_number() {
    let (dir, region, log, text) = logged("corrupt", 3).await;
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{not json";
    std::fs::write(&log, lines.join("\n") + "\n").expect("write");
    match SandboxCloud::open(&dir, Faults::default()) {
        Err(e @ SandboxError::Corrupt { line: 3, .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("line 3") && msg.contains(INVENTORY_FILE),
                "{msg}"
            );
        }
        other => panic!("expected a corrupt-inventory error on line 3, got {other:?}"),
    }
    // The way out: reset without opening; ids are still not reused.
    SandboxCloud::reset_dir(&dir).expect("reset a corrupt inventory");
    let sb = open(&dir);
    assert!(sb.list_all().is_empty());
    let old_ids: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["id"].clone())
        .collect();
    let id = create_id(&*sb.provider(Cloud::Aws), &network_req(&region, "p", "n0")).await;
    assert!(!old_ids.contains(&json!(id)), "{id} reused");
}

#[tokio::test]
async fn whole_last_record_without_newline_is_kept() {
    let (dir, region, log, text) = logged("nonewline", 2).await;
    std::fs::write(&log, text.trim_end_matches('\n')).expect("write");
    {
        let sb = open(&dir);
        assert_eq!(sb.list_all().len(), 2);
        create_id(&*sb.provider(Cloud::Aws), &network_req(&region, "p", "n2")).await;
    }
    assert_eq!(open(&dir).list_all().len(), 3);
}

#[tokio::test]
async fn compaction_on_open() {
    let dir = temp_dir("compact");
    let region = offer(Cloud::Aws).region;
    let (kept, max_id) = {
        let sb = open(&dir);
        let p = sb.provider(Cloud::Aws);
        let sc = scope(&region);
        let mut last = String::new();
        for (i, id) in networks(&*p, &region, "p", "n", 1500)
            .await
            .into_iter()
            .enumerate()
        {
            if i % 100 != 0 {
                p.delete(&sc, ResourceKind::Network, &id)
                    .await
                    .expect("delete");
            }
            last = id;
        }
        (sb.list_all(), last)
    };
    assert_eq!(log_lines(&dir), 1 + 1500 + 1485);
    let sb = open(&dir);
    assert_eq!(
        log_lines(&dir),
        1 + kept.len(),
        "compacted to header + live resources"
    );
    assert_eq!(sb.list_all(), kept);
    // The id sequence survives compaction.
    let id = create_id(
        &*sb.provider(Cloud::Aws),
        &network_req(&region, "p", "after"),
    )
    .await;
    assert_ne!(id, max_id);
    assert!(!kept.iter().any(|r| r.id == id));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[tokio::test]
async fn behind_the_back_operations() {
    let World { dir, sb, p, o, s } = world("behind", "p", "b").await;
    let instance = || read_one(&*p, &o.region, ResourceKind::Instance, &s.instance);

    // Drift: an attribute changed in the console.
    sb.set_attr_behind(&s.instance, "root_gb", json!(1000))
        .expect("set");
    assert_eq!(instance().await[0].attrs["root_gb"], json!(1000));
    sb.set_attr_behind("b.node[0]", "root_gb", serde_json::Value::Null)
        .expect("by address");
    assert!(!instance().await[0].attrs.contains_key("root_gb"));

    // Dependencies hold behind the back too.
    assert!(matches!(
        sb.delete_behind(&s.network),
        Err(SandboxError::DependencyViolation(_))
    ));
    let gone = sb.delete_behind("b.node[0]").expect("delete by address");
    assert_eq!(gone.id, s.instance);
    assert!(instance().await.is_empty());
    assert!(matches!(
        sb.delete_behind("no-such-thing"),
        Err(SandboxError::NotFound(_))
    ));

    // The same address in two projects is ambiguous.
    let _ = stack(&*p, &o, "q", "b").await;
    assert!(matches!(
        sb.delete_behind("b.network"),
        Err(SandboxError::Ambiguous { .. })
    ));

    // Survives a reopen.
    let n = sb.list_all().len();
    drop((p, sb));
    assert_eq!(open(&dir).list_all().len(), n);
}

#[tokio::test]
async fn changes_by_another_process_are_seen() {
    let dir = temp_dir("external");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let region = offer(Cloud::Aws).region;
    let id = create_id(&*p, &network_req(&region, "p", "n")).await;
    // What a `gpuform sandbox delete` in another process appends.
    append_to_log(
        &dir,
        &format!("{{\"op\":\"delete\",\"cloud\":\"aws\",\"id\":\"{id}\"}}\n"),
    );
    assert!(read_one(&*p, &region, ResourceKind::Network, &id)
        .await
        .is_empty());
}

#[tokio::test]
async fn reset_empties_but_never_reuses_ids() {
    let dir = temp_dir("reset");
    let sb = open(&dir);
    let p = sb.provider(Cloud::Aws);
    let req = network_req(&offer(Cloud::Aws).region, "p", "a");
    let a = create_id(&*p, &req).await;
    sb.reset().expect("reset");
    assert!(sb.list_all().is_empty());
    let b = create_id(&*p, &req).await;
    assert_ne!(a, b);
    drop((p, sb));
    assert_eq!(open(&dir).list_all().len(), 1);
}

#[test]
fn open_twice_in_a_process() {
    let dir = temp_dir("twice");
    let a = open(&dir);
    let b = open(&dir);
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let e = SandboxCloud::open(&dir, Faults::parse("seed=3").expect("faults"))
        .expect_err("other faults");
    assert!(matches!(e, SandboxError::AlreadyOpen { .. }));
}

/// A fresh sandbox directory named after `name` with `n` AWS networks of
/// project `p` (`n0`…) in the offer's region: the directory, the region,
/// the inventory log's path and its text.
async fn logged(name: &str, n: usize) -> (PathBuf, String, PathBuf, String) {
    let dir = temp_dir(name);
    let region = offer(Cloud::Aws).region;
    networks(&*open(&dir).provider(Cloud::Aws), &region, "p", "n", n).await;
    let log = log_path(&dir);
    let text = std::fs::read_to_string(&log).expect("log");
    (dir, region, log, text)
}
