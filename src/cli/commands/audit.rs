//! `gpuform audit` (read-only) and `gpuform gc` (a confirmed plan of
//! deletions through the normal apply). The work is in
//! [`crate::engine::audit`], [`crate::audit`] and
//! [`crate::engine::gc_plan`]; this parses, drives and prints.

use super::shared::{
    catalog_for, confirm, engine_failure, finish_apply, load, plan_request, project_mismatch,
    providers_for, watch_ctrl_c,
};
use crate::address::Target;
use crate::audit as paudit;
use crate::cli::args::{AuditArgs, GcArgs};
use crate::cli::out::{out, outln};
use crate::cli::progress::terminal_apply;
use crate::cli::{CmdResult, Failure};
use crate::engine::{self, audit as eaudit};
use crate::plan::render::render;
use crate::providers::Providers;
use crate::state::StateStore;
use gpuform_catalog::DEFAULT_CNY_PER_USD;
use gpuform_provider::Cloud;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// `(provider key, region)` pairs from `--cloud` / `--region`.
fn flag_targets(a: &AuditArgs) -> Result<eaudit::Places, Failure> {
    let pairs: Vec<(&String, &String)> = match (a.clouds.len(), a.regions.len()) {
        (0, 0) => return Ok(BTreeSet::new()),
        (0, _) => {
            return Err(Failure(
                "--region needs --cloud\n  hint: e.g. --cloud aws --region us-east-1".into(),
            ))
        }
        (_, 0) => {
            return Err(Failure(
                "--cloud needs --region\n  hint: e.g. --cloud aws --region us-east-1".into(),
            ))
        }
        (1, _) => a.regions.iter().map(|r| (&a.clouds[0], r)).collect(),
        (c, r) if c == r => a.clouds.iter().zip(&a.regions).collect(),
        (c, r) => {
            return Err(Failure(format!(
                "{c} --cloud flags and {r} --region flags do not pair\n  hint: give one --cloud for all regions, or one --cloud per --region, in order"
            )))
        }
    };
    let mut out = BTreeSet::new();
    for (cloud, region) in pairs {
        let c: Cloud = cloud.parse().map_err(|_| {
            Failure(format!(
                "unknown cloud `{cloud}`\n  hint: one of aws, alibaba, tencent, huawei"
            ))
        })?;
        let target = Target {
            cloud: c,
            sandbox: a.sandbox,
        };
        out.insert((target, region.clone()));
    }
    Ok(out)
}

pub(super) async fn audit_cmd(a: AuditArgs) -> CmdResult {
    let catalog = catalog_for(a.prices.as_deref())?;
    let cny = a.cny_per_usd.unwrap_or(DEFAULT_CNY_PER_USD);
    if !(cny.is_finite() && cny > 0.0) {
        return Err(Failure(format!(
            "--cny-per-usd must be a positive number, found {cny}"
        )));
    }
    if a.state.is_some() && a.specs.len() != 1 {
        return Err(Failure(
            "--state names the state of one spec; give exactly one spec with it".into(),
        ));
    }
    let mut targets = flag_targets(&a)?;
    for (target, region) in &targets {
        eaudit::check_target(&catalog, *target, region).map_err(engine_failure)?;
    }
    let loaded = a
        .specs
        .iter()
        .map(|f| load(f, &a.vars))
        .collect::<Result<Vec<_>, _>>()?;
    let mut specs = Vec::new();
    for l in &loaded {
        let store =
            engine::state_store(Some(l), a.state.as_deref(), None).map_err(engine_failure)?;
        specs.push(eaudit::AuditSpec { loaded: l, store });
    }
    let (views, places) = eaudit::project_views(&specs).map_err(engine_failure)?;
    if targets.is_empty() {
        for l in &loaded {
            targets.extend(eaudit::spec_targets(l, a.sandbox));
        }
        targets.extend(places);
    }
    if targets.is_empty() {
        return Err(Failure(
            "nothing to audit: no region given and the specs name none\n  hint: gpuform audit --cloud aws --region us-east-1 [SPEC...]".into(),
        ));
    }
    let store = specs
        .first()
        .map(|s| s.store.clone())
        .unwrap_or_else(|| StateStore::new(engine::default_state_path()));
    let mut endpoints = BTreeMap::new();
    for l in &loaded {
        endpoints.extend(l.spec.endpoints.clone());
    }
    let providers = Providers::new(engine::sandbox_dir(&store)).with_endpoints(endpoints);
    let inventories = eaudit::inventories(&targets, &providers)
        .await
        .map_err(engine_failure)?;
    let report = paudit::audit(
        &catalog,
        cny,
        crate::clock::now_secs(),
        &inventories,
        &views,
    );
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| Failure(e.to_string()))?
        );
    } else if a.markdown {
        out!("{}", paudit::render_markdown(&report));
    } else {
        out!("{}", paudit::render_table(&report));
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn gc_cmd(g: GcArgs, quiet: bool) -> CmdResult {
    let a = g.apply;
    if !a.change.targets.is_empty() {
        return Err(Failure(
            "gc takes no --target: it collects every stray of the project".into(),
        ));
    }
    if !a.change.refresh {
        return Err(Failure(
            "gc must ask the clouds what exists: drop --refresh=false".into(),
        ));
    }
    let loaded = load(&a.file, &a.vars)?;
    let store = a.location.store(Some(&loaded)).map_err(engine_failure)?;
    let mut locked =
        engine::lock_state(&store, &loaded.spec.project, "gc").map_err(engine_failure)?;
    if locked.existed && locked.doc.project != loaded.spec.project {
        return Err(project_mismatch(&store, &locked.doc, &loaded));
    }
    let providers = providers_for(&store, &loaded.spec.endpoints);
    let catalog = catalog_for(a.change.prices.as_deref())?;
    let gc = engine::gc_plan(
        &plan_request(&a.change, a.sandbox, &loaded, &catalog, false, false),
        locked.doc.clone(),
        locked.existed,
        g.other_states,
        &providers,
    )
    .await
    .map_err(engine_failure)?;
    let plan = gc.plan;
    if !a.json && !quiet {
        let places: Vec<String> = gc.scopes.iter().map(|(p, r)| format!("{p} {r}")).collect();
        outln!(
            "Looked for resources tagged with project {} in: {}",
            loaded.spec.project,
            places.join(", ")
        );
        if plan.has_changes() {
            out!("{}", render(&plan, false));
        } else {
            for w in &plan.warnings {
                outln!("Warning: {w}");
            }
            outln!(
                "Nothing to collect: everything tagged with this project is recorded in its state."
            );
        }
    }
    if !plan.has_changes() && gc.current.adopted.is_empty() {
        if a.json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({"plan": plan, "outcomes": []}))
                    .map_err(|e| Failure(e.to_string()))?
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if plan.has_changes() && !a.auto_approve {
        confirm("delete these resources")?;
    }
    let opts = terminal_apply(a.parallelism, quiet || a.json);
    let cancel = Arc::new(AtomicBool::new(false));
    let watcher = watch_ctrl_c(cancel.clone());
    let plan = Arc::new(plan);
    let result = engine::apply_plan(
        &mut locked,
        plan.clone(),
        Some(gc.current),
        providers,
        &opts,
        cancel,
    )
    .await;
    watcher.abort();
    let report = result.map_err(engine_failure)?;
    let doc = locked.doc.clone();
    drop(locked);
    finish_apply(&plan, &doc, &report, a.json, quiet)
}
