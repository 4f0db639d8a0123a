//! `gpuform apply` and `gpuform destroy`.

use crate::apply::ApplyOptions;
use crate::cli::args::*;
use crate::cli::out::{errln, out, outln};
use crate::cli::progress::terminal_apply;
use crate::cli::{CmdResult, Failure};
use crate::engine::{self, ApplyEvent};
use crate::plan::render::render;

use crate::spec::LoadedSpec;
use crate::state::StateStore;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::plan::read_plan_file;
use super::shared::*;

pub(super) async fn apply(a: ApplyArgs, destroy: bool, quiet: bool) -> CmdResult {
    let saved = read_plan_file(&a.file)?;
    // A saved plan was reviewed when it was made: it applies without asking.
    let reviewed = saved.is_some();
    let mut loaded_spec: Option<LoadedSpec> = None;
    let mut catalog = None;
    let (plan, mut locked, current, store) = match saved {
        Some(plan) => {
            if destroy {
                return Err(Failure("`gpuform destroy` takes a spec; to apply a saved destroy plan use `gpuform apply PLANFILE`".into()));
            }
            let store = if a.location.state_url.is_some() {
                engine::state_store_for(
                    None,
                    Some(&plan.project),
                    a.location.state.as_deref(),
                    a.location.state_url.as_deref(),
                )
                .map_err(engine_failure)?
            } else {
                let path = a
                    .location
                    .state
                    .clone()
                    .or_else(|| plan.state_path.as_ref().map(PathBuf::from))
                    .ok_or_else(|| Failure("the plan file names no state; pass --state".into()))?;
                if a.location.state.is_none() && path.to_string_lossy().contains("://") {
                    return Err(Failure(format!(
                        "this plan was made against the remote state {}\n  hint: pass --state-url URL (or set GPUFORM_STATE_URL) to apply it",
                        path.display()
                    )));
                }
                StateStore::new(path).with_workspace(
                    plan.workspace
                        .as_deref()
                        .unwrap_or(crate::state::DEFAULT_WORKSPACE),
                )
            };
            let locked =
                engine::lock_state(&store, &plan.project, "apply").map_err(engine_failure)?;
            engine::check_saved_plan(&plan, &locked).map_err(engine_failure)?;
            (plan, locked, None, store)
        }
        None => {
            let loaded = load(&a.file, &a.vars)?;
            let store = a.location.store(Some(&loaded)).map_err(engine_failure)?;
            let locked = engine::lock_state(
                &store,
                &loaded.spec.project,
                if destroy { "destroy" } else { "apply" },
            )
            .map_err(engine_failure)?;
            if locked.existed && locked.doc.project != loaded.spec.project {
                return Err(project_mismatch(&store, &locked.doc, &loaded));
            }
            let providers = providers_for(&store, &loaded.spec.endpoints);
            let cat = catalog.insert(catalog_for(a.change.prices.as_deref())?);
            let (plan, current) = engine::make_plan(
                &plan_request(&a.change, a.sandbox, &loaded, cat, destroy, false),
                locked.doc.clone(),
                locked.existed,
                &providers,
            )
            .await
            .map_err(engine_failure)?;
            loaded_spec = Some(loaded);
            (plan, locked, Some(current), store)
        }
    };
    if !a.json && !quiet {
        out!("{}", render(&plan, false));
    }
    // Buying is opted into apart from approving (CI must opt in to
    // spending). The engine refuses too (every plan it applies); checked
    // here first so the refusal comes before the confirmation prompt.
    engine::capacity::purchase_refusal(&plan, a.allow_purchase)
        .map_err(|e| Failure(e.to_string()))?;
    if plan.has_changes() && !a.auto_approve && !reviewed {
        confirm(if destroy {
            "destroy these resources"
        } else {
            "perform these actions"
        })?;
    }
    // Capacity failover (a spec apply, not a destroy): the engine re-plans
    // around zones without capacity; it reports, the CLI prints.
    let replan = match (&loaded_spec, &catalog) {
        (Some(loaded), Some(cat)) if !destroy => Some(engine::Replan {
            request: plan_request(&a.change, a.sandbox, loaded, cat, destroy, false),
        }),
        _ => None,
    };
    let opts = ApplyOptions {
        allow_purchase: a.allow_purchase,
        ..terminal_apply(a.parallelism, quiet || a.json)
    };
    let json = a.json;
    let mut on_event = |e: ApplyEvent<'_>| match e {
        ApplyEvent::CapacityLost(f) => {
            if !quiet {
                errln!(
                    "capacity: cluster {} has no capacity in {} {} {}: {}; trying the next zone or candidate",
                    f.cluster, f.cloud, f.region, f.zone, f.error
                );
            }
        }
        ApplyEvent::Replanned { round, plan } => {
            if !json && !quiet {
                outln!("\nFailover round {round}:");
                out!("{}", render(plan, false));
            }
        }
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let watcher = watch_ctrl_c(cancel.clone());
    let result = engine::apply_with_failover(
        &mut locked,
        // Shared, not copied: at 10k resources a plan is tens of megabytes.
        Arc::new(plan),
        current,
        replan,
        &|endpoints| providers_for(&store, endpoints),
        &opts,
        cancel,
        &mut on_event,
    )
    .await;
    watcher.abort();
    let (plan, report) = result.map_err(engine_failure)?;
    let doc = locked.doc.clone();
    drop(locked);
    finish_apply(&plan, &doc, &report, a.json, quiet)
}
