//! Object-storage prices: what one GB stored for a month costs, per cloud,
//! region and storage class (`standard`, `infrequent`, `archive`), from
//! `data/storage_prices.csv` (sources and dates in `data/README.md`).
//!
//! Kept apart from the GPU catalog: a bucket's cost is a monthly line of
//! its own in a plan, not an hourly instance price.

use crate::load::{parse_cloud, parse_currency, parse_price_region, rows, CatalogError};
use crate::sources::Source;
use crate::{Cloud, Currency, PriceBasis};
use std::sync::OnceLock;

/// The storage classes a price can be for (the spec's names).
pub const STORAGE_CLASSES: [&str; 3] = ["standard", "infrequent", "archive"];

/// One price per GB-month.
#[derive(Debug, Clone, PartialEq)]
pub struct StoragePrice {
    pub cloud: Cloud,
    /// `None`: the source names no region (then the basis is `Assumed`).
    pub region: Option<String>,
    pub class: String,
    pub per_gb_month: f64,
    pub currency: Currency,
    pub source: String,
    pub as_of: String,
    pub basis: PriceBasis,
}

impl StoragePrice {
    /// The price in US dollars per GB-month.
    pub fn usd_per_gb_month(&self, cny_per_usd: f64) -> f64 {
        match self.currency {
            Currency::USD => self.per_gb_month,
            Currency::CNY => self.per_gb_month / cny_per_usd,
        }
    }
}

/// Every storage price the catalog knows.
#[derive(Debug, Clone, Default)]
pub struct StoragePrices {
    prices: Vec<StoragePrice>,
}

static BUILTIN: OnceLock<StoragePrices> = OnceLock::new();

const BUILTIN_SOURCE: Source<'static> = Source {
    file: "providers/catalog/data/storage_prices.csv",
    text: include_str!("../data/storage_prices.csv"),
};

impl StoragePrices {
    /// The prices embedded in the binary, parsed once. Panics only if the
    /// embedded file is malformed, which a unit test rules out.
    pub fn builtin() -> &'static StoragePrices {
        BUILTIN.get_or_init(|| match StoragePrices::parse(&BUILTIN_SOURCE) {
            Ok(p) => p,
            Err(e) => panic!("the embedded storage prices are malformed: {e}"),
        })
    }

    /// Parses a `storage_prices.csv` text.
    pub fn parse(src: &Source<'_>) -> Result<StoragePrices, CatalogError> {
        let mut prices: Vec<StoragePrice> = Vec::new();
        rows(
            src,
            &[
                "cloud", "region", "class", "price", "currency", "source", "as_of",
            ],
            |row| {
                let cloud = parse_cloud(&row)?;
                let class = row.req("class")?;
                if !STORAGE_CLASSES.contains(&class) {
                    return Err(row.err(format!(
                        "column `class`: expected standard, infrequent or archive, found `{class}`"
                    )));
                }
                let (region, basis) = parse_price_region(&row)?;
                if prices
                    .iter()
                    .any(|p| p.cloud == cloud && p.region == region && p.class == class)
                {
                    return Err(row.err(format!(
                        "a second {cloud} {class} price for region {}",
                        region.as_deref().unwrap_or("*")
                    )));
                }
                prices.push(StoragePrice {
                    cloud,
                    basis,
                    region,
                    class: class.to_string(),
                    per_gb_month: row.f64("price")?,
                    currency: parse_currency(&row)?,
                    source: row.req("source")?.to_string(),
                    as_of: row.req("as_of")?.to_string(),
                });
                Ok(())
            },
        )?;
        Ok(StoragePrices { prices })
    }

    /// The price of `class` in `region`: the region's own, else the
    /// cloud's region-less one; `None` when no source gives one.
    pub fn price(&self, cloud: Cloud, region: &str, class: &str) -> Option<&StoragePrice> {
        let of = |r: Option<&str>| {
            self.prices
                .iter()
                .find(|p| p.cloud == cloud && p.class == class && p.region.as_deref() == r)
        };
        of(Some(region)).or_else(|| of(None))
    }

    pub fn all(&self) -> &[StoragePrice] {
        &self.prices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prices_parse_and_are_sourced_and_dated() {
        let p = StoragePrices::builtin();
        assert!(!p.all().is_empty());
        for price in p.all() {
            assert!(price.per_gb_month > 0.0, "{price:?}");
            assert!(!price.source.is_empty() && !price.as_of.is_empty());
        }
        let s3 = p.price(Cloud::Aws, "us-east-1", "standard").unwrap();
        assert_eq!(s3.per_gb_month, 0.023);
        assert_eq!(s3.basis, PriceBasis::Sourced);
        // Archive is cheaper than infrequent, cheaper than standard.
        let ia = p.price(Cloud::Aws, "us-east-1", "infrequent").unwrap();
        let ar = p.price(Cloud::Aws, "us-east-1", "archive").unwrap();
        assert!(ar.per_gb_month < ia.per_gb_month && ia.per_gb_month < s3.per_gb_month);
    }

    #[test]
    fn a_region_less_price_is_the_fallback_and_labelled_assumed() {
        let src = Source {
            file: "t.csv",
            text: "cloud,region,class,price,currency,source,as_of\n\
                   alibaba,*,standard,0.12,CNY,s,2026\n\
                   alibaba,cn-hangzhou,standard,0.11,CNY,s,2026\n",
        };
        let p = StoragePrices::parse(&src).unwrap();
        let own = p.price(Cloud::Alibaba, "cn-hangzhou", "standard").unwrap();
        assert_eq!((own.per_gb_month, own.basis), (0.11, PriceBasis::Sourced));
        let any = p.price(Cloud::Alibaba, "cn-beijing", "standard").unwrap();
        assert_eq!((any.per_gb_month, any.basis), (0.12, PriceBasis::Assumed));
        assert!((any.usd_per_gb_month(7.2) - 0.12 / 7.2).abs() < 1e-12);
        assert!(p.price(Cloud::Alibaba, "cn-beijing", "archive").is_none());
        assert!(p.price(Cloud::Aws, "us-east-1", "standard").is_none());
    }

    #[test]
    fn bad_rows_are_located_errors() {
        let bad = |body: &str| {
            let text = format!("cloud,region,class,price,currency,source,as_of\n{body}\n");
            StoragePrices::parse(&Source {
                file: "t.csv",
                text: &text,
            })
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            bad("aws,us-east-1,cold,0.1,USD,s,2026"),
            "t.csv:2: column `class`: expected standard, infrequent or archive, found `cold`"
        );
        assert_eq!(
            bad("gcp,x,standard,0.1,USD,s,2026"),
            "t.csv:2: unknown cloud `gcp`"
        );
        assert!(bad("aws,us-east-1,standard,-1,USD,s,2026").contains("non-negative number"));
        assert_eq!(
            bad("aws,us-east-1,standard,0.1,USD,s,2026\naws,us-east-1,standard,0.2,USD,s,2026"),
            "t.csv:3: a second aws standard price for region us-east-1"
        );
    }
}
