//! What the Tencent provider sends, compared with what the official SDK sent
//! for the same action (`providers/signing/tests/fixtures/tencent_*`):
//! method, path, content type, signed headers, action, version and the JSON
//! body's structure where both send a key. A recording proxy
//! (`gpuform_standins::tap`) sees the provider's requests on the wire on
//! their way to the stand-in; each must also pass the stand-in's own TC3
//! verifier.

use gpuform_provider::{CreateRequest, Provider, ResourceKind};
use gpuform_standins::recordings;
use gpuform_standins::shape::Shape;
use gpuform_standins::tap::Tap;
use gpuform_standins::tencent::{TencentMock, SECRET_ID, SECRET_KEY};
use gpuform_standins::verify::{tc3, Key};
use serde_json::{json, Value};

mod common;
use common::{json_attrs, provider_with, request, scope, ZONE};

fn req(kind: ResourceKind, address: &str, a: Value, refs: &[(&str, &str)]) -> CreateRequest {
    request(kind, address, json_attrs(a), refs)
}

#[tokio::test]
async fn requests_have_the_sdk_shape() {
    let mock = TencentMock::start();
    let tap = Tap::start(&mock.endpoint());
    let p = provider_with(&tap.endpoint(), SECRET_ID, SECRET_KEY);

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
            &format!("c.subnet[{ZONE}]"),
            json!({"zone": ZONE, "cidr": "10.0.0.0/20"}),
            &[("network", &vpc.id)],
        ))
        .await
        .unwrap();
    let sg = p
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
            json!({"instance_type": "GN7.2XLARGE32", "zone": ZONE, "image": "ubuntu-22.04-cuda",
                   "pricing": "spot", "spot_max_price": 9.5, "root_gb": 100, "rdma": false, "gpu": "T4:1",
                   "user_data": "#!/bin/sh\n", "tags": {"team": "ml"}}),
            &[("subnet", &subnet.id), ("firewall", &sg.id)],
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
        id: SECRET_ID,
        secret: SECRET_KEY,
    };
    for r in &sent {
        tc3::verify(r, &key).unwrap_or_else(|e| panic!("{:?}: {e:?}", Shape::of(r).action));
    }
    // The spot cap is RunInstances' InstanceMarketOptions.SpotOptions.MaxPrice.
    let run = sent
        .iter()
        .find(|r| Shape::of(r).action.as_deref() == Some("RunInstances"))
        .expect("RunInstances went through the tap");
    let body: Value = serde_json::from_slice(&run.body).unwrap();
    assert_eq!(
        body["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"],
        json!("9.5"),
        "{body}"
    );
    for name in [
        "tencent_cvm_runinstances",
        "tencent_cvm_terminateinstances",
        "tencent_cvm_describeinstances_tagfilter",
        "tencent_vpc_createvpc",
    ] {
        let sdk = Shape::of(&recordings::load(name).request);
        let ours = sent
            .iter()
            .map(Shape::of)
            .find(|s| s.action == sdk.action)
            .unwrap_or_else(|| panic!("{name}: gpuform never called {:?}", sdk.action));
        assert_eq!(ours.differences(&sdk), Vec::<String>::new(), "{name}");
    }
}
