//! End to end on AWS, against moto's EC2 server over HTTP (see
//! scripts/moto.sh; `scripts/test.sh` starts it and sets
//! GPUFORM_TEST_MOTO_URL). The gpuform binary does the work; the test looks
//! at the cloud through the AWS provider (the real SDK), as another client.

use crate::moto;
use crate::support;

use moto::{boto3, killing_proxy, moto_url};

use gpuform_aws::AwsProvider;
use gpuform_provider::{ObservedResource, Provider, ResourceKind, Scope};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// A spec on AWS that moto can serve: images moto ships, no placement groups.
fn spec(project: &str, nodes: u32) -> String {
    format!(
        "project: {project}\nendpoints:\n  aws: {url}\nclusters:\n  infer:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a]\n    nodes: {nodes}\n    gpu: T4\n    pricing: spot\n    image: amazon-linux-2023\n    disk:\n      root_gb: 100\n      data_gb: 50\n  train:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: A100-40GB:8\n    fabric: rdma\n    image: amazon-linux-2023\n",
        url = moto_url()
    )
}

pub(crate) fn gpuform(dir: &Path, args: &[&str]) -> Command {
    let mut c = support::gpuform_cmd(dir, args);
    c.env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env_remove("AWS_ENDPOINT_URL");
    c
}

fn run(dir: &Path, args: &[&str]) -> Output {
    gpuform(dir, args).output().expect("run gpuform")
}

fn ok(dir: &Path, args: &[&str]) -> String {
    succeeded(gpuform(dir, args), args)
}

/// Runs `cmd` (gpuform with `args`) and asserts it succeeded; its stdout.
fn succeeded(mut cmd: Command, args: &[&str]) -> String {
    support::succeeded(&cmd.output().expect("run gpuform"), args)
}

/// The AWS provider as moto's default account. Keys are passed, never set in
/// this process's environment: every test of the suite shares it, and the
/// gpuform processes they start inherit it.
async fn provider() -> AwsProvider {
    AwsProvider::from_keys(Some(moto_url()), "testing", "testing", None)
        .await
        .expect("aws provider")
        .with_placement_groups(false)
}

/// The AWS provider as another client of one moto account.
pub(crate) async fn provider_in(a: &moto::Account) -> AwsProvider {
    AwsProvider::from_keys(
        Some(moto_url()),
        &a.access_key_id,
        &a.secret_access_key,
        Some(&a.session_token),
    )
    .await
    .expect("aws provider")
    .with_placement_groups(false)
}

/// Everything tagged with the project, by address (asserting no duplicates).
async fn owned(p: &AwsProvider, project: &str) -> BTreeMap<String, ObservedResource> {
    let all = p
        .list_owned(
            &Scope {
                region: "us-east-1".into(),
            },
            project,
        )
        .await
        .expect("list_owned");
    let mut out = BTreeMap::new();
    for o in all {
        let addr = o
            .ownership
            .as_ref()
            .expect("ownership tags")
            .address
            .to_string();
        if let Some(prev) = out.insert(addr.clone(), o.clone()) {
            panic!("duplicate resources for {addr}: {} and {}", prev.id, o.id);
        }
    }
    out
}

fn state_ids(dir: &Path, project: &str) -> BTreeMap<String, String> {
    let st: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(format!(".gpuform/{project}.state.json"))).unwrap(),
    )
    .unwrap();
    st["resources"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(a, r)| (a.clone(), r["id"].as_str().unwrap().to_string()))
        .collect()
}

pub(crate) fn project(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_apply_drift_scale_destroy_on_moto() {
    let p = provider().await;
    let proj = project("e2e");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec(&proj, 2)).unwrap();

    ok(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
    let live = owned(&p, &proj).await;
    let nodes: Vec<&String> = live.keys().filter(|a| a.contains(".node[")).collect();
    assert_eq!(nodes.len(), 3, "{live:#?}");
    let ids = state_ids(dir.path(), &proj);
    for (addr, id) in &ids {
        assert_eq!(
            live.get(addr).map(|o| &o.id),
            Some(id),
            "state id of {addr} is real"
        );
    }
    let plan = run(dir.path(), &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "apply then plan: no changes\n{}",
        String::from_utf8_lossy(&plan.stdout)
    );

    // Another client terminates a node: drift, re-created by the next apply.
    let victim = &live["cluster.infer.node[1]"];
    p.delete(
        &Scope {
            region: "us-east-1".into(),
        },
        ResourceKind::Instance,
        &victim.id,
    )
    .await
    .unwrap();
    let plan = ok(dir.path(), &["plan", "spec.yaml"]);
    assert!(plan.contains("deleted outside gpuform"), "{plan}");
    ok(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
    let live = owned(&p, &proj).await;
    assert!(live.contains_key("cluster.infer.node[1]"));
    assert_ne!(live["cluster.infer.node[1]"].id, victim.id);

    // Scale up, then down.
    std::fs::write(dir.path().join("spec.yaml"), spec(&proj, 4)).unwrap();
    ok(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(
        owned(&p, &proj)
            .await
            .keys()
            .filter(|a| a.starts_with("cluster.infer.node"))
            .count(),
        4
    );
    std::fs::write(dir.path().join("spec.yaml"), spec(&proj, 1)).unwrap();
    ok(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
    let live = owned(&p, &proj).await;
    assert_eq!(
        live.keys()
            .filter(|a| a.starts_with("cluster.infer.node"))
            .count(),
        1
    );
    assert_eq!(
        live.keys()
            .filter(|a| a.starts_with("cluster.infer.volume"))
            .count(),
        1
    );

    ok(dir.path(), &["destroy", "spec.yaml", "--auto-approve"]);
    assert!(
        owned(&p, &proj).await.is_empty(),
        "destroy leaves nothing tagged with the project"
    );
}

pub(crate) fn crash_spec(project: &str, endpoint: &str, nodes: u32) -> String {
    format!(
        "project: {project}\nendpoints:\n  aws: {endpoint}\nclusters:\n  infer:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a]\n    nodes: {nodes}\n    gpu: T4\n    pricing: spot\n    image: amazon-linux-2023\n    disk:\n      root_gb: 100\n      data_gb: 50\n    ingress:\n      - {{protocol: tcp, ports: \"22\", cidr: 10.1.0.0/16}}\n"
    )
}

fn crash_addresses(nodes: u32) -> std::collections::BTreeSet<String> {
    let mut s: std::collections::BTreeSet<String> = [
        "cluster.infer.network",
        "cluster.infer.subnet[us-east-1a]",
        "cluster.infer.firewall",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    for i in 0..nodes {
        s.insert(format!("cluster.infer.node[{i}]"));
        s.insert(format!("cluster.infer.volume[{i}]"));
    }
    s
}

/// The cloud (seen directly, not through the proxy) and the state hold
/// exactly the desired resources: each address once, of its kind, every
/// recorded id real, each data volume attached to its own node, the
/// security group with its members' rule and the spec's rule.
pub(crate) async fn assert_exact_on_moto(
    p: &AwsProvider,
    dir: &Path,
    proj: &str,
    nodes: Option<u32>,
    ctx: &str,
) {
    let live = owned(p, proj).await; // asserts each address once
    let want = nodes.map(crash_addresses).unwrap_or_default();
    let got: std::collections::BTreeSet<String> = live.keys().cloned().collect();
    assert_eq!(got, want, "{ctx}: moto holds {got:#?}");
    if nodes.is_none() {
        return;
    }
    let ids = state_ids(dir, proj);
    let recorded: std::collections::BTreeSet<String> = ids.keys().cloned().collect();
    assert_eq!(recorded, want, "{ctx}: state records {recorded:#?}");
    for (addr, id) in &ids {
        let o = &live[addr];
        assert_eq!(
            &o.id, id,
            "{ctx}: recorded id of {addr} is not the real one"
        );
        let kind = if addr.contains(".node[") {
            ResourceKind::Instance
        } else if addr.contains(".volume[") {
            ResourceKind::Volume
        } else if addr.contains(".subnet[") {
            ResourceKind::Subnet
        } else if addr.ends_with(".firewall") {
            ResourceKind::Firewall
        } else {
            ResourceKind::Network
        };
        assert_eq!(o.kind, kind, "{ctx}: {addr} is a {}", o.kind);
        match kind {
            ResourceKind::Volume => {
                let node = addr.replace(".volume[", ".node[");
                assert_eq!(
                    o.attrs.get("attached_to").and_then(|v| v.as_str()),
                    Some(ids[&node].as_str()),
                    "{ctx}: {addr} ({id}) is not attached to {node}"
                );
            }
            ResourceKind::Firewall => {
                let ingress = o.attrs["ingress"].as_array().expect("ingress reported");
                assert_eq!(
                    ingress,
                    &vec![
                        serde_json::json!({"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "10.1.0.0/16"})
                    ],
                    "{ctx}: {addr} ({id}) rules (a `missing` entry: no members' rule)"
                );
            }
            _ => {}
        }
    }
}

/// Kills gpuform (SIGKILL) right after each API call N of a create, a
/// scale-up and a destroy has reached moto, then runs the same command
/// again: the cloud and the state must hold exactly the desired resources,
/// complete (attached volumes, authorized rules), and the next plan must be
/// clean. `--parallelism 1` makes call N the same call in every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_after_any_api_call_then_apply_leaves_exactly_the_desired_resources() {
    let proxy = killing_proxy::Proxy::start(&moto_url());
    // Each run in its own moto account: the same empty cloud every time.
    let mut accounts = moto::accounts();
    for (phase, setup, target, destroy) in [
        ("create", None, 2u32, false),
        ("scale", Some(1u32), 3u32, false),
        ("destroy", Some(2u32), 2u32, true),
    ] {
        let mut total = None;
        for n in 1u64.. {
            assert!(n < 400, "{phase}: runaway");
            let proj = project(&format!("k{phase}{n}"));
            let account = accounts.next().expect("an account");
            let p = provider_in(&account).await;
            let in_account = |dir: &Path, args: &[&str]| {
                let mut c = gpuform(dir, args);
                c.envs(account.env());
                c
            };
            let dir = tempfile::tempdir().unwrap();
            let write = |nodes: u32| {
                std::fs::write(
                    dir.path().join("spec.yaml"),
                    crash_spec(&proj, &proxy.url, nodes),
                )
                .unwrap()
            };
            proxy.arm(0);
            if let Some(k) = setup {
                write(k);
                let args = ["apply", "spec.yaml", "--auto-approve", "-q"];
                succeeded(in_account(dir.path(), &args), &args);
            }
            write(target);
            let args: &[&str] = if destroy {
                &[
                    "destroy",
                    "spec.yaml",
                    "--auto-approve",
                    "--parallelism",
                    "1",
                ]
            } else {
                &["apply", "spec.yaml", "--auto-approve", "--parallelism", "1"]
            };
            // No launch wait: its polls are reads, and a kill during them is
            // the kill after RunInstances that N already covers; waiting would
            // only multiply the kill points (and the minutes) of this loop.
            let mut cmd = in_account(dir.path(), args);
            cmd.env("GPUFORM_AWS_SETTLE_MS", "0")
                .env("GPUFORM_AWS_LAUNCH_WAIT_MS", "0");
            // Finished: N is past the last call, so every N before it was a kill.
            if let Some(calls) = proxy.run_armed(n, cmd, phase) {
                total = Some(calls);
                break;
            }
            let again = in_account(dir.path(), args)
                .env("GPUFORM_AWS_SETTLE_MS", "0")
                .env("GPUFORM_AWS_LAUNCH_WAIT_MS", "0")
                .output()
                .unwrap();
            assert!(
                again.status.success(),
                "{phase} N={n}: the recovery run failed:\n{}",
                String::from_utf8_lossy(&again.stderr)
            );
            let ctx = format!("{phase}, killed after call {n}");
            assert_exact_on_moto(&p, dir.path(), &proj, (!destroy).then_some(target), &ctx).await;
            if !destroy {
                let plan = in_account(dir.path(), &["plan", "spec.yaml", "--detailed-exitcode"])
                    .output()
                    .expect("run gpuform");
                assert_eq!(
                    plan.status.code(),
                    Some(0),
                    "{ctx}: the next plan is not clean:\n{}",
                    String::from_utf8_lossy(&plan.stdout)
                );
            }
        }
        eprintln!("{phase}: killed after each of {} calls", total.unwrap());
    }
}

/// The AWS example validates and plans offline from empty state, without
/// credentials or network.
#[test]
fn the_aws_example_plans_offline_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/aws-training.yaml");
    let args = ["plan", example.to_str().unwrap(), "--detailed-exitcode"];
    let out = support::gpuform_cmd(dir.path(), &args)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9") // nothing listens: a call would fail
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("p4d") || text.contains("p5"), "{text}");
}

/// The AWS example applies against moto, apart from what moto lacks: its
/// training cluster needs a placement group (moto answers HTTP 500) and a
/// CUDA image moto does not ship, so the inference pool is applied alone
/// (`--target`), with an image moto has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aws_example_applies_against_moto_where_moto_can() {
    let p = provider().await;
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/aws-training.yaml");
    let proj = project("example");
    let text = std::fs::read_to_string(&example)
        .unwrap()
        .replace("project: aws-llm", &format!("project: {proj}"));
    std::fs::write(dir.path().join("spec.yaml"), text).unwrap();
    let target = [
        "--target",
        "cluster.inference",
        "--var",
        "image=amazon-linux-2023",
    ];
    let mut args = vec!["apply", "spec.yaml", "--auto-approve"];
    args.extend_from_slice(&target);
    let out = gpuform(dir.path(), &args)
        .env("AWS_ENDPOINT_URL", moto_url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live = p
        .list_owned(
            &Scope {
                region: "us-west-2".into(),
            },
            &proj,
        )
        .await
        .unwrap();
    let nodes: Vec<_> = live
        .iter()
        .filter(|o| o.kind == ResourceKind::Instance)
        .collect();
    assert_eq!(nodes.len(), 4, "the spot L4 inference pool");
    assert!(nodes
        .iter()
        .all(|o| o.attrs.get("pricing").and_then(|v| v.as_str()) == Some("spot")));
    let mut args = vec!["destroy", "spec.yaml", "--auto-approve"];
    args.extend_from_slice(&target);
    let out = gpuform(dir.path(), &args)
        .env("AWS_ENDPOINT_URL", moto_url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(p
        .list_owned(
            &Scope {
                region: "us-west-2".into()
            },
            &proj
        )
        .await
        .unwrap()
        .is_empty());
}

/// Plans ask EC2 (DescribeInstanceTypeOfferings) whether a zone sells the
/// type before creating anything there: moto, like AWS, sells p4de.24xlarge
/// in only some us-east-1 zones, and the plan moves on to one that does.
#[test]
fn a_zone_that_does_not_sell_the_type_is_skipped_at_plan_time() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "project: {}\nendpoints:\n  aws: {}\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a, us-east-1b]\n    nodes: 1\n    gpu: A100-80GB:8\n    image: amazon-linux-2023\n",
        project("offer"),
        moto_url()
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let plan: serde_json::Value =
        serde_json::from_str(&ok(dir.path(), &["plan", "spec.yaml", "--json"])).unwrap();
    let node = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "cluster.t.node[0]")
        .unwrap();
    assert_eq!(node["after"]["zone"], "us-east-1b", "{node}");
    let notes = plan["notes"].to_string();
    assert!(
        notes.contains("does not sell p4de.24xlarge in us-east-1a"),
        "{notes}"
    );
}

/// A k3s cluster on EC2 (moto): the agents launch after the server, and the
/// user data EC2 holds for each agent (DescribeInstanceAttribute userData)
/// joins the server's `PrivateIpAddress`; state keeps only the hash of the
/// planned, unfilled document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k3s_agents_join_the_servers_private_address_on_moto() {
    use sha2::Digest as _;
    let p = provider().await;
    let proj = project("k3s");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("spec.yaml"),
        format!(
            "project: {proj}\nendpoints:\n  aws: {url}\nclusters:\n  train:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a]\n    nodes: 3\n    gpu: T4\n    image: amazon-linux-2023\n    kubernetes:\n      mode: k3s\n      token_env: K3S_TOKEN\n",
            url = moto_url()
        ),
    )
    .unwrap();
    let token = "K10moto.canary";
    let out = gpuform(d, &["apply", "spec.yaml", "--auto-approve"])
        .env("K3S_TOKEN", token)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(!text.contains(token), "{text}");

    let live = owned(&p, &proj).await;
    let server = &live["cluster.train.node[0]"];
    let server_ip = server.attrs["private_ip"]
        .as_str()
        .expect("EC2 reports the server's PrivateIpAddress")
        .to_string();
    // What EC2 holds, read by another client (boto3): each node's launch
    // time and user data.
    let ids: Vec<&str> = [
        "cluster.train.node[0]",
        "cluster.train.node[1]",
        "cluster.train.node[2]",
    ]
    .iter()
    .map(|a| live[*a].id.as_str())
    .collect();
    let seen = boto3(
        "us-east-1",
        &format!(
            "import base64\nids = {ids:?}\nr = ec2.describe_instances(InstanceIds=ids)['Reservations']\nlaunch = {{i['InstanceId']: i['LaunchTime'].timestamp() for res in r for i in res['Instances']}}\nud = {{i: base64.b64decode(ec2.describe_instance_attribute(InstanceId=i, Attribute='userData')['UserData']['Value']).decode() for i in ids}}\nprint(json.dumps(dict(launch=launch, user_data=ud)))"
        ),
    );
    let launched = |id: &str| seen["launch"][id].as_f64().expect("launch time");
    let server_launch = launched(&server.id);
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(d.join(format!(".gpuform/{proj}.state.json"))).unwrap(),
    )
    .unwrap();
    for agent in ["cluster.train.node[1]", "cluster.train.node[2]"] {
        let o = &live[agent];
        assert!(
            launched(&o.id) >= server_launch,
            "{agent} launched before the server"
        );
        assert_ne!(o.attrs["private_ip"].as_str(), Some(server_ip.as_str()));
        let sent = seen["user_data"][o.id.as_str()]
            .as_str()
            .expect("user data")
            .to_string();
        assert!(
            sent.contains(&format!("K3S_URL=\"https://{server_ip}:6443\"")),
            "{agent} does not join {server_ip}:\n{sent}"
        );
        let planned = ok(d, &["bootstrap", "show", agent, "spec.yaml"]);
        assert_eq!(
            planned
                .replace("@@GPUFORM_ENV:K3S_TOKEN@@", token)
                .replace("@@GPUFORM_REF:k3s_server.private_ip@@", &server_ip),
            sent,
            "{agent}: EC2 got the planned document, filled in"
        );
        let sha = hex::encode(sha2::Sha256::digest(planned.as_bytes()));
        assert_eq!(
            state["resources"][agent]["attrs"]["user_data_sha256"].as_str(),
            Some(sha.as_str())
        );
    }
    support::assert_k3s_state_clean(&state, "cluster.train.node[0]", &server_ip, token);
    let plan = run(d, &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );
    ok(d, &["destroy", "spec.yaml", "--auto-approve"]);
}

/// A lost state on AWS: after the state file is moved away, neither plan nor
/// apply makes a second copy of anything; `--adopt-lineage` takes the
/// resources over with their real ids; `state rm` then plan replaces
/// nothing. moto is looked at through the SDK, as another client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_state_on_moto_is_adopted_never_duplicated() {
    let p = provider().await;
    let proj = project("lost");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec(&proj, 2)).unwrap();
    ok(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
    let made: BTreeMap<String, String> = owned(&p, &proj)
        .await
        .into_iter()
        .map(|(a, o)| (a, o.id))
        .collect();
    let state = dir.path().join(format!(".gpuform/{proj}.state.json"));
    let st: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let lineage = st["lineage"].as_str().unwrap().to_string();
    std::fs::rename(&state, dir.path().join("lost.json")).unwrap();

    let out = run(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("--adopt-lineage {lineage}")), "{err}");
    let live = |o: BTreeMap<String, ObservedResource>| -> BTreeMap<String, String> {
        o.into_iter().map(|(a, o)| (a, o.id)).collect()
    };
    assert_eq!(
        live(owned(&p, &proj).await),
        made,
        "a refused apply makes nothing"
    );

    ok(
        dir.path(),
        &[
            "apply",
            "spec.yaml",
            "--auto-approve",
            "--adopt-lineage",
            &lineage,
        ],
    );
    assert_eq!(
        live(owned(&p, &proj).await),
        made,
        "adopted, not made again"
    );
    assert_eq!(
        state_ids(dir.path(), &proj),
        made,
        "state records the real ids"
    );
    let plan = run(dir.path(), &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );

    ok(
        dir.path(),
        &[
            "state",
            "rm",
            "cluster.infer.firewall",
            "cluster.infer.node[0]",
            "-f",
            "spec.yaml",
        ],
    );
    let plan = run(dir.path(), &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "state rm then plan: adopted, nothing replaced\n{}",
        String::from_utf8_lossy(&plan.stdout)
    );
    ok(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(state_ids(dir.path(), &proj), made);
    ok(dir.path(), &["destroy", "spec.yaml", "--auto-approve"]);
    assert!(owned(&p, &proj).await.is_empty());
}
