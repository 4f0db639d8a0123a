//! The concurrent DAG walk.

use super::graph::{build_graph, finish_step, Finish, Op, OpKind};
use super::progress::{ApplyProgress, Silent};
use crate::address::{Address, Target};
use crate::plan::{Plan, ResourceChange};
use crate::providers::Providers;
use crate::state::{Journal, JournalEntry, PendingIntent, Record, StateDoc};
use crate::EngineError;
use backon::{ExponentialBuilder, Retryable};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use gpuform_provider::attr;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::{CreateRequest, ErrorKind, OwnershipTags, Provider, ProviderError, Scope};
use petgraph::graph::NodeIndex;
use petgraph::visit::{Dfs, EdgeRef};
use petgraph::Direction;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// The ceiling of the derived default parallelism: every operation in flight
/// may hold a socket, and 1024 descriptors is a common default `ulimit -n`.
pub const MAX_DEFAULT_PARALLELISM: usize = 512;

#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Operations in flight at once; `None`: derived from the rate budgets of
    /// the providers the plan calls ([`default_parallelism`]).
    pub parallelism: Option<usize>,
    /// Told what finished and what failed; [`Silent`] by default.
    pub progress: Arc<dyn ApplyProgress>,
    /// Ceiling on retries of throttled/transient calls.
    pub max_retries: usize,
    /// Where the k3s clusters' credentials are kept (`crate::k8s`); set by
    /// `engine::apply_plan` beside the state when `None`.
    pub secrets_dir: Option<std::path::PathBuf>,
    /// Whether this apply may buy what cannot be undone (Capacity Blocks);
    /// `engine::apply_plan` refuses a plan that buys when it is false.
    pub allow_purchase: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            parallelism: None,
            progress: Arc::new(Silent),
            max_retries: 8,
            secrets_dir: None,
            allow_purchase: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum OpOutcome {
    Created {
        id: String,
    },
    Updated {
        id: String,
    },
    Deleted,
    /// The second step of a split create (a volume attached, a firewall's
    /// rules authorized): the resource was counted when it was created.
    Completed {
        id: String,
        /// What the step did: "attached to i-…", "rules authorized".
        done: String,
    },
    Failed {
        error: String,
        /// The neutral kind when a provider refused (capacity drives failover).
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<gpuform_provider::ErrorKind>,
    },
    /// Not attempted because a dependency failed.
    Skipped {
        because: String,
    },
    /// Not started because the apply was interrupted.
    NotStarted,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ApplyReport {
    /// Outcome per address and operation, in plan order.
    pub outcomes: Vec<(Address, &'static str, OpOutcome)>,
    pub interrupted: bool,
    pub elapsed_ms: u128,
}

impl ApplyReport {
    pub fn failed(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|(_, _, o)| matches!(o, OpOutcome::Failed { .. }))
            .count()
    }
    pub fn count(&self, f: impl Fn(&OpOutcome) -> bool) -> usize {
        self.outcomes.iter().filter(|(_, _, o)| f(o)).count()
    }
    pub fn ok(&self) -> bool {
        !self.interrupted
            && self.outcomes.iter().all(|(_, _, o)| {
                matches!(
                    o,
                    OpOutcome::Created { .. }
                        | OpOutcome::Updated { .. }
                        | OpOutcome::Completed { .. }
                        | OpOutcome::Deleted
                )
            })
    }
}

struct Shared {
    plan: Arc<Plan>,
    providers: Arc<Providers>,
    journal: Journal,
    doc: Mutex<StateDoc>,
    limiters: HashMap<Target, DefaultDirectRateLimiter>,
    max_retries: usize,
    secrets_dir: Option<std::path::PathBuf>,
}

/// Runs the plan against the providers, journaling as it goes, and returns
/// the resulting state (not yet saved) with a report. Stops starting new work
/// when `cancel` is set (Ctrl-C), letting in-flight calls finish.
pub async fn execute(
    plan: Arc<Plan>,
    doc: StateDoc,
    journal: Journal,
    providers: Arc<Providers>,
    opts: &ApplyOptions,
    cancel: Arc<AtomicBool>,
) -> Result<(StateDoc, ApplyReport), EngineError> {
    let started = Instant::now();
    let graph = build_graph(&plan).map_err(EngineError::Plan)?;
    let (limiters, budgets) = rate_limiters(&plan, &providers).await?;
    let shared = Arc::new(Shared {
        plan,
        providers,
        journal,
        doc: Mutex::new(doc),
        limiters,
        max_retries: opts.max_retries,
        secrets_dir: opts.secrets_dir.clone(),
    });

    let progress = opts.progress.clone();
    progress.start(graph.node_count());
    let mut indegree: Vec<usize> = graph
        .node_indices()
        .map(|n| graph.edges_directed(n, Direction::Incoming).count())
        .collect();
    let mut ready: VecDeque<NodeIndex> = graph
        .node_indices()
        .filter(|n| indegree[n.index()] == 0)
        .collect();
    let mut outcome: Vec<Option<OpOutcome>> = vec![None; graph.node_count()];
    let mut in_flight: JoinSet<(NodeIndex, Result<OpOutcome, OpError>, Duration)> = JoinSet::new();
    let parallelism = opts
        .parallelism
        .unwrap_or_else(|| default_parallelism(&budgets))
        .max(1);
    tracing::debug!(parallelism, "walking the plan");
    let mut interrupted = false;

    loop {
        if cancel.load(Ordering::SeqCst) && !interrupted {
            interrupted = true;
            progress.note(&format!(
                "Interrupted: starting nothing new; waiting for {} call(s) in flight (Ctrl-C again to stop at once — the journal keeps what is done).",
                in_flight.len()
            ));
        }
        while !interrupted && in_flight.len() < parallelism {
            let Some(n) = ready.pop_front() else { break };
            let op = graph[n].clone();
            progress.started(&shared.plan.changes[op.change].address, verb(op.kind));
            let shared = shared.clone();
            in_flight.spawn(async move {
                let t = Instant::now();
                let r = run_op(&shared, &op).await;
                (n, r, t.elapsed())
            });
        }
        if in_flight.is_empty() {
            break;
        }
        // Wake up for a finished op, or every 50 ms to notice Ctrl-C (and
        // let progress say what is still running).
        let next = tokio::time::timeout(Duration::from_millis(50), in_flight.join_next()).await;
        progress.tick();
        let Ok(Some(joined)) = next else { continue };
        let (n, result, elapsed) = match joined {
            Ok(v) => v,
            Err(e) => return Err(EngineError::Internal(format!("an apply task failed: {e}"))),
        };
        let op = &graph[n];
        let address = &shared.plan.changes[op.change].address;
        match result {
            Ok(o) => {
                progress.done(address, &describe(&o), elapsed);
                outcome[n.index()] = Some(o);
                for e in graph.edges_directed(n, Direction::Outgoing) {
                    let t = e.target();
                    indegree[t.index()] -= 1;
                    if indegree[t.index()] == 0 && outcome[t.index()].is_none() {
                        ready.push_back(t);
                    }
                }
            }
            Err(error) => {
                progress.note(&format!("{address}: FAILED: {error}"));
                outcome[n.index()] = Some(OpOutcome::Failed {
                    error: error.message,
                    kind: error.kind,
                });
                // Everything downstream is skipped; independent branches go on.
                let mut dfs = Dfs::new(&graph, n);
                dfs.next(&graph);
                while let Some(d) = dfs.next(&graph) {
                    if outcome[d.index()].is_none() {
                        outcome[d.index()] = Some(OpOutcome::Skipped {
                            because: format!("{address} failed"),
                        });
                    }
                }
            }
        }
    }
    progress.finish();

    let mut report = outcomes_report(&graph, outcome, &shared, interrupted);
    report.elapsed_ms = started.elapsed().as_millis();
    let shared = Arc::try_unwrap(shared)
        .map_err(|_| EngineError::Internal("apply tasks still running".into()))?;
    shared.journal.close();
    let doc = shared
        .doc
        .into_inner()
        .expect("no task panicked holding the state");
    Ok((doc, report))
}

/// One rate budget per provider, shared by every call made to it; and the
/// budgets, from which the default parallelism follows.
async fn rate_limiters(
    plan: &Plan,
    providers: &Providers,
) -> Result<(HashMap<Target, DefaultDirectRateLimiter>, Vec<RateLimit>), EngineError> {
    let mut limiters = HashMap::new();
    let mut budgets = Vec::new();
    for c in &plan.changes {
        let targets = [Some(c.provider), c.old_provider];
        for target in targets.into_iter().flatten() {
            if limiters.contains_key(&target) || c.action == crate::plan::Action::NoOp {
                continue;
            }
            let rl = providers.get(target).await?.rate_limit();
            budgets.push(rl);
            let period = Duration::from_secs_f64(1.0 / rl.per_second.max(0.001));
            let burst = NonZeroU32::new(rl.burst.max(1)).expect("max(1)");
            let quota = Quota::with_period(period)
                .expect("non-zero period")
                .allow_burst(burst);
            limiters.insert(target, RateLimiter::direct(quota));
        }
    }
    Ok((limiters, budgets))
}

/// What happened to each step, in the graph's order.
fn outcomes_report(
    graph: &petgraph::graph::DiGraph<Op, ()>,
    mut outcome: Vec<Option<OpOutcome>>,
    shared: &Shared,
    interrupted: bool,
) -> ApplyReport {
    let mut report = ApplyReport {
        interrupted,
        ..Default::default()
    };
    for n in graph.node_indices() {
        let op = &graph[n];
        let o = outcome[n.index()].take().unwrap_or(OpOutcome::NotStarted);
        report.outcomes.push((
            shared.plan.changes[op.change].address.clone(),
            op_name(op.kind),
            o,
        ));
    }
    report
}

/// A step's name in the report.
fn op_name(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Create => "create",
        OpKind::Update => "update",
        OpKind::Delete => "delete",
        OpKind::Detach => "detach",
        OpKind::Finish(Finish::Attach) => "attach",
        OpKind::Finish(Finish::Authorize) => "authorize",
    }
}

/// The default number of operations in flight: the sum of what each
/// provider's rate budget can keep busy ([`RateLimit::useful_concurrency`]),
/// at most [`MAX_DEFAULT_PARALLELISM`]. Concurrency never breaks a budget —
/// every call waits for its provider's token bucket — so the default only
/// has to be large enough for the calls each budget admits to overlap.
pub fn default_parallelism(budgets: &[RateLimit]) -> usize {
    let sum = budgets
        .iter()
        .map(RateLimit::useful_concurrency)
        .fold(0u64, u64::saturating_add);
    usize::try_from(sum)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_DEFAULT_PARALLELISM)
}

/// What an operation is doing while it runs, for progress.
fn verb(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Create => "creating",
        OpKind::Update => "updating",
        OpKind::Delete => "deleting",
        OpKind::Detach => "detaching",
        OpKind::Finish(Finish::Attach) => "attaching",
        OpKind::Finish(Finish::Authorize) => "authorizing rules of",
    }
}

fn describe(o: &OpOutcome) -> String {
    match o {
        OpOutcome::Created { id } => format!("created {id}"),
        OpOutcome::Updated { id } => format!("updated {id}"),
        OpOutcome::Deleted => "deleted".into(),
        OpOutcome::Completed { id, done } => format!("{done} ({id})"),
        OpOutcome::Failed { error, .. } => format!("failed: {error}"),
        OpOutcome::Skipped { because } => format!("skipped ({because})"),
        OpOutcome::NotStarted => "not started".into(),
    }
}

async fn run_op(shared: &Shared, op: &Op) -> Result<OpOutcome, OpError> {
    let change = &shared.plan.changes[op.change];
    match op.kind {
        OpKind::Create => create(shared, change).await,
        OpKind::Update => update(shared, change).await,
        OpKind::Delete => delete(shared, change).await,
        OpKind::Detach => detach(shared, change).await,
        OpKind::Finish(f) => finish(shared, change, f).await,
    }
}

/// Calls a provider within its rate budget, retrying what is retryable.
async fn call<T, F, Fut>(shared: &Shared, target: Target, f: F) -> Result<T, ProviderError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    let limiter = shared.limiters.get(&target);
    let attempt = || async {
        if let Some(l) = limiter {
            l.until_ready().await;
        }
        f().await
    };
    attempt
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(100))
                .with_max_delay(Duration::from_secs(20))
                .with_max_times(shared.max_retries)
                .with_jitter(),
        )
        .when(|e: &ProviderError| e.kind.is_retryable())
        .notify(|e: &ProviderError, wait: Duration| {
            tracing::debug!(provider = target.key(), "retrying in {wait:?} after {e}");
        })
        .await
}

async fn provider(shared: &Shared, target: Target) -> Result<Arc<dyn Provider>, OpError> {
    shared
        .providers
        .get(target)
        .await
        .map_err(|e| OpError::from(e.to_string()))
}

async fn journal(shared: &Shared, entry: JournalEntry) -> Result<(), OpError> {
    shared
        .journal
        .append(&entry)
        .await
        .map_err(|e| OpError::from(e.to_string()))?;
    crate::state::journal::fold(&mut shared.doc.lock().expect("state lock"), entry);
    Ok(())
}

/// Journals that `address` now holds `record`.
async fn recorded(shared: &Shared, address: &Address, record: Record) -> Result<(), OpError> {
    journal(
        shared,
        JournalEntry::Recorded {
            address: address.clone(),
            record,
        },
    )
    .await
}

async fn create(shared: &Shared, c: &ResourceChange) -> Result<OpOutcome, OpError> {
    let p = provider(shared, c.provider).await?;
    let mut attrs = c.after.clone().unwrap_or_default();
    // A split create's first step (`graph::finish_step`): a firewall
    // without its rules, a volume without its instance. What is recorded is
    // what was asked for, so a kill before the second step leaves a diff.
    let finish = finish_step(c);
    if finish == Some(Finish::Authorize) {
        attrs.insert(attr::INGRESS.into(), serde_json::Value::Array(Vec::new()));
    }
    let deferred = finish.and_then(Finish::deferred_role);
    // A rendered bootstrap is sent, never kept: the plan carries it once by
    // its hash, the journal and state get the hash only, and its
    // placeholders (join token, server address) are filled for this call alone.
    let user_data = match attrs
        .get(crate::resolve::USER_DATA_SHA256)
        .and_then(|v| v.as_str())
    {
        Some(sha) => {
            let doc = shared.plan.documents.get(sha).ok_or_else(|| {
                format!("{}: the plan has no bootstrap document {sha}", c.address)
            })?;
            Some(fill_user_data(shared, c, doc).await?)
        }
        None => None,
    };
    let refs = dep_refs(shared, c, deferred)?;
    let (project, lineage, workspace) = {
        let doc = shared.doc.lock().expect("state lock");
        (
            doc.project.clone(),
            doc.lineage.clone(),
            doc.workspace.clone(),
        )
    };
    let token = c.token.clone().unwrap_or_else(new_token);
    record_move(shared, c).await?;
    // The intent is durable before the call: a crash from here on is healed
    // by adoption (ownership tags + token) on the next run.
    journal(
        shared,
        JournalEntry::Intent {
            address: c.address.clone(),
            intent: PendingIntent {
                started_ms: crate::clock::wall_ms(),
                kind: c.kind,
                provider: c.provider,
                region: c.region.clone(),
                token: token.clone(),
                attrs: attrs.clone(),
                deps: c.deps.clone(),
            },
        },
    )
    .await?;
    let mut sent = attrs.clone();
    if finish == Some(Finish::Authorize) {
        sent.insert(
            gpuform_provider::request::BARE.into(),
            serde_json::Value::Bool(true),
        );
    }
    if let Some(doc) = user_data {
        sent.insert(attr::USER_DATA.into(), serde_json::Value::String(doc));
    }
    let req = CreateRequest {
        kind: c.kind,
        scope: Scope {
            region: c.region.clone(),
        },
        attrs: sent,
        refs,
        ownership: OwnershipTags {
            project,
            address: c.address.clone(),
            token: token.clone(),
            lineage,
            workspace,
        },
    };
    let result = call(shared, c.provider, || p.create(&req)).await;
    created(shared, c, result, attrs, token).await
}

/// The provider ids of a create's dependencies as recorded by now (but for
/// the role its split second step adds); a node into a Capacity Block only
/// inside the block's window.
fn dep_refs(
    shared: &Shared,
    c: &ResourceChange,
    deferred: Option<&str>,
) -> Result<BTreeMap<String, String>, OpError> {
    let mut refs = BTreeMap::new();
    {
        let doc = shared.doc.lock().expect("state lock");
        // A node launches into its Capacity Block only inside its window.
        if let Some(block) = c
            .deps
            .get("block")
            .and_then(|b| doc.resources.get(b).map(|r| (b, r)))
        {
            crate::engine::capacity::block_window_open(
                &c.address,
                block.0,
                &block.1.attrs,
                crate::clock::now_secs(),
            )?;
        }
        for (role, dep) in c.deps.iter().filter(|(r, _)| Some(r.as_str()) != deferred) {
            let id = doc
                .resources
                .get(dep)
                .map(|r| r.id.clone())
                .ok_or_else(|| format!("{dep} has no id yet"))?;
            refs.insert(role.to_string(), id);
        }
    }
    Ok(refs)
}

/// A move: before the new copy is started, the old one is recorded under
/// `ADDRESS~OLD_ID`, so a crash anywhere leaves both recorded (the old one
/// then planned for deletion) and neither orphaned.
async fn record_move(shared: &Shared, c: &ResourceChange) -> Result<(), OpError> {
    if let Some(old_address) = super::graph::moved_address(c) {
        let old = shared
            .doc
            .lock()
            .expect("state lock")
            .resources
            .get(&c.address)
            .cloned();
        if let Some(old) = old.filter(|r| Some(&r.id) == c.id.as_ref()) {
            recorded(shared, &old_address, old).await?;
            journal(
                shared,
                JournalEntry::Removed {
                    address: c.address.clone(),
                },
            )
            .await?;
        }
    }
    Ok(())
}

/// Records what a create call made, or abandons its intent when the cloud
/// refused before making anything.
async fn created(
    shared: &Shared,
    c: &ResourceChange,
    result: Result<gpuform_provider::ObservedResource, gpuform_provider::ProviderError>,
    attrs: gpuform_provider::Attrs,
    token: String,
) -> Result<OpOutcome, OpError> {
    match result {
        Ok(observed) => {
            let record = Record {
                kind: c.kind,
                provider: c.provider,
                region: c.region.clone(),
                id: observed.id.clone(),
                attrs,
                deps: c.deps.clone(),
                token,
                reported: crate::state::document::Reported::of(&observed),
                kept: Vec::new(),
            };
            recorded(shared, &c.address, record).await?;
            Ok(OpOutcome::Created { id: observed.id })
        }
        Err(e) => {
            // These errors mean the cloud refused before making anything;
            // anything else may have made something, so the intent stays
            // pending and the next refresh looks for it.
            if matches!(
                e.kind,
                ErrorKind::Invalid | ErrorKind::Quota | ErrorKind::Auth | ErrorKind::Capacity
            ) {
                journal(
                    shared,
                    JournalEntry::Abandoned {
                        address: c.address.clone(),
                    },
                )
                .await?;
            }
            Err(e.into())
        }
    }
}

/// Fills a bootstrap document's placeholders: environment variables (join
/// tokens, read now and nowhere else) and attributes of dependencies as
/// their provider reports them now (a k3s server's `private_ip`), and the
/// cluster's credentials from the local secret store (made now on first
/// use). Errors name what is missing, never a value.
async fn fill_user_data(shared: &Shared, c: &ResourceChange, doc: &str) -> Result<String, OpError> {
    use crate::bootstrap::placeholder::{find, Placeholder};
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for ph in find(doc) {
        let value = match &ph {
            Placeholder::Env(name) => std::env::var(name).map_err(|_| {
                OpError::from(format!(
                    "{}: the environment variable {name} (the Kubernetes join token) is not set; export it before `gpuform apply`",
                    c.address
                ))
            })?,
            Placeholder::Secret(name) => {
                let cluster = c.address.cluster().unwrap_or_default();
                let dir = shared.secrets_dir.as_deref().ok_or_else(|| {
                    format!("{}: no secret store to take `{name}` from", c.address)
                })?;
                let cas = crate::k8s::load_or_create(dir, cluster, crate::clock::today())
                    .map_err(|e| format!("{}: cluster credentials: {e}", c.address))?;
                cas.for_server(name)
                    .ok_or_else(|| format!("{}: no credential named `{name}`", c.address))?
            }
            Placeholder::DepAttr(role, attr) => {
                let dep = c
                    .deps
                    .get(role)
                    .ok_or_else(|| format!("{}: no `{role}` dependency", c.address))?;
                let record = shared
                    .doc
                    .lock()
                    .expect("state lock")
                    .resources
                    .get(dep)
                    .cloned()
                    .ok_or_else(|| format!("{dep} has no id yet"))?;
                let dp = provider(shared, record.provider).await?;
                let scope = Scope {
                    region: record.region.clone(),
                };
                let ids = [record.id.clone()];
                let seen = call(shared, record.provider, || dp.read(&scope, record.kind, &ids))
                    .await
                    .map_err(OpError::from)?;
                seen.iter()
                    .find(|o| o.id == record.id)
                    .and_then(|o| o.attrs.get(attr))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .ok_or_else(|| {
                        format!(
                            "{}: {} does not report `{attr}` of {dep} ({}), which its user data needs \
                             (an instance the cloud has not given an address yet?); run `gpuform apply` again",
                            c.address, record.provider, record.id
                        )
                    })?
            }
        };
        values.insert(ph.text(), value);
    }
    crate::bootstrap::fill(doc, |ph| {
        values
            .get(&ph.text())
            .cloned()
            .ok_or_else(|| "placeholder without a value".to_string())
    })
    .map_err(|e| OpError::from(format!("{}: {e}", c.address)))
}

async fn update(shared: &Shared, c: &ResourceChange) -> Result<OpOutcome, OpError> {
    let p = provider(shared, c.provider).await?;
    let id = c.id.clone().ok_or("update without an id")?;
    let after = c.after.clone().unwrap_or_default();
    let before = c.before.clone().unwrap_or_default();
    // Only what changed; a key the spec dropped is sent as null ("none").
    let keys: std::collections::BTreeSet<&gpuform_provider::Key> =
        before.keys().chain(after.keys()).collect();
    let changes: gpuform_provider::Attrs = keys
        .into_iter()
        .filter(|k| !crate::plan::diff::same_value(before.get(k), after.get(k)))
        .filter(|k| !crate::plan::diff::unrecorded(&after, k))
        .map(|k| {
            (
                k.clone(),
                after.get(k).cloned().unwrap_or(serde_json::Value::Null),
            )
        })
        .collect();
    let mut changes = changes;
    // A volume is attached to its instance as recorded now: re-created by
    // this apply, its id was not known when the plan was made.
    if let (Some(want), Some(instance)) =
        (changes.get_mut(attr::ATTACHED_TO), c.deps.get("instance"))
    {
        if !want.is_null() {
            let doc = shared.doc.lock().expect("state lock");
            let r = doc
                .resources
                .get(instance)
                .ok_or_else(|| format!("{instance} has no id yet"))?;
            *want = serde_json::Value::String(r.id.clone());
        }
    }
    let scope = Scope {
        region: c.region.clone(),
    };
    call(shared, c.provider, || {
        p.update(&scope, c.kind, &id, &changes)
    })
    .await
    .map_err(OpError::from)?;
    let mut record = shared
        .doc
        .lock()
        .expect("state lock")
        .resources
        .get(&c.address)
        .cloned()
        .ok_or("updated resource missing from state")?;
    record.attrs = after;
    // What this update set is the spec's now, no longer kept as imported.
    record.kept.retain(|k| !changes.contains_key(k));
    if record.attrs.contains_key(crate::resolve::USER_DATA_SHA256) {
        record.attrs.remove(attr::USER_DATA);
    }
    // Completion attributes are observed, never recorded.
    for k in c.kind.completion_attrs() {
        record.attrs.remove(k);
    }
    recorded(shared, &c.address, record).await?;
    Ok(OpOutcome::Updated { id })
}

async fn delete(shared: &Shared, c: &ResourceChange) -> Result<OpOutcome, OpError> {
    let target = c.old_provider.unwrap_or(c.provider);
    let region = c.old_region.as_ref().unwrap_or(&c.region);
    let p = provider(shared, target).await?;
    let id = c.id.clone().ok_or("delete without an id")?;
    let scope = Scope {
        region: region.clone(),
    };
    match call(shared, target, || p.delete(&scope, c.kind, &id)).await {
        Ok(()) => {}
        Err(e) if e.kind == ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    let address = super::graph::moved_address(c).unwrap_or_else(|| c.address.clone());
    journal(shared, JournalEntry::Removed { address }).await?;
    Ok(OpOutcome::Deleted)
}

/// The second step of a split create: the attribute its first step left
/// out, set by an update of the resource just made (its id is in state by
/// now). An attachment is observed, never recorded; rules are recorded.
async fn finish(shared: &Shared, c: &ResourceChange, f: Finish) -> Result<OpOutcome, OpError> {
    let p = provider(shared, c.provider).await?;
    let (mut record, value) = {
        let doc = shared.doc.lock().expect("state lock");
        let record = doc
            .resources
            .get(&c.address)
            .cloned()
            .ok_or_else(|| format!("{} has no id yet", c.address))?;
        let value = match f {
            Finish::Attach => {
                let instance = c.deps.get("instance").ok_or("attach without an instance")?;
                let r = doc
                    .resources
                    .get(instance)
                    .ok_or_else(|| format!("{instance} has no id yet"))?;
                serde_json::Value::String(r.id.clone())
            }
            Finish::Authorize => c
                .after
                .as_ref()
                .and_then(|a| a.get(attr::INGRESS))
                .cloned()
                .unwrap_or(serde_json::Value::Array(Vec::new())),
        };
        (record, value)
    };
    let changes: gpuform_provider::Attrs = [(f.attr().to_string(), value.clone())]
        .into_iter()
        .collect();
    let scope = Scope {
        region: c.region.clone(),
    };
    call(shared, c.provider, || {
        p.update(&scope, c.kind, &record.id, &changes)
    })
    .await
    .map_err(OpError::from)?;
    let id = record.id.clone();
    let done = match (f, value.as_str()) {
        (Finish::Attach, Some(instance)) => format!("attached to {instance}"),
        _ => "rules authorized".to_string(),
    };
    if f == Finish::Authorize {
        record.attrs.insert(f.attr().into(), value);
        recorded(shared, &c.address, record).await?;
    }
    Ok(OpOutcome::Completed { id, done })
}

/// Detaches a kept volume before its instance is replaced (its update
/// attaches it to the new one). Nothing to journal: attachment is observed.
async fn detach(shared: &Shared, c: &ResourceChange) -> Result<OpOutcome, OpError> {
    let p = provider(shared, c.provider).await?;
    let id = c.id.clone().ok_or("detach without an id")?;
    let scope = Scope {
        region: c.region.clone(),
    };
    let mut changes = gpuform_provider::Attrs::new();
    changes.insert(attr::ATTACHED_TO.into(), serde_json::Value::Null);
    call(shared, c.provider, || {
        p.update(&scope, c.kind, &id, &changes)
    })
    .await
    .map_err(OpError::from)?;
    Ok(OpOutcome::Updated { id })
}

/// Why an operation failed; the neutral kind when a provider said so.
#[derive(Debug, Clone)]
pub struct OpError {
    pub message: String,
    pub kind: Option<ErrorKind>,
}

impl From<String> for OpError {
    fn from(message: String) -> Self {
        OpError {
            message,
            kind: None,
        }
    }
}

impl From<&str> for OpError {
    fn from(message: &str) -> Self {
        OpError {
            message: message.to_string(),
            kind: None,
        }
    }
}

impl From<ProviderError> for OpError {
    fn from(e: ProviderError) -> Self {
        OpError {
            message: e.to_string(),
            kind: Some(e.kind),
        }
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A fresh idempotency token: ≤ 64 ASCII characters, as ClientToken requires.
pub fn new_token() -> String {
    format!("gf-{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(per_second: f64, burst: u32) -> RateLimit {
        RateLimit { per_second, burst }
    }

    #[test]
    fn default_parallelism_is_what_the_budgets_keep_in_flight() {
        // EC2's mutating bucket: 50 at once, then 5/s for up to 10 s each.
        assert_eq!(default_parallelism(&[budget(5.0, 50)]), 50 + 50);
        // Two clouds in one plan: their budgets are independent, so they add up.
        assert_eq!(
            default_parallelism(&[budget(5.0, 50), budget(10.0, 10)]),
            100 + 110
        );
        // A generous budget (the sandbox) is capped; nothing to call: one.
        assert_eq!(
            default_parallelism(&[budget(100_000.0, 10_000)]),
            MAX_DEFAULT_PARALLELISM
        );
        assert_eq!(default_parallelism(&[]), 1);
        assert_eq!(default_parallelism(&[budget(0.0, 0)]), 1);
    }
}
