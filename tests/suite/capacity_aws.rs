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
