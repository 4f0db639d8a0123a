//! Shared by the moto tests: the provider against moto, unique names per
//! test, request builders, a network to put things in, and a counting proxy
//! that shows the requests as sent.
//!
//! Start the server with `scripts/moto.sh` and export what it prints:
//!
//!     export GPUFORM_TEST_MOTO_URL=$(scripts/moto.sh 5555)
//!
//! Without GPUFORM_TEST_MOTO_URL these tests fail (they never pass silently).
//! Every test uses its own project name, so they can share one server.
//!
//! moto does not implement placement groups (HTTP 500), so the provider is
//! built with `with_placement_groups(false)` here and placement groups are
//! covered by unit tests of the built request instead.

// Each test file uses a part of this module.
#![allow(dead_code)]

use aws_sdk_ec2::Client;
use gpuform_aws::AwsProvider;
use gpuform_provider::{
    Attrs, CreateRequest, ObservedResource, OwnershipTags, Provider, ProviderError, ResourceKind,
    Scope,
};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const REGION: &str = "us-east-1";
pub const ZONE: &str = "us-east-1a";

pub fn moto_url() -> String {
    match std::env::var("GPUFORM_TEST_MOTO_URL") {
        Ok(u) if !u.trim().is_empty() => u.trim().to_string(),
        _ => panic!(
            "GPUFORM_TEST_MOTO_URL is not set: these tests need moto's EC2 server. \
             Run `export GPUFORM_TEST_MOTO_URL=$(scripts/moto.sh 5555)` from the repo root, then the tests again."
        ),
    }
}

/// Test credentials only: whatever the developer's environment holds must
/// never be used (or sent) by these tests.
pub fn test_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
        std::env::remove_var("AWS_SESSION_TOKEN");
        std::env::remove_var("AWS_PROFILE");
        std::env::set_var("AWS_REGION", REGION);
        std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
        std::env::set_var("AWS_CONFIG_FILE", "/nonexistent/gpuform-test-aws-config");
        std::env::set_var(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/gpuform-test-aws-credentials",
        );
    });
}

pub async fn provider_at(url: &str) -> AwsProvider {
    test_env();
    AwsProvider::from_env(Some(url.to_string()))
        .await
        .expect("provider")
        .with_placement_groups(false)
}

pub async fn provider() -> AwsProvider {
    provider_at(&moto_url()).await
}

pub fn scope() -> Scope {
    Scope {
        region: REGION.to_string(),
    }
}

pub fn unique_project(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{name}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// A distinct /16 per test, so CIDRs never conflict on a shared server.
pub fn unique_cidr() -> (String, String) {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = 10 + (std::process::id() % 50) * 4 + N.fetch_add(1, Ordering::SeqCst) % 4;
    (format!("10.{n}.0.0/16"), format!("10.{n}.1.0/24"))
}

pub fn own(project: &str, address: &str) -> OwnershipTags {
    OwnershipTags {
        project: project.to_string(),
        address: address.into(),
        token: format!("tok-{}-{address}", std::process::id()).replace(['[', ']', '.'], "-"),
        lineage: format!("lineage-{project}"),
        workspace: None,
    }
}

pub fn req(
    kind: ResourceKind,
    project: &str,
    address: &str,
    attrs: serde_json::Value,
    refs: &[(&str, &str)],
) -> CreateRequest {
    let attrs: Attrs = serde_json::from_value(attrs).unwrap();
    CreateRequest {
        kind,
        scope: scope(),
        attrs,
        refs: refs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ownership: own(project, address),
    }
}

/// Creates `r`, which must succeed (a failure names its address).
pub async fn create(p: &AwsProvider, r: &CreateRequest) -> ObservedResource {
    p.create(r)
        .await
        .unwrap_or_else(|e| panic!("create {} {}: {e}", r.kind, r.ownership.address))
}

/// The error of a create that must fail.
pub async fn refused(p: &AwsProvider, r: CreateRequest) -> ProviderError {
    match p.create(&r).await {
        Ok(made) => panic!("{} {} was created: {made:?}", r.kind, r.ownership.address),
        Err(e) => e,
    }
}

/// Reads `ids` of `kind`, which must succeed.
pub async fn read_back(
    p: &AwsProvider,
    kind: ResourceKind,
    ids: &[String],
) -> Vec<ObservedResource> {
    p.read(&scope(), kind, ids)
        .await
        .unwrap_or_else(|e| panic!("read {kind} {ids:?}: {e}"))
}

/// Deletes `id` of `kind`, which must succeed (as it does when it is gone).
pub async fn delete(p: &AwsProvider, kind: ResourceKind, id: &str) {
    delete_all(p, &[(kind, id)]).await
}

/// What `project` owns, which must list.
pub async fn owned_by(p: &AwsProvider, project: &str) -> Vec<ObservedResource> {
    p.list_owned(&scope(), project)
        .await
        .unwrap_or_else(|e| panic!("list_owned {project}: {e}"))
}

/// An instance of `project` at `address` with the attributes `attrs`, in
/// the network's subnet and firewall.
pub fn node(net: &Net, project: &str, address: &str, attrs: serde_json::Value) -> CreateRequest {
    let refs = [
        ("subnet", net.subnet.as_str()),
        ("firewall", net.sg.as_str()),
    ];
    req(ResourceKind::Instance, project, address, attrs, &refs)
}

pub struct Net {
    pub vpc: String,
    pub subnet: String,
    pub sg: String,
}

pub async fn network(p: &AwsProvider, project: &str) -> Net {
    let (vpc_cidr, subnet_cidr) = unique_cidr();
    let vpc = p
        .create(&req(
            ResourceKind::Network,
            project,
            "network.main",
            json!({"cidr": vpc_cidr}),
            &[],
        ))
        .await
        .unwrap();
    assert!(vpc.id.starts_with("vpc-"), "{vpc:?}");
    let subnet = p
        .create(&req(
            ResourceKind::Subnet,
            project,
            "subnet.main[us-east-1a]",
            json!({"cidr": subnet_cidr, "zone": ZONE}),
            &[("network", &vpc.id)],
        ))
        .await
        .unwrap();
    assert_eq!(subnet.attrs["zone"], json!(ZONE));
    let sg = p
        .create(&req(
            ResourceKind::Firewall,
            project,
            "firewall.main",
            json!({"ingress": [{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "203.0.113.0/24"}]}),
            &[("network", &vpc.id)],
        ))
        .await
        .unwrap();
    Net {
        vpc: vpc.id,
        subnet: subnet.id,
        sg: sg.id,
    }
}

pub fn by_kind(items: &[ObservedResource], kind: ResourceKind) -> Vec<&ObservedResource> {
    items.iter().filter(|r| r.kind == kind).collect()
}

pub async fn raw_client(p: &AwsProvider) -> Client {
    p.ec2_client(REGION)
}

/// EC2's own description of the security group `id`.
pub async fn described_group(ec2: &Client, id: &str) -> aws_sdk_ec2::types::SecurityGroup {
    let out = ec2.describe_security_groups().group_ids(id).send().await;
    let out = out.unwrap_or_else(|e| panic!("DescribeSecurityGroups {id}: {e:?}"));
    out.security_groups()[0].clone()
}

/// EC2's own description of the instance `id`.
pub async fn described_instance(ec2: &Client, id: &str) -> aws_sdk_ec2::types::Instance {
    let out = ec2.describe_instances().instance_ids(id).send().await;
    let out = out.unwrap_or_else(|e| panic!("DescribeInstances {id}: {e:?}"));
    out.reservations()[0].instances()[0].clone()
}

/// Deletes each resource in order, every delete succeeding.
pub async fn delete_all(p: &AwsProvider, resources: &[(ResourceKind, &str)]) {
    for (kind, id) in resources {
        p.delete(&scope(), *kind, id)
            .await
            .unwrap_or_else(|e| panic!("delete of {kind} {id}: {e}"));
    }
}

/// Deletes the network made by [`network`]: firewall, subnet, VPC.
pub async fn delete_network(p: &AwsProvider, net: &Net) {
    delete_all(
        p,
        &[
            (ResourceKind::Firewall, &net.sg),
            (ResourceKind::Subnet, &net.subnet),
            (ResourceKind::Network, &net.vpc),
        ],
    )
    .await;
}

// ----- a proxy that counts and keeps the requests ---------------------------

/// A tiny HTTP proxy on 127.0.0.1 that forwards each request to moto and
/// counts requests by EC2 Action (from the form body of the Query protocol).
pub struct CountingProxy {
    pub url: String,
    counts: Arc<Mutex<HashMap<String, u32>>>,
    /// (Action, form body) of every request, in order.
    bodies: Arc<Mutex<Vec<(String, String)>>>,
}

impl CountingProxy {
    pub async fn start(upstream: &str) -> CountingProxy {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let counts: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
        let bodies: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let (c, b) = (counts.clone(), bodies.clone());
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let (c, b, up) = (c.clone(), b.clone(), upstream.clone());
                tokio::spawn(async move {
                    let _ = serve(sock, &up, &c, &b).await;
                });
            }
        });
        CountingProxy {
            url,
            counts,
            bodies,
        }
    }

    pub fn snapshot(&self) -> HashMap<String, u32> {
        self.counts.lock().unwrap().clone()
    }

    pub fn reset(&self) {
        self.counts.lock().unwrap().clear();
    }

    /// The form bodies of the requests with this Action, URL-decoded.
    pub fn bodies_of(&self, action: &str) -> Vec<String> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .filter(|(a, _)| a == action)
            .map(|(_, b)| url_decode(b))
            .collect()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(v) => {
                    out.push(v);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}

/// Serves one request per connection: forwards it upstream with
/// `Connection: close` and relays the whole answer (also marked close).
async fn serve(
    mut sock: TcpStream,
    upstream: &str,
    counts: &Mutex<HashMap<String, u32>>,
    bodies: &Mutex<Vec<(String, String)>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).to_string();
    let action = body
        .split('&')
        .find_map(|kv| kv.strip_prefix("Action="))
        .unwrap_or("(none)")
        .to_string();
    *counts.lock().unwrap().entry(action.clone()).or_default() += 1;
    bodies.lock().unwrap().push((action, body.clone()));

    let new_head = closing(&head);
    let mut up = TcpStream::connect(upstream).await?;
    up.write_all(new_head.as_bytes()).await?;
    up.write_all(&buf[head_end..]).await?;
    let mut resp = Vec::new();
    up.read_to_end(&mut resp).await?;
    let resp_head_end = find(&resp, b"\r\n\r\n")
        .map(|i| i + 4)
        .unwrap_or(resp.len());
    let rhead = String::from_utf8_lossy(&resp[..resp_head_end]).to_string();
    let out = closing(&rhead);
    sock.write_all(out.as_bytes()).await?;
    sock.write_all(&resp[resp_head_end..]).await?;
    sock.shutdown().await?;
    Ok(())
}

/// An HTTP head (request or response) with its `Connection` header replaced
/// by `Connection: close`, so that one exchange is one connection.
fn closing(head: &str) -> String {
    let mut out: String = head
        .trim_end()
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    out.push_str("Connection: close\r\n\r\n");
    out
}
