//! `gpuform reconcile --metrics-listen ADDR`: the reconciler's figures in the
//! Prometheus text exposition format (version 0.0.4), for a scraper or a
//! `curl`. Served by hyper's HTTP/1 server; any path answers.

use crate::engine::reconcile::{Cause, Pass};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// What the loop has done so far. Counters only grow; gauges are the last pass's.
#[derive(Debug, Default)]
pub struct Metrics {
    passes: u64,
    errors: u64,
    repairs: BTreeMap<&'static str, u64>,
    pending: u64,
    postponed: u64,
    nodes: BTreeMap<String, (u32, u32)>,
    /// Seconds since the epoch of the last pass that ended without an error.
    last_success: Option<u64>,
}

pub type Shared = Arc<Mutex<Metrics>>;

impl Metrics {
    /// A pass that ended at `now` (seconds since the epoch).
    pub fn record_pass(&mut self, pass: &Pass, ok: bool, now: u64) {
        self.passes += 1;
        for r in &pass.repairs {
            *self.repairs.entry(r.cause.as_str()).or_default() += 1;
        }
        self.pending = pass.pending.len() as u64;
        self.postponed = pass.postponed.len() as u64;
        self.nodes = pass
            .nodes
            .iter()
            .map(|(c, n)| (c.clone(), (n.desired, n.running)))
            .collect();
        if ok {
            self.last_success = Some(now);
        } else {
            self.errors += 1;
        }
    }

    pub fn record_error(&mut self) {
        self.errors += 1;
    }

    /// The exposition text: each family's HELP and TYPE, then its samples.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, u64)>| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in samples {
                let _ = writeln!(out, "{name}{labels} {v}");
            }
        };
        let plain = |v: u64| vec![(String::new(), v)];
        let per_cluster = |pick: fn(&(u32, u32)) -> u32| {
            self.nodes
                .iter()
                .map(|(c, n)| (format!("{{cluster=\"{}\"}}", escape(c)), u64::from(pick(n))))
                .collect()
        };
        family(
            "gpuform_reconcile_passes_total",
            "counter",
            "Reconcile passes run (each refreshes, plans and applies the repairs).",
            plain(self.passes),
        );
        family(
            "gpuform_reconcile_errors_total",
            "counter",
            "Passes that failed, or whose repairs failed.",
            plain(self.errors),
        );
        family(
            "gpuform_reconcile_repairs_total",
            "counter",
            "Changes made by reconcile, by cause (reclaimed, deleted, drift, interrupted, leftover, expired, back-to-spot).",
            CAUSES
                .iter()
                .map(|c| {
                    let n = self.repairs.get(c.as_str()).copied().unwrap_or(0);
                    (format!("{{cause=\"{}\"}}", c.as_str()), n)
                })
                .collect(),
        );
        family(
            "gpuform_reconcile_pending_review",
            "gauge",
            "Changes the last pass left for a person's apply.",
            plain(self.pending),
        );
        family(
            "gpuform_reconcile_postponed",
            "gauge",
            "Disruptive changes the last pass postponed to their cluster's maintenance window.",
            plain(self.postponed),
        );
        family(
            "gpuform_reconcile_nodes_desired",
            "gauge",
            "Nodes the spec asks for, per cluster.",
            per_cluster(|n| n.0),
        );
        family(
            "gpuform_reconcile_nodes_running",
            "gauge",
            "Nodes found running at the last pass (before its repairs), per cluster.",
            per_cluster(|n| n.1),
        );
        family(
            "gpuform_reconcile_last_success_timestamp_seconds",
            "gauge",
            "When the last pass without an error ended (Unix time).",
            self.last_success.map(plain).unwrap_or_default(),
        );
        out
    }
}

const CAUSES: [Cause; 7] = [
    Cause::Reclaimed,
    Cause::Deleted,
    Cause::Drift,
    Cause::Interrupted,
    Cause::Leftover,
    Cause::Expired,
    Cause::BackToSpot,
];

/// Label values escape `\`, `"` and newlines.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Binds `addr` (an error now, before the first pass, if it cannot) and
/// serves the figures until the process ends.
pub async fn serve(addr: SocketAddr, metrics: Shared) -> Result<(), std::io::Error> {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of file descriptors and the like: wait, not spin.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            };
            let metrics = metrics.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_req| {
                    let body = metrics
                        .lock()
                        .map(|m| m.render())
                        .unwrap_or_else(|e| e.into_inner().render());
                    async move {
                        hyper::Response::builder()
                            .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                            .body(Full::new(Bytes::from(body)))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                // A scraper that hangs up mid-answer is not our error.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::reconcile::{NodeCount, Repair};
    use crate::plan::Action;

    #[test]
    fn families_come_with_their_samples_and_counters_grow() {
        let mut m = Metrics::default();
        let mut pass = Pass::default();
        pass.repairs.push(Repair {
            address: "cluster.a.node[0]".into(),
            id: None,
            action: Action::Create,
            cause: Cause::Reclaimed,
            why: String::new(),
        });
        pass.nodes.insert(
            "a\"b".into(),
            NodeCount {
                desired: 4,
                running: 3,
            },
        );
        m.record_pass(&pass, true, 1_700_000_000);
        m.record_pass(&pass, false, 1_700_000_060);
        let text = m.render();
        assert!(
            text.contains("gpuform_reconcile_passes_total 2\n"),
            "{text}"
        );
        assert!(
            text.contains("gpuform_reconcile_last_success_timestamp_seconds 1700000000\n"),
            "{text}"
        );
        assert!(
            text.contains("gpuform_reconcile_errors_total 1\n"),
            "{text}"
        );
        assert!(
            text.contains("gpuform_reconcile_repairs_total{cause=\"reclaimed\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("gpuform_reconcile_nodes_running{cluster=\"a\\\"b\"} 3\n"),
            "{text}"
        );
        // Every sample follows its own family's TYPE line.
        let mut family = "";
        for line in text.lines() {
            if let Some(t) = line.strip_prefix("# TYPE ") {
                family = t.split_whitespace().next().unwrap();
            } else if !line.starts_with('#') {
                assert!(line.starts_with(family), "{line} outside {family}:\n{text}");
            }
        }
    }
}
