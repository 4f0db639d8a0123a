//! Logical image names → Tencent public images.
//!
//! Resolved with CVM DescribeImages (https://www.tencentcloud.com/document/api/213/33272)
//! filtered by `image-type = PUBLIC_IMAGE` and the exact public image name,
//! newest `CreatedTime` first. Tencent's public images carry no CUDA stack:
//! the `-cuda` names map to the same Ubuntu image (GPU driver and CUDA are
//! then installed by the user's `user_data`, or use a custom / marketplace
//! `img-…` id, which passes through unchanged).

/// (logical name, Tencent public image name).
pub const TABLE: &[(&str, &str)] = &[
    ("ubuntu-20.04", "Ubuntu Server 20.04 LTS 64bit"),
    ("ubuntu-20.04-cuda", "Ubuntu Server 20.04 LTS 64bit"),
    ("ubuntu-22.04", "Ubuntu Server 22.04 LTS 64bit"),
    ("ubuntu-22.04-cuda", "Ubuntu Server 22.04 LTS 64bit"),
    ("ubuntu-24.04", "Ubuntu Server 24.04 LTS 64bit"),
    ("ubuntu-24.04-cuda", "Ubuntu Server 24.04 LTS 64bit"),
    ("tencentos-3", "TencentOS Server 3.1 (TK4)"),
];

pub fn public_name(logical: &str) -> Option<&'static str> {
    TABLE.iter().find(|(l, _)| *l == logical).map(|(_, n)| *n)
}

pub fn is_raw_id(image: &str) -> bool {
    image.starts_with("img-")
}

pub fn known_names() -> String {
    TABLE.iter().map(|(l, _)| *l).collect::<Vec<_>>().join(", ")
}
