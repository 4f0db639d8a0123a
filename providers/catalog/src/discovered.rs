//! The discovered catalog: what `gpuform catalog refresh` read from each
//! cloud's own API (its regions, their zones, and which of the catalog's GPU
//! instance types each zone offers), kept in the live cache beside the
//! live prices ([`crate::live`]: same file, same atomic write, same dating).
//!
//! One entry per (cloud, region) with the day it was read. The catalog the
//! binary loads overlays it ([`Catalog::with_discovered`]): a region or zone
//! the built-in data lacks becomes known, and an offering the cloud reports
//! gets the cloud's zones and a source naming the API call and the day. A
//! type the API reports but the catalog has no GPU specification for is
//! kept in `skipped` with what the API said, never added: its GPU is never
//! guessed.

use crate::{Availability, Catalog, Cloud, Offering, OfferingInfo, PriceBasis, Region};
use serde::{Deserialize, Serialize};

/// One instance type a cloud offers in a region, in these zones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveredOffering {
    pub instance_type: String,
    /// Zones of the region that offer it, in the region's zone order.
    pub zones: Vec<String>,
}

/// A type the API reported in a GPU family the catalog knows, but whose GPU
/// specification the catalog lacks: listed, not added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedType {
    pub instance_type: String,
    /// What the API says of its GPUs (e.g. `8 x NVIDIA H200, 141 GiB each`),
    /// empty when the API says nothing.
    #[serde(default)]
    pub api_says: String,
}

/// What one cloud's API said about one region, on one day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveredRegion {
    pub cloud: Cloud,
    pub region: String,
    /// `YYYY-MM-DD`, from the clock module (pinned by `GPUFORM_TODAY`).
    pub discovered_on: String,
    /// The API calls that answered, e.g. `ec2:DescribeAvailabilityZones, ec2:DescribeInstanceTypeOfferings`.
    pub api: String,
    /// The region's zones, in the cloud's order.
    pub zones: Vec<String>,
    pub offerings: Vec<DiscoveredOffering>,
    #[serde(default)]
    pub skipped: Vec<SkippedType>,
}

impl DiscoveredRegion {
    /// The source shown for an offering it adds: the API calls and the day.
    pub fn source(&self) -> String {
        format!(
            "{} for {}, discovered {}",
            self.api, self.region, self.discovered_on
        )
    }

    /// Why the entry cannot be used, if it cannot.
    pub(crate) fn problem(&self) -> Option<String> {
        let at = format!("{} {}", self.cloud, self.region);
        if crate::Day::parse_iso(&self.discovered_on).is_none() {
            return Some(format!(
                "{at}: discovered_on `{}` is not a YYYY-MM-DD date",
                self.discovered_on
            ));
        }
        if self.zones.is_empty() {
            return Some(format!("{at}: no zones"));
        }
        for o in &self.offerings {
            if let Some(z) = o.zones.iter().find(|z| !self.zones.contains(z)) {
                return Some(format!(
                    "{at}: {} is offered in `{z}`, which is not one of the region's zones",
                    o.instance_type
                ));
            }
        }
        None
    }
}

/// The part of the live cache a catalog refresh writes.
impl crate::LivePrices {
    /// The discovered entry of a region, if any.
    pub fn discovered(&self, cloud: Cloud, region: &str) -> Option<&DiscoveredRegion> {
        self.regions
            .iter()
            .find(|r| r.cloud == cloud && r.region == region)
    }

    /// Adds a region's entry, replacing an older one for the same (cloud, region).
    pub fn upsert_region(&mut self, entry: DiscoveredRegion) {
        self.regions
            .retain(|r| !(r.cloud == entry.cloud && r.region == entry.region));
        self.regions.push(entry);
        self.regions
            .sort_by(|a, b| (a.cloud, &a.region).cmp(&(b.cloud, &b.region)));
    }
}

impl Catalog {
    /// A copy of this catalog with the discovered regions, zones and
    /// offerings over the built-in ones. A new offering takes the prices
    /// whose source names no region (basis `assumed`) if the type has any,
    /// else it has none until `gpuform prices refresh` quotes it. Offerings
    /// of types the catalog does not know are skipped (returned as
    /// `cloud region type`).
    pub fn with_discovered(&self, found: &[DiscoveredRegion]) -> (Catalog, Vec<String>) {
        let mut out = self.clone();
        let mut skipped = Vec::new();
        for d in found {
            let key = (d.cloud, d.region.clone());
            match out.region_index.get(&key) {
                Some(&i) => {
                    let r = &mut out.regions[i];
                    for z in &d.zones {
                        if !r.zones.contains(z) {
                            r.zones.push(z.clone());
                        }
                    }
                }
                None => {
                    out.regions.push(Region {
                        cloud: d.cloud,
                        name: d.region.clone(),
                        zones: d.zones.clone(),
                    });
                    out.region_index.insert(key, out.regions.len() - 1);
                }
            }
            for o in &d.offerings {
                if out.instance_type(d.cloud, &o.instance_type).is_none() {
                    skipped.push(format!("{} {} {}", d.cloud, d.region, o.instance_type));
                    continue;
                }
                let availability = Availability {
                    zones: Some(o.zones.clone()),
                    source: d.source(),
                    assumed: false,
                    discovered_on: Some(d.discovered_on.clone()),
                };
                let okey = (d.cloud, d.region.clone(), o.instance_type.clone());
                if let Some(&i) = out.offering_index.get(&okey) {
                    out.offering_info[i].availability = availability;
                    continue;
                }
                // The type's region-less prices hold here as they do elsewhere.
                let prices = out
                    .offerings
                    .iter()
                    .find(|x| x.cloud == d.cloud && x.instance_type == o.instance_type)
                    .map(|x| {
                        x.prices
                            .iter()
                            .filter(|(_, p)| p.basis == PriceBasis::Assumed)
                            .map(|(m, p)| (*m, p.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                out.offerings.push(Offering {
                    cloud: d.cloud,
                    region: d.region.clone(),
                    instance_type: o.instance_type.clone(),
                    prices,
                });
                out.offering_info.push(OfferingInfo { availability });
                out.offering_index.insert(okey, out.offerings.len() - 1);
            }
        }
        out.sort_offerings();
        (out, skipped)
    }

    /// Restores the order of offerings (cloud, region, type) and their index.
    fn sort_offerings(&mut self) {
        let mut pairs: Vec<(Offering, OfferingInfo)> = std::mem::take(&mut self.offerings)
            .into_iter()
            .zip(std::mem::take(&mut self.offering_info))
            .collect();
        pairs.sort_by(|a, b| {
            (a.0.cloud, &a.0.region, &a.0.instance_type).cmp(&(
                b.0.cloud,
                &b.0.region,
                &b.0.instance_type,
            ))
        });
        self.offering_index = pairs
            .iter()
            .enumerate()
            .map(|(i, (o, _))| ((o.cloud, o.region.clone(), o.instance_type.clone()), i))
            .collect();
        (self.offerings, self.offering_info) = pairs.into_iter().unzip();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LivePrices, PricingModel};

    fn region(r: &str, zones: &[&str], offers: &[(&str, &[&str])]) -> DiscoveredRegion {
        DiscoveredRegion {
            cloud: Cloud::Aws,
            region: r.into(),
            discovered_on: "2026-11-29".into(),
            api: "ec2:DescribeInstanceTypeOfferings".into(),
            zones: zones.iter().map(|z| z.to_string()).collect(),
            offerings: offers
                .iter()
                .map(|(t, z)| DiscoveredOffering {
                    instance_type: t.to_string(),
                    zones: z.iter().map(|z| z.to_string()).collect(),
                })
                .collect(),
            skipped: vec![],
        }
    }

    #[test]
    fn a_discovered_region_and_its_offerings_become_known_with_their_source() {
        let base = Catalog::builtin();
        assert!(base.region(Cloud::Aws, "ap-southeast-4").is_none());
        let d = region(
            "ap-southeast-4",
            &["ap-southeast-4a", "ap-southeast-4b"],
            &[
                ("g4dn.xlarge", &["ap-southeast-4b"]),
                ("x9.huge", &["ap-southeast-4a"]),
            ],
        );
        let (c, skipped) = base.with_discovered(&[d]);
        assert_eq!(skipped, vec!["aws ap-southeast-4 x9.huge".to_string()]);
        let r = c.region(Cloud::Aws, "ap-southeast-4").unwrap();
        assert_eq!(r.zones, vec!["ap-southeast-4a", "ap-southeast-4b"]);
        assert!(c
            .offering(Cloud::Aws, "ap-southeast-4", "g4dn.xlarge")
            .is_some());
        let a = c
            .availability(Cloud::Aws, "ap-southeast-4", "g4dn.xlarge")
            .unwrap();
        assert_eq!(
            a.zones.as_deref(),
            Some(&["ap-southeast-4b".to_string()][..])
        );
        assert!(
            a.source.contains("DescribeInstanceTypeOfferings"),
            "{}",
            a.source
        );
        assert!(a.source.contains("2026-11-29"), "{}", a.source);
        assert_eq!(a.discovered_on.as_deref(), Some("2026-11-29"));
        // Order and index still agree for every offering.
        for (i, o) in c.offerings().iter().enumerate() {
            assert_eq!(
                c.offering_index[&(o.cloud, o.region.clone(), o.instance_type.clone())],
                i
            );
        }
        assert!(c
            .offerings()
            .windows(2)
            .all(|w| (w[0].cloud, &w[0].region, &w[0].instance_type)
                < (w[1].cloud, &w[1].region, &w[1].instance_type)));
        // The built-in catalog is untouched.
        assert!(base.region(Cloud::Aws, "ap-southeast-4").is_none());
    }

    #[test]
    fn a_new_offering_takes_only_region_less_prices() {
        let base = Catalog::builtin();
        // A type priced by a region-less (assumed) source somewhere.
        let (o, model) = base
            .offerings()
            .iter()
            .find_map(|o| {
                o.prices
                    .iter()
                    .find(|(_, p)| p.basis == PriceBasis::Assumed)
                    .map(|(m, _)| (o, *m))
            })
            .expect("an assumed price in the catalog");
        let zone = format!("{}-zz", "xx-new-1");
        let mut d = region("xx-new-1", &[&zone], &[(&o.instance_type, &[&zone])]);
        d.cloud = o.cloud;
        let (c, _) = base.with_discovered(&[d]);
        let n = c.offering(o.cloud, "xx-new-1", &o.instance_type).unwrap();
        assert_eq!(n.prices.get(&model), o.prices.get(&model));
        assert!(n.prices.values().all(|p| p.basis == PriceBasis::Assumed));
        let _ = PricingModel::OnDemand;
    }

    #[test]
    fn the_cache_keeps_regions_beside_prices_and_refuses_bad_ones() {
        let dir = std::env::temp_dir().join(format!("gpuform-disc-{}", std::process::id()));
        let path = dir.join("prices.json");
        let mut live = LivePrices::default();
        live.upsert_region(region("ap-southeast-4", &["ap-southeast-4a"], &[]));
        live.save(&path).unwrap();
        assert_eq!(LivePrices::load(&path).unwrap(), live);
        let mut bad = region(
            "ap-southeast-4",
            &["ap-southeast-4a"],
            &[("g4dn.xlarge", &["ap-southeast-4z"])],
        );
        live.upsert_region(bad.clone());
        live.save(&path).unwrap();
        let e = LivePrices::load(&path).unwrap_err().to_string();
        assert!(e.contains("ap-southeast-4z") && e.contains("hint"), "{e}");
        bad.offerings.clear();
        bad.discovered_on = "today".into();
        live.upsert_region(bad);
        live.save(&path).unwrap();
        let e = LivePrices::load(&path).unwrap_err().to_string();
        assert!(e.contains("discovered_on"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
