//! Catalogs built from given sources, and the errors malformed rows give.

use crate::*;

/// Asserts that `e` points at line `line` of `file`.
fn assert_at(e: &CatalogError, file: &str, line: u64) {
    assert_eq!((e.file.as_str(), e.line), (file, line), "{e}");
}

fn tiny_sources<'a>(
    gpus: &'a str,
    types: &'a str,
    regions: &'a str,
    avail: &'a str,
    prices: &'a str,
) -> CatalogSources<'a> {
    CatalogSources {
        gpus: Source {
            file: "gpus.csv",
            text: gpus,
        },
        clouds: vec![CloudSources {
            cloud: Cloud::Aws,
            instance_types: Source {
                file: "aws/instance_types.csv",
                text: types,
            },
            regions: Source {
                file: "aws/regions.csv",
                text: regions,
            },
            availability: Source {
                file: "aws/availability.csv",
                text: avail,
            },
            prices: Source {
                file: "aws/prices.csv",
                text: prices,
            },
            subscriptions: None,
            notes: None,
        }],
    }
}

const G: &str = "name,aliases,shared_names,vendor,mem_gib,nvlink,mig_profiles,source\nT4,Tesla-T4,,NVIDIA,16,no,,s\nL4,,,NVIDIA,24,no,,s\n";
const T: &str = "name,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,interconnect,rdma,network_gbps,source\ng4dn.xlarge,T4,1,16,4,16,pcie,none,25,s\ng6.xlarge,L4,1,22.35,4,16,pcie,none,10,s\n";
const R: &str = "region,zones,source\nus-east-1,us-east-1a;us-east-1b,s\n";
const A: &str =
    "region,offer,zones,source\nus-east-1,g4dn,us-east-1a,s\nus-east-1,g6.xlarge,,assumed\n";
const P: &str = "region,instance_type,pricing,price,currency,source,as_of\nus-east-1,g4dn.xlarge,on-demand,0.526,USD,s,2026-08\n*,g6.xlarge,spot,0.3,USD,s,2026-08\n";

#[test]
fn from_sources_builds_a_small_catalog() {
    let c = Catalog::from_sources(&tiny_sources(G, T, R, A, P)).unwrap();
    assert_eq!(c.offerings().len(), 2);
    assert_eq!(
        c.offering(Cloud::Aws, "us-east-1", "g6.xlarge")
            .unwrap()
            .prices[&PricingModel::Spot]
            .hourly,
        0.3
    );
    assert_eq!(
        c.availability(Cloud::Aws, "us-east-1", "g4dn.xlarge")
            .unwrap()
            .zones,
        Some(vec!["us-east-1a".to_string()])
    );
}

#[test]
fn malformed_rows_name_file_and_line() {
    let bad_count = T.replace("g6.xlarge,L4,1,", "g6.xlarge,L4,one,");
    let e = Catalog::from_sources(&tiny_sources(G, &bad_count, R, A, P)).unwrap_err();
    assert_at(&e, "aws/instance_types.csv", 3);
    assert!(
        e.to_string()
            .starts_with("aws/instance_types.csv:3: column `gpu_count`"),
        "{e}"
    );

    let bad_gpu = T.replace("g6.xlarge,L4", "g6.xlarge,L5");
    let e = Catalog::from_sources(&tiny_sources(G, &bad_gpu, R, A, P)).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.message.contains("unknown GPU model `L5`"));

    let alias_gpu = T.replace("g4dn.xlarge,T4", "g4dn.xlarge,Tesla-T4");
    let e = Catalog::from_sources(&tiny_sources(G, &alias_gpu, R, A, P)).unwrap_err();
    assert!(e.message.contains("canonical name `T4`"), "{e}");

    let bad_region = A.replace("us-east-1,g6.xlarge", "us-east-9,g6.xlarge");
    let e = Catalog::from_sources(&tiny_sources(G, T, R, &bad_region, P)).unwrap_err();
    assert_at(&e, "aws/availability.csv", 3);

    let no_zones = R.replace("us-east-1a;us-east-1b", "");
    let e = Catalog::from_sources(&tiny_sources(G, T, &no_zones, A, P)).unwrap_err();
    assert_at(&e, "aws/regions.csv", 2);
    assert!(e.message.contains("`zones` is empty"), "{e}");

    let bad_zone = R.replace("us-east-1b", "us-west-1b");
    let e = Catalog::from_sources(&tiny_sources(G, T, &bad_zone, A, P)).unwrap_err();
    assert_at(&e, "aws/regions.csv", 2);

    let unoffered = format!("{P}us-east-1,g6.xlarge,on-demand,abc,USD,s,2026-08\n");
    let e = Catalog::from_sources(&tiny_sources(G, T, R, A, &unoffered)).unwrap_err();
    assert_at(&e, "aws/prices.csv", 4);

    let dup = format!("{P}us-east-1,g4dn.xlarge,on-demand,0.6,USD,s,2026-08\n");
    let e = Catalog::from_sources(&tiny_sources(G, T, R, A, &dup)).unwrap_err();
    assert!(e.message.contains("second on-demand price"), "{e}");

    let bad_mig = G.replace(
        "T4,Tesla-T4,,NVIDIA,16,no,,s",
        "T4,Tesla-T4,,NVIDIA,16,no,3g.40gb,s",
    );
    let e = Catalog::from_sources(&tiny_sources(&bad_mig, T, R, A, P)).unwrap_err();
    assert_at(&e, "gpus.csv", 2);

    let ragged = T.replace("g6.xlarge,L4,1,22.35,4,16,pcie,none,10,s", "g6.xlarge,L4,1");
    let e = Catalog::from_sources(&tiny_sources(G, &ragged, R, A, P)).unwrap_err();
    assert_at(&e, "aws/instance_types.csv", 3);

    let missing_col = "name,gpu_model\nx,T4\n";
    let e = Catalog::from_sources(&tiny_sources(G, missing_col, R, A, P)).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.contains("missing column `gpu_count`"), "{e}");

    let lonely_shared = G.replace("T4,Tesla-T4,,", "T4,Tesla-T4,Turing,");
    let e = Catalog::from_sources(&tiny_sources(&lonely_shared, T, R, A, P)).unwrap_err();
    assert!(e.message.contains("make it an alias"), "{e}");
}

#[test]
fn a_one_year_subscription_is_reserved_1y_on_the_subscription_clouds() {
    let types = "name,gpu_model,gpu_count,gpu_mem_gib,vcpus,ram_gib,interconnect,rdma,network_gbps,source\necs.gn6i-c4g1.xlarge,T4,1,16,4,15,pcie,,4,s\n";
    let regions = "region,zones,source\ncn-beijing,cn-beijing-a,s\ncn-shanghai,cn-shanghai-a,s\n";
    let avail = "region,offer,zones,source\ncn-beijing,gn6i,,s\ncn-shanghai,gn6i,,s\n";
    let prices = "region,instance_type,pricing,price,currency,source,as_of\n";
    let subs = "region,instance_type,months,price,currency,source,as_of,note\ncn-beijing,ecs.gn6i-c4g1.xlarge,12,17520,CNY,quote,2026-10-01,\n*,ecs.gn6i-c4g1.xlarge,1,1500,CNY,list,2026-09,\n";
    let src = CatalogSources {
        gpus: Source {
            file: "gpus.csv",
            text: G,
        },
        clouds: vec![CloudSources {
            cloud: Cloud::Alibaba,
            instance_types: Source {
                file: "t",
                text: types,
            },
            regions: Source {
                file: "r",
                text: regions,
            },
            availability: Source {
                file: "a",
                text: avail,
            },
            prices: Source {
                file: "p",
                text: prices,
            },
            subscriptions: Some(Source {
                file: "s",
                text: subs,
            }),
            notes: None,
        }],
    };
    let c = Catalog::from_sources(&src).unwrap();
    let bj = &c
        .offering(Cloud::Alibaba, "cn-beijing", "ecs.gn6i-c4g1.xlarge")
        .unwrap()
        .prices[&PricingModel::Reserved1y];
    // ¥17,520 a year over 12 × 730 h.
    assert!((bj.hourly - 2.0).abs() < 1e-12);
    assert_eq!(
        (bj.currency, bj.basis),
        (Currency::CNY, PriceBasis::Sourced)
    );
    assert!(
        bj.source.starts_with("quote [one-year subscription"),
        "{}",
        bj.source
    );
    assert_eq!(bj.as_of, "2026-10-01");
    // A one-month subscription is not a 1-year term; cn-shanghai has no yearly quote.
    assert!(c
        .offering(Cloud::Alibaba, "cn-shanghai", "ecs.gn6i-c4g1.xlarge")
        .unwrap()
        .prices
        .is_empty());
    assert_eq!(
        c.subscription(Cloud::Alibaba, "cn-shanghai", "ecs.gn6i-c4g1.xlarge", 1)
            .map(|s| (s.price, s.basis())),
        Some((1500.0, PriceBasis::Assumed))
    );
}
