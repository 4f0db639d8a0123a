//! Catalog discovery: "which regions, zones and GPU instance types does this
//! cloud offer" with the user's credentials, through each cloud's own API
//! (`gpuform catalog refresh`).
//!
//! A separate small trait, as [`crate::PriceApi`] is: it is not
//! provisioning. Each cloud crate implements it in its `discovery.rs`.

use crate::Result;
use async_trait::async_trait;
use std::collections::BTreeMap;

/// What a cloud's API said about one region.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegionOffers {
    /// The region's zones, in the cloud's order (available ones only).
    pub zones: Vec<String>,
    /// Instance type → the zones that offer it, for every type of the
    /// families asked about (including types the catalog lacks).
    pub offered: BTreeMap<String, Vec<String>>,
    /// What the API says of the GPUs of types not in `known`, when it says
    /// anything (e.g. `8 x NVIDIA H200, 144384 MiB in all`).
    pub gpus: BTreeMap<String, String>,
    /// The calls that answered, e.g. `ec2:DescribeInstanceTypeOfferings`.
    pub api: Vec<String>,
}

impl RegionOffers {
    /// Records that `zone` offers the instance type `itype`.
    pub fn offer(&mut self, itype: &str, zone: &str) {
        self.offered
            .entry(itype.to_string())
            .or_default()
            .push(zone.to_string());
    }

    /// Puts each type's zones in the order of [`RegionOffers::zones`],
    /// each once.
    pub fn sort_offered(&mut self) {
        for zones in self.offered.values_mut() {
            zones.sort_by_key(|z| self.zones.iter().position(|x| x == z));
            zones.dedup();
        }
    }
}

#[async_trait]
pub trait CatalogApi: Send + Sync {
    /// The regions the cloud lists for this account.
    async fn list_regions(&self) -> Result<Vec<String>>;

    /// One region's zones and which instance types of `families` (as
    /// `gpuform_catalog::instance_family` names them) each zone offers;
    /// `known` are the catalog's types, whose GPUs need not be described.
    async fn discover_region(
        &self,
        region: &str,
        families: &[String],
        known: &[String],
    ) -> Result<RegionOffers>;
}
