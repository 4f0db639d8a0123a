//! `gpuform prices refresh`: arguments and output; the work is
//! [`crate::engine::prices`].

use crate::cli::credentials::apis_with_credentials;
use crate::cli::out::{errln, outln};
use crate::cli::{CmdResult, Failure};
use crate::engine::prices::{refresh_prices, targets, PriceEvent, PriceRefresh};
use clap::{Args, Subcommand};
use gpuform_catalog::Cloud;
use gpuform_provider::PriceApi;
use std::process::ExitCode;
use std::sync::Arc;

const REFRESH_HELP: &str = "\
Asks each cloud's own price API, with your credentials (read as for the cloud's CLI), what the
catalog's GPU instance types cost now:
  aws      Price List Query API GetProducts (on-demand, 1-year reserved), EC2 DescribeSpotPriceHistory (spot)
  alibaba  ECS DescribePrice (hour, month, year; SpotAsPriceGo) and DescribeSpotPriceHistory
  tencent  CVM InquiryPriceRunInstances (POSTPAID_BY_HOUR, PREPAID 1 and 12 months, SPOTPAID)
  huawei   BSS ListOnDemandResourceRatings and ListRateOnPeriodDetail (month, year)

Answers go to a local, dated price cache (GPUFORM_PRICE_CACHE, else
$XDG_CACHE_HOME/gpuform/prices.json or ~/.cache/gpuform/prices.json), written after every
quote: an interrupted refresh keeps what it fetched, and running it again the same day
resumes where it stopped (--force asks again). plan, offers, breakeven and cost read the
cache before the built-in snapshot; each price from it is labelled `live YYYY-MM-DD` with the
region it was quoted for. `--prices FILE` still wins over both. On Alibaba, Tencent and Huawei
the 12-month subscription (包年) becomes reserved-1y and the 1-month one monthly-sub.

Exit codes:
  0  every offering was quoted (or already cached today)
  1  bad input, missing or wrong credentials, a type the cloud refused, or a stop
     half-way (what was fetched before is kept)";

#[derive(Debug, Subcommand)]
pub enum PricesCommand {
    /// Query each cloud's price API and update the local price cache.
    #[command(after_help = REFRESH_HELP)]
    Refresh(RefreshArgs),
}

#[derive(Debug, Args, Clone)]
pub struct RefreshArgs {
    /// Only this cloud: aws, alibaba, tencent, huawei. Without it, every cloud whose
    /// credentials are set.
    #[arg(long)]
    pub cloud: Option<String>,
    /// Only this region.
    #[arg(long)]
    pub region: Option<String>,
    /// Only instance types with this GPU (a shared name such as A100 means every variant).
    #[arg(long, value_name = "MODEL")]
    pub gpu: Option<String>,
    /// Only this instance type (repeatable).
    #[arg(long = "type", value_name = "INSTANCE_TYPE")]
    pub instance_types: Vec<String>,
    /// Ask again for what the cache already holds from today.
    #[arg(long)]
    pub force: bool,
}

pub async fn prices_cmd(c: PricesCommand, quiet: bool) -> CmdResult {
    match c {
        PricesCommand::Refresh(a) => refresh_cmd(a, quiet).await,
    }
}

async fn refresh_cmd(a: RefreshArgs, quiet: bool) -> CmdResult {
    // With what `catalog refresh` discovered: its new offerings can be quoted.
    let catalog = &*super::shared::catalog_for(None)?;
    let explicit = a.cloud.is_some();
    let clouds: Vec<Cloud> = match &a.cloud {
        Some(c) => vec![c.parse().map_err(|e: String| {
            Failure(format!("{e}\n  hint: --cloud aws|alibaba|tencent|huawei"))
        })?],
        None => Cloud::ALL.to_vec(),
    };
    let gpu_models = match &a.gpu {
        None => Vec::new(),
        Some(g) => {
            crate::market::offers::parse_gpu_models(catalog, g)
                .map_err(|e| Failure(e.to_string()))?
                .0
        }
    };
    let mut req = PriceRefresh {
        clouds: clouds.clone(),
        region: a.region.clone(),
        gpu_models,
        instance_types: a.instance_types.clone(),
        today: crate::clock::today(),
        cache: gpuform_catalog::live::default_cache_path(),
        force: a.force,
    };
    // Check the whole request against the catalog before any call.
    targets(catalog, &req).map_err(|e| Failure(e.to_string()))?;
    let apis: Vec<(Cloud, Arc<dyn PriceApi>)> =
        apis_with_credentials(clouds, explicit, quiet, "prices refresh", |cloud| {
            crate::providers::price_api(cloud)
        })
        .await?;
    req.clouds = apis.iter().map(|(c, _)| *c).collect();
    let todo = targets(catalog, &req).map_err(|e| Failure(e.to_string()))?;
    let report = refresh_prices(&apis, &todo, &req, |ev| {
        if quiet {
            return;
        }
        match ev {
            PriceEvent::Cached(t) => outln!(
                "{} {} {}: cached today, skipped",
                t.cloud,
                t.region,
                t.instance_type
            ),
            PriceEvent::Quoted(t, terms) => outln!(
                "{} {} {}: quoted {}",
                t.cloud,
                t.region,
                t.instance_type,
                terms.join(", ")
            ),
            PriceEvent::Refused(t, why) => errln!(
                "{} {} {}: refused: {why}",
                t.cloud,
                t.region,
                t.instance_type
            ),
        }
    })
    .await
    .map_err(|e| Failure(e.to_string()))?;
    if !quiet {
        outln!(
            "{} quoted, {} already cached today; price cache: {}",
            report.quoted,
            report.cached,
            req.cache.display()
        );
    }
    if !report.refused.is_empty() {
        return Err(Failure(format!(
            "{} offering(s) were refused by their cloud's price API:\n  {}",
            report.refused.len(),
            report.refused.join("\n  ")
        )));
    }
    Ok(ExitCode::SUCCESS)
}
