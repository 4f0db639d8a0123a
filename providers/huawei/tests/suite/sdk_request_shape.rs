//! What the Huawei provider sends, compared with what the official SDK sent
//! for the same call (`providers/signing/tests/fixtures/huawei_*`): method,
//! path with ids replaced, query or not, content type, signed headers and
//! the JSON body's structure where both send a key. A recording proxy
//! (`gpuform_standins::tap`) sees the provider's requests on the wire on
//! their way to the stand-in; each must also pass the stand-in's own
//! SDK-HMAC-SHA256 verifier.

use crate::common;

use common::{provider_from, request, Net, ZONE};
use gpuform_huawei::HuaweiProvider;
use gpuform_provider::{CreateRequest, ResourceKind};
use gpuform_standins::harness::{
    create_net, env_through, launch_list_delete, same_method_and_path, ssh, token_of, SdkShapes,
};
use gpuform_standins::huawei::{HuaweiMock, TEST_AK, TEST_SK};
use gpuform_standins::tap::Tap;
use gpuform_standins::verify::{huawei, Key};
use gpuform_standins::MockCloud;
use serde_json::{json, Value};

fn req(kind: ResourceKind, address: &str, a: Value, refs: &[(&str, &str)]) -> CreateRequest {
    request("llm", kind, address, token_of(address), a, refs)
}

/// The SDK calls gpuform must make the same way. What gpuform deliberately
/// does differently: the SDK sends and signs a `User-Agent` with its own
/// name, and an `X-Project-Id` header although the project id is already in
/// the path (the ECS reference needs that header only for dedicated-cloud
/// and multi-project calls); gpuform sends neither. Both are extra signed
/// headers, not a different algorithm.
const SDK: SdkShapes = SdkShapes {
    recordings: &[
        "huawei_ecs_createservers",
        "huawei_ecs_deleteservers",
        "huawei_ecs_listserversdetails_query",
        "huawei_ecs_showjob",
    ],
    same_call: same_method_and_path,
    known_differences: &[
        "signed header user-agent: only the SDK",
        "signed header x-project-id: only the SDK",
    ],
};

/// The stand-in's key, which it verifies every signature with.
const KEY: Key = Key {
    id: TEST_AK,
    secret: TEST_SK,
};

/// The stand-in (kept alive with the rest), a tap in front of it, a
/// provider calling the tap and a network made through it.
async fn tapped() -> (HuaweiMock, Tap, HuaweiProvider, Net) {
    let mock = HuaweiMock::start();
    let tap = Tap::start(&mock.endpoint());
    let endpoint = tap.endpoint();
    let p = provider_from(env_through(
        mock.env(),
        "GPUFORM_HUAWEI_ENDPOINT",
        &endpoint,
    ));
    let net: Net = create_net(&p, ZONE, "10.0.0.0/24", ssh(), |kind, a, refs| {
        let address = match kind {
            ResourceKind::Network => "c.network".to_string(),
            ResourceKind::Subnet => format!("c.subnet[{ZONE}]"),
            _ => "c.firewall".to_string(),
        };
        req(kind, &address, a, refs)
    })
    .await;
    (mock, tap, p, net)
}

/// `c.node[0]` with the attributes `a`, in the network's subnet and firewall.
fn node(net: &Net, a: Value) -> CreateRequest {
    let refs = [("subnet", &*net.subnet.id), ("firewall", &*net.firewall.id)];
    req(ResourceKind::Instance, "c.node[0]", a, &refs)
}

#[tokio::test]
async fn requests_have_the_sdk_shape() {
    let (_mock, tap, p, net) = tapped().await;
    let a = json!({"instance_type": "p2s.2xlarge.8", "zone": ZONE, "image": "ubuntu-22.04-cuda",
                   "pricing": "on-demand", "root_gb": 200, "rdma": false, "user_data": "#!/bin/sh\n",
                   "tags": {"team": "ml"}});
    launch_list_delete(&p, &node(&net, a)).await;
    SDK.assert_tapped(&tap, 6, KEY, huawei::verify);
}

/// A spot cap goes into the server's `extendparam` as `spotPrice` (a string,
/// CNY per hour) next to `marketType: spot`.
#[tokio::test]
async fn a_spot_cap_is_the_spot_price() {
    let (_mock, tap, p, net) = tapped().await;
    let a = json!({"instance_type": "p2s.2xlarge.8", "zone": ZONE, "image": "ubuntu-22.04-cuda",
                   "pricing": "spot", "spot_max_price": 7.25});
    gpuform_provider::Provider::create(&p, &node(&net, a))
        .await
        .unwrap();
    let create = tap
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && r.path.ends_with("/cloudservers"))
        .expect("the server create went through the tap");
    let body: Value = serde_json::from_slice(&create.body).unwrap();
    let ext = &body["server"]["extendparam"];
    assert_eq!(
        (&ext["marketType"], &ext["spotPrice"]),
        (&json!("spot"), &json!("7.25")),
        "{body}"
    );
}
