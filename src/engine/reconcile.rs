//! One pass of `gpuform reconcile`: refresh, plan, and apply only the
//! changes that *restore* what the spec asked for and an apply already made
//! true — a node the cloud reclaimed or someone deleted, a volume detached,
//! a rule or tag removed, a duplicate an interrupted run left, a cluster
//! whose lifetime ended. Everything else (a spec edit, a replacement nobody
//! asked for, a deletion) waits for a person's `gpuform apply`.
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
        }
    }
}

/// A change this pass makes.
#[derive(Debug, Clone, Serialize)]
pub struct Repair {
    pub address: String,
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
    pub address: String,
    pub action: Action,
    pub why: String,
}

/// What one pass found and did.
#[derive(Debug, Default, Serialize)]
pub struct Pass {
    pub repairs: Vec<Repair>,
    pub pending: Vec<Pending>,
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
    let (mut plan, mut current) =
        make_plan(req, locked.doc.clone(), locked.existed, &providers).await?;
    let expired = expired_clusters(req);
    let nodes = node_counts(&plan, &current);
    let none = BTreeSet::new();
    let (mut repairs, mut pending) = sort_changes(&plan, &current, &expired, &none, opts.apply_all);
    // Reclaims are counted (in state, before anything is made) for the
    // clusters' spot fallback; when it is on, the reclaimed nodes come back
    // on-demand: plan again with them so.
    let fallen = record_reclaims(locked, req, &repairs, &current)?;
    if !fallen.is_empty() {
        let mut again = req.clone();
        again.resolve.on_demand_nodes = fallen.clone();
        (plan, current) = make_plan(&again, locked.doc.clone(), locked.existed, &providers).await?;
        (repairs, pending) = sort_changes(&plan, &current, &expired, &fallen, opts.apply_all);
    }
    let mut out = Pass {
        nodes,
        plan_ms: started.elapsed().as_millis() as u64,
        ..Pass::default()
    };
    out.pending = pending;
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
) -> Result<BTreeSet<String>, EngineError> {
    let now = crate::clock::now_secs();
    let mut changed = false;
    let mut reclaimed: BTreeSet<String> = BTreeSet::new();
    for r in repairs.iter().filter(|r| r.cause == Cause::Reclaimed) {
        let (Some(cluster), Some(record)) = (
            Address::new(&r.address).cluster(),
            current.doc.resources.get(&r.address),
        ) else {
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
        .filter(|a| {
            Address::new(a)
                .cluster()
                .is_some_and(|c| fallback.contains(c))
        })
        .collect())
}

/// The clusters of the spec whose `expires_at` has passed: resolve leaves
/// them out, so the plan deletes them, and those deletions are repairs.
fn expired_clusters(req: &PlanRequest) -> BTreeSet<String> {
    crate::resolve::expired_clusters(&req.loaded.spec, crate::clock::now_secs())
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// Splits a plan's changes into repairs and changes for review. A repair
/// whose dependency is a create or replace that waits for review waits too.
pub fn sort_changes(
    plan: &Plan,
    current: &Current,
    expired: &BTreeSet<String>,
    on_demand: &BTreeSet<String>,
    apply_all: bool,
) -> (Vec<Repair>, Vec<Pending>) {
    let mut repairs: Vec<Repair> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    for c in &plan.changes {
        if c.action == Action::NoOp {
            continue;
        }
        match classify(c, current, expired, on_demand) {
            Ok((cause, why)) => repairs.push(Repair {
                address: c.address.clone(),
                id: recorded_id(current, &c.address),
                action: c.action,
                cause,
                why,
            }),
            Err(_) if apply_all => repairs.push(Repair {
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
    // A repair that needs a resource only a reviewed change makes (or
    // remakes) waits with it; repeat until nothing moves.
    let by_address: BTreeMap<&str, &ResourceChange> = plan
        .changes
        .iter()
        .map(|c| (c.address.as_str(), c))
        .collect();
    loop {
        let waiting: BTreeSet<String> = pending
            .iter()
            .filter(|p| matches!(p.action, Action::Create | Action::Replace))
            .map(|p| p.address.clone())
            .collect();
        let before = repairs.len();
        let mut kept = Vec::with_capacity(repairs.len());
        for r in repairs {
            let blocked = by_address
                .get(r.address.as_str())
                .and_then(|c| c.deps.values().find(|d| waiting.contains(*d)).cloned());
            match blocked {
                Some(dep) => pending.push(Pending {
                    address: r.address,
                    action: r.action,
                    why: format!("waits for {dep}, which needs review"),
                }),
                None => kept.push(r),
            }
        }
        repairs = kept;
        if repairs.len() == before {
            break;
        }
    }
    (repairs, pending)
}

fn recorded_id(current: &Current, address: &str) -> Option<String> {
    current.doc.resources.get(address).map(|r| r.id.clone())
}

/// Whether one change restores what was applied (`Ok`: its cause) or is
/// something a person should review (`Err`: why).
fn classify(
    c: &ResourceChange,
    current: &Current,
    expired: &BTreeSet<String>,
    on_demand: &BTreeSet<String>,
) -> Result<(Cause, String), String> {
    let record = current.doc.resources.get(&c.address);
    let gone = matches!(current.observed.get(&c.address), Some(None));
    match c.action {
        Action::Create => match record {
            Some(r) if gone => {
                let wanted = c.after.clone().unwrap_or_default();
                // A spot fallback's market is the policy's choice, not an edit.
                let fallback = on_demand.contains(&c.address);
                let edited: Vec<String> = changed_keys(&r.attrs, &wanted)
                    .into_iter()
                    .filter(|k| !(fallback && k == "pricing"))
                    .collect();
                if !edited.is_empty() {
                    return Err(format!(
                        "{} is gone and the spec changed since it was made ({}): the new one is the spec's edit",
                        r.id,
                        edited.join(", ")
                    ));
                }
                let spot = r.attrs.get("pricing").and_then(|p| p.as_str()) == Some("spot");
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
        Action::Replace => Err(match &c.reason {
            Some(r) => format!("a replacement ({r})"),
            None => format!(
                "a replacement ({} cannot change in place)",
                c.replace_because.join(", ")
            ),
        }),
        Action::Delete => {
            let address = Address::new(&c.address);
            if address.is_duplicate() || current.strays.contains_key(&c.address) {
                Ok((
                    Cause::Leftover,
                    "a duplicate left by an interrupted run".into(),
                ))
            } else if gone {
                Ok((Cause::Leftover, "already gone; forgotten".into()))
            } else if let Some(cluster) = address.cluster().filter(|n| expired.contains(*n)) {
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

/// For the clusters with a `spot_policy`: the market each recorded node
/// runs in, and which clusters' fallback is on at `now` (their reclaims).
pub(super) fn spot_pools(
    doc: &crate::state::StateDoc,
    spec: &crate::spec::Spec,
    now: i64,
) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let mut pricing = BTreeMap::new();
    let mut fallback = BTreeSet::new();
    for (name, c) in &spec.clusters {
        let Some(policy) = &c.spot_policy else {
            continue;
        };
        for (address, r) in doc.resources.range(format!("cluster.{name}.")..) {
            if !Address::new(address).belongs_to(name) {
                break;
            }
            if let Some(p) = r.attrs.get("pricing").and_then(|p| p.as_str()) {
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
        let address = Address::new(&c.address);
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
