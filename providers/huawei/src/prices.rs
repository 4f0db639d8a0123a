//! Live prices through the business support system (BSS) price inquiries,
//! at its global endpoint `https://bss.myhuaweicloud.com` (China site, CNY):
//! - `ListOnDemandResourceRatings`, `POST /v2/bills/ratings/on-demand-resources`
//!   ("查询按需产品价格", support.huaweicloud.com/api-oce/bcloud_01001.html):
//!   one hour (`usage_factor=Duration`, `usage_measure_id=4`, `usage_value=1`)
//!   of an ECS flavor (`cloud_service_type=hws.service.type.ec2`,
//!   `resource_type=hws.resource.type.vm`, `resource_spec=<flavor>.linux`);
//!   the answer's `amount` is what is paid (after discounts),
//!   `official_website_amount` the list price.
//! - `ListRateOnPeriodDetail`, `POST /v2/bills/ratings/period-resources/subscribe-rate`
//!   ("查询包年/包月产品价格", …/bcloud_01002.html): `period_type` 2 (month)
//!   or 3 (year), `period_num=1`; the price is the lowest `amount` of
//!   `optional_discount_rating_results`, else
//!   `official_website_rating_result.official_website_amount`.
//!
//! `measure_id` 1 means yuan (3 is fen, 2 jiao: "查询度量单位列表").
//! Huawei sells no spot ECS through BSS ratings, so no spot quote is made.

use crate::client::{Call, Service};
use crate::HuaweiProvider;
use async_trait::async_trait;
use gpuform_catalog::Currency;
use gpuform_provider::prices::positive_price;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, LiveQuote, PriceApi, ProviderError, QuoteTerm};
use serde_json::{json, Value};

const ON_DEMAND: &str = "ListOnDemandResourceRatings";
const PERIOD: &str = "ListRateOnPeriodDetail";

fn product(region: &str, flavor: &str) -> Value {
    json!({
        "id": "1",
        "cloud_service_type": "hws.service.type.ec2",
        "resource_type": "hws.resource.type.vm",
        "resource_spec": format!("{flavor}.linux"),
        "region": region,
        "subscription_num": 1,
    })
}

/// Asks the BSS rating API at `path` for the price of one `flavor` node in
/// `region`, on the terms `terms` (fields added to the product).
async fn rate(
    p: &HuaweiProvider,
    (project, region, flavor): (&str, &str, &str),
    path: &str,
    terms: &[(&str, Value)],
) -> Result<Value> {
    let mut info = product(region, flavor);
    for (k, v) in terms {
        info[*k] = v.clone();
    }
    let body = json!({"project_id": project, "product_infos": [info]});
    p.send(Call::new(Service::Bss, region, "POST", path.into()).body(body))
        .await
}

/// An amount in yuan, from an amount and its `measure_id`.
fn yuan(action: &str, amount: Option<f64>, measure: Option<u64>) -> Result<f64> {
    let amount = positive_price(action, "amount", amount)?;
    match measure.unwrap_or(1) {
        1 => Ok(amount),
        2 => Ok(amount / 10.0),
        3 => Ok(amount / 100.0),
        m => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("{action}: measure_id {m} is not a money unit (1 yuan, 2 jiao, 3 fen)"),
        )),
    }
}

fn currency(action: &str, v: &Value) -> Result<Currency> {
    match v.get("currency").and_then(Value::as_str).unwrap_or("CNY") {
        "CNY" => Ok(Currency::CNY),
        "USD" => Ok(Currency::USD),
        other => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("{action}: prices in `{other}` are not supported (CNY or USD)"),
        )),
    }
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

fn measure(v: &Value) -> Option<u64> {
    v.get("measure_id").and_then(Value::as_u64)
}

async fn on_demand(
    p: &HuaweiProvider,
    project: &str,
    region: &str,
    flavor: &str,
) -> Result<LiveQuote> {
    let v = rate(
        p,
        (project, region, flavor),
        "/v2/bills/ratings/on-demand-resources",
        &[
            ("usage_factor", json!("Duration")),
            ("usage_measure_id", json!(4)),
            ("usage_value", json!(1)),
        ],
    )
    .await?;
    let amount = yuan(
        ON_DEMAND,
        f(&v, "amount").or_else(|| f(&v, "official_website_amount")),
        measure(&v),
    )?;
    Ok(LiveQuote {
        term: QuoteTerm::OnDemand,
        amount,
        currency: currency(ON_DEMAND, &v)?,
        api: format!("bss:{ON_DEMAND} (1 hour of {flavor}.linux)"),
    })
}

async fn period(
    p: &HuaweiProvider,
    project: &str,
    region: &str,
    flavor: &str,
    months: u32,
) -> Result<LiveQuote> {
    let (period_type, what) = if months == 12 {
        (3, "year")
    } else {
        (2, "month")
    };
    let v = rate(
        p,
        (project, region, flavor),
        "/v2/bills/ratings/period-resources/subscribe-rate",
        &[
            ("period_type", json!(period_type)),
            ("period_num", json!(1)),
        ],
    )
    .await?;
    let discounted = v
        .get("optional_discount_rating_results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let a = f(r, "amount")?;
            yuan(PERIOD, Some(a), measure(r)).ok()
        })
        .min_by(f64::total_cmp);
    let amount = match discounted {
        Some(a) => a,
        None => {
            let list = v.get("official_website_rating_result").ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("{PERIOD}: the answer has no official_website_rating_result"),
                )
            })?;
            yuan(PERIOD, f(list, "official_website_amount"), measure(list))?
        }
    };
    Ok(LiveQuote {
        term: QuoteTerm::Subscription(months),
        amount,
        currency: currency(PERIOD, &v)?,
        api: format!("bss:{PERIOD} (1 {what} of {flavor}.linux)"),
    })
}

#[async_trait]
impl PriceApi for HuaweiProvider {
    /// Three BSS calls per quote within the provider's budget.
    fn price_rate(&self) -> RateLimit {
        RateLimit::new(2.0, 2)
    }

    async fn quote_prices(&self, region: &str, flavor: &str) -> Result<Vec<LiveQuote>> {
        let project = self.project(region)?.to_string();
        // On-demand first: an unknown flavor or bad credentials fail here, once.
        let mut out = vec![on_demand(self, &project, region, flavor).await?];
        for months in [1, 12] {
            match period(self, &project, region, flavor, months).await {
                Ok(q) => out.push(q),
                Err(e) if matches!(e.kind, ErrorKind::Invalid | ErrorKind::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_read_in_yuan_by_their_measure() {
        let near = |v: f64| (v - 26.88).abs() < 1e-9;
        assert!(near(yuan("x", Some(26.88), Some(1)).unwrap()));
        assert!(near(yuan("x", Some(2688.0), Some(3)).unwrap()));
        assert!(near(yuan("x", Some(268.8), Some(2)).unwrap()));
        assert_eq!(yuan("x", Some(5.0), None).unwrap(), 5.0);
        let e = yuan("x", Some(5.0), Some(4)).unwrap_err();
        assert!(e.message.contains("measure_id 4"), "{e}");
        assert!(yuan("x", Some(0.0), Some(1)).is_err());
        assert!(yuan("x", None, Some(1)).is_err());
    }
}
