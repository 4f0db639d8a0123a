//! Scale benchmark: generated specs of 1k–50k resources on the sandbox cloud.
//! Prints plan time, apply time and peak memory (max RSS) of the real
//! `gpuform` binary, plus the latency scenario (50 ms per API call, a DAG of
//! depth 4) against its critical path. Not a test: it asserts nothing.
//!
//!   cargo bench --bench scale            # all sizes
//!   cargo bench --bench scale -- 5000    # one size

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A spec with `clusters` clusters of `nodes` nodes each, every node with a
/// data volume: 4 + 2 × nodes resources per cluster.
fn spec(clusters: usize, nodes: usize, data_volume: bool) -> String {
    let mut s = String::from("project: bench\nclusters:\n");
    for c in 0..clusters {
        s.push_str(&format!(
            "  c{c}:\n    cloud: aws\n    region: us-east-1\n    nodes: {nodes}\n    gpu: A100-80GB:8\n    interconnect: nvlink\n    fabric: rdma\n"
        ));
        if data_volume {
            s.push_str("    disk:\n      root_gb: 200\n      data_gb: 1000\n");
        }
    }
    s
}

struct Run {
    wall: Duration,
    max_rss_kib: i64,
    stdout: String,
}

/// Runs gpuform and measures its wall time and peak RSS (from wait4's rusage).
fn gpuform(dir: &Path, args: &[&str], faults: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuform"));
    cmd.args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1");
    match faults {
        Some(f) => cmd.env("GPUFORM_SANDBOX_FAULTS", f),
        None => cmd.env_remove("GPUFORM_SANDBOX_FAULTS"),
    };
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn gpuform");
    let pid = child.id() as libc::pid_t;
    // Read output on threads so that a full pipe cannot block the child.
    let mut child = child;
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(r, pid, "wait4");
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    if !(libc::WIFEXITED(status) && matches!(libc::WEXITSTATUS(status), 0 | 2)) {
        panic!("gpuform {args:?} failed:\n{stderr}");
    }
    Run {
        wall,
        max_rss_kib: usage.ru_maxrss,
        stdout,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let only: Option<usize> = std::env::args().skip(1).find_map(|a| a.parse().ok());
    println!(
        "gpuform scale benchmark (sandbox cloud, zero latency unless stated; {} cores)",
        num_cpus()
    );
    println!(
        "{:>8} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "target", "resources", "plan ms", "plan MiB", "apply ms", "apply MiB", "replan ms"
    );
    for target in [1_000usize, 5_000, 10_000, 50_000] {
        if only.is_some_and(|o| o != target) {
            continue;
        }
        // 10 clusters; nodes chosen so that 10 × (4 + 2 × nodes) ≈ target.
        let nodes = (target / 10 - 4) / 2;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("spec.yaml"), spec(10, nodes, true)).expect("write spec");
        let plan = gpuform(
            dir.path(),
            &["plan", "spec.yaml", "--sandbox", "--json"],
            None,
        );
        let plan_json: serde_json::Value = serde_json::from_str(&plan.stdout).expect("plan json");
        let resources = plan_json["changes"]
            .as_array()
            .map(|a| a.len())
            .unwrap_or(0);
        let apply = gpuform(
            dir.path(),
            &[
                "apply",
                "spec.yaml",
                "--sandbox",
                "--auto-approve",
                "--quiet",
                "--parallelism",
                "256",
            ],
            None,
        );
        let replan = gpuform(
            dir.path(),
            &[
                "plan",
                "spec.yaml",
                "--sandbox",
                "--detailed-exitcode",
                "--quiet",
            ],
            None,
        );
        println!(
            "{:>8} {:>10} {:>12.1} {:>12.1} {:>12.1} {:>12.1} {:>12.1}",
            target,
            resources,
            ms(plan.wall),
            plan.max_rss_kib as f64 / 1024.0,
            ms(apply.wall),
            apply.max_rss_kib as f64 / 1024.0,
            ms(replan.wall)
        );
    }

    if only.is_none() || only == Some(500) {
        // Latency scenario: 50 ms per API call; network → subnet/firewall →
        // node → volume is a DAG of depth 4, so the critical path is 4 × 50 ms.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("spec.yaml"), spec(5, 48, true)).expect("write spec");
        let apply = gpuform(
            dir.path(),
            &[
                "apply",
                "spec.yaml",
                "--sandbox",
                "--auto-approve",
                "--json",
                "--parallelism",
                "1024",
            ],
            Some("latency=50ms"),
        );
        let v: serde_json::Value = serde_json::from_str(&apply.stdout).expect("apply json");
        let n = v["plan"]["changes"]
            .as_array()
            .map(|a| a.len())
            .unwrap_or(0);
        let walk = v["elapsed_ms"].as_f64().unwrap_or(f64::NAN);
        println!(
            "\nlatency 50 ms/call, depth-4 DAG, {n} resources: DAG walk {walk:.0} ms = {:.2} × critical path (200 ms); whole command {:.0} ms",
            walk / 200.0,
            ms(apply.wall)
        );
    }
}

fn num_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
