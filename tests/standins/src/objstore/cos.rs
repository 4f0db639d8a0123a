//! The COS flavor: `<BucketName-APPID>.cos.<region>.myqcloud.com`,
//! `q-sign-algorithm=sha1` signatures (checked by
//! [`crate::verify::cos`], inside their `q-sign-time`), as the COS API
//! reference documents (tencentcloud.com/document/product/436):
//!
//! - no bucket-level storage class (PUT Bucket 7738 takes no
//!   configuration; objects carry theirs), classes `STANDARD`,
//!   `STANDARD_IA`, `ARCHIVE` in lifecycle transitions (8280);
//! - a second PUT Bucket of one's own bucket: 409
//!   `BucketAlreadyOwnedByYou` (7738);
//! - an untagged bucket's GET Bucket tagging: 404 `NoSuchTagSetError`
//!   (8277); no lifecycle: 404 `NoSuchLifecycleConfiguration` (8278); no
//!   encryption: 404 `NoSuchEncryptionConfiguration`;
//! - `ServerSideEncryptionConfiguration/Rule/ApplyServerSideEncryptionByDefault`
//!   with `AES256` (SSE-COS) or `KMS` (33461), up to 50 tags (8281);
//! - ACLs as `AccessControlPolicy` grants, the public ones to the group
//!   `http://cam.qcloud.com/groups/global/AllUsers` (GET Bucket acl, 7733).

use super::state::Bucket;
use super::xml::{doc, leaf};
use super::Flavor;
use crate::verify::{cos, Key, Rejection, WireRequest};

/// Test credentials the COS stand-in accepts (the Tencent stand-in's pair).
pub const KEY: Key<'static> = Key {
    id: crate::tencent::SECRET_ID,
    secret: crate::tencent::SECRET_KEY,
};

/// The APPID the stand-in's account has: a bucket name ends with `-<APPID>`.
pub const APPID: &str = "1250000000";

fn verify(
    req: &WireRequest,
    key: &Key<'_>,
    _region: &str,
    _bucket: Option<&str>,
) -> Result<(), Rejection> {
    let v = cos::verify(req, key)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    if now < v.start || now > v.end {
        return Err(Rejection::Malformed(format!(
            "q-sign-time {};{} does not include the time of the request ({now})",
            v.start, v.end
        )));
    }
    Ok(())
}

/// COS bucket names (Bucket Overview, naming conventions): `<name>-<APPID>`,
/// the name 1–50 lower-case letters, digits and `-`, not starting or
/// ending with `-`; this account's APPID.
fn valid_name(n: &str) -> bool {
    let Some(name) = n.strip_suffix(&format!("-{APPID}")) else {
        return false;
    };
    (1..=50).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// COS has no bucket information sub-resource gpuform reads (no class).
fn info_xml(name: &str, b: &Bucket) -> String {
    doc(
        "BucketInfo",
        &format!("{}{}", leaf("Name", name), leaf("Location", &b.region)),
    )
}

const OWNER: &str = "qcs::cam::uin/100000000001:uin/100000000001";

fn acl_xml(acl: &str) -> String {
    let grant = |grantee: String, perm: &str| {
        format!("<Grant>{grantee}{}</Grant>", leaf("Permission", perm))
    };
    let mut grants = grant(
        format!(
            "<Grantee xsi:type=\"CanonicalUser\">{}</Grantee>",
            leaf("ID", OWNER)
        ),
        "FULL_CONTROL",
    );
    let everyone = || {
        format!(
            "<Grantee xsi:type=\"Group\">{}</Grantee>",
            leaf("URI", "http://cam.qcloud.com/groups/global/AllUsers")
        )
    };
    match acl {
        "public-read" => grants.push_str(&grant(everyone(), "READ")),
        "public-read-write" => {
            grants.push_str(&grant(everyone(), "READ"));
            grants.push_str(&grant(everyone(), "WRITE"));
        }
        _ => {}
    }
    doc(
        "AccessControlPolicy",
        &format!(
            "<Owner>{}{}</Owner><AccessControlList>{grants}</AccessControlList>",
            leaf("ID", OWNER),
            leaf("DisplayName", "100000000001")
        ),
    )
}

fn env(endpoint: &str) -> Vec<(String, String)> {
    vec![
        ("GPUFORM_TENCENT_COS_ENDPOINT".into(), endpoint.into()),
        ("TENCENTCLOUD_SECRET_ID".into(), KEY.id.into()),
        ("TENCENTCLOUD_SECRET_KEY".into(), KEY.secret.into()),
    ]
}

pub const COS: Flavor = Flavor {
    product: "COS",
    header_prefix: "x-cos-",
    service_host: |r| format!("cos.{r}.myqcloud.com"),
    location: |r| r.to_string(),
    regions: &["ap-guangzhou", "ap-beijing", "ap-shanghai", "ap-singapore"],
    key: KEY,
    verify,
    classes: &["STANDARD", "STANDARD_IA", "ARCHIVE"],
    class_header: None,
    // Not a COS sub-resource: nothing gpuform sends asks for it.
    info_query: "x-gpuform-no-bucket-info",
    info_xml,
    acl_xml,
    empty_tag_set: false,
    no_tag_set_code: "NoSuchTagSetError",
    no_lifecycle_code: "NoSuchLifecycleConfiguration",
    owned_put_rewrites: false,
    no_sse_code: "NoSuchEncryptionConfiguration",
    sse_configuration: true,
    sse_algorithms: &["AES256", "KMS"],
    max_tags: 50,
    valid_name,
    env,
};
