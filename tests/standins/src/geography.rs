//! What a stand-in's region, zone and offering actions answer from (Tencent
//! DescribeRegions / DescribeZones / DescribeZoneInstanceConfigInfos,
//! Alibaba DescribeRegions / DescribeZones / DescribeAvailableResource,
//! Huawei KeystoneListRegions / NovaListAvailabilityZones / ListFlavors).
//! Tests set the regions, zones and offerings; a stand-in without them
//! lists no region.

use std::collections::BTreeMap;

/// One instance type on sale (or sold out) in one zone.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneOffer {
    pub zone: String,
    pub instance_type: String,
    pub sold_out: bool,
    /// GPUs per instance, as the cloud's API reports them.
    pub gpus: u32,
}

#[derive(Debug, Default)]
pub struct Geography {
    /// Region → its zones, in order.
    regions: BTreeMap<String, Vec<String>>,
    offers: Vec<ZoneOffer>,
}

impl Geography {
    pub fn add_region(&mut self, region: &str, zones: &[&str]) {
        self.regions.insert(
            region.to_string(),
            zones.iter().map(|z| z.to_string()).collect(),
        );
    }

    pub fn offer(&mut self, offer: ZoneOffer) {
        self.offers.push(offer);
    }

    pub fn regions(&self) -> impl Iterator<Item = &String> {
        self.regions.keys()
    }

    pub fn zones(&self, region: &str) -> Option<&Vec<String>> {
        self.regions.get(region)
    }

    /// The offers in the zones of `region`.
    pub fn offers_in(&self, region: &str) -> Vec<&ZoneOffer> {
        let zones = self.zones(region).cloned().unwrap_or_default();
        self.offers
            .iter()
            .filter(|o| zones.contains(&o.zone))
            .collect()
    }
}
