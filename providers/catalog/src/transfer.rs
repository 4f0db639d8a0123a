//! Data-transfer prices: what one GB read out of a cloud's object storage
//! costs when it leaves the bucket's region, per cloud and source region,
//! from `data/transfer_prices.csv` (sources and dates in `data/README.md`).
//!
//! Two kinds: `inter-region` (to another region of the same cloud, over
//! the cloud's own network) and `internet` (out to the internet: another
//! cloud reading the bucket). Clouds bill the source region, so a price is
//! looked up by the bucket's cloud and region. Where no source gives a
//! price there is none: callers say "price unknown", never guess.

use crate::load::{parse_cloud, parse_currency, parse_price_region, rows, CatalogError};
use crate::sources::Source;
use crate::{Cloud, Currency, PriceBasis};
use std::sync::OnceLock;

/// Where the data goes when it leaves the bucket's region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferKind {
    /// Another region of the same cloud.
    InterRegion,
    /// Out to the internet (another cloud).
    Internet,
}

impl TransferKind {
    /// The name used in the CSV and in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            TransferKind::InterRegion => "inter-region",
            TransferKind::Internet => "internet",
        }
    }
}

/// One price per GB transferred.
#[derive(Debug, Clone, PartialEq)]
pub struct TransferPrice {
    pub cloud: Cloud,
    /// `None`: the source names no region (then the basis is `Assumed`).
    pub region: Option<String>,
    pub kind: TransferKind,
    pub per_gb: f64,
    pub currency: Currency,
    pub source: String,
    pub as_of: String,
    pub basis: PriceBasis,
}

impl TransferPrice {
    /// The price in US dollars per GB.
    pub fn usd_per_gb(&self, cny_per_usd: f64) -> f64 {
        match self.currency {
            Currency::USD => self.per_gb,
            Currency::CNY => self.per_gb / cny_per_usd,
        }
    }
}

/// Every transfer price the catalog knows.
#[derive(Debug, Clone, Default)]
pub struct TransferPrices {
    prices: Vec<TransferPrice>,
}

static BUILTIN: OnceLock<TransferPrices> = OnceLock::new();

const BUILTIN_SOURCE: Source<'static> = Source {
    file: "providers/catalog/data/transfer_prices.csv",
    text: include_str!("../data/transfer_prices.csv"),
};

impl TransferPrices {
    /// The prices embedded in the binary, parsed once. Panics only if the
    /// embedded file is malformed, which a unit test rules out.
    pub fn builtin() -> &'static TransferPrices {
        BUILTIN.get_or_init(|| match TransferPrices::parse(&BUILTIN_SOURCE) {
            Ok(p) => p,
            Err(e) => panic!("the embedded transfer prices are malformed: {e}"),
        })
    }

    /// Parses a `transfer_prices.csv` text.
    pub fn parse(src: &Source<'_>) -> Result<TransferPrices, CatalogError> {
        let mut prices: Vec<TransferPrice> = Vec::new();
        rows(
            src,
            &[
                "cloud", "region", "kind", "price", "currency", "source", "as_of",
            ],
            |row| {
                let cloud = parse_cloud(&row)?;
                let kind = match row.req("kind")? {
                    "inter-region" => TransferKind::InterRegion,
                    "internet" => TransferKind::Internet,
                    other => {
                        return Err(row.err(format!(
                            "column `kind`: expected inter-region or internet, found `{other}`"
                        )))
                    }
                };
                let (region, basis) = parse_price_region(&row)?;
                if prices
                    .iter()
                    .any(|p| p.cloud == cloud && p.region == region && p.kind == kind)
                {
                    return Err(row.err(format!(
                        "a second {cloud} {} price for region {}",
                        kind.as_str(),
                        region.as_deref().unwrap_or("*")
                    )));
                }
                prices.push(TransferPrice {
                    cloud,
                    basis,
                    region,
                    kind,
                    per_gb: row.f64("price")?,
                    currency: parse_currency(&row)?,
                    source: row.req("source")?.to_string(),
                    as_of: row.req("as_of")?.to_string(),
                });
                Ok(())
            },
        )?;
        Ok(TransferPrices { prices })
    }

    /// The price of moving a GB of `kind` out of `region`: the region's
    /// own, else the cloud's region-less one; `None` when no source gives
    /// one.
    pub fn price(&self, cloud: Cloud, region: &str, kind: TransferKind) -> Option<&TransferPrice> {
        let of = |r: Option<&str>| {
            self.prices
                .iter()
                .find(|p| p.cloud == cloud && p.kind == kind && p.region.as_deref() == r)
        };
        of(Some(region)).or_else(|| of(None))
    }

    pub fn all(&self) -> &[TransferPrice] {
        &self.prices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prices_parse_and_are_sourced_and_dated() {
        let p = TransferPrices::builtin();
        assert!(!p.all().is_empty());
        for price in p.all() {
            assert!(price.per_gb > 0.0, "{price:?}");
            assert!(!price.source.is_empty() && !price.as_of.is_empty());
        }
        let ir = p
            .price(Cloud::Aws, "us-east-1", TransferKind::InterRegion)
            .unwrap();
        assert_eq!((ir.per_gb, ir.basis), (0.02, PriceBasis::Sourced));
        // No source for leaving Huawei OBS: no price, not a guess.
        assert!(p
            .price(Cloud::Huawei, "cn-north-4", TransferKind::Internet)
            .is_none());
    }

    #[test]
    fn a_region_less_price_is_the_fallback_and_labelled_assumed() {
        let src = Source {
            file: "t.csv",
            text: "cloud,region,kind,price,currency,source,as_of\n\
                   alibaba,*,internet,0.5,CNY,s,2026\n\
                   alibaba,cn-hangzhou,internet,0.4,CNY,s,2026\n",
        };
        let p = TransferPrices::parse(&src).unwrap();
        let own = p
            .price(Cloud::Alibaba, "cn-hangzhou", TransferKind::Internet)
            .unwrap();
        assert_eq!((own.per_gb, own.basis), (0.4, PriceBasis::Sourced));
        let any = p
            .price(Cloud::Alibaba, "cn-beijing", TransferKind::Internet)
            .unwrap();
        assert_eq!((any.per_gb, any.basis), (0.5, PriceBasis::Assumed));
        assert!((any.usd_per_gb(7.2) - 0.5 / 7.2).abs() < 1e-12);
        assert!(p
            .price(Cloud::Alibaba, "cn-beijing", TransferKind::InterRegion)
            .is_none());
    }

    #[test]
    fn bad_rows_are_located_errors() {
        let bad = |body: &str| {
            let text = format!("cloud,region,kind,price,currency,source,as_of\n{body}\n");
            TransferPrices::parse(&Source {
                file: "t.csv",
                text: &text,
            })
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            bad("aws,us-east-1,egress,0.1,USD,s,2026"),
            "t.csv:2: column `kind`: expected inter-region or internet, found `egress`"
        );
        assert_eq!(
            bad("aws,*,internet,0.1,USD,s,2026\naws,*,internet,0.2,USD,s,2026"),
            "t.csv:3: a second aws internet price for region *"
        );
    }
}
