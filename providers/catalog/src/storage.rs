//! Object-storage prices: what one GB stored for a month costs, per cloud,
//! region and storage class (`standard`, `infrequent`, `archive`), from
//! `data/storage_prices.csv` (sources and dates in `data/README.md`).
//!
//! Kept apart from the GPU catalog: a bucket's cost is a monthly line of
//! its own in a plan, not an hourly instance price.

use crate::regional::{PriceKey, RegionalPrice, RegionalPrices};
use crate::sources::Source;
use crate::Cloud;
use std::sync::OnceLock;

/// The storage classes a price can be for (the spec's names).
pub const STORAGE_CLASSES: [&str; 3] = ["standard", "infrequent", "archive"];

/// The storage class of a bucket's objects, in gpuform's neutral words:
/// the one type the spec, the typed requests and the storage prices use
/// (each cloud maps it to its own names). Also the key of a storage price.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum StorageClass {
    /// Frequently read data (default).
    #[default]
    Standard,
    /// Read about once a month or less (S3 Standard-IA, OSS IA, COS
    /// STANDARD_IA, OBS WARM).
    Infrequent,
    /// Kept for years, read rarely, restored before reading (S3 Glacier
    /// Flexible Retrieval, OSS Archive, COS ARCHIVE, OBS COLD).
    Archive,
}

impl StorageClass {
    pub const ALL: [StorageClass; 3] = [
        StorageClass::Standard,
        StorageClass::Infrequent,
        StorageClass::Archive,
    ];

    /// The spec's name: one of [`STORAGE_CLASSES`].
    pub fn as_str(self) -> &'static str {
        match self {
            StorageClass::Standard => STORAGE_CLASSES[0],
            StorageClass::Infrequent => STORAGE_CLASSES[1],
            StorageClass::Archive => STORAGE_CLASSES[2],
        }
    }

    pub fn parse(s: &str) -> Option<StorageClass> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// A cloud's object storage as its own documentation names it: the
/// product, its names of the neutral classes (in [`StorageClass::ALL`]'s
/// order) and its service endpoint host per region. The one table that the
/// clouds' bucket code (OSS/COS/OBS dialects) and `gpuform migrate` read.
#[derive(Debug, Clone, Copy)]
pub struct ObjectService {
    pub product: &'static str,
    pub classes: [&'static str; 3],
    /// The service's endpoint host in a region.
    pub host: fn(&str) -> String,
}

impl ObjectService {
    /// The cloud's name of a neutral class.
    pub fn class_name(&self, c: StorageClass) -> &'static str {
        match c {
            StorageClass::Standard => self.classes[0],
            StorageClass::Infrequent => self.classes[1],
            StorageClass::Archive => self.classes[2],
        }
    }

    /// The neutral class of a cloud's name (case-insensitive); a class
    /// gpuform does not make (cold archive, deep archive) is `None`.
    pub fn class_of(&self, name: &str) -> Option<StorageClass> {
        StorageClass::ALL
            .into_iter()
            .find(|c| self.class_name(*c).eq_ignore_ascii_case(name))
    }
}

/// Amazon S3 (Standard-IA and Glacier Flexible Retrieval are what gpuform's
/// lifecycle transitions use).
pub const S3: ObjectService = ObjectService {
    product: "S3",
    classes: ["STANDARD", "STANDARD_IA", "GLACIER"],
    host: |region| format!("s3.{region}.amazonaws.com"),
};

/// Alibaba Cloud OSS (https://www.alibabacloud.com/help/en/oss/user-guide/overview-53).
pub const OSS: ObjectService = ObjectService {
    product: "OSS",
    classes: ["Standard", "IA", "Archive"],
    host: |region| format!("oss-{region}.aliyuncs.com"),
};

/// Tencent Cloud COS (https://www.tencentcloud.com/document/product/436/30925).
pub const COS: ObjectService = ObjectService {
    product: "COS",
    classes: ["STANDARD", "STANDARD_IA", "ARCHIVE"],
    host: |region| format!("cos.{region}.myqcloud.com"),
};

/// Huawei Cloud OBS (https://support.huaweicloud.com/intl/en-us/api-obs/obs_04_0044.html).
pub const OBS: ObjectService = ObjectService {
    product: "OBS",
    classes: ["STANDARD", "WARM", "COLD"],
    host: |region| format!("obs.{region}.myhuaweicloud.com"),
};

/// Each cloud's object storage.
pub fn object_service(cloud: Cloud) -> &'static ObjectService {
    match cloud {
        Cloud::Aws => &S3,
        Cloud::Alibaba => &OSS,
        Cloud::Tencent => &COS,
        Cloud::Huawei => &OBS,
    }
}

impl PriceKey for StorageClass {
    const COLUMN: &'static str = "class";
    const NAMES: &'static [(&'static str, StorageClass)] = &[
        (STORAGE_CLASSES[0], StorageClass::Standard),
        (STORAGE_CLASSES[1], StorageClass::Infrequent),
        (STORAGE_CLASSES[2], StorageClass::Archive),
    ];
    const EMBEDDED: Source<'static> = Source {
        file: "providers/catalog/data/storage_prices.csv",
        text: include_str!("../data/storage_prices.csv"),
    };

    fn builtin_cell() -> &'static OnceLock<StoragePrices> {
        static CELL: OnceLock<StoragePrices> = OnceLock::new();
        &CELL
    }
}

/// One price per GB-month (`price`, [`RegionalPrice::usd`]), for one
/// storage class (`key`).
pub type StoragePrice = RegionalPrice<StorageClass>;

/// Every storage price the catalog knows.
pub type StoragePrices = RegionalPrices<StorageClass>;

impl StoragePrices {
    /// The price of `class` in `region`: the region's own, else the
    /// cloud's region-less one; `None` when no source gives one.
    pub fn price(&self, cloud: Cloud, region: &str, class: &str) -> Option<&StoragePrice> {
        self.find(cloud, region, class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PriceBasis;

    #[test]
    fn builtin_prices_parse_and_are_sourced_and_dated() {
        let p = StoragePrices::builtin();
        assert!(!p.all().is_empty());
        for price in p.all() {
            assert!(price.price > 0.0, "{price:?}");
            assert!(!price.source.is_empty() && !price.as_of.is_empty());
        }
        let s3 = p.price(Cloud::Aws, "us-east-1", "standard").unwrap();
        assert_eq!(s3.price, 0.023);
        assert_eq!(s3.basis, PriceBasis::Sourced);
        // Archive is cheaper than infrequent, cheaper than standard.
        let ia = p.price(Cloud::Aws, "us-east-1", "infrequent").unwrap();
        let ar = p.price(Cloud::Aws, "us-east-1", "archive").unwrap();
        assert!(ar.price < ia.price && ia.price < s3.price);
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
        assert_eq!((own.price, own.basis), (0.11, PriceBasis::Sourced));
        let any = p.price(Cloud::Alibaba, "cn-beijing", "standard").unwrap();
        assert_eq!((any.price, any.basis), (0.12, PriceBasis::Assumed));
        assert!((any.usd(7.2) - 0.12 / 7.2).abs() < 1e-12);
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
