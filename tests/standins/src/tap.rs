//! A recording TCP proxy for tests: put it between a provider and a
//! stand-in to see each request exactly as it went on the wire (header
//! names in their case and order, raw path and query, body bytes), while the
//! stand-in still answers it. Bytes are forwarded untouched, so `Host` and
//! the signature stay valid.
//!
//! Requests are HTTP/1.1 with a `Content-Length` body (what reqwest sends
//! for a byte body); a chunked request is recorded without its body.

use crate::verify::WireRequest;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct Tap {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<WireRequest>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Tap {
    /// Listens on a free 127.0.0.1 port and forwards every connection to
    /// `upstream` (`http://127.0.0.1:PORT`, a stand-in's endpoint).
    pub fn start(upstream: &str) -> Tap {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("upstream is http://IP:PORT");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread_log = log.clone();
        let thread = std::thread::Builder::new()
            .name("wire-tap".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                rt.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("tokio listener");
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            accepted = listener.accept() => {
                                let Ok((client, _)) = accepted else { continue };
                                tokio::spawn(relay(client, upstream, thread_log.clone()));
                            }
                        }
                    }
                });
            })
            .expect("spawn the tap thread");
        Tap {
            addr,
            log,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`: give this to the provider instead of the stand-in's.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every complete request seen so far, in arrival order.
    pub fn requests(&self) -> Vec<WireRequest> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Copies one connection both ways, parsing what the client sends.
async fn relay(client: TcpStream, upstream: SocketAddr, log: Arc<Mutex<Vec<WireRequest>>>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut client_rd, mut client_wr) = client.into_split();
    let (mut server_rd, mut server_wr) = server.into_split();
    let answers = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut server_rd, &mut client_wr).await;
        let _ = client_wr.shutdown().await;
    });
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match client_rd.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        // Record before forwarding: the request is complete once its last
        // byte has arrived, and the answer cannot come earlier.
        while let Some((req, used)) = parse_one(&pending) {
            log.lock().unwrap_or_else(|p| p.into_inner()).push(req);
            pending.drain(..used);
        }
        if server_wr.write_all(&chunk[..n]).await.is_err() {
            break;
        }
    }
    let _ = server_wr.shutdown().await;
    let _ = answers.await;
}

/// One complete request at the start of `buf` and the bytes it used.
fn parse_one(buf: &[u8]) -> Option<(WireRequest, usize)> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut start = lines.next()?.split(' ');
    let (method, target) = (start.next()?, start.next()?);
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    if buf.len() < head_end + length {
        return None;
    }
    let body = buf[head_end..head_end + length].to_vec();
    Some((
        WireRequest::from_target(method, target, headers, body),
        head_end + length,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pipelined_requests() {
        let raw = b"POST /?a=b HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}GET /x HTTP/1.1\r\nHost: h\r\n\r\nPOST";
        let (a, used) = parse_one(raw).unwrap();
        assert_eq!(
            (a.method.as_str(), a.query.as_str(), a.body.as_slice()),
            ("POST", "a=b", &b"{}"[..])
        );
        assert_eq!(a.headers[0], ("Host".to_string(), "h".to_string()));
        let (b, used2) = parse_one(&raw[used..]).unwrap();
        assert_eq!((b.method.as_str(), b.path.as_str()), ("GET", "/x"));
        assert!(parse_one(&raw[used + used2..]).is_none());
    }
}
