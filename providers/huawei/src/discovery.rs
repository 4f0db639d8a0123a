//! Catalog discovery (`gpuform catalog refresh`):
//! - IAM KeystoneListRegions, `GET /v3/regions`
//!   (https://support.huaweicloud.com/intl/en-us/api-iam/iam_05_0001.html):
//!   `regions[]` → `id` (e.g. `cn-north-4`);
//! - ECS NovaListAvailabilityZones, `GET /v2.1/{project_id}/os-availability-zone`
//!   (https://support.huaweicloud.com/api-ecs/ecs_03_1801.html):
//!   `availabilityZoneInfo[]` → `zoneName` (e.g. `cn-north-4a`),
//!   `zoneState.available`;
//! - ECS ListFlavors, `GET /v1/{project_id}/cloudservers/flavors`
//!   (https://support.huaweicloud.com/intl/en-us/api-ecs/en-us_topic_0020212656.html;
//!   `os_extra_specs`: https://support.huaweicloud.com/intl/en-us/api-ecs/ecs_05_0003.html):
//!   `flavors[]` → `name`, `os_extra_specs`: `cond:operation:status`
//!   (`normal`, `abandon`, `sellout`, `obt`, `promotion`) for every zone,
//!   overridden per zone by `cond:operation:az` (`cn-north-4a(normal),
//!   cn-north-4b(sellout)`); `normal` and `promotion` are offered.
//!   `pci_passthrough:alias` (`nvidia-t4:1`) is what is said of a type the
//!   catalog lacks.
//!
//! The project of the region comes from HUAWEICLOUD_SDK_PROJECT_ID(_<REGION>),
//! as for every other ECS call.

use crate::client::{list_field, s, Service};
use crate::HuaweiProvider;
use async_trait::async_trait;
use gpuform_provider::{CatalogApi, Cloud, RegionOffers, Result};
use serde_json::Value;

/// Where the region-independent IAM call is sent.
const HOME: &str = "cn-north-4";

/// The sale status of a flavor in `zone`, from its `os_extra_specs`.
fn status_in(specs: &Value, zone: &str) -> String {
    let by_zone = s(specs, "cond:operation:az");
    for part in by_zone.split(',') {
        if let Some((z, rest)) = part.trim().split_once('(') {
            if z.trim() == zone {
                return rest.trim_end_matches(')').trim().to_string();
            }
        }
    }
    match s(specs, "cond:operation:status") {
        st if st.is_empty() => "normal".into(),
        st => st,
    }
}

/// A flavor's `os_extra_specs` (null when it has none).
fn extra_specs(flavor: &Value) -> Value {
    flavor.get("os_extra_specs").cloned().unwrap_or(Value::Null)
}

/// Whether a flavor with these `os_extra_specs` is on sale in `zone`:
/// `normal` and `promotion` are, `sellout` (and `abandon`, `obt`) are not.
fn sells(specs: &Value, zone: &str) -> bool {
    matches!(status_in(specs, zone).as_str(), "normal" | "promotion")
}

impl HuaweiProvider {
    /// Whether `flavor` is on sale in `zone` now: ListFlavors, the flavor's
    /// `os_extra_specs` sale status in that zone ([`status_in`]): `normal`
    /// and `promotion` are on sale, `sellout` (and `abandon`, `obt`) are
    /// not, and a flavor the region does not list is not offered
    /// (`Provider::offered`, placement's check).
    pub(crate) async fn on_sale(&self, region: &str, zone: &str, flavor: &str) -> Result<bool> {
        Ok(self
            .flavors(region)
            .await?
            .iter()
            .filter(|f| s(f, "name") == flavor)
            .any(|f| sells(&extra_specs(f), zone)))
    }

    /// ListFlavors: every flavor of `region`.
    async fn flavors(&self, region: &str) -> Result<Vec<Value>> {
        let project = self.project(region)?.to_string();
        let path = format!("/v1/{project}/cloudservers/flavors");
        let v = self.client.get(Service::Ecs, region, path).await?;
        list_field(&v, "flavors", "ListFlavors")
    }
}

#[async_trait]
impl CatalogApi for HuaweiProvider {
    async fn list_regions(&self) -> Result<Vec<String>> {
        let v = self
            .client
            .get(Service::Iam, HOME, "/v3/regions".into())
            .await?;
        Ok(list_field(&v, "regions", "KeystoneListRegions")?
            .iter()
            .map(|r| s(r, "id"))
            .filter(|r| !r.is_empty())
            .collect())
    }

    async fn discover_region(
        &self,
        region: &str,
        families: &[String],
        known: &[String],
    ) -> Result<RegionOffers> {
        let project = self.project(region)?.to_string();
        let path = format!("/v2.1/{project}/os-availability-zone");
        let v = self.client.get(Service::Ecs, region, path).await?;
        let zones: Vec<String> =
            list_field(&v, "availabilityZoneInfo", "NovaListAvailabilityZones")?
                .iter()
                .filter(|z| {
                    z.get("zoneState")
                        .and_then(|st| st.get("available"))
                        .and_then(Value::as_bool)
                        == Some(true)
                })
                .map(|z| s(z, "zoneName"))
                .filter(|z| !z.is_empty())
                .collect();
        let mut out = RegionOffers {
            api: vec![
                "ecs:NovaListAvailabilityZones".into(),
                "ecs:ListFlavors".into(),
            ],
            ..RegionOffers::default()
        };
        for f in self.flavors(region).await? {
            let name = s(&f, "name");
            let family = gpuform_catalog::instance_family(Cloud::Huawei, &name).to_string();
            if !families.contains(&family) {
                continue;
            }
            let specs = extra_specs(&f);
            let offered: Vec<String> = zones.iter().filter(|z| sells(&specs, z)).cloned().collect();
            if offered.is_empty() {
                continue;
            }
            if !known.contains(&name) {
                let alias = s(&specs, "pci_passthrough:alias");
                out.gpus.insert(
                    name.clone(),
                    if alias.is_empty() {
                        String::new()
                    } else {
                        format!("pci_passthrough:alias {alias}")
                    },
                );
            }
            out.offered.insert(name, offered);
        }
        out.zones = zones;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_status_overrides_the_flavor_status() {
        let specs = serde_json::json!({
            "cond:operation:status": "normal",
            "cond:operation:az": "cn-north-4a(sellout), cn-north-4b(normal)",
        });
        assert_eq!(status_in(&specs, "cn-north-4a"), "sellout");
        assert_eq!(status_in(&specs, "cn-north-4b"), "normal");
        assert_eq!(status_in(&specs, "cn-north-4c"), "normal");
        assert_eq!(status_in(&Value::Null, "cn-north-4c"), "normal");
    }
}
