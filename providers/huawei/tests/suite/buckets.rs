//! OBS buckets against the object-storage stand-in
//! (`gpuform_standins::objstore` with the OBS flavor), which verifies every
//! request's OBS signature with its own verifier, parses the XML bodies
//! with its own reader and answers as the OBS API reference documents
//! (`x-obs-storage-class`, `?storageClass`, `NoSuchTagSet`, a create's
//! `Location`, an idempotent create of one's own bucket…). The scenarios
//! every cloud shares are `gpuform_standins::objstore::suite`; this file
//! says what OBS is.

use gpuform_huawei::HuaweiProvider;
use gpuform_standins::huawei::{TEST_AK, TEST_PROJECT_ID, TEST_SK};
use gpuform_standins::objstore::state::Bucket;
use gpuform_standins::objstore::suite::{self, Cloud};
use gpuform_standins::objstore::{obs::OBS, ObjStoreMock};
use std::time::Duration;

fn obs_provider(mock: &ObjStoreMock, secret: &str, retries: u32) -> HuaweiProvider {
    // The ECS/VPC endpoint is never called by bucket operations.
    let vars = [
        ("HUAWEICLOUD_SDK_AK", TEST_AK),
        ("HUAWEICLOUD_SDK_SK", secret),
        ("HUAWEICLOUD_SDK_PROJECT_ID", TEST_PROJECT_ID),
        ("GPUFORM_HUAWEI_OBS_ENDPOINT", &mock.endpoint()),
    ];
    HuaweiProvider::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .unwrap()
        .with_obs_retries(retries, Duration::from_millis(1))
}

/// The bucket's own class (x-obs-storage-class), no tag for it. OBS scopes
/// a rule with its own `Prefix` (obs_04_0034).
fn stored(b: &Bucket) {
    assert_eq!(b.class, "COLD");
    assert_eq!(b.tags.get("gpuform:storage-class"), None);
    suite::assert_full_lifecycle(b, "Prefix", "COLD");
}

const OBS_CLOUD: Cloud<HuaweiProvider> = Cloud {
    flavor: OBS,
    provider: obs_provider,
    secret: TEST_SK,
    region: "cn-north-4",
    far_region: "cn-east-3",
    suffix: "",
    class: "archive",
    sse: "kms",
    throttle_code: "ServiceUnavailable",
    canary: "CANARY-obs-secret-3b9d",
    stored,
};

// Every shared scenario as it is. What this cloud answers in them:
// - `updates_tags_and_force_destroy_keeping_ownership`: The class is the bucket's own: unchanged
//   by tag updates.
// - `a_create_cut_after_put_bucket_is_adopted_by_the_next_one`: The untagged, empty bucket answers
//   NoSuchTagSet: adopted (OBS would also answer a second create of it with 200).
// - `audit_lists_every_bucket_of_the_region_tagged_or_not`: Untagged: OBS answers NoSuchTagSet,
//   which is no tags, not no bucket.
gpuform_standins::bucket_scenarios!(
    OBS_CLOUD;
    refusing a_name_against_obs_rules_is_refused_before_any_call("llm..datasets", "Huawei OBS")
);
