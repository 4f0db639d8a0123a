//! `gpuform import --bucket` against moto's S3 (scripts/moto.sh;
//! GPUFORM_TEST_MOTO_URL): a bucket made with boto3 — versioned, tagged,
//! holding an object, with a lifecycle rule that is not gpuform's — adopted;
//! the plan is clean and leaves that rule alone; destroy removes it once the
//! spec says `force_destroy: true`; a kill after each call of the import
//! (the counting proxy SIGKILLs gpuform once moto has done the call), then
//! the import again, gives the same spec and state; each refusal leaves
//! spec and state as they were. Each run works in a moto account of its own.

use crate::moto;
use crate::support;

use moto::killing_proxy::Proxy;
use moto::{boto3_in, fresh_accounts, Account};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const REGION: &str = "us-east-1";

/// A bucket name no other run or test has (names are global).
fn bucket_name(what: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "legacy-{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// What the other tool made.
fn setup(account: &Account, name: &str) {
    boto3_in(
        account,
        REGION,
        &format!(
            r#"
name = '{name}'
s3.create_bucket(Bucket=name)
s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={{'Status': 'Enabled'}})
s3.put_bucket_tagging(Bucket=name, Tagging={{'TagSet': [{{'Key': 'team', 'Value': 'ml'}}]}})
s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={{'Rules': [
    {{'ID': 'expire-logs', 'Status': 'Enabled', 'Filter': {{'Prefix': 'logs/'}}, 'Expiration': {{'Days': 90}}}}]}})
s3.put_object(Bucket=name, Key='weights.bin', Body=b'abc')
print(json.dumps({{}}))
"#
        ),
    );
}

/// The bucket as boto3 sees it: tags and lifecycle rule ids; null when gone.
fn seen(account: &Account, name: &str) -> Value {
    boto3_in(
        account,
        REGION,
        &format!(
            r#"
name = '{name}'
if name not in [b['Name'] for b in s3.list_buckets()['Buckets']]:
    print(json.dumps(None))
else:
    tags = {{t['Key']: t['Value'] for t in s3.get_bucket_tagging(Bucket=name)['TagSet']}}
    rules = [r['ID'] for r in s3.get_bucket_lifecycle_configuration(Bucket=name)['Rules']]
    print(json.dumps(dict(tags=tags, rules=rules)))
"#
        ),
    )
}

fn spec(url: &str) -> String {
    format!("# the ML team's data\nproject: legacyml\nendpoints:\n  aws: {url}\n")
}

fn gpuform(dir: &Path, account: &Account, args: &[&str]) -> Command {
    let mut c = support::gpuform_cmd(dir, args);
    c.envs(account.env())
        .env("AWS_REGION", REGION)
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env_remove("AWS_ENDPOINT_URL");
    c
}

fn run(dir: &Path, account: &Account, args: &[&str]) -> Output {
    gpuform(dir, account, args).output().expect("run gpuform")
}

fn ok(dir: &Path, account: &Account, args: &[&str]) -> String {
    support::succeeded(&run(dir, account, args), args)
}

fn import_args(name: &str) -> Vec<&str> {
    vec![
        "import",
        "spec.yaml",
        "--cloud",
        "aws",
        "--region",
        REGION,
        "--bucket",
        name,
        "--auto-approve",
    ]
}

fn plan_code(dir: &Path, account: &Account) -> (Option<i32>, String) {
    let out = run(dir, account, &["plan", "spec.yaml", "--detailed-exitcode"]);
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

const STATE: &str = ".gpuform/legacyml.state.json";

#[test]
fn import_a_boto3_made_bucket_then_plan_clean_and_destroy() {
    let Some(url) = support::server_url("GPUFORM_TEST_MOTO_URL", "scripts/moto.sh") else {
        return;
    };
    let account = &fresh_accounts(1)[0];
    let name = bucket_name("data");
    setup(account, &name);
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    std::fs::write(dir.join("spec.yaml"), spec(&url)).unwrap();

    let out = ok(dir, account, &import_args(&name));
    assert!(
        out.contains("1 lifecycle rule(s) that are not gpuform's stay as they are"),
        "{out}"
    );
    let text = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    assert!(text.starts_with(&spec(&url)), "{text}");
    let key = name.clone();
    for line in [
        "buckets:".to_string(),
        format!("  {key}:"),
        "    cloud: aws".to_string(),
        "    region: us-east-1".to_string(),
        format!("    name: \"{name}\""),
        "    versioning: true".to_string(),
        "    tags: {\"team\": \"ml\"}".to_string(),
    ] {
        assert!(text.lines().any(|l| l == line), "`{line}` not in:\n{text}");
    }
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(STATE)).unwrap()).unwrap();
    let address = format!("bucket.{key}");
    assert_eq!(state["resources"][&address]["id"], name.as_str());
    // Tagged, its own tag and rule kept, as boto3 sees it.
    let s3 = seen(account, &name);
    assert_eq!(s3["tags"]["gpuform:address"], address.as_str());
    assert_eq!(s3["tags"]["gpuform:lineage"], state["lineage"]);
    assert_eq!(s3["tags"]["team"], "ml");
    assert_eq!(s3["rules"], serde_json::json!(["expire-logs"]));

    let (code, text) = plan_code(dir, account);
    assert_eq!(code, Some(0), "clean after import:\n{text}");

    // Destroy: refused while it holds an object and the spec does not say
    // force_destroy; once it does (applied), the bucket and object go.
    let out = run(
        dir,
        account,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec_text = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    std::fs::write(
        dir.join("spec.yaml"),
        spec_text.replace(
            "    versioning: true\n",
            "    versioning: true\n    force_destroy: true\n",
        ),
    )
    .unwrap();
    ok(
        dir,
        account,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );
    // The update touched only gpuform's tag: the other rule is still there.
    assert_eq!(
        seen(account, &name)["rules"],
        serde_json::json!(["expire-logs"])
    );
    assert_eq!(plan_code(dir, account).0, Some(0));
    ok(
        dir,
        account,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    assert_eq!(seen(account, &name), Value::Null, "destroy removes it");
}

/// Spec and records with the run's bucket name replaced.
fn normalized(dir: &Path, name: &str) -> (String, String) {
    let mut spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(STATE)).unwrap()).unwrap();
    let records = serde_json::to_string_pretty(&state["resources"]).unwrap();
    let endpoint = spec
        .lines()
        .find(|l| l.trim_start().starts_with("aws: http"))
        .map(str::to_string);
    if let Some(e) = endpoint {
        spec = spec.replace(&e, "  aws: <endpoint>");
    }
    (
        spec.replace(name, "<bucket>"),
        records.replace(name, "<bucket>"),
    )
}

#[test]
fn a_kill_after_each_bucket_import_call_then_import_again_gives_the_same_spec_and_state() {
    let Some(url) = support::server_url("GPUFORM_TEST_MOTO_URL", "scripts/moto.sh") else {
        return;
    };
    let proxy = Proxy::start(&url);
    let mut accounts = moto::accounts();
    let account = accounts.next().unwrap();
    let name = bucket_name("kill");
    setup(&account, &name);
    let w = tempfile::tempdir().unwrap();
    std::fs::write(w.path().join("spec.yaml"), spec(&proxy.url)).unwrap();
    ok(w.path(), &account, &import_args(&name));
    let want = normalized(w.path(), &name);

    let mut n = 1;
    loop {
        let account = accounts.next().unwrap();
        let name = bucket_name("kill");
        setup(&account, &name);
        let w = tempfile::tempdir().unwrap();
        let dir = w.path();
        std::fs::write(dir.join("spec.yaml"), spec(&proxy.url)).unwrap();
        let args = import_args(&name);
        if proxy
            .run_armed(n, gpuform(dir, &account, &args), "import")
            .is_some()
        {
            assert!(n > 5, "a bucket import makes more than {n} calls");
            break;
        }
        ok(dir, &account, &args);
        assert_eq!(
            normalized(dir, &name),
            want,
            "killed after call {n}, then run again"
        );
        let (code, text) = plan_code(dir, &account);
        assert_eq!(code, Some(0), "after kill at {n}: {text}");
        n += 1;
    }
}

#[test]
fn bucket_refusals_on_moto_leave_spec_and_state_as_they_were() {
    let Some(url) = support::server_url("GPUFORM_TEST_MOTO_URL", "scripts/moto.sh") else {
        return;
    };
    let account = &fresh_accounts(1)[0];
    let mine = bucket_name("mine");
    let theirs = bucket_name("theirs");
    setup(account, &mine);
    setup(account, &theirs);
    // Another gpuform state's: its ownership tags.
    boto3_in(
        account,
        REGION,
        &format!(
            "s3.put_bucket_tagging(Bucket='{theirs}', Tagging={{'TagSet': [{{'Key': 'gpuform:project', 'Value': 'other'}}, {{'Key': 'gpuform:lineage', 'Value': 'lin-other'}}, {{'Key': 'gpuform:address', 'Value': 'bucket.keep'}}, {{'Key': 'gpuform:token', 'Value': 't'}}]}})\nprint(json.dumps({{}}))"
        ),
    );
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    std::fs::write(
        dir.join("spec.yaml"),
        format!(
            "{}buckets:\n  mine:\n    cloud: aws\n    region: us-east-1\n    name: {mine}\n",
            spec(&url)
        ),
    )
    .unwrap();
    let refused = |args: &[&str], needles: &[&str]| {
        let read = |p: &str| std::fs::read(dir.join(p)).ok();
        let before = (read("spec.yaml"), read(STATE));
        let out = run(dir, account, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}:\n{err}");
        for n in needles {
            assert!(err.contains(n), "`{n}` not in:\n{err}");
        }
        assert_eq!((read("spec.yaml"), read(STATE)), before, "{args:?}");
        assert!(!dir.join(format!("{STATE}.import")).exists());
    };
    let missing = bucket_name("nobody");
    refused(
        &import_args(&missing),
        &[&format!(
            "there is no bucket `{missing}` in aws us-east-1 that these credentials can see"
        )],
    );
    refused(
        &import_args(&theirs),
        &[
            &format!("bucket {theirs} is managed by another gpuform state: project `other`, lineage lin-other, address bucket.keep"),
            "hint: manage it from project `other`'s spec and state",
        ],
    );
    refused(
        &import_args(&mine),
        &[&format!(
            "bucket {mine} is already in the spec spec.yaml as `buckets.mine`"
        )],
    );
    // Nothing was tagged by the refusals.
    assert!(seen(account, &mine)["tags"]
        .get("gpuform:project")
        .is_none());
}
