//! Logical image names resolved against the AMIs moto ships.

use crate::common;

use common::*;
use gpuform_provider::ErrorKind;

#[tokio::test]
async fn image_names_resolve_against_moto_catalog() {
    let p = provider().await;
    let (ami, root) = p
        .resolve_image(REGION, "amazon-linux-2023", "x86_64")
        .await
        .unwrap();
    assert_eq!(ami, "ami-03c3da4cfa8e8943a");
    assert_eq!(root.as_deref(), Some("/dev/xvda"));
    let (ami, _) = p
        .resolve_image(REGION, "amazon-linux-2023", "arm64")
        .await
        .unwrap();
    assert_eq!(ami, "ami-0ae8605ed708e3c3e", "al2023 kernel-6.1 arm64");
    let (ami, _) = p
        .resolve_image(REGION, "amazon-linux-2", "x86_64")
        .await
        .unwrap();
    assert_eq!(
        ami, "ami-0f8848d57eb4fe2d2",
        "newest amzn2-ami-hvm x86_64 gp2 by name"
    );
    // An explicit AMI id is used as it is.
    let (ami, root) = p
        .resolve_image(REGION, "ami-785db401", "x86_64")
        .await
        .unwrap();
    assert_eq!(
        (ami.as_str(), root.as_deref()),
        ("ami-785db401", Some("/dev/sda1"))
    );
    // moto ships no Deep Learning AMIs: a clear invalid-input error.
    let e = p
        .resolve_image(REGION, "ubuntu-22.04-cuda", "x86_64")
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message
            .contains("Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)"),
        "{e}"
    );
}
