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
    let l = b.lifecycle.clone().unwrap();
    let rule = l.kid("Rule").unwrap();
    assert!(rule.kid("Prefix").is_some() && rule.kid("Filter").is_none());
    let t = rule.kid("Transition").unwrap();
    assert_eq!(
        (t.text_of("Days"), t.text_of("StorageClass")),
        (Some("30"), Some("COLD"))
    );
    assert_eq!(
        rule.kid("NoncurrentVersionExpiration")
            .unwrap()
            .text_of("NoncurrentDays"),
        Some("7")
    );
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

#[tokio::test]
async fn create_reads_back_every_attribute() {
    suite::create_reads_back_every_attribute(&OBS_CLOUD).await;
}

#[tokio::test]
async fn a_name_against_obs_rules_is_refused_before_any_call() {
    suite::a_bad_name_is_refused_before_any_call(&OBS_CLOUD, "llm..datasets", "Huawei OBS").await;
}

#[tokio::test]
async fn drift_is_read_and_an_update_repairs_it() {
    suite::drift_is_read_and_an_update_repairs_it(&OBS_CLOUD).await;
}

#[tokio::test]
async fn updates_tags_and_force_destroy_keeping_ownership() {
    // The class is the bucket's own: unchanged by tag updates.
    suite::updates_tags_and_force_destroy_keeping_ownership(&OBS_CLOUD, &[]).await;
}

#[tokio::test]
async fn a_non_empty_bucket_is_refused_with_its_count_then_emptied_when_forced() {
    suite::a_non_empty_bucket_is_refused_with_its_count_then_emptied_when_forced(&OBS_CLOUD).await;
}

#[tokio::test]
async fn someone_elses_bucket_is_never_touched() {
    suite::someone_elses_bucket_is_never_touched(&OBS_CLOUD).await;
}

#[tokio::test]
async fn a_name_taken_by_another_account_is_a_clear_error_not_a_retry() {
    suite::a_name_taken_by_another_account_is_a_clear_error_not_a_retry(&OBS_CLOUD).await;
}

#[tokio::test]
async fn a_create_cut_after_put_bucket_is_adopted_by_the_next_one() {
    // The untagged, empty bucket answers NoSuchTagSet: adopted (OBS would
    // also answer a second create of it with 200).
    suite::a_create_cut_after_put_bucket_is_adopted_by_the_next_one(&OBS_CLOUD).await;
}

#[tokio::test]
async fn throttling_is_retried_and_a_wrong_secret_never_leaks() {
    suite::throttling_is_retried_and_a_wrong_secret_never_leaks(&OBS_CLOUD).await;
}

#[tokio::test]
async fn audit_lists_every_bucket_of_the_region_tagged_or_not() {
    // Untagged: OBS answers NoSuchTagSet, which is no tags, not no bucket.
    suite::audit_lists_every_bucket_of_the_region_tagged_or_not(&OBS_CLOUD).await;
}
