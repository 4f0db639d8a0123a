//! Logical image names (`ubuntu-22.04-cuda`) → ECS image ids.

use crate::api::Api;
use crate::client::{text, Params};
use crate::AlibabaProvider;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};

/// Logical image names and the public image name prefix each maps to
/// (Alibaba's public images are named like `ubuntu_22_04_x64_20G_alibase_20240130.vhd`).
/// Alibaba's public images carry no NVIDIA driver: `-cuda` names map to the
/// plain OS image, and the driver/CUDA come from user_data (which is what the
/// console's "install GPU driver" option does too).
pub const LOGICAL_IMAGES: &[(&str, &str)] = &[
    ("ubuntu-22.04-cuda", "ubuntu_22_04_x64"),
    ("ubuntu-22.04", "ubuntu_22_04_x64"),
    ("ubuntu-24.04-cuda", "ubuntu_24_04_x64"),
    ("ubuntu-24.04", "ubuntu_24_04_x64"),
    ("ubuntu-20.04-cuda", "ubuntu_20_04_x64"),
    ("ubuntu-20.04", "ubuntu_20_04_x64"),
    ("alinux3", "aliyun_3_x64"),
    ("alibaba-cloud-linux-3", "aliyun_3_x64"),
];

pub fn image_name_prefix(logical: &str) -> Option<&'static str> {
    LOGICAL_IMAGES
        .iter()
        .find(|(n, _)| *n == logical)
        .map(|(_, p)| *p)
}

/// An Alibaba image id: a custom/shared image `m-…`, or a public image id
/// (`…_alibase_….vhd`).
pub fn is_image_id(s: &str) -> bool {
    gpuform_provider::is_raw_image_id(gpuform_provider::Cloud::Alibaba, s)
}

impl AlibabaProvider {
    /// The image id for `image`: an id passes through; a logical name is
    /// looked up with DescribeImages among Alibaba's public images
    /// (`ImageOwnerAlias=system`, name match, newest `CreationTime`), once
    /// per region.
    pub async fn resolve_image(&self, region: &str, image: &str) -> Result<String> {
        if is_image_id(image) {
            return Ok(image.to_string());
        }
        self.images
            .resolve(region, image, || self.look_up_image(region, image))
            .await
    }

    /// The newest public image whose name starts with the prefix of `image`.
    async fn look_up_image(&self, region: &str, image: &str) -> Result<String> {
        let Some(prefix) = image_name_prefix(image) else {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "image `{image}` is neither an Alibaba image id nor a known name ({})",
                    LOGICAL_IMAGES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        let mut p = Params::one("ImageOwnerAlias", "system");
        p.push("ImageName", prefix);
        p.push("OSType", "linux");
        p.push("Architecture", "x86_64");
        p.push("Status", "Available");
        let images = self.describe(region, Api::Image, &p).await?;
        images
            .iter()
            .filter(|i| {
                text(i, "ImageName").starts_with(prefix) || text(i, "ImageId").starts_with(prefix)
            })
            .max_by_key(|i| text(i, "CreationTime"))
            .map(|i| text(i, "ImageId"))
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "no public image named {prefix}* is available in {region} (for `{image}`)"
                    ),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_pass_names_map() {
        assert!(
            is_image_id("m-bp1abc") && is_image_id("ubuntu_22_04_x64_20G_alibase_20240130.vhd")
        );
        assert!(!is_image_id("ubuntu-22.04-cuda"));
        assert_eq!(
            image_name_prefix("ubuntu-22.04-cuda"),
            Some("ubuntu_22_04_x64")
        );
        assert_eq!(image_name_prefix("windows-95"), None);
    }
}
