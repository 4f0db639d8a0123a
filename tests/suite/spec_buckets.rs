//! Buckets in the spec: every setting checked where it is written, and the
//! bucket's name checked by its cloud's naming rules at `gpuform validate`.

use crate::support;

use gpuform::spec::{self, Vars};
use support::{at, errors, find};

#[test]
fn every_setting_is_read_with_its_default() {
    let text = "\
project: lab
buckets:
  data:
    cloud: aws
    region: us-east-1
  ckpt:
    cloud: alibaba
    region: cn-hangzhou
    name: lab-checkpoints-2026
    storage_class: archive
    versioning: true
    encryption: false
    lifecycle:
      archive_after_days: 30
      expire_noncurrent_after_days: 7
    size_gb: 1500.5
    force_destroy: true
    tags: {team: ml}
";
    let loaded = spec::load_str("ok.yaml", text, &Vars::new()).unwrap();
    let data = &loaded.spec.buckets["data"];
    assert_eq!(data.name, None);
    assert_eq!(data.storage_class, spec::StorageClass::Standard);
    assert!(!data.versioning && data.encryption && !data.force_destroy);
    assert_eq!(data.lifecycle, None);
    assert_eq!(data.size_gb, None);
    let ckpt = &loaded.spec.buckets["ckpt"];
    assert_eq!(ckpt.name.as_deref(), Some("lab-checkpoints-2026"));
    assert_eq!(ckpt.storage_class, spec::StorageClass::Archive);
    assert!(ckpt.versioning && !ckpt.encryption && ckpt.force_destroy);
    let l = ckpt.lifecycle.as_ref().unwrap();
    assert_eq!(
        (l.archive_after_days, l.expire_noncurrent_after_days),
        (Some(30), Some(7))
    );
    assert_eq!(ckpt.size_gb, Some(1500.5));
}

#[test]
fn bad_settings_are_located_errors() {
    let d = errors(
        "\
project: lab
buckets:
  data:
    cloud: aws
    region: us-east-1
    storage_class: cold
    versioning: \"yes\"
    lifecycle:
      archive_after_days: 0
      delete_after_days: 3
    size_gb: -5
    force_destroy: maybe
",
    );
    let e = find(&d, "`cold`");
    assert_eq!(at(e).2, "buckets.data.storage_class");
    assert_eq!(at(e).0, 6);
    let e = find(&d, "for `versioning`");
    assert_eq!((at(e).0, at(e).1), (7, 17));
    assert!(e.hint.as_deref().unwrap().contains("without quotes"));
    let e = find(&d, "`archive_after_days` must be at least 1");
    assert_eq!(at(e).2, "buckets.data.lifecycle.archive_after_days");
    let e = find(&d, "unknown key `delete_after_days` in `lifecycle`");
    assert_eq!(at(e).0, 10);
    let e = find(&d, "a size in GB greater than 0 for `size_gb`");
    assert_eq!(at(e).0, 11);
    find(&d, "for `force_destroy`");
}

#[test]
fn noncurrent_expiry_needs_versioning() {
    let d = errors(
        "\
project: lab
buckets:
  data:
    cloud: aws
    region: us-east-1
    lifecycle:
      expire_noncurrent_after_days: 7
",
    );
    let e = find(&d, "needs `versioning: true`");
    assert_eq!(
        (at(e).0, at(e).2),
        (7, "buckets.data.lifecycle.expire_noncurrent_after_days")
    );
}

#[test]
fn names_are_checked_by_the_buckets_cloud() {
    // `.` is fine on S3 and OBS, not on OSS.
    let ok = "\
project: lab
buckets:
  a: {cloud: aws, region: us-east-1, name: lab.data.v2}
  h: {cloud: huawei, region: cn-north-4, name: lab.data.v2}
";
    spec::load_str("ok.yaml", ok, &Vars::new()).unwrap();
    let d = errors(
        "\
project: lab
buckets:
  o:
    cloud: alibaba
    region: cn-hangzhou
    name: lab.data.v2
",
    );
    let e = find(
        &d,
        "bucket name `lab.data.v2` is not valid: it contains `.`",
    );
    assert_eq!(at(e), (6, 11, "buckets.o.name"));
    let hint = e.hint.as_deref().unwrap();
    assert!(hint.contains("Alibaba OSS"), "{hint}");
    assert!(hint.contains("E.g. `name: lab-data-v2`"), "{hint}");
}

#[test]
fn a_derived_name_is_checked_too_and_reported_at_the_bucket() {
    // The project may hold `_` and upper case; the derived name cannot.
    let d = errors(
        "\
project: ML_Lab
buckets:
  data:
    cloud: sandbox
    region: us-east-1
",
    );
    let e = find(&d, "would be named `ML_Lab-data`");
    assert_eq!((at(e).0, at(e).2), (3, "buckets.data"));
    assert!(e.message.contains("upper-case letter `M`"), "{}", e.message);
    let hint = e.hint.as_deref().unwrap();
    assert!(hint.starts_with("set `name:` explicitly."), "{hint}");
    assert!(hint.contains("The sandbox mirrors AWS S3."), "{hint}");
}

#[test]
fn cos_names_carry_the_appid_and_say_where_it_comes_from() {
    let d = errors(
        "\
project: lab
buckets:
  data:
    cloud: tencent
    region: ap-shanghai
",
    );
    let e = find(&d, "on Tencent COS needs a `name`");
    assert!(e
        .hint
        .as_deref()
        .unwrap()
        .contains("Account Information page"));
    let d = errors(
        "\
project: lab
buckets:
  data:
    cloud: tencent
    region: ap-shanghai
    name: lab-data
",
    );
    let e = find(&d, "does not end with `-<APPID>`");
    assert_eq!(at(e).2, "buckets.data.name");
    let ok = "\
project: lab
buckets:
  data: {cloud: tencent, region: ap-shanghai, name: lab-data-1250000000}
";
    spec::load_str("ok.yaml", ok, &Vars::new()).unwrap();
}
