//! Plan changes → a DAG of operations.
//!
//! A replace is a delete followed by a create; a create waits for the
//! creates of its dependencies; a delete waits for the deletes of everything
//! that depended on it (reverse order). A volume kept across its
//! instance's replacement is detached before the old instance is deleted
//! and attached (its update) after the new one is created.

use crate::address::Address;
use crate::plan::{Action, Plan, ResourceChange};
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
    if let Err(cycle) = toposort(&g, None) {
        let c = &plan.changes[g[cycle.node_id()].change];
        return Err(format!("dependency cycle through {}", c.address));
    }
    Ok(g)
}

/// The instance a volume update (re-)attaches to, by address.
pub fn reattached_instance(c: &ResourceChange) -> Option<&str> {
    if c.action != Action::Update || c.kind != gpuform_provider::ResourceKind::Volume {
        return None;
    }
    c.after.as_ref()?.get("attached_to")?;
    c.deps.get("instance").map(String::as_str)
}
