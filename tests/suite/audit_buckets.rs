//! `gpuform audit` lists buckets too (through `Provider::list_all_buckets`;
//! on the sandbox, its inventory): owner by tags and state like instances,
//! storage class, object count and size where reported, a month of storage
//! at the catalog's price where the size is known; table, --json, --markdown.

use crate::support;

use serde_json::Value;
use support::{assert_success, SandboxWork};

const SPEC: &str = "project: shop
buckets:
  data:
    cloud: sandbox
    region: us-east-1
  logs:
    cloud: sandbox
    region: us-east-1
    storage_class: archive
  tmp:
    cloud: sandbox
    region: us-east-1
";

/// Another state of the same project makes a bucket this state does not
/// record: an orphan of `shop` as far as `.gpuform/shop.state.json` knows.
const OTHER_SPEC: &str = "project: shop
buckets:
  stray:
    cloud: sandbox
    region: us-east-1
";

const STATE: &str = ".gpuform/shop.state.json";
const OTHER: &str = ".gpuform/other.state.json";

/// 100 GiB and 10 GiB, as `size_bytes`.
const HUNDRED_GB: u64 = 100 << 30;
const TEN_GB: u64 = 10 << 30;

fn audit_json(w: &SandboxWork, args: &[&str]) -> Value {
    let out = w.run(args, None);
    assert_success(&out, "audit --json");
    serde_json::from_slice(&out.stdout).expect("audit JSON")
}

fn bucket<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("bucket {name} not in the audit: {r:#}"))
}

#[test]
fn audit_lists_buckets_with_owner_class_size_and_monthly_cost() {
    let w = SandboxWork::new("shop", SPEC);
    w.ok(&["apply", "spec.yaml", "--sandbox", "--auto-approve"]);
    // The stray, from another state of the project.
    std::fs::write(w.path().join("other.yaml"), OTHER_SPEC).unwrap();
    w.ok(&[
        "apply",
        "other.yaml",
        "--sandbox",
        "--auto-approve",
        "--state",
        OTHER,
    ]);
    // What the cloud reports about their contents.
    let set = |address: &str, kv: &str, state: &str| {
        w.ok(&["sandbox", "set", address, kv, "--state", state]);
    };
    set("bucket.data", "object_count=1200", STATE);
    set("bucket.data", &format!("size_bytes={HUNDRED_GB}"), STATE);
    set("bucket.logs", "object_count=40", STATE);
    set("bucket.logs", &format!("size_bytes={TEN_GB}"), STATE);
    set("bucket.stray", "object_count=3", OTHER);

    let r = audit_json(&w, &["audit", "spec.yaml", "--json"]);
    assert_eq!(r["regions"], serde_json::json!(["sandbox:aws us-east-1"]));
    assert_eq!(r["buckets"].as_array().unwrap().len(), 4, "{r:#}");

    let data = bucket(&r, "shop-data");
    assert_eq!(data["owner"], "managed");
    assert_eq!(data["project"], "shop");
    assert_eq!(data["address"], "bucket.data");
    assert_eq!(data["storage_class"], "standard");
    assert_eq!(data["object_count"], 1200);
    assert_eq!(data["size_gb"], 100.0);
    // 100 GB of S3 Standard in us-east-1 at $0.023.
    assert!(
        (data["monthly_usd"].as_f64().unwrap() - 2.3).abs() < 1e-9,
        "{data}"
    );
    assert_eq!(data["price_basis"], "sourced, as of 2026-03");

    let logs = bucket(&r, "shop-logs");
    assert_eq!(logs["storage_class"], "archive");
    assert_eq!(logs["object_count"], 40);
    // 10 GB of Glacier Flexible Retrieval at $0.0036.
    assert!(
        (logs["monthly_usd"].as_f64().unwrap() - 0.036).abs() < 1e-9,
        "{logs}"
    );

    // Nothing reported: no count, no size, no cost — said, not guessed.
    let tmp = bucket(&r, "shop-tmp");
    assert_eq!(tmp["owner"], "managed");
    assert_eq!(tmp["object_count"], 0);
    assert_eq!(tmp["size_gb"], Value::Null);
    assert_eq!(tmp["monthly_usd"], Value::Null);
    assert_eq!(tmp["price_basis"], "size not reported");

    let stray = bucket(&r, "shop-stray");
    assert_eq!(stray["owner"], "orphaned");
    assert_eq!(stray["address"], "bucket.stray");
    // Every finding: the orphaned bucket is the only one.
    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0]["kind"], "orphaned");
    assert_eq!(findings[0]["subject"], stray["id"]);
    assert_eq!(
        findings[0]["message"],
        "bucket shop-stray (aws us-east-1, 3 object(s)) carries project shop's tags (bucket.stray) but its state does not record it: `gpuform gc SPEC` deletes it (refused while it holds objects unless `force_destroy`)"
    );

    // Without a spec no state is read: owners are `unknown`, no finding.
    let r = audit_json(
        &w,
        &[
            "audit",
            "--cloud",
            "aws",
            "--region",
            "us-east-1",
            "--sandbox",
            "--json",
        ],
    );
    assert_eq!(bucket(&r, "shop-data")["owner"], "unknown");
    assert_eq!(bucket(&r, "shop-stray")["owner"], "unknown");
    assert_eq!(r["findings"].as_array().unwrap().len(), 0, "{r:#}");

    // The table and the markdown carry the same rows.
    let table = w.ok(&["audit", "spec.yaml"]);
    assert!(table.contains("Buckets (4):"), "{table}");
    let data_row = table
        .lines()
        .find(|l| l.contains("shop-data"))
        .unwrap_or_else(|| panic!("{table}"));
    for cell in [
        "aws us-east-1",
        "standard",
        "1200",
        "100.0 GB",
        "managed (shop)",
        "$2.30",
        "sourced, as of 2026-03",
    ] {
        assert!(data_row.contains(cell), "{cell:?} not in {data_row:?}");
    }
    assert!(table.contains("Findings (1):"), "{table}");
    let md = w.ok(&["audit", "spec.yaml", "--markdown"]);
    assert!(md.contains("### Buckets (4)"), "{md}");
    assert!(
        md.contains("| aws us-east-1 | shop-logs | archive | 40 | 10.0 GB | managed (shop) | $0.04 | sourced, as of 2026-03 |"),
        "{md}"
    );
}
