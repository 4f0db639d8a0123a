//! Buckets on the sandbox: their settings recorded and updated, the
//! mirrored cloud's naming rules, and a non-empty bucket's delete refused
//! unless it is `force_destroy`.

use crate::common;

use common::*;
use gpuform_provider::{Cloud, ErrorKind, ResourceKind};
use serde_json::json;

fn bucket_req(name: &str, extra: serde_json::Value) -> gpuform_provider::CreateRequest {
    let mut a = json!({
        "name": name,
        "versioning": false,
        "encryption": true,
        "lifecycle": {},
        "public_access_blocked": true,
        "force_destroy": false,
        "size_gb": 500,
    });
    if let (Some(m), Some(x)) = (a.as_object_mut(), extra.as_object()) {
        m.extend(x.clone());
    }
    request(
        ResourceKind::Bucket,
        "us-east-1",
        a,
        &[],
        ownership("p", "bucket.data"),
    )
}

#[tokio::test]
async fn settings_are_recorded_and_updated_but_the_size_estimate_is_not() {
    let (_sb, p) = fresh_aws("bucket-settings");
    let made = create(
        &*p,
        &bucket_req(
            "p-data",
            json!({"versioning": true, "lifecycle": {"archive_after_days": 30}}),
        ),
    )
    .await;
    assert_eq!(made.id, "p-data");
    assert_eq!(made.attrs["versioning"], json!(true));
    assert_eq!(made.attrs["lifecycle"], json!({"archive_after_days": 30}));
    assert_eq!(made.attrs["public_access_blocked"], json!(true));
    assert_eq!(made.attrs["object_count"], json!(0));
    // No cloud reports the spec's estimate: the sandbox does not either.
    assert!(!made.attrs.contains_key("size_gb"));
    let s = scope("us-east-1");
    let after = p
        .update(
            &s,
            ResourceKind::Bucket,
            "p-data",
            &attrs(json!({"lifecycle": {}, "encryption": false, "size_gb": 900})),
        )
        .await
        .unwrap();
    assert_eq!(after.attrs["lifecycle"], json!({}));
    assert_eq!(after.attrs["encryption"], json!(false));
    assert!(!after.attrs.contains_key("size_gb"));
    let e = p
        .update(
            &s,
            ResourceKind::Bucket,
            "p-data",
            &attrs(json!({"storage_class": "archive"})),
        )
        .await
        .unwrap_err();
    says(&e, &["storage_class", "needs a replacement"]);
}

#[tokio::test]
async fn names_follow_the_mirrored_clouds_rules() {
    let sb = open(&temp_dir("bucket-names"));
    // `.` is valid on S3, not on OSS.
    let aws = sb.provider(Cloud::Aws);
    create(&*aws, &bucket_req("p.data", json!({}))).await;
    let ali = sb.provider(Cloud::Alibaba);
    let mut req = bucket_req("p.data", json!({}));
    req.scope = scope("cn-hangzhou");
    let e = ali.create(&req).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    says(&e, &["Alibaba OSS", "it contains `.`", "`p-data`"]);
    // Names are global: another project's create of a taken name is refused
    // (the same request again is the same create, answered idempotently).
    let again = create(&*aws, &bucket_req("p.data", json!({}))).await;
    assert_eq!(again.id, "p.data");
    let mut other = bucket_req("p.data", json!({}));
    other.ownership = ownership("q", "bucket.data");
    let e = aws.create(&other).await.unwrap_err();
    says(&e, &["already taken"]);
}

#[tokio::test]
async fn a_non_empty_bucket_is_deleted_only_with_force_destroy() {
    let (sb, p) = fresh_aws("bucket-delete");
    create(&*p, &bucket_req("p-data", json!({}))).await;
    let s = scope("us-east-1");
    // Objects put in by someone else (the test hook for the object count).
    sb.set_attr_behind("p-data", "object_count", json!(3))
        .unwrap();
    let e = p
        .delete(&s, ResourceKind::Bucket, "p-data")
        .await
        .unwrap_err();
    // Not retried as a dependency: nothing gpuform does empties it.
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.code.as_deref(), Some("BucketNotEmpty"));
    says(&e, &["p-data", "3 object(s)", "force_destroy: true"]);
    assert!(
        read_one(&*p, "us-east-1", ResourceKind::Bucket, "p-data")
            .await
            .len()
            == 1
    );
    p.update(
        &s,
        ResourceKind::Bucket,
        "p-data",
        &attrs(json!({"force_destroy": true})),
    )
    .await
    .unwrap();
    p.delete(&s, ResourceKind::Bucket, "p-data").await.unwrap();
    assert!(read_one(&*p, "us-east-1", ResourceKind::Bucket, "p-data")
        .await
        .is_empty());
    // An empty bucket needs no force.
    create(&*p, &bucket_req("p-empty", json!({}))).await;
    p.delete(&s, ResourceKind::Bucket, "p-empty").await.unwrap();
}
