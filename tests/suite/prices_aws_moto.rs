//! Issue 12, point 2, on AWS: `gpuform prices refresh --cloud aws` reads
//! on-demand, 1-year and 3-year reserved prices from the Price List Query API
//! (GetProducts, answered by the stand-in in `gpuform_standins::aws_pricing`,
//! which checks SigV4 with its own verifier) and spot prices from EC2
//! DescribeSpotPriceHistory (answered by moto: start it with
//! `scripts/moto.sh PORT` and set GPUFORM_TEST_MOTO_URL). Then `offers`
//! shows them labelled live.

use crate::moto;
use crate::support;

use gpuform_standins::aws_pricing::{PricingMock, ACCESS_KEY_ID, SECRET_ACCESS_KEY};
use gpuform_standins::prices::ListPrice;
use moto::moto_url;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

const TODAY: &str = "2026-11-29";
/// What moto 5.2.5 answers for every point of DescribeSpotPriceHistory
/// (moto/ec2/responses/spot_instances.py).
const MOTO_SPOT_PRICE: f64 = 0.00001;

fn gpuform(dir: &Path, pricing: &str, secret: &str, args: &[&str]) -> Output {
    support::gpuform_in_repo()
        .current_dir(dir)
        .args(args)
        .env("GPUFORM_TODAY", TODAY)
        .env("NO_COLOR", "1")
        .env("HOME", dir)
        .env("GPUFORM_PRICE_CACHE", dir.join("prices.json"))
        .env("AWS_ENDPOINT_URL", moto_url())
        .env("GPUFORM_AWS_PRICING_ENDPOINT", pricing)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("GPUFORM_PRICES")
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

#[test]
fn aws_refresh_reads_get_products_and_moto_spot_history() {
    let pricing = PricingMock::start();
    pricing.set_price(
        "g4dn.xlarge",
        ListPrice {
            hourly: 0.5,
            month: 0.0,
            year: 0.3 * 8760.0,
            spot: None,
            three_years: Some(0.2 * 3.0 * 8760.0),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let refresh = [
        "prices",
        "refresh",
        "--cloud",
        "aws",
        "--region",
        "us-east-1",
        "--type",
        "g4dn.xlarge",
    ];
    let o = gpuform(dir.path(), &pricing.endpoint(), SECRET_ACCESS_KEY, &refresh);
    assert!(o.status.success(), "{}", text(&o));
    let offers = |model: &str| {
        let o = gpuform(
            dir.path(),
            &pricing.endpoint(),
            SECRET_ACCESS_KEY,
            &[
                "offers",
                "T4",
                "--cloud",
                "aws",
                "--region",
                "us-east-1",
                "--pricing",
                model,
                "--json",
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["offers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["instance_type"] == "g4dn.xlarge")
            .unwrap()["price"]
            .clone()
    };
    for (model, want, api) in [
        ("on-demand", 0.5, "GetProducts"),
        ("reserved-1y", 0.3, "GetProducts"),
        ("reserved-3y", 0.2, "Reserved 3yr standard No Upfront"),
        ("spot", MOTO_SPOT_PRICE, "DescribeSpotPriceHistory"),
    ] {
        let p = offers(model);
        let got = p["amount"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{model}: {p:#}");
        assert_eq!(p["basis"], "live", "{model}");
        assert_eq!(p["as_of"], TODAY, "{model}");
        assert_eq!(p["currency"], "USD");
        assert!(
            p["source"].as_str().unwrap().contains(api),
            "{model}: {p:#}"
        );
    }

    // A wrong secret: GetProducts is refused by the signature check, clearly,
    // and the secret is printed nowhere.
    let secret = "NotTheSecretAndNeverPrinted";
    let o = gpuform(
        dir.path(),
        &pricing.endpoint(),
        secret,
        &[&refresh[..], &["--force"]].concat(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let all = text(&o);
    assert!(
        all.contains("auth") && all.contains("InvalidSignatureException"),
        "{all}"
    );
    assert!(!all.contains(secret), "{all}");
}
