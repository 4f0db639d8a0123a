//! Forwarding to moto: the request as it came (method, path and query,
//! headers, body), the answer as moto gave it. Only the hop-by-hop headers
//! of the connection (RFC 9110 section 7.6.1) and the body length, which
//! the client recomputes, are left to the HTTP client.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// Headers that belong to one connection, not to the request.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
];

pub(super) struct Upstream {
    base: String,
    http: reqwest::Client,
}

impl Upstream {
    pub(super) fn new(url: &str) -> Upstream {
        Upstream {
            base: url.trim_end_matches('/').to_string(),
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("an HTTP client"),
        }
    }

    pub(super) async fn send(
        &self,
        method: Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Response {
        match self.exchange(method, uri, headers, body).await {
            Ok(answer) => answer.into_response(),
            Err(failed) => failed,
        }
    }

    /// The request forwarded, moto's answer read whole (for the actions
    /// whose answer the stand-in reads), or the failure as an answer.
    pub(super) async fn exchange(
        &self,
        method: Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<(StatusCode, HeaderMap, Bytes), Response> {
        let target = uri.path_and_query().map(|pq| pq.as_str()).unwrap_or("/");
        let mut out = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            if !is_hop_by_hop(name) {
                out.append(name.clone(), value.clone());
            }
        }
        let sent = self
            .http
            .request(method, format!("{}{target}", self.base))
            .headers(out)
            .body(body)
            .send()
            .await;
        let answer = match sent {
            Ok(a) => a,
            Err(e) => {
                return Err((
                    StatusCode::BAD_GATEWAY,
                    format!("the stand-in could not reach moto: {e}"),
                )
                    .into_response())
            }
        };
        let status = answer.status();
        let mut back = HeaderMap::new();
        for (name, value) in answer.headers() {
            if !is_hop_by_hop(name) {
                back.append(name.clone(), value.clone());
            }
        }
        match answer.bytes().await {
            Ok(bytes) => Ok((status, back, bytes)),
            Err(e) => Err((
                StatusCode::BAD_GATEWAY,
                format!("moto's answer broke off: {e}"),
            )
                .into_response()),
        }
    }
}

fn is_hop_by_hop(name: &HeaderName) -> bool {
    HOP_BY_HOP.contains(&name.as_str())
}
