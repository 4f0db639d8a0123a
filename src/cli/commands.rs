//! One function per command.

use super::args::*;
use super::out::{errln, out, outln};
use super::progress::terminal_apply;
use super::{CmdResult, Failure};
use crate::apply::{ApplyReport, OpOutcome};
use crate::engine::{self, ApplyEvent, EngineError, PlanRequest};
use crate::plan::render::render;
use crate::plan::{DiffOptions, Plan};
use crate::providers::Providers;
use crate::resolve::ResolveOptions;
use std::collections::BTreeMap;

/// How many capacity failures state keeps as a log.
use crate::spec::{self, LoadedSpec, Vars};
use crate::state::{StateDoc, StateLock, StateStore};
use gpuform_catalog::fsio::write_atomically;
use gpuform_catalog::{Catalog, DEFAULT_CNY_PER_USD};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub async fn run(cli: Cli) -> CmdResult {
    let quiet = cli.quiet;
    match cli.command {
        Command::Validate {
            file,
            vars,
            sandbox,
            json,
        } => validate(&file, &vars, sandbox, json),
        Command::Init { file, project } => init(&file, project.as_deref()),
        Command::Fmt { files, check } => fmt(&files, check),
        Command::Plan(a) => plan(a, quiet).await,
        Command::Apply(a) => apply(a, false, quiet).await,
        Command::Destroy(a) => apply(a, true, quiet).await,
        Command::Reconcile(a) => super::reconcile::reconcile_cmd(a).await,
        Command::Show { plan, state, json } => show(plan.as_deref(), &state, json),
        Command::Output { state, json } => output(&state, json),
        Command::Kubeconfig(a) => kubeconfig(&a),
        Command::State(c) => state_cmd(c),
        Command::Graph {
            file,
            vars,
            sandbox,
        } => graph(&file, &vars, sandbox),
        Command::ForceUnlock { id, state } => {
            let store = store_for(&state)?;
            let info = StateLock::force_unlock(&store, &id)?;
            outln!(
                "Unlocked {} (was held by {} pid {}).",
                store.location(),
                info.owner,
                info.pid
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Sandbox(c) => sandbox_cmd(c),
        Command::Offers(a) => super::portability::offers_cmd(a),
        Command::Breakeven(a) => super::portability::breakeven_cmd(a),
        Command::Lockin(a) => super::portability::lockin_cmd(a),
        Command::Bootstrap(BootstrapCommand::Show {
            address,
            file,
            vars,
            sandbox,
            part,
        }) => bootstrap_show(&address, &file, &vars, sandbox, part.as_deref()),
        Command::Migrate(a) => super::portability::migrate_cmd(a),
        Command::Recommend(a) => super::recommend::recommend_cmd(a),
        Command::Audit(a) => super::audit::audit_cmd(a).await,
        Command::Import(a) => super::import::import_cmd(a, cli.quiet).await,
        Command::Gc(a) => super::audit::gc_cmd(a, quiet).await,
        Command::Prices(c) => super::prices::prices_cmd(c, quiet).await,
        Command::Catalog(c) => super::catalog::catalog_cmd(c, quiet).await,
        Command::Version => {
            outln!("gpuform {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            // Generated whole first: clap_complete panics on a write error.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "gpuform", &mut script);
            super::out::stdout_bytes(&script);
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub(super) fn load(file: &Path, vars: &VarArgs) -> Result<LoadedSpec, Failure> {
    let vars = Vars::parse_cli(&vars.vars, &vars.var_files).map_err(|d| Failure(d.to_string()))?;
    load_spec(file, &vars).map_err(|d| Failure(d.to_string()))
}

/// Loads a spec. When it does not validate, the catalog's checks (resolve)
/// still run on the parts that did (`spec::load_salvaging`), so one run
/// reports every problem: another cluster's region, `mig:` on a GPU without
/// MIG beside a bad port.
pub(super) fn load_spec(file: &Path, vars: &Vars) -> Result<LoadedSpec, spec::Diagnostics> {
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

pub(super) fn resolve_opts(sandbox: bool, cny: Option<f64>) -> ResolveOptions {
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
fn warn_stale_discovery(regions: &[gpuform_catalog::DiscoveredRegion]) {
    use gpuform_catalog::PriceAge;
    static ONCE: std::sync::Once = std::sync::Once::new();
    let today = crate::clock::today();
    let stale: Vec<String> = regions
        .iter()
        .filter_map(|r| {
            match gpuform_catalog::price_age(
                &r.discovered_on,
                today,
                crate::portability::offers::DEFAULT_STALE_DAYS,
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
            crate::portability::offers::DEFAULT_STALE_DAYS
        );
    });
}

fn bootstrap_show(
    address: &str,
    file: &Path,
    vars: &VarArgs,
    sandbox: bool,
    part: Option<&str>,
) -> CmdResult {
    let loaded = load(file, vars)?;
    let desired = engine::desired(&loaded, &*catalog_for(None)?, &resolve_opts(sandbox, None))
        .map_err(|e| Failure(e.to_string()))?;
    let Some(r) = desired.get(address) else {
        let nodes: Vec<&str> = desired
            .resources
            .iter()
            .filter(|r| r.kind == gpuform_provider::ResourceKind::Instance)
            .map(|r| r.address.as_str())
            .take(8)
            .collect();
        return Err(Failure(format!(
            "{address} is not a node of {}\n  hint: nodes: {}",
            file.display(),
            nodes.join(", ")
        )));
    };
    let Some(doc) = r
        .attrs
        .get(crate::resolve::USER_DATA_SHA256)
        .and_then(|v| v.as_str())
        .and_then(|sha| desired.documents.get(sha))
    else {
        return Err(Failure(format!(
            "{address} has no bootstrap: nothing to set up at boot (CUDA image, no MIG, no local NVMe, no kubernetes)"
        )));
    };
    let parts = crate::bootstrap::split_multipart(doc);
    let text = match part {
        None => doc.to_string(),
        Some("cloud-config") => parts.first().map(|p| p.1.clone()).unwrap_or_default(),
        Some("user-data") => parts
            .get(1)
            .map(|p| p.1.clone())
            .ok_or_else(|| Failure(format!("{address} has no user_data of its own")))?,
        Some(name) => {
            let script = script_in(&parts[0].1, name).ok_or_else(|| {
                Failure(format!(
                    "{address} has no part `{name}`\n  hint: cloud-config, user-data, or a script or manifest: {}",
                    scripts_in(&parts[0].1).join(", ")
                ))
            })?;
            script
        }
    };
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The scripts (and a k3s server's manifests) a cloud-config part writes,
/// by file name.
fn scripts_in(cloud_config: &str) -> Vec<String> {
    cloud_config
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- path: "))
        .filter(|p| {
            p.ends_with(".sh") || p.starts_with(crate::bootstrap::manifests::K3S_MANIFESTS_DIR)
        })
        .filter_map(|p| p.rsplit('/').next())
        .map(str::to_string)
        .collect()
}

/// The content of one script a cloud-config part writes (block literal).
fn script_in(cloud_config: &str, name: &str) -> Option<String> {
    let mut lines = cloud_config.lines();
    lines.find(|l| {
        l.trim()
            .strip_prefix("- path: ")
            .is_some_and(|p| p.ends_with(&format!("/{name}")))
    })?;
    lines.find(|l| l.trim() == "content: |")?;
    let mut out = String::new();
    for l in lines {
        if l.is_empty() {
            out.push('\n');
        } else if let Some(body) = l.strip_prefix("      ") {
            out.push_str(body);
            out.push('\n');
        } else {
            break;
        }
    }
    Some(out)
}

/// Every distinct bootstrap document, checked with cloud-init's schema
/// validator when it is installed; a refusal points at the cluster (or its
/// `user_data`, when that part is the user's).
fn check_bootstraps(
    loaded: &LoadedSpec,
    desired: &crate::resolve::Desired,
) -> Result<(), spec::Diagnostics> {
    let mut diags = Vec::new();
    for (sha, doc) in &desired.documents {
        // The first node with this document, to point at its cluster.
        let Some(r) = desired.resources.iter().find(|r| {
            r.attrs
                .get(crate::resolve::USER_DATA_SHA256)
                .and_then(|v| v.as_str())
                == Some(sha)
        }) else {
            continue;
        };
        if let Some(Err((part, why))) = crate::bootstrap::cloud_init_check(doc) {
            let (path, whose) = if part == 0 {
                (r.yaml_path.clone(), "gpuform's bootstrap")
            } else {
                (format!("{}.user_data", r.yaml_path), "your user_data")
            };
            diags.push(loaded.diagnostic(
                &path,
                format!("cloud-init refuses {whose} for {}: {why}", r.address),
                Some("see `gpuform bootstrap show ADDRESS SPEC --part cloud-config`".into()),
            ));
        }
    }
    if diags.is_empty() {
        Ok(())
    } else {
        Err(spec::Diagnostics(diags))
    }
}

fn validate(file: &Path, vars: &VarArgs, sandbox: bool, json: bool) -> CmdResult {
    let parsed = Vars::parse_cli(&vars.vars, &vars.var_files).and_then(|v| load_spec(file, &v));
    let catalog = catalog_for(None)?;
    let result = parsed.and_then(|loaded| {
        engine::desired(&loaded, &catalog, &resolve_opts(sandbox, None))
            .map_err(|e| match e {
                EngineError::Spec(d) => d,
                other => spec::Diagnostics(vec![spec::Diagnostic {
                    file: file.display().to_string(),
                    line: None,
                    column: None,
                    yaml_path: None,
                    message: other.to_string(),
                    hint: None,
                }]),
            })
            .and_then(|d| check_bootstraps(&loaded, &d).map(|()| d))
            .map(|d| (loaded, d))
    });
    match result {
        Ok((loaded, desired)) => {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"valid": true, "file": file.display().to_string(), "resources": desired.resources.len(), "lockin": desired.lockin, "diagnostics": []})
                );
            } else {
                outln!(
                    "{} is valid: project {}, {} cluster(s), {} resource(s).",
                    file.display(),
                    loaded.spec.project,
                    loaded.spec.clusters.len(),
                    desired.resources.len()
                );
                for l in &desired.lockin {
                    outln!("  lock-in: {}: {}", l.yaml_path, l.reason);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(d) => {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"valid": false, "file": file.display().to_string(), "diagnostics": d.to_json()})
                );
                Ok(ExitCode::from(1))
            } else {
                Err(Failure(d.to_string()))
            }
        }
    }
}

/// The spec `gpuform init` writes: the README's quickstart, which CI applies.
const STARTER_SPEC: &str = include_str!("../../examples/quickstart.yaml");

/// `gpuform init`: the quickstart spec under the user's project name, checked
/// by the same loader as every spec before it is written, never over a file.
fn init(file: &Path, project: Option<&str>) -> CmdResult {
    if file.exists() {
        return Err(Failure(format!(
            "{} already exists; nothing was written\n  hint: name another file (`gpuform init other.yaml`) or edit this one",
            file.display()
        )));
    }
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let project = match project {
        Some(p) => p.to_string(),
        None => project_from_dir(&dir),
    };
    let text = STARTER_SPEC
        .lines()
        // The schema comment points into the repository's schemas/, which a
        // spec written elsewhere cannot reach.
        .filter(|l| !l.starts_with("# yaml-language-server:"))
        .skip_while(|l| l.trim() == "#" || l.is_empty())
        .map(|l| {
            if l.starts_with("project:") {
                format!("project: {project}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    // The starter must be a spec gpuform accepts, whatever name it was given.
    if let Err(d) = spec::load_str(&file.display().to_string(), &text, &Vars::new()) {
        return Err(Failure(format!(
            "the starter spec with project `{project}` is not valid; nothing was written\n{d}\n  hint: pass --project NAME (letters, digits and `-`)"
        )));
    }
    write_atomically(file, text.as_bytes())
        .map_err(|e| Failure(format!("cannot write {}: {e}", file.display())))?;
    outln!(
        "Wrote {} (project {project}): two one-GPU nodes and a bucket on the offline sandbox cloud.\nNext: gpuform plan {0}, then gpuform apply {0}.",
        file.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A project name from a directory's name: lower case, runs of anything but
/// letters and digits made one `-` (bucket names derive from it), at most 40.
pub(super) fn project_from_dir(dir: &Path) -> String {
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

fn fmt(files: &[PathBuf], check: bool) -> CmdResult {
    let mut unformatted = 0;
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Failure(format!("cannot read {}: {e}", f.display())))?;
        let formatted = spec::format(&text).map_err(|d| Failure(d.to_string()))?;
        if formatted == text {
            continue;
        }
        unformatted += 1;
        if check {
            out!(
                "{}",
                spec::format_diff(&f.display().to_string(), &text, &formatted)
            );
        } else {
            // Atomic: a crash never leaves a half-written spec.
            write_atomically(f, formatted.as_bytes())
                .map_err(|e| Failure(format!("cannot write {}: {e}", f.display())))?;
            outln!("{}", f.display());
        }
    }
    Ok(if check && unformatted > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Starts what a plan needs and the state read does not: the built-in
/// catalog's parse and, for a sandbox run, the sandbox cloud's replay.
pub(super) fn warm_up(providers: &Providers, sandbox: bool) {
    std::thread::spawn(|| {
        Catalog::builtin();
    });
    if sandbox {
        providers.warm_sandbox();
    }
}

pub(super) fn providers_for(
    store: &StateStore,
    endpoints: &BTreeMap<String, String>,
) -> Arc<Providers> {
    Arc::new(Providers::new(engine::sandbox_dir(store)).with_endpoints(endpoints.clone()))
}

async fn plan(mut a: PlanArgs, quiet: bool) -> CmdResult {
    match a.format {
        Some(PlanFormat::Json) => a.json = true,
        Some(PlanFormat::Markdown) => a.markdown = true,
        Some(PlanFormat::Text) | None => {}
    }
    let loaded = load(&a.file, &a.vars)?;
    let store = a.location.store(Some(&loaded)).map_err(engine_failure)?;
    let providers = providers_for(&store, &loaded.spec.endpoints);
    // Work the state read does not wait for, on the second core meanwhile.
    warm_up(&providers, a.sandbox && a.refresh);
    let (doc, existed) = engine::read_state(&store, &loaded.spec.project)?;
    if existed && doc.project != loaded.spec.project {
        return Err(project_mismatch(&store, &doc, &loaded));
    }
    let catalog = catalog_for(a.prices.as_deref())?;
    let req = PlanRequest {
        loaded: &loaded,
        catalog: &catalog,
        resolve: resolve_opts(a.sandbox, a.cny_per_usd),
        diff: DiffOptions {
            destroy: a.destroy,
            targets: a.targets.clone(),
            cny_per_usd: a.cny_per_usd.unwrap_or(DEFAULT_CNY_PER_USD),
            replace: a.replace.clone(),
        },
        refresh: a.refresh,
        adopt_lineages: a.adopt_lineage.clone(),
        preview: true,
        notify: &eprint_line,
    };
    let (mut plan, current) = engine::make_plan(&req, doc, existed, &providers)
        .await
        .map_err(engine_failure)?;
    plan.state_path = Some(store.location());
    plan.workspace = store.workspace().map(str::to_string);
    if let Some(out) = &a.out {
        write_plan_file(out, &plan)?;
    }
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&plan).expect("plans serialise")
        );
    } else if a.markdown {
        out!(
            "{}",
            crate::plan::markdown::render_markdown(&plan, loaded.spec.budget.as_ref())
        );
    } else if !quiet {
        out!("{}", render(&plan, a.verbose));
        // Notes explain choices; a plan that changes nothing has none to explain.
        if plan.has_changes() || a.verbose {
            for n in &plan.notes {
                outln!("  note: {n}");
            }
        }
        if let Some(out) = &a.out {
            outln!(
                "\nSaved the plan to {}. Apply exactly it with:\n  gpuform apply {}",
                out.display(),
                out.display()
            );
        }
    }
    let code = if a.detailed_exitcode && plan.has_changes() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    // The process ends with this command: freeing every attribute map one by
    // one would cost a third of a large plan's time (nothing here has a Drop
    // that matters: plans take no lock and sandbox writes are already made).
    std::mem::forget((plan, current, loaded, providers));
    Ok(code)
}

fn write_plan_file(out: &Path, plan: &Plan) -> Result<(), Failure> {
    let bytes = crate::plan::saved::encode(plan);
    // A plan holds what the state holds: encrypted like it when a key is set
    // (which also authenticates it: see `plan::saved`).
    let bytes = crate::state::crypto::seal(bytes)
        .map_err(|e| Failure(format!("cannot encrypt plan file {}: {e}", out.display())))?;
    write_atomically(out, &bytes)
        .map_err(|e| Failure(format!("cannot write plan file {}: {e}", out.display())))
}

/// A saved plan, if `file` is one, proven to be the plan that was made
/// (`plan::saved`); `None` when it is not a plan (a spec).
fn read_plan_file(file: &Path) -> Result<Option<Plan>, Failure> {
    let bytes =
        std::fs::read(file).map_err(|e| Failure(format!("cannot read {}: {e}", file.display())))?;
    if !bytes.trim_ascii_start().starts_with(b"{") {
        return Ok(None);
    }
    let sealed = crate::state::crypto::is_encrypted(&bytes);
    let opened = crate::state::crypto::open(&bytes).map_err(|e| {
        Failure(format!(
            "plan file {} cannot be opened: {e}",
            file.display()
        ))
    })?;
    let label = file.display().to_string();
    let plan = crate::plan::saved::decode(&opened).map_err(|e| Failure(e.message(&label)))?;
    if plan.is_some() && !sealed && crate::state::crypto::enabled() {
        // Anyone can recompute a plain checksum; only the passphrase's
        // holder can seal. A plan made with the passphrase set is sealed.
        return Err(Failure(format!(
            "{label} is not encrypted, but {} is set: a plan made with the passphrase is always encrypted, which is what proves it was not replaced, so this one was made without it or swapped\n  hint: make a new plan with `gpuform plan SPEC --out FILE` and apply that",
            crate::state::crypto::PASSPHRASE_VAR
        )));
    }
    Ok(plan)
}

async fn apply(a: ApplyArgs, destroy: bool, quiet: bool) -> CmdResult {
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
            let cat = catalog.insert(catalog_for(a.prices.as_deref())?);
            let (plan, current) = engine::make_plan(
                &plan_request(&a, &loaded, cat, destroy),
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
    // Buying is opted into apart from approving (CI must opt in to spending).
    let purchases: Vec<&str> = plan
        .changes
        .iter()
        .filter(|c| {
            c.kind == gpuform_provider::ResourceKind::Block
                && c.action == crate::plan::Action::Create
        })
        .map(|c| c.address.as_str())
        .collect();
    if !purchases.is_empty() && !a.allow_purchase {
        return Err(Failure(gpuform_provider::UserError::new(
            format!(
                "this apply would buy {} Capacity Block(s) ({}), which are paid up front and cannot be cancelled; nothing was done",
                purchases.len(),
                purchases.join(", ")
            ),
            "review the plan's block lines (offering, window, upfront price), then apply again with --allow-purchase",
        ).to_string()));
    }
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
            request: plan_request(&a, loaded, cat, destroy),
        }),
        _ => None,
    };
    let opts = terminal_apply(a.parallelism, quiet || a.json);
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

/// The request a spec apply plans with (round 1, and each failover round).
pub(super) fn plan_request<'a>(
    a: &ApplyArgs,
    loaded: &'a LoadedSpec,
    catalog: &'a Catalog,
    destroy: bool,
) -> PlanRequest<'a> {
    PlanRequest {
        loaded,
        catalog,
        resolve: resolve_opts(a.sandbox, a.cny_per_usd),
        diff: DiffOptions {
            destroy,
            targets: a.targets.clone(),
            cny_per_usd: a.cny_per_usd.unwrap_or(DEFAULT_CNY_PER_USD),
            replace: a.replace.clone(),
        },
        refresh: a.refresh,
        adopt_lineages: a.adopt_lineage.clone(),
        preview: false,
        notify: &eprint_line,
    }
}

/// What the engine reports while it works, for the user: one line on stderr.
pub(super) fn eprint_line(line: &str) {
    errln!("{line}");
}

/// Ctrl-C sets `cancel`: the apply stops starting operations and saves. A
/// second Ctrl-C stops at once; the journal already holds every result.
pub(super) fn watch_ctrl_c(cancel: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
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

pub(super) fn finish_apply(
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

pub(super) fn confirm(what: &str) -> Result<(), Failure> {
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

pub(super) fn engine_failure(e: EngineError) -> Failure {
    Failure(e.to_string())
}

pub(super) fn project_mismatch(store: &StateStore, doc: &StateDoc, loaded: &LoadedSpec) -> Failure {
    Failure(format!(
        "state {} belongs to project `{}`, but {} is project `{}`\n  hint: pass --state with this project's own state file",
        store.location(),
        doc.project,
        loaded.path.display(),
        loaded.spec.project
    ))
}

/// The state named by --state, or by a spec (-f), or the only one in .gpuform/.
fn store_for(s: &StateArgs) -> Result<StateStore, Failure> {
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

fn load_state(s: &StateArgs) -> Result<(StateStore, StateDoc), Failure> {
    let store = store_for(s)?;
    let (doc, existed) = engine::read_state(&store, "")?;
    if !existed {
        return Err(Failure(format!("no state at {}", store.location())));
    }
    Ok((store, doc))
}

fn show(plan: Option<&Path>, s: &StateArgs, json: bool) -> CmdResult {
    if let Some(p) = plan {
        let plan = read_plan_file(p)?
            .ok_or_else(|| Failure(format!("{} is not a gpuform plan file", p.display())))?;
        if json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&plan).expect("serialises")
            );
        } else {
            out!("{}", render(&plan, true));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (store, doc) = load_state(s)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "State {} — project {}, lineage {}, serial {}, {} resource(s)",
        store.location(),
        doc.project,
        doc.lineage,
        doc.serial,
        doc.resources.len()
    );
    for (address, r) in &doc.resources {
        outln!(
            "\n# {address}\n  {} {} ({} {})",
            r.kind,
            r.id,
            r.provider,
            r.region
        );
        for (k, v) in &r.attrs {
            outln!("    {k} = {v}");
        }
    }
    if !doc.pending.is_empty() {
        outln!(
            "\nInterrupted creates to be checked by the next refresh: {}",
            doc.pending.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn output(s: &StateArgs, json: bool) -> CmdResult {
    let (_, doc) = load_state(s)?;
    let nodes: Vec<serde_json::Value> = doc
        .resources
        .iter()
        .filter(|(_, r)| r.kind == gpuform_provider::ResourceKind::Instance)
        .map(|(a, r)| {
            serde_json::json!({
                "address": a, "id": r.id, "provider": r.provider, "region": r.region,
                "zone": r.attrs.get("zone"), "instance_type": r.attrs.get("instance_type"),
                "private_ip": r.reported.private_ip,
            })
        })
        .collect();
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&nodes).expect("serialises")
        );
    } else {
        let mut table = comfy_table::Table::new();
        table.load_preset(comfy_table::presets::UTF8_HORIZONTAL_ONLY);
        table.set_header([
            "address",
            "id",
            "provider",
            "zone",
            "instance type",
            "private ip",
        ]);
        for n in &nodes {
            let s = |k: &str| n[k].as_str().unwrap_or("").to_string();
            table.add_row([
                s("address"),
                s("id"),
                s("provider"),
                s("zone"),
                s("instance_type"),
                s("private_ip"),
            ]);
        }
        outln!("{table}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `gpuform kubeconfig`: the server's reported address from state, the
/// pinned server CA and a new admin client certificate (crate::k8s).
fn kubeconfig(a: &KubeconfigArgs) -> CmdResult {
    use crate::spec::KubernetesMode;
    let loaded = load(&a.file, &a.vars)?;
    let Some(c) = loaded.spec.clusters.get(&a.cluster) else {
        let names: Vec<&str> = loaded.spec.clusters.keys().map(String::as_str).collect();
        return Err(Failure(format!(
            "{} has no cluster `{}`\n  hint: clusters: {}",
            a.file.display(),
            a.cluster,
            names.join(", ")
        )));
    };
    if c.kubernetes.as_ref().map(|k| k.mode) != Some(KubernetesMode::K3s) {
        return Err(Failure(format!(
            "cluster `{}` is not a k3s cluster gpuform makes\n  hint: add `kubernetes: {{ mode: k3s, token_env: K3S_TOKEN }}` to it (a kubeadm-join cluster's kubeconfig comes from that cluster)",
            a.cluster
        )));
    }
    let store = a.location.store(Some(&loaded)).map_err(engine_failure)?;
    let (doc, existed) = engine::read_state(&store, "")?;
    let server = format!("cluster.{}.node[0]", a.cluster);
    let record = doc
        .resources
        .get(&server)
        .filter(|_| existed)
        .ok_or_else(|| {
            Failure(format!(
            "{server} (the k3s server) is not in state {}\n  hint: `gpuform apply {}` creates it",
            store.location(),
            a.file.display()
        ))
        })?;
    let ip = |k: &str| {
        record
            .reported
            .get(k)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let address = match a.address.as_str() {
        "public" => ip("public_ip"),
        "private" => ip("private_ip"),
        _ => ip("public_ip").or_else(|| ip("private_ip")),
    }
    .ok_or_else(|| {
        Failure(format!(
            "state has no {} address of {server}\n  hint: `gpuform apply` (or `gpuform plan`, which refreshes) records what the cloud reports",
            if a.address == "auto" { "reported" } else { a.address.as_str() }
        ))
    })?;
    let dir = store.secrets_dir();
    let cas = crate::k8s::load(&dir, &a.cluster)
        .map_err(Failure)?
        .ok_or_else(|| {
            Failure(format!(
                "no credentials for cluster `{}` in {}\n  hint: they are made on this machine by the apply that creates the server; a server made elsewhere or before gpuform made them: copy that machine's {} here, or replace the server (`gpuform apply --replace {server}`)",
                a.cluster,
                dir.display(),
                dir.display()
            ))
        })?;
    let (crt, key) = cas
        .issue_admin(crate::clock::today(), a.valid_days)
        .map_err(Failure)?;
    let name = format!("{}-{}", loaded.spec.project, a.cluster);
    let text = crate::k8s::kubeconfig(
        &name,
        &format!("https://{address}:6443"),
        &cas.server_ca_crt,
        &crt,
        &key,
    );
    match a.out.as_deref() {
        Some(p) if p == Path::new("-") => out!("{text}"),
        other => {
            let path = other
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(format!("{name}.kubeconfig")));
            crate::k8s::write_private(&path, text.as_bytes()).map_err(Failure)?;
            outln!(
                "Wrote {} (server https://{address}:6443, admin certificate valid {} days).\n  export KUBECONFIG={}",
                path.display(),
                a.valid_days,
                path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The local and the remote store of `state push` / `pull`.
fn push_pull_stores(s: &StateArgs) -> Result<(StateStore, StateStore), Failure> {
    let Some(f) = &s.file else {
        return Err(Failure(
            "a remote state is named by its project\n  hint: pass the spec with -f SPEC".into(),
        ));
    };
    let loaded = load(f, &VarArgs::default())?;
    let remote =
        engine::state_store(Some(&loaded), None, s.state_url.as_deref()).map_err(engine_failure)?;
    if !remote.is_remote() {
        return Err(Failure(
            "no remote state is configured\n  hint: pass --state-url postgres://..., set GPUFORM_STATE_URL, or add `state: { backend: postgres, url: ... }` to the spec".into(),
        ));
    }
    let local = StateStore::new(
        s.state
            .clone()
            .unwrap_or_else(|| engine::state_path(Some(&loaded), None)),
    );
    Ok((local, remote))
}

fn state_push(s: &StateArgs) -> CmdResult {
    let (local, remote) = push_pull_stores(s)?;
    // Locking folds any journal left by an interrupted apply (the remote
    // backend's, then this disk's) and saves it: the first half of a push.
    let mut locked = engine::lock_state(&remote, "", "state push").map_err(engine_failure)?;
    let mut pushed = Vec::new();
    if locked.recovered {
        pushed.push("the journal of an interrupted apply".to_string());
    }
    if let Some(doc) = local.load()? {
        if locked.existed && locked.doc.lineage != doc.lineage {
            return Err(Failure(format!(
                "the remote state {} has lineage {}, the local state {} has lineage {}: they are different states, and pushing would overwrite one with the other; nothing was changed\n  hint: push to another workspace (GPUFORM_WORKSPACE) or project",
                remote.location(),
                locked.doc.lineage,
                local.location(),
                doc.lineage
            )));
        }
        if locked.existed && locked.doc.serial > doc.serial {
            return Err(Failure(format!(
                "the remote state {} is newer (serial {}) than the local state {} (serial {}); nothing was changed\n  hint: `gpuform state pull` to bring the remote one here",
                remote.location(),
                locked.doc.serial,
                local.location(),
                doc.serial
            )));
        }
        if !locked.existed || locked.doc != doc {
            let mut new = doc.clone();
            new.serial = new.serial.max(locked.doc.serial);
            remote.commit(&mut new)?;
            locked.doc = new;
        }
        // The remote state is the state now: keep the local file as a copy
        // under another name, so that no later command uses it by mistake.
        let kept = crate::state::store::sibling(local.path(), ".migrated");
        std::fs::rename(local.path(), &kept)
            .map_err(|e| Failure(format!("cannot rename {}: {e}", local.location())))?;
        pushed.push(format!(
            "the local state {} (serial {}; the file is kept as {})",
            local.location(),
            doc.serial,
            kept.display()
        ));
    } else if !locked.existed {
        return Err(Failure(format!(
            "nothing to push: no local state at {} and no remote state at {}",
            local.location(),
            remote.location()
        )));
    }
    if pushed.is_empty() {
        outln!(
            "The remote state {} is up to date (serial {}).",
            remote.location(),
            locked.doc.serial
        );
    } else {
        outln!(
            "Pushed {} to {} (serial {}).",
            pushed.join(" and "),
            remote.location(),
            locked.doc.serial
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn state_pull(s: &StateArgs) -> CmdResult {
    let (local, remote) = push_pull_stores(s)?;
    let locked_remote = engine::lock_state(&remote, "", "state pull").map_err(engine_failure)?;
    if !locked_remote.existed {
        return Err(Failure(format!("no state at {}", remote.location())));
    }
    let mut locked_local = engine::lock_state(&local, "", "state pull").map_err(engine_failure)?;
    if locked_local.existed && locked_local.doc.lineage != locked_remote.doc.lineage {
        return Err(Failure(format!(
            "the local state {} has lineage {}, the remote state {} has lineage {}: they are different states; nothing was changed\n  hint: move the local file away first if it is no longer needed",
            local.location(),
            locked_local.doc.lineage,
            remote.location(),
            locked_remote.doc.lineage
        )));
    }
    let doc = locked_remote.doc.clone();
    local.save(&doc)?;
    locked_local.doc = doc;
    outln!(
        "Pulled {} (serial {}) into {}.",
        remote.location(),
        locked_local.doc.serial,
        local.location()
    );
    Ok(ExitCode::SUCCESS)
}

fn state_cmd(c: StateCommand) -> CmdResult {
    match c {
        StateCommand::Push { state } => return state_push(&state),
        StateCommand::Pull { state } => return state_pull(&state),
        StateCommand::List { state } => {
            let (_, doc) = load_state(&state)?;
            for a in doc.resources.keys() {
                outln!("{a}");
            }
        }
        StateCommand::Show { address, state } => {
            let (_, doc) = load_state(&state)?;
            let r = doc
                .resources
                .get(&address)
                .ok_or_else(|| Failure(format!("no resource `{address}` in state")))?;
            outln!("{}", serde_json::to_string_pretty(r).expect("serialises"));
        }
        StateCommand::Rm { addresses, state } => {
            let store = store_for(&state)?;
            let mut locked = engine::lock_state(&store, "", "state rm").map_err(engine_failure)?;
            for a in &addresses {
                if locked.doc.resources.remove(a).is_none() {
                    return Err(Failure(format!(
                        "no resource `{a}` in state; nothing was changed"
                    )));
                }
            }
            store.commit(&mut locked.doc)?;
            outln!(
                "Removed {} address(es) from state; the resources themselves were not touched.",
                addresses.len()
            );
        }
        StateCommand::Mv { from, to, state } => {
            let store = store_for(&state)?;
            let mut locked = engine::lock_state(&store, "", "state mv").map_err(engine_failure)?;
            if locked.doc.resources.contains_key(&to) {
                return Err(Failure(format!(
                    "`{to}` is already in state; nothing was changed"
                )));
            }
            let r = locked
                .doc
                .resources
                .remove(&from)
                .ok_or_else(|| Failure(format!("no resource `{from}` in state")))?;
            locked.doc.resources.insert(to.clone(), r);
            store.commit(&mut locked.doc)?;
            outln!("Moved {from} to {to}.");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn graph(file: &Path, vars: &VarArgs, sandbox: bool) -> CmdResult {
    let loaded = load(file, vars)?;
    let desired = engine::desired(&loaded, &*catalog_for(None)?, &resolve_opts(sandbox, None))
        .map_err(engine_failure)?;
    let mut g = petgraph::Graph::<String, String>::new();
    let mut idx = std::collections::HashMap::new();
    for r in &desired.resources {
        idx.insert(r.address.clone(), g.add_node(r.address.clone()));
    }
    for r in &desired.resources {
        for (role, dep) in &r.deps {
            let (Some(&a), Some(&b)) = (idx.get(dep), idx.get(&r.address)) else {
                return Err(Failure(format!("{} depends on unknown {dep}", r.address)));
            };
            g.add_edge(a, b, role.clone());
        }
    }
    if petgraph::algo::is_cyclic_directed(&g) {
        return Err(Failure("the resource graph has a cycle".into()));
    }
    outln!("{}", petgraph::dot::Dot::new(&g));
    Ok(ExitCode::SUCCESS)
}

fn sandbox_cmd(c: SandboxCommand) -> CmdResult {
    let state = match &c {
        SandboxCommand::Ls { state, .. }
        | SandboxCommand::Delete { state, .. }
        | SandboxCommand::Reclaim { state, .. }
        | SandboxCommand::Set { state, .. }
        | SandboxCommand::Disown { state, .. }
        | SandboxCommand::Reserve { state, .. }
        | SandboxCommand::Reset { state } => state.clone(),
    };
    let dir = match std::env::var_os("GPUFORM_SANDBOX_DIR") {
        Some(d) => PathBuf::from(d),
        None => engine::sandbox_dir(&store_for(&state)?),
    };
    // Reset works on an inventory too damaged to open; the rest opens it.
    let open = || {
        Providers::new(dir.clone())
            .sandbox()
            .map_err(engine_failure)
    };
    match c {
        SandboxCommand::Reset { .. } => {
            gpuform_sandbox::SandboxCloud::reset_dir(&dir).map_err(|e| Failure(e.to_string()))?;
            outln!("The sandbox cloud at {} is empty.", dir.display());
        }
        SandboxCommand::Ls { json, .. } => {
            let all = open()?.list_all();
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&all).map_err(|e| Failure(e.to_string()))?
                );
            } else {
                for r in all {
                    let address = r
                        .tags
                        .get(gpuform_provider::OwnershipTags::ADDRESS)
                        .cloned()
                        .unwrap_or_default();
                    outln!(
                        "{:<24} {:<10} {:<9} {:<16} {address}",
                        r.id,
                        r.kind,
                        r.cloud,
                        r.region
                    );
                }
            }
        }
        SandboxCommand::Delete { target, .. } => {
            let r = open()?
                .delete_behind(&target)
                .map_err(|e| Failure(e.to_string()))?;
            outln!("Deleted {} {} behind gpuform's back.", r.kind, r.id);
        }
        SandboxCommand::Reclaim { target, .. } => {
            let r = open()?
                .reclaim_behind(&target)
                .map_err(|e| Failure(e.to_string()))?;
            outln!(
                "Reclaimed spot instance {} behind gpuform's back (its volumes are detached).",
                r.id
            );
        }
        SandboxCommand::Disown { target, .. } => {
            let r = open()?
                .disown_behind(&target)
                .map_err(|e| Failure(e.to_string()))?;
            outln!(
                "Removed gpuform's tags from {} {} behind its back.",
                r.kind,
                r.id
            );
        }
        SandboxCommand::Reserve {
            instance_type,
            region,
            zone,
            count,
            from,
            until,
            tags,
            ..
        } => {
            let day = |flag: &str, d: Option<String>| match d {
                None => Ok(None),
                Some(d) => gpuform_catalog::Day::parse_iso(&d)
                    .map(Some)
                    .ok_or_else(|| Failure(format!("--{flag} {d}: not a date; write YYYY-MM-DD"))),
            };
            let start = day("from", from)?;
            let end = day("until", until)?;
            let mut tag_map = std::collections::BTreeMap::new();
            for t in tags {
                let (k, v) = t
                    .split_once('=')
                    .ok_or_else(|| Failure(format!("--tag {t}: write KEY=VALUE")))?;
                tag_map.insert(k.to_string(), v.to_string());
            }
            let r = open()?
                .reserve(&gpuform_sandbox::ReserveRequest {
                    cloud: gpuform_provider::Cloud::Aws,
                    region,
                    zone,
                    instance_type,
                    count,
                    start,
                    end,
                    tags: tag_map,
                })
                .map_err(|e| Failure(e.to_string()))?;
            outln!("{}", r.id);
        }
        SandboxCommand::Set {
            target, assignment, ..
        } => {
            let (k, v) = assignment
                .split_once('=')
                .ok_or_else(|| Failure(format!("`{assignment}` is not KEY=VALUE")))?;
            let value = serde_json::from_str(v)
                .unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
            open()?
                .set_attr_behind(&target, k, value)
                .map_err(|e| Failure(e.to_string()))?;
            outln!("Set {k} on {target} behind gpuform's back.");
        }
    }
    Ok(ExitCode::SUCCESS)
}
