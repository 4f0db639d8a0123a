//! `gpuform import`: adopt instances gpuform did not make — with the data
//! volumes, network, subnet and firewall they use — and buckets
//! ([`buckets`]) into a spec and its state, in one reviewed, crash-safe
//! step.
//!
//! [`plan_import`] only reads: the region's inventory (the listing `audit`
//! makes, [`gpuform_provider::InventoryApi`]) and the chosen resources by id.
//! It groups the instances into clusters (alike in type, zone, image,
//! pricing, disks, network), writes them in the spec's words with
//! [`crate::spec::edit::add_clusters`], resolves the new spec and records
//! each resource at the address resolve gives it, with exactly the
//! attributes resolve derives, so the next plan is clean. Whatever the
//! cloud holds that the spec cannot say is kept ([`Record::kept`]) and said.
//!
//! [`run_import`] then makes it true, in an order a kill at any point
//! converges from: the whole import is first written beside the state
//! ([`pending_path`], the intent of every tagging call), then each resource
//! gets its ownership tags (the only change in the cloud), then the spec is
//! written, then the state is committed, then the intent is removed. Run
//! again, an interrupted import resumes from its intent, and `plan` and
//! `apply` refuse to run while one is pending (they would plan deleting the
//! tagged resources, or making them again).

mod buckets;
use buckets::user_tags;

pub use buckets::ImportedBucket;

use super::EngineError;
use crate::address::{Address, Target};
use crate::plan::diff::{actual_attrs, changed_keys};
use crate::providers::Providers;
use crate::resolve::{resolve, Desired, ResolveOptions};
use crate::spec::{LoadedSpec, Vars};
use crate::state::document::Reported;
use crate::state::{Record, StateDoc, StateStore};
use gpuform_catalog::{Catalog, Cloud, PricingModel};
use gpuform_provider::attr;
use gpuform_provider::{
    ErrorKind, ExistingResource, InventoryInstance, ObservedResource, OwnershipTags, Provider,
    ResourceKind, Scope, UserError,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which instances of the region to import.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// These instance ids (each must exist).
    pub ids: Vec<String>,
    /// Every instance carrying all of these tags.
    pub tags: Vec<(String, String)>,
    /// Every instance and bucket `gpuform audit` reports as unmanaged (no
    /// gpuform tags).
    pub unmanaged: bool,
    /// These buckets, by name (each must exist in the region).
    pub buckets: Vec<String>,
}

impl Selection {
    /// Whether instances are asked for (`--bucket` alone asks for none).
    fn wants_instances(&self) -> bool {
        !self.ids.is_empty() || !self.tags.is_empty() || self.unmanaged
    }
}

/// What to import, and where to write it.
pub struct ImportRequest<'a> {
    pub spec_path: &'a Path,
    /// The spec as it is now; `None` when the file does not exist yet.
    pub spec: Option<&'a LoadedSpec>,
    /// The project of a new spec.
    pub project: String,
    pub vars: &'a Vars,
    /// `aws`, `sandbox:aws`...
    pub provider: Target,
    pub region: String,
    pub selection: Selection,
    /// The clusters' name (`NAME`, `NAME-2`... for several); else `imported`.
    pub name: Option<String>,
    pub catalog: &'a Catalog,
}

/// One resource that gets gpuform's ownership tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagStep {
    pub address: Address,
    pub kind: ResourceKind,
    pub id: String,
    pub provider: Target,
    pub region: String,
    pub ownership: OwnershipTags,
}

/// A cluster the import writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedCluster {
    pub name: String,
    pub provider: Target,
    pub region: String,
    pub instances: Vec<String>,
    /// Its lines in the spec, as written.
    pub yaml: String,
}

/// Everything an import will do: shown before, and written beside the
/// state as its intent while it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportPlan {
    pub spec_path: PathBuf,
    /// The spec's whole text afterwards.
    pub spec_text: String,
    pub clusters: Vec<ImportedCluster>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<ImportedBucket>,
    /// What the state records afterwards, by address.
    pub records: BTreeMap<Address, Record>,
    /// The tagging calls, in order.
    pub tags: Vec<TagStep>,
    /// What the cloud keeps that the spec cannot say, and other things to know.
    pub notes: Vec<String>,
    /// Instances chosen that this state manages already (`id at address`).
    pub already: Vec<String>,
    /// The state it was made against.
    pub lineage: String,
    pub serial: u64,
}

impl ImportPlan {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

fn refuse(message: impl Into<String>, hint: impl Into<String>) -> EngineError {
    EngineError::User(UserError::new(message, hint))
}

/// The file beside the state holding an import under way.
pub fn pending_path(store: &StateStore) -> PathBuf {
    crate::state::store::sibling(store.path(), ".import")
}

/// The import an interrupted run left, if any.
pub fn pending(store: &StateStore) -> Result<Option<ImportPlan>, EngineError> {
    let path = pending_path(store);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(EngineError::Config(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        refuse(
            format!("{} is not an import gpuform can resume: {e}", path.display()),
            "it was written by `gpuform import`; move it away if you know the import it held is finished",
        )
    })
}

/// Refuses a command that reads or changes the state while an import is
/// half done: its resources may carry this state's tags without the state
/// recording them, or the spec may name clusters the state does not have.
pub fn refuse_if_pending(store: &StateStore) -> Result<(), EngineError> {
    if pending_path(store).exists() {
        return Err(refuse(
            format!(
                "an import into {} was interrupted ({} holds it)",
                store.location(),
                pending_path(store).display()
            ),
            "run the same `gpuform import` command again: it finishes the interrupted import first",
        ));
    }
    Ok(())
}

/// The token an imported resource is recorded with: never sent as an
/// idempotency token (nothing is created), stable across re-runs.
fn import_token(id: &str) -> String {
    format!("import-{id}")
}

/// What an import looks at for one resource: its observation.
type Seen = BTreeMap<String, ObservedResource>;

/// A cluster's instances and what they share.
struct Group {
    instances: Vec<InventoryInstance>,
    network: String,
    subnet: String,
    firewall: String,
    placement: Option<String>,
    /// The data volume of each instance, in the order of `instances`.
    volumes: Vec<Option<String>>,
}

impl Group {
    /// The instances' ids, `a, b, c`.
    fn ids(&self) -> String {
        self.instances
            .iter()
            .map(|i| i.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Reads what the import needs and plans it: nothing is changed. Each step
/// is a function below, in the order they run.
pub async fn plan_import(
    req: &ImportRequest<'_>,
    doc: &StateDoc,
    providers: &Providers,
) -> Result<ImportPlan, EngineError> {
    let target = req.provider;
    super::audit::check_target(req.catalog, target, &req.region)?;
    let scope = Scope {
        region: req.region.clone(),
    };
    let provider = providers.get(target).await?;
    let mut plan = ImportPlan {
        spec_path: req.spec_path.to_path_buf(),
        spec_text: req.spec.map(|l| l.text.clone()).unwrap_or_default(),
        clusters: Vec::new(),
        buckets: Vec::new(),
        records: BTreeMap::new(),
        tags: Vec::new(),
        notes: Vec::new(),
        already: Vec::new(),
        lineage: doc.lineage.clone(),
        serial: doc.serial,
    };
    let mut chosen = Vec::new();
    if req.selection.wants_instances() {
        let listing = || format!("listing {} {} to import from it", req.provider, req.region);
        let inventory = providers
            .inventory(target)
            .await?
            .inventory(&scope)
            .await
            .map_err(|error| EngineError::Provider {
                context: listing(),
                error,
            })?;
        let picked = pick_instances(req, doc, &inventory.instances)?;
        chosen = picked.chosen;
        plan.already.extend(picked.already);
        plan.notes.extend(picked.notes);
    }
    let chosen_buckets = buckets::pick(req, doc, provider.as_ref(), &scope, &mut plan).await?;
    if chosen.is_empty() && chosen_buckets.is_empty() {
        if plan.already.is_empty() {
            return Err(nothing_matches(req));
        }
        return Ok(plan);
    }
    chosen.sort_by(|a, b| a.id.cmp(&b.id));

    // The buckets go into the spec first: the clusters' resolve sees them.
    let mut base_text = match req.spec {
        Some(l) => l.text.clone(),
        None => format!("project: {}\n", req.project),
    };
    let bucket_blocks = buckets::blocks(req, &doc.project, &chosen_buckets, &mut plan.notes);
    if !bucket_blocks.is_empty() {
        base_text = crate::spec::edit::add_buckets(&base_text, &bucket_blocks)
            .map_err(|e| spec_edit_error(req, e))?;
    }
    let desired = if chosen.is_empty() {
        plan.spec_text = base_text;
        resolve_text(req, doc, &plan.spec_text)?.1
    } else {
        check_catalog(req, target.cloud, &chosen)?;
        check_supported(req, &chosen)?;
        let seen = read_used(req, provider.as_ref(), &scope, &chosen).await?;
        refuse_owned_elsewhere(doc, &chosen, &seen)?;
        let groups = group_clusters(&chosen, &seen)?;
        let names = cluster_names(req, groups.len())?;
        let (blocks, desired) = write_clusters(
            req, doc, target, &base_text, &groups, &names, &seen, &mut plan,
        )?;
        for ((g, name), block) in groups.iter().zip(&names).zip(&blocks) {
            record_cluster(req, doc, g, name, &desired, &seen, &mut plan)?;
            plan.clusters.push(ImportedCluster {
                name: name.clone(),
                provider: req.provider,
                region: req.region.clone(),
                instances: g.instances.iter().map(|i| i.id.clone()).collect(),
                yaml: block.join("\n"),
            });
        }
        desired
    };
    buckets::record(
        req,
        doc,
        &chosen_buckets,
        &bucket_blocks,
        &desired,
        &mut plan,
    )?;
    // Tag what others depend on last: a kill leaves dependents tagged first,
    // which changes nothing while the import is pending anyway.
    plan.tags
        .sort_by_key(|t| std::cmp::Reverse(kind_rank(t.kind)));
    Ok(plan)
}

/// Nothing the selection names is in the region.
fn nothing_matches(req: &ImportRequest<'_>) -> EngineError {
    let sel = &req.selection;
    let what = if !sel.wants_instances() {
        "no bucket"
    } else if sel.ids.is_empty() && (!sel.tags.is_empty() || sel.unmanaged) {
        "no instance or bucket"
    } else {
        "no instance"
    };
    refuse(
        format!(
            "{what} in {} {} matches what was asked to import",
            req.provider, req.region
        ),
        "name instances with --id, buckets with --bucket, take those with tags with --tag KEY=VALUE, or every unmanaged one with --from-audit",
    )
}

/// An edit of the spec's text that cannot be made, naming the file.
fn spec_edit_error(req: &ImportRequest<'_>, e: UserError) -> EngineError {
    EngineError::User(UserError::new(
        format!("{}: {}", req.spec_path.display(), e.message),
        e.hint,
    ))
}

/// Loads and resolves a spec's text as plan will.
fn resolve_text(
    req: &ImportRequest<'_>,
    doc: &StateDoc,
    text: &str,
) -> Result<(LoadedSpec, Desired), EngineError> {
    let label = req.spec_path.display().to_string();
    let opts = ResolveOptions {
        current: super::current_placements(doc),
        ..ResolveOptions::default()
    };
    let loaded = crate::spec::load_str(&label, text, req.vars).map_err(EngineError::Spec)?;
    let desired = resolve(&loaded, req.catalog, &opts).map_err(EngineError::Spec)?;
    Ok((loaded, desired))
}

/// The instances an import takes, and what it says of the others.
struct Picked {
    chosen: Vec<InventoryInstance>,
    /// Chosen instances this state records already (`id is address`).
    already: Vec<String>,
    notes: Vec<String>,
}

/// The instances of the inventory the selection names, refusing an id that
/// is not there or that another gpuform state owns.
fn pick_instances(
    req: &ImportRequest<'_>,
    doc: &StateDoc,
    inventory: &[InventoryInstance],
) -> Result<Picked, EngineError> {
    let recorded = recorded_ids(doc);
    for id in &req.selection.ids {
        if !inventory.iter().any(|i| &i.id == id) {
            return Err(refuse(
                format!(
                    "there is no instance `{id}` in {} {} (or it is terminated)",
                    req.provider, req.region
                ),
                format!(
                    "check the id and the region: `gpuform audit --cloud {} --region {}` lists every instance there",
                    req.provider.cloud_flag(),
                    req.region
                ),
            ));
        }
    }
    let mut picked = Picked {
        chosen: Vec::new(),
        already: Vec::new(),
        notes: Vec::new(),
    };
    for i in inventory {
        let by_id = req.selection.ids.contains(&i.id);
        let by_tag = !req.selection.tags.is_empty()
            && req
                .selection
                .tags
                .iter()
                .all(|(k, v)| i.tags.get(k) == Some(v));
        if let Some(address) = recorded.get(i.id.as_str()) {
            // Imported (or made) by this state: a re-run has nothing to do.
            if by_id || by_tag || req.selection.unmanaged {
                picked.already.push(format!("{} is {address}", i.id));
            }
            continue;
        }
        let unmanaged = req.selection.unmanaged && i.project().is_none();
        if !(by_id || by_tag || unmanaged) {
            continue;
        }
        if let Some(project) = i.project() {
            let own = i.ownership();
            if by_id {
                return Err(owned_elsewhere(
                    "instance",
                    &i.id,
                    project,
                    own.as_ref(),
                    doc,
                ));
            }
            picked.notes.push(format!(
                "{} is left out: gpuform project `{project}` manages it",
                i.id
            ));
            continue;
        }
        picked.chosen.push(i.clone());
    }
    Ok(picked)
}

/// Each id the state records, with its address.
fn recorded_ids(doc: &StateDoc) -> BTreeMap<&str, &str> {
    doc.resources
        .iter()
        .map(|(a, r)| (r.id.as_str(), a.as_str()))
        .collect()
}

/// The catalog must know each type, sold in the region: resolve derives
/// everything from it.
fn check_catalog(
    req: &ImportRequest<'_>,
    cloud: Cloud,
    chosen: &[InventoryInstance],
) -> Result<(), EngineError> {
    for i in chosen {
        let known = req.catalog.instance_type(cloud, &i.instance_type).is_some();
        if known
            && req
                .catalog
                .offering(cloud, &req.region, &i.instance_type)
                .is_some()
        {
            continue;
        }
        let dir = format!("providers/catalog/data/{}", cloud.as_str());
        return Err(refuse(
            format!(
                "instance {} is a `{}`, which gpuform's {cloud} catalog does not {} in {}",
                i.id,
                i.instance_type,
                if known { "offer" } else { "know" },
                req.region
            ),
            format!(
                "add the type to the catalog — a row `{},GPU_MODEL,GPU_COUNT,GPU_MEM_GIB,VCPUS,RAM_GIB,INTERCONNECT,RDMA,NETWORK_GBPS,SOURCE` in {dir}/instance_types.csv and its price `{},{},{},PRICE,CURRENCY,SOURCE,AS_OF` in {dir}/prices.csv (or `gpuform catalog refresh --cloud {}` if it sells it there) — then run import again",
                i.instance_type,
                req.region,
                i.instance_type,
                i.pricing.as_deref().unwrap_or("on-demand"),
                cloud.as_str()
            ),
        ));
    }
    Ok(())
}

/// A cloud whose inventory does not say what its instances use cannot
/// import (its driver has no `TagApi::set_ownership` either).
fn check_supported(
    req: &ImportRequest<'_>,
    chosen: &[InventoryInstance],
) -> Result<(), EngineError> {
    if chosen
        .iter()
        .all(|i| i.uses.is_empty() && i.firewalls.is_empty())
    {
        return Err(refuse(
            format!("importing from {} is not supported yet", req.provider),
            "gpuform imports from aws, alibaba, tencent, huawei and the sandbox today; on this cloud, make the cluster with gpuform and move the work over",
        ));
    }
    Ok(())
}

/// What each instance needs to be a gpuform node: a subnet, one firewall,
/// at most one data volume. Returns the ids to read, by kind.
fn used_ids(
    req: &ImportRequest<'_>,
    chosen: &[InventoryInstance],
) -> Result<BTreeMap<ResourceKind, BTreeSet<String>>, EngineError> {
    let mut ids: BTreeMap<ResourceKind, BTreeSet<String>> = BTreeMap::new();
    for i in chosen {
        let what = |role: &str| i.uses.get(role).cloned();
        let subnet = what("subnet").ok_or_else(|| {
            refuse(
                format!(
                    "instance {} is in no subnet that the {} inventory reports",
                    i.id, req.provider
                ),
                "gpuform imports instances in a VPC subnet; import another instance",
            )
        })?;
        if i.firewalls.len() != 1 {
            return Err(refuse(
                format!(
                    "instance {} is in {} firewalls (security groups: {}); the nodes of a gpuform cluster are in one",
                    i.id,
                    i.firewalls.len(),
                    if i.firewalls.is_empty() { "none".to_string() } else { i.firewalls.join(", ") }
                ),
                "put the instance in one security group (the one its cluster's nodes share), then run import again",
            ));
        }
        if i.data_volumes.len() > 1 {
            return Err(refuse(
                format!(
                    "instance {} has {} data volumes ({}); a gpuform node has at most one",
                    i.id,
                    i.data_volumes.len(),
                    i.data_volumes.join(", ")
                ),
                "detach all but one data volume (or import the instance after moving its data), then run import again",
            ));
        }
        ids.entry(ResourceKind::Instance)
            .or_default()
            .insert(i.id.clone());
        ids.entry(ResourceKind::Subnet).or_default().insert(subnet);
        ids.entry(ResourceKind::Firewall)
            .or_default()
            .insert(i.firewalls[0].clone());
        if let Some(n) = what("network") {
            ids.entry(ResourceKind::Network).or_default().insert(n);
        }
        for v in &i.data_volumes {
            ids.entry(ResourceKind::Volume)
                .or_default()
                .insert(v.clone());
        }
    }
    Ok(ids)
}

/// The instances and what they use, read by id (a call per kind).
async fn read_used(
    req: &ImportRequest<'_>,
    provider: &dyn Provider,
    scope: &Scope,
    chosen: &[InventoryInstance],
) -> Result<Seen, EngineError> {
    let mut seen: Seen = BTreeMap::new();
    for (kind, want) in &used_ids(req, chosen)? {
        let want: Vec<String> = want.iter().cloned().collect();
        let got =
            provider
                .read(scope, *kind, &want)
                .await
                .map_err(|error| EngineError::Provider {
                    context: format!(
                        "reading the {kind}s to import in {} {}",
                        req.provider, req.region
                    ),
                    error,
                })?;
        for o in got {
            seen.insert(o.id.clone(), o);
        }
        for id in &want {
            if !seen.contains_key(id) {
                return Err(refuse(
                    format!(
                        "{kind} {id} is gone from {} {} (it was listed a moment ago)",
                        req.provider, req.region
                    ),
                    "run import again",
                ));
            }
        }
    }
    Ok(seen)
}

/// Nothing another state owns is taken along, nor what this state records
/// for another cluster.
fn refuse_owned_elsewhere(
    doc: &StateDoc,
    chosen: &[InventoryInstance],
    seen: &Seen,
) -> Result<(), EngineError> {
    let recorded = recorded_ids(doc);
    for o in seen.values() {
        let Some(own) = &o.ownership else { continue };
        let ours = own.lineage == doc.lineage;
        if ours && !recorded.contains_key(o.id.as_str()) {
            continue;
        }
        if !ours {
            return Err(owned_elsewhere(
                o.kind.as_str(),
                &o.id,
                &own.project,
                Some(own),
                doc,
            ));
        }
        let used_by: Vec<&str> = chosen
            .iter()
            .filter(|i| uses_of(i).contains(&o.id))
            .map(|i| i.id.as_str())
            .collect();
        return Err(shared_error(
            &o.id,
            o.kind,
            &[format!(
                "{} (this state's {})",
                recorded[o.id.as_str()],
                o.kind
            )],
            &used_by,
        ));
    }
    Ok(())
}

/// Clusters: instances alike in everything the spec says of a cluster;
/// refuses a network, subnet or firewall two of them would share.
fn group_clusters(chosen: &[InventoryInstance], seen: &Seen) -> Result<Vec<Group>, EngineError> {
    let mut groups: Vec<(String, Group)> = Vec::new();
    for i in chosen {
        let o = &seen[&i.id];
        let volume = i.data_volumes.first().cloned();
        let key = group_key(i, o, volume.as_ref().and_then(|v| seen.get(v)));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => {
                g.instances.push(i.clone());
                g.volumes.push(volume);
            }
            None => groups.push((
                key,
                Group {
                    instances: vec![i.clone()],
                    network: i.uses.get("network").cloned().unwrap_or_default(),
                    subnet: i.uses["subnet"].clone(),
                    firewall: i.firewalls[0].clone(),
                    placement: i.uses.get("placement").cloned(),
                    volumes: vec![volume],
                },
            )),
        }
    }
    let groups: Vec<Group> = groups.into_iter().map(|(_, g)| g).collect();
    let mut owners: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (n, g) in groups.iter().enumerate() {
        for id in [&g.network, &g.subnet, &g.firewall] {
            let list = owners.entry(id.as_str()).or_default();
            if !list.contains(&n) {
                list.push(n);
            }
        }
    }
    if let Some((id, list)) = owners.iter().find(|(_, list)| list.len() > 1) {
        let kind = seen.get(*id).map_or(ResourceKind::Network, |o| o.kind);
        let clusters: Vec<String> = list
            .iter()
            .map(|n| {
                let g = &groups[*n];
                format!("{} ({})", g.ids(), g.instances[0].instance_type)
            })
            .collect();
        return Err(shared_error(id, kind, &clusters, &[]));
    }
    Ok(groups)
}

/// `NAME`, `NAME-2`...: one per cluster, none the spec has already.
fn cluster_names(req: &ImportRequest<'_>, count: usize) -> Result<Vec<String>, EngineError> {
    let base = req.name.clone().unwrap_or_else(|| "imported".to_string());
    if !valid_cluster_name(&base) {
        return Err(refuse(
            format!("`{base}` cannot name a cluster"),
            "use lower-case letters, digits and `-`, starting with a letter (e.g. --name trainers)",
        ));
    }
    let existing: BTreeSet<String> = req
        .spec
        .map(|l| l.spec.clusters.keys().cloned().collect())
        .unwrap_or_default();
    let names: Vec<String> = (0..count)
        .map(|n| {
            if n == 0 {
                base.clone()
            } else {
                format!("{base}-{}", n + 1)
            }
        })
        .collect();
    if let Some(taken) = names.iter().find(|n| existing.contains(*n)) {
        return Err(refuse(
            format!(
                "the spec {} already has a cluster `{taken}`",
                req.spec_path.display()
            ),
            "choose another name with --name",
        ));
    }
    Ok(names)
}

/// Writes the clusters into the spec's text (`base_text`, the spec with the
/// imported buckets, into `plan.spec_text`) and resolves it as plan will;
/// returns each cluster's lines and what resolve wants.
#[allow(clippy::too_many_arguments)]
fn write_clusters(
    req: &ImportRequest<'_>,
    doc: &StateDoc,
    target: Target,
    base_text: &str,
    groups: &[Group],
    names: &[String],
    seen: &Seen,
    plan: &mut ImportPlan,
) -> Result<(Vec<Vec<String>>, Desired), EngineError> {
    let mut blocks: Vec<Vec<String>> = groups
        .iter()
        .zip(names)
        .map(|(g, name)| {
            cluster_block(
                name,
                g,
                seen,
                target,
                &req.region,
                req.catalog,
                &mut plan.notes,
            )
        })
        .collect();
    // At most two more rounds: a cluster whose resolved type or bootstrap
    // is not what runs gets `instance_type:` / `driver: none`, and again.
    for _round in 0..3 {
        let text = crate::spec::edit::add_clusters(base_text, &blocks)
            .map_err(|e| spec_edit_error(req, e))?;
        let (_, desired) = resolve_text(req, doc, &text)?;
        let mut again = false;
        for (n, (g, name)) in groups.iter().zip(names).enumerate() {
            let Some(node) = desired.get(&Address::in_cluster(name, "node[0]")) else {
                continue;
            };
            let running = &g.instances[0].instance_type;
            if node.attrs.get(attr::INSTANCE_TYPE).and_then(Value::as_str) != Some(running.as_str())
                && !blocks[n].iter().any(|l| l.starts_with("  instance_type:"))
            {
                insert_key(
                    &mut blocks[n],
                    "  gpu:",
                    format!("  instance_type: {}", quote(running)),
                );
                again = true;
            }
            if node.attrs.contains_key("bootstrap")
                && !blocks[n].iter().any(|l| l.starts_with("  driver:"))
            {
                insert_key(&mut blocks[n], "  image:", "  driver: none".to_string());
                again = true;
            }
        }
        if !again {
            plan.spec_text = text;
            return Ok((blocks, desired));
        }
    }
    Err(EngineError::Internal(
        "import: the written clusters do not resolve to what runs".into(),
    ))
}

/// Records each resource of cluster `name` at the address resolve gives
/// it, with the attributes resolve derives (what differs on the cloud is
/// kept and noted), and plans its tagging.
fn record_cluster(
    req: &ImportRequest<'_>,
    doc: &StateDoc,
    g: &Group,
    name: &str,
    desired: &Desired,
    seen: &Seen,
    plan: &mut ImportPlan,
) -> Result<(), EngineError> {
    let mut ids_at: Vec<(Address, String)> = Vec::new();
    for d in &desired.resources {
        let Some(local) = d.address.local_in(name) else {
            continue;
        };
        let Some(id) = id_at(g, d.kind, local) else {
            return Err(refuse(
                format!(
                    "cluster `{name}` as written needs a {} ({}) that the instances do not have",
                    d.kind, d.address
                ),
                match d.kind {
                    ResourceKind::Placement => "RDMA nodes are packed in a placement group by gpuform; put the instances in one (or import them one per cluster with --id)".to_string(),
                    _ => "import instances that have it, or report this".to_string(),
                },
            ));
        };
        let Some(o) = seen.get(&id).cloned().or_else(|| {
            // A placement group is not read above: it is named only.
            (d.kind == ResourceKind::Placement).then(|| ObservedResource {
                kind: d.kind,
                id: id.clone(),
                region: req.region.clone(),
                ownership: None,
                attrs: Default::default(),
                status: String::new(),
            })
        }) else {
            return Err(EngineError::Internal(format!("import: {id} was not read")));
        };
        let token = import_token(&id);
        let mut record = Record {
            kind: d.kind,
            provider: req.provider,
            region: d.region.clone(),
            id: id.clone(),
            attrs: d.attrs.clone(),
            deps: d.deps.clone(),
            token: token.clone(),
            reported: Reported::of(&o),
            kept: Vec::new(),
        };
        let differs = changed_keys(&actual_attrs(&record, Some(&o)), &d.attrs);
        for k in &differs {
            plan.notes.push(kept_note(
                &d.address,
                &id,
                k,
                o.attrs.get(k),
                d.attrs.get(k),
            ));
        }
        record.kept = differs;
        plan.tags.push(TagStep {
            address: d.address.clone(),
            kind: d.kind,
            id: id.clone(),
            provider: req.provider,
            region: d.region.clone(),
            ownership: OwnershipTags {
                project: doc.project.clone(),
                address: d.address.clone(),
                token,
                lineage: doc.lineage.clone(),
                workspace: doc.workspace.clone(),
            },
        });
        ids_at.push((d.address.clone(), id));
        plan.records.insert(d.address.clone(), record);
    }
    if let Some(p) = &g.placement {
        if !ids_at.iter().any(|(_, id)| id == p) {
            plan.notes.push(format!(
                "placement group {p} stays as it is, unmanaged: gpuform packs only multi-node RDMA clusters"
            ));
        }
    }
    Ok(())
}

/// The id of the group's resource that resolve puts at `local`
/// (`network`, `node[1]`...), if the instances have one.
fn id_at(g: &Group, kind: ResourceKind, local: &str) -> Option<String> {
    match kind {
        ResourceKind::Network => Some(g.network.clone()).filter(|n| !n.is_empty()),
        ResourceKind::Subnet => Some(g.subnet.clone()),
        ResourceKind::Firewall => Some(g.firewall.clone()),
        ResourceKind::Placement => g.placement.clone(),
        ResourceKind::Instance => index_of(local, "node")
            .and_then(|n| g.instances.get(n))
            .map(|i| i.id.clone()),
        ResourceKind::Volume => {
            index_of(local, "volume").and_then(|n| g.volumes.get(n).cloned().flatten())
        }
        ResourceKind::Bucket | ResourceKind::Block => None,
    }
}

/// Makes the import true (see the module's doc for the order), or resumes
/// one: `doc` is the locked state, committed at the end.
pub async fn run_import(
    store: &StateStore,
    doc: &mut StateDoc,
    plan: &ImportPlan,
    providers: &Providers,
    notify: &(dyn Fn(&str) + Sync),
) -> Result<(), EngineError> {
    let path = pending_path(store);
    let io = |what: &str, p: &Path, e: std::io::Error| {
        EngineError::Config(format!("cannot {what} {}: {e}", p.display()))
    };
    let bytes = serde_json::to_vec_pretty(plan)
        .map_err(|e| EngineError::Internal(format!("import intent: {e}")))?;
    gpuform_catalog::fsio::AtomicWrite::new()
        .private()
        .write(&path, &bytes)
        .map_err(|e| io("write", &path, e))?;
    for step in &plan.tags {
        let provider: std::sync::Arc<dyn Provider> = providers.get(step.provider).await?;
        let scope = Scope {
            region: step.region.clone(),
        };
        notify(&format!(
            "Tagging {} {} as {}...",
            step.kind, step.id, step.address
        ));
        provider
            .set_ownership(
                ExistingResource {
                    scope: &scope,
                    kind: step.kind,
                    id: &step.id,
                },
                &step.ownership,
            )
            .await
            .map_err(|error| EngineError::Provider {
                context: format!(
                    "tagging {} {} in {} {} (run import again to finish)",
                    step.kind, step.id, step.provider, step.region
                ),
                error,
            })?;
    }
    let now = std::fs::read_to_string(&plan.spec_path).unwrap_or_default();
    if now != plan.spec_text {
        gpuform_catalog::fsio::AtomicWrite::new()
            .keep_permissions()
            .write(&plan.spec_path, plan.spec_text.as_bytes())
            .map_err(|e| io("write", &plan.spec_path, e))?;
    }
    let done = doc.serial > plan.serial
        && plan
            .records
            .iter()
            .all(|(a, r)| doc.resources.get(a).is_some_and(|have| have.id == r.id));
    if !done {
        doc.lineage = plan.lineage.clone();
        doc.resources
            .extend(plan.records.iter().map(|(a, r)| (a.clone(), r.clone())));
        store.commit(doc)?;
    }
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove", &path, e)),
    }
}

/// Checks that an interrupted import may resume on `doc`: the state it was
/// made against, at its serial (or just committed by it).
pub fn check_resumable(
    plan: &ImportPlan,
    doc: &StateDoc,
    existed: bool,
) -> Result<(), EngineError> {
    let same_state = (!existed && doc.serial == 0) || doc.lineage == plan.lineage;
    let at = doc.serial == plan.serial
        || (doc.serial == plan.serial + 1
            && plan
                .records
                .iter()
                .all(|(a, r)| doc.resources.get(a).is_some_and(|have| have.id == r.id)));
    if same_state && at {
        return Ok(());
    }
    Err(refuse(
        format!(
            "the interrupted import was made against state lineage {} serial {}, and the state is now lineage {} serial {}",
            plan.lineage, plan.serial, doc.lineage, doc.serial
        ),
        "the state changed since it was made; look at the state file, then move the import file (<state>.import) away and run import again",
    ))
}

fn kind_rank(k: ResourceKind) -> u8 {
    match k {
        ResourceKind::Network | ResourceKind::Bucket | ResourceKind::Block => 0,
        ResourceKind::Placement => 1,
        ResourceKind::Subnet | ResourceKind::Firewall => 2,
        ResourceKind::Instance => 3,
        ResourceKind::Volume => 4,
    }
}

/// `node[3]` → 3 for `prefix` `node`.
fn index_of(local: &str, prefix: &str) -> Option<usize> {
    local
        .strip_prefix(prefix)?
        .strip_prefix('[')?
        .strip_suffix(']')?
        .parse()
        .ok()
}

fn uses_of(i: &InventoryInstance) -> BTreeSet<String> {
    i.uses
        .values()
        .chain(&i.firewalls)
        .chain(&i.data_volumes)
        .cloned()
        .collect()
}

fn valid_cluster_name(n: &str) -> bool {
    n.starts_with(|c: char| c.is_ascii_lowercase())
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn owned_elsewhere(
    kind: &str,
    id: &str,
    project: &str,
    own: Option<&OwnershipTags>,
    doc: &StateDoc,
) -> EngineError {
    let (lineage, address) = own
        .map(|o| (o.lineage.as_str(), o.address.as_str()))
        .unwrap_or(("(unknown)", "(unknown)"));
    let same_project = project == doc.project;
    refuse(
        format!(
            "{kind} {id} is managed by another gpuform state: project `{project}`, lineage {lineage}, address {address}"
        ),
        if same_project {
            format!("it is this project's, recorded by another state; if that state is lost, `gpuform plan --adopt-lineage {lineage}` takes its resources over instead of importing them")
        } else {
            format!("manage it from project `{project}`'s spec and state; importing it here would give it two owners")
        },
    )
}

fn shared_error(id: &str, kind: ResourceKind, users: &[String], instances: &[&str]) -> EngineError {
    refuse(
        format!(
            "{kind} {id} is shared by several clusters: {}{}",
            users.join("; "),
            if instances.is_empty() {
                String::new()
            } else {
                format!(" and the instances to import ({})", instances.join(", "))
            }
        ),
        "a gpuform cluster owns its network, subnet and firewall: import together the instances that share them, alike in type, zone, image, pricing and disks (a cluster is identical nodes), or give each cluster its own",
    )
}

/// What makes two instances one cluster.
fn group_key(
    i: &InventoryInstance,
    o: &ObservedResource,
    volume: Option<&ObservedResource>,
) -> String {
    let a = |k: &str| o.attrs.get(k).cloned().unwrap_or(Value::Null);
    let v = |k: &str| {
        volume
            .and_then(|v| v.attrs.get(k).cloned())
            .unwrap_or(Value::Null)
    };
    serde_json::json!([
        i.uses.get("network"),
        i.uses.get("subnet"),
        i.firewalls,
        i.uses.get("placement"),
        a(attr::INSTANCE_TYPE),
        a(attr::ZONE),
        a(attr::IMAGE),
        a(attr::PRICING),
        a(attr::ROOT_GB),
        a(attr::RDMA),
        v(attr::SIZE_GB),
        v(attr::VOLUME_TYPE),
    ])
    .to_string()
}

/// A YAML scalar as JSON writes it: always valid, never re-typed.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// The `tags:` line of a cluster or bucket the import writes (none
/// without tags).
fn tags_line(tags: &BTreeMap<String, String>) -> Option<String> {
    if tags.is_empty() {
        return None;
    }
    let pairs: Vec<String> = tags
        .iter()
        .map(|(k, v)| format!("{}: {}", quote(k), quote(v)))
        .collect();
    Some(format!("  tags: {{{}}}", pairs.join(", ")))
}

fn insert_key(block: &mut Vec<String>, after: &str, line: String) {
    let at = block
        .iter()
        .position(|l| l.starts_with(after))
        .map_or(block.len(), |i| i + 1);
    block.insert(at, line);
}

/// One cluster's lines, from what its first node and its shared resources
/// show; `notes` gets what the spec cannot say.
#[allow(clippy::too_many_arguments)]
fn cluster_block(
    name: &str,
    g: &Group,
    seen: &Seen,
    target: Target,
    region: &str,
    catalog: &Catalog,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let (provider, cloud, sandbox) = (target, target.cloud, target.sandbox);
    let first = &g.instances[0];
    let o = &seen[&first.id];
    let text = |k: &str| o.attrs.get(k).and_then(Value::as_str).map(str::to_string);
    let itype = catalog
        .instance_type(cloud, &first.instance_type)
        .expect("checked above");
    let mut lines = vec![
        format!(
            "# imported by `gpuform import` from {provider} {region}: {}",
            g.ids()
        ),
        format!("{name}:"),
        format!(
            "  cloud: {}",
            if sandbox { "sandbox" } else { cloud.as_str() }
        ),
        format!("  region: {region}"),
    ];
    if let Some(z) = text(attr::ZONE).or_else(|| first.zone.clone()) {
        lines.push(format!("  zones: [{}]", quote(&z)));
    }
    lines.push(format!("  nodes: {}", g.instances.len()));
    lines.push(format!(
        "  gpu: {}",
        quote(&format!("{}:{}", itype.gpu_model, itype.gpu_count))
    ));
    let pricing = text(attr::PRICING).unwrap_or_else(|| "on-demand".to_string());
    let pricing = serde_json::from_value::<PricingModel>(Value::String(pricing.clone()))
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|_| {
            notes.push(format!(
                "cluster.{name}: the cloud reports pricing `{pricing}`, which the spec cannot say; written as on-demand"
            ));
            "on-demand".to_string()
        });
    lines.push(format!("  pricing: {pricing}"));
    if let Some(image) = text(attr::IMAGE) {
        lines.push(format!("  image: {}", quote(&image)));
    }
    if o.attrs.get(attr::RDMA).and_then(Value::as_bool) == Some(true) {
        lines.push("  fabric: rdma".to_string());
    }
    let root = o.attrs.get(attr::ROOT_GB).and_then(Value::as_u64);
    let data = g
        .volumes
        .first()
        .cloned()
        .flatten()
        .and_then(|v| seen.get(&v))
        .and_then(|v| v.attrs.get(attr::SIZE_GB))
        .and_then(Value::as_u64);
    let mut disk = Vec::new();
    if let Some(r) = root {
        disk.push(format!("root_gb: {r}"));
    }
    if let Some(d) = data {
        disk.push(format!("data_gb: {d}"));
    }
    if !disk.is_empty() {
        lines.push(format!("  disk: {{{}}}", disk.join(", ")));
    }
    if let Some(cidr) = seen
        .get(&g.network)
        .and_then(|n| n.attrs.get(attr::CIDR))
        .and_then(Value::as_str)
    {
        lines.push(format!("  cidr: {}", quote(cidr)));
    }
    let rules: Vec<String> = seen
        .get(&g.firewall)
        .and_then(|f| f.attrs.get(attr::INGRESS))
        .and_then(Value::as_array)
        .map(|rules| rules.iter().filter_map(spec_rule).collect())
        .unwrap_or_default();
    if !rules.is_empty() {
        lines.push("  ingress:".to_string());
        lines.extend(rules.iter().map(|r| format!("    - {r}")));
    }
    // The tags every node has alike; the others stay on their nodes.
    let tags_of = |i: &InventoryInstance| -> BTreeMap<String, String> {
        seen.get(&i.id).map(user_tags).unwrap_or_default()
    };
    let mut common = tags_of(first);
    for i in &g.instances[1..] {
        let t = tags_of(i);
        common.retain(|k, v| t.get(k) == Some(v));
    }
    lines.extend(tags_line(&common));
    lines
}

/// A firewall rule as `ingress:` writes it, when the spec can say it:
/// TCP or UDP ports from a CIDR.
fn spec_rule(r: &Value) -> Option<String> {
    let protocol = r.get("protocol")?.as_str()?;
    if protocol != "tcp" && protocol != "udp" {
        return None;
    }
    let from = r.get("from_port")?.as_u64()?;
    let to = r.get("to_port")?.as_u64()?;
    let cidr = r.get("cidr")?.as_str()?;
    if from == 0 || to > 65535 || from > to {
        return None;
    }
    let ports = if from == to {
        from.to_string()
    } else {
        format!("{from}-{to}")
    };
    Some(format!(
        "{{protocol: {protocol}, ports: {}, cidr: {}}}",
        quote(&ports),
        quote(cidr)
    ))
}

fn kept_note(
    address: &str,
    id: &str,
    key: &str,
    cloud: Option<&Value>,
    spec: Option<&Value>,
) -> String {
    let show = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "none".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    format!(
        "{address} ({id}): `{key}` is {} on the cloud where the spec says {}; kept as it is (gpuform leaves it alone until the spec asks for something else)",
        show(cloud),
        show(spec)
    )
}

/// Whether a provider error is missing or refused credentials.
pub fn is_credentials(e: &EngineError) -> Option<Cloud> {
    match e {
        EngineError::Provider { error, context } if error.kind == ErrorKind::Auth => Cloud::ALL
            .into_iter()
            .find(|c| context.contains(c.as_str())),
        _ => None,
    }
}
