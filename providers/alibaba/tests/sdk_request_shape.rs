//! What the Alibaba provider sends, compared with what the official SDK sent
//! for the same action (`providers/signing/tests/fixtures/aliyun_*_v3`):
//! method, path, where the parameters go, content type, signed headers,
//! action and version. A recording proxy (`gpuform_standins::tap`) sees
//! the provider's requests on the wire on their way to the stand-in; each
//! must also pass the stand-in's own ACS3 verifier.

mod common;

use common::*;
use gpuform_provider::Provider;
use gpuform_provider::ResourceKind;
use gpuform_standins::alibaba::{AlibabaMock, ACCESS_KEY_ID, ACCESS_KEY_SECRET};
use gpuform_standins::harness::ssh;
use gpuform_standins::harness::{assert_signed, launch_list_delete, same_action, SdkShapes};
use gpuform_standins::shape::Shape;
use gpuform_standins::tap::Tap;
use gpuform_standins::verify::{acs3, Key};
use serde_json::json;

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

#[tokio::test]
async fn requests_have_the_sdk_shape() {
    let mock = AlibabaMock::start();
    let tap = Tap::start(&mock.endpoint());
    let p = provider_at(&tap.endpoint(), ACCESS_KEY_SECRET);
    let net = network(&p, ssh()).await;
    let node = req(
        ResourceKind::Instance,
        "c.node[0]",
        json!({"instance_type": "ecs.gn7i-c8g1.2xlarge", "zone": ZONE, "image": "ubuntu-22.04-cuda",
               "pricing": "on-demand", "root_gb": 200, "rdma": false, "gpu": "A10:1",
               "user_data": "#!/bin/sh\n", "tags": {"team": "ml"}}),
        &[("subnet", &net.vsw), ("firewall", &net.sg)],
    );
    launch_list_delete(&p, &node).await;

    let sent = tap.requests();
    let key = Key {
        id: ACCESS_KEY_ID,
        secret: ACCESS_KEY_SECRET,
    };
    assert_signed(&sent, 6, key, acs3::verify);
    SDK.assert_matched_by(&sent);
}

/// A spot cap goes on the wire as RunInstances' `SpotStrategy=SpotWithPriceLimit`
/// and `SpotPriceLimit` (CNY per hour, at most three decimals); without one,
/// `SpotAsPriceGo`.
#[tokio::test]
async fn a_spot_cap_is_a_price_limit() {
    let mock = AlibabaMock::start();
    let tap = Tap::start(&mock.endpoint());
    let p = provider_at(&tap.endpoint(), ACCESS_KEY_SECRET);
    let net = network(&p, ssh()).await;
    for (i, cap) in [Some(json!(3.5)), None].into_iter().enumerate() {
        let mut attrs = json!({"instance_type": "ecs.gn7i-c8g1.2xlarge", "zone": ZONE,
                               "image": "ubuntu-22.04-cuda", "pricing": "spot", "gpu": "A10:1"});
        if let Some(cap) = cap {
            attrs["spot_max_price"] = cap;
        }
        let node = req(
            ResourceKind::Instance,
            &format!("c.node[{i}]"),
            attrs,
            &[("subnet", &net.vsw), ("firewall", &net.sg)],
        );
        p.create(&node).await.unwrap();
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
