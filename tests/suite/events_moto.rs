//! `gpuform reconcile --events` against moto: EventBridge rules (as
//! `--print-event-rules` prints them) deliver an EC2 spot interruption
//! warning into an SQS queue; the reconciler, with an interval of an hour,
//! repairs the node at once, says which event it acted on, deletes the
//! message after the pass saved, and a reconciler killed (SIGKILL) at any
//! EC2 call of that repair is finished by the next one: exact resources, no
//! duplicates, the message gone, a clean plan. A warning that comes before
//! the loss (as EC2's does, two minutes ahead) is held, and the node is
//! repaired by a follow-up pass once it is gone.

use crate::e2e_aws_moto::{assert_exact_on_moto, crash_spec, gpuform, project, provider_in};
use crate::moto::{self, boto3_in, killing_proxy};
use crate::support;
use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A guard against a hang, never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);

fn moto_url() -> Option<String> {
    support::server_url(
        "GPUFORM_TEST_MOTO_URL",
        "scripts/test.sh starts moto and sets it",
    )
}

/// The rules' patterns as `gpuform reconcile --print-event-rules` prints
/// them for us-east-1.
fn printed_patterns(dir: &Path, account: &moto::Account) -> Vec<(String, String)> {
    let mut c = gpuform(dir, &["reconcile", "spec.yaml", "--print-event-rules"]);
    c.envs(account.env());
    let text = support::succeeded(&c.output().unwrap(), &["reconcile", "--print-event-rules"]);
    let rules: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("aws events put-rule --region us-east-1 --name "))
        .map(|rest| {
            let (name, pattern) = rest.split_once(" --event-pattern '").expect("a pattern");
            (name.to_string(), pattern.trim_end_matches('\'').to_string())
        })
        .collect();
    assert_eq!(rules.len(), 2, "{text}");
    rules
}

/// A queue with a short visibility timeout (a killed reader's message comes
/// back soon) and the printed rules targeting it; its URL.
fn make_queue(dir: &Path, account: &moto::Account) -> String {
    let rules = serde_json::to_string(&printed_patterns(dir, account)).unwrap();
    let out = boto3_in(
        account,
        "us-east-1",
        &format!(
            r#"
q = sqs.create_queue(QueueName='gpuform-events', Attributes={{'VisibilityTimeout': '2'}})['QueueUrl']
arn = sqs.get_queue_attributes(QueueUrl=q, AttributeNames=['QueueArn'])['Attributes']['QueueArn']
for name, pattern in json.loads({rules:?}):
    events.put_rule(Name=name, EventPattern=pattern)
    events.put_targets(Rule=name, Targets=[{{'Id': 'gpuform', 'Arn': arn}}])
print(json.dumps({{'url': q}}))
"#
        ),
    );
    out["url"].as_str().unwrap().to_string()
}

/// Terminates the instance behind gpuform's back and puts EC2's spot
/// interruption warning for it on the default bus.
fn reclaim_with_event(account: &moto::Account, id: &str) {
    terminate(account, id);
    warn(account, id);
}

fn terminate(account: &moto::Account, id: &str) {
    boto3_in(
        account,
        "us-east-1",
        &format!("ec2.terminate_instances(InstanceIds=['{id}'])\nprint('{{}}')"),
    );
}

/// EC2's spot interruption warning for the instance, on the default bus.
fn warn(account: &moto::Account, id: &str) {
    boto3_in(
        account,
        "us-east-1",
        &format!(
            r#"
r = events.put_events(Entries=[{{'Source': 'aws.ec2', 'DetailType': 'EC2 Spot Instance Interruption Warning',
    'Resources': ['arn:aws:ec2:us-east-1:123456789012:instance/{id}'],
    'Detail': json.dumps({{'instance-id': '{id}', 'instance-action': 'terminate'}})}}])
assert r['FailedEntryCount'] == 0, r
print('{{}}')
"#
        ),
    );
}

/// Messages in the queue, visible or received and not deleted.
fn queued(account: &moto::Account, url: &str) -> u64 {
    let v = boto3_in(
        account,
        "us-east-1",
        &format!(
            r#"
a = sqs.get_queue_attributes(QueueUrl='{url}', AttributeNames=['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'])['Attributes']
print(json.dumps(int(a['ApproximateNumberOfMessages']) + int(a['ApproximateNumberOfMessagesNotVisible'])))
"#
        ),
    );
    v.as_u64().unwrap()
}

fn wait_until_empty(account: &moto::Account, url: &str, ctx: &str) {
    let start = std::time::Instant::now();
    while queued(account, url) > 0 {
        assert!(
            start.elapsed() < PATIENCE,
            "{ctx}: the event is never deleted"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A running `gpuform reconcile --events`, its JSON log lines in a channel.
struct Reconciler {
    child: Child,
    lines: mpsc::Receiver<Value>,
}

impl Reconciler {
    fn start(dir: &Path, account: &moto::Account, queue: &str) -> Reconciler {
        let args = [
            "reconcile",
            "spec.yaml",
            "--events",
            queue,
            "--interval",
            "1h",
            "--log-format",
            "json",
        ];
        let mut c = gpuform(dir, &args);
        c.envs(account.env())
            .env("GPUFORM_AWS_SETTLE_MS", "0")
            .env("GPUFORM_AWS_LAUNCH_WAIT_MS", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().expect("start gpuform reconcile");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Reconciler { child, lines }
    }

    /// The next log object with `event` == `kind`; `None` when the process
    /// ended first.
    fn next(&self, kind: &str) -> Option<Value> {
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(v) if v["event"] == kind => {
                    eprintln!("{v}");
                    return Some(v);
                }
                // Shown with a failure.
                Ok(v) => eprintln!("{v}"),
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("no `{kind}` line in time"),
            }
        }
    }

    /// The next `repair` line of `address` (a pass logs its volume's too).
    fn repair_of(&self, address: &str) -> Option<Value> {
        loop {
            let v = self.next("repair")?;
            if v["address"] == address {
                return Some(v);
            }
        }
    }

    fn stop(mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the reconciler ended with {status:?}");
    }
}

fn node_id(dir: &Path, proj: &str, i: u32) -> String {
    let st: Value = serde_json::from_slice(
        &std::fs::read(dir.join(format!(".gpuform/{proj}.state.json"))).unwrap(),
    )
    .unwrap();
    st["resources"][format!("cluster.infer.node[{i}]")]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn node0_id(dir: &Path, proj: &str) -> String {
    node_id(dir, proj, 0)
}

fn clean_plan(dir: &Path, account: &moto::Account, ctx: &str) {
    let mut c = gpuform(dir, &["plan", "spec.yaml", "--detailed-exitcode"]);
    c.envs(account.env());
    let plan = c.output().unwrap();
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{ctx}: the next plan is not clean:\n{}",
        String::from_utf8_lossy(&plan.stdout)
    );
}

/// Applies the two-node spot spec (EC2 at `endpoint`) in a fresh account.
fn applied(endpoint: &str, name: &str) -> (tempfile::TempDir, moto::Account, String) {
    let account = moto::fresh_accounts(1).pop().unwrap();
    let proj = project(name);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), crash_spec(&proj, endpoint, 2)).unwrap();
    let args = ["apply", "spec.yaml", "--auto-approve", "-q"];
    let mut c = gpuform(dir.path(), &args);
    c.envs(account.env());
    support::succeeded(&c.output().unwrap(), &args);
    (dir, account, proj)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spot_interruption_event_starts_the_repair_at_once_and_is_deleted_after_the_save() {
    let Some(url) = moto_url() else { return };
    let (dir, account, proj) = applied(&url, "ev");
    let queue = make_queue(dir.path(), &account);
    let r = Reconciler::start(dir.path(), &account, &queue);
    let first = r.next("pass").expect("the first pass");
    assert_eq!(first["repairs"], 0, "{first}");

    let old = node0_id(dir.path(), &proj);
    reclaim_with_event(&account, &old);
    // The interval is an hour: only the event can start this pass.
    let event = r.next("event").expect("the event is read");
    assert_eq!(event["type"], "spot-interruption", "{event}");
    assert_eq!(event["instance_id"], old.as_str());
    assert_eq!(event["address"], "cluster.infer.node[0]");
    let repair = r
        .repair_of("cluster.infer.node[0]")
        .expect("the node's repair");
    assert_eq!(repair["address"], "cluster.infer.node[0]", "{repair}");
    assert_eq!(repair["cause"], "reclaimed", "{repair}");
    assert!(
        repair["result"].as_str().unwrap().starts_with("created i-"),
        "{repair}"
    );
    assert_eq!(repair["trigger"]["type"], "spot-interruption", "{repair}");
    assert_eq!(repair["trigger"]["instance_id"], old.as_str(), "{repair}");
    assert!(repair["trigger"]["event_time"].is_string(), "{repair}");
    assert!(repair["event_to_create_ms"].is_u64(), "{repair}");
    r.next("pass").expect("the pass ends");
    // Deleted after the save: the state records the new node by then.
    wait_until_empty(&account, &queue, "after the repair");
    assert_ne!(node0_id(dir.path(), &proj), old);

    // As on AWS, the warning comes two minutes before the instance goes: the
    // pass it starts finds node[1] running, and the message is held (not
    // deleted) while passes follow every few seconds; the one after the
    // termination repairs it, naming the warning, and then deletes it.
    let old1 = node_id(dir.path(), &proj, 1);
    warn(&account, &old1);
    r.next("event").expect("the warning is read");
    let pass = r.next("pass").expect("the warning's pass");
    assert_eq!(pass["repairs"], 0, "{pass}");
    assert_eq!(
        queued(&account, &queue),
        1,
        "the warning is held until handled"
    );
    terminate(&account, &old1);
    let repair = r
        .repair_of("cluster.infer.node[1]")
        .expect("the node's repair");
    assert_eq!(repair["trigger"]["instance_id"], old1.as_str(), "{repair}");
    r.next("pass").expect("the pass ends");
    wait_until_empty(&account, &queue, "after the warned node's repair");
    r.stop();

    let p = provider_in(&account).await;
    assert_exact_on_moto(&p, dir.path(), &proj, Some(2), "after the event").await;
    clean_plan(dir.path(), &account, "after the event");
}

/// Kills the reconciler (SIGKILL) right after each EC2 call N of the pass an
/// event started has reached moto; a second reconciler finishes the repair
/// and deletes the message that comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciler_killed_at_any_call_of_an_event_repair_is_finished_by_the_next() {
    let Some(url) = moto_url() else { return };
    let proxy = killing_proxy::Proxy::start(&url);
    for n in 1u64.. {
        assert!(n < 100, "runaway");
        let ctx = format!("killed after call {n}");
        proxy.arm(0);
        let (dir, account, proj) = applied(&proxy.url, &format!("evk{n}"));
        let queue = make_queue(dir.path(), &account);
        let a = Reconciler::start(dir.path(), &account, &queue);
        a.next("pass").expect("the first pass");
        proxy.arm(n);
        proxy.set_victim(a.child.id());
        let old = node0_id(dir.path(), &proj);
        reclaim_with_event(&account, &old);
        a.next("event").expect("the event is read");
        // Either the pass ends (N was past its last call) or A dies.
        let finished = a.next("pass").is_some();
        if finished {
            a.stop();
            proxy.arm(0);
            wait_until_empty(&account, &queue, &ctx);
            eprintln!("the event's pass made {} EC2 calls", n - 1);
            break;
        }
        let mut a = a;
        let status = a.child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "{ctx}: {status:?}");
        proxy.arm(0);
        // The message A held comes back after the visibility timeout; B's
        // first pass has finished the repair by then, so it is deleted.
        let b = Reconciler::start(dir.path(), &account, &queue);
        b.next("pass").expect("B's first pass");
        wait_until_empty(&account, &queue, &ctx);
        b.stop();
        let p = provider_in(&account).await;
        assert_exact_on_moto(&p, dir.path(), &proj, Some(2), &ctx).await;
        clean_plan(dir.path(), &account, &ctx);
    }
}
