//! `gpuform offers`: every instance type meeting a GPU requirement, across
//! all clouds and regions, cheapest GPU-hour first, with where each price
//! comes from and how old it is.
//!
//! Pure: [`offers`] turns an [`OfferQuery`] into an [`OffersReport`];
//! [`render_table`] lays it out. The command line only parses and prints.

use crate::views::{self, usd, usd_rate, Footnotes};
use gpuform_catalog::{Catalog, Currency, Interconnect, OfferQuery, PricingModel, HOURS_PER_MONTH};
use gpuform_provider::Cloud;
use gpuform_provider::UserError;
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
    /// `sourced` (quoted for this region), `assumed` (the source names no
    /// region; assumed to hold here), `override` (`--prices FILE`) or `live`
    /// (`gpuform prices refresh`: quoted by the cloud's price API for this
    /// region on `as_of`).
    pub basis: &'static str,
    /// `hourly_usd` × 730.
    pub monthly_usd: f64,
    /// USD per PFLOP-hour of dense FP16 tensor compute (GPU table), `None`
    /// when the GPU's FP16 figure is unknown.
    pub usd_per_fp16_pflop_hour: Option<f64>,
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
    /// `sourced` when a document says the region offers the type,
    /// `assumed` when no document backs it, `discovered` when the cloud's
    /// own API reported it (`gpuform catalog refresh`).
    pub availability: &'static str,
    /// For a discovered offering: the API calls and the day, e.g.
    /// `ec2:DescribeInstanceTypeOfferings for eu-central-1, discovered 2026-11-29`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_source: Option<String>,
}

/// A cloud that offers the GPU but has no price for the pricing model, and
/// how to get one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnpricedCloud {
    pub cloud: Cloud,
    pub gpu_model: String,
    /// Matching offers (region × type) without a price.
    pub offers: usize,
    pub instance_types: Vec<String>,
    /// The call that prices them, then `--prices FILE`.
    pub how_to_price: String,
}

/// What `gpuform offers` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffersReport {
    /// The requirement in words, e.g. `8 × A100-80GB, on-demand, nvlink`.
    pub query: String,
    pub pricing: &'static str,
    pub cny_per_usd: f64,
    pub stale_days: i64,
    /// The GPU models searched: one, or every model a shared name such as
    /// `A100` means (then `offers` is grouped by model, in this order).
    pub models: Vec<String>,
    /// Sorted by USD per GPU-hour (unknown prices last), then cloud, region,
    /// type — within each model's group.
    pub offers: Vec<OfferRow>,
    /// Clouds offering the GPU without any price for the pricing model.
    pub unpriced_clouds: Vec<UnpricedCloud>,
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

/// Parses `GPU[:COUNT]` against the catalog: the canonical model name and
/// the count when one is given.
pub fn parse_gpu_arg(catalog: &Catalog, text: &str) -> Result<(String, Option<u32>), UserError> {
    let req = crate::spec::GpuRequest::parse(text)
        .map_err(|(message, hint)| UserError::new(message, hint))?;
    let model = catalog.gpu(&req.model).map_err(|e| {
        UserError::new(
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

/// Like [`parse_gpu_arg`], but a name shared by several models (`A100`:
/// 40 and 80 GB) means all of them, as a search does: the canonical names
/// in the catalog's order, and the count when one is given.
pub fn parse_gpu_models(
    catalog: &Catalog,
    text: &str,
) -> Result<(Vec<String>, Option<u32>), UserError> {
    match parse_gpu_arg(catalog, text) {
        Ok((m, n)) => Ok((vec![m], n)),
        Err(e) => {
            let req = crate::spec::GpuRequest::parse(text)
                .map_err(|(message, hint)| UserError::new(message, hint))?;
            match catalog.gpu(&req.model) {
                Err(gpuform_catalog::GpuLookupError::Ambiguous { choices, .. }) => {
                    let mut models: Vec<String> = catalog
                        .gpus()
                        .iter()
                        .map(|g| g.name.clone())
                        .filter(|n| choices.contains(n))
                        .collect();
                    models.dedup();
                    Ok((models, text.contains(':').then_some(req.count)))
                }
                _ => Err(e),
            }
        }
    }
}

/// How to price an offering the catalog has no price for: `gpuform prices
/// refresh` for it (which makes the cloud's own price call), or that call by
/// hand with its answer in a `--prices FILE` row.
pub fn how_to_price(cloud: Cloud, instance_type: &str, pricing: PricingModel) -> String {
    let call = match (cloud, pricing) {
        (Cloud::Aws, PricingModel::Spot) => format!(
            "aws ec2 describe-spot-price-history --instance-types {instance_type} --product-descriptions Linux/UNIX --region REGION"
        ),
        (Cloud::Aws, _) => format!(
            "aws pricing get-products --service-code AmazonEC2 --region us-east-1 --filters Type=TERM_MATCH,Field=instanceType,Value={instance_type} Type=TERM_MATCH,Field=regionCode,Value=REGION"
        ),
        (Cloud::Alibaba, p) => format!(
            "aliyun ecs DescribePrice --RegionId REGION --ResourceType instance --InstanceType {instance_type}{}",
            match p {
                PricingModel::Spot => " --SpotStrategy SpotAsPriceGo",
                PricingModel::Reserved1y => " --PriceUnit Year --Period 1",
                PricingModel::Reserved3y => " --PriceUnit Year --Period 3",
                PricingModel::OnDemand => "",
            }
        ),
        (Cloud::Tencent, p) => format!(
            "tccli cvm InquiryPriceRunInstances --region REGION --Placement '{{\"Zone\":\"ZONE\"}}' --ImageId IMAGE --InstanceType {instance_type} --InstanceChargeType {}",
            match p {
                PricingModel::Spot => "SPOTPAID",
                PricingModel::Reserved1y | PricingModel::Reserved3y => "PREPAID",
                PricingModel::OnDemand => "POSTPAID_BY_HOUR",
            }
        ),
        (Cloud::Huawei, PricingModel::OnDemand | PricingModel::Spot) => format!(
            "Huawei BSS ListOnDemandResourceRatings (resource_type hws.resource.type.vm, resource_spec {instance_type}.linux, region REGION)"
        ),
        (Cloud::Huawei, _) => format!(
            "Huawei BSS ListRateOnPeriodDetail (period_type 3 = year, resource_spec {instance_type}.linux, region REGION)"
        ),
    };
    format!(
        "gpuform prices refresh --cloud {cloud} --type {instance_type} (it calls {call}), or a row in --prices FILE"
    )
}

/// Parses a cloud name (`aws`, `alibaba`, `tencent`, `huawei`).
pub fn parse_cloud(text: &str) -> Result<Cloud, UserError> {
    text.trim().to_ascii_lowercase().parse().map_err(|_| {
        UserError::new(
            format!("unknown cloud `{text}`"),
            "write one of aws, alibaba, tencent, huawei",
        )
    })
}

/// Parses a pricing model (`on-demand`, `spot`, `reserved-1y`, `reserved-3y`).
pub fn parse_pricing(text: &str) -> Result<PricingModel, UserError> {
    PricingModel::parse(text).ok_or_else(|| {
        UserError::new(
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
) -> Result<(), UserError> {
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
    Err(UserError::new(
        format!("`{region}` is not {whose} region gpuform knows"),
        match close.first() {
            Some((_, k)) => format!("did you mean `{k}`?"),
            None => format!("known regions: {}", known.join(", ")),
        },
    ))
}

/// Checks a CNY-per-USD rate.
pub fn check_rate(rate: f64) -> Result<f64, UserError> {
    if rate.is_finite() && rate > 0.0 {
        Ok(rate)
    } else {
        Err(UserError::new(
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
    let models: Vec<String> = q.gpu_model.iter().cloned().collect();
    offers_of_models(catalog, q, &models, today, stale_days)
}

/// [`offers`] for each of `models` in turn (the query's own model is
/// ignored): one group per model, each cheapest GPU-hour first. An empty
/// list means the query as it is.
pub fn offers_of_models(
    catalog: &Catalog,
    q: &OfferQuery,
    models: &[String],
    today: Day,
    stale_days: i64,
) -> OffersReport {
    let queries: Vec<OfferQuery> = if models.is_empty() {
        vec![q.clone()]
    } else {
        models
            .iter()
            .map(|m| OfferQuery {
                gpu_model: Some(m.clone()),
                ..q.clone()
            })
            .collect()
    };
    let mut rows = Vec::new();
    for mq in &queries {
        rows.extend(catalog.matching(mq).into_iter().map(|m| {
            let t = m.instance;
            let o = m.offering;
            let fp16 = catalog
                .gpu_details(&t.gpu_model)
                .and_then(|d| d.fp16_tflops_dense)
                .filter(|f| *f > 0.0);
            let price = o.prices.get(&q.pricing).and_then(|p| {
                let usd = m.hourly_usd?;
                let per_gpu = m.per_gpu_hour_usd.unwrap_or(usd / f64::from(t.gpu_count));
                Some(PriceInfo {
                    amount: p.hourly,
                    currency: p.currency.as_str(),
                    hourly_usd: usd,
                    per_gpu_hour_usd: per_gpu,
                    source: p.source.clone(),
                    as_of: p.as_of.clone(),
                    age: price_age(&p.as_of, today, stale_days),
                    basis: p.basis.as_str(),
                    monthly_usd: usd * HOURS_PER_MONTH,
                    usd_per_fp16_pflop_hour: fp16.map(|f| per_gpu / (f / 1000.0)),
                })
            });
            let avail = catalog.availability(o.cloud, &o.region, &o.instance_type);
            let assumed = avail.is_some_and(|a| a.assumed);
            let discovered = avail.filter(|a| a.discovered_on.is_some());
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
                availability: match (discovered, assumed) {
                    (Some(_), _) => "discovered",
                    (None, true) => "assumed",
                    (None, false) => "sourced",
                },
                availability_source: discovered.map(|a| a.source.clone()),
            }
        }));
    }
    let mut unpriced_clouds = Vec::new();
    for mq in &queries {
        for cloud in Cloud::ALL {
            let of_cloud: Vec<&OfferRow> = rows
                .iter()
                .filter(|r| r.cloud == cloud && Some(&r.gpu_model) == mq.gpu_model.as_ref())
                .collect();
            if of_cloud.is_empty() || of_cloud.iter().any(|r| r.price.is_some()) {
                continue;
            }
            let mut types: Vec<String> = of_cloud.iter().map(|r| r.instance_type.clone()).collect();
            types.sort();
            types.dedup();
            unpriced_clouds.push(UnpricedCloud {
                cloud,
                gpu_model: of_cloud[0].gpu_model.clone(),
                offers: of_cloud.len(),
                how_to_price: how_to_price(cloud, &types[0], q.pricing),
                instance_types: types,
            });
        }
    }
    let mut words_q = q.clone();
    if models.len() > 1 {
        words_q.gpu_model = Some(models.join(" or "));
    }
    OffersReport {
        query: describe_query(&words_q),
        pricing: q.pricing.as_str(),
        cny_per_usd: q.cny_per_usd,
        stale_days,
        models: models.to_vec(),
        offers: rows,
        unpriced_clouds,
    }
}

/// `$1.69/h` with the source currency when it is not USD: `$1.69 (¥11.84)`.
fn price_cell(p: &PriceInfo, per_gpu: bool) -> String {
    let v = if per_gpu {
        p.per_gpu_hour_usd
    } else {
        p.hourly_usd
    };
    let mut s = usd_rate(v);
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

/// `sourced` / `assumed …` for the price and the availability of a row.
fn basis_cell(row: &OfferRow) -> String {
    let price = match &row.price {
        Some(p) => match p.basis {
            "assumed" => "price assumed (no region in source)".to_string(),
            "override" => "price override".to_string(),
            "live" => format!("price live {} for {}", p.as_of, row.region),
            _ => "price sourced".to_string(),
        },
        None => "unpriced".to_string(),
    };
    match &row.availability_source {
        // The day the cloud's API reported it: `…, discovered 2026-11-29`.
        Some(src) => format!(
            "{price}; availability {}",
            src.rsplit(", ").next().unwrap_or(row.availability)
        ),
        None => format!("{price}; availability {}", row.availability),
    }
}

/// The offers as a table with footnotes: price sources, the CNY rate, stale
/// and undated prices, and the clouds that offer the GPU without a price.
pub fn render_table(r: &OffersReport) -> String {
    let mut out = String::new();
    if r.offers.is_empty() {
        out.push_str(&format!("No offer matches {}.\n", r.query));
        out.push_str(
            "  hint: drop a filter (--region, --interconnect, --rdma, --max-price) or the :COUNT\n",
        );
        return out;
    }
    let mut notes = Footnotes::default();
    let mut any_cny = false;
    out.push_str(&format!("Offers for {}:\n", r.query));
    let groups: Vec<Option<&str>> = if r.models.len() > 1 {
        r.models.iter().map(|m| Some(m.as_str())).collect()
    } else {
        vec![None]
    };
    for group in groups {
        let rows: Vec<&OfferRow> = r
            .offers
            .iter()
            .filter(|o| group.is_none_or(|g| o.gpu_model == g))
            .collect();
        if let Some(g) = group {
            out.push_str(&format!("\n{g}: {} offer(s)\n", rows.len()));
            if rows.is_empty() {
                continue;
            }
        }
        let mut t = views::table(
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
                "$/FP16-PFLOP-h",
                "price source",
                "basis",
            ],
            false,
        );
        for row in rows {
            t.add_row(offer_cells(r, row, &mut notes, &mut any_cny));
        }
        views::right_align(&mut t, &[4, 5, 6, 9, 10, 11]);
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out.push_str(&footnotes(r, any_cny));
    out.push_str("Price sources:\n");
    notes.render(&mut out);
    out
}

/// One offer's cells; its price source numbered in `notes`.
fn offer_cells(
    r: &OffersReport,
    row: &OfferRow,
    notes: &mut Footnotes,
    any_cny: &mut bool,
) -> Vec<String> {
    let (price, per_gpu, per_pflop, source) = match &row.price {
        Some(p) => {
            *any_cny |= p.currency == Currency::CNY.as_str();
            let n = notes.number(&p.source);
            let flag = match p.age {
                PriceAge::Dated { stale: true, .. } => " (old)",
                PriceAge::Unknown => " (undated)",
                _ => "",
            };
            (
                price_cell(p, false),
                price_cell(p, true),
                p.usd_per_fp16_pflop_hour
                    .map_or("?".to_string(), |v| format!("${v:.2}")),
                format!("[{n}] {}{flag}", p.as_of),
            )
        }
        None => (
            "—".into(),
            "—".into(),
            "—".into(),
            format!("no {} price", r.pricing),
        ),
    };
    vec![
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
        per_pflop,
        source,
        basis_cell(row),
    ]
}

/// The totals, the clouds without a price, the legend and the warnings.
fn footnotes(r: &OffersReport, any_cny: bool) -> String {
    let mut out = String::new();
    let priced = r.offers.iter().filter(|o| o.price.is_some()).count();
    out.push_str(&format!(
        "{} offer(s), {} priced for {}; sorted by $/GPU-h, unpriced last.\n",
        r.offers.len(),
        priced,
        r.pricing
    ));
    for u in &r.unpriced_clouds {
        out.push_str(&format!(
            "{} offers {} ({} offer(s): {}) but has no {} price yet; price it: {}\n",
            u.cloud,
            u.gpu_model,
            u.offers,
            summarize(&u.instance_types),
            r.pricing,
            u.how_to_price
        ));
    }
    if r.offers
        .iter()
        .any(|o| o.price.as_ref().is_some_and(|p| p.basis == "assumed"))
    {
        out.push_str("Basis: \"sourced\" prices are quoted for that region; \"assumed\" prices come from a source that names no region and are assumed to hold in every region offering the type. \"availability assumed\": no document says the region sells the type.\n");
    }
    if r.offers.iter().any(|o| o.price.is_some()) {
        out.push_str("$/FP16-PFLOP-h: $/GPU-h divided by the GPU's dense FP16 tensor PFLOPS (GPU table); ? where unknown.\n");
    }
    if any_cny {
        out.push_str(&format!(
            "Prices quoted in CNY (¥) are converted at {:.2} CNY per USD (change with --cny-per-usd).\n",
            r.cny_per_usd
        ));
    }
    let stale = named(r.stale());
    if !stale.is_empty() {
        out.push_str(&format!(
            "warning: {} price(s) are older than {} days (marked old): {}\n",
            stale.len(),
            r.stale_days,
            summarize(&stale)
        ));
    }
    let undated = named(r.undated());
    if !undated.is_empty() {
        out.push_str(&format!(
            "warning: {} price(s) have no known date (marked undated): {}\n",
            undated.len(),
            summarize(&undated)
        ));
    }
    out
}

/// One pricing model's price of an offering, in both currencies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quote {
    pub pricing: &'static str,
    pub hourly_usd: f64,
    pub hourly_cny: f64,
    pub per_gpu_hour_usd: f64,
    pub monthly_usd: f64,
    pub monthly_cny: f64,
    /// The currency the source quotes.
    pub currency: &'static str,
    pub source: String,
    pub as_of: String,
    pub age: PriceAge,
    pub basis: &'static str,
    /// `region instance-type` when the quote is for another offer than the
    /// row's (the cheapest monthly subscription may be elsewhere).
    pub elsewhere: Option<String>,
}

/// One cloud's line in the comparison: its cheapest offer for the first
/// pricing model (else for any), with every model's quote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    pub cloud: Cloud,
    /// `None` when the catalog has no instance type with this GPU there.
    pub offer: Option<OfferRow>,
    /// In the order of the report's `pricings`; `None` = no price.
    pub quotes: Vec<Option<Quote>>,
    /// The cheapest one-month subscription (包月) of a matching offer on
    /// this cloud, per the catalog: hourly = monthly price / 730.
    pub monthly_subscription: Option<Quote>,
    /// How to price what is missing (`None` when all are priced).
    pub how_to_price: Option<String>,
}

/// `gpuform offers GPU --pricing A,B`: every cloud side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub query: String,
    pub pricings: Vec<&'static str>,
    pub cny_per_usd: f64,
    pub stale_days: i64,
    /// One per cloud, in the order of the cheapest first-model per-GPU-hour
    /// price (unpriced last, then clouds without the GPU).
    pub rows: Vec<CompareRow>,
    /// Every matching offer for each pricing model, as `offers` lists them.
    pub offers: Vec<OffersReport>,
}

/// Parses `--pricing on-demand,reserved-1y`.
pub fn parse_pricings(text: &str) -> Result<Vec<PricingModel>, UserError> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let p = parse_pricing(part)?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// The comparison across clouds of `models` (see [`offers_of_models`]) for each of `pricings`.
pub fn compare(
    catalog: &Catalog,
    q: &OfferQuery,
    models: &[String],
    pricings: &[PricingModel],
    today: Day,
    stale_days: i64,
) -> Comparison {
    let reports: Vec<OffersReport> = pricings
        .iter()
        .map(|p| {
            let pq = OfferQuery {
                pricing: *p,
                ..q.clone()
            };
            offers_of_models(catalog, &pq, models, today, stale_days)
        })
        .collect();
    let quote = |pi: usize, row: &OfferRow| -> Option<Quote> {
        let r = reports[pi].offers.iter().find(|o| {
            (o.cloud, &o.region, &o.instance_type) == (row.cloud, &row.region, &row.instance_type)
        })?;
        let p = r.price.as_ref()?;
        Some(Quote {
            pricing: pricings[pi].as_str(),
            hourly_usd: p.hourly_usd,
            hourly_cny: p.hourly_usd * q.cny_per_usd,
            per_gpu_hour_usd: p.per_gpu_hour_usd,
            monthly_usd: p.monthly_usd,
            monthly_cny: p.monthly_usd * q.cny_per_usd,
            currency: p.currency,
            source: p.source.clone(),
            as_of: p.as_of.clone(),
            age: p.age.clone(),
            basis: p.basis,
            elsewhere: None,
        })
    };
    let mut rows = Vec::new();
    for cloud in Cloud::ALL {
        let candidates: Vec<&OfferRow> = reports
            .first()
            .map(|r| r.offers.iter().filter(|o| o.cloud == cloud).collect())
            .unwrap_or_default();
        // Cheapest for the first model with a price, else for the next...
        let mut best: Option<(&OfferRow, f64)> = None;
        for pi in 0..pricings.len() {
            for o in &candidates {
                if let Some(qt) = quote(pi, o) {
                    if best.is_none_or(|(_, v)| qt.per_gpu_hour_usd < v) {
                        best = Some((o, qt.per_gpu_hour_usd));
                    }
                }
            }
            if best.is_some() {
                break;
            }
        }
        let chosen = best.map(|(o, _)| o).or(candidates.first().copied());
        let quotes: Vec<Option<Quote>> = (0..pricings.len())
            .map(|pi| chosen.and_then(|o| quote(pi, o)))
            .collect();
        let how = chosen.and_then(|o| {
            quotes
                .iter()
                .position(Option::is_none)
                .map(|pi| how_to_price(cloud, &o.instance_type, pricings[pi]))
        });
        let mut sub: Option<Quote> = None;
        for o in &candidates {
            let Some(sp) = catalog.subscription(cloud, &o.region, &o.instance_type, 1) else {
                continue;
            };
            let monthly = sp.price_usd(q.cny_per_usd);
            let per_gpu = monthly / HOURS_PER_MONTH / f64::from(o.gpu_count);
            if sub.as_ref().is_some_and(|s| s.per_gpu_hour_usd <= per_gpu) {
                continue;
            }
            let same = chosen
                .is_some_and(|c| (&c.region, &c.instance_type) == (&o.region, &o.instance_type));
            sub = Some(Quote {
                pricing: "monthly-subscription",
                hourly_usd: monthly / HOURS_PER_MONTH,
                hourly_cny: monthly / HOURS_PER_MONTH * q.cny_per_usd,
                per_gpu_hour_usd: per_gpu,
                monthly_usd: monthly,
                monthly_cny: monthly * q.cny_per_usd,
                currency: sp.currency.as_str(),
                source: sp.source.clone(),
                as_of: sp.as_of.clone(),
                age: price_age(&sp.as_of, today, stale_days),
                basis: sp.basis().as_str(),
                elsewhere: (!same).then(|| format!("{} {}", o.region, o.instance_type)),
            });
        }
        rows.push(CompareRow {
            cloud,
            offer: chosen.cloned(),
            quotes,
            monthly_subscription: sub,
            how_to_price: how,
        });
    }
    let key = |r: &CompareRow| -> (u8, f64) {
        match (&r.offer, r.quotes.iter().flatten().next()) {
            (Some(_), Some(_)) => (
                0,
                r.quotes
                    .first()
                    .and_then(|q| q.as_ref())
                    .map_or(f64::MAX, |q| q.per_gpu_hour_usd),
            ),
            (Some(_), None) => (1, 0.0),
            (None, _) => (2, 0.0),
        }
    };
    rows.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(a.cloud.cmp(&b.cloud))
    });
    let mut words_q = OfferQuery {
        pricing: pricings[0],
        ..q.clone()
    };
    if models.len() > 1 {
        words_q.gpu_model = Some(models.join(" or "));
    }
    let query = describe_query(&words_q).replacen(
        pricings[0].as_str(),
        &pricings
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(" vs "),
        1,
    );
    Comparison {
        query,
        pricings: pricings.iter().map(|p| p.as_str()).collect(),
        cny_per_usd: q.cny_per_usd,
        stale_days,
        rows,
        offers: reports,
    }
}

fn money(v: f64, sym: &str) -> String {
    if sym == "$" {
        usd_rate(v)
    } else {
        usd(v).replacen('$', sym, 1)
    }
}

/// The comparison as text (`markdown` = false) or as a Markdown table for a
/// PR comment or a report; both carry sources, dates, basis and the rate.
pub fn render_comparison(c: &Comparison, markdown: bool) -> String {
    let header = [
        "cloud",
        "region",
        "instance type",
        "GPUs",
        "pricing",
        "$/h",
        "¥/h",
        "$/GPU-h",
        "$/month",
        "¥/month",
        "source, date",
        "basis",
    ];
    let mut notes = Footnotes::default();
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut missing = Vec::new();
    for r in &c.rows {
        let Some(o) = &r.offer else {
            lines.push(vec![
                r.cloud.to_string(),
                "—".into(),
                "no instance type with this GPU in the catalog".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
            ]);
            continue;
        };
        let sub_line = r.monthly_subscription.as_ref().map(Some);
        let all: Vec<(String, Option<&Quote>)> = r
            .quotes
            .iter()
            .enumerate()
            .map(|(pi, q)| (c.pricings[pi].to_string(), q.as_ref()))
            .chain(sub_line.map(|q| ("monthly-subscription".to_string(), q)))
            .collect();
        for (pi, (pricing, qt)) in all.into_iter().enumerate() {
            let first = pi == 0;
            let lead = |s: String| if first { s } else { String::new() };
            let mut cells = vec![
                lead(r.cloud.to_string()),
                lead(o.region.clone()),
                lead(o.instance_type.clone()),
                lead(format!("{} × {}", o.gpu_count, o.gpu_model)),
                match qt.and_then(|q| q.elsewhere.as_ref()) {
                    Some(w) => format!("{pricing} ({w})"),
                    None => pricing.clone(),
                },
            ];
            match qt {
                Some(q) => {
                    let n = notes.number(&q.source);
                    let flag = match q.age {
                        PriceAge::Dated { stale: true, .. } => ", old",
                        PriceAge::Unknown => ", undated",
                        _ => "",
                    };
                    cells.extend([
                        money(q.hourly_usd, "$"),
                        money(q.hourly_cny, "¥"),
                        money(q.per_gpu_hour_usd, "$"),
                        money(q.monthly_usd, "$"),
                        money(q.monthly_cny, "¥"),
                        format!("[{n}] {}{flag}", q.as_of),
                        format!("{} (quoted in {})", q.basis, q.currency),
                    ]);
                }
                None => {
                    cells.extend(["—", "—", "—", "—", "—"].map(String::from));
                    cells.push(format!("no {pricing} price"));
                    cells.push("unpriced".into());
                }
            }
            lines.push(cells);
        }
        if let Some(h) = &r.how_to_price {
            missing.push(format!("{}: {h}", r.cloud));
        }
    }
    let mut out = String::new();
    if markdown {
        out.push_str(&format!("**{}**, cheapest offer per cloud\n\n", c.query));
        out.push_str(&format!("| {} |\n", header.join(" | ")));
        out.push_str(&format!(
            "|{}\n",
            header
                .iter()
                .enumerate()
                .map(|(i, _)| if (5..=9).contains(&i) {
                    " ---: |"
                } else {
                    " --- |"
                })
                .collect::<String>()
        ));
        for l in &lines {
            out.push_str(&format!(
                "| {} |\n",
                l.iter()
                    .map(|s| s.replace('|', "\\|"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
        out.push('\n');
    } else {
        out.push_str(&format!("{}, cheapest offer per cloud:\n", c.query));
        let mut t = views::table(&header, false);
        for l in lines {
            t.add_row(l);
        }
        views::right_align(&mut t, &[5, 6, 7, 8, 9]);
        out.push_str(&t.to_string());
        out.push('\n');
    }
    let bullet = if markdown { "- " } else { "" };
    out.push_str(&format!(
        "{bullet}Rate: {:.2} CNY per USD (--cny-per-usd); each price is converted from the currency its source quotes. Monthly = hourly × {HOURS_PER_MONTH} h.\n",
        c.cny_per_usd
    ));
    out.push_str(&format!("{bullet}On Alibaba, Tencent and Huawei reserved-1y is the one-year subscription (包年包月), priced only when a source or the cloud's price API gives one; monthly-subscription is the one-month subscription (包月), shown where the catalog has one (its hourly figure = month ÷ {HOURS_PER_MONTH} h).\n"));
    out.push_str(&format!("{bullet}Basis: sourced = quoted for that region; assumed = the source names no region; override = --prices FILE; live = quoted by the cloud's price API for that region on that day (gpuform prices refresh).\n"));
    for m in &missing {
        out.push_str(&format!("{bullet}Missing price, {m}\n"));
    }
    out.push_str(if markdown {
        "\nSources:\n\n"
    } else {
        "Sources:\n"
    });
    let mut src = String::new();
    notes.render(&mut src);
    if markdown {
        for l in src.lines() {
            out.push_str(&format!("- {}\n", l.trim_start()));
        }
    } else {
        out.push_str(&src);
    }
    out
}

/// Offers as a warning names them: `cloud region instance_type`.
fn named<'a>(offers: impl Iterator<Item = &'a OfferRow>) -> Vec<String> {
    offers
        .map(|o| format!("{} {} {}", o.cloud, o.region, o.instance_type))
        .collect()
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
