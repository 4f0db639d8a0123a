//! `gpuform offers`: every instance type meeting a GPU requirement, across
//! all clouds and regions, cheapest GPU-hour first, with where each price
//! comes from and how old it is.
//!
//! Pure: [`offers`] turns an [`OfferQuery`] into an [`OffersReport`];
//! [`render_table`] lays it out. The command line only parses and prints.

use gpuform_catalog::{Catalog, Currency, Interconnect, OfferQuery, PricingModel};
use gpuform_provider::Cloud;
use serde::Serialize;

/// Prices older than this many days are flagged.
pub const DEFAULT_STALE_DAYS: i64 = 180;

pub use gpuform_catalog::{parse_as_of, price_age, Day, PriceAge};

/// The price of one offering for the query's pricing model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriceInfo {
    /// As the source quotes it, per instance-hour.
    pub amount: f64,
    pub currency: &'static str,
    pub hourly_usd: f64,
    pub per_gpu_hour_usd: f64,
    pub source: String,
    pub as_of: String,
    pub age: PriceAge,
}

/// One matching offering.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfferRow {
    pub cloud: Cloud,
    pub region: String,
    pub instance_type: String,
    pub gpu_model: String,
    pub gpu_count: u32,
    pub gpu_mem_gib: f64,
    pub vcpus: u32,
    pub ram_gib: f64,
    /// `None` when no source states it.
    pub interconnect: Option<&'static str>,
    /// The RDMA fabric (`efa`, `erdma`...), `None` when none is known.
    pub rdma: Option<&'static str>,
    pub pricing: &'static str,
    /// `None` when the catalog has no price for this pricing model here.
    pub price: Option<PriceInfo>,
    /// Caveats the catalog attaches to this offering.
    pub notes: Vec<String>,
}

/// What `gpuform offers` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffersReport {
    /// The requirement in words, e.g. `8 × A100-80GB, on-demand, nvlink`.
    pub query: String,
    pub pricing: &'static str,
    pub cny_per_usd: f64,
    pub stale_days: i64,
    /// Sorted by USD per GPU-hour (unknown prices last), then cloud, region, type.
    pub offers: Vec<OfferRow>,
}

impl OffersReport {
    /// Rows whose price is dated and older than the threshold.
    pub fn stale(&self) -> impl Iterator<Item = &OfferRow> {
        self.offers.iter().filter(|r| {
            matches!(
                r.price,
                Some(PriceInfo {
                    age: PriceAge::Dated { stale: true, .. },
                    ..
                })
            )
        })
    }

    /// Rows whose price date is unknown.
    pub fn undated(&self) -> impl Iterator<Item = &OfferRow> {
        self.offers.iter().filter(|r| {
            matches!(
                r.price,
                Some(PriceInfo {
                    age: PriceAge::Unknown,
                    ..
                })
            )
        })
    }
}

/// Bad input to `offers`/`breakeven`, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}\n  hint: {hint}")]
pub struct InputError {
    pub message: String,
    pub hint: String,
}

impl InputError {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> InputError {
        InputError {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// Parses `GPU[:COUNT]` against the catalog: the canonical model name and
/// the count when one is given.
pub fn parse_gpu_arg(catalog: &Catalog, text: &str) -> Result<(String, Option<u32>), InputError> {
    let req = crate::spec::GpuRequest::parse(text)
        .map_err(|(message, hint)| InputError::new(message, hint))?;
    let model = catalog.gpu(&req.model).map_err(|e| {
        InputError::new(
            e.to_string(),
            format!(
                "GPU models gpuform knows: {}",
                catalog
                    .gpus()
                    .iter()
                    .map(|g| g.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let count = text.contains(':').then_some(req.count);
    Ok((model.name.clone(), count))
}

/// Parses a cloud name (`aws`, `alibaba`, `tencent`, `huawei`).
pub fn parse_cloud(text: &str) -> Result<Cloud, InputError> {
    text.trim().to_ascii_lowercase().parse().map_err(|_| {
        InputError::new(
            format!("unknown cloud `{text}`"),
            "write one of aws, alibaba, tencent, huawei",
        )
    })
}

/// Parses a pricing model (`on-demand`, `spot`, `reserved-1y`, `reserved-3y`).
pub fn parse_pricing(text: &str) -> Result<PricingModel, InputError> {
    PricingModel::parse(text).ok_or_else(|| {
        InputError::new(
            format!("unknown pricing model `{text}`"),
            "write one of on-demand, spot, reserved-1y, reserved-3y",
        )
    })
}

/// Checks a region name against the catalog (of `cloud`, or of any cloud).
pub fn check_region(
    catalog: &Catalog,
    cloud: Option<Cloud>,
    region: &str,
) -> Result<(), InputError> {
    let clouds: Vec<Cloud> = match cloud {
        Some(c) => vec![c],
        None => Cloud::ALL.to_vec(),
    };
    if clouds.iter().any(|c| catalog.region(*c, region).is_some()) {
        return Ok(());
    }
    let known: Vec<String> = clouds
        .iter()
        .flat_map(|c| catalog.regions(*c))
        .map(|r| r.name.clone())
        .collect();
    let mut close: Vec<(f64, &String)> = known
        .iter()
        .map(|k| (strsim::jaro_winkler(region, k), k))
        .filter(|(s, _)| *s > 0.85)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    let whose = cloud.map_or("any cloud's".to_string(), |c| format!("a {c}"));
    Err(InputError::new(
        format!("`{region}` is not {whose} region gpuform knows"),
        match close.first() {
            Some((_, k)) => format!("did you mean `{k}`?"),
            None => format!("known regions: {}", known.join(", ")),
        },
    ))
}

/// Checks a CNY-per-USD rate.
pub fn check_rate(rate: f64) -> Result<f64, InputError> {
    if rate.is_finite() && rate > 0.0 {
        Ok(rate)
    } else {
        Err(InputError::new(
            format!("--cny-per-usd must be a positive number, found {rate}"),
            "e.g. --cny-per-usd 7.1",
        ))
    }
}

/// The query in words.
pub fn describe_query(q: &OfferQuery) -> String {
    let mut parts = Vec::new();
    let model = q.gpu_model.as_deref().unwrap_or("any GPU");
    parts.push(match q.gpu_count {
        Some(n) => format!("{n} × {model}"),
        None => format!("{model} (any count)"),
    });
    parts.push(q.pricing.as_str().to_string());
    if let Some(c) = q.cloud {
        parts.push(format!("on {c}"));
    }
    if let Some(r) = &q.region {
        parts.push(format!("in {r}"));
    }
    if let Some(m) = q.min_gpu_mem_gib {
        parts.push(format!("≥ {m} GiB per GPU"));
    }
    if let Some(i) = q.interconnect {
        parts.push(i.as_str().to_string());
    }
    if q.rdma == Some(true) {
        parts.push("RDMA".to_string());
    }
    if let Some(m) = q.max_hourly_usd {
        parts.push(format!("≤ ${m:.2}/h"));
    }
    parts.join(", ")
}

/// Every offering meeting `q`, cheapest GPU-hour first (the catalog's own
/// deterministic order), with prices dated against `today`.
pub fn offers(catalog: &Catalog, q: &OfferQuery, today: Day, stale_days: i64) -> OffersReport {
    let rows = catalog
        .matching(q)
        .into_iter()
        .map(|m| {
            let t = m.instance;
            let o = m.offering;
            let price = o.prices.get(&q.pricing).and_then(|p| {
                let usd = m.hourly_usd?;
                Some(PriceInfo {
                    amount: p.hourly,
                    currency: p.currency.as_str(),
                    hourly_usd: usd,
                    per_gpu_hour_usd: m.per_gpu_hour_usd.unwrap_or(usd / f64::from(t.gpu_count)),
                    source: p.source.clone(),
                    as_of: p.as_of.clone(),
                    age: price_age(&p.as_of, today, stale_days),
                })
            });
            OfferRow {
                cloud: o.cloud,
                region: o.region.clone(),
                instance_type: t.name.clone(),
                gpu_model: t.gpu_model.clone(),
                gpu_count: t.gpu_count,
                gpu_mem_gib: t.gpu_mem_gib,
                vcpus: t.vcpus,
                ram_gib: t.ram_gib,
                interconnect: t.interconnect.map(Interconnect::as_str),
                rdma: t.rdma.map(|r| r.as_str()),
                pricing: q.pricing.as_str(),
                price,
                notes: catalog
                    .notes(o.cloud, &o.region, &o.instance_type)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            }
        })
        .collect();
    OffersReport {
        query: describe_query(q),
        pricing: q.pricing.as_str(),
        cny_per_usd: q.cny_per_usd,
        stale_days,
        offers: rows,
    }
}

/// `$1,234.56`
pub fn usd(v: f64) -> String {
    let cents = (v * 100.0).round() as i128;
    let (sign, cents) = if cents < 0 {
        ("-", -cents)
    } else {
        ("", cents)
    };
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, ch) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("{sign}${grouped}.{:02}", cents % 100)
}

/// `$1.69/h` with the source currency when it is not USD: `$1.69 (¥11.84)`.
fn price_cell(p: &PriceInfo, per_gpu: bool) -> String {
    let v = if per_gpu {
        p.per_gpu_hour_usd
    } else {
        p.hourly_usd
    };
    let mut s = if v < 1.0 { format!("${v:.3}") } else { usd(v) };
    if !per_gpu && p.currency == Currency::CNY.as_str() {
        s.push_str(&format!(" (¥{:.2})", p.amount));
    }
    s
}

fn gib(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A numbered list of distinct strings (sources), for footnotes.
#[derive(Default)]
pub(crate) struct Footnotes(Vec<String>);

impl Footnotes {
    pub(crate) fn number(&mut self, text: &str) -> usize {
        match self.0.iter().position(|s| s == text) {
            Some(i) => i + 1,
            None => {
                self.0.push(text.to_string());
                self.0.len()
            }
        }
    }
    pub(crate) fn render(&self, out: &mut String) {
        for (i, s) in self.0.iter().enumerate() {
            out.push_str(&format!("  [{}] {s}\n", i + 1));
        }
    }
}

/// A table in gpuform's style; `row_lines` draws a line between rows
/// (for multi-line cells).
pub(crate) fn new_table(header: &[&str], row_lines: bool) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_HORIZONTAL_ONLY);
    if !row_lines {
        t.remove_style(comfy_table::TableComponent::HorizontalLines);
        t.remove_style(comfy_table::TableComponent::MiddleIntersections);
        t.remove_style(comfy_table::TableComponent::LeftBorderIntersections);
        t.remove_style(comfy_table::TableComponent::RightBorderIntersections);
    }
    t.set_content_arrangement(comfy_table::ContentArrangement::Disabled);
    t.set_header(header.iter().copied());
    t
}

pub(crate) fn right_align(t: &mut comfy_table::Table, columns: &[usize]) {
    for &c in columns {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
}

/// The offers as a table with footnotes: price sources, the CNY rate, stale
/// and undated prices.
pub fn render_table(r: &OffersReport) -> String {
    let mut out = String::new();
    if r.offers.is_empty() {
        out.push_str(&format!("No offer matches {}.\n", r.query));
        out.push_str(
            "  hint: drop a filter (--region, --interconnect, --rdma, --max-price) or the :COUNT\n",
        );
        return out;
    }
    let mut t = new_table(
        &[
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
        ],
        false,
    );
    let mut notes = Footnotes::default();
    let mut any_cny = false;
    for row in &r.offers {
        let (price, per_gpu, source) = match &row.price {
            Some(p) => {
                any_cny |= p.currency == Currency::CNY.as_str();
                let n = notes.number(&p.source);
                let flag = match p.age {
                    PriceAge::Dated { stale: true, .. } => " (old)",
                    PriceAge::Unknown => " (undated)",
                    _ => "",
                };
                (
                    price_cell(p, false),
                    price_cell(p, true),
                    format!("[{n}] {}{flag}", p.as_of),
                )
            }
            None => ("—".into(), "—".into(), format!("no {} price", r.pricing)),
        };
        t.add_row(vec![
            row.cloud.to_string(),
            row.region.clone(),
            row.instance_type.clone(),
            format!("{} × {}", row.gpu_count, row.gpu_model),
            format!("{} GiB", gib(row.gpu_mem_gib)),
            row.vcpus.to_string(),
            format!("{} GiB", gib(row.ram_gib)),
            row.interconnect.unwrap_or("?").to_string(),
            row.rdma.unwrap_or("—").to_string(),
            price,
            per_gpu,
            source,
        ]);
    }
    right_align(&mut t, &[4, 5, 6, 9, 10]);
    out.push_str(&format!("Offers for {}:\n", r.query));
    out.push_str(&t.to_string());
    out.push('\n');
    let priced = r.offers.iter().filter(|o| o.price.is_some()).count();
    out.push_str(&format!(
        "{} offer(s), {} priced for {}; sorted by $/GPU-h, unpriced last.\n",
        r.offers.len(),
        priced,
        r.pricing
    ));
    if any_cny {
        out.push_str(&format!(
            "Prices quoted in CNY (¥) are converted at {:.2} CNY per USD (change with --cny-per-usd).\n",
            r.cny_per_usd
        ));
    }
    let stale: Vec<String> = r
        .stale()
        .map(|o| format!("{} {} {}", o.cloud, o.region, o.instance_type))
        .collect();
    if !stale.is_empty() {
        out.push_str(&format!(
            "warning: {} price(s) are older than {} days (marked old): {}\n",
            stale.len(),
            r.stale_days,
            summarize(&stale)
        ));
    }
    let undated: Vec<String> = r
        .undated()
        .map(|o| format!("{} {} {}", o.cloud, o.region, o.instance_type))
        .collect();
    if !undated.is_empty() {
        out.push_str(&format!(
            "warning: {} price(s) have no known date (marked undated): {}\n",
            undated.len(),
            summarize(&undated)
        ));
    }
    out.push_str("Price sources:\n");
    notes.render(&mut out);
    out
}

/// Up to five items, then `and N more`.
pub(crate) fn summarize(items: &[String]) -> String {
    if items.len() <= 5 {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..5].join(", "), items.len() - 5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money() {
        assert_eq!(usd(1234.5), "$1,234.50");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(-12.345), "-$12.35");
        assert_eq!(usd(1_000_000.0), "$1,000,000.00");
    }

    #[test]
    fn gpu_argument() {
        let c = Catalog::builtin();
        assert_eq!(
            parse_gpu_arg(c, "a100-80gb:8").unwrap(),
            ("A100-80GB".to_string(), Some(8))
        );
        assert_eq!(parse_gpu_arg(c, "T4").unwrap(), ("T4".to_string(), None));
        let e = parse_gpu_arg(c, "A100:8").unwrap_err();
        assert!(e.message.contains("ambiguous"), "{e}");
        assert!(parse_gpu_arg(c, "T4:0").is_err());
        assert!(parse_gpu_arg(c, "Z999").is_err());
    }

    #[test]
    fn offers_are_sorted_and_priced() {
        let c = Catalog::builtin();
        let q = OfferQuery {
            gpu_model: Some("T4".into()),
            gpu_count: Some(1),
            ..OfferQuery::default()
        };
        let r = offers(c, &q, Day::from_ymd(2026, 11, 29), DEFAULT_STALE_DAYS);
        assert!(r.offers.len() > 5);
        let priced: Vec<f64> = r
            .offers
            .iter()
            .filter_map(|o| o.price.as_ref().map(|p| p.per_gpu_hour_usd))
            .collect();
        assert!(priced.windows(2).all(|w| w[0] <= w[1]));
        // Unknown prices come last.
        let first_unpriced = r.offers.iter().position(|o| o.price.is_none());
        if let Some(i) = first_unpriced {
            assert!(r.offers[i..].iter().all(|o| o.price.is_none()));
        }
        let text = render_table(&r);
        assert!(text.contains("$/GPU-h"), "{text}");
        assert!(text.contains("Price sources:"), "{text}");
    }
}
