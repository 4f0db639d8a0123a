//! OSS buckets against the object-storage stand-in
//! (`gpuform_standins::objstore` with the OSS flavor), which verifies every
//! request's OSS V4 signature with its own verifier, parses the XML bodies
//! with its own reader and answers as the OSS API reference documents.

mod common;

use common::*;
use gpuform_alibaba::AlibabaProvider;
use gpuform_objstore::Endpoint;
use gpuform_provider::CloudDriver;
use gpuform_provider::{ErrorKind, ObservedResource, Provider, ResourceKind};
use gpuform_signing::Credentials;
use gpuform_standins::alibaba::{ACCESS_KEY_ID, ACCESS_KEY_SECRET};
use gpuform_standins::objstore::{oss::OSS, Fault, ObjStoreMock};
use gpuform_standins::MockCloud;
use serde_json::{json, Value};
use std::time::Duration;

const B: ResourceKind = ResourceKind::Bucket;

fn oss_provider(mock: &ObjStoreMock, secret: &str) -> AlibabaProvider {
    AlibabaProvider::new(Credentials::new(ACCESS_KEY_ID, secret), None, None)
        .unwrap()
        .with_oss_endpoint(Some(Endpoint::parse(&mock.endpoint(), "test").unwrap()))
        .with_oss_retries(0, Duration::from_millis(1))
}

fn start() -> (ObjStoreMock, AlibabaProvider) {
    let mock = ObjStoreMock::start(OSS);
    let p = oss_provider(&mock, ACCESS_KEY_SECRET);
    (mock, p)
}

fn full() -> Value {
    json!({
        "name": "llm-datasets",
        "storage_class": "infrequent",
        "versioning": true,
        "encryption": true,
        "lifecycle": {"archive_after_days": 30, "expire_noncurrent_after_days": 7},
        "public_access_blocked": true,
        "force_destroy": false,
        "size_gb": 500,
        "tags": {"team": "ml"},
    })
}

fn attr<'a>(o: &'a ObservedResource, k: &str) -> &'a Value {
    o.attrs.get(k).unwrap_or(&Value::Null)
}

async fn read(p: &AlibabaProvider, id: &str) -> Option<ObservedResource> {
    p.read(&scope(), B, &[id.to_string()]).await.unwrap().pop()
}

#[tokio::test]
async fn create_reads_back_every_attribute() {
    let (mock, p) = start();
    let made = p.create(&req(B, "bucket.data", full(), &[])).await.unwrap();
    assert_eq!(made.id, "llm-datasets");
    assert_eq!(made.region, REGION);
    assert_eq!(made.ownership, Some(own("bucket.data")));
    let want = json!({
        "name": "llm-datasets",
        "storage_class": "infrequent",
        "versioning": true,
        "encryption": true,
        "lifecycle": {"archive_after_days": 30, "expire_noncurrent_after_days": 7},
        "public_access_blocked": true,
        "force_destroy": false,
        "tags": {"team": "ml"},
        "object_count": 0,
    });
    assert_eq!(serde_json::to_value(&made.attrs).unwrap(), want);
    // What the cloud keeps, read by the stand-in's own code.
    let b = mock.bucket("llm-datasets").unwrap();
    assert_eq!(b.class, "IA");
    assert_eq!(b.acl, "private");
    assert_eq!(b.versioning.as_deref(), Some("Enabled"));
    assert_eq!(b.sse.as_deref(), Some("AES256"));
    assert_eq!(
        b.tags.get("gpuform:project").map(String::as_str),
        Some("llm")
    );
    assert_eq!(
        b.tags.get("gpuform:kind").map(String::as_str),
        Some("bucket")
    );
    assert_eq!(b.tags.get("team").map(String::as_str), Some("ml"));
    assert!(!b.tags.contains_key("gpuform:force-destroy"));
    let rule = b.lifecycle.unwrap();
    let rule = rule.kid("Rule").unwrap();
    assert_eq!(
        rule.kid("Transition").unwrap().text_of("StorageClass"),
        Some("Archive")
    );
    // Read again, and found by the project's listing.
    assert_eq!(read(&p, "llm-datasets").await.unwrap(), made);
    // (`Provider::list_owned` adds these to the ECS and VPC listings.)
    let owned = p
        .buckets()
        .unwrap()
        .list_owned_buckets(&scope(), "llm")
        .await
        .unwrap();
    assert_eq!(owned, vec![made.clone()]);
    assert!(p
        .buckets()
        .unwrap()
        .list_owned_buckets(&scope(), "other")
        .await
        .unwrap()
        .is_empty());
    // A standard bucket reports no class (the neutral attribute's absence).
    let plain = json!({"name": "llm-plain", "versioning": false, "encryption": false,
                       "lifecycle": {}, "public_access_blocked": true, "force_destroy": true});
    let made = p.create(&req(B, "bucket.plain", plain, &[])).await.unwrap();
    assert_eq!(made.attrs.get("storage_class"), None);
    assert_eq!(attr(&made, "force_destroy"), &json!(true));
    assert_eq!(attr(&made, "lifecycle"), &json!({}));
    let ops = mock.ops();
    // Refused only: the look-up of a name still free, and the settings
    // never set (NoSuchBucket, NoSuchServerSideEncryptionRule, NoSuchLifecycle).
    let expected = [
        "!GetBucketTags",
        "!GetBucketEncryption",
        "!GetBucketLifecycle",
    ];
    assert!(
        !ops.iter()
            .any(|o| o.starts_with('!') && !expected.contains(&o.as_str())),
        "{ops:?}"
    );
}

#[tokio::test]
async fn drift_is_read_and_an_update_repairs_it() {
    let (mock, p) = start();
    p.create(&req(B, "bucket.data", full(), &[])).await.unwrap();
    assert!(mock.edit_behind("llm-datasets", |b| {
        b.lifecycle = None;
        b.versioning = Some("Suspended".into());
        b.sse = None;
        b.acl = "public-read".into();
    }));
    let seen = read(&p, "llm-datasets").await.unwrap();
    assert_eq!(attr(&seen, "lifecycle"), &json!({}));
    assert_eq!(attr(&seen, "versioning"), &json!(false));
    assert_eq!(attr(&seen, "encryption"), &json!(false));
    assert_eq!(attr(&seen, "public_access_blocked"), &json!(false));
    let changes = attrs(json!({
        "lifecycle": {"archive_after_days": 30, "expire_noncurrent_after_days": 7},
        "versioning": true, "encryption": true, "public_access_blocked": true,
    }));
    let fixed = p
        .update(&scope(), B, "llm-datasets", &changes)
        .await
        .unwrap();
    assert_eq!(
        attr(&fixed, "lifecycle"),
        &json!({"archive_after_days": 30, "expire_noncurrent_after_days": 7})
    );
    assert_eq!(attr(&fixed, "versioning"), &json!(true));
    assert_eq!(attr(&fixed, "encryption"), &json!(true));
    assert_eq!(attr(&fixed, "public_access_blocked"), &json!(true));
    assert_eq!(mock.bucket("llm-datasets").unwrap().acl, "private");
}

#[tokio::test]
async fn updates_tags_force_destroy_and_rules_keeping_ownership() {
    let (mock, p) = start();
    p.create(&req(B, "bucket.data", full(), &[])).await.unwrap();
    let changes = attrs(json!({
        "tags": {"team": "infra", "cost": "7"},
        "force_destroy": true,
        "encryption": false,
        "lifecycle": {"expire_noncurrent_after_days": 3},
    }));
    let o = p
        .update(&scope(), B, "llm-datasets", &changes)
        .await
        .unwrap();
    assert_eq!(attr(&o, "tags"), &json!({"team": "infra", "cost": "7"}));
    assert_eq!(attr(&o, "force_destroy"), &json!(true));
    assert_eq!(attr(&o, "encryption"), &json!(false));
    assert_eq!(
        attr(&o, "lifecycle"),
        &json!({"expire_noncurrent_after_days": 3})
    );
    assert_eq!(o.ownership, Some(own("bucket.data")));
    let b = mock.bucket("llm-datasets").unwrap();
    assert_eq!(
        b.tags.get("gpuform:force-destroy").map(String::as_str),
        Some("true")
    );
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
async fn a_non_empty_bucket_is_refused_with_its_count_then_emptied_when_forced() {
    let (mock, p) = start();
    p.create(&req(B, "bucket.data", full(), &[])).await.unwrap();
    for k in ["a", "b", "a"] {
        assert!(mock.put_object("llm-datasets", k));
    }
    // Versioned: three versions.
    let seen = read(&p, "llm-datasets").await.unwrap();
    assert_eq!(attr(&seen, "object_count"), &json!(3));
    assert!(Provider::delete_refusal(&p, &seen)
        .unwrap()
        .contains("3 object(s)"));
    let e = p.delete(&scope(), B, "llm-datasets").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("3 object(s)") && e.message.contains("force_destroy"),
        "{e}"
    );
    assert_eq!(mock.object_count("llm-datasets"), Some(3));
    // Refused by the count, before any DeleteBucket reaches the cloud.
    assert!(
        !mock.ops().iter().any(|o| o.ends_with("DeleteBucket")),
        "{:?}",
        mock.ops()
    );
    p.update(
        &scope(),
        B,
        "llm-datasets",
        &attrs(json!({"force_destroy": true})),
    )
    .await
    .unwrap();
    p.delete(&scope(), B, "llm-datasets").await.unwrap();
    assert!(mock.bucket("llm-datasets").is_none());
    assert!(read(&p, "llm-datasets").await.is_none());
    // Gone already: done.
    p.delete(&scope(), B, "llm-datasets").await.unwrap();
}

#[tokio::test]
async fn many_objects_are_deleted_in_batches() {
    let (mock, p) = start();
    let spec = json!({"name": "llm-many", "versioning": false, "encryption": false, "lifecycle": {},
                      "public_access_blocked": true, "force_destroy": true});
    p.create(&req(B, "bucket.many", spec, &[])).await.unwrap();
    for i in 0..2500 {
        mock.put_object("llm-many", &format!("k{i:05}"));
    }
    let seen = read(&p, "llm-many").await.unwrap();
    assert_eq!(attr(&seen, "object_count"), &json!(2500));
    p.delete(&scope(), B, "llm-many").await.unwrap();
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
    let (mock, p) = start();
    let theirs = [
        ("gpuform:project", "other"),
        ("gpuform:address", "bucket.data"),
        ("gpuform:token", "t"),
        ("gpuform:lineage", "l"),
    ];
    mock.add_behind("llm-datasets", REGION, &theirs);
    mock.put_object("llm-datasets", "keep");
    let before = mock.bucket("llm-datasets").unwrap();
    let e = p
        .create(&req(B, "bucket.data", full(), &[]))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("project `other`"), "{e}");
    let after = mock.bucket("llm-datasets").unwrap();
    assert_eq!(
        (after.tags, after.objects, after.acl),
        (before.tags, before.objects, before.acl)
    );
    assert!(
        !mock.ops().iter().any(|o| o.contains("Put")),
        "{:?}",
        mock.ops()
    );

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
    let (mock, p) = start();
    mock.add_foreign("llm-datasets", REGION);
    let e = p
        .create(&req(B, "bucket.data", full(), &[]))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(!e.kind.is_retryable());
    assert!(
        e.message
            .contains("`llm-datasets` is taken by another account"),
        "{e}"
    );
    // Someone takes the name between the look-up and PutBucket.
    mock.inject(Fault::Once {
        op: "GetBucketTags".into(),
        status: 404,
        code: "NoSuchBucket".into(),
    });
    let e = p
        .create(&req(B, "bucket.data", full(), &[]))
        .await
        .unwrap_err();
    assert_eq!(e.code.as_deref(), Some("BucketAlreadyExists"));
    assert!(e.message.contains("taken by another account"), "{e}");
    assert!(mock.bucket("llm-datasets").unwrap().foreign);
}

#[tokio::test]
async fn a_create_cut_after_put_bucket_is_adopted_by_the_next_one() {
    let (mock, p) = start();
    mock.inject(Fault::Once {
        op: "PutBucketTags".into(),
        status: 500,
        code: "InternalError".into(),
    });
    let e = p
        .create(&req(B, "bucket.data", full(), &[]))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient);
    assert!(mock.bucket("llm-datasets").unwrap().tags.is_empty());
    let made = p.create(&req(B, "bucket.data", full(), &[])).await.unwrap();
    assert_eq!(made.ownership, Some(own("bucket.data")));
    assert_eq!(attr(&made, "versioning"), &json!(true));
    assert_eq!(mock.resources().len(), 1);
    // Tagged by this address: adopted again by a create with a new token.
    let again = OWNER.request(B, "bucket.data", "another-token".into(), full(), &[]);
    let o = p.create(&again).await.unwrap();
    assert_eq!(o.ownership.unwrap().token, "another-token");
    assert_eq!(mock.resources().len(), 1);
}

#[tokio::test]
async fn throttling_is_retried_and_a_wrong_secret_never_leaks() {
    let mock = ObjStoreMock::start(OSS);
    let p = oss_provider(&mock, ACCESS_KEY_SECRET).with_oss_retries(2, Duration::from_millis(1));
    mock.inject(Fault::Once {
        op: "PutBucket".into(),
        status: 503,
        code: "QpsLimitExceeded".into(),
    });
    p.create(&req(B, "bucket.data", full(), &[])).await.unwrap();
    let canary = "CANARY-oss-secret-4f1e";
    let bad = oss_provider(&mock, canary);
    let e = bad
        .read(&scope(), B, &["llm-datasets".into()])
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.code.as_deref(), Some("SignatureDoesNotMatch"));
    let shown = format!("{e} {e:?} {bad:?}");
    assert!(!shown.contains(canary), "{shown}");
}

#[tokio::test]
async fn audit_lists_every_bucket_of_the_region() {
    let (mock, p) = start();
    p.create(&req(B, "bucket.data", full(), &[])).await.unwrap();
    mock.add_behind("someone-elses", REGION, &[("owner", "alice")]);
    mock.add_behind("far-away", "cn-beijing", &[]);
    let all = p.buckets().unwrap().list_buckets(&scope()).await.unwrap();
    let names: Vec<&str> = all.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(names, ["llm-datasets", "someone-elses"]);
    assert!(all[0].ownership.is_some() && all[1].ownership.is_none());
}
