//! A stand-in for the AWS Price List Query API's `GetProducts`
//! (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html)
//! on 127.0.0.1. It is NOT AWS: it answers that one action as its reference
//! page documents it, for the products of its price list, and nothing else.
//! moto, which stands in for EC2 in the AWS tests, has no pricing service.
//!
//! Requests are JSON 1.1 (`POST /`, `Content-Type:
//! application/x-amz-json-1.1`, `X-Amz-Target:
//! AWSPriceListService.GetProducts`) signed with SigV4 for service `pricing`
//! in `us-east-1`; the signature is checked by the stand-in's own verifier
//! ([`crate::verify::sigv4`], written from the IAM user guide). Body:
//! `ServiceCode` (`AmazonEC2`), `Filters[]` of `{Type: TERM_MATCH, Field,
//! Value}`, `FormatVersion`, `MaxResults` (1-100), `NextToken`. Answer:
//! `{"FormatVersion": "aws_v1", "PriceList": [<JSON document as a string>],
//! "NextToken"}`; each document has `product.attributes` and
//! `terms.OnDemand` / `terms.Reserved` offers whose `priceDimensions` carry
//! `unit` and `pricePerUnit.USD` (strings), reserved ones with
//! `termAttributes` (`LeaseContractLength`, `OfferingClass`, `PurchaseOption`).
//! Errors: `{"__type", "message"}` with the HTTP status of the error.
//!
//! A type's [`ListPrice`]: `hourly` on demand; `year` the cost of a
//! one-year standard No Upfront reservation (its hourly rate is year / 8760);
//! `three_years`, when set, the cost of a three-year one (`LeaseContractLength`
//! `3yr`, hourly rate three_years / 26280), offered beside a dearer
//! three-year `OfferingClass` `convertible` No Upfront term.
//! A type has two documents, the price list's `capacitystatus` `Used` and
//! `AllocatedCapacityReservation` rows (the second priced at zero, as
//! capacity already paid for); answers carry one document per page, so a
//! client that does not filter on `capacitystatus` must follow `NextToken`.

use crate::background::Background;
use crate::prices::{ListPrice, PriceBook};
use crate::verify::{sigv4, Key, Rejection, WireRequest};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The key pair the stand-in accepts: the one the moto-based tests use.
pub const ACCESS_KEY_ID: &str = "testing";
pub const SECRET_ACCESS_KEY: &str = "testing";

struct Shared {
    prices: Mutex<PriceBook>,
    requests: AtomicU64,
}

/// A running GetProducts stand-in; stops when dropped.
pub struct PricingMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _server: Background,
}

impl PricingMock {
    pub fn start() -> PricingMock {
        let shared = Arc::new(Shared {
            prices: Mutex::new(PriceBook::default()),
            requests: AtomicU64::new(0),
        });
        let sh = shared.clone();
        let app = axum::Router::new().fallback(move |m: Method, u: Uri, h: HeaderMap, b: Bytes| {
            let sh = sh.clone();
            async move { handle(&sh, &m, &u, &h, &b) }
        });
        let (addr, server) = Background::serve("aws-pricing-mock", app);
        PricingMock {
            addr,
            shared,
            _server: server,
        }
    }

    /// `http://127.0.0.1:PORT`, for `GPUFORM_AWS_PRICING_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn book(&self) -> std::sync::MutexGuard<'_, PriceBook> {
        self.shared.prices.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets what GetProducts answers for a type (USD, in every region).
    pub fn set_price(&self, instance_type: &str, price: ListPrice) {
        self.book().set(instance_type, price);
    }

    /// After `n` more answers, GetProducts fails with HTTP 500; `None` ends it.
    pub fn fail_prices_after(&self, n: Option<u32>) {
        let mut b = self.book();
        b.fail_after = n;
        b.answered = 0;
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = json!({"__type": format!("com.amazon.coral.service#{code}"), "message": message});
    (
        status,
        [("content-type", "application/x-amz-json-1.1")],
        body.to_string(),
    )
        .into_response()
}

fn handle(sh: &Shared, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Response {
    sh.requests.fetch_add(1, Ordering::SeqCst);
    let wire = WireRequest::from_http(method, uri, headers, body);
    let key = Key {
        id: ACCESS_KEY_ID,
        secret: SECRET_ACCESS_KEY,
    };
    match sigv4::verify(&wire, &key) {
        Ok(v) if v.service == "pricing" && v.region == "us-east-1" => {}
        Ok(v) => {
            return error(
                StatusCode::FORBIDDEN,
                "InvalidSignatureException",
                &format!(
                    "Credential should be scoped to a valid region and service (got {}/{}).",
                    v.region, v.service
                ),
            )
        }
        Err(Rejection::UnknownKey(_)) => {
            return error(
                StatusCode::FORBIDDEN,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            )
        }
        Err(e) => {
            return error(
                StatusCode::FORBIDDEN,
                "InvalidSignatureException",
                &format!("The request signature we calculated does not match the signature you provided ({e})."),
            )
        }
    }
    let target = wire
        .only_header("x-amz-target")
        .ok()
        .flatten()
        .unwrap_or("");
    if method != Method::POST || target != "AWSPriceListService.GetProducts" {
        return error(
            StatusCode::BAD_REQUEST,
            "UnknownOperationException",
            "This stand-in answers AWSPriceListService.GetProducts only.",
        );
    }
    let params: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "SerializationException",
                "The request body is not JSON.",
            )
        }
    };
    let mut book = sh.prices.lock().unwrap_or_else(|p| p.into_inner());
    if book.outage() {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalErrorException",
            "An internal error occurred.",
        );
    }
    match get_products(&book, &params) {
        Ok(v) => (
            StatusCode::OK,
            [("content-type", "application/x-amz-json-1.1")],
            v.to_string(),
        )
            .into_response(),
        Err(msg) => error(StatusCode::BAD_REQUEST, "InvalidParameterException", &msg),
    }
}

fn get_products(book: &PriceBook, p: &Value) -> Result<Value, String> {
    if p.get("ServiceCode").and_then(Value::as_str) != Some("AmazonEC2") {
        return Err("ServiceCode must be AmazonEC2 in this stand-in.".into());
    }
    let max = p.get("MaxResults").and_then(Value::as_u64).unwrap_or(100);
    if !(1..=100).contains(&max) {
        return Err("MaxResults must be between 1 and 100.".into());
    }
    let mut filters: Vec<(String, String)> = Vec::new();
    for f in p
        .get("Filters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        if s("Type") != "TERM_MATCH" {
            return Err(format!("Filter type `{}` is not supported.", s("Type")));
        }
        filters.push((s("Field"), s("Value")));
    }
    let want = |field: &str| {
        filters
            .iter()
            .find(|(f, _)| f.eq_ignore_ascii_case(field))
            .map(|(_, v)| v.as_str())
    };
    let docs: Vec<Value> = match (want("instanceType"), want("regionCode")) {
        (Some(it), Some(region)) => match book.get(it) {
            None => Vec::new(),
            Some(list) => ["Used", "AllocatedCapacityReservation"]
                .into_iter()
                .filter(|cs| want("capacitystatus").is_none_or(|w| w == *cs))
                .filter(|_| want("operatingSystem").is_none_or(|w| w == "Linux"))
                .filter(|_| want("tenancy").is_none_or(|w| w == "Shared"))
                .filter(|_| want("preInstalledSw").is_none_or(|w| w == "NA"))
                .map(|cs| document(it, region, cs, &list))
                .collect(),
        },
        _ => return Err("This stand-in needs the instanceType and regionCode filters.".into()),
    };
    let start: usize = match p.get("NextToken").and_then(Value::as_str) {
        None => 0,
        Some(t) => t
            .parse()
            .map_err(|_| "The NextToken is not valid.".to_string())?,
    };
    // One document per page, whatever MaxResults says: clients must page.
    let page: Vec<Value> = docs
        .iter()
        .skip(start)
        .take(1)
        .map(|d| Value::String(d.to_string()))
        .collect();
    let mut out = json!({"FormatVersion": "aws_v1", "PriceList": page});
    if start + 1 < docs.len() {
        out["NextToken"] = json!((start + 1).to_string());
    }
    Ok(out)
}

/// A price list document in the `aws_v1` format.
fn document(instance_type: &str, region: &str, capacity: &str, list: &ListPrice) -> Value {
    let sku = format!("SKU{}{}", instance_type.replace('.', ""), capacity.len());
    let dim = |code: &str, unit: &str, usd: f64| {
        json!({
            format!("{sku}.{code}.6YS6EN2CT7"): {
                "unit": unit,
                "pricePerUnit": {"USD": format!("{usd:.7}")},
                "description": format!("${usd} per {unit}"),
            }
        })
    };
    let used = capacity == "Used";
    // Capacity already reserved costs nothing more per hour.
    let (od, one_year) = if used {
        (list.hourly, list.year / 8760.0)
    } else {
        (0.0, 0.0)
    };
    let reserved_term = |code: &str, usd: f64, years: &str, class: &str| {
        (
            format!("{sku}.{code}"),
            json!({
                "offerTermCode": code,
                "sku": sku,
                "priceDimensions": dim(code, "Hrs", usd),
                "termAttributes": {
                    "LeaseContractLength": years,
                    "OfferingClass": class,
                    "PurchaseOption": "No Upfront",
                },
            }),
        )
    };
    let mut reserved = serde_json::Map::new();
    // Three-year offers: a convertible one, dearer, whose key sorts before
    // the standard one a client must pick.
    if let Some(three) = list.three_years {
        let hourly = if used { three / (3.0 * 8760.0) } else { 0.0 };
        for (code, usd, class) in [
            ("7NE97W5U4E", hourly * 1.25, "convertible"),
            ("BPH4J8HBKS", hourly, "standard"),
        ] {
            let (k, v) = reserved_term(code, usd, "3yr", class);
            reserved.insert(k, v);
        }
    }
    let (k, v) = reserved_term("4NA7Y494T4", one_year, "1yr", "standard");
    reserved.insert(k, v);
    json!({
        "product": {
            "productFamily": "Compute Instance",
            "sku": sku,
            "attributes": {
                "instanceType": instance_type,
                "regionCode": region,
                "operatingSystem": "Linux",
                "tenancy": "Shared",
                "preInstalledSw": "NA",
                "capacitystatus": capacity,
            },
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                format!("{sku}.JRTCKXETXF"): {
                    "offerTermCode": "JRTCKXETXF",
                    "sku": sku,
                    "priceDimensions": dim("JRTCKXETXF", "Hrs", od),
                    "termAttributes": {},
                }
            },
            "Reserved": reserved,
        },
        "version": "20261101000000",
        "publicationDate": "2026-11-01T00:00:00Z",
    })
}
