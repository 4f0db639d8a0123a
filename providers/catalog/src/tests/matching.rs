//! Offer matching: agrees with a brute-force reading, sorts, names differences.

use super::cat;
use crate::*;

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

#[test]
fn nearest_keeps_the_link_when_only_the_fabric_is_missing() {
    // Alibaba has no A100-80GB type with RDMA; gn7e has NVLink, ebmgn7e's
    // link is stated by no source. Dropping the fabric must not also drop
    // the NVLink the query asks for when an equally cheap type has it.
    let q = OfferQuery {
        cloud: Some(Cloud::Alibaba),
        gpu_model: Some("A100-80GB".into()),
        gpu_count: Some(8),
        interconnect: Some(Interconnect::Nvlink),
        rdma: Some(true),
        ..OfferQuery::default()
    };
    assert!(cat().matching(&q).is_empty());
    let near = cat().closest(&q, 1);
    assert_eq!(near[0].instance.interconnect, Some(Interconnect::Nvlink));
    assert!(
        near[0].instance.name.starts_with("ecs.gn7e"),
        "{}",
        near[0].instance.name
    );
}
