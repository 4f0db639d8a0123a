//! Signed JSON calls to Huawei Cloud's REST endpoints, pagination, and the
//! polling of asynchronous jobs and ready states.

use crate::errors;
use gpuform_http::exchange;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError, Scope};
use gpuform_signing::{huawei, Credentials, Request};
use serde_json::Value;
use std::time::Duration;

/// Page size for list calls (ECS detail, VPC/subnet/security-group lists,
/// EVS detail and the tag-filter calls all accept 1000).
pub const PAGE: usize = 1000;

/// A text field of an answer (`""` when absent or not text).
pub fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

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
    /// Business support (price inquiries): one global endpoint,
    /// `https://bss.myhuaweicloud.com` for every region of the China site.
    Bss,
    /// Identity (KeystoneListRegions): `https://iam.{region}.myhuaweicloud.com`.
    Iam,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Ecs => "ecs",
            Service::Vpc => "vpc",
            Service::Evs => "evs",
            Service::Ims => "ims",
            Service::Dns => "dns",
            Service::Bss => "bss",
            Service::Iam => "iam",
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

impl JobPolling {
    /// The waits between polls: `initial`, doubling up to `max`, until `deadline`.
    pub fn backoff(&self) -> gpuform_provider::Backoff {
        gpuform_provider::Backoff::new(self.initial, self.max).until(self.deadline)
    }
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

impl crate::HuaweiProvider {
    /// `DELETE path` on `svc` in the scope's region, `path` made from the
    /// region's project id; the answer is not needed.
    pub(crate) async fn delete_in_project(
        &self,
        svc: Service,
        scope: &Scope,
        path: impl FnOnce(&str) -> String,
    ) -> Result<()> {
        let region = scope.region.as_str();
        let path = path(self.project(region)?);
        self.client.delete(svc, region, path).await.map(drop)
    }
}

impl Client {
    pub fn new(creds: Credentials, endpoint: Option<String>) -> Result<Client> {
        let http = gpuform_http::http_client(None)?;
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
            None if service == Service::Bss => "https://bss.myhuaweicloud.com".to_string(),
            None => format!("https://{}.{region}.myhuaweicloud.com", service.name()),
        }
    }

    /// Sends one signed request; a 2xx answer's JSON body (or `null`).
    pub async fn send(&self, call: Call<'_>) -> Result<Value> {
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
        let got = exchange(rb.body(req.body.clone()), &what, Some("x-request-id")).await?;
        let json: Value = if got.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&got.body).unwrap_or(Value::Null)
        };
        errors::answer_error(got.status, &json, &what, got.request_id).map_or(Ok(json), Err)
    }

    /// Every page of a list: `call` makes the request for the page at
    /// `cursor`, `key` is the answer's documented list (see [`list_field`]),
    /// and `more` says, from the answer and the cursor after it, whether
    /// another page follows.
    pub async fn pages<'a>(
        &self,
        key: &str,
        what: &str,
        mut call: impl FnMut(&Cursor) -> Call<'a>,
        more: impl Fn(&Value, &Cursor) -> bool,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut cursor = Cursor::default();
        loop {
            let v = self.send(call(&cursor)).await?;
            let page = list_field(&v, key, what)?;
            cursor.last_len = page.len();
            cursor.seen += page.len();
            cursor.marker = page.last().map(|x| s(x, "id"));
            out.extend(page);
            if !more(&v, &cursor) {
                return Ok(out);
            }
            cursor.page += 1;
        }
    }

    /// `GET path`: the answer.
    pub async fn get(&self, svc: Service, region: &str, path: String) -> Result<Value> {
        self.send(Call::new(svc, region, "GET", path)).await
    }

    /// `DELETE path`: the answer (a job for some services).
    pub async fn delete(&self, svc: Service, region: &str, path: String) -> Result<Value> {
        self.send(Call::new(svc, region, "DELETE", path)).await
    }

    /// Sends an asynchronous call (one that answers `job_id`) and waits for
    /// its job on the same service; the finished job.
    pub async fn run_job(&self, call: Call<'_>, project_id: &str) -> Result<Value> {
        let (service, region) = (call.service, call.region);
        let v = self.send(call).await?;
        self.wait_job(service, region, project_id, &s(&v, "job_id"))
            .await
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
    ) -> Result<Value> {
        let mut backoff = self.polling.backoff();
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
                "PENDING_PAYMENT" => return Err(errors::pending_payment(job_id, None)),
                "FAIL" => return Err(errors::job_failed(job_id, &job)),
                _ => {}
            }
            if !backoff.sleep().await {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!(
                        "job {job_id} still running after {}s; it may finish later (the next refresh adopts what it made)",
                        self.polling.deadline.as_secs()
                    ),
                ));
            }
        }
    }

    /// GETs `path` until `{key}.status` is one of `ready` (→ the object) or
    /// `failed` (→ error), with the job polling's backoff and deadline: every
    /// create waits for its resource's documented ready state before
    /// dependents start.
    pub async fn wait_status(
        &self,
        svc: Service,
        region: &str,
        path: String,
        key: &str,
        ready: &[&str],
        failed: &[&str],
    ) -> Result<Value> {
        let mut backoff = self.polling.backoff();
        loop {
            let v = self.get(svc, region, path.clone()).await?;
            let obj = v.get(key).cloned().ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Transient,
                    format!("GET {path}: the answer has no `{key}`"),
                )
            })?;
            let status = s(&obj, "status");
            if ready.contains(&status.as_str()) {
                return Ok(obj);
            }
            if failed.contains(&status.as_str()) {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!("{key} {} is {status}", s(&obj, "id")),
                ));
            }
            if !backoff.sleep().await {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!(
                        "{key} {} still {status} after {}s",
                        s(&obj, "id"),
                        self.polling.deadline.as_secs()
                    ),
                ));
            }
        }
    }
}

/// Where a paginated list is: pages read, items seen, the last page's
/// length and last id (the `marker` of VPC v1 lists).
#[derive(Debug, Default)]
pub struct Cursor {
    /// Pages read before this one (0 for the first).
    pub page: usize,
    pub seen: usize,
    pub last_len: usize,
    pub marker: Option<String>,
}

impl Cursor {
    /// Whether the last page was full: the lists answer fewer than
    /// [`PAGE`] items on their last page.
    pub fn full(&self) -> bool {
        self.last_len >= PAGE
    }
}

pub fn sub_jobs(job: &Value) -> impl Iterator<Item = &Value> {
    job.pointer("/entities/sub_jobs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
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

/// The documented list in an answer: a 2xx without it is an error (a
/// throttled or truncated answer), never an empty result, so that a refresh
/// cannot conclude that nothing exists.
pub fn list_field(v: &Value, key: &str, what: &str) -> Result<Vec<Value>> {
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
