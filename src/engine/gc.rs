//! `gpuform gc`: everything tagged with a spec's project that its state does
//! not record — strays of interrupted applies (this lineage) and of lost
//! states (another lineage) — as a plan of deletions, applied through the
//! normal journaled apply ([`super::apply_plan`]). Another lineage's
//! resources are only deleted when asked (`other_states`): a lineage this
//! state does not know may be a lost state, or another workspace's live one.
//!
//! What is looked at: the (provider, region) pairs the spec resolves to and
//! those the state records; in each, one `list_owned` of the project (so an
//! untagged resource is never seen, let alone deleted). Refresh runs first,
//! so that what an interrupted apply of *this* state made and can still be
//! adopted (its address is free) is recorded, not deleted.

use super::{complete_plan, current_placements, desired, EngineError, PlanRequest};
use crate::address::{Address, Target};
use crate::plan::{diff, DiffOptions, Plan, StateRef};
use crate::providers::Providers;
use crate::refresh::{refresh, Current, Lookout};
use crate::resolve::Desired;
use crate::state::{Record, StateDoc};
use gpuform_provider::{attr, AlsoList, ResourceKind, Scope};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The gc plan (deletions only) and the refreshed state to apply it with.
pub struct GcPlan {
    pub plan: Plan,
    pub current: Current,
    /// Where it looked: `(provider key, region)`.
    pub scopes: Vec<(Target, String)>,
}

/// Plans the deletion of the project's strays. `doc` is the locked state.
pub async fn gc_plan(
    req: &PlanRequest<'_>,
    doc: StateDoc,
    state_existed: bool,
    other_states: bool,
    providers: &Providers,
) -> Result<GcPlan, EngineError> {
    let mut opts = req.resolve.clone();
    opts.current = current_placements(&doc);
    let wanted = desired(req.loaded, req.catalog, &opts)?;
    let mut scopes: BTreeSet<(Target, String)> = wanted
        .resources
        .iter()
        .map(|r| (r.target, r.region.clone()))
        .collect();
    scopes.extend(
        doc.resources
            .values()
            .map(|r| (r.provider, r.region.clone())),
    );
    scopes.extend(doc.pending.values().map(|p| (p.provider, p.region.clone())));
    let state_ref = StateRef {
        lineage: state_existed.then(|| doc.lineage.clone()),
        serial: doc.serial,
    };
    // Refresh looks where the state records things: what it adopts at the
    // spec's addresses is recorded, and another lineage's is left to below.
    let mut current = refresh(doc, Lookout::default(), providers, req.notify).await?;
    let left_alone = other_lineages(&mut current, &scopes, other_states, providers).await?;
    let mut plan = strays_plan(&current, req, &left_alone);
    let fate = "will be recorded, not deleted";
    complete_plan(&mut plan, req, state_ref, &current.adopted, fate);
    Ok(GcPlan {
        plan,
        current,
        scopes: scopes.into_iter().collect(),
    })
}

/// Lists `scopes` for other lineages' resources of this project: with
/// `other_states` they become strays of `current`; without, they are
/// returned, by lineage, to be left alone.
async fn other_lineages(
    current: &mut Current,
    scopes: &BTreeSet<(Target, String)>,
    other_states: bool,
    providers: &Providers,
) -> Result<BTreeMap<String, Vec<String>>, EngineError> {
    let project = current.doc.project.clone();
    let lineage = current.doc.lineage.clone();
    let workspace = current.doc.workspace.clone();
    // Other lineages' resources of this project: not recorded here, not
    // adoptable (two states never adopt each other's resources).
    let recorded: HashSet<String> = current
        .doc
        .resources
        .values()
        .map(|r| r.id.clone())
        .chain(current.strays.values().map(|r| r.id.clone()))
        .collect();
    // Other lineages' resources left alone (without `other_states`), by lineage.
    let mut left_alone: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for &(target, ref region) in scopes {
        let provider = providers.get(target).await?;
        let scope = Scope {
            region: region.clone(),
        };
        let found = provider
            .list_owned_kinds(
                &scope,
                &project,
                // A block cannot be cancelled: never a stray to delete.
                AlsoList {
                    buckets: true,
                    blocks: false,
                },
            )
            .await
            .map_err(|error| EngineError::Provider {
                context: format!("listing {target} {region} for project {project}"),
                error,
            })?;
        for o in found {
            // Another workspace's resources are its own state's business,
            // never this one's strays.
            let Some(own) = o
                .ownership
                .as_ref()
                .filter(|t| t.project == project && t.in_workspace(workspace.as_deref()))
            else {
                continue;
            };
            if recorded.contains(&o.id) || own.lineage == lineage {
                // Ours and recorded, or of this lineage: refresh decided
                // (recorded, adopted, or already a stray).
                continue;
            }
            if !other_states {
                left_alone
                    .entry(own.lineage.clone())
                    .or_default()
                    .push(format!("{} ({})", own.address, o.id));
                continue;
            }
            let mut attrs = o.attrs.clone();
            for k in o.kind.completion_attrs() {
                attrs.remove(k);
            }
            attrs.remove(attr::USER_DATA);
            attrs.insert("gpuform_lineage".into(), own.lineage.clone().into());
            current.strays.insert(
                own.address.duplicate(&o.id),
                Record {
                    kind: o.kind,
                    provider: target,
                    region: region.clone(),
                    id: o.id.clone(),
                    attrs,
                    deps: Default::default(),
                    token: own.token.clone(),
                    reported: crate::state::document::Reported::of(&o),
                    kept: Vec::new(),
                },
            );
        }
    }

    Ok(left_alone)
}

/// The strays' deletions and nothing else (the spec's own changes are
/// `apply`'s business), with a warning for what is left alone.
fn strays_plan(
    current: &Current,
    req: &PlanRequest<'_>,
    left_alone: &BTreeMap<String, Vec<String>>,
) -> Plan {
    let project = &current.doc.project;
    let only_strays = Current {
        doc: StateDoc {
            resources: BTreeMap::new(),
            pending: BTreeMap::new(),
            ..current.doc.clone()
        },
        observed: Default::default(),
        adopted: Vec::new(),
        abandoned: BTreeMap::new(),
        strays: current.strays.clone(),
        foreign: Vec::new(),
        unlooked: Vec::new(),
    };
    let diff_opts = DiffOptions {
        destroy: false,
        targets: Vec::new(),
        cny_per_usd: req.diff.cny_per_usd,
        replace: Vec::new(),
    };
    let mut plan = diff(Desired::default(), &only_strays, req.catalog, &diff_opts);
    for c in &mut plan.changes {
        let other = current
            .strays
            .get(&c.address)
            .and_then(|r| r.attrs.get("gpuform_lineage"))
            .and_then(|v| v.as_str());
        if let Some(l) = other {
            c.reason = Some(format!(
                "tagged with project {project} by another state (lineage {l}), which this state does not record"
            ));
        }
    }
    order_deletions(&mut plan);
    for (other, found) in left_alone {
        plan.warnings.push(format!(
            "{} resource(s) tagged with project {project} by another state (lineage {other}) are left alone: {}. They may belong to another workspace's live state; if that state is lost, `gpuform gc --other-states` deletes them",
            found.len(),
            found.join(", ")
        ));
    }
    plan
}

/// Strays carry no recorded dependencies; a cloud refuses to delete a
/// network that still has subnets or instances. Within one (provider,
/// region), each deletion waits for those of the kinds that can depend on
/// it: volumes, then instances, then firewalls, placements and subnets,
/// then networks.
fn order_deletions(plan: &mut Plan) {
    fn rank(k: ResourceKind) -> u8 {
        match k {
            ResourceKind::Volume | ResourceKind::Bucket => 0,
            ResourceKind::Instance => 1,
            ResourceKind::Firewall | ResourceKind::Placement | ResourceKind::Subnet => 2,
            ResourceKind::Network | ResourceKind::Block => 3,
        }
    }
    let all: Vec<(Address, Target, String, u8)> = plan
        .changes
        .iter()
        .map(|c| {
            (
                c.address.clone(),
                c.provider,
                c.region.clone(),
                rank(c.kind),
            )
        })
        .collect();
    // The graph deletes a resource before those in its `old_deps` (what it
    // depends on): each stray lists the higher-ranked strays of its place.
    for c in &mut plan.changes {
        let r = rank(c.kind);
        for (i, (address, provider, region, rr)) in all.iter().enumerate() {
            if *rr > r && *provider == c.provider && *region == c.region {
                c.old_deps.insert(format!("gc:{i}").into(), address.clone());
            }
        }
    }
}
