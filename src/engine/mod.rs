//! The workflows behind the commands, shared by the CLI and the tests:
//! load → resolve → refresh → diff (plan); lock → recover → refresh → diff →
//! execute → save (apply).

pub mod audit;
pub(crate) mod capacity;
pub mod catalog;
mod error;
mod failover;
mod gc;
pub mod import;
pub mod prices;
mod quota;
pub mod reconcile;

pub use error::EngineError;
pub use failover::{apply_with_failover, ApplyEvent, Replan, FAILOVER_LOG, MAX_FAILOVER_ROUNDS};
pub use gc::{gc_plan, GcPlan};

use crate::address::{Address, Target};
use crate::apply::{execute, ApplyOptions, ApplyReport, OpOutcome};
use crate::plan::{diff, Action, DiffOptions, Plan, StateRef};
use crate::providers::Providers;
use crate::refresh::{refresh, Current, Lookout};
use crate::resolve::{resolve, Desired, Exhausted, Placement, ResolveOptions};
use crate::spec::{Diagnostics, LoadedSpec};
use crate::state::{Failover, Journal, JournalEntry, StateDoc, StateLock, StateStore};
use gpuform_catalog::Catalog;
use gpuform_provider::attr;
use gpuform_provider::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The folder of a project's local files (state, journal, sandbox), beside
/// its spec unless `--state` or `state.path` says otherwise.
pub const STATE_DIR: &str = ".gpuform";

/// The local state file of `project` inside [`STATE_DIR`].
fn state_file(project: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{project}.state.json"))
}

/// The state file of commands given neither a spec nor `--state`
/// (`audit` of regions alone): `.gpuform/state.json`.
pub fn default_state_path() -> PathBuf {
    PathBuf::from(STATE_DIR).join("state.json")
}

/// Where a spec's state lives: `--state` (relative to the working
/// directory, as every path flag), else the spec's `state.path`, else
/// `.gpuform/<project>.state.json`; those two relative to the spec's own
/// directory, so that `gpuform plan ../infra/spec.yaml` from anywhere finds
/// the same state (one found relative to the working directory made a
/// second, empty state, and with it a second copy of every resource).
pub fn state_path(loaded: Option<&LoadedSpec>, flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(l) = loaded {
        let dir = l.path.parent().unwrap_or(Path::new(""));
        if let Some(crate::spec::StateSettings::Local { path: Some(p) }) = &l.spec.state {
            return dir.join(p);
        }
        return dir.join(state_file(&l.spec.project));
    }
    default_state_path()
}

/// The state of a spec, on its backend: `--state-url` / `GPUFORM_STATE_URL`
/// (`url`), else the spec's `state:` block, else the local file of
/// [`state_path`]. A remote state is keyed by `<project>/<workspace>`
/// (`state.workspace`, else `GPUFORM_WORKSPACE`, else `default`); its lease
/// is `GPUFORM_STATE_LEASE_SECONDS`, else `state.lease_seconds`, else 60 s.
/// Its local files (the journal that keeps an apply's results when the
/// backend fails, the sandbox) are those of [`state_path`].
pub fn state_store(
    loaded: Option<&LoadedSpec>,
    flag: Option<&Path>,
    url: Option<&str>,
) -> Result<StateStore, EngineError> {
    state_store_for(loaded, None, flag, url)
}

/// [`state_store`] for a saved plan: no spec, the plan's project.
pub fn state_store_for(
    loaded: Option<&LoadedSpec>,
    project: Option<&str>,
    flag: Option<&Path>,
    url: Option<&str>,
) -> Result<StateStore, EngineError> {
    use crate::state::{BackendChoice, StateError};
    let project = loaded.map(|l| l.spec.project.as_str()).or(project);
    let local = match (loaded, project, flag) {
        (None, Some(p), None) => state_file(p),
        _ => state_path(loaded, flag),
    };
    let settings = loaded.and_then(|l| l.spec.state.as_ref());
    let (spec_url, schema, workspace, lease) = match settings {
        Some(crate::spec::StateSettings::Postgres {
            url,
            schema,
            workspace,
            lease_seconds,
        }) => (
            Some(url.as_str()),
            schema.clone(),
            workspace.clone(),
            *lease_seconds,
        ),
        Some(crate::spec::StateSettings::S3 {
            url,
            workspace,
            lease_seconds,
        }) => (Some(url.as_str()), None, workspace.clone(), *lease_seconds),
        _ => (None, None, None, None),
    };
    let workspace = workspace
        .or_else(|| {
            std::env::var("GPUFORM_WORKSPACE")
                .ok()
                .filter(|w| !w.is_empty())
        })
        .unwrap_or_else(|| crate::state::DEFAULT_WORKSPACE.into());
    // Another workspace's local files (its state, journal, sandbox) live in
    // a folder of their own beside the default's, unless a path was given.
    let spec_path = matches!(
        settings,
        Some(crate::spec::StateSettings::Local { path: Some(_) })
    );
    let local = if workspace == crate::state::DEFAULT_WORKSPACE || flag.is_some() || spec_path {
        local
    } else {
        let dir = local.parent().map(Path::to_path_buf).unwrap_or_default();
        let file = local.file_name().map(PathBuf::from).unwrap_or_default();
        dir.join("workspaces").join(&workspace).join(file)
    };
    let url = url.filter(|u| !u.trim().is_empty()).or(spec_url);
    let Some(url) = url else {
        return Ok(StateStore::new(local).with_workspace(&workspace));
    };
    if flag.is_some() {
        return Err(EngineError::Config(
            "--state (a local file) and a state URL were both given
  hint: use one: --state for local state, --state-url (or GPUFORM_STATE_URL) for a remote one"
                .into(),
        ));
    }
    let lease = match std::env::var("GPUFORM_STATE_LEASE_SECONDS") {
        Ok(v) if !v.trim().is_empty() => Some(
            v.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    EngineError::Config(format!(
                "GPUFORM_STATE_LEASE_SECONDS must be a whole number of seconds ≥ 1, found `{v}`"
            ))
                })?,
        ),
        _ => lease,
    };
    let choice = BackendChoice::from_url(url, schema.as_deref(), lease)?;
    let url = match &choice {
        BackendChoice::Local => return Ok(StateStore::new(local).with_workspace(&workspace)),
        BackendChoice::Postgres { url, .. } | BackendChoice::S3 { url, .. } => url.clone(),
    };
    {
        {
            let Some(project) = project.filter(|p| !p.is_empty()) else {
                return Err(EngineError::State(StateError::Backend {
                    location: crate::state::redact_url(&url),
                    message: "a remote state is named by its project".into(),
                    hint: "pass the spec with -f SPEC".into(),
                }));
            };
            let name = format!("{project}/{workspace}");
            let journal = crate::state::store::sibling(&local, ".journal");
            let backend: std::sync::Arc<dyn crate::state::StateBackend> = match choice {
                BackendChoice::Postgres { url, schema, lease } => std::sync::Arc::new(
                    crate::state::postgres::PgBackend::new(&url, &schema, &name, lease, &journal)?,
                ),
                #[cfg(feature = "aws")]
                BackendChoice::S3 { url, lease } => std::sync::Arc::new(
                    crate::state::s3::S3Backend::new(&url, &name, lease, &journal)?,
                ),
                #[cfg(not(feature = "aws"))]
                BackendChoice::S3 { url, .. } => {
                    return Err(EngineError::State(StateError::Backend {
                        location: crate::state::redact_url(&url),
                        message: "the S3 state backend is not built into this gpuform (built without the `aws` feature)".into(),
                        hint: "use a build with the default features, a postgres:// URL, or local state".into(),
                    }))
                }
                BackendChoice::Local => {
                    return Ok(StateStore::new(local).with_workspace(&workspace))
                }
            };
            Ok(StateStore::with_backend(local, backend).with_workspace(&workspace))
        }
    }
}

/// The sandbox inventory: `GPUFORM_SANDBOX_DIR`, else `sandbox/` beside the state.
pub fn sandbox_dir(store: &StateStore) -> PathBuf {
    std::env::var_os("GPUFORM_SANDBOX_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| store.dir().join("sandbox"))
}

/// Reads state for a read-only command: a leftover journal is folded in
/// memory (nothing is written).
pub fn read_state(store: &StateStore, project: &str) -> Result<(StateDoc, bool), EngineError> {
    import::refuse_if_pending(store)?;
    let (mut doc, existed) = match store.load()? {
        Some(d) => (d, true),
        None => (store.new_doc(project), false),
    };
    if existed {
        store.backend().recover_journal(&mut doc)?;
        Journal::recover(&store.journal_path(), &mut doc)?;
    }
    Ok((doc, existed))
}

#[derive(Clone)]
pub struct PlanRequest<'a> {
    pub loaded: &'a LoadedSpec,
    /// The built-in catalog, or one with the user's price overrides.
    pub catalog: &'a Catalog,
    pub resolve: ResolveOptions,
    pub diff: DiffOptions,
    pub refresh: bool,
    /// Lineages of lost states whose resources this plan may adopt
    /// (`--adopt-lineage`); see [`Lookout::adopt_lineages`].
    pub adopt_lineages: Vec<String>,
    /// `gpuform plan` (a preview), not an apply: see [`Lookout::preview`].
    pub preview: bool,
    /// Told what the user should know while planning runs (a wait for a
    /// cloud to settle); the engine prints nothing itself.
    pub notify: &'a (dyn Fn(&str) + Sync),
}

/// Resolves the spec against the catalog, with catalog errors pointing into the YAML.
pub fn desired(
    loaded: &LoadedSpec,
    catalog: &Catalog,
    opts: &ResolveOptions,
) -> Result<Desired, EngineError> {
    resolve(loaded, catalog, opts).map_err(EngineError::Spec)
}

/// Computes a plan against `doc` (already read or recovered).
pub async fn make_plan(
    req: &PlanRequest<'_>,
    doc: StateDoc,
    state_existed: bool,
    providers: &Providers,
) -> Result<(Plan, Current), EngineError> {
    let mut resolve_opts = req.resolve.clone();
    resolve_opts.current = current_placements(&doc);
    (resolve_opts.node_pricing, resolve_opts.spot_fallback) =
        reconcile::spot_pools(&doc, &req.loaded.spec, crate::clock::now_secs());
    let mut capacity_warnings = Vec::new();
    if !req.diff.destroy {
        let read = (req.refresh, req.preview);
        let (facts, warnings) =
            capacity::read(req.loaded, &resolve_opts, &doc, providers, read).await;
        resolve_opts.capacity = facts;
        capacity_warnings = warnings;
    }
    let mut offering_notes = Vec::new();
    let mut quotas = quota::QuotaCheck::default();
    let mut quota_findings = Vec::new();
    let desired = if req.diff.destroy {
        Desired::default()
    } else {
        // Ask the clouds (when reachable) whether each zone sells the type
        // about to be created there, and whether the account's quota has
        // room for it; a zone that does not is skipped like a zone out of
        // capacity, before anything is made.
        let mut checked = std::collections::HashSet::new();
        loop {
            let d = match desired(req.loaded, req.catalog, &resolve_opts) {
                Ok(d) => d,
                // Every candidate left was short of quota: say which quota.
                Err(e) => return Err(quotas.into_error(Some(e), providers, req.catalog).await),
            };
            if !req.refresh {
                break d;
            }
            let unsold =
                check_offerings(&d, &doc, providers, &mut checked, &mut offering_notes).await;
            if !unsold.is_empty() {
                resolve_opts.exhausted.extend(unsold);
                continue;
            }
            let findings = quotas.check(&d, &doc, providers, req.catalog).await;
            if findings.iter().all(|f| f.fits) {
                quota_findings = findings;
                break d;
            }
            let avoid = quotas.avoid(&findings, &resolve_opts, req.catalog);
            if avoid.is_empty() {
                return Err(quotas.into_error(None, providers, req.catalog).await);
            }
            resolve_opts.exhausted.extend(avoid);
        }
    };
    let state_ref = StateRef {
        lineage: state_existed.then(|| doc.lineage.clone()),
        serial: doc.serial,
    };
    let current = if req.refresh {
        let lookout = Lookout {
            desired: Some(&desired),
            adopt_lineages: &req.adopt_lineages,
            preview: req.preview,
        };
        refresh(doc, lookout, providers, req.notify).await?
    } else {
        Current::unrefreshed(doc)
    };
    refuse_foreign(&current)?;
    let unlooked = current.unlooked.clone();
    for a in &req.diff.replace {
        if desired.get(a).is_none() || !current.doc.resources.contains_key(a) {
            return Err(EngineError::Plan(format!(
                "--replace {a}: no such resource in both the spec and the state (`gpuform state list` lists what the state records)"
            )));
        }
    }
    check_targets(&req.diff.targets, &desired, &current)?;
    let mut plan = diff(desired, &current, req.catalog, &req.diff);
    refuse_undeletable(&plan, &current, providers).await?;
    plan.notes.extend(offering_notes);
    plan.notes.extend(std::mem::take(&mut quotas.notes));
    plan.notes.extend(quota_findings.iter().map(quota::ok_note));
    plan.quotas = quota_findings;
    plan.warnings.extend(std::mem::take(&mut quotas.warnings));
    plan.warnings.extend(unlooked);
    plan.warnings.extend(capacity_warnings);
    capacity::block_findings(&mut plan, crate::clock::now_secs());
    complete_plan(
        &mut plan,
        req,
        state_ref,
        &current.adopted,
        "will be recorded",
    );
    if !req.diff.destroy {
        crate::cost::budget_check(req.loaded, &mut plan, req.catalog)
            .map_err(|d| EngineError::Spec(Diagnostics(vec![d])))?;
    }
    Ok((plan, current))
}

/// Every `--target` must select something the spec, the state or the clouds
/// hold: a typo that selects nothing would otherwise plan "no changes" and
/// a CI job would report success having done nothing.
fn check_targets(
    targets: &[String],
    desired: &Desired,
    current: &Current,
) -> Result<(), EngineError> {
    let known: std::collections::BTreeSet<&Address> = desired
        .resources
        .iter()
        .map(|r| &r.address)
        .chain(current.doc.resources.keys())
        .chain(current.strays.keys())
        .collect();
    let mut problems = Vec::new();
    for t in targets {
        if known.iter().any(|a| a.selected_by(t)) {
            continue;
        }
        // Suggest among the addresses and every prefix a target may name
        // (`cluster.trainer`, `cluster.trainer.node`), the closest first.
        let mut prefixes: std::collections::BTreeSet<&str> =
            known.iter().map(|a| a.as_str()).collect();
        for a in &known {
            for (i, b) in a.char_indices() {
                if b == '.' || b == '[' {
                    prefixes.insert(&a[..i]);
                }
            }
        }
        let hint = match crate::spec::validate::suggest(t, prefixes.iter().copied()) {
            Some(s) => format!("did you mean `--target {s}`?"),
            None => {
                let clusters: std::collections::BTreeSet<String> = known
                    .iter()
                    .filter_map(|a| a.cluster())
                    .map(|c| Address::of_cluster(c).to_string())
                    .collect();
                if clusters.is_empty() {
                    "the spec and the state hold no resources".to_string()
                } else {
                    format!(
                        "targets are addresses or their prefixes, such as {} (`gpuform state list` lists what the state records)",
                        clusters.into_iter().take(5).collect::<Vec<_>>().join(", ")
                    )
                }
            }
        };
        problems.push(format!(
            "--target {t} matches nothing in the spec, the state or the clouds; {hint}"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(EngineError::Plan(problems.join("\n")))
    }
}

/// What every plan carries besides its changes: the spec's project and
/// endpoints, the state it was made against, a warning naming what an
/// interrupted apply made (and `adopted_fate`: what this plan does with
/// it), and its cost.
fn complete_plan(
    plan: &mut Plan,
    req: &PlanRequest,
    state_ref: StateRef,
    adopted: &[Address],
    adopted_fate: &str,
) {
    plan.project = req.loaded.spec.project.clone();
    plan.endpoints = req.loaded.spec.endpoints.clone();
    plan.state = state_ref;
    if !adopted.is_empty() {
        plan.warnings.push(format!(
            "{} resource(s) the state did not record (made by an interrupted apply, or forgotten by a lost, moved or `state rm`-ed state) were found in the clouds by their ownership tags and {adopted_fate}, not made again: {}",
            adopted.len(),
            adopted.join(", ")
        ));
    }
    crate::cost::annotate(
        plan,
        req.catalog,
        req.diff.cny_per_usd,
        crate::clock::today(),
    );
}

/// A resource another state made where this plan would create: the plan
/// stops (nothing is made twice) and names the lineage to adopt.
fn refuse_foreign(current: &Current) -> Result<(), EngineError> {
    if current.foreign.is_empty() {
        return Ok(());
    }
    let lineages: std::collections::BTreeSet<&str> =
        current.foreign.iter().map(|f| f.lineage.as_str()).collect();
    let lines: Vec<String> = current
        .foreign
        .iter()
        .map(|f| {
            format!(
                "  {}: {} {} already holds {} under this project's tags, made by the state with lineage {}",
                f.address, f.provider, f.region, f.id, f.lineage
            )
        })
        .collect();
    let flags: Vec<String> = lineages
        .iter()
        .map(|l| format!("--adopt-lineage {l}"))
        .collect();
    let this = if current.doc.is_empty() && current.doc.serial == 0 {
        "this state is new and".to_string()
    } else {
        format!("this state (lineage {})", current.doc.lineage)
    };
    Err(EngineError::Plan(format!(
        "{this} does not record resources that another state of project {} made where this plan would create; creating them would make each a second time, so nothing was planned:\n{}\n  hint: if that state is lost (moved away, deleted, corrupted), adopt what it made with `{}`; if it is another workspace's live state, give this spec another project name (or region) so the two never share addresses",
        current.doc.project,
        lines.join("\n"),
        flags.join(" ")
    )))
}

/// Deletions the clouds document as refused (a prepaid Huawei server): the
/// plan stops here, before anything is destroyed, rather than failing
/// halfway through an apply that already deleted its data disks.
async fn refuse_undeletable(
    plan: &Plan,
    current: &Current,
    providers: &Providers,
) -> Result<(), EngineError> {
    let mut refused = Vec::new();
    for c in &plan.changes {
        if !matches!(c.action, Action::Delete | Action::Replace) {
            continue;
        }
        let Some(Some(observed)) = current.observed.get(&c.address) else {
            continue;
        };
        let target = c.old_provider.unwrap_or(c.provider);
        if let Some(why) = providers.get(target).await?.delete_refusal(observed) {
            refused.push(format!("  {}: {why}", c.address));
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    Err(EngineError::Plan(format!(
        "the cloud refuses to delete what this plan would delete; nothing was changed:\n{}",
        refused.join("\n")
    )))
}

/// A locked state, ready to be changed: the lock is held until dropped, any
/// leftover journal is folded and saved, and the state file exists (so its
/// lineage is durable before the first intent).
pub struct LockedState {
    pub store: StateStore,
    pub lock: StateLock,
    pub doc: StateDoc,
    pub existed: bool,
    /// Whether an interrupted apply's journal was folded in and saved.
    pub recovered: bool,
}

pub fn lock_state(
    store: &StateStore,
    project: &str,
    operation: &str,
) -> Result<LockedState, EngineError> {
    if operation != "import" {
        import::refuse_if_pending(store)?;
    }
    let lock = StateLock::acquire(store, operation)?;
    let (mut doc, existed) = match store.load()? {
        Some(d) => (d, true),
        None => (store.new_doc(project), false),
    };
    // An interrupted apply's journal: what it pushed to a remote backend,
    // then what this disk kept (everything, when the backend failed first).
    let remote = existed && store.backend().recover_journal(&mut doc)?;
    let local = Journal::recover(&store.journal_path(), &mut doc)?;
    if remote || local {
        store.commit(&mut doc)?;
        Journal::remove(&store.journal_path())?;
    }
    Ok(LockedState {
        store: store.clone(),
        lock,
        doc,
        existed,
        recovered: remote || local,
    })
}

/// Checks that a saved plan was made against this state, at this serial.
pub fn check_saved_plan(plan: &Plan, locked: &LockedState) -> Result<(), EngineError> {
    let current_lineage = locked.existed.then(|| locked.doc.lineage.clone());
    if plan.state.lineage.is_some() && plan.state.lineage != current_lineage {
        return Err(EngineError::StalePlan(format!(
            "this plan was made for another state (lineage {}), not {}\n  hint: make a new plan with `gpuform plan --out FILE` against this state",
            plan.state.lineage.as_deref().unwrap_or("none"),
            current_lineage.as_deref().unwrap_or("an empty state")
        )));
    }
    if plan.state.lineage.is_none() && locked.existed && !locked.doc.is_empty() {
        return Err(EngineError::StalePlan(
            "this plan was made when there was no state, and state exists now (it was applied already, or by someone else)\n  hint: make a new plan".into(),
        ));
    }
    if plan.state.serial != locked.doc.serial && plan.state.lineage.is_some() {
        return Err(EngineError::StalePlan(format!(
            "the state changed since this plan was made (serial {} → {}): it was applied already, or something else changed the state\n  hint: make a new plan with `gpuform plan --out FILE`",
            plan.state.serial, locked.doc.serial
        )));
    }
    Ok(())
}

/// Applies a plan to a locked state and saves the result. The state is saved
/// even when some resources failed or the run was interrupted; the lock stays
/// held (it goes with `locked`), so a caller may apply again (failover).
pub async fn apply_plan(
    locked: &mut LockedState,
    plan: Arc<Plan>,
    current: Option<Current>,
    providers: Arc<Providers>,
    opts: &ApplyOptions,
    cancel: Arc<AtomicBool>,
) -> Result<ApplyReport, EngineError> {
    // Before any call or write: every caller (apply, a failover's re-plan,
    // reconcile, audit) is guarded, not only the CLI.
    capacity::purchase_refusal(&plan, opts.allow_purchase)?;
    if !locked.existed {
        // A new state that adopts a lost state's resources takes its
        // lineage (see `Lookout::adopt_lineages`), before anything is saved.
        if let Some(cur) = current.as_ref().filter(|_| locked.doc.is_empty()) {
            locked.doc.lineage = cur.doc.lineage.clone();
        }
        locked.store.save(&locked.doc)?;
        locked.existed = true;
    }
    let journal = Journal::create_mirrored(
        &locked.store.journal_path(),
        &locked.doc.lineage,
        locked.doc.serial,
        locked.store.backend().journal_mirror(),
        Some(cancel.clone()),
    )?;
    let mut doc = locked.doc.clone();
    // Record what refresh found (adoptions), before anything else happens.
    if let Some(cur) = &current {
        let mut entries = Vec::new();
        for address in &cur.adopted {
            if let Some(record) = cur.doc.resources.get(address) {
                entries.push(JournalEntry::Recorded {
                    address: address.clone(),
                    record: record.clone(),
                });
            }
        }
        for address in cur.abandoned.keys() {
            entries.push(JournalEntry::Abandoned {
                address: address.clone(),
            });
        }
        // Forget resources found deleted that the plan does not re-create.
        for (address, o) in &cur.observed {
            if o.is_none() && !plan.changes.iter().any(|c| &c.address == address) {
                entries.push(JournalEntry::Removed {
                    address: address.clone(),
                });
            }
        }
        for e in entries {
            journal.append(&e).await?;
            crate::state::journal::fold(&mut doc, e);
        }
    }
    let mut opts = opts.clone();
    if opts.secrets_dir.is_none() {
        opts.secrets_dir = Some(locked.store.secrets_dir());
    }
    let (mut doc, report) = execute(plan, doc, journal, providers, &opts, cancel).await?;
    if locked.store.is_remote() {
        // Entries whose push to the backend failed were not folded in by the
        // executor, but they are in the local journal (written first): fold
        // it whole again (folding is idempotent per address), so that a
        // backend that came back in time gets everything.
        Journal::recover(&locked.store.journal_path(), &mut doc)?;
    }
    if let Err(e) = locked.store.commit(&mut doc) {
        return Err(kept_locally(&locked.store, e));
    }
    Journal::remove(&locked.store.journal_path())?;
    locked.doc = doc;
    Ok(report)
}

/// A remote backend failed (or refused) at the end of an apply: every result
/// is in the local journal; say how to push it.
fn kept_locally(store: &StateStore, e: crate::state::StateError) -> EngineError {
    use crate::state::StateError;
    if !store.is_remote() || matches!(e, StateError::Fenced { .. }) {
        return EngineError::State(e);
    }
    EngineError::Config(format!(
        "{e}\nnothing is lost: every result of this apply is kept in the local journal {}\n  hint: once the backend is reachable, push it with `gpuform state push -f SPEC` (the next apply from this directory pushes it first)",
        store.journal_path().display()
    ))
}

/// The zones an apply found out of capacity, from its failed instance creates.
pub fn capacity_failures(plan: &Plan, report: &ApplyReport) -> Vec<Failover> {
    let mut out: Vec<Failover> = Vec::new();
    for (address, op, outcome) in &report.outcomes {
        let OpOutcome::Failed {
            error,
            kind: Some(ErrorKind::Capacity),
        } = outcome
        else {
            continue;
        };
        if *op != "create" {
            continue;
        }
        let Some(c) = plan.changes.iter().find(|c| &c.address == address) else {
            continue;
        };
        let (Some(cluster), Some(zone)) = (
            address.cluster(),
            c.after
                .as_ref()
                .and_then(|a| a.get(attr::ZONE))
                .and_then(|z| z.as_str()),
        ) else {
            continue;
        };
        if out
            .iter()
            .any(|f| f.cluster == cluster && f.zone == zone && f.region == c.region)
        {
            continue;
        }
        out.push(Failover {
            cluster: cluster.to_string(),
            cloud: c.provider.cloud,
            region: c.region.clone(),
            zone: zone.to_string(),
            error: error.clone(),
            at: crate::clock::wall_rfc3339(),
        });
    }
    out
}

/// Checks, for each instance about to be created, that its zone sells its
/// type (DescribeInstanceTypeOfferings and the like). Returns the zones that
/// do not; a cloud that cannot be asked (offline, no credentials) is noted
/// and skipped: the catalog check already passed.
async fn check_offerings(
    desired: &Desired,
    doc: &StateDoc,
    providers: &Providers,
    checked: &mut std::collections::HashSet<(Target, String, String, String)>,
    notes: &mut Vec<String>,
) -> Vec<Exhausted> {
    let mut unsold = Vec::new();
    let mut unreachable: std::collections::BTreeSet<Target> = Default::default();
    for r in &desired.resources {
        if r.kind != gpuform_provider::ResourceKind::Instance
            || doc.resources.contains_key(&r.address)
        {
            continue;
        }
        let (Some(zone), Some(itype), Some(cluster)) = (
            r.attrs.get(attr::ZONE).and_then(|v| v.as_str()),
            r.attrs.get(attr::INSTANCE_TYPE).and_then(|v| v.as_str()),
            r.address.cluster(),
        ) else {
            continue;
        };
        let key = r.target;
        if unreachable.contains(&key)
            || !checked.insert((key, r.region.clone(), zone.to_string(), itype.to_string()))
        {
            continue;
        }
        let provider = match providers.get(key).await {
            Ok(p) => p,
            Err(e) => {
                notes.push(format!("live offering check skipped for {key}: {e}"));
                unreachable.insert(key);
                continue;
            }
        };
        let scope = gpuform_provider::Scope {
            region: r.region.clone(),
        };
        match provider.offered(&scope, zone, itype).await {
            Ok(Some(false)) => {
                notes.push(format!(
                    "{key} does not sell {itype} in {zone} right now; cluster {cluster} uses the next zone"
                ));
                unsold.push(Exhausted::zone(cluster, r.target.cloud, &r.region, zone));
            }
            Ok(_) => {}
            Err(e) => {
                notes.push(format!("live offering check skipped for {key}: {e}"));
                unreachable.insert(key);
            }
        }
    }
    unsold
}

/// Where each cluster's nodes run now, from state: resolve keeps a cluster
/// there while it still fits, so a cluster that failed over does not flap
/// back, and `cloud: any` does not move a running cluster on its own.
pub fn current_placements(doc: &StateDoc) -> std::collections::BTreeMap<String, Placement> {
    let mut out = std::collections::BTreeMap::new();
    for (address, r) in &doc.resources {
        if r.kind != gpuform_provider::ResourceKind::Instance || address.is_duplicate() {
            continue;
        }
        let (Some(cluster), Some(zone)) = (
            address.cluster(),
            r.attrs.get(attr::ZONE).and_then(|z| z.as_str()),
        ) else {
            continue;
        };
        out.entry(cluster.to_string()).or_insert(Placement {
            cloud: r.provider.cloud,
            region: r.region.clone(),
            zone: zone.to_string(),
        });
    }
    out
}
