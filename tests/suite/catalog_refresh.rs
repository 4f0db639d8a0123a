//! Issue 30 item 8: `gpuform catalog refresh` against the Alibaba, Tencent
//! and Huawei stand-ins (which verify every signature with their own
//! verifiers and answer the documented shapes of DescribeRegions /
//! DescribeZones / DescribeAvailableResource, DescribeRegions /
//! DescribeZones / DescribeZoneInstanceConfigInfos, KeystoneListRegions /
//! NovaListAvailabilityZones / ListFlavors). A region the built-in catalog
//! lacks becomes known to validate and offers, its offerings sourced to the
//! API calls and the day; the cache is dated; a type without a GPU spec in
//! the catalog is listed as skipped, never added; a sold-out zone is not an
//! offering; a region the cloud does not list, missing credentials and API
//! errors are clear, exit 1, and never print a secret. (AWS, against moto:
//! tests/suite/catalog_aws_moto.rs.)
//!
//! The stand-ins' regions, zones and offerings are set here; expected
//! values are those, never read back from the code under test.

use crate::support;
use gpuform_standins::alibaba::AlibabaMock;
use gpuform_standins::geography::ZoneOffer;
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::tencent::TencentMock;
use gpuform_standins::MockCloud;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// Variables that could point gpuform at a real cloud or another cache.
const CLEARED: &[&str] = &[
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
];

fn gpuform(dir: &Path, env: &[(String, String)], args: &[&str]) -> Output {
    let mut cmd = support::gpuform_cmd(dir, args);
    cmd.env("HOME", dir)
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

fn ok(o: Output, secrets: &[String]) -> Output {
    assert!(o.status.success(), "{}", text(&o));
    for s in secrets {
        assert!(!text(&o).contains(s.as_str()), "a secret in: {}", text(&o));
    }
    o
}

fn offer(zone: &str, t: &str, sold_out: bool, gpus: u32) -> ZoneOffer {
    ZoneOffer {
        zone: zone.into(),
        instance_type: t.into(),
        sold_out,
        gpus,
    }
}

/// What one cloud's scenario needs.
struct Case<'a> {
    cloud: &'a str,
    env: Vec<(String, String)>,
    secrets: Vec<String>,
    /// A region the built-in catalog lacks, its zones.
    region: &'a str,
    zones: [&'a str; 2],
    /// A catalog type with `gpu` (offers/validate argument), on sale in
    /// `zones[1]` and sold out in `zones[0]`.
    known: &'a str,
    gpu: &'a str,
    /// A type of a catalog family that the catalog has no spec for.
    unknown: &'a str,
    /// A call the refresh makes.
    api: &'a str,
}

fn scenario(c: Case<'_>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("spec.yaml"),
        format!(
            "project: disc\nclusters:\n  c:\n    cloud: {}\n    region: {}\n    nodes: 1\n    gpu: {}\n",
            c.cloud, c.region, c.gpu
        ),
    )
    .unwrap();
    let before = gpuform(d, &c.env, &["validate", "spec.yaml"]);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));

    let args = [
        "catalog", "refresh", "--cloud", c.cloud, "--region", c.region,
    ];
    let out = ok(gpuform(d, &c.env, &args), &c.secrets);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{} {} (new region): 2 zone(s)", c.cloud, c.region)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "skipped {}: the catalog has no GPU specification for it",
            c.unknown
        )),
        "{stdout}"
    );

    // The cache: dated today, the zones, the known type where it is on sale only.
    let cache: Value =
        serde_json::from_slice(&std::fs::read(d.join("cache/prices.json")).unwrap()).unwrap();
    let r = &cache["regions"][0];
    assert_eq!(r["cloud"], c.cloud, "{cache:#}");
    assert_eq!(r["region"], c.region);
    assert_eq!(r["discovered_on"], support::TODAY);
    assert_eq!(r["zones"], serde_json::json!(c.zones));
    assert!(r["api"].as_str().unwrap().contains(c.api), "{r:#}");
    assert_eq!(
        r["offerings"],
        serde_json::json!([{"instance_type": c.known, "zones": [c.zones[1]]}]),
        "{r:#}"
    );
    assert_eq!(r["skipped"][0]["instance_type"], c.unknown, "{r:#}");

    // validate knows the region now; offers shows the offering with its source.
    ok(gpuform(d, &c.env, &["validate", "spec.yaml"]), &c.secrets);
    let o = ok(
        gpuform(
            d,
            &c.env,
            &[
                "offers", c.gpu, "--cloud", c.cloud, "--region", c.region, "--json",
            ],
        ),
        &c.secrets,
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["offers"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v:#}");
    assert_eq!(rows[0]["instance_type"], c.known);
    assert_eq!(rows[0]["availability"], "discovered");
    let src = rows[0]["availability_source"].as_str().unwrap();
    assert!(src.contains(c.api) && src.contains(support::TODAY), "{src}");
    let table = ok(
        gpuform(
            d,
            &c.env,
            &["offers", c.gpu, "--cloud", c.cloud, "--region", c.region],
        ),
        &c.secrets,
    );
    assert!(
        String::from_utf8_lossy(&table.stdout)
            .contains(&format!("availability discovered {}", support::TODAY)),
        "{}",
        text(&table)
    );

    // A region the cloud does not list: exit 1, named, with the cloud's list.
    let bad = gpuform(
        d,
        &c.env,
        &[
            "catalog",
            "refresh",
            "--cloud",
            c.cloud,
            "--region",
            "xx-nowhere-9",
        ],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    let t = text(&bad);
    assert!(
        t.contains(&format!("`xx-nowhere-9` is not a region of {}", c.cloud))
            && t.contains(c.region),
        "{t}"
    );
}

#[test]
fn tencent_discovers_a_region_its_zones_and_offerings() {
    let mock = TencentMock::start();
    mock.add_region("ap-guangzhou", &["ap-guangzhou-3", "ap-guangzhou-4"]);
    mock.add_region("ap-jakarta", &["ap-jakarta-1", "ap-jakarta-2"]);
    mock.offer(offer("ap-jakarta-1", "GN7.2XLARGE32", true, 1));
    mock.offer(offer("ap-jakarta-2", "GN7.2XLARGE32", false, 1));
    mock.offer(offer("ap-jakarta-2", "GN7.99XLARGE9", false, 8));
    // Not a catalog family: never asked about.
    mock.offer(offer("ap-jakarta-2", "S5.LARGE8", false, 0));
    let env = mock.env();
    let secrets = env
        .iter()
        .filter(|(k, _)| k.contains("SECRET_KEY"))
        .map(|(_, v)| v.clone())
        .collect();
    scenario(Case {
        cloud: "tencent",
        env,
        secrets,
        region: "ap-jakarta",
        zones: ["ap-jakarta-1", "ap-jakarta-2"],
        known: "GN7.2XLARGE32",
        gpu: "T4:1",
        unknown: "GN7.99XLARGE9",
        api: "cvm:DescribeZoneInstanceConfigInfos",
    });
}

#[test]
fn alibaba_discovers_a_region_its_zones_and_offerings() {
    let mock = AlibabaMock::start();
    mock.add_region("cn-hangzhou", &["cn-hangzhou-h", "cn-hangzhou-i"]);
    mock.add_region("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1b"]);
    mock.offer(offer("ap-northeast-1a", "ecs.gn6i-c4g1.xlarge", true, 1));
    mock.offer(offer("ap-northeast-1b", "ecs.gn6i-c4g1.xlarge", false, 1));
    mock.offer(offer("ap-northeast-1b", "ecs.gn6i-c99g1.huge", false, 8));
    mock.offer(offer("ap-northeast-1b", "ecs.g7.large", false, 0));
    let env = mock.env();
    let secrets = env
        .iter()
        .filter(|(k, _)| k.contains("SECRET"))
        .map(|(_, v)| v.clone())
        .collect();
    scenario(Case {
        cloud: "alibaba",
        env,
        secrets,
        region: "ap-northeast-1",
        zones: ["ap-northeast-1a", "ap-northeast-1b"],
        known: "ecs.gn6i-c4g1.xlarge",
        gpu: "T4:1",
        unknown: "ecs.gn6i-c99g1.huge",
        api: "ecs:DescribeAvailableResource",
    });
}

#[test]
fn huawei_discovers_a_region_its_zones_and_offerings() {
    let mock = HuaweiMock::start();
    mock.add_region("cn-north-4", &["cn-north-4a", "cn-north-4b"]);
    mock.add_region("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]);
    mock.offer(offer("ap-southeast-2a", "g6.4xlarge.4", true, 1));
    mock.offer(offer("ap-southeast-2b", "g6.4xlarge.4", false, 1));
    mock.offer(offer("ap-southeast-2b", "g6.99xlarge.9", false, 8));
    mock.offer(offer("ap-southeast-2b", "s6.large.2", false, 0));
    let mut env = mock.env();
    env.push(HuaweiMock::project_env("ap-southeast-2"));
    let secrets = env
        .iter()
        .filter(|(k, _)| k == "HUAWEICLOUD_SDK_SK")
        .map(|(_, v)| v.clone())
        .collect();
    scenario(Case {
        cloud: "huawei",
        env,
        secrets,
        region: "ap-southeast-2",
        zones: ["ap-southeast-2a", "ap-southeast-2b"],
        known: "g6.4xlarge.4",
        gpu: "T4:1",
        unknown: "g6.99xlarge.9",
        api: "ecs:ListFlavors",
    });
}

#[test]
fn credentials_and_api_errors_are_clear_and_never_show_a_secret() {
    let mock = TencentMock::start();
    mock.add_region("ap-jakarta", &["ap-jakarta-1"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // No credentials for the cloud named: which variables to set.
    let none = gpuform(d, &[], &["catalog", "refresh", "--cloud", "tencent"]);
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    let t = text(&none);
    assert!(
        t.contains("TENCENTCLOUD_SECRET_ID") && t.contains("TENCENTCLOUD_SECRET_KEY"),
        "{t}"
    );
    // No cloud named and none has credentials: nothing to do, said so.
    let nothing = gpuform(
        d,
        &[],
        &[
            "catalog", "refresh", "--cloud", "huawei", "--cloud", "alibaba",
        ],
    );
    assert_eq!(nothing.status.code(), Some(1), "{}", text(&nothing));
    assert!(
        text(&nothing).contains("HUAWEICLOUD_SDK_AK"),
        "{}",
        text(&nothing)
    );

    // A wrong secret: the cloud's code and request id, never the secret.
    let wrong = "not-the-right-secret-4d2a";
    let mut env = mock.env();
    for (k, v) in env.iter_mut() {
        if k == "TENCENTCLOUD_SECRET_KEY" {
            *v = wrong.into();
        }
    }
    let bad = gpuform(d, &env, &["catalog", "refresh", "--cloud", "tencent"]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    let t = text(&bad);
    assert!(t.contains("AuthFailure") && t.contains("request id"), "{t}");
    assert!(!t.contains(wrong), "{t}");
    assert!(!d.join("cache/prices.json").exists());
}
