//! Refresh: ask the providers what exists of what state records, find what
//! an interrupted apply made (adoption by ownership tags), and notice what was
//! deleted or changed behind gpuform's back. Batched: one `list_owned` per
//! (provider, region), plus one `read` per kind only for recorded ids that
//! lost their tags.

use crate::address::{Address, Target};
use crate::providers::Providers;
use crate::resolve::Desired;
use crate::state::{Record, StateDoc};
use crate::EngineError;
use backon::{ExponentialBuilder, Retryable};
use gpuform_provider::{attr, AlsoList, ObservedResource, ProviderError, ResourceKind, Scope};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

/// How often a refresh read is retried after a throttled or transient
/// answer, as apply retries its calls. A read that still fails fails the
/// refresh (exit 1): a missing answer is never taken for "nothing there",
/// which would plan creates for what exists.
const READ_RETRIES: usize = 6;

/// Calls a provider read, retrying what is retryable with backoff.
async fn read_with_retry<T, F, Fut>(what: &str, f: F) -> Result<T, ProviderError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    f.retry(
        ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(2))
            .with_max_times(READ_RETRIES)
            .with_jitter(),
    )
    .when(|e: &ProviderError| e.kind.is_retryable())
    .notify(|e: &ProviderError, wait: Duration| {
        tracing::debug!("{what}: retrying in {wait:?} after {e}");
    })
    .await
}

/// State as it really is now.
#[derive(Debug, Clone)]
pub struct Current {
    /// State with adoptions applied (in memory; apply journals them).
    pub doc: StateDoc,
    /// What the providers report per recorded address: `None` = gone.
    /// Addresses not refreshed (`--refresh=false`) are absent.
    pub observed: HashMap<Address, Option<ObservedResource>>,
    /// Addresses whose resource was found by its ownership tags and recorded.
    pub adopted: Vec<Address>,
    /// Interrupted creates that made nothing; their token is reused.
    pub abandoned: BTreeMap<Address, String>,
    /// Extra resources tagged as ours (duplicates of a recorded address, or
    /// addresses state forgot): planned for deletion, keyed by a synthetic
    /// address `ADDRESS~ID`.
    pub strays: BTreeMap<Address, Record>,
    /// Resources the clouds hold under this project's tags at an address
    /// the spec wants and the state does not record, made by *another*
    /// state (lineage): creating the address again would make a second one,
    /// and adopting it may take another workspace's live resource, so the
    /// plan refuses until the user says which (`--adopt-lineage`).
    pub foreign: Vec<Foreign>,
    /// Where a preview could not look for this project's resources (see
    /// [`Lookout::preview`]), one line each, for the plan's warnings.
    pub unlooked: Vec<String>,
}

/// See [`Current::foreign`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub address: Address,
    pub id: String,
    pub lineage: String,
    pub provider: Target,
    pub region: String,
}

/// What a refresh looks for besides what the state records.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lookout<'a> {
    /// The spec's resources. Their (provider, region)s are listed even when
    /// the state records nothing there (a lost, moved or new state), so that
    /// what the clouds hold under this project's tags is adopted rather than
    /// made a second time; an adopted resource is recorded with the spec's
    /// dependencies and, for every attribute the cloud does not report, the
    /// spec's value (so that adoption alone never plans a replacement).
    pub desired: Option<&'a Desired>,
    /// Other states' lineages whose resources are adopted as this state's
    /// (`--adopt-lineage`: the user says that state is lost). A new, empty
    /// state takes the lineage over, so later runs see them as its own.
    pub adopt_lineages: &'a [String],
    /// A plan that only previews: where the state records nothing and the
    /// cloud cannot be asked (offline, no credentials), say so in
    /// [`Current::unlooked`] and go on. An apply leaves it false: it never
    /// creates where it could not look.
    pub preview: bool,
}

impl Current {
    /// State as recorded, without asking any provider (`--refresh=false`).
    pub fn unrefreshed(doc: StateDoc) -> Current {
        let abandoned = doc
            .pending
            .iter()
            .map(|(a, p)| (a.clone(), p.token.clone()))
            .collect();
        Current {
            doc,
            observed: HashMap::new(),
            adopted: Vec::new(),
            abandoned,
            strays: BTreeMap::new(),
            foreign: Vec::new(),
            unlooked: Vec::new(),
        }
    }
}

/// What exists now for the resources `doc` records (and strays tagged with
/// its lineage), and for those `lookout` names; `notify` is told of waits
/// the user should know about.
pub async fn refresh(
    doc: StateDoc,
    lookout: Lookout<'_>,
    providers: &Providers,
    notify: &(dyn Fn(&str) + Sync),
) -> Result<Current, EngineError> {
    let mut cur = Current::unrefreshed(doc);
    cur.abandoned.clear();
    let (groups, extras) = groups_to_list(&cur.doc, lookout.desired);
    let (in_state, _) = groups_to_list(&cur.doc, None);
    if groups.is_empty() {
        // Nothing recorded, nothing started, nothing wanted: nothing to ask.
        return Ok(cur);
    }
    // A new state (never applied) that is told to adopt a lost state's
    // resources becomes that state: its lineage is the one on their tags.
    if cur.doc.is_empty() && cur.doc.serial == 0 {
        if let [lineage] = lookout.adopt_lineages {
            cur.doc.lineage = lineage.clone();
        }
    }
    let project = cur.doc.project.clone();
    // Ask every group concurrently: refresh costs one round trip, not one per region.
    let mut calls = Vec::new();
    for (provider_key, region) in &groups {
        let provider = providers.get(*provider_key).await?;
        let scope = Scope {
            region: region.clone(),
        };
        let project = project.clone();
        let key = (*provider_key, region.clone());
        let also = extras.get(&key).copied().unwrap_or_default();
        calls.push(async move {
            let found = read_with_retry("list_owned", || {
                provider.list_owned_kinds(&scope, &project, also)
            })
            .await;
            (key, provider, scope, found)
        });
    }
    let results = futures_util::future::join_all(calls).await;
    for (key, provider, scope, found) in results {
        let (provider_key, region) = &key;
        let found = match found {
            Ok(found) => found,
            Err(error) if lookout.preview && !in_state.contains(&key) => {
                cur.unlooked.push(format!(
                    "could not look in {provider_key} {region} for what this project already has there ({error}); this preview plans creates, and `gpuform apply` looks again and stops if it still cannot"
                ));
                continue;
            }
            Err(error) => {
                return Err(EngineError::Provider {
                    context: format!("refreshing {provider_key} {region}"),
                    error,
                })
            }
        };
        let group = Group {
            provider: &*provider,
            scope: &scope,
            key: &key,
            also: extras.get(&key).copied().unwrap_or_default(),
        };
        let found = cur.settled(&group, found, notify).await?;
        cur.merge(&group, found, &lookout).await?;
    }
    cur.foreign.sort_by(|a, b| a.address.cmp(&b.address));
    cur.adopted.sort();
    // What the clouds reported now (a node's address) replaces what was
    // recorded: state then shows it (`gpuform output`) until the next refresh.
    for (address, o) in &cur.observed {
        if let (Some(o), Some(r)) = (o, cur.doc.resources.get_mut(address)) {
            if r.id == o.id {
                r.reported = crate::state::document::Reported::of(o);
            }
        }
    }
    Ok(cur)
}

/// One (provider, region) a refresh lists.
struct Group<'a> {
    provider: &'a dyn gpuform_provider::Provider,
    scope: &'a Scope,
    /// (provider key, region).
    key: &'a (Target, String),
    /// Which of the kinds listed only when asked are listed too.
    also: AlsoList,
}

impl Group<'_> {
    fn failed(&self, error: ProviderError) -> EngineError {
        EngineError::Provider {
            context: format!("refreshing {} {}", self.key.0, self.key.1),
            error,
        }
    }
}

impl Current {
    /// After a crash, a create started moments ago may not be visible yet
    /// (eventual consistency, or a request still being processed after its
    /// client died): wait out the provider's settle time once and look
    /// again, rather than retrying a create that did happen.
    async fn settled(
        &self,
        g: &Group<'_>,
        found: Vec<ObservedResource>,
        notify: &(dyn Fn(&str) + Sync),
    ) -> Result<Vec<ObservedResource>, EngineError> {
        let settle = g.provider.settle_time();
        if settle.is_zero() {
            return Ok(found);
        }
        let (provider_key, region) = g.key;
        let lineage = &self.doc.lineage;
        let seen = |address: &str| {
            found.iter().any(|o| {
                o.ownership
                    .as_ref()
                    .is_some_and(|t| t.address == address && &t.lineage == lineage)
            })
        };
        let youngest_unseen = self
            .doc
            .pending
            .iter()
            .filter(|(a, p)| &p.provider == provider_key && &p.region == region && !seen(a))
            .map(|(_, p)| p.started_ms)
            .max();
        let now = crate::clock::wall_ms();
        let Some(ready_at) = youngest_unseen
            .map(|t| t + settle.as_millis() as u64)
            .filter(|t| *t > now)
        else {
            return Ok(found);
        };
        let wait = std::time::Duration::from_millis(ready_at - now);
        notify(&format!(
            "Waiting {:.1}s for {provider_key} {region} to settle before looking for what an interrupted apply started...",
            wait.as_secs_f64()
        ));
        tokio::time::sleep(wait).await;
        read_with_retry("list_owned", || {
            g.provider
                .list_owned_kinds(g.scope, &self.doc.project, g.also)
        })
        .await
        .map_err(|e| g.failed(e))
    }

    /// Merges one group's listing into what exists: recorded resources
    /// found (by id, or read directly when their tags were lost),
    /// interrupted creates adopted, strays adopted or marked duplicates,
    /// other states' resources where this one would create noted.
    async fn merge(
        &mut self,
        g: &Group<'_>,
        mut found: Vec<ObservedResource>,
        lookout: &Lookout<'_>,
    ) -> Result<(), EngineError> {
        // Another workspace's resources are another state's, even at the
        // same addresses: this state neither adopts, deletes nor refuses them.
        let workspace = self.doc.workspace.as_deref();
        found.retain(|o| match &o.ownership {
            Some(t) => t.in_workspace(workspace),
            None => true,
        });
        let lineage = self.doc.lineage.clone();
        let (ours, others): (Vec<ObservedResource>, Vec<ObservedResource>) =
            found.into_iter().partition(|o| {
                o.ownership.as_ref().is_some_and(|t| {
                    t.lineage == lineage || lookout.adopt_lineages.contains(&t.lineage)
                })
            });
        let (ours, mut claimed) = self.find_recorded(g, ours).await?;
        self.adopt_interrupted(g, &ours, &mut claimed);
        self.adopt_strays(g, &ours, &claimed, lookout);
        self.note_foreign(g, &others, lookout);
        Ok(())
    }

    /// Each recorded resource of the group, found among `ours` by id or read
    /// directly (ids that lost their tags, batched per kind). Returns the
    /// rest of `ours` and the ids claimed.
    async fn find_recorded(
        &mut self,
        g: &Group<'_>,
        ours: Vec<ObservedResource>,
    ) -> Result<(Vec<ObservedResource>, HashSet<String>), EngineError> {
        let (provider_key, region) = g.key;
        // Slots, so that what a record claims is moved out rather than cloned.
        let mut ours: Vec<Option<ObservedResource>> = ours.into_iter().map(Some).collect();
        let by_id: HashMap<String, usize> = ours
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.as_ref().map(|o| (o.id.clone(), i)))
            .collect();
        // Recorded resources of this group (borrowed: only `observed` changes below).
        let recorded: Vec<(&Address, &Record)> = self
            .doc
            .resources
            .iter()
            .filter(|(_, r)| &r.provider == provider_key && &r.region == region)
            .collect();
        let mut missing: BTreeMap<ResourceKind, Vec<String>> = BTreeMap::new();
        for (_, r) in &recorded {
            if !by_id.contains_key(r.id.as_str()) {
                missing.entry(r.kind).or_default().push(r.id.clone());
            }
        }
        let mut untagged: HashMap<String, ObservedResource> = HashMap::new();
        for (kind, ids) in missing {
            let got = read_with_retry("read", || g.provider.read(g.scope, kind, &ids))
                .await
                .map_err(|e| g.failed(e))?;
            for o in got {
                untagged.insert(o.id.clone(), o);
            }
        }
        let mut claimed = HashSet::with_capacity(recorded.len());
        self.observed.reserve(recorded.len());
        for (address, r) in &recorded {
            let o = by_id
                .get(r.id.as_str())
                .and_then(|&i| ours[i].take())
                .or_else(|| untagged.remove(&r.id));
            if o.is_some() {
                claimed.insert(r.id.clone());
            }
            self.observed.insert((*address).clone(), o);
        }
        Ok((ours.into_iter().flatten().collect(), claimed))
    }

    /// Interrupted creates: adopt what carries their address and kind (a
    /// boot disk tagged like its server is not the server), preferring
    /// the token. What the create had left to do after the resource
    /// existed (attach, authorize) shows in its observed completion
    /// attributes, and the plan completes it.
    fn adopt_interrupted(
        &mut self,
        g: &Group<'_>,
        ours: &[ObservedResource],
        claimed: &mut HashSet<String>,
    ) {
        let (provider_key, region) = g.key;
        let pending: Vec<_> = self
            .doc
            .pending
            .iter()
            .filter(|(_, p)| &p.provider == provider_key && &p.region == region)
            .map(|(a, p)| (a.clone(), p.clone()))
            .collect();
        for (address, p) in pending {
            let hit = ours
                .iter()
                .filter(|o| !claimed.contains(&o.id) && o.kind == p.kind)
                .filter(|o| {
                    o.ownership
                        .as_ref()
                        .map(|t| t.address == address)
                        .unwrap_or(false)
                })
                .max_by_key(|o| {
                    o.ownership
                        .as_ref()
                        .map(|t| t.token == p.token)
                        .unwrap_or(false)
                })
                .cloned();
            self.doc.pending.remove(&address);
            match hit {
                Some(o) if !self.doc.resources.contains_key(&address) => {
                    claimed.insert(o.id.clone());
                    self.doc.resources.insert(
                        address.clone(),
                        Record {
                            kind: p.kind,
                            provider: *provider_key,
                            region: region.clone(),
                            id: o.id.clone(),
                            attrs: p.attrs.clone(),
                            deps: p.deps.clone(),
                            token: p.token.clone(),
                            reported: crate::state::document::Reported::of(&o),
                            kept: Vec::new(),
                        },
                    );
                    self.observed.insert(address.clone(), Some(o));
                    self.adopted.push(address);
                }
                _ => {
                    self.abandoned.insert(address, p.token);
                }
            }
        }
    }

    /// Anything else tagged as ours is a stray: adopt it under its address
    /// if state has nothing there, otherwise it is a duplicate to delete.
    fn adopt_strays(
        &mut self,
        g: &Group<'_>,
        ours: &[ObservedResource],
        claimed: &HashSet<String>,
        lookout: &Lookout<'_>,
    ) {
        let (provider_key, region) = g.key;
        for o in ours {
            if claimed.contains(&o.id) {
                continue;
            }
            let t = o.ownership.as_ref().expect("filtered on ownership");
            // What the cloud reports, less the completion and reported
            // attributes: those are observed, never recorded (diff compares
            // completion attributes anew, reported ones never).
            let mut attrs = o.attrs.clone();
            for k in o
                .kind
                .completion_attrs()
                .iter()
                .chain(o.kind.reported_attrs())
            {
                attrs.remove(k);
            }
            // A cloud that reports user data back reports it filled with
            // secrets; its hash is what state keeps.
            if attrs.contains_key(crate::resolve::USER_DATA_SHA256) {
                attrs.remove(attr::USER_DATA);
            }
            let wanted = lookout
                .desired
                .and_then(|d| d.get(&t.address))
                .filter(|d| d.kind == o.kind);
            let record = Record {
                kind: o.kind,
                provider: *provider_key,
                region: region.clone(),
                id: o.id.clone(),
                attrs: match wanted {
                    Some(d) => adopted_attrs(&d.attrs, &attrs),
                    None => attrs,
                },
                deps: wanted.map(|d| d.deps.clone()).unwrap_or_default(),
                token: t.token.clone(),
                reported: crate::state::document::Reported::of(o),
                kept: Vec::new(),
            };
            if self.doc.resources.contains_key(&t.address) {
                self.strays.insert(t.address.duplicate(&o.id), record);
            } else {
                self.doc.resources.insert(t.address.clone(), record);
                self.observed.insert(t.address.clone(), Some(o.clone()));
                self.adopted.push(t.address.clone());
            }
        }
    }

    /// Another state's resources where this one would create: refused
    /// by the plan, never silently doubled.
    fn note_foreign(&mut self, g: &Group<'_>, others: &[ObservedResource], lookout: &Lookout<'_>) {
        let (provider_key, region) = g.key;
        let recorded_ids: HashSet<&str> =
            self.doc.resources.values().map(|r| r.id.as_str()).collect();
        for o in others {
            let Some(t) = o.ownership.as_ref() else {
                continue;
            };
            let wanted = lookout
                .desired
                .and_then(|d| d.get(&t.address))
                .is_some_and(|d| d.kind == o.kind && d.target == *provider_key);
            if wanted
                && !recorded_ids.contains(o.id.as_str())
                && !self.doc.resources.contains_key(&t.address)
            {
                self.foreign.push(Foreign {
                    address: t.address.clone(),
                    id: o.id.clone(),
                    lineage: t.lineage.clone(),
                    provider: *provider_key,
                    region: region.clone(),
                });
            }
        }
    }
}

/// The (provider, region)s a refresh lists: those the state records or has
/// started something in, and those the spec wants; and which of them are
/// asked for buckets or blocks too (see `Provider::list_owned_kinds`).
type Groups = BTreeSet<(Target, String)>;
type Extras = BTreeMap<(Target, String), AlsoList>;
fn groups_to_list(doc: &StateDoc, desired: Option<&Desired>) -> (Groups, Extras) {
    let recorded = doc
        .resources
        .values()
        .map(|r| (r.provider, r.region.clone(), r.kind));
    let pending = doc
        .pending
        .values()
        .map(|p| (p.provider, p.region.clone(), p.kind));
    let wanted = desired
        .into_iter()
        .flat_map(|d| d.resources.iter())
        .map(|r| (r.target, r.region.clone(), r.kind));
    let mut groups = BTreeSet::new();
    let mut extras = Extras::new();
    for (provider, region, kind) in recorded.chain(pending).chain(wanted) {
        extras
            .entry((provider, region.clone()))
            .or_default()
            .add(kind);
        groups.insert((provider, region));
    }
    (groups, extras)
}

/// The attributes an adopted resource is recorded with: the spec's, with
/// the cloud's value wherever the cloud reports one (so a real difference
/// still shows in the plan), and nothing the spec does not have (a record
/// holds desired attributes only, as after a create).
fn adopted_attrs(
    desired: &gpuform_provider::Attrs,
    observed: &gpuform_provider::Attrs,
) -> gpuform_provider::Attrs {
    desired
        .iter()
        .map(|(k, v)| (k.clone(), observed.get(k).unwrap_or(v).clone()))
        .collect()
}
