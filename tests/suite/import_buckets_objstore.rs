//! `gpuform import --bucket` on Alibaba OSS, Tencent COS and Huawei OBS,
//! against the object-storage stand-in in each cloud's flavor: a bucket
//! made outside gpuform (versioned, tagged, a public-read ACL, an object)
//! adopted with one tagging call; the plan is clean and leaves the ACL
//! alone; destroy removes it once the spec says `force_destroy: true`; a
//! kill after each call of the import, then the import again, gives the
//! same spec and state; each refusal leaves spec and state as they were.

use crate::support;

use gpuform_standins::objstore::{cos, obs::OBS, oss::OSS, Flavor, ObjStoreMock};
use gpuform_standins::{Killer, MockCloud};
use serde_json::Value;
use std::path::Path;
use std::process::{Output, Stdio};

struct Case {
    cloud: &'static str,
    region: &'static str,
    flavor: Flavor,
    /// A bucket name of the cloud's rules (COS: `<name>-<APPID>`).
    name: fn(&str) -> String,
    compute: fn() -> Box<dyn MockCloud>,
}

const OSS_CASE: Case = Case {
    cloud: "alibaba",
    region: "cn-hangzhou",
    flavor: OSS,
    name: |n| format!("legacy-{n}"),
    compute: || Box::new(gpuform_standins::alibaba::AlibabaMock::start()),
};

const COS_CASE: Case = Case {
    cloud: "tencent",
    region: "ap-guangzhou",
    flavor: cos::COS,
    name: |n| format!("legacy-{n}-{}", cos::APPID),
    compute: || Box::new(gpuform_standins::tencent::TencentMock::start()),
};

const OBS_CASE: Case = Case {
    cloud: "huawei",
    region: "cn-north-4",
    flavor: OBS,
    name: |n| format!("legacy-{n}"),
    compute: || Box::new(gpuform_standins::huawei::HuaweiMock::start()),
};

const STATE: &str = ".gpuform/shop.state.json";

fn run(dir: &Path, mocks: &[&dyn MockCloud], args: &[&str]) -> Output {
    support::gpuform_at(dir, mocks, args).output().unwrap()
}

fn ok(dir: &Path, mocks: &[&dyn MockCloud], args: &[&str]) -> String {
    support::succeeded(&run(dir, mocks, args), args)
}

fn import_args<'a>(c: &'a Case, name: &'a str) -> Vec<&'a str> {
    vec![
        "import",
        "spec.yaml",
        "--cloud",
        c.cloud,
        "--region",
        c.region,
        "--bucket",
        name,
        "--auto-approve",
        "-q",
    ]
}

/// What another tool made: versioned, tagged, public-read, one object.
fn legacy_bucket(c: &Case, store: &ObjStoreMock, name: &str) {
    store.add_behind(name, c.region, &[("team", "ml")]);
    assert!(store.edit_behind(name, |b| {
        b.versioning = Some("Enabled".into());
        b.acl = "public-read".into();
    }));
    assert!(store.put_object(name, "weights.bin"));
}

fn outcome(dir: &Path) -> (String, Value) {
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(STATE)).unwrap()).unwrap();
    (
        std::fs::read_to_string(dir.join("spec.yaml")).unwrap(),
        state["resources"].clone(),
    )
}

fn plan_code(dir: &Path, mocks: &[&dyn MockCloud]) -> (Option<i32>, String) {
    let out = run(dir, mocks, &["plan", "spec.yaml", "--detailed-exitcode"]);
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn import_plan_clean_destroy(c: &Case) {
    let compute = (c.compute)();
    let store = ObjStoreMock::start(c.flavor);
    let mocks: [&dyn MockCloud; 2] = [compute.as_ref(), &store];
    let name = (c.name)("data");
    legacy_bucket(c, &store, &name);
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    std::fs::write(dir.join("spec.yaml"), "# shop\nproject: shop\n").unwrap();

    let mut args = import_args(c, &name);
    args.retain(|a| *a != "-q");
    let out = ok(dir, &mocks, &args);
    assert!(
        out.contains("public access is not blocked on the cloud"),
        "{out}"
    );
    let (spec, records) = outcome(dir);
    for line in [
        "buckets:".to_string(),
        format!("    cloud: {}", c.cloud),
        format!("    region: {}", c.region),
        format!("    name: \"{name}\""),
        "    versioning: true".to_string(),
        "    tags: {\"team\": \"ml\"}".to_string(),
    ] {
        assert!(spec.lines().any(|l| l == line), "`{line}` not in:\n{spec}");
    }
    let (address, record) = records.as_object().unwrap().iter().next().unwrap();
    assert_eq!(record["id"], name.as_str());
    assert_eq!(record["kept"], serde_json::json!(["public_access_blocked"]));
    let b = store.bucket(&name).unwrap();
    assert_eq!(b.tags["gpuform:address"], address.as_str());
    assert_eq!(b.tags["team"], "ml");
    assert_eq!(b.acl, "public-read", "the import changes only tags");

    let (code, text) = plan_code(dir, &mocks);
    assert_eq!(code, Some(0), "clean after import:\n{text}");
    assert_eq!(store.bucket(&name).unwrap().acl, "public-read");

    // Destroy: refused while it holds an object; forced once the spec says so.
    let out = run(
        dir,
        &mocks,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        dir.join("spec.yaml"),
        spec.replace(
            "    versioning: true\n",
            "    versioning: true\n    force_destroy: true\n",
        ),
    )
    .unwrap();
    ok(dir, &mocks, &["apply", "spec.yaml", "--auto-approve", "-q"]);
    assert_eq!(plan_code(dir, &mocks).0, Some(0));
    ok(
        dir,
        &mocks,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    assert!(store.bucket(&name).is_none(), "destroy removes it");
}

/// Killed after each call of the import, then run again: the same spec
/// and state as an uninterrupted import, and a clean plan. A fresh store
/// per run, so that every run sees the same one bucket.
fn a_kill_after_each_call_then_import_again(c: &Case) {
    let compute = (c.compute)();
    let name = (c.name)("data");
    let fresh = || {
        let store = ObjStoreMock::start(c.flavor);
        legacy_bucket(c, &store, &name);
        let w = tempfile::tempdir().unwrap();
        std::fs::write(w.path().join("spec.yaml"), "project: shop\n").unwrap();
        (store, w)
    };
    let (store, reference) = fresh();
    ok(
        reference.path(),
        &[compute.as_ref(), &store],
        &import_args(c, &name),
    );
    let want = outcome(reference.path());
    let mut n = 1;
    loop {
        let (store, w) = fresh();
        let dir = w.path();
        let mocks: [&dyn MockCloud; 2] = [compute.as_ref(), &store];
        let killer = Killer::install(&store);
        let mut cmd = support::gpuform_at(dir, &mocks, &import_args(c, &name));
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let out = killer.run(&store, &mut cmd, Some(n));
        if out.status.success() {
            assert!(n > 5, "a bucket import makes more than {n} calls");
            assert_eq!(outcome(dir), want);
            break;
        }
        support::assert_killed_by(&out, 9, &format!("import killed at call {n}"));
        ok(dir, &mocks, &import_args(c, &name));
        assert_eq!(outcome(dir), want, "killed after call {n}, then run again");
        let (code, text) = plan_code(dir, &mocks);
        assert_eq!(code, Some(0), "after kill at {n}: {text}");
        n += 1;
    }
}

fn refusals(c: &Case) {
    let compute = (c.compute)();
    let store = ObjStoreMock::start(c.flavor);
    let mocks: [&dyn MockCloud; 2] = [compute.as_ref(), &store];
    let theirs = (c.name)("theirs");
    store.add_behind(
        &theirs,
        c.region,
        &[
            ("gpuform:project", "other"),
            ("gpuform:lineage", "lin-other"),
            ("gpuform:address", "bucket.keep"),
            ("gpuform:token", "t"),
        ],
    );
    let foreign = (c.name)("foreign");
    store.add_foreign(&foreign, c.region);
    let mine = (c.name)("mine");
    store.add_behind(&mine, c.region, &[]);
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    std::fs::write(
        dir.join("spec.yaml"),
        format!(
            "project: shop\nbuckets:\n  mine:\n    cloud: {}\n    region: {}\n    name: {mine}\n",
            c.cloud, c.region
        ),
    )
    .unwrap();
    let refused = |name: &str, needles: &[&str]| {
        let read = |p: &str| std::fs::read(dir.join(p)).ok();
        let before = (read("spec.yaml"), read(STATE));
        let out = run(dir, &mocks, &import_args(c, name));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}:\n{err}");
        for n in needles {
            assert!(err.contains(n), "`{n}` not in:\n{err}");
        }
        assert_eq!((read("spec.yaml"), read(STATE)), before, "{name}");
        assert!(!dir.join(format!("{STATE}.import")).exists());
    };
    for missing in [(c.name)("nobody"), foreign.clone()] {
        refused(
            &missing,
            &[&format!(
                "there is no bucket `{missing}` in {} {} that these credentials can see",
                c.cloud, c.region
            )],
        );
    }
    refused(
        &theirs,
        &[
            &format!("bucket {theirs} is managed by another gpuform state: project `other`, lineage lin-other, address bucket.keep"),
            "hint: manage it from project `other`'s spec and state",
        ],
    );
    refused(
        &mine,
        &[&format!(
            "bucket {mine} is already in the spec spec.yaml as `buckets.mine`"
        )],
    );
    assert!(!store
        .bucket(&mine)
        .unwrap()
        .tags
        .contains_key("gpuform:project"));
}

#[test]
fn oss_import_plan_clean_destroy() {
    import_plan_clean_destroy(&OSS_CASE);
}

#[test]
fn cos_import_plan_clean_destroy() {
    import_plan_clean_destroy(&COS_CASE);
}

#[test]
fn obs_import_plan_clean_destroy() {
    import_plan_clean_destroy(&OBS_CASE);
}

#[test]
fn oss_a_kill_after_each_bucket_import_call_then_import_again() {
    a_kill_after_each_call_then_import_again(&OSS_CASE);
}

#[test]
fn cos_a_kill_after_each_bucket_import_call_then_import_again() {
    a_kill_after_each_call_then_import_again(&COS_CASE);
}

#[test]
fn obs_a_kill_after_each_bucket_import_call_then_import_again() {
    a_kill_after_each_call_then_import_again(&OBS_CASE);
}

#[test]
fn oss_cos_obs_bucket_refusals_leave_spec_and_state_as_they_were() {
    for c in [&OSS_CASE, &COS_CASE, &OBS_CASE] {
        refusals(c);
    }
}
