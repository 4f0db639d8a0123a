//! `gpuform catalog refresh`: ask each cloud's own API, with the user's
//! credentials, which regions it has, their zones, and which of the
//! catalog's GPU instance types each zone offers; keep the answers in the
//! live cache beside the live prices ([`gpuform_catalog::discovered`]).
//!
//! One entry per (cloud, region), dated with today; the cache is rewritten
//! atomically after every region, as `prices refresh` does after every
//! quote, so an interrupted refresh keeps what it read. Types the cloud
//! offers in a catalog family but whose GPU the catalog does not specify
//! are listed as skipped, never added.

use gpuform_catalog::{
    instance_family, Catalog, Cloud, Day, DiscoveredOffering, DiscoveredRegion, LivePrices,
    SkippedType,
};
use gpuform_provider::{CatalogApi, ProviderError};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// What to refresh.
#[derive(Debug, Clone)]
pub struct CatalogRefresh {
    /// Only these regions (each must be one its cloud lists); empty = every
    /// region each cloud lists.
    pub regions: Vec<String>,
    /// The day entries are dated with (from the clock module).
    pub today: Day,
    pub cache: PathBuf,
}

/// Why a refresh stopped. What was read before is in the cache.
#[derive(Debug, thiserror::Error)]
pub enum CatalogRefreshError {
    #[error("{0}")]
    Input(String),
    #[error("{cloud}{}: {error}{}", region.as_ref().map(|r| format!(" {r}")).unwrap_or_default(), if *kept > 0 { format!("\n  the cache {cache} keeps the {kept} region(s) read before") } else { String::new() })]
    Stopped {
        cloud: Cloud,
        region: Option<String>,
        error: ProviderError,
        kept: usize,
        cache: String,
    },
    #[error("{0}")]
    Cache(#[from] gpuform_catalog::live::LiveError),
}

/// The catalog's families and types of one cloud, which discovery asks about.
fn families_of(catalog: &Catalog, cloud: Cloud) -> (Vec<String>, Vec<String>) {
    let types = catalog.instance_types(cloud);
    let families: BTreeSet<String> = types
        .iter()
        .map(|t| instance_family(cloud, &t.name).to_string())
        .collect();
    (
        families.into_iter().collect(),
        types.iter().map(|t| t.name.clone()).collect(),
    )
}

/// Runs a refresh: for each cloud, its regions (checked against `req.regions`
/// before any region is read), then each region, saved as it is read.
/// `notify` sees every region entry as it is saved.
pub async fn refresh_catalog(
    catalog: &Catalog,
    apis: &[(Cloud, Arc<dyn CatalogApi>)],
    req: &CatalogRefresh,
    mut notify: impl FnMut(&DiscoveredRegion, bool),
) -> Result<Vec<DiscoveredRegion>, CatalogRefreshError> {
    let mut cache = LivePrices::load(&req.cache)?;
    let today = req.today.to_string();
    let mut plan: Vec<(Cloud, &Arc<dyn CatalogApi>, Vec<String>)> = Vec::new();
    let mut unmatched: BTreeSet<&String> = req.regions.iter().collect();
    let mut listed_all = Vec::new();
    for (cloud, api) in apis {
        let listed = api
            .list_regions()
            .await
            .map_err(|error| CatalogRefreshError::Stopped {
                cloud: *cloud,
                region: None,
                error,
                kept: 0,
                cache: req.cache.display().to_string(),
            })?;
        let chosen: Vec<String> = if req.regions.is_empty() {
            listed.clone()
        } else {
            listed
                .iter()
                .filter(|r| req.regions.contains(r))
                .cloned()
                .collect()
        };
        unmatched.retain(|r| !listed.contains(r));
        listed_all.push((*cloud, listed));
        plan.push((*cloud, api, chosen));
    }
    if !unmatched.is_empty() {
        let lists: Vec<String> = listed_all
            .iter()
            .map(|(c, l)| format!("{c}: {}", l.join(", ")))
            .collect();
        return Err(CatalogRefreshError::Input(format!(
            "{} {} not a region of {} (as its API lists them for your account)\n  hint: {}",
            unmatched
                .iter()
                .map(|r| format!("`{r}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if unmatched.len() == 1 { "is" } else { "are" },
            apis.iter()
                .map(|(c, _)| c.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            lists.join("\n        ")
        )));
    }
    let mut done = Vec::new();
    for (cloud, api, regions) in plan {
        let (families, known) = families_of(catalog, cloud);
        for region in regions {
            let found = api
                .discover_region(&region, &families, &known)
                .await
                .map_err(|error| CatalogRefreshError::Stopped {
                    cloud,
                    region: Some(region.clone()),
                    error,
                    kept: done.len(),
                    cache: req.cache.display().to_string(),
                })?;
            let mut offerings = Vec::new();
            let mut skipped = Vec::new();
            for (t, zones) in found.offered {
                if known.contains(&t) {
                    offerings.push(DiscoveredOffering {
                        instance_type: t,
                        zones,
                    });
                } else {
                    skipped.push(SkippedType {
                        api_says: found.gpus.get(&t).cloned().unwrap_or_default(),
                        instance_type: t,
                    });
                }
            }
            let is_new = catalog.region(cloud, &region).is_none();
            let entry = DiscoveredRegion {
                cloud,
                region: region.clone(),
                discovered_on: today.clone(),
                api: found.api.join(", "),
                zones: found.zones,
                offerings,
                skipped,
            };
            if entry.zones.is_empty() {
                // A region without an available zone offers nothing to plan on.
                continue;
            }
            cache.upsert_region(entry.clone());
            // After every region: an interruption keeps what was read.
            cache.save(&req.cache)?;
            notify(&entry, is_new);
            done.push(entry);
        }
    }
    Ok(done)
}
