//! Plan changes → a DAG of operations.
//!
//! A replace is a delete followed by a create; a create waits for the
//! creates of its dependencies; a delete waits for the deletes of everything
//! that depended on it (reverse order). A volume kept across its
//! instance's replacement is detached before the old instance is deleted
//! and attached (its update) after the new one is created.
//!
//! Two creates are split where the clouds let them be, so that an apply
//! follows the physical critical path ([`finish_step`]): a volume is made in
//! its zone while its instance boots and attached once both exist; a
//! firewall's group is made first (instances need only its id) and its rules
//! are authorized beside the instances' creates.

use crate::address::Address;
use crate::plan::{Action, Plan, ResourceChange};
use gpuform_provider::attr;
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
    /// The second step of a split create ([`Finish`]).
    Finish(Finish),
}

/// What a split create does after its resource exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Finish {
    /// A volume made without its instance is attached to it.
    Attach,
    /// A firewall made without rules gets them.
    Authorize,
}

impl Finish {
    /// The attribute the step sets, by an update of the made resource.
    pub fn attr(self) -> &'static str {
        match self {
            Finish::Attach => attr::ATTACHED_TO,
            Finish::Authorize => attr::INGRESS,
        }
    }

    /// The dependency role the first step goes without (the second needs it).
    pub fn deferred_role(self) -> Option<&'static str> {
        match self {
            Finish::Attach => Some("instance"),
            Finish::Authorize => None,
        }
    }
}

/// How a create is split, if it is: a volume with an instance is created
/// in its zone (every cloud makes a disk on its own: CreateVolume, CreateDisk,
/// CreateDisks, EVS create) and attached after; a firewall is created bare
/// (`FirewallSpec::bare`) and its rules, the members' one included, are
/// added after. The plan still shows one
/// resource; the journal records it after the first step, so a kill between
/// the two leaves what the next plan completes (a detached volume is
/// attached, a group without its rules gets them: see `plan::diff`).
pub fn finish_step(c: &ResourceChange) -> Option<Finish> {
    if !matches!(c.action, Action::Create | Action::Replace) {
        return None;
    }
    match c.kind {
        ResourceKind::Volume if c.deps.contains_key("instance") => Some(Finish::Attach),
        // Even without the spec's rules: the members' rule is one.
        ResourceKind::Firewall => Some(Finish::Authorize),
        _ => None,
    }
}

/// The graph nodes of one resource's create: where its dependencies come in
/// (`first`), what its dependents wait for (`ready`: the volume attached; the
/// firewall's group, whose id is all an instance needs) and its end (`last`).
#[derive(Debug, Clone, Copy)]
struct Steps {
    first: NodeIndex,
    ready: NodeIndex,
    last: NodeIndex,
}

fn add_create(g: &mut DiGraph<Op, ()>, kind: OpKind, change: usize, c: &ResourceChange) -> Steps {
    let first = g.add_node(Op { kind, change });
    let Some(finish) = finish_step(c).filter(|_| kind == OpKind::Create) else {
        return Steps {
            first,
            ready: first,
            last: first,
        };
    };
    let second = g.add_node(Op {
        kind: OpKind::Finish(finish),
        change,
    });
    g.add_edge(first, second, ());
    let ready = match finish {
        Finish::Attach => second,
        Finish::Authorize => first,
    };
    Steps {
        first,
        ready,
        last: second,
    }
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
pub fn moved_address(c: &ResourceChange) -> Option<Address> {
    c.id.as_ref()
        .filter(|_| is_move(c))
        .map(|id| c.address.duplicate(id))
}

pub fn build_graph(plan: &Plan) -> Result<DiGraph<Op, ()>, String> {
    let mut g: DiGraph<Op, ()> = DiGraph::new();
    let mut creates: HashMap<&str, Steps> = HashMap::new();
    let mut deletes: HashMap<&str, NodeIndex> = HashMap::new();
    for (i, c) in plan.changes.iter().enumerate() {
        let a = c.address.as_str();
        match c.action {
            Action::Create => {
                creates.insert(a, add_create(&mut g, OpKind::Create, i, c));
            }
            Action::Update => {
                creates.insert(a, add_create(&mut g, OpKind::Update, i, c));
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
                let steps = add_create(&mut g, OpKind::Create, i, c);
                // Moving to another provider or region: the new one first,
                // so that a failure leaves the old cluster running.
                if is_move(&plan.changes[i]) {
                    g.add_edge(steps.last, d, ());
                } else {
                    g.add_edge(d, steps.first, ());
                }
                deletes.insert(a, d);
                creates.insert(a, steps);
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
        if let Some(&steps) = creates.get(c.address.as_str()) {
            let deferred = finish_step(c).and_then(Finish::deferred_role);
            for (role, dep) in &c.deps {
                if !known.contains_key(dep.as_str()) {
                    return Err(format!(
                        "{} depends on {dep}, which is not in the plan",
                        c.address
                    ));
                }
                // A split create's first step goes without the deferred
                // dependency (a volume's instance); its second step needs it.
                let needs = if Some(role.as_str()) == deferred && steps.last != steps.first {
                    steps.last
                } else {
                    steps.first
                };
                if let Some(d) = creates.get(dep.as_str()) {
                    g.add_edge(d.ready, needs, ());
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
    let firsts: HashMap<&str, NodeIndex> = creates.iter().map(|(a, s)| (*a, s.first)).collect();
    for (d, n) in range_reuses(plan, &firsts, &deletes, &known) {
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
    let stays = |network: &&Address| {
        known
            .get(network.as_str())
            .is_none_or(|c| c.action != Action::Replace)
    };
    let range = |attrs: &Option<Attrs>| {
        let cidr = attrs.as_ref()?.get(attr::CIDR)?.as_str()?;
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
            // One network, one cloud: an old subnet recorded under the same
            // network address but in another cloud or region (a move that a
            // crash interrupted) frees nothing the new one needs.
            let same_place = old.provider == new.provider && old.region == new.region;
            if old.address != new.address
                && same_place
                && overlap(range(&old.before), range(&new.after))
            {
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
    c.after.as_ref()?.get(attr::ATTACHED_TO)?;
    c.deps.get("instance").map(Address::as_str)
}
