//! The bucket scenarios the gpuform binary runs on every stand-in cloud
//! with object storage (e2e_buckets_oss.rs, e2e_buckets_cos_obs.rs): one
//! [`Case`] per cloud says what differs (its compute and object-storage
//! stand-ins, region, bucket names, secret), [`scenario`] and
//! [`crash_at_every_call`] are the same for all.

use gpuform_standins::objstore::ObjStoreMock;
use gpuform_standins::{Killer, MockCloud};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// One cloud: its compute stand-in (refresh lists its resources too),
/// its object-storage stand-in, a region and a bucket name of its rules.
pub struct Case {
    pub cloud: &'static str,
    pub region: &'static str,
    /// The bucket name for a project (COS: `<name>-<APPID>`).
    pub name: fn(&str) -> String,
    /// The secret the binary is given, which must never be shown.
    pub secret: &'static str,
    /// Fresh stand-ins: the compute API and the object storage.
    pub start: fn() -> (Box<dyn MockCloud>, ObjStoreMock),
}

fn spec(c: &Case, project: &str, force: bool) -> String {
    format!(
        "project: {project}\nbuckets:\n  data:\n    cloud: {}\n    region: {}\n    name: {}\n    storage_class: infrequent\n    versioning: true\n    encryption: true\n    lifecycle:\n      archive_after_days: 30\n      expire_noncurrent_after_days: 7\n    force_destroy: {force}\n    size_gb: 100\n    tags:\n      team: ml\n",
        c.cloud,
        c.region,
        (c.name)(project)
    )
}

fn gpuform(dir: &Path, mocks: &[&dyn MockCloud], args: &[&str]) -> Command {
    let mut cmd = crate::support::gpuform_at(dir, mocks, args);
    // Every log line, so the secret check reads them all.
    cmd.env("GPUFORM_LOG", "trace");
    cmd
}

/// Runs of the binary in one directory, keeping all they printed.
struct Runs<'a> {
    dir: &'a Path,
    mocks: &'a [&'a dyn MockCloud],
    printed: String,
}

impl<'a> Runs<'a> {
    fn new(dir: &'a Path, mocks: &'a [&'a dyn MockCloud]) -> Self {
        Runs {
            dir,
            mocks,
            printed: String::new(),
        }
    }

    fn run(&mut self, args: &[&str]) -> Output {
        let out = gpuform(self.dir, self.mocks, args)
            .output()
            .expect("run gpuform");
        self.printed.push_str(&String::from_utf8_lossy(&out.stdout));
        self.printed.push_str(&String::from_utf8_lossy(&out.stderr));
        out
    }

    /// The standard output of a run that must succeed.
    fn ok(&mut self, args: &[&str]) -> String {
        let out = self.run(args);
        crate::support::succeeded(&out, args)
    }

    fn plan_exit(&mut self) -> i32 {
        self.run(&["plan", "spec.yaml", "--detailed-exitcode"])
            .status
            .code()
            .unwrap()
    }
}

/// A fresh directory holding the spec of `project`'s bucket (not forced),
/// and that bucket's name.
fn project_dir(c: &Case, project: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), spec(c, project, false)).unwrap();
    (dir, (c.name)(project))
}

/// Every file gpuform wrote under `dir`, as text.
fn written(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

const APPLY: &[&str] = &["apply", "spec.yaml", "--auto-approve"];
const DESTROY: &[&str] = &["destroy", "spec.yaml", "--auto-approve"];

/// Create and read back, a no-op plan, drift repaired, a non-empty
/// bucket's destroy refused with its count then forced, a name of another
/// account a clear error, and the secret never in state, plans or logs.
pub fn scenario(c: &Case) {
    let (api, store) = (c.start)();
    let mocks: [&dyn MockCloud; 2] = [api.as_ref(), &store];
    let project = format!("b{}", &c.cloud[..3]);
    let (dir, name) = project_dir(c, &project);
    let d = dir.path();
    let mut r = Runs::new(d, &mocks);

    // Create; the bucket holds every setting; a plan then has nothing to do.
    assert_eq!(r.plan_exit(), 2);
    r.ok(APPLY);
    let b = store.bucket(&name).expect("the bucket exists");
    assert_eq!(b.region, c.region);
    assert_eq!(b.versioning.as_deref(), Some("Enabled"));
    assert!(b.sse.is_some() && b.lifecycle.is_some(), "{}", c.cloud);
    assert_eq!(b.acl, "private");
    assert_eq!(
        b.tags.get("gpuform:address").map(String::as_str),
        Some("bucket.data")
    );
    assert_eq!(b.tags.get("team").map(String::as_str), Some("ml"));
    assert_eq!(r.plan_exit(), 0, "{}: apply then plan", c.cloud);

    // Drift: another client removes the lifecycle rule; the plan shows it
    // and an apply puts it back.
    assert!(store.edit_behind(&name, |b| b.lifecycle = None));
    let plan = r.ok(&["plan", "spec.yaml"]);
    assert!(plan.contains("lifecycle"), "{}: {plan}", c.cloud);
    assert_eq!(r.plan_exit(), 2, "{}: drift", c.cloud);
    r.ok(APPLY);
    assert!(store.bucket(&name).unwrap().lifecycle.is_some());
    assert_eq!(r.plan_exit(), 0, "{}: after repair", c.cloud);

    // A bucket holding objects: destroy is refused with the count.
    for k in ["a", "b"] {
        assert!(store.put_object(&name, k));
    }
    let out = r.run(DESTROY);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{}: {said}", c.cloud);
    assert!(
        said.contains("2 object(s)") && said.contains("force_destroy"),
        "{}: {said}",
        c.cloud
    );
    assert_eq!(store.object_count(&name), Some(2));
    // `force_destroy: true`, applied, lets destroy empty it.
    std::fs::write(d.join("spec.yaml"), spec(c, &project, true)).unwrap();
    r.ok(APPLY);
    r.ok(DESTROY);
    assert!(store.bucket(&name).is_none(), "{}: destroyed", c.cloud);

    // A name another account holds: a clear error, and their bucket stays.
    store.add_foreign(&name, c.region);
    let out = r.run(APPLY);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(
        said.contains("taken by another account"),
        "{}: {said}",
        c.cloud
    );
    assert!(store.bucket(&name).unwrap().foreign);

    // The secret is never written nor shown, even in trace logs.
    r.run(&["plan", "spec.yaml", "--json"]);
    let debug = gpuform(d, &mocks, &["plan", "spec.yaml"])
        .env("GPUFORM_LOG", "debug")
        .output()
        .unwrap();
    let mut seen = std::mem::take(&mut r.printed);
    seen.push_str(&written(d));
    seen.push_str(&String::from_utf8_lossy(&debug.stderr));
    assert!(
        seen.contains("object storage call"),
        "{}: the trace logs were read",
        c.cloud
    );
    assert!(
        seen.contains(&name),
        "{}: state and plans were read",
        c.cloud
    );
    assert!(
        !seen.contains(c.secret),
        "{}: the secret was shown",
        c.cloud
    );
}

/// Kills gpuform right after the N-th object-storage request took effect
/// and before its answer, for every N of an apply of one bucket; one more
/// apply must leave exactly that bucket, complete, recorded in the state,
/// and a plan with nothing to do.
pub fn crash_at_every_call(c: &Case) {
    let (api, store) = (c.start)();
    let mocks: [&dyn MockCloud; 2] = [api.as_ref(), &store];
    let killer = Killer::install(&store);
    let quiet_apply = ["apply", "spec.yaml", "--auto-approve", "-q"];
    let quiet_destroy = ["destroy", "spec.yaml", "--auto-approve", "-q"];
    for n in 1u64.. {
        let project = format!("k{}{n}", &c.cloud[..3]);
        let (dir, name) = project_dir(c, &project);
        let d = dir.path();
        let mut r = Runs::new(d, &mocks);
        let args = crate::support::SERIAL_APPLY;
        let mut cmd = gpuform(d, &mocks, &args);
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let out = killer.run(&store, &mut cmd, Some(n));
        if out.status.success() {
            assert!(
                n > 6,
                "{}: crash injection fired only {} times",
                c.cloud,
                n - 1
            );
            r.ok(&quiet_destroy);
            break;
        }
        assert!(
            out.status.code().is_none(),
            "{} N={n}: expected a kill, got {:?}: {}",
            c.cloud,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        r.ok(&quiet_apply);
        let live = store.resources();
        assert_eq!(live.len(), 1, "{} N={n}: {live:?}", c.cloud);
        assert_eq!(live[0].id, name, "{} N={n}", c.cloud);
        assert_eq!(
            live[0].address.as_deref(),
            Some("bucket.data"),
            "{} N={n}",
            c.cloud
        );
        let b = store.bucket(&name).expect("the bucket");
        assert_eq!(
            b.versioning.as_deref(),
            Some("Enabled"),
            "{} N={n}",
            c.cloud
        );
        assert!(
            b.sse.is_some() && b.lifecycle.is_some(),
            "{} N={n}",
            c.cloud
        );
        assert_eq!(
            b.tags.get("gpuform:project").map(String::as_str),
            Some(project.as_str()),
            "{} N={n}",
            c.cloud
        );
        let st: serde_json::Value = serde_json::from_slice(
            &std::fs::read(d.join(format!(".gpuform/{project}.state.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            st["resources"]["bucket.data"]["id"],
            serde_json::json!(name),
            "{} N={n}",
            c.cloud
        );
        assert_eq!(r.plan_exit(), 0, "{} N={n}: plan after recovery", c.cloud);
        r.ok(&quiet_destroy);
        assert!(
            store.resources().is_empty(),
            "{} N={n}: destroy after recovery",
            c.cloud
        );
        assert!(n < 100);
    }
    store.set_hook(None);
}
