//! Break-even arithmetic on known catalog rows, through the library and the binary.

use crate::support;
use gpuform::market::breakeven;
use gpuform_catalog::{Catalog, OfferQuery, PricingModel};
use gpuform_provider::Cloud;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn p4de_in_us_east_1() {
    // aws us-east-1 p4de.24xlarge (data/aws/prices.csv): on-demand 27.44705,
    // spot 8.6505, reserved-1y 17.401365, reserved-3y 11.717773.
    let c = Catalog::builtin();
    let q = OfferQuery {
        cloud: Some(Cloud::Aws),
        region: Some("us-east-1".into()),
        gpu_model: Some("A100-80GB".into()),
        gpu_count: Some(8),
        ..OfferQuery::default()
    };
    let r = breakeven::breakeven(c, &q, 730.0);
    assert_eq!(r.rows.len(), 1);
    let row = &r.rows[0];
    assert_eq!(row.instance_type, "p4de.24xlarge");
    assert!(close(
        row.cost(PricingModel::OnDemand).unwrap().monthly_usd,
        730.0 * 27.44705
    ));
    assert!(close(
        row.cost(PricingModel::Spot).unwrap().monthly_usd,
        730.0 * 8.6505
    ));
    assert!(close(
        row.cost(PricingModel::Reserved1y).unwrap().monthly_usd,
        730.0 * 17.401365
    ));
    assert!(close(
        row.cost(PricingModel::Reserved3y).unwrap().monthly_usd,
        730.0 * 11.717773
    ));
    assert_eq!(row.cheapest, PricingModel::Spot);
    assert_eq!(row.break_even.len(), 2);
    assert_eq!(row.break_even[0].pricing, PricingModel::Reserved1y);
    assert!(close(row.break_even[0].utilisation, 17.401365 / 27.44705));
    assert_eq!(row.break_even[1].pricing, PricingModel::Reserved3y);
    assert!(close(row.break_even[1].utilisation, 11.717773 / 27.44705));

    // At 400 h a month, on-demand (400 × rate) beats the reservation (730 × rate).
    let r = breakeven::breakeven(c, &q, 400.0);
    let row = &r.rows[0];
    assert!(close(
        row.cost(PricingModel::OnDemand).unwrap().monthly_usd,
        400.0 * 27.44705
    ));
    assert!(close(
        row.cost(PricingModel::Reserved1y).unwrap().monthly_usd,
        730.0 * 17.401365
    ));
    assert!(
        row.cost(PricingModel::OnDemand).unwrap().monthly_usd
            < row.cost(PricingModel::Reserved1y).unwrap().monthly_usd
    );
    // At zero hours, nothing used costs nothing except the reservation.
    let r = breakeven::breakeven(c, &q, 0.0);
    assert_eq!(
        r.rows[0].cost(PricingModel::OnDemand).unwrap().monthly_usd,
        0.0
    );
}

#[test]
fn reservation_wins_above_break_even_only() {
    // For every AWS offering with an on-demand price and a reservation term,
    // that term is cheaper than on-demand exactly above its break-even hours.
    let c = Catalog::builtin();
    let q = OfferQuery {
        cloud: Some(Cloud::Aws),
        ..OfferQuery::default()
    };
    let all = breakeven::breakeven(c, &q, 730.0);
    assert!(all.rows.len() > 20);
    let mut checked = 0;
    for row in &all.rows {
        for be in &row.break_even {
            let o = c
                .offering(row.cloud, &row.region, &row.instance_type)
                .unwrap();
            let hours = be.hours_per_month;
            for (hours, reserved_wins) in [(hours * 0.95, false), (hours * 1.05, true)] {
                if hours > 744.0 {
                    continue;
                }
                let r = breakeven::for_offering(c, o, hours, 7.0).unwrap();
                let od = r.cost(PricingModel::OnDemand).unwrap().monthly_usd;
                let res = r.cost(be.pricing).unwrap().monthly_usd;
                assert_eq!(
                    res < od,
                    reserved_wins,
                    "{} {} {:?} at {hours} h",
                    row.region,
                    row.instance_type,
                    be.pricing
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "only {checked} break-evens checked");
}

#[test]
fn binary_json_and_errors() {
    let out = support::gpuform_in_repo()
        .args([
            "breakeven",
            "T4:1",
            "--cloud",
            "aws",
            "--region",
            "us-east-1",
            "--hours",
            "300",
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
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["instance_type"] == "g4dn.xlarge")
        .unwrap();
    let od = row["costs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["pricing"] == "on-demand")
        .unwrap();
    assert!(close(od["monthly_usd"].as_f64().unwrap(), 300.0 * 0.526));
    assert_eq!(row["cheapest"], "spot");
    let u = row["break_even"][0]["utilisation"].as_f64().unwrap();
    assert!(close(u, 0.331 / 0.526));

    let out = support::gpuform_in_repo()
        .args(["breakeven", "A100-80GB:8", "--hours", "500"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("reserved-1y: 63% (463 h/mo)"), "{text}");
    assert!(text.contains("paid whether used or not"), "{text}");

    for (args, needle) in [
        (vec!["T4", "--hours", "800"], "--hours"),
        (vec!["T4", "--hours", "-1"], "--hours"),
        (vec!["A100"], "ambiguous"),
        (vec!["T4", "--cloud", "azure"], "unknown cloud"),
    ] {
        let out = support::gpuform_in_repo()
            .arg("breakeven")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(needle),
            "{args:?}"
        );
    }
}
