//! EC2's vCPU quotas of GPU instance families, read through Service Quotas
//! (`GetServiceQuota`), and this account's use of them (DescribeInstances).
//!
//! EC2 limits running instances per family and market in vCPUs ("Amazon EC2
//! instance type quotas",
//! https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html):
//! the P family has its own quotas, the G and VT families share theirs;
//! on-demand launches (reserved instances included: a reservation is a
//! billing construct over an on-demand launch) count against "Running
//! On-Demand …", spot ones against "All … Spot Instance Requests". Other
//! families are not GPU quotas gpuform checks: `None`.
//!
//! Use is the default vCPUs (`VCpuInfo.DefaultVCpus`) of the account's
//! pending and running instances of the family and market in the region.
//! The family and market are told apart here, not by a filter: EC2 accepts
//! `p*` in an `instance-type` filter, moto (the tests' EC2) matches it only
//! literally, and the market is `InstanceLifecycle`, which has no filter.

use crate::client::{describe_instances, filter};
use crate::errors::{map_quotas, Op};
use crate::AwsProvider;
use aws_sdk_ec2::types::{Instance, InstanceLifecycleType};
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, QuotaMarket, QuotaReading, QuotaUnit, Scope};
use std::collections::BTreeMap;

/// One EC2 quota: its Service Quotas code and console name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ec2Quota {
    pub code: &'static str,
    pub name: &'static str,
}

const P_ON_DEMAND: Ec2Quota = Ec2Quota {
    code: "L-417A185B",
    name: "Running On-Demand P instances",
};
const G_VT_ON_DEMAND: Ec2Quota = Ec2Quota {
    code: "L-DB2E81BA",
    name: "Running On-Demand G and VT instances",
};
const P_SPOT: Ec2Quota = Ec2Quota {
    code: "L-7212CCBC",
    name: "All P Spot Instance Requests",
};
const G_VT_SPOT: Ec2Quota = Ec2Quota {
    code: "L-3819A6DF",
    name: "All G and VT Spot Instance Requests",
};

/// The GPU families with a quota of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    P,
    GAndVt,
}

/// The family of an instance type from its name's leading letters (`p5`,
/// `g6e`, `gr6`, `vt1`); `None` for the families without a GPU quota.
fn family(itype: &str) -> Option<Family> {
    let letters: String = itype
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    match letters.to_ascii_lowercase().as_str() {
        "p" => Some(Family::P),
        "g" | "gr" | "vt" => Some(Family::GAndVt),
        _ => None,
    }
}

/// Spot launches against the spot quota, everything else on demand.
fn spot(market: QuotaMarket) -> bool {
    market == QuotaMarket::Spot
}

/// The quota a launch of `itype` in `market` counts against, if a GPU one.
pub fn quota_for(itype: &str, market: QuotaMarket) -> Option<Ec2Quota> {
    Some(match (family(itype)?, spot(market)) {
        (Family::P, false) => P_ON_DEMAND,
        (Family::P, true) => P_SPOT,
        (Family::GAndVt, false) => G_VT_ON_DEMAND,
        (Family::GAndVt, true) => G_VT_SPOT,
    })
}

/// How to raise a quota: the AWS CLI call, `N` being the vCPUs wanted.
pub fn raise_command(code: &str, region: &str) -> String {
    format!(
        "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} --desired-value N --region {region}"
    )
}

/// Whether an instance counts against `family`'s quota of `market`: spot
/// ones against the spot quota, on-demand ones (no lifecycle) against the
/// on-demand quota; Capacity Block and scheduled instances against neither.
fn counts_against(i: &Instance, family_of: Family, market: QuotaMarket) -> bool {
    let itype = i.instance_type().map(|t| t.as_str()).unwrap_or("");
    if family(itype) != Some(family_of) {
        return false;
    }
    match i.instance_lifecycle() {
        None => !spot(market),
        Some(InstanceLifecycleType::Spot) => spot(market),
        Some(_) => false,
    }
}

impl AwsProvider {
    /// The Service Quotas client of a region (created once, then shared),
    /// at the same endpoint override as EC2's.
    fn quotas_client(&self, region: &str) -> aws_sdk_servicequotas::Client {
        let mut clients = self.quota_clients.lock().unwrap_or_else(|p| p.into_inner());
        clients
            .entry(region.to_string())
            .or_insert_with(|| {
                let mut b = aws_sdk_servicequotas::config::Builder::from(&self.base).region(
                    aws_sdk_servicequotas::config::Region::new(region.to_string()),
                );
                if let Some(url) = &self.endpoint {
                    b = b.endpoint_url(url);
                }
                aws_sdk_servicequotas::Client::from_conf(b.build())
            })
            .clone()
    }

    /// See [`gpuform_provider::ComputeApi::quota`]: `None` for a family
    /// without a GPU quota, or a quota Service Quotas does not have in the
    /// region (`NoSuchResourceException`).
    pub(crate) async fn gpu_quota(
        &self,
        scope: &Scope,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        let Some(quota) = quota_for(itype, market) else {
            return Ok(None);
        };
        let region = scope.region.as_str();
        let ec2 = self.client(scope)?;
        let asked = self
            .quotas_client(region)
            .get_service_quota()
            .service_code("ec2")
            .quota_code(quota.code)
            .send()
            .await;
        let answer = match asked {
            Ok(a) => a,
            Err(e) => {
                let e = map_quotas("GetServiceQuota", Op::Other, e);
                return match e.kind {
                    ErrorKind::NotFound => Ok(None),
                    _ => Err(e),
                };
            }
        };
        // A quota whose value Service Quotas cannot give (its ErrorReason
        // set) is reported without a limit.
        let limit = answer
            .quota()
            .filter(|q| q.error_reason().is_none())
            .and_then(|q| q.value())
            .filter(|v| v.is_finite())
            .map(|v| v.max(0.0).floor() as u64);
        let name = answer
            .quota()
            .and_then(|q| q.quota_name())
            .unwrap_or(quota.name)
            .to_string();
        let family_of = family(itype).expect("quota_for found the family");
        let running = describe_instances(
            &ec2,
            vec![filter(
                "instance-state-name",
                ["pending".to_string(), "running".to_string()],
            )],
        )
        .await?;
        let mut per_type: BTreeMap<String, u64> = BTreeMap::new();
        for i in running
            .iter()
            .filter(|i| counts_against(i, family_of, market))
        {
            let t = i.instance_type().map(|t| t.as_str()).unwrap_or("");
            *per_type.entry(t.to_string()).or_default() += 1;
        }
        let mut used = 0u64;
        for (t, count) in per_type {
            used += u64::from(self.type_info(region, &t).await?.vcpus) * count;
        }
        Ok(Some(QuotaReading {
            code: Some(quota.code.to_string()),
            name,
            unit: QuotaUnit::Vcpus,
            limit,
            used,
            raise: raise_command(quota.code, region),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::InstanceType;

    #[test]
    fn families_map_to_their_quotas() {
        use QuotaMarket::*;
        let code = |t: &str, m| quota_for(t, m).map(|q| q.code);
        assert_eq!(code("p5.48xlarge", OnDemand), Some("L-417A185B"));
        assert_eq!(code("p4d.24xlarge", Reserved), Some("L-417A185B"));
        assert_eq!(code("p5en.48xlarge", Spot), Some("L-7212CCBC"));
        assert_eq!(code("g6e.xlarge", OnDemand), Some("L-DB2E81BA"));
        assert_eq!(code("gr6.4xlarge", OnDemand), Some("L-DB2E81BA"));
        assert_eq!(code("vt1.3xlarge", Spot), Some("L-3819A6DF"));
        assert_eq!(code("g5.xlarge", Spot), Some("L-3819A6DF"));
        assert_eq!(code("m7i.large", OnDemand), None);
        assert_eq!(code("trn1.32xlarge", OnDemand), None);
        assert_eq!(code("inf2.xlarge", Spot), None);
    }

    #[test]
    fn instances_count_against_their_family_and_market() {
        let inst = |t: &str, life: Option<InstanceLifecycleType>| {
            Instance::builder()
                .instance_type(InstanceType::from(t))
                .set_instance_lifecycle(life)
                .build()
        };
        let od = inst("p5.48xlarge", None);
        let sp = inst("p5.48xlarge", Some(InstanceLifecycleType::Spot));
        let block = inst("p5.48xlarge", Some(InstanceLifecycleType::CapacityBlock));
        let g = inst("g5.xlarge", None);
        assert!(counts_against(&od, Family::P, QuotaMarket::OnDemand));
        assert!(counts_against(&od, Family::P, QuotaMarket::Reserved));
        assert!(!counts_against(&od, Family::P, QuotaMarket::Spot));
        assert!(counts_against(&sp, Family::P, QuotaMarket::Spot));
        assert!(!counts_against(&sp, Family::P, QuotaMarket::OnDemand));
        assert!(!counts_against(&block, Family::P, QuotaMarket::OnDemand));
        assert!(!counts_against(&g, Family::P, QuotaMarket::OnDemand));
        assert!(counts_against(&g, Family::GAndVt, QuotaMarket::OnDemand));
    }

    #[test]
    fn the_raise_command_names_code_and_region() {
        assert_eq!(
            raise_command("L-417A185B", "us-east-2"),
            "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-417A185B --desired-value N --region us-east-2"
        );
    }
}
