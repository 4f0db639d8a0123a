//! Live prices: cvm:InquiryPriceRunInstances
//! (https://www.tencentcloud.com/document/api/213/33248), once per way
//! Tencent sells an instance: `POSTPAID_BY_HOUR` (pay-as-you-go),
//! `PREPAID` for 1 and 12 months (包月 / 包年) and `SPOTPAID`
//! (`InstanceMarketOptions.MarketType = spot`). The answer's
//! `Price.InstancePrice` is an ItemPrice: `UnitPriceDiscount` per
//! `ChargeUnit` (`HOUR`) for postpaid and spot, `DiscountPrice` for the whole
//! prepaid period; prices are in CNY on the China site.
//!
//! The call needs a zone and an image: the first zone the catalog names for
//! the region, and the public Ubuntu 22.04 image (the price is the
//! instance's; the image's is zero for public images).

use crate::client::CVM;
use crate::images;
use crate::TencentProvider;
use async_trait::async_trait;
use gpuform_provider::prices::positive_price;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{Cloud, ErrorKind, LiveQuote, PriceApi, ProviderError, QuoteTerm};
use serde_json::{json, Value};

const ACTION: &str = "InquiryPriceRunInstances";

/// The zone to quote in: Tencent prices per zone, and the catalog's first
/// zone of the region is the one plans use first.
fn zone(region: &str, instance_type: &str) -> Result<String> {
    let cat = gpuform_catalog::Catalog::builtin();
    let named = cat
        .availability(Cloud::Tencent, region, instance_type)
        .and_then(|a| a.zones.as_ref())
        .and_then(|z| z.first().cloned());
    named
        .or_else(|| {
            cat.region(Cloud::Tencent, region)
                .and_then(|r| r.zones.first().cloned())
        })
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("tencent region `{region}` is not in the catalog"),
            )
        })
}

async fn inquire(
    p: &TencentProvider,
    region: &str,
    base: &Value,
    charge: &str,
    extra: Value,
) -> Result<Value> {
    let mut body = base.clone();
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.insert("InstanceChargeType".into(), json!(charge));
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    let resp = p.client.call(CVM, ACTION, region, &body).await?;
    resp.get("Price")
        .and_then(|x| x.get("InstancePrice"))
        .cloned()
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{ACTION} ({charge}): the answer has no Price.InstancePrice"),
            )
        })
}

/// A quote that may be missing for this type (no spot or no prepaid sale):
/// `None` for a refusal of the request, the error otherwise.
fn optional(r: Result<LiveQuote>) -> Result<Option<LiveQuote>> {
    match r {
        Ok(q) => Ok(Some(q)),
        Err(e)
            if matches!(
                e.kind,
                ErrorKind::Invalid | ErrorKind::Capacity | ErrorKind::NotFound
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

fn hourly(price: &Value, charge: &str) -> Result<f64> {
    let what = format!("{ACTION} ({charge})");
    let unit = price
        .get("ChargeUnit")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !unit.eq_ignore_ascii_case("HOUR") {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("{what}: ChargeUnit is `{unit}`, not HOUR"),
        ));
    }
    positive_price(
        &what,
        "UnitPriceDiscount",
        f(price, "UnitPriceDiscount").or_else(|| f(price, "UnitPrice")),
    )
}

#[async_trait]
impl PriceApi for TencentProvider {
    /// InquiryPriceRunInstances allows 10 requests a second (its API page);
    /// one quote makes four of them.
    fn price_rate(&self) -> RateLimit {
        RateLimit::new(2.5, 2)
    }

    async fn quote_prices(&self, region: &str, instance_type: &str) -> Result<Vec<LiveQuote>> {
        let zone = zone(region, instance_type)?;
        let image = images::image_id(self, region, "ubuntu-22.04").await?;
        let base = json!({
            "Placement": {"Zone": zone},
            "ImageId": image,
            "InstanceType": instance_type,
            "InstanceCount": 1,
        });
        let cny = |term, amount, api: &str| LiveQuote {
            term,
            amount,
            currency: gpuform_catalog::Currency::CNY,
            api: format!("cvm:{ACTION} ({api}, {zone})"),
        };
        // On-demand first: an unknown type or bad credentials fail here, once.
        let od = inquire(self, region, &base, "POSTPAID_BY_HOUR", json!({})).await?;
        let mut out = vec![cny(
            QuoteTerm::OnDemand,
            hourly(&od, "POSTPAID_BY_HOUR")?,
            "POSTPAID_BY_HOUR",
        )];
        for months in [1u32, 12] {
            let r = async {
            let v = inquire(
                self,
                region,
                &base,
                "PREPAID",
                json!({"InstanceChargePrepaid": {"Period": months, "RenewFlag": "NOTIFY_AND_MANUAL_RENEW"}}),
            )
            .await?;
            let what = format!("{ACTION} (PREPAID {months} months)");
            let total = positive_price(
                &what,
                "DiscountPrice",
                f(&v, "DiscountPrice").or_else(|| f(&v, "OriginalPrice")),
            )?;
            Ok(cny(
                QuoteTerm::Subscription(months),
                total,
                &format!("PREPAID {months} month{}", if months == 1 { "" } else { "s" }),
            ))
        }
        .await;
            out.extend(optional(r)?);
        }
        let spot = async {
        let v = inquire(
            self,
            region,
            &base,
            "SPOTPAID",
            json!({"InstanceMarketOptions": {"MarketType": "spot", "SpotOptions": {"MaxPrice": "1000", "SpotInstanceType": "one-time"}}}),
        )
        .await?;
        Ok(cny(QuoteTerm::Spot, hourly(&v, "SPOTPAID")?, "SPOTPAID"))
    }
    .await;
        out.extend(optional(spot)?);
        Ok(out)
    }
}
