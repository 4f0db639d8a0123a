//! Catalog discovery (`gpuform catalog refresh`) through ECS (RPC, version
//! 2014-05-26):
//! - DescribeRegions (https://www.alibabacloud.com/help/en/ecs/api-regions-describeregions):
//!   `Regions.Region[]` → `RegionId`, `Status` (`available`);
//! - DescribeZones (https://www.alibabacloud.com/help/en/ecs/api-describezones):
//!   `Zones.Zone[]` → `ZoneId` (e.g. `cn-hangzhou-h`);
//! - DescribeAvailableResource (https://www.alibabacloud.com/help/en/ecs/api-describeavailableresource)
//!   with `DestinationResource=InstanceType`, `IoOptimized=optimized`:
//!   `AvailableZones.AvailableZone[]` → `ZoneId`, `Status`,
//!   `AvailableResources.AvailableResource[]` (`Type` `InstanceType`) →
//!   `SupportedResources.SupportedResource[]` → `Value` (the type),
//!   `Status` (`Available`; `SoldOut` is not offered now). It says nothing
//!   of a type's GPUs.

use crate::client::{Params, Product};
use crate::AlibabaProvider;
use async_trait::async_trait;
use gpuform_provider::{CatalogApi, Cloud, ErrorKind, ProviderError, RegionOffers, Result};
use serde_json::Value;

const REGIONS: &str = "DescribeRegions";
const ZONES: &str = "DescribeZones";
const RESOURCES: &str = "DescribeAvailableResource";
/// Where the region-independent call is sent.
const HOME: &str = "cn-hangzhou";

/// `v[a][b]` as an array, or an error naming the undocumented answer.
fn list<'v>(v: &'v Value, action: &str, a: &str, b: &str) -> Result<&'v Vec<Value>> {
    v.get(a)
        .and_then(|x| x.get(b))
        .and_then(Value::as_array)
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{action}: the answer has no {a}.{b} (not the documented response)"),
            )
        })
}

fn s<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

impl AlibabaProvider {
    /// Whether `itype` is on sale in `zone` now: DescribeAvailableResource
    /// for that zone and type; the zone's and the type's `Status`
    /// `Available` is on sale, `SoldOut` is not, and no entry means the
    /// zone does not offer it (`Provider::offered`, placement's check).
    pub(crate) async fn on_sale(&self, region: &str, zone: &str, itype: &str) -> Result<bool> {
        let mut params = Params::default();
        params.push("DestinationResource", "InstanceType");
        params.push("IoOptimized", "optimized");
        params.push("ZoneId", zone);
        params.push("InstanceType", itype);
        let body = self
            .client
            .call(Product::Ecs, region, RESOURCES, &params.0)
            .await?;
        let empty = Vec::new();
        let zones = list(&body, RESOURCES, "AvailableZones", "AvailableZone").unwrap_or(&empty);
        for z in zones
            .iter()
            .filter(|z| s(z, "ZoneId") == zone && s(z, "Status") == "Available")
        {
            let resources = list(z, RESOURCES, "AvailableResources", "AvailableResource")?;
            for r in resources.iter().filter(|r| s(r, "Type") == "InstanceType") {
                let types = list(r, RESOURCES, "SupportedResources", "SupportedResource")?;
                if types
                    .iter()
                    .any(|t| s(t, "Value") == itype && s(t, "Status") == "Available")
                {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

#[async_trait]
impl CatalogApi for AlibabaProvider {
    async fn list_regions(&self) -> Result<Vec<String>> {
        let body = self.client.call(Product::Ecs, HOME, REGIONS, &[]).await?;
        Ok(list(&body, REGIONS, "Regions", "Region")?
            .iter()
            .filter(|r| s(r, "Status").is_empty() || s(r, "Status") == "available")
            .map(|r| s(r, "RegionId").to_string())
            .filter(|r| !r.is_empty())
            .collect())
    }

    async fn discover_region(
        &self,
        region: &str,
        families: &[String],
        _known: &[String],
    ) -> Result<RegionOffers> {
        let body = self.client.call(Product::Ecs, region, ZONES, &[]).await?;
        let zones: Vec<String> = list(&body, ZONES, "Zones", "Zone")?
            .iter()
            .map(|z| s(z, "ZoneId").to_string())
            .filter(|z| !z.is_empty())
            .collect();
        let mut params = Params::default();
        params.push("DestinationResource", "InstanceType");
        params.push("IoOptimized", "optimized");
        let body = self
            .client
            .call(Product::Ecs, region, RESOURCES, &params.0)
            .await?;
        let mut out = RegionOffers {
            api: vec![format!("ecs:{ZONES}"), format!("ecs:{RESOURCES}")],
            ..RegionOffers::default()
        };
        // A region with nothing to offer answers without AvailableZones.
        let empty = Vec::new();
        let available = list(&body, RESOURCES, "AvailableZones", "AvailableZone").unwrap_or(&empty);
        for z in available {
            let zone = s(z, "ZoneId");
            if s(z, "Status") != "Available" || !zones.iter().any(|x| x == zone) {
                continue;
            }
            let resources = list(z, RESOURCES, "AvailableResources", "AvailableResource")?;
            for r in resources.iter().filter(|r| s(r, "Type") == "InstanceType") {
                for t in list(r, RESOURCES, "SupportedResources", "SupportedResource")? {
                    let name = s(t, "Value");
                    let family = gpuform_catalog::instance_family(Cloud::Alibaba, name);
                    if s(t, "Status") == "Available" && families.iter().any(|f| f == family) {
                        out.offer(name, zone);
                    }
                }
            }
        }
        out.zones = zones;
        out.sort_offered();
        Ok(out)
    }
}
