//! One signed Tencent Cloud API 3.0 call: POST JSON to
//! `https://{service}.tencentcloudapi.com/` with `X-TC-Action`,
//! `X-TC-Version`, `X-TC-Region` and a TC3-HMAC-SHA256 `Authorization`
//! (https://www.tencentcloud.com/document/api/213/30654, "Signature v3").
//! Responses are `{"Response": {..., "RequestId"}}`; failures are
//! `{"Response": {"Error": {"Code", "Message"}, "RequestId"}}` with HTTP 200.

use crate::errors;
use gpuform_provider::{ErrorKind, ProviderError};
use gpuform_signing::{tc3, Credentials, Request};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// A session token: never shown.
#[derive(Clone)]
pub(crate) struct SessionToken(pub(crate) String);

impl fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    creds: Credentials,
    token: Option<SessionToken>,
    /// Replaces `https://{service}.tencentcloudapi.com` for every service.
    endpoint: Option<reqwest::Url>,
}

impl Client {
    pub(crate) fn new(
        creds: Credentials,
        token: Option<SessionToken>,
        endpoint: Option<reqwest::Url>,
    ) -> Result<Client, ProviderError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("gpuform/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("cannot build the HTTP client: {e}"),
                )
            })?;
        Ok(Client {
            http,
            creds,
            token,
            endpoint,
        })
    }

    /// The URL to POST to and the `Host` value that is signed.
    fn target(&self, service: &str) -> Result<(String, String), ProviderError> {
        match &self.endpoint {
            None => {
                let host = format!("{service}.tencentcloudapi.com");
                Ok((format!("https://{host}/"), host))
            }
            Some(url) => {
                let host = url.host_str().ok_or_else(|| {
                    ProviderError::new(
                        ErrorKind::Invalid,
                        format!("GPUFORM_TENCENT_ENDPOINT `{url}` has no host"),
                    )
                })?;
                // What the HTTP client puts in `Host`: the port only when it is
                // not the scheme's default (Url::port() is None then).
                let host = match url.port() {
                    Some(p) => format!("{host}:{p}"),
                    None => host.to_string(),
                };
                let mut base = url.to_string();
                if !base.ends_with('/') {
                    base.push('/');
                }
                Ok((base, host))
            }
        }
    }

    /// Calls `action` and returns the `Response` object (without `Error`).
    pub(crate) async fn call(
        &self,
        service: &str,
        version: &str,
        action: &str,
        region: &str,
        body: &Value,
    ) -> Result<Value, ProviderError> {
        let (url, host) = self.target(service)?;
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{action}: cannot encode the request: {e}"),
            )
        })?;
        let unsigned = Request::new("POST", host, "/")
            .with_header("Content-Type", "application/json")
            .with_body(bytes);
        let signed = tc3::sign_now(&unsigned, &self.creds, service).map_err(|e| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{action}: cannot sign the request: {e}"),
            )
        })?;

        let mut rb = self
            .http
            .post(&url)
            .header("Content-Type", "application/json")
            .header("X-TC-Action", action)
            .header("X-TC-Version", version)
            .header("X-TC-Region", region);
        for (name, value) in &signed.headers {
            rb = rb.header(name.as_str(), value.as_str());
        }
        if let Some(t) = &self.token {
            rb = rb.header("X-TC-Token", t.0.as_str());
        }
        let resp = rb.body(unsigned.body).send().await.map_err(|e| {
            // reqwest's error text names the URL, never headers or the body.
            ProviderError::new(
                ErrorKind::Transient,
                format!("{action} ({service}): request failed: {e}"),
            )
        })?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("{action} ({service}): reading the response failed: {e}"),
            )
        })?;
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        let Some(mut response) = parsed.and_then(|mut v| v.get_mut("Response").map(Value::take))
        else {
            let kind = if status.is_server_error() {
                ErrorKind::Transient
            } else if status.as_u16() == 429 {
                ErrorKind::Throttled
            } else {
                ErrorKind::Invalid
            };
            let mut snippet: String = text.chars().take(200).collect();
            if snippet.is_empty() {
                snippet = "(empty body)".into();
            }
            return Err(ProviderError::new(
                kind,
                format!("{action} ({service}): unexpected HTTP {status} response: {snippet}"),
            ));
        };
        let request_id = response
            .get("RequestId")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(err) = response.get_mut("Error").map(Value::take) {
            let code = err
                .get("Code")
                .and_then(Value::as_str)
                .unwrap_or("Unknown")
                .to_string();
            let message = err
                .get("Message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let kind = errors::classify(&code);
            let mut text = format!("{action}: {message}");
            if let Some(h) = errors::hint(kind, &code) {
                text.push_str("\n  hint: ");
                text.push_str(h);
            }
            let mut e = ProviderError::new(kind, text).with_code(code);
            if let Some(r) = request_id {
                e = e.with_request_id(r);
            }
            return Err(e);
        }
        Ok(response)
    }
}
