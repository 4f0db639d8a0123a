//! The S3 state backend against moto's S3 (`GPUFORM_TEST_MOTO_URL`, set by
//! scripts/test.sh), with the gpuform binary run from different working
//! directories sharing one sandbox cloud, as two CI runners would. moto
//! honours If-Match / If-None-Match on PutObject; a bucket that ignores them
//! is simulated by a proxy that strips those headers.

use crate::remote_state;
use crate::support;

use remote_state::{sandbox_addresses, state_addresses, text, unique, wait_while_running, Runner};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// A secret access key that must never appear in any output.
const SECRET: &str = "s3-test-secret-9f2c41d7e0";

fn moto() -> Option<String> {
    support::server_url(
        "GPUFORM_TEST_MOTO_URL",
        "scripts/test.sh starts moto and sets it",
    )
}

/// A fresh bucket on moto.
fn bucket(moto: &str) -> String {
    let name = unique("state").to_lowercase();
    let st = curl()
        .args(["-fsS", "-o", "/dev/null", "-X", "PUT"])
        .arg(format!("{moto}/{name}"))
        .status()
        .unwrap();
    assert!(st.success(), "create bucket {name}");
    name
}

/// curl signing its request as moto's S3 wants (objects are private).
fn curl() -> Command {
    let mut c = Command::new("curl");
    c.args(["--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
        .arg(format!("AKIATESTGPUFORM:{SECRET}"));
    c
}

/// An object's body, if any.
fn object(moto: &str, bucket: &str, key: &str) -> Option<Vec<u8>> {
    let out = curl()
        .args(["-sS", "-w", "\n%{http_code}"])
        .arg(format!("{moto}/{bucket}/{key}"))
        .output()
        .unwrap();
    let mut body = out.stdout;
    let pos = body.iter().rposition(|b| *b == b'\n').unwrap();
    let code = String::from_utf8_lossy(&body[pos + 1..]).to_string();
    body.truncate(pos);
    (code == "200").then_some(body)
}

/// Keys under a prefix.
fn keys(moto: &str, bucket: &str, prefix: &str) -> Vec<String> {
    let out = curl()
        .args(["-fsS"])
        .arg(format!("{moto}/{bucket}?list-type=2&prefix={prefix}"))
        .output()
        .unwrap();
    let xml = String::from_utf8_lossy(&out.stdout);
    xml.split("<Key>")
        .skip(1)
        .filter_map(|s| s.split("</Key>").next().map(str::to_string))
        .collect()
}

fn state_url(moto: &str, bucket: &str) -> String {
    format!("s3://{bucket}/teams/ci?region=us-east-1&endpoint={moto}")
}

/// The AWS chain of a CI runner: keys in the environment, nothing else.
fn aws_env(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("GPUFORM_STATE_URL", url.to_string()),
        ("AWS_ACCESS_KEY_ID", "AKIATESTGPUFORM".into()),
        ("AWS_SECRET_ACCESS_KEY", SECRET.into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ("AWS_CONFIG_FILE", "/nonexistent/gpuform-test".into()),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/gpuform-test".into(),
        ),
    ]
}

fn runner(project: &str, nodes: u32, sandbox: &Path, url: &str) -> Runner {
    let env = aws_env(url);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Runner::new(project, nodes, sandbox, &env)
}

fn assert_no_secret(out: &Output) {
    let all = text(out);
    assert!(!all.contains(SECRET), "secret leaked:\n{all}");
}

fn prefix(project: &str) -> String {
    format!("teams/ci/{project}/default")
}

/// Two runs of one project against one bucket and one sandbox cloud, as
/// two machines of a team would be; with `lease_secs`, a lease that short.
struct Rivals {
    bucket: String,
    project: String,
    a: Runner,
    b: Runner,
    _sandbox: tempfile::TempDir,
}

impl Rivals {
    /// Starts `a`'s apply with `faults` and waits (a minute at most) until
    /// `ready`, while it runs.
    fn first_apply(&self, faults: &str, until: &str, ready: impl FnMut() -> bool) -> Child {
        let mut first = self.a.spawn_apply(faults);
        wait_while_running(&mut first, until, Duration::from_secs(60), ready);
        first
    }
}

fn rivals(moto: &str, name: &str, nodes: u32, lease_secs: Option<u32>) -> Rivals {
    let bucket = bucket(moto);
    let url = state_url(moto, &bucket);
    let project = unique(name);
    let sandbox = tempfile::tempdir().unwrap();
    let mut a = runner(&project, nodes, sandbox.path(), &url);
    let mut b = runner(&project, nodes, sandbox.path(), &url);
    a.lease = lease_secs;
    b.lease = lease_secs;
    Rivals {
        bucket,
        project,
        a,
        b,
        _sandbox: sandbox,
    }
}

fn lock_holder_pid(moto: &str, bucket: &str, project: &str) -> Option<i64> {
    let body = object(moto, bucket, &format!("{}.lock.json", prefix(project)))?;
    let lock: Value = serde_json::from_slice(&body).ok()?;
    lock["holder"]["pid"].as_i64()
}

fn journal_objects(moto: &str, bucket: &str, project: &str) -> usize {
    keys(moto, bucket, &format!("{}.journal/", prefix(project))).len()
}

#[test]
fn a_second_runner_is_refused_naming_the_holder_and_both_then_see_one_serial() {
    let Some(moto) = moto() else { return };
    let r = rivals(&moto, "s3-two", 4, None);
    let first = r.first_apply("latency=400ms", "the first apply's lock", || {
        lock_holder_pid(&moto, &r.bucket, &r.project).is_some()
    });
    assert_eq!(
        lock_holder_pid(&moto, &r.bucket, &r.project),
        Some(first.id() as i64)
    );
    let refused = r.b.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("is locked by"), "{err}");
    // The holder's details, not the caller's.
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    assert!(err.contains("lease until"), "{err}");
    assert_no_secret(&refused);
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_no_secret(&out);
    let (sa, sb) = (r.a.state(), r.b.state());
    assert_eq!(sa["serial"], sb["serial"]);
    assert_eq!(sa["lineage"], sb["lineage"]);
    assert_eq!(state_addresses(&sa), sandbox_addresses(&r.a));
    // The journal batches were folded into the state and deleted; the lock
    // is released (its generation kept).
    assert_eq!(journal_objects(&moto, &r.bucket, &r.project), 0);
    assert_eq!(lock_holder_pid(&moto, &r.bucket, &r.project), None);
    let again = r.b.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

/// Every write renews the lease on the way, so the lock is put to the test
/// while the holder writes nothing: a cloud call (here 6 s) longer than
/// its lease (2 s). Only the background renewal keeps it then, and a live
/// holder must never be taken over.
#[test]
fn a_live_holder_keeps_its_lock_through_a_call_longer_than_its_lease() {
    let Some(moto) = moto() else { return };
    let r = rivals(&moto, "s3-renew", 1, Some(2));
    let first = r.first_apply("latency=6s", "the first apply's lock", || {
        lock_holder_pid(&moto, &r.bucket, &r.project).is_some()
    });
    // Inside the first call, past the lease it took the lock with.
    std::thread::sleep(Duration::from_secs(4));
    let refused = r.b.run(&["apply", "spec.yaml", "--auto-approve"]);
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("is locked by"), "{said}");
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(state_addresses(&r.a.state()), sandbox_addresses(&r.a));
}

#[test]
fn kill_9_of_the_holder_frees_the_state_after_its_lease_and_what_it_made_is_adopted() {
    let Some(moto) = moto() else { return };
    let r = rivals(&moto, "s3-kill", 6, Some(2));
    // Some batches pushed, the apply not finished.
    let mut first = r.first_apply("latency=400ms", "journal batches in the bucket", || {
        journal_objects(&moto, &r.bucket, &r.project) >= 3
    });
    first.kill().unwrap(); // SIGKILL: no release, the lock object stays
    first.wait().unwrap();
    assert_eq!(
        lock_holder_pid(&moto, &r.bucket, &r.project),
        Some(first.id() as i64)
    );
    // Past the 2 s lease the dead holder's lock is taken over without force-unlock.
    std::thread::sleep(Duration::from_millis(2500));
    let start = Instant::now();
    let out = r.b.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_no_secret(&out);
    let state = r.b.state();
    assert_eq!(state_addresses(&state), sandbox_addresses(&r.b));
    assert_eq!(state_addresses(&state).len(), 6 * 2 + 3, "{state:#}");
    assert_eq!(journal_objects(&moto, &r.bucket, &r.project), 0);
    let again = r.a.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

/// A renewal whose PUT landed but whose answer never arrived (aborted as
/// the apply ended) leaves the holder with an old ETag: its release must
/// still free the lock, not leave it held for a whole lease (the next run
/// was refused by a dead holder). The lock object is rewritten mid-apply,
/// same holder and generation, as that renewal would have.
#[test]
fn a_release_after_a_renewal_whose_answer_was_lost_still_frees_the_lock() {
    let Some(moto) = moto() else { return };
    let r = rivals(&moto, "s3-release", 4, None);
    let first = r.first_apply("latency=300ms", "the first apply's lock", || {
        lock_holder_pid(&moto, &r.bucket, &r.project).is_some()
    });
    let key = format!("{}.lock.json", prefix(&r.project));
    let mut lock: Value =
        serde_json::from_slice(&object(&moto, &r.bucket, &key).expect("the lock")).unwrap();
    lock["expires_ms"] = Value::from(lock["expires_ms"].as_u64().unwrap() + 1);
    let st = curl()
        .args(["-fsS", "-o", "/dev/null", "-X", "PUT"])
        // (curl's default form type makes moto store an empty object)
        .args(["-H", "Content-Type: application/json", "--data-binary"])
        .arg(lock.to_string())
        .arg(format!("{moto}/{}/{key}", r.bucket))
        .status()
        .unwrap();
    assert!(st.success(), "rewrite the lock");
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let body = object(&moto, &r.bucket, &key).expect("the lock");
    let after: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&body)));
    assert!(after["holder"].is_null(), "the lock is still held: {after}");
    let next = r.b.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(next.status.code(), Some(0), "{}", text(&next));
}

#[test]
fn a_holder_paused_past_its_lease_is_fenced_when_it_resumes() {
    let Some(moto) = moto() else { return };
    let r = rivals(&moto, "s3-fence", 6, Some(2));
    let first = r.first_apply("latency=400ms", "journal batches in the bucket", || {
        journal_objects(&moto, &r.bucket, &r.project) >= 3
    });
    let pid = first.id() as libc::pid_t;
    support::stop_process(pid);
    std::thread::sleep(Duration::from_secs(3)); // past the 2 s lease, once stopped
    let out = r.b.run(&["apply", "spec.yaml", "--auto-approve"]);
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(out.status.success(), "the takeover failed: {}", text(&out));
    let after_b = r.b.state();
    let resumed = first.wait_with_output().unwrap();
    assert_eq!(resumed.status.code(), Some(1), "{}", text(&resumed));
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(err.contains("taken over"), "{err}");
    assert!(err.contains("journal"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_no_secret(&resumed);
    // The state is what the second apply wrote: the first wrote nothing after it.
    assert_eq!(r.b.state(), after_b);
    // Nothing lost: one more apply records or deletes whatever the resumed
    // process's in-flight call made.
    let fix = r.b.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(fix.status.success(), "{}", text(&fix));
    let state = r.b.state();
    assert_eq!(state_addresses(&state), sandbox_addresses(&r.b));
    assert_eq!(state_addresses(&state).len(), 6 * 2 + 3);
}

#[test]
fn state_moves_from_local_to_s3_and_back_and_another_lineage_is_refused() {
    let Some(moto) = moto() else { return };
    let bucket = bucket(&moto);
    let url = state_url(&moto, &bucket);
    let project = unique("s3-move");
    let sandbox = tempfile::tempdir().unwrap();
    let r = runner(&project, 1, sandbox.path(), &url);
    let local = |args: &[&str]| -> Output {
        r.cmd(args, "")
            .env_remove("GPUFORM_STATE_URL")
            .output()
            .unwrap()
    };
    let out = local(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    let file = r.dir.path().join(format!(".gpuform/{project}.state.json"));
    let local_doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let out = r.run(&["state", "push", "-f", "spec.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_no_secret(&out);
    let remote = r.state();
    assert_eq!(remote["lineage"], local_doc["lineage"]);
    assert_eq!(state_addresses(&remote), state_addresses(&local_doc));
    // The object in the bucket is the document.
    let stored: Value = serde_json::from_slice(
        &object(&moto, &bucket, &format!("{}.state.json", prefix(&project))).unwrap(),
    )
    .unwrap();
    assert_eq!(stored["lineage"], local_doc["lineage"]);
    let plan = r.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let out = r.run(&["state", "push", "-f", "spec.yaml"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("up to date"),
        "{}",
        text(&out)
    );
    // Another lineage in the local file is refused, and nothing changes.
    let mut other = local_doc.clone();
    other["lineage"] = Value::String("another-lineage".into());
    std::fs::write(&file, serde_json::to_vec(&other).unwrap()).unwrap();
    let before = r.state();
    let out = r.run(&["state", "push", "-f", "spec.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("different states"),
        "{}",
        text(&out)
    );
    assert_eq!(r.state(), before);
    let out = r.run(&["state", "pull", "-f", "spec.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("different states"),
        "{}",
        text(&out)
    );
    std::fs::remove_file(&file).unwrap();
    let out = r.run(&["state", "pull", "-f", "spec.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    let back: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(back["lineage"], before["lineage"]);
    assert_eq!(back["serial"], before["serial"]);
    let plan = local(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}

/// A TCP proxy in front of moto that drops `If-Match` and `If-None-Match`
/// from every request: an S3 API without conditional writes. One request
/// per connection (`Connection: close`).
fn unconditional_proxy(moto: &str) -> String {
    let upstream = moto.trim_start_matches("http://").to_string();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let mut out = String::new();
                for line in head.split("\r\n").filter(|l| !l.is_empty()) {
                    let lower = line.to_ascii_lowercase();
                    if lower.starts_with("if-match:")
                        || lower.starts_with("if-none-match:")
                        || lower.starts_with("connection:")
                    {
                        continue;
                    }
                    out.push_str(line);
                    out.push_str("\r\n");
                }
                out.push_str("Connection: close\r\n\r\n");
                let Ok(mut server) = TcpStream::connect(&upstream) else {
                    return;
                };
                server.write_all(out.as_bytes()).unwrap();
                let mut c2 = client.try_clone().unwrap();
                let mut s2 = server.try_clone().unwrap();
                let up = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                });
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(Shutdown::Both);
                let _ = server.shutdown(Shutdown::Both);
                let _ = up.join();
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn bad_buckets_and_credentials_are_clear_errors_that_write_nothing() {
    let Some(moto) = moto() else { return };
    let project = unique("s3-bad");
    let sandbox = tempfile::tempdir().unwrap();
    let bucket = bucket(&moto);
    let check = |url: &str, unset_keys: bool, want: &[&str]| {
        let r = runner(&project, 1, sandbox.path(), url);
        let mut c = r.cmd(&["apply", "spec.yaml", "--auto-approve"], "");
        if unset_keys {
            c.env_remove("AWS_ACCESS_KEY_ID")
                .env_remove("AWS_SECRET_ACCESS_KEY")
                .env_remove("AWS_PROFILE")
                .env_remove("AWS_SESSION_TOKEN")
                .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE")
                .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                .env_remove("AWS_CONTAINER_CREDENTIALS_FULL_URI");
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{url}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        for w in want {
            assert!(err.contains(w), "{url}: wanted `{w}` in:\n{err}");
        }
        assert!(err.contains("hint:"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_no_secret(&out);
        assert!(
            !r.dir.path().join(".gpuform").exists(),
            "{url}: wrote local files"
        );
        assert!(sandbox_addresses(&r).is_empty(), "{url}: made resources");
    };
    // A bucket that does not exist.
    check(
        &format!(
            "s3://no-such-bucket-{}/x?region=us-east-1&endpoint={moto}",
            std::process::id()
        ),
        false,
        &["NoSuchBucket", "create the bucket first"],
    );
    // No credentials anywhere in the chain.
    check(
        &state_url(&moto, &bucket),
        true,
        &["no AWS credentials found", "AWS_ACCESS_KEY_ID"],
    );
    // Not an S3 URL gpuform understands.
    check(
        &format!("s3://Bad_Bucket/x?endpoint={moto}"),
        false,
        &["not an S3 bucket name"],
    );
    // A server that ignores conditional writes: refused before anything is written.
    let proxy = unconditional_proxy(&moto);
    check(
        &format!("s3://{bucket}/teams/ci?region=us-east-1&endpoint={proxy}"),
        false,
        &["does not honour conditional writes", "If-None-Match"],
    );
    // Nothing was left in the bucket by any of them (the probe cleans up).
    assert_eq!(
        keys(&moto, &bucket, "").len(),
        0,
        "{:?}",
        keys(&moto, &bucket, "")
    );
}
