//! Live prices:
//! - spot: EC2 `DescribeSpotPriceHistory` through `aws-sdk-ec2` (Linux/UNIX,
//!   every page by `NextToken`); the spot price is the newest point of each
//!   zone, and the cheapest of those (the zone a plan would pick first).
//! - on-demand, 1-year and 3-year reserved: the Price List Query API `GetProducts`
//!   (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html),
//!   JSON 1.1 at `https://api.pricing.us-east-1.amazonaws.com`, signed with
//!   SigV4 by the SDK's own `aws-sigv4` (the `aws-sdk-pricing` crate would add
//!   a second generated SDK to a build that is already the slowest part; the
//!   call is one POST). Filters: `regionCode`, `instanceType`,
//!   `operatingSystem=Linux`, `tenancy=Shared`, `preInstalledSw=NA`,
//!   `capacitystatus=Used`; each `PriceList` item is a JSON document as a
//!   string, whose `terms.OnDemand` hourly `pricePerUnit.USD` is on-demand
//!   and whose `terms.Reserved` entries with `OfferingClass=standard`,
//!   `PurchaseOption=No Upfront` and `LeaseContractLength=1yr` / `3yr` are
//!   reserved-1y / reserved-3y.
//!   `NextToken` pages. `GPUFORM_AWS_PRICING_ENDPOINT` replaces the endpoint
//!   (tests, a proxy).

use crate::errors::{sent, Op};
use crate::AwsProvider;
use async_trait::async_trait;
use aws_credential_types::provider::ProvideCredentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use gpuform_catalog::Currency;
use gpuform_provider::prices::positive_price;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, LiveQuote, PriceApi, ProviderError, QuoteTerm};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime};

pub const ENV_PRICING_ENDPOINT: &str = "GPUFORM_AWS_PRICING_ENDPOINT";
const PRICING_ENDPOINT: &str = "https://api.pricing.us-east-1.amazonaws.com";
/// The Price List Query API is served from us-east-1 (and ap-south-1).
const PRICING_REGION: &str = "us-east-1";
const GET_PRODUCTS: &str = "GetProducts";
const SPOT: &str = "DescribeSpotPriceHistory";
/// Pages read at most, for either call.
const MAX_PAGES: usize = 20;

/// The newest spot price of each zone, the cheapest of them, and its zone.
async fn spot(p: &AwsProvider, region: &str, instance_type: &str) -> Result<Option<(f64, String)>> {
    use aws_sdk_ec2::types::InstanceType;
    let client = p.ec2_client(region);
    let mut newest: std::collections::BTreeMap<String, (i64, f64)> = Default::default();
    let mut token: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let request = client
            .describe_spot_price_history()
            .instance_types(InstanceType::from(instance_type))
            .product_descriptions("Linux/UNIX")
            .max_results(1000)
            .set_next_token(token.clone());
        let out = sent(SPOT, Op::Other, request.send()).await?;
        for pt in out.spot_price_history() {
            if pt.instance_type().map(|t| t.as_str()) != Some(instance_type) {
                continue;
            }
            let (Some(zone), Some(price), Some(ts)) =
                (pt.availability_zone(), pt.spot_price(), pt.timestamp())
            else {
                continue;
            };
            let Ok(price) = price.parse::<f64>() else {
                continue;
            };
            let e = newest.entry(zone.to_string()).or_insert((i64::MIN, price));
            if ts.secs() >= e.0 {
                *e = (ts.secs(), price);
            }
        }
        match out.next_token().filter(|t| !t.is_empty()) {
            Some(t) if Some(t) != token.as_deref() => token = Some(t.to_string()),
            _ => break,
        }
    }
    Ok(newest
        .into_iter()
        .filter(|(_, (_, price))| price.is_finite() && *price > 0.0)
        .map(|(zone, (_, price))| (price, zone))
        .min_by(|a, b| a.0.total_cmp(&b.0)))
}

fn term_match(field: &str, value: &str) -> Value {
    json!({"Type": "TERM_MATCH", "Field": field, "Value": value})
}

/// The credentials of aws-config's standard chain, or an `auth` error.
async fn credentials(p: &AwsProvider, what: &str) -> Result<aws_credential_types::Credentials> {
    match p.base.credentials_provider() {
        Some(cp) => cp.provide_credentials().await.map_err(|e| {
            ProviderError::new(ErrorKind::Auth, format!("{what}: no AWS credentials ({e})"))
        }),
        None => Err(ProviderError::new(
            ErrorKind::Auth,
            format!("{what}: no AWS credentials configured"),
        )),
    }
}

impl AwsProvider {
    /// Whether aws-config's chain finds credentials (a refresh of every
    /// cloud skips AWS when it does not); sends nothing to AWS itself.
    pub async fn check_credentials(&self) -> Result<()> {
        credentials(self, "AWS").await.map(|_| ())
    }
}

/// One signed GetProducts call.
async fn get_products_page(p: &AwsProvider, body: &Value) -> Result<Value> {
    let endpoint = std::env::var(ENV_PRICING_ENDPOINT)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| PRICING_ENDPOINT.to_string());
    let url = format!("{}/", endpoint.trim_end_matches('/'));
    let creds = credentials(p, GET_PRODUCTS).await?;
    let identity = creds.into();
    let bytes = serde_json::to_vec(body)
        .map_err(|e| ProviderError::new(ErrorKind::Invalid, format!("{GET_PRODUCTS}: {e}")))?;
    let headers = [
        ("content-type", "application/x-amz-json-1.1"),
        ("x-amz-target", "AWSPriceListService.GetProducts"),
    ];
    let params: aws_sigv4::http_request::SigningParams<'_> = v4::SigningParams::builder()
        .identity(&identity)
        .region(PRICING_REGION)
        .name("pricing")
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{GET_PRODUCTS}: cannot sign: {e}"),
            )
        })?
        .into();
    let signable = SignableRequest::new(
        "POST",
        url.as_str(),
        headers.iter().copied(),
        SignableBody::Bytes(&bytes),
    )
    .map_err(|e| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("{GET_PRODUCTS}: cannot sign: {e}"),
        )
    })?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{GET_PRODUCTS}: cannot sign: {e}"),
            )
        })?
        .into_parts();
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| ProviderError::new(ErrorKind::Invalid, format!("HTTP client: {e}")))?;
    let mut rb = http.post(&url);
    for (k, v) in headers.iter().copied().chain(instructions.headers()) {
        rb = rb.header(k, v);
    }
    let resp = rb.body(bytes).send().await.map_err(|e| {
        ProviderError::new(
            ErrorKind::Transient,
            format!("{GET_PRODUCTS}: request failed: {}", e.without_url()),
        )
    })?;
    let status = resp.status().as_u16();
    let request_id = resp
        .headers()
        .get("x-amzn-requestid")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.text().await.map_err(|e| {
        ProviderError::new(
            ErrorKind::Transient,
            format!(
                "{GET_PRODUCTS}: reading the answer failed: {}",
                e.without_url()
            ),
        )
    })?;
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        return Ok(v);
    }
    // JSON 1.1 errors: `__type` is `[namespace#]Code`, `message` / `Message`.
    let code = v
        .get("__type")
        .and_then(Value::as_str)
        .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
        .unwrap_or_else(|| format!("HTTP{status}"));
    let message = v
        .get("message")
        .or_else(|| v.get("Message"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = match code.as_str() {
        "ThrottlingException" => ErrorKind::Throttled,
        "InvalidSignatureException"
        | "UnrecognizedClientException"
        | "AccessDeniedException"
        | "IncompleteSignature"
        | "MissingAuthenticationToken" => ErrorKind::Auth,
        "NotFoundException" => ErrorKind::NotFound,
        "InvalidParameterException" | "InvalidNextTokenException" | "ExpiredNextTokenException" => {
            ErrorKind::Invalid
        }
        _ if status >= 500 => ErrorKind::Transient,
        _ if status == 403 => ErrorKind::Auth,
        _ => ErrorKind::Invalid,
    };
    let mut e = ProviderError::new(kind, format!("{GET_PRODUCTS}: {message}")).with_code(code);
    if let Some(r) = request_id {
        e = e.with_request_id(r);
    }
    Err(e)
}

/// Every `PriceList` document of the type in the region, parsed.
async fn products(p: &AwsProvider, region: &str, instance_type: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut body = json!({
            "ServiceCode": "AmazonEC2",
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
            "Filters": [
                term_match("regionCode", region),
                term_match("instanceType", instance_type),
                term_match("operatingSystem", "Linux"),
                term_match("tenancy", "Shared"),
                term_match("preInstalledSw", "NA"),
                term_match("capacitystatus", "Used"),
            ],
        });
        if let Some(t) = &token {
            body["NextToken"] = json!(t);
        }
        let page = get_products_page(p, &body).await?;
        let list = page
            .get("PriceList")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("{GET_PRODUCTS}: the answer has no PriceList"),
                )
            })?;
        for item in list {
            // Each entry is a JSON document in a string.
            let doc = match item {
                Value::String(s) => serde_json::from_str(s).map_err(|e| {
                    ProviderError::new(
                        ErrorKind::Invalid,
                        format!("{GET_PRODUCTS}: a PriceList entry is not JSON: {e}"),
                    )
                })?,
                other => other.clone(),
            };
            out.push(doc);
        }
        match page
            .get("NextToken")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            Some(t) if Some(t) != token.as_deref() => token = Some(t.to_string()),
            _ => break,
        }
    }
    Ok(out)
}

/// The hourly USD rate of a term's price dimensions (`unit` `Hrs`).
fn hourly_usd(term: &Value) -> Option<f64> {
    term.get("priceDimensions")?
        .as_object()?
        .values()
        .filter(|d| d.get("unit").and_then(Value::as_str) == Some("Hrs"))
        .filter_map(|d| {
            d.get("pricePerUnit")?
                .get("USD")?
                .as_str()?
                .parse::<f64>()
                .ok()
        })
        .find(|p| *p > 0.0)
}

/// Whether a `terms.Reserved` offer is the standard, No Upfront
/// reservation of `LeaseContractLength` `years` (`1yr`, `3yr`).
fn standard_no_upfront(term: &Value, years: &str) -> bool {
    let a = |k: &str| {
        term.get("termAttributes")
            .and_then(|x| x.get(k))
            .and_then(Value::as_str)
    };
    a("LeaseContractLength") == Some(years)
        && a("OfferingClass") == Some("standard")
        && a("PurchaseOption") == Some("No Upfront")
}

fn terms<'a>(doc: &'a Value, kind: &str) -> impl Iterator<Item = &'a Value> {
    doc.get("terms")
        .and_then(|t| t.get(kind))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.values())
}

#[async_trait]
impl PriceApi for AwsProvider {
    /// GetProducts and DescribeSpotPriceHistory: a few calls per quote,
    /// well inside the provider's EC2 budget.
    fn price_rate(&self) -> RateLimit {
        RateLimit::new(2.0, 2)
    }

    async fn quote_prices(&self, region: &str, instance_type: &str) -> Result<Vec<LiveQuote>> {
        let docs = products(self, region, instance_type).await?;
        let what = format!("{GET_PRODUCTS} (AmazonEC2, {instance_type}, {region})");
        if docs.is_empty() {
            return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("{what}: no Linux shared-tenancy product: AWS does not sell `{instance_type}` in {region}"),
        ));
        }
        let usd = |term, amount, api: String| LiveQuote {
            term,
            amount,
            currency: Currency::USD,
            api,
        };
        let od = docs
            .iter()
            .flat_map(|d| terms(d, "OnDemand"))
            .find_map(hourly_usd);
        let mut out = vec![usd(
            QuoteTerm::OnDemand,
            positive_price(&what, "terms.OnDemand hourly USD", od)?,
            format!("pricing:{GET_PRODUCTS} (OnDemand)"),
        )];
        for (years, term) in [
            ("1yr", QuoteTerm::Reserved1y),
            ("3yr", QuoteTerm::Reserved3y),
        ] {
            if let Some(r) = docs
                .iter()
                .flat_map(|d| terms(d, "Reserved"))
                .filter(|t| standard_no_upfront(t, years))
                .find_map(hourly_usd)
            {
                out.push(usd(
                    term,
                    r,
                    format!("pricing:{GET_PRODUCTS} (Reserved {years} standard No Upfront)"),
                ));
            }
        }
        if let Some((price, zone)) = spot(self, region, instance_type).await? {
            out.push(usd(
                QuoteTerm::Spot,
                price,
                format!("ec2:{SPOT} (Linux/UNIX, {zone}, newest point)"),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hourly_usd_reads_the_hours_dimension_only() {
        let term = json!({"priceDimensions": {
            "A.B.C": {"unit": "Quantity", "pricePerUnit": {"USD": "1000"}},
            "A.B.D": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0000000"}},
            "A.B.E": {"unit": "Hrs", "pricePerUnit": {"USD": "3.0600000"}},
        }});
        assert_eq!(hourly_usd(&term), Some(3.06));
        assert_eq!(hourly_usd(&json!({"priceDimensions": {}})), None);
        let doc = json!({"terms": {"OnDemand": {"X": term}}});
        assert_eq!(terms(&doc, "OnDemand").count(), 1);
        assert_eq!(terms(&doc, "Reserved").count(), 0);
    }
}
