//! Buckets on AWS, against moto's S3 over HTTP (scripts/moto.sh sets up
//! moto; GPUFORM_TEST_MOTO_URL names it). The gpuform binary does the work;
//! the test looks at S3 with boto3, another client than the one under test.
//! Each test keeps to its own region, so that one test's buckets never
//! change another's ListBuckets answers (and call counts).

use crate::moto;
use crate::support;

use moto::{boto3, killing_proxy, moto_url};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

/// The secret key every run of gpuform gets: it must never be written out.
const CANARY: &str = "gpuformCanary/S3secret+7f3a9c";

fn gpuform(dir: &Path, args: &[&str]) -> Command {
    let mut c = support::gpuform_cmd(dir, args);
    c.env("GPUFORM_LOG", "debug")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", CANARY)
        .env("AWS_REGION", "us-east-1")
        .env("GPUFORM_AWS_SETTLE_MS", "0")
        // moto has no placement groups (HTTP 500).
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env_remove("AWS_ENDPOINT_URL");
    c
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let out = gpuform(dir, args).output().expect("run gpuform");
    for stream in [&out.stdout, &out.stderr] {
        assert!(
            !String::from_utf8_lossy(stream).contains(CANARY),
            "the secret key reached gpuform's output of {args:?}"
        );
    }
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "gpuform {args:?} failed:\n{}",
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn project(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// No file gpuform wrote (state, journal, plans) holds the secret.
fn assert_no_canary_in_files(dir: &Path) {
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "{} holds the secret key",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn bucket_spec(proj: &str, endpoint: &str, region: &str, extra: &str) -> String {
    format!(
        "project: {proj}\nendpoints:\n  aws: {endpoint}\nbuckets:\n  data:\n    cloud: aws\n    region: {region}\n    storage_class: infrequent\n    versioning: true\n    lifecycle:\n      archive_after_days: 30\n      expire_noncurrent_after_days: 7\n    size_gb: 500\n    tags: {{team: ml}}\n{extra}"
    )
}

/// Everything S3 holds about a bucket, read with boto3 (null where S3 has
/// no such configuration).
fn s3_view(region: &str, bucket: &str) -> Value {
    boto3(
        region,
        &format!(
            r#"
b = {bucket:?}
def get(call, key):
    try:
        return call(Bucket=b)[key]
    except s3.exceptions.ClientError as e:
        return None
out = dict(
    location=s3.get_bucket_location(Bucket=b).get('LocationConstraint'),
    tags={{t['Key']: t['Value'] for t in (get(s3.get_bucket_tagging, 'TagSet') or [])}},
    versioning=s3.get_bucket_versioning(Bucket=b).get('Status'),
    lifecycle=get(s3.get_bucket_lifecycle_configuration, 'Rules'),
    encryption=get(s3.get_bucket_encryption, 'ServerSideEncryptionConfiguration'),
    public_access=get(s3.get_public_access_block, 'PublicAccessBlockConfiguration'),
)
print(json.dumps(out, default=str))
"#
        ),
    )
}

/// The names of the account's buckets in `region` tagged with `proj`.
fn owned_buckets(region: &str, proj: &str) -> Vec<String> {
    let v = boto3(
        region,
        &format!(
            r#"
names = []
for bk in s3.list_buckets()['Buckets']:
    n = bk['Name']
    try:
        loc = s3.get_bucket_location(Bucket=n).get('LocationConstraint') or 'us-east-1'
    except s3.exceptions.NoSuchBucket:
        continue  # another test's bucket, deleted since the listing
    if loc != {region:?}:
        continue
    try:
        tags = {{t['Key']: t['Value'] for t in s3.get_bucket_tagging(Bucket=n)['TagSet']}}
    except s3.exceptions.ClientError:
        tags = {{}}
    if tags.get('gpuform:project') == {proj:?}:
        names.append(n)
print(json.dumps(names))
"#
        ),
    );
    serde_json::from_value(v).unwrap()
}

fn bucket_exists(region: &str, bucket: &str) -> bool {
    boto3(
        region,
        &format!(
            "print(json.dumps({bucket:?} in [b['Name'] for b in s3.list_buckets()['Buckets']]))"
        ),
    )
    .as_bool()
    .unwrap()
}

fn rule<'a>(view: &'a Value, id: &str) -> Option<&'a Value> {
    view["lifecycle"].as_array()?.iter().find(|r| r["ID"] == id)
}

#[test]
fn a_bucket_is_made_as_specified_and_drift_is_repaired() {
    let region = "eu-west-1";
    let proj = project("bkt");
    let name = format!("{proj}-data");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("spec.yaml"),
        bucket_spec(&proj, &moto_url(), region, ""),
    )
    .unwrap();
    ok(d, &["apply", "spec.yaml", "--auto-approve"]);

    let view = s3_view(region, &name);
    assert_eq!(view["location"], region, "{view}");
    let tags = &view["tags"];
    assert_eq!(tags["team"], "ml", "{view}");
    assert_eq!(tags["gpuform:project"], proj.as_str(), "{view}");
    assert_eq!(tags["gpuform:address"], "bucket.data", "{view}");
    assert_eq!(tags["gpuform:kind"], "bucket", "{view}");
    assert!(tags.get("gpuform:token").is_some(), "{view}");
    assert!(tags.get("gpuform:force-destroy").is_none(), "{view}");
    assert_eq!(view["versioning"], "Enabled");
    assert_eq!(
        view["encryption"]["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"],
        "AES256",
        "{view}"
    );
    assert_eq!(
        view["public_access"],
        json!({"BlockPublicAcls": true, "IgnorePublicAcls": true, "BlockPublicPolicy": true, "RestrictPublicBuckets": true})
    );
    let archive = rule(&view, "gpuform-archive").expect("archive rule");
    assert_eq!(archive["Status"], "Enabled");
    assert_eq!(archive["Transitions"][0]["Days"], 30);
    assert_eq!(archive["Transitions"][0]["StorageClass"], "GLACIER");
    let noncurrent = rule(&view, "gpuform-expire-noncurrent").expect("noncurrent rule");
    assert_eq!(
        noncurrent["NoncurrentVersionExpiration"]["NoncurrentDays"],
        7
    );
    let class = rule(&view, "gpuform-storage-class").expect("storage class rule");
    assert_eq!(class["Transitions"][0]["StorageClass"], "STANDARD_IA");
    assert_eq!(class["Transitions"][0]["Days"], 30);

    let plan = run(d, &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "apply then plan: no changes\n{}",
        text(&plan)
    );

    // Another client removes the archive rule (and adds one of its own).
    boto3(
        region,
        &format!(
            r#"
b = {name:?}
rules = [r for r in s3.get_bucket_lifecycle_configuration(Bucket=b)['Rules'] if r['ID'] != 'gpuform-archive']
rules.append({{'ID': 'theirs', 'Status': 'Enabled', 'Filter': {{'Prefix': 'tmp/'}}, 'Expiration': {{'Days': 3}}}})
s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={{'Rules': rules}})
print(json.dumps(True))
"#
        ),
    );
    let plan = run(d, &["plan", "spec.yaml", "--detailed-exitcode"]);
    let shown = text(&plan);
    assert_eq!(plan.status.code(), Some(2), "drift is a change:\n{shown}");
    assert!(
        shown.contains("bucket.data") && shown.contains("lifecycle"),
        "{shown}"
    );
    assert!(
        !shown.contains("must be replaced"),
        "an update, not a replacement:\n{shown}"
    );
    ok(d, &["apply", "spec.yaml", "--auto-approve"]);
    let view = s3_view(region, &name);
    assert_eq!(
        rule(&view, "gpuform-archive").expect("archive rule back")["Transitions"][0]["Days"],
        30
    );
    assert!(
        rule(&view, "theirs").is_some(),
        "another client's rule is kept: {view}"
    );
    assert!(rule(&view, "gpuform-storage-class").is_some(), "{view}");
    let plan = run(d, &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(0), "repaired:\n{}", text(&plan));

    // Versioning switched off by another client: drift too.
    boto3(
        region,
        &format!("s3.put_bucket_versioning(Bucket={name:?}, VersioningConfiguration={{'Status': 'Suspended'}})\nprint(json.dumps(True))"),
    );
    let plan = run(d, &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(plan.status.code(), Some(2), "{}", text(&plan));
    ok(d, &["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(s3_view(region, &name)["versioning"], "Enabled");

    ok(d, &["destroy", "spec.yaml", "--auto-approve"]);
    assert!(!bucket_exists(region, &name));
    assert_no_canary_in_files(d);
}

#[test]
fn a_non_empty_bucket_is_destroyed_only_with_force_destroy() {
    let region = "us-west-2";
    let proj = project("full");
    let name = format!("{proj}-data");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("spec.yaml"),
        bucket_spec(&proj, &moto_url(), region, ""),
    )
    .unwrap();
    ok(d, &["apply", "spec.yaml", "--auto-approve"]);
    // Three objects, one of them in two versions, and a delete marker.
    boto3(
        region,
        &format!(
            r#"
b = {name:?}
for k in ['a', 'b', 'c', 'a']:
    s3.put_object(Bucket=b, Key=k, Body=b'x')
s3.delete_object(Bucket=b, Key='c')
print(json.dumps(True))
"#
        ),
    );
    let out = run(d, &["destroy", "spec.yaml", "--auto-approve"]);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!("`{name}` is not empty: it holds 5 object(s)")),
        "{shown}"
    );
    assert!(shown.contains("force_destroy: true"), "{shown}");
    assert!(bucket_exists(region, &name), "refused means untouched");

    // force_destroy is an update (the tag), then the destroy empties it.
    std::fs::write(
        d.join("spec.yaml"),
        bucket_spec(&proj, &moto_url(), region, "    force_destroy: true\n"),
    )
    .unwrap();
    ok(d, &["apply", "spec.yaml", "--auto-approve"]);
    assert_eq!(
        s3_view(region, &name)["tags"]["gpuform:force-destroy"],
        "true"
    );
    ok(d, &["destroy", "spec.yaml", "--auto-approve"]);
    assert!(!bucket_exists(region, &name));
    assert_no_canary_in_files(d);
}

/// A name taken by another account is a clear error at once; a bucket of
/// this account that gpuform did not make (untagged with objects, or tagged
/// by another project) is never touched.
#[test]
fn buckets_that_are_not_ours_are_never_touched() {
    let region = "ap-southeast-1";
    let proj = project("strange");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let elsewhere = format!("{proj}-elsewhere");
    let untagged = format!("{proj}-untagged");
    let foreign = format!("{proj}-foreign");
    boto3(
        region,
        &format!(
            r#"
loc = {{'LocationConstraint': {region:?}}}
sts = boto3.client('sts', region_name='us-east-1', endpoint_url={url:?}, aws_access_key_id='testing', aws_secret_access_key='testing')
c = sts.assume_role(RoleArn='arn:aws:iam::111111111111:role/other', RoleSessionName='stranger')['Credentials']
other = boto3.client('s3', region_name={region:?}, endpoint_url={url:?}, aws_access_key_id=c['AccessKeyId'], aws_secret_access_key=c['SecretAccessKey'], aws_session_token=c['SessionToken'])
other.create_bucket(Bucket={elsewhere:?}, CreateBucketConfiguration=loc)
s3.create_bucket(Bucket={untagged:?}, CreateBucketConfiguration=loc)
s3.put_object(Bucket={untagged:?}, Key='keep', Body=b'x')
s3.create_bucket(Bucket={foreign:?}, CreateBucketConfiguration=loc)
s3.put_bucket_tagging(Bucket={foreign:?}, Tagging={{'TagSet': [
    {{'Key': 'gpuform:project', 'Value': 'someone-else'}}, {{'Key': 'gpuform:address', 'Value': 'bucket.x'}},
    {{'Key': 'gpuform:token', 'Value': 't'}}, {{'Key': 'gpuform:lineage', 'Value': 'l'}}]}})
print(json.dumps(True))
"#,
            url = moto_url()
        ),
    );
    let before = |b: &str| s3_view(region, b);
    let (untagged_before, foreign_before) = (before(&untagged), before(&foreign));
    for (key, bucket, words) in [
        ("e", &elsewhere, "is taken by another AWS account"),
        ("u", &untagged, "holds objects but has no gpuform tags"),
        (
            "f",
            &foreign,
            "belongs to the gpuform project `someone-else`",
        ),
    ] {
        let spec = format!(
            "project: {proj}\nendpoints:\n  aws: {}\nbuckets:\n  {key}:\n    cloud: aws\n    region: {region}\n    name: {bucket}\n",
            moto_url()
        );
        std::fs::write(d.join("spec.yaml"), spec).unwrap();
        let out = run(d, &["apply", "spec.yaml", "--auto-approve"]);
        let shown = text(&out);
        assert!(!out.status.success(), "{bucket}: {shown}");
        assert!(
            shown.contains(&format!("`{bucket}`")) && shown.contains(words),
            "{bucket}:\n{shown}"
        );
        assert!(
            shown.contains("name:"),
            "the error says what to change:\n{shown}"
        );
    }
    assert_eq!(before(&untagged), untagged_before, "untouched");
    assert_eq!(before(&foreign), foreign_before, "untouched");
    assert_no_canary_in_files(d);
}

/// `encryption: false` cannot be done on S3: refused where it is written.
#[test]
fn unencrypted_buckets_are_refused_at_validate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = "project: p\nbuckets:\n  data:\n    cloud: aws\n    region: us-east-1\n    encryption: false\n";
    std::fs::write(d.join("spec.yaml"), spec).unwrap();
    let out = run(d, &["validate", "spec.yaml"]);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains("buckets.data.encryption") || shown.contains(":6:"),
        "{shown}"
    );
    assert!(shown.contains("S3 encrypts every object"), "{shown}");
}

/// Kills gpuform (SIGKILL) right after each S3 call N of an apply that
/// makes a bucket and of a destroy that empties one, then runs the same
/// command again: exactly one bucket (or none) is left, complete, and the
/// next plan is clean. `--parallelism 1` makes call N the same call in
/// every run.
#[test]
fn a_kill_after_any_s3_call_then_apply_converges_to_one_bucket() {
    let region = "ap-northeast-1";
    let proxy = killing_proxy::Proxy::start(&moto_url());
    for (phase, destroy) in [("create", false), ("destroy", true)] {
        let mut total = None;
        for n in 1u64.. {
            assert!(n < 200, "{phase}: runaway");
            let proj = project(&format!("k{phase}{n}"));
            let name = format!("{proj}-data");
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let force = if destroy {
                "    force_destroy: true\n"
            } else {
                ""
            };
            std::fs::write(
                d.join("spec.yaml"),
                bucket_spec(&proj, &proxy.url, region, force),
            )
            .unwrap();
            proxy.arm(0);
            if destroy {
                ok(d, &["apply", "spec.yaml", "--auto-approve", "-q"]);
                boto3(
                    region,
                    &format!("for k in ['a', 'b', 'a']:\n    s3.put_object(Bucket={name:?}, Key=k, Body=b'x')\nprint(json.dumps(True))"),
                );
            }
            let args: &[&str] = if destroy {
                &[
                    "destroy",
                    "spec.yaml",
                    "--auto-approve",
                    "--parallelism",
                    "1",
                ]
            } else {
                &["apply", "spec.yaml", "--auto-approve", "--parallelism", "1"]
            };
            if let Some(calls) = proxy.run_armed(n, gpuform(d, args), phase) {
                total = Some(calls);
                if !destroy {
                    ok(d, &["destroy", "spec.yaml", "--auto-approve", "-q"]);
                }
                break;
            }
            let again = run(d, args);
            let ctx = format!("{phase}, killed after call {n}");
            assert!(
                again.status.success(),
                "{ctx}: the recovery run failed:\n{}",
                text(&again)
            );
            let left = owned_buckets(region, &proj);
            if destroy {
                assert!(left.is_empty(), "{ctx}: {left:?}");
                assert!(!bucket_exists(region, &name), "{ctx}");
            } else {
                assert_eq!(left, vec![name.clone()], "{ctx}");
                let view = s3_view(region, &name);
                assert_eq!(view["versioning"], "Enabled", "{ctx}: {view}");
                assert!(rule(&view, "gpuform-archive").is_some(), "{ctx}: {view}");
                assert!(
                    rule(&view, "gpuform-storage-class").is_some(),
                    "{ctx}: {view}"
                );
                assert_eq!(
                    view["public_access"]["BlockPublicAcls"], true,
                    "{ctx}: {view}"
                );
                let plan = run(d, &["plan", "spec.yaml", "--detailed-exitcode"]);
                assert_eq!(
                    plan.status.code(),
                    Some(0),
                    "{ctx}: the next plan is not clean:\n{}",
                    text(&plan)
                );
                ok(d, &["destroy", "spec.yaml", "--auto-approve", "-q"]);
                assert!(!bucket_exists(region, &name), "{ctx}: cleaned up");
            }
            assert_no_canary_in_files(d);
        }
        eprintln!("{phase}: killed after each of {} calls", total.unwrap());
    }
}
