//! The bucket scenarios every object-storage cloud runs against this
//! stand-in (create and read back, drift, updates, the non-empty refusal,
//! strangers, a taken name, a cut create adopted, throttling and a wrong
//! secret, the audit listing). Each cloud's `tests/suite/buckets.rs` describes
//! itself with a [`Cloud`] (its flavor, how its provider is built, its
//! names and codes) and calls these; what only one cloud does stays there.

use super::state::Bucket;
use super::{Fault, Flavor, ObjStoreMock};
use crate::harness::{attrs_of, token_of, Owner};
use crate::MockCloud;
use gpuform_provider::{
    CloudDriver, CreateRequest, ErrorKind, ObservedResource, OwnershipTags, Provider, ResourceKind,
    Scope,
};
use serde_json::{json, Value};

const B: ResourceKind = ResourceKind::Bucket;

/// One `#[tokio::test]` per named scenario of this module, each running it
/// against the cloud `$cloud` (a [`Cloud`]): for the scenarios a cloud runs
/// as they are, with nothing of its own to add. The test is named after the
/// scenario, so a failure names it. Without names: every scenario that takes
/// nothing but the cloud. With `refusing $test($name, $says)`: those, plus
/// [`a_bad_name_is_refused_before_any_call`] with `$name` and `$says` as
/// the test `$test`, and [`updates_tags_and_force_destroy_keeping_ownership`]
/// with no attributes of the cloud's own.
#[macro_export]
macro_rules! bucket_scenarios {
    ($cloud:expr; refusing $test:ident($name:expr, $says:expr)) => {
        $crate::bucket_scenarios!($cloud);

        #[tokio::test]
        async fn $test() {
            $crate::objstore::suite::a_bad_name_is_refused_before_any_call(&$cloud, $name, $says)
                .await;
        }

        #[tokio::test]
        async fn updates_tags_and_force_destroy_keeping_ownership() {
            $crate::objstore::suite::updates_tags_and_force_destroy_keeping_ownership(&$cloud, &[])
                .await;
        }
    };
    ($cloud:expr) => {
        $crate::bucket_scenarios!(
            $cloud;
            create_reads_back_every_attribute,
            drift_is_read_and_an_update_repairs_it,
            a_non_empty_bucket_is_refused_with_its_count_then_emptied_when_forced,
            an_unfinished_upload_keeps_a_bucket_until_a_forced_delete_aborts_it,
            someone_elses_bucket_is_never_touched,
            a_name_taken_by_another_account_is_a_clear_error_not_a_retry,
            a_create_cut_after_put_bucket_is_adopted_by_the_next_one,
            throttling_is_retried_and_a_wrong_secret_never_leaks,
            audit_lists_every_bucket_of_the_region_tagged_or_not,
        );
    };
    ($cloud:expr; $($scenario:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $scenario() {
                $crate::objstore::suite::$scenario(&$cloud).await;
            }
        )+
    };
}

/// Asserts that `b` keeps the lifecycle [`Cloud::full`] asks for: one
/// `Rule` scoped by its element `scope` (the other of `Filter` and `Prefix`
/// absent), moving objects to `class` after 30 days and expiring noncurrent
/// versions after 7.
pub fn assert_full_lifecycle(b: &Bucket, scope: &str, class: &str) {
    let l = b.lifecycle.clone().expect("a lifecycle");
    let rule = l.kid("Rule").expect("a Rule");
    let other = if scope == "Filter" {
        "Prefix"
    } else {
        "Filter"
    };
    assert!(
        rule.kid(scope).is_some() && rule.kid(other).is_none(),
        "scoped by {scope}, not {other}: {rule:?}"
    );
    let t = rule.kid("Transition").expect("a Transition");
    assert_eq!(
        (t.text_of("Days"), t.text_of("StorageClass")),
        (Some("30"), Some(class))
    );
    let noncurrent = rule.kid("NoncurrentVersionExpiration");
    let days = noncurrent.expect("a NoncurrentVersionExpiration");
    assert_eq!(days.text_of("NoncurrentDays"), Some("7"));
}
/// The address every scenario's bucket is declared at.
pub const ADDRESS: &str = "bucket.data";

/// What differs between the clouds in these scenarios.
pub struct Cloud<P> {
    pub flavor: Flavor,
    /// A provider calling `mock` and signing with `secret`, retrying a
    /// retryable answer `retries` times.
    pub provider: fn(mock: &ObjStoreMock, secret: &str, retries: u32) -> P,
    /// The secret the stand-in verifies signatures with.
    pub secret: &'static str,
    /// The project `llm` lives here.
    pub region: &'static str,
    /// Another region of the same account.
    pub far_region: &'static str,
    /// Appended to every bucket name (COS: `-<APPID>`).
    pub suffix: &'static str,
    /// The neutral storage class of [`Cloud::full`].
    pub class: &'static str,
    /// The server-side encryption the cloud keeps for `encryption: true`.
    pub sse: &'static str,
    /// The code of the cloud's throttling answer (503).
    pub throttle_code: &'static str,
    /// A wrong secret that must never show in an error or a provider's Debug.
    pub canary: &'static str,
    /// What the cloud keeps of [`Cloud::full`]'s class and lifecycle.
    pub stored: fn(&Bucket),
}

impl<P: Provider + CloudDriver> Cloud<P> {
    pub fn owner(&self) -> Owner<'_> {
        Owner {
            region: self.region,
            project: "llm",
            lineage: "lineage-1",
        }
    }

    pub fn scope(&self) -> Scope {
        self.owner().scope()
    }

    /// A bucket name as this cloud wants it.
    pub fn name(&self, base: &str) -> String {
        format!("{base}{}", self.suffix)
    }

    /// The bucket of the scenarios, `llm-datasets`.
    pub fn data(&self) -> String {
        self.name("llm-datasets")
    }

    pub fn own_with(&self, address: &str, token: &str) -> OwnershipTags {
        self.owner().ownership(address, token.into())
    }

    pub fn own(&self, address: &str) -> OwnershipTags {
        self.own_with(address, &token_of(address))
    }

    pub fn req_with(&self, address: &str, token: &str, a: Value) -> CreateRequest {
        self.owner().request(B, address, token.into(), a, &[])
    }

    pub fn req(&self, address: &str, a: Value) -> CreateRequest {
        self.req_with(address, &token_of(address), a)
    }

    pub fn plain(&self, base: &str) -> Value {
        json!({"name": self.name(base), "versioning": false, "encryption": false,
               "lifecycle": {}, "public_access_blocked": true, "force_destroy": false})
    }

    /// Every setting, in [`Cloud::class`].
    pub fn full(&self) -> Value {
        json!({
            "name": self.data(),
            "storage_class": self.class,
            "versioning": true,
            "encryption": true,
            "lifecycle": {"archive_after_days": 30, "expire_noncurrent_after_days": 7},
            "public_access_blocked": true,
            "force_destroy": false,
            "size_gb": 500,
            "tags": {"team": "ml"},
        })
    }

    /// A fresh stand-in and a provider that does not retry.
    pub fn start(&self) -> (ObjStoreMock, P) {
        let mock = ObjStoreMock::start(self.flavor);
        let p = (self.provider)(&mock, self.secret, 0);
        (mock, p)
    }

    /// A stand-in and a provider, with the bucket [`Cloud::full`] asks
    /// for made at [`ADDRESS`]; its name.
    pub async fn start_with_full_bucket(&self) -> (ObjStoreMock, P, String) {
        let (mock, p) = self.start();
        let name = self.data();
        p.create(&self.req(ADDRESS, self.full())).await.unwrap();
        (mock, p, name)
    }

    pub async fn read(&self, p: &P, id: &str) -> Option<ObservedResource> {
        Provider::read(p, &self.scope(), B, &[id.to_string()])
            .await
            .unwrap()
            .pop()
    }

    async fn update(&self, p: &P, id: &str, changes: Value) -> ObservedResource {
        p.update(&self.scope(), B, id, &attrs_of(changes))
            .await
            .unwrap()
    }
}

pub fn attr<'a>(o: &'a ObservedResource, k: &str) -> &'a Value {
    o.attrs.get(k).unwrap_or(&Value::Null)
}

pub async fn create_reads_back_every_attribute<P: Provider + CloudDriver>(c: &Cloud<P>) {
    let (mock, p) = c.start();
    let name = c.data();
    let made = p.create(&c.req(ADDRESS, c.full())).await.unwrap();
    assert_eq!(made.id, name);
    assert_eq!(made.region, c.region);
    assert_eq!(made.ownership, Some(c.own(ADDRESS)));
    let want = json!({
        "name": name,
        "storage_class": c.class,
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
    let b = mock.bucket(&name).unwrap();
    assert_eq!(b.region, c.region);
    assert_eq!(b.acl, "private");
    assert_eq!(b.versioning.as_deref(), Some("Enabled"));
    assert_eq!(b.sse.as_deref(), Some(c.sse));
    let tag = |k: &str| b.tags.get(k).map(String::as_str);
    assert_eq!(tag("gpuform:project"), Some("llm"));
    assert_eq!(tag("gpuform:address"), Some(ADDRESS));
    assert_eq!(tag("gpuform:kind"), Some("bucket"));
    assert_eq!(tag("team"), Some("ml"));
    assert_eq!(tag("gpuform:force-destroy"), None);
    (c.stored)(&b);
    // Read again, and found by the project's listing.
    assert_eq!(c.read(&p, &name).await.unwrap(), made);
    let owned = p
        .buckets()
        .unwrap()
        .list_owned_buckets(&c.scope(), "llm")
        .await
        .unwrap();
    assert_eq!(owned, vec![made.clone()]);
    assert!(p
        .buckets()
        .unwrap()
        .list_owned_buckets(&c.scope(), "other")
        .await
        .unwrap()
        .is_empty());
    // A standard bucket reports no class; force_destroy is read from its tag.
    let mut spec = c.plain("llm-plain");
    spec["force_destroy"] = json!(true);
    let made = p.create(&c.req("bucket.plain", spec)).await.unwrap();
    assert_eq!(made.attrs.get("storage_class"), None);
    assert_eq!(attr(&made, "force_destroy"), &json!(true));
    assert_eq!(attr(&made, "lifecycle"), &json!({}));
    // Refused only: the look-up of a free name and the settings never set.
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

/// A name the cloud's rules refuse fails with `words`, before any call.
pub async fn a_bad_name_is_refused_before_any_call<P: Provider + CloudDriver>(
    c: &Cloud<P>,
    bad: &str,
    words: &str,
) {
    let (mock, p) = c.start();
    let mut spec = c.plain("");
    spec["name"] = json!(bad);
    let e = p.create(&c.req(ADDRESS, spec)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains(words), "{e}");
    assert_eq!(mock.requests(), 0);
}

pub async fn drift_is_read_and_an_update_repairs_it<P: Provider + CloudDriver>(c: &Cloud<P>) {
    let (mock, p, name) = c.start_with_full_bucket().await;
    assert!(mock.edit_behind(&name, |b| {
        b.lifecycle = None;
        b.versioning = Some("Suspended".into());
        b.sse = None;
        b.acl = "public-read".into();
    }));
    let seen = c.read(&p, &name).await.unwrap();
    assert_eq!(attr(&seen, "lifecycle"), &json!({}));
    assert_eq!(attr(&seen, "versioning"), &json!(false));
    assert_eq!(attr(&seen, "encryption"), &json!(false));
    assert_eq!(attr(&seen, "public_access_blocked"), &json!(false));
    let changes = json!({
        "lifecycle": {"archive_after_days": 30, "expire_noncurrent_after_days": 7},
        "versioning": true, "encryption": true, "public_access_blocked": true,
    });
    let fixed = c.update(&p, &name, changes).await;
    assert_eq!(
        attr(&fixed, "lifecycle"),
        &json!({"archive_after_days": 30, "expire_noncurrent_after_days": 7})
    );
    assert_eq!(attr(&fixed, "versioning"), &json!(true));
    assert_eq!(attr(&fixed, "encryption"), &json!(true));
    assert_eq!(attr(&fixed, "public_access_blocked"), &json!(true));
    let b = mock.bucket(&name).unwrap();
    assert_eq!((b.acl.as_str(), b.sse.as_deref()), ("private", Some(c.sse)));
}

/// Tags, force_destroy and a rule change in place, in one update with
/// `more` changes; ownership and the class survive them. Returns the
/// stand-in, the provider and what the update answered, for what a cloud
/// checks beyond.
pub async fn updates_tags_and_force_destroy_keeping_ownership<P: Provider + CloudDriver>(
    c: &Cloud<P>,
    more: &[(&str, Value)],
) -> (ObjStoreMock, P, ObservedResource) {
    let (mock, p, name) = c.start_with_full_bucket().await;
    let mut changes = json!({
        "tags": {"team": "infra", "cost": "7"},
        "force_destroy": true,
        "lifecycle": {"expire_noncurrent_after_days": 3},
    });
    for (k, v) in more {
        changes[*k] = v.clone();
    }
    let o = c.update(&p, &name, changes).await;
    assert_eq!(attr(&o, "tags"), &json!({"team": "infra", "cost": "7"}));
    assert_eq!(attr(&o, "force_destroy"), &json!(true));
    assert_eq!(
        attr(&o, "lifecycle"),
        &json!({"expire_noncurrent_after_days": 3})
    );
    assert_eq!(o.ownership, Some(c.own(ADDRESS)));
    assert_eq!(attr(&o, "storage_class"), &json!(c.class));
    let b = mock.bucket(&name).unwrap();
    assert_eq!(
        b.tags.get("gpuform:force-destroy").map(String::as_str),
        Some("true")
    );
    (mock, p, o)
}

pub async fn a_non_empty_bucket_is_refused_with_its_count_then_emptied_when_forced<
    P: Provider + CloudDriver,
>(
    c: &Cloud<P>,
) {
    let (mock, p, name) = c.start_with_full_bucket().await;
    for k in ["a", "b", "a"] {
        assert!(mock.put_object(&name, k));
    }
    // Versioned: three versions.
    let seen = c.read(&p, &name).await.unwrap();
    assert_eq!(attr(&seen, "object_count"), &json!(3));
    assert!(Provider::delete_refusal(&p, &seen)
        .unwrap()
        .contains("3 object(s)"));
    let e = p.delete(&c.scope(), B, &name).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("3 object(s)") && e.message.contains("force_destroy"),
        "{e}"
    );
    assert_eq!(mock.object_count(&name), Some(3));
    // Refused by the count, before any DeleteBucket reaches the cloud.
    assert!(
        !mock.ops().iter().any(|o| o.ends_with("DeleteBucket")),
        "{:?}",
        mock.ops()
    );
    c.update(&p, &name, json!({"force_destroy": true})).await;
    p.delete(&c.scope(), B, &name).await.unwrap();
    assert!(mock.bucket(&name).is_none());
    assert!(c.read(&p, &name).await.is_none());
    // The Multi-Object Delete carried the Content-MD5 the cloud requires
    // (the stand-in refuses one without): the bucket was emptied by it.
    assert!(mock.ops().iter().any(|o| o == "DeleteMultipleObjects"));
    // Gone already: done.
    p.delete(&c.scope(), B, &name).await.unwrap();
}

/// The parts of a multipart upload nobody finished keep a bucket from
/// being deleted (OSS, COS and OBS refuse with `BucketNotEmpty`): without
/// `force_destroy` the refusal names them; a forced delete aborts them
/// (ListMultipartUploads, AbortMultipartUpload on the object's path) and
/// the bucket goes.
pub async fn an_unfinished_upload_keeps_a_bucket_until_a_forced_delete_aborts_it<
    P: Provider + CloudDriver,
>(
    c: &Cloud<P>,
) {
    let (mock, p, name) = c.start_with_full_bucket().await;
    // One more than a listing page holds (1,000), so the abort pages.
    for i in 0..1001 {
        assert!(mock
            .start_upload(&name, &format!("ckpt/step {i}.pt"))
            .is_some());
    }
    let e = p.delete(&c.scope(), B, &name).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("unfinished multipart uploads") && e.message.contains("force_destroy"),
        "{e}"
    );
    assert!(mock.bucket(&name).is_some());
    c.update(&p, &name, json!({"force_destroy": true})).await;
    p.delete(&c.scope(), B, &name).await.unwrap();
    assert!(mock.bucket(&name).is_none());
    let count = |op: &str| mock.ops().iter().filter(|o| *o == op).count();
    assert_eq!(count("AbortMultipartUpload"), 1001);
    assert_eq!(count("ListMultipartUploads"), 2);
}

/// A bucket another project tagged is refused and left as it was. Returns
/// the stand-in and the provider for what a cloud checks beyond.
pub async fn someone_elses_bucket_is_never_touched<P: Provider + CloudDriver>(
    c: &Cloud<P>,
) -> (ObjStoreMock, P) {
    let (mock, p) = c.start();
    let name = c.data();
    let theirs = [
        ("gpuform:project", "other"),
        ("gpuform:address", ADDRESS),
        ("gpuform:token", "t"),
        ("gpuform:lineage", "l"),
    ];
    mock.add_behind(&name, c.region, &theirs);
    mock.put_object(&name, "keep");
    let before = mock.bucket(&name).unwrap();
    let e = p.create(&c.req(ADDRESS, c.full())).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("project `other`"), "{e}");
    let after = mock.bucket(&name).unwrap();
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
        .list_owned_buckets(&c.scope(), "llm")
        .await
        .unwrap()
        .is_empty());
    (mock, p)
}

/// Returns the stand-in and the provider for what a cloud checks beyond.
pub async fn a_name_taken_by_another_account_is_a_clear_error_not_a_retry<
    P: Provider + CloudDriver,
>(
    c: &Cloud<P>,
) -> (ObjStoreMock, P) {
    let (mock, p) = c.start();
    let name = c.data();
    mock.add_foreign(&name, c.region);
    let e = p.create(&c.req(ADDRESS, c.full())).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(!e.kind.is_retryable());
    assert!(
        e.message
            .contains(&format!("`{name}` is taken by another account")),
        "{e}"
    );
    assert!(mock.bucket(&name).unwrap().foreign);
    (mock, p)
}

pub async fn a_create_cut_after_put_bucket_is_adopted_by_the_next_one<P: Provider + CloudDriver>(
    c: &Cloud<P>,
) {
    let (mock, p) = c.start();
    let name = c.data();
    mock.inject(Fault::Once {
        op: "PutBucketTags".into(),
        status: 500,
        code: "InternalError".into(),
    });
    let e = p.create(&c.req(ADDRESS, c.full())).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient);
    assert!(mock.bucket(&name).unwrap().tags.is_empty());
    // The untagged, empty bucket answers the cloud's no-tag-set: adopted.
    let made = p.create(&c.req(ADDRESS, c.full())).await.unwrap();
    assert_eq!(made.ownership, Some(c.own(ADDRESS)));
    assert_eq!(attr(&made, "versioning"), &json!(true));
    assert_eq!(mock.resources().len(), 1);
    // Tagged by this address: adopted again by a create with a new token.
    let o = p
        .create(&c.req_with(ADDRESS, "another-token", c.full()))
        .await
        .unwrap();
    assert_eq!(o.ownership, Some(c.own_with(ADDRESS, "another-token")));
    assert_eq!(mock.resources().len(), 1);
}

pub async fn throttling_is_retried_and_a_wrong_secret_never_leaks<
    P: Provider + CloudDriver + std::fmt::Debug,
>(
    c: &Cloud<P>,
) {
    let mock = ObjStoreMock::start(c.flavor);
    let p = (c.provider)(&mock, c.secret, 2);
    mock.inject(Fault::Once {
        op: "PutBucket".into(),
        status: 503,
        code: c.throttle_code.into(),
    });
    p.create(&c.req(ADDRESS, c.full())).await.unwrap();
    let bad = (c.provider)(&mock, c.canary, 0);
    let e = Provider::read(&bad, &c.scope(), B, &[c.data()])
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.code.as_deref(), Some("SignatureDoesNotMatch"));
    let shown = format!("{e} {e:?} {bad:?}");
    assert!(!shown.contains(c.canary), "{shown}");
}

pub async fn audit_lists_every_bucket_of_the_region_tagged_or_not<P: Provider + CloudDriver>(
    c: &Cloud<P>,
) {
    let (mock, p) = c.start();
    p.create(&c.req(ADDRESS, c.full())).await.unwrap();
    let theirs = c.name("someone-elses");
    let untagged = c.name("untagged");
    mock.add_behind(&theirs, c.region, &[("owner", "alice")]);
    // Untagged: the cloud's no-tag-set answer is no tags, not no bucket.
    mock.add_behind(&untagged, c.region, &[]);
    mock.add_behind(&c.name("far-away"), c.far_region, &[]);
    let all = p.buckets().unwrap().list_buckets(&c.scope()).await.unwrap();
    let names: Vec<&str> = all.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(names, [c.data(), theirs, untagged]);
    assert!(all[0].ownership.is_some() && all[1].ownership.is_none());
}
