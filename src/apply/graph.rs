//! Plan changes → a DAG of operations.
//!
//! A replace is a delete followed by a create; a create waits for the
//! creates of its dependencies; a delete waits for the deletes of everything
//! that depended on it (reverse order). A volume kept across its
//! instance's replacement is detached before the old instance is deleted
//! and attached (its update) after the new one is created.

use crate::address::Address;
use crate::plan::{Action, Plan, ResourceChange};
use gpuform_provider::{Attrs, ResourceKind};
use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Create,
    Update,
    Delete,
    /// Detaches a kept volume from the instance about to be deleted.
    Detach,
}

#[derive(Debug, Clone)]
pub struct Op {
    pub kind: OpKind,
    /// Index into `plan.changes`.
    pub change: usize,
}

/// A replace that moves the resource to another provider or region.
pub fn is_move(c: &ResourceChange) -> bool {
    c.old_provider.is_some() || c.old_region.is_some()
}

/// The address a moved resource's old copy is recorded under while both
/// exist, so that neither is ever unrecorded: `ADDRESS~OLD_ID`.
pub fn moved_address(c: &ResourceChange) -> Option<String> {
    c.id.as_ref()
        .filter(|_| is_move(c))
        .map(|id| Address::duplicate(&c.address, id))
}

pub fn build_graph(plan: &Plan) -> Result<DiGraph<Op, ()>, String> {
    let mut g: DiGraph<Op, ()> = DiGraph::new();
    let mut creates: HashMap<&str, NodeIndex> = HashMap::new();
    let mut deletes: HashMap<&str, NodeIndex> = HashMap::new();
    for (i, c) in plan.changes.iter().enumerate() {
        let a = c.address.as_str();
        match c.action {
            Action::Create => {
                creates.insert(
                    a,
                    g.add_node(Op {
                        kind: OpKind::Create,
                        change: i,
                    }),
                );
            }
            Action::Update => {
                creates.insert(
                    a,
                    g.add_node(Op {
                        kind: OpKind::Update,
                        change: i,
                    }),
                );
            }
            Action::Delete => {
                deletes.insert(
                    a,
                    g.add_node(Op {
                        kind: OpKind::Delete,
                        change: i,
                    }),
                );
            }
            Action::Replace => {
                let d = g.add_node(Op {
                    kind: OpKind::Delete,
                    change: i,
                });
                let c = g.add_node(Op {
                    kind: OpKind::Create,
                    change: i,
                });
                // Moving to another provider or region: the new one first,
                // so that a failure leaves the old cluster running.
                if is_move(&plan.changes[i]) {
                    g.add_edge(c, d, ());
                } else {
                    g.add_edge(d, c, ());
                }
                deletes.insert(a, d);
                creates.insert(a, c);
            }
            Action::NoOp => {}
        }
    }
    let known: HashMap<&str, &ResourceChange> = plan
        .changes
        .iter()
        .map(|c| (c.address.as_str(), c))
        .collect();
    for c in &plan.changes {
        if let Some(&n) = creates.get(c.address.as_str()) {
            for dep in c.deps.values() {
                if !known.contains_key(dep.as_str()) {
                    return Err(format!(
                        "{} depends on {dep}, which is not in the plan",
                        c.address
                    ));
                }
                if let Some(&d) = creates.get(dep.as_str()) {
                    g.add_edge(d, n, ());
                }
            }
        }
        if let Some(&n) = deletes.get(c.address.as_str()) {
            for dep in c.old_deps.values() {
                if let Some(&d) = deletes.get(dep.as_str()) {
                    g.add_edge(n, d, ());
                }
            }
        }
    }
    // Kept volumes of replaced instances: detach before the old instance goes.
    for (i, c) in plan.changes.iter().enumerate() {
        let Some(instance) = reattached_instance(c) else {
            continue;
        };
        let Some(ic) = known.get(instance) else {
            continue;
        };
        if ic.action != Action::Replace || is_move(ic) {
            continue;
        }
        if let Some(&d) = deletes.get(instance) {
            let n = g.add_node(Op {
                kind: OpKind::Detach,
                change: i,
            });
            g.add_edge(n, d, ());
        }
    }
    // A subnet's range is free only once the subnet that held it is gone.
    for (d, n) in range_reuses(plan, &creates, &deletes, &known) {
        g.add_edge(d, n, ());
    }
    if let Err(cycle) = toposort(&g, None) {
        let c = &plan.changes[g[cycle.node_id()].change];
        return Err(format!("dependency cycle through {}", c.address));
    }
    Ok(g)
}

/// (delete, create) pairs of subnets in one network, where the delete frees
/// an address range the create reuses. Only networks that stay count: a
/// replaced network takes its subnets with it, already in order, and a
/// moved one is another cloud's or region's network. A range that does not
/// parse is taken to overlap: waiting is slower, never wrong.
fn range_reuses(
    plan: &Plan,
    creates: &HashMap<&str, NodeIndex>,
    deletes: &HashMap<&str, NodeIndex>,
    known: &HashMap<&str, &ResourceChange>,
) -> Vec<(NodeIndex, NodeIndex)> {
    let stays = |network: &&String| {
        known
            .get(network.as_str())
            .is_none_or(|c| c.action != Action::Replace)
    };
    let range = |attrs: &Option<Attrs>| {
        let cidr = attrs.as_ref()?.get("cidr")?.as_str()?;
        cidr.parse::<ipnet::IpNet>().ok()
    };
    let overlap = |a: Option<ipnet::IpNet>, b: Option<ipnet::IpNet>| match (a, b) {
        (Some(a), Some(b)) => a.contains(&b.network()) || b.contains(&a.network()),
        _ => true,
    };
    let subnets = plan
        .changes
        .iter()
        .filter(|c| c.kind == ResourceKind::Subnet && !is_move(c));
    let mut freed: HashMap<&str, Vec<(NodeIndex, &ResourceChange)>> = HashMap::new();
    for old in subnets.clone() {
        if let (Some(&d), Some(network)) = (
            deletes.get(old.address.as_str()),
            old.old_deps.get("network").filter(stays),
        ) {
            freed.entry(network.as_str()).or_default().push((d, old));
        }
    }
    let mut pairs = Vec::new();
    // Only a create uses a range anew (`creates` holds updates too).
    for new in subnets.filter(|c| c.action != Action::Update) {
        let (Some(&n), Some(network)) = (
            creates.get(new.address.as_str()),
            new.deps.get("network").filter(stays),
        ) else {
            continue;
        };
        for &(d, old) in freed.get(network.as_str()).into_iter().flatten() {
            if old.address != new.address && overlap(range(&old.before), range(&new.after)) {
                pairs.push((d, n));
            }
        }
    }
    pairs
}

/// The instance a volume update (re-)attaches to, by address.
pub fn reattached_instance(c: &ResourceChange) -> Option<&str> {
    if c.action != Action::Update || c.kind != ResourceKind::Volume {
        return None;
    }
    c.after.as_ref()?.get("attached_to")?;
    c.deps.get("instance").map(String::as_str)
}
