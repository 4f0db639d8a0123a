//! The portability and cost commands: `offers`, `breakeven`, `lockin`,
//! `migrate`. Arguments here; the work in the library modules
//! ([`crate::market::offers`], [`crate::market::breakeven`], [`crate::portability::lockin`],
//! [`crate::portability::migrate`]).

use crate::cli::args::VarArgs;
use crate::cli::out::{out, outln};
use crate::cli::{CmdResult, Failure};
use crate::market::breakeven;
use crate::market::offers::{self, DEFAULT_STALE_DAYS};
use crate::portability::{lockin, migrate, migrate_bucket};
use crate::spec::{self, Vars};
use clap::{Args, ValueEnum};
use gpuform_catalog::{Catalog, Interconnect, OfferQuery, DEFAULT_CNY_PER_USD};
use gpuform_provider::UserError;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InterconnectArg {
    Nvlink,
    Pcie,
}

/// `gpuform offers GPU[:COUNT]`.
#[derive(Debug, Args, Clone)]
pub struct OffersArgs {
    /// GPU model and optional count per instance, e.g. `A100-80GB:8`, `H100`, `T4:1`.
    #[arg(value_name = "GPU[:COUNT]")]
    pub gpu: String,
    /// Only this cloud: aws, alibaba, tencent, huawei.
    #[arg(long)]
    pub cloud: Option<String>,
    /// Only this region.
    #[arg(long)]
    pub region: Option<String>,
    /// Price by this model: on-demand, spot, reserved-1y, reserved-3y. Several, comma-separated
    /// (`on-demand,reserved-1y`), compare every cloud side by side: its cheapest offer, hourly,
    /// per GPU-hour and monthly, in USD and CNY, with source, date and basis. On Alibaba,
    /// Tencent and Huawei, reserved-1y means the one-year subscription (包年包月).
    #[arg(long, default_value = "on-demand")]
    pub pricing: String,
    /// Minimum memory per GPU, GiB.
    #[arg(long, value_name = "GIB", allow_negative_numbers = true)]
    pub min_gpu_mem: Option<f64>,
    /// Link between the GPUs of an instance.
    #[arg(long, value_enum)]
    pub interconnect: Option<InterconnectArg>,
    /// Only instance types with an RDMA fabric (EFA, eRDMA, RoCE, InfiniBand).
    #[arg(long)]
    pub rdma: bool,
    /// Maximum price per instance-hour in USD (offers without a price are left out).
    #[arg(long, value_name = "USD_PER_HOUR", allow_negative_numbers = true)]
    pub max_price: Option<f64>,
    /// CNY per USD for prices quoted in yuan.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub cny_per_usd: Option<f64>,
    /// Flag prices older than this many days.
    #[arg(long, value_name = "DAYS", default_value_t = DEFAULT_STALE_DAYS, allow_negative_numbers = true)]
    pub stale_days: i64,
    /// The offers as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The comparison (`--pricing A,B`) as a Markdown table, for a PR comment or a report.
    #[arg(long)]
    pub markdown: bool,
    /// Price overrides (negotiated prices, or ones you got from a cloud's price API): CSV with cloud,region,instance_type,pricing,price,currency[,source,as_of]; they win over the catalog.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

/// `gpuform breakeven GPU[:COUNT]`.
///
/// Compares on-demand, spot, the 1- and 3-year terms and the one-month subscription. On
/// Alibaba, Tencent and Huawei, which sell subscriptions (包年包月) rather than AWS-style
/// reservations, reserved-1y is the one-year subscription and monthly-sub the one-month one;
/// both are paid for the whole term like a reservation.
#[derive(Debug, Args, Clone)]
pub struct BreakevenArgs {
    /// GPU model and optional count per instance, e.g. `A100-80GB:8`.
    #[arg(value_name = "GPU[:COUNT]")]
    pub gpu: String,
    /// Only this cloud: aws, alibaba, tencent, huawei.
    #[arg(long)]
    pub cloud: Option<String>,
    /// Only this region.
    #[arg(long)]
    pub region: Option<String>,
    /// Hours each instance is expected to run per month (730 = always on).
    #[arg(long, default_value_t = gpuform_catalog::HOURS_PER_MONTH, value_name = "H", allow_negative_numbers = true)]
    pub hours: f64,
    /// Also price one job of this many hours on pay-as-you-go, with each cloud's billing
    /// granularity and minimum (all four bill by the second; AWS has a 60 s minimum), so a
    /// 15-minute job (0.25) is not priced as an hour.
    #[arg(long, value_name = "H", allow_negative_numbers = true)]
    pub job_hours: Option<f64>,
    /// Price overrides, as for `plan --prices`; they win over the catalog.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// CNY per USD for prices quoted in yuan (Alibaba, Tencent, Huawei); default: gpuform's built-in rate.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub cny_per_usd: Option<f64>,
    /// The result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `gpuform lockin FILE`.
#[derive(Debug, Args, Clone)]
pub struct LockinArgs {
    pub file: PathBuf,
    #[command(flatten)]
    pub vars: VarArgs,
    /// CNY per USD for prices quoted in yuan (Alibaba, Tencent, Huawei); default: gpuform's built-in rate.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub cny_per_usd: Option<f64>,
    /// The result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `gpuform migrate CLUSTER --to CLOUD[/REGION] FILE` (or `bucket.KEY`).
#[derive(Debug, Args, Clone)]
pub struct MigrateArgs {
    /// The cluster to move (a key under `clusters:`), or `bucket.KEY` to
    /// move a bucket: it is recreated empty on the new cloud (data does not
    /// move; the rclone command to copy it is printed).
    pub cluster: String,
    /// Target: `CLOUD` (its cheapest region offering the equivalent) or `CLOUD/REGION`.
    #[arg(long, value_name = "CLOUD[/REGION]")]
    pub to: String,
    pub file: PathBuf,
    #[command(flatten)]
    pub vars: VarArgs,
    /// Write the re-targeted spec over FILE (atomically) instead of only printing the diff.
    #[arg(long)]
    pub write: bool,
    /// CNY per USD for prices quoted in yuan (Alibaba, Tencent, Huawei); default: gpuform's built-in rate.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub cny_per_usd: Option<f64>,
    /// The migration as JSON on stdout (diff included).
    #[arg(long)]
    pub json: bool,
    /// With `bucket.KEY`: the bucket's name on the new cloud (required on
    /// Tencent COS, whose names end with the account's APPID: `NAME-APPID`).
    #[arg(long, value_name = "NAME")]
    pub bucket_name: Option<String>,
}

fn input(e: UserError) -> Failure {
    Failure(format!("error: {e}"))
}

fn rate(r: Option<f64>) -> Result<f64, Failure> {
    offers::check_rate(r.unwrap_or(DEFAULT_CNY_PER_USD)).map_err(input)
}

fn json_out<T: serde::Serialize>(v: &T) -> CmdResult {
    let text = serde_json::to_string_pretty(v)
        .map_err(|e| Failure(format!("cannot serialise the result: {e}")))?;
    outln!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// GPU, cloud and region filters shared by `offers` and `breakeven`.
fn base_query(
    catalog: &Catalog,
    gpu: &str,
    cloud: Option<&str>,
    region: Option<&str>,
    cny_per_usd: f64,
) -> Result<OfferQuery, Failure> {
    let (model, count) = offers::parse_gpu_arg(catalog, gpu).map_err(input)?;
    let cloud = cloud.map(offers::parse_cloud).transpose().map_err(input)?;
    if let Some(r) = region {
        offers::check_region(catalog, cloud, r).map_err(input)?;
    }
    Ok(OfferQuery {
        cloud,
        region: region.map(str::to_string),
        gpu_model: Some(model),
        gpu_count: count,
        cny_per_usd,
        ..OfferQuery::default()
    })
}

pub fn offers_cmd(a: OffersArgs) -> CmdResult {
    let catalog = super::shared::catalog_for(a.prices.as_deref())?;
    let catalog: &Catalog = &catalog;
    // A shared name (`A100`) searches every model it means.
    let (models, count) = offers::parse_gpu_models(catalog, &a.gpu).map_err(input)?;
    let mut q = base_query(
        catalog,
        &format!(
            "{}{}",
            models[0],
            a.gpu.find(':').map_or("", |i| &a.gpu[i..])
        ),
        a.cloud.as_deref(),
        a.region.as_deref(),
        rate(a.cny_per_usd)?,
    )?;
    q.gpu_count = count;
    let pricings = offers::parse_pricings(&a.pricing).map_err(input)?;
    q.pricing = pricings[0];
    if let Some(m) = a.min_gpu_mem {
        if !(m.is_finite() && m >= 0.0) {
            return Err(input(UserError::new(
                format!("--min-gpu-mem must be a number of GiB ≥ 0, found {m}"),
                "e.g. --min-gpu-mem 40",
            )));
        }
        q.min_gpu_mem_gib = Some(m);
    }
    if let Some(p) = a.max_price {
        if !(p.is_finite() && p > 0.0) {
            return Err(input(UserError::new(
                format!("--max-price must be a positive USD amount per hour, found {p}"),
                "e.g. --max-price 30",
            )));
        }
        q.max_hourly_usd = Some(p);
    }
    if a.stale_days < 0 {
        return Err(input(UserError::new(
            format!("--stale-days must be ≥ 0, found {}", a.stale_days),
            "e.g. --stale-days 180",
        )));
    }
    q.interconnect = a.interconnect.map(|i| match i {
        InterconnectArg::Nvlink => Interconnect::Nvlink,
        InterconnectArg::Pcie => Interconnect::Pcie,
    });
    q.rdma = a.rdma.then_some(true);
    if pricings.len() > 1 || a.markdown {
        let c = offers::compare(
            catalog,
            &q,
            &models,
            &pricings,
            crate::clock::today(),
            a.stale_days,
        );
        if a.json {
            return json_out(&c);
        }
        out!("{}", offers::render_comparison(&c, a.markdown));
        return Ok(ExitCode::SUCCESS);
    }
    let report =
        offers::offers_of_models(catalog, &q, &models, crate::clock::today(), a.stale_days);
    if a.json {
        return json_out(&report);
    }
    out!("{}", offers::render_table(&report));
    Ok(ExitCode::SUCCESS)
}

pub fn breakeven_cmd(a: BreakevenArgs) -> CmdResult {
    let catalog = super::shared::catalog_for(a.prices.as_deref())?;
    let catalog: &Catalog = &catalog;
    let q = base_query(
        catalog,
        &a.gpu,
        a.cloud.as_deref(),
        a.region.as_deref(),
        rate(a.cny_per_usd)?,
    )?;
    let hours = breakeven::check_hours(a.hours).map_err(input)?;
    let job = a
        .job_hours
        .map(|j| {
            if j.is_finite() && j > 0.0 && j <= breakeven::MAX_HOURS_PER_MONTH {
                Ok(j)
            } else {
                Err(input(UserError::new(
                    format!(
                        "--job-hours must be a positive number of hours (at most {}), found {j}",
                        breakeven::MAX_HOURS_PER_MONTH
                    ),
                    "e.g. --job-hours 0.25 for a 15-minute job",
                )))
            }
        })
        .transpose()?;
    let report = breakeven::breakeven_job(catalog, &q, hours, job);
    if a.json {
        return json_out(&report);
    }
    out!("{}", breakeven::render_table(&report));
    Ok(ExitCode::SUCCESS)
}

fn load(file: &std::path::Path, vars: &VarArgs) -> Result<(spec::LoadedSpec, Vars), Failure> {
    let vars = Vars::parse_cli(&vars.vars, &vars.var_files).map_err(|d| Failure(d.to_string()))?;
    let loaded = super::shared::load_spec(file, &vars).map_err(|d| Failure(d.to_string()))?;
    Ok((loaded, vars))
}

pub fn lockin_cmd(a: LockinArgs) -> CmdResult {
    let cny = rate(a.cny_per_usd)?;
    let (loaded, _) = load(&a.file, &a.vars)?;
    let report = lockin::lockin(&loaded, Catalog::builtin(), cny);
    if a.json {
        return json_out(&report);
    }
    out!("{}", lockin::render_table(&report));
    Ok(ExitCode::SUCCESS)
}

pub fn migrate_cmd(a: MigrateArgs) -> CmdResult {
    let cny = rate(a.cny_per_usd)?;
    let catalog = Catalog::builtin();
    let (to, region) = lockin::parse_target(catalog, &a.to).map_err(input)?;
    let (loaded, vars) = load(&a.file, &a.vars)?;
    if let Some(key) = a.cluster.strip_prefix("bucket.") {
        let m = migrate_bucket::migrate_bucket(
            &loaded,
            &vars,
            catalog,
            key,
            to,
            region.as_deref(),
            a.bucket_name.as_deref(),
            cny,
        )
        .map_err(|e| Failure(format!("error: {e}")))?;
        return finish_migration(&a, &m.new_text, &m, migrate_bucket::render(&m));
    }
    if a.bucket_name.is_some() {
        return Err(Failure(
            "error: --bucket-name applies to a bucket's migration\n  hint: write `gpuform migrate bucket.KEY --to CLOUD/REGION --bucket-name NAME FILE`".to_string(),
        ));
    }
    let m = migrate::migrate(
        &loaded,
        &vars,
        catalog,
        &a.cluster,
        to,
        region.as_deref(),
        cny,
    )
    .map_err(|e| Failure(format!("error: {e}")))?;
    finish_migration(&a, &m.new_text, &m, migrate::render(&m))
}

/// Writes the migrated spec with `--write`, then prints the migration.
fn finish_migration<T: serde::Serialize>(
    a: &MigrateArgs,
    new_text: &str,
    m: &T,
    rendered: String,
) -> CmdResult {
    if a.write {
        gpuform_catalog::fsio::write_atomically(&a.file, new_text.as_bytes())
            .map_err(|e| Failure(format!("cannot write {}: {e}", a.file.display())))?;
    }
    if a.json {
        return json_out(m);
    }
    out!("{rendered}");
    if a.write {
        outln!(
            "Wrote {}. Next: `gpuform plan {}` shows the move.",
            a.file.display(),
            a.file.display()
        );
    } else {
        outln!(
            "Nothing written; add --write to update {}.",
            a.file.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
