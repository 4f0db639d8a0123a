//! `gpuform audit`'s inputs: each (cloud, region)'s inventory, listed at
//! once through [`gpuform_provider::InventoryApi`] (and its buckets through
//! `Provider::list_all_buckets`), and each given spec's
//! state, read (never locked or written) through its backend. The report
//! itself is [`crate::audit`]. Read-only: nothing here changes
//! a cloud or a state.

use super::{read_state, EngineError};
use crate::address::Target;
use crate::audit::{PoolView, ProjectView, RegionInventory, StateView};
use crate::portability::lockin::spec_cloud;
use crate::providers::Providers;
use crate::spec::{CloudName, LoadedSpec};
use crate::state::StateStore;
use gpuform_catalog::Catalog;
use gpuform_provider::Scope;
use std::collections::{BTreeMap, BTreeSet};

/// `(provider key, region)` pairs: where to list.
pub type Places = BTreeSet<(Target, String)>;

/// The tag a spec's cluster carries to say it serves inference
/// (`tags: {workload: inference}`).
pub const WORKLOAD_TAG: &str = "workload";

/// A spec to audit against, with the store of its state.
pub struct AuditSpec<'a> {
    pub loaded: &'a LoadedSpec,
    pub store: StateStore,
}

/// Checks a `(provider, region)` the user named: a region the catalog
/// lists for its cloud.
pub fn check_target(catalog: &Catalog, t: Target, region: &str) -> Result<(), EngineError> {
    if catalog.region(t.cloud, region).is_none() {
        let known: Vec<String> = catalog
            .regions(t.cloud)
            .iter()
            .map(|r| r.name.clone())
            .collect();
        return Err(EngineError::Config(format!(
            "unknown region `{region}` for {}\n  hint: the catalog's {} regions are: {}",
            t.cloud,
            t.cloud,
            known.join(", ")
        )));
    }
    Ok(())
}

/// The regions a spec runs in: its clusters' (cloud, region) and those its
/// state records.
pub fn spec_targets(loaded: &LoadedSpec, sandbox: bool) -> Places {
    // What runs on `cloud` (`None` for `any`).
    let target = |cloud: CloudName| {
        spec_cloud(cloud).map(|c| Target {
            cloud: c,
            sandbox: sandbox || cloud == CloudName::Sandbox,
        })
    };
    let clusters = loaded
        .spec
        .clusters
        .values()
        .filter(|c| !c.region.is_empty())
        .filter_map(|c| Some((target(c.cloud)?, c.region.clone())));
    let buckets = loaded
        .spec
        .buckets
        .values()
        .filter_map(|b| Some((target(b.cloud)?, b.region.clone())));
    clusters.chain(buckets).collect()
}

/// What a spec's state says, for ownership. A state that does not exist is
/// "no state reachable" (its resources read `unknown`); one that exists and
/// cannot be read is an error.
pub fn project_view(spec: &AuditSpec<'_>) -> Result<(ProjectView, Places), EngineError> {
    let project = &spec.loaded.spec.project;
    let (doc, existed) = read_state(&spec.store, project)?;
    let mut places = BTreeSet::new();
    let state = if existed {
        places.extend(
            doc.resources
                .values()
                .map(|r| (r.provider, r.region.clone())),
        );
        StateView::Known {
            lineage: doc.lineage.clone(),
            ids: doc.resources.values().map(|r| r.id.clone()).collect(),
            pending: doc.pending.keys().cloned().collect(),
        }
    } else {
        StateView::Unreachable(format!("no state at {}", spec.store.location()))
    };
    let budget = spec.loaded.spec.budget.as_ref();
    let pools = spec
        .loaded
        .spec
        .clusters
        .iter()
        .map(|(name, c)| PoolView {
            cluster: name.clone(),
            inference: c
                .tags
                .get(WORKLOAD_TAG)
                .is_some_and(|w| w.eq_ignore_ascii_case("inference")),
            stateless: c.disk.data_gb.is_none(),
            mig: c.mig.is_some(),
        })
        .collect();
    Ok((
        ProjectView {
            state,
            max_monthly_usd: budget.and_then(|b| b.max_monthly_usd),
            max_hourly_usd: budget.and_then(|b| b.max_hourly_usd),
            pools,
        },
        places,
    ))
}

/// Lists every target's inventory, all at once; the first failure stops
/// the audit with the region it was listing.
pub async fn inventories(
    targets: &Places,
    providers: &Providers,
) -> Result<Vec<RegionInventory>, EngineError> {
    let mut calls = Vec::new();
    for &(target, ref region) in targets {
        let api = providers.inventory(target).await?;
        let buckets_api = providers.get(target).await?;
        let cloud = buckets_api.cloud();
        calls.push(async move {
            let scope = Scope {
                region: region.clone(),
            };
            // Object storage is an API apart (BucketApi): listed beside the
            // compute inventory, at the same time.
            let (got, buckets) = futures_util::future::join(
                api.inventory(&scope),
                buckets_api.list_all_buckets(&scope),
            )
            .await;
            let got = got.and_then(|mut inv| {
                inv.buckets.extend(
                    buckets?
                        .iter()
                        .map(gpuform_provider::InventoryBucket::from_observed),
                );
                Ok(inv)
            });
            (target, region.clone(), cloud, got)
        });
    }
    let mut out = Vec::new();
    for (provider, region, cloud, got) in futures_util::future::join_all(calls).await {
        let inventory = got.map_err(|error| EngineError::Provider {
            context: format!("listing everything in {provider} {region}"),
            error,
        })?;
        out.push(RegionInventory {
            cloud,
            provider,
            region,
            inventory,
        });
    }
    Ok(out)
}

/// The projects of the given specs, keyed by name.
pub fn project_views(
    specs: &[AuditSpec<'_>],
) -> Result<(BTreeMap<String, ProjectView>, Places), EngineError> {
    let mut views = BTreeMap::new();
    let mut places = BTreeSet::new();
    for s in specs {
        let (v, p) = project_view(s)?;
        places.extend(p);
        views.insert(s.loaded.spec.project.clone(), v);
    }
    Ok((views, places))
}
