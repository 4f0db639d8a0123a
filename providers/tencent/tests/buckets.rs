//! COS buckets against the object-storage stand-in
//! (`gpuform_standins::objstore` with the COS flavor), which verifies every
//! request's `q-sign-algorithm=sha1` signature with its own verifier,
//! parses the XML bodies with its own reader and answers as the COS API
//! reference documents (`NoSuchTagSetError`, `BucketAlreadyOwnedByYou`,
//! `<name>-<APPID>` names…).

mod common;

use common::{json_attrs, scope, PROJECT, REGION};
use gpuform_objstore::Endpoint;
use gpuform_provider::CloudDriver;
use gpuform_provider::{
    CreateRequest, ErrorKind, ObservedResource, OwnershipTags, Provider, ResourceKind,
};
use gpuform_signing::Credentials;
use gpuform_standins::objstore::{cos::COS, Fault, ObjStoreMock};
use gpuform_standins::tencent::{SECRET_ID, SECRET_KEY};
use gpuform_standins::MockCloud;
use gpuform_tencent::TencentProvider;
use serde_json::{json, Value};
use std::time::Duration;

const B: ResourceKind = ResourceKind::Bucket;
const NAME: &str = "llm-datasets-1250000000";

fn cos_provider(mock: &ObjStoreMock, secret: &str) -> TencentProvider {
    // The API 3.0 endpoint is never called by bucket operations.
    TencentProvider::new(Credentials::new(SECRET_ID, secret), None, None)
        .unwrap()
        .with_cos_endpoint(Some(Endpoint::parse(&mock.endpoint(), "test").unwrap()))
        .unwrap()
        .with_cos_retries(0, Duration::from_millis(1))
}

fn start() -> (ObjStoreMock, TencentProvider) {
    let mock = ObjStoreMock::start(COS);
    let p = cos_provider(&mock, SECRET_KEY);
    (mock, p)
}

fn own(address: &str, token: &str) -> OwnershipTags {
    OwnershipTags {
        project: PROJECT.into(),
        address: address.into(),
        token: token.into(),
        lineage: "lineage-1".into(),
    }
}

fn req_with(address: &str, token: &str, a: Value) -> CreateRequest {
    CreateRequest {
        kind: B,
        scope: scope(),
        attrs: json_attrs(a),
        refs: Default::default(),
        ownership: own(address, token),
    }
}

fn req(address: &str, a: Value) -> CreateRequest {
    req_with(address, &format!("tok-{address}"), a)
}

fn plain(name: &str) -> Value {
    json!({"name": name, "versioning": false, "encryption": false, "lifecycle": {},
           "public_access_blocked": true, "force_destroy": false})
}

fn full() -> Value {
    json!({
        "name": NAME,
        "storage_class": "archive",
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

async fn read(p: &TencentProvider, id: &str) -> Option<ObservedResource> {
    p.read(&scope(), B, &[id.to_string()]).await.unwrap().pop()
}

#[tokio::test]
async fn create_reads_back_every_attribute() {
    let (mock, p) = start();
    let made = p.create(&req("bucket.data", full())).await.unwrap();
    assert_eq!(made.id, NAME);
    assert_eq!(made.region, REGION);
    assert_eq!(made.ownership, Some(own("bucket.data", "tok-bucket.data")));
    let want = json!({
        "name": NAME,
        "storage_class": "archive",
        "versioning": true,
        "encryption": true,
        "lifecycle": {"archive_after_days": 30, "expire_noncurrent_after_days": 7},
        "public_access_blocked": true,
        "force_destroy": false,
        "tags": {"team": "ml"},
        "object_count": 0,
    });
    assert_eq!(serde_json::to_value(&made.attrs).unwrap(), want);
    // What COS keeps, read by the stand-in's own code.
    let b = mock.bucket(NAME).unwrap();
    assert_eq!(b.region, REGION);
    assert_eq!(b.acl, "private");
    assert_eq!(b.versioning.as_deref(), Some("Enabled"));
    assert_eq!(b.sse.as_deref(), Some("AES256"));
    // No bucket class on COS: the class is gpuform's tag.
    assert_eq!(b.class, "STANDARD");
    let tag = |k: &str| b.tags.get(k).map(String::as_str);
    assert_eq!(tag("gpuform:storage-class"), Some("archive"));
    assert_eq!(tag("gpuform:project"), Some(PROJECT));
    assert_eq!(tag("gpuform:address"), Some("bucket.data"));
    assert_eq!(tag("gpuform:kind"), Some("bucket"));
    assert_eq!(tag("team"), Some("ml"));
    assert_eq!(tag("gpuform:force-destroy"), None);
    let l = b.lifecycle.unwrap();
    let rule = l.kid("Rule").unwrap();
    // COS scopes a rule with `Filter` (PUT Bucket lifecycle 8280).
    assert!(rule.kid("Filter").is_some() && rule.kid("Prefix").is_none());
    let t = rule.kid("Transition").unwrap();
    assert_eq!(
        (t.text_of("Days"), t.text_of("StorageClass")),
        (Some("30"), Some("ARCHIVE"))
    );
    assert_eq!(
        rule.kid("NoncurrentVersionExpiration")
            .unwrap()
            .text_of("NoncurrentDays"),
        Some("7")
    );
    // Read again, and found by the project's listing.
    assert_eq!(read(&p, NAME).await.unwrap(), made);
    let owned = p
        .buckets()
        .unwrap()
        .list_owned_buckets(&scope(), PROJECT)
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
    // A standard bucket reports no class; force_destroy is read from its tag.
    let mut spec = plain("llm-plain-1250000000");
    spec["force_destroy"] = json!(true);
    let made = p.create(&req("bucket.plain", spec)).await.unwrap();
    assert_eq!(made.attrs.get("storage_class"), None);
    assert_eq!(attr(&made, "force_destroy"), &json!(true));
    assert_eq!(attr(&made, "lifecycle"), &json!({}));
    // Refused only: the look-up of a free name and the settings never set,
    // with COS's codes.
    let expected = [
        "!GetBucketTags",
        "!GetBucketEncryption",
        "!GetBucketLifecycle",
    ];
    let ops = mock.ops();
    assert!(
        !ops.iter()
            .any(|o| o.starts_with('!') && !expected.contains(&o.as_str())),
        "{ops:?}"
    );
}

#[tokio::test]
async fn a_name_without_the_appid_is_refused_before_any_call() {
    let (mock, p) = start();
    let e = p
        .create(&req("bucket.data", plain("llm-datasets")))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("APPID"), "{e}");
    assert_eq!(mock.requests(), 0);
}

#[tokio::test]
async fn drift_is_read_and_an_update_repairs_it() {
    let (mock, p) = start();
    p.create(&req("bucket.data", full())).await.unwrap();
    assert!(mock.edit_behind(NAME, |b| {
        b.lifecycle = None;
        b.versioning = Some("Suspended".into());
        b.sse = None;
        b.acl = "public-read".into();
    }));
    let seen = read(&p, NAME).await.unwrap();
    assert_eq!(attr(&seen, "lifecycle"), &json!({}));
    assert_eq!(attr(&seen, "versioning"), &json!(false));
    assert_eq!(attr(&seen, "encryption"), &json!(false));
    assert_eq!(attr(&seen, "public_access_blocked"), &json!(false));
    let changes = json_attrs(json!({
        "lifecycle": {"archive_after_days": 30, "expire_noncurrent_after_days": 7},
        "versioning": true, "encryption": true, "public_access_blocked": true,
    }));
    let fixed = p.update(&scope(), B, NAME, &changes).await.unwrap();
    assert_eq!(
        attr(&fixed, "lifecycle"),
        &json!({"archive_after_days": 30, "expire_noncurrent_after_days": 7})
    );
    assert_eq!(attr(&fixed, "versioning"), &json!(true));
    assert_eq!(attr(&fixed, "encryption"), &json!(true));
    assert_eq!(attr(&fixed, "public_access_blocked"), &json!(true));
    let b = mock.bucket(NAME).unwrap();
    assert_eq!(
        (b.acl.as_str(), b.sse.as_deref()),
        ("private", Some("AES256"))
    );
}

#[tokio::test]
async fn updates_tags_and_force_destroy_keeping_ownership() {
    let (mock, p) = start();
    p.create(&req("bucket.data", full())).await.unwrap();
    let changes = json_attrs(json!({
        "tags": {"team": "infra", "cost": "7"},
        "force_destroy": true,
        "lifecycle": {"expire_noncurrent_after_days": 3},
    }));
    let o = p.update(&scope(), B, NAME, &changes).await.unwrap();
    assert_eq!(attr(&o, "tags"), &json!({"team": "infra", "cost": "7"}));
    assert_eq!(attr(&o, "force_destroy"), &json!(true));
    assert_eq!(
        attr(&o, "lifecycle"),
        &json!({"expire_noncurrent_after_days": 3})
    );
    assert_eq!(o.ownership, Some(own("bucket.data", "tok-bucket.data")));
    // gpuform's own tags, the class among them, survive a user-tag update.
    assert_eq!(attr(&o, "storage_class"), &json!("archive"));
    let b = mock.bucket(NAME).unwrap();
    assert_eq!(
        b.tags.get("gpuform:force-destroy").map(String::as_str),
        Some("true")
    );
}

#[tokio::test]
async fn a_non_empty_bucket_is_refused_with_its_count_then_emptied_when_forced() {
    let (mock, p) = start();
    p.create(&req("bucket.data", full())).await.unwrap();
    for k in ["a", "b", "a"] {
        assert!(mock.put_object(NAME, k));
    }
    // Versioned: three versions.
    let seen = read(&p, NAME).await.unwrap();
    assert_eq!(attr(&seen, "object_count"), &json!(3));
    assert!(Provider::delete_refusal(&p, &seen)
        .unwrap()
        .contains("3 object(s)"));
    let e = p.delete(&scope(), B, NAME).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("3 object(s)") && e.message.contains("force_destroy"),
        "{e}"
    );
    assert_eq!(mock.object_count(NAME), Some(3));
    p.update(
        &scope(),
        B,
        NAME,
        &json_attrs(json!({"force_destroy": true})),
    )
    .await
    .unwrap();
    p.delete(&scope(), B, NAME).await.unwrap();
    assert!(mock.bucket(NAME).is_none());
    assert!(read(&p, NAME).await.is_none());
    // The Multi-Object Delete carried the Content-MD5 COS requires (the
    // stand-in refuses one without): the bucket was emptied by it.
    assert!(mock.ops().iter().any(|o| o == "DeleteMultipleObjects"));
    // Gone already: done.
    p.delete(&scope(), B, NAME).await.unwrap();
}

#[tokio::test]
async fn someone_elses_bucket_is_never_touched() {
    let (mock, p) = start();
    let theirs = [
        ("gpuform:project", "other"),
        ("gpuform:address", "bucket.data"),
        ("gpuform:token", "t"),
        ("gpuform:lineage", "l"),
    ];
    mock.add_behind(NAME, REGION, &theirs);
    mock.put_object(NAME, "keep");
    let before = mock.bucket(NAME).unwrap();
    let e = p.create(&req("bucket.data", full())).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("project `other`"), "{e}");
    let after = mock.bucket(NAME).unwrap();
    assert_eq!(
        (after.tags, after.objects, after.acl),
        (before.tags, before.objects, before.acl)
    );
    assert!(
        !mock.ops().iter().any(|o| o.contains("Put")),
        "{:?}",
        mock.ops()
    );
    // Not ours to delete either: list_owned never reports it.
    assert!(p
        .buckets()
        .unwrap()
        .list_owned_buckets(&scope(), PROJECT)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_name_taken_by_another_account_is_a_clear_error_not_a_retry() {
    let (mock, p) = start();
    mock.add_foreign(NAME, REGION);
    let e = p.create(&req("bucket.data", full())).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(!e.kind.is_retryable());
    assert!(
        e.message
            .contains(&format!("`{NAME}` is taken by another account")),
        "{e}"
    );
    assert!(mock.bucket(NAME).unwrap().foreign);
}

#[tokio::test]
async fn a_create_cut_after_put_bucket_is_adopted_by_the_next_one() {
    let (mock, p) = start();
    mock.inject(Fault::Once {
        op: "PutBucketTags".into(),
        status: 500,
        code: "InternalError".into(),
    });
    let e = p.create(&req("bucket.data", full())).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient);
    assert!(mock.bucket(NAME).unwrap().tags.is_empty());
    // The untagged, empty bucket answers NoSuchTagSetError: adopted.
    let made = p.create(&req("bucket.data", full())).await.unwrap();
    assert_eq!(made.ownership, Some(own("bucket.data", "tok-bucket.data")));
    assert_eq!(attr(&made, "versioning"), &json!(true));
    assert_eq!(mock.resources().len(), 1);
    let o = p
        .create(&req_with("bucket.data", "another-token", full()))
        .await
        .unwrap();
    assert_eq!(o.ownership.unwrap().token, "another-token");
    assert_eq!(mock.resources().len(), 1);
}

#[tokio::test]
async fn throttling_is_retried_and_a_wrong_secret_never_leaks() {
    let mock = ObjStoreMock::start(COS);
    let p = cos_provider(&mock, SECRET_KEY).with_cos_retries(2, Duration::from_millis(1));
    mock.inject(Fault::Once {
        op: "PutBucket".into(),
        status: 503,
        code: "SlowDown".into(),
    });
    p.create(&req("bucket.data", full())).await.unwrap();
    let canary = "CANARY-cos-secret-77c1";
    let bad = cos_provider(&mock, canary);
    let e = bad.read(&scope(), B, &[NAME.into()]).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.code.as_deref(), Some("SignatureDoesNotMatch"));
    let shown = format!("{e} {e:?} {bad:?}");
    assert!(!shown.contains(canary), "{shown}");
}

#[tokio::test]
async fn audit_lists_every_bucket_of_the_region_tagged_or_not() {
    let (mock, p) = start();
    p.create(&req("bucket.data", full())).await.unwrap();
    mock.add_behind("someone-elses-1250000000", REGION, &[("owner", "alice")]);
    // Untagged: COS answers NoSuchTagSetError, which is no tags, not no bucket.
    mock.add_behind("untagged-1250000000", REGION, &[]);
    mock.add_behind("far-away-1250000000", "ap-beijing", &[]);
    let all = p.buckets().unwrap().list_buckets(&scope()).await.unwrap();
    let names: Vec<&str> = all.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(
        names,
        [NAME, "someone-elses-1250000000", "untagged-1250000000"]
    );
    assert!(all[0].ownership.is_some() && all[1].ownership.is_none());
}
