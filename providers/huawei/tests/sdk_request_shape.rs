//! What the Huawei provider sends, compared with what the official SDK sent
//! for the same call (`providers/signing/tests/fixtures/huawei_*`): method,
//! path with ids replaced, query or not, content type, signed headers and
//! the JSON body's structure where both send a key. A recording proxy
//! (`gpuform_standins::tap`) sees the provider's requests on the wire on
//! their way to the stand-in; each must also pass the stand-in's own
//! SDK-HMAC-SHA256 verifier.

mod common;

use common::{provider_from, request, scope};
use gpuform_standins::huawei::{HuaweiMock, TEST_AK, TEST_SK};
use gpuform_standins::recordings;
use gpuform_standins::shape::Shape;
use gpuform_standins::tap::Tap;
use gpuform_standins::verify::{huawei, Key};
use gpuform_standins::MockCloud;
use gpuform_provider::{CreateRequest, Provider, ResourceKind};
use serde_json::{json, Value};

fn req(kind: ResourceKind, address: &str, a: Value, refs: &[(&str, &str)]) -> CreateRequest {
    let token = format!("gf-{}", address.replace(['.', '[', ']'], "-"));
    request("llm", kind, address, token, a, refs)
}

/// What gpuform deliberately does differently from the SDK. The SDK sends
/// and signs a `User-Agent` with its own name, and an `X-Project-Id` header
/// although the project id is already in the path (the ECS reference needs
/// that header only for dedicated-cloud and multi-project calls); gpuform
/// sends neither. Both are extra signed headers, not a different algorithm.
fn known_differences() -> Vec<String> {
    vec![
        "signed header user-agent: only the SDK".to_string(),
        "signed header x-project-id: only the SDK".to_string(),
    ]
}

#[tokio::test]
async fn requests_have_the_sdk_shape() {
    let mock = HuaweiMock::start();
    let tap = Tap::start(&mock.endpoint());
    let env = mock.env().into_iter().map(|(k, v)| {
        if k == "GPUFORM_HUAWEI_ENDPOINT" {
            (k, tap.endpoint())
        } else {
            (k, v)
        }
    });
    let p = provider_from(env);

    let vpc = p
        .create(&req(
            ResourceKind::Network,
            "c.network",
            json!({"cidr": "10.0.0.0/16"}),
            &[],
        ))
        .await
        .unwrap();
    let subnet = p
        .create(&req(
            ResourceKind::Subnet,
            "c.subnet[cn-north-4a]",
            json!({"cidr": "10.0.0.0/24", "zone": "cn-north-4a"}),
            &[("network", &vpc.id)],
        ))
        .await
        .unwrap();
    let fw = p
        .create(&req(
            ResourceKind::Firewall,
            "c.firewall",
            json!({"ingress": [{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}]}),
            &[("network", &vpc.id)],
        ))
        .await
        .unwrap();
    let node = p
        .create(&req(
            ResourceKind::Instance,
            "c.node[0]",
            json!({"instance_type": "p2s.2xlarge.8", "zone": "cn-north-4a", "image": "ubuntu-22.04-cuda",
                   "pricing": "on-demand", "root_gb": 200, "rdma": false, "user_data": "#!/bin/sh\n",
                   "tags": {"team": "ml"}}),
            &[("subnet", &subnet.id), ("firewall", &fw.id)],
        ))
        .await
        .unwrap();
    p.list_owned(&scope(), "llm").await.unwrap();
    p.delete(&scope(), ResourceKind::Instance, &node.id)
        .await
        .unwrap();

    let sent = tap.requests();
    assert!(
        sent.len() >= 6,
        "only {} requests went through the tap",
        sent.len()
    );
    let key = Key {
        id: TEST_AK,
        secret: TEST_SK,
    };
    for r in &sent {
        huawei::verify(r, &key).unwrap_or_else(|e| panic!("{} {}: {e:?}", r.method, r.path));
    }
    for name in [
        "huawei_ecs_createservers",
        "huawei_ecs_deleteservers",
        "huawei_ecs_listserversdetails_query",
        "huawei_ecs_showjob",
    ] {
        let sdk = Shape::of(&recordings::load(name).request);
        let ours = sent
            .iter()
            .map(Shape::of)
            .find(|s| s.method == sdk.method && s.path == sdk.path)
            .unwrap_or_else(|| panic!("{name}: gpuform never called {} {}", sdk.method, sdk.path));
        assert_eq!(ours.differences(&sdk), known_differences(), "{name}");
    }
}
