//! The GPU catalog: the clouds gpuform knows, GPU models, instance types per
//! cloud, regions and zones, and prices with their source and date; plus the
//! date helpers that read a price's age, and the hours-per-month convention
//! every monthly figure uses. Data files live under `data/` in this crate and
//! are embedded in the binary.
//!
//! This crate is the lowest layer: data about clouds. It depends on no other
//! gpuform crate; the provider interface (`gpuform-provider`) and the engine
//! import [`Cloud`] and the catalog from here.
//!
//! Layout:
//! - `data/gpus.csv`: GPU models, aliases, MIG profiles.
//! - `data/<cloud>/instance_types.csv`: specifications.
//! - `data/<cloud>/regions.csv`: regions and their zones.
//! - `data/<cloud>/availability.csv`: which region offers which
//!   family or instance type (rows whose source starts with `assumed` are
//!   not backed by a document).
//! - `data/<cloud>/prices.csv`: one price per row, each with its
//!   source and `as_of` date; region `*` means "the source states no region".
//! - `subscriptions.csv` (monthly prices) and `notes.csv` (caveats).
//! - `data/mig_profiles.csv`, `data/aws/instance_store.csv`: what a node
//!   sets up at boot (MIG slice budgets, local NVMe); see [`node`].
//! - `data/<cloud>/README.md`: where each cloud's rows come from.
//!
//! Empty cells mean unknown; the loader never fills them in.

mod billing;
pub mod cloud;
pub mod date;
pub mod discovered;
pub mod fsio;
pub mod live;
mod load;
pub mod node;
mod overrides;
mod query;
pub mod regional;
mod sources;
pub mod storage;
#[cfg(test)]
mod tests;
pub mod transfer;
pub mod volume;

pub use billing::{billing, Billing};
pub use cloud::Cloud;
pub use date::{parse_as_of, price_age, Day, PriceAge, HOURS_PER_MONTH};
pub use discovered::{DiscoveredOffering, DiscoveredRegion, SkippedType};
pub use live::{LiveEntry, LivePrices, LiveQuote, QuoteTerm};
pub use load::CatalogError;
pub use query::{Match, OfferQuery, DEFAULT_CNY_PER_USD};
pub use sources::{CatalogSources, CloudSources, Source};

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PricingModel {
    OnDemand,
    Spot,
    #[serde(rename = "reserved-1y")]
    Reserved1y,
    #[serde(rename = "reserved-3y")]
    Reserved3y,
}

impl PricingModel {
    pub const ALL: [PricingModel; 4] = [
        PricingModel::OnDemand,
        PricingModel::Spot,
        PricingModel::Reserved1y,
        PricingModel::Reserved3y,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            PricingModel::OnDemand => "on-demand",
            PricingModel::Spot => "spot",
            PricingModel::Reserved1y => "reserved-1y",
            PricingModel::Reserved3y => "reserved-3y",
        }
    }

    /// Reads a model as specs, CSVs and the command line write it
    /// (`on-demand`, `spot`, `reserved-1y`, `reserved-3y`; any case).
    pub fn parse(text: &str) -> Option<PricingModel> {
        let text = text.trim();
        PricingModel::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(text))
    }

    /// The commitment in months (12 or 36) of a reserved model.
    pub fn commitment_months(self) -> Option<u32> {
        match self {
            PricingModel::Reserved1y => Some(12),
            PricingModel::Reserved3y => Some(36),
            PricingModel::OnDemand | PricingModel::Spot => None,
        }
    }
}

impl std::fmt::Display for PricingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interconnect {
    Nvlink,
    Pcie,
}

/// The RDMA fabric an instance type supports, by its cloud's name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RdmaKind {
    Efa,
    Erdma,
    Roce,
    Infiniband,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Currency {
    USD,
    CNY,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigProfile {
    /// e.g. `3g.40gb`
    pub name: String,
    /// How many fit on one GPU.
    pub per_gpu: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuModel {
    /// Canonical name, e.g. `A100-80GB`, `H100-80GB-SXM`.
    pub name: String,
    /// Other names users write (`H100`, `A100`...), matched case-insensitively.
    pub aliases: Vec<String>,
    pub vendor: String,
    pub mem_gib: f64,
    pub nvlink: bool,
    pub mig_profiles: Vec<MigProfile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceType {
    pub cloud: Cloud,
    pub name: String,
    /// Canonical GPU model name (see [`GpuModel::name`]).
    pub gpu_model: String,
    pub gpu_count: u32,
    pub gpu_mem_gib: f64,
    pub vcpus: u32,
    pub ram_gib: f64,
    /// `None` when no source says.
    pub interconnect: Option<Interconnect>,
    /// `None` when the type has no RDMA fabric or no source says.
    pub rdma: Option<RdmaKind>,
    pub network_gbps: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Per instance-hour, in `currency`.
    pub hourly: f64,
    pub currency: Currency,
    pub source: String,
    pub as_of: String,
    /// How far the source backs this price for this region.
    #[serde(default)]
    pub basis: PriceBasis,
}

/// How far a price's source backs it where it is used: shown next to every
/// price (offers, plan cost lines, breakeven) so that an assumption is never
/// read as a quote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriceBasis {
    /// The source quotes this price for this region (or a region group that
    /// names it).
    #[default]
    Sourced,
    /// The source states no region ("mainland China", page default); the
    /// price is assumed to hold in every region that offers the type.
    Assumed,
    /// From the user's `--prices FILE`.
    Override,
    /// Quoted by the cloud's own price API for this region (`gpuform prices
    /// refresh`); the price's `as_of` is the day it was quoted.
    Live,
}

impl PriceBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            PriceBasis::Sourced => "sourced",
            PriceBasis::Assumed => "assumed",
            PriceBasis::Override => "override",
            PriceBasis::Live => "live",
        }
    }
    /// The label shown next to a price, e.g. `sourced 2024-12-30`,
    /// `assumed (source names no region)`.
    pub fn label(self) -> &'static str {
        match self {
            PriceBasis::Sourced => "sourced",
            PriceBasis::Assumed => "assumed: source names no region",
            PriceBasis::Override => "override",
            PriceBasis::Live => "live: quoted by the cloud's price API for this region",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Region {
    pub cloud: Cloud,
    pub name: String,
    /// Zones in the cloud's own order.
    pub zones: Vec<String>,
}

/// An instance type offered in a region, with what it costs there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Offering {
    pub cloud: Cloud,
    pub region: String,
    pub instance_type: String,
    pub prices: BTreeMap<PricingModel, Price>,
}

impl Price {
    /// This price per instance-hour in USD, converting CNY at `cny_per_usd`
    /// (CNY per one USD, e.g. [`DEFAULT_CNY_PER_USD`]).
    pub fn hourly_usd(&self, cny_per_usd: f64) -> f64 {
        match self.currency {
            Currency::USD => self.hourly,
            Currency::CNY => self.hourly / cny_per_usd,
        }
    }
}

impl Currency {
    pub fn as_str(self) -> &'static str {
        match self {
            Currency::USD => "USD",
            Currency::CNY => "CNY",
        }
    }
}

impl Interconnect {
    pub fn as_str(self) -> &'static str {
        match self {
            Interconnect::Nvlink => "nvlink",
            Interconnect::Pcie => "pcie",
        }
    }
}

impl RdmaKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RdmaKind::Efa => "efa",
            RdmaKind::Erdma => "erdma",
            RdmaKind::Roce => "roce",
            RdmaKind::Infiniband => "infiniband",
        }
    }
}

/// The family part of an instance type name, by the cloud's naming rules:
/// `p4d.24xlarge` -> `p4d`, `ecs.gn7i-c8g1.2xlarge` -> `gn7i`,
/// `GN7.2XLARGE32` -> `GN7`, `p2s.2xlarge.8` -> `p2s`.
pub fn instance_family(cloud: Cloud, name: &str) -> &str {
    match cloud {
        Cloud::Alibaba => {
            let rest = name.strip_prefix("ecs.").unwrap_or(name);
            let end = rest.find(['-', '.']).unwrap_or(rest.len());
            &rest[..end]
        }
        Cloud::Aws | Cloud::Tencent | Cloud::Huawei => {
            let end = name.find('.').unwrap_or(name.len());
            &name[..end]
        }
    }
}

impl InstanceType {
    /// The instance family, e.g. `p4d` or `gn7i` (see [`instance_family`]).
    pub fn family(&self) -> &str {
        instance_family(self.cloud, &self.name)
    }
}

/// Facts about a GPU model that [`GpuModel`] does not carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuDetails {
    pub name: String,
    /// Dense (no sparsity) FP16 tensor TFLOPS; `None` when unknown.
    pub fp16_tflops_dense: Option<f64>,
    pub bf16_tflops_dense: Option<f64>,
    /// As the source states it (may name several variants), empty if unknown.
    pub tdp_w: String,
    /// The source's own words on NVLink / PCIe.
    pub interconnect_note: String,
    /// The source's own words on MIG.
    pub mig_note: String,
    pub source: String,
}

/// Where an offering's availability comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Availability {
    /// Zones the source names for this offering; `None` when it names none
    /// (any zone of the region may work, or none: try and see).
    pub zones: Option<Vec<String>>,
    pub source: String,
    /// True when no document backs the availability (source starts with `assumed`).
    pub assumed: bool,
    /// The day the cloud's API reported it (`gpuform catalog refresh`);
    /// `None` for the built-in data.
    #[serde(default)]
    pub discovered_on: Option<String>,
}

/// A subscription (monthly) price, which does not fit [`Price`]'s per-hour model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionPrice {
    pub cloud: Cloud,
    /// `None` when the source states no region.
    pub region: Option<String>,
    pub instance_type: String,
    pub months: u32,
    /// For the whole term, in `currency`.
    pub price: f64,
    pub currency: Currency,
    pub source: String,
    pub as_of: String,
    pub note: String,
    /// Quoted by the cloud's price API for `region` (the live price cache).
    #[serde(default)]
    pub live: bool,
}

impl SubscriptionPrice {
    /// The price for the whole term in USD, converting CNY at `cny_per_usd`.
    pub fn price_usd(&self, cny_per_usd: f64) -> f64 {
        match self.currency {
            Currency::USD => self.price,
            Currency::CNY => self.price / cny_per_usd,
        }
    }
    /// Sourced for this region, or assumed from a quote naming no region.
    pub fn basis(&self) -> PriceBasis {
        if self.live {
            PriceBasis::Live
        } else if self.region.is_some() {
            PriceBasis::Sourced
        } else {
            PriceBasis::Assumed
        }
    }
}

/// A caveat on some catalog rows (from the source's review flags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub cloud: Cloud,
    /// `None` = every region.
    pub region: Option<String>,
    /// An instance type name, `p6-*` (a prefix), or `None` = every type.
    pub instance_type: Option<String>,
    pub text: String,
}

impl Note {
    fn applies(&self, region: &str, instance_type: &str) -> bool {
        let region_ok = self.region.is_none() || self.region.as_deref() == Some(region);
        let type_ok = match self.instance_type.as_deref() {
            None => true,
            Some(p) => match p.strip_suffix('*') {
                Some(prefix) => instance_type.starts_with(prefix),
                None => p == instance_type,
            },
        };
        region_ok && type_ok
    }
}

/// Why a GPU name did not resolve to one model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuLookupError {
    #[error("GPU `{name}` is ambiguous: it may mean {}; write one of them", choices.join(" or "))]
    Ambiguous { name: String, choices: Vec<String> },
    #[error("unknown GPU `{name}`{}", if suggestions.is_empty() { String::new() } else { format!("; did you mean {}?", suggestions.join(", ")) })]
    Unknown {
        name: String,
        suggestions: Vec<String>,
    },
}

/// Lower-case, with spaces and underscores read as dashes: `a100 80gb` = `A100-80GB`.
pub(crate) fn normalize_gpu_name(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c == ' ' || c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

#[derive(Debug, Clone)]
pub(crate) struct OfferingInfo {
    pub availability: Availability,
}

/// The GPU catalog: GPU models, instance types, regions, offerings and prices.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub(crate) gpus: Vec<GpuModel>,
    pub(crate) gpu_details: Vec<GpuDetails>,
    /// Normalized canonical name or alias -> index into `gpus`.
    pub(crate) gpu_names: HashMap<String, usize>,
    /// Normalized shared (ambiguous) name -> indexes into `gpus`.
    pub(crate) gpu_shared: HashMap<String, Vec<usize>>,
    /// Sorted by (cloud, name).
    pub(crate) instance_types: Vec<InstanceType>,
    pub(crate) instance_index: HashMap<(Cloud, String), usize>,
    /// Per cloud in file order.
    pub(crate) regions: Vec<Region>,
    pub(crate) region_index: HashMap<(Cloud, String), usize>,
    /// Sorted by (cloud, region, instance type).
    pub(crate) offerings: Vec<Offering>,
    pub(crate) offering_info: Vec<OfferingInfo>,
    pub(crate) offering_index: HashMap<(Cloud, String, String), usize>,
    pub(crate) subscriptions: Vec<SubscriptionPrice>,
    pub(crate) notes: Vec<Note>,
}

static BUILTIN: OnceLock<Catalog> = OnceLock::new();

impl Catalog {
    /// The catalog built into the binary, parsed once. Panics only if the
    /// embedded data is malformed, which a unit test rules out.
    pub fn builtin() -> &'static Catalog {
        BUILTIN.get_or_init(|| match Catalog::from_sources(&CatalogSources::builtin()) {
            Ok(c) => c,
            Err(e) => panic!("the embedded GPU catalog is malformed: {e}"),
        })
    }

    /// Parses a catalog from the given texts (see [`CatalogSources`]).
    pub fn from_sources(sources: &CatalogSources<'_>) -> Result<Catalog, CatalogError> {
        load::build(sources)
    }

    pub fn gpus(&self) -> &[GpuModel] {
        &self.gpus
    }

    /// A GPU model by canonical name or alias, case-insensitively.
    pub fn gpu(&self, name: &str) -> Result<&GpuModel, GpuLookupError> {
        let key = normalize_gpu_name(name);
        if let Some(&i) = self.gpu_names.get(&key) {
            return Ok(&self.gpus[i]);
        }
        if let Some(ix) = self.gpu_shared.get(&key) {
            let mut choices: Vec<String> = ix.iter().map(|&i| self.gpus[i].name.clone()).collect();
            choices.sort();
            return Err(GpuLookupError::Ambiguous {
                name: name.to_string(),
                choices,
            });
        }
        Err(GpuLookupError::Unknown {
            name: name.to_string(),
            suggestions: self.gpu_suggestions(&key),
        })
    }

    fn gpu_suggestions(&self, key: &str) -> Vec<String> {
        let mut best: BTreeMap<String, f64> = BTreeMap::new();
        let mut consider = |candidate: &str, canonical: &str| {
            let score = strsim::normalized_damerau_levenshtein(key, candidate)
                .max(strsim::jaro_winkler(key, candidate) - 0.15);
            let e = best.entry(canonical.to_string()).or_insert(0.0);
            if score > *e {
                *e = score;
            }
        };
        for (alias, &i) in &self.gpu_names {
            consider(alias, &self.gpus[i].name);
        }
        for (alias, ix) in &self.gpu_shared {
            for &i in ix {
                consider(alias, &self.gpus[i].name);
            }
        }
        let mut ranked: Vec<(String, f64)> = best.into_iter().filter(|(_, s)| *s >= 0.5).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked.into_iter().take(3).map(|(n, _)| n).collect()
    }

    /// Extra facts (TFLOPS, TDP, sources) on a GPU model, by canonical name or alias.
    pub fn gpu_details(&self, name: &str) -> Option<&GpuDetails> {
        let key = normalize_gpu_name(name);
        self.gpu_names.get(&key).map(|&i| &self.gpu_details[i])
    }

    /// The regions of a cloud, in the cloud's own order.
    pub fn regions(&self, cloud: Cloud) -> Vec<&Region> {
        self.regions.iter().filter(|r| r.cloud == cloud).collect()
    }

    pub fn region(&self, cloud: Cloud, name: &str) -> Option<&Region> {
        self.region_index
            .get(&(cloud, name.to_string()))
            .map(|&i| &self.regions[i])
    }

    pub fn instance_type(&self, cloud: Cloud, name: &str) -> Option<&InstanceType> {
        self.instance_index
            .get(&(cloud, name.to_string()))
            .map(|&i| &self.instance_types[i])
    }

    /// The instance types of a cloud, sorted by name.
    pub fn instance_types(&self, cloud: Cloud) -> Vec<&InstanceType> {
        self.instance_types
            .iter()
            .filter(|t| t.cloud == cloud)
            .collect()
    }

    /// Every offering, sorted by cloud, region, instance type.
    pub fn offerings(&self) -> &[Offering] {
        &self.offerings
    }

    pub fn offering(&self, cloud: Cloud, region: &str, instance_type: &str) -> Option<&Offering> {
        self.offering_index
            .get(&(cloud, region.to_string(), instance_type.to_string()))
            .map(|&i| &self.offerings[i])
    }

    /// Where an offering's availability comes from, and which zones the source names.
    pub fn availability(
        &self,
        cloud: Cloud,
        region: &str,
        instance_type: &str,
    ) -> Option<&Availability> {
        self.offering_index
            .get(&(cloud, region.to_string(), instance_type.to_string()))
            .map(|&i| &self.offering_info[i].availability)
    }

    /// The regions of `cloud` that offer some instance type with `gpu_model`
    /// (canonical name or alias), sorted.
    pub fn regions_offering(&self, cloud: Cloud, gpu_model: &str) -> Vec<&str> {
        let model = match self.gpu(gpu_model) {
            Ok(g) => g.name.as_str(),
            Err(_) => return Vec::new(),
        };
        let set: BTreeSet<&str> = self
            .offerings
            .iter()
            .filter(|o| o.cloud == cloud)
            .filter(|o| {
                self.instance_type(o.cloud, &o.instance_type)
                    .is_some_and(|t| t.gpu_model == model)
            })
            .map(|o| o.region.as_str())
            .collect();
        set.into_iter().collect()
    }

    /// Monthly subscription quotes for an instance type (any region).
    pub fn subscription_prices(
        &self,
        cloud: Cloud,
        instance_type: &str,
    ) -> Vec<&SubscriptionPrice> {
        self.subscriptions
            .iter()
            .filter(|s| s.cloud == cloud && s.instance_type == instance_type)
            .collect()
    }

    /// The subscription price of `months` for an instance type in a region:
    /// the region's own quote, else one whose source names no region.
    pub fn subscription(
        &self,
        cloud: Cloud,
        region: &str,
        instance_type: &str,
        months: u32,
    ) -> Option<&SubscriptionPrice> {
        let of = |want: Option<&str>| {
            self.subscriptions.iter().find(|s| {
                s.cloud == cloud
                    && s.instance_type == instance_type
                    && s.months == months
                    && s.region.as_deref() == want
            })
        };
        of(Some(region)).or_else(|| of(None))
    }

    /// Caveats that apply to an instance type in a region (read them before trusting a price).
    pub fn notes(&self, cloud: Cloud, region: &str, instance_type: &str) -> Vec<&str> {
        self.notes
            .iter()
            .filter(|n| n.cloud == cloud && n.applies(region, instance_type))
            .map(|n| n.text.as_str())
            .collect()
    }
}
