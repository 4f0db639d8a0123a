//! The PostgreSQL state backend against a real PostgreSQL server (started
//! by `scripts/postgres.sh` unless `GPUFORM_TEST_PG_URL` names one), with
//! the gpuform binary run from different working directories sharing one
//! sandbox cloud (`GPUFORM_SANDBOX_DIR`), as two CI runners would.

use crate::remote_state;
use crate::support;

use remote_state::{
    sandbox_addresses, state_addresses, text, unique, wait_until, wait_while_running, Runner,
};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The server's URL with its password, and the same without it (tests pass
/// the password through PGPASSWORD, as users do).
fn server() -> &'static (String, String, String) {
    static URL: OnceLock<(String, String, String)> = OnceLock::new();
    URL.get_or_init(|| {
        let url = std::env::var("GPUFORM_TEST_PG_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| {
                let root = Path::new(env!("CARGO_MANIFEST_DIR"));
                let out = Command::new(root.join("scripts/postgres.sh"))
                    .stderr(Stdio::inherit())
                    .output()
                    .expect("run scripts/postgres.sh");
                assert!(out.status.success(), "scripts/postgres.sh failed");
                String::from_utf8(out.stdout).unwrap().trim().to_string()
            });
        // postgres://user:password@host:port/db
        let rest = url.split_once("://").unwrap().1;
        let (userinfo, hostpart) = rest.split_once('@').expect("URL with user:password@");
        let (user, password) = userinfo.split_once(':').expect("URL with a password");
        (
            url.clone(),
            format!("postgres://{user}@{hostpart}"),
            password.to_string(),
        )
    })
}

/// A runner whose state is on the test server, the password in PGPASSWORD.
fn runner(project: &str, nodes: u32, sandbox: &Path) -> Runner {
    let (_, url, password) = server();
    Runner::new(
        project,
        nodes,
        sandbox,
        &[
            ("GPUFORM_STATE_URL", url.as_str()),
            ("PGPASSWORD", password.as_str()),
        ],
    )
}

fn assert_no_password(out: &Output) {
    let (_, _, password) = server();
    let all = text(out);
    assert!(!all.contains(password.as_str()), "password leaked:\n{all}");
}

/// Runs SQL against the test server (the test's own view of the tables).
fn sql(query: &str, name: &str) -> Vec<tokio_postgres::Row> {
    let (url, _, _) = server();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        // Before the first apply the tables may not exist yet: no rows.
        match client.query(query, &[&name]).await {
            Ok(rows) => rows,
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => vec![],
            Err(e) => panic!("{query}: {e:?}"),
        }
    })
}

fn lock_holder_pid(name: &str) -> Option<i64> {
    sql(
        "SELECT (info->>'pid')::bigint FROM gpuform.locks WHERE name = $1 AND lock_id IS NOT NULL",
        name,
    )
    .first()
    .and_then(|r| r.get::<_, Option<i64>>(0))
}

fn journal_lines(name: &str) -> i64 {
    sql("SELECT count(*) FROM gpuform.journal WHERE name = $1", name)
        .first()
        .map(|r| r.get::<_, i64>(0))
        .unwrap_or(0)
}

#[test]
fn a_second_runner_is_refused_naming_the_holder_and_both_then_see_one_serial() {
    let project = unique("pg-two");
    let sandbox = tempfile::tempdir().unwrap();
    let a = runner(&project, 4, sandbox.path());
    let b = runner(&project, 4, sandbox.path());
    let mut first = a.spawn_apply("latency=400ms");
    wait_while_running(
        &mut first,
        "the first apply's lock",
        Duration::from_secs(30),
        || lock_holder_pid(format!("{project}/default").as_str()).is_some(),
    );
    assert_eq!(
        lock_holder_pid(format!("{project}/default").as_str()),
        Some(first.id() as i64)
    );
    let refused = b.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("is locked by"), "{err}");
    // The holder's details, not the caller's.
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    assert!(err.contains("lease until"), "{err}");
    assert_no_password(&refused);
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_no_password(&out);
    let (sa, sb) = (a.state(), b.state());
    assert_eq!(sa["serial"], sb["serial"]);
    assert_eq!(sa["lineage"], sb["lineage"]);
    assert_eq!(state_addresses(&sa), sandbox_addresses(&a));
    // The journal was folded into the state and cleared.
    assert_eq!(journal_lines(format!("{project}/default").as_str()), 0);
    // Now the other runner gets the lock and finds nothing to do.
    let again = b.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

#[test]
fn kill_9_of_the_holder_frees_the_state_at_once_and_what_it_made_is_adopted() {
    let project = unique("pg-kill");
    let sandbox = tempfile::tempdir().unwrap();
    let a = runner(&project, 6, sandbox.path());
    let b = runner(&project, 6, sandbox.path());
    let mut first = a.spawn_apply("latency=400ms");
    // Some results pushed, the apply not finished.
    wait_until(
        "journal batches in the database",
        Duration::from_secs(60),
        || journal_lines(format!("{project}/default").as_str()) >= 6,
    );
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    // The default lease is 60 s: proceeding now proves the session lock freed it.
    let start = Instant::now();
    let out = b.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(start.elapsed() < Duration::from_secs(30));
    let state = b.state();
    assert_eq!(state_addresses(&state), sandbox_addresses(&b));
    assert_eq!(state_addresses(&state).len(), 6 * 2 + 3, "{state:#}");
    let again = a.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

#[test]
fn a_holder_paused_past_its_lease_is_fenced_when_it_resumes() {
    let project = unique("pg-fence");
    let sandbox = tempfile::tempdir().unwrap();
    let mut a = runner(&project, 6, sandbox.path());
    let mut b = runner(&project, 6, sandbox.path());
    a.lease = Some(2);
    b.lease = Some(2);
    let first = a.spawn_apply("latency=400ms");
    wait_until(
        "journal batches in the database",
        Duration::from_secs(60),
        || journal_lines(format!("{project}/default").as_str()) >= 4,
    );
    let pid = first.id() as libc::pid_t;
    support::stop_process(pid);
    std::thread::sleep(Duration::from_secs(3)); // past the 2 s lease, once stopped
    let out = b.run(&["apply", "spec.yaml", "--auto-approve"]);
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(out.status.success(), "the takeover failed: {}", text(&out));
    let after_b = b.state();
    let resumed = first.wait_with_output().unwrap();
    assert_eq!(resumed.status.code(), Some(1), "{}", text(&resumed));
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(err.contains("taken over"), "{err}");
    assert!(err.contains("journal"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The state is what the second apply wrote: the first wrote nothing after it.
    assert_eq!(b.state(), after_b);
    // Nothing lost: every resource is recorded or found again; one more
    // apply deletes any duplicate the resumed process's in-flight call made.
    let fix = b.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(fix.status.success(), "{}", text(&fix));
    let state = b.state();
    assert_eq!(state_addresses(&state), sandbox_addresses(&b));
    assert_eq!(state_addresses(&state).len(), 6 * 2 + 3);
}

#[test]
fn bad_urls_and_passwords_are_clear_errors_that_write_nothing() {
    let project = unique("pg-bad");
    let sandbox = tempfile::tempdir().unwrap();
    let r = runner(&project, 1, sandbox.path());
    let (_, url, _) = server();
    // Wrong password.
    let out = r
        .cmd(&["plan", "spec.yaml"], "")
        .env("PGPASSWORD", "not-the-password")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("password"), "{err}");
    assert!(
        err.contains("hint: check the password of user `gpuform`"),
        "{err}"
    );
    assert!(!err.contains("not-the-password"), "{err}");
    // Not a backend URL; a password in the URL is redacted from the error.
    let out = r
        .cmd(&["plan", "spec.yaml"], "")
        .env("GPUFORM_STATE_URL", "mysql://u:topsecret@h/db")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a state backend URL"), "{err}");
    assert!(!err.contains("topsecret"), "{err}");
    // Nobody listening.
    let port_url = url.rsplit_once(':').unwrap().0.to_string() + ":1/gpuform";
    let out = r
        .cmd(&["apply", "spec.yaml", "--auto-approve"], "")
        .env("GPUFORM_STATE_URL", &port_url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is the database running"), "{err}");
    assert!(!r.dir.path().join(".gpuform").exists());
    assert!(sandbox_addresses(&r).is_empty());
}

#[test]
fn sslmode_require_against_a_server_without_tls_is_a_clear_error() {
    let project = unique("pg-tls");
    let sandbox = tempfile::tempdir().unwrap();
    let r = runner(&project, 1, sandbox.path());
    let (_, url, _) = server();
    let sep = if url.contains('?') { '&' } else { '?' };
    // The local test server runs without TLS (initdb's default).
    let out = r
        .cmd(&["apply", "spec.yaml", "--auto-approve"], "")
        .env("GPUFORM_STATE_URL", format!("{url}{sep}sslmode=require"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not support TLS"), "{err}");
    assert!(
        err.contains("hint: the server does not accept TLS"),
        "{err}"
    );
    assert!(err.contains("sslmode=prefer"), "{err}");
    assert_no_password(&out);
    assert!(!r.dir.path().join(".gpuform").exists());
    assert!(sandbox_addresses(&r).is_empty());
    // A mode libpq does not know: refused before any connection.
    let out = r
        .cmd(&["plan", "spec.yaml"], "")
        .env("GPUFORM_STATE_URL", format!("{url}{sep}sslmode=always"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sslmode `always` is not one of"),
        "{}",
        text(&out)
    );
    // `prefer` (the default) falls back to plain TCP and works.
    let out = r
        .cmd(&["plan", "spec.yaml"], "")
        .env("GPUFORM_STATE_URL", format!("{url}{sep}sslmode=prefer"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// A server of this test's own (it is stopped and started), with its data
/// directory; stopped when dropped.
struct OwnServer {
    url: String,
    data: String,
}

fn pg_ctl(data: &str, action: &str) {
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .map(|e| e.unwrap().path().join("bin/pg_ctl"))
        .find(|p| p.exists())
        .expect("pg_ctl");
    let log = Path::new(data).parent().unwrap().join("server.log");
    let st = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(bin)
        .args(["-D", data, "-l"])
        .arg(log)
        .args(["-w", "-m", "immediate", action])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "pg_ctl {action}");
}

impl OwnServer {
    fn start() -> OwnServer {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let info = tempfile::NamedTempFile::new().unwrap();
        let out = Command::new(root.join("scripts/postgres.sh"))
            .env("GPUFORM_PG_DATADIR_FILE", info.path())
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "scripts/postgres.sh failed");
        OwnServer {
            url: String::from_utf8(out.stdout).unwrap().trim().to_string(),
            data: std::fs::read_to_string(info.path())
                .unwrap()
                .trim()
                .to_string(),
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        pg_ctl(&self.data, "stop");
        if let Some(dir) = Path::new(&self.data).parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn a_database_stopped_mid_apply_loses_nothing_and_the_push_duplicates_nothing() {
    let project = unique("pg-down");
    let own = OwnServer::start();
    let sandbox = tempfile::tempdir().unwrap();
    let r = runner(&project, 6, sandbox.path());
    let run = |args: &[&str], faults: &str| -> Command {
        let mut c = r.cmd(args, faults);
        c.env("GPUFORM_STATE_URL", &own.url)
            .env_remove("PGPASSWORD");
        c
    };
    let apply = run(&["apply", "spec.yaml", "--auto-approve"], "latency=400ms")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first results in the database, then stop it.
    let count = || -> i64 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let Ok((client, conn)) = tokio_postgres::connect(&own.url, tokio_postgres::NoTls).await
            else {
                return 0;
            };
            tokio::spawn(conn);
            client
                .query_one("SELECT count(*) FROM gpuform.journal", &[])
                .await
                .map(|r| r.get::<_, i64>(0))
                .unwrap_or(0)
        })
    };
    wait_until(
        "journal batches in the database",
        Duration::from_secs(60),
        || count() >= 4,
    );
    pg_ctl(&own.data, "stop");
    let out = apply.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kept in the local journal"), "{err}");
    assert!(err.contains("gpuform state push"), "{err}");
    assert!(
        !err.contains(own.url.split([':', '@']).nth(2).unwrap()),
        "password leaked: {err}"
    );
    let journal = r
        .dir
        .path()
        .join(format!(".gpuform/{project}.state.json.journal"));
    assert!(journal.exists(), "the local journal is kept");
    let made = sandbox_addresses(&r);
    assert!(!made.is_empty());
    // Back up: the push folds the local journal into the remote state.
    pg_ctl(&own.data, "start");
    let push = run(&["state", "push", "-f", "spec.yaml"], "")
        .output()
        .unwrap();
    assert!(push.status.success(), "{}", text(&push));
    assert!(String::from_utf8_lossy(&push.stdout).contains("journal of an interrupted apply"));
    assert!(!journal.exists());
    let shown = run(&["show", "-f", "spec.yaml", "--json"], "")
        .output()
        .unwrap();
    let state: Value = serde_json::from_slice(&shown.stdout).unwrap();
    // Everything the stopped apply made is recorded (nothing lost).
    assert_eq!(state_addresses(&state), made);
    // The next apply finishes the job; nothing is made twice.
    let fin = run(&["apply", "spec.yaml", "--auto-approve"], "")
        .output()
        .unwrap();
    assert!(fin.status.success(), "{}", text(&fin));
    let shown = run(&["show", "-f", "spec.yaml", "--json"], "")
        .output()
        .unwrap();
    let state: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(state_addresses(&state), sandbox_addresses(&r));
    assert_eq!(state_addresses(&state).len(), 6 * 2 + 3);
}

#[test]
fn state_moves_from_local_to_postgres_and_back_and_another_lineage_is_refused() {
    let project = unique("pg-move");
    let sandbox = tempfile::tempdir().unwrap();
    let r = runner(&project, 1, sandbox.path());
    let local = |args: &[&str]| -> Output {
        r.cmd(args, "")
            .env_remove("GPUFORM_STATE_URL")
            .output()
            .unwrap()
    };
    // A local state first.
    let out = local(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    let file = r.dir.path().join(format!(".gpuform/{project}.state.json"));
    let local_doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    // Push: the remote state now has its lineage and resources.
    let out = r.run(&["state", "push", "-f", "spec.yaml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("the local state"),
        "{}",
        text(&out)
    );
    assert_no_password(&out);
    let remote = r.state();
    assert_eq!(remote["lineage"], local_doc["lineage"]);
    assert_eq!(state_addresses(&remote), state_addresses(&local_doc));
    // Applying against the remote state changes nothing.
    let plan = r.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    // Pushing again is a no-op; a newer remote is not overwritten by an older local.
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
    // Pull refuses to overwrite it too, then works once the file is moved away.
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

/// The crash-at-every-call loop of tests/suite/e2e_sandbox.rs, once, with the
/// state in PostgreSQL: gpuform aborts at API call N of a create, and the
/// next apply (from another working directory: nothing local survives)
/// leaves exactly the desired resources, each recorded once.
#[test]
fn a_crash_at_any_api_call_with_postgres_state_then_apply_leaves_exactly_the_desired_resources() {
    let mut crashed = false;
    for n in 1.. {
        let project = unique("pg-crash");
        let sandbox = tempfile::tempdir().unwrap();
        let a = runner(&project, 2, sandbox.path());
        let b = runner(&project, 2, sandbox.path());
        let out = a
            .cmd(
                &["apply", "spec.yaml", "--auto-approve"],
                &format!("crash_after={n}"),
            )
            .output()
            .unwrap();
        if out.status.success() {
            assert!(crashed, "crash injection never fired");
            break;
        }
        assert!(
            out.status.code().is_none(),
            "N={n}: expected an abort: {}",
            text(&out)
        );
        crashed = true;
        let out = b.run(&["apply", "spec.yaml", "--auto-approve"]);
        assert!(
            out.status.success(),
            "N={n}: re-apply failed: {}",
            text(&out)
        );
        let state = b.state();
        assert_eq!(state_addresses(&state), sandbox_addresses(&b), "N={n}");
        assert_eq!(state_addresses(&state).len(), 2 * 2 + 3, "N={n}: {state:#}");
        let again = b.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
        assert_eq!(again.status.code(), Some(0), "N={n}: {}", text(&again));
        assert!(n < 100, "no end to the calls");
    }
}

/// Addresses of `remote_state::spec(_, nodes)`: one cluster, a data volume per node.
fn trainer_addresses(nodes: u32) -> std::collections::BTreeSet<String> {
    let mut out: std::collections::BTreeSet<String> = [
        "cluster.trainer.network",
        "cluster.trainer.subnet[us-east-1a]",
        "cluster.trainer.firewall",
    ]
    .map(String::from)
    .into();
    for i in 0..nodes {
        out.insert(format!("cluster.trainer.node[{i}]"));
        out.insert(format!("cluster.trainer.volume[{i}]"));
    }
    out
}

#[test]
fn two_reconcilers_on_one_postgres_state_never_repair_a_node_twice() {
    let project = unique("pg-rec");
    let sandbox = tempfile::tempdir().unwrap();
    let a = runner(&project, 3, sandbox.path());
    let b = runner(&project, 3, sandbox.path());
    let out = a.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    for node in ["cluster.trainer.node[0]", "cluster.trainer.node[2]"] {
        let out = a.run(&["sandbox", "delete", node, "-f", "spec.yaml"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    // Both at once, each a different runner (working directory).
    let once = ["reconcile", "spec.yaml", "--once", "--detailed-exitcode"];
    let spawn = |r: &Runner| {
        r.cmd(&once, "latency=20ms")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (ca, cb) = (spawn(&a), spawn(&b));
    let (oa, ob) = (
        ca.wait_with_output().unwrap(),
        cb.wait_with_output().unwrap(),
    );
    let codes = (oa.status.code(), ob.status.code());
    assert!(
        matches!(codes, (Some(2), Some(0)) | (Some(0), Some(2))),
        "exactly one of them repairs:\n{}\n{}",
        text(&oa),
        text(&ob)
    );
    let repairs = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .matches("repair: create")
            .count()
    };
    assert_eq!(
        repairs(&oa) + repairs(&ob),
        2,
        "{}\n{}",
        text(&oa),
        text(&ob)
    );
    // One resource per address in the cloud (sandbox_addresses panics on a
    // duplicate), and the state records exactly those.
    assert_eq!(sandbox_addresses(&a), trainer_addresses(3));
    assert_eq!(state_addresses(&a.state()), trainer_addresses(3));
    let plan = a.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}

#[test]
fn a_standby_reconciler_finishes_what_a_killed_one_started() {
    let project = unique("pg-standby");
    let sandbox = tempfile::tempdir().unwrap();
    let mut a = runner(&project, 4, sandbox.path());
    let mut b = runner(&project, 4, sandbox.path());
    a.lease = Some(2);
    b.lease = Some(2);
    let out = a.run(&["apply", "spec.yaml", "--auto-approve"]);
    assert!(out.status.success(), "{}", text(&out));
    for i in 0..4 {
        let node = format!("cluster.trainer.node[{i}]");
        let out = a.run(&["sandbox", "delete", &node, "-f", "spec.yaml"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    // The first reconciler repairs slowly (400 ms a call) and is killed -9
    // while it holds the lock, mid-repair.
    let mut first = a
        .cmd(
            &["reconcile", "spec.yaml", "--interval", "1s"],
            "latency=400ms",
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let name = format!("{project}/default");
    wait_while_running(
        &mut first,
        "the reconciler's journal in the database",
        Duration::from_secs(60),
        || journal_lines(&name) >= 1 && lock_holder_pid(&name).is_some(),
    );
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    // The second finishes the repair: exactly the spec, nothing twice.
    let out = b.run(&["reconcile", "spec.yaml", "--once"]);
    assert!(out.status.success(), "the standby failed: {}", text(&out));
    assert_eq!(sandbox_addresses(&b), trainer_addresses(4));
    assert_eq!(state_addresses(&b.state()), trainer_addresses(4));
    let plan = b.run(&["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}
