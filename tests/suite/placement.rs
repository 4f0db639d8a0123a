//! `cloud: any`: the placement gpuform chooses equals a brute-force search
//! over the whole catalog, for many random requirements, including zones
//! found out of capacity during the apply and a cluster already running
//! somewhere. When nothing fits, the error must be the one the rules call
//! for, word for word.
//!
//! The brute force is written from the documented rules (README "Cost, offers
//! and moving between clouds", `strategy:` in the spec reference): it reads
//! the catalog's data only and shares no lookup, price conversion or
//! ordering helper with the code under test.

use gpuform::resolve::{resolve, Exhausted, Placement, ResolveOptions};
use gpuform::spec::{load_str, Diagnostics, Vars};
use gpuform_catalog::{Catalog, Currency, Interconnect, PricingModel, DEFAULT_CNY_PER_USD};
use gpuform_provider::{Cloud, ResourceKind};
use std::collections::{BTreeMap, BTreeSet};

/// The cluster every requirement describes.
const CLUSTER: &str = "c";

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
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

#[derive(Debug, Clone)]
struct Req {
    gpu: String,
    count: u32,
    pricing: PricingModel,
    nvlink: bool,
    rdma: bool,
    candidates: Vec<(Cloud, Option<String>)>,
    ordered: bool,
    /// (cluster, cloud, region, zone) found out of capacity during this apply.
    exhausted: BTreeSet<(String, Cloud, String, String)>,
    /// Where the cluster runs now.
    current: Option<(Cloud, String, String)>,
}

/// One offering meeting the requirement: USD per instance-hour (infinite
/// when unknown), cloud, region, instance type.
type Offer = (f64, Cloud, String, String);

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Placed {
        cloud: Cloud,
        region: String,
        instance_type: String,
        zone: String,
        /// The plan's note says the cluster stays where it runs.
        stays: bool,
    },
    /// Resolving failed with exactly these (YAML path, message) diagnostics.
    Refused(Vec<(String, String)>),
}

fn cheaper(a: &Offer, b: &Offer) -> bool {
    (a.0, a.1, &a.2, &a.3) < (b.0, b.1, &b.2, &b.3)
}

fn zones_of(cat: &Catalog, cloud: Cloud, region: &str) -> Vec<String> {
    cat.regions(cloud)
        .into_iter()
        .find(|r| r.name == region)
        .map(|r| r.zones.clone())
        .unwrap_or_default()
}

fn is_exhausted(r: &Req, cloud: Cloud, region: &str, zone: &str) -> bool {
    r.exhausted.contains(&(
        CLUSTER.to_string(),
        cloud,
        region.to_string(),
        zone.to_string(),
    ))
}

/// Every offering a candidate could use, ignoring capacity.
fn offers_of(cat: &Catalog, r: &Req, cloud: Cloud, region: Option<&str>) -> Vec<Offer> {
    let mut out = Vec::new();
    for o in cat.offerings() {
        if o.cloud != cloud || region.is_some_and(|rg| rg != o.region) {
            continue;
        }
        let it = cat
            .instance_types(o.cloud)
            .into_iter()
            .find(|t| t.name == o.instance_type)
            .expect("every offering's type is in the catalog");
        if it.gpu_model != r.gpu || it.gpu_count != r.count {
            continue;
        }
        if r.nvlink && it.interconnect != Some(Interconnect::Nvlink) {
            continue;
        }
        if r.rdma && it.rdma.is_none() {
            continue;
        }
        let price = o
            .prices
            .get(&r.pricing)
            .map(|p| match p.currency {
                Currency::USD => p.hourly,
                Currency::CNY => p.hourly / DEFAULT_CNY_PER_USD,
            })
            .unwrap_or(f64::INFINITY);
        out.push((price, o.cloud, o.region.clone(), o.instance_type.clone()));
    }
    out
}

/// The independent answer.
fn brute_force(cat: &Catalog, r: &Req) -> Outcome {
    // A region is skipped only when every one of its zones ran out.
    let region_out = |cloud: Cloud, region: &str| {
        let zones = zones_of(cat, cloud, region);
        !zones.is_empty() && zones.iter().all(|z| is_exhausted(r, cloud, region, z))
    };
    let mut skipped: BTreeSet<String> = BTreeSet::new();
    let mut per_candidate: Vec<Vec<Offer>> = Vec::new();
    for (cloud, region) in &r.candidates {
        let mut usable = Vec::new();
        for o in offers_of(cat, r, *cloud, region.as_deref()) {
            if region_out(o.1, &o.2) {
                skipped.insert(format!("{} {}", o.1, o.2));
            } else {
                usable.push(o);
            }
        }
        per_candidate.push(usable);
    }
    let cheapest = |offers: &mut dyn Iterator<Item = &Offer>| -> Option<Offer> {
        let mut best: Option<&Offer> = None;
        for o in offers {
            match best {
                Some(b) if !cheaper(o, b) => {}
                _ => best = Some(o),
            }
        }
        best.cloned()
    };
    // A running cluster stays in its region while that region still fits.
    let here = r.current.as_ref().and_then(|(cloud, region, _)| {
        cheapest(
            &mut per_candidate
                .iter()
                .flatten()
                .filter(|o| o.1 == *cloud && &o.2 == region),
        )
    });
    let stays = here.is_some();
    let pick = here.or_else(|| {
        if r.ordered {
            per_candidate.iter().find_map(|c| cheapest(&mut c.iter()))
        } else {
            cheapest(&mut per_candidate.iter().flatten())
        }
    });
    let Some((_, cloud, region, instance_type)) = pick else {
        let labels: Vec<String> = r.candidates.iter().map(label).collect();
        let note = if skipped.is_empty() {
            String::new()
        } else {
            format!(
                "; out of capacity: {}",
                skipped.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
        return Outcome::Refused(vec![(
            format!("clusters.{CLUSTER}.cloud"),
            format!(
                "no candidate offers {} × {} with these constraints (candidates: {}){note}",
                r.count,
                r.gpu,
                labels.join(", ")
            ),
        )]);
    };
    // The zone: where it runs, while usable; else the first zone, in the
    // region's order, not out of capacity and (when the catalog knows)
    // where the type is sold.
    let sold = cat
        .availability(cloud, &region, &instance_type)
        .and_then(|a| a.zones.clone());
    let fits = |z: &String| {
        !is_exhausted(r, cloud, &region, z)
            && match &sold {
                Some(s) => s.contains(z),
                None => true,
            }
    };
    let zones = zones_of(cat, cloud, &region);
    let staying = r
        .current
        .as_ref()
        .filter(|(c, rg, _)| *c == cloud && *rg == region)
        .map(|(_, _, z)| z.clone())
        .filter(|z| zones.contains(z) && fits(z));
    let zone = staying.or_else(|| zones.iter().find(|z| fits(z)).cloned());
    match zone {
        Some(zone) => Outcome::Placed {
            cloud,
            region,
            instance_type,
            zone,
            stays,
        },
        None => Outcome::Refused(vec![(
            format!("clusters.{CLUSTER}.zones"),
            format!(
                "{instance_type} is sold only in {} of {cloud} {region}, and none of those is usable here",
                sold.expect("no zone fits only when the sold zones are known").join(", ")
            ),
        )]),
    }
}

fn label((cloud, region): &(Cloud, Option<String>)) -> String {
    match region {
        Some(reg) => format!("{cloud}/{reg}"),
        None => cloud.to_string(),
    }
}

fn spec_for(r: &Req) -> String {
    let cands: Vec<String> = r.candidates.iter().map(label).collect();
    format!(
        "project: p\nclusters:\n  {CLUSTER}:\n    cloud: any\n    candidates: [{}]\n    strategy: {}\n    nodes: 1\n    gpu: {}:{}\n    pricing: {}\n    interconnect: {}\n    fabric: {}\n",
        cands.join(", "),
        if r.ordered { "ordered" } else { "cheapest" },
        r.gpu,
        r.count,
        r.pricing.as_str(),
        if r.nvlink { "nvlink" } else { "any" },
        if r.rdma { "rdma" } else { "ethernet" },
    )
}

/// What gpuform decides for `r`.
fn resolved(cat: &Catalog, r: &Req) -> Outcome {
    let text = spec_for(r);
    let loaded = load_str("p.yaml", &text, &Vars::new()).unwrap_or_else(|d| panic!("{d}\n{text}"));
    let opts = ResolveOptions {
        exhausted: r
            .exhausted
            .iter()
            .map(|(cl, c, rg, z)| Exhausted::zone(cl, *c, rg, z))
            .collect(),
        current: r
            .current
            .iter()
            .map(|(c, rg, z)| {
                (
                    CLUSTER.to_string(),
                    Placement {
                        cloud: *c,
                        region: rg.clone(),
                        zone: z.clone(),
                    },
                )
            })
            .collect::<BTreeMap<_, _>>(),
        ..ResolveOptions::default()
    };
    match resolve(&loaded, cat, &opts) {
        Ok(d) => {
            let node = d
                .resources
                .iter()
                .find(|x| x.kind == ResourceKind::Instance)
                .expect("a node");
            let note = d
                .notes
                .iter()
                .find(|n| n.contains("placed in"))
                .expect("a placement note");
            Outcome::Placed {
                cloud: node.target.cloud,
                region: node.region.clone(),
                instance_type: node.attrs["instance_type"].as_str().unwrap().to_string(),
                zone: node.attrs["zone"].as_str().unwrap().to_string(),
                stays: note.contains("where it runs"),
            }
        }
        Err(Diagnostics(ds)) => Outcome::Refused(
            ds.into_iter()
                .map(|d| (d.yaml_path.unwrap_or_default(), d.message))
                .collect(),
        ),
    }
}

#[test]
fn cheapest_and_ordered_placement_match_brute_force() {
    let cat = Catalog::builtin();
    // Models some cloud sells most of the time, so that most requirements
    // can be placed; now and then one that none sells.
    let mut gpus: Vec<String> = Cloud::ALL
        .iter()
        .flat_map(|c| cat.instance_types(*c))
        .map(|t| t.gpu_model.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    gpus.extend(cat.gpus().iter().map(|g| g.name.clone()).take(4));
    let mut regions: Vec<(Cloud, Option<String>)> = Vec::new();
    for c in Cloud::ALL {
        regions.push((c, None));
        for r in cat.regions(c) {
            regions.push((c, Some(r.name.clone())));
        }
    }
    let mut rng = Rng(0x9e3779b97f4a7c15);
    // What the random requirements exercised, so that none of it is vacuous.
    let (mut placed, mut refused, mut moved_for_capacity, mut refused_for_capacity) = (0, 0, 0, 0);
    let (mut stayed_not_cheapest, mut stayed_in_zone) = (0, 0);
    for i in 0..1500 {
        let n = 1 + (rng.next() % 4) as usize;
        let mut candidates = Vec::new();
        for _ in 0..n {
            let c = rng.pick(&regions).clone();
            if !candidates.contains(&c) {
                candidates.push(c);
            }
        }
        let mut r = Req {
            gpu: rng.pick(&gpus).clone(),
            count: *rng.pick(&[1, 1, 2, 4, 8]),
            pricing: *rng.pick(&PricingModel::ALL),
            nvlink: rng.one_in(4),
            rdma: rng.one_in(4),
            candidates,
            ordered: rng.one_in(3),
            exhausted: BTreeSet::new(),
            current: None,
        };
        // Capacity: where the requirement would land without any, run out
        // of every zone (it must move), of the first zone only (it must
        // stay in the region), or not at all; another cluster's exhausted
        // zones never count.
        let unconstrained = brute_force(cat, &r);
        if let Outcome::Placed { cloud, region, .. } = &unconstrained {
            let zones = zones_of(cat, *cloud, region);
            let out_of = match rng.next() % 4 {
                0 | 1 => zones.clone(),
                2 => zones.iter().take(1).cloned().collect(),
                _ => Vec::new(),
            };
            for z in out_of {
                r.exhausted
                    .insert((CLUSTER.into(), *cloud, region.clone(), z.clone()));
            }
            for z in &zones {
                r.exhausted
                    .insert(("other".into(), *cloud, region.clone(), z.clone()));
            }
        }
        // Running somewhere: any region a candidate offers it in, or one
        // that does not (which then does not hold the cluster).
        if rng.one_in(3) {
            let mut anywhere: Vec<Offer> = r
                .candidates
                .iter()
                .flat_map(|(c, rg)| offers_of(cat, &r, *c, rg.as_deref()))
                .collect();
            if anywhere.is_empty() || rng.one_in(5) {
                let (c, rg) = rng.pick(&regions).clone();
                let rg = rg.unwrap_or_else(|| cat.regions(c)[0].name.clone());
                anywhere = vec![(0.0, c, rg, String::new())];
            }
            let (_, c, rg, _) = rng.pick(&anywhere).clone();
            let zones = zones_of(cat, c, &rg);
            if !zones.is_empty() {
                let z = rng.pick(&zones).clone();
                r.current = Some((c, rg, z));
            }
        }

        let want = brute_force(cat, &r);
        let got = resolved(cat, &r);
        assert_eq!(
            got,
            want,
            "requirement #{i}: {r:#?}\nspec:\n{}",
            spec_for(&r)
        );

        match &want {
            Outcome::Placed {
                cloud,
                region,
                zone,
                stays,
                ..
            } => {
                placed += 1;
                if let Outcome::Placed {
                    cloud: c0,
                    region: r0,
                    ..
                } = &unconstrained
                {
                    if !*stays && (c0, r0) != (cloud, region) {
                        moved_for_capacity += 1;
                    }
                    if *stays && (c0, r0) != (cloud, region) {
                        stayed_not_cheapest += 1;
                    }
                }
                if r.current
                    .as_ref()
                    .is_some_and(|(c, rg, z)| (c, rg, z) == (cloud, region, zone))
                {
                    stayed_in_zone += 1;
                }
            }
            Outcome::Refused(d) => {
                refused += 1;
                if d[0].1.contains("out of capacity") {
                    refused_for_capacity += 1;
                }
            }
        }
    }
    eprintln!(
        "{placed} placed, {refused} refused, {moved_for_capacity} moved for capacity, \
         {refused_for_capacity} refused for capacity, {stayed_not_cheapest} kept though cheaper \
         elsewhere, {stayed_in_zone} kept in their zone"
    );
    assert!(
        placed > 50
            && refused > 50
            && moved_for_capacity > 20
            && refused_for_capacity > 5
            && stayed_not_cheapest > 5
            && stayed_in_zone > 5,
        "the random requirements exercise too little: {placed} placed, {refused} refused, \
         {moved_for_capacity} moved for capacity, {refused_for_capacity} refused for capacity, \
         {stayed_not_cheapest} kept where they run though cheaper elsewhere, {stayed_in_zone} \
         kept in their zone"
    );
}

fn t4_on_demand(candidates: &str) -> Req {
    Req {
        gpu: "T4".into(),
        count: 1,
        pricing: PricingModel::OnDemand,
        nvlink: false,
        rdma: false,
        candidates: candidates
            .split(", ")
            .map(|c| match c.split_once('/') {
                Some((cl, rg)) => (cl.parse().unwrap(), Some(rg.to_string())),
                None => (c.parse().unwrap(), None),
            })
            .collect(),
        ordered: false,
        exhausted: BTreeSet::new(),
        current: None,
    }
}

fn exhaust_region(cat: &Catalog, r: &mut Req, cloud: Cloud, region: &str) {
    for z in zones_of(cat, cloud, region) {
        r.exhausted
            .insert((CLUSTER.into(), cloud, region.to_string(), z));
    }
}

#[test]
fn every_candidate_out_of_capacity_is_refused_naming_them() {
    let cat = Catalog::builtin();
    let mut r = t4_on_demand("aws/us-east-1, aws/us-west-2");
    exhaust_region(cat, &mut r, Cloud::Aws, "us-east-1");
    exhaust_region(cat, &mut r, Cloud::Aws, "us-west-2");
    assert_eq!(
        resolved(cat, &r),
        Outcome::Refused(vec![(
            "clusters.c.cloud".into(),
            "no candidate offers 1 × T4 with these constraints (candidates: aws/us-east-1, \
             aws/us-west-2); out of capacity: aws us-east-1, aws us-west-2"
                .into()
        )])
    );
}

#[test]
fn a_running_cluster_stays_until_its_region_runs_out() {
    let cat = Catalog::builtin();
    let mut r = t4_on_demand("aws/us-east-1, aws/us-west-2");
    let Outcome::Placed {
        region: cheapest, ..
    } = resolved(cat, &r)
    else {
        panic!("T4 is offered in both regions");
    };
    let other = if cheapest == "us-east-1" {
        "us-west-2"
    } else {
        "us-east-1"
    };
    let zone = zones_of(cat, Cloud::Aws, other)[1].clone();
    r.current = Some((Cloud::Aws, other.to_string(), zone.clone()));
    match resolved(cat, &r) {
        Outcome::Placed {
            region,
            zone: z,
            stays,
            ..
        } => {
            assert_eq!(
                (region.as_str(), z.as_str(), stays),
                (other, zone.as_str(), true)
            );
        }
        refused => panic!("{refused:?}"),
    }
    // Its zone runs out: it stays in the region, in the next zone.
    r.exhausted
        .insert((CLUSTER.into(), Cloud::Aws, other.to_string(), zone.clone()));
    match resolved(cat, &r) {
        Outcome::Placed {
            region, zone: z, ..
        } => {
            assert_eq!(region, other);
            assert_ne!(z, zone);
        }
        refused => panic!("{refused:?}"),
    }
    // The whole region runs out: it goes to the cheapest place left.
    exhaust_region(cat, &mut r, Cloud::Aws, other);
    match resolved(cat, &r) {
        Outcome::Placed { region, stays, .. } => {
            assert_eq!((region, stays), (cheapest, false));
        }
        refused => panic!("{refused:?}"),
    }
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
