//! One signed request of the dialect: virtual-hosted address, the cloud's
//! signer ([`crate::Signer`]), a retry of throttling and 5xx answers with a
//! short backoff, and the error XML (`<Error><Code>…`) read into a neutral
//! [`ProviderError`].

use crate::xml::Node;
use crate::ObjStore;
use base64::Engine as _;
use gpuform_http::exchange;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
use gpuform_signing::Request;
use md5::{Digest, Md5};

/// One request: the operation's name (for errors and logs), the bucket it
/// addresses (`None`: the service, ListBuckets), query, extra headers and
/// an XML body.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub op: &'static str,
    pub method: &'static str,
    pub bucket: Option<String>,
    /// The object the call names (`/<key>`); `None` for bucket calls.
    pub key: Option<String>,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Node>,
}

impl Call {
    pub fn new(op: &'static str, method: &'static str, bucket: &str) -> Call {
        Call {
            op,
            method,
            bucket: Some(bucket.to_string()),
            key: None,
            query: Vec::new(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// The call names an object of the bucket (`/<key>`).
    pub fn object(mut self, key: &str) -> Call {
        self.key = Some(key.to_string());
        self
    }

    /// A sub-resource (`?tagging`): a query parameter with an empty value.
    pub fn sub(mut self, name: &str) -> Call {
        self.query.push((name.to_string(), String::new()));
        self
    }

    pub fn query(mut self, k: &str, v: impl Into<String>) -> Call {
        self.query.push((k.to_string(), v.into()));
        self
    }

    pub fn header(mut self, k: impl Into<String>, v: impl Into<String>) -> Call {
        self.headers.push((k.into(), v.into()));
        self
    }

    pub fn body(mut self, node: Node) -> Call {
        self.body = Some(node);
        self
    }
}

/// A 2xx answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as XML; an answer whose body its reference documents but
    /// that is not XML is a transient error, never "nothing there".
    pub fn xml(&self, op: &str) -> Result<Node> {
        Node::parse(&self.body).map_err(|e| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("{op} answered with a body that is not the documented XML ({e})"),
            )
        })
    }
}

pub(crate) const USER_AGENT: &str = concat!("gpuform/", env!("CARGO_PKG_VERSION"));

impl ObjStore {
    /// Sends `call` to `region`, retrying throttled and transient failures
    /// up to [`ObjStore::with_retries`] times.
    pub(crate) async fn send(&self, region: &str, call: &Call) -> Result<Answer> {
        let mut attempt = 0u32;
        let mut wait =
            gpuform_provider::Backoff::new(self.backoff, std::time::Duration::from_secs(60));
        loop {
            match self.send_once(region, call).await {
                Err(e)
                    if matches!(e.kind, ErrorKind::Throttled | ErrorKind::Transient)
                        && attempt < self.retries =>
                {
                    attempt += 1;
                    tracing::debug!(op = call.op, attempt, kind = %e.kind, "object storage call retried");
                    wait.sleep().await;
                }
                other => return other,
            }
        }
    }

    async fn send_once(&self, region: &str, call: &Call) -> Result<Answer> {
        let d = &self.dialect;
        let host = match &call.bucket {
            Some(b) => d.bucket_host(region, b),
            None => (d.service.host)(region),
        };
        let path = format!("/{}", call.key.as_deref().unwrap_or_default());
        let mut req = Request::new(call.method, host.clone(), path);
        req.query = call.query.clone();
        req.headers = call.headers.clone();
        req.headers
            .push(("user-agent".to_string(), USER_AGENT.to_string()));
        let body = call.body.as_ref().map(Node::to_xml).unwrap_or_default();
        if call.body.is_some() {
            let md5 = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&body));
            req.headers
                .push(("content-type".to_string(), "application/xml".to_string()));
            req.headers.push(("content-md5".to_string(), md5));
        }
        req.body = body;
        self.signer
            .sign(&mut req, region, call.bucket.as_deref())
            .map_err(|e| {
                ProviderError::new(ErrorKind::Invalid, format!("cannot sign {}: {e}", call.op))
            })?;
        let (scheme, authority) = match &self.endpoint {
            Some(e) => (e.scheme.as_str(), e.authority.as_str()),
            None => ("https", host.as_str()),
        };
        let url = format!("{scheme}://{authority}{}", req.encoded_target());
        let method = reqwest::Method::from_bytes(call.method.as_bytes()).map_err(|_| {
            ProviderError::new(ErrorKind::Invalid, format!("bad method {}", call.method))
        })?;
        let mut b = self
            .http
            .request(method, &url)
            .header("host", host.as_str());
        for (n, v) in &req.headers {
            b = b.header(n.as_str(), v.as_str());
        }
        tracing::debug!(op = call.op, region, host = %host, "object storage call");
        let what = format!("{} {}", self.dialect.service.product, call.op);
        let id_header = format!("{}request-id", d.header_prefix);
        let got = exchange(b.body(req.body), &what, Some(&id_header)).await?;
        if (200..300).contains(&got.status) {
            return Ok(Answer { body: got.body });
        }
        Err(self.error(call.op, got.status, &got.body, got.request_id))
    }

    /// The neutral error of an error answer.
    pub(crate) fn error(
        &self,
        op: &str,
        status: u16,
        body: &[u8],
        request_id: Option<String>,
    ) -> ProviderError {
        let doc = Node::parse(body).ok().filter(|n| n.name == "Error");
        let code = doc
            .as_ref()
            .and_then(|n| n.text_of("Code"))
            .map(str::to_string);
        let message = doc
            .as_ref()
            .and_then(|n| n.text_of("Message"))
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| format!("HTTP {status}"));
        let kind = self.dialect.classify(code.as_deref(), status);
        let mut e = ProviderError::new(
            kind,
            format!("{} {op}: {message}", self.dialect.service.product),
        );
        if let Some(c) = code {
            e = e.with_code(c);
        }
        if let Some(r) = request_id.or_else(|| {
            doc.as_ref()
                .and_then(|n| n.text_of("RequestId"))
                .map(str::to_string)
        }) {
            e = e.with_request_id(r);
        }
        e
    }
}
