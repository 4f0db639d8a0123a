//! A counting HTTP proxy in front of moto: it forwards every request and,
//! at call number `kill_at`, lets the call reach moto and be done there,
//! then SIGKILLs the victim before it reads the answer. Never armed
//! (`kill_at` 0), it only counts: `audit_moto` counts list calls with it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

pub struct Proxy {
    pub url: String,
    pub calls: Arc<AtomicU64>,
    kill_at: Arc<AtomicU64>,
    victim: Arc<AtomicU32>,
    pub killed: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: &str) -> Proxy {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let p = Proxy {
            url,
            calls: Arc::new(AtomicU64::new(0)),
            kill_at: Arc::new(AtomicU64::new(0)),
            victim: Arc::new(AtomicU32::new(0)),
            killed: Arc::new(AtomicBool::new(false)),
        };
        let (calls, kill_at, victim, killed) = (
            p.calls.clone(),
            p.kill_at.clone(),
            p.victim.clone(),
            p.killed.clone(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (upstream, calls, kill_at, victim, killed) = (
                    upstream.clone(),
                    calls.clone(),
                    kill_at.clone(),
                    victim.clone(),
                    killed.clone(),
                );
                std::thread::spawn(move || {
                    let _ = serve(conn, &upstream, &calls, &kill_at, &victim, &killed);
                });
            }
        });
        p
    }

    /// Arms the proxy for one run: count from zero, kill at call `n`
    /// (0: never) the process `pid`.
    pub fn arm(&self, n: u64) {
        self.calls.store(0, Ordering::SeqCst);
        self.killed.store(false, Ordering::SeqCst);
        self.victim.store(0, Ordering::SeqCst);
        self.kill_at.store(n, Ordering::SeqCst);
    }

    pub fn set_victim(&self, pid: u32) {
        self.victim.store(pid, Ordering::SeqCst);
    }

    /// Runs `cmd` with the proxy armed to kill it after call `n`, then
    /// disarms it. A run that finishes was not killed and made `n - 1`
    /// calls (N was past its last call): `Some(calls)`. Any other run died
    /// by SIGKILL: `None`. `phase` names the run in a failure.
    pub fn run_armed(&self, n: u64, mut cmd: Command, phase: &str) -> Option<u64> {
        self.arm(n);
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run gpuform");
        self.set_victim(child.id());
        let out = child.wait_with_output().expect("wait for gpuform");
        let calls = self.calls.load(Ordering::SeqCst);
        let killed = self.killed.load(Ordering::SeqCst);
        self.arm(0);
        if out.status.success() {
            assert!(!killed, "{phase}: succeeded although killed");
            assert_eq!(
                n,
                calls + 1,
                "{phase}: the run made {calls} calls, yet N={n} was not reached before"
            );
            return Some(calls);
        }
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{phase} N={n}: expected death by SIGKILL, got {:?}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        None
    }
}

fn serve(
    mut client: TcpStream,
    upstream: &str,
    calls: &AtomicU64,
    kill_at: &AtomicU64,
    victim: &AtomicU32,
    killed: &AtomicBool,
) -> std::io::Result<()> {
    let request = read_message(&mut client)?;
    if killed.load(Ordering::SeqCst) {
        return Ok(()); // the victim is dead; nothing after its last call
    }
    let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
    let mut up = TcpStream::connect(upstream)?;
    up.write_all(&close_after(&request))?;
    let response = read_message(&mut up)?;
    if n == kill_at.load(Ordering::SeqCst) {
        // moto has done call N; the victim must never hear of it.
        let mut pid = victim.load(Ordering::SeqCst);
        while pid == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            pid = victim.load(Ordering::SeqCst);
        }
        killed.store(true, Ordering::SeqCst);
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        return Ok(());
    }
    client.write_all(&close_after(&response))?;
    Ok(())
}

/// One HTTP/1.1 message: head, then a Content-Length body (or all until
/// EOF: every exchange is `Connection: close`).
fn read_message(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let k = s.read(&mut chunk)?;
        if k == 0 {
            return Ok(buf);
        }
        buf.extend_from_slice(&chunk[..k]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    match length {
        Some(len) => {
            while buf.len() < head_end + len {
                let k = s.read(&mut chunk)?;
                if k == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..k]);
            }
        }
        None if head.starts_with("http/") => {
            s.read_to_end(&mut buf)?;
        }
        None => {}
    }
    Ok(buf)
}

/// The message with `Connection: close`, so that each call is one
/// connection (and counted once).
fn close_after(msg: &[u8]) -> Vec<u8> {
    let Some(head_end) = msg.windows(4).position(|w| w == b"\r\n\r\n") else {
        return msg.to_vec();
    };
    let head = String::from_utf8_lossy(&msg[..head_end]);
    let mut out = String::new();
    for line in head.split("\r\n") {
        if line.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut v = out.into_bytes();
    v.extend_from_slice(&msg[head_end + 4..]);
    v
}
