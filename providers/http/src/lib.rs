//! The HTTP client every cloud crate's API client talks through (Alibaba,
//! Tencent and Huawei's APIs, and their object stores): one configuration
//! (timeouts, user agent), one exchange that reads an answer whole, and one
//! wording for a request that got no answer, which never holds the URL (a
//! signed query carries the signature). What to send and how to sign it is
//! each cloud's; this crate only carries it.

use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
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
