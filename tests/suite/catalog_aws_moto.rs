//! Issue 30 item 8: `gpuform catalog refresh --cloud aws` against moto
//! (DescribeRegions, DescribeAvailabilityZones, DescribeInstanceTypeOfferings
//! by availability zone, DescribeInstanceTypes). An offering the built-in
//! catalog lacks (g5.xlarge in eu-west-3, which moto offers) becomes known to
//! validate, plan and offers, sourced to the API calls and the day; a region
//! the catalog lacks (ap-southeast-4, no GPU type in moto) becomes known with
//! its zones; the cache is dated;
//! types the catalog has no GPU for are listed as skipped with what
//! DescribeInstanceTypes says; a region AWS does not list, missing
//! credentials and a discovery older than the stale threshold are clear.
//! Start moto with `scripts/moto.sh PORT` and set GPUFORM_TEST_MOTO_URL.

use crate::support;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// A secret that must never appear in any output.
const SECRET: &str = "catalog-refresh-secret-7d41";

fn moto() -> Option<String> {
    support::server_url(
        "GPUFORM_TEST_MOTO_URL",
        "scripts/test.sh starts moto and sets it",
    )
}

fn gpuform(dir: &Path, moto: &str, args: &[&str]) -> Output {
    support::gpuform_cmd(dir, args)
        .env("HOME", dir)
        .env("GPUFORM_PRICE_CACHE", dir.join("cache/prices.json"))
        .env("AWS_ENDPOINT_URL", moto)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_REGION", "us-east-1")
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("XDG_CACHE_HOME")
        .output()
        .unwrap()
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
    assert!(!text(&o).contains(SECRET), "{}", text(&o));
    o
}

/// One A10G node in `region` (the built-in catalog sells g5.xlarge in
/// us-east-1, us-east-2 and us-west-2, not in eu-west-3).
fn spec(dir: &Path, moto: &str, region: &str) {
    std::fs::write(
        dir.join("spec.yaml"),
        format!("project: fra\nendpoints:\n  aws: {moto}\nclusters:\n  infer:\n    cloud: aws\n    region: {region}\n    nodes: 1\n    gpu: A10G:1\n    image: amazon-linux-2023\n"),
    )
    .unwrap();
}

#[test]
fn an_offering_the_catalog_lacks_becomes_plannable_after_a_refresh() {
    let Some(moto) = moto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    spec(d, &moto, "eu-west-3");

    // Before: the built-in catalog sells no A10G in eu-west-3.
    let before = gpuform(d, &moto, &["validate", "spec.yaml"]);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    assert!(
        text(&before).contains("eu-west-3 offers no instance with 1 × A10G"),
        "{}",
        text(&before)
    );

    let out = ok(gpuform(
        d,
        &moto,
        &[
            "catalog",
            "refresh",
            "--cloud",
            "aws",
            "--region",
            "eu-west-3",
        ],
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("aws eu-west-3: 3 zone(s)"), "{stdout}");
    assert!(!stdout.contains("(new region)"), "{stdout}");
    assert!(
        stdout.contains("offering(s) new to the built-in catalog"),
        "{stdout}"
    );
    // moto lists g5.2xlarge there; the catalog has no spec for it: listed
    // and skipped with what DescribeInstanceTypes says, never added.
    assert!(
        stdout.contains("skipped g5.2xlarge: the catalog has no GPU specification for it (the API says: 1 x NVIDIA A10G"),
        "{stdout}"
    );

    // The cache is dated today, the region's zones and offerings recorded.
    let cache: Value =
        serde_json::from_slice(&std::fs::read(d.join("cache/prices.json")).unwrap()).unwrap();
    let r = cache["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cloud"] == "aws" && r["region"] == "eu-west-3")
        .unwrap_or_else(|| panic!("{cache:#}"));
    assert_eq!(r["discovered_on"], support::TODAY);
    assert!(r["api"]
        .as_str()
        .unwrap()
        .contains("ec2:DescribeInstanceTypeOfferings"));
    assert!(r["zones"]
        .as_array()
        .unwrap()
        .contains(&"eu-west-3a".into()));
    let g5 = r["offerings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["instance_type"] == "g5.xlarge")
        .unwrap_or_else(|| panic!("{r:#}"));
    assert!(!g5["zones"].as_array().unwrap().is_empty());
    assert!(r["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["instance_type"] == "g5.2xlarge"));
    assert!(!r["offerings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["instance_type"] == "g5.2xlarge"));

    // After: validate and plan know the offering; plan places the node in one of its zones.
    ok(gpuform(d, &moto, &["validate", "spec.yaml"]));
    let plan = ok(gpuform(d, &moto, &["plan", "spec.yaml"]));
    let p = String::from_utf8_lossy(&plan.stdout);
    assert!(p.contains("instance (aws eu-west-3)"), "{p}");
    assert!(p.contains("g5.xlarge"), "{p}");
    assert!(p.contains("zone             = \"eu-west-3"), "{p}");

    // offers: the offering, sourced to the API calls and the day.
    let o = ok(gpuform(
        d,
        &moto,
        &[
            "offers",
            "A10G:1",
            "--cloud",
            "aws",
            "--region",
            "eu-west-3",
            "--json",
        ],
    ));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = v["offers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["instance_type"] == "g5.xlarge")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(row["availability"], "discovered", "{row:#}");
    let src = row["availability_source"].as_str().unwrap();
    assert!(
        src.contains("DescribeInstanceTypeOfferings") && src.contains(support::TODAY),
        "{src}"
    );
}

#[test]
fn json_output_a_region_aws_lacks_and_a_stale_discovery() {
    let Some(moto) = moto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let out = ok(gpuform(
        d,
        &moto,
        &[
            "catalog",
            "refresh",
            "--cloud",
            "aws",
            "--region",
            "us-west-2",
            "--region",
            "eu-west-3",
            "--region",
            "ap-southeast-4",
            "--json",
        ],
    ));
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!(v["as_of"], support::TODAY);
    let mut regions: Vec<(&str, bool)> = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["region"].as_str().unwrap(),
                r["new_region"].as_bool().unwrap(),
            )
        })
        .collect();
    regions.sort();
    assert_eq!(
        regions,
        vec![
            ("ap-southeast-4", true),
            ("eu-west-3", false),
            ("us-west-2", false)
        ]
    );

    // A region AWS does not list: exit 1, named, nothing asked of it.
    let bad = gpuform(
        d,
        &moto,
        &[
            "catalog",
            "refresh",
            "--cloud",
            "aws",
            "--region",
            "xx-nowhere-1",
        ],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    let t = text(&bad);
    assert!(t.contains("`xx-nowhere-1` is not a region of aws"), "{t}");
    assert!(t.contains("eu-central-1"), "{t}");
    assert!(!t.contains(SECRET), "{t}");

    // A year later the discovery is stale: said, with the command that reads it again.
    spec(d, &moto, "eu-west-3");
    let later = support::gpuform_cmd(d, &["validate", "spec.yaml"])
        .env("HOME", d)
        .env("GPUFORM_PRICE_CACHE", d.join("cache/prices.json"))
        .env("GPUFORM_TODAY", "2027-11-29")
        .output()
        .unwrap();
    assert!(later.status.success(), "{}", text(&later));
    let t = text(&later);
    assert!(
        t.contains("aws eu-west-3 (as of 2026-11-29, 365 days ago)")
            && t.contains("is older than 180 days")
            && t.contains("gpuform catalog refresh"),
        "{t}"
    );
}

#[test]
fn without_credentials_the_variables_to_set_are_named() {
    let Some(moto) = moto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = support::gpuform_cmd(dir.path(), &["catalog", "refresh", "--cloud", "aws"])
        .env("HOME", dir.path())
        .env("GPUFORM_PRICE_CACHE", dir.path().join("prices.json"))
        .env("AWS_ENDPOINT_URL", &moto)
        .env("AWS_CONFIG_FILE", dir.path().join("none"))
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("AWS_ACCESS_KEY_ID") && t.contains("AWS_SECRET_ACCESS_KEY"),
        "{t}"
    );
    assert!(!dir.path().join("prices.json").exists());
}
