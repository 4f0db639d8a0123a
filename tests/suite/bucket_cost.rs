//! A bucket's monthly storage in the plan: its `size_gb` estimate times the
//! catalog's price per GB-month for its cloud, region and storage class,
//! counted in the totals; before → after when the estimate changes.

use crate::support;

use support::stdout_of;

use serde_json::Value;

const SPEC: &str = r#"project: cost
buckets:
  hot:
    cloud: aws
    region: us-east-1
    size_gb: 1000
  cold:
    cloud: aws
    region: us-east-1
    storage_class: archive
    size_gb: 2000
  cn:
    cloud: alibaba
    region: cn-hangzhou
    size_gb: 720
  guess:
    cloud: aws
    region: us-east-1
"#;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn plan_prices_each_buckets_storage_and_counts_it_in_the_totals() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec.yaml"), SPEC).unwrap();
    let args = ["plan", "spec.yaml", "--sandbox", "--cny-per-usd", "7.2"];
    let plan: Value =
        serde_json::from_str(&stdout_of(dir.path(), &[&args[..], &["--json"]].concat())).unwrap();
    let storage = plan["cost"]["storage"].as_array().unwrap();
    let line = |b: &str| {
        storage
            .iter()
            .find(|l| l["bucket"] == format!("bucket.{b}"))
            .unwrap_or_else(|| panic!("no line for {b}: {storage:?}"))
    };
    // S3 Standard in us-east-1 is $0.023/GB-month, Glacier Flexible $0.0036.
    assert!(close(
        line("hot")["monthly_usd_after"].as_f64().unwrap(),
        23.0
    ));
    assert!(close(
        line("cold")["monthly_usd_after"].as_f64().unwrap(),
        7.2
    ));
    assert_eq!(line("cold")["storage_class"], "archive");
    // OSS Standard at 0.12 CNY/GB-month, converted at 7.2.
    assert!(close(
        line("cn")["monthly_usd_after"].as_f64().unwrap(),
        12.0
    ));
    assert!(line("cn")["price_basis"]
        .as_str()
        .unwrap()
        .starts_with("assumed"));
    assert_eq!(
        line("guess")["unpriced"],
        "no `size_gb` estimate in the spec"
    );
    assert!(close(
        plan["cost"]["monthly_usd_after"].as_f64().unwrap(),
        42.2
    ));
    assert!(close(
        plan["cost"]["hourly_usd_after"].as_f64().unwrap() * 730.0,
        42.2
    ));
    assert_eq!(plan["cost"]["prices_in_cny"], true);

    let text = stdout_of(dir.path(), &args);
    assert!(
        text.contains(
            "bucket hot: 1000 GB standard × $0.0230/GB-month = $23.00/month [price sourced, as of 2026-03]"
        ),
        "{text}"
    );
    assert!(
        text.contains("bucket guess: size unknown standard: counts as $0/month (no `size_gb` estimate in the spec)"),
        "{text}"
    );

    // Applied, then the estimate grows: before → after, no call to a cloud
    // changes (the size is the spec's, not the bucket's).
    stdout_of(
        dir.path(),
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    let grown = SPEC.replace("size_gb: 1000", "size_gb: 3000");
    std::fs::write(dir.path().join("spec.yaml"), grown).unwrap();
    let plan: Value =
        serde_json::from_str(&stdout_of(dir.path(), &[&args[..], &["--json"]].concat())).unwrap();
    let hot = plan["cost"]["storage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["bucket"] == "bucket.hot")
        .unwrap()
        .clone();
    assert!(close(hot["monthly_usd_before"].as_f64().unwrap(), 23.0));
    assert!(close(hot["monthly_usd_after"].as_f64().unwrap(), 69.0));
    assert!(close(
        plan["cost"]["monthly_usd_delta"].as_f64().unwrap(),
        46.0
    ));
    stdout_of(
        dir.path(),
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    // Applied: nothing left to change, and the cost stays.
    let plan: Value =
        serde_json::from_str(&stdout_of(dir.path(), &[&args[..], &["--json"]].concat())).unwrap();
    assert_eq!(plan["summary"]["update"], 0, "{}", plan["changes"]);
    assert!(close(
        plan["cost"]["monthly_usd_delta"].as_f64().unwrap(),
        0.0
    ));
}
