//! Logical image names (`ubuntu-22.04-cuda`, `amazon-linux-2023`, ...) mapped
//! to AMIs: DescribeImages by owner and name pattern, newest first. An
//! explicit `ami-...` id is used as it is.

use crate::client::filter;
use crate::errors::{map_sdk, sent, Op};
use crate::AwsProvider;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};

/// Canonical's AWS account, which publishes the official Ubuntu AMIs.
pub const CANONICAL: &str = "099720109477";

/// How to find the AMI for a logical name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageQuery {
    /// `Owners` of DescribeImages: an account id or an alias (`amazon`).
    pub owners: Vec<String>,
    /// The `name` filter, with `*` wildcards.
    pub name_pattern: String,
    /// The `architecture` filter (`x86_64` or `arm64`).
    pub architecture: String,
}

/// The logical names gpuform knows on AWS, for error messages.
pub const LOGICAL_NAMES: &[&str] = &[
    "ubuntu-22.04-cuda",
    "ubuntu-24.04-cuda",
    "amazon-linux-2023-cuda",
    "ubuntu-20.04",
    "ubuntu-22.04",
    "ubuntu-24.04",
    "amazon-linux-2023",
    "amazon-linux-2",
];

/// True when `image` is a raw AMI id rather than a logical name.
pub fn is_ami_id(image: &str) -> bool {
    gpuform_provider::is_raw_image_id(gpuform_provider::Cloud::Aws, image)
}

/// The query for a logical image name on an architecture (`x86_64` or
/// `arm64`, as DescribeInstanceTypes reports it), or `None` if the name is
/// unknown.
pub fn query_for(logical: &str, architecture: &str) -> Option<ImageQuery> {
    let arm = architecture == "arm64";
    // Ubuntu names the architectures the Debian way.
    let deb = if arm { "arm64" } else { "amd64" };
    let arch = if arm { "arm64" } else { "x86_64" };
    let dlami = |os: &str| {
        // AWS Deep Learning Base AMIs: NVIDIA driver, CUDA, EFA installer.
        if arm {
            format!("Deep Learning ARM64 Base OSS Nvidia Driver GPU AMI ({os}) *")
        } else {
            format!("Deep Learning Base OSS Nvidia Driver GPU AMI ({os}) *")
        }
    };
    let (owner, pattern) = match logical {
        "ubuntu-22.04-cuda" => ("amazon", dlami("Ubuntu 22.04")),
        "ubuntu-24.04-cuda" => ("amazon", dlami("Ubuntu 24.04")),
        "amazon-linux-2023-cuda" => ("amazon", dlami("Amazon Linux 2023")),
        "ubuntu-20.04" => (
            CANONICAL,
            format!("ubuntu/images/hvm-ssd/ubuntu-focal-20.04-{deb}-server-*"),
        ),
        "ubuntu-22.04" => (
            CANONICAL,
            format!("ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-{deb}-server-*"),
        ),
        "ubuntu-24.04" => (
            CANONICAL,
            format!("ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-{deb}-server-*"),
        ),
        // The standard AL2023 AMI on the default (6.1) kernel, not `minimal`.
        "amazon-linux-2023" => ("amazon", format!("al2023-ami-2023.*-kernel-6.1-{arch}")),
        "amazon-linux-2" => ("amazon", format!("amzn2-ami-hvm-2.0.*-{arch}-gp2")),
        _ => return None,
    };
    Some(ImageQuery {
        owners: vec![owner.to_string()],
        name_pattern: pattern,
        architecture: arch.to_string(),
    })
}

/// One candidate image from DescribeImages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub image_id: String,
    pub name: String,
    pub creation_date: String,
    pub root_device_name: Option<String>,
}

/// The newest candidate: latest CreationDate (ISO 8601, so it sorts as a
/// string), then the greatest name (AMI names end in a build date), then id
/// for a stable choice.
pub fn newest(mut candidates: Vec<Candidate>) -> Option<Candidate> {
    candidates.sort_by(|a, b| {
        (&a.creation_date, &a.name, &a.image_id).cmp(&(&b.creation_date, &b.name, &b.image_id))
    });
    candidates.pop()
}

/// An image resolved in one region: the AMI and its root device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedImage {
    image_id: String,
    root_device_name: Option<String>,
}

impl AwsProvider {
    /// The AMI for an image (a logical name or an `ami-...` id) on an
    /// architecture, with its root device name. Cached per region.
    pub async fn resolve_image(
        &self,
        region: &str,
        image: &str,
        architecture: &str,
    ) -> Result<(String, Option<String>)> {
        let key = (
            region.to_string(),
            image.to_string(),
            architecture.to_string(),
        );
        if let Some(r) = self
            .images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok((r.image_id.clone(), r.root_device_name.clone()));
        }
        let resolved = if is_ami_id(image) {
            self.describe_ami(region, image).await?
        } else {
            self.newest_ami(region, image, architecture).await?
        };
        tracing::debug!(region, image, ami = %resolved.image_id, "image resolved");
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, resolved.clone());
        Ok((resolved.image_id, resolved.root_device_name))
    }

    /// An explicit AMI id, checked to exist here.
    async fn describe_ami(&self, region: &str, image: &str) -> Result<ResolvedImage> {
        let request = self.ec2_client(region).describe_images().image_ids(image);
        let out = sent("DescribeImages", Op::Create, request.send()).await?;
        let img = out.images().first().ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "image `{image}` does not exist in {region} or is not visible to this account"
                ),
            )
            .with_code("InvalidAMIID.NotFound")
        })?;
        Ok(ResolvedImage {
            image_id: image.to_string(),
            root_device_name: img.root_device_name().map(str::to_string),
        })
    }

    /// The newest AMI of a logical name.
    async fn newest_ami(
        &self,
        region: &str,
        image: &str,
        architecture: &str,
    ) -> Result<ResolvedImage> {
        let q = query_for(image, architecture).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "unknown image `{image}` on aws; use one of {} or an AMI id (ami-...)",
                    LOGICAL_NAMES.join(", ")
                ),
            )
        })?;
        let images: Vec<_> = self
            .ec2_client(region)
            .describe_images()
            .set_owners(Some(q.owners.clone()))
            .filters(filter("name", [q.name_pattern.clone()]))
            .filters(filter("architecture", [q.architecture.clone()]))
            .filters(filter("state", ["available".to_string()]))
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| map_sdk("DescribeImages", Op::Create, e))?;
        let candidates = images.iter().map(|img| Candidate {
            image_id: img.image_id().unwrap_or_default().to_string(),
            name: img.name().unwrap_or_default().to_string(),
            creation_date: img.creation_date().unwrap_or_default().to_string(),
            root_device_name: img.root_device_name().map(str::to_string),
        });
        let best = newest(candidates.collect()).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "no AMI for image `{image}` ({}) in {region}: none named `{}` owned by {}; hint: give an AMI id (ami-...) instead",
                    q.architecture,
                    q.name_pattern,
                    q.owners.join(",")
                ),
            )
            .with_code("InvalidAMIID.NotFound")
        })?;
        Ok(ResolvedImage {
            image_id: best.image_id,
            root_device_name: best.root_device_name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_names_map_to_owner_and_pattern() {
        let q = query_for("ubuntu-22.04-cuda", "x86_64").unwrap();
        assert_eq!(q.owners, vec!["amazon"]);
        assert_eq!(
            q.name_pattern,
            "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"
        );
        assert_eq!(q.architecture, "x86_64");
        let q = query_for("ubuntu-22.04-cuda", "arm64").unwrap();
        assert!(q.name_pattern.starts_with("Deep Learning ARM64"));
        assert_eq!(q.architecture, "arm64");

        let q = query_for("ubuntu-22.04", "x86_64").unwrap();
        assert_eq!(q.owners, vec![CANONICAL]);
        assert_eq!(
            q.name_pattern,
            "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*"
        );
        let q = query_for("ubuntu-22.04", "arm64").unwrap();
        assert_eq!(
            q.name_pattern,
            "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-arm64-server-*"
        );

        let q = query_for("amazon-linux-2023", "x86_64").unwrap();
        assert_eq!(q.owners, vec!["amazon"]);
        assert_eq!(q.name_pattern, "al2023-ami-2023.*-kernel-6.1-x86_64");

        assert!(query_for("windows-3.1", "x86_64").is_none());
        for name in LOGICAL_NAMES {
            assert!(query_for(name, "x86_64").is_some(), "{name}");
        }
    }

    #[test]
    fn ami_ids_are_recognised() {
        assert!(is_ami_id("ami-03c3da4cfa8e8943a"));
        assert!(is_ami_id("ami-1e749f67"));
        assert!(!is_ami_id("ami-"));
        assert!(!is_ami_id("ubuntu-22.04"));
        assert!(!is_ami_id("ami-xyz"));
    }

    #[test]
    fn newest_wins_by_date_then_name() {
        let c = |id: &str, name: &str, date: &str| Candidate {
            image_id: id.into(),
            name: name.into(),
            creation_date: date.into(),
            root_device_name: Some("/dev/xvda".into()),
        };
        let pick = newest(vec![
            c(
                "ami-1",
                "al2023-ami-2023.6.20241212.0-kernel-6.1-x86_64",
                "2024-12-12T00:00:00.000Z",
            ),
            c(
                "ami-2",
                "al2023-ami-2023.7.20250101.0-kernel-6.1-x86_64",
                "2025-01-02T00:00:00.000Z",
            ),
            c(
                "ami-3",
                "al2023-ami-2023.5.20240601.0-kernel-6.1-x86_64",
                "2024-06-01T00:00:00.000Z",
            ),
        ])
        .unwrap();
        assert_eq!(pick.image_id, "ami-2");
        // Same date (moto gives all its images one date): the name decides.
        let pick = newest(vec![
            c(
                "ami-b",
                "amzn2-ami-hvm-2.0.20260930.0-x86_64-gp2",
                "2026-01-01T00:00:00.000Z",
            ),
            c(
                "ami-a",
                "amzn2-ami-hvm-2.0.20180810-x86_64-gp2",
                "2026-01-01T00:00:00.000Z",
            ),
        ])
        .unwrap();
        assert_eq!(pick.image_id, "ami-b");
        assert!(newest(vec![]).is_none());
    }
}
