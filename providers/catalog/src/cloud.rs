//! The clouds gpuform knows, by their neutral names.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A cloud whose API gpuform speaks. The sandbox is not a cloud of its own:
/// it simulates one of these (its catalog, regions and zones) offline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cloud {
    Aws,
    Alibaba,
    Tencent,
    Huawei,
}

impl Cloud {
    pub const ALL: [Cloud; 4] = [Cloud::Aws, Cloud::Alibaba, Cloud::Tencent, Cloud::Huawei];

    pub fn as_str(self) -> &'static str {
        match self {
            Cloud::Aws => "aws",
            Cloud::Alibaba => "alibaba",
            Cloud::Tencent => "tencent",
            Cloud::Huawei => "huawei",
        }
    }
}

impl fmt::Display for Cloud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Cloud {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "aws" => Ok(Cloud::Aws),
            "alibaba" | "aliyun" => Ok(Cloud::Alibaba),
            "tencent" => Ok(Cloud::Tencent),
            "huawei" => Ok(Cloud::Huawei),
            other => Err(format!(
                "unknown cloud `{other}`; expected one of aws, alibaba, tencent, huawei"
            )),
        }
    }
}
