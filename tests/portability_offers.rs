//! `gpuform offers` against brute force over the whole catalog, for many
//! random requirement sets (deterministic seed): same members, same order,
//! same prices. Also the binary's table, JSON and input errors.

// `map_or(true, …)` keeps the workspace MSRV (1.80; `is_none_or` is 1.82).
#![allow(clippy::unnecessary_map_or)]

use assert_cmd::Command;
use gpuform::offers::{self, Day, DEFAULT_STALE_DAYS};
use gpuform_provider::catalog::{Catalog, Interconnect, OfferQuery, PricingModel};
use gpuform_provider::Cloud;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;

/// (cloud, region, instance type, USD per GPU-hour)
type Row = (Cloud, String, String, Option<f64>);

fn brute_force(c: &Catalog, q: &OfferQuery) -> Vec<Row> {
    let model = q.gpu_model.as_ref().map(|m| c.gpu(m).unwrap().name.clone());
    let mut rows: Vec<Row> = Vec::new();
    for o in c.offerings() {
        let t = c.instance_type(o.cloud, &o.instance_type).unwrap();
        let keep = q.cloud.map_or(true, |x| x == o.cloud)
            && q.region.as_ref().map_or(true, |r| *r == o.region)
            && model.as_ref().map_or(true, |m| *m == t.gpu_model)
            && q.gpu_count.map_or(true, |n| n == t.gpu_count)
            && q.interconnect.map_or(true, |i| t.interconnect == Some(i))
            && (q.rdma != Some(true) || t.rdma.is_some())
            && q.min_gpu_mem_gib.map_or(true, |m| t.gpu_mem_gib >= m);
        if !keep {
            continue;
        }
        let hourly = o
            .prices
            .get(&q.pricing)
            .map(|p| p.hourly_usd(q.cny_per_usd))
            .filter(|h| h.is_finite() && *h > 0.0);
        if let Some(max) = q.max_hourly_usd {
            if !hourly.is_some_and(|h| h <= max) {
                continue;
            }
        }
        let per_gpu = hourly.map(|h| h / f64::from(t.gpu_count));
        rows.push((o.cloud, o.region.clone(), o.instance_type.clone(), per_gpu));
    }
    rows.sort_by(|a, b| {
        let p = match (a.3, b.3) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        p.then_with(|| a.0.cmp(&b.0))
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| a.2.cmp(&b.2))
    });
    rows
}

fn random_query(rng: &mut StdRng, c: &Catalog) -> OfferQuery {
    let models: Vec<String> = {
        let mut m: Vec<String> = Cloud::ALL
            .iter()
            .flat_map(|cl| c.instance_types(*cl))
            .map(|t| t.gpu_model.clone())
            .collect();
        m.sort();
        m.dedup();
        m
    };
    let regions: Vec<String> = Cloud::ALL
        .iter()
        .flat_map(|cl| c.regions(*cl))
        .map(|r| r.name.clone())
        .collect();
    let maybe = |rng: &mut StdRng| rng.gen_bool(0.5);
    OfferQuery {
        cloud: maybe(rng).then(|| *Cloud::ALL.choose(rng).unwrap()),
        region: rng
            .gen_bool(0.25)
            .then(|| regions.choose(rng).unwrap().clone()),
        gpu_model: Some(models.choose(rng).unwrap().clone()),
        gpu_count: maybe(rng).then(|| *[1u32, 2, 4, 8].choose(rng).unwrap()),
        interconnect: match rng.gen_range(0..3) {
            0 => Some(Interconnect::Nvlink),
            1 => Some(Interconnect::Pcie),
            _ => None,
        },
        rdma: rng.gen_bool(0.3).then_some(true),
        pricing: *PricingModel::ALL.choose(rng).unwrap(),
        min_gpu_mem_gib: rng
            .gen_bool(0.3)
            .then(|| *[16.0, 24.0, 40.0, 48.0, 80.0].choose(rng).unwrap()),
        max_hourly_usd: rng.gen_bool(0.3).then(|| rng.gen_range(0.2..40.0)),
        cny_per_usd: *[7.0, 6.5, 7.3].choose(rng).unwrap(),
    }
}

#[test]
fn offers_match_brute_force_for_random_requirements() {
    let c = Catalog::builtin();
    let mut rng = StdRng::seed_from_u64(0x6770_7566);
    let today = Day::from_ymd(2026, 11, 29);
    let mut non_empty = 0;
    for i in 0..2000 {
        let q = random_query(&mut rng, c);
        let want = brute_force(c, &q);
        let got: Vec<Row> = offers::offers(c, &q, today, DEFAULT_STALE_DAYS)
            .offers
            .into_iter()
            .map(|r| {
                (
                    r.cloud,
                    r.region,
                    r.instance_type,
                    r.price.map(|p| p.per_gpu_hour_usd),
                )
            })
            .collect();
        assert_eq!(got.len(), want.len(), "query #{i}: {q:#?}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((&g.0, &g.1, &g.2), (&w.0, &w.1, &w.2), "query #{i}: {q:#?}");
            match (g.3, w.3) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-9, "query #{i}"),
                (a, b) => assert_eq!(a, b, "query #{i}"),
            }
        }
        non_empty += usize::from(!want.is_empty());
    }
    assert!(
        non_empty > 300,
        "too few queries matched anything: {non_empty}"
    );
}

#[test]
fn every_row_carries_its_source_and_date() {
    let c = Catalog::builtin();
    let q = OfferQuery {
        gpu_model: Some("T4".into()),
        ..OfferQuery::default()
    };
    let r = offers::offers(c, &q, Day::from_ymd(2026, 11, 29), 180);
    for row in &r.offers {
        if let Some(p) = &row.price {
            assert!(!p.source.is_empty() && !p.as_of.is_empty(), "{row:?}");
            let native = c
                .offering(row.cloud, &row.region, &row.instance_type)
                .unwrap()
                .prices[&PricingModel::OnDemand]
                .hourly;
            assert_eq!(p.amount, native);
        }
    }
    // Tencent's list prices have no date: flagged.
    assert!(r.undated().any(|o| o.cloud == Cloud::Tencent));
}

fn gpuform() -> Command {
    Command::cargo_bin("gpuform").unwrap()
}

#[test]
fn binary_json_equals_library_order() {
    let c = Catalog::builtin();
    for (args, q) in [
        (
            vec!["A100-80GB:8"],
            OfferQuery {
                gpu_model: Some("A100-80GB".into()),
                gpu_count: Some(8),
                ..OfferQuery::default()
            },
        ),
        (
            vec!["T4", "--pricing", "spot", "--max-price", "1"],
            OfferQuery {
                gpu_model: Some("T4".into()),
                pricing: PricingModel::Spot,
                max_hourly_usd: Some(1.0),
                ..OfferQuery::default()
            },
        ),
        (
            vec!["A10", "--cloud", "alibaba", "--cny-per-usd", "6.5"],
            OfferQuery {
                gpu_model: Some("A10".into()),
                cloud: Some(Cloud::Alibaba),
                cny_per_usd: 6.5,
                ..OfferQuery::default()
            },
        ),
        (
            vec![
                "H100",
                "--interconnect",
                "nvlink",
                "--rdma",
                "--min-gpu-mem",
                "80",
            ],
            OfferQuery {
                gpu_model: Some("H100".into()),
                interconnect: Some(Interconnect::Nvlink),
                rdma: Some(true),
                min_gpu_mem_gib: Some(80.0),
                ..OfferQuery::default()
            },
        ),
    ] {
        let out = gpuform()
            .arg("offers")
            .args(&args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let got: Vec<(String, String)> = v["offers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["region"].as_str().unwrap().to_string(),
                    o["instance_type"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want: Vec<(String, String)> =
            brute_force(c, &q).into_iter().map(|r| (r.1, r.2)).collect();
        assert_eq!(got, want, "{args:?}");
        assert!(!want.is_empty(), "{args:?}");
    }
}

#[test]
fn table_has_columns_and_footer() {
    let out = gpuform().args(["offers", "T4:1"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for col in [
        "cloud",
        "region",
        "instance type",
        "GPUs",
        "GPU mem",
        "vCPU",
        "RAM",
        "interconnect",
        "RDMA",
        "$/h",
        "$/GPU-h",
        "price source",
    ] {
        assert!(text.contains(col), "{col} missing:\n{text}");
    }
    assert!(text.contains("converted at 7.00 CNY per USD"), "{text}");
    assert!(text.contains("no known date"), "{text}");
    assert!(text.contains("Price sources:\n  [1] "), "{text}");
}

#[test]
fn bad_input_is_a_clear_error() {
    for (args, needle) in [
        (vec!["A100:8"], "ambiguous"),
        (vec!["Z9000"], "unknown GPU"),
        (vec!["T4:0"], "at least 1"),
        (vec!["T4", "--cloud", "gcp"], "unknown cloud `gcp`"),
        (vec!["T4", "--region", "us-east-9"], "us-east-9"),
        (
            vec!["T4", "--cloud", "tencent", "--region", "us-east-1"],
            "not a tencent region",
        ),
        (vec!["T4", "--pricing", "monthly"], "unknown pricing model"),
        (vec!["T4", "--max-price", "-3"], "--max-price"),
        (vec!["T4", "--cny-per-usd", "0"], "--cny-per-usd"),
    ] {
        let out = gpuform().arg("offers").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.contains("hint:"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
