//! Finding offerings: exact matches and, failing those, the nearest ones.

use super::{Catalog, Cloud, InstanceType, Interconnect, Offering, PricingModel};
use std::cmp::Ordering;
use std::collections::HashSet;

/// CNY per USD used when a query does not say otherwise.
///
/// 7.00 is the rate implied by the conversions in the catalog's own source
/// notes, gathered 2026-11 (`shared/catalog/README.md`: ¥28.56 ≈ $4.08 and
/// ¥26.88 ≈ $3.84, both exactly 7.00). It is not an official reference rate;
/// set [`OfferQuery::cny_per_usd`] to the rate you want.
pub const DEFAULT_CNY_PER_USD: f64 = 7.0;

/// What a cluster needs. `None` means "any".
#[derive(Debug, Clone, PartialEq)]
pub struct OfferQuery {
    pub cloud: Option<Cloud>,
    pub region: Option<String>,
    /// Canonical GPU model name (an alias is resolved too; an unknown or
    /// ambiguous name matches nothing).
    pub gpu_model: Option<String>,
    /// Exact number of GPUs per instance.
    pub gpu_count: Option<u32>,
    /// The link the GPUs inside an instance must have; instances whose link
    /// no source states do not match a required link.
    pub interconnect: Option<Interconnect>,
    /// `Some(true)`: the instance type must have an RDMA fabric (EFA, eRDMA,
    /// RoCE, InfiniBand). `Some(false)` and `None` do not constrain.
    pub rdma: Option<bool>,
    /// Prices are read for this model (sorting, budget).
    pub pricing: PricingModel,
    /// Minimum memory per GPU, compared with the instance type's
    /// `gpu_mem_gib` (for some AWS types the usable, not nominal, memory).
    pub min_gpu_mem_gib: Option<f64>,
    /// Maximum price per instance-hour in USD for `pricing`; offerings whose
    /// price is unknown do not match when this is set.
    pub max_hourly_usd: Option<f64>,
    pub cny_per_usd: f64,
}

impl Default for OfferQuery {
    fn default() -> Self {
        OfferQuery {
            cloud: None,
            region: None,
            gpu_model: None,
            gpu_count: None,
            interconnect: None,
            rdma: None,
            pricing: PricingModel::OnDemand,
            min_gpu_mem_gib: None,
            max_hourly_usd: None,
            cny_per_usd: DEFAULT_CNY_PER_USD,
        }
    }
}

/// An offering that meets (or, from [`Catalog::closest`], nearly meets) a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Match<'a> {
    pub instance: &'a InstanceType,
    pub offering: &'a Offering,
    /// Price per instance-hour in USD for the query's pricing model; `None` when unknown.
    pub hourly_usd: Option<f64>,
    pub per_gpu_hour_usd: Option<f64>,
    /// How it differs from the query (only from `closest`), e.g.
    /// `4 x A100-80GB instead of 8; in us-west-2, not us-east-1`.
    pub difference: Option<String>,
}

/// Constraints `closest` may drop, in the order it drops them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relax {
    Count,
    Fabric,
    Region,
    Cloud,
    Budget,
}

impl Catalog {
    fn resolve_model(&self, q: &OfferQuery) -> Result<Option<String>, ()> {
        match &q.gpu_model {
            None => Ok(None),
            Some(m) => self.gpu(m).map(|g| Some(g.name.clone())).map_err(|_| ()),
        }
    }

    pub(crate) fn price_usd(&self, o: &Offering, q: &OfferQuery) -> Option<f64> {
        let p = o.prices.get(&q.pricing)?;
        let usd = p.hourly_usd(q.cny_per_usd);
        (usd.is_finite() && usd > 0.0).then_some(usd)
    }

    fn make_match<'a>(
        &'a self,
        o: &'a Offering,
        t: &'a InstanceType,
        q: &OfferQuery,
        difference: Option<String>,
    ) -> Match<'a> {
        let hourly_usd = self.price_usd(o, q);
        Match {
            instance: t,
            offering: o,
            hourly_usd,
            per_gpu_hour_usd: hourly_usd.map(|h| h / f64::from(t.gpu_count)),
            difference,
        }
    }

    /// Every offering meeting `q` with the constraints in `relaxed` dropped.
    fn filter<'a>(
        &'a self,
        q: &OfferQuery,
        model: Option<&str>,
        relaxed: &[Relax],
    ) -> Vec<Match<'a>> {
        let drop = |r: Relax| relaxed.contains(&r);
        let mut out = Vec::new();
        for o in &self.offerings {
            if !drop(Relax::Cloud) && q.cloud.is_some_and(|c| c != o.cloud) {
                continue;
            }
            if !drop(Relax::Region)
                && !drop(Relax::Cloud)
                && q.region.as_deref().is_some_and(|r| r != o.region)
            {
                continue;
            }
            let Some(t) = self.instance_type(o.cloud, &o.instance_type) else {
                continue;
            };
            if model.is_some_and(|m| m != t.gpu_model) {
                continue;
            }
            if !drop(Relax::Count) && q.gpu_count.is_some_and(|n| n != t.gpu_count) {
                continue;
            }
            if !drop(Relax::Fabric) {
                if q.interconnect.is_some_and(|i| t.interconnect != Some(i)) {
                    continue;
                }
                if q.rdma == Some(true) && t.rdma.is_none() {
                    continue;
                }
            }
            if q.min_gpu_mem_gib.is_some_and(|m| t.gpu_mem_gib < m) {
                continue;
            }
            let m = self.make_match(o, t, q, None);
            if !drop(Relax::Budget) {
                if let Some(max) = q.max_hourly_usd {
                    if !m.hourly_usd.is_some_and(|h| h <= max) {
                        continue;
                    }
                }
            }
            out.push(m);
        }
        out.sort_by(cmp_matches);
        out
    }

    /// Every offering meeting the query, sorted by USD price per GPU-hour for
    /// the query's pricing model (unknown price last), ties broken by cloud,
    /// region, instance type name: deterministic.
    pub fn matching(&self, q: &OfferQuery) -> Vec<Match<'_>> {
        match self.resolve_model(q) {
            Ok(model) => self.filter(q, model.as_deref(), &[]),
            Err(()) => Vec::new(),
        }
    }

    /// When [`matching`](Self::matching) is empty: up to `n` nearest offers,
    /// found by relaxing constraints one at a time (GPU count, then
    /// interconnect/fabric, then region, then cloud; finally the budget),
    /// then cumulatively in the same order. Each carries a `difference` text.
    /// The GPU model and the memory floor are never relaxed. When `matching`
    /// is not empty, its first `n` entries are returned (no difference).
    pub fn closest(&self, q: &OfferQuery, n: usize) -> Vec<Match<'_>> {
        let Ok(model) = self.resolve_model(q) else {
            return Vec::new();
        };
        let exact = self.filter(q, model.as_deref(), &[]);
        if !exact.is_empty() {
            return exact.into_iter().take(n).collect();
        }
        let order = [
            Relax::Count,
            Relax::Fabric,
            Relax::Region,
            Relax::Cloud,
            Relax::Budget,
        ];
        let mut stages: Vec<Vec<Relax>> = order.iter().map(|r| vec![*r]).collect();
        for k in 2..=order.len() {
            stages.push(order[..k].to_vec());
        }
        let mut seen: HashSet<(Cloud, &str, &str)> = HashSet::new();
        let mut out = Vec::new();
        for stage in stages {
            if out.len() >= n {
                break;
            }
            let mut found = self.filter(q, model.as_deref(), &stage);
            // Nearer GPU counts first, then the usual order.
            found.sort_by(|a, b| {
                count_distance(q, a)
                    .cmp(&count_distance(q, b))
                    .then_with(|| cmp_matches(a, b))
            });
            for mut m in found {
                if out.len() >= n {
                    break;
                }
                if !seen.insert((
                    m.offering.cloud,
                    m.offering.region.as_str(),
                    m.offering.instance_type.as_str(),
                )) {
                    continue;
                }
                m.difference = Some(describe_difference(q, &m));
                out.push(m);
            }
        }
        out
    }
}

fn count_distance(q: &OfferQuery, m: &Match<'_>) -> u32 {
    q.gpu_count.map_or(0, |n| n.abs_diff(m.instance.gpu_count))
}

/// Price per GPU-hour (unknown last), then cloud, region, instance type.
pub(crate) fn cmp_matches(a: &Match<'_>, b: &Match<'_>) -> Ordering {
    let price = match (a.per_gpu_hour_usd, b.per_gpu_hour_usd) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    price
        .then_with(|| a.offering.cloud.cmp(&b.offering.cloud))
        .then_with(|| a.offering.region.cmp(&b.offering.region))
        .then_with(|| a.offering.instance_type.cmp(&b.offering.instance_type))
}

fn describe_difference(q: &OfferQuery, m: &Match<'_>) -> String {
    let t = m.instance;
    let o = m.offering;
    let mut parts = Vec::new();
    if let Some(n) = q.gpu_count {
        if n != t.gpu_count {
            parts.push(format!(
                "{} x {} instead of {}",
                t.gpu_count, t.gpu_model, n
            ));
        }
    }
    if let Some(want) = q.interconnect {
        if t.interconnect != Some(want) {
            match t.interconnect {
                Some(have) => parts.push(format!("{} instead of {}", have.as_str(), want.as_str())),
                None => parts.push(format!("no source says its GPUs use {}", want.as_str())),
            }
        }
    }
    if q.rdma == Some(true) && t.rdma.is_none() {
        parts.push("no RDMA fabric (EFA/eRDMA/RoCE/InfiniBand) known".to_string());
    }
    if let Some(c) = q.cloud {
        if c != o.cloud {
            parts.push(format!("on {}, not {}", o.cloud, c));
        }
    }
    if let Some(r) = &q.region {
        if *r != o.region {
            parts.push(format!("in {}, not {}", o.region, r));
        }
    }
    if let Some(max) = q.max_hourly_usd {
        match m.hourly_usd {
            Some(h) if h > max => {
                parts.push(format!("costs ${h:.2}/h, above the ${max:.2}/h budget"))
            }
            None => parts.push(format!("{} price unknown", q.pricing.as_str())),
            _ => {}
        }
    }
    if parts.is_empty() {
        parts.push("meets the query".to_string());
    }
    parts.join("; ")
}
