//! COS buckets against the object-storage stand-in
//! (`gpuform_standins::objstore` with the COS flavor), which verifies every
//! request's `q-sign-algorithm=sha1` signature with its own verifier,
//! parses the XML bodies with its own reader and answers as the COS API
//! reference documents (`NoSuchTagSetError`, `BucketAlreadyOwnedByYou`,
//! `<name>-<APPID>` names…). The scenarios every cloud shares are
//! `gpuform_standins::objstore::suite`; this file says what COS is.

use crate::common;

use common::REGION;
use gpuform_http::Endpoint;
use gpuform_signing::Credentials;
use gpuform_standins::objstore::state::Bucket;
use gpuform_standins::objstore::suite::{self, Cloud};
use gpuform_standins::objstore::{cos::COS, ObjStoreMock};
use gpuform_standins::tencent::{SECRET_ID, SECRET_KEY};
use gpuform_tencent::TencentProvider;
use std::time::Duration;

fn cos_provider(mock: &ObjStoreMock, secret: &str, retries: u32) -> TencentProvider {
    // The API 3.0 endpoint is never called by bucket operations.
    TencentProvider::new(Credentials::new(SECRET_ID, secret), None, None)
        .unwrap()
        .with_cos_endpoint(Some(Endpoint::parse(&mock.endpoint(), "test").unwrap()))
        .unwrap()
        .with_cos_retries(retries, Duration::from_millis(1))
}

/// No bucket class on COS: the class is gpuform's tag. COS scopes a rule
/// with `Filter` (PUT Bucket lifecycle 8280).
fn stored(b: &Bucket) {
    assert_eq!(b.class, "STANDARD");
    let tag = |k: &str| b.tags.get(k).map(String::as_str);
    assert_eq!(tag("gpuform:storage-class"), Some("archive"));
    suite::assert_full_lifecycle(b, "Filter", "ARCHIVE");
}

const COS_CLOUD: Cloud<TencentProvider> = Cloud {
    flavor: COS,
    provider: cos_provider,
    secret: SECRET_KEY,
    region: REGION,
    far_region: "ap-beijing",
    suffix: "-1250000000",
    class: "archive",
    sse: "AES256",
    throttle_code: "SlowDown",
    canary: "CANARY-cos-secret-77c1",
    stored,
};

// Every shared scenario as it is. What this cloud answers in them:
// - `updates_tags_and_force_destroy_keeping_ownership`: gpuform's own tags, the class among them,
//   survive a user-tag update.
// - `a_create_cut_after_put_bucket_is_adopted_by_the_next_one`: The untagged, empty bucket answers
//   NoSuchTagSetError: adopted.
// - `audit_lists_every_bucket_of_the_region_tagged_or_not`: Untagged: COS answers
//   NoSuchTagSetError, which is no tags, not no bucket.
gpuform_standins::bucket_scenarios!(
    COS_CLOUD;
    refusing a_name_without_the_appid_is_refused_before_any_call("llm-datasets", "APPID")
);
