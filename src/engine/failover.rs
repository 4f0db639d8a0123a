//! Capacity failover: a zone that reports no capacity is avoided for the
//! rest of this apply and the spec re-planned without it, until every node
//! has a home or every zone/candidate is exhausted. State keeps a log of
//! what was tried; the next apply keeps clusters where they landed.
//!
//! The loop reports what it does through [`ApplyEvent`]s; it prints nothing.

use super::{apply_plan, capacity_failures, make_plan, EngineError, LockedState, PlanRequest};
use crate::apply::{ApplyOptions, ApplyReport};
use crate::plan::Plan;
use crate::providers::Providers;
use crate::refresh::Current;
use crate::resolve::Exhausted;
use crate::state::Failover;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Applies and re-plans at most this many times in one apply.
pub const MAX_FAILOVER_ROUNDS: usize = 8;

/// State keeps the last this many failovers.
pub const FAILOVER_LOG: usize = 50;

/// What [`apply_with_failover`] tells its caller while it runs.
#[derive(Debug)]
pub enum ApplyEvent<'a> {
    /// A cluster found no capacity in a zone, which is now avoided.
    CapacityLost(&'a Failover),
    /// The spec was re-planned around the zones lost so far; `round` is the
    /// apply round this plan runs in (2 for the first failover).
    Replanned { round: usize, plan: &'a Plan },
}

/// How to re-plan after a capacity failure: the request the first plan was
/// made with (its `resolve.exhausted` is replaced each round with every zone
/// lost so far).
pub struct Replan<'a> {
    pub request: PlanRequest<'a>,
}

/// Applies `plan` to the locked state; with `replan`, fails over: each
/// instance create refused for capacity marks its zone exhausted, the
/// failovers are committed to state, the spec is re-planned without those
/// zones and the new plan applied, until nothing new failed for capacity,
/// the run was interrupted, or [`MAX_FAILOVER_ROUNDS`] were run.
///
/// `providers` builds the providers for a plan's endpoints (a fresh set per
/// round, as a separate command would). Returns the last plan applied and
/// its report; when a re-plan finds nowhere left to go, the error names
/// every zone tried.
#[allow(clippy::too_many_arguments)]
pub async fn apply_with_failover(
    locked: &mut LockedState,
    plan: Arc<Plan>,
    current: Option<Current>,
    mut replan: Option<Replan<'_>>,
    providers: &dyn Fn(&BTreeMap<String, String>) -> Arc<Providers>,
    opts: &ApplyOptions,
    cancel: Arc<AtomicBool>,
    on_event: &mut dyn FnMut(ApplyEvent<'_>),
) -> Result<(Arc<Plan>, ApplyReport), EngineError> {
    let mut plan = plan;
    let mut current = current;
    let mut exhausted: BTreeSet<Exhausted> = BTreeSet::new();
    let mut round = 1;
    loop {
        let report = apply_plan(
            locked,
            plan.clone(),
            current.take(),
            providers(&plan.endpoints),
            opts,
            cancel.clone(),
        )
        .await?;
        let Some(replan) = replan.as_mut().filter(|_| !report.interrupted) else {
            return Ok((plan, report));
        };
        let fresh: Vec<Failover> = capacity_failures(&plan, &report)
            .into_iter()
            .filter(|f| exhausted.insert(Exhausted::zone(&f.cluster, f.cloud, &f.region, &f.zone)))
            .collect();
        if fresh.is_empty() || round >= MAX_FAILOVER_ROUNDS {
            return Ok((plan, report));
        }
        for f in &fresh {
            on_event(ApplyEvent::CapacityLost(f));
        }
        locked.doc.failovers.extend(fresh);
        let excess = locked.doc.failovers.len().saturating_sub(FAILOVER_LOG);
        locked.doc.failovers.drain(..excess);
        locked.store.commit(&mut locked.doc)?;
        let req = &mut replan.request;
        req.resolve.exhausted = exhausted.clone();
        let plan_providers = providers(&req.loaded.spec.endpoints);
        match make_plan(req, locked.doc.clone(), locked.existed, &plan_providers).await {
            Ok((next, cur)) => {
                round += 1;
                on_event(ApplyEvent::Replanned { round, plan: &next });
                plan = Arc::new(next);
                current = Some(cur);
            }
            // Nowhere left to go: say so, with what was tried.
            Err(error) => {
                return Err(EngineError::NoCapacityLeft {
                    error: Box::new(error),
                    tried: exhausted
                        .iter()
                        .map(|e| format!("{} {} {} {}", e.cluster, e.cloud, e.region, e.zone))
                        .collect(),
                })
            }
        }
    }
}
