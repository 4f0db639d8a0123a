//! What the moto end-to-end tests share: moto's URL (scripts/moto.sh;
//! `scripts/test.sh` sets GPUFORM_TEST_MOTO_URL) and boto3 from moto's
//! virtualenv, the other client that looks at what gpuform made (never
//! gpuform's own SDK client: an oracle does not reuse the code under test).
#![allow(dead_code)]

pub mod capacity;
pub mod killing_proxy;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn moto_url() -> String {
    std::env::var("GPUFORM_TEST_MOTO_URL").unwrap_or_else(|_| {
        panic!("GPUFORM_TEST_MOTO_URL is not set: start moto with `scripts/moto.sh` (or run `scripts/test.sh`)")
    })
}

/// moto's virtualenv python (with boto3), as scripts/moto.sh makes it.
pub fn python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-moto/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/moto.sh",
        p.display()
    );
    p
}

/// Runs a boto3 script against moto in `region` with `ec2` and `s3` bound
/// to EC2 and S3 clients; the script prints JSON, which is returned.
///
/// The scripts run in one long-lived python per test process: a python
/// start with boto3 and its service models costs 0.6 to 1 s of CPU, and the
/// kill loops look at moto after every run, hundreds of times.
pub fn boto3(region: &str, script: &str) -> Value {
    run_boto3(None, region, script)
}

/// [`boto3`] with clients signed by `account`'s keys: the script sees that
/// account's cloud only.
pub fn boto3_in(account: &Account, region: &str, script: &str) -> Value {
    run_boto3(Some(account), region, script)
}

fn run_boto3(account: Option<&Account>, region: &str, script: &str) -> Value {
    let mut worker = BOTO3.lock().unwrap_or_else(|e| e.into_inner());
    let w = worker.get_or_insert_with(Boto3Worker::start);
    let keys = account.map(|a| [&a.access_key_id, &a.secret_access_key, &a.session_token]);
    let request =
        serde_json::json!({"region": region, "url": moto_url(), "keys": keys, "script": script});
    let answer: Value = w.ask(&request);
    drop(worker);
    match answer.get("printed").and_then(Value::as_str) {
        Some(out) => serde_json::from_str(out)
            .unwrap_or_else(|e| panic!("boto3 script printed no JSON ({e}):\n{out}")),
        None => panic!(
            "boto3 script failed:\n{}",
            answer["error"].as_str().unwrap_or("?")
        ),
    }
}

static BOTO3: std::sync::Mutex<Option<Boto3Worker>> = std::sync::Mutex::new(None);

/// Reads one JSON request a line, runs its script with fresh globals (and
/// the clients it names, made once per region and keys; moto's default
/// account when the request has none), and answers one JSON line with what
/// the script printed or the traceback.
const BOTO3_WORKER: &str = r#"
import boto3, contextlib, io, json, sys, traceback
clients = {}
def client(service, region, url, keys):
    keys = tuple(keys or ('testing', 'testing', None))
    key = (service, region, url, keys)
    if key not in clients:
        clients[key] = boto3.client(service, region_name=region, endpoint_url=url,
                                    aws_access_key_id=keys[0], aws_secret_access_key=keys[1],
                                    aws_session_token=keys[2])
    return clients[key]
for line in sys.stdin:
    req = json.loads(line)
    env = {'boto3': boto3, 'json': json}
    printed = io.StringIO()
    try:
        for service in ('ec2', 's3', 'sqs', 'events'):
            if service + '.' in req['script']:
                env[service] = client(service, req['region'], req['url'], req['keys'])
        with contextlib.redirect_stdout(printed):
            exec(req['script'], env)
        answer = {'printed': printed.getvalue()}
    except BaseException:
        answer = {'error': traceback.format_exc()}
    print(json.dumps(answer), flush=True)
"#;

struct Boto3Worker {
    _child: std::process::Child,
    to: std::process::ChildStdin,
    from: std::io::BufReader<std::process::ChildStdout>,
}

impl Boto3Worker {
    fn start() -> Boto3Worker {
        use std::process::Stdio;
        let mut child = Command::new(python())
            .arg("-c")
            .arg(BOTO3_WORKER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start python");
        Boto3Worker {
            to: child.stdin.take().expect("stdin"),
            from: std::io::BufReader::new(child.stdout.take().expect("stdout")),
            _child: child,
        }
    }

    fn ask(&mut self, request: &Value) -> Value {
        use std::io::{BufRead, Write};
        writeln!(self.to, "{request}").expect("write to the boto3 worker");
        let mut line = String::new();
        self.from
            .read_line(&mut line)
            .expect("read from the boto3 worker");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the boto3 worker answered no JSON ({e}): {line:?} (an exit prints its error on stderr)"))
    }
}

/// One moto account: the keys of a role assumed in it. moto keeps a cloud
/// per account, so a loop that makes a project per iteration can give each
/// its own account and keep every Describe as small as the first (in one
/// account, moto's filtered Describes grow with everything ever made there:
/// about 0.7 s each once 100 instances were launched).
pub struct Account {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
}

impl Account {
    /// The variables a gpuform process reads these keys from.
    pub fn env(&self) -> [(&'static str, &str); 3] {
        [
            ("AWS_ACCESS_KEY_ID", self.access_key_id.as_str()),
            ("AWS_SECRET_ACCESS_KEY", self.secret_access_key.as_str()),
            ("AWS_SESSION_TOKEN", self.session_token.as_str()),
        ]
    }
}

/// Fresh accounts, `count` of them, that no other process of this run uses:
/// 12-digit ids from this process's id and a per-process counter, each with
/// a role assumed through moto's STS (one boto3 script per batch).
pub fn fresh_accounts(count: usize) -> Vec<Account> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let first = NEXT.fetch_add(count as u64, Ordering::SeqCst);
    let ids: Vec<String> = (first..first + count as u64)
        .map(|i| format!("9{:05}{:06}", std::process::id() % 100_000, i))
        .collect();
    let script = format!(
        "sts = boto3.client('sts', region_name='us-east-1', endpoint_url='{url}', aws_access_key_id='testing', aws_secret_access_key='testing')\n\
         out = []\n\
         for a in {ids:?}:\n    \
             c = sts.assume_role(RoleArn=f'arn:aws:iam::{{a}}:role/gpuform-test', RoleSessionName='gpuform-test')['Credentials']\n    \
             out.append([c['AccessKeyId'], c['SecretAccessKey'], c['SessionToken']])\n\
         print(json.dumps(out))\n",
        url = moto_url()
    );
    let v = boto3("us-east-1", &script);
    v.as_array()
        .expect("a list of accounts")
        .iter()
        .map(|a| {
            let f = |i: usize| a[i].as_str().expect("text").to_string();
            Account {
                access_key_id: f(0),
                secret_access_key: f(1),
                session_token: f(2),
            }
        })
        .collect()
}

/// An endless supply of [`fresh_accounts`], fetched 16 at a time.
pub fn accounts() -> impl Iterator<Item = Account> {
    std::iter::repeat_with(|| fresh_accounts(16)).flatten()
}
