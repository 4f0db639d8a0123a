//! What the Alibaba provider sends, compared with what the official SDK sent
//! for the same action (`providers/signing/tests/fixtures/aliyun_*_v3`):
//! method, path, where the parameters go, content type, signed headers,
//! action and version. A recording proxy (`gpuform_standins::tap`) sees
//! the provider's requests on the wire on their way to the stand-in; each
//! must also pass the stand-in's own ACS3 verifier.

use crate::common;

use common::*;
use gpuform_alibaba::AlibabaProvider;
use gpuform_provider::CreateRequest;
use gpuform_provider::Provider;
use gpuform_provider::ResourceKind;
use gpuform_standins::alibaba::{AlibabaMock, ACCESS_KEY_ID, ACCESS_KEY_SECRET};
use gpuform_standins::harness::ssh;
use gpuform_standins::harness::{launch_list_delete, same_action, SdkShapes};
use gpuform_standins::shape::Shape;
use gpuform_standins::tap::Tap;
use gpuform_standins::verify::{acs3, Key};
use serde_json::{json, Value};

/// The SDK calls gpuform must make the same way. What gpuform deliberately
/// does differently: the SDK also sends and signs
/// `x-acs-credentials-provider` (where its key came from, telemetry), which
/// gpuform does not send.
const SDK: SdkShapes = SdkShapes {
    recordings: &[
        "aliyun_ecs_runinstances_v3",
        "aliyun_ecs_deleteinstances_v3",
        "aliyun_ecs_describeinstances_tags_v3",
    ],
    same_call: same_action,
    known_differences: &["signed header x-acs-credentials-provider: only the SDK"],
};

/// The stand-in (kept alive with the rest), a tap in front of it, a
/// provider calling the tap and a network made through it.
async fn tapped() -> (AlibabaMock, Tap, AlibabaProvider, Net) {
    let mock = AlibabaMock::start();
    let tap = Tap::start(&mock.endpoint());
    let p = provider_at(&tap.endpoint(), ACCESS_KEY_SECRET);
    let net = network(&p, ssh()).await;
    (mock, tap, p, net)
}

/// `c.node[i]` with the attributes `a`, in the network's vSwitch and group.
fn node_with(net: &Net, i: usize, a: Value) -> CreateRequest {
    let refs = [("subnet", net.vsw.as_str()), ("firewall", net.sg.as_str())];
    req(ResourceKind::Instance, &format!("c.node[{i}]"), a, &refs)
}

/// The stand-in's key, which it verifies every signature with.
const KEY: Key = Key {
    id: ACCESS_KEY_ID,
    secret: ACCESS_KEY_SECRET,
};

#[tokio::test]
async fn requests_have_the_sdk_shape() {
    let (_mock, tap, p, net) = tapped().await;
    // The cluster's first node, as every other test of this crate makes it.
    launch_list_delete(&p, &node(&net, 0, None)).await;
    SDK.assert_tapped(&tap, 6, KEY, acs3::verify);
}

/// A spot cap goes on the wire as RunInstances' `SpotStrategy=SpotWithPriceLimit`
/// and `SpotPriceLimit` (CNY per hour, at most three decimals); without one,
/// `SpotAsPriceGo`.
#[tokio::test]
async fn a_spot_cap_is_a_price_limit() {
    let (_mock, tap, p, net) = tapped().await;
    for (i, cap) in [Some(json!(3.5)), None].into_iter().enumerate() {
        let mut attrs = json!({"instance_type": "ecs.gn7i-c8g1.2xlarge", "zone": ZONE,
                               "image": "ubuntu-22.04-cuda", "pricing": "spot", "gpu": "A10:1"});
        if let Some(cap) = cap {
            attrs["spot_max_price"] = cap;
        }
        p.create(&node_with(&net, i, attrs)).await.unwrap();
    }
    let runs: Vec<String> = tap
        .requests()
        .iter()
        .filter(|r| Shape::of(r).action.as_deref() == Some("RunInstances"))
        .map(|r| format!("{}&{}", r.query, String::from_utf8_lossy(&r.body)))
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs[0].contains("SpotStrategy=SpotWithPriceLimit")
            && runs[0].contains("SpotPriceLimit=3.5"),
        "{}",
        runs[0]
    );
    assert!(
        runs[1].contains("SpotStrategy=SpotAsPriceGo") && !runs[1].contains("SpotPriceLimit"),
        "{}",
        runs[1]
    );
}
