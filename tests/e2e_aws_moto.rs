//! End to end on AWS, against moto's EC2 server over HTTP (see
//! scripts/moto.sh; `scripts/test.sh` starts it and sets
//! GPUFORM_TEST_MOTO_URL). The gpuform binary does the work; the test looks
//! at the cloud through the AWS provider (the real SDK), as another client.
#![cfg(feature = "aws")]

use gpuform_aws::AwsProvider;
use gpuform_provider::{ObservedResource, Provider, ResourceKind, Scope};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn moto_url() -> String {
    std::env::var("GPUFORM_TEST_MOTO_URL").unwrap_or_else(|_| {
        panic!("GPUFORM_TEST_MOTO_URL is not set: start moto with `scripts/moto.sh` (or run `scripts/test.sh`)")
    })
}

/// A spec on AWS that moto can serve: images moto ships, no placement groups.
fn spec(project: &str, nodes: u32) -> String {
    format!(
        "project: {project}\nendpoints:\n  aws: {url}\nclusters:\n  infer:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a]\n    nodes: {nodes}\n    gpu: T4\n    pricing: spot\n    image: amazon-linux-2023\n    disk:\n      root_gb: 100\n      data_gb: 50\n  train:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: A100-40GB:8\n    fabric: rdma\n    image: amazon-linux-2023\n",
        url = moto_url()
    )
}

fn gpuform(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpuform"));
    c.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("AWS_ACCESS_KEY_ID", "testing")
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
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "gpuform {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn provider() -> AwsProvider {
    std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
    std::env::set_var("AWS_REGION", "us-east-1");
    AwsProvider::from_env(Some(moto_url()))
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
            .clone();
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

fn project(name: &str) -> String {
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

/// kill -9 in the middle of an apply, at several points, then apply again:
/// every node exists exactly once and every recorded id is real. moto does
/// not honour ClientToken, so this is adoption by ownership tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_apply_then_apply_leaves_each_node_once() {
    let p = provider().await;
    for delay_ms in [150u64, 400, 700, 1000, 1500] {
        let proj = project(&format!("kill{delay_ms}"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spec.yaml"), spec(&proj, 4)).unwrap();
        let mut child = gpuform(
            dir.path(),
            &["apply", "spec.yaml", "--auto-approve", "--parallelism", "2"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        ok(dir.path(), &["apply", "spec.yaml", "--auto-approve"]);
        let live = owned(&p, &proj).await; // asserts no duplicates
        let nodes = live.keys().filter(|a| a.contains(".node[")).count();
        assert_eq!(
            nodes,
            5,
            "killed after {delay_ms} ms: {:#?}",
            live.keys().collect::<Vec<_>>()
        );
        let ids = state_ids(dir.path(), &proj);
        assert_eq!(
            ids.len(),
            live.len(),
            "killed after {delay_ms} ms: state and cloud agree"
        );
        for (addr, id) in &ids {
            assert_eq!(
                live.get(addr).map(|o| &o.id),
                Some(id),
                "killed after {delay_ms} ms: {addr}"
            );
        }
        let plan = run(dir.path(), &["plan", "spec.yaml", "--detailed-exitcode"]);
        assert_eq!(plan.status.code(), Some(0));
        ok(
            dir.path(),
            &["destroy", "spec.yaml", "--auto-approve", "-q"],
        );
    }
}

/// The AWS example validates and plans offline from empty state, without
/// credentials or network.
#[test]
fn the_aws_example_plans_offline_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/aws-training.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_gpuform"))
        .args(["plan", example.to_str().unwrap(), "--detailed-exitcode"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
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
