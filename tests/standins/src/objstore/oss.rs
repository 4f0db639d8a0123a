//! The OSS flavor: `<bucket>.oss-<region>.aliyuncs.com`, OSS V4 signatures
//! (checked by [`crate::verify::oss4`]), classes Standard / IA / Archive /
//! ColdArchive, `x-oss-acl`, GetBucketInfo (`?bucketInfo`), an untagged
//! bucket's GetBucketTags answering an empty `TagSet`, and a second
//! PutBucket of one's own bucket answering 200 (PutBucket usage notes).

use super::state::Bucket;
use super::xml::{doc, leaf};
use super::Flavor;
use crate::verify::{oss4, Key, Rejection, WireRequest};

/// Test credentials the OSS stand-in accepts (the Alibaba stand-in's pair).
pub const KEY: Key<'static> = Key {
    id: crate::alibaba::ACCESS_KEY_ID,
    secret: crate::alibaba::ACCESS_KEY_SECRET,
};

fn verify(
    req: &WireRequest,
    key: &Key<'_>,
    region: &str,
    bucket: Option<&str>,
) -> Result<(), Rejection> {
    oss4::verify(req, key, region, bucket).map(drop)
}

/// OSS bucket names: 3-63 characters, lower-case letters, digits and
/// hyphens, starting and ending with a letter or digit.
fn valid_name(n: &str) -> bool {
    (3..=63).contains(&n.len())
        && n.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !n.starts_with('-')
        && !n.ends_with('-')
}

fn info_xml(name: &str, b: &Bucket) -> String {
    let acl = leaf("Grant", &b.acl);
    let inner = [
        leaf("Name", name),
        leaf("Location", &format!("oss-{}", b.region)),
        leaf("Region", &b.region),
        leaf("StorageClass", &b.class),
        format!("<AccessControlList>{acl}</AccessControlList>"),
    ]
    .concat();
    doc("BucketInfo", &format!("<Bucket>{inner}</Bucket>"))
}

fn acl_xml(acl: &str) -> String {
    doc(
        "AccessControlPolicy",
        &format!(
            "<Owner><ID>1234567890</ID><DisplayName>1234567890</DisplayName></Owner><AccessControlList>{}</AccessControlList>",
            leaf("Grant", acl)
        ),
    )
}

fn env(endpoint: &str) -> Vec<(String, String)> {
    vec![
        ("GPUFORM_ALIBABA_OSS_ENDPOINT".into(), endpoint.into()),
        ("ALIBABA_CLOUD_ACCESS_KEY_ID".into(), KEY.id.into()),
        ("ALIBABA_CLOUD_ACCESS_KEY_SECRET".into(), KEY.secret.into()),
    ]
}

pub const OSS: Flavor = Flavor {
    product: "OSS",
    header_prefix: "x-oss-",
    service_host: |r| format!("oss-{r}.aliyuncs.com"),
    location: |r| format!("oss-{r}"),
    regions: &["cn-hangzhou", "cn-beijing", "cn-shanghai", "ap-southeast-1"],
    key: KEY,
    verify,
    classes: &["Standard", "IA", "Archive", "ColdArchive"],
    class_header: None,
    info_query: "bucketInfo",
    info_xml,
    acl_xml,
    empty_tag_set: true,
    no_tag_set_code: "NoSuchTagSet",
    no_lifecycle_code: "NoSuchLifecycle",
    owned_put_rewrites: true,
    no_sse_code: "NoSuchServerSideEncryptionRule",
    sse_configuration: false,
    sse_algorithms: &["AES256", "KMS", "SM4"],
    max_tags: 20,
    valid_name,
    env,
};
