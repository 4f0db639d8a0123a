//! OSS buckets against the object-storage stand-in
//! (`gpuform_standins::objstore` with the OSS flavor), which verifies every
//! request's OSS V4 signature with its own verifier, parses the XML bodies
//! with its own reader and answers as the OSS API reference documents. The
//! scenarios every cloud shares are `gpuform_standins::objstore::suite`;
//! this file says what OSS is and checks what only OSS tests.

use crate::common;

use common::*;
use gpuform_alibaba::AlibabaProvider;
use gpuform_http::Endpoint;
use gpuform_provider::{ErrorKind, ObservedResource, Provider, ResourceKind};
use gpuform_signing::Credentials;
use gpuform_standins::alibaba::{ACCESS_KEY_ID, ACCESS_KEY_SECRET};
use gpuform_standins::objstore::state::Bucket;
use gpuform_standins::objstore::suite::{self, attr, Cloud};
use gpuform_standins::objstore::{oss::OSS, Fault, ObjStoreMock};
use serde_json::json;
use std::time::Duration;

const B: ResourceKind = ResourceKind::Bucket;

fn oss_provider(mock: &ObjStoreMock, secret: &str, retries: u32) -> AlibabaProvider {
    AlibabaProvider::new(Credentials::new(ACCESS_KEY_ID, secret), None, None)
        .unwrap()
        .with_oss_endpoint(Some(Endpoint::parse(&mock.endpoint(), "test").unwrap()))
        .with_oss_retries(retries, Duration::from_millis(1))
}

/// The bucket's own class (IA), the archive transition in OSS's words.
fn stored(b: &Bucket) {
    assert_eq!(b.class, "IA");
    let rule = b.lifecycle.clone().unwrap();
    let rule = rule.kid("Rule").unwrap();
    assert_eq!(
        rule.kid("Transition").unwrap().text_of("StorageClass"),
        Some("Archive")
    );
}

const OSS_CLOUD: Cloud<AlibabaProvider> = Cloud {
    flavor: OSS,
    provider: oss_provider,
    secret: ACCESS_KEY_SECRET,
    region: REGION,
    far_region: "cn-beijing",
    suffix: "",
    class: "infrequent",
    sse: "AES256",
    throttle_code: "QpsLimitExceeded",
    canary: "CANARY-oss-secret-4f1e",
    stored,
};

fn start() -> (ObjStoreMock, AlibabaProvider) {
    OSS_CLOUD.start()
}

async fn read(p: &AlibabaProvider, id: &str) -> Option<ObservedResource> {
    OWNER.read(p, B, &[id.to_string()]).await.pop()
}

#[tokio::test]
async fn updates_tags_force_destroy_and_rules_keeping_ownership() {
    let more = [("encryption", json!(false))];
    let (mock, p, o) =
        suite::updates_tags_and_force_destroy_keeping_ownership(&OSS_CLOUD, &more).await;
    assert_eq!(attr(&o, "encryption"), &json!(false));
    let o = p
        .update(
            &scope(),
            B,
            "llm-datasets",
            &attrs(json!({"force_destroy": false, "lifecycle": {}})),
        )
        .await
        .unwrap();
    assert_eq!(attr(&o, "force_destroy"), &json!(false));
    assert!(mock.bucket("llm-datasets").unwrap().lifecycle.is_none());
    // The storage class cannot change in place: the plan replaces.
    let e = p
        .update(
            &scope(),
            B,
            "llm-datasets",
            &attrs(json!({"storage_class": "archive"})),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
}

#[tokio::test]
async fn many_objects_are_deleted_in_batches() {
    let (mock, p) = start();
    let spec = json!({"name": "llm-many", "versioning": false, "encryption": false, "lifecycle": {},
                      "public_access_blocked": true, "force_destroy": true});
    create(&p, &req(B, "bucket.many", spec, &[])).await;
    for i in 0..2500 {
        mock.put_object("llm-many", &format!("k{i:05}"));
    }
    let seen = read(&p, "llm-many").await.unwrap();
    assert_eq!(attr(&seen, "object_count"), &json!(2500));
    OWNER.delete(&p, B, "llm-many").await;
    assert!(mock.bucket("llm-many").is_none());
    let batches = mock
        .ops()
        .iter()
        .filter(|o| *o == "DeleteMultipleObjects")
        .count();
    assert_eq!(batches, 3);
}

#[tokio::test]
async fn a_bucket_someone_else_tagged_is_never_touched() {
    let (mock, p) = suite::someone_elses_bucket_is_never_touched(&OSS_CLOUD).await;
    // Untagged but holding objects: not adopted either.
    mock.add_behind("llm-other", REGION, &[]);
    mock.put_object("llm-other", "x");
    let spec = json!({"name": "llm-other", "versioning": false, "encryption": false, "lifecycle": {},
                      "public_access_blocked": true, "force_destroy": false});
    let e = p
        .create(&req(B, "bucket.other", spec, &[]))
        .await
        .unwrap_err();
    assert!(e.message.contains("untagged and holding objects"), "{e}");
    assert!(mock.bucket("llm-other").unwrap().tags.is_empty());
    // Another user's tags (not gpuform's): never touched.
    mock.add_behind("llm-team", REGION, &[("owner", "alice")]);
    let spec = json!({"name": "llm-team", "versioning": false, "encryption": false, "lifecycle": {},
                      "public_access_blocked": true, "force_destroy": false});
    assert!(p.create(&req(B, "bucket.team", spec, &[])).await.is_err());
    assert_eq!(mock.bucket("llm-team").unwrap().tags.len(), 1);
}

#[tokio::test]
async fn a_name_taken_by_another_account_is_a_clear_error_not_a_retry() {
    let (mock, p) =
        suite::a_name_taken_by_another_account_is_a_clear_error_not_a_retry(&OSS_CLOUD).await;
    // Someone takes the name between the look-up and PutBucket.
    mock.inject(Fault::Once {
        op: "GetBucketTags".into(),
        status: 404,
        code: "NoSuchBucket".into(),
    });
    let e = p
        .create(&req(B, "bucket.data", OSS_CLOUD.full(), &[]))
        .await
        .unwrap_err();
    assert_eq!(e.code.as_deref(), Some("BucketAlreadyExists"));
    assert!(e.message.contains("taken by another account"), "{e}");
    assert!(mock.bucket("llm-datasets").unwrap().foreign);
}

#[tokio::test]
async fn audit_lists_every_bucket_of_the_region() {
    suite::audit_lists_every_bucket_of_the_region_tagged_or_not(&OSS_CLOUD).await;
}

gpuform_standins::bucket_scenarios!(
    OSS_CLOUD;
    // (`Provider::list_owned` adds the owned buckets to the ECS and VPC
    // listings.)
    create_reads_back_every_attribute,
    drift_is_read_and_an_update_repairs_it,
    a_non_empty_bucket_is_refused_with_its_count_then_emptied_when_forced,
    an_unfinished_upload_keeps_a_bucket_until_a_forced_delete_aborts_it,
    a_create_cut_after_put_bucket_is_adopted_by_the_next_one,
    throttling_is_retried_and_a_wrong_secret_never_leaks,
);
