//! `gpuform lockin` on the examples: one current cloud per cluster matching
//! what resolve picks, portable cells meet the requirement exactly, and the
//! reasons name what ties a cluster to its cloud.

use crate::support;
use gpuform::portability::lockin::{self, ReasonKind, Status};
use gpuform::resolve::{resolve, ResolveOptions};
use gpuform::spec::{self, CloudName, Vars};
use gpuform_catalog::Catalog;
use gpuform_provider::{Cloud, ResourceKind};
use std::path::PathBuf;

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

#[test]
fn matrix_for_every_example() {
    let catalog = Catalog::builtin();
    for path in examples() {
        let loaded = spec::load(&path, &Vars::new()).unwrap();
        let report = lockin::lockin(&loaded, catalog, 7.0);
        let desired = resolve(&loaded, catalog, &ResolveOptions::default()).unwrap();
        assert_eq!(report.clusters.len(), loaded.spec.clusters.len());
        for row in &report.clusters {
            let c = &loaded.spec.clusters[&row.cluster];
            let what = format!("{} {}", path.display(), row.cluster);
            assert_eq!(row.cells.len(), Cloud::ALL.len(), "{what}");
            let current: Vec<_> = row
                .cells
                .iter()
                .filter(|x| x.status == Status::Current)
                .collect();
            if c.cloud == CloudName::Any {
                assert!(current.is_empty(), "{what}");
                continue;
            }
            assert_eq!(current.len(), 1, "{what}");
            // The current cell names what resolve picks, at its price × nodes.
            let node = desired
                .resources
                .iter()
                .find(|r| {
                    r.kind == ResourceKind::Instance
                        && r.address.starts_with(&format!("cluster.{}.", row.cluster))
                })
                .unwrap();
            let eq = current[0].equivalent.as_ref().expect("current resolves");
            assert_eq!(
                Some(eq.instance_type.as_str()),
                node.attrs["instance_type"].as_str(),
                "{what}"
            );
            match (current[0].cluster_hourly_usd, node.hourly_usd) {
                (Some(a), Some(b)) => assert!((a - b * f64::from(c.nodes)).abs() < 1e-6, "{what}"),
                (a, b) => assert_eq!(a.is_some(), b.is_some(), "{what}"),
            }
            let req = row.requirement.as_ref().unwrap();
            for cell in &row.cells {
                match cell.status {
                    Status::Portable => {
                        let e = cell.equivalent.as_ref().unwrap();
                        let t = catalog.instance_type(cell.cloud, &e.instance_type).unwrap();
                        assert!(e.exact, "{what} {}", cell.cloud);
                        assert_eq!(t.gpu_model, req.gpu_model, "{what}");
                        assert_eq!(t.gpu_count, req.gpu_count, "{what}");
                        if let Some(i) = req.interconnect {
                            assert_eq!(t.interconnect, Some(i), "{what}");
                        }
                        if req.rdma {
                            assert!(t.rdma.is_some(), "{what}");
                        }
                        assert!(cell.reasons.is_empty(), "{what}");
                    }
                    Status::NotPortable => {
                        assert!(!cell.reasons.is_empty(), "{what} {}", cell.cloud)
                    }
                    Status::Current => {}
                }
            }
        }
    }
}

fn cell<'a>(r: &'a lockin::LockinReport, cluster: &str, cloud: Cloud) -> &'a lockin::Cell {
    r.clusters
        .iter()
        .find(|x| x.cluster == cluster)
        .unwrap()
        .cells
        .iter()
        .find(|x| x.cloud == cloud)
        .unwrap()
}

#[test]
fn known_facts_of_the_multi_cloud_example() {
    let loaded = spec::load(&root().join("examples/multi-cloud.yaml"), &Vars::new()).unwrap();
    let r = lockin::lockin(&loaded, Catalog::builtin(), 7.0);
    let kinds = |cluster, cloud| -> Vec<ReasonKind> {
        cell(&r, cluster, cloud)
            .reasons
            .iter()
            .map(|x| x.kind.clone())
            .collect()
    };
    assert_eq!(
        kinds("train-aws", Cloud::Tencent),
        vec![ReasonKind::GpuNotOffered]
    );
    assert!(kinds("train-aws", Cloud::Huawei).contains(&ReasonKind::InterconnectUnavailable));
    assert!(kinds("train-aws", Cloud::Huawei).contains(&ReasonKind::FabricUnavailable));
    assert_eq!(
        kinds("train-aws", Cloud::Alibaba),
        vec![ReasonKind::FabricUnavailable]
    );
    assert_eq!(
        kinds("batch-huawei", Cloud::Aws),
        vec![ReasonKind::GpuCountNotOffered]
    );
    assert_eq!(
        kinds("serve-alibaba", Cloud::Aws),
        vec![ReasonKind::GpuNotOffered]
    );
    let t4_on_aws = cell(&r, "serve-tencent", Cloud::Aws);
    assert_eq!(t4_on_aws.status, Status::Portable);
    assert_eq!(
        t4_on_aws.equivalent.as_ref().unwrap().instance_type,
        "g4dn.xlarge"
    );
    // 2 nodes × the cheapest T4 on-demand price on AWS.
    let cheapest = Catalog::builtin()
        .offerings()
        .iter()
        .filter(|o| o.cloud == Cloud::Aws && o.instance_type == "g4dn.xlarge")
        .filter_map(|o| o.prices.get(&gpuform_catalog::PricingModel::OnDemand))
        .map(|p| p.hourly)
        .fold(f64::INFINITY, f64::min);
    assert!((t4_on_aws.cluster_hourly_usd.unwrap() - 2.0 * cheapest).abs() < 1e-9);
}

#[test]
fn escape_hatches_and_mig_are_reported() {
    let text = "project: p\nclusters:\n  t:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4:1\n    instance_type: g4dn.xlarge\n    image: ami-0123456789abcdef0\n";
    let loaded = spec::load_str("raw.yaml", text, &Vars::new()).unwrap();
    let r = lockin::lockin(&loaded, Catalog::builtin(), 7.0);
    let tencent = cell(&r, "t", Cloud::Tencent);
    assert_eq!(tencent.status, Status::NotPortable);
    let kinds: Vec<_> = tencent.reasons.iter().map(|x| x.kind.clone()).collect();
    assert_eq!(kinds, vec![ReasonKind::EscapeHatch, ReasonKind::RawImage]);
    // The equivalent is still named, for `migrate`.
    assert!(tencent.equivalent.as_ref().unwrap().exact);
    assert_eq!(cell(&r, "t", Cloud::Aws).status, Status::Current);
}

#[test]
fn binary_table_and_json() {
    for path in examples() {
        let out = support::gpuform_in_repo()
            .arg("lockin")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        for c in ["aws", "alibaba", "tencent", "huawei"] {
            assert!(text.contains(c), "{text}");
        }
        let out = support::gpuform_in_repo()
            .arg("lockin")
            .arg(&path)
            .arg("--json")
            .output()
            .unwrap();
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["clouds"].as_array().unwrap().len(), 4);
    }
    let out = support::gpuform_in_repo()
        .args(["lockin", "no-such-file.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
