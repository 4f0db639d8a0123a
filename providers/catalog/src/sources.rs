//! The catalog's input files: what [`Catalog::from_sources`](crate::Catalog::from_sources)
//! reads, and the data files under `data/` embedded in the binary.

use crate::Cloud;

/// One input text and the file name errors should point at.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

/// The files of one cloud.
#[derive(Debug, Clone, Copy)]
pub struct CloudSources<'a> {
    pub cloud: Cloud,
    pub instance_types: Source<'a>,
    pub regions: Source<'a>,
    pub availability: Source<'a>,
    pub prices: Source<'a>,
    pub subscriptions: Option<Source<'a>>,
    pub notes: Option<Source<'a>>,
}

/// Everything [`Catalog::from_sources`] reads.
#[derive(Debug, Clone)]
pub struct CatalogSources<'a> {
    pub gpus: Source<'a>,
    pub clouds: Vec<CloudSources<'a>>,
}

macro_rules! embedded {
    ($($part:literal),+) => {
        Source {
            file: concat!("providers/catalog/data/", $($part),+),
            text: include_str!(concat!("../data/", $($part),+)),
        }
    };
}

/// The files of one cloud under `data/<dir>/`; every cloud has notes, only
/// some have a subscriptions file.
macro_rules! embedded_cloud {
    ($cloud:ident, $dir:literal) => {
        embedded_cloud!(@ $cloud, $dir, None)
    };
    ($cloud:ident, $dir:literal, with subscriptions) => {
        embedded_cloud!(@ $cloud, $dir, Some(embedded!($dir, "/subscriptions.csv")))
    };
    (@ $cloud:ident, $dir:literal, $subscriptions:expr) => {
        CloudSources {
            cloud: Cloud::$cloud,
            instance_types: embedded!($dir, "/instance_types.csv"),
            regions: embedded!($dir, "/regions.csv"),
            availability: embedded!($dir, "/availability.csv"),
            prices: embedded!($dir, "/prices.csv"),
            subscriptions: $subscriptions,
            notes: Some(embedded!($dir, "/notes.csv")),
        }
    };
}

impl CatalogSources<'static> {
    /// The data files embedded in the binary.
    pub fn builtin() -> CatalogSources<'static> {
        CatalogSources {
            gpus: embedded!("gpus.csv"),
            clouds: vec![
                embedded_cloud!(Aws, "aws"),
                embedded_cloud!(Alibaba, "alibaba", with subscriptions),
                embedded_cloud!(Tencent, "tencent", with subscriptions),
                embedded_cloud!(Huawei, "huawei", with subscriptions),
            ],
        }
    }
}
