//! The GPU catalog: GPU models, instance types per cloud, regions and zones,
//! and prices with their source and date. Data files live under
//! `providers/<cloud>/catalog/` and are embedded in the binary.
//!
//! (Types and API are fixed; the loader is being written.)

use crate::Cloud;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    pub const ALL: [PricingModel; 4] =
        [PricingModel::OnDemand, PricingModel::Spot, PricingModel::Reserved1y, PricingModel::Reserved3y];
    pub fn as_str(self) -> &'static str {
        match self {
            PricingModel::OnDemand => "on-demand",
            PricingModel::Spot => "spot",
            PricingModel::Reserved1y => "reserved-1y",
            PricingModel::Reserved3y => "reserved-3y",
        }
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
