//! OBS buckets against the object-storage stand-in
//! (`gpuform_standins::objstore` with the OBS flavor), which verifies every
//! request's OBS signature with its own verifier, parses the XML bodies
//! with its own reader and answers as the OBS API reference documents
//! (`x-obs-storage-class`, `?storageClass`, `NoSuchTagSet`, a create's
//! `Location`, an idempotent create of one's own bucket…).

use gpuform_huawei::HuaweiProvider;
use gpuform_provider::CloudDriver;
use gpuform_provider::{
    Attrs, CreateRequest, ErrorKind, ObservedResource, OwnershipTags, Provider, ResourceKind, Scope,
};
use gpuform_standins::huawei::{TEST_AK, TEST_PROJECT_ID, TEST_SK};
use gpuform_standins::objstore::{obs::OBS, Fault, ObjStoreMock};
use gpuform_standins::MockCloud;
use serde_json::{json, Value};
use std::time::Duration;

const B: ResourceKind = ResourceKind::Bucket;
const NAME: &str = "llm-datasets";
const REGION: &str = "cn-north-4";
const PROJECT: &str = "llm";

fn scope() -> Scope {
    Scope {
        region: REGION.into(),
    }
}

fn json_attrs(v: Value) -> Attrs {
    v.as_object()
        .expect("an object")
        .clone()
        .into_iter()
        .collect()
}

fn obs_provider(mock: &ObjStoreMock, secret: &str) -> HuaweiProvider {
    // The ECS/VPC endpoint is never called by bucket operations.
    let vars = [
        ("HUAWEICLOUD_SDK_AK", TEST_AK),
        ("HUAWEICLOUD_SDK_SK", secret),
        ("HUAWEICLOUD_SDK_PROJECT_ID", TEST_PROJECT_ID),
        ("GPUFORM_HUAWEI_OBS_ENDPOINT", &mock.endpoint()),
    ];
    HuaweiProvider::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .unwrap()
        .with_obs_retries(0, Duration::from_millis(1))
}

fn start() -> (ObjStoreMock, HuaweiProvider) {
    let mock = ObjStoreMock::start(OBS);
    let p = obs_provider(&mock, TEST_SK);
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

async fn read(p: &HuaweiProvider, id: &str) -> Option<ObservedResource> {
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
    // What OBS keeps, read by the stand-in's own code.
    let b = mock.bucket(NAME).unwrap();
    assert_eq!(b.region, REGION);
    assert_eq!(b.acl, "private");
    assert_eq!(b.versioning.as_deref(), Some("Enabled"));
    assert_eq!(b.sse.as_deref(), Some("kms"));
    // The bucket's own class (x-obs-storage-class), no tag for it.
    assert_eq!(b.class, "COLD");
    let tag = |k: &str| b.tags.get(k).map(String::as_str);
    assert_eq!(tag("gpuform:storage-class"), None);
    assert_eq!(tag("gpuform:project"), Some(PROJECT));
    assert_eq!(tag("gpuform:address"), Some("bucket.data"));
    assert_eq!(tag("gpuform:kind"), Some("bucket"));
    assert_eq!(tag("team"), Some("ml"));
    assert_eq!(tag("gpuform:force-destroy"), None);
    let l = b.lifecycle.unwrap();
    let rule = l.kid("Rule").unwrap();
    // OBS scopes a rule with its own `Prefix` (obs_04_0034).
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
    let mut spec = plain("llm-plain");
    spec["force_destroy"] = json!(true);
    let made = p.create(&req("bucket.plain", spec)).await.unwrap();
    assert_eq!(made.attrs.get("storage_class"), None);
    assert_eq!(attr(&made, "force_destroy"), &json!(true));
    assert_eq!(attr(&made, "lifecycle"), &json!({}));
    // Refused only: the look-up of a free name and the settings never set,
    // with OBS's codes.
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
async fn a_name_against_obs_rules_is_refused_before_any_call() {
    let (mock, p) = start();
    let e = p
        .create(&req("bucket.data", plain("llm..datasets")))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("Huawei OBS"), "{e}");
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
    assert_eq!((b.acl.as_str(), b.sse.as_deref()), ("private", Some("kms")));
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
    // The class is the bucket's own: unchanged by tag updates.
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
    // The Multi-Object Delete carried the Content-MD5 OBS requires (the
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
    // The untagged, empty bucket answers NoSuchTagSet: adopted (OBS
    // would also answer a second create of it with 200).
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
    let mock = ObjStoreMock::start(OBS);
    let p = obs_provider(&mock, TEST_SK).with_obs_retries(2, Duration::from_millis(1));
    mock.inject(Fault::Once {
        op: "PutBucket".into(),
        status: 503,
        code: "ServiceUnavailable".into(),
    });
    p.create(&req("bucket.data", full())).await.unwrap();
    let canary = "CANARY-obs-secret-3b9d";
    let bad = obs_provider(&mock, canary);
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
    mock.add_behind("someone-elses", REGION, &[("owner", "alice")]);
    // Untagged: OBS answers NoSuchTagSet, which is no tags, not no bucket.
    mock.add_behind("untagged", REGION, &[]);
    mock.add_behind("far-away", "cn-east-3", &[]);
    let all = p.buckets().unwrap().list_buckets(&scope()).await.unwrap();
    let names: Vec<&str> = all.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(names, [NAME, "someone-elses", "untagged"]);
    assert!(all[0].ownership.is_some() && all[1].ownership.is_none());
}
