//! Price tables keyed by cloud, region and one more column, with a
//! region-less (`*`) fallback: the object-storage prices (keyed by storage
//! class, [`crate::storage`]) and the transfer prices (keyed by where the
//! data goes, [`crate::transfer`]). The tables differ only in that key
//! column and their unit, so the parsing, the duplicate check and the
//! lookup are written once here.

use crate::load::{
    parse_cloud, parse_currency, parse_price_region, price_table, rows, CatalogError,
};
use crate::sources::Source;
use crate::{Cloud, Currency, PriceBasis};
use std::fmt;
use std::sync::OnceLock;

/// The column that tells a table's prices apart within one cloud and
/// region, and where the table's embedded copy lives.
pub trait PriceKey: Copy + PartialEq + fmt::Debug + Sized + Send + Sync + 'static {
    /// The CSV column holding the key.
    const COLUMN: &'static str;
    /// Every key with the name used in the CSV and in plans.
    const NAMES: &'static [(&'static str, Self)];
    /// The table embedded in the binary.
    const EMBEDDED: Source<'static>;
    /// Where [`RegionalPrices::builtin`] keeps the embedded table once parsed.
    fn builtin_cell() -> &'static OnceLock<RegionalPrices<Self>>;

    /// The key a cell names; else what was expected.
    fn from_cell(cell: &str) -> Result<Self, String> {
        if let Some((_, key)) = Self::NAMES.iter().find(|(name, _)| *name == cell) {
            return Ok(*key);
        }
        let names: Vec<&str> = Self::NAMES.iter().map(|(name, _)| *name).collect();
        let expected = match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "nothing".to_string(),
        };
        Err(format!("expected {expected}, found `{cell}`"))
    }

    /// The name used in the CSV and in plans.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, key)| *key == self)
            .map_or("", |(name, _)| name)
    }
}

/// One price of a [`RegionalPrices`] table.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionalPrice<K> {
    pub cloud: Cloud,
    /// `None`: the source names no region (then the basis is `Assumed`).
    pub region: Option<String>,
    pub key: K,
    /// Per the table's unit: a GB-month stored, a GB transferred.
    pub price: f64,
    pub currency: Currency,
    pub source: String,
    pub as_of: String,
    pub basis: PriceBasis,
}

impl<K> RegionalPrice<K> {
    /// The price in US dollars per the table's unit.
    pub fn usd(&self, cny_per_usd: f64) -> f64 {
        match self.currency {
            Currency::USD => self.price,
            Currency::CNY => self.price / cny_per_usd,
        }
    }
}

/// Every price of one table.
#[derive(Debug, Clone)]
pub struct RegionalPrices<K> {
    prices: Vec<RegionalPrice<K>>,
}

impl<K> Default for RegionalPrices<K> {
    fn default() -> Self {
        RegionalPrices { prices: Vec::new() }
    }
}

impl<K: PriceKey> RegionalPrices<K> {
    /// The table embedded in the binary, parsed once. Panics only if the
    /// embedded file is malformed, which each table's unit test rules out.
    pub fn builtin() -> &'static RegionalPrices<K> {
        K::builtin_cell().get_or_init(|| match RegionalPrices::parse(&K::EMBEDDED) {
            Ok(p) => p,
            Err(e) => panic!("the embedded {} is malformed: {e}", K::EMBEDDED.file),
        })
    }

    /// Parses a table with the columns `cloud, region, <key>, price,
    /// currency, source, as_of`.
    pub fn parse(src: &Source<'_>) -> Result<RegionalPrices<K>, CatalogError> {
        let mut prices: Vec<RegionalPrice<K>> = Vec::new();
        let columns = price_table(&["cloud", "region", K::COLUMN]);
        rows(src, &columns, |row| {
            let cloud = parse_cloud(&row)?;
            let key = K::from_cell(row.req(K::COLUMN)?)
                .map_err(|why| row.err(format!("column `{}`: {why}", K::COLUMN)))?;
            let (region, basis) = parse_price_region(&row)?;
            if prices
                .iter()
                .any(|p| p.cloud == cloud && p.region == region && p.key == key)
            {
                return Err(row.err(format!(
                    "a second {cloud} {} price for region {}",
                    key.name(),
                    region.as_deref().unwrap_or("*")
                )));
            }
            prices.push(RegionalPrice {
                cloud,
                basis,
                region,
                key,
                price: row.f64("price")?,
                currency: parse_currency(&row)?,
                source: row.req("source")?.to_string(),
                as_of: row.req("as_of")?.to_string(),
            });
            Ok(())
        })?;
        Ok(RegionalPrices { prices })
    }

    /// The price for the key named `key` in `region`: the region's own,
    /// else the cloud's region-less one; `None` when no source gives one.
    pub fn find(&self, cloud: Cloud, region: &str, key: &str) -> Option<&RegionalPrice<K>> {
        let of = |r: Option<&str>| {
            self.prices
                .iter()
                .find(|p| p.cloud == cloud && p.key.name() == key && p.region.as_deref() == r)
        };
        of(Some(region)).or_else(|| of(None))
    }

    pub fn all(&self) -> &[RegionalPrice<K>] {
        &self.prices
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageClass;
    use crate::transfer::TransferKind;

    fn round_trips<K: PriceKey>() {
        for (name, key) in K::NAMES {
            assert_eq!(K::from_cell(name), Ok(*key));
            assert_eq!(key.name(), *name);
        }
    }

    #[test]
    fn every_key_reads_back_by_its_name() {
        round_trips::<StorageClass>();
        round_trips::<TransferKind>();
        assert_eq!(TransferKind::Internet.as_str(), "internet");
        assert_eq!(
            StorageClass::from_cell("cold"),
            Err("expected standard, infrequent or archive, found `cold`".to_string())
        );
    }
}
