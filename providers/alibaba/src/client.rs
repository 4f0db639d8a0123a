//! One signed RPC call to an Alibaba Cloud product (ECS, VPC), as the
//! current official SDKs send it: `POST /?<parameters>` with an empty body,
//! `x-acs-action` / `x-acs-version` headers and the `ACS3-HMAC-SHA256`
//! signature (see `gpuform_signing::acs3`).
//!
//! Endpoints (Alibaba Cloud "Endpoints" pages of ECS and VPC):
//! - ECS: `ecs.{region}.aliyuncs.com` in every region.
//! - VPC: the regions that VPC's own `DescribeRegions` answers with
//!   `RegionEndpoint = vpc.aliyuncs.com` are served by the central endpoint
//!   (see [`CENTRAL_VPC_REGIONS`]); every other region by
//!   `vpc.{region}.aliyuncs.com`.
//!
//! `GPUFORM_ALIBABA_ENDPOINT` replaces both with one base URL (a private
//! region, a proxy, or the local stand-in); the `Host` header and the
//! signature then use that URL's host.

use crate::errors::classify;
use gpuform_http::exchange;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
use gpuform_signing::{acs3, Credentials, Request};
use serde_json::Value;
use std::fmt;

/// An API product and the version its RPC API is called with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Product {
    /// Elastic Compute Service, API version 2014-05-26.
    Ecs,
    /// Virtual Private Cloud, API version 2016-04-28.
    Vpc,
}

impl Product {
    pub fn code(self) -> &'static str {
        match self {
            Product::Ecs => "ecs",
            Product::Vpc => "vpc",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            Product::Ecs => "2014-05-26",
            Product::Vpc => "2016-04-28",
        }
    }
}

/// Regions whose VPC API answers at the central `vpc.aliyuncs.com` (the
/// `RegionEndpoint` that VPC `DescribeRegions` reports for them); newer
/// regions use `vpc.{region}.aliyuncs.com`.
pub const CENTRAL_VPC_REGIONS: &[&str] = &[
    "cn-qingdao",
    "cn-beijing",
    "cn-hangzhou",
    "cn-shanghai",
    "cn-shenzhen",
    "cn-hongkong",
    "ap-southeast-1",
    "us-west-1",
    "us-east-1",
];

/// The public endpoint host of `product` in `region`.
pub fn default_host(product: Product, region: &str) -> String {
    match product {
        Product::Vpc if CENTRAL_VPC_REGIONS.contains(&region) => "vpc.aliyuncs.com".to_string(),
        _ => format!("{}.{region}.aliyuncs.com", product.code()),
    }
}

/// The endpoint override (`GPUFORM_ALIBABA_ENDPOINT`): scheme and
/// `host[:port]`, parsed as every other base-URL setting is.
pub use gpuform_http::Endpoint;

/// The HTTP side of the provider: credentials, endpoint choice, signing,
/// error decoding. `Debug` shows no secret.
pub struct RpcClient {
    http: reqwest::Client,
    creds: Credentials,
    security_token: Option<String>,
    endpoint: Option<Endpoint>,
}

impl fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcClient")
            .field("access_key_id", &self.creds.access_key_id())
            .field("secret", &"<redacted>")
            .field(
                "security_token",
                &self.security_token.as_ref().map(|_| "<redacted>"),
            )
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

pub const USER_AGENT: &str = concat!("gpuform/", env!("CARGO_PKG_VERSION"));

impl RpcClient {
    pub fn new(
        creds: Credentials,
        security_token: Option<String>,
        endpoint: Option<Endpoint>,
    ) -> Result<RpcClient> {
        let http = gpuform_http::http_client(None)?;
        Ok(RpcClient {
            http,
            creds,
            security_token,
            endpoint,
        })
    }

    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }

    /// Calls `action` of `product` in `region` with `params` (`RegionId` is
    /// added). Returns the JSON body of a 2xx answer; anything else becomes a
    /// [`ProviderError`] with Alibaba's `Code` and `RequestId`.
    pub async fn call(
        &self,
        product: Product,
        region: &str,
        action: &str,
        params: &[(String, String)],
    ) -> Result<Value> {
        let (scheme, host) = match &self.endpoint {
            Some(e) => (e.scheme.clone(), e.authority.clone()),
            None => ("https".to_string(), default_host(product, region)),
        };
        let mut req = Request::new("POST", host.clone(), "/")
            .with_query("RegionId", region)
            .with_header("x-acs-action", action)
            .with_header("x-acs-version", product.version())
            .with_header("accept", "application/json")
            .with_header("user-agent", USER_AGENT);
        for (k, v) in params {
            req.query.push((k.clone(), v.clone()));
        }
        if let Some(token) = &self.security_token {
            req.headers
                .push(("x-acs-security-token".to_string(), token.clone()));
        }
        let signed = acs3::sign_now(&req, &self.creds).map_err(|e| {
            ProviderError::new(ErrorKind::Invalid, format!("cannot sign {action}: {e}"))
        })?;
        let url = format!("{scheme}://{host}{}", req.encoded_target());
        let mut builder = self.http.post(&url);
        for (n, v) in req.headers.iter().chain(signed.headers.iter()) {
            builder = builder.header(n.as_str(), v.as_str());
        }
        tracing::debug!(action, region, host = %host, "alibaba call");
        let got = exchange(builder.body(Vec::<u8>::new()), action, None).await?;
        let body: Option<Value> = serde_json::from_slice(&got.body).ok();
        answer(action, got.status, body)
    }
}

/// The result of an answer: the JSON body of a 2xx, an error otherwise. A
/// 2xx whose body is not JSON, or that carries an error `Code` (a
/// throttling or gateway answer relayed with a success status), is an
/// error too: read as a result it would look like "nothing there".
pub fn answer(action: &str, status: u16, body: Option<Value>) -> Result<Value> {
    if !(200..300).contains(&status) {
        return Err(api_error(action, status, body.as_ref()));
    }
    let body = body.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Transient,
            format!("{action}: HTTP {status} with a body that is not JSON"),
        )
    })?;
    let code = body.get("Code").and_then(Value::as_str);
    if code.is_some_and(|c| !matches!(c, "200" | "OK" | "Success")) {
        return Err(api_error(action, status, Some(&body)));
    }
    Ok(body)
}

/// Turns an error answer (`{"RequestId","HostId","Code","Message",...}`)
/// into a neutral error.
pub fn api_error(action: &str, status: u16, body: Option<&Value>) -> ProviderError {
    let s = |k: &str| {
        body.and_then(|b| b.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let code = s("Code");
    let message = s("Message").unwrap_or_else(|| format!("HTTP {status}"));
    let kind = classify(code.as_deref(), status);
    let mut e = ProviderError::new(kind, format!("{action}: {message}"));
    if let Some(c) = code {
        e = e.with_code(c);
    }
    if let Some(r) = s("RequestId") {
        e = e.with_request_id(r);
    }
    e
}

// --------------------------------------------------------------------- params

/// RPC parameters in the order they are sent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Params(pub(crate) Vec<(String, String)>);

impl Params {
    pub(crate) fn push(&mut self, k: impl Into<String>, v: impl Into<String>) {
        self.0.push((k.into(), v.into()));
    }

    /// `Tag.N.Key` / `Tag.N.Value`, N from 1.
    pub(crate) fn tags(&mut self, tags: &[(String, String)]) {
        for (i, (k, v)) in tags.iter().enumerate() {
            self.push(format!("Tag.{}.Key", i + 1), k.clone());
            self.push(format!("Tag.{}.Value", i + 1), v.clone());
        }
    }

    /// One parameter.
    pub(crate) fn one(k: impl Into<String>, v: impl Into<String>) -> Params {
        let mut p = Params::default();
        p.push(k, v);
        p
    }
}

/// Ids as the JSON array the batched Describe calls take.
pub(crate) fn json_array(ids: &[String]) -> String {
    Value::Array(ids.iter().map(|i| Value::String(i.clone())).collect()).to_string()
}

// --------------------------------------------------------------------- pagination

/// How a listing call pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paging {
    /// `PageNumber` / `PageSize` (≤ 50): DescribeVpcs, DescribeVSwitches,
    /// DescribeDeploymentSets, DescribeImages.
    Number,
    /// `NextToken`, with `MaxResults` when given: DescribeInstances,
    /// DescribeDisks, DescribeSecurityGroups (≤ 100), ListTagResources.
    Token(Option<usize>),
}

/// One paginated listing call: which API, how it pages, and where its
/// answer holds the list (`body[outer][inner]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listing {
    pub product: Product,
    pub action: &'static str,
    pub paging: Paging,
    pub list: (&'static str, &'static str),
}

/// `PageSize` of the page-numbered calls: the documented maximum.
const NUMBER_PAGE: usize = 50;

impl RpcClient {
    /// Every item of a listing call with the parameters `base`, page by page.
    pub(crate) async fn list_all(
        &self,
        region: &str,
        l: &Listing,
        base: &Params,
    ) -> Result<Vec<Value>> {
        let (outer, inner) = l.list;
        let mut out = Vec::new();
        let mut page = 1usize;
        let mut token: Option<String> = None;
        loop {
            let mut p = base.clone();
            match l.paging {
                Paging::Number => {
                    p.push("PageNumber", page.to_string());
                    p.push("PageSize", NUMBER_PAGE.to_string());
                }
                Paging::Token(max) => {
                    if let Some(max) = max {
                        p.push("MaxResults", max.to_string());
                    }
                    if let Some(t) = &token {
                        p.push("NextToken", t.clone());
                    }
                }
            }
            let body = self.call(l.product, region, l.action, &p.0).await?;
            let got = listed_items(&body, outer, inner, l.action)?;
            let n = got.len();
            out.extend(got.into_iter().cloned());
            match l.paging {
                Paging::Number => {
                    // A full page may have a successor; without a TotalCount, ask.
                    let total = body.get("TotalCount").and_then(Value::as_u64);
                    if n < NUMBER_PAGE || total.is_some_and(|t| out.len() as u64 >= t) {
                        return Ok(out);
                    }
                    page += 1;
                }
                Paging::Token(_) => match body.get("NextToken").and_then(Value::as_str) {
                    Some(t) if !t.is_empty() && token.as_deref() != Some(t) => {
                        token = Some(t.to_string())
                    }
                    _ => return Ok(out),
                },
            }
        }
    }
}

// --------------------------------------------------------------------- answers

/// `body[outer][inner]` as a list, where the API reference documents that
/// list: an answer without `outer` (a 2xx from a throttling proxy, a
/// truncated body) is an error, never "nothing there" — read as empty, it
/// would make a refresh plan creates for what exists.
pub(crate) fn listed_items<'a>(
    body: &'a Value,
    outer: &str,
    inner: &str,
    action: &str,
) -> Result<Vec<&'a Value>> {
    if body.get(outer).is_none() {
        return Err(ProviderError::new(
            ErrorKind::Transient,
            format!("{action} answered without `{outer}`, which its API reference documents; not read as an empty list"),
        ));
    }
    Ok(items(body, outer, inner))
}

/// `body[outer][inner]` as a list (Alibaba wraps every list this way).
pub(crate) fn items<'a>(body: &'a Value, outer: &str, inner: &str) -> Vec<&'a Value> {
    match body.get(outer).and_then(|o| o.get(inner)) {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v @ Value::Object(_)) => vec![v],
        _ => Vec::new(),
    }
}

/// A field as text ("" when absent).
pub(crate) fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// The id a Create call answers with.
pub(crate) fn required(body: &Value, key: &str, action: &str) -> Result<String> {
    Some(text(body, key))
        .filter(|s| !s.is_empty())
        .ok_or_else(|| empty_answer(action))
}

pub(crate) fn empty_answer(action: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Transient,
        format!("{action} answered without the id of what it made"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(
            default_host(Product::Ecs, "cn-hangzhou"),
            "ecs.cn-hangzhou.aliyuncs.com"
        );
        assert_eq!(
            default_host(Product::Vpc, "cn-hangzhou"),
            "vpc.aliyuncs.com"
        );
        assert_eq!(
            default_host(Product::Vpc, "cn-wulanchabu"),
            "vpc.cn-wulanchabu.aliyuncs.com"
        );
    }

    #[test]
    fn endpoint_override() {
        let parse = |url: &str| Endpoint::parse(url, crate::ENV_ENDPOINT);
        let e = parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(e.scheme, "http");
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert!(parse("127.0.0.1:8080").is_err());
        assert!(parse("http://u:p@host").is_err());
        assert!(parse("http://host/path").is_err());
        assert!(parse("ftp://host").is_err());
    }

    #[test]
    fn error_bodies() {
        let b = serde_json::json!({"RequestId":"R1","HostId":"ecs","Code":"OperationDenied.NoStock","Message":"sold out"});
        let e = api_error("RunInstances", 403, Some(&b));
        assert_eq!(e.kind, ErrorKind::Capacity);
        assert_eq!(e.code.as_deref(), Some("OperationDenied.NoStock"));
        assert_eq!(e.request_id.as_deref(), Some("R1"));
        assert!(e.message.contains("sold out"));
        let e = api_error("X", 502, None);
        assert_eq!(e.kind, ErrorKind::Transient);
    }

    #[test]
    fn success_status_with_an_error_code_is_an_error() {
        let b = serde_json::json!({"RequestId":"R2","Code":"Throttling.User","Message":"Request was denied due to user flow control."});
        let e = answer("DescribeInstances", 200, Some(b)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Throttled);
        assert_eq!(e.code.as_deref(), Some("Throttling.User"));
        assert_eq!(
            answer("X", 200, None).unwrap_err().kind,
            ErrorKind::Transient
        );
        let ok = serde_json::json!({"RequestId":"R3","Instances":{"Instance":[]}});
        assert_eq!(answer("X", 200, Some(ok.clone())).unwrap(), ok);
    }

    #[test]
    fn debug_has_no_secret() {
        let c = RpcClient::new(
            Credentials::new("AKID", "SUPERSECRET"),
            Some("STSTOKEN".into()),
            None,
        )
        .unwrap();
        let d = format!("{c:?}");
        assert!(d.contains("AKID") && !d.contains("SUPERSECRET") && !d.contains("STSTOKEN"));
    }
}
