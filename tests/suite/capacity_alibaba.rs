//! Issue 31, item 3 on Alibaba Cloud: a cluster's `capacity:` list names a
//! private pool (an elasticity assurance `eap-…` or a capacity reservation
//! `crp-…`) by id or by tags. gpuform reads it at plan time
//! (DescribeElasticityAssurances / DescribeCapacityReservations) and
//! launches the nodes it holds with RunInstances
//! `PrivatePoolOptions.MatchCriteria=Target` and `PrivatePoolOptions.Id`,
//! which the Alibaba stand-in checks and counts against the pool.

use crate::support;
use gpuform_standins::alibaba::{AlibabaMock, PoolKind, PoolSpec};
use gpuform_standins::MockCloud;
use std::path::Path;

const REGION: &str = "cn-hangzhou";
const ZONE: &str = "cn-hangzhou-h";
const TYPE: &str = "ecs.gn7i-c8g1.2xlarge";

fn spec(project: &str, nodes: u32, capacity: &str, extra: &str) -> String {
    format!(
        "project: {project}\nclusters:\n  train:\n    cloud: alibaba\n    region: {REGION}\n    nodes: {nodes}\n    gpu: A10\n    instance_type: {TYPE}\n    capacity: [{capacity}]\n{extra}"
    )
}

fn run(dir: &Path, mock: &AlibabaMock, args: &[&str]) -> std::process::Output {
    support::gpuform_at(dir, &[mock as &dyn MockCloud], args)
        .output()
        .expect("run gpuform")
}

fn ok(dir: &Path, mock: &AlibabaMock, args: &[&str]) -> String {
    support::succeeded(&run(dir, mock, args), args)
}

fn node_pool(dir: &Path, project: &str, node: usize) -> Option<String> {
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!(".gpuform/{project}.state.json")))
            .expect("state"),
    )
    .expect("state json");
    state["resources"][format!("cluster.train.node[{node}]")]["attrs"]["capacity_reservation"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn a_cluster_fills_its_elasticity_assurance_then_goes_on_demand() {
    let mock = AlibabaMock::start();
    let pool = mock.create_pool(PoolSpec::active(REGION, ZONE, TYPE, 2));
    assert!(pool.starts_with("eap-"), "{pool}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        spec(
            "pools",
            3,
            &format!("{{reservation: {pool}}}, on-demand"),
            "",
        ),
    )
    .unwrap();

    let plan = ok(dir.path(), &mock, &["plan", "spec.yaml"]);
    assert!(
        plan.contains(&format!("cluster.train: node[0..1] in reservation {pool} ({TYPE} in {ZONE}, open-ended): 2 of 2 available now, 0 left after this plan")),
        "{plan}"
    );
    assert!(plan.contains("cluster.train: node[2] on-demand"), "{plan}");

    ok(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(
        node_pool(dir.path(), "pools", 0).as_deref(),
        Some(pool.as_str())
    );
    assert_eq!(
        node_pool(dir.path(), "pools", 1).as_deref(),
        Some(pool.as_str())
    );
    assert_eq!(node_pool(dir.path(), "pools", 2), None);
    // The stand-in checked and counted exactly the two targeted launches.
    assert_eq!(mock.pool_launches(&pool), Some(2));
    assert_eq!(mock.pool_used(&pool), 2);
    // A re-plan is clean: the nodes in the pool are its room, and the
    // recorded pool stands (DescribeInstances does not report it).
    let again = run(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );

    // Destroying the cluster gives the pool its room back.
    ok(
        dir.path(),
        &mock,
        &["destroy", "spec.yaml", "--auto-approve"],
    );
    assert_eq!(mock.pool_used(&pool), 0);
}

#[test]
fn a_capacity_reservation_named_by_tags_takes_the_nodes() {
    let mock = AlibabaMock::start();
    let tagged = |kind, status: &str, team: &str| PoolSpec {
        kind,
        status: status.into(),
        tags: vec![("team".into(), team.into())],
        ..PoolSpec::active(REGION, ZONE, TYPE, 1)
    };
    let crp = mock.create_pool(tagged(PoolKind::CapacityReservation, "Active", "ml"));
    assert!(crp.starts_with("crp-"), "{crp}");
    // Another team's pool is not named; this team's pool still being
    // prepared is listed but takes no launch yet.
    let theirs = mock.create_pool(tagged(PoolKind::ElasticityAssurance, "Active", "web"));
    let later = mock.create_pool(tagged(PoolKind::ElasticityAssurance, "Preparing", "ml"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        spec(
            "tagged",
            2,
            "{reservation: {tags: {team: ml}}}, on-demand",
            "",
        ),
    )
    .unwrap();
    let plan = ok(dir.path(), &mock, &["plan", "spec.yaml"]);
    assert!(
        plan.contains(&format!("cluster.train: node[0] in reservation {crp} ({TYPE} in {ZONE}, open-ended): 1 of 1 available now, 0 left after this plan")),
        "{plan}"
    );
    assert!(
        plan.contains(&format!("reservation {later} is scheduled")),
        "{plan}"
    );
    assert!(!plan.contains(&theirs), "{plan}");
    assert!(plan.contains("cluster.train: node[1] on-demand"), "{plan}");
    ok(dir.path(), &mock, &["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(
        node_pool(dir.path(), "tagged", 0).as_deref(),
        Some(crp.as_str())
    );
    assert_eq!(node_pool(dir.path(), "tagged", 1), None);
    assert_eq!(mock.pool_launches(&crp), Some(1));
    assert_eq!(mock.pool_launches(&theirs), Some(0));
    assert_eq!(mock.pool_launches(&later), Some(0));
    let again = run(
        dir.path(),
        &mock,
        &["plan", "spec.yaml", "--detailed-exitcode"],
    );
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}

#[test]
fn a_pool_of_another_type_or_zone_is_reported_where_it_is_named() {
    let mock = AlibabaMock::start();
    let wrong_type = mock.create_pool(PoolSpec::active(REGION, ZONE, "ecs.gn7i-c16g1.4xlarge", 2));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        spec(
            "wrong",
            2,
            &format!("{{reservation: {wrong_type}}}, on-demand"),
            "",
        ),
    )
    .unwrap();
    let out = run(dir.path(), &mock, &["plan", "spec.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the reservations hold ecs.gn7i-c16g1.4xlarge, but cluster train resolves to {TYPE}"
        )),
        "{err}"
    );
    assert!(err.contains("clusters.train.capacity"), "{err}");

    let elsewhere = mock.create_pool(PoolSpec::active(REGION, "cn-hangzhou-i", TYPE, 2));
    std::fs::write(
        dir.path().join("spec.yaml"),
        spec(
            "wrong",
            2,
            &format!("{{reservation: {elsewhere}}}, on-demand"),
            &format!("    zones: [{ZONE}]\n"),
        ),
    )
    .unwrap();
    let out = run(dir.path(), &mock, &["plan", "spec.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the reservations are in cn-hangzhou-i, which cluster train does not use"),
        "{err}"
    );
    // Nothing was launched into either.
    assert_eq!(mock.pool_launches(&wrong_type), Some(0));
    assert_eq!(mock.pool_launches(&elsewhere), Some(0));
}

/// The pool stops taking launches between plan and apply: the saved plan's
/// launch is refused by the cloud (RunInstances names the pool), never made
/// as an ordinary pay-as-you-go instance.
#[test]
fn a_launch_into_a_pool_no_longer_active_is_refused_by_the_cloud() {
    let mock = AlibabaMock::start();
    let pool = mock.create_pool(PoolSpec::active(REGION, ZONE, TYPE, 1));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        spec(
            "gone",
            1,
            &format!("{{reservation: {pool}}}, on-demand"),
            "",
        ),
    )
    .unwrap();
    ok(dir.path(), &mock, &["plan", "spec.yaml", "--out", "p.plan"]);
    assert!(mock.set_pool_status(&pool, "Released"));
    let out = run(dir.path(), &mock, &["apply", "p.plan", "--auto-approve"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Invalid.PrivatePoolOptions.status"), "{err}");
    assert_eq!(mock.pool_launches(&pool), Some(0));
    assert!(
        !mock
            .resources()
            .iter()
            .any(|r| r.address.as_deref() == Some("cluster.train.node[0]")),
        "no node was made outside the pool"
    );
}
