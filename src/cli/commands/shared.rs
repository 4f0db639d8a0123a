//! What the commands share: loading a spec, the catalog, providers, the
//! plan request, confirmation, Ctrl-C, and where the state is.

use crate::apply::{ApplyReport, OpOutcome};
use crate::cli::args::*;
use crate::cli::out::{errln, out, outln};
use crate::cli::{CmdResult, Failure};
use crate::engine::{self, EngineError, PlanRequest};
use crate::plan::{DiffOptions, Plan};
use crate::providers::Providers;
use crate::resolve::ResolveOptions;
use std::collections::BTreeMap;

use crate::spec::{self, LoadedSpec, Vars};
use crate::state::{StateDoc, StateStore};
use gpuform_catalog::{Catalog, DEFAULT_CNY_PER_USD};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) fn load(file: &Path, vars: &VarArgs) -> Result<LoadedSpec, Failure> {
    let vars = Vars::parse_cli(&vars.vars, &vars.var_files).map_err(|d| Failure(d.to_string()))?;
    load_spec(file, &vars).map_err(|d| Failure(d.to_string()))
}

/// Loads a spec. When it does not validate, the catalog's checks (resolve)
/// still run on the parts that did (`spec::load_salvaging`), so one run
/// reports every problem: another cluster's region, `mig:` on a GPU without
/// MIG beside a bad port.
pub(crate) fn load_spec(file: &Path, vars: &Vars) -> Result<LoadedSpec, spec::Diagnostics> {
    spec::load_salvaging(file, vars).map_err(|f| {
        let mut diags = f.diagnostics;
        if let Some(partial) = f.salvaged {
            let catalog =
                catalog_for(None).unwrap_or(std::borrow::Cow::Borrowed(Catalog::builtin()));
            if let Err(EngineError::Spec(more)) =
                engine::desired(&partial, &catalog, &ResolveOptions::default())
            {
                diags.extend(more);
            }
        }
        diags.sort();
        diags
    })
}

pub(crate) fn resolve_opts(sandbox: bool, cny: Option<f64>) -> ResolveOptions {
    ResolveOptions {
        sandbox,
        cny_per_usd: cny.unwrap_or(DEFAULT_CNY_PER_USD),
        ..ResolveOptions::default()
    }
}

/// The built-in catalog, with the discovered regions, zones and offerings
/// of the live cache (`gpuform catalog refresh`) over its data, the live
/// prices (`gpuform prices refresh`) over its snapshot prices, and the
/// user's price overrides over all.
pub(crate) fn catalog_for(
    prices: Option<&Path>,
) -> Result<std::borrow::Cow<'static, Catalog>, Failure> {
    let cache = gpuform_catalog::live::default_cache_path();
    let live = gpuform_catalog::LivePrices::load(&cache)?;
    warn_stale_discovery(&live.regions);
    let mut base = std::borrow::Cow::Borrowed(Catalog::builtin());
    if !live.regions.is_empty() {
        base = std::borrow::Cow::Owned(base.with_discovered(&live.regions).0);
    }
    if !live.entries.is_empty() {
        base = std::borrow::Cow::Owned(base.with_live_prices(&live).0);
    }
    let Some(path) = prices else {
        return Ok(base);
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure(format!(
            "cannot read price overrides {}: {e}",
            path.display()
        ))
    })?;
    let file = path.display().to_string();
    base
        .with_price_overrides(&gpuform_catalog::Source { file: &file, text: &text })
        .map(std::borrow::Cow::Owned)
        .map_err(|e| Failure(format!("{e}\n  hint: columns are cloud,region,instance_type,pricing,price,currency[,source,as_of]")))
}

/// Says once per run which discovered regions are older than prices are
/// let be (`offers --stale-days`' default), as stale prices are flagged.
pub(super) fn warn_stale_discovery(regions: &[gpuform_catalog::DiscoveredRegion]) {
    use gpuform_catalog::PriceAge;
    static ONCE: std::sync::Once = std::sync::Once::new();
    let today = crate::clock::today();
    let stale: Vec<String> = regions
        .iter()
        .filter_map(|r| {
            match gpuform_catalog::price_age(
                &r.discovered_on,
                today,
                crate::market::offers::DEFAULT_STALE_DAYS,
            ) {
                PriceAge::Dated { days, stale: true } => Some(format!(
                    "{} {} (as of {}, {days} days ago)",
                    r.cloud, r.region, r.discovered_on
                )),
                _ => None,
            }
        })
        .collect();
    if stale.is_empty() {
        return;
    }
    ONCE.call_once(|| {
        errln!(
            "warning: the discovered catalog of {} is older than {} days\n  hint: run `gpuform catalog refresh` to read it again",
            stale.join(", "),
            crate::market::offers::DEFAULT_STALE_DAYS
        );
    });
}

/// A project name from a directory's name: lower case, runs of anything but
/// letters and digits made one `-` (bucket names derive from it), at most 40.
pub(crate) fn project_from_dir(dir: &Path) -> String {
    let name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_lowercase()))
        .unwrap_or_default();
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.chars().take(40).collect();
    let out = out.trim_end_matches('-');
    // Bucket names (`<project>-<key>`) and the shortest sensible name.
    if out.len() < 3 {
        "gpu-project".to_string()
    } else {
        out.to_string()
    }
}

/// Starts what a plan needs and the state read does not: the built-in
/// catalog's parse and, for a sandbox run, the sandbox cloud's replay.
pub(crate) fn warm_up(providers: &Providers, sandbox: bool) {
    std::thread::spawn(|| {
        Catalog::builtin();
    });
    if sandbox {
        providers.warm_sandbox();
    }
}

pub(crate) fn providers_for(
    store: &StateStore,
    endpoints: &BTreeMap<String, String>,
) -> Arc<Providers> {
    Arc::new(Providers::new(engine::sandbox_dir(store)).with_endpoints(endpoints.clone()))
}

/// What a plan is asked for, from the flags `plan` and `apply` share: a
/// plan previews (`preview`: where the clouds cannot be asked it says so
/// and goes on), an apply (round 1, each failover round) never does.
pub(crate) fn plan_request<'a>(
    c: &ChangeArgs,
    sandbox: bool,
    loaded: &'a LoadedSpec,
    catalog: &'a Catalog,
    destroy: bool,
    preview: bool,
) -> PlanRequest<'a> {
    PlanRequest {
        loaded,
        catalog,
        resolve: resolve_opts(sandbox, c.cny_per_usd),
        diff: DiffOptions {
            destroy,
            targets: c.targets.clone(),
            cny_per_usd: c.cny_per_usd.unwrap_or(DEFAULT_CNY_PER_USD),
            replace: c.replace.clone(),
        },
        refresh: c.refresh,
        adopt_lineages: c.adopt_lineage.clone(),
        preview,
        notify: &eprint_line,
    }
}

/// What the engine reports while it works, for the user: one line on stderr.
pub(crate) fn eprint_line(line: &str) {
    errln!("{line}");
}

/// Ctrl-C sets `cancel`: the apply stops starting operations and saves. A
/// second Ctrl-C stops at once; the journal already holds every result.
pub(crate) fn watch_ctrl_c(cancel: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.store(true, Ordering::SeqCst);
            if tokio::signal::ctrl_c().await.is_ok() {
                errln!("Stopped. Run apply again to finish: it picks up from the journal.");
                std::process::exit(130);
            }
        }
    })
}

pub(crate) fn confirm(what: &str) -> Result<(), Failure> {
    if !std::io::stdin().is_terminal() {
        return Err(Failure(
            "refusing to apply without confirmation: stdin is not a terminal\n  hint: review the plan, then pass --auto-approve (or apply a saved plan)".into(),
        ));
    }
    out!("\nDo you want to {what}? Only 'yes' will be accepted: ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Failure(e.to_string()))?;
    if answer.trim() == "yes" {
        Ok(())
    } else {
        Err(Failure("apply cancelled".into()))
    }
}

pub(crate) fn engine_failure(e: EngineError) -> Failure {
    Failure(e.to_string())
}

pub(crate) fn project_mismatch(store: &StateStore, doc: &StateDoc, loaded: &LoadedSpec) -> Failure {
    Failure(format!(
        "state {} belongs to project `{}`, but {} is project `{}`\n  hint: pass --state with this project's own state file",
        store.location(),
        doc.project,
        loaded.path.display(),
        loaded.spec.project
    ))
}

/// The state named by --state, or by a spec (-f), or the only one in .gpuform/.
pub(super) fn store_for(s: &StateArgs) -> Result<StateStore, Failure> {
    if s.state_url.as_deref().is_some_and(|u| !u.trim().is_empty()) {
        let loaded = match &s.file {
            Some(f) => Some(load(f, &VarArgs::default())?),
            None => None,
        };
        return engine::state_store(loaded.as_ref(), s.state.as_deref(), s.state_url.as_deref())
            .map_err(engine_failure);
    }
    if let Some(p) = &s.state {
        return Ok(StateStore::new(p));
    }
    if let Some(f) = &s.file {
        let loaded = load(f, &VarArgs::default())?;
        return engine::state_store(Some(&loaded), None, None).map_err(engine_failure);
    }
    let found: Vec<PathBuf> = std::fs::read_dir(engine::STATE_DIR)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().ends_with(".state.json"))
                .collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [one] => Ok(StateStore::new(one)),
        [] => Err(Failure(
            "no state found in .gpuform/\n  hint: pass --state PATH or -f SPEC".into(),
        )),
        many => Err(Failure(format!(
            "several states in .gpuform/ ({}); pass --state PATH or -f SPEC",
            many.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

pub(super) fn load_state(s: &StateArgs) -> Result<(StateStore, StateDoc), Failure> {
    let store = store_for(s)?;
    let (doc, existed) = engine::read_state(&store, "")?;
    if !existed {
        return Err(Failure(format!("no state at {}", store.location())));
    }
    Ok((store, doc))
}

pub(crate) fn finish_apply(
    plan: &Plan,
    doc: &StateDoc,
    report: &ApplyReport,
    json: bool,
    quiet: bool,
) -> CmdResult {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "plan": plan,
                "outcomes": report.outcomes.iter().map(|(a, op, o)| serde_json::json!({"address": a, "operation": op, "result": o})).collect::<Vec<_>>(),
                "interrupted": report.interrupted,
                "elapsed_ms": report.elapsed_ms,
                "state": {"lineage": doc.lineage, "serial": doc.serial, "resources": doc.resources.len()},
            }))
            .expect("serialises")
        );
    } else if !quiet {
        let created = report.count(|o| matches!(o, OpOutcome::Created { .. }));
        let updated = report.count(|o| matches!(o, OpOutcome::Updated { .. }));
        let deleted = report.count(|o| matches!(o, OpOutcome::Deleted));
        outln!(
            "\nApply {}: {created} created, {updated} updated, {deleted} destroyed in {:.2}s. State serial {} ({} resources).",
            if report.ok() { "complete" } else { "INCOMPLETE" },
            report.elapsed_ms as f64 / 1000.0,
            doc.serial,
            doc.resources.len()
        );
    }
    for (address, op, o) in &report.outcomes {
        match o {
            OpOutcome::Failed { error, .. } => errln!("error: {op} {address}: {error}"),
            OpOutcome::Skipped { because } if !quiet => {
                errln!("skipped: {op} {address}: {because}")
            }
            _ => {}
        }
    }
    if report.interrupted {
        return Err(Failure(format!(
            "interrupted: {} operation(s) not started; state is saved — run apply again to finish",
            report.count(|o| matches!(o, OpOutcome::NotStarted))
        )));
    }
    if report.failed() > 0 {
        return Err(Failure(format!(
            "{} operation(s) failed; everything that succeeded is recorded in state",
            report.failed()
        )));
    }
    Ok(ExitCode::SUCCESS)
}
