//! One pass of `gpuform reconcile`: refresh, plan, and apply only the
//! changes that *restore* what the spec asked for and an apply already made
//! true — a node the cloud reclaimed or someone deleted, a volume detached,
//! a rule or tag removed, a duplicate an interrupted run left, a cluster
//! whose lifetime ended. Everything else (a spec edit, a replacement nobody
//! asked for, a deletion) waits for a person's `gpuform apply`.
//!
//! A cluster's `maintenance_window` bounds the *disruptive* changes — those
//! that replace or delete something that still runs: its spot fallback's
//! on-demand nodes going back to spot once the hold is over (which reconcile
//! makes on its own only for a cluster with a window), and `--apply-all`'s
//! replacements and deletions. Outside the window they are postponed and
//! reported with the window's next opening; re-creating what vanished, a
//! leftover's deletion and an expired lifetime's deletions never wait.
//!
//! The test of "restores": the state records the attributes the last apply
//! asked for. A change whose target equals that record undoes something
//! done behind gpuform's back; a change whose target differs from it is the
//! spec's own edit, which a person reviews. Repairs go through the same
//! journaled apply as `gpuform apply`, under the state lock, so a reconciler
//! killed at any instant leaves what the next one (or an apply) finishes.

use super::{apply_plan, make_plan, EngineError, LockedState, PlanRequest};
use crate::address::Address;
use crate::apply::{ApplyOptions, ApplyReport};
use crate::plan::diff::{changed_keys, totals};
use crate::plan::{Action, Plan, ResourceChange};
use crate::providers::Providers;
use crate::refresh::Current;
use crate::spec::window::Standing;
use gpuform_provider::{attr, ResourceKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Why a change is a repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// A spot node the cloud took back.
    Reclaimed,
    /// Deleted or terminated outside gpuform.
    Deleted,
    /// An attribute, rule, tag or attachment changed outside gpuform.
    Drift,
    /// A create an interrupted apply (or reconcile) started.
    Interrupted,
    /// A duplicate tagged with this state's lineage, or a record of what is gone.
    Leftover,
    /// The cluster's `expires_at` passed.
    Expired,
    /// A spot fallback's on-demand node goes back to spot (the hold is
    /// over), in the cluster's maintenance window.
    BackToSpot,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Reclaimed => "reclaimed",
            Cause::Deleted => "deleted",
            Cause::Drift => "drift",
            Cause::Interrupted => "interrupted",
            Cause::Leftover => "leftover",
            Cause::Expired => "expired",
            Cause::BackToSpot => "back-to-spot",
        }
    }
}

/// A change this pass makes.
#[derive(Debug, Clone, Serialize)]
pub struct Repair {
    pub address: Address,
    /// The cloud's id the state recorded before this repair (the reclaimed
    /// or deleted instance), for matching a cloud's event about it.
    pub id: Option<String>,
    pub action: Action,
    pub cause: Cause,
    /// In words, for the log line.
    pub why: String,
}

/// A change this pass leaves for a person.
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    pub address: Address,
    pub action: Action,
    pub why: String,
}

/// A disruptive change a cluster's maintenance window holds back.
#[derive(Debug, Clone, Serialize)]
pub struct Postponed {
    pub address: Address,
    pub action: Action,
    pub why: String,
    /// When the window opens next (`YYYY-MM-DDTHH:MM:SSZ`).
    pub until: String,
    /// The window in words (`sat, sun 02:00 UTC for 4h`).
    pub window: String,
}

/// What one pass found and did.
#[derive(Debug, Default, Serialize)]
pub struct Pass {
    pub repairs: Vec<Repair>,
    pub pending: Vec<Pending>,
    pub postponed: Vec<Postponed>,
    /// Nodes per cluster the spec asks for, and how many run (before repair).
    pub nodes: BTreeMap<String, NodeCount>,
    /// The apply of the repairs; `None` when there was nothing to repair.
    #[serde(skip)]
    pub report: Option<ApplyReport>,
    /// Milliseconds spent refreshing and planning (what a repair waits for
    /// before its first call).
    pub plan_ms: u64,
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct NodeCount {
    pub desired: u32,
    pub running: u32,
}

pub struct PassOptions<'a> {
    /// Apply the changes that need review too (`--apply-all`): reconcile
    /// then keeps the spec true like a continuous `gpuform apply`.
    pub apply_all: bool,
    pub apply: &'a ApplyOptions,
}

/// One pass on a locked state: plan, sort the changes, apply the repairs.
pub async fn pass(
    locked: &mut LockedState,
    req: &PlanRequest<'_>,
    providers: Arc<Providers>,
    opts: &PassOptions<'_>,
    cancel: Arc<AtomicBool>,
) -> Result<Pass, EngineError> {
    let started = std::time::Instant::now();
    let now = crate::clock::now_secs();
    let (mut plan, mut current) =
        make_plan(req, locked.doc.clone(), locked.existed, &providers).await?;
    let nodes = node_counts(&plan, &current);
    let mut sorting = Sorting {
        expired: expired_clusters(req, now),
        on_demand: BTreeSet::new(),
        fell_back: fell_back(&locked.doc, &req.loaded.spec),
        windows: windows(&req.loaded.spec, now),
        apply_all: opts.apply_all,
    };
    let (mut repairs, mut pending, mut postponed) = sort_changes(&plan, &current, &sorting);
    // Reclaims are counted (in state, before anything is made) for the
    // clusters' spot fallback; when it is on, the reclaimed nodes come back
    // on-demand: plan again with them so.
    let fallen = record_reclaims(locked, req, &repairs, &current, now)?;
    if !fallen.is_empty() {
        let mut again = req.clone();
        again.resolve.on_demand_nodes = fallen.clone();
        (plan, current) = make_plan(&again, locked.doc.clone(), locked.existed, &providers).await?;
        sorting.on_demand = fallen;
        sorting.fell_back = fell_back(&locked.doc, &req.loaded.spec);
        (repairs, pending, postponed) = sort_changes(&plan, &current, &sorting);
    }
    let mut out = Pass {
        nodes,
        plan_ms: started.elapsed().as_millis() as u64,
        ..Pass::default()
    };
    out.pending = pending;
    out.postponed = postponed;
    if repairs.is_empty() {
        return Ok(out);
    }
    let keep: BTreeSet<&str> = repairs.iter().map(|r| r.address.as_str()).collect();
    let mut narrowed = plan.clone();
    narrowed
        .changes
        .retain(|c| c.action == Action::NoOp || keep.contains(c.address.as_str()));
    (narrowed.summary, narrowed.cost) = totals(&narrowed.changes);
    out.repairs = repairs;
    let report = apply_plan(
        locked,
        Arc::new(narrowed),
        Some(current),
        providers,
        opts.apply,
        cancel,
    )
    .await?;
    out.report = Some(report);
    Ok(out)
}

/// Records this pass's reclaims in state (each reclaimed instance once,
/// whatever number of passes see it), and returns the reclaimed nodes whose
/// cluster's spot fallback is on now.
fn record_reclaims(
    locked: &mut LockedState,
    req: &PlanRequest,
    repairs: &[Repair],
    current: &Current,
    now: i64,
) -> Result<BTreeSet<Address>, EngineError> {
    let mut changed = false;
    let mut reclaimed: BTreeSet<Address> = BTreeSet::new();
    for r in repairs.iter().filter(|r| r.cause == Cause::Reclaimed) {
        let (Some(cluster), Some(record)) =
            (r.address.cluster(), current.doc.resources.get(&r.address))
        else {
            continue;
        };
        let log = locked.doc.reclaims.entry(cluster.to_string()).or_default();
        if !log
            .iter()
            .any(|e| e.split_whitespace().nth(1) == Some(record.id.as_str()))
        {
            log.push(format!(
                "{} {}",
                crate::clock::format_instant(now),
                record.id
            ));
            let excess = log.len().saturating_sub(crate::state::RECLAIM_LOG);
            log.drain(..excess);
            changed = true;
        }
        reclaimed.insert(r.address.clone());
    }
    if changed {
        locked.store.commit(&mut locked.doc)?;
    }
    let (_, fallback) = spot_pools(&locked.doc, &req.loaded.spec, now);
    Ok(reclaimed
        .into_iter()
        .filter(|a| a.cluster().is_some_and(|c| fallback.contains(c)))
        .collect())
}

/// The clusters of the spec whose `expires_at` has passed: resolve leaves
/// them out, so the plan deletes them, and those deletions are repairs.
fn expired_clusters(req: &PlanRequest, now: i64) -> BTreeSet<String> {
    crate::resolve::expired_clusters(&req.loaded.spec, now)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// The clusters whose spot fallback has been on (their reclaim log holds
/// at least `after` reclaims): an on-demand node of theirs that the spec
/// wants on spot again is the policy's own change, not a spec edit.
fn fell_back(doc: &crate::state::StateDoc, spec: &crate::spec::Spec) -> BTreeSet<String> {
    spec.clusters
        .iter()
        .filter(|(name, c)| {
            let after = c
                .spot_policy
                .as_ref()
                .and_then(|p| p.fallback.as_ref())
                .map(|f| f.after.max(1) as usize);
            after.is_some_and(|n| doc.reclaims.get(*name).is_some_and(|log| log.len() >= n))
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Each cluster with a `maintenance_window`: whether it is open at `now`,
/// and the window in words.
fn windows(spec: &crate::spec::Spec, now: i64) -> BTreeMap<String, (Standing, String)> {
    spec.clusters
        .iter()
        .filter_map(|(name, c)| {
            let w = c.maintenance_window.as_ref()?;
            Some((name.clone(), (w.standing(now), w.describe())))
        })
        .collect()
}

/// What sorting a plan's changes needs besides the plan.
#[derive(Debug, Default)]
pub struct Sorting {
    /// Clusters past their `expires_at`.
    pub expired: BTreeSet<String>,
    /// Reclaimed nodes that come back on-demand (the fallback is on).
    pub on_demand: BTreeSet<Address>,
    /// Clusters whose spot fallback has been on ([`fell_back`]).
    pub fell_back: BTreeSet<String>,
    /// Clusters with a maintenance window: open or closed now, in words.
    pub windows: BTreeMap<String, (Standing, String)>,
    /// `--apply-all`.
    pub apply_all: bool,
}

/// Whether a change replaces or deletes something that still runs (a
/// leftover duplicate and an expired cluster's resources excepted: nothing
/// the spec keeps depends on the first, and the second is the user's order).
fn disruptive(r: &Repair) -> bool {
    match r.action {
        Action::Replace => true,
        Action::Delete => !matches!(r.cause, Cause::Leftover | Cause::Expired),
        _ => false,
    }
}

/// Splits a plan's changes into repairs, changes for review, and disruptive
/// changes postponed to their cluster's maintenance window. A repair whose
/// dependency is a create or replace that waits (for review or the window)
/// waits too.
pub fn sort_changes(
    plan: &Plan,
    current: &Current,
    s: &Sorting,
) -> (Vec<Repair>, Vec<Pending>, Vec<Postponed>) {
    let mut repairs: Vec<Repair> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut postponed: Vec<Postponed> = Vec::new();
    for c in &plan.changes {
        if c.action == Action::NoOp {
            continue;
        }
        // A purchase has no undo: never a repair, not even with --apply-all
        // (the engine's purchase guard would refuse the whole pass).
        if c.kind == ResourceKind::Block && c.action == Action::Create {
            pending.push(Pending {
                address: c.address.clone(),
                action: c.action,
                why: "buys a Capacity Block (paid up front, cannot be cancelled), which is never a repair: review it with `gpuform apply --allow-purchase`".into(),
            });
            continue;
        }
        match classify(c, current, s) {
            Ok((cause, why)) => repairs.push(Repair {
                address: c.address.clone(),
                id: recorded_id(current, &c.address),
                action: c.action,
                cause,
                why,
            }),
            Err(_) if s.apply_all => repairs.push(Repair {
                address: c.address.clone(),
                id: recorded_id(current, &c.address),
                action: c.action,
                cause: Cause::Drift,
                why: "applied with --apply-all".into(),
            }),
            Err(why) => pending.push(Pending {
                address: c.address.clone(),
                action: c.action,
                why,
            }),
        }
    }
    // Outside its cluster's window, a disruptive change waits for it.
    let mut kept = Vec::with_capacity(repairs.len());
    for r in repairs {
        let closed =
            r.address
                .cluster()
                .and_then(|c| s.windows.get(c))
                .and_then(|(standing, words)| match standing {
                    Standing::Closed { opens } => Some((*opens, words)),
                    Standing::Open { .. } => None,
                });
        match closed {
            Some((opens, words)) if disruptive(&r) => postponed.push(Postponed {
                address: r.address,
                action: r.action,
                why: r.why,
                // A window that does not parse (load refuses it) never opens.
                until: if opens == i64::MAX {
                    "never (the window does not parse)".into()
                } else {
                    crate::clock::format_instant(opens)
                },
                window: words.clone(),
            }),
            _ => kept.push(r),
        }
    }
    repairs = kept;
    // A repair that needs a resource only a reviewed or postponed change
    // makes (or remakes) waits with it; repeat until nothing moves.
    let by_address: BTreeMap<&str, &ResourceChange> = plan
        .changes
        .iter()
        .map(|c| (c.address.as_str(), c))
        .collect();
    let remakes = |a: Action| matches!(a, Action::Create | Action::Replace);
    loop {
        let mut waiting: BTreeMap<Address, Option<&Postponed>> = pending
            .iter()
            .filter(|p| remakes(p.action))
            .map(|p| (p.address.clone(), None))
            .collect();
        waiting.extend(
            postponed
                .iter()
                .filter(|p| remakes(p.action))
                .map(|p| (p.address.clone(), Some(p))),
        );
        let before = repairs.len();
        let mut kept = Vec::with_capacity(repairs.len());
        let mut held = Vec::new();
        for r in repairs {
            let blocked = by_address.get(r.address.as_str()).and_then(|c| {
                c.deps
                    .values()
                    .find_map(|d| waiting.get(d).map(|p| (d.clone(), p.cloned())))
            });
            match blocked {
                Some((dep, None)) => pending.push(Pending {
                    address: r.address,
                    action: r.action,
                    why: format!("waits for {dep}, which needs review"),
                }),
                Some((dep, Some(p))) => held.push(Postponed {
                    address: r.address,
                    action: r.action,
                    why: format!("waits for {dep}, postponed to the maintenance window"),
                    until: p.until,
                    window: p.window,
                }),
                None => kept.push(r),
            }
        }
        postponed.extend(held);
        repairs = kept;
        if repairs.len() == before {
            break;
        }
    }
    (repairs, pending, postponed)
}

fn recorded_id(current: &Current, address: &str) -> Option<String> {
    current.doc.resources.get(address).map(|r| r.id.clone())
}

/// Whether one change restores what was applied (`Ok`: its cause) or is
/// something a person should review (`Err`: why).
fn classify(c: &ResourceChange, current: &Current, s: &Sorting) -> Result<(Cause, String), String> {
    let record = current.doc.resources.get(&c.address);
    let gone = matches!(current.observed.get(&c.address), Some(None));
    match c.action {
        Action::Create => match record {
            Some(r) if gone => {
                let wanted = c.after.clone().unwrap_or_default();
                // A spot fallback's market is the policy's choice, not an edit.
                let fallback = s.on_demand.contains(&c.address);
                let edited: Vec<String> = changed_keys(&r.attrs, &wanted)
                    .into_iter()
                    .filter(|k| !(fallback && k == attr::PRICING))
                    .collect();
                if !edited.is_empty() {
                    return Err(format!(
                        "{} is gone and the spec changed since it was made ({}): the new one is the spec's edit",
                        r.id,
                        edited.join(", ")
                    ));
                }
                let spot = r.attrs.get(attr::PRICING).and_then(|p| p.as_str()) == Some("spot");
                Ok(if spot {
                    (
                        Cause::Reclaimed,
                        if fallback {
                            format!(
                                "spot instance {} was reclaimed; back on-demand (spot_policy.fallback)",
                                r.id
                            )
                        } else {
                            format!("spot instance {} was reclaimed", r.id)
                        },
                    )
                } else {
                    (
                        Cause::Deleted,
                        format!("{} was deleted outside gpuform", r.id),
                    )
                })
            }
            None if c.token.is_some() => Ok((
                Cause::Interrupted,
                "an interrupted run started it; finished with the same idempotency token".into(),
            )),
            _ => Err("new in the spec".into()),
        },
        Action::Update => {
            let (Some(r), Some(before), Some(after)) = (record, &c.before, &c.after) else {
                return Err("changed in the spec".into());
            };
            let edited: Vec<String> = changed_keys(&r.attrs, after)
                .into_iter()
                .filter(|k| !c.kind.completion_attrs().contains(&k.as_str()))
                .collect();
            if !edited.is_empty() {
                return Err(format!("the spec changed {}", edited.join(", ")));
            }
            let drifted = changed_keys(before, after);
            let completion = c.kind.completion_attrs();
            if !drifted.is_empty() && drifted.iter().all(|k| completion.contains(&k.as_str())) {
                // A volume whose node was reclaimed, replaced or detached it.
                return Ok((
                    Cause::Drift,
                    "not attached to its node: attached again".into(),
                ));
            }
            Ok((
                Cause::Drift,
                format!("{} changed outside gpuform", drifted.join(", ")),
            ))
        }
        Action::Replace if back_to_spot(c, current, s) => Ok((
            Cause::BackToSpot,
            format!(
                "{} runs on-demand since the spot fallback, whose hold is over: back to spot (spot_policy.fallback)",
                record.map(|r| r.id.as_str()).unwrap_or("the node")
            ),
        )),
        Action::Replace => Err(match &c.reason {
            Some(r) => format!("a replacement ({r})"),
            None => format!(
                "a replacement ({} cannot change in place)",
                c.replace_because.join(", ")
            ),
        }),
        Action::Delete => {
            let address = &c.address;
            if address.is_duplicate() || current.strays.contains_key(&c.address) {
                Ok((
                    Cause::Leftover,
                    "a duplicate left by an interrupted run".into(),
                ))
            } else if gone {
                Ok((Cause::Leftover, "already gone; forgotten".into()))
            } else if let Some(cluster) = address.cluster().filter(|n| s.expired.contains(*n)) {
                Ok((
                    Cause::Expired,
                    format!("cluster {cluster}'s lifetime ended (expires_at)"),
                ))
            } else {
                Err("no longer in the spec".into())
            }
        }
        Action::NoOp => Err("nothing to do".into()),
    }
}

/// Whether a replacement moves a node its cluster's spot fallback made
/// on-demand back to spot, and nothing else: the policy's own change, made
/// by reconcile for a cluster with a maintenance window (in it), left for
/// review otherwise.
fn back_to_spot(c: &ResourceChange, current: &Current, s: &Sorting) -> bool {
    let Some(cluster) = c.address.cluster() else {
        return false;
    };
    let (Some(r), Some(after)) = (current.doc.resources.get(&c.address), &c.after) else {
        return false;
    };
    let gone = matches!(current.observed.get(&c.address), Some(None));
    let pricing = |attrs: &gpuform_provider::Attrs| {
        attrs
            .get(attr::PRICING)
            .and_then(|p| p.as_str())
            .map(String::from)
    };
    c.kind == gpuform_provider::ResourceKind::Instance
        && !gone
        && s.windows.contains_key(cluster)
        && s.fell_back.contains(cluster)
        && pricing(&r.attrs).as_deref() == Some("on-demand")
        && pricing(after).as_deref() == Some("spot")
        && changed_keys(&r.attrs, after)
            .iter()
            .all(|k| k == attr::PRICING || c.kind.completion_attrs().contains(&k.as_str()))
}

/// For the clusters with a `spot_policy`: the market each recorded node
/// runs in, and which clusters' fallback is on at `now` (their reclaims).
pub(super) fn spot_pools(
    doc: &crate::state::StateDoc,
    spec: &crate::spec::Spec,
    now: i64,
) -> (BTreeMap<Address, String>, BTreeSet<String>) {
    let mut pricing = BTreeMap::new();
    let mut fallback = BTreeSet::new();
    for (name, c) in &spec.clusters {
        let Some(policy) = &c.spot_policy else {
            continue;
        };
        for (address, r) in doc.resources.range(Address::in_cluster(name, "")..) {
            if !address.belongs_to(name) {
                break;
            }
            if let Some(p) = r.attrs.get(attr::PRICING).and_then(|p| p.as_str()) {
                pricing.insert(address.clone(), p.to_string());
            }
        }
        let reclaims: Vec<i64> = doc
            .reclaims
            .get(name)
            .map(|v| {
                v.iter()
                    .filter_map(|e| crate::clock::parse_instant(e.split_whitespace().next()?))
                    .collect()
            })
            .unwrap_or_default();
        if policy
            .fallback
            .as_ref()
            .is_some_and(|f| f.active(&reclaims, now))
        {
            fallback.insert(name.clone());
        }
    }
    (pricing, fallback)
}

/// Nodes per cluster: what the spec asks for and what runs now.
fn node_counts(plan: &Plan, current: &Current) -> BTreeMap<String, NodeCount> {
    let mut out: BTreeMap<String, NodeCount> = BTreeMap::new();
    for c in &plan.changes {
        if c.kind != gpuform_provider::ResourceKind::Instance || c.action == Action::Delete {
            continue;
        }
        let address = &c.address;
        let Some(cluster) = address.cluster() else {
            continue;
        };
        let n = out.entry(cluster.to_string()).or_default();
        n.desired += 1;
        let recorded = current.doc.resources.contains_key(&c.address);
        let gone = matches!(current.observed.get(&c.address), Some(None));
        if recorded && !gone {
            n.running += 1;
        }
    }
    out
}
