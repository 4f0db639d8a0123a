//! Quota at plan time: the account limits the instances a plan creates count
//! against, read from each cloud ([`gpuform_provider::Provider::quota`]) once
//! per (provider, region, quota), summed over the plan's new nodes in the
//! quota's unit. A region (or, on a cloud with per-zone quotas, a zone)
//! whose quota cannot fit is avoided like one out of capacity, so placement
//! and capacity failover go elsewhere before anything is created; when no
//! candidate fits, the plan fails naming the quota, the need, what is left,
//! how to raise it and where it would fit. A quota that cannot be read (no
//! permission, unreachable) is a warning, never a failure.

use super::EngineError;
use crate::address::Target;
use crate::plan::QuotaFinding;
use crate::providers::Providers;
use crate::resolve::{Desired, Exhausted, ResolveOptions};
use crate::state::StateDoc;
use gpuform_catalog::Catalog;
use gpuform_provider::attr;
use gpuform_provider::{ErrorKind, QuotaMarket, QuotaReading, QuotaUnit, Scope, UserError};
use std::collections::{BTreeMap, BTreeSet};

/// At most this many other regions are read for "where it would fit":
/// each is an API call, made only on the way to a failure.
const FIT_PROBES: usize = 6;

/// New instances of one type in one place, of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Need {
    target: Target,
    region: String,
    zone: String,
    itype: String,
    market: QuotaMarket,
    cluster: String,
}

/// One read: (provider key, region, zone when per-zone quotas, type, market).
type ReadKey = (Target, String, Option<String>, String, QuotaMarket);

/// One quota: (provider key, region, zone when per-zone, code, name).
type QuotaKey = (Target, String, Option<String>, Option<String>, String);

/// The quota check of one `make_plan`, kept across its re-resolves so each
/// quota is read once and every shortfall met is named in the error.
#[derive(Default)]
pub(super) struct QuotaCheck {
    reads: BTreeMap<ReadKey, Option<QuotaReading>>,
    unreachable: BTreeSet<Target>,
    pub warnings: Vec<String>,
    /// Why placement moved a cluster, for the plan's notes.
    pub notes: Vec<String>,
    /// Every quota found too small during this plan.
    short: Vec<QuotaFinding>,
}

impl QuotaCheck {
    fn warn(&mut self, w: String) {
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// The quotas the instances `desired` creates (new addresses, or
    /// recorded elsewhere: a move) count against, with their need.
    pub async fn check(
        &mut self,
        desired: &Desired,
        doc: &StateDoc,
        providers: &Providers,
        catalog: &Catalog,
    ) -> Vec<QuotaFinding> {
        let mut counts: BTreeMap<Need, u64> = BTreeMap::new();
        for r in &desired.resources {
            if r.kind != gpuform_provider::ResourceKind::Instance {
                continue;
            }
            let moved_or_new = match doc.resources.get(&r.address) {
                None => true,
                Some(rec) => rec.provider != r.target || rec.region != r.region,
            };
            let (true, Some(zone), Some(itype), Some(cluster)) = (
                moved_or_new,
                r.attrs.get(attr::ZONE).and_then(|v| v.as_str()),
                r.attrs.get(attr::INSTANCE_TYPE).and_then(|v| v.as_str()),
                r.address.cluster(),
            ) else {
                continue;
            };
            let market =
                QuotaMarket::of_pricing(r.attrs.get(attr::PRICING).and_then(|v| v.as_str()));
            *counts
                .entry(Need {
                    target: r.target,
                    region: r.region.clone(),
                    zone: zone.to_string(),
                    itype: itype.to_string(),
                    market,
                    cluster: cluster.to_string(),
                })
                .or_default() += 1;
        }
        let mut groups: BTreeMap<QuotaKey, QuotaFinding> = BTreeMap::new();
        for (need, count) in counts {
            let Some((reading, zone)) = self.read(&need, providers).await else {
                continue;
            };
            let Some(ty) = catalog.instance_type(need.target.cloud, &need.itype) else {
                self.warn(format!(
                    "quota of {} on {} not checked: the catalog does not know its vCPUs and GPUs",
                    need.itype, need.target
                ));
                continue;
            };
            let each = match reading.unit {
                QuotaUnit::Vcpus => u64::from(ty.vcpus),
                QuotaUnit::Gpus => u64::from(ty.gpu_count),
                QuotaUnit::Instances => 1,
            };
            let group = groups
                .entry((
                    need.target,
                    need.region.clone(),
                    zone.clone(),
                    reading.code.clone(),
                    reading.name.clone(),
                ))
                .or_insert_with(|| QuotaFinding {
                    provider: need.target,
                    region: need.region.clone(),
                    zone,
                    name: reading.name.clone(),
                    code: reading.code.clone(),
                    unit: reading.unit,
                    need: 0,
                    used: reading.used,
                    limit: reading.limit,
                    raise: reading.raise.clone(),
                    clusters: Vec::new(),
                    fits: true,
                });
            group.need = group.need.saturating_add(each.saturating_mul(count));
            if !group.clusters.contains(&need.cluster) {
                group.clusters.push(need.cluster.clone());
            }
        }
        let mut findings: Vec<QuotaFinding> = groups.into_values().collect();
        for f in &mut findings {
            f.fits = reading_of(f).fits(f.need);
            if !f.fits && !self.short.contains(f) {
                self.short.push(f.clone());
            }
        }
        findings
    }

    /// The quota `need` counts against, read once per quota; `None` when
    /// the cloud cannot tell or could not be read (then a warning).
    async fn read(
        &mut self,
        need: &Need,
        providers: &Providers,
    ) -> Option<(QuotaReading, Option<String>)> {
        if self.unreachable.contains(&need.target) {
            return None;
        }
        let provider = match providers.get(need.target).await {
            Ok(p) => p,
            Err(e) => {
                self.warn(format!("quota not checked on {}: {e}", need.target));
                self.unreachable.insert(need.target);
                return None;
            }
        };
        let zone = provider.quota_per_zone().then(|| need.zone.clone());
        let read_key: ReadKey = (
            need.target,
            need.region.clone(),
            zone.clone(),
            need.itype.clone(),
            need.market,
        );
        if let Some(r) = self.reads.get(&read_key) {
            return r.clone().map(|r| (r, zone));
        }
        let scope = Scope {
            region: need.region.clone(),
        };
        let got = match provider
            .zone_quota(&scope, &need.zone, &need.itype, need.market)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                let fix = if e.kind == ErrorKind::Auth {
                    " (grant the credentials permission to read quotas to have it checked)"
                } else {
                    ""
                };
                self.warn(format!(
                    "could not read the quota of {} {} on {} in {}: {e}; planned without it{fix}",
                    need.market, need.itype, need.target, need.region
                ));
                None
            }
        };
        self.reads.insert(read_key, got.clone());
        got.map(|r| (r, zone))
    }

    /// The zones to avoid for the clusters whose quota does not fit,
    /// besides those already avoided; a cluster running in that region
    /// stays (a quota never moves a running cluster: that is a migration).
    pub fn avoid(
        &mut self,
        findings: &[QuotaFinding],
        opts: &ResolveOptions,
        catalog: &Catalog,
    ) -> Vec<Exhausted> {
        let mut out = Vec::new();
        for f in findings.iter().filter(|f| !f.fits) {
            let cloud = f.provider.cloud;
            let zones: Vec<String> = match &f.zone {
                Some(z) => vec![z.clone()],
                None => catalog
                    .region(cloud, &f.region)
                    .map(|r| r.zones.clone())
                    .unwrap_or_default(),
            };
            for cluster in &f.clusters {
                let runs_here = opts
                    .current
                    .get(cluster)
                    .is_some_and(|p| p.cloud == cloud && p.region == f.region);
                if runs_here {
                    continue;
                }
                let fresh: Vec<Exhausted> = zones
                    .iter()
                    .map(|z| Exhausted::zone(cluster, cloud, &f.region, z))
                    .filter(|e| !opts.exhausted.contains(e) && !out.contains(e))
                    .collect();
                if !fresh.is_empty() {
                    self.notes.push(format!(
                        "cluster {cluster} skips {} {}: quota {} has {} {} left, its new nodes need {}",
                        f.provider,
                        f.zone.as_deref().unwrap_or(&f.region),
                        f.label(),
                        have(f),
                        f.unit,
                        f.need
                    ));
                }
                out.extend(fresh);
            }
        }
        out
    }

    /// The plan's failure when a quota was short: `resolve_error` (what
    /// re-resolving without the short places said) unless no quota was short.
    pub async fn into_error(
        self,
        resolve_error: Option<EngineError>,
        providers: &Providers,
        catalog: &Catalog,
    ) -> EngineError {
        if self.short.is_empty() {
            return resolve_error.unwrap_or_else(|| {
                EngineError::Internal("quota check failed without a shortfall".into())
            });
        }
        let mut this = self;
        let short = std::mem::take(&mut this.short);
        let lines: Vec<String> = short
            .iter()
            .map(|f| {
                format!(
                    "  quota {} on {}: cluster {} needs {} {}, have {} ({})",
                    f.label(),
                    f.provider,
                    f.clusters.join(", "),
                    f.need,
                    f.unit,
                    have(f),
                    f.usage()
                )
            })
            .collect();
        let mut raise: Vec<String> = short.iter().map(|f| f.raise.clone()).collect();
        raise.dedup();
        let fit = this.where_it_fits(&short, providers, catalog).await;
        EngineError::Quota(UserError::new(
            format!(
                "the account's quota cannot fit the nodes this plan creates, so nothing was created:\n{}",
                lines.join("\n")
            ),
            format!("raise it: {}; {fit}", raise.join("; ")),
        ))
    }

    /// The first other region of the same provider (that the catalog says
    /// sells the type) whose quota fits the shortfall's need.
    async fn where_it_fits(
        &mut self,
        short: &[QuotaFinding],
        providers: &Providers,
        catalog: &Catalog,
    ) -> String {
        let Some(f) = short.first() else {
            return String::new();
        };
        let tried: BTreeSet<&str> = short
            .iter()
            .filter(|s| s.provider == f.provider)
            .map(|s| s.region.as_str())
            .collect();
        // The type and market the shortfall's need came from.
        let Some((itype, market)) = self
            .reads
            .iter()
            .find(|((k, r, _, _, _), got)| {
                k == &f.provider
                    && r == &f.region
                    && got
                        .as_ref()
                        .is_some_and(|g| g.name == f.name && g.code == f.code)
            })
            .map(|((_, _, _, t, m), _)| (t.clone(), *m))
        else {
            return "no other place was checked".to_string();
        };
        let cloud = f.provider.cloud;
        let mut regions: Vec<&str> = catalog
            .offerings()
            .iter()
            .filter(|o| o.cloud == cloud && o.instance_type == itype)
            .map(|o| o.region.as_str())
            .filter(|r| !tried.contains(r))
            .collect();
        regions.sort_unstable();
        regions.dedup();
        let mut probed = Vec::new();
        for region in regions.into_iter().take(FIT_PROBES) {
            let Some(zone) = catalog
                .region(cloud, region)
                .and_then(|r| r.zones.first().cloned())
            else {
                continue;
            };
            let need = Need {
                target: f.provider,
                region: region.to_string(),
                zone,
                itype: itype.clone(),
                market,
                cluster: f.clusters.first().cloned().unwrap_or_default(),
            };
            probed.push(region.to_string());
            if let Some((r, z)) = self.read(&need, providers).await {
                if r.fits(f.need) {
                    return format!(
                        "it would fit in {} {} ({} {} left: {}) — point the cluster there \
                         (`region:`, or `cloud: any` with it among `candidates`)",
                        f.provider,
                        z.as_deref().unwrap_or(region),
                        r.have()
                            .map(|h| h.to_string())
                            .unwrap_or_else(|| "no limit".into()),
                        r.unit,
                        match r.limit {
                            Some(l) => format!("used {} of {l}", r.used),
                            None => format!("used {}", r.used),
                        }
                    );
                }
            }
        }
        if probed.is_empty() {
            format!(
                "no other {} region sells {itype}, and none of the spec's candidates fits",
                f.provider
            )
        } else {
            format!(
                "it fits none of the spec's candidates, nor {} {} (read: {})",
                f.provider,
                if probed.len() == 1 {
                    "region"
                } else {
                    "regions"
                },
                probed.join(", ")
            )
        }
    }
}

fn reading_of(f: &QuotaFinding) -> QuotaReading {
    QuotaReading {
        code: f.code.clone(),
        name: f.name.clone(),
        unit: f.unit,
        limit: f.limit,
        used: f.used,
        raise: f.raise.clone(),
    }
}

/// What is left of a quota, in words.
fn have(f: &QuotaFinding) -> String {
    match reading_of(f).have() {
        Some(h) => h.to_string(),
        None => "no limit".to_string(),
    }
}

/// The plan note of a quota that fits.
pub(super) fn ok_note(f: &QuotaFinding) -> String {
    format!(
        "quota ok: {}: need {} {}, {}",
        f.label(),
        f.need,
        f.unit,
        f.usage()
    )
}
