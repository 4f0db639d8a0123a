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
    ($path:literal) => {
        Source {
            file: concat!("providers/catalog/data/", $path),
            text: include_str!(concat!("../data/", $path)),
        }
    };
}

impl CatalogSources<'static> {
    /// The data files embedded in the binary.
    pub fn builtin() -> CatalogSources<'static> {
        CatalogSources {
            gpus: embedded!("gpus.csv"),
            clouds: vec![
                CloudSources {
                    cloud: Cloud::Aws,
                    instance_types: embedded!("aws/instance_types.csv"),
                    regions: embedded!("aws/regions.csv"),
                    availability: embedded!("aws/availability.csv"),
                    prices: embedded!("aws/prices.csv"),
                    subscriptions: None,
                    notes: Some(embedded!("aws/notes.csv")),
                },
                CloudSources {
                    cloud: Cloud::Alibaba,
                    instance_types: embedded!("alibaba/instance_types.csv"),
                    regions: embedded!("alibaba/regions.csv"),
                    availability: embedded!("alibaba/availability.csv"),
                    prices: embedded!("alibaba/prices.csv"),
                    subscriptions: Some(embedded!("alibaba/subscriptions.csv")),
                    notes: Some(embedded!("alibaba/notes.csv")),
                },
                CloudSources {
                    cloud: Cloud::Tencent,
                    instance_types: embedded!("tencent/instance_types.csv"),
                    regions: embedded!("tencent/regions.csv"),
                    availability: embedded!("tencent/availability.csv"),
                    prices: embedded!("tencent/prices.csv"),
                    subscriptions: Some(embedded!("tencent/subscriptions.csv")),
                    notes: Some(embedded!("tencent/notes.csv")),
                },
                CloudSources {
                    cloud: Cloud::Huawei,
                    instance_types: embedded!("huawei/instance_types.csv"),
                    regions: embedded!("huawei/regions.csv"),
                    availability: embedded!("huawei/availability.csv"),
                    prices: embedded!("huawei/prices.csv"),
                    subscriptions: None,
                    notes: Some(embedded!("huawei/notes.csv")),
                },
            ],
        }
    }
}
