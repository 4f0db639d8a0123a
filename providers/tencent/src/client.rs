//! One signed Tencent Cloud API 3.0 call: POST JSON to
//! `https://{service}.tencentcloudapi.com/` with `X-TC-Action`,
//! `X-TC-Version`, `X-TC-Region` and a TC3-HMAC-SHA256 `Authorization`
//! (https://www.tencentcloud.com/document/api/213/30654, "Signature v3").
//! Responses are `{"Response": {..., "RequestId"}}`; failures are
//! `{"Response": {"Error": {"Code", "Message"}, "RequestId"}}` with HTTP 200.

use crate::errors::{self, undocumented};
use gpuform_http::exchange;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
use gpuform_signing::{tc3, Credentials, Request};
use serde_json::{json, Map, Value};
use std::fmt;

/// The endpoint override's variable.
pub const ENV_ENDPOINT: &str = "GPUFORM_TENCENT_ENDPOINT";

/// One of the APIs gpuform calls, with the version its action pages name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Api {
    pub(crate) service: &'static str,
    pub(crate) version: &'static str,
    /// VPC's Describe calls document `Offset` / `Limit` as strings, CVM's
    /// and CBS's as integers.
    pub(crate) string_paging: bool,
}

pub(crate) const CVM: Api = Api {
    service: "cvm",
    version: "2017-03-12",
    string_paging: false,
};
pub(crate) const VPC: Api = Api {
    service: "vpc",
    version: "2017-03-12",
    string_paging: true,
};
pub(crate) const CBS: Api = Api {
    service: "cbs",
    version: "2017-03-12",
    string_paging: false,
};
/// The Tag API (TagResources, https://www.tencentcloud.com/document/product/651/46533).
pub(crate) const TAG: Api = Api {
    service: "tag",
    version: "2018-08-13",
    string_paging: false,
};
/// STS (GetCallerIdentity, https://www.tencentcloud.com/document/product/1150/49453).
pub(crate) const STS: Api = Api {
    service: "sts",
    version: "2018-08-13",
    string_paging: false,
};

impl Api {
    /// A number for `Offset` / `Limit` in the form this API documents.
    fn number(self, n: usize) -> Value {
        if self.string_paging {
            json!(n.to_string())
        } else {
            json!(n)
        }
    }
}

/// Page size for Describe calls: the documented maximum `Limit` of
/// DescribeInstances, DescribeDisks, DescribeVpcs, DescribeSubnets,
/// DescribeSecurityGroups and DescribeDisasterRecoverGroups.
const PAGE: usize = 100;

/// A text field of an answer's object, empty when absent.
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The documented list `set_key` of a Describe answer.
pub(crate) fn documented_set(resp: &Value, action: &str, set_key: &str) -> Result<Vec<Value>> {
    resp.get(set_key)
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| undocumented(action, set_key))
}

/// The documented object `key` of a create answer, with its id field set.
pub(crate) fn documented_object(
    resp: &Value,
    action: &str,
    key: &str,
    id_key: &str,
) -> Result<Value> {
    resp.get(key)
        .filter(|v| !s(v, id_key).is_empty())
        .cloned()
        .ok_or_else(|| undocumented(action, &format!("{key}.{id_key}")))
}

/// The first id of a create answer's documented id list (`InstanceIdSet`,
/// `DiskIdSet`).
pub(crate) fn first_id(resp: &Value, action: &str, set_key: &str) -> Result<String> {
    resp.get(set_key)
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("{action} returned no id in `{set_key}`"),
            )
        })
}

/// Checks an endpoint override: an http(s) base URL with a host.
pub(crate) fn parse_endpoint(raw: &str) -> Result<reqwest::Url> {
    let url = reqwest::Url::parse(raw.trim()).map_err(|e| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{ENV_ENDPOINT} `{raw}` is not a URL ({e}); expected e.g. http://127.0.0.1:8080"
            ),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{ENV_ENDPOINT} `{raw}` must be an http(s) base URL such as http://127.0.0.1:8080"
            ),
        ));
    }
    Ok(url)
}

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
    ) -> Result<Client> {
        let http = gpuform_http::http_client(Some(concat!("gpuform/", env!("CARGO_PKG_VERSION"))))?;
        Ok(Client {
            http,
            creds,
            token,
            endpoint,
        })
    }

    /// The keys and session token, for the COS client.
    pub(crate) fn credentials(&self) -> (Credentials, Option<String>) {
        (self.creds.clone(), self.token.as_ref().map(|t| t.0.clone()))
    }

    /// The URL to POST to and the `Host` value that is signed.
    fn target(&self, service: &str) -> Result<(String, String)> {
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
        api: Api,
        action: &str,
        region: &str,
        body: &Value,
    ) -> Result<Value> {
        let (service, version) = (api.service, api.version);
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
        let what = format!("{action} ({service})");
        let got = exchange(rb.body(unsigned.body), &what, None).await?;
        let status = got.status;
        let text = String::from_utf8_lossy(&got.body);
        let parsed: Option<Value> = serde_json::from_slice(&got.body).ok();
        let Some(mut response) = parsed.and_then(|mut v| v.get_mut("Response").map(Value::take))
        else {
            let kind = if status >= 500 {
                ErrorKind::Transient
            } else if status == 429 {
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

    /// Every item of a paginated Describe call (Offset/Limit, `TotalCount`).
    pub(crate) async fn describe_all(
        &self,
        api: Api,
        action: &str,
        region: &str,
        mut body: Map<String, Value>,
        set_key: &str,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut offset = 0usize;
        loop {
            body.insert("Offset".into(), api.number(offset));
            body.insert("Limit".into(), api.number(PAGE));
            let resp = self
                .call(api, action, region, &Value::Object(body.clone()))
                .await?;
            let items = documented_set(&resp, action, set_key)?;
            let total =
                resp.get("TotalCount")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| undocumented(action, "TotalCount"))? as usize;
            let n = items.len();
            out.extend(items);
            offset += n;
            if n == 0 || offset >= total {
                return Ok(out);
            }
        }
    }

    /// Describe-by-ids in batches of `per_call`. A batch that fails with
    /// not-found (some APIs reject the whole request when one id is gone) is
    /// split in halves until the missing ids are isolated, so a deleted
    /// resource costs a few calls, not one per id.
    pub(crate) async fn describe_ids(
        &self,
        api: Api,
        action: &str,
        region: &str,
        (ids_key, set_key): (&str, &str),
        ids: &[String],
        per_call: usize,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut work: Vec<Vec<String>> = ids.chunks(per_call.max(1)).map(|c| c.to_vec()).collect();
        while let Some(batch) = work.pop() {
            let mut body = Map::new();
            body.insert(ids_key.into(), json!(batch));
            body.insert("Limit".into(), api.number(per_call));
            match self.call(api, action, region, &Value::Object(body)).await {
                Ok(resp) => out.extend(documented_set(&resp, action, set_key)?),
                Err(e) if e.kind == ErrorKind::NotFound => {
                    if batch.len() > 1 {
                        let (a, b) = batch.split_at(batch.len() / 2);
                        work.push(a.to_vec());
                        work.push(b.to_vec());
                    }
                }
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
    fn debug_hides_the_secret() {
        let c = Client::new(
            Credentials::new("AKIDtest", "very-secret-key"),
            Some(SessionToken("session-token-value".into())),
            None,
        )
        .unwrap();
        let d = format!("{c:?}");
        assert!(
            !d.contains("very-secret-key") && !d.contains("session-token-value"),
            "{d}"
        );
    }

    #[test]
    fn endpoint_override_is_checked() {
        assert!(parse_endpoint("http://127.0.0.1:8080").is_ok());
        assert!(parse_endpoint("127.0.0.1:8080").is_err());
        assert!(parse_endpoint("ftp://x").is_err());
    }
}
