//! Catalog discovery (`gpuform catalog refresh`) through CVM (API 3.0,
//! version 2017-03-12):
//! - DescribeRegions (https://www.tencentcloud.com/document/api/213/32907):
//!   `RegionSet` → `Region`, `RegionState` (`AVAILABLE`);
//! - DescribeZones (https://www.tencentcloud.com/document/api/213/35071):
//!   `ZoneSet` → `Zone` (e.g. `ap-guangzhou-3`), `ZoneState` (`AVAILABLE`);
//! - DescribeZoneInstanceConfigInfos
//!   (https://www.tencentcloud.com/document/api/213/33254) with the filters
//!   `instance-family` (the catalog's families) and `instance-charge-type`
//!   `POSTPAID_BY_HOUR`: `InstanceTypeQuotaSet` → `Zone`, `InstanceType`,
//!   `InstanceFamily`, `Status` (`SELL` is offered; `SOLD_OUT` is not now),
//!   `Gpu` / `GpuCount` (what is said of a type the catalog lacks).

use crate::client::{documented_set, s, CVM};
use crate::TencentProvider;
use async_trait::async_trait;
use gpuform_provider::{CatalogApi, RegionOffers, Result};
use serde_json::{json, Value};

const REGIONS: &str = "DescribeRegions";
const ZONES: &str = "DescribeZones";
const CONFIGS: &str = "DescribeZoneInstanceConfigInfos";
/// Where the region-independent call is sent (its `Region` is required).
const HOME: &str = "ap-guangzhou";

#[async_trait]
impl CatalogApi for TencentProvider {
    async fn list_regions(&self) -> Result<Vec<String>> {
        let resp = self.client.call(CVM, REGIONS, HOME, &json!({})).await?;
        Ok(documented_set(&resp, REGIONS, "RegionSet")?
            .iter()
            .filter(|r| s(r, "RegionState").is_empty() || s(r, "RegionState") == "AVAILABLE")
            .map(|r| s(r, "Region").to_string())
            .filter(|r| !r.is_empty())
            .collect())
    }

    async fn discover_region(
        &self,
        region: &str,
        families: &[String],
        known: &[String],
    ) -> Result<RegionOffers> {
        let resp = self.client.call(CVM, ZONES, region, &json!({})).await?;
        let zones: Vec<String> = documented_set(&resp, ZONES, "ZoneSet")?
            .iter()
            .filter(|z| s(z, "ZoneState") == "AVAILABLE")
            .map(|z| s(z, "Zone").to_string())
            .filter(|z| !z.is_empty())
            .collect();
        let body = json!({"Filters": [
            {"Name": "instance-family", "Values": families},
            {"Name": "instance-charge-type", "Values": ["POSTPAID_BY_HOUR"]},
        ]});
        let resp = self.client.call(CVM, CONFIGS, region, &body).await?;
        let mut out = RegionOffers {
            api: vec![format!("cvm:{ZONES}"), format!("cvm:{CONFIGS}")],
            ..RegionOffers::default()
        };
        for item in documented_set(&resp, CONFIGS, "InstanceTypeQuotaSet")? {
            let (t, zone) = (s(&item, "InstanceType"), s(&item, "Zone"));
            if s(&item, "Status") != "SELL" || !zones.iter().any(|z| z == zone) {
                continue;
            }
            if !families.iter().any(|f| f == s(&item, "InstanceFamily")) {
                continue;
            }
            out.offer(t, zone);
            if !known.iter().any(|k| k == t) {
                let gpus = item
                    .get("GpuCount")
                    .and_then(Value::as_f64)
                    .or_else(|| item.get("Gpu").and_then(Value::as_f64))
                    .unwrap_or(0.0);
                out.gpus
                    .insert(t.to_string(), format!("{gpus} GPU(s), no model named"));
            }
        }
        out.zones = zones;
        out.sort_offered();
        Ok(out)
    }
}
