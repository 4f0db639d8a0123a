//! Prints the sandbox's figures: time for N creates at zero latency, batched
//! reads, reopen (replay), log size and the memory the inventory holds.
//!
//! `cargo run --release -p gpuform-sandbox --example sandbox_bench [N]`
//! (default N = 5000, three runs since a shared machine is noisy; then a
//! run with 10,000 resources for memory).

use gpuform_catalog::Catalog;
use gpuform_provider::{Attrs, Cloud, CreateRequest, OwnershipTags, ResourceKind, Scope};
use gpuform_sandbox::{Faults, SandboxCloud, INVENTORY_FILE};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

/// Counts live heap bytes.
struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}
#[global_allocator]
static A: Counting = Counting;

fn req(
    kind: ResourceKind,
    region: &str,
    attrs: serde_json::Value,
    refs: &[(&str, &str)],
    addr: &str,
) -> CreateRequest {
    CreateRequest {
        kind,
        scope: Scope {
            region: region.to_string(),
        },
        attrs: match attrs {
            serde_json::Value::Object(m) => m.into_iter().collect::<Attrs>(),
            _ => Attrs::new(),
        },
        refs: refs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ownership: OwnershipTags {
            project: "bench".into(),
            address: addr.into(),
            token: format!("7f3c2a10-{addr}-token"),
            lineage: "5b1e9d2c-lineage".into(),
            workspace: None,
        },
    }
}

/// This thread's time on a CPU, in ns (Linux), which unlike wall time does
/// not count waiting for a CPU that other work on the machine holds.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let cat = Catalog::builtin();
    let region = cat
        .regions(Cloud::Aws)
        .first()
        .map(|r| r.name.clone())
        .unwrap_or_default();
    let zone = cat
        .region(Cloud::Aws, &region)
        .and_then(|r| r.zones.first().cloned())
        .unwrap_or_default();
    let ty = cat
        .offerings()
        .iter()
        .find(|o| o.cloud == Cloud::Aws && o.region == region)
        .map(|o| o.instance_type.clone())
        .unwrap_or_default();

    for (label, count) in [
        ("run 1", n),
        ("run 2", n),
        ("run 3", n),
        ("10k run", 10_000),
    ] {
        let dir = std::env::temp_dir().join(format!(
            "gpuform-sandbox-bench-{}-{count}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mem0 = LIVE.load(Ordering::Relaxed);
        let sb = SandboxCloud::open(&dir, Faults::default()).expect("open");
        let p = sb.provider(Cloud::Aws);
        let t = Instant::now();
        let net = p
            .create(&req(
                ResourceKind::Network,
                &region,
                json!({"cidr": "10.0.0.0/16"}),
                &[],
                "net",
            ))
            .await
            .expect("net")
            .id;
        let sub = p
            .create(&req(
                ResourceKind::Subnet,
                &region,
                json!({"cidr": "10.0.0.0/20", "zone": zone}),
                &[("network", &net)],
                "sub",
            ))
            .await
            .expect("sub")
            .id;
        let fw = p
            .create(&req(ResourceKind::Firewall, &region, json!({"ingress": [{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}]}), &[("network", &net)], "fw"))
            .await
            .expect("fw")
            .id;
        let create_first3 = t.elapsed();
        // Requests are built before the clock starts: only the calls are timed.
        let reqs: Vec<CreateRequest> = (3..count)
            .map(|i| {
                req(
                    ResourceKind::Instance,
                    &region,
                    json!({"instance_type": ty, "zone": zone, "image": "ubuntu-22.04-cuda", "pricing": "on-demand",
                           "root_gb": 500, "rdma": true, "tags": {"team": "research", "cluster": "trainer"}}),
                    &[("subnet", &sub), ("firewall", &fw)],
                    &format!("cluster.trainer.node[{i}]"),
                )
            })
            .collect();
        let t = Instant::now();
        let cpu0 = cpu_ns();
        let mut ids = Vec::with_capacity(count);
        for r in &reqs {
            ids.push(p.create(r).await.expect("instance").id);
        }
        let create = t.elapsed() + create_first3;
        let cpu = cpu0.zip(cpu_ns()).map(|(a, b)| (b - a) as f64 / 1e6);
        drop(reqs);
        let mem = LIVE.load(Ordering::Relaxed) - mem0;
        let t = Instant::now();
        let read = p
            .read(
                &Scope {
                    region: region.clone(),
                },
                ResourceKind::Instance,
                &ids,
            )
            .await
            .expect("read");
        let read_t = t.elapsed();
        let t = Instant::now();
        let owned = p
            .list_owned(
                &Scope {
                    region: region.clone(),
                },
                "bench",
            )
            .await
            .expect("list");
        let list_t = t.elapsed();
        drop(read);
        drop(owned);
        let log = std::fs::metadata(dir.join(INVENTORY_FILE))
            .map(|m| m.len())
            .unwrap_or(0);
        drop(p);
        drop(sb);
        let t = Instant::now();
        let sb = SandboxCloud::open(&dir, Faults::default()).expect("reopen");
        let reopen = t.elapsed();
        let live = sb.list_all().len();
        println!(
            "{label}: {count} creates (zero latency, sequential) {:.1} ms wall ({:.1} us/create), \
             {} on CPU; \
             read {} ids {:.1} ms; list_owned {:.1} ms; reopen+replay {:.1} ms; log {:.1} MB; \
             inventory heap {:.1} MB ({} B/resource); live {live}",
            create.as_secs_f64() * 1e3,
            create.as_secs_f64() * 1e6 / count as f64,
            cpu.map_or("?".to_string(), |c| format!("{c:.1} ms")),
            ids.len(),
            read_t.as_secs_f64() * 1e3,
            list_t.as_secs_f64() * 1e3,
            reopen.as_secs_f64() * 1e3,
            log as f64 / 1e6,
            mem as f64 / 1e6,
            mem / count as isize,
        );
        drop(sb);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
