//! Issue 12, point 2: `gpuform prices refresh` against each cloud's price
//! API (the Alibaba, Tencent and Huawei stand-ins, which verify every
//! signature with their own verifiers and answer the documented shapes),
//! then `offers` and `plan` show the refreshed prices labelled `live
//! YYYY-MM-DD` with their region; an interrupted refresh keeps what it
//! fetched and a re-run resumes; bad credentials and unknown types are clear
//! errors that never print a secret. (AWS, with moto for spot history:
//! tests/suite/prices_aws_moto.rs.)
//!
//! The stand-ins' list prices are set here; expected values are those
//! prices, never read back from the code under test.

use crate::support;
use gpuform_standins::alibaba::AlibabaMock;
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::prices::ListPrice;
use gpuform_standins::tencent::TencentMock;
use gpuform_standins::MockCloud;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

const TODAY: &str = "2026-11-29";
const HOURS_PER_MONTH: f64 = 730.0;

/// Variables that could point gpuform at a real cloud or another cache.
const CLEARED: &[&str] = &[
    "GPUFORM_PRICES",
    "XDG_CACHE_HOME",
    "TENCENTCLOUD_SECRET_ID",
    "TENCENTCLOUD_SECRET_KEY",
    "TENCENTCLOUD_SESSION_TOKEN",
    "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
    "HUAWEICLOUD_SDK_AK",
    "HUAWEICLOUD_SDK_SK",
    "HUAWEICLOUD_SDK_PROJECT_ID",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
];

fn gpuform(dir: &Path, env: &[(String, String)], args: &[&str]) -> Output {
    let mut cmd = support::gpuform_in_repo();
    cmd.current_dir(dir)
        .args(args)
        .env("GPUFORM_TODAY", TODAY)
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .env("GPUFORM_PRICE_CACHE", dir.join("cache/prices.json"));
    for v in CLEARED {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", text(&o));
    o
}

fn cache(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("cache/prices.json")).unwrap()).unwrap()
}

/// The cache's quotes of one offering: term label → amount.
fn cached(dir: &Path, cloud: &str, region: &str, itype: &str) -> Vec<(String, f64)> {
    let c = cache(dir);
    let e = c["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["cloud"] == cloud && e["region"] == region && e["instance_type"] == itype)
        .unwrap_or_else(|| panic!("no cache entry for {cloud} {region} {itype}: {c:#}"));
    assert_eq!(e["quoted_on"], TODAY);
    e["quotes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let term = match (&q["term"], &q["months"]) {
                (Value::String(t), Value::Number(m)) => format!("{t}-{m}"),
                (Value::String(t), _) => t.clone(),
                other => panic!("term {other:?}"),
            };
            (term, q["amount"].as_f64().unwrap())
        })
        .collect()
}

/// The offers row of `itype` in `region` for `pricing`, as JSON.
fn offer(dir: &Path, gpu: &str, cloud: &str, region: &str, itype: &str, pricing: &str) -> Value {
    let o = ok(gpuform(
        dir,
        &[],
        &[
            "offers",
            gpu,
            "--cloud",
            cloud,
            "--region",
            region,
            "--pricing",
            pricing,
            "--json",
        ],
    ));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["offers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["instance_type"] == itype)
        .unwrap_or_else(|| panic!("no {itype} in {v:#}"))
        .clone()
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

const T4_TENCENT: ListPrice = ListPrice {
    hourly: 8.75,
    month: 3_900.0,
    year: 39_000.0,
    spot: Some(1.95),
    three_years: None,
};

#[test]
fn tencent_refresh_prices_offers_and_plan_with_the_live_label() {
    let mock = TencentMock::start();
    mock.set_price("GN7.2XLARGE32", T4_TENCENT);
    let dir = tempdir();
    let env = mock.env();
    let out = ok(gpuform(
        dir.path(),
        &env,
        &[
            "prices",
            "refresh",
            "--cloud",
            "tencent",
            "--region",
            "ap-guangzhou",
            "--type",
            "GN7.2XLARGE32",
        ],
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tencent ap-guangzhou GN7.2XLARGE32: quoted"),
        "{stdout}"
    );
    let mut quotes = cached(dir.path(), "tencent", "ap-guangzhou", "GN7.2XLARGE32");
    quotes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        quotes,
        vec![
            ("on-demand".to_string(), 8.75),
            ("spot".to_string(), 1.95),
            ("subscription-1".to_string(), 3_900.0),
            ("subscription-12".to_string(), 39_000.0),
        ]
    );

    // offers: the live price, its day and its region.
    let row = offer(
        dir.path(),
        "T4",
        "tencent",
        "ap-guangzhou",
        "GN7.2XLARGE32",
        "on-demand",
    );
    assert_eq!(row["price"]["amount"], 8.75, "{row:#}");
    assert_eq!(row["price"]["currency"], "CNY");
    assert_eq!(row["price"]["basis"], "live");
    assert_eq!(row["price"]["as_of"], TODAY);
    let source = row["price"]["source"].as_str().unwrap();
    assert!(
        source.contains("InquiryPriceRunInstances") && source.contains("ap-guangzhou"),
        "{source}"
    );
    // The one-year subscription is reserved-1y, per hour over 12 × 730 h.
    let row = offer(
        dir.path(),
        "T4",
        "tencent",
        "ap-guangzhou",
        "GN7.2XLARGE32",
        "reserved-1y",
    );
    let hourly = row["price"]["amount"].as_f64().unwrap();
    assert!(
        (hourly - 39_000.0 / (12.0 * HOURS_PER_MONTH)).abs() < 1e-9,
        "{row:#}"
    );
    assert_eq!(row["price"]["basis"], "live");
    // Another region keeps the snapshot's price.
    let other = ok(gpuform(
        dir.path(),
        &[],
        &[
            "offers",
            "T4",
            "--cloud",
            "tencent",
            "--region",
            "ap-shanghai",
            "--json",
        ],
    ));
    let v: Value = serde_json::from_slice(&other.stdout).unwrap();
    assert!(v["offers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["price"]["basis"] != "live"));
    // The table says it too.
    let table = ok(gpuform(
        dir.path(),
        &[],
        &[
            "offers",
            "T4",
            "--cloud",
            "tencent",
            "--region",
            "ap-guangzhou",
        ],
    ));
    let t = String::from_utf8_lossy(&table.stdout);
    assert!(
        t.contains(&format!("price live {TODAY} for ap-guangzhou")),
        "{t}"
    );

    // plan: the cluster's cost names the live basis with day and region.
    let spec = "project: live\nclusters:\n  t4:\n    cloud: tencent\n    region: ap-guangzhou\n    nodes: 2\n    gpu: T4:1\n    instance_type: GN7.2XLARGE32\n";
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let plan = gpuform(
        dir.path(),
        &[],
        &["plan", "spec.yaml", "--sandbox", "--json"],
    );
    assert!(plan.status.code() == Some(0), "{}", text(&plan));
    let p: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let c = &p["cost"]["clusters"][0];
    assert_eq!(
        c["price_basis"],
        format!("live {TODAY} for ap-guangzhou"),
        "{c:#}"
    );
    let hourly = c["hourly_usd_after"].as_f64().unwrap();
    assert!((hourly - 2.0 * 8.75 / 7.0).abs() < 1e-9, "{c:#}");
    // --prices still wins over the cache.
    std::fs::write(
        dir.path().join("over.csv"),
        "cloud,region,instance_type,pricing,price,currency\ntencent,ap-guangzhou,GN7.2XLARGE32,on-demand,7,CNY\n",
    )
    .unwrap();
    let row = {
        let o = ok(gpuform(
            dir.path(),
            &[],
            &[
                "offers",
                "T4",
                "--cloud",
                "tencent",
                "--region",
                "ap-guangzhou",
                "--json",
                "--prices",
                "over.csv",
            ],
        ));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["offers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["instance_type"] == "GN7.2XLARGE32")
            .unwrap()
            .clone()
    };
    assert_eq!(
        (
            row["price"]["amount"].as_f64(),
            row["price"]["basis"].as_str()
        ),
        (Some(7.0), Some("override"))
    );
}

#[test]
fn an_interrupted_refresh_keeps_what_it_fetched_and_a_rerun_resumes() {
    let mock = TencentMock::start();
    mock.set_price("GN7.2XLARGE32", T4_TENCENT);
    mock.set_price(
        "GN7.5XLARGE80",
        ListPrice {
            hourly: 17.5,
            month: 7_800.0,
            year: 78_000.0,
            spot: None,
            three_years: None,
        },
    );
    // The first quote takes four price answers; the outage starts after them.
    mock.fail_prices_after(Some(4));
    let dir = tempdir();
    let env = mock.env();
    let args = [
        "prices",
        "refresh",
        "--cloud",
        "tencent",
        "--region",
        "ap-guangzhou",
        "--type",
        "GN7.2XLARGE32",
        "--type",
        "GN7.5XLARGE80",
    ];
    let first = gpuform(dir.path(), &env, &args);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    let err = String::from_utf8_lossy(&first.stderr);
    assert!(
        err.contains("GN7.5XLARGE80")
            && err.contains("keeps the 1 quote")
            && err.contains("resume"),
        "{err}"
    );
    assert_eq!(
        cached(dir.path(), "tencent", "ap-guangzhou", "GN7.2XLARGE32").len(),
        4
    );
    assert_eq!(cache(dir.path())["entries"].as_array().unwrap().len(), 1);

    mock.fail_prices_after(None);
    let second = ok(gpuform(dir.path(), &env, &args));
    let out = String::from_utf8_lossy(&second.stdout);
    assert!(
        out.contains("GN7.2XLARGE32: cached today, skipped"),
        "{out}"
    );
    assert!(out.contains("GN7.5XLARGE80: quoted"), "{out}");
    let q = cached(dir.path(), "tencent", "ap-guangzhou", "GN7.5XLARGE80");
    assert!(q.contains(&("on-demand".to_string(), 17.5)), "{q:?}");
    // Not sold as spot: no spot quote, and no failure either.
    assert!(q.iter().all(|(t, _)| t != "spot"), "{q:?}");
}

#[test]
fn bad_credentials_and_unknown_types_are_clear_errors_without_secrets() {
    let mock = TencentMock::start();
    mock.set_price("GN7.2XLARGE32", T4_TENCENT);
    let dir = tempdir();
    let secret = "WrongSecretKeyThatMustNotLeak0000";
    let mut env = mock.env();
    for (k, v) in env.iter_mut() {
        if k == "TENCENTCLOUD_SECRET_KEY" {
            *v = secret.to_string();
        }
    }
    let bad = gpuform(
        dir.path(),
        &env,
        &[
            "prices",
            "refresh",
            "--cloud",
            "tencent",
            "--region",
            "ap-guangzhou",
            "--type",
            "GN7.2XLARGE32",
        ],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    let all = text(&bad);
    assert!(all.contains("auth") && all.contains("credentials"), "{all}");
    assert!(!all.contains(secret), "{all}");
    assert!(!dir.path().join("cache/prices.json").exists());

    // A type the catalog does not know: refused before any call.
    let before = mock.requests();
    let unknown = gpuform(
        dir.path(),
        &mock.env(),
        &[
            "prices",
            "refresh",
            "--cloud",
            "tencent",
            "--type",
            "GN99.HUGE",
        ],
    );
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("unknown instance type `GN99.HUGE`"),
        "{}",
        text(&unknown)
    );
    assert_eq!(mock.requests(), before);
    // A type the cloud's price API does not know: named, the rest is kept.
    let refused = gpuform(
        dir.path(),
        &mock.env(),
        &[
            "prices",
            "refresh",
            "--cloud",
            "tencent",
            "--region",
            "ap-guangzhou",
            "--type",
            "GN7.2XLARGE32",
            "--type",
            "GN7.5XLARGE80",
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("GN7.5XLARGE80") && err.contains("InstanceTypeNotFound"),
        "{err}"
    );
    assert_eq!(
        cached(dir.path(), "tencent", "ap-guangzhou", "GN7.2XLARGE32").len(),
        4
    );
    // Unknown region, unknown cloud.
    for (args, needle) in [
        (
            vec![
                "prices", "refresh", "--cloud", "tencent", "--region", "mars-1",
            ],
            "unknown region `mars-1`",
        ),
        (
            vec!["prices", "refresh", "--cloud", "azure"],
            "unknown cloud",
        ),
    ] {
        let o = gpuform(dir.path(), &mock.env(), &args);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(needle),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn alibaba_refresh_reads_describe_price_and_every_page_of_spot_history() {
    let mock = AlibabaMock::start();
    mock.set_price(
        "ecs.gn6i-c4g1.xlarge",
        ListPrice {
            hourly: 11.2,
            month: 4_800.0,
            year: 48_000.0,
            spot: Some(2.5),
            three_years: None,
        },
    );
    let dir = tempdir();
    ok(gpuform(
        dir.path(),
        &mock.env(),
        &[
            "prices",
            "refresh",
            "--cloud",
            "alibaba",
            "--region",
            "cn-hangzhou",
            "--type",
            "ecs.gn6i-c4g1.xlarge",
        ],
    ));
    let mut q = cached(dir.path(), "alibaba", "cn-hangzhou", "ecs.gn6i-c4g1.xlarge");
    q.sort_by(|a, b| a.0.cmp(&b.0));
    // The stand-in's history ends at the list spot price on its last page.
    assert_eq!(
        q,
        vec![
            ("on-demand".to_string(), 11.2),
            ("spot".to_string(), 2.5),
            ("subscription-1".to_string(), 4_800.0),
            ("subscription-12".to_string(), 48_000.0),
        ]
    );
    let row = offer(
        dir.path(),
        "T4",
        "alibaba",
        "cn-hangzhou",
        "ecs.gn6i-c4g1.xlarge",
        "spot",
    );
    assert_eq!(
        (
            row["price"]["amount"].as_f64(),
            row["price"]["basis"].as_str()
        ),
        (Some(2.5), Some("live"))
    );
    assert!(
        row["price"]["source"]
            .as_str()
            .unwrap()
            .contains("DescribeSpotPriceHistory"),
        "{row:#}"
    );
}

#[test]
fn huawei_refresh_reads_the_bss_ratings() {
    let mock = HuaweiMock::start();
    mock.set_price(
        "p2s.2xlarge.8",
        ListPrice {
            hourly: 26.88,
            month: 12_000.0,
            year: 117_734.4,
            spot: None,
            three_years: None,
        },
    );
    let dir = tempdir();
    ok(gpuform(
        dir.path(),
        &mock.env(),
        &[
            "prices",
            "refresh",
            "--cloud",
            "huawei",
            "--region",
            "cn-north-4",
            "--type",
            "p2s.2xlarge.8",
        ],
    ));
    let mut q = cached(dir.path(), "huawei", "cn-north-4", "p2s.2xlarge.8");
    q.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        q,
        vec![
            ("on-demand".to_string(), 26.88),
            ("subscription-1".to_string(), 12_000.0),
            ("subscription-12".to_string(), 117_734.4),
        ]
    );
    let row = offer(
        dir.path(),
        "V100-32GB-PCIe",
        "huawei",
        "cn-north-4",
        "p2s.2xlarge.8",
        "reserved-1y",
    );
    let hourly = row["price"]["amount"].as_f64().unwrap();
    assert!(
        (hourly - 117_734.4 / (12.0 * HOURS_PER_MONTH)).abs() < 1e-9,
        "{row:#}"
    );
    assert_eq!(row["price"]["basis"], "live");
    // An outage at BSS stops the refresh with a clear, retried error.
    mock.fail_prices_after(Some(0));
    let o = gpuform(
        dir.path(),
        &mock.env(),
        &[
            "prices",
            "refresh",
            "--cloud",
            "huawei",
            "--region",
            "cn-north-4",
            "--type",
            "p2s.2xlarge.8",
            "--force",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("run the same command again"),
        "{}",
        text(&o)
    );
    // The earlier quote is still there.
    assert_eq!(
        cached(dir.path(), "huawei", "cn-north-4", "p2s.2xlarge.8").len(),
        3
    );
}
