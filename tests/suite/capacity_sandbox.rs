//! A cluster's `capacity:` list on the sandbox: the spec's syntax and its
//! located errors, nodes filling a reservation then on-demand, the
//! reservation's count enforced by the cloud, and its expiry against the
//! pinned clock (`GPUFORM_TODAY`).

use crate::support::{self, errors, find, SandboxWork};
use gpuform::spec::{self, CapacitySource, ReservationRef, Vars};

fn cluster_with(capacity: &str, extra: &str) -> String {
    format!(
        "project: cap\nclusters:\n  trainer:\n    cloud: aws\n    region: us-east-1\n    nodes: 3\n    gpu: A100-40GB:8\n    capacity: {capacity}\n{extra}"
    )
}

#[test]
fn capacity_lists_parse_in_order() {
    let text = cluster_with(
        "[{reservation: cr-0123456789abcdef0}, {reservation: {tags: {team: ml}}}, {block: {start: 2026-12-10, hours: 336}}, spot]",
        "    spot_max_price: 9.5\n",
    );
    let loaded = spec::load_str("ok.yaml", &text, &Vars::new()).expect("valid");
    let c = &loaded.spec.clusters["trainer"];
    assert_eq!(
        c.capacity[0],
        CapacitySource::Reservation(ReservationRef::Id("cr-0123456789abcdef0".into()))
    );
    assert!(
        matches!(&c.capacity[1], CapacitySource::Reservation(ReservationRef::Tags { tags }) if tags["team"] == "ml")
    );
    assert!(
        matches!(&c.capacity[2], CapacitySource::Block(b) if b.start == "2026-12-10" && b.hours == 336)
    );
    assert_eq!(c.capacity[3], CapacitySource::Spot);
}

#[test]
fn capacity_errors_are_located_with_a_hint() {
    let cases: &[(&str, &str, &str, &str)] = &[
        // (capacity, extra keys, message part, YAML path)
        (
            "[{reservaton: cr-0123456789abcdef0}]",
            "",
            "unknown key `reservaton`",
            "clusters.trainer.capacity[0].reservaton",
        ),
        (
            "[{reservation: cr-12}]",
            "",
            "is not a capacity reservation id",
            "clusters.trainer.capacity[0].reservation",
        ),
        (
            "[{reservation: {tags: {}}}]",
            "",
            "needs at least one tag",
            "clusters.trainer.capacity[0].reservation.tags",
        ),
        (
            "[{block: {start: 2026-12-10}}]",
            "",
            "missing the required key `hours`",
            "clusters.trainer.capacity[0].block",
        ),
        (
            "[{block: {start: 2026-13-10, hours: 24}}]",
            "",
            "is not a date",
            "clusters.trainer.capacity[0].block.start",
        ),
        (
            "[{block: {start: 2026-12-10, hours: 30}}]",
            "",
            "cannot last 30 hours",
            "clusters.trainer.capacity[0].block.hours",
        ),
        (
            "[on-demand, {reservation: cr-0123456789abcdef0}]",
            "",
            "takes every remaining node",
            "clusters.trainer.capacity[1]",
        ),
        (
            "[reserved-1y]",
            "",
            "unknown capacity source",
            "clusters.trainer.capacity[0]",
        ),
        ("[]", "", "lists no source", "clusters.trainer.capacity"),
        (
            "[{reservation: cr-0123456789abcdef0}, on-demand]",
            "    pricing: spot\n",
            "`pricing` cannot be set with `capacity`",
            "clusters.trainer.pricing",
        ),
        (
            "[{reservation: cr-0123456789abcdef0}, {reservation: cr-0123456789abcdef0}]",
            "",
            "listed twice",
            "clusters.trainer.capacity[1].reservation",
        ),
    ];
    for (capacity, extra, needle, path) in cases {
        let d = errors(&cluster_with(capacity, extra));
        let e = find(&d, needle);
        assert_eq!(e.yaml_path.as_deref(), Some(*path), "{capacity}: {d}");
        assert!(e.line.is_some() && e.hint.is_some(), "{capacity}: {e:?}");
    }
    // Reservations are AWS's and Alibaba's: another cloud is refused where
    // it is written.
    let tencent = cluster_with("[{reservation: cr-0123456789abcdef0}, on-demand]", "")
        .replace("cloud: aws", "cloud: tencent")
        .replace("us-east-1", "ap-guangzhou");
    let d = errors(&tencent);
    assert_eq!(
        find(&d, "supported on `cloud: aws`").yaml_path.as_deref(),
        Some("clusters.trainer.capacity")
    );
    // On Alibaba Cloud a reservation is a private pool (`eap-…`, `crp-…`):
    // an EC2 id there, a pool id on AWS, and a Capacity Block there are
    // refused where they are written.
    let alibaba = |capacity: &str| {
        cluster_with(capacity, "")
            .replace("cloud: aws", "cloud: alibaba")
            .replace("us-east-1", "cn-hangzhou")
            .replace("A100-40GB:8", "A10")
    };
    let ok = spec::load_str(
        "ok.yaml",
        &alibaba("[{reservation: eap-bp67acfmxazb4ph3abcd}, {reservation: crp-bp1gubrkqutenqdd1234}, on-demand]"),
        &Vars::new(),
    );
    assert!(ok.is_ok(), "{:?}", ok.err());
    let d = errors(&alibaba("[{reservation: cr-0123456789abcdef0}, on-demand]"));
    assert!(
        find(&d, "is an AWS capacity reservation id")
            .hint
            .as_deref()
            .is_some_and(|h| h.contains("eap-")),
        "{d}"
    );
    let d = errors(&cluster_with(
        "[{reservation: eap-bp67acfmxazb4ph3abcd}, on-demand]",
        "",
    ));
    assert_eq!(
        find(&d, "is an Alibaba Cloud private pool id")
            .yaml_path
            .as_deref(),
        Some("clusters.trainer.capacity")
    );
    let d = errors(&alibaba(
        "[{block: {start: 2026-12-10, hours: 24}}, on-demand]",
    ));
    assert_eq!(
        find(
            &d,
            "Capacity Blocks in `capacity` are supported on `cloud: aws`"
        )
        .yaml_path
        .as_deref(),
        Some("clusters.trainer.capacity")
    );
    // A spot cap needs a spot market somewhere.
    let d = errors(&cluster_with("[on-demand]", "    spot_max_price: 2\n"));
    find(&d, "`spot_max_price` only applies");
}

const SPEC: &str = "\
project: cap
clusters:
  trainer:
    cloud: sandbox
    region: us-east-1
    nodes: NODES
    gpu: A100-40GB:8
    capacity: [{reservation: {tags: {team: ml}}}, on-demand]
";

fn reserve(w: &SandboxWork, count: &str, until: &str) -> String {
    w.ok(&[
        "sandbox",
        "reserve",
        "-f",
        "spec.yaml",
        "p4d.24xlarge",
        "--region",
        "us-east-1",
        "--zone",
        "us-east-1b",
        "--count",
        count,
        "--until",
        until,
        "--tag",
        "team=ml",
    ])
    .trim()
    .to_string()
}

fn node_attr(w: &SandboxWork, node: usize, key: &str) -> Option<String> {
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(w.path().join(".gpuform/cap.state.json")).expect("state"),
    )
    .expect("state json");
    state["resources"][format!("cluster.trainer.node[{node}]")]["attrs"][key]
        .as_str()
        .map(str::to_string)
}

#[test]
fn nodes_fill_the_reservation_then_on_demand() {
    let w = SandboxWork::new("cap", &SPEC.replace("NODES", "3"));
    let id = reserve(&w, "2", "2027-01-01");
    assert!(id.starts_with("cr-") && id.len() == 20, "{id}");

    let plan = w.ok(&["plan", "spec.yaml"]);
    assert!(
        plan.contains(&format!("node[0..1] in reservation {id} (p4d.24xlarge in us-east-1b, until 2027-01-01T00:00:00Z): 2 of 2 available now, 0 left after this plan")),
        "{plan}"
    );
    assert!(
        plan.contains("cluster.trainer: node[2] on-demand"),
        "{plan}"
    );
    w.ok(&["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(
        node_attr(&w, 0, "capacity_reservation").as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        node_attr(&w, 1, "capacity_reservation").as_deref(),
        Some(id.as_str())
    );
    assert_eq!(node_attr(&w, 2, "capacity_reservation"), None);
    assert_eq!(node_attr(&w, 2, "pricing").as_deref(), Some("on-demand"));
    // The reservation is full now, and the plan is stable: the cluster's
    // own nodes count as its room.
    assert_eq!(w.plan_exit(&[]), 0);

    // A fourth node: the reservation has none left, so it goes on-demand.
    w.write_spec(&SPEC.replace("NODES", "4"));
    let plan = w.ok(&["plan", "spec.yaml"]);
    assert!(
        plan.contains("0 of 2 available now, 0 left after this plan"),
        "{plan}"
    );
    assert!(plan.contains("node[2..3] on-demand"), "{plan}");
    w.ok(&["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(node_attr(&w, 3, "capacity_reservation"), None);

    // Without the on-demand tail, the nodes beyond the reservation are an error.
    w.write_spec(&SPEC.replace("NODES", "4").replace(", on-demand]", "]"));
    let out = w.run(&["plan", "spec.yaml"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has 4 node(s) but its capacity list holds 2 now"),
        "{err}"
    );
}

#[test]
fn the_cloud_refuses_a_launch_beyond_the_reservation() {
    let w = SandboxWork::new("cap", &SPEC.replace("NODES", "1"));
    let id = reserve(&w, "1", "2027-01-01");
    // Someone else fills the reservation between plan and apply: the
    // saved plan's launch is refused by the cloud, not made outside it.
    w.ok(&["plan", "spec.yaml", "--out", "p.plan"]);
    let other = SandboxWork::new(
        "other",
        &SPEC
            .replace("NODES", "1")
            .replace("project: cap", "project: other"),
    );
    let out = support::gpuform_cmd(other.path(), &["apply", "spec.yaml", "--auto-approve"])
        .env("GPUFORM_SANDBOX_DIR", w.path().join(".gpuform/sandbox"))
        .output()
        .unwrap();
    support::assert_success(&out, "the other project's apply");
    let out = w.run(&["apply", "p.plan", "--auto-approve"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "capacity reservation {id} has no available capacity"
        )),
        "{err}"
    );
}

#[test]
fn an_expired_reservation_keeps_its_nodes_and_takes_no_new_one() {
    let w = SandboxWork::new("cap", &SPEC.replace("NODES", "1"));
    let id = reserve(&w, "2", "2026-12-01");
    w.ok(&["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(
        node_attr(&w, 0, "capacity_reservation").as_deref(),
        Some(id.as_str())
    );
    // After its end (the pinned day moves on): node[0] stays where it
    // runs, a new node goes on-demand.
    w.write_spec(&SPEC.replace("NODES", "2"));
    let out = support::gpuform_cmd(w.path(), &["plan", "spec.yaml"])
        .env("GPUFORM_TODAY", "2026-12-02")
        .output()
        .unwrap();
    let plan = support::succeeded(&out, &["plan"]);
    assert!(plan.contains(&format!("reservation {id} is expired (end 2026-12-01T00:00:00Z); new nodes go to the next source, the 1 in it stay")), "{plan}");
    assert!(plan.contains("node[1] will be created"), "{plan}");
    assert!(!plan.contains("node[0] must be replaced"), "{plan}");
    // And the cloud refuses a launch into it.
    let out = support::gpuform_cmd(w.path(), &["apply", "spec.yaml", "--auto-approve"])
        .env("GPUFORM_TODAY", "2026-12-02")
        .output()
        .unwrap();
    support::assert_success(&out, "apply after expiry");
    assert_eq!(node_attr(&w, 1, "capacity_reservation"), None);
}

#[test]
fn failover_does_not_loop_on_the_reservations_zone() {
    let w = SandboxWork::new("cap", &SPEC.replace("NODES", "3"));
    reserve(&w, "2", "2027-01-01");
    // The zone runs out: failover cannot move the cluster off its
    // reservations' zone, and says so instead of retrying it.
    let out = w.run(
        &["apply", "spec.yaml", "--auto-approve"],
        Some("capacity=p4d.24xlarge@us-east-1b"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "us-east-1b, the zone of cluster trainer's reservations, has no capacity left"
        ),
        "{err}"
    );
}

#[test]
fn a_reservation_not_started_yet_takes_no_node_until_its_day() {
    let w = SandboxWork::new("cap", &SPEC.replace("NODES", "1"));
    let id = w
        .ok(&[
            "sandbox",
            "reserve",
            "-f",
            "spec.yaml",
            "p4d.24xlarge",
            "--region",
            "us-east-1",
            "--zone",
            "us-east-1b",
            "--count",
            "1",
            "--from",
            "2026-12-10",
            "--tag",
            "team=ml",
        ])
        .trim()
        .to_string();
    // Before its start (the suite's pinned day is 2026-11-29): on-demand.
    let plan = w.ok(&["plan", "spec.yaml"]);
    assert!(
        plan.contains(&format!("reservation {id} is scheduled (start 2026-12-10T00:00:00Z); new nodes go to the next source")),
        "{plan}"
    );
    assert!(plan.contains("node[0] on-demand"), "{plan}");
    // On its day: the node lands in it.
    let out = support::gpuform_cmd(w.path(), &["plan", "spec.yaml"])
        .env("GPUFORM_TODAY", "2026-12-10")
        .output()
        .unwrap();
    let plan = support::succeeded(&out, &["plan"]);
    assert!(
        plan.contains(&format!("node[0] in reservation {id}")),
        "{plan}"
    );
}
