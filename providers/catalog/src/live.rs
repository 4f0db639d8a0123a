//! The live price cache: what `gpuform prices refresh` asked each cloud's own
//! price API, kept in one JSON file so that plan, offers, breakeven and cost
//! read it before the built-in snapshot. `gpuform catalog refresh` keeps its
//! discovered regions in the same file ([`crate::discovered`]).
//!
//! One entry per (cloud, region, instance type) with the day it was quoted;
//! the file is rewritten atomically ([`crate::fsio`]) after every entry a
//! refresh adds, so an interrupted refresh keeps what it fetched and a re-run
//! skips what is already there for the same day.
//!
//! Quotes become catalog prices labelled [`PriceBasis::Live`] with the region
//! they were quoted for; a one-year subscription (Alibaba, Tencent, Huawei)
//! becomes `reserved-1y` like the snapshot's, a one-month one a monthly
//! subscription. `--prices FILE` overrides are applied after the cache and win.

use crate::{
    Catalog, Cloud, Currency, Price, PriceBasis, PricingModel, SubscriptionPrice, HOURS_PER_MONTH,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The cache file's format version.
pub const LIVE_FORMAT: u32 = 1;

/// What a quote prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "term", content = "months")]
pub enum QuoteTerm {
    /// Pay-as-you-go, per instance-hour.
    OnDemand,
    /// Spot / preemptible, per instance-hour (the latest price the API reports).
    Spot,
    /// An AWS-style one-year reservation's effective hourly rate (no upfront).
    Reserved1y,
    /// An AWS-style three-year reservation's effective hourly rate (no upfront).
    Reserved3y,
    /// A subscription (包年包月) of this many months, priced for the whole term.
    Subscription(u32),
}

impl QuoteTerm {
    pub fn label(self) -> String {
        match self {
            QuoteTerm::OnDemand => "on-demand".into(),
            QuoteTerm::Spot => "spot".into(),
            QuoteTerm::Reserved1y => "reserved-1y".into(),
            QuoteTerm::Reserved3y => "reserved-3y".into(),
            QuoteTerm::Subscription(1) => "1-month subscription".into(),
            QuoteTerm::Subscription(m) => format!("{m}-month subscription"),
        }
    }
}

/// One price a cloud's price API quoted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveQuote {
    /// `"term": "on-demand"`, or `"term": "subscription", "months": 12`.
    #[serde(flatten)]
    pub term: QuoteTerm,
    /// Per instance-hour for on-demand, spot and reserved; the whole term for a subscription.
    pub amount: f64,
    pub currency: Currency,
    /// The API call that quoted it, e.g. `cvm:InquiryPriceRunInstances (POSTPAID_BY_HOUR)`.
    pub api: String,
}

/// The quotes of one instance type in one region, on one day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveEntry {
    pub cloud: Cloud,
    pub region: String,
    pub instance_type: String,
    /// `YYYY-MM-DD`, from the clock module (pinned by `GPUFORM_TODAY`).
    pub quoted_on: String,
    pub quotes: Vec<LiveQuote>,
}

/// The whole cache file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LivePrices {
    pub format: u32,
    pub entries: Vec<LiveEntry>,
    /// What `gpuform catalog refresh` read ([`crate::discovered`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<crate::DiscoveredRegion>,
}

impl Default for LivePrices {
    fn default() -> Self {
        LivePrices {
            format: LIVE_FORMAT,
            entries: Vec::new(),
            regions: Vec::new(),
        }
    }
}

/// Why the cache could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("cannot read the price cache {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the price cache {path} is not valid: {why}\n  hint: delete it and run `gpuform prices refresh` (and `gpuform catalog refresh`) again")]
    Invalid { path: String, why: String },
    #[error("cannot write the price cache {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Where the cache lives: `GPUFORM_PRICE_CACHE`, else
/// `$XDG_CACHE_HOME/gpuform/prices.json`, else `~/.cache/gpuform/prices.json`,
/// else `.gpuform/prices.json` in the working directory.
pub fn default_cache_path() -> PathBuf {
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
    if let Some(p) = var("GPUFORM_PRICE_CACHE") {
        return PathBuf::from(p);
    }
    if let Some(x) = var("XDG_CACHE_HOME") {
        return PathBuf::from(x).join("gpuform").join("prices.json");
    }
    if let Some(h) = var("HOME") {
        return PathBuf::from(h)
            .join(".cache")
            .join("gpuform")
            .join("prices.json");
    }
    PathBuf::from(".gpuform").join("prices.json")
}

impl LivePrices {
    /// Reads the cache; a missing file is an empty cache.
    pub fn load(path: &Path) -> Result<LivePrices, LiveError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LivePrices::default()),
            Err(source) => {
                return Err(LiveError::Read {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        let invalid = |why: String| LiveError::Invalid {
            path: path.display().to_string(),
            why,
        };
        let doc: LivePrices = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if doc.format != LIVE_FORMAT {
            return Err(invalid(format!(
                "format {} (this gpuform reads format {LIVE_FORMAT})",
                doc.format
            )));
        }
        for e in &doc.entries {
            if crate::Day::parse_iso(&e.quoted_on).is_none() {
                return Err(invalid(format!(
                    "{} {} {}: quoted_on `{}` is not a YYYY-MM-DD date",
                    e.cloud, e.region, e.instance_type, e.quoted_on
                )));
            }
            if let Some(q) = e
                .quotes
                .iter()
                .find(|q| !(q.amount.is_finite() && q.amount > 0.0))
            {
                return Err(invalid(format!(
                    "{} {} {}: {} price {} is not above zero",
                    e.cloud,
                    e.region,
                    e.instance_type,
                    q.term.label(),
                    q.amount
                )));
            }
        }
        if let Some(why) = doc.regions.iter().find_map(|r| r.problem()) {
            return Err(invalid(why));
        }
        Ok(doc)
    }

    /// Writes the cache atomically (temp file, fsync, rename), creating its directory.
    pub fn save(&self, path: &Path) -> Result<(), LiveError> {
        let werr = |source| LiveError::Write {
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(werr)?;
        }
        let mut bytes =
            serde_json::to_vec_pretty(self).map_err(|e| werr(std::io::Error::other(e)))?;
        bytes.push(b'\n');
        crate::fsio::write_atomically(path, &bytes).map_err(werr)
    }

    /// The entry for an instance type in a region, if any.
    pub fn get(&self, cloud: Cloud, region: &str, instance_type: &str) -> Option<&LiveEntry> {
        self.entries
            .iter()
            .find(|e| e.cloud == cloud && e.region == region && e.instance_type == instance_type)
    }

    /// Adds an entry, replacing an older one for the same (cloud, region, type).
    pub fn upsert(&mut self, entry: LiveEntry) {
        self.entries.retain(|e| {
            !(e.cloud == entry.cloud
                && e.region == entry.region
                && e.instance_type == entry.instance_type)
        });
        self.entries.push(entry);
        self.entries.sort_by(|a, b| {
            (a.cloud, &a.region, &a.instance_type).cmp(&(b.cloud, &b.region, &b.instance_type))
        });
    }
}

impl Catalog {
    /// A copy of this catalog with the cached live quotes replacing the
    /// snapshot's prices where the cache has them. Entries for offerings the
    /// catalog does not know are skipped (returned, so callers can say so).
    pub fn with_live_prices(&self, live: &LivePrices) -> (Catalog, Vec<String>) {
        let mut out = self.clone();
        let mut skipped = Vec::new();
        for e in &live.entries {
            let Some(&i) =
                out.offering_index
                    .get(&(e.cloud, e.region.clone(), e.instance_type.clone()))
            else {
                skipped.push(format!("{} {} {}", e.cloud, e.region, e.instance_type));
                continue;
            };
            for q in &e.quotes {
                let source = format!("{} in {}, quoted {}", q.api, e.region, e.quoted_on);
                let hourly = |hourly: f64, source: String| Price {
                    hourly,
                    currency: q.currency,
                    source,
                    as_of: e.quoted_on.clone(),
                    basis: PriceBasis::Live,
                };
                let (model, price) = match q.term {
                    QuoteTerm::OnDemand => (PricingModel::OnDemand, hourly(q.amount, source)),
                    QuoteTerm::Spot => (PricingModel::Spot, hourly(q.amount, source)),
                    QuoteTerm::Reserved1y => (PricingModel::Reserved1y, hourly(q.amount, source)),
                    QuoteTerm::Reserved3y => (PricingModel::Reserved3y, hourly(q.amount, source)),
                    QuoteTerm::Subscription(months) => {
                        out.subscriptions.retain(|s| {
                            !(s.cloud == e.cloud
                                && s.instance_type == e.instance_type
                                && s.months == months
                                && s.region.as_deref() == Some(e.region.as_str()))
                        });
                        out.subscriptions.push(SubscriptionPrice {
                            cloud: e.cloud,
                            region: Some(e.region.clone()),
                            instance_type: e.instance_type.clone(),
                            months,
                            price: q.amount,
                            currency: q.currency,
                            source: source.clone(),
                            as_of: e.quoted_on.clone(),
                            note: String::new(),
                            live: true,
                        });
                        if months != 12 || e.cloud == Cloud::Aws {
                            continue;
                        }
                        // As the snapshot does: the one-year subscription (包年) is reserved-1y.
                        let hours = 12.0 * HOURS_PER_MONTH;
                        let text = format!(
                            "{source} [one-year subscription (包年) {} {} ÷ {hours} h]",
                            q.amount,
                            q.currency.as_str()
                        );
                        (PricingModel::Reserved1y, hourly(q.amount / hours, text))
                    }
                };
                out.offerings[i].prices.insert(model, price);
            }
        }
        (out, skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(quotes: Vec<LiveQuote>) -> LiveEntry {
        LiveEntry {
            cloud: Cloud::Tencent,
            region: "ap-guangzhou".into(),
            instance_type: "GN7.2XLARGE32".into(),
            quoted_on: "2026-11-29".into(),
            quotes,
        }
    }

    fn quote(term: QuoteTerm, amount: f64) -> LiveQuote {
        LiveQuote {
            term,
            amount,
            currency: Currency::CNY,
            api: "cvm:InquiryPriceRunInstances".into(),
        }
    }

    #[test]
    fn live_quotes_replace_snapshot_prices_with_the_live_basis() {
        let base = Catalog::builtin();
        let mut live = LivePrices::default();
        live.upsert(entry(vec![
            quote(QuoteTerm::OnDemand, 9.5),
            quote(QuoteTerm::Subscription(12), 43_800.0),
            quote(QuoteTerm::Subscription(1), 4_000.0),
        ]));
        let (c, skipped) = base.with_live_prices(&live);
        assert!(skipped.is_empty(), "{skipped:?}");
        let o = c
            .offering(Cloud::Tencent, "ap-guangzhou", "GN7.2XLARGE32")
            .unwrap();
        let od = &o.prices[&PricingModel::OnDemand];
        assert_eq!(
            (od.hourly, od.basis, od.as_of.as_str()),
            (9.5, PriceBasis::Live, "2026-11-29")
        );
        assert!(od.source.contains("ap-guangzhou"), "{}", od.source);
        let r = &o.prices[&PricingModel::Reserved1y];
        assert!((r.hourly - 43_800.0 / (12.0 * HOURS_PER_MONTH)).abs() < 1e-9);
        assert_eq!(r.basis, PriceBasis::Live);
        let m = c
            .subscription(Cloud::Tencent, "ap-guangzhou", "GN7.2XLARGE32", 1)
            .unwrap();
        assert_eq!((m.price, m.basis()), (4_000.0, PriceBasis::Live));
        // Another region keeps the snapshot's price.
        let other = c
            .offerings()
            .iter()
            .find(|o| o.instance_type == "GN7.2XLARGE32" && o.region != "ap-guangzhou");
        if let Some(o) = other {
            assert!(o.prices.values().all(|p| p.basis != PriceBasis::Live));
        }
    }

    #[test]
    fn unknown_offerings_are_skipped_and_named() {
        let mut live = LivePrices::default();
        let mut e = entry(vec![quote(QuoteTerm::OnDemand, 1.0)]);
        e.instance_type = "GN99.HUGE".into();
        live.upsert(e);
        let (_, skipped) = Catalog::builtin().with_live_prices(&live);
        assert_eq!(skipped, vec!["tencent ap-guangzhou GN99.HUGE".to_string()]);
    }

    #[test]
    fn the_cache_round_trips_and_bad_files_are_refused_clearly() {
        let dir = std::env::temp_dir().join(format!("gpuform-live-{}", std::process::id()));
        let path = dir.join("sub").join("prices.json");
        assert_eq!(LivePrices::load(&path).unwrap(), LivePrices::default());
        let mut live = LivePrices::default();
        live.upsert(entry(vec![quote(QuoteTerm::Spot, 2.0)]));
        live.save(&path).unwrap();
        assert_eq!(LivePrices::load(&path).unwrap(), live);
        std::fs::write(&path, "{\"format\":1,\"entries\":[{\"cloud\":\"tencent\",\"region\":\"r\",\"instance_type\":\"t\",\"quoted_on\":\"yesterday\",\"quotes\":[]}]}").unwrap();
        let e = LivePrices::load(&path).unwrap_err().to_string();
        assert!(e.contains("quoted_on") && e.contains("hint"), "{e}");
        std::fs::write(&path, "not json").unwrap();
        assert!(LivePrices::load(&path).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
