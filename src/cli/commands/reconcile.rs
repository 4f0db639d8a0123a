//! `gpuform reconcile`: the loop around [`crate::engine::reconcile::pass`],
//! its waits (interval, standby on a held lock, signals) and its log lines.
//!
//! The lock is held while a pass acts, not for the reconciler's lifetime: a
//! person's `apply` between passes runs at once (and the next pass starts
//! from its result), one during a pass is refused naming the reconciler, and
//! two reconcilers on one state take turns — the second pass plans from the
//! state the first one saved, so it never repairs the same node twice. A
//! killed holder's lock is released by the kernel (local `flock`) or by its
//! lease (PostgreSQL, S3), so a standby takes over within one lease.

use super::shared::{
    catalog_for, engine_failure, load, project_mismatch, providers_for, resolve_opts,
};
use crate::address::Address;
use crate::apply::progress::ApplyProgress;
use crate::apply::{ApplyOptions, OpOutcome};
use crate::cli::args::ReconcileArgs;
use crate::cli::inbox::{Held, Inbox, Woken};
use crate::cli::out::{errln, out, outln};
use crate::cli::{CmdResult, Failure};
use crate::engine::reconcile::{self, Pass, PassOptions};
use crate::engine::{self, EngineError, PlanRequest};
use crate::plan::DiffOptions;
use crate::spec::CloudName;
use crate::state::StateError;
use gpuform_catalog::DEFAULT_CNY_PER_USD;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a standby asks for a held lock again.
const STANDBY_POLL: Duration = Duration::from_secs(2);

pub async fn reconcile_cmd(a: ReconcileArgs) -> CmdResult {
    if a.print_event_rules {
        return print_event_rules(&a);
    }
    let json = a.log_format == "json";
    let cancel = Arc::new(AtomicBool::new(false));
    let stopped = Arc::new(tokio::sync::Notify::new());
    let signals = watch_signals(cancel.clone(), stopped.clone())?;
    let mut log = Log {
        json,
        last_pending: None,
        last_postponed: None,
        standby: false,
    };
    let metrics = crate::cli::metrics::Shared::default();
    if let Some(addr) = a.metrics_listen {
        crate::cli::metrics::serve(addr, metrics.clone())
            .await
            .map_err(|e| Failure(format!("--metrics-listen {addr}: {e}")))?;
    }
    let record = |pass: Option<&Pass>, ok: bool| {
        let mut m = metrics.lock().unwrap_or_else(|e| e.into_inner());
        match pass {
            Some(p) => m.record_pass(p, ok, crate::clock::wall_ms() / 1000),
            None => m.record_error(),
        }
    };
    let mut inbox = match &a.events {
        Some(url) => Some(Inbox::new(
            crate::providers::event_source(url)
                .await
                .map_err(|e| Failure(e.to_string()))?,
        )),
        None => None,
    };
    // The instances the state records (id → address), from the last pass.
    let mut known: BTreeMap<String, Address> = BTreeMap::new();
    let mut passes = 0u64;
    let mut clients = Clients::default();
    let result = loop {
        if cancel.load(Ordering::SeqCst) {
            break Ok(ExitCode::SUCCESS);
        }
        let held: Vec<Held> = inbox.iter().flat_map(|i| i.held().cloned()).collect();
        match one_pass(&a, &cancel, &mut log, &mut clients, &held).await {
            Ok(Some((pass, recorded))) => {
                passes += 1;
                known = recorded;
                // Held messages are deleted only now, the pass saved.
                if let Some(inbox) = &mut inbox {
                    if let Err(e) = inbox.settle(&known).await {
                        log.error(&format!("deleting handled events: {e}"));
                    }
                }
                let repaired = pass.report.is_some();
                let failed = pass.report.as_ref().map(|r| r.failed()).unwrap_or(0);
                record(Some(&pass), failed == 0);
                if a.once {
                    break if failed > 0 {
                        Err(Failure(format!(
                            "{failed} repair(s) failed; everything that succeeded is recorded in state"
                        )))
                    } else if repaired && a.detailed_exitcode {
                        Ok(ExitCode::from(2))
                    } else {
                        Ok(ExitCode::SUCCESS)
                    };
                }
            }
            // The lock is held by another run: wait as a standby.
            Ok(None) => {
                wait(STANDBY_POLL.min(a.interval), &stopped).await;
                continue;
            }
            Err(e) if a.once || (passes == 0 && e.setup) => break Err(e.failure),
            Err(e) => {
                record(None, false);
                log.error(&e.failure.0);
            }
        }
        match &mut inbox {
            None => wait(a.interval, &stopped).await,
            Some(inbox) => {
                let d = inbox.next_pass_in(a.interval);
                tokio::select! {
                    woken = inbox.wait(d, &known) => match woken {
                        Woken::Events(events) => log.events(&events),
                        Woken::Failed(e) => log.error(&format!("reading {}: {e}", inbox.describe())),
                        Woken::Idle => {}
                    },
                    _ = stopped.notified() => {}
                }
            }
        }
    };
    signals.abort();
    result
}

/// Why a pass failed. A `setup` failure (the spec, its state settings or
/// the price file is wrong) ends a reconciler that never ran a pass: it would
/// fail the same way forever. After that, every failure — a spec edit that
/// does not validate, a cloud or database that does not answer — is logged
/// and the next pass tries again.
struct PassFailure {
    failure: Failure,
    setup: bool,
}

fn setup(failure: Failure) -> PassFailure {
    PassFailure {
        failure,
        setup: true,
    }
}

fn transient(failure: Failure) -> PassFailure {
    PassFailure {
        failure,
        setup: false,
    }
}

/// Loads the spec, takes the lock and runs one pass. `None`: the lock is
/// held by another run (this reconciler is a standby).
async fn one_pass(
    a: &ReconcileArgs,
    cancel: &Arc<AtomicBool>,
    log: &mut Log,
    clients: &mut Clients,
    held: &[Held],
) -> Result<Option<(Pass, BTreeMap<String, Address>)>, PassFailure> {
    let loaded = load(&a.file, &a.vars).map_err(setup)?;
    let store = a
        .location
        .store(Some(&loaded))
        .map_err(|e| setup(engine_failure(e)))?;
    let mut locked = match engine::lock_state(&store, &loaded.spec.project, "reconcile") {
        Ok(l) => l,
        Err(EngineError::State(StateError::Locked { holder, .. })) => {
            log.standby(&holder);
            return Ok(None);
        }
        Err(e) => return Err(transient(engine_failure(e))),
    };
    log.standby = false;
    if locked.existed && locked.doc.project != loaded.spec.project {
        return Err(setup(project_mismatch(&store, &locked.doc, &loaded)));
    }
    let catalog = catalog_for(a.prices.as_deref()).map_err(setup)?;
    let providers = clients.get(&store, &loaded.spec.endpoints);
    let req = PlanRequest {
        loaded: &loaded,
        catalog: &catalog,
        resolve: resolve_opts(a.sandbox, a.cny_per_usd),
        diff: DiffOptions {
            destroy: false,
            targets: Vec::new(),
            cny_per_usd: a.cny_per_usd.unwrap_or(DEFAULT_CNY_PER_USD),
            replace: Vec::new(),
        },
        refresh: true,
        adopt_lineages: Vec::new(),
        preview: false,
        notify: &|line: &str| errln!("{line}"),
    };
    let creates = Arc::new(CreateCalls::default());
    let apply = ApplyOptions {
        parallelism: a.parallelism,
        progress: creates.clone(),
        ..ApplyOptions::default()
    };
    let opts = PassOptions {
        apply_all: a.apply_all,
        apply: &apply,
    };
    let pass = reconcile::pass(&mut locked, &req, providers, &opts, cancel.clone())
        .await
        .map_err(|e| match e {
            // The spec does not resolve (a region, a budget): as a load error.
            EngineError::Spec(_) => setup(engine_failure(e)),
            e => transient(engine_failure(e)),
        })?;
    let recorded: BTreeMap<String, Address> = locked
        .doc
        .resources
        .iter()
        .filter(|(_, r)| r.kind == gpuform_provider::ResourceKind::Instance)
        .map(|(address, r)| (r.id.clone(), address.clone()))
        .collect();
    drop(locked);
    log.pass(&pass, held, &creates);
    Ok(Some((pass, recorded)))
}

/// When each create of a pass was called ([`std::time::Instant`] and
/// [`crate::clock::wall_ms`]), for the time from an event to its repair.
#[derive(Debug, Default)]
struct CreateCalls(Mutex<BTreeMap<String, (Instant, u64)>>);

impl ApplyProgress for CreateCalls {
    fn started(&self, address: &str, what: &str) {
        if what == "creating" {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(address.to_string())
                .or_insert_with(|| (Instant::now(), crate::clock::wall_ms()));
        }
    }
    fn done(&self, _: &str, _: &str, _: Duration) {}
    fn note(&self, _: &str) {}
}

impl CreateCalls {
    fn get(&self, address: &str) -> Option<(Instant, u64)> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(address)
            .copied()
    }
}

/// `--print-event-rules`: the rules and queue policy for the regions of
/// the spec's AWS clusters.
fn print_event_rules(a: &ReconcileArgs) -> CmdResult {
    let loaded = load(&a.file, &a.vars)?;
    let mut regions: Vec<String> = Vec::new();
    for c in loaded.spec.clusters.values() {
        let mut add = |r: &str| {
            if !r.is_empty() && !regions.iter().any(|x| x == r) {
                regions.push(r.to_string());
            }
        };
        match c.cloud {
            CloudName::Aws => add(&c.region),
            CloudName::Any => {
                for cand in &c.candidates {
                    if let Some(r) = cand.strip_prefix("aws/") {
                        add(r);
                    }
                }
            }
            _ => {}
        }
    }
    if regions.is_empty() {
        return Err(Failure(format!(
            "{}: no cluster runs on AWS in a region the spec names, so there is no EC2 event to route\n  hint: --events and its rules are for clusters with `cloud: aws` (or `cloud: any` with `aws/REGION` candidates)",
            a.file.display()
        )));
    }
    let text = crate::providers::event_rules(a.events.as_deref(), &regions)
        .map_err(|e| Failure(e.to_string()))?;
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The providers, kept from pass to pass while the state and the spec's
/// endpoints stay the same: clients, their connections and credentials are
/// made once, and a cloud's view of time (the sandbox counts calls) runs on.
#[derive(Default)]
struct Clients {
    key: String,
    providers: Option<Arc<crate::providers::Providers>>,
}

impl Clients {
    fn get(
        &mut self,
        store: &crate::state::StateStore,
        endpoints: &std::collections::BTreeMap<String, String>,
    ) -> Arc<crate::providers::Providers> {
        let key = format!("{}\n{endpoints:?}", store.location());
        match &self.providers {
            Some(p) if self.key == key => p.clone(),
            _ => {
                let p = providers_for(store, endpoints);
                self.key = key;
                self.providers = Some(p.clone());
                p
            }
        }
    }
}

/// Sleeps `d`, or until a signal asks to stop.
async fn wait(d: Duration, stopped: &tokio::sync::Notify) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = stopped.notified() => {}
    }
}

/// SIGINT and SIGTERM (what systemd and Kubernetes send) set `cancel`: the
/// running pass starts nothing new, saves, and the loop ends. A second
/// signal exits at once; the journal holds every result.
fn watch_signals(
    cancel: Arc<AtomicBool>,
    stopped: Arc<tokio::sync::Notify>,
) -> Result<tokio::task::JoinHandle<()>, Failure> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| Failure(e.to_string()))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| Failure(e.to_string()))?;
    Ok(tokio::spawn(async move {
        let mut seen = 0;
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            seen += 1;
            if seen > 1 {
                errln!(
                    "Stopped. The journal holds every result; the next pass or apply finishes it."
                );
                std::process::exit(130);
            }
            cancel.store(true, Ordering::SeqCst);
            // notify_one keeps a permit: a wait that starts later returns at once.
            stopped.notify_one();
        }
    }))
}

/// The reconciler's log: one line (or JSON object) per action, on stdout.
struct Log {
    json: bool,
    /// What the previous pass left for review, so that an unchanged list is
    /// not printed again every interval.
    last_pending: Option<Vec<String>>,
    /// Likewise for what it postponed to a maintenance window.
    last_postponed: Option<Vec<String>>,
    /// Whether the standby line was printed for the current wait.
    standby: bool,
}

impl Log {
    fn emit(&self, event: &str, fields: serde_json::Value, text: String) {
        if self.json {
            let mut obj = serde_json::json!({
                "time": crate::clock::wall_rfc3339(),
                "event": event,
            });
            if let (Some(o), serde_json::Value::Object(f)) = (obj.as_object_mut(), fields) {
                o.extend(f);
            }
            outln!("{obj}");
        } else {
            outln!("{} {text}", crate::clock::wall_rfc3339());
        }
    }

    fn standby(&mut self, holder: &str) {
        if !self.standby {
            self.emit(
                "standby",
                serde_json::json!({ "holder": holder }),
                format!(
                    "standby: the state is locked by {holder}; taking over when it is released"
                ),
            );
            self.standby = true;
        }
    }

    fn error(&self, message: &str) {
        self.emit(
            "error",
            serde_json::json!({ "error": message }),
            format!("error: {message}; trying again at the next pass"),
        );
    }

    /// Events that start a pass now.
    fn events(&self, events: &[Held]) {
        for h in events {
            let e = &h.event;
            self.emit(
                "event",
                serde_json::json!({
                    "type": e.kind.as_str(),
                    "instance_id": e.instance_id,
                    "address": h.address,
                    "event_time": e.time,
                    "state": e.state,
                }),
                format!(
                    "event: {} for {} ({}{}); starting a pass",
                    e.kind.as_str(),
                    e.instance_id,
                    h.address,
                    e.time
                        .as_deref()
                        .map(|t| format!(", at {t}"))
                        .unwrap_or_default()
                ),
            );
        }
    }

    fn pass(&mut self, pass: &Pass, held: &[Held], creates: &CreateCalls) {
        let outcomes = pass.report.as_ref().map(|r| &r.outcomes[..]).unwrap_or(&[]);
        for r in &pass.repairs {
            self.repair(pass, r, outcomes, held, creates);
        }
        self.waiting(pass);
        self.summary(pass);
    }

    /// One repair: what, why, its result, and the event that started it.
    fn repair(
        &mut self,
        pass: &Pass,
        r: &reconcile::Repair,
        outcomes: &[(Address, &'static str, OpOutcome)],
        held: &[Held],
        creates: &CreateCalls,
    ) {
        // The event about the instance this repair replaces, if one came.
        let event = held
            .iter()
            .find(|h| r.id.as_deref() == Some(h.event.instance_id.as_str()));
        let mut event_fields = serde_json::Map::new();
        let mut event_text = String::new();
        if let Some(h) = event {
            event_fields.insert(
                "trigger".into(),
                serde_json::json!({
                    "type": h.event.kind.as_str(),
                    "instance_id": h.event.instance_id,
                    "event_time": h.event.time,
                    "received_ms": h.received_ms,
                }),
            );
            event_text = format!(
                "; {} event for {}{}",
                h.event.kind.as_str(),
                h.event.instance_id,
                h.event
                    .time
                    .as_deref()
                    .map(|t| format!(" at {t}"))
                    .unwrap_or_default()
            );
            if let Some((at, wall)) = creates.get(&r.address) {
                let ms = at.saturating_duration_since(h.received).as_millis() as u64;
                event_fields.insert("create_call_ms".into(), wall.into());
                event_fields.insert("event_to_create_ms".into(), ms.into());
                event_text.push_str(&format!(", create called {ms} ms after its receipt"));
            }
        }
        // A split create has two outcomes (made, then attached): the first
        // says what was made, a failure anywhere says it failed.
        let mine: Vec<&OpOutcome> = outcomes
            .iter()
            .filter(|(a, _, _)| *a == r.address)
            .map(|(_, _, o)| o)
            .collect();
        let result = mine
            .iter()
            .find(|o| matches!(o, OpOutcome::Failed { .. } | OpOutcome::Skipped { .. }))
            .or(mine.first())
            .map(|o| describe(o))
            .unwrap_or_else(|| "not started".into());
        let mut fields = serde_json::json!({
            "address": r.address,
            "action": r.action,
            "cause": r.cause,
            "why": r.why,
            "result": result,
            "plan_ms": pass.plan_ms,
        });
        if let Some(o) = fields.as_object_mut() {
            o.extend(event_fields);
        }
        self.emit(
            "repair",
            fields,
            format!(
                "repair: {} {} ({}{event_text}): {result}",
                r.action.as_str(),
                r.address,
                r.why
            ),
        );
    }

    /// What waits for review or for the maintenance window, said once
    /// until it changes.
    fn waiting(&mut self, pass: &Pass) {
        let pending: Vec<String> = pass
            .pending
            .iter()
            .map(|p| format!("{} {}: {}", p.action.as_str(), p.address, p.why))
            .collect();
        if self.last_pending.as_ref() != Some(&pending) && !pending.is_empty() {
            for p in &pass.pending {
                self.emit(
                    "pending",
                    serde_json::json!({ "address": p.address, "action": p.action, "why": p.why }),
                    format!(
                        "pending review: {} {} ({}): run `gpuform apply`",
                        p.action.as_str(),
                        p.address,
                        p.why
                    ),
                );
            }
        }
        self.last_pending = Some(pending);
        let postponed: Vec<String> = pass
            .postponed
            .iter()
            .map(|p| format!("{} {} {}", p.action.as_str(), p.address, p.until))
            .collect();
        if self.last_postponed.as_ref() != Some(&postponed) {
            for p in &pass.postponed {
                self.emit(
                "postponed",
                serde_json::json!({
                    "address": p.address,
                    "action": p.action,
                    "why": p.why,
                    "until": p.until,
                    "window": p.window,
                }),
                format!(
                    "postponed: {} {} ({}): outside the maintenance window ({}); postponed until the maintenance window {}",
                    p.action.as_str(),
                    p.address,
                    p.why,
                    p.window,
                    p.until
                ),
            );
            }
        }
        self.last_postponed = Some(postponed);
    }

    /// The pass in one line: counts, and nodes running of desired.
    fn summary(&mut self, pass: &Pass) {
        let nodes: serde_json::Map<String, serde_json::Value> = pass
            .nodes
            .iter()
            .map(|(c, n)| {
                (
                    c.clone(),
                    serde_json::json!({"desired": n.desired, "running": n.running}),
                )
            })
            .collect();
        let summary = pass
            .nodes
            .iter()
            .map(|(c, n)| format!("{c} {}/{}", n.running, n.desired))
            .collect::<Vec<_>>()
            .join(", ");
        self.emit(
            "pass",
            serde_json::json!({
                "repairs": pass.repairs.len(),
                "pending": pass.pending.len(),
                "postponed": pass.postponed.len(),
                "nodes": nodes,
                "plan_ms": pass.plan_ms,
            }),
            format!(
                "pass: {} repair(s), {} pending review, {} postponed; nodes running/desired: {}",
                pass.repairs.len(),
                pass.pending.len(),
                pass.postponed.len(),
                if summary.is_empty() {
                    "none".into()
                } else {
                    summary
                }
            ),
        );
    }
}

fn describe(o: &OpOutcome) -> String {
    match o {
        OpOutcome::Created { id } => format!("created {id}"),
        OpOutcome::Updated { id } => format!("updated {id}"),
        OpOutcome::Deleted => "deleted".into(),
        OpOutcome::Completed { done, .. } => done.clone(),
        OpOutcome::Failed { error, .. } => format!("failed: {error}"),
        OpOutcome::Skipped { because } => format!("skipped: {because}"),
        OpOutcome::NotStarted => "not started (interrupted)".into(),
    }
}
