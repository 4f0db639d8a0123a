//! `gpuform import --bucket` on the sandbox: buckets made behind gpuform's
//! back (another project's apply whose tags `gpuform sandbox disown` then
//! removes: what a console or Terraform leaves) adopted into a spec's
//! `buckets:` and its state; the plan is clean afterwards, what the spec
//! cannot say is kept and said, destroy removes them (a bucket holding
//! objects once the spec says `force_destroy: true`); killed after each
//! call, the import run again gives the same spec and state; and every
//! refusal leaves spec and state byte for byte.

use crate::import::{
    copy_dir, kill_after_each_call_then_again, ok, outcome, plan_exit, run, state,
};
use crate::support;

use serde_json::Value;
use std::path::Path;
use support::gpuform_cmd;

/// What "someone else" made: a versioned bucket with an expiry of old
/// versions and a tag, and an infrequent-access one.
const LEGACY: &str = "project: legacy
buckets:
  data:
    cloud: sandbox
    region: us-east-1
    versioning: true
    lifecycle: {expire_noncurrent_after_days: 30}
    tags: {team: ml}
  logs:
    cloud: sandbox
    region: us-east-1
    storage_class: infrequent
";

const LEGACY_STATE: &str = ".gpuform/legacy.state.json";
const STATE: &str = ".gpuform/shop.state.json";
const PENDING: &str = ".gpuform/shop.state.json.import";

const IMPORT: [&str; 8] = [
    "import",
    "spec.yaml",
    "--cloud",
    "sandbox",
    "--region",
    "us-east-1",
    "--project",
    "shop",
];

fn import_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a: Vec<&str> = IMPORT.to_vec();
    a.push("--auto-approve");
    a.extend_from_slice(extra);
    a
}

/// Makes the legacy buckets, then takes gpuform's tags off them and
/// forgets their state.
fn legacy(dir: &Path) {
    std::fs::write(dir.join("legacy.yaml"), LEGACY).unwrap();
    ok(
        dir,
        &[
            "apply",
            "legacy.yaml",
            "--auto-approve",
            "-q",
            "--state",
            LEGACY_STATE,
        ],
    );
    for name in ["legacy-data", "legacy-logs"] {
        ok(dir, &["sandbox", "disown", name, "--state", LEGACY_STATE]);
    }
    std::fs::remove_file(dir.join(LEGACY_STATE)).unwrap();
}

fn set(dir: &Path, id: &str, kv: &str) {
    ok(dir, &["sandbox", "set", id, kv, "--state", STATE]);
}

fn ls(dir: &Path) -> Vec<Value> {
    serde_json::from_str(&ok(dir, &["sandbox", "ls", "--json", "--state", STATE])).unwrap()
}

#[test]
fn imported_buckets_plan_clean_keep_what_the_spec_cannot_say_and_destroy() {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    legacy(dir);
    // Objects in one, public access opened on the other (an ACL).
    set(dir, "legacy-data", "object_count=3");
    set(dir, "legacy-data", &format!("size_bytes={}", 5u64 << 30));
    set(dir, "legacy-logs", "public_access_blocked=false");
    // The audit points to import for them.
    let audit = ok(
        dir,
        &[
            "audit",
            "--sandbox",
            "--cloud",
            "aws",
            "--region",
            "us-east-1",
        ],
    );
    assert!(
        audit.contains("2 unmanaged bucket(s) in sandbox:aws us-east-1: `gpuform import SPEC --cloud sandbox --region us-east-1 --bucket legacy-data --bucket legacy-logs`"),
        "{audit}"
    );

    // Into a spec that has a cluster and comments already.
    let before = "# the shop\nproject: shop\nclusters:\n  web: # serves\n    cloud: sandbox\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n";
    std::fs::write(dir.join("spec.yaml"), before).unwrap();
    ok(dir, &["apply", "spec.yaml", "--auto-approve", "-q"]);
    let out = ok(
        dir,
        &import_args(&["--bucket", "legacy-data", "--bucket", "legacy-logs"]),
    );
    assert!(
        out.contains("Bucket `legacy-data` (legacy-data) from sandbox:aws us-east-1"),
        "{out}"
    );
    assert!(
        out.contains("bucket.legacy-logs (legacy-logs): public access is not blocked on the cloud"),
        "{out}"
    );
    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    assert!(spec.starts_with(before), "the spec before is kept:\n{spec}");
    for line in [
        "buckets:",
        "  # imported by `gpuform import` from sandbox:aws us-east-1",
        "  legacy-data:",
        "    cloud: sandbox",
        "    region: us-east-1",
        "    name: \"legacy-data\"",
        "    versioning: true",
        "    lifecycle: {expire_noncurrent_after_days: 30}",
        "    size_gb: 5",
        "    tags: {\"team\": \"ml\"}",
        "  legacy-logs:",
        "    name: \"legacy-logs\"",
        "    storage_class: infrequent",
    ] {
        assert!(spec.lines().any(|l| l == line), "`{line}` not in:\n{spec}");
    }
    let records = &state(dir)["resources"];
    assert_eq!(records["bucket.legacy-data"]["id"], "legacy-data");
    assert!(records["bucket.legacy-data"].get("kept").is_none());
    assert_eq!(
        records["bucket.legacy-logs"]["kept"],
        serde_json::json!(["public_access_blocked"])
    );
    let lineage = state(dir)["lineage"].as_str().unwrap().to_string();
    for b in ls(dir).iter().filter(|r| r["kind"] == "bucket") {
        assert_eq!(b["tags"]["gpuform:lineage"], lineage.as_str(), "{b:#}");
    }
    let (code, text) = plan_exit(dir);
    assert_eq!(code, 0, "the plan after an import is clean:\n{text}");
    // The cloud's public access stays as it was.
    let logs = ls(dir)
        .into_iter()
        .find(|r| r["id"] == "legacy-logs")
        .unwrap();
    assert_eq!(logs["attrs"]["public_access_blocked"], false);

    // Run again: nothing to do.
    let again = ok(dir, &import_args(&["--bucket", "legacy-data"]));
    assert!(again.contains("Nothing to import"), "{again}");

    // Destroy: the bucket holding objects is refused until the spec says
    // `force_destroy: true` and that is applied.
    let out = run(dir, &["destroy", "spec.yaml", "--auto-approve", "-q"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds 3 object(s)"), "{err}");
    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    std::fs::write(
        dir.join("spec.yaml"),
        spec.replace(
            "    versioning: true\n",
            "    versioning: true\n    force_destroy: true\n",
        ),
    )
    .unwrap();
    ok(dir, &["apply", "spec.yaml", "--auto-approve", "-q"]);
    assert_eq!(plan_exit(dir).0, 0);
    ok(dir, &["destroy", "spec.yaml", "--auto-approve", "-q"]);
    assert!(ls(dir).is_empty(), "destroy leaves nothing: {:#?}", ls(dir));
}

/// Killed after each of its calls took effect, the import run again ends
/// where an uninterrupted one does in a copy of the same cloud; meanwhile
/// plan refuses.
#[test]
fn a_kill_after_any_bucket_import_call_then_import_again_gives_the_same_spec_and_state() {
    let template = tempfile::tempdir().unwrap();
    legacy(template.path());
    std::fs::write(template.path().join("spec.yaml"), "project: shop\n").unwrap();
    let reference = tempfile::tempdir().unwrap();
    copy_dir(template.path(), reference.path());
    ok(reference.path(), &import_args(&["--from-audit"]));
    let want = outcome(reference.path());
    assert_eq!(want.1.as_object().unwrap().len(), 2, "{:#}", want.1);

    kill_after_each_call_then_again(
        template.path(),
        &import_args(&["--from-audit", "-q"]),
        &want,
        3,
    );
}

/// A refusal: exit 1, the message, spec and state (and no import file)
/// exactly as they were.
fn refused(dir: &Path, args: &[&str], needles: &[&str]) {
    let read = |p: &str| std::fs::read(dir.join(p)).ok();
    let before = (read("spec.yaml"), read(STATE));
    let out = gpuform_cmd(dir, args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?} must be refused:\n{err}"
    );
    for n in needles {
        assert!(err.contains(n), "`{n}` not in:\n{err}");
    }
    assert_eq!(
        (read("spec.yaml"), read(STATE)),
        before,
        "{args:?} changed spec or state"
    );
    assert!(!dir.join(PENDING).exists());
}

#[test]
fn every_bucket_refusal_says_why_and_leaves_spec_and_state_as_they_were() {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    // shop's own spec and state, with a bucket `shop-data` and one named
    // like the legacy `logs` it does not manage yet.
    std::fs::write(
        dir.join("spec.yaml"),
        "# shop's spec\nproject: shop\nbuckets:\n  data:\n    cloud: sandbox\n    region: us-east-1\n",
    )
    .unwrap();
    ok(dir, &["apply", "spec.yaml", "--auto-approve", "-q"]);
    legacy(dir);

    // A name that does not exist (or is another account's).
    refused(
        dir,
        &import_args(&["--bucket", "nobody-has-this"]),
        &[
            "there is no bucket `nobody-has-this` in sandbox:aws us-east-1 that these credentials can see",
            "hint: check the name and the region",
        ],
    );

    // Owned by another gpuform state.
    std::fs::write(
        dir.join("other.yaml"),
        "project: other\nbuckets:\n  keep:\n    cloud: sandbox\n    region: us-east-1\n",
    )
    .unwrap();
    let other_state = ".gpuform/other.state.json";
    ok(
        dir,
        &[
            "apply",
            "other.yaml",
            "--auto-approve",
            "-q",
            "--state",
            other_state,
        ],
    );
    let other: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(other_state)).unwrap()).unwrap();
    refused(
        dir,
        &import_args(&["--bucket", "other-keep"]),
        &[
            &format!(
                "bucket other-keep is managed by another gpuform state: project `other`, lineage {}",
                other["lineage"].as_str().unwrap()
            ),
            "address bucket.keep",
            "hint: manage it from project `other`'s spec and state",
        ],
    );
    // This state's own bucket: nothing to do.
    assert!(ok(dir, &import_args(&["--bucket", "shop-data"])).contains("Nothing to import"));

    // Already in the spec, not yet made by it.
    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    std::fs::write(
        dir.join("spec.yaml"),
        format!(
            "{spec}  logs:\n    cloud: sandbox\n    region: us-east-1\n    name: legacy-logs\n"
        ),
    )
    .unwrap();
    refused(
        dir,
        &import_args(&["--bucket", "legacy-logs"]),
        &[
            "bucket legacy-logs is already in the spec spec.yaml as `buckets.logs`",
            "hint:",
        ],
    );
    // `--from-audit` takes the unmanaged one the spec does not name, but
    // refuses as a whole while one it takes is named there.
    refused(
        dir,
        &import_args(&["--from-audit"]),
        &["already in the spec spec.yaml as `buckets.logs`"],
    );

    // Without approval: asked, refused, nothing written.
    let mut no_approve: Vec<&str> = IMPORT.to_vec();
    no_approve.extend(["--bucket", "legacy-data"]);
    refused(dir, &no_approve, &["without confirmation"]);
}
