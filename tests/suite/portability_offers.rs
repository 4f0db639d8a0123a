//! `gpuform offers` against brute force over the whole catalog, for many
//! random requirement sets (deterministic seed): same members, same order,
//! same prices. Also the binary's table, JSON and input errors.
//!
//! The brute force is written from what `OfferQuery` documents, not from
//! `Catalog::matching`: it reads only the catalog's data (GPU models with
//! their aliases, instance types, offerings with native prices) and shares
//! no lookup, conversion or ordering helper with the code under test.

use crate::support;
use gpuform::market::offers::{self, Day, DEFAULT_STALE_DAYS};
use gpuform_catalog::{Catalog, Currency, InstanceType, Interconnect, OfferQuery, PricingModel};
use gpuform_provider::Cloud;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::process::Command;

/// (cloud, region, instance type, USD per GPU-hour)
type Row = (Cloud, String, String, Option<f64>);

/// A GPU name as users may write it: case does not matter, and a space or
/// an underscore stands for a dash (`a100 80gb` is `A100-80GB`).
fn same_gpu_name(written: &str, name: &str) -> bool {
    let canon = |s: &str| -> String { s.trim().to_lowercase().replace([' ', '_'], "-") };
    canon(written) == canon(name)
}

/// The one model a written name means (its canonical name or an alias);
/// `None` when it names no model or several.
fn model_named(c: &Catalog, written: &str) -> Option<String> {
    let named: Vec<&str> = c
        .gpus()
        .iter()
        .filter(|g| {
            same_gpu_name(written, &g.name) || g.aliases.iter().any(|a| same_gpu_name(written, a))
        })
        .map(|g| g.name.as_str())
        .collect();
    match named.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

/// The instance type an offering sells, found by scanning the cloud's types.
fn type_of<'a>(c: &'a Catalog, cloud: Cloud, name: &str) -> &'a InstanceType {
    c.instance_types(cloud)
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("an offering of unknown type {cloud} {name}"))
}

/// Every offering that meets every constraint the query sets, cheapest
/// GPU-hour first, unpriced offerings after all priced ones, ties by
/// cloud, region, instance type.
fn brute_force(c: &Catalog, q: &OfferQuery) -> Vec<Row> {
    // A named model that is unknown or ambiguous matches nothing.
    let model = match &q.gpu_model {
        None => None,
        Some(written) => match model_named(c, written) {
            Some(m) => Some(m),
            None => return Vec::new(),
        },
    };
    let mut rows: Vec<Row> = Vec::new();
    for o in c.offerings() {
        let t = type_of(c, o.cloud, &o.instance_type);
        if let Some(cloud) = q.cloud {
            if o.cloud != cloud {
                continue;
            }
        }
        if let Some(region) = &q.region {
            if &o.region != region {
                continue;
            }
        }
        if let Some(m) = &model {
            if &t.gpu_model != m {
                continue;
            }
        }
        if let Some(n) = q.gpu_count {
            if t.gpu_count != n {
                continue;
            }
        }
        // A link no source states does not meet a required link.
        if let Some(link) = q.interconnect {
            if t.interconnect != Some(link) {
                continue;
            }
        }
        if q.rdma == Some(true) && t.rdma.is_none() {
            continue;
        }
        if let Some(min) = q.min_gpu_mem_gib {
            if t.gpu_mem_gib < min {
                continue;
            }
        }
        // The price per instance-hour for the query's pricing model, in USD.
        let hourly: Option<f64> = o.prices.get(&q.pricing).map(|p| match p.currency {
            Currency::USD => p.hourly,
            Currency::CNY => p.hourly / q.cny_per_usd,
        });
        // A price cap excludes what costs more, and what has no known price.
        if let Some(cap) = q.max_hourly_usd {
            match hourly {
                Some(h) if h <= cap => {}
                _ => continue,
            }
        }
        let per_gpu = hourly.map(|h| h / t.gpu_count as f64);
        rows.push((o.cloud, o.region.clone(), o.instance_type.clone(), per_gpu));
    }
    // Priced rows first (cheapest GPU-hour first), then the unpriced ones.
    let key = |r: &Row| (r.3.is_none(), r.3.unwrap_or(0.0));
    rows.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.partial_cmp(&kb.1).expect("prices are numbers"))
            .then((a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)))
    });
    rows
}

/// How a user may spell a model: its name or an alias, in any case, with
/// spaces or underscores for dashes.
fn spelled(rng: &mut StdRng, name: &str) -> String {
    name.chars()
        .map(|ch| match ch {
            '-' => *['-', ' ', '_'].choose(rng).unwrap(),
            c if rng.gen_bool(0.3) => c.to_ascii_lowercase(),
            c => c,
        })
        .collect()
}

fn random_query(rng: &mut StdRng, c: &Catalog) -> OfferQuery {
    let regions: Vec<String> = Cloud::ALL
        .iter()
        .flat_map(|cl| c.regions(*cl))
        .map(|r| r.name.clone())
        .collect();
    let gpu_model = match rng.gen_range(0..10) {
        // No model: every GPU.
        0 => None,
        // Ambiguous (the `shared_names` column of gpus.csv) or unknown.
        1 => Some(
            ["A100", "v100", "Z9000", "H100-80GB-SXM7"]
                .choose(rng)
                .unwrap()
                .to_string(),
        ),
        // A model by its canonical name or one of its aliases.
        _ => {
            let g = c.gpus().choose(rng).unwrap();
            let mut names = vec![g.name.clone()];
            names.extend(g.aliases.iter().cloned());
            let name = names.choose(rng).unwrap().clone();
            Some(spelled(rng, &name))
        }
    };
    let maybe = |rng: &mut StdRng| rng.gen_bool(0.5);
    OfferQuery {
        cloud: maybe(rng).then(|| *Cloud::ALL.choose(rng).unwrap()),
        region: rng
            .gen_bool(0.25)
            .then(|| regions.choose(rng).unwrap().clone()),
        gpu_model,
        gpu_count: maybe(rng).then(|| *[1u32, 2, 4, 8].choose(rng).unwrap()),
        interconnect: match rng.gen_range(0..3) {
            0 => Some(Interconnect::Nvlink),
            1 => Some(Interconnect::Pcie),
            _ => None,
        },
        rdma: *[None, None, Some(true), Some(false)].choose(rng).unwrap(),
        pricing: *PricingModel::ALL.choose(rng).unwrap(),
        min_gpu_mem_gib: rng
            .gen_bool(0.3)
            .then(|| *[16.0, 24.0, 40.0, 48.0, 80.0, 96.0].choose(rng).unwrap()),
        max_hourly_usd: rng.gen_bool(0.3).then(|| rng.gen_range(0.2..40.0)),
        cny_per_usd: *[7.0, 6.5, 7.3].choose(rng).unwrap(),
    }
}

#[test]
fn offers_match_brute_force_for_random_requirements() {
    let c = Catalog::builtin();
    let mut rng = StdRng::seed_from_u64(0x6770_7566);
    let today = Day::from_ymd(2026, 11, 29);
    // What the random queries exercised, so that none of it is vacuous.
    let (mut non_empty, mut any_model, mut respelled, mut priced_then_unpriced, mut capped) =
        (0, 0, 0, 0, 0);
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
        if want.is_empty() {
            continue;
        }
        non_empty += 1;
        match &q.gpu_model {
            None => any_model += 1,
            Some(m) if !c.gpus().iter().any(|g| g.name == *m) => respelled += 1,
            Some(_) => {}
        }
        if want.first().is_some_and(|r| r.3.is_some()) && want.last().is_some_and(|r| r.3.is_none())
        {
            priced_then_unpriced += 1;
        }
        if q.max_hourly_usd.is_some() {
            capped += 1;
        }
    }
    assert!(
        non_empty > 300 && any_model > 50 && respelled > 50 && priced_then_unpriced > 20 && capped > 25,
        "the random queries exercise too little: {non_empty} matched anything, {any_model} without \
         a model, {respelled} by an alias or respelled name, {priced_then_unpriced} mixed priced and \
         unpriced offers, {capped} under a price cap"
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
    support::gpuform_in_repo()
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
        // `A100:8` is no longer an error: a shared name searches every
        // variant (issue 12; tests/suite/portability_prices.rs checks it).
        (vec!["A100-90GB:8"], "unknown GPU"),
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
