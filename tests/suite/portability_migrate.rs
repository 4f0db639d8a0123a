//! `gpuform migrate`: every cluster of every example, moved to every other
//! cloud that offers its GPU, gives a spec that loads, resolves
//! (`gpuform validate`) and keeps its comments; errors are clear.

use crate::support;
use gpuform::portability::lockin::{spec_cloud, Requirement};
use gpuform::portability::migrate;
use gpuform::spec::{self, Vars};
use gpuform_catalog::Catalog;
use gpuform_provider::Cloud;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

fn gpuform(dir: &Path) -> Command {
    let mut c = support::gpuform_in_repo();
    c.current_dir(dir);
    c
}

/// Full-line comments, trimmed.
fn comments(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_example_cluster_moves_to_every_cloud_offering_its_gpu() {
    let catalog = Catalog::builtin();
    let dir = tempfile::tempdir().unwrap();
    let mut moves = 0;
    for path in examples() {
        let text = std::fs::read_to_string(&path).unwrap();
        let loaded = spec::load(&path, &Vars::new()).unwrap();
        for (name, c) in &loaded.spec.clusters {
            let req = Requirement::of(catalog, c).unwrap();
            for to in Cloud::ALL {
                if spec_cloud(c.cloud) == Some(to) && c.cloud != spec::CloudName::Sandbox {
                    continue;
                }
                if catalog.regions_offering(to, &req.gpu_model).is_empty() {
                    continue;
                }
                let file = dir.path().join("spec.yaml");
                std::fs::write(&file, &text).unwrap();
                let out = gpuform(dir.path())
                    .args(["migrate", name, "--to", to.as_str(), "spec.yaml", "--write"])
                    .output()
                    .unwrap();
                let what = format!("{} {name} → {to}", path.display());
                assert!(
                    out.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    stdout.contains(&format!("+    cloud: {to}")),
                    "{what}:\n{stdout}"
                );
                assert!(stdout.contains("Instance type:"), "{what}:\n{stdout}");
                assert!(stdout.contains("Does not carry over"), "{what}:\n{stdout}");
                let new = std::fs::read_to_string(&file).unwrap();
                // Comments and everything outside the cluster survive.
                assert_eq!(comments(&new), comments(&text), "{what}");
                // Valid and resolvable, by the binary.
                let v = gpuform(dir.path())
                    .args(["validate", "spec.yaml"])
                    .output()
                    .unwrap();
                assert!(
                    v.status.success(),
                    "{what}: {}\n{new}",
                    String::from_utf8_lossy(&v.stderr)
                );
                let reloaded = spec::load(&file, &Vars::new()).unwrap();
                let moved = &reloaded.spec.clusters[name];
                assert_eq!(spec_cloud(moved.cloud), Some(to), "{what}");
                assert_eq!(moved.gpu.model, c.gpu.model, "{what}");
                // Other clusters are untouched.
                for (other, oc) in &loaded.spec.clusters {
                    if other != name {
                        assert_eq!(&reloaded.spec.clusters[other], oc, "{what}: {other}");
                    }
                }
                moves += 1;
            }
        }
    }
    assert!(moves >= 8, "only {moves} migrations exercised");
}

#[test]
fn migrated_spec_plans_on_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("examples/multi-cloud.yaml"),
        dir.path().join("spec.yaml"),
    )
    .unwrap();
    let out = gpuform(dir.path())
        .args([
            "migrate",
            "serve-alibaba",
            "--to",
            "tencent",
            "spec.yaml",
            "--write",
        ])
        .output()
        .unwrap();
    support::assert_success(&out, "migrate serve-alibaba --to tencent --write");
    let out = gpuform(dir.path())
        .env("GPUFORM_SANDBOX_DIR", dir.path().join("sandbox"))
        .args(["plan", "spec.yaml", "--sandbox"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("sandbox:tencent"), "{plan}");
}

#[test]
fn explicit_region_zones_and_variables() {
    let vars = Vars::new();
    let loaded = spec::load(&root().join("examples/training-nvlink.yaml"), &vars).unwrap();
    let m = migrate::migrate(
        &loaded,
        &vars,
        Catalog::builtin(),
        "trainer",
        Cloud::Aws,
        Some("us-west-2"),
        7.0,
    )
    .unwrap();
    // The region was `${var.region}`: replaced by a literal; zones dropped.
    assert!(
        m.new_text.contains("    region: us-west-2\n"),
        "{}",
        m.new_text
    );
    assert!(!m.new_text.contains("zones:"), "{}", m.new_text);
    assert!(m.equivalent.exact);
    assert_eq!(m.to_instance_type, "p4de.24xlarge");
    // Same type and price in both regions: no cost change.
    assert!(m.hourly_delta().unwrap().abs() < 1e-9);
    assert!(
        m.changes.iter().any(|c| c.contains("${var.region}")),
        "{:?}",
        m.changes
    );

    // To Huawei: no NVLink stated and no RDMA -> both relaxed, named.
    let m = migrate::migrate(
        &loaded,
        &vars,
        Catalog::builtin(),
        "trainer",
        Cloud::Huawei,
        None,
        7.0,
    )
    .unwrap();
    assert!(!m.equivalent.exact);
    assert!(m.new_text.contains("interconnect: any"), "{}", m.new_text);
    assert!(m.new_text.contains("fabric: ethernet"), "{}", m.new_text);
    assert!(
        m.caveats.iter().any(|c| c.contains("no exact equivalent")),
        "{:?}",
        m.caveats
    );
    assert!(
        m.caveats.iter().any(|c| c.contains("data volume")),
        "{:?}",
        m.caveats
    );
    assert!(
        m.caveats.iter().any(|c| c.contains("bucket `checkpoints`")),
        "{:?}",
        m.caveats
    );
}

#[test]
fn escape_hatches_are_replaced() {
    let text = "project: p\nclusters:\n  t:\n    cloud: aws # keep me\n    region: us-east-1\n    zones:\n      - us-east-1a # first\n      - us-east-1b\n    nodes: 2\n    gpu: T4:1\n    instance_type: g4dn.xlarge # raw\n    image: ami-0123456789abcdef0\n    tags:\n      team: x\n";
    let vars = Vars::new();
    let loaded = spec::load_str("raw.yaml", text, &vars).unwrap();
    let m = migrate::migrate(
        &loaded,
        &vars,
        Catalog::builtin(),
        "t",
        Cloud::Tencent,
        None,
        7.0,
    )
    .unwrap();
    assert!(
        m.new_text.contains("    cloud: tencent # keep me\n"),
        "{}",
        m.new_text
    );
    assert!(!m.new_text.contains("instance_type"), "{}", m.new_text);
    assert!(!m.new_text.contains("ami-"), "{}", m.new_text);
    assert!(
        m.new_text.contains("image: ubuntu-22.04-cuda"),
        "{}",
        m.new_text
    );
    // Tencent names zones for GN7: they replace the block list.
    assert!(m.new_text.contains("    zones: [ap-"), "{}", m.new_text);
    assert!(
        m.caveats.iter().any(|c| c.contains("tags")),
        "{:?}",
        m.caveats
    );
    spec::load_str("raw.yaml", &m.new_text, &vars).unwrap();
}

/// Each cloud's own image ids are raw, not only `ami-`/`m-`/`img-`: a
/// Huawei IMS UUID and an Alibaba public `.vhd` id are replaced by the
/// logical image on the target cloud, never carried to it unchanged.
#[test]
fn every_clouds_raw_image_id_is_replaced_on_migrate() {
    for (cloud, region, gpu, image) in [
        (
            "huawei",
            "cn-north-4",
            "T4",
            "0a1b2c3d-0000-1111-2222-333344445555",
        ),
        (
            "alibaba",
            "cn-hangzhou",
            "T4",
            "ubuntu_22_04_x64_20G_alibase_20240130.vhd",
        ),
    ] {
        let text = format!(
            "project: p\nclusters:\n  t:\n    cloud: {cloud}\n    region: {region}\n    nodes: 1\n    gpu: {gpu}\n    image: {image}\n"
        );
        let vars = Vars::new();
        let loaded = spec::load_str("raw.yaml", &text, &vars).unwrap();
        let m = migrate::migrate(
            &loaded,
            &vars,
            Catalog::builtin(),
            "t",
            Cloud::Aws,
            None,
            7.0,
        )
        .unwrap_or_else(|e| panic!("{cloud}: {e:?}"));
        assert!(!m.new_text.contains(image), "{cloud}: {}", m.new_text);
        assert!(
            m.new_text.contains("image: ubuntu-22.04-cuda"),
            "{cloud}: {}",
            m.new_text
        );
        assert!(
            m.caveats.iter().any(|c| c.contains(image)),
            "{cloud}: {:?}",
            m.caveats
        );
    }
}

#[test]
fn a_spot_cap_changes_currency_with_the_cloud() {
    let text = "project: p\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4:1\n    pricing: spot\n    spot_max_price: 0.4\n";
    let vars = Vars::new();
    let loaded = spec::load_str("spot.yaml", text, &vars).unwrap();
    let to = |cloud| {
        migrate::migrate(&loaded, &vars, Catalog::builtin(), "t", cloud, None, 7.0)
            .unwrap()
            .caveats
    };
    let cny = to(Cloud::Tencent);
    assert!(
        cny.iter()
            .any(|c| c.contains("spot_max_price: 0.4 is read in CNY on tencent")),
        "{cny:?}"
    );
}

#[test]
fn count_change_scales_nodes() {
    let text = "project: p\nclusters:\n  b:\n    cloud: huawei\n    region: cn-north-4\n    nodes: 3\n    gpu: A100-80GB:4\n";
    let vars = Vars::new();
    let loaded = spec::load_str("b.yaml", text, &vars).unwrap();
    let m = migrate::migrate(
        &loaded,
        &vars,
        Catalog::builtin(),
        "b",
        Cloud::Aws,
        None,
        7.0,
    )
    .unwrap();
    // AWS has A100-80GB only as 8 per instance: 3 × 4 = 12 GPUs -> 2 × 8.
    assert!(
        m.new_text.contains("    gpu: A100-80GB:8\n"),
        "{}",
        m.new_text
    );
    assert!(m.new_text.contains("    nodes: 2\n"), "{}", m.new_text);
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("examples/multi-cloud.yaml"),
        dir.path().join("spec.yaml"),
    )
    .unwrap();
    let before = std::fs::read_to_string(dir.path().join("spec.yaml")).unwrap();
    for (args, needle) in [
        (vec!["nope", "--to", "aws"], "no cluster `nope`"),
        (vec!["train-aws", "--to", "gcp"], "unknown cloud `gcp`"),
        (
            vec!["train-aws", "--to", "tencent"],
            "tencent does not offer A100-80GB",
        ),
        (
            vec!["train-aws", "--to", "alibaba/us-east-1"],
            "not a alibaba region",
        ),
        (vec!["train-aws", "--to", "aws"], "already runs on aws"),
        (
            vec!["train-aws", "--to", "sandbox"],
            "cannot migrate to `sandbox`",
        ),
        (
            vec!["serve-alibaba", "--to", "tencent/ap-singapore"],
            "does not offer A10",
        ),
    ] {
        let out = gpuform(dir.path())
            .arg("migrate")
            .args(&args)
            .args(["spec.yaml", "--write"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.contains("hint:"), "{args:?}: {err}");
    }
    // Nothing was written.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("spec.yaml")).unwrap(),
        before
    );
    let out = gpuform(dir.path())
        .args(["migrate", "x", "--to", "aws", "missing.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read spec file"));
}

#[test]
fn json_output() {
    let out = support::gpuform_in_repo()
        .current_dir(root())
        .args([
            "migrate",
            "serve-tencent",
            "--to",
            "aws",
            "examples/multi-cloud.yaml",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["to_cloud"], "aws");
    assert_eq!(v["to_instance_type"], "g4dn.xlarge");
    assert!(v["diff"].as_str().unwrap().contains("+    cloud: aws"));
    let before = v["hourly_before"].as_f64().unwrap();
    let after = v["hourly_after"].as_f64().unwrap();
    assert!(after < before, "{v}");
}

#[test]
fn cloud_any_is_pinned() {
    let text = "project: p\nclusters:\n  c:\n    cloud: any\n    candidates: [aws, tencent] # where it may go\n    strategy: cheapest\n    nodes: 2\n    gpu: T4:1\n";
    let vars = Vars::new();
    let loaded = spec::load_str("any.yaml", text, &vars).unwrap();
    let m = migrate::migrate(
        &loaded,
        &vars,
        Catalog::builtin(),
        "c",
        Cloud::Tencent,
        None,
        7.0,
    )
    .unwrap();
    assert!(
        m.new_text.contains("    cloud: tencent\n    region: ap-"),
        "{}",
        m.new_text
    );
    assert!(!m.new_text.contains("candidates"), "{}", m.new_text);
    assert!(!m.new_text.contains("strategy"), "{}", m.new_text);
    let pinned = spec::load_str("any.yaml", &m.new_text, &vars).unwrap();
    assert_eq!(pinned.spec.clusters["c"].cloud, spec::CloudName::Tencent);
}

const BUCKETS: &str = "\
project: lab
buckets:
  # training data
  datasets:
    cloud: aws
    region: us-east-1   # next to the trainers
    size_gb: 1000
    versioning: true
  ckpt:
    cloud: tencent
    region: ap-shanghai
    name: lab-ckpt-1250000000
clusters:
  trainer:
    cloud: aws
    region: us-east-1
    nodes: 1
    gpu: T4
    reads: [datasets]
  cn:
    cloud: tencent
    region: ap-shanghai
    nodes: 1
    gpu: T4
    reads: [datasets, ckpt]
";

fn migrate_bucket(dir: &Path, args: &[&str]) -> std::process::Output {
    gpuform(dir)
        .args(["migrate"])
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// `migrate … --json`, which must succeed: what it printed.
fn migrate_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = migrate_bucket(dir, &[args, &["--json"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A JSON array of strings.
fn strings(v: &serde_json::Value) -> Vec<&str> {
    let all = v.as_array().unwrap_or_else(|| panic!("not an array: {v}"));
    all.iter().map(|c| c.as_str().unwrap()).collect()
}

#[test]
fn a_bucket_moves_empty_with_its_copy_command_and_cost_change() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), BUCKETS).unwrap();
    // To Tencent COS: the name needs the account's APPID, which gpuform
    // cannot know.
    let out = migrate_bucket(
        dir.path(),
        &[
            "bucket.datasets",
            "--to",
            "tencent/ap-shanghai",
            "spec.yaml",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("bucket `datasets` cannot keep the name `lab-datasets` on tencent COS"),
        "{e}"
    );
    assert!(
        e.contains("hint: COS bucket names end with the account's APPID (the number on the console's Account Information page): add --bucket-name lab-datasets-APPID"),
        "{e}"
    );

    let out = migrate_bucket(
        dir.path(),
        &[
            "bucket.datasets",
            "--to",
            "tencent/ap-shanghai",
            "--bucket-name",
            "lab-datasets-1250000000",
            "--cny-per-usd",
            "7.2",
            "spec.yaml",
            "--write",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let new = std::fs::read_to_string(dir.path().join("spec.yaml")).unwrap();
    // The edit: cloud, region (its comment kept), the new name; nothing else.
    assert!(new.contains("  # training data\n  datasets:\n    cloud: tencent\n    region: ap-shanghai   # next to the trainers\n    name: lab-datasets-1250000000\n    size_gb: 1000\n"), "{new}");
    assert!(new.contains("  trainer:\n    cloud: aws\n"), "{new}");
    spec::load(&dir.path().join("spec.yaml"), &Vars::new()).unwrap();
    for line in [
        "Bucket `datasets`: aws S3 us-east-1 → tencent COS ap-shanghai (`lab-datasets` → `lab-datasets-1250000000`)",
        // 1000 GB × $0.023 → 1000 GB × 0.118 CNY / 7.2.
        "Storage (standard): $23.00/month → $16.39/month (-$6.61/month)",
        "  - data does not move: the next apply creates `lab-datasets-1250000000` empty on tencent COS ap-shanghai, then deletes `lab-datasets` on aws S3",
        "  - cluster `cn` (tencent/ap-shanghai) reads it in its own region after the move",
        "  - cluster `trainer` (aws/us-east-1) reads it across clouds after the move: $0.0694/GB (internet)",
        "  rclone config create aws-s3-us-east-1 s3 provider=AWS env_auth=true region=us-east-1",
        "  rclone config create tencent-cos-ap-shanghai s3 provider=TencentCOS endpoint=cos.ap-shanghai.myqcloud.com",
        "  rclone sync aws-s3-us-east-1:lab-datasets tencent-cos-ap-shanghai:lab-datasets-1250000000 --checksum --progress",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(
        text.contains("refuses to delete `lab-datasets` while it holds objects"),
        "{text}"
    );

    // Back off COS to Huawei OBS: the APPID name is valid there, kept; the
    // region comes from --to; OBS egress has no price: said so.
    let v = migrate_json(
        dir.path(),
        &["bucket.ckpt", "--to", "huawei/cn-east-3", "spec.yaml"],
    );
    assert_eq!(v["to_name"], "lab-ckpt-1250000000");
    assert_eq!(v["to_region"], "cn-east-3");
    assert_eq!(v["monthly_usd_before"], serde_json::Value::Null);
    let caveats = strings(&v["caveats"]);
    assert!(
        caveats.contains(&"cluster `cn` (tencent/ap-shanghai) reads it across clouds after the move: price unknown (internet)"),
        "{caveats:?}"
    );
    assert!(
        caveats
            .contains(&"storage cost before the move unknown: no `size_gb` estimate in the spec"),
        "{caveats:?}"
    );
    assert_eq!(
        v["copy_commands"][2],
        "rclone sync tencent-cos-ap-shanghai:lab-ckpt-1250000000 huawei-obs-cn-east-3:lab-ckpt-1250000000 --checksum --progress"
    );
}

#[test]
fn bucket_migration_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), BUCKETS).unwrap();
    for (args, needle, hint) in [
        (
            vec!["bucket.nope", "--to", "aws"],
            "has no bucket `nope`",
            "buckets in the spec: ckpt, datasets",
        ),
        (
            vec!["bucket.datasets", "--to", "aws/us-east-1"],
            "already on aws us-east-1",
            "--to aws/REGION",
        ),
        // No region and no reader on Alibaba to take it from.
        (
            vec!["bucket.datasets", "--to", "alibaba"],
            "which alibaba region",
            "--to alibaba/REGION",
        ),
        (
            vec![
                "bucket.datasets",
                "--to",
                "alibaba/cn-hangzhou",
                "--bucket-name",
                "Bad_Name",
            ],
            "cannot keep the name `Bad_Name` on alibaba OSS",
            "--bucket-name",
        ),
        (
            vec!["trainer", "--to", "alibaba", "--bucket-name", "x"],
            "--bucket-name applies to a bucket",
            "bucket.KEY",
        ),
    ] {
        let out = migrate_bucket(dir.path(), &[&args[..], &["spec.yaml", "--write"]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(needle), "{args:?}: {e}");
        assert!(e.contains("hint:") && e.contains(hint), "{args:?}: {e}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("spec.yaml")).unwrap(),
        BUCKETS
    );
    // With no region given, a reader on the target cloud gives it.
    let v = migrate_json(
        dir.path(),
        &[
            "bucket.datasets",
            "--to",
            "tencent",
            "--bucket-name",
            "d-1250000000",
            "spec.yaml",
        ],
    );
    assert_eq!(v["to_region"], "ap-shanghai");
}

#[test]
fn a_cluster_moving_away_from_the_bucket_it_reads_is_told_the_transfer_price() {
    let dir = tempfile::tempdir().unwrap();
    // The migrated spec must resolve: the buckets are on the sandbox (which
    // mirrors AWS), so that this holds whichever clouds' object storage
    // this build speaks.
    let spec = BUCKETS
        .replace(
            "    cloud: aws
    region: us-east-1   #",
            "    cloud: sandbox
    region: us-east-1   #",
        )
        .replace(
            "    cloud: tencent
    region: ap-shanghai
    name: lab-ckpt-1250000000
",
            "    cloud: sandbox
    region: us-west-2
",
        );
    std::fs::write(dir.path().join("spec.yaml"), &spec).unwrap();
    let v = migrate_json(
        dir.path(),
        &["trainer", "--to", "alibaba/cn-hangzhou", "spec.yaml"],
    );
    let caveats = strings(&v["caveats"]);
    assert!(
        caveats.contains(&"reads: bucket `datasets` stays on sandbox us-east-1: reading it from alibaba cn-hangzhou is internet data transfer ($0.0900/GB); `gpuform migrate bucket.datasets --to alibaba/cn-hangzhou` moves it (empty: data is copied by hand)"),
        "{caveats:?}"
    );
    // The bucket it does not read keeps the general note.
    assert!(
        caveats
            .iter()
            .any(|c| c.starts_with("bucket `ckpt` stays on sandbox us-west-2")),
        "{caveats:?}"
    );
}
