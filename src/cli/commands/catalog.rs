//! `gpuform catalog refresh`: arguments and output; the work is
//! [`crate::engine::catalog`].

use crate::cli::credentials::{apis_with_credentials, credentials_hint};
use crate::cli::out::outln;
use crate::cli::{CmdResult, Failure};
use crate::engine::catalog::{refresh_catalog, CatalogRefresh};
use clap::{Args, Subcommand};
use gpuform_catalog::{Catalog, Cloud, DiscoveredRegion};
use gpuform_provider::{CatalogApi, ErrorKind};
use std::process::ExitCode;
use std::sync::Arc;

const REFRESH_HELP: &str = "\
Asks each cloud's own API, with your credentials (read as for the cloud's CLI), which regions
it has, their zones, and which of the catalog's GPU instance types each zone offers:
  aws      EC2 DescribeRegions, DescribeAvailabilityZones, DescribeInstanceTypeOfferings
           (by availability zone); DescribeInstanceTypes for the GPUs of types the catalog lacks
  alibaba  ECS DescribeRegions, DescribeZones, DescribeAvailableResource (InstanceType)
  tencent  CVM DescribeRegions, DescribeZones, DescribeZoneInstanceConfigInfos
  huawei   IAM KeystoneListRegions; ECS NovaListAvailabilityZones, ListFlavors

Answers go to the live cache that `gpuform prices refresh` writes (GPUFORM_PRICE_CACHE, else
$XDG_CACHE_HOME/gpuform/prices.json or ~/.cache/gpuform/prices.json), one entry per region dated
today, saved after every region. validate, plan, offers and prices refresh then know the regions,
zones and offerings found; an offering added this way shows the API calls and the day as its
source. A type offered in a catalog family whose GPU the catalog does not specify is listed as
skipped, with what the API says of it, and never added.

Credentials: aws  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, SSO, ...);
alibaba ALIBABA_CLOUD_ACCESS_KEY_ID + ALIBABA_CLOUD_ACCESS_KEY_SECRET; tencent
TENCENTCLOUD_SECRET_ID + TENCENTCLOUD_SECRET_KEY; huawei HUAWEICLOUD_SDK_AK +
HUAWEICLOUD_SDK_SK + HUAWEICLOUD_SDK_PROJECT_ID(_<REGION>).

Exit codes:
  0  every region asked for was read
  1  bad input (a region the cloud does not list), missing or wrong credentials, or an API
     error (what was read before is kept)";

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Read regions, zones and GPU instance type offerings from each cloud's API into the local cache.
    #[command(after_help = REFRESH_HELP)]
    Refresh(CatalogRefreshArgs),
}

#[derive(Debug, Args, Clone)]
pub struct CatalogRefreshArgs {
    /// Only this cloud: aws, alibaba, tencent, huawei (repeatable). Without it, every cloud
    /// whose credentials are set.
    #[arg(long = "cloud", value_name = "CLOUD")]
    pub clouds: Vec<String>,
    /// Only this region (repeatable); it must be one the cloud lists. Without it, every region
    /// the cloud lists.
    #[arg(long = "region", value_name = "REGION")]
    pub regions: Vec<String>,
    /// Print what was read as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub async fn catalog_cmd(c: CatalogCommand, quiet: bool) -> CmdResult {
    match c {
        CatalogCommand::Refresh(a) => refresh_cmd(a, quiet).await,
    }
}

async fn refresh_cmd(a: CatalogRefreshArgs, quiet: bool) -> CmdResult {
    let explicit = !a.clouds.is_empty();
    let mut clouds: Vec<Cloud> = Vec::new();
    for c in &a.clouds {
        let cloud: Cloud = c.parse().map_err(|e: String| {
            Failure(format!("{e}\n  hint: --cloud aws|alibaba|tencent|huawei"))
        })?;
        if !clouds.contains(&cloud) {
            clouds.push(cloud);
        }
    }
    if clouds.is_empty() {
        clouds = Cloud::ALL.to_vec();
    }
    let apis: Vec<(Cloud, Arc<dyn CatalogApi>)> =
        apis_with_credentials(clouds, explicit, quiet, "catalog refresh", |cloud| {
            crate::providers::catalog_api(cloud)
        })
        .await?;
    let req = CatalogRefresh {
        regions: a.regions.clone(),
        today: crate::clock::today(),
        cache: gpuform_catalog::live::default_cache_path(),
    };
    let json = a.json;
    let found = refresh_catalog(Catalog::builtin(), &apis, &req, |d, is_new| {
        if !quiet && !json {
            report(d, is_new);
        }
    })
    .await
    .map_err(|e| {
        let auth = matches!(
            &e,
            crate::engine::catalog::CatalogRefreshError::Stopped { error, .. } if error.kind == ErrorKind::Auth
        );
        match &e {
            crate::engine::catalog::CatalogRefreshError::Stopped { cloud, .. } if auth => {
                Failure(format!("{e}\n  hint: {}", credentials_hint(*cloud)))
            }
            _ => Failure(e.to_string()),
        }
    })?;
    if json {
        let regions: Vec<serde_json::Value> = found
            .iter()
            .map(|d| {
                let mut v = serde_json::to_value(d).unwrap_or_default();
                v["new_region"] = Catalog::builtin()
                    .region(d.cloud, &d.region)
                    .is_none()
                    .into();
                v
            })
            .collect();
        let doc = serde_json::json!({
            "as_of": req.today.to_string(),
            "cache": req.cache.display().to_string(),
            "regions": regions,
        });
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else if !quiet {
        outln!(
            "{} region(s) read, as of {}; cache: {}",
            found.len(),
            req.today,
            req.cache.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn report(d: &DiscoveredRegion, is_new: bool) {
    let builtin = Catalog::builtin();
    let added = d
        .offerings
        .iter()
        .filter(|o| {
            builtin
                .offering(d.cloud, &d.region, &o.instance_type)
                .is_none()
        })
        .count();
    outln!(
        "{} {}{}: {} zone(s) ({}); {} catalog type(s) offered ({} offering(s) new to the built-in catalog)",
        d.cloud,
        d.region,
        if is_new { " (new region)" } else { "" },
        d.zones.len(),
        d.zones.join(", "),
        d.offerings.len(),
        added
    );
    for s in &d.skipped {
        outln!(
            "  skipped {}: the catalog has no GPU specification for it{}; not added",
            s.instance_type,
            if s.api_says.is_empty() {
                String::new()
            } else {
                format!(" (the API says: {})", s.api_says)
            }
        );
    }
}
