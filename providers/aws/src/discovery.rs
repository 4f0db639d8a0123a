//! Catalog discovery (`gpuform catalog refresh`) through EC2:
//! - DescribeRegions (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeRegions.html):
//!   `regionInfo` → `regionName`, the regions enabled for the account;
//! - DescribeAvailabilityZones (…/API_DescribeAvailabilityZones.html):
//!   `availabilityZoneInfo` → `zoneName`, `zoneType` (`availability-zone`,
//!   not Local or Wavelength Zones), `zoneState` (`available`);
//! - DescribeInstanceTypeOfferings (…/API_DescribeInstanceTypeOfferings.html)
//!   with `LocationType=availability-zone`: `instanceTypeOfferingSet` →
//!   `instanceType`, `location` (the zone), paged by `NextToken`. No
//!   `instance-type` filter: its wildcards are not on every EC2 emulation,
//!   so the families are picked from the whole answer;
//! - DescribeInstanceTypes (…/API_DescribeInstanceTypes.html), at most 100
//!   types a call: `gpuInfo.gpus` (`count`, `manufacturer`, `name`,
//!   `memoryInfo.sizeInMiB`) of the types the catalog lacks, to say what
//!   was skipped.

use crate::errors::{sent, Op};
use crate::AwsProvider;
use async_trait::async_trait;
use aws_sdk_ec2::types::{InstanceType, LocationType};
use gpuform_provider::{CatalogApi, Cloud, RegionOffers, Result};

const REGIONS: &str = "DescribeRegions";
const ZONES: &str = "DescribeAvailabilityZones";
const OFFERINGS: &str = "DescribeInstanceTypeOfferings";
const TYPES: &str = "DescribeInstanceTypes";
/// Pages read at most of DescribeInstanceTypeOfferings (1000 a page).
const MAX_PAGES: usize = 20;

impl AwsProvider {
    /// The region calls that are not about one region go to: the configured one, else us-east-1.
    fn home_region(&self) -> String {
        self.base
            .region()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "us-east-1".into())
    }
}

#[async_trait]
impl CatalogApi for AwsProvider {
    async fn list_regions(&self) -> Result<Vec<String>> {
        let client = self.ec2_client(&self.home_region());
        let out = sent(REGIONS, Op::Other, client.describe_regions().send()).await?;
        Ok(out
            .regions()
            .iter()
            .filter_map(|r| r.region_name().map(str::to_string))
            .collect())
    }

    async fn discover_region(
        &self,
        region: &str,
        families: &[String],
        known: &[String],
    ) -> Result<RegionOffers> {
        let client = self.ec2_client(region);
        let az = sent(
            ZONES,
            Op::Other,
            client.describe_availability_zones().send(),
        )
        .await?;
        let zones: Vec<String> = az
            .availability_zones()
            .iter()
            .filter(|z| z.zone_type().is_none_or(|t| t == "availability-zone"))
            .filter(|z| z.state().is_none_or(|s| s.as_str() == "available"))
            .filter_map(|z| z.zone_name().map(str::to_string))
            .collect();
        let mut out = RegionOffers {
            zones,
            api: vec![format!("ec2:{ZONES}"), format!("ec2:{OFFERINGS}")],
            ..RegionOffers::default()
        };
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let request = client
                .describe_instance_type_offerings()
                .location_type(LocationType::AvailabilityZone)
                .max_results(1000)
                .set_next_token(token.clone());
            let page = sent(OFFERINGS, Op::Other, request.send()).await?;
            for o in page.instance_type_offerings() {
                let (Some(t), Some(zone)) = (o.instance_type(), o.location()) else {
                    continue;
                };
                let t = t.as_str();
                let family = gpuform_catalog::instance_family(Cloud::Aws, t);
                if !families.iter().any(|f| f == family) || !out.zones.iter().any(|z| z == zone) {
                    continue;
                }
                out.offer(t, zone);
            }
            match page.next_token().filter(|t| !t.is_empty()) {
                Some(t) if Some(t) != token.as_deref() => token = Some(t.to_string()),
                _ => break,
            }
        }
        out.sort_offered();
        let unknown: Vec<&String> = out.offered.keys().filter(|t| !known.contains(t)).collect();
        if !unknown.is_empty() {
            out.api.push(format!("ec2:{TYPES}"));
        }
        let mut gpus = std::collections::BTreeMap::new();
        for chunk in unknown.chunks(100) {
            let types: Vec<InstanceType> = chunk
                .iter()
                .map(|t| InstanceType::from(t.as_str()))
                .collect();
            let answer = sent(
                TYPES,
                Op::Other,
                client
                    .describe_instance_types()
                    .set_instance_types(Some(types))
                    .send(),
            )
            .await?;
            for info in answer.instance_types() {
                let Some(t) = info.instance_type() else {
                    continue;
                };
                let text = match info.gpu_info() {
                    None => "no GPU (DescribeInstanceTypes gpuInfo is empty)".to_string(),
                    Some(g) => g
                        .gpus()
                        .iter()
                        .map(|d| {
                            format!(
                                "{} x {} {}{}",
                                d.count().unwrap_or(0),
                                d.manufacturer().unwrap_or("?"),
                                d.name().unwrap_or("?"),
                                d.memory_info()
                                    .and_then(|m| m.size_in_mib())
                                    .map(|m| format!(", {m} MiB each"))
                                    .unwrap_or_default()
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                };
                gpus.insert(t.as_str().to_string(), text);
            }
        }
        out.gpus = gpus;
        Ok(out)
    }
}
