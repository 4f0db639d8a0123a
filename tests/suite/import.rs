//! `gpuform import` on the sandbox: instances, their data volumes, network,
//! subnet and firewall made behind gpuform's back (another project's apply,
//! whose tags are then removed with `gpuform sandbox disown`: what a console
//! or Terraform leaves), adopted into a spec and its state; the plan is clean
//! afterwards, a scale-up adds exactly one node, destroy removes everything;
//! killed at every call of the import, the import run again gives the same
//! spec and state; and every refusal leaves spec and state byte for byte.

use crate::support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use support::{assert_success, gpuform_cmd};

/// What "someone else" made: two T4 nodes with 50 GB data volumes, SSH
/// open, tagged `team: ml`, in the sandbox's us-east-1.
const LEGACY: &str = "project: legacy
clusters:
  old:
    cloud: sandbox
    region: us-east-1
    nodes: 2
    gpu: T4:1
    disk:
      root_gb: 100
      data_gb: 50
    cidr: 10.8.0.0/16
    ingress:
      - {protocol: tcp, ports: \"22\", cidr: 0.0.0.0/0}
    tags:
      team: ml
";

const LEGACY_STATE: &str = ".gpuform/legacy.state.json";
const STATE: &str = ".gpuform/shop.state.json";

/// The command every test imports with (plus its own flags).
const IMPORT: [&str; 11] = [
    "import",
    "spec.yaml",
    "--cloud",
    "sandbox",
    "--region",
    "us-east-1",
    "--name",
    "trainers",
    "--project",
    "shop",
    "--auto-approve",
];

/// gpuform in `dir` on the sandbox, with `faults` injected.
pub(crate) fn run(dir: &Path, args: &[&str], faults: Option<&str>) -> Output {
    let mut c = gpuform_cmd(dir, args);
    if let Some(f) = faults {
        c.env("GPUFORM_SANDBOX_FAULTS", f);
    }
    c.output().expect("run gpuform")
}

/// gpuform in `dir`, which must succeed: its stdout.
pub(crate) fn ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args, None);
    assert_success(&out, &format!("gpuform {args:?}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn import_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a: Vec<&str> = IMPORT.to_vec();
    a.extend_from_slice(extra);
    a
}

/// Makes the legacy cluster, then takes gpuform's tags off everything it
/// made and forgets its state. Returns the legacy address of each id.
fn legacy(dir: &Path) -> BTreeMap<String, String> {
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
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(LEGACY_STATE)).unwrap()).unwrap();
    let mut ids = BTreeMap::new();
    for (address, r) in doc["resources"].as_object().unwrap() {
        let id = r["id"].as_str().unwrap().to_string();
        ok(dir, &["sandbox", "disown", &id, "--state", LEGACY_STATE]);
        ids.insert(id, address.clone());
    }
    std::fs::remove_file(dir.join(LEGACY_STATE)).unwrap();
    assert_eq!(
        ids.len(),
        7,
        "network, subnet, firewall, 2 nodes, 2 volumes"
    );
    ids
}

pub(crate) fn state(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(STATE)).expect("state")).unwrap()
}

/// The imported addresses and the legacy address of the id each records.
fn imported(dir: &Path, ids: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    state(dir)["resources"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(a, r)| (a.clone(), ids[r["id"].as_str().unwrap()].clone()))
        .collect()
}

pub(crate) fn plan_exit(dir: &Path) -> (i32, String) {
    let out = run(dir, &["plan", "spec.yaml", "--detailed-exitcode"], None);
    (
        out.status.code().expect("plan exited"),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn import_then_plan_clean_scale_up_one_node_and_destroy_all() {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    let ids = legacy(dir);
    // The audit says they are unmanaged, and points to import.
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
        audit.contains("2 unmanaged instance(s) in sandbox:aws us-east-1: `gpuform import SPEC --cloud sandbox --region us-east-1 --id"),
        "{audit}"
    );

    // What the spec cannot say: a subnet range other than the one gpuform
    // carves from the network's, and tags on the network.
    let subnet = live_id(&ids, "cluster.old.subnet[us-east-1a]");
    let network = live_id(&ids, "cluster.old.network");
    ok(
        dir,
        &[
            "sandbox",
            "set",
            &subnet,
            "cidr=10.8.16.0/20",
            "--state",
            STATE,
        ],
    );
    ok(
        dir,
        &[
            "sandbox",
            "set",
            &network,
            r#"tags={"owner":"infra"}"#,
            "--state",
            STATE,
        ],
    );

    let out = ok(dir, &import_args(&["--from-audit"]));
    assert!(
        out.contains("Cluster `trainers` from sandbox:aws us-east-1 (2 instance(s))"),
        "{out}"
    );
    assert!(
        out.contains(&format!("cluster.trainers.subnet[us-east-1a] ({subnet}): `cidr` is 10.8.16.0/20 on the cloud where the spec says 10.8.0.0/20; kept as it is")),
        "{out}"
    );
    assert!(
        out.contains(&format!("cluster.trainers.network ({network}): `tags` is {{\"owner\":\"infra\"}} on the cloud where the spec says none; kept as it is")),
        "{out}"
    );
    assert!(out.contains("gpuform:lineage="), "{out}");
    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    for line in [
        "project: shop",
        "  trainers:",
        "    cloud: sandbox",
        "    region: us-east-1",
        "    zones: [\"us-east-1a\"]",
        "    nodes: 2",
        "    gpu: \"T4:1\"",
        "    pricing: on-demand",
        "    image: \"ubuntu-22.04-cuda\"",
        "    disk: {root_gb: 100, data_gb: 50}",
        "    cidr: \"10.8.0.0/16\"",
        "      - {protocol: tcp, ports: \"22\", cidr: \"0.0.0.0/0\"}",
        "    tags: {\"team\": \"ml\"}",
    ] {
        assert!(spec.lines().any(|l| l == line), "`{line}` not in:\n{spec}");
    }
    // Each resource at the address resolve gives it, with its real id:
    // nodes in the order of their ids, each with its own volume.
    let mut nodes: Vec<(&String, &String)> = ids
        .iter()
        .filter(|(_, a)| a.starts_with("cluster.old.node["))
        .collect();
    nodes.sort();
    let mut want: BTreeMap<String, String> = [
        ("network", "network"),
        ("subnet[us-east-1a]", "subnet[us-east-1a]"),
        ("firewall", "firewall"),
    ]
    .into_iter()
    .map(|(new, old)| {
        (
            format!("cluster.trainers.{new}"),
            format!("cluster.old.{old}"),
        )
    })
    .collect();
    for (k, (_, old)) in nodes.iter().enumerate() {
        want.insert(format!("cluster.trainers.node[{k}]"), old.to_string());
        want.insert(
            format!("cluster.trainers.volume[{k}]"),
            old.replace("node", "volume"),
        );
    }
    assert_eq!(imported(dir, &ids), want);
    // Tagged as this state's, nothing else changed in the cloud.
    let records = &state(dir)["resources"];
    assert_eq!(
        records["cluster.trainers.subnet[us-east-1a]"]["kept"],
        serde_json::json!(["cidr"])
    );
    assert_eq!(
        records["cluster.trainers.network"]["kept"],
        serde_json::json!(["tags"])
    );
    assert!(records["cluster.trainers.node[0]"].get("kept").is_none());
    let lineage = state(dir)["lineage"].as_str().unwrap().to_string();
    let live = support::sandbox_live(dir, "shop");
    assert_eq!(live.len(), 7);
    for l in &live {
        assert!(
            l.address
                .as_deref()
                .is_some_and(|a| a.starts_with("cluster.trainers.")),
            "{l:?}"
        );
    }
    let ls: Vec<Value> =
        serde_json::from_str(&ok(dir, &["sandbox", "ls", "--json", "--state", STATE])).unwrap();
    assert!(ls
        .iter()
        .all(|r| r["tags"]["gpuform:lineage"] == lineage.as_str()));

    let (code, out) = plan_exit(dir);
    assert_eq!(code, 0, "the plan after an import is clean:\n{out}");
    // Run again: nothing to do, nothing changed.
    let before = std::fs::read(dir.join(STATE)).unwrap();
    let again = ok(dir, &import_args(&["--from-audit"]));
    assert!(again.contains("Nothing to import"), "{again}");
    assert!(ok(
        dir,
        &import_args(&["--id", &live_id(&ids, "cluster.old.node[0]")])
    )
    .contains("Nothing to import"));
    assert_eq!(std::fs::read(dir.join(STATE)).unwrap(), before);

    // Scale up from the imported spec: exactly one node (and its volume).
    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    std::fs::write(
        dir.join("spec.yaml"),
        spec.replace("    nodes: 2", "    nodes: 3"),
    )
    .unwrap();
    let plan: Value = serde_json::from_str(&ok(dir, &["plan", "spec.yaml", "--json"])).unwrap();
    let changes: Vec<(String, String)> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] != "no-op")
        .map(|c| {
            (
                c["action"].as_str().unwrap().to_string(),
                c["address"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        vec![
            ("create".to_string(), "cluster.trainers.node[2]".to_string()),
            (
                "create".to_string(),
                "cluster.trainers.volume[2]".to_string()
            ),
        ]
    );
    ok(dir, &["apply", "spec.yaml", "--auto-approve", "-q"]);
    assert_eq!(plan_exit(dir).0, 0);
    assert_eq!(support::sandbox_live(dir, "shop").len(), 9);

    ok(dir, &["destroy", "spec.yaml", "--auto-approve", "-q"]);
    let left: Vec<Value> =
        serde_json::from_str(&ok(dir, &["sandbox", "ls", "--json", "--state", STATE])).unwrap();
    assert!(left.is_empty(), "destroy leaves nothing: {left:#?}");
}

fn live_id(ids: &BTreeMap<String, String>, legacy_address: &str) -> String {
    ids.iter()
        .find(|(_, a)| *a == legacy_address)
        .map(|(id, _)| id.clone())
        .unwrap()
}

/// Copies a working directory (spec, states and the sandbox cloud in
/// `.gpuform/`): the same resources with the same ids.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// The spec and the records of the state (what an import writes; the
/// lineage and serial are each state's own).
pub(crate) fn outcome(dir: &Path) -> (String, Value) {
    (
        std::fs::read_to_string(dir.join("spec.yaml")).unwrap(),
        state(dir)["resources"].clone(),
    )
}

/// Killed after each of its calls took effect (the sandbox's
/// `crash_after=N`), the import run again ends where an uninterrupted one
/// does in a copy of the same cloud: the same spec and state, and a clean
/// plan. Meanwhile plan refuses.
#[test]
fn a_kill_after_any_import_call_then_import_again_gives_the_same_spec_and_state() {
    let template = tempfile::tempdir().unwrap();
    legacy(template.path());
    // A spec there already, so that a plan can be asked in the middle.
    std::fs::write(
        template.path().join("spec.yaml"),
        "# the shop\nproject: shop\n",
    )
    .unwrap();
    let reference = tempfile::tempdir().unwrap();
    copy_dir(template.path(), reference.path());
    ok(reference.path(), &import_args(&["--from-audit"]));
    let want = outcome(reference.path());
    kill_after_each_call_then_again(
        template.path(),
        &import_args(&["--from-audit", "-q"]),
        &want,
        10,
    );
}

/// The sandbox import in a copy of `template`, killed after its call N for
/// N = 1, 2, … until it makes fewer than N calls (every call crossed; it
/// must make more than `min_calls`): each time, plan refuses while the
/// import file is there, and `args` again ends with `want` (spec and
/// records, see [`outcome`]) and a clean plan.
pub(crate) fn kill_after_each_call_then_again(
    template: &Path,
    args: &[&str],
    want: &(String, Value),
    min_calls: usize,
) {
    let mut n = 1;
    loop {
        let w = tempfile::tempdir().unwrap();
        let dir = w.path();
        copy_dir(template, dir);
        let crash = format!("crash_after={n}");
        let out = run(dir, args, Some(&crash));
        if out.status.success() {
            // Fewer calls than n: every call has been crossed.
            assert!(n > min_calls, "an import makes more than {n} calls");
            assert_eq!(&outcome(dir), want);
            break;
        }
        support::assert_killed_by(&out, 6, &format!("import with {crash}"));
        let pending = dir.join(".gpuform/shop.state.json.import");
        if pending.exists() {
            let (code, text) = plan_exit(dir);
            assert_eq!(
                code, 1,
                "{crash}: plan during an interrupted import must refuse:\n{text}"
            );
            assert!(text.contains("an import into"), "{text}");
            assert!(
                text.contains("run the same `gpuform import` command again"),
                "{text}"
            );
        }
        ok(dir, args);
        assert!(!pending.exists(), "{crash}");
        assert_eq!(&outcome(dir), want, "after {crash}");
        let (code, text) = plan_exit(dir);
        assert_eq!(code, 0, "after {crash}:\n{text}");
        n += 1;
    }
}

/// A refusal: exit 1, the message, and spec, state (and no import file)
/// exactly as they were.
fn refused(dir: &Path, args: &[&str], env: &[(&str, &str)], needles: &[&str]) {
    let read = |p: &str| std::fs::read(dir.join(p)).ok();
    let before = (read("spec.yaml"), read(STATE));
    let mut c = gpuform_cmd(dir, args);
    c.env_remove("TENCENTCLOUD_SECRET_ID")
        .env_remove("TENCENTCLOUD_SECRET_KEY");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
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
    assert!(!dir.join(".gpuform/shop.state.json.import").exists());
}

#[test]
fn every_refusal_says_why_and_leaves_spec_and_state_as_they_were() {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    // A spec and state of its own already: refusals must leave both.
    std::fs::write(
        dir.join("spec.yaml"),
        "# shop's spec\nproject: shop\nclusters:\n  web:\n    cloud: sandbox\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n",
    )
    .unwrap();
    ok(dir, &["apply", "spec.yaml", "--auto-approve", "-q"]);
    let ids = legacy(dir);
    let node0 = live_id(&ids, "cluster.old.node[0]");
    let node1 = live_id(&ids, "cluster.old.node[1]");

    // An id that does not exist.
    refused(
        dir,
        &import_args(&["--id", "i-0doesnotexist"]),
        &[],
        &[
            "there is no instance `i-0doesnotexist` in sandbox:aws us-east-1",
            "hint: check the id and the region",
        ],
    );

    // Owned by another gpuform state: shop's own node is this state's; the
    // other project's is refused.
    let web = state(dir)["resources"]["cluster.web.node[0]"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(
        dir.join("other.yaml"),
        LEGACY
            .replace("legacy", "other")
            .replace("  old:", "  keep:"),
    )
    .unwrap();
    ok(
        dir,
        &[
            "apply",
            "other.yaml",
            "--auto-approve",
            "-q",
            "--state",
            ".gpuform/other.state.json",
        ],
    );
    let other: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".gpuform/other.state.json")).unwrap(),
    )
    .unwrap();
    let other_node = other["resources"]["cluster.keep.node[0]"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    refused(
        dir,
        &import_args(&["--id", &other_node]),
        &[],
        &[
            &format!("instance {other_node} is managed by another gpuform state: project `other`, lineage {}", other["lineage"].as_str().unwrap()),
            "address cluster.keep.node[0]",
            "hint: manage it from project `other`'s spec and state",
        ],
    );
    assert!(ok(dir, &import_args(&["--id", &web])).contains("Nothing to import"));

    // A type the catalog does not know.
    ok(
        dir,
        &[
            "sandbox",
            "set",
            &node0,
            "instance_type=g9.mega",
            "--state",
            STATE,
        ],
    );
    refused(
        dir,
        &import_args(&["--id", &node0]),
        &[],
        &[
            &format!("instance {node0} is a `g9.mega`, which gpuform's aws catalog does not know in us-east-1"),
            "providers/catalog/data/aws/instance_types.csv",
            "`g9.mega,GPU_MODEL,GPU_COUNT",
        ],
    );

    // Two clusters (different types) in one network, subnet and firewall.
    ok(
        dir,
        &[
            "sandbox",
            "set",
            &node0,
            "instance_type=g4dn.8xlarge",
            "--state",
            STATE,
        ],
    );
    refused(
        dir,
        &import_args(&["--id", &node0, "--id", &node1]),
        &[],
        &[
            "is shared by several clusters",
            &format!("{node0} (g4dn.8xlarge)"),
            &format!("{node1} (g4dn.xlarge)"),
            "hint: a gpuform cluster owns its network, subnet and firewall",
        ],
    );

    // A region without credentials.
    refused(
        dir,
        &[
            "import",
            "spec.yaml",
            "--cloud",
            "tencent",
            "--region",
            "ap-guangzhou",
            "--id",
            "ins-1",
            "--auto-approve",
        ],
        &[],
        &[
            "tencent",
            "hint: set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY",
        ],
    );

    // Without approval on a terminal-less stdin: asked, refused, nothing written.
    let no_approve: Vec<&str> = IMPORT
        .iter()
        .copied()
        .filter(|a| *a != "--auto-approve")
        .chain(["--id", node1.as_str()])
        .collect();
    refused(dir, &no_approve, &[], &["without confirmation"]);
}

/// A stand-in cloud whose resources a test can take gpuform's tags off.
trait Disowning: gpuform_standins::MockCloud {
    /// Removes every `gpuform:` tag of a resource; false if there is none.
    fn disown(&self, id: &str) -> bool;
    /// Every disk, system disks included.
    fn every_disk(&self) -> Vec<String>;
}

impl Disowning for gpuform_standins::alibaba::AlibabaMock {
    fn disown(&self, id: &str) -> bool {
        self.disown_behind(id)
    }
    fn every_disk(&self) -> Vec<String> {
        self.disk_ids()
    }
}

impl Disowning for gpuform_standins::tencent::TencentMock {
    fn disown(&self, id: &str) -> bool {
        self.disown_behind(id)
    }
    fn every_disk(&self) -> Vec<String> {
        self.disk_ids()
    }
}

impl Disowning for gpuform_standins::huawei::HuaweiMock {
    fn disown(&self, id: &str) -> bool {
        self.disown_behind(id)
    }
    fn every_disk(&self) -> Vec<String> {
        self.disk_ids()
    }
}

/// A cloud of the stand-ins' import scenarios.
struct Cloud {
    name: &'static str,
    region: &'static str,
    /// Its object storage: `--from-audit` lists the buckets too.
    store: gpuform_standins::objstore::Flavor,
}

const ALIBABA: Cloud = Cloud {
    name: "alibaba",
    region: "cn-hangzhou",
    store: gpuform_standins::objstore::oss::OSS,
};
const TENCENT: Cloud = Cloud {
    name: "tencent",
    region: "ap-guangzhou",
    store: gpuform_standins::objstore::cos::COS,
};
const HUAWEI: Cloud = Cloud {
    name: "huawei",
    region: "cn-north-4",
    store: gpuform_standins::objstore::obs::OBS,
};

/// The same on a stand-in: what a gpuform apply of another project made
/// there, its `gpuform:` tags removed behind its back (every disk's too), is
/// imported with the cloud's tagging call alone; the plan is clean; a
/// scale-up adds one node and its disk; destroy removes everything.
fn import_then_plan_clean_scale_up_and_destroy_on(cloud: &Cloud, mock: &dyn Disowning) {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    let store = gpuform_standins::objstore::ObjStoreMock::start(cloud.store);
    let at = |args: &[&str]| {
        let out = support::gpuform_at(dir, &[mock, &store], args)
            .output()
            .unwrap();
        support::succeeded(&out, args)
    };
    std::fs::write(
        dir.join("legacy.yaml"),
        format!("project: legacy\nclusters:\n  old:\n    cloud: {}\n    region: {}\n    nodes: 2\n    gpu: T4\n    disk:\n      data_gb: 50\n    ingress:\n      - {{protocol: tcp, ports: \"22\", cidr: 0.0.0.0/0}}\n", cloud.name, cloud.region),
    )
    .unwrap();
    at(&[
        "apply",
        "legacy.yaml",
        "--auto-approve",
        "-q",
        "--state",
        LEGACY_STATE,
    ]);
    let made = mock.resources();
    for r in &made {
        assert!(mock.disown(&r.id), "{}", r.id);
    }
    for d in mock.every_disk() {
        mock.disown(&d);
    }
    std::fs::remove_file(dir.join(LEGACY_STATE)).unwrap();

    let out = at(&[
        "import",
        "spec.yaml",
        "--cloud",
        cloud.name,
        "--region",
        cloud.region,
        "--from-audit",
        "--name",
        "trainers",
        "--project",
        "shop",
        "--auto-approve",
    ]);
    assert!(
        out.contains(&format!(
            "Cluster `trainers` from {} {} (2 instance(s))",
            cloud.name, cloud.region
        )),
        "{out}"
    );
    let records = state(dir)["resources"].as_object().unwrap().clone();
    let mut ids: Vec<&str> = records
        .values()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut want: Vec<&str> = made.iter().map(|r| r.id.as_str()).collect();
    want.sort();
    assert_eq!(ids, want, "every resource made, recorded with its id");
    let live = mock.resources();
    assert!(
        live.iter().all(|r| r
            .address
            .as_deref()
            .is_some_and(|a| a.starts_with("cluster.trainers."))),
        "{live:#?}"
    );

    let plan = support::gpuform_at(
        dir,
        &[mock, &store],
        &["plan", "spec.yaml", "--detailed-exitcode"],
    )
    .output()
    .unwrap();
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );

    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    std::fs::write(
        dir.join("spec.yaml"),
        spec.replace("    nodes: 2", "    nodes: 3"),
    )
    .unwrap();
    let p: Value = serde_json::from_str(&at(&["plan", "spec.yaml", "--json"])).unwrap();
    let changed: Vec<String> = p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] != "no-op")
        .map(|c| {
            format!(
                "{} {}",
                c["action"].as_str().unwrap(),
                c["address"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        changed,
        vec![
            "create cluster.trainers.node[2]",
            "create cluster.trainers.volume[2]"
        ]
    );
    at(&["apply", "spec.yaml", "--auto-approve", "-q"]);
    at(&["destroy", "spec.yaml", "--auto-approve", "-q"]);
    assert!(mock.resources().is_empty(), "{:#?}", mock.resources());
}

#[test]
fn alibaba_import_then_plan_clean_scale_up_and_destroy() {
    let mock = gpuform_standins::alibaba::AlibabaMock::start();
    import_then_plan_clean_scale_up_and_destroy_on(&ALIBABA, &mock);
}

#[test]
fn tencent_import_then_plan_clean_scale_up_and_destroy() {
    let mock = gpuform_standins::tencent::TencentMock::start();
    import_then_plan_clean_scale_up_and_destroy_on(&TENCENT, &mock);
}

#[test]
fn huawei_import_then_plan_clean_scale_up_and_destroy() {
    let mock = gpuform_standins::huawei::HuaweiMock::start();
    import_then_plan_clean_scale_up_and_destroy_on(&HUAWEI, &mock);
}

/// Makes `legacy` on `mock` with gpuform and removes every `gpuform:` tag:
/// returns the made ids by a label that does not depend on the ids' order
/// (nodes in the order of their ids, each volume by its node's; the rest
/// by their legacy address).
fn legacy_on(
    dir: &Path,
    cloud: &Cloud,
    mock: &dyn Disowning,
    project: &str,
) -> BTreeMap<String, String> {
    std::fs::write(
        dir.join("legacy.yaml"),
        format!("project: {project}\nclusters:\n  old:\n    cloud: {}\n    region: {}\n    nodes: 2\n    gpu: T4\n    disk:\n      data_gb: 50\n", cloud.name, cloud.region),
    )
    .unwrap();
    let out = support::gpuform_at(
        dir,
        &[mock],
        &[
            "apply",
            "legacy.yaml",
            "--auto-approve",
            "-q",
            "--state",
            LEGACY_STATE,
        ],
    )
    .output()
    .unwrap();
    assert_success(&out, "legacy apply");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(LEGACY_STATE)).unwrap()).unwrap();
    std::fs::remove_file(dir.join(LEGACY_STATE)).unwrap();
    let id = |a: &str| doc["resources"][a]["id"].as_str().unwrap().to_string();
    let mut labels = BTreeMap::new();
    let mut nodes: Vec<(String, String)> = (0..2)
        .map(|i| {
            (
                id(&format!("cluster.old.node[{i}]")),
                id(&format!("cluster.old.volume[{i}]")),
            )
        })
        .collect();
    nodes.sort();
    for (k, (n, v)) in nodes.into_iter().enumerate() {
        labels.insert(n, format!("node{k}"));
        labels.insert(v, format!("volume{k}"));
    }
    for (address, r) in doc["resources"].as_object().unwrap() {
        let i = r["id"].as_str().unwrap();
        labels
            .entry(i.to_string())
            .or_insert_with(|| address.clone());
    }
    for i in labels
        .keys()
        .cloned()
        .collect::<Vec<_>>()
        .iter()
        .chain(&mock.every_disk())
    {
        mock.disown(i);
    }
    labels
}

/// An import's spec and records, ids replaced by their labels, the project
/// by `<project>`, and without what the cloud chose (private addresses).
fn labelled(dir: &Path, project: &str, labels: &BTreeMap<String, String>) -> (String, String) {
    let mut spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    let mut doc: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!(".gpuform/{project}.state.json"))).unwrap(),
    )
    .unwrap();
    for r in doc["resources"].as_object_mut().unwrap().values_mut() {
        r.as_object_mut().unwrap().remove("reported");
    }
    let mut records = serde_json::to_string_pretty(&doc["resources"]).unwrap();
    spec = spec.replace(&format!("project: {project}"), "project: <project>");
    for (id, label) in labels {
        spec = spec.replace(id.as_str(), &format!("<{label}>"));
        records = records.replace(id.as_str(), &format!("<{label}>"));
    }
    (spec, records)
}

/// Killed right after the stand-in served each call of the import (the
/// `Killer`), the import run again gives what an uninterrupted one gives,
/// and a clean plan.
fn a_kill_after_each_import_call_then_import_again_on<M: Disowning>(cloud: &Cloud, mock: &M) {
    use gpuform_standins::Killer;
    let import = |project: &str, labels: &BTreeMap<String, String>| -> Vec<String> {
        let mut a: Vec<String> = [
            "import",
            "spec.yaml",
            "--cloud",
            cloud.name,
            "--region",
            cloud.region,
            "--name",
            "trainers",
            "--auto-approve",
            "-q",
            "--project",
        ]
        .map(String::from)
        .to_vec();
        a.push(project.to_string());
        for (id, label) in labels {
            if label.starts_with("node") {
                a.push("--id".into());
                a.push(id.clone());
            }
        }
        a
    };
    let run_at = |dir: &Path, args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        support::gpuform_at(dir, &[mock], &args)
    };
    let reference = tempfile::tempdir().unwrap();
    let labels = legacy_on(reference.path(), cloud, mock, "legacy0");
    let out = run_at(reference.path(), &import("shop0", &labels))
        .output()
        .unwrap();
    assert_success(&out, "reference import");
    let want = labelled(reference.path(), "shop0", &labels);

    let killer = Killer::install(mock);
    for n in 1u64.. {
        let w = tempfile::tempdir().unwrap();
        let dir = w.path();
        let labels = legacy_on(dir, cloud, mock, &format!("legacy{n}"));
        let project = format!("shop{n}");
        let args = import(&project, &labels);
        let mut cmd = run_at(dir, &args);
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let out = killer.run(mock, &mut cmd, Some(n));
        if out.status.success() {
            assert!(n > 10, "the kill fired {} times", n - 1);
            assert_eq!(labelled(dir, &project, &labels), want);
            break;
        }
        assert!(
            out.status.code().is_none(),
            "N={n}: expected a kill: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let again = run_at(dir, &args).output().unwrap();
        assert_success(&again, &format!("import again after a kill at call {n}"));
        assert_eq!(
            labelled(dir, &project, &labels),
            want,
            "killed after call {n}"
        );
        let plan = support::gpuform_at(dir, &[mock], &["plan", "spec.yaml", "--detailed-exitcode"])
            .output()
            .unwrap();
        assert_eq!(
            plan.status.code(),
            Some(0),
            "N={n}: {}",
            String::from_utf8_lossy(&plan.stdout)
        );
    }
}

#[test]
fn alibaba_a_kill_after_each_import_call_then_import_again_gives_the_same_spec_and_state() {
    let mock = gpuform_standins::alibaba::AlibabaMock::start();
    a_kill_after_each_import_call_then_import_again_on(&ALIBABA, &mock);
}

#[test]
fn tencent_a_kill_after_each_import_call_then_import_again_gives_the_same_spec_and_state() {
    let mock = gpuform_standins::tencent::TencentMock::start();
    a_kill_after_each_import_call_then_import_again_on(&TENCENT, &mock);
}

/// Refusals on a stand-in: an id that is not there, an instance another
/// gpuform state owns, each with its message, spec and state unchanged;
/// then the unmanaged nodes still import.
fn refusals_on(cloud: &Cloud, mock: &dyn Disowning, missing_id: &str) {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    let store = gpuform_standins::objstore::ObjStoreMock::start(cloud.store);
    let mut env: Vec<(String, String)> = mock.env();
    env.extend(gpuform_standins::MockCloud::env(&store));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let at = |args: &[&str]| {
        let out = support::gpuform_at(dir, &[mock, &store], args)
            .output()
            .unwrap();
        support::succeeded(&out, args)
    };
    std::fs::write(
        dir.join("spec.yaml"),
        format!(
            "# shop's spec\nproject: shop\nclusters:\n  web:\n    cloud: {}\n    region: {}\n    nodes: 1\n    gpu: T4\n",
            cloud.name, cloud.region
        ),
    )
    .unwrap();
    at(&["apply", "spec.yaml", "--auto-approve", "-q"]);
    let labels = legacy_on(dir, cloud, mock, "legacy");
    let import = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "import",
            "spec.yaml",
            "--cloud",
            cloud.name,
            "--region",
            cloud.region,
            "--name",
            "trainers",
            "--auto-approve",
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|e| e.to_string()));
        a
    };
    let missing = missing_id;
    refused(
        dir,
        &as_strs(&import(&["--id", missing])),
        &env,
        &[
            &format!(
                "there is no instance `{missing}` in {} {}",
                cloud.name, cloud.region
            ),
            "hint: check the id and the region",
        ],
    );

    std::fs::write(
        dir.join("other.yaml"),
        format!(
            "project: other\nclusters:\n  keep:\n    cloud: {}\n    region: {}\n    nodes: 1\n    gpu: T4\n",
            cloud.name, cloud.region
        ),
    )
    .unwrap();
    at(&[
        "apply",
        "other.yaml",
        "--auto-approve",
        "-q",
        "--state",
        ".gpuform/other.state.json",
    ]);
    let other: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".gpuform/other.state.json")).unwrap(),
    )
    .unwrap();
    let other_node = other["resources"]["cluster.keep.node[0]"]["id"]
        .as_str()
        .unwrap();
    refused(
        dir,
        &as_strs(&import(&["--id", other_node])),
        &env,
        &[
            &format!(
                "instance {other_node} is managed by another gpuform state: project `other`, lineage {}",
                other["lineage"].as_str().unwrap()
            ),
            "address cluster.keep.node[0]",
            "hint: manage it from project `other`'s spec and state",
        ],
    );

    // What is unmanaged still imports, beside shop's own cluster.
    let out = at(&as_strs(&import(&["--from-audit"])));
    assert!(out.contains("(2 instance(s))"), "{out}");
    let records = state(dir)["resources"].as_object().unwrap().clone();
    for (id, label) in &labels {
        assert!(
            records.values().any(|r| r["id"] == id.as_str()),
            "{label} ({id}) imported"
        );
    }
    assert!(records.contains_key("cluster.web.node[0]"));
}

#[test]
fn tencent_refusals_say_why_and_leave_spec_and_state_as_they_were() {
    let mock = gpuform_standins::tencent::TencentMock::start();
    refusals_on(&TENCENT, &mock, "ins-nothere1");
}

fn as_strs(a: &[String]) -> Vec<&str> {
    a.iter().map(String::as_str).collect()
}

#[test]
fn huawei_a_kill_after_each_import_call_then_import_again_gives_the_same_spec_and_state() {
    let mock = gpuform_standins::huawei::HuaweiMock::start();
    a_kill_after_each_import_call_then_import_again_on(&HUAWEI, &mock);
}

#[test]
fn huawei_refusals_say_why_and_leave_spec_and_state_as_they_were() {
    let mock = gpuform_standins::huawei::HuaweiMock::start();
    refusals_on(&HUAWEI, &mock, "0a1b2c3d-0000-1111-2222-333344445555");
}
