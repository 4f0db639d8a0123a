//! The embedded data: it parses, its references agree, lookups find it.

mod matching;
mod sources;

use super::*;

fn cat() -> &'static Catalog {
    Catalog::builtin()
}

/// The built-in offering of `instance_type` in `region`, which must exist.
fn offering(cloud: Cloud, region: &str, instance_type: &str) -> &'static Offering {
    cat()
        .offering(cloud, region, instance_type)
        .unwrap_or_else(|| panic!("no {cloud} {instance_type} in {region}"))
}

/// The built-in availability of `instance_type` in `region`, which must be
/// known.
fn availability(cloud: Cloud, region: &str, instance_type: &str) -> &'static Availability {
    cat()
        .availability(cloud, region, instance_type)
        .unwrap_or_else(|| panic!("no availability of {cloud} {instance_type} in {region}"))
}

#[test]
fn embedded_data_parses() {
    let c = Catalog::from_sources(&CatalogSources::builtin()).expect("embedded catalog must parse");
    assert_eq!(c.gpus().len(), 27);
    for cloud in Cloud::ALL {
        assert!(
            !c.instance_types(cloud).is_empty(),
            "{cloud} has instance types"
        );
        assert!(!c.regions(cloud).is_empty(), "{cloud} has regions");
        assert!(
            c.offerings().iter().any(|o| o.cloud == cloud),
            "{cloud} has offerings"
        );
    }
    assert_eq!(c.instance_types(Cloud::Aws).len(), 34);
    assert_eq!(
        c.offerings()
            .iter()
            .filter(|o| o.cloud == Cloud::Aws)
            .count(),
        387
    );
}

/// Every region of each GPU-selling cloud that a source names is in the
/// catalog, with its zones (issue 30 item 8: `eu-central-1` was "not a aws
/// region gpuform knows").
#[test]
fn regions_cover_the_clouds_gpu_regions() {
    let c = cat();
    for (cloud, region) in [
        (Cloud::Aws, "eu-central-1"),
        (Cloud::Aws, "us-east-2"),
        (Cloud::Aws, "ap-south-1"),
        (Cloud::Aws, "sa-east-1"),
        (Cloud::Alibaba, "cn-guangzhou"),
        (Cloud::Alibaba, "cn-zhangjiakou"),
    ] {
        let r = c
            .region(cloud, region)
            .unwrap_or_else(|| panic!("{cloud} region {region} is missing"));
        assert!(!r.zones.is_empty(), "{cloud} {region} has no zones");
    }
    for cloud in Cloud::ALL {
        for r in c.regions(cloud) {
            assert!(!r.zones.is_empty(), "{cloud} {} has no zones", r.name);
            for z in &r.zones {
                assert!(
                    z.starts_with(&r.name) && z.len() > r.name.len(),
                    "{cloud} zone {z} is not in {}",
                    r.name
                );
            }
        }
    }
    assert!(c.regions(Cloud::Aws).len() >= 28);
    assert!(c.regions(Cloud::Alibaba).len() >= 11);
    // eu-central-1 sells L40S (g6e) per tsaol/aws-gpu.
    assert!(c
        .regions_offering(Cloud::Aws, "L40S")
        .contains(&"eu-central-1"));
}

/// Every availability row names a region of its cloud's regions.csv, and its
/// zones are that region's; nothing is offered in a region the catalog lacks.
#[test]
fn availability_rows_name_known_regions() {
    let c = cat();
    for o in c.offerings() {
        let r = c.region(o.cloud, &o.region).unwrap_or_else(|| {
            panic!(
                "{} {} is offered in unknown region {}",
                o.cloud, o.instance_type, o.region
            )
        });
        if let Some(zones) = &c
            .availability(o.cloud, &o.region, &o.instance_type)
            .expect("availability")
            .zones
        {
            for z in zones {
                assert!(r.zones.contains(z), "{} {}: zone {z}", o.cloud, o.region);
            }
        }
    }
}

#[test]
fn references_are_consistent() {
    let c = cat();
    for t in c.instance_types.iter() {
        let g = c.gpu(&t.gpu_model).expect("instance GPU model is known");
        assert_eq!(g.name, t.gpu_model, "{} uses the canonical name", t.name);
    }
    for o in c.offerings() {
        let r = c
            .region(o.cloud, &o.region)
            .unwrap_or_else(|| panic!("unknown region {}", o.region));
        assert_eq!(r.cloud, o.cloud);
        assert!(c.instance_type(o.cloud, &o.instance_type).is_some());
        for p in o.prices.values() {
            assert!(p.hourly > 0.0 && !p.source.is_empty() && !p.as_of.is_empty());
        }
        let a = c
            .availability(o.cloud, &o.region, &o.instance_type)
            .expect("availability");
        if let Some(z) = &a.zones {
            assert!(z.iter().all(|z| r.zones.contains(z)));
        }
    }
    // 3-year prices only where a source gave them (AWS's snapshot), each
    // below the same offering's 1-year and on-demand prices.
    for o in c.offerings() {
        let Some(three) = o.prices.get(&PricingModel::Reserved3y) else {
            continue;
        };
        assert_eq!(o.cloud, Cloud::Aws, "{} {}", o.region, o.instance_type);
        assert!(
            three.source.contains("yrTerm3Standard.noUpfront"),
            "{}",
            three.source
        );
        for shorter in [PricingModel::Reserved1y, PricingModel::OnDemand] {
            if let Some(p) = o.prices.get(&shorter) {
                assert!(
                    three.hourly < p.hourly,
                    "{} {}: 3y {} >= {}",
                    o.region,
                    o.instance_type,
                    three.hourly,
                    p.hourly
                );
            }
        }
    }
    // Offerings sorted and unique.
    let keys: Vec<_> = c
        .offerings()
        .iter()
        .map(|o| (o.cloud, &o.region, &o.instance_type))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keys, sorted);
}

#[test]
fn gpu_lookup_and_aliases() {
    let c = cat();
    assert_eq!(c.gpu("a100-80gb").unwrap().name, "A100-80GB");
    assert_eq!(c.gpu("A100 80GB").unwrap().name, "A100-80GB");
    assert_eq!(c.gpu("H100").unwrap().name, "H100-80GB-SXM");
    assert_eq!(c.gpu("h100-80gb").unwrap().name, "H100-80GB-SXM");
    assert_eq!(c.gpu("H200").unwrap().name, "H200-141GB");
    assert_eq!(c.gpu("H800").unwrap().name, "H800-80GB-SXM");
    assert_eq!(c.gpu("A10G").unwrap().name, "A10G");
    assert_eq!(c.gpu("a10").unwrap().name, "A10");
    assert_eq!(c.gpu("mi300x").unwrap().name, "MI300X");
    match c.gpu("A100") {
        Err(GpuLookupError::Ambiguous { choices, .. }) => {
            assert_eq!(choices, ["A100-40GB", "A100-80GB"])
        }
        other => panic!("A100 must be ambiguous, got {other:?}"),
    }
    match c.gpu("v100") {
        Err(GpuLookupError::Ambiguous { choices, .. }) => {
            assert_eq!(choices, ["V100-16GB", "V100-32GB", "V100-32GB-PCIe"])
        }
        other => panic!("V100 must be ambiguous, got {other:?}"),
    }
    let e = c.gpu("A100").unwrap_err().to_string();
    assert!(e.contains("A100-40GB") && e.contains("A100-80GB"), "{e}");
    match c.gpu("A100-80") {
        Err(GpuLookupError::Unknown { suggestions, .. }) => {
            assert_eq!(suggestions.first().map(String::as_str), Some("A100-80GB"))
        }
        other => panic!("expected unknown, got {other:?}"),
    }
    match c.gpu("H1OO") {
        Err(GpuLookupError::Unknown { suggestions, .. }) => {
            assert!(
                suggestions.iter().any(|s| s == "H100-80GB-SXM"),
                "{suggestions:?}"
            )
        }
        other => panic!("expected unknown, got {other:?}"),
    }
    assert!(c
        .gpu("quantum-flux-9000")
        .unwrap_err()
        .to_string()
        .starts_with("unknown GPU"));
}

#[test]
fn gpu_facts() {
    let c = cat();
    let a100 = c.gpu("A100-80GB").unwrap();
    assert!(a100.nvlink);
    assert!(a100.mig_profiles.contains(&MigProfile {
        name: "3g.40gb".into(),
        per_gpu: 2
    }));
    assert!(a100.mig_profiles.contains(&MigProfile {
        name: "1g.10gb".into(),
        per_gpu: 7
    }));
    assert!(c.gpu("H100").unwrap().nvlink);
    assert!(!c.gpu("T4").unwrap().nvlink);
    assert!(!c.gpu("V100-32GB-PCIe").unwrap().nvlink);
    assert!(c.gpu("T4").unwrap().mig_profiles.is_empty());
    // H20 per-profile counts are unverified: left empty, not guessed.
    assert!(c.gpu("H20").unwrap().mig_profiles.is_empty());
    let d = c.gpu_details("H100").unwrap();
    assert_eq!(d.fp16_tflops_dense, Some(989.0));
    assert_eq!(c.gpu_details("A10G").unwrap().fp16_tflops_dense, None);
}

#[test]
fn instance_and_region_lookups() {
    let c = cat();
    let p4de = c.instance_type(Cloud::Aws, "p4de.24xlarge").unwrap();
    assert_eq!((p4de.gpu_model.as_str(), p4de.gpu_count), ("A100-80GB", 8));
    assert_eq!(p4de.interconnect, Some(Interconnect::Nvlink));
    assert_eq!(p4de.rdma, Some(RdmaKind::Efa));
    assert_eq!(p4de.family(), "p4de");
    assert_eq!(
        c.instance_type(Cloud::Alibaba, "ecs.gn7i-c8g1.2xlarge")
            .unwrap()
            .family(),
        "gn7i"
    );
    assert_eq!(
        c.instance_type(Cloud::Huawei, "p2s.2xlarge.8")
            .unwrap()
            .family(),
        "p2s"
    );
    // Empty cells stay unknown.
    assert_eq!(
        c.instance_type(Cloud::Aws, "p3.16xlarge")
            .unwrap()
            .interconnect,
        None
    );
    assert_eq!(
        c.instance_type(Cloud::Aws, "p6-b300.48xlarge")
            .unwrap()
            .network_gbps,
        None
    );
    let use1 = c.region(Cloud::Aws, "us-east-1").unwrap();
    assert_eq!(use1.zones.first().map(String::as_str), Some("us-east-1a"));
    assert!(c.region(Cloud::Aws, "mars-1").is_none());
    let aws_regions: Vec<&str> = c
        .regions(Cloud::Aws)
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        aws_regions[..5],
        [
            "us-east-1",
            "us-west-2",
            "ap-southeast-1",
            "ap-northeast-1",
            "eu-west-1"
        ]
    );
    assert!(aws_regions.contains(&"eu-central-1"));
    assert!(c
        .regions_offering(Cloud::Aws, "H100")
        .contains(&"us-east-1"));
    assert!(!c
        .regions_offering(Cloud::Aws, "H100")
        .contains(&"eu-west-1"));
}

#[test]
fn prices_keep_source_and_date() {
    let c = cat();
    let o = offering(Cloud::Aws, "us-east-1", "p4de.24xlarge");
    let od = &o.prices[&PricingModel::OnDemand];
    assert_eq!((od.hourly, od.currency), (27.44705, Currency::USD));
    assert_eq!(od.as_of, "2026-08");
    let spot = &o.prices[&PricingModel::Spot];
    assert_eq!(spot.hourly, 8.6505);
    assert!(spot.source.contains("skypilot"));
    assert_eq!(o.prices[&PricingModel::Reserved1y].hourly, 17.401365);
    // p5e: spot only.
    let p5e = offering(Cloud::Aws, "us-west-2", "p5e.48xlarge");
    assert!(
        !p5e.prices.contains_key(&PricingModel::OnDemand)
            && p5e.prices.contains_key(&PricingModel::Spot)
    );
    // A regional price wins over a price whose source names no region.
    for (region, hourly, currency) in [
        ("ap-guangzhou", 1.26, Currency::USD),
        ("ap-shanghai", 8.68, Currency::CNY),
    ] {
        let o = offering(Cloud::Tencent, region, "GN7.2XLARGE32");
        let on_demand = &o.prices[&PricingModel::OnDemand];
        assert_eq!(
            (on_demand.hourly, on_demand.currency),
            (hourly, currency),
            "{region}"
        );
    }
    // Huawei: one sourced price (p2v.16xlarge.8 in cn-north-4), nothing else.
    let priced: Vec<_> = c
        .offerings()
        .iter()
        .filter(|o| o.cloud == Cloud::Huawei && !o.prices.is_empty())
        .map(|o| (o.region.as_str(), o.instance_type.as_str()))
        .collect();
    assert_eq!(priced, vec![("cn-north-4", "p2v.16xlarge.8")]);
    // Imported rows keep the CSV's source and date verbatim.
    let gn7e = offering(Cloud::Alibaba, "cn-beijing", "ecs.gn7e-c16g1.32xlarge");
    let od = &gn7e.prices[&PricingModel::OnDemand];
    assert_eq!(od.currency, Currency::CNY);
    assert!(
        od.source.contains("karpenter-provider-alibabacloud"),
        "{}",
        od.source
    );
    assert_eq!(od.as_of, "2024-12-30 (commit date; file itself undated)");
    // Types the price list names and the catalog lacked are added.
    assert_eq!(
        c.instance_type(Cloud::Alibaba, "ecs.ebmgn7e.32xlarge")
            .map(|t| (t.gpu_model.as_str(), t.gpu_count)),
        Some(("A100-80GB", 8))
    );
    let p = Price {
        hourly: 70.0,
        currency: Currency::CNY,
        source: "x".into(),
        as_of: "y".into(),
        basis: PriceBasis::Sourced,
    };
    assert!((p.hourly_usd(7.0) - 10.0).abs() < 1e-12);
    assert_eq!(
        Price {
            currency: Currency::USD,
            ..p
        }
        .hourly_usd(7.0),
        70.0
    );
    assert!(!c
        .notes(Cloud::Aws, "us-west-2", "p6-b200.48xlarge")
        .is_empty());
    assert!(!c
        .subscription_prices(Cloud::Tencent, "GN7.2XLARGE32")
        .is_empty());
}

#[test]
fn availability_is_labelled() {
    let c = cat();
    let a = availability(Cloud::Alibaba, "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge");
    assert!(a.assumed && a.zones.is_none());
    let t = availability(Cloud::Tencent, "ap-beijing", "GT4.41XLARGE948");
    assert!(!t.assumed);
    assert_eq!(t.zones.as_deref(), Some(&["ap-beijing-5".to_string()][..]));
    assert!(c
        .availability(Cloud::Tencent, "ap-singapore", "GT4.41XLARGE948")
        .is_none());
    assert!(availability(Cloud::Huawei, "cn-north-4", "p3.16xlarge.8").assumed);
    assert!(!availability(Cloud::Aws, "us-east-1", "p5.48xlarge").assumed);
}
