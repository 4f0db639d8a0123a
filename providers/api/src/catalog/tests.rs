use super::*;

fn cat() -> &'static Catalog {
    Catalog::builtin()
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
        118
    );
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
    // No invented 3-year prices.
    assert!(c
        .offerings()
        .iter()
        .all(|o| !o.prices.contains_key(&PricingModel::Reserved3y)));
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
        aws_regions,
        [
            "us-east-1",
            "us-west-2",
            "ap-southeast-1",
            "ap-northeast-1",
            "eu-west-1"
        ]
    );
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
    let o = c
        .offering(Cloud::Aws, "us-east-1", "p4de.24xlarge")
        .unwrap();
    let od = &o.prices[&PricingModel::OnDemand];
    assert_eq!((od.hourly, od.currency), (27.44705, Currency::USD));
    assert_eq!(od.as_of, "2026-08");
    let spot = &o.prices[&PricingModel::Spot];
    assert_eq!(spot.hourly, 8.6505);
    assert!(spot.source.contains("skypilot"));
    assert_eq!(o.prices[&PricingModel::Reserved1y].hourly, 17.401365);
    // p5e: spot only.
    let p5e = c.offering(Cloud::Aws, "us-west-2", "p5e.48xlarge").unwrap();
    assert!(
        !p5e.prices.contains_key(&PricingModel::OnDemand)
            && p5e.prices.contains_key(&PricingModel::Spot)
    );
    // A regional price wins over a price whose source names no region.
    let gz = c
        .offering(Cloud::Tencent, "ap-guangzhou", "GN7.2XLARGE32")
        .unwrap();
    assert_eq!(
        (
            gz.prices[&PricingModel::OnDemand].hourly,
            gz.prices[&PricingModel::OnDemand].currency
        ),
        (1.26, Currency::USD)
    );
    let sh = c
        .offering(Cloud::Tencent, "ap-shanghai", "GN7.2XLARGE32")
        .unwrap();
    assert_eq!(
        (
            sh.prices[&PricingModel::OnDemand].hourly,
            sh.prices[&PricingModel::OnDemand].currency
        ),
        (8.68, Currency::CNY)
    );
    // Huawei has no public prices.
    assert!(c
        .offerings()
        .iter()
        .filter(|o| o.cloud == Cloud::Huawei)
        .all(|o| o.prices.is_empty()));
    let p = Price {
        hourly: 70.0,
        currency: Currency::CNY,
        source: "x".into(),
        as_of: "y".into(),
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
    let a = c
        .availability(Cloud::Alibaba, "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge")
        .unwrap();
    assert!(a.assumed && a.zones.is_none());
    let t = c
        .availability(Cloud::Tencent, "ap-beijing", "GT4.41XLARGE948")
        .unwrap();
    assert!(!t.assumed);
    assert_eq!(t.zones.as_deref(), Some(&["ap-beijing-5".to_string()][..]));
    assert!(c
        .availability(Cloud::Tencent, "ap-singapore", "GT4.41XLARGE948")
        .is_none());
    assert!(
        c.availability(Cloud::Huawei, "cn-north-4", "p3.16xlarge.8")
            .unwrap()
            .assumed
    );
    assert!(
        !c.availability(Cloud::Aws, "us-east-1", "p5.48xlarge")
            .unwrap()
            .assumed
    );
}

/// A small deterministic generator (splitmix64) so the test needs no crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn maybe<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        if self.below(2) == 0 {
            None
        } else {
            Some(f(self))
        }
    }
}

fn random_query(rng: &mut Rng, c: &Catalog) -> OfferQuery {
    let clouds = Cloud::ALL;
    let cloud = rng.maybe(|r| clouds[r.below(clouds.len())]);
    let region = rng.maybe(|r| {
        let regs: Vec<&Region> = match cloud {
            Some(cl) => c.regions(cl),
            None => c.regions.iter().collect(),
        };
        regs[r.below(regs.len())].name.clone()
    });
    let gpu_model = rng.maybe(|r| c.gpus()[r.below(c.gpus().len())].name.clone());
    let gpu_count = rng.maybe(|r| [1, 2, 4, 8][r.below(4)]);
    let interconnect = rng.maybe(|r| {
        if r.below(2) == 0 {
            Interconnect::Nvlink
        } else {
            Interconnect::Pcie
        }
    });
    let rdma = rng.maybe(|r| r.below(2) == 0);
    let pricing = PricingModel::ALL[rng.below(4)];
    let min_gpu_mem_gib = rng.maybe(|r| [16.0, 24.0, 40.0, 80.0][r.below(4)]);
    let max_hourly_usd = rng.maybe(|r| [1.0, 5.0, 20.0, 60.0, 200.0][r.below(5)]);
    let cny_per_usd = [7.0, 6.5, 7.3][rng.below(3)];
    OfferQuery {
        cloud,
        region,
        gpu_model,
        gpu_count,
        interconnect,
        rdma,
        pricing,
        min_gpu_mem_gib,
        max_hourly_usd,
        cny_per_usd,
    }
}

/// The obvious, slow reading of the query semantics.
fn brute_force(c: &Catalog, q: &OfferQuery) -> Vec<(Cloud, String, String, Option<f64>)> {
    let mut out = Vec::new();
    for o in c.offerings() {
        let t = c
            .instance_types
            .iter()
            .find(|t| t.cloud == o.cloud && t.name == o.instance_type)
            .unwrap();
        let ok = q.cloud.is_none_or(|x| x == o.cloud)
            && q.region.as_ref().is_none_or(|x| *x == o.region)
            && q.gpu_model.as_ref().is_none_or(|x| *x == t.gpu_model)
            && q.gpu_count.is_none_or(|x| x == t.gpu_count)
            && q.interconnect.is_none_or(|x| t.interconnect == Some(x))
            && (q.rdma != Some(true) || t.rdma.is_some())
            && q.min_gpu_mem_gib.is_none_or(|x| t.gpu_mem_gib >= x);
        if !ok {
            continue;
        }
        let hourly = o.prices.get(&q.pricing).map(|p| match p.currency {
            Currency::USD => p.hourly,
            Currency::CNY => p.hourly / q.cny_per_usd,
        });
        if let Some(max) = q.max_hourly_usd {
            if !matches!(hourly, Some(h) if h <= max) {
                continue;
            }
        }
        out.push((
            o.cloud,
            o.region.clone(),
            o.instance_type.clone(),
            hourly.map(|h| h / t.gpu_count as f64),
        ));
    }
    out.sort_by(|a, b| {
        let pa = a.3.unwrap_or(f64::INFINITY);
        let pb = b.3.unwrap_or(f64::INFINITY);
        pa.partial_cmp(&pb)
            .unwrap()
            .then_with(|| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)))
    });
    out
}

#[test]
fn matching_agrees_with_brute_force() {
    let c = cat();
    let mut rng = Rng(0x6770_7566_6f72_6d21);
    let mut non_empty = 0;
    for _ in 0..400 {
        let q = random_query(&mut rng, c);
        let got: Vec<_> = c
            .matching(&q)
            .iter()
            .map(|m| {
                (
                    m.offering.cloud,
                    m.offering.region.clone(),
                    m.offering.instance_type.clone(),
                    m.per_gpu_hour_usd,
                )
            })
            .collect();
        let want = brute_force(c, &q);
        assert_eq!(got, want, "query {q:?}");
        if !got.is_empty() {
            non_empty += 1;
        }
        for m in c.matching(&q) {
            assert_eq!(
                m.hourly_usd.map(|h| h / f64::from(m.instance.gpu_count)),
                m.per_gpu_hour_usd
            );
            assert!(m.difference.is_none());
        }
    }
    assert!(
        non_empty > 40,
        "random queries should often match ({non_empty})"
    );
}

#[test]
fn matching_sorts_by_price_per_gpu_hour() {
    let c = cat();
    let q = OfferQuery {
        gpu_model: Some("H100-80GB-SXM".into()),
        ..OfferQuery::default()
    };
    let m = c.matching(&q);
    assert!(!m.is_empty());
    assert_eq!(
        (m[0].offering.region.as_str(), m[0].instance.name.as_str()),
        ("us-east-1", "p5.48xlarge")
    );
    assert!((m[0].per_gpu_hour_usd.unwrap() - 6.88).abs() < 1e-9);
    // Aliases resolve; ambiguous names match nothing.
    let q2 = OfferQuery {
        gpu_model: Some("h100".into()),
        ..OfferQuery::default()
    };
    assert_eq!(c.matching(&q2), m);
    assert!(c
        .matching(&OfferQuery {
            gpu_model: Some("A100".into()),
            ..OfferQuery::default()
        })
        .is_empty());
}

#[test]
fn closest_names_the_difference() {
    let c = cat();
    // No 4 x A100-80GB on AWS: the nearest is 8 x.
    let q = OfferQuery {
        cloud: Some(Cloud::Aws),
        region: Some("us-east-1".into()),
        gpu_model: Some("A100-80GB".into()),
        gpu_count: Some(4),
        ..OfferQuery::default()
    };
    assert!(c.matching(&q).is_empty());
    let near = c.closest(&q, 3);
    assert_eq!(near[0].instance.name, "p4de.24xlarge");
    assert_eq!(near[0].offering.region, "us-east-1");
    assert_eq!(
        near[0].difference.as_deref(),
        Some("8 x A100-80GB instead of 4")
    );
    // Not offered in eu-west-1: another region.
    let q = OfferQuery {
        region: Some("eu-west-1".into()),
        gpu_count: Some(8),
        ..q
    };
    let near = c.closest(&q, 2);
    assert_eq!(near.len(), 2);
    assert_eq!(
        near[0].difference.as_deref(),
        Some("in us-east-1, not eu-west-1")
    );
    // Only on another cloud.
    let q = OfferQuery {
        cloud: Some(Cloud::Aws),
        gpu_model: Some("H20".into()),
        ..OfferQuery::default()
    };
    let near = c.closest(&q, 1);
    assert_eq!(near[0].offering.cloud, Cloud::Alibaba);
    assert!(near[0]
        .difference
        .as_deref()
        .unwrap()
        .contains("on alibaba, not aws"));
    // Exact matches come back unchanged.
    let q = OfferQuery {
        gpu_model: Some("T4".into()),
        ..OfferQuery::default()
    };
    assert_eq!(
        c.closest(&q, 2),
        c.matching(&q).into_iter().take(2).collect::<Vec<_>>()
    );
    // Interconnect relaxed.
    let q = OfferQuery {
        cloud: Some(Cloud::Aws),
        gpu_model: Some("L4".into()),
        interconnect: Some(Interconnect::Nvlink),
        ..OfferQuery::default()
    };
    let near = c.closest(&q, 5);
    assert!(
        !near.is_empty()
            && near
                .iter()
                .all(|m| m.difference.as_deref() == Some("pcie instead of nvlink"))
    );
    assert!(near.len() <= 5);
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
    assert_eq!(
        (e.file.as_str(), e.line),
        ("aws/instance_types.csv", 3),
        "{e}"
    );
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
    assert_eq!(
        (e.file.as_str(), e.line),
        ("aws/availability.csv", 3),
        "{e}"
    );

    let bad_zone = R.replace("us-east-1b", "us-west-1b");
    let e = Catalog::from_sources(&tiny_sources(G, T, &bad_zone, A, P)).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("aws/regions.csv", 2), "{e}");

    let unoffered = format!("{P}us-east-1,g6.xlarge,on-demand,abc,USD,s,2026-08\n");
    let e = Catalog::from_sources(&tiny_sources(G, T, R, A, &unoffered)).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("aws/prices.csv", 4), "{e}");

    let dup = format!("{P}us-east-1,g4dn.xlarge,on-demand,0.6,USD,s,2026-08\n");
    let e = Catalog::from_sources(&tiny_sources(G, T, R, A, &dup)).unwrap_err();
    assert!(e.message.contains("second on-demand price"), "{e}");

    let bad_mig = G.replace(
        "T4,Tesla-T4,,NVIDIA,16,no,,s",
        "T4,Tesla-T4,,NVIDIA,16,no,3g.40gb,s",
    );
    let e = Catalog::from_sources(&tiny_sources(&bad_mig, T, R, A, P)).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("gpus.csv", 2), "{e}");

    let ragged = T.replace("g6.xlarge,L4,1,22.35,4,16,pcie,none,10,s", "g6.xlarge,L4,1");
    let e = Catalog::from_sources(&tiny_sources(G, &ragged, R, A, P)).unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line),
        ("aws/instance_types.csv", 3),
        "{e}"
    );

    let missing_col = "name,gpu_model\nx,T4\n";
    let e = Catalog::from_sources(&tiny_sources(G, missing_col, R, A, P)).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.contains("missing column `gpu_count`"), "{e}");

    let lonely_shared = G.replace("T4,Tesla-T4,,", "T4,Tesla-T4,Turing,");
    let e = Catalog::from_sources(&tiny_sources(&lonely_shared, T, R, A, P)).unwrap_err();
    assert!(e.message.contains("make it an alias"), "{e}");
}
