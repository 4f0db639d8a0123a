//! Data-transfer prices: what one GB read out of a cloud's object storage
//! costs when it leaves the bucket's region, per cloud and source region,
//! from `data/transfer_prices.csv` (sources and dates in `data/README.md`).
//!
//! Two kinds: `inter-region` (to another region of the same cloud, over
//! the cloud's own network) and `internet` (out to the internet: another
//! cloud reading the bucket). Clouds bill the source region, so a price is
//! looked up by the bucket's cloud and region. Where no source gives a
//! price there is none: callers say "price unknown", never guess.

use crate::regional::{PriceKey, RegionalPrice, RegionalPrices};
use crate::sources::Source;
use crate::Cloud;
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
        self.name()
    }
}

impl PriceKey for TransferKind {
    const COLUMN: &'static str = "kind";
    const NAMES: &'static [(&'static str, TransferKind)] = &[
        ("inter-region", TransferKind::InterRegion),
        ("internet", TransferKind::Internet),
    ];
    const EMBEDDED: Source<'static> = Source {
        file: "providers/catalog/data/transfer_prices.csv",
        text: include_str!("../data/transfer_prices.csv"),
    };

    fn builtin_cell() -> &'static OnceLock<TransferPrices> {
        static CELL: OnceLock<TransferPrices> = OnceLock::new();
        &CELL
    }
}

/// One price per GB transferred (`price`, [`RegionalPrice::usd`]), for
/// one [`TransferKind`] (`key`).
pub type TransferPrice = RegionalPrice<TransferKind>;

/// Every transfer price the catalog knows.
pub type TransferPrices = RegionalPrices<TransferKind>;

impl TransferPrices {
    /// The price of moving a GB of `kind` out of `region`: the region's
    /// own, else the cloud's region-less one; `None` when no source gives
    /// one.
    pub fn price(&self, cloud: Cloud, region: &str, kind: TransferKind) -> Option<&TransferPrice> {
        self.find(cloud, region, kind.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PriceBasis;

    #[test]
    fn builtin_prices_parse_and_are_sourced_and_dated() {
        let p = TransferPrices::builtin();
        assert!(!p.all().is_empty());
        for price in p.all() {
            assert!(price.price > 0.0, "{price:?}");
            assert!(!price.source.is_empty() && !price.as_of.is_empty());
        }
        let ir = p
            .price(Cloud::Aws, "us-east-1", TransferKind::InterRegion)
            .unwrap();
        assert_eq!((ir.price, ir.basis), (0.02, PriceBasis::Sourced));
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
        assert_eq!((own.price, own.basis), (0.4, PriceBasis::Sourced));
        let any = p
            .price(Cloud::Alibaba, "cn-beijing", TransferKind::Internet)
            .unwrap();
        assert_eq!((any.price, any.basis), (0.5, PriceBasis::Assumed));
        assert!((any.usd(7.2) - 0.5 / 7.2).abs() < 1e-12);
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
