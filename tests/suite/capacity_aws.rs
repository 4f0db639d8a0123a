//! Issue 31: a cluster filling an EC2 On-Demand Capacity Reservation, then
//! on-demand, against the capacity stand-in (`gpuform_standins::aws_capacity`)
//! in front of moto, which has no reservations: boto3 makes the reservation
//! through the stand-in (CreateCapacityReservation), gpuform reads it at
//! plan time (DescribeCapacityReservations) and launches the nodes it holds
//! with a CapacityReservationTarget, which the stand-in checks and counts
//! before forwarding the launch to moto. Start moto with `scripts/moto.sh
//! PORT` and set GPUFORM_TEST_MOTO_URL.

use crate::moto::{self, boto3_in, capacity};
use crate::support;
use std::path::Path;

fn moto_url() -> Option<String> {
    support::server_url(
        "GPUFORM_TEST_MOTO_URL",
        "scripts/test.sh starts moto and sets it",
    )
}

/// A boto3 EC2 client at the stand-in (not moto), signed with the account's keys.
fn via_standin(account: &moto::Account, endpoint: &str, body: &str) -> serde_json::Value {
    boto3_in(
        account,
        "us-east-1",
        &format!(
            "c = boto3.client('ec2', region_name='us-east-1', endpoint_url='{endpoint}', aws_access_key_id='{}', aws_secret_access_key='{}', aws_session_token='{}')\n{body}",
            account.access_key_id, account.secret_access_key, account.session_token
        ),
    )
}

fn gpuform(dir: &Path, account: &moto::Account, args: &[&str]) -> std::process::Output {
    let mut c = support::gpuform_cmd(dir, args);
    c.envs(account.env())
        .env("AWS_REGION", "us-east-1")
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env("GPUFORM_AWS_SETTLE_MS", "0")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_PROFILE");
    c.output().expect("run gpuform")
}

fn node_reservation(dir: &Path, node: usize) -> Option<String> {
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".gpuform/odcr.state.json")).expect("state"),
    )
    .expect("state json");
    state["resources"][format!("cluster.train.node[{node}]")]["attrs"]["capacity_reservation"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn a_cluster_fills_its_reservation_then_goes_on_demand() {
    let Some(moto_url) = moto_url() else { return };
    let account = moto::fresh_accounts(1).pop().expect("an account");
    let standin = capacity::in_front_of(&moto_url, &[&account]);
    // Room in the account's P quota for the cluster (the stand-in's unset
    // quotas read 0, and every plan checks them).
    standin.set_quota(
        "us-east-1",
        gpuform_standins::aws_capacity::quotas::P_ON_DEMAND,
        1152,
    );
    let endpoint = standin.endpoint();
    let made = via_standin(
        &account,
        &endpoint,
        "r = c.create_capacity_reservation(InstanceType='p4d.24xlarge', InstancePlatform='Linux/UNIX', AvailabilityZone='us-east-1b', InstanceCount=2, InstanceMatchCriteria='targeted', TagSpecifications=[{'ResourceType': 'capacity-reservation', 'Tags': [{'Key': 'team', 'Value': 'ml'}]}])\nprint(json.dumps(r['CapacityReservation']['CapacityReservationId']))",
    );
    let id = made.as_str().expect("an id").to_string();

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        format!("project: odcr\nendpoints:\n  aws: {endpoint}\nclusters:\n  train:\n    cloud: aws\n    region: us-east-1\n    nodes: 3\n    gpu: A100-40GB:8\n    image: amazon-linux-2023\n    capacity: [{{reservation: {{tags: {{team: ml}}}}}}, on-demand]\n"),
    )
    .unwrap();
    let plan = support::succeeded(
        &gpuform(dir.path(), &account, &["plan", "spec.yaml"]),
        &["plan"],
    );
    assert!(
        plan.contains(&format!("node[0..1] in reservation {id} (p4d.24xlarge in us-east-1b, open-ended): 2 of 2 available now, 0 left after this plan")),
        "{plan}"
    );
    assert!(plan.contains("cluster.train: node[2] on-demand"), "{plan}");

    let args = ["apply", "spec.yaml", "--auto-approve"];
    support::succeeded(&gpuform(dir.path(), &account, &args), &args);
    assert_eq!(
        node_reservation(dir.path(), 0).as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        node_reservation(dir.path(), 1).as_deref(),
        Some(id.as_str())
    );
    assert_eq!(node_reservation(dir.path(), 2), None);
    // The stand-in checked and counted exactly the two targeted launches;
    // the third went to moto untouched.
    assert_eq!(standin.answered("RunInstances"), 2);
    let held = standin.reservations();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].instances.len(), 2);
    // As the account sees it (boto3 through the stand-in).
    let left = via_standin(
        &account,
        &endpoint,
        &format!("print(json.dumps(c.describe_capacity_reservations(CapacityReservationIds=['{id}'])['CapacityReservations'][0]['AvailableInstanceCount']))"),
    );
    assert_eq!(left, serde_json::json!(0));
    // A re-plan is stable: the nodes in the reservation are its room.
    let again = gpuform(
        dir.path(),
        &account,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );

    // A launch beyond it is refused as EC2 refuses it.
    let refused = via_standin(
        &account,
        &endpoint,
        &format!("try:\n    c.run_instances(ImageId='ami-03c3da4cfa8e8943a', InstanceType='p4d.24xlarge', MinCount=1, MaxCount=1, Placement={{'AvailabilityZone': 'us-east-1b'}}, CapacityReservationSpecification={{'CapacityReservationTarget': {{'CapacityReservationId': '{id}'}}}})\n    print(json.dumps('launched'))\nexcept Exception as e:\n    print(json.dumps(e.response['Error']['Code']))"),
    );
    assert_eq!(refused, serde_json::json!("ReservationCapacityExceeded"));

    // Destroying the cluster frees the reservation.
    let args = ["destroy", "spec.yaml", "--auto-approve"];
    support::succeeded(&gpuform(dir.path(), &account, &args), &args);
    assert_eq!(standin.reservations()[0].instances.len(), 0);
}

/// A reservation that cannot be read is a warning in `gpuform plan` (as an
/// unreachable cloud is) and an error in `gpuform apply`, which creates
/// nothing. No server: the endpoint refuses connections.
#[test]
fn an_unreadable_reservation_warns_in_plan_and_stops_apply() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        "project: odcr\nendpoints:\n  aws: http://127.0.0.1:9\nclusters:\n  train:\n    cloud: aws\n    region: us-east-1\n    nodes: 2\n    gpu: A100-40GB:8\n    capacity: [{reservation: cr-0123456789abcdef0}, on-demand]\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        support::gpuform_cmd(dir.path(), args)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_MAX_ATTEMPTS", "1")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_PROFILE")
            .output()
            .expect("run gpuform")
    };
    let plan = run(&["plan", "spec.yaml"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&plan.stdout),
        String::from_utf8_lossy(&plan.stderr)
    );
    assert_eq!(plan.status.code(), Some(0), "{text}");
    assert!(
        text.contains("reservation cr-0123456789abcdef0 could not be read"),
        "{text}"
    );
    assert!(text.contains("node[0..1] on-demand"), "{text}");

    let apply = run(&["apply", "spec.yaml", "--auto-approve"]);
    let err = String::from_utf8_lossy(&apply.stderr);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(err.contains("clusters.train.capacity[0]"), "{err}");
    assert!(
        !dir.path().join(".gpuform/odcr.state.json").exists()
            || !std::fs::read_to_string(dir.path().join(".gpuform/odcr.state.json"))
                .unwrap()
                .contains("node[0]")
    );
}

// ----- Capacity Blocks (the stand-in's DescribeCapacityBlockOfferings and
// PurchaseCapacityBlock), issue 31 -------------------------------------------

/// The suite's pinned day (`support::gpuform_cmd`), as the stand-in's clock:
/// a block starting that day starts at once.
const NOW: &str = "2026-11-29T00:00:00Z";
/// What the stand-in charges per p4d.24xlarge instance-hour of a block.
const BLOCK_RATE: f64 = 20.0;

/// A stand-in with room in the P quota, its clock pinned, selling
/// p4d.24xlarge blocks in us-east-1b.
fn block_standin(moto_url: &str, account: &moto::Account) -> capacity::AwsCapacity {
    let standin = capacity::in_front_of(moto_url, &[account]);
    standin.set_quota(
        "us-east-1",
        gpuform_standins::aws_capacity::quotas::P_ON_DEMAND,
        1152,
    );
    standin.set_now(NOW);
    standin.sell_blocks("us-east-1", "p4d.24xlarge", &["us-east-1b"], BLOCK_RATE);
    standin
}

fn block_spec(project: &str, endpoint: &str, nodes: u32, capacity: &str) -> String {
    format!("project: {project}\nendpoints:\n  aws: {endpoint}\nclusters:\n  train:\n    cloud: aws\n    region: us-east-1\n    nodes: {nodes}\n    gpu: A100-40GB:8\n    instance_type: p4d.24xlarge\n    image: amazon-linux-2023\n    capacity: [{capacity}]\n")
}

fn state_of(dir: &Path, project: &str) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!(".gpuform/{project}.state.json")))
            .expect("state"),
    )
    .expect("state json")
}

const BLOCK_2X48: &str = "{block: {start: 2026-11-29, hours: 48, count: 2}}";

#[test]
fn a_cluster_fills_its_reservation_then_a_bought_block_then_on_demand() {
    let Some(moto_url) = moto_url() else { return };
    let account = moto::fresh_accounts(1).pop().expect("an account");
    let standin = block_standin(&moto_url, &account);
    let endpoint = standin.endpoint();
    let made = via_standin(
        &account,
        &endpoint,
        "r = c.create_capacity_reservation(InstanceType='p4d.24xlarge', InstancePlatform='Linux/UNIX', AvailabilityZone='us-east-1b', InstanceCount=1, InstanceMatchCriteria='targeted', TagSpecifications=[{'ResourceType': 'capacity-reservation', 'Tags': [{'Key': 'team', 'Value': 'ml'}]}])\nprint(json.dumps(r['CapacityReservation']['CapacityReservationId']))",
    );
    let cr = made.as_str().expect("an id").to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        block_spec(
            "blk",
            &endpoint,
            4,
            &format!("{{reservation: {{tags: {{team: ml}}}}}}, {BLOCK_2X48}, on-demand"),
        ),
    )
    .unwrap();

    let plan = support::succeeded(
        &gpuform(dir.path(), &account, &["plan", "spec.yaml"]),
        &["plan"],
    );
    for want in [
        "cluster.train.block[1]: buys Capacity Block offering 2 x p4d.24xlarge in us-east-1b, 2026-11-29T00:00:00Z to 2026-12-01T11:30:00Z",
        "cannot be cancelled",
        "node[1..2] in Capacity Block cluster.train.block[1]",
        "node[3] on-demand",
        "paid up front: $",
    ] {
        assert!(plan.contains(want), "{want}\n{plan}");
    }
    // The block is paid once, up front (the stand-in's fee: 2 × 48 h at
    // the block rate); its nodes add nothing hourly.
    let json: serde_json::Value = serde_json::from_str(&support::succeeded(
        &gpuform(dir.path(), &account, &["plan", "spec.yaml", "--json"]),
        &["plan --json"],
    ))
    .expect("plan json");
    assert_eq!(
        json["cost"]["upfront_usd"].as_f64(),
        Some(BLOCK_RATE * 96.0),
        "{json}"
    );

    // --auto-approve alone never buys, and nothing is called.
    let refused = gpuform(
        dir.path(),
        &account,
        &["apply", "spec.yaml", "--auto-approve"],
    );
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("would buy 1 Capacity Block(s) (cluster.train.block[1])")
            && err.contains("--allow-purchase"),
        "{err}"
    );
    assert_eq!(standin.answered("PurchaseCapacityBlock"), 0);
    assert_eq!(standin.answered("RunInstances"), 0);

    let args = ["apply", "spec.yaml", "--auto-approve", "--allow-purchase"];
    support::succeeded(&gpuform(dir.path(), &account, &args), &args);
    let bought = standin.blocks_bought();
    assert_eq!(bought.len(), 1);
    let block = &bought[0];
    assert_eq!(
        (
            block.instance_type.as_str(),
            block.zone.as_str(),
            block.total
        ),
        ("p4d.24xlarge", "us-east-1b", 2)
    );
    let state = state_of(dir.path(), "blk");
    assert_eq!(
        state["resources"]["cluster.train.block[1]"]["id"].as_str(),
        Some(block.id.as_str())
    );
    // Tagged with the project at purchase, as every resource is.
    assert_eq!(
        block.tags.get("gpuform:project").map(String::as_str),
        Some("blk"),
        "{:?}",
        block.tags
    );
    let node = |n: usize, key: &str| {
        state["resources"][format!("cluster.train.node[{n}]")]["attrs"][key]
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(node(0, "capacity_reservation"), Some(cr.clone()));
    for n in [1, 2] {
        assert_eq!(
            node(n, "capacity_block").as_deref(),
            Some("cluster.train.block[1]")
        );
    }
    assert_eq!(node(3, "capacity_block"), None);
    assert_eq!(node(3, "capacity_reservation"), None);
    // The stand-in checked three targeted launches (one reservation node,
    // two block nodes in the capacity-block market) and counts them.
    assert_eq!(standin.answered("RunInstances"), 3);
    let held: std::collections::BTreeMap<String, usize> = standin
        .reservations()
        .into_iter()
        .map(|r| (r.id, r.instances.len()))
        .collect();
    assert_eq!(held[&cr], 1);
    assert_eq!(held[&block.id], 2);
    // Stable: nothing more to buy or make.
    let again = gpuform(
        dir.path(),
        &account,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

/// Two days on (gpuform's day and the stand-in's clock), the 48-hour block
/// has ended: the plan says so and an apply that would launch into it is
/// refused before any launch.
#[test]
fn an_ended_block_is_refused() {
    let Some(moto_url) = moto_url() else { return };
    let account = moto::fresh_accounts(1).pop().expect("an account");
    let standin = block_standin(&moto_url, &account);
    let endpoint = standin.endpoint();
    let dir = tempfile::tempdir().unwrap();
    let write = |nodes| {
        std::fs::write(
            dir.path().join("spec.yaml"),
            block_spec("ended", &endpoint, nodes, BLOCK_2X48),
        )
        .unwrap()
    };
    write(1);
    let args = ["apply", "spec.yaml", "--auto-approve", "--allow-purchase"];
    support::succeeded(&gpuform(dir.path(), &account, &args), &args);
    assert_eq!(standin.blocks_bought().len(), 1);
    let launches = standin.answered("RunInstances");

    standin.set_now("2026-12-02T00:00:00Z");
    write(2);
    let later = |args: &[&str]| {
        let mut c = support::gpuform_cmd(dir.path(), args);
        c.envs(account.env())
            .env("GPUFORM_TODAY", "2026-12-02")
            .env("AWS_REGION", "us-east-1")
            .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
            .env("GPUFORM_AWS_SETTLE_MS", "0")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_PROFILE");
        c.output().expect("run gpuform")
    };
    let plan = support::succeeded(&later(&["plan", "spec.yaml"]), &["plan"]);
    assert!(
        plan.contains("cluster.train.block[0]: Capacity Block ended at 2026-12-01T11:30:00Z"),
        "{plan}"
    );
    let out = later(&["apply", "spec.yaml", "--auto-approve", "--allow-purchase"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cluster.train.node[1]: Capacity Block cluster.train.block[0] has ended (2026-12-01T11:30:00Z"),
        "{err}"
    );
    assert_eq!(
        standin.answered("RunInstances"),
        launches,
        "no launch tried"
    );
    assert_eq!(standin.blocks_bought().len(), 1, "nothing bought again");
}

/// Kills gpuform (SIGKILL) right after each call N of an apply that buys a
/// block (the call took effect at the stand-in, gpuform never hears its
/// answer), then applies again: exactly one PurchaseCapacityBlock took
/// effect, the state records that block, the next plan is clean. One
/// account and one stand-in per N: the same empty account every time.
#[test]
fn a_kill_after_each_call_of_the_purchase_never_buys_twice() {
    let Some(moto_url) = moto_url() else { return };
    let mut accounts = moto::accounts();
    let mut purchase_crossed = false;
    for n in 1u64.. {
        assert!(
            n < 80,
            "runaway: an apply of one block and a node took 80 calls"
        );
        let account = accounts.next().expect("an account");
        let standin = block_standin(&moto_url, &account);
        let proxy = moto::killing_proxy::Proxy::start(&standin.endpoint());
        let project = format!("kb{n}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("spec.yaml"),
            block_spec(
                &project,
                &proxy.url,
                1,
                "{block: {start: 2026-11-29, hours: 24, count: 1}}",
            ),
        )
        .unwrap();
        let args = [
            "apply",
            "spec.yaml",
            "--auto-approve",
            "--allow-purchase",
            "--parallelism",
            "1",
        ];
        let mut cmd = support::gpuform_cmd(dir.path(), &args);
        cmd.envs(account.env())
            .env("AWS_REGION", "us-east-1")
            .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
            .env("GPUFORM_AWS_SETTLE_MS", "0")
            .env("GPUFORM_AWS_LAUNCH_WAIT_MS", "0")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_PROFILE");
        let bought_before_kill = || standin.answered("PurchaseCapacityBlock");
        if let Some(calls) = proxy.run_armed(n, cmd, "apply") {
            // N is past the last call: every call before it was a kill.
            assert!(
                purchase_crossed,
                "no kill ever followed the purchase ({calls} calls)"
            );
            assert_eq!(standin.blocks_bought().len(), 1);
            return;
        }
        purchase_crossed |= bought_before_kill() > 0 && standin.blocks_bought().len() == 1;
        let mut again = support::gpuform_cmd(dir.path(), &args);
        again
            .envs(account.env())
            .env("AWS_REGION", "us-east-1")
            .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
            .env("GPUFORM_AWS_SETTLE_MS", "0")
            .env("GPUFORM_AWS_LAUNCH_WAIT_MS", "0")
            .env_remove("AWS_ENDPOINT_URL")
            .env_remove("AWS_PROFILE");
        let out = again.output().expect("run gpuform");
        assert!(
            out.status.success(),
            "N={n}: the recovery run failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bought = standin.blocks_bought();
        assert_eq!(bought.len(), 1, "N={n}: {bought:?}");
        assert_eq!(
            state_of(dir.path(), &project)["resources"]["cluster.train.block[0]"]["id"].as_str(),
            Some(bought[0].id.as_str()),
            "N={n}"
        );
        let plan = gpuform(
            dir.path(),
            &account,
            &["plan", "spec.yaml", "--detailed-exitcode"],
        );
        assert_eq!(
            plan.status.code(),
            Some(0),
            "N={n}: the next plan is not clean:\n{}",
            String::from_utf8_lossy(&plan.stdout)
        );
    }
}
