//! The AWS provider against a real moto EC2 server over HTTP.
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

use aws_sdk_ec2::Client;
use gpuform_aws::AwsProvider;
use gpuform_provider::{
    Attrs, CreateRequest, ErrorKind, ObservedResource, OwnershipTags, Provider, ResourceKind, Scope,
};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const REGION: &str = "us-east-1";
const ZONE: &str = "us-east-1a";

fn moto_url() -> String {
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
fn test_env() {
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

async fn provider_at(url: &str) -> AwsProvider {
    test_env();
    AwsProvider::from_env(Some(url.to_string()))
        .await
        .expect("provider")
        .with_placement_groups(false)
}

async fn provider() -> AwsProvider {
    provider_at(&moto_url()).await
}

fn scope() -> Scope {
    Scope {
        region: REGION.to_string(),
    }
}

fn unique_project(name: &str) -> String {
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
fn unique_cidr() -> (String, String) {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = 10 + (std::process::id() % 50) * 4 + N.fetch_add(1, Ordering::SeqCst) % 4;
    (format!("10.{n}.0.0/16"), format!("10.{n}.1.0/24"))
}

fn own(project: &str, address: &str) -> OwnershipTags {
    OwnershipTags {
        project: project.to_string(),
        address: address.to_string(),
        token: format!("tok-{}-{address}", std::process::id()).replace(['[', ']', '.'], "-"),
        lineage: format!("lineage-{project}"),
    }
}

fn req(
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

struct Net {
    vpc: String,
    subnet: String,
    sg: String,
}

async fn network(p: &AwsProvider, project: &str) -> Net {
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

fn by_kind(items: &[ObservedResource], kind: ResourceKind) -> Vec<&ObservedResource> {
    items.iter().filter(|r| r.kind == kind).collect()
}

async fn raw_client(p: &AwsProvider) -> Client {
    p.ec2_client(REGION)
}

#[tokio::test]
async fn lifecycle_create_list_read_drift_delete() {
    // Through the proxy, to look at the requests as sent.
    let proxy = CountingProxy::start(&moto_url()).await;
    let p = provider_at(&proxy.url).await;
    let project = unique_project("lifecycle");
    let net = network(&p, &project).await;

    // The firewall: the self rule (all traffic between members) plus ingress.
    let ec2 = raw_client(&p).await;
    let g = ec2
        .describe_security_groups()
        .group_ids(&net.sg)
        .send()
        .await
        .unwrap();
    let perms = g.security_groups()[0].ip_permissions();
    assert!(
        perms.iter().any(|p| p.ip_protocol() == Some("-1")
            && p.user_id_group_pairs()
                .iter()
                .any(|u| u.group_id() == Some(&net.sg))),
        "self-referencing allow-all rule missing: {perms:?}"
    );
    assert!(perms.iter().any(|p| p.from_port() == Some(22)
        && p.ip_ranges()
            .iter()
            .any(|r| r.cidr_ip() == Some("203.0.113.0/24"))));

    let refs = [
        ("subnet", net.subnet.as_str()),
        ("firewall", net.sg.as_str()),
    ];
    let trainer = p
        .create(&req(
            ResourceKind::Instance,
            &project,
            "cluster.trainer.node[0]",
            json!({"instance_type": "p4d.24xlarge", "zone": ZONE, "image": "amazon-linux-2023", "pricing": "on-demand",
                   "root_gb": 200, "rdma": true, "user_data": "#!/bin/sh\necho hi\n", "tags": {"team": "ml"}}),
            &refs,
        ))
        .await
        .unwrap();
    let infer = p
        .create(&req(
            ResourceKind::Instance,
            &project,
            "cluster.inference.node[0]",
            json!({"instance_type": "g4dn.xlarge", "zone": ZONE, "image": "amazon-linux-2023", "pricing": "spot",
                   "root_gb": 120, "rdma": false}),
            &refs,
        ))
        .await
        .unwrap();
    assert!(trainer.id.starts_with("i-") && infer.id.starts_with("i-"));

    // EFA: p4d.24xlarge allows 4 EFA interfaces (one per network card).
    // moto stores them as plain interfaces (and merges those with the same
    // device index), so check the request as it went over the wire.
    let runs = proxy.bodies_of("RunInstances");
    assert_eq!(runs.len(), 2, "one RunInstances per node");
    let p4d = runs
        .iter()
        .find(|b| b.contains("InstanceType=p4d.24xlarge"))
        .unwrap();
    assert_eq!(p4d.matches("InterfaceType=efa").count(), 4, "{p4d}");
    for n in 0..4 {
        assert!(
            p4d.contains(&format!("NetworkInterface.{}.NetworkCardIndex={n}", n + 1)),
            "{p4d}"
        );
    }
    assert!(
        p4d.contains("NetworkInterface.1.DeviceIndex=0")
            && p4d.contains("NetworkInterface.2.DeviceIndex=1"),
        "{p4d}"
    );
    assert!(
        p4d.contains("NetworkInterface.1.SubnetId=subnet-") && !p4d.contains("&SubnetId="),
        "{p4d}"
    );
    assert!(
        p4d.contains("MinCount=1") && p4d.contains("MaxCount=1"),
        "{p4d}"
    );
    assert!(
        p4d.contains(&format!(
            "ClientToken={}",
            own(&project, "cluster.trainer.node[0]").token
        )),
        "{p4d}"
    );
    assert!(
        p4d.contains("BlockDeviceMapping.1.DeviceName=/dev/xvda")
            && p4d.contains("BlockDeviceMapping.1.Ebs.VolumeSize=200"),
        "{p4d}"
    );
    assert!(
        p4d.contains("TagSpecification.1.ResourceType=instance")
            && p4d.contains("TagSpecification.2.ResourceType=volume"),
        "{p4d}"
    );
    assert!(p4d.contains("UserData=IyEvYmluL3NoCmVjaG8gaGkK"), "{p4d}");
    assert!(!p4d.contains("InstanceMarketOptions"), "{p4d}");
    let g4 = runs
        .iter()
        .find(|b| b.contains("InstanceType=g4dn.xlarge"))
        .unwrap();
    assert!(g4.contains("InstanceMarketOptions.MarketType=spot"), "{g4}");
    assert!(
        !g4.contains("InterfaceType=efa")
            && g4.contains("SubnetId=subnet-")
            && g4.contains("SecurityGroupId.1=sg-"),
        "{g4}"
    );
    let d = ec2
        .describe_instances()
        .instance_ids(&trainer.id)
        .send()
        .await
        .unwrap();
    let inst = &d.reservations()[0].instances()[0];
    assert_eq!(
        inst.image_id(),
        Some("ami-03c3da4cfa8e8943a"),
        "amazon-linux-2023 maps to the al2023 kernel-6.1 x86_64 AMI"
    );
    assert_eq!(
        p.type_info(REGION, "g4dn.xlarge")
            .await
            .unwrap()
            .efa_interfaces,
        0
    );
    assert_eq!(
        p.type_info(REGION, "p4d.24xlarge")
            .await
            .unwrap()
            .efa_interfaces,
        4
    );

    // list_owned finds everything, with its ownership tags and neutral attrs.
    let owned = p.list_owned(&scope(), &project).await.unwrap();
    assert_eq!(by_kind(&owned, ResourceKind::Network).len(), 1);
    assert_eq!(by_kind(&owned, ResourceKind::Subnet).len(), 1);
    assert_eq!(by_kind(&owned, ResourceKind::Firewall).len(), 1);
    assert_eq!(
        by_kind(&owned, ResourceKind::Volume).len(),
        0,
        "root volumes are part of their instance: {owned:#?}"
    );
    let instances = by_kind(&owned, ResourceKind::Instance);
    assert_eq!(instances.len(), 2);
    for r in &owned {
        let o = r.ownership.as_ref().expect("ownership tags");
        assert_eq!(o.project, project);
        assert_eq!(o.lineage, format!("lineage-{project}"));
        assert_eq!(r.region, REGION);
    }
    let t = instances.iter().find(|r| r.id == trainer.id).unwrap();
    assert_eq!(
        t.ownership.as_ref().unwrap().address,
        "cluster.trainer.node[0]"
    );
    assert_eq!(
        t.ownership.as_ref().unwrap().token,
        own(&project, "cluster.trainer.node[0]").token
    );
    assert_eq!(t.attrs["instance_type"], json!("p4d.24xlarge"));
    assert_eq!(t.attrs["zone"], json!(ZONE));
    assert_eq!(t.attrs["image"], json!("amazon-linux-2023"));
    assert_eq!(t.attrs["pricing"], json!("on-demand"));
    assert_eq!(t.attrs["root_gb"], json!(200));
    assert_eq!(t.attrs["rdma"], json!(true));
    assert_eq!(t.attrs["tags"], json!({"team": "ml"}));
    assert_eq!(t.status, "running");
    let i = instances.iter().find(|r| r.id == infer.id).unwrap();
    assert_eq!(i.attrs["pricing"], json!("spot"));
    assert_eq!(i.attrs["root_gb"], json!(120));
    assert_eq!(i.attrs["rdma"], json!(false));
    let fw = by_kind(&owned, ResourceKind::Firewall)[0];
    assert_eq!(
        fw.attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "203.0.113.0/24"}])
    );
    let sn = by_kind(&owned, ResourceKind::Subnet)[0];
    assert_eq!(sn.attrs["cidr"], json!(unique_cidr_of(&owned)));

    // read by ids, batched; an id that does not exist is left out, not an error.
    let ids = vec![
        trainer.id.clone(),
        infer.id.clone(),
        "i-0123456789abcdef0".to_string(),
    ];
    let read = p
        .read(&scope(), ResourceKind::Instance, &ids)
        .await
        .unwrap();
    assert_eq!(read.len(), 2, "{read:#?}");
    assert_eq!(
        read.iter().find(|r| r.id == trainer.id).unwrap().attrs,
        t.attrs
    );
    let read = p
        .read(
            &scope(),
            ResourceKind::Subnet,
            &[net.subnet.clone(), "subnet-00000000000000000".into()],
        )
        .await
        .unwrap();
    assert_eq!(read.len(), 1);

    // Updates in place: tags and ingress.
    let mut changes = Attrs::new();
    changes.insert("tags".into(), json!({"team": "ml", "cost-center": "42"}));
    let u = p
        .update(&scope(), ResourceKind::Instance, &trainer.id, &changes)
        .await
        .unwrap();
    assert_eq!(u.attrs["tags"], json!({"team": "ml", "cost-center": "42"}));
    let mut changes = Attrs::new();
    changes.insert(
        "ingress".into(),
        json!([{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "0.0.0.0/0"}]),
    );
    let u = p
        .update(&scope(), ResourceKind::Firewall, &net.sg, &changes)
        .await
        .unwrap();
    assert_eq!(
        u.attrs["ingress"],
        json!([{"protocol": "tcp", "from_port": 443, "to_port": 443, "cidr": "0.0.0.0/0"}])
    );
    let mut bad = Attrs::new();
    bad.insert("instance_type".into(), json!("p5.48xlarge"));
    assert_eq!(
        p.update(&scope(), ResourceKind::Instance, &trainer.id, &bad)
            .await
            .unwrap_err()
            .kind,
        ErrorKind::Invalid
    );

    // Drift: an instance terminated behind the provider's back is gone.
    ec2.terminate_instances()
        .instance_ids(&infer.id)
        .send()
        .await
        .unwrap();
    let owned = p.list_owned(&scope(), &project).await.unwrap();
    let left: Vec<_> = by_kind(&owned, ResourceKind::Instance)
        .iter()
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(left, vec![trainer.id.clone()]);
    assert_eq!(
        p.read(
            &scope(),
            ResourceKind::Instance,
            std::slice::from_ref(&infer.id)
        )
        .await
        .unwrap()
        .len(),
        0
    );

    // Delete everything; deleting again is fine; nothing is left.
    p.delete(&scope(), ResourceKind::Instance, &trainer.id)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Instance, &infer.id)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Firewall, &net.sg)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Subnet, &net.subnet)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Network, &net.vpc)
        .await
        .unwrap();
    for (kind, id) in [
        (ResourceKind::Instance, &trainer.id),
        (ResourceKind::Firewall, &net.sg),
        (ResourceKind::Subnet, &net.subnet),
        (ResourceKind::Network, &net.vpc),
    ] {
        p.delete(&scope(), kind, id)
            .await
            .unwrap_or_else(|e| panic!("second delete of {kind} {id}: {e}"));
    }
    let owned = p.list_owned(&scope(), &project).await.unwrap();
    assert!(owned.is_empty(), "left over: {owned:#?}");
}

fn unique_cidr_of(owned: &[ObservedResource]) -> String {
    by_kind(owned, ResourceKind::Network)[0].attrs["cidr"]
        .as_str()
        .unwrap()
        .replace(".0.0/16", ".1.0/24")
}

#[tokio::test]
async fn dependency_violation_when_deleting_a_vpc_in_use() {
    let p = provider().await;
    let project = unique_project("depviol");
    let net = network(&p, &project).await;
    let err = p
        .delete(&scope(), ResourceKind::Network, &net.vpc)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::DependencyViolation, "{err}");
    assert_eq!(err.code.as_deref(), Some("DependencyViolation"));
    assert!(err.kind.is_retryable());
    p.delete(&scope(), ResourceKind::Firewall, &net.sg)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Subnet, &net.subnet)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Network, &net.vpc)
        .await
        .unwrap();
    assert!(p.list_owned(&scope(), &project).await.unwrap().is_empty());
}

#[tokio::test]
async fn data_volume_created_attached_listed_and_deleted() {
    let p = provider().await;
    let project = unique_project("volume");
    let net = network(&p, &project).await;
    let inst = p
        .create(&req(
            ResourceKind::Instance,
            &project,
            "cluster.a.node[0]",
            json!({"instance_type": "g5.xlarge", "image": "amazon-linux-2023", "root_gb": 100}),
            &[("subnet", &net.subnet), ("firewall", &net.sg)],
        ))
        .await
        .unwrap();
    let vol = p
        .create(&req(
            ResourceKind::Volume,
            &project,
            "cluster.a.node[0].data",
            json!({"size_gb": 250, "volume_type": "gp3"}),
            &[("instance", &inst.id)],
        ))
        .await
        .unwrap();
    assert!(vol.id.starts_with("vol-"));
    assert_eq!(vol.attrs["size_gb"], json!(250));
    assert_eq!(
        vol.attrs["zone"],
        json!(ZONE),
        "zone taken from the instance"
    );
    assert_eq!(vol.status, "in-use");

    let owned = p.list_owned(&scope(), &project).await.unwrap();
    let vols = by_kind(&owned, ResourceKind::Volume);
    assert_eq!(
        vols.len(),
        1,
        "only the data volume, not the root volume: {vols:#?}"
    );
    assert_eq!(vols[0].id, vol.id);
    assert_eq!(
        vols[0].ownership.as_ref().unwrap().address,
        "cluster.a.node[0].data"
    );

    p.delete(&scope(), ResourceKind::Volume, &vol.id)
        .await
        .unwrap();
    p.delete(&scope(), ResourceKind::Volume, &vol.id)
        .await
        .unwrap();
    assert!(p
        .read(
            &scope(),
            ResourceKind::Volume,
            std::slice::from_ref(&vol.id)
        )
        .await
        .unwrap()
        .is_empty());
    for (kind, id) in [
        (ResourceKind::Instance, &inst.id),
        (ResourceKind::Firewall, &net.sg),
        (ResourceKind::Subnet, &net.subnet),
        (ResourceKind::Network, &net.vpc),
    ] {
        p.delete(&scope(), kind, id).await.unwrap();
    }
    assert!(p.list_owned(&scope(), &project).await.unwrap().is_empty());
}

#[tokio::test]
async fn errors_map_to_neutral_kinds_with_code_and_request_id() {
    let p = provider().await;
    let project = unique_project("errors");
    let net = network(&p, &project).await;
    let refs = [
        ("subnet", net.subnet.as_str()),
        ("firewall", net.sg.as_str()),
    ];

    let e = p
        .create(&req(
            ResourceKind::Instance,
            &project,
            "n[0]",
            json!({"instance_type": "p9.mega", "image": "amazon-linux-2023"}),
            &refs,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert!(
        e.code
            .as_deref()
            .unwrap_or("")
            .starts_with("InvalidInstanceType"),
        "{e:?}"
    );
    assert!(e.request_id.is_some(), "{e:?}");
    assert!(e.message.contains("hint"), "{e:?}");

    let e = p
        .create(&req(
            ResourceKind::Instance,
            &project,
            "n[1]",
            json!({"instance_type": "g4dn.xlarge", "image": "ami-0123456789abcdef0"}),
            &refs,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert_eq!(e.code.as_deref(), Some("InvalidAMIID.NotFound"), "{e:?}");
    assert!(e.request_id.is_some(), "{e:?}");

    // A logical name that does not exist at all, and one with no AMI here.
    let e = p
        .create(&req(
            ResourceKind::Instance,
            &project,
            "n[2]",
            json!({"instance_type": "g4dn.xlarge", "image": "beos-5"}),
            &refs,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("ubuntu-22.04-cuda"),
        "lists the known names: {e}"
    );

    // A reference that does not exist: invalid input with a hint.
    let e = p
        .create(&req(
            ResourceKind::Subnet,
            &project,
            "subnet.gone",
            json!({"cidr": "10.250.1.0/24", "zone": ZONE}),
            &[("network", "vpc-0000000000000000f")],
        ))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert_eq!(e.code.as_deref(), Some("InvalidVpcID.NotFound"), "{e:?}");

    // Buckets are not EC2.
    let e = p
        .create(&req(
            ResourceKind::Bucket,
            &project,
            "bucket.b",
            json!({"name": "x"}),
            &[],
        ))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);

    for (kind, id) in [
        (ResourceKind::Firewall, &net.sg),
        (ResourceKind::Subnet, &net.subnet),
        (ResourceKind::Network, &net.vpc),
    ] {
        p.delete(&scope(), kind, id).await.unwrap();
    }
}

#[tokio::test]
async fn unreachable_endpoint_is_transient() {
    // Port 9 (discard) on loopback: nothing listens there.
    test_env();
    let p = AwsProvider::from_env(Some("http://127.0.0.1:9".into()))
        .await
        .unwrap();
    let e = p.list_owned(&scope(), "nobody").await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient, "{e}");
    assert!(
        !e.message.contains("testing"),
        "no credentials in errors: {e}"
    );
}

#[tokio::test]
async fn image_names_resolve_against_moto_catalog() {
    let p = provider().await;
    let (ami, root) = p
        .resolve_image(REGION, "amazon-linux-2023", "x86_64")
        .await
        .unwrap();
    assert_eq!(ami, "ami-03c3da4cfa8e8943a");
    assert_eq!(root.as_deref(), Some("/dev/xvda"));
    let (ami, _) = p
        .resolve_image(REGION, "amazon-linux-2023", "arm64")
        .await
        .unwrap();
    assert_eq!(ami, "ami-0ae8605ed708e3c3e", "al2023 kernel-6.1 arm64");
    let (ami, _) = p
        .resolve_image(REGION, "amazon-linux-2", "x86_64")
        .await
        .unwrap();
    assert_eq!(
        ami, "ami-0f8848d57eb4fe2d2",
        "newest amzn2-ami-hvm x86_64 gp2 by name"
    );
    // An explicit AMI id is used as it is.
    let (ami, root) = p
        .resolve_image(REGION, "ami-785db401", "x86_64")
        .await
        .unwrap();
    assert_eq!(
        (ami.as_str(), root.as_deref()),
        ("ami-785db401", Some("/dev/sda1"))
    );
    // moto ships no Deep Learning AMIs: a clear invalid-input error.
    let e = p
        .resolve_image(REGION, "ubuntu-22.04-cuda", "x86_64")
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message
            .contains("Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)"),
        "{e}"
    );
}

/// Crash adoption: the create happened, its answer was lost; the ownership
/// tags (address + token) find it again. moto does not honour ClientToken,
/// so this is what adoption relies on there.
#[tokio::test]
async fn lost_create_result_is_adopted_by_tags() {
    let p = provider().await;
    let project = unique_project("adopt");
    let net = network(&p, &project).await;
    let r = req(
        ResourceKind::Instance,
        &project,
        "cluster.trainer.node[7]",
        json!({"instance_type": "g5.xlarge", "image": "amazon-linux-2023"}),
        &[("subnet", &net.subnet), ("firewall", &net.sg)],
    );
    let token = r.ownership.token.clone();
    let created = p.create(&r).await.unwrap();
    let lost_id = created.id.clone();
    drop(created); // the journal never saw the id

    // The next run, with a fresh provider (a new process).
    let p2 = provider().await;
    let owned = p2.list_owned(&scope(), &project).await.unwrap();
    let found: Vec<_> = owned
        .iter()
        .filter(|o| {
            o.kind == ResourceKind::Instance
                && o.ownership
                    .as_ref()
                    .map(|t| (t.address.as_str(), t.token.as_str()))
                    == Some(("cluster.trainer.node[7]", token.as_str()))
        })
        .collect();
    assert_eq!(found.len(), 1, "{owned:#?}");
    assert_eq!(found[0].id, lost_id);

    for (kind, id) in [
        (ResourceKind::Instance, &lost_id),
        (ResourceKind::Firewall, &net.sg),
        (ResourceKind::Subnet, &net.subnet),
        (ResourceKind::Network, &net.vpc),
    ] {
        p.delete(&scope(), kind, id).await.unwrap();
    }
}

// ----- batched refresh, proven by counting requests ----------------------------

/// A tiny HTTP proxy on 127.0.0.1 that forwards each request to moto and
/// counts requests by EC2 Action (from the form body of the Query protocol).
struct CountingProxy {
    url: String,
    counts: Arc<Mutex<HashMap<String, u32>>>,
    /// (Action, form body) of every request, in order.
    bodies: Arc<Mutex<Vec<(String, String)>>>,
}

impl CountingProxy {
    async fn start(upstream: &str) -> CountingProxy {
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

    fn snapshot(&self) -> HashMap<String, u32> {
        self.counts.lock().unwrap().clone()
    }

    fn reset(&self) {
        self.counts.lock().unwrap().clear();
    }

    /// The form bodies of the requests with this Action, URL-decoded.
    fn bodies_of(&self, action: &str) -> Vec<String> {
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

/// Serves one request per connection: forwards it upstream with
/// `Connection: close` and relays the whole answer (also marked close).
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

    let mut new_head: String = head
        .trim_end()
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    new_head.push_str("Connection: close\r\n\r\n");
    let mut up = TcpStream::connect(upstream).await?;
    up.write_all(new_head.as_bytes()).await?;
    up.write_all(&buf[head_end..]).await?;
    let mut resp = Vec::new();
    up.read_to_end(&mut resp).await?;
    let resp_head_end = find(&resp, b"\r\n\r\n")
        .map(|i| i + 4)
        .unwrap_or(resp.len());
    let rhead = String::from_utf8_lossy(&resp[..resp_head_end]).to_string();
    let mut out: String = rhead
        .trim_end()
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    out.push_str("Connection: close\r\n\r\n");
    sock.write_all(out.as_bytes()).await?;
    sock.write_all(&resp[resp_head_end..]).await?;
    sock.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn refreshing_200_instances_costs_a_handful_of_calls() {
    const N: usize = 200;
    let p = Arc::new(provider().await);
    let project = unique_project("refresh200");
    let net = network(&p, &project).await;

    // Launch 200 nodes straight at moto (not counted), 16 at a time.
    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut set = tokio::task::JoinSet::new();
    for n in 0..N {
        let (p, sem, project, subnet, sg) = (
            p.clone(),
            sem.clone(),
            project.clone(),
            net.subnet.clone(),
            net.sg.clone(),
        );
        set.spawn(async move {
            let _permit = sem.acquire().await.unwrap();
            p.create(&req(
                ResourceKind::Instance,
                &project,
                &format!("cluster.big.node[{n}]"),
                json!({"instance_type": "g4dn.xlarge", "image": "amazon-linux-2023", "root_gb": 100}),
                &[("subnet", &subnet), ("firewall", &sg)],
            ))
            .await
            .unwrap()
            .id
        });
    }
    let mut ids = Vec::new();
    while let Some(id) = set.join_next().await {
        ids.push(id.unwrap());
    }
    assert_eq!(ids.len(), N);

    // Refresh through the counting proxy, with a fresh provider.
    let proxy = CountingProxy::start(&moto_url()).await;
    let counted = provider_at(&proxy.url).await;
    let owned = counted.list_owned(&scope(), &project).await.unwrap();
    assert_eq!(by_kind(&owned, ResourceKind::Instance).len(), N);
    assert!(by_kind(&owned, ResourceKind::Instance)
        .iter()
        .all(|r| r.attrs["root_gb"] == json!(100)));
    let list_counts = proxy.snapshot();
    let list_total: u32 = list_counts.values().sum();

    proxy.reset();
    let read = counted
        .read(&scope(), ResourceKind::Instance, &ids)
        .await
        .unwrap();
    assert_eq!(read.len(), N);
    let read_counts = proxy.snapshot();
    let read_total: u32 = read_counts.values().sum();

    println!("list_owned of {N} instances (+ network, subnet, firewall): {list_total} requests: {list_counts:?}");
    println!("read of {N} instance ids: {read_total} requests: {read_counts:?}");
    assert!(
        list_counts.get("DescribeInstances").copied().unwrap_or(0) <= 1,
        "{list_counts:?}"
    );
    assert!(
        list_total <= 8,
        "list_owned must cost a handful of calls, not {list_total}: {list_counts:?}"
    );
    assert!(
        read_counts.get("DescribeInstances").copied().unwrap_or(0) <= 1,
        "{read_counts:?}"
    );
    assert!(
        read_total <= 4,
        "read must cost a handful of calls, not {read_total}: {read_counts:?}"
    );

    // Clean up in one call.
    let ec2 = raw_client(&p).await;
    ec2.terminate_instances()
        .set_instance_ids(Some(ids))
        .send()
        .await
        .unwrap();
    for (kind, id) in [
        (ResourceKind::Firewall, &net.sg),
        (ResourceKind::Subnet, &net.subnet),
        (ResourceKind::Network, &net.vpc),
    ] {
        p.delete(&scope(), kind, id).await.unwrap();
    }
}
