//! `cloud: any`: choosing where a cluster runs among its candidates, by
//! price (`strategy: cheapest`) or by the order written (`ordered`),
//! skipping regions whose every zone ran out of capacity during this apply.

use super::{Exhausted, ResolveOptions};
use crate::spec::{Cluster, Strategy};
use gpuform_catalog::{Catalog, Match, OfferQuery};
use gpuform_provider::Cloud;
use std::cmp::Ordering;

/// Where a cluster goes, and why, in words for the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub cloud: Cloud,
    pub region: String,
    pub instance_type: String,
    pub hourly_usd: Option<f64>,
    pub why: String,
}

/// A candidate from the spec: a cloud, optionally narrowed to one region.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub cloud: Cloud,
    pub region: Option<String>,
}

impl Candidate {
    pub fn parse(text: &str) -> Result<Candidate, String> {
        let (cloud, region) = match text.split_once('/') {
            Some((c, r)) => (c, Some(r.to_string())),
            None => (text, None),
        };
        Ok(Candidate {
            cloud: cloud.parse()?,
            region,
        })
    }

    fn label(&self) -> String {
        match &self.region {
            Some(r) => format!("{}/{r}", self.cloud),
            None => self.cloud.to_string(),
        }
    }
}

/// The order of candidates: as written, or every cloud when none are.
pub fn candidates(c: &Cluster) -> Result<Vec<Candidate>, String> {
    if c.candidates.is_empty() {
        return Ok(Cloud::ALL
            .iter()
            .map(|&cloud| Candidate {
                cloud,
                region: None,
            })
            .collect());
    }
    c.candidates.iter().map(|t| Candidate::parse(t)).collect()
}

/// Cheapest first; unknown prices last; then by name, so that the choice is
/// the same on every machine.
pub fn by_price(a: &Match<'_>, b: &Match<'_>) -> Ordering {
    let price = |m: &Match<'_>| m.hourly_usd.unwrap_or(f64::INFINITY);
    price(a)
        .total_cmp(&price(b))
        .then_with(|| a.offering.cloud.cmp(&b.offering.cloud))
        .then_with(|| a.offering.region.cmp(&b.offering.region))
        .then_with(|| a.instance.name.cmp(&b.instance.name))
}

/// Chooses the cloud and region; `Err((message, hint))` when nothing fits.
pub fn choose(
    catalog: &Catalog,
    cluster: &str,
    c: &Cluster,
    template: &OfferQuery,
    opts: &ResolveOptions,
) -> Result<Chosen, (String, String)> {
    let cands = candidates(c).map_err(|e| {
        (
            e,
            "write candidates as `CLOUD` or `CLOUD/REGION`".to_string(),
        )
    })?;
    known_regions(catalog, &cands)?;
    let (per_candidate, capacity_note) =
        offers_per_candidate(catalog, cluster, &cands, template, opts);
    match pick(cluster, c, &cands, &per_candidate, &capacity_note, opts) {
        Some((m, why)) => Ok(Chosen {
            cloud: m.offering.cloud,
            region: m.offering.region.clone(),
            instance_type: m.instance.name.clone(),
            hourly_usd: m.hourly_usd,
            why,
        }),
        None => Err(nothing_fits(catalog, c, &cands, template, &capacity_note)),
    }
}

/// Each candidate's region must be one the catalog knows.
fn known_regions(catalog: &Catalog, cands: &[Candidate]) -> Result<(), (String, String)> {
    for cand in cands {
        if let Some(r) = &cand.region {
            if catalog.region(cand.cloud, r).is_none() {
                return Err((
                    format!(
                        "candidate `{}`: {r} is not a {} region gpuform knows",
                        cand.label(),
                        cand.cloud
                    ),
                    format!(
                        "{} regions: {}",
                        cand.cloud,
                        catalog
                            .regions(cand.cloud)
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Each candidate's matching offers, cheapest first, without the regions
/// this apply found out of capacity; and the note naming those.
fn offers_per_candidate<'c>(
    catalog: &'c Catalog,
    cluster: &str,
    cands: &'c [Candidate],
    template: &OfferQuery,
    opts: &ResolveOptions,
) -> (Vec<(&'c Candidate, Vec<Match<'c>>)>, String) {
    let exhausted_region = |cloud: Cloud, region: &str| -> bool {
        catalog.region(cloud, region).is_some_and(|r| {
            !r.zones.is_empty()
                && r.zones.iter().all(|z| {
                    opts.exhausted
                        .contains(&Exhausted::zone(cluster, cloud, region, z))
                })
        })
    };
    let mut per_candidate: Vec<(&Candidate, Vec<Match<'_>>)> = Vec::new();
    let mut skipped_for_capacity: Vec<String> = Vec::new();
    for cand in cands {
        let q = OfferQuery {
            cloud: Some(cand.cloud),
            region: cand.region.clone(),
            ..template.clone()
        };
        let mut found: Vec<Match<'_>> = catalog.matching(&q);
        found.retain(|m| {
            let out = exhausted_region(m.offering.cloud, &m.offering.region);
            if out {
                skipped_for_capacity.push(format!("{} {}", m.offering.cloud, m.offering.region));
            }
            !out
        });
        found.sort_by(by_price);
        per_candidate.push((cand, found));
    }
    skipped_for_capacity.sort();
    skipped_for_capacity.dedup();
    let capacity_note = if skipped_for_capacity.is_empty() {
        String::new()
    } else {
        format!("; out of capacity: {}", skipped_for_capacity.join(", "))
    };
    (per_candidate, capacity_note)
}

/// An offer in a few words: where, what, at what price.
fn describe(m: &Match<'_>) -> String {
    format!(
        "{} {} {}{}",
        m.offering.cloud,
        m.offering.region,
        m.instance.name,
        m.hourly_usd
            .map(|p| format!(" at ${p:.2}/h"))
            .unwrap_or_else(|| " (no price)".into())
    )
}

/// The offer a cluster goes to, and why: where it runs while that still
/// fits, else by its strategy.
fn pick<'c>(
    cluster: &str,
    c: &Cluster,
    cands: &[Candidate],
    per_candidate: &[(&Candidate, Vec<Match<'c>>)],
    capacity_note: &str,
    opts: &ResolveOptions,
) -> Option<(Match<'c>, String)> {
    // A running cluster stays where it is while that place still fits: a
    // move is a reviewed migration, never a side effect of a price list.
    let here = opts.current.get(cluster).and_then(|p| {
        per_candidate
            .iter()
            .flat_map(|(_, ms)| ms.iter())
            .find(|m| m.offering.cloud == p.cloud && m.offering.region == p.region)
    });
    match (here, c.strategy) {
        (Some(m), _) => Some((
            m.clone(),
            format!(
                "stays in {} {} where it runs: {}{capacity_note}",
                m.offering.cloud,
                m.offering.region,
                describe(m)
            ),
        )),
        (None, strategy) => match strategy {
            Strategy::Cheapest => {
                let mut all: Vec<&Match<'_>> =
                    per_candidate.iter().flat_map(|(_, ms)| ms.iter()).collect();
                all.sort_by(|a, b| by_price(a, b));
                all.first().map(|m| {
                let runner_up = all
                    .iter()
                    .find(|o| (o.offering.cloud, &o.offering.region) != (m.offering.cloud, &m.offering.region))
                    .map(|o| format!("; next best {}", describe(o)))
                    .unwrap_or_default();
                (
                    (*m).clone(),
                    format!(
                        "cheapest of {} offer(s) across {} candidate(s): {}{runner_up}{capacity_note}",
                        all.len(),
                        cands.len(),
                        describe(m)
                    ),
                )
            })
            }
            Strategy::Ordered => per_candidate
                .iter()
                .enumerate()
                .find_map(|(i, (cand, ms))| {
                    ms.first().map(|m| {
                        let passed: Vec<String> =
                            per_candidate[..i].iter().map(|(c, _)| c.label()).collect();
                        (
                            m.clone(),
                            format!(
                                "first candidate in order that offers it ({}): {}{}{capacity_note}",
                                cand.label(),
                                describe(m),
                                if passed.is_empty() {
                                    String::new()
                                } else {
                                    format!("; {} offer(s) none", passed.join(", "))
                                }
                            ),
                        )
                    })
                }),
        },
    }
}

/// Why nothing fits, with the closest offers as the hint.
fn nothing_fits(
    catalog: &Catalog,
    c: &Cluster,
    cands: &[Candidate],
    template: &OfferQuery,
    capacity_note: &str,
) -> (String, String) {
    let labels: Vec<String> = cands.iter().map(|c| c.label()).collect();
    let close = catalog.closest(
        &OfferQuery {
            cloud: None,
            region: None,
            ..template.clone()
        },
        3,
    );
    let hint = if close.is_empty() {
        "run `gpuform offers` to see what each cloud offers".to_string()
    } else {
        format!(
            "closest offers: {}",
            close
                .iter()
                .map(|m| format!(
                    "{}{}",
                    describe(m),
                    m.difference
                        .as_ref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                ))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    (
        format!(
            "no candidate offers {} × {} with these constraints (candidates: {}){capacity_note}",
            c.gpu.count,
            template.gpu_model.as_deref().unwrap_or("?"),
            labels.join(", ")
        ),
        hint,
    )
}
