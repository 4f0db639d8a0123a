//! A data volume's type is one neutral word that means the same disk on
//! every cloud (`gpuform_catalog::volume::VolumeType`): the spec takes only
//! those words, resolve records them as they are, and a cloud's own name
//! (`standard`, `gp3`, `SSD`) is refused alike wherever the cluster lands.

use crate::support;

use gpuform::resolve::{resolve, ResolveOptions};
use gpuform::spec::{load_str, Vars};
use gpuform_catalog::Catalog;
use support::{at, errors, find, SandboxWork};

/// Where each cloud sells the GPU (as the e2e suites place them).
const PLACES: [(&str, &str, &str); 5] = [
    ("aws", "us-east-1", "T4"),
    ("alibaba", "cn-hangzhou", "A10"),
    ("tencent", "ap-guangzhou", "T4"),
    ("huawei", "cn-north-4", "T4"),
    ("sandbox", "us-east-1", "T4"),
];

fn spec(cloud: &str, region: &str, gpu: &str, disk: &str) -> String {
    format!(
        "project: vt\nclusters:\n  c:\n    cloud: {cloud}\n    region: {region}\n    nodes: 1\n    gpu: {gpu}\n    disk:\n{disk}"
    )
}

#[test]
fn standard_is_refused_alike_on_every_cloud() {
    // `standard` was HDD on Alibaba and premium cloud disk on Tencent (and
    // is EBS's magnetic type): now it is no type anywhere, with one error.
    let mut seen = Vec::new();
    for (cloud, region, gpu) in PLACES {
        let text = spec(
            cloud,
            region,
            gpu,
            "      data_gb: 100\n      data_type: standard\n",
        );
        let d = errors(&text);
        let e = find(&d, "unknown volume type `standard`");
        assert_eq!(at(e), (10, 18, "clusters.c.disk.data_type"), "{cloud}");
        let hint = e.hint.clone().unwrap();
        assert!(
            hint.contains("`ssd` (general-purpose SSD, the default), `hdd` (hard disk"),
            "{hint}"
        );
        assert!(hint.contains("the same on every cloud"), "{hint}");
        seen.push((e.message.clone(), hint));
    }
    seen.dedup();
    assert_eq!(seen.len(), 1, "one message whatever the cloud: {seen:#?}");
}

#[test]
fn a_clouds_own_name_gets_the_neutral_one_suggested() {
    let d = errors(&spec(
        "huawei",
        "cn-north-4",
        "T4",
        "      data_gb: 100\n      data_type: SSD\n",
    ));
    let e = find(&d, "unknown volume type `SSD`");
    assert!(
        e.hint
            .as_deref()
            .unwrap()
            .starts_with("did you mean `ssd`?"),
        "{e:?}"
    );
    let d = errors(&spec("aws", "us-east-1", "T4", "      data_type: hdd\n"));
    let e = find(&d, "`data_type` without `data_gb`");
    assert_eq!(at(e), (9, 7, "clusters.c.disk.data_type"));
    assert!(e.hint.as_deref().unwrap().contains("add `data_gb: SIZE`"));
}

#[test]
fn resolve_records_the_neutral_type_on_every_cloud() {
    for (cloud, region, gpu) in PLACES {
        for (disk, want) in [
            ("      data_gb: 100\n", "ssd"),
            ("      data_gb: 100\n      data_type: hdd\n", "hdd"),
            ("      data_gb: 100\n      data_type: ssd\n", "ssd"),
        ] {
            let loaded = load_str("vt.yaml", &spec(cloud, region, gpu, disk), &Vars::new())
                .unwrap_or_else(|d| panic!("{cloud}: {d}"));
            let desired = resolve(&loaded, Catalog::builtin(), &ResolveOptions::default())
                .unwrap_or_else(|d| panic!("{cloud}: {d}"));
            let volume = desired.get("cluster.c.volume[0]").expect("a data volume");
            assert_eq!(volume.attrs["volume_type"], want, "{cloud} {disk}");
        }
    }
}

#[test]
fn an_hdd_volume_applies_and_plans_clean_on_the_sandbox() {
    let w = SandboxWork::new(
        "vt",
        &spec(
            "sandbox",
            "us-east-1",
            "T4",
            "      data_gb: 100\n      data_type: hdd\n",
        ),
    );
    w.ok(&["apply", "spec.yaml", "--sandbox", "--auto-approve"]);
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(w.path().join(".gpuform/vt.state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        state["resources"]["cluster.c.volume[0]"]["attrs"]["volume_type"],
        "hdd"
    );
    assert_eq!(w.plan_exit(&[]), 0, "a no-op plan stays clean");
    // Changing the type replaces the volume (a disk's type is not updatable
    // in place on every cloud).
    w.write_spec(&spec("sandbox", "us-east-1", "T4", "      data_gb: 100\n"));
    let plan = w.ok(&["plan", "spec.yaml", "--sandbox"]);
    assert!(plan.contains("volume_type"), "{plan}");
}
