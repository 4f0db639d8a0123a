//! Logical image names → Tencent public images.
//!
//! Resolved with CVM DescribeImages (https://www.tencentcloud.com/document/api/213/33272)
//! filtered by `image-type = PUBLIC_IMAGE` and the exact public image name,
//! newest `CreatedTime` first. The two sites spell the architecture of the same
//! public image differently: "Ubuntu Server 22.04 LTS 64bit" on the
//! international site, "Ubuntu Server 22.04 LTS 64位" on the China site (its
//! image list, https://cloud.tencent.com/document/api/213/1272: "CentOS 7.2 64位",
//! "Ubuntu Server 14.04.1 LTS 64位"), so both names are asked for and accepted.
//!
//! Tencent's public images carry no CUDA stack: the `-cuda` names map to the
//! same Ubuntu image (GPU driver and CUDA are then installed by the user's
//! `user_data`, or use a custom / marketplace `img-…` id, which passes
//! through unchanged).

use crate::client::{s, CVM};
use crate::TencentProvider;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
use serde_json::{json, Map};

/// (logical name, public image names as the two sites write them).
pub const TABLE: &[(&str, &[&str])] = &[
    ("ubuntu-20.04", UBUNTU_20),
    ("ubuntu-20.04-cuda", UBUNTU_20),
    ("ubuntu-22.04", UBUNTU_22),
    ("ubuntu-22.04-cuda", UBUNTU_22),
    ("ubuntu-24.04", UBUNTU_24),
    ("ubuntu-24.04-cuda", UBUNTU_24),
    ("tencentos-3", &["TencentOS Server 3.1 (TK4)"]),
];

const UBUNTU_20: &[&str] = &[
    "Ubuntu Server 20.04 LTS 64bit",
    "Ubuntu Server 20.04 LTS 64位",
];
const UBUNTU_22: &[&str] = &[
    "Ubuntu Server 22.04 LTS 64bit",
    "Ubuntu Server 22.04 LTS 64位",
];
const UBUNTU_24: &[&str] = &[
    "Ubuntu Server 24.04 LTS 64bit",
    "Ubuntu Server 24.04 LTS 64位",
];

/// Every spelling of the public image a logical name stands for.
pub fn public_names(logical: &str) -> Option<&'static [&'static str]> {
    TABLE.iter().find(|(l, _)| *l == logical).map(|(_, n)| *n)
}

pub fn is_raw_id(image: &str) -> bool {
    gpuform_provider::is_raw_image_id(gpuform_provider::Cloud::Tencent, image)
}

pub fn known_names() -> String {
    TABLE.iter().map(|(l, _)| *l).collect::<Vec<_>>().join(", ")
}

/// The image id for `image` in `region`: an `img-…` id as it is, a logical
/// name by DescribeImages (cached per region).
pub(crate) async fn image_id(p: &TencentProvider, region: &str, image: &str) -> Result<String> {
    if is_raw_id(image) {
        return Ok(image.to_string());
    }
    let key = (region.to_string(), image.to_string());
    if let Some(id) = p.images.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(id);
    }
    let names = public_names(image).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "image `{image}` has no Tencent Cloud mapping; use one of {} or an `img-…` id",
                known_names()
            ),
        )
    })?;
    let mut body = Map::new();
    body.insert(
        "Filters".into(),
        json!([
            {"Name": "image-type", "Values": ["PUBLIC_IMAGE"]},
            {"Name": "image-name", "Values": names},
        ]),
    );
    let found = p
        .client
        .describe_all(CVM, "DescribeImages", region, body, "ImageSet")
        .await?;
    // `image-name` is a fuzzy filter: keep exact names (either site's
    // spelling), newest first.
    let best = found
        .iter()
        .filter(|i| names.contains(&s(i, "ImageName")))
        .max_by(|a, b| s(a, "CreatedTime").cmp(s(b, "CreatedTime")))
        .map(|i| s(i, "ImageId").to_string())
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "no public image named {} (for `{image}`) in {region}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            )
        })?;
    if let Ok(mut m) = p.images.lock() {
        m.insert(key, best.clone());
    }
    Ok(best)
}
