//! Live prices through ECS's own price APIs:
//! - `DescribePrice` (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice):
//!   `ResourceType=instance`, `PriceUnit` `Hour` (pay-as-you-go), `Month`
//!   and `Year` with `Period=1` (包月 / 包年); the answer's
//!   `PriceInfo.Price.TradePrice` is what is paid (after discounts), in
//!   `PriceInfo.Price.Currency`.
//! - `DescribeSpotPriceHistory` (…/api-ecs-2014-05-26-describespotpricehistory):
//!   `NetworkType=vpc`, the type and zone; pages with `Offset` /
//!   `NextOffset`; the spot price is the newest `SpotPrices.SpotPriceType[].SpotPrice`.
//!   When the history is empty, `DescribePrice` with
//!   `SpotStrategy=SpotAsPriceGo` quotes the spot price instead.

use crate::client::{Params, Product};
use crate::AlibabaProvider;
use async_trait::async_trait;
use gpuform_catalog::Currency;
use gpuform_provider::prices::positive_price;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{Cloud, ErrorKind, LiveQuote, PriceApi, ProviderError, QuoteTerm};
use serde_json::Value;

const PRICE: &str = "DescribePrice";
const HISTORY: &str = "DescribeSpotPriceHistory";
/// Pages of spot history read at most (each holds up to 1,000 points).
const MAX_HISTORY_PAGES: usize = 20;

/// The zone to quote spot prices in: the first the catalog names.
fn zone(region: &str, instance_type: &str) -> Option<String> {
    let cat = gpuform_catalog::Catalog::builtin();
    cat.availability(Cloud::Alibaba, region, instance_type)
        .and_then(|a| a.zones.as_ref())
        .and_then(|z| z.first().cloned())
        .or_else(|| {
            cat.region(Cloud::Alibaba, region)
                .and_then(|r| r.zones.first().cloned())
        })
}

fn currency(action: &str, text: &str) -> Result<Currency> {
    match text {
        "CNY" | "" => Ok(Currency::CNY),
        "USD" => Ok(Currency::USD),
        other => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("{action}: prices in `{other}` are not supported (CNY or USD)"),
        )),
    }
}

async fn describe_price(
    p: &AlibabaProvider,
    region: &str,
    instance_type: &str,
    unit: &str,
    spot: bool,
) -> Result<(f64, Currency)> {
    let mut params = Params::default();
    params.push("ResourceType", "instance");
    params.push("InstanceType", instance_type);
    params.push("PriceUnit", unit);
    if unit != "Hour" {
        params.push("Period", "1");
    }
    if spot {
        params.push("SpotStrategy", "SpotAsPriceGo");
    }
    let body = p
        .client
        .call(Product::Ecs, region, PRICE, &params.0)
        .await?;
    let price = body.get("PriceInfo").and_then(|i| i.get("Price"));
    let what = format!(
        "{PRICE} (PriceUnit={unit}{})",
        if spot { ", spot" } else { "" }
    );
    let amount = positive_price(
        &what,
        "PriceInfo.Price.TradePrice",
        price
            .and_then(|p| p.get("TradePrice"))
            .and_then(Value::as_f64),
    )?;
    let cur = price
        .and_then(|p| p.get("Currency"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Ok((amount, currency(&what, cur)?))
}

/// The newest spot price of the type in `zone`, reading every page.
async fn spot_history(
    p: &AlibabaProvider,
    region: &str,
    zone: &str,
    instance_type: &str,
) -> Result<Option<(f64, Currency)>> {
    let mut offset: Option<u64> = None;
    let mut newest: Option<(String, f64)> = None;
    let mut cur = String::new();
    for _ in 0..MAX_HISTORY_PAGES {
        let mut params = Params::default();
        params.push("NetworkType", "vpc");
        params.push("InstanceType", instance_type);
        params.push("ZoneId", zone);
        if let Some(o) = offset {
            params.push("Offset", o.to_string());
        }
        let body = p
            .client
            .call(Product::Ecs, region, HISTORY, &params.0)
            .await?;
        let points = body
            .get("SpotPrices")
            .and_then(|s| s.get("SpotPriceType"))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("{HISTORY}: the answer has no SpotPrices.SpotPriceType"),
                )
            })?;
        if let Some(c) = body.get("Currency").and_then(Value::as_str) {
            cur = c.to_string();
        }
        for pt in points {
            let (Some(ts), Some(price)) = (
                pt.get("Timestamp").and_then(Value::as_str),
                pt.get("SpotPrice").and_then(Value::as_f64),
            ) else {
                continue;
            };
            // ISO 8601 UTC timestamps order as text.
            if newest.as_ref().is_none_or(|(t, _)| ts > t.as_str()) {
                newest = Some((ts.to_string(), price));
            }
        }
        match body.get("NextOffset").and_then(Value::as_u64) {
            Some(next) if next > 0 && !points.is_empty() && Some(next) != offset => {
                offset = Some(next)
            }
            _ => break,
        }
    }
    match newest {
        None => Ok(None),
        Some((_, price)) => {
            let amount = positive_price(HISTORY, "SpotPrice", Some(price))?;
            Ok(Some((amount, currency(HISTORY, &cur)?)))
        }
    }
}

#[async_trait]
impl PriceApi for AlibabaProvider {
    /// One quote makes four or five ECS calls; ECS's budget here is the
    /// provider's (5 calls a second).
    fn price_rate(&self) -> RateLimit {
        RateLimit::new(1.0, 1)
    }

    async fn quote_prices(&self, region: &str, instance_type: &str) -> Result<Vec<LiveQuote>> {
        let q = |term, (amount, currency): (f64, Currency), api: String| LiveQuote {
            term,
            amount,
            currency,
            api,
        };
        // Pay-as-you-go first: an unknown type or bad credentials fail here, once.
        let mut out = vec![q(
            QuoteTerm::OnDemand,
            describe_price(self, region, instance_type, "Hour", false).await?,
            format!("ecs:{PRICE} (PriceUnit=Hour)"),
        )];
        for (unit, months) in [("Month", 1u32), ("Year", 12)] {
            match describe_price(self, region, instance_type, unit, false).await {
                Ok(v) => out.push(q(
                    QuoteTerm::Subscription(months),
                    v,
                    format!("ecs:{PRICE} (PriceUnit={unit}, Period=1)"),
                )),
                Err(e) if skippable(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let history = match zone(region, instance_type) {
            Some(z) => match spot_history(self, region, &z, instance_type).await {
                Ok(h) => h.map(|v| (v, format!("ecs:{HISTORY} ({z}, newest point)"))),
                Err(e) if skippable(&e) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let spot = match history {
            Some(s) => Some(s),
            None => match describe_price(self, region, instance_type, "Hour", true).await {
                Ok(v) => Some((v, format!("ecs:{PRICE} (PriceUnit=Hour, SpotAsPriceGo)"))),
                Err(e) if skippable(&e) => None,
                Err(e) => return Err(e),
            },
        };
        if let Some((v, api)) = spot {
            out.push(q(QuoteTerm::Spot, v, api));
        }
        Ok(out)
    }
}

/// A refusal that only means "not sold this way" (no spot, no subscription).
fn skippable(e: &ProviderError) -> bool {
    matches!(
        e.kind,
        ErrorKind::Invalid | ErrorKind::Capacity | ErrorKind::NotFound
    )
}
