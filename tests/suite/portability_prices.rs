//! Issue 12: prices users can act on. Shared GPU names search every variant,
//! every price says whether it is sourced or assumed, clouds without a price
//! say how to get one, the cross-cloud comparison, and the docs page that
//! the comparison command generates.
//!
//! Expected values are read from the catalog's data (or stated literally
//! from the imported CSV rows), not from the code under test.

use crate::support;
use gpuform_catalog::{Catalog, PriceBasis, PricingModel};
use gpuform_provider::Cloud;
use std::path::Path;

const TODAY: &str = "2026-11-29";

fn run(args: &[&str]) -> std::process::Output {
    support::gpuform_in_repo()
        .args(args)
        .env("GPUFORM_TODAY", TODAY)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn per_gpu(o: &serde_json::Value) -> Option<f64> {
    o["price"]["per_gpu_hour_usd"].as_f64()
}

/// Priced first (ascending per GPU-hour), unpriced last.
fn sorted_priced_first(rows: &[&serde_json::Value]) -> bool {
    let prices: Vec<Option<f64>> = rows.iter().map(|o| per_gpu(o)).collect();
    let first_none = prices
        .iter()
        .position(Option::is_none)
        .unwrap_or(prices.len());
    prices[first_none..].iter().all(Option::is_none)
        && prices[..first_none]
            .windows(2)
            .all(|w| w[0].unwrap() <= w[1].unwrap())
}

#[test]
fn a_shared_name_searches_every_variant_grouped() {
    for arg in ["A100", "A100:8"] {
        let v = json(&["offers", arg, "--json"]);
        assert_eq!(
            v["models"],
            serde_json::json!(["A100-40GB", "A100-80GB"]),
            "{arg}"
        );
        let offers: Vec<&serde_json::Value> = v["offers"].as_array().unwrap().iter().collect();
        // Grouped: every 40 GB row before every 80 GB row.
        let models: Vec<&str> = offers
            .iter()
            .map(|o| o["gpu_model"].as_str().unwrap())
            .collect();
        let split = models
            .iter()
            .position(|m| *m == "A100-80GB")
            .expect("80 GB rows");
        assert!(split > 0, "{arg}: 40 GB rows first");
        assert!(models[..split].iter().all(|m| *m == "A100-40GB"), "{arg}");
        assert!(models[split..].iter().all(|m| *m == "A100-80GB"), "{arg}");
        assert!(sorted_priced_first(&offers[..split]), "{arg}");
        assert!(sorted_priced_first(&offers[split..]), "{arg}");
        if arg == "A100:8" {
            assert!(offers.iter().all(|o| o["gpu_count"] == 8));
        }
    }
    let text = String::from_utf8(run(&["offers", "A100"]).stdout).unwrap();
    assert!(
        text.contains("\nA100-40GB: ") && text.contains("\nA100-80GB: "),
        "{text}"
    );
    assert!(text.contains("$/FP16-PFLOP-h"), "{text}");
}

#[test]
fn a100_80gb_node_is_priced_on_aws_and_alibaba_from_sources_sorted() {
    let v = json(&["offers", "A100-80GB:8", "--json"]);
    let offers: Vec<&serde_json::Value> = v["offers"].as_array().unwrap().iter().collect();
    assert!(sorted_priced_first(&offers));
    let priced_clouds: std::collections::BTreeSet<&str> = offers
        .iter()
        .filter(|o| per_gpu(o).is_some())
        .map(|o| o["cloud"].as_str().unwrap())
        .collect();
    assert!(
        priced_clouds.contains("aws") && priced_clouds.contains("alibaba"),
        "{priced_clouds:?}"
    );
    // Alibaba gn7e-c16g1.32xlarge in cn-beijing: ¥277.933/h, from the imported
    // CSV row (karpenter-provider-alibabacloud, 2024-12-30).
    let row = offers
        .iter()
        .find(|o| {
            o["cloud"] == "alibaba"
                && o["region"] == "cn-beijing"
                && o["instance_type"] == "ecs.gn7e-c16g1.32xlarge"
        })
        .expect("gn7e 8-GPU offer in cn-beijing");
    assert_eq!(row["price"]["amount"], 277.933);
    assert_eq!(row["price"]["currency"], "CNY");
    assert_eq!(row["price"]["basis"], "sourced");
    assert_eq!(
        row["price"]["as_of"],
        "2024-12-30 (commit date; file itself undated)"
    );
    assert!(row["price"]["source"]
        .as_str()
        .unwrap()
        .contains("karpenter-provider-alibabacloud"));
    assert_eq!(row["availability"], "assumed");
    // FP16 column: $/GPU-h over the GPU table's dense FP16 PFLOPS.
    let fp16 = Catalog::builtin()
        .gpu_details("A100-80GB")
        .and_then(|d| d.fp16_tflops_dense)
        .unwrap();
    let want = per_gpu(row).unwrap() / (fp16 / 1000.0);
    assert!((row["price"]["usd_per_fp16_pflop_hour"].as_f64().unwrap() - want).abs() < 1e-9);
    // Huawei offers it (p3) without any price: one line saying how to price it.
    let unpriced = v["unpriced_clouds"].as_array().unwrap();
    let hw = unpriced
        .iter()
        .find(|u| u["cloud"] == "huawei")
        .expect("huawei unpriced");
    assert!(hw["how_to_price"]
        .as_str()
        .unwrap()
        .contains("ListOnDemandResourceRatings"));
    let text = String::from_utf8(run(&["offers", "A100-80GB:8"]).stdout).unwrap();
    assert!(
        text.contains("huawei offers A100-80GB") && text.contains("price it:"),
        "{text}"
    );
}

#[test]
fn region_less_list_prices_are_labelled_assumed_everywhere() {
    let c = Catalog::builtin();
    // Tencent's price overview names no region: every use is "assumed".
    let o = c
        .offering(Cloud::Tencent, "ap-shanghai", "GN7.2XLARGE32")
        .unwrap();
    assert_eq!(o.prices[&PricingModel::OnDemand].basis, PriceBasis::Assumed);
    let v = json(&["offers", "T4:1", "--cloud", "tencent", "--json"]);
    let rows = v["offers"].as_array().unwrap();
    for r in rows.iter().filter(|r| !r["price"].is_null()) {
        let want = c
            .offering(
                Cloud::Tencent,
                r["region"].as_str().unwrap(),
                r["instance_type"].as_str().unwrap(),
            )
            .unwrap()
            .prices[&PricingModel::OnDemand]
            .basis
            .as_str();
        assert_eq!(r["price"]["basis"], want, "{r}");
    }
    assert!(rows.iter().any(|r| r["price"]["basis"] == "assumed"));
    // ap-guangzhou's USD price is quoted for that region.
    assert!(rows
        .iter()
        .any(|r| r["region"] == "ap-guangzhou" && r["price"]["basis"] == "sourced"));
}

#[test]
fn comparison_puts_every_cloud_side_by_side() {
    let v = json(&[
        "offers",
        "A100-80GB:8",
        "--pricing",
        "on-demand,reserved-1y",
        "--json",
    ]);
    assert_eq!(
        v["pricings"],
        serde_json::json!(["on-demand", "reserved-1y"])
    );
    let rows = v["rows"].as_array().unwrap();
    let clouds: Vec<&str> = rows.iter().map(|r| r["cloud"].as_str().unwrap()).collect();
    assert_eq!(clouds.len(), 4, "{clouds:?}");
    // AWS: the cheapest p4de on demand, and its reserved-1y from the catalog.
    let c = Catalog::builtin();
    let aws = rows.iter().find(|r| r["cloud"] == "aws").unwrap();
    let region = aws["offer"]["region"].as_str().unwrap();
    let o = c.offering(Cloud::Aws, region, "p4de.24xlarge").unwrap();
    for (i, p) in [PricingModel::OnDemand, PricingModel::Reserved1y]
        .iter()
        .enumerate()
    {
        let want = o.prices[p].hourly;
        let got = aws["quotes"][i]["hourly_usd"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{p:?}");
        let cny = aws["quotes"][i]["hourly_cny"].as_f64().unwrap();
        assert!((cny - want * 7.0).abs() < 1e-9);
    }
    // Alibaba: the monthly subscription ¥133,408 (ebmgn7e / gn7e 8-GPU, cn-shanghai).
    let ali = rows.iter().find(|r| r["cloud"] == "alibaba").unwrap();
    assert_eq!(ali["monthly_subscription"]["monthly_cny"], 133408.0);
    // Tencent: no A100-80GB type in the catalog.
    let tc = rows.iter().find(|r| r["cloud"] == "tencent").unwrap();
    assert!(tc["offer"].is_null());
    let md = String::from_utf8(
        run(&[
            "offers",
            "A100-80GB:8",
            "--pricing",
            "on-demand,reserved-1y",
            "--markdown",
        ])
        .stdout,
    )
    .unwrap();
    assert!(md.contains("| cloud | region |"), "{md}");
    assert!(md.contains("Rate: 7.00 CNY per USD"), "{md}");
    assert!(md.contains("- [1] "), "{md}");
}

/// docs/price-comparison.md holds the command's output between markers;
/// `GPUFORM_UPDATE_SNAPSHOTS=1` rewrites that block.
#[test]
fn docs_page_is_the_commands_output() {
    let args = [
        "offers",
        "A100-80GB:8",
        "--pricing",
        "on-demand,reserved-1y",
        "--markdown",
    ];
    let out = run(&args);
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/price-comparison.md");
    let page = std::fs::read_to_string(&path).expect("docs/price-comparison.md");
    let begin = "<!-- BEGIN generated -->\n";
    let end = "<!-- END generated -->";
    let (a, rest) = page.split_once(begin).expect("BEGIN marker");
    let (block, b) = rest.split_once(end).expect("END marker");
    if std::env::var_os("GPUFORM_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, format!("{a}{begin}{generated}{end}{b}")).unwrap();
        return;
    }
    assert_eq!(
        block, generated,
        "regenerate with GPUFORM_UPDATE_SNAPSHOTS=1"
    );
    assert!(a.contains(&format!("GPUFORM_TODAY={TODAY} gpuform {}", args.join(" "))));
}

fn find<'a>(
    v: &'a serde_json::Value,
    cloud: &str,
    region: &str,
    itype: &str,
) -> &'a serde_json::Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cloud"] == cloud && r["region"] == region && r["instance_type"] == itype)
        .unwrap_or_else(|| panic!("{cloud} {region} {itype} in {v}"))
}

#[test]
fn short_jobs_are_billed_by_the_second_with_each_clouds_minimum() {
    // A 15-minute job: a quarter of the hourly rate, not an hour.
    let v = json(&["breakeven", "A100-80GB:8", "--job-hours", "0.25", "--json"]);
    let aws = find(&v, "aws", "us-east-1", "p4de.24xlarge");
    assert_eq!(aws["job"]["billed_hours"], 0.25);
    assert!((aws["job"]["on_demand_usd"].as_f64().unwrap() - 27.44705 * 0.25).abs() < 1e-9);
    // Alibaba list price ¥277.933/h (cn-shanghai, imported CSV) at 7 CNY/USD.
    let ali = find(&v, "alibaba", "cn-shanghai", "ecs.gn7e-c16g1.32xlarge");
    assert!((ali["job"]["on_demand_usd"].as_f64().unwrap() - 277.933 / 7.0 * 0.25).abs() < 1e-9);
    // 30 seconds: AWS bills its 60-second minimum, Alibaba the 30 seconds.
    let half_minute = format!("{}", 30.0 / 3600.0);
    let v = json(&[
        "breakeven",
        "A100-80GB:8",
        "--job-hours",
        &half_minute,
        "--json",
    ]);
    let aws = find(&v, "aws", "us-east-1", "p4de.24xlarge");
    assert!((aws["job"]["billed_hours"].as_f64().unwrap() - 60.0 / 3600.0).abs() < 1e-12);
    let ali = find(&v, "alibaba", "cn-shanghai", "ecs.gn7e-c16g1.32xlarge");
    assert!((ali["job"]["billed_hours"].as_f64().unwrap() - 30.0 / 3600.0).abs() < 1e-12);
    let text = String::from_utf8(run(&["breakeven", "A100-80GB:8", "--job-hours", "0.25"]).stdout)
        .unwrap();
    assert!(text.contains("one 0.25 h job"), "{text}");
    assert!(text.contains("60 s minimum"), "{text}");
    for bad in ["0", "-1", "nan"] {
        let out = run(&["breakeven", "T4", "--job-hours", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--job-hours"),
            "{bad}"
        );
    }
}

#[test]
fn breakeven_compares_the_monthly_subscription() {
    let v = json(&["breakeven", "A100-80GB:8", "--hours", "730", "--json"]);
    // Alibaba cn-shanghai ebmgn7e.32xlarge: ¥133,408 a month (imported CSV,
    // ArthurChiao 2023-06), on demand ¥277.933/h.
    let ali = find(&v, "alibaba", "cn-shanghai", "ecs.ebmgn7e.32xlarge");
    let sub = &ali["monthly_subscription"];
    assert!((sub["monthly_usd"].as_f64().unwrap() - 133408.0 / 7.0).abs() < 1e-9);
    assert!(
        (sub["break_even_utilisation"].as_f64().unwrap() - 133408.0 / (277.933 * 730.0)).abs()
            < 1e-9
    );
    assert_eq!(ali["cheapest_overall"], "monthly-subscription");
    // At 100 h a month on demand is cheaper.
    let v = json(&["breakeven", "A100-80GB:8", "--hours", "100", "--json"]);
    assert_eq!(
        find(&v, "alibaba", "cn-shanghai", "ecs.ebmgn7e.32xlarge")["cheapest_overall"],
        "on-demand"
    );
    let text = String::from_utf8(run(&["breakeven", "A100-80GB:8"]).stdout).unwrap();
    assert!(
        text.contains("monthly-sub/mo") && text.contains("包年"),
        "{text}"
    );
    // Tencent's region-less list prices are marked assumed.
    let text =
        String::from_utf8(run(&["breakeven", "V100-32GB", "--cloud", "tencent"]).stdout).unwrap();
    assert!(text.contains("* assumed"), "{text}");
}

#[test]
fn plan_cost_lines_say_sourced_or_assumed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = r#"project: prices
clusters:
  ali:
    cloud: alibaba
    region: cn-beijing
    nodes: 1
    gpu: A100-80GB:8
  tc:
    cloud: tencent
    region: ap-shanghai
    nodes: 1
    gpu: T4:1
"#;
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let out = support::gpuform_in_repo()
        .args(["plan", "spec.yaml", "--sandbox"])
        .current_dir(dir.path())
        .env("GPUFORM_TODAY", TODAY)
        .env("NO_COLOR", "1")
        .env_remove("GPUFORM_SANDBOX_FAULTS")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() || out.status.code() == Some(2),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |c: &str| {
        text.lines()
            .find(|l| l.contains(&format!("cluster {c}:")))
            .unwrap_or_else(|| panic!("no cost line for {c}:\n{text}"))
            .to_string()
    };
    assert!(
        line("ali").contains("[price sourced, as of 2024-12-30"),
        "{text}"
    );
    assert!(
        line("tc").contains("[price assumed: source names no region, as of undated]"),
        "{text}"
    );
}

#[test]
fn a_prices_file_wins_and_is_labelled_override() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prices.csv");
    std::fs::write(
        &file,
        "cloud,region,instance_type,pricing,price,currency,source,as_of\n\
         huawei,cn-east-3,p3.16xlarge.8,on-demand,200,CNY,my BSS quote,2026-11-28\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let v = json(&["offers", "A100-80GB:8", "--prices", f, "--json"]);
    let offers: Vec<&serde_json::Value> = v["offers"].as_array().unwrap().iter().collect();
    assert!(sorted_priced_first(&offers));
    let hw = offers
        .iter()
        .find(|o| o["cloud"] == "huawei" && o["region"] == "cn-east-3")
        .unwrap();
    assert_eq!(hw["price"]["basis"], "override");
    assert!((hw["price"]["hourly_usd"].as_f64().unwrap() - 200.0 / 7.0).abs() < 1e-9);
    // Three clouds priced now; Huawei no longer listed as unpriced.
    let clouds: std::collections::BTreeSet<&str> = offers
        .iter()
        .filter(|o| per_gpu(o).is_some())
        .map(|o| o["cloud"].as_str().unwrap())
        .collect();
    assert_eq!(clouds.len(), 3, "{clouds:?}");
    assert!(v["unpriced_clouds"]
        .as_array()
        .unwrap()
        .iter()
        .all(|u| u["cloud"] != "huawei"));
    let v = json(&["breakeven", "A100-80GB:8", "--prices", f, "--json"]);
    assert!(
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["cloud"] != "huawei"),
        "one price only: left out"
    );
    let out = run(&["offers", "T4", "--prices", "/nonexistent/prices.csv"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read price overrides"));
}

#[test]
fn plans_say_when_a_price_is_approximate_or_a_range() {
    let dir = tempfile::tempdir().unwrap();
    // Huawei p2v.16xlarge.8 in cn-north-4: "~¥131.50/hour" (approximate);
    // Tencent GN10X.2XLARGE40: the page gives a range, upper value recorded.
    let spec = r#"project: caveats
clusters:
  hw:
    cloud: huawei
    region: cn-north-4
    nodes: 1
    gpu: V100-16GB:8
    instance_type: p2v.16xlarge.8
  tc:
    cloud: tencent
    region: ap-beijing
    nodes: 1
    gpu: V100-32GB:1
    instance_type: GN10X.2XLARGE40
"#;
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let out = support::gpuform_in_repo()
        .args(["plan", "spec.yaml", "--sandbox"])
        .current_dir(dir.path())
        .env("GPUFORM_TODAY", TODAY)
        .env("NO_COLOR", "1")
        .env_remove("GPUFORM_SANDBOX_FAULTS")
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = all
        .lines()
        .find(|l| l.contains("price caveats:"))
        .unwrap_or_else(|| panic!("no caveat warning:\n{all}"));
    assert!(
        line.contains("huawei cn-north-4 p2v.16xlarge.8 on-demand") && line.contains("approximate"),
        "{line}"
    );
    assert!(
        line.contains("tencent ap-beijing GN10X.2XLARGE40 on-demand")
            && line.contains("upper value recorded"),
        "{line}"
    );
}

#[test]
fn help_explains_the_subscription_mapping() {
    for cmd in ["breakeven", "offers"] {
        let text = String::from_utf8(run(&[cmd, "--help"]).stdout).unwrap();
        assert!(text.contains("reserved-1y"), "{cmd}: {text}");
        assert!(
            text.contains("包年包月") || text.contains("one-year subscription"),
            "{cmd}: {text}"
        );
    }
}
