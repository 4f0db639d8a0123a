//! `gpuform audit`: what runs in some (cloud, region)s and what it costs,
//! from the clouds' inventories (every instance, unattached volume and
//! bucket the credentials see, not only gpuform's), the specs' states and
//! the catalog. A bucket's monthly cost is its reported size times the
//! catalog's storage price for its class (none when the size is not
//! reported).
//! Pure computation: [`crate::engine::audit`] gathers the inputs.
//!
//! Ownership comes from the tags: `gpuform:project` names the project; a
//! resource is *managed* when that project's state records its id (or an
//! interrupted create of that state will adopt it), *orphaned* when the
//! state is read and does not, *unknown* when no state of that project was
//! given or reachable (never a guess), *unmanaged* without the tag.
//!
//! Costs use the catalog's price for the instance's type, region and
//! pricing model, labelled with its basis (sourced / assumed / override)
//! and date. "This month" runs from 00:00 UTC on the 1st of the month of
//! `now` (the clock module's, which tests pin) to `now`.

use crate::address::{Address, Target};
use crate::clock::{format_instant, month_start, parse_instant};
use crate::market::breakeven::for_offering;
use crate::views::{self, right_align, usd};
use gpuform_catalog::{Catalog, PricingModel, HOURS_PER_MONTH};
use gpuform_provider::{Cloud, Inventory, InventoryInstance, RunState};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// What one region holds, as listed.
#[derive(Debug, Clone)]
pub struct RegionInventory {
    pub cloud: Cloud,
    /// The provider key it was listed with (`aws`, `sandbox:aws`).
    pub provider: Target,
    pub region: String,
    pub inventory: Inventory,
}

/// What a project's state says, when it could be read.
#[derive(Debug, Clone)]
pub enum StateView {
    /// The ids it records, and the addresses of its interrupted creates with
    /// its lineage (what the next refresh adopts).
    Known {
        lineage: String,
        ids: HashSet<String>,
        pending: HashSet<Address>,
    },
    /// Not reachable: why.
    Unreachable(String),
}

/// One cluster of a spec, as far as the findings need it.
#[derive(Debug, Clone)]
pub struct PoolView {
    pub cluster: String,
    /// Tagged `workload: inference` in the spec (the spec has no task field;
    /// this tag is how a pool says it serves inference).
    pub inference: bool,
    /// No data volume: nothing on the node outlives it, so spot's
    /// reclaims cost a restart, not data.
    pub stateless: bool,
    pub mig: bool,
}

/// A project known from a spec.
#[derive(Debug, Clone)]
pub struct ProjectView {
    pub state: StateView,
    pub max_monthly_usd: Option<f64>,
    pub max_hourly_usd: Option<f64>,
    pub pools: Vec<PoolView>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Owner {
    Managed,
    Orphaned,
    Unknown,
    Unmanaged,
}

impl Owner {
    pub fn as_str(self) -> &'static str {
        match self {
            Owner::Managed => "managed",
            Owner::Orphaned => "orphaned",
            Owner::Unknown => "unknown",
            Owner::Unmanaged => "unmanaged",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceRow {
    pub cloud: Cloud,
    pub region: String,
    pub zone: Option<String>,
    pub id: String,
    pub instance_type: String,
    pub gpu_model: Option<String>,
    pub gpu_count: Option<u32>,
    pub state: RunState,
    /// As the cloud says; `unknown` when it does not.
    pub pricing: String,
    pub launch_time: Option<String>,
    pub uptime_hours: Option<f64>,
    pub owner: Owner,
    pub project: Option<String>,
    pub address: Option<Address>,
    pub disk_gb: Option<u64>,
    /// Per hour at the current rate, from the catalog.
    pub hourly_usd: Option<f64>,
    /// `sourced 2024-12-30`, `assumed: source names no region 2024-…`.
    pub price_basis: Option<String>,
    /// Compute billed since the start of the month (running hours × rate).
    pub month_to_date_usd: Option<f64>,
    /// A month at the current rate (0 when stopped: compute is not billed).
    pub monthly_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VolumeRow {
    pub cloud: Cloud,
    pub region: String,
    pub zone: Option<String>,
    pub id: String,
    pub size_gb: Option<u64>,
    pub volume_type: Option<gpuform_provider::ObservedVolumeType>,
    pub owner: Owner,
    pub project: Option<String>,
}

/// A bucket, of any owner, with its monthly storage where its size is
/// reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BucketRow {
    pub cloud: Cloud,
    pub region: String,
    pub id: String,
    pub name: String,
    /// `standard`, `infrequent` or `archive`.
    pub storage_class: String,
    /// As the cloud reports them (`None`: not reported).
    pub object_count: Option<u64>,
    /// GB stored (2^30 bytes, as storage is billed), when reported.
    pub size_gb: Option<f64>,
    pub owner: Owner,
    pub project: Option<String>,
    pub address: Option<Address>,
    /// A month of its storage at the catalog's price for its class.
    pub monthly_usd: Option<f64>,
    /// `sourced, as of 2026-03`, or why there is no cost.
    pub price_basis: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    StoppedPayingForDisks,
    UnattachedVolume,
    Orphaned,
    PastReservedBreakEven,
    MigConsolidation,
    SpotCandidate,
    OverBudget,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::StoppedPayingForDisks => "stopped-paying-for-disks",
            FindingKind::UnattachedVolume => "unattached-volume",
            FindingKind::Orphaned => "orphaned",
            FindingKind::PastReservedBreakEven => "past-reserved-break-even",
            FindingKind::MigConsolidation => "mig-consolidation",
            FindingKind::SpotCandidate => "spot-candidate",
            FindingKind::OverBudget => "over-budget",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// An id, or `project/cluster`, or a project.
    pub subject: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    /// `now` as RFC 3339 (UTC).
    pub now: String,
    pub regions: Vec<String>,
    pub instances: Vec<InstanceRow>,
    pub volumes: Vec<VolumeRow>,
    pub buckets: Vec<BucketRow>,
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

/// The pricing model a cloud's word means in the catalog.
fn catalog_model(pricing: &str) -> Option<PricingModel> {
    match pricing {
        "reserved" | "subscription" => Some(PricingModel::Reserved1y),
        p => PricingModel::parse(p),
    }
}

/// The smallest pool that counts as "small" for MIG consolidation: at most
/// one 8-GPU node's worth of GPUs.
pub const SMALL_POOL_GPUS: u32 = 8;

/// Builds the report.
pub fn audit(
    catalog: &Catalog,
    cny_per_usd: f64,
    now: i64,
    regions: &[RegionInventory],
    projects: &BTreeMap<String, ProjectView>,
) -> AuditReport {
    let month0 = month_start(now);
    let mut report = AuditReport {
        now: format_instant(now),
        regions: regions
            .iter()
            .map(|r| format!("{} {}", r.provider, r.region))
            .collect(),
        instances: Vec::new(),
        volumes: Vec::new(),
        buckets: Vec::new(),
        findings: Vec::new(),
        notes: Vec::new(),
    };
    let owner_of =
        |project: Option<&str>, id: &str, address: Option<&str>, lineage: Option<&str>| {
            let Some(p) = project else {
                return Owner::Unmanaged;
            };
            match projects.get(p).map(|v| &v.state) {
                Some(StateView::Known {
                    lineage: l,
                    ids,
                    pending,
                }) => {
                    let adoptable =
                        lineage == Some(l.as_str()) && address.is_some_and(|a| pending.contains(a));
                    if ids.contains(id) || adoptable {
                        Owner::Managed
                    } else {
                        Owner::Orphaned
                    }
                }
                _ => Owner::Unknown,
            }
        };
    let mut import_notes = Vec::new();
    for r in regions {
        let mut unmanaged = Vec::new();
        for i in &r.inventory.instances {
            let row = instance_row(catalog, cny_per_usd, now, month0, r, i, &owner_of);
            if row.owner == Owner::Unmanaged {
                unmanaged.push(row.id.clone());
            }
            report.instances.push(row);
        }
        if !unmanaged.is_empty() {
            import_notes.push(import_note(r.provider, &r.region, &unmanaged));
        }
        for v in &r.inventory.volumes {
            let own = OwnershipView::of(&v.tags);
            let owner = owner_of(own.project, &v.id, own.address, own.lineage);
            report.volumes.push(VolumeRow {
                cloud: r.cloud,
                region: r.region.clone(),
                zone: v.zone.clone(),
                id: v.id.clone(),
                size_gb: v.size_gb,
                volume_type: v.volume_type.clone(),
                owner,
                project: own.project.map(str::to_string),
            });
        }
        let mut unmanaged_buckets = Vec::new();
        for b in &r.inventory.buckets {
            let row = bucket_row(cny_per_usd, r, b, &owner_of);
            if row.owner == Owner::Unmanaged {
                unmanaged_buckets.push(b.name.clone());
            }
            report.buckets.push(row);
        }
        if !unmanaged_buckets.is_empty() {
            import_notes.push(import_buckets_note(
                r.provider,
                &r.region,
                &unmanaged_buckets,
            ));
        }
    }
    for (p, v) in projects {
        if let StateView::Unreachable(why) = &v.state {
            report.notes.push(format!(
                "project {p}: state not read ({why}); its resources show as `unknown`"
            ));
        }
    }
    report.notes.extend(import_notes);
    report.findings = findings(catalog, cny_per_usd, &report, projects);
    report
}

/// Where the audit points for unmanaged buckets: `gpuform import --bucket`.
fn import_buckets_note(provider: Target, region: &str, names: &[String]) -> String {
    let cloud = provider.cloud_flag();
    let shown: Vec<String> = names
        .iter()
        .take(3)
        .map(|n| format!("--bucket {n}"))
        .collect();
    format!(
        "{} unmanaged bucket(s) in {provider} {region}: `gpuform import SPEC --cloud {cloud} --region {region} {}{}` adopts them into a spec and its state, data and all",
        names.len(),
        shown.join(" "),
        if names.len() > 3 { " …" } else { "" }
    )
}

/// Where the audit points for unmanaged instances: `gpuform import` adopts
/// them into a spec without stopping them.
fn import_note(provider: Target, region: &str, ids: &[String]) -> String {
    let cloud = provider.cloud_flag();
    let shown: Vec<String> = ids.iter().take(3).map(|i| format!("--id {i}")).collect();
    format!(
        "{} unmanaged instance(s) in {provider} {region}: `gpuform import SPEC --cloud {cloud} --region {region} {}{}` (or `--from-audit` for all) adopts them into a spec and its state without stopping them",
        ids.len(),
        shown.join(" "),
        if ids.len() > 3 { " …" } else { "" }
    )
}

/// The ownership tags of a resource, each as far as present.
struct OwnershipView<'a> {
    project: Option<&'a str>,
    address: Option<&'a str>,
    lineage: Option<&'a str>,
}

impl<'a> OwnershipView<'a> {
    fn of(tags: &'a BTreeMap<String, String>) -> OwnershipView<'a> {
        let get = |k: &str| tags.get(k).map(String::as_str);
        OwnershipView {
            project: get(gpuform_provider::OwnershipTags::PROJECT),
            address: get(gpuform_provider::OwnershipTags::ADDRESS),
            lineage: get(gpuform_provider::OwnershipTags::LINEAGE),
        }
    }
}

/// Who owns a resource, from its project, id, address and lineage tags.
type OwnerOf<'a> = dyn Fn(Option<&str>, &str, Option<&str>, Option<&str>) -> Owner + 'a;

fn instance_row(
    catalog: &Catalog,
    cny_per_usd: f64,
    now: i64,
    month0: i64,
    r: &RegionInventory,
    i: &InventoryInstance,
    owner_of: &OwnerOf<'_>,
) -> InstanceRow {
    let own = OwnershipView::of(&i.tags);
    let owner = owner_of(own.project, &i.id, own.address, own.lineage);
    let itype = catalog.instance_type(r.cloud, &i.instance_type);
    let pricing = i.pricing.clone().unwrap_or_else(|| "unknown".into());
    // The price of its model; an instance whose model the cloud does not
    // report is priced on-demand (labelled so in `price_basis`).
    let model = i
        .pricing
        .as_deref()
        .and_then(catalog_model)
        .unwrap_or(PricingModel::OnDemand);
    let price = catalog
        .offering(r.cloud, &r.region, &i.instance_type)
        .and_then(|o| o.prices.get(&model));
    let hourly = price.map(|p| p.hourly_usd(cny_per_usd));
    let basis = price.map(|p| {
        let assumed_model = if i.pricing.is_none() {
            " (pricing model not reported: on-demand price)"
        } else {
            ""
        };
        format!("{} {}{assumed_model}", p.basis.label(), p.as_of)
    });
    let launched = i.launch_time.as_deref().and_then(parse_instant);
    let uptime = launched
        .filter(|l| *l <= now)
        .map(|l| (now - l) as f64 / 3600.0);
    let running = i.state == RunState::Running;
    let mtd_hours = launched.map(|l| (now - l.max(month0)).max(0) as f64 / 3600.0);
    let (mtd, monthly) = match (running, hourly) {
        (true, Some(h)) => (mtd_hours.map(|x| x * h), Some(h * HOURS_PER_MONTH)),
        // Stopped: compute is not billed now, and when it stopped is not
        // in the listing, so what it cost this month is not known.
        (false, Some(_)) => (None, Some(0.0)),
        (_, None) => (None, None),
    };
    InstanceRow {
        cloud: r.cloud,
        region: r.region.clone(),
        zone: i.zone.clone(),
        id: i.id.clone(),
        instance_type: i.instance_type.clone(),
        gpu_model: itype.map(|t| t.gpu_model.clone()),
        gpu_count: itype.map(|t| t.gpu_count),
        state: i.state,
        pricing,
        launch_time: i.launch_time.clone(),
        uptime_hours: uptime,
        owner,
        project: own.project.map(str::to_string),
        address: own.address.map(Address::from),
        disk_gb: i.disk_gb,
        hourly_usd: hourly,
        price_basis: basis,
        month_to_date_usd: mtd,
        monthly_usd: monthly,
    }
}

/// Bytes in a GB as storage is billed (S3's "GB-month" is 2^30 bytes).
const BYTES_PER_GB: f64 = (1u64 << 30) as f64;

fn bucket_row(
    cny_per_usd: f64,
    r: &RegionInventory,
    b: &gpuform_provider::InventoryBucket,
    owner_of: &OwnerOf<'_>,
) -> BucketRow {
    let own = OwnershipView::of(&b.tags);
    let owner = owner_of(own.project, &b.id, own.address, own.lineage);
    let size_gb = b.size_bytes.map(|bytes| bytes as f64 / BYTES_PER_GB);
    let price = gpuform_catalog::storage::StoragePrices::builtin().price(
        r.cloud,
        &r.region,
        &b.storage_class,
    );
    let (monthly_usd, price_basis) = match (size_gb, price) {
        (Some(gb), Some(p)) => (
            Some(gb * p.usd(cny_per_usd)),
            format!("{}, as of {}", p.basis.label(), p.as_of),
        ),
        (None, _) => (None, "size not reported".to_string()),
        (Some(_), None) => (
            None,
            format!(
                "no {} storage price for {} {} in the catalog",
                b.storage_class, r.cloud, r.region
            ),
        ),
    };
    BucketRow {
        cloud: r.cloud,
        region: r.region.clone(),
        id: b.id.clone(),
        name: b.name.clone(),
        storage_class: b.storage_class.clone(),
        object_count: b.object_count,
        size_gb,
        owner,
        project: own.project.map(str::to_string),
        address: own.address.map(Address::from),
        monthly_usd,
        price_basis,
    }
}

fn findings(
    catalog: &Catalog,
    cny_per_usd: f64,
    report: &AuditReport,
    projects: &BTreeMap<String, ProjectView>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for i in &report.instances {
        instance_findings(catalog, cny_per_usd, report, i, &mut out);
    }
    storage_findings(report, &mut out);
    for (project, view) in projects {
        pool_findings(catalog, cny_per_usd, report, project, view, &mut out);
        budget_findings(report, project, view, &mut out);
    }
    out.sort_by(|a, b| (a.kind, &a.subject).cmp(&(b.kind, &b.subject)));
    out
}

/// One instance: stopped but billed for disks, orphaned, or on-demand past
/// the month's break-even of a reservation.
fn instance_findings(
    catalog: &Catalog,
    cny_per_usd: f64,
    report: &AuditReport,
    i: &InstanceRow,
    out: &mut Vec<Finding>,
) {
    let month0 = parse_instant(&report.now).map(month_start);
    let now = parse_instant(&report.now);
    if i.state == RunState::Stopped {
        let disks = i
            .disk_gb
            .map_or("its disks".to_string(), |gb| format!("{gb} GB of disks"));
        out.push(Finding {
            kind: FindingKind::StoppedPayingForDisks,
            subject: i.id.clone(),
            message: format!(
                "{} ({}, {} {}) is stopped: its compute is not billed, but {disks} still are; delete it if it is not coming back",
                i.id, i.instance_type, i.cloud, i.region
            ),
        });
    }
    if i.owner == Owner::Orphaned {
        out.push(Finding {
            kind: FindingKind::Orphaned,
            subject: i.id.clone(),
            message: format!(
                "{} carries project {}'s tags ({}) but its state does not record it: `gpuform gc SPEC` deletes it (with `--other-states` when another state made it)",
                i.id,
                i.project.as_deref().unwrap_or("?"),
                i.address.as_deref().unwrap_or("no address"),
            ),
        });
    }
    // On-demand past the month's break-even of a reservation.
    if i.state == RunState::Running && i.pricing == PricingModel::OnDemand.as_str() {
        let (Some(l), Some(m0), Some(n)) = (
            i.launch_time.as_deref().and_then(parse_instant),
            month0,
            now,
        ) else {
            return;
        };
        let hours = (n - l.max(m0)).max(0) as f64 / 3600.0;
        let Some(o) = catalog.offering(i.cloud, &i.region, &i.instance_type) else {
            return;
        };
        let Some(row) = for_offering(catalog, o, hours, cny_per_usd) else {
            return;
        };
        if let Some(be) = row
            .break_even
            .iter()
            .filter(|b| b.utilisation < 1.0)
            .min_by(|a, b| a.hours_per_month.total_cmp(&b.hours_per_month))
        {
            if hours >= be.hours_per_month {
                out.push(Finding {
                    kind: FindingKind::PastReservedBreakEven,
                    subject: i.id.clone(),
                    message: format!(
                        "{} has run on-demand {hours:.0} h this month, past the {:.0} h a month above which {} is cheaper ({:.0}% utilisation); if it keeps running, reserve it",
                        i.id,
                        be.hours_per_month,
                        be.pricing,
                        be.utilisation * 100.0
                    ),
                });
            }
        }
    }
}

/// Volumes attached to nothing; buckets no state records.
fn storage_findings(report: &AuditReport, out: &mut Vec<Finding>) {
    for v in &report.volumes {
        out.push(Finding {
            kind: FindingKind::UnattachedVolume,
            subject: v.id.clone(),
            message: format!(
                "volume {} ({} GB{}, {} {}) is attached to nothing and still billed{}",
                v.id,
                v.size_gb.map_or("?".into(), |g| g.to_string()),
                v.volume_type
                    .as_ref()
                    .map_or(String::new(), |t| format!(" {t}")),
                v.cloud,
                v.region,
                match v.owner {
                    Owner::Orphaned =>
                        "; its project's state does not record it: `gpuform gc SPEC` deletes it (with `--other-states` when another state made it)",
                    Owner::Managed => "; its state records it: detached outside gpuform?",
                    _ => "",
                }
            ),
        });
    }
    for b in report.buckets.iter().filter(|b| b.owner == Owner::Orphaned) {
        out.push(Finding {
            kind: FindingKind::Orphaned,
            subject: b.id.clone(),
            message: format!(
                "bucket {} ({} {}{}) carries project {}'s tags ({}) but its state does not record it: `gpuform gc SPEC` deletes it (refused while it holds objects unless `force_destroy`)",
                b.name,
                b.cloud,
                b.region,
                b.object_count
                    .map_or(String::new(), |n| format!(", {n} object(s)")),
                b.project.as_deref().unwrap_or("?"),
                b.address.as_deref().unwrap_or("no address"),
            ),
        });
    }
}

/// A project over the budget its spec sets, a month or an hour.
fn budget_findings(
    report: &AuditReport,
    project: &String,
    view: &ProjectView,
    out: &mut Vec<Finding>,
) {
    let mine: Vec<&InstanceRow> = report
        .instances
        .iter()
        .filter(|i| i.project.as_deref() == Some(project.as_str()))
        .collect();
    // Compute a month, plus the storage of the project's buckets.
    let monthly: f64 = mine.iter().filter_map(|i| i.monthly_usd).sum::<f64>()
        + report
            .buckets
            .iter()
            .filter(|b| b.project.as_deref() == Some(project.as_str()))
            .filter_map(|b| b.monthly_usd)
            .sum::<f64>();
    let hourly: f64 = mine
        .iter()
        .filter(|i| i.state == RunState::Running)
        .filter_map(|i| i.hourly_usd)
        .sum();
    let unpriced = mine
        .iter()
        .filter(|i| i.state == RunState::Running && i.hourly_usd.is_none())
        .count();
    let unpriced_note = if unpriced > 0 {
        format!(" ({unpriced} running instance(s) without a catalog price not counted)")
    } else {
        String::new()
    };
    if let Some(max) = view.max_monthly_usd.filter(|m| monthly > *m) {
        out.push(Finding {
            kind: FindingKind::OverBudget,
            subject: project.clone(),
            message: format!(
                "project {project} runs at {} a month, over its budget of {} a month{unpriced_note}",
                usd(monthly),
                usd(max)
            ),
        });
    } else if let Some(max) = view.max_hourly_usd.filter(|m| hourly > *m) {
        out.push(Finding {
            kind: FindingKind::OverBudget,
            subject: project.clone(),
            message: format!(
                "project {project} runs at {} an hour, over its budget of {} an hour{unpriced_note}",
                usd(hourly),
                usd(max)
            ),
        });
    }
}

/// MIG consolidation of small inference pools and spot for stateless ones.
fn pool_findings(
    catalog: &Catalog,
    cny_per_usd: f64,
    report: &AuditReport,
    project: &str,
    view: &ProjectView,
    out: &mut Vec<Finding>,
) {
    for pool in &view.pools {
        let nodes: Vec<&InstanceRow> = report
            .instances
            .iter()
            .filter(|i| i.project.as_deref() == Some(project) && i.state == RunState::Running)
            .filter(|i| {
                i.address
                    .as_ref()
                    .is_some_and(|a| a.cluster() == Some(pool.cluster.as_str()))
            })
            .collect();
        if nodes.is_empty() {
            continue;
        }
        let subject = format!("{project}/{}", pool.cluster);
        if pool.inference && !pool.mig {
            let models: std::collections::BTreeSet<&str> = nodes
                .iter()
                .filter_map(|i| i.gpu_model.as_deref())
                .collect();
            let gpus: u32 = nodes.iter().filter_map(|i| i.gpu_count).sum();
            let best = match models.iter().next() {
                Some(m) if models.len() == 1 => catalog
                    .gpu(m)
                    .ok()
                    .and_then(|g| g.mig_profiles.iter().max_by_key(|p| p.per_gpu))
                    .map(|p| (m.to_string(), p.clone())),
                _ => None,
            };
            if let Some((model, profile)) = best {
                let need = gpus.div_ceil(profile.per_gpu.max(1));
                if (2..=SMALL_POOL_GPUS).contains(&gpus) && need < gpus {
                    out.push(Finding {
                        kind: FindingKind::MigConsolidation,
                        subject: subject.clone(),
                        message: format!(
                            "inference pool {subject} runs {gpus} whole {model} GPU(s); with MIG {} ({} per GPU) {gpus} replicas fit on {need} GPU(s), if each fits in one slice (`mig: {}` in the spec)",
                            profile.name, profile.per_gpu, profile.name
                        ),
                    });
                }
            }
        }
        let on_demand: Vec<&&InstanceRow> = nodes
            .iter()
            .filter(|i| i.pricing == PricingModel::OnDemand.as_str())
            .collect();
        if pool.stateless && !on_demand.is_empty() {
            let saving: Option<f64> = on_demand
                .iter()
                .map(|i| {
                    let o = catalog.offering(i.cloud, &i.region, &i.instance_type)?;
                    let od = o
                        .prices
                        .get(&PricingModel::OnDemand)?
                        .hourly_usd(cny_per_usd);
                    let spot = o.prices.get(&PricingModel::Spot)?.hourly_usd(cny_per_usd);
                    Some((od - spot) * HOURS_PER_MONTH)
                })
                .sum();
            out.push(Finding {
                kind: FindingKind::SpotCandidate,
                subject,
                message: format!(
                    "pool {project}/{} is stateless (no data volume) and runs {} node(s) on-demand: spot{} (restarts after a reclaim cost no data)",
                    pool.cluster,
                    on_demand.len(),
                    saving.map_or(String::new(), |s| format!(
                        " would save about {} a month at catalog prices",
                        usd(s)
                    ))
                ),
            });
        }
    }
}

fn opt_usd(v: Option<f64>) -> String {
    v.map_or("-".into(), usd)
}

fn uptime(h: Option<f64>) -> String {
    match h {
        None => "-".into(),
        Some(h) if h >= 48.0 => format!("{:.1} d", h / 24.0),
        Some(h) => format!("{h:.1} h"),
    }
}

fn instance_cells(i: &InstanceRow) -> Vec<String> {
    vec![
        format!("{} {}", i.cloud, i.region),
        i.id.clone(),
        i.instance_type.clone(),
        match (&i.gpu_model, i.gpu_count) {
            (Some(m), Some(n)) => format!("{n}× {m}"),
            _ => "-".into(),
        },
        i.state.as_str().into(),
        i.pricing.clone(),
        i.launch_time.clone().unwrap_or_else(|| "-".into()),
        uptime(i.uptime_hours),
        match (&i.project, i.owner) {
            (Some(p), o) => format!("{} ({p})", o.as_str()),
            (None, o) => o.as_str().into(),
        },
        opt_usd(i.month_to_date_usd),
        opt_usd(i.monthly_usd),
        i.price_basis
            .clone()
            .unwrap_or_else(|| "no catalog price".into()),
    ]
}

const INSTANCE_HEADER: [&str; 12] = [
    "where",
    "instance",
    "type",
    "GPU",
    "state",
    "pricing",
    "launched",
    "uptime",
    "owner",
    "this month",
    "per month",
    "price",
];

/// The report as text tables.
pub fn render_table(r: &AuditReport) -> String {
    let mut s = format!("Audit at {} of {}\n\n", r.now, r.regions.join(", "));
    let mut t = views::table(&INSTANCE_HEADER, false);
    for i in &r.instances {
        t.add_row(instance_cells(i));
    }
    right_align(&mut t, &[7, 9, 10]);
    s.push_str(&format!("Instances ({}):\n{t}\n", r.instances.len()));
    if !r.volumes.is_empty() {
        let mut t = views::table(&["where", "volume", "size", "type", "owner"], false);
        for v in &r.volumes {
            t.add_row(volume_cells(v));
        }
        s.push_str(&format!(
            "\nUnattached volumes ({}):\n{t}\n",
            r.volumes.len()
        ));
    }
    if !r.buckets.is_empty() {
        let mut t = views::table(&BUCKET_HEADER, false);
        for b in &r.buckets {
            t.add_row(bucket_cells(b));
        }
        right_align(&mut t, &[3, 4, 6]);
        s.push_str(&format!("\nBuckets ({}):\n{t}\n", r.buckets.len()));
    }
    s.push_str(&format!("\nFindings ({}):\n", r.findings.len()));
    for f in &r.findings {
        s.push_str(&format!("  [{}] {}\n", f.kind.as_str(), f.message));
    }
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

const BUCKET_HEADER: [&str; 8] = [
    "where",
    "bucket",
    "class",
    "objects",
    "size",
    "owner",
    "per month",
    "price",
];

fn bucket_cells(b: &BucketRow) -> Vec<String> {
    vec![
        format!("{} {}", b.cloud, b.region),
        b.name.clone(),
        b.storage_class.clone(),
        b.object_count.map_or("-".into(), |n| n.to_string()),
        b.size_gb.map_or("-".into(), |g| format!("{g:.1} GB")),
        match &b.project {
            Some(p) => format!("{} ({p})", b.owner.as_str()),
            None => b.owner.as_str().into(),
        },
        opt_usd(b.monthly_usd),
        b.price_basis.clone(),
    ]
}

fn volume_cells(v: &VolumeRow) -> Vec<String> {
    vec![
        format!("{} {}", v.cloud, v.region),
        v.id.clone(),
        v.size_gb.map_or("-".into(), |g| format!("{g} GB")),
        v.volume_type
            .as_ref()
            .map_or_else(|| "-".into(), ToString::to_string),
        match &v.project {
            Some(p) => format!("{} ({p})", v.owner.as_str()),
            None => v.owner.as_str().into(),
        },
    ]
}

/// The report as markdown (for a report or an issue).
pub fn render_markdown(r: &AuditReport) -> String {
    fn row(cells: &[String]) -> String {
        format!(
            "| {} |\n",
            cells
                .iter()
                .map(|c| c.replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | ")
        )
    }
    let mut s = format!(
        "## gpuform audit\n\nAt {} of {}.\n\n",
        r.now,
        r.regions.join(", ")
    );
    s.push_str(&format!("### Instances ({})\n\n", r.instances.len()));
    s.push_str(&row(&INSTANCE_HEADER.map(String::from)));
    s.push_str(&format!("|{}\n", " --- |".repeat(INSTANCE_HEADER.len())));
    for i in &r.instances {
        s.push_str(&row(&instance_cells(i)));
    }
    if !r.volumes.is_empty() {
        s.push_str(&format!(
            "\n### Unattached volumes ({})\n\n",
            r.volumes.len()
        ));
        s.push_str("| where | volume | size | type | owner |\n| --- | --- | --- | --- | --- |\n");
        for v in &r.volumes {
            s.push_str(&row(&volume_cells(v)));
        }
    }
    if !r.buckets.is_empty() {
        s.push_str(&format!("\n### Buckets ({})\n\n", r.buckets.len()));
        s.push_str(&row(&BUCKET_HEADER.map(String::from)));
        s.push_str(&format!("|{}\n", " --- |".repeat(BUCKET_HEADER.len())));
        for b in &r.buckets {
            s.push_str(&row(&bucket_cells(b)));
        }
    }
    s.push_str(&format!("\n### Findings ({})\n\n", r.findings.len()));
    for f in &r.findings {
        s.push_str(&format!("- **{}**: {}\n", f.kind.as_str(), f.message));
    }
    for n in &r.notes {
        s.push_str(&format!("\n> note: {n}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_without_gpuform_tags_is_unmanaged_and_priced_in_its_currency() {
        let bucket = |name: &str, tags: &[(&str, &str)], size: Option<u64>| {
            gpuform_provider::InventoryBucket {
                id: name.into(),
                name: name.into(),
                region: "cn-hangzhou".into(),
                storage_class: "standard".into(),
                object_count: Some(7),
                size_bytes: size,
                tags: tags
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }
        };
        let inventory = Inventory {
            buckets: vec![
                bucket("theirs", &[("team", "web")], Some(720 << 30)),
                bucket(
                    "ours",
                    &[(gpuform_provider::OwnershipTags::PROJECT, "lab")],
                    None,
                ),
            ],
            ..Inventory::default()
        };
        let regions = [RegionInventory {
            cloud: Cloud::Alibaba,
            provider: Target::real(Cloud::Alibaba),
            region: "cn-hangzhou".into(),
            inventory,
        }];
        let projects = BTreeMap::from([(
            "lab".to_string(),
            ProjectView {
                state: StateView::Known {
                    lineage: "l".into(),
                    ids: HashSet::new(),
                    pending: HashSet::new(),
                },
                max_monthly_usd: None,
                max_hourly_usd: None,
                pools: Vec::new(),
            },
        )]);
        let r = audit(Catalog::builtin(), 7.2, 0, &regions, &projects);
        let theirs = &r.buckets[0];
        assert_eq!(
            (theirs.owner, theirs.project.as_deref()),
            (Owner::Unmanaged, None)
        );
        // 720 GB of OSS Standard at 0.12 CNY (region-less: assumed), at 7.2.
        assert!((theirs.monthly_usd.unwrap() - 12.0).abs() < 1e-9);
        assert!(
            theirs.price_basis.starts_with("assumed"),
            "{}",
            theirs.price_basis
        );
        let ours = &r.buckets[1];
        assert_eq!(ours.owner, Owner::Orphaned);
        assert_eq!(ours.monthly_usd, None);
        // Only the orphan is a finding; an unmanaged bucket is someone else's.
        let kinds: Vec<(FindingKind, &str)> = r
            .findings
            .iter()
            .map(|f| (f.kind, f.subject.as_str()))
            .collect();
        assert_eq!(kinds, vec![(FindingKind::Orphaned, "ours")]);
        assert!(render_table(&r).contains("unmanaged"));
    }
}
