//! Logical image names (`ubuntu-22.04-cuda`) → Huawei public image ids,
//! resolved once per region and cached.

use crate::client::{list_field, s, Call, Service};
use crate::HuaweiProvider;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};

/// Logical image names → how to find a Huawei public image (IMS "Querying
/// Images", GET /v2/cloudimages, support.huaweicloud.com/api-ims/ims_03_0602.html:
/// `__imagetype=gold` are public images, `__platform` the OS family):
/// (platform, version, with a GPU driver).
fn image_query(logical: &str) -> Option<(&'static str, &'static str, bool)> {
    Some(match logical {
        "ubuntu-20.04" => ("Ubuntu", "20.04", false),
        "ubuntu-22.04" => ("Ubuntu", "22.04", false),
        "ubuntu-24.04" => ("Ubuntu", "24.04", false),
        "ubuntu-20.04-cuda" => ("Ubuntu", "20.04", true),
        "ubuntu-22.04-cuda" => ("Ubuntu", "22.04", true),
        "ubuntu-24.04-cuda" => ("Ubuntu", "24.04", true),
        _ => return None,
    })
}

/// IMS image ids are UUIDs: such a name is used as it is.
pub fn looks_like_uuid(s: &str) -> bool {
    gpuform_provider::is_raw_image_id(gpuform_provider::Cloud::Huawei, s)
}

/// The image id for `logical` in `region`: the newest active public image
/// of its OS version, with a GPU driver (name mentions CUDA, Tesla, NVIDIA)
/// exactly when the logical name ends in `-cuda`.
pub async fn image_id(p: &HuaweiProvider, region: &str, logical: &str) -> Result<String> {
    if looks_like_uuid(logical) {
        return Ok(logical.to_string());
    }
    p.images
        .resolve(region, logical, || look_up(p, region, logical))
        .await
}

/// The newest public image of the logical name's OS version (see [`image_id`]).
async fn look_up(p: &HuaweiProvider, region: &str, logical: &str) -> Result<String> {
    let (platform, version, gpu) = image_query(logical).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("unknown image `{logical}` for Huawei Cloud\n  hint: use ubuntu-20.04/22.04/24.04 (add -cuda for a GPU driver image) or an image id (UUID)"),
        )
    })?;
    let v = p
        .send(
            Call::new(Service::Ims, region, "GET", "/v2/cloudimages".to_string())
                .query("__imagetype", "gold")
                .query("__platform", platform)
                .query("status", "active")
                .query("limit", "100"),
        )
        .await?;
    let mut best: Option<(String, String)> = None;
    for img in &list_field(&v, "images", "listing public images")? {
        let lower = s(img, "name").to_ascii_lowercase();
        let has_driver = ["cuda", "tesla", "gpu driver", "nvidia"]
            .iter()
            .any(|w| lower.contains(w));
        if !lower.contains(version) || has_driver != gpu {
            continue;
        }
        let created = s(img, "created_at");
        if best.as_ref().is_none_or(|(c, _)| created > *c) {
            best = Some((created, s(img, "id")));
        }
    }
    best.map(|(_, id)| id).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "no public {platform} {version}{} image found in {region}",
                if gpu { " image with a GPU driver" } else { "" }
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape() {
        assert!(looks_like_uuid("0a1b2c3d-0000-1111-2222-333344445555"));
        assert!(!looks_like_uuid("ubuntu-22.04-cuda"));
    }
}
