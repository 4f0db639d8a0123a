//! Plan: the difference between what the spec asks for and what exists, as
//! an ordered list of actions with their cost. The JSON form of [`Plan`] is
//! the `--json` output and the saved-plan file; its shape is documented in
//! docs/plan-json.md and only grows (new fields), never changes meaning.

pub mod diff;
pub mod markdown;
pub mod render;
pub mod saved;

pub use diff::{diff, DiffOptions};

use crate::address::{Address, Target};
use gpuform_provider::{Attrs, ResourceKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const PLAN_FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Create,
    Update,
    Replace,
    Delete,
    NoOp,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Replace => "replace",
            Action::Delete => "delete",
            Action::NoOp => "no-op",
        }
    }
}

/// One resource's change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub address: Address,
    pub kind: ResourceKind,
    /// Provider key after the change (`aws`, `sandbox:aws`); for deletes, the current one.
    pub provider: Target,
    pub region: String,
    pub action: Action,
    /// Why, when it is not obvious: drift, a forcing attribute, a replaced dependency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Attributes whose change forces the replacement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replace_because: Vec<String>,
    /// The existing resource's id (update, replace, delete, no-op).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Provider and region of the existing resource, when a replace moves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_provider: Option<Target>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Attrs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Attrs>,
    /// Dependencies after the change: role → address.
    #[serde(default, skip_serializing_if = "gpuform_provider::Deps::is_empty")]
    pub deps: gpuform_provider::Deps,
    /// Dependencies of the existing resource (ordering its deletion).
    #[serde(default, skip_serializing_if = "gpuform_provider::Deps::is_empty")]
    pub old_deps: gpuform_provider::Deps,
    /// Idempotency token for the create (reused from an interrupted apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hourly_usd_before: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hourly_usd_after: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub create: usize,
    pub update: usize,
    pub replace: usize,
    pub delete: usize,
    pub no_op: usize,
}

impl Summary {
    pub fn has_changes(&self) -> bool {
        self.create + self.update + self.replace + self.delete > 0
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostSummary {
    pub hourly_usd_before: f64,
    pub hourly_usd_after: f64,
    pub hourly_usd_delta: f64,
    pub monthly_usd_before: f64,
    pub monthly_usd_after: f64,
    pub monthly_usd_delta: f64,
    /// Resources the catalog has no price for (counted as 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<Address>,
    /// Per cluster, before → after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ClusterCost>,
    /// Per bucket: its storage a month, from the spec's `size_gb` estimate
    /// (counted in the totals above, per hour as a month's share).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage: Vec<StorageCost>,
    /// The rate prices quoted in CNY were converted at.
    #[serde(default)]
    pub cny_per_usd: f64,
    /// Whether any price in this plan was quoted in CNY.
    #[serde(default)]
    pub prices_in_cny: bool,
    /// What this plan pays once, up front: the Capacity Blocks it buys
    /// (their nodes add nothing hourly). Not in the hourly totals.
    #[serde(default, skip_serializing_if = "is_zero_usd")]
    pub upfront_usd: f64,
}

fn is_zero_usd(n: &f64) -> bool {
    *n == 0.0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What one cluster's nodes cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterCost {
    pub cluster: String,
    pub nodes_before: usize,
    pub nodes_after: usize,
    /// Pricing model and instance type after the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    pub hourly_usd_before: f64,
    pub hourly_usd_after: f64,
    pub monthly_usd_before: f64,
    pub monthly_usd_after: f64,
    /// Nodes after the plan without a price (not in `hourly_usd_after`, so
    /// the cost after is unknown, never $0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_after: usize,
    /// Where the price after the plan comes from: `sourced as of …`,
    /// `assumed (…) as of …`, `override …` or `live YYYY-MM-DD for REGION`
    /// (the price cache of `gpuform prices refresh`; see `PriceBasis`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_basis: Option<String>,
}

/// What one bucket's storage costs a month: its estimated size times the
/// catalog's price per GB-month for its cloud, region and storage class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageCost {
    /// The bucket's address (`bucket.data`).
    pub bucket: Address,
    /// After the plan (`None` when it is destroyed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_gb: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_gb_month: Option<f64>,
    pub monthly_usd_before: f64,
    pub monthly_usd_after: f64,
    /// Where the price comes from (`sourced, as of …`), or why there is
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_basis: Option<String>,
    /// Why the bucket counts as $0: no size estimate, or no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpriced: Option<String>,
}

/// A cluster reading a bucket across regions or clouds: what each GB it
/// reads costs to move, billed by the bucket's cloud for its region.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DataTransfer {
    /// The cluster's name (`trainer`).
    pub cluster: String,
    /// Where the cluster runs after the plan, `cloud/region`.
    pub cluster_location: String,
    /// The bucket's address (`bucket.datasets`).
    pub bucket: Address,
    /// Where the bucket is, `cloud/region`.
    pub bucket_location: String,
    /// `inter-region` (same cloud) or `internet` (another cloud).
    pub kind: String,
    /// USD per GB, when the catalog has a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_gb: Option<f64>,
    /// The price as quoted (`0.50 CNY/GB`), when it is not in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quoted: Option<String>,
    /// Where the price comes from (`sourced, as of 2026`), or why there is
    /// none (`price unknown: …`).
    pub price_basis: String,
}

/// One account quota the plan's new instances count against, as the cloud
/// reported it at plan time (`quota ok` notes, and the error when it does
/// not fit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaFinding {
    /// The provider key (`aws`, `sandbox:aws`).
    pub provider: Target,
    pub region: String,
    /// Set for a cloud whose quotas are per zone (Tencent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    pub name: String,
    /// The cloud's quota code, where it has one (`L-417A185B`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub unit: gpuform_provider::QuotaUnit,
    /// What this plan's new instances need of it.
    pub need: u64,
    pub used: u64,
    /// `None`: no limit.
    pub limit: Option<u64>,
    /// How to raise it.
    pub raise: String,
    /// The clusters whose new nodes count against it.
    pub clusters: Vec<String>,
    pub fits: bool,
}

impl QuotaFinding {
    /// `P instances (L-417A185B) in us-east-1`: which quota, where.
    pub fn label(&self) -> String {
        format!(
            "{}{} in {}",
            self.name,
            self.code
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            self.zone.as_deref().unwrap_or(&self.region)
        )
    }

    /// `used 0 of 384`, or `used 12, no limit`.
    pub fn usage(&self) -> String {
        match self.limit {
            Some(l) => format!("used {} of {l}", self.used),
            None => format!("used {}, no limit", self.used),
        }
    }
}

/// The state a plan was made against: a saved plan applies only there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateRef {
    /// `None` when there was no state yet.
    pub lineage: Option<String>,
    pub serial: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format_version: u32,
    pub gpuform_version: String,
    pub project: String,
    pub state: StateRef,
    pub destroy: bool,
    pub changes: Vec<ResourceChange>,
    pub summary: Summary,
    pub cost: CostSummary,
    #[serde(default)]
    pub lockin: Vec<crate::resolve::LockIn>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Clusters reading a bucket in another region or on another cloud
    /// (`clusters.X.reads`), with the per-GB price of the data crossing
    /// (each also a warning line).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<DataTransfer>,
    /// The account quotas the instances this plan creates count against,
    /// read from the clouds at plan time (each also a `quota ok` note).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<QuotaFinding>,
    /// The state file the plan was made against (saved plans apply there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_path: Option<String>,
    /// That state's workspace, when not `default`: a saved plan's creates
    /// are tagged with it, as the spec's apply would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// API endpoint overrides from the spec, so a saved plan talks to the
    /// same endpoints it was made against.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, String>,
    /// Node bootstrap documents (placeholders unfilled) by their SHA-256,
    /// the `user_data_sha256` of the instances created or replaced; once
    /// each, however many nodes share one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub documents: BTreeMap<String, String>,
}

impl Plan {
    pub fn has_changes(&self) -> bool {
        self.summary.has_changes()
    }
}
