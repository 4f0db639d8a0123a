//! EC2 errors on moto, mapped to neutral kinds with code and request id.

use crate::common;

use common::*;
use gpuform_aws::AwsProvider;
use gpuform_provider::{ErrorKind, Provider, ResourceKind};
use serde_json::json;

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
    delete_network(&p, &net).await;
    assert!(owned_by(&p, &project).await.is_empty());
}

#[tokio::test]
async fn errors_map_to_neutral_kinds_with_code_and_request_id() {
    let p = provider().await;
    let project = unique_project("errors");
    let net = network(&p, &project).await;
    let node = |address: &str, attrs| node(&net, &project, address, attrs);

    let no_such_type = json!({"instance_type": "p9.mega", "image": "amazon-linux-2023"});
    let e = refused(&p, node("n[0]", no_such_type)).await;
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

    let no_such_ami = json!({"instance_type": "g4dn.xlarge", "image": "ami-0123456789abcdef0"});
    let e = refused(&p, node("n[1]", no_such_ami)).await;
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert_eq!(e.code.as_deref(), Some("InvalidAMIID.NotFound"), "{e:?}");
    assert!(e.request_id.is_some(), "{e:?}");

    // A logical name that does not exist at all, and one with no AMI here.
    let unknown_image = json!({"instance_type": "g4dn.xlarge", "image": "beos-5"});
    let e = refused(&p, node("n[2]", unknown_image)).await;
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("ubuntu-22.04-cuda"),
        "lists the known names: {e}"
    );

    // A reference that does not exist: invalid input with a hint.
    let e = refused(
        &p,
        req(
            ResourceKind::Subnet,
            &project,
            "subnet.gone",
            json!({"cidr": "10.250.1.0/24", "zone": ZONE}),
            &[("network", "vpc-0000000000000000f")],
        ),
    )
    .await;
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    assert_eq!(e.code.as_deref(), Some("InvalidVpcID.NotFound"), "{e:?}");

    // Buckets are not EC2.
    let bucket = req(
        ResourceKind::Bucket,
        &project,
        "bucket.b",
        json!({"name": "x"}),
        &[],
    );
    assert_eq!(refused(&p, bucket).await.kind, ErrorKind::Invalid);

    // Tags EC2 would refuse are refused before any call: nothing is made.
    let long_key = json!({"cidr": "10.251.0.0/16", "tags": {"k".repeat(129): "v"}});
    let vpc = req(
        ResourceKind::Network,
        &project,
        "network.tagged",
        long_key,
        &[],
    );
    let e = refused(&p, vpc).await;
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("at most 128 characters"), "{e}");
    let left = owned_by(&p, &project).await;
    assert_eq!(by_kind(&left, ResourceKind::Network).len(), 1, "{left:#?}");

    delete_network(&p, &net).await;
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
