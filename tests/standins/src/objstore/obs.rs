//! The OBS flavor: `<bucket>.obs.<region>.myhuaweicloud.com`, `OBS AK:sig`
//! signatures (checked by [`crate::verify::obs`]), as the OBS API reference
//! documents (support.huaweicloud.com/api-obs):
//!
//! - the bucket's class in the `x-obs-storage-class` header of the create
//!   (`STANDARD`, `WARM`, `COLD`, obs_04_0021), read back with
//!   `GET /?storageClass` → `StoragePolicy/DefaultStorageClass`
//!   (obs_04_0045);
//! - a second create of one's own bucket in its region answers 200
//!   (obs_04_0021);
//! - an untagged bucket's `GET /?tagging`: 404 `NoSuchTagSet` (obs_04_0050);
//!   no lifecycle: 404 `NoSuchLifecycleConfiguration` (obs_04_0035); no
//!   encryption: 404 `NoSuchEncryptionConfiguration` (obs_04_0063);
//! - `ServerSideEncryptionConfiguration/Rule/ApplyServerSideEncryptionByDefault`
//!   with `kms` (obs_04_0062) or `AES256` (SSE-OBS, obs_04_0173);
//! - at most 20 tags (obs_04_0049);
//! - ACLs as grants, the public ones to the canned group `Everyone`
//!   (obs_04_0028).

use super::state::Bucket;
use super::xml::{doc, leaf};
use super::Flavor;
use crate::verify::{obs, Key, Rejection, WireRequest};

/// Test credentials the OBS stand-in accepts (the Huawei stand-in's pair).
pub const KEY: Key<'static> = Key {
    id: crate::huawei::TEST_AK,
    secret: crate::huawei::TEST_SK,
};

fn verify(
    req: &WireRequest,
    key: &Key<'_>,
    _region: &str,
    bucket: Option<&str>,
) -> Result<(), Rejection> {
    obs::verify(req, key, bucket).map(drop)
}

/// OBS bucket names ("Creating a Bucket"): 3–63 lower-case letters,
/// digits, `-` and `.`, a letter or digit first and last, no `..`, `.-`
/// or `-.`, not an IP address. (The stand-in routes a virtual host on
/// its first label, so it takes names without `.` only.)
fn valid_name(n: &str) -> bool {
    (3..=63).contains(&n.len())
        && n.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !n.starts_with('-')
        && !n.ends_with('-')
}

/// `GET /?storageClass` (obs_04_0045).
fn info_xml(_name: &str, b: &Bucket) -> String {
    doc("StoragePolicy", &leaf("DefaultStorageClass", &b.class))
}

const OWNER: &str = "0b5d2c3a4e6f47a8b9c0d1e2f3a4b5c6";

fn acl_xml(acl: &str) -> String {
    let grant = |grantee: String, perm: &str| {
        format!(
            "<Grant><Grantee>{grantee}</Grantee>{}</Grant>",
            leaf("Permission", perm)
        )
    };
    let mut grants = grant(leaf("ID", OWNER), "FULL_CONTROL");
    match acl {
        "public-read" => grants.push_str(&grant(leaf("Canned", "Everyone"), "READ")),
        "public-read-write" => {
            grants.push_str(&grant(leaf("Canned", "Everyone"), "READ"));
            grants.push_str(&grant(leaf("Canned", "Everyone"), "WRITE"));
        }
        _ => {}
    }
    doc(
        "AccessControlPolicy",
        &format!(
            "<Owner>{}</Owner><AccessControlList>{grants}</AccessControlList>",
            leaf("ID", OWNER)
        ),
    )
}

fn env(endpoint: &str) -> Vec<(String, String)> {
    vec![
        ("GPUFORM_HUAWEI_OBS_ENDPOINT".into(), endpoint.into()),
        ("HUAWEICLOUD_SDK_AK".into(), KEY.id.into()),
        ("HUAWEICLOUD_SDK_SK".into(), KEY.secret.into()),
    ]
}

pub const OBS: Flavor = Flavor {
    product: "OBS",
    header_prefix: "x-obs-",
    service_host: |r| format!("obs.{r}.myhuaweicloud.com"),
    location: |r| r.to_string(),
    regions: &["cn-north-4", "cn-east-3", "cn-south-1", "ap-southeast-1"],
    key: KEY,
    verify,
    classes: &["STANDARD", "WARM", "COLD", "DEEP_ARCHIVE"],
    class_header: Some("x-obs-storage-class"),
    info_query: "storageClass",
    info_xml,
    acl_xml,
    empty_tag_set: false,
    no_tag_set_code: "NoSuchTagSet",
    no_lifecycle_code: "NoSuchLifecycleConfiguration",
    owned_put_rewrites: true,
    no_sse_code: "NoSuchEncryptionConfiguration",
    sse_configuration: true,
    sse_algorithms: &["kms", "AES256"],
    max_tags: 20,
    valid_name,
    env,
};
