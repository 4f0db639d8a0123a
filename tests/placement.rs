//! `cloud: any`: the placement gpuform chooses equals a brute-force search
//! over the whole catalog, for many random requirements.

use gpuform::resolve::{resolve, ResolveOptions};
use gpuform::spec::{load_str, Vars};
use gpuform_provider::catalog::{Catalog, Interconnect, PricingModel, DEFAULT_CNY_PER_USD};
use gpuform_provider::{Cloud, ResourceKind};

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

#[derive(Debug)]
struct Req {
    gpu: String,
    count: u32,
    pricing: PricingModel,
    nvlink: bool,
    rdma: bool,
    candidates: Vec<(Cloud, Option<String>)>,
    ordered: bool,
}

/// The independent answer: scan every offering of the catalog.
fn brute_force(cat: &Catalog, r: &Req) -> Option<(Cloud, String, String)> {
    let key = |p: Option<f64>| p.unwrap_or(f64::INFINITY);
    let mut best_per_candidate: Vec<Option<(f64, Cloud, String, String)>> = Vec::new();
    for (cloud, region) in &r.candidates {
        let mut best: Option<(f64, Cloud, String, String)> = None;
        for o in cat.offerings() {
            if o.cloud != *cloud || region.as_ref().is_some_and(|rg| rg != &o.region) {
                continue;
            }
            let Some(it) = cat.instance_type(o.cloud, &o.instance_type) else {
                continue;
            };
            if it.gpu_model != r.gpu || it.gpu_count != r.count {
                continue;
            }
            if r.nvlink && it.interconnect != Some(Interconnect::Nvlink) {
                continue;
            }
            if r.rdma && it.rdma.is_none() {
                continue;
            }
            let price = key(o
                .prices
                .get(&r.pricing)
                .map(|p| p.hourly_usd(DEFAULT_CNY_PER_USD)));
            let cand = (price, o.cloud, o.region.clone(), o.instance_type.clone());
            let better = match &best {
                None => true,
                Some(b) => (cand.0, cand.1, &cand.2, &cand.3) < (b.0, b.1, &b.2, &b.3),
            };
            if better {
                best = Some(cand);
            }
        }
        best_per_candidate.push(best);
    }
    let pick = if r.ordered {
        best_per_candidate.into_iter().flatten().next()
    } else {
        best_per_candidate.into_iter().flatten().min_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then_with(|| (a.1, &a.2, &a.3).cmp(&(b.1, &b.2, &b.3)))
        })
    };
    pick.map(|(_, c, r, t)| (c, r, t))
}

fn spec_for(r: &Req) -> String {
    let cands: Vec<String> = r
        .candidates
        .iter()
        .map(|(c, reg)| match reg {
            Some(reg) => format!("{c}/{reg}"),
            None => c.to_string(),
        })
        .collect();
    format!(
        "project: p\nclusters:\n  c:\n    cloud: any\n    candidates: [{}]\n    strategy: {}\n    nodes: 1\n    gpu: {}:{}\n    pricing: {}\n    interconnect: {}\n    fabric: {}\n",
        cands.join(", "),
        if r.ordered { "ordered" } else { "cheapest" },
        r.gpu,
        r.count,
        r.pricing.as_str(),
        if r.nvlink { "nvlink" } else { "any" },
        if r.rdma { "rdma" } else { "ethernet" },
    )
}

#[test]
fn cheapest_and_ordered_placement_match_brute_force() {
    let cat = Catalog::builtin();
    let gpus: Vec<String> = cat.gpus().iter().map(|g| g.name.clone()).collect();
    let mut regions: Vec<(Cloud, Option<String>)> = Vec::new();
    for c in Cloud::ALL {
        regions.push((c, None));
        for r in cat.regions(c) {
            regions.push((c, Some(r.name.clone())));
        }
    }
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let (mut placed, mut refused) = (0, 0);
    for _ in 0..400 {
        let n = 1 + (rng.next() % 4) as usize;
        let mut candidates = Vec::new();
        for _ in 0..n {
            let c = rng.pick(&regions).clone();
            if !candidates.contains(&c) {
                candidates.push(c);
            }
        }
        let r = Req {
            gpu: rng.pick(&gpus).clone(),
            count: *rng.pick(&[1, 1, 2, 4, 8]),
            pricing: *rng.pick(&PricingModel::ALL),
            nvlink: rng.next() % 4 == 0,
            rdma: rng.next() % 4 == 0,
            candidates,
            ordered: rng.next() % 3 == 0,
        };
        let text = spec_for(&r);
        let loaded =
            load_str("p.yaml", &text, &Vars::new()).unwrap_or_else(|d| panic!("{d}\n{text}"));
        let got = resolve(&loaded, cat, &ResolveOptions::default())
            .ok()
            .map(|d| {
                let node = d
                    .resources
                    .iter()
                    .find(|x| x.kind == ResourceKind::Instance)
                    .expect("a node");
                (
                    node.target.cloud,
                    node.region.clone(),
                    node.attrs["instance_type"].as_str().unwrap().to_string(),
                )
            });
        let want = brute_force(cat, &r);
        assert_eq!(got, want, "requirement {r:?}\nspec:\n{text}");
        if got.is_some() {
            placed += 1
        } else {
            refused += 1
        }
    }
    assert!(
        placed > 50 && refused > 50,
        "the random requirements exercise both outcomes ({placed} placed, {refused} refused)"
    );
}

#[test]
fn the_plan_says_why_it_chose_a_place() {
    let text = "project: p\nclusters:\n  c:\n    cloud: any\n    nodes: 2\n    gpu: T4\n    pricing: spot\n";
    let loaded = load_str("p.yaml", text, &Vars::new()).unwrap();
    let d = resolve(&loaded, Catalog::builtin(), &ResolveOptions::default()).unwrap();
    let note = d
        .notes
        .iter()
        .find(|n| n.contains("placed in"))
        .expect("a placement note");
    assert!(note.contains("cheapest of"), "{note}");
}
