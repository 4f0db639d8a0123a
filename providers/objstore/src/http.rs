//! One signed request of the dialect: virtual-hosted address, the cloud's
//! signer ([`crate::Signer`]), a retry of throttling and 5xx answers with a
//! short backoff, and the error XML (`<Error><Code>…`) read into a neutral
//! [`ProviderError`].

use crate::xml::Node;
use crate::ObjStore;
use base64::Engine as _;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
use gpuform_signing::Request;
use md5::{Digest, Md5};
use std::time::Duration;

/// A parsed endpoint override: where requests are sent (`http://127.0.0.1:8080`).
/// The `Host` header and the signature keep the cloud's own virtual host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub scheme: String,
    pub authority: String,
}

impl Endpoint {
    /// Parses `scheme://host[:port]` (a trailing `/` allowed); `what` names
    /// the setting in the error.
    pub fn parse(url: &str, what: &str) -> Result<Endpoint> {
        let bad = |why: &str| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{what} `{url}` {why} (expected a base URL like http://127.0.0.1:8080)"),
            )
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("has no scheme"))?;
        if scheme != "http" && scheme != "https" {
            return Err(bad("is not http(s)"));
        }
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() {
            return Err(bad("has no host"));
        }
        if authority.contains(['/', '?', '#', '@', ' ']) {
            return Err(bad("must be scheme://host[:port] only"));
        }
        Ok(Endpoint {
            scheme: scheme.to_string(),
            authority: authority.to_string(),
        })
    }
}

/// The HTTP client every cloud crate talks through: 10 s to connect, 60 s
/// for a whole request, and `user_agent` when the cloud's API wants one.
pub fn http_client(user_agent: Option<&str>) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60));
    if let Some(agent) = user_agent {
        builder = builder.user_agent(agent);
    }
    builder.build().map_err(|e| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("cannot build the HTTP client: {e}"),
        )
    })
}

/// What went wrong with a request that got no HTTP answer, in the same
/// words for every cloud (fixed words only: nothing from the request).
fn transport_failure(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "failed in transport"
    }
}

/// An HTTP answer read whole.
#[derive(Debug)]
pub struct Exchanged {
    pub status: u16,
    /// The value of the request id header asked for, when the cloud sent it.
    pub request_id: Option<String>,
    pub body: Vec<u8>,
}

/// Sends `rb` and reads its whole answer: the one exchange every cloud's
/// HTTP client makes. A request that got no answer, or whose answer was cut
/// short, is a transient error in the same words for every cloud: `what`,
/// [`transport_failure`], then the causes reqwest gives, never the URL (a
/// signed query carries the signature). `request_id_header` names the
/// header a cloud puts its request id in, for error messages.
pub async fn exchange(
    rb: reqwest::RequestBuilder,
    what: &str,
    request_id_header: Option<&str>,
) -> Result<Exchanged> {
    let failed = |e: reqwest::Error| {
        let mut text = format!("{what}: {}", transport_failure(&e));
        let mut cause = std::error::Error::source(&e);
        while let Some(inner) = cause {
            text = format!("{text}: {inner}");
            cause = inner.source();
        }
        ProviderError::new(ErrorKind::Transient, text)
    };
    let resp = rb.send().await.map_err(failed)?;
    let status = resp.status().as_u16();
    let request_id = request_id_header
        .and_then(|h| resp.headers().get(h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = resp.bytes().await.map_err(failed)?.to_vec();
    Ok(Exchanged {
        status,
        request_id,
        body,
    })
}

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
            None => (d.service_host)(region),
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
        let what = format!("{} {}", self.dialect.product, call.op);
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
        let mut e = ProviderError::new(kind, format!("{} {op}: {message}", self.dialect.product));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_errors_name_the_setting_and_the_fault() {
        let e = Endpoint::parse("https://127.0.0.1:9000/", "X").unwrap();
        assert_eq!(
            (e.scheme.as_str(), e.authority.as_str()),
            ("https", "127.0.0.1:9000")
        );
        let why = |url: &str| Endpoint::parse(url, "GPUFORM_X").unwrap_err().message;
        assert_eq!(
            why("http://"),
            "GPUFORM_X `http://` has no host (expected a base URL like http://127.0.0.1:8080)"
        );
        assert!(
            why("127.0.0.1").contains("has no scheme"),
            "{}",
            why("127.0.0.1")
        );
        assert!(why("ftp://h").contains("is not http(s)"));
        assert!(why("http://h/p").contains("must be scheme://host[:port] only"));
    }

    #[tokio::test]
    async fn a_refused_connection_is_named_in_fixed_words() {
        // A port that was just free: nothing listens there any more.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let http = http_client(Some("gpuform-test")).unwrap();
        let e = http
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(transport_failure(&e), "could not connect");

        // The exchange names the call and the failure, never the URL, whose
        // query may carry a signature.
        let rb = http.get(format!("http://127.0.0.1:{port}/?Signature=s3cr3t"));
        let e = exchange(rb, "OSS GetBucketInfo", Some("x-oss-request-id"))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Transient);
        let text = e.message;
        let named = text.starts_with("OSS GetBucketInfo: could not connect");
        let leaks = text.contains("s3cr3t") || text.contains("127.0.0.1");
        assert!(named && !leaks, "{text}");
    }

    /// A whole answer: status, the named request id header, every byte.
    #[tokio::test]
    async fn an_answer_is_read_whole_with_its_request_id() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf).unwrap();
            let answer = "HTTP/1.1 503 Service Unavailable\r\nx-obs-request-id: R-9\r\n\
                          content-length: 4\r\nconnection: close\r\n\r\nbusy";
            conn.write_all(answer.as_bytes()).unwrap();
        });
        let http = http_client(None).unwrap();
        let rb = http.get(format!("http://127.0.0.1:{port}/"));
        let got = exchange(rb, "OBS HeadBucket", Some("x-obs-request-id"))
            .await
            .unwrap();
        server.join().unwrap();
        assert_eq!(got.status, 503);
        assert_eq!(got.request_id.as_deref(), Some("R-9"));
        assert_eq!(got.body, b"busy");
    }
}
