//! Per-family account quotas, as the mirrored cloud groups them (the
//! `quota=GROUP:LIMIT[@REGION]` fault): enforced at create and answered by
//! `Provider::quota` from the same numbers, with usage counted from the
//! sandbox's own inventory of live instances.
//!
//! The groups mirror each cloud's own limits:
//! - AWS: the EC2 instance-family quotas of Service Quotas, in vCPUs
//!   (`P`, `G` for "G and VT", `F`, `X`, `Inf`, `Trn`, `DL`, `Standard`;
//!   codes of P, G and VT and Standard as Service Quotas lists them);
//! - Alibaba: `vcpu`, the region's vCPUs of pay-as-you-go (and spot)
//!   instances, as `DescribeAccountAttributes` reports them;
//! - Tencent: `instances`, instances per zone in `DescribeAccountQuota`
//!   (the sandbox counts them per region);
//! - Huawei: `cores`, `ShowServerLimits`' `maxTotalCores`.
//!
//! The sandbox keeps one number per group for every market: a real cloud's
//! spot quota differs, which is the provider's concern, not the engine's.

use crate::cloud::Inner;
use crate::errors::{perr, Code};
use crate::faults::Faults;
use gpuform_catalog::{Catalog, InstanceType};
use gpuform_provider::attr;
use gpuform_provider::{
    Cloud, ErrorKind, ProviderError, QuotaMarket, QuotaReading, QuotaUnit, ResourceKind,
};

/// The quota group an instance type counts against on `cloud`.
pub(crate) fn group(cloud: Cloud, ty: &InstanceType) -> &'static str {
    match cloud {
        Cloud::Aws => {
            let family = ty.family().to_ascii_lowercase();
            let starts = |p: &str| family.starts_with(p);
            if starts("inf") {
                "Inf"
            } else if starts("trn") {
                "Trn"
            } else if starts("dl") {
                "DL"
            } else if starts("vt") || starts("g") {
                "G"
            } else if starts("p") {
                "P"
            } else if starts("f") {
                "F"
            } else if starts("x") {
                "X"
            } else {
                "Standard"
            }
        }
        Cloud::Alibaba => "vcpu",
        Cloud::Tencent => "instances",
        Cloud::Huawei => "cores",
    }
}

/// What one instance of `ty` uses of its group's quota on `cloud`.
fn unit(cloud: Cloud) -> QuotaUnit {
    match cloud {
        Cloud::Tencent => QuotaUnit::Instances,
        _ => QuotaUnit::Vcpus,
    }
}

fn units_of(cloud: Cloud, ty: &InstanceType) -> u64 {
    match unit(cloud) {
        QuotaUnit::Vcpus => u64::from(ty.vcpus),
        QuotaUnit::Gpus => u64::from(ty.gpu_count),
        QuotaUnit::Instances => 1,
    }
}

/// The mirrored cloud's name, code and way to raise the quota of `group`.
fn describe(
    cloud: Cloud,
    group: &str,
    region: &str,
    market: QuotaMarket,
) -> (String, Option<String>, String) {
    let spot = market == QuotaMarket::Spot;
    match cloud {
        Cloud::Aws => {
            let label = if group == "G" { "G and VT" } else { group };
            let name = if spot {
                format!("All {label} Spot Instance Requests")
            } else {
                format!("Running On-Demand {label} instances")
            };
            // Service Quotas' codes for the EC2 families gpuform uses most.
            let code = match (group, spot) {
                ("P", false) => Some("L-417A185B"),
                ("P", true) => Some("L-7212CCBC"),
                ("G", false) => Some("L-DB2E81BA"),
                ("G", true) => Some("L-3819A6DF"),
                ("Standard", false) => Some("L-1216C47A"),
                ("Standard", true) => Some("L-34B43A08"),
                _ => None,
            };
            let raise = match code {
                Some(c) => format!(
                    "aws service-quotas request-service-quota-increase --service-code ec2 \
                     --quota-code {c} --desired-value <vCPUs> --region {region}"
                ),
                None => "the Service Quotas console, Amazon EC2".to_string(),
            };
            (name, code.map(str::to_string), raise)
        }
        Cloud::Alibaba => (
            if spot {
                "spot instance vCPUs".to_string()
            } else {
                "pay-as-you-go instance vCPUs".to_string()
            },
            Some(
                if spot {
                    "max-spot-instance-vcpu-count"
                } else {
                    "max-postpaid-instance-vcpu-count"
                }
                .to_string(),
            ),
            "the ECS console's Privileges & Quotas page (https://ecs.console.aliyun.com/privileges/quota)"
                .to_string(),
        ),
        Cloud::Tencent => (
            format!("{} instances per zone", market_word(market)),
            None,
            "a quota increase ticket in the Tencent Cloud console (CVM quota)".to_string(),
        ),
        Cloud::Huawei => (
            "ECS vCPU cores".to_string(),
            Some("maxTotalCores".to_string()),
            "the Huawei Cloud console's My Quotas page (increase quota)".to_string(),
        ),
    }
}

fn market_word(market: QuotaMarket) -> &'static str {
    match market {
        QuotaMarket::OnDemand => "pay-as-you-go",
        QuotaMarket::Spot => "spot",
        QuotaMarket::Reserved => "prepaid",
    }
}

/// What the live instances of `cloud` in `region` use of `group`.
fn used(inner: &Inner, cloud: Cloud, region: &str, group_name: &str) -> u64 {
    let catalog = Catalog::builtin();
    inner
        .store
        .cloud(cloud)
        .by_id
        .values()
        .filter(|e| e.kind == ResourceKind::Instance && &*e.region == region)
        .filter_map(|e| {
            let attrs = e.attrs();
            let name = attrs.get(attr::INSTANCE_TYPE)?.as_str()?.to_string();
            catalog.instance_type(cloud, &name)
        })
        .filter(|ty| group(cloud, ty) == group_name)
        .map(|ty| units_of(cloud, ty))
        .sum()
}

/// The reading of the quota `ty` counts against in `region`, or `None`
/// when the faults set none for its group.
pub(crate) fn reading(
    inner: &Inner,
    cloud: Cloud,
    faults: &Faults,
    region: &str,
    ty: &InstanceType,
    market: QuotaMarket,
) -> Result<Option<QuotaReading>, ProviderError> {
    let g = group(cloud, ty);
    let Some(limit) = faults.quota_for(g, region) else {
        return Ok(None);
    };
    if faults.quota_unreadable {
        return Err(perr(
            cloud,
            ErrorKind::Auth,
            Code::Denied,
            "not authorized to read the account's quotas (sandbox fault `quota_read=denied`)",
        ));
    }
    let (name, code, raise) = describe(cloud, g, region, market);
    Ok(Some(QuotaReading {
        code,
        name,
        unit: unit(cloud),
        limit: Some(limit),
        used: used(inner, cloud, region, g),
        raise,
    }))
}

/// Refuses a create of one more `ty` beyond its group's quota, as the
/// mirrored cloud does (`VcpuLimitExceeded` on AWS).
pub(crate) fn check_create(
    inner: &Inner,
    cloud: Cloud,
    faults: &Faults,
    region: &str,
    ty: &InstanceType,
) -> Result<(), ProviderError> {
    let g = group(cloud, ty);
    let Some(limit) = faults.quota_for(g, region) else {
        return Ok(());
    };
    let used = used(inner, cloud, region, g);
    let need = units_of(cloud, ty);
    if used + need > limit {
        let (name, code, _) = describe(cloud, g, region, QuotaMarket::OnDemand);
        return Err(perr(
            cloud,
            ErrorKind::Quota,
            Code::Quota,
            format!(
                "quota `{name}`{} in {region} is {limit} {}, {used} in use, {need} more requested for {}",
                code.map(|c| format!(" ({c})")).unwrap_or_default(),
                unit(cloud),
                ty.name
            ),
        ));
    }
    Ok(())
}
