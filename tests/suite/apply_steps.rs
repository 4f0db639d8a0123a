//! The apply's steps follow the physical dependencies (issue 32): a data
//! volume is made while its instance boots and attached once both exist; a
//! firewall's group is all its instances wait for, its rules come beside
//! them. Checked on the graph of a real plan, then end to end: a kill
//! between the two steps of either leaves what the next apply completes.

use crate::support;
use gpuform::apply::graph::{build_graph, Finish, Op, OpKind};
use petgraph::algo::has_path_connecting;
use petgraph::graph::{DiGraph, NodeIndex};

const SPEC: &str = "project: steps\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n    ingress:\n      - {protocol: tcp, ports: 22, cidr: 10.0.0.0/8}\n    disk:\n      data_gb: 100\n";

fn op(g: &DiGraph<Op, ()>, plan: &gpuform::plan::Plan, address: &str, kind: OpKind) -> NodeIndex {
    g.node_indices()
        .find(|&n| g[n].kind == kind && plan.changes[g[n].change].address == address)
        .unwrap_or_else(|| panic!("no {kind:?} of {address}"))
}

#[test]
fn volumes_and_firewall_rules_wait_only_for_what_they_need() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let json = support::stdout_of(dir.path(), &["plan", "spec.yaml", "--sandbox", "--json"]);
    let plan: gpuform::plan::Plan = serde_json::from_str(&json).unwrap();
    let g = build_graph(&plan).unwrap();
    let path = |a: NodeIndex, b: NodeIndex| has_path_connecting(&g, a, b, None);
    let node = op(&g, &plan, "cluster.t.node[0]", OpKind::Create);
    let subnet = op(&g, &plan, "cluster.t.subnet[us-east-1a]", OpKind::Create);
    let volume = op(&g, &plan, "cluster.t.volume[0]", OpKind::Create);
    let attach = op(
        &g,
        &plan,
        "cluster.t.volume[0]",
        OpKind::Finish(Finish::Attach),
    );
    let group = op(&g, &plan, "cluster.t.firewall", OpKind::Create);
    let rules = op(
        &g,
        &plan,
        "cluster.t.firewall",
        OpKind::Finish(Finish::Authorize),
    );

    assert!(
        path(subnet, node) && path(group, node),
        "an instance needs its subnet and group"
    );
    assert!(
        !path(node, volume) && !path(subnet, volume),
        "a volume is made in its zone: it waits for nothing"
    );
    assert!(
        path(volume, attach) && path(node, attach),
        "an attach needs both"
    );
    assert!(path(group, rules), "rules need their group");
    assert!(
        !path(rules, node),
        "an instance does not wait for the group's rules"
    );
    // One operation per step: network, subnet, firewall, node and volume,
    // the last two in two steps each (the plan still shows five resources).
    assert_eq!(plan.changes.len(), 5);
    assert_eq!(g.node_count(), 7);
}

/// A kill after each call of the apply (at parallelism 1, so every step
/// boundary is hit), then one more apply: exactly the spec, the volume
/// attached, the rules there, and a clean plan.
#[test]
fn a_kill_between_the_steps_of_a_split_create_is_completed_by_the_next_apply() {
    let apply = ["apply", "spec.yaml", "--sandbox", "--auto-approve", "-q"];
    let reference = support::SandboxWork::new("steps", SPEC);
    reference.ok(&apply);
    let want: std::collections::BTreeSet<String> = reference.recorded().keys().cloned().collect();
    for n in 1.. {
        let w = support::SandboxWork::new("steps", SPEC);
        let mut crashing = apply.to_vec();
        crashing.extend_from_slice(&["--parallelism", "1"]);
        let out = w.run(&crashing, Some(&format!("crash_after={n}")));
        if out.status.success() {
            assert_eq!(n, 8, "one call per step: 7 steps");
            break;
        }
        let context = format!("crash at call {n}");
        w.ok(&apply);
        w.assert_exact(&want, &context);
        let live = w.live();
        let volume = live
            .iter()
            .find(|r| r.address.as_deref() == Some("cluster.t.volume[0]"))
            .unwrap_or_else(|| panic!("{context}: no volume"));
        let node = live
            .iter()
            .find(|r| r.address.as_deref() == Some("cluster.t.node[0]"))
            .unwrap_or_else(|| panic!("{context}: no node"));
        assert_eq!(
            volume.attached_to.as_deref(),
            Some(node.id.as_str()),
            "{context}: the volume is attached to its node"
        );
        let fw = live
            .iter()
            .find(|r| r.address.as_deref() == Some("cluster.t.firewall"))
            .unwrap_or_else(|| panic!("{context}: no firewall"));
        assert_eq!(
            fw.ingress,
            vec![
                support::MEMBERS.to_string(),
                support::EGRESS.to_string(),
                support::rule("tcp", 22, 22, "10.0.0.0/8")
            ],
            "{context}: the group has its rules and the members' one"
        );
        let out = w.run(
            &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
            None,
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{context}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
