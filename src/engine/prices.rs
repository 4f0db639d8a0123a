//! `gpuform prices refresh`: ask each cloud's own price API what the
//! catalog's GPU instance types cost now, with the user's credentials, and
//! keep the answers in the live price cache ([`gpuform_catalog::live`]).
//!
//! One quote per (cloud, region, instance type), in catalog order, within
//! the cloud's price budget ([`PriceApi::price_rate`], a token bucket);
//! throttled and transient failures are retried with backoff. The cache is
//! rewritten atomically after every quote, so a refresh that is interrupted
//! (killed, or stopped by an outage) keeps what it fetched, and a re-run on
//! the same day skips what is already there and resumes.

use governor::{Quota, RateLimiter};
use gpuform_catalog::{Catalog, Cloud, Day, LiveEntry, LivePrices};
use gpuform_provider::{ErrorKind, PriceApi, ProviderError};
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What to refresh.
#[derive(Debug, Clone)]
pub struct PriceRefresh {
    /// The clouds to ask (each with its price API).
    pub clouds: Vec<Cloud>,
    /// Only this region.
    pub region: Option<String>,
    /// Only these GPU models (canonical names); empty = every GPU type.
    pub gpu_models: Vec<String>,
    /// Only these instance types; empty = every type matching the rest.
    pub instance_types: Vec<String>,
    /// The day quotes are dated with (from the clock module).
    pub today: Day,
    pub cache: PathBuf,
    /// Quote again what the cache already has for today.
    pub force: bool,
}

/// One (cloud, region, instance type) to quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceTarget {
    pub cloud: Cloud,
    pub region: String,
    pub instance_type: String,
}

/// What a refresh did, reported as it goes.
#[derive(Debug, Clone)]
pub enum PriceEvent {
    /// Already in the cache for today: not asked again.
    Cached(PriceTarget),
    /// Quoted and saved: the terms the cloud quoted.
    Quoted(PriceTarget, Vec<String>),
    /// The cloud refused this one type (does not sell it there, unknown type);
    /// the refresh goes on with the others.
    Refused(PriceTarget, String),
}

/// The outcome of a refresh that was not stopped.
#[derive(Debug, Default, Clone)]
pub struct PriceReport {
    pub quoted: usize,
    pub cached: usize,
    pub refused: Vec<String>,
}

/// Why a refresh stopped. What was quoted before is in the cache.
#[derive(Debug, thiserror::Error)]
pub enum PriceRefreshError {
    #[error("{0}")]
    Input(String),
    #[error("{cloud} {region} {instance_type}: {error}\n  the price cache {cache} keeps the {kept} quote(s) fetched before; run the same command again to resume{hint}")]
    Stopped {
        cloud: Cloud,
        region: String,
        instance_type: String,
        error: ProviderError,
        kept: usize,
        cache: String,
        hint: String,
    },
    #[error("{0}")]
    Cache(#[from] gpuform_catalog::live::LiveError),
}

/// The catalog offerings a refresh asks about, in catalog order.
pub fn targets(
    catalog: &Catalog,
    req: &PriceRefresh,
) -> Result<Vec<PriceTarget>, PriceRefreshError> {
    // The clouds asked about, for messages.
    let clouds = || {
        req.clouds
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(r) = &req.region {
        if !req.clouds.iter().any(|&c| catalog.region(c, r).is_some()) {
            let names: Vec<String> = req
                .clouds
                .iter()
                .flat_map(|&c| catalog.regions(c).into_iter().map(|r| r.name.clone()))
                .collect();
            return Err(PriceRefreshError::Input(format!(
                "unknown region `{r}` for {}\n  hint: regions: {}",
                clouds(),
                names.join(", ")
            )));
        }
    }
    for t in &req.instance_types {
        if !req
            .clouds
            .iter()
            .any(|&c| catalog.instance_type(c, t).is_some())
        {
            return Err(PriceRefreshError::Input(format!(
                "unknown instance type `{t}`: the catalog of {} has no such GPU type\n  hint: `gpuform offers GPU` lists the types",
                clouds()
            )));
        }
    }
    let out: Vec<PriceTarget> = catalog
        .offerings()
        .iter()
        .filter(|o| req.clouds.contains(&o.cloud))
        .filter(|o| req.region.as_ref().is_none_or(|r| &o.region == r))
        .filter(|o| req.instance_types.is_empty() || req.instance_types.contains(&o.instance_type))
        .filter(|o| {
            req.gpu_models.is_empty()
                || catalog
                    .instance_type(o.cloud, &o.instance_type)
                    .is_some_and(|t| req.gpu_models.contains(&t.gpu_model))
        })
        .map(|o| PriceTarget {
            cloud: o.cloud,
            region: o.region.clone(),
            instance_type: o.instance_type.clone(),
        })
        .collect();
    if out.is_empty() {
        return Err(PriceRefreshError::Input(
            "no catalog offering matches: nothing to refresh\n  hint: drop --region or --gpu, or check `gpuform offers GPU --cloud C`".into(),
        ));
    }
    Ok(out)
}

/// Retries of one quote after a throttled or transient answer.
const RETRIES: u32 = 3;

async fn quote_with_retries(
    api: &dyn PriceApi,
    t: &PriceTarget,
) -> Result<Vec<gpuform_catalog::LiveQuote>, ProviderError> {
    let mut wait =
        gpuform_provider::Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
    let mut attempt = 0;
    loop {
        match api.quote_prices(&t.region, &t.instance_type).await {
            Err(e) if e.kind.is_retryable() && attempt < RETRIES => {
                attempt += 1;
                wait.sleep().await;
            }
            other => return other,
        }
    }
}

/// Whether a failure concerns only this type (the refresh goes on) rather
/// than the account or the service (the refresh stops).
fn refused_type(e: &ProviderError) -> bool {
    matches!(
        e.kind,
        ErrorKind::Invalid | ErrorKind::NotFound | ErrorKind::Capacity
    )
}

/// Runs a refresh: every target of `req` through the price API of its cloud.
pub async fn refresh_prices(
    apis: &[(Cloud, Arc<dyn PriceApi>)],
    targets: &[PriceTarget],
    req: &PriceRefresh,
    mut notify: impl FnMut(PriceEvent),
) -> Result<PriceReport, PriceRefreshError> {
    let mut cache = LivePrices::load(&req.cache)?;
    let today = req.today.to_string();
    let mut report = PriceReport::default();
    for (cloud, api) in apis {
        let rate = api.price_rate();
        let period = Duration::from_secs_f64(1.0 / rate.per_second.max(0.001));
        let quota = Quota::with_period(period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(rate.burst.max(1)).unwrap_or(NonZeroU32::MIN));
        let limiter = RateLimiter::direct(quota);
        for t in targets.iter().filter(|t| t.cloud == *cloud) {
            if !req.force
                && cache
                    .get(t.cloud, &t.region, &t.instance_type)
                    .is_some_and(|e| e.quoted_on == today)
            {
                report.cached += 1;
                notify(PriceEvent::Cached(t.clone()));
                continue;
            }
            limiter.until_ready().await;
            match quote_with_retries(api.as_ref(), t).await {
                Ok(quotes) => {
                    let terms = quotes.iter().map(|q| q.term.label()).collect();
                    cache.upsert(LiveEntry {
                        cloud: t.cloud,
                        region: t.region.clone(),
                        instance_type: t.instance_type.clone(),
                        quoted_on: today.clone(),
                        quotes,
                    });
                    // After every quote: an interruption keeps what was fetched.
                    cache.save(&req.cache)?;
                    report.quoted += 1;
                    notify(PriceEvent::Quoted(t.clone(), terms));
                }
                Err(e) if refused_type(&e) => {
                    let msg = format!("{} {} {}: {e}", t.cloud, t.region, t.instance_type);
                    report.refused.push(msg.clone());
                    notify(PriceEvent::Refused(t.clone(), e.to_string()));
                }
                Err(e) => {
                    let hint = match e.kind {
                        ErrorKind::Auth => format!(
                            "\n  hint: check the {} credentials in the environment (they are read as for the cloud's own CLI)",
                            t.cloud
                        ),
                        _ => String::new(),
                    };
                    return Err(PriceRefreshError::Stopped {
                        cloud: t.cloud,
                        region: t.region.clone(),
                        instance_type: t.instance_type.clone(),
                        error: e,
                        kept: report.quoted,
                        cache: req.cache.display().to_string(),
                        hint,
                    });
                }
            }
        }
    }
    Ok(report)
}
