//! Signed JSON calls to Huawei Cloud's REST endpoints, error mapping and
//! asynchronous job polling.

use gpuform_provider::{ErrorKind, ProviderError};
use gpuform_signing::{huawei, Credentials, Request};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The services gpuform calls; each has its own regional endpoint
/// (`https://{service}.{region}.myhuaweicloud.com`, see "Regions and
/// Endpoints", developer.huaweicloud.com/intl/en-us/endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    Ecs,
    Vpc,
    Evs,
    Ims,
    Dns,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Ecs => "ecs",
            Service::Vpc => "vpc",
            Service::Evs => "evs",
            Service::Ims => "ims",
            Service::Dns => "dns",
        }
    }
}

/// How asynchronous jobs are waited for.
#[derive(Debug, Clone, Copy)]
pub struct JobPolling {
    pub initial: Duration,
    pub max: Duration,
    pub deadline: Duration,
}

impl Default for JobPolling {
    fn default() -> Self {
        JobPolling {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(15),
            deadline: Duration::from_secs(30 * 60),
        }
    }
}

pub struct Client {
    http: reqwest::Client,
    creds: Credentials,
    /// `GPUFORM_HUAWEI_ENDPOINT`: one base URL for every service.
    endpoint: Option<String>,
    pub polling: JobPolling,
}

/// What the signer and the wire need of one call.
pub struct Call<'a> {
    pub service: Service,
    pub region: &'a str,
    pub method: &'a str,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    pub client_token: Option<&'a str>,
}

impl<'a> Call<'a> {
    pub fn new(service: Service, region: &'a str, method: &'a str, path: String) -> Self {
        Call {
            service,
            region,
            method,
            path,
            query: Vec::new(),
            body: None,
            client_token: None,
        }
    }
    pub fn query(mut self, k: &str, v: impl Into<String>) -> Self {
        self.query.push((k.to_string(), v.into()));
        self
    }
    pub fn body(mut self, b: Value) -> Self {
        self.body = Some(b);
        self
    }
    pub fn token(mut self, t: &'a str) -> Self {
        self.client_token = Some(t);
        self
    }
}

impl Client {
    pub fn new(creds: Credentials, endpoint: Option<String>) -> Result<Client, ProviderError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| ProviderError::new(ErrorKind::Invalid, format!("HTTP client: {e}")))?;
        Ok(Client {
            http,
            creds,
            endpoint,
            polling: JobPolling::default(),
        })
    }

    fn base(&self, service: Service, region: &str) -> String {
        match &self.endpoint {
            Some(e) => e.trim_end_matches('/').to_string(),
            None => format!("https://{}.{region}.myhuaweicloud.com", service.name()),
        }
    }

    /// Sends one signed request; a 2xx answer's JSON body (or `null`).
    pub async fn send(&self, call: Call<'_>) -> Result<Value, ProviderError> {
        let base = self.base(call.service, call.region);
        let parsed = reqwest::Url::parse(&base).map_err(|e| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("endpoint `{base}` is not a URL: {e}"),
            )
        })?;
        let host = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("endpoint `{base}` has no host"),
                ))
            }
        };
        let body = match &call.body {
            Some(b) => serde_json::to_vec(b).map_err(|e| {
                ProviderError::new(ErrorKind::Invalid, format!("request body: {e}"))
            })?,
            None => Vec::new(),
        };
        let mut req = Request::new(call.method, host, call.path.clone());
        req.query = call.query.clone();
        req.headers
            .push(("Content-Type".into(), "application/json".into()));
        if let Some(t) = call.client_token {
            req.headers.push(("X-Client-Token".into(), t.to_string()));
        }
        req.body = body;
        let signed = huawei::sign_now(&req, &self.creds).map_err(|e| {
            ProviderError::new(ErrorKind::Invalid, format!("cannot sign request: {e}"))
        })?;
        let url = format!("{base}{}", req.encoded_target());
        let method = reqwest::Method::from_bytes(call.method.as_bytes())
            .map_err(|_| ProviderError::new(ErrorKind::Invalid, "bad HTTP method"))?;
        let mut rb = self.http.request(method, &url);
        for (n, v) in req.headers.iter().chain(signed.headers.iter()) {
            rb = rb.header(n.as_str(), v.as_str());
        }
        let what = format!("{} {}", call.method, call.path);
        tracing::debug!(target: "gpuform::huawei", "{what}");
        let resp = rb.body(req.body.clone()).send().await.map_err(|e| {
            let kind = ErrorKind::Transient;
            ProviderError::new(kind, format!("{what}: {}", strip_url(&e)))
        })?;
        let status = resp.status().as_u16();
        let request_id = resp
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = resp.bytes().await.map_err(|e| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("{what}: reading answer: {}", strip_url(&e)),
            )
        })?;
        let json: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        let (code, msg) = error_fields(&json);
        // A 2xx is a success only when it does not carry an error body: the
        // ECS error table ("Error Codes", support.huaweicloud.com/api-ecs/ecs_07_0002.html)
        // lists flow control as `202 Common.0024 exceeds flow over limit`.
        if (200..300).contains(&status) && !is_error_body(&json) {
            return Ok(json);
        }
        let kind = classify(status, code.as_deref(), &msg);
        let msg = if msg.is_empty() {
            format!("HTTP {status}")
        } else {
            msg
        };
        let mut e = ProviderError::new(kind, format!("{what}: {msg}"));
        if let Some(c) = code {
            e = e.with_code(c);
        }
        if let Some(r) = request_id {
            e = e.with_request_id(r);
        }
        Err(e)
    }

    /// Polls `GET /v1/{project_id}/jobs/{job_id}` ("Querying Job Execution
    /// Status", support.huaweicloud.com/api-ecs/ecs_02_0901.html; EVS has the
    /// same call on its own endpoint) until SUCCESS or FAIL, with exponential
    /// backoff and a deadline. Returns the finished job.
    pub async fn wait_job(
        &self,
        service: Service,
        region: &str,
        project_id: &str,
        job_id: &str,
    ) -> Result<Value, ProviderError> {
        let start = Instant::now();
        let mut delay = self.polling.initial;
        loop {
            let job = self
                .send(Call::new(
                    service,
                    region,
                    "GET",
                    format!("/v1/{project_id}/jobs/{job_id}"),
                ))
                .await?;
            match job.get("status").and_then(Value::as_str).unwrap_or("") {
                "SUCCESS" => return Ok(job),
                // A yearly/monthly order waiting to be paid: nothing happens
                // until someone pays it ("Querying Job Execution Status",
                // ecs_02_0901: PENDING_PAYMENT), so polling on is pointless.
                "PENDING_PAYMENT" => {
                    return Err(ProviderError::new(
                        ErrorKind::Invalid,
                        format!("job {job_id} is PENDING_PAYMENT: the yearly/monthly order awaits payment\n  hint: pay it in the Billing Center (Orders > My Orders) or let auto-pay settle it, then apply again"),
                    )
                    .with_code("PENDING_PAYMENT"))
                }
                "FAIL" => {
                    let code = job
                        .get("error_code")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    let reason = job
                        .get("fail_reason")
                        .and_then(Value::as_str)
                        .unwrap_or("no reason given")
                        .to_string();
                    let reason = sub_job_reason(&job).unwrap_or(reason);
                    let kind = classify(400, code.as_deref(), &reason);
                    let mut e = ProviderError::new(kind, format!("job {job_id} failed: {reason}"));
                    if let Some(c) = code.or_else(|| sub_job_code(&job)) {
                        e = e.with_code(c);
                    }
                    return Err(e);
                }
                _ => {}
            }
            if start.elapsed() >= self.polling.deadline {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!(
                        "job {job_id} still running after {}s; it may finish later (the next refresh adopts what it made)",
                        self.polling.deadline.as_secs()
                    ),
                ));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(self.polling.max);
        }
    }
}

fn sub_jobs(job: &Value) -> impl Iterator<Item = &Value> {
    job.pointer("/entities/sub_jobs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn sub_job_reason(job: &Value) -> Option<String> {
    sub_jobs(job)
        .filter(|s| s.get("status").and_then(Value::as_str) == Some("FAIL"))
        .find_map(|s| {
            s.get("fail_reason")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
}

fn sub_job_code(job: &Value) -> Option<String> {
    sub_jobs(job).find_map(|s| {
        s.get("error_code")
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// Server ids a finished create job made: `entities.sub_jobs[].entities.server_id`
/// (or `entities.server_id` for single-server jobs).
pub fn job_entity_ids(job: &Value, field: &str) -> Vec<String> {
    let mut ids: Vec<String> = sub_jobs(job)
        .filter(|s| s.get("status").and_then(Value::as_str) != Some("FAIL"))
        .filter_map(|s| {
            s.pointer(&format!("/entities/{field}"))
                .and_then(Value::as_str)
        })
        .map(str::to_string)
        .collect();
    if let Some(id) = job
        .pointer(&format!("/entities/{field}"))
        .and_then(Value::as_str)
    {
        ids.push(id.to_string());
    }
    ids
}

/// reqwest errors can carry the URL; ours holds no secret, but keep messages short.
fn strip_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let mut s = kind.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s = format!("{s}: {inner}");
        src = inner.source();
    }
    s
}

/// The error code and message from any of Huawei's error body shapes:
/// ECS `{"error": {"code", "message"}}`, APIG/EVS/IMS `{"error_code", "error_msg"}`,
/// VPC `{"code", "message"}`, Neutron `{"NeutronError": {"type", "message"}}`
/// and the OpenStack-style fault wrappers EVS answers with
/// (`{"badRequest": {"code", "message"}}`, `{"itemNotFound": {"message", "code": 404}}`,
/// see the error examples of the EVS/VBS references, support.huaweicloud.com/api-evs/).
/// `(None, _)` means the body is not an error.
pub fn error_fields(v: &Value) -> (Option<String>, String) {
    // Codes are strings, except in the fault wrappers where 404 is a number.
    let code = |v: Option<&Value>| match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let msg = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_default()
    };
    if let Some(e) = v.get("error").filter(|e| e.is_object()) {
        return (code(e.get("code")), msg(e.get("message")));
    }
    if v.get("error_code").is_some() {
        return (code(v.get("error_code")), msg(v.get("error_msg")));
    }
    if let Some(e) = v.get("NeutronError") {
        return (code(e.get("type")), msg(e.get("message")));
    }
    for f in FAULTS {
        if let Some(e) = v.get(f).filter(|e| e.is_object()) {
            let c = code(e.get("code")).or_else(|| Some(f.to_string()));
            return (c, msg(e.get("message")));
        }
    }
    (code(v.get("code")), msg(v.get("message")))
}

/// Whether a 2xx body is in fact an error answer. Job bodies carry
/// `error_code` of the job itself, so only the error wrappers count.
fn is_error_body(v: &Value) -> bool {
    let wrapped = |k: &str| v.get(k).is_some_and(Value::is_object);
    wrapped("error")
        || FAULTS.iter().any(|f| wrapped(f))
        || (v.get("error_code").is_some_and(Value::is_string)
            && v.get("job_id").is_none()
            && v.get("status").is_none())
}

/// OpenStack-style fault wrappers (EVS/VBS error examples).
const FAULTS: [&str; 7] = [
    "badRequest",
    "badrequest",
    "itemNotFound",
    "itemnotfound",
    "overLimit",
    "forbidden",
    "computeFault",
];

/// The documented list in an answer: a 2xx without it is an error (a
/// throttled or truncated answer), never an empty result, so that a refresh
/// cannot conclude that nothing exists.
pub fn list_field(v: &Value, key: &str, what: &str) -> Result<Vec<Value>, ProviderError> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("{what}: the answer has no `{key}` list (throttled or truncated answer); not read as empty"),
            )
        })
}

/// Huawei error → neutral kind. Sources: API Gateway error codes
/// (support.huaweicloud.com/devg-apisign/api-sign-errorcode.html), ECS error
/// codes (support.huaweicloud.com/api-ecs/ecs_07_0002.html), VPC and EVS error
/// code pages. Capacity has no single documented code (jobs fail with a
/// reason text), so it is recognised by the message as well.
pub fn classify(status: u16, code: Option<&str>, msg: &str) -> ErrorKind {
    let code = code.unwrap_or("");
    let m = msg.to_ascii_lowercase();
    // Common.0024 "exceeds flow over limit" (ECS error codes, ecs_07_0002).
    if status == 429
        || code == "APIGW.0308"
        || code == "Common.0024"
        || m.contains("flow over limit")
        || m.contains("throttl")
        || m.contains("too many requests")
    {
        return ErrorKind::Throttled;
    }
    // APIGW.0101: "The API does not exist" — a wrong endpoint or region, not a
    // missing resource (a delete must not count it as done).
    if code == "APIGW.0101" {
        return ErrorKind::Invalid;
    }
    if code.starts_with("APIGW.03") || status == 401 || code == "Ecs.0003" {
        return ErrorKind::Auth;
    }
    let capacity = [
        "sold out",
        "insufficient resource",
        "insufficient capacity",
        "no valid host",
        "not enough resource",
        "resources are insufficient",
    ];
    if capacity.iter().any(|c| m.contains(c)) {
        return ErrorKind::Capacity;
    }
    if code == "Ecs.0001" || m.contains("quota") {
        return ErrorKind::Quota;
    }
    if status == 403 {
        return ErrorKind::Auth;
    }
    if status == 404 {
        return ErrorKind::NotFound;
    }
    let in_use = [
        "in use",
        "in-use",
        "still has",
        "still contains",
        "is being used",
        "has dependen",
        "associated with",
    ];
    if status == 409 || in_use.iter().any(|c| m.contains(c)) {
        return ErrorKind::DependencyViolation;
    }
    if status >= 500 {
        return ErrorKind::Transient;
    }
    ErrorKind::Invalid
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_shapes() {
        assert_eq!(
            error_fields(&json!({"error": {"code": "Ecs.0005", "message": "bad"}})),
            (Some("Ecs.0005".into()), "bad".into())
        );
        assert_eq!(
            error_fields(&json!({"error_code": "APIGW.0301", "error_msg": "sig"})),
            (Some("APIGW.0301".into()), "sig".into())
        );
        assert_eq!(
            error_fields(&json!({"code": "VPC.0202", "message": "x"})),
            (Some("VPC.0202".into()), "x".into())
        );
    }

    #[test]
    fn kinds() {
        assert_eq!(classify(429, Some("APIGW.0308"), ""), ErrorKind::Throttled);
        assert_eq!(
            classify(401, Some("APIGW.0301"), "verify aksk signature fail"),
            ErrorKind::Auth
        );
        assert_eq!(
            classify(404, Some("APIGW.0101"), "The API does not exist"),
            ErrorKind::Invalid
        );
        assert_eq!(
            classify(400, Some("Ecs.0001"), "Insufficient ECS quota"),
            ErrorKind::Quota
        );
        assert_eq!(
            classify(
                400,
                Some("Ecs.0000"),
                "flavor p2s.2xlarge.8 is sold out in cn-north-4a"
            ),
            ErrorKind::Capacity
        );
        assert_eq!(
            classify(404, Some("Ecs.0114"), "server not found"),
            ErrorKind::NotFound
        );
        assert_eq!(
            classify(409, Some("VPC.0106"), "vpc still has subnets"),
            ErrorKind::DependencyViolation
        );
        assert_eq!(classify(503, None, ""), ErrorKind::Transient);
        assert_eq!(
            classify(400, Some("Ecs.0005"), "Invalid parameter values"),
            ErrorKind::Invalid
        );
    }
}
