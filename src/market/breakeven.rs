//! Reserved vs on-demand vs spot: for an expected number of hours a month,
//! what each pricing model costs, which is cheapest, and the utilisation
//! above which a reservation pays.
//!
//! The arithmetic, per instance:
//! - on-demand and spot are paid per hour used: `hours × rate`;
//! - a reservation is paid for every hour of the month whether used or not:
//!   `730 × rate`;
//! - a reservation beats on-demand above `reserved_rate / on_demand_rate` of
//!   the month (the break-even utilisation), i.e. above that many × 730 hours.
//!
//! Alibaba, Tencent and Huawei sell subscriptions (包年包月) rather than
//! AWS-style reservations: there `reserved-1y` is the one-year subscription
//! (a 12-month quote ÷ 12 a month, when the catalog has one) and the
//! one-month subscription is its own column, paid for the month like a
//! reservation. A single job (`--job-hours`) is priced with each cloud's
//! pay-as-you-go billing granularity and minimum ([`gpuform_catalog::billing`]).

use crate::views::{self, right_align, usd};
use gpuform_catalog::{billing, HOURS_PER_MONTH};
use gpuform_catalog::{Catalog, OfferQuery, Offering, PriceBasis, PricingModel};
use gpuform_provider::Cloud;
use gpuform_provider::UserError;
use serde::Serialize;

/// The most hours a month can have (31 × 24).
pub const MAX_HOURS_PER_MONTH: f64 = 744.0;

/// Checks `--hours`.
pub fn check_hours(hours: f64) -> Result<f64, UserError> {
    if hours.is_finite() && (0.0..=MAX_HOURS_PER_MONTH).contains(&hours) {
        Ok(hours)
    } else {
        Err(UserError::new(
            format!("--hours must be between 0 and {MAX_HOURS_PER_MONTH} (hours used per month), found {hours}"),
            format!("{HOURS_PER_MONTH} is a whole month, 365 is about half"),
        ))
    }
}

/// One pricing model's monthly cost for one instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCost {
    pub pricing: PricingModel,
    pub hourly_usd: f64,
    /// The currency the source quotes the price in.
    pub currency: &'static str,
    /// Hours billed a month: the hours used, or 730 for a reservation.
    pub billed_hours: f64,
    pub monthly_usd: f64,
    /// What to keep in mind (interruption, commitment).
    pub caveat: Option<&'static str>,
    /// `sourced`, `assumed` (the source names no region) or `override`.
    pub basis: &'static str,
    pub as_of: String,
}

/// The one-month subscription (包月) of an offering, paid for the month.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubscriptionCost {
    pub monthly_usd: f64,
    pub currency: &'static str,
    pub source: String,
    pub as_of: String,
    pub basis: &'static str,
    /// `monthly / (on-demand rate × 730)`; `None` without an on-demand price.
    pub break_even_utilisation: Option<f64>,
}

/// One job of `job_hours` on pay-as-you-go, billed by the cloud's rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobCost {
    pub job_hours: f64,
    /// What the cloud bills for it (granularity, minimum).
    pub billed_hours: f64,
    pub on_demand_usd: Option<f64>,
    pub spot_usd: Option<f64>,
    pub granularity_seconds: u32,
    pub minimum_seconds: u32,
    pub billing_source: &'static str,
}

/// Where a reservation starts paying against on-demand.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakEven {
    pub pricing: PricingModel,
    /// `reserved_rate / on_demand_rate`, 0..1 (above 1 it never pays).
    pub utilisation: f64,
    /// The same in hours per month (× 730).
    pub hours_per_month: f64,
}

/// Break-even figures for one offering (an instance type in a region).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakevenRow {
    pub cloud: Cloud,
    pub region: String,
    pub instance_type: String,
    pub gpu_model: String,
    pub gpu_count: u32,
    pub hours: f64,
    /// In [`PricingModel::ALL`] order, only the models with a price.
    pub costs: Vec<ModelCost>,
    /// The cheapest model at `hours` (ties: the first in `ALL` order).
    pub cheapest: PricingModel,
    /// One per reservation term with both prices known.
    pub break_even: Vec<BreakEven>,
    /// The one-month subscription, where the catalog has one.
    pub monthly_subscription: Option<SubscriptionCost>,
    /// The cheapest option at `hours` counting the monthly subscription
    /// (`monthly-subscription` or a pricing model).
    pub cheapest_overall: String,
    /// One job's cost, with `--job-hours`.
    pub job: Option<JobCost>,
}

impl BreakevenRow {
    pub fn cost(&self, p: PricingModel) -> Option<&ModelCost> {
        self.costs.iter().find(|c| c.pricing == p)
    }
}

/// The break-even figures of one offering at `hours` used per month;
/// `None` unless it has at least two priced models.
pub fn for_offering(
    catalog: &Catalog,
    o: &Offering,
    hours: f64,
    cny_per_usd: f64,
) -> Option<BreakevenRow> {
    for_offering_job(catalog, o, hours, cny_per_usd, None)
}

/// [`for_offering`], plus the cost of one job of `job_hours` when given.
pub fn for_offering_job(
    catalog: &Catalog,
    o: &Offering,
    hours: f64,
    cny_per_usd: f64,
    job_hours: Option<f64>,
) -> Option<BreakevenRow> {
    let t = catalog.instance_type(o.cloud, &o.instance_type)?;
    let mut costs = Vec::new();
    for p in PricingModel::ALL {
        // On the subscription clouds the catalog's reserved-1y is the
        // one-year subscription (see `gpuform_catalog`'s loader).
        let Some(price) = o.prices.get(&p) else {
            continue;
        };
        let (rate, currency, basis, as_of) = (
            price.hourly_usd(cny_per_usd),
            price.currency.as_str(),
            price.basis,
            price.as_of.clone(),
        );
        if !(rate.is_finite() && rate > 0.0) {
            continue;
        }
        let (billed, caveat) = match p {
            PricingModel::OnDemand => (hours, None),
            PricingModel::Spot => (
                hours,
                Some("may be interrupted at short notice; price varies"),
            ),
            PricingModel::Reserved1y if o.cloud != Cloud::Aws => (
                HOURS_PER_MONTH,
                Some("1-year subscription (包年), paid for every hour"),
            ),
            PricingModel::Reserved1y => (
                HOURS_PER_MONTH,
                Some("1-year commitment, paid for every hour"),
            ),
            PricingModel::Reserved3y => (
                HOURS_PER_MONTH,
                Some("3-year commitment, paid for every hour"),
            ),
        };
        costs.push(ModelCost {
            pricing: p,
            hourly_usd: rate,
            currency,
            billed_hours: billed,
            monthly_usd: billed * rate,
            caveat,
            basis: basis.as_str(),
            as_of,
        });
    }
    let od_rate = costs
        .iter()
        .find(|c| c.pricing == PricingModel::OnDemand)
        .map(|c| c.hourly_usd);
    let monthly_subscription = catalog
        .subscription(o.cloud, &o.region, &o.instance_type, 1)
        .map(|sp| {
            let m = sp.price_usd(cny_per_usd);
            SubscriptionCost {
                monthly_usd: m,
                currency: sp.currency.as_str(),
                source: sp.source.clone(),
                as_of: sp.as_of.clone(),
                basis: sp.basis().as_str(),
                break_even_utilisation: od_rate.map(|r| m / (r * HOURS_PER_MONTH)),
            }
        })
        .filter(|s| s.monthly_usd.is_finite() && s.monthly_usd > 0.0);
    if costs.len() + usize::from(monthly_subscription.is_some()) < 2 {
        return None;
    }
    let job = job_hours.map(|h| {
        let rule = billing(o.cloud);
        let billed = rule.billed_hours(h);
        let of = |p: PricingModel| {
            costs
                .iter()
                .find(|c| c.pricing == p)
                .map(|c| c.hourly_usd * billed)
        };
        JobCost {
            job_hours: h,
            billed_hours: billed,
            on_demand_usd: of(PricingModel::OnDemand),
            spot_usd: of(PricingModel::Spot),
            granularity_seconds: rule.granularity_seconds,
            minimum_seconds: rule.minimum_seconds,
            billing_source: rule.source,
        }
    });
    let cheapest = costs
        .iter()
        .min_by(|a, b| a.monthly_usd.total_cmp(&b.monthly_usd))
        .map(|c| c.pricing);
    let cheapest_cost = cheapest.and_then(|p| costs.iter().find(|c| c.pricing == p));
    let cheapest_overall = match (&monthly_subscription, cheapest_cost) {
        (Some(s), Some(c)) if s.monthly_usd < c.monthly_usd => "monthly-subscription".to_string(),
        (Some(_), None) => "monthly-subscription".to_string(),
        (_, Some(c)) => c.pricing.as_str().to_string(),
        (None, None) => return None,
    };
    let cheapest = cheapest.unwrap_or(PricingModel::OnDemand);
    let on_demand = costs
        .iter()
        .find(|c| c.pricing == PricingModel::OnDemand)
        .map(|c| c.hourly_usd);
    let break_even = match on_demand {
        Some(od) => costs
            .iter()
            .filter(|c| {
                matches!(
                    c.pricing,
                    PricingModel::Reserved1y | PricingModel::Reserved3y
                )
            })
            .map(|c| {
                let u = c.hourly_usd / od;
                BreakEven {
                    pricing: c.pricing,
                    utilisation: u,
                    hours_per_month: u * HOURS_PER_MONTH,
                }
            })
            .collect(),
        None => Vec::new(),
    };
    Some(BreakevenRow {
        cloud: o.cloud,
        region: o.region.clone(),
        instance_type: o.instance_type.clone(),
        gpu_model: t.gpu_model.clone(),
        gpu_count: t.gpu_count,
        hours,
        costs,
        cheapest,
        break_even,
        monthly_subscription,
        cheapest_overall,
        job,
    })
}

/// What `gpuform breakeven` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakevenReport {
    pub query: String,
    /// One job's length, with `--job-hours`.
    pub job_hours: Option<f64>,
    pub hours: f64,
    pub cny_per_usd: f64,
    /// Sorted by the cheapest monthly cost per GPU, then cloud, region, type.
    pub rows: Vec<BreakevenRow>,
    /// Matching offerings left out because they have fewer than two prices.
    pub single_priced: usize,
}

/// Every offering meeting `q` (its pricing and budget fields are ignored)
/// that has several pricing models, at `hours` used per month.
pub fn breakeven(catalog: &Catalog, q: &OfferQuery, hours: f64) -> BreakevenReport {
    breakeven_job(catalog, q, hours, None)
}

/// [`breakeven`], plus the cost of one job of `job_hours` on each offering.
pub fn breakeven_job(
    catalog: &Catalog,
    q: &OfferQuery,
    hours: f64,
    job_hours: Option<f64>,
) -> BreakevenReport {
    let q = OfferQuery {
        max_hourly_usd: None,
        ..q.clone()
    };
    let mut rows = Vec::new();
    let mut single = 0;
    for m in catalog.matching(&q) {
        match for_offering_job(catalog, m.offering, hours, q.cny_per_usd, job_hours) {
            Some(r) => rows.push(r),
            None => single += 1,
        }
    }
    let per_gpu = |r: &BreakevenRow| {
        let m = r.cost(r.cheapest).map_or(f64::INFINITY, |c| c.monthly_usd);
        let s = r
            .monthly_subscription
            .as_ref()
            .map_or(f64::INFINITY, |s| s.monthly_usd);
        m.min(s) / f64::from(r.gpu_count)
    };
    rows.sort_by(|a, b| {
        per_gpu(a)
            .total_cmp(&per_gpu(b))
            .then_with(|| a.cloud.cmp(&b.cloud))
            .then_with(|| a.region.cmp(&b.region))
            .then_with(|| a.instance_type.cmp(&b.instance_type))
    });
    let mut words = super::offers::describe_query(&q);
    // The pricing model of the query plays no part here.
    if let Some(rest) = words.strip_suffix(&format!(", {}", q.pricing.as_str())) {
        words = rest.to_string();
    } else {
        words = words.replacen(&format!(", {}", q.pricing.as_str()), "", 1);
    }
    BreakevenReport {
        query: words,
        job_hours,
        hours,
        cny_per_usd: q.cny_per_usd,
        rows,
        single_priced: single,
    }
}

fn pct(u: f64) -> String {
    format!("{:.0}%", u * 100.0)
}

/// The report as a table: monthly cost per instance by pricing model, the
/// cheapest, and the break-even utilisation of each reservation.
pub fn render_table(r: &BreakevenReport) -> String {
    let mut out = String::new();
    if r.rows.is_empty() {
        out.push_str(&format!(
            "No offering of {} has more than one pricing model in the catalog{}.\n",
            r.query,
            if r.single_priced > 0 {
                format!(" ({} have a single price)", r.single_priced)
            } else {
                String::new()
            }
        ));
        out.push_str("  hint: drop --region or --cloud; `gpuform offers` lists every price\n");
        return out;
    }
    let job_col = r
        .job_hours
        .map(|j| format!("one {} h job (on-demand / spot)", trim_float(j)));
    let mut header = vec![
        "cloud",
        "region",
        "instance type",
        "GPUs",
        "on-demand/mo",
        "spot/mo",
        "reserved-1y/mo",
        "reserved-3y/mo",
        "monthly-sub/mo",
        "cheapest",
        "reserved pays above",
    ];
    if let Some(j) = &job_col {
        header.push(j.as_str());
    }
    let mut t = views::table(&header, false);
    let mut assumed = false;
    for row in &r.rows {
        let (cells, row_assumed) = row_cells(row);
        assumed |= row_assumed;
        t.add_row(cells);
    }
    right_align(&mut t, &[4, 5, 6, 7, 8]);
    out.push_str(&format!(
        "Monthly cost per instance of {} at {} h/month used ({}% of {HOURS_PER_MONTH} h):\n",
        r.query,
        trim_float(r.hours),
        trim_float((r.hours / HOURS_PER_MONTH * 1000.0).round() / 10.0)
    ));
    out.push_str(&t.to_string());
    out.push('\n');
    out.push_str(&footnotes(r, assumed));
    out
}

/// A monthly cost, marked `*` when its price is assumed for the region.
fn priced(monthly_usd: f64, basis: &str) -> String {
    let mark = if basis == PriceBasis::Assumed.as_str() {
        "*"
    } else {
        ""
    };
    format!("{}{mark}", usd(monthly_usd))
}

/// One offering's cells, and whether any of its prices is assumed.
fn row_cells(row: &BreakevenRow) -> (Vec<String>, bool) {
    let cell = |p: PricingModel| {
        row.cost(p)
            .map_or("—".to_string(), |c| priced(c.monthly_usd, c.basis))
    };
    let assumed = row
        .costs
        .iter()
        .any(|c| c.basis == PriceBasis::Assumed.as_str())
        || row
            .monthly_subscription
            .as_ref()
            .is_some_and(|s| s.basis == PriceBasis::Assumed.as_str());
    let sub = row
        .monthly_subscription
        .as_ref()
        .map_or("—".to_string(), |s| priced(s.monthly_usd, s.basis));
    let mut be: Vec<String> = row
        .break_even
        .iter()
        .map(|b| {
            if b.utilisation >= 1.0 {
                format!("{}: never", b.pricing.as_str())
            } else {
                format!(
                    "{}: {} ({:.0} h/mo)",
                    b.pricing.as_str(),
                    pct(b.utilisation),
                    b.hours_per_month
                )
            }
        })
        .collect();
    if let Some(u) = row
        .monthly_subscription
        .as_ref()
        .and_then(|s| s.break_even_utilisation)
    {
        be.push(if u >= 1.0 {
            "monthly-sub: never".to_string()
        } else {
            format!("monthly-sub: {} ({:.0} h/mo)", pct(u), u * HOURS_PER_MONTH)
        });
    }
    let mut cells = vec![
        row.cloud.to_string(),
        row.region.clone(),
        row.instance_type.clone(),
        format!("{} × {}", row.gpu_count, row.gpu_model),
        cell(PricingModel::OnDemand),
        cell(PricingModel::Spot),
        cell(PricingModel::Reserved1y),
        cell(PricingModel::Reserved3y),
        sub,
        row.cheapest_overall.clone(),
        if be.is_empty() {
            "— (no on-demand price)".to_string()
        } else {
            be.join("; ")
        },
    ];
    if let Some(j) = &row.job {
        let f = |v: Option<f64>| v.map_or("—".to_string(), |x| format!("${x:.2}"));
        cells.push(format!("{} / {}", f(j.on_demand_usd), f(j.spot_usd)));
    }
    (cells, assumed)
}

/// What the table's figures mean, and the billing of a job on each cloud.
fn footnotes(r: &BreakevenReport, assumed: bool) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "On-demand and spot: hours used × rate. Reserved: {HOURS_PER_MONTH} h × rate, paid whether used or not.\n"
    ));
    out.push_str("Spot capacity may be reclaimed at short notice; its price moves.\n");
    out.push_str("Alibaba, Tencent, Huawei: reserved-1y is the one-year subscription (包年), monthly-sub the one-month subscription (包月), both paid for the whole term.\n");
    if assumed {
        out.push_str(
            "* assumed: the price's source names no region; it is assumed to hold here.\n",
        );
    }
    if let Some(j) = r.job_hours {
        let mut clouds: Vec<Cloud> = r.rows.iter().map(|row| row.cloud).collect();
        clouds.sort();
        clouds.dedup();
        for c in clouds {
            let b = billing(c);
            out.push_str(&format!(
                "One {} h job on {c}: billed {:.4} h ({} s steps{}) — {}.\n",
                trim_float(j),
                b.billed_hours(j),
                b.granularity_seconds,
                if b.minimum_seconds > 0 {
                    format!(", {} s minimum", b.minimum_seconds)
                } else {
                    ", no minimum stated".to_string()
                },
                b.source
            ));
        }
    }
    out.push_str("Break-even: a reservation is cheaper than on-demand above reserved rate / on-demand rate of the month.\n");
    if r.single_priced > 0 {
        out.push_str(&format!(
            "{} matching offering(s) with a single price left out.\n",
            r.single_priced
        ));
    }
    if r.rows
        .iter()
        .any(|row| row.costs.iter().any(|c| c.currency == "CNY"))
    {
        out.push_str(&format!(
            "Prices quoted in CNY are converted at {:.2} CNY per USD (change with --cny-per-usd).\n",
            r.cny_per_usd
        ));
    }
    out
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hours_are_checked() {
        assert!(check_hours(730.0).is_ok());
        assert!(check_hours(0.0).is_ok());
        assert!(check_hours(745.0).is_err());
        assert!(check_hours(-1.0).is_err());
        assert!(check_hours(f64::NAN).is_err());
    }

    #[test]
    fn known_row() {
        // aws us-east-1 g4dn.xlarge: on-demand 0.526, spot 0.2000, reserved-1y 0.331.
        let c = Catalog::builtin();
        let o = c
            .offering(Cloud::Aws, "us-east-1", "g4dn.xlarge")
            .expect("in the catalog");
        let r = for_offering(c, o, 300.0, 7.0).unwrap();
        let od = r.cost(PricingModel::OnDemand).unwrap();
        assert!((od.monthly_usd - 300.0 * 0.526).abs() < 1e-9);
        let res = r.cost(PricingModel::Reserved1y).unwrap();
        assert!((res.monthly_usd - 730.0 * 0.331).abs() < 1e-9);
        assert_eq!(r.cheapest, PricingModel::Spot);
        let be = &r.break_even[0];
        assert!((be.utilisation - 0.331 / 0.526).abs() < 1e-12);
        assert!((be.hours_per_month - 730.0 * 0.331 / 0.526).abs() < 1e-9);
    }
}
