//! What the Alibaba provider sends, compared with what the official SDK sent
//! for the same action (`providers/signing/tests/fixtures/aliyun_*_v3`):
//! method, path, where the parameters go, content type, signed headers,
//! action and version. A recording proxy (`gpuform_standins::tap`) sees
//! the provider's requests on the wire on their way to the stand-in; each
//! must also pass the stand-in's own ACS3 verifier.

mod common;

use common::*;
use gpuform_standins::alibaba::{AlibabaMock, ACCESS_KEY_ID, ACCESS_KEY_SECRET};
use gpuform_standins::recordings;
use gpuform_standins::shape::Shape;
use gpuform_standins::tap::Tap;
use gpuform_standins::verify::{acs3, Key};
use gpuform_provider::{Provider, ResourceKind};
use serde_json::json;

/// What gpuform deliberately does differently from the SDK: the SDK also
/// sends and signs `x-acs-credentials-provider` (where its key came from,
/// telemetry), which gpuform does not send.
fn known_differences() -> Vec<String> {
    vec!["signed header x-acs-credentials-provider: only the SDK".to_string()]
}

#[tokio::test]
async fn requests_have_the_sdk_shape() {
    let mock = AlibabaMock::start();
    let tap = Tap::start(&mock.endpoint());
    let p = provider_at(&tap.endpoint(), ACCESS_KEY_SECRET);
    let net = network(&p, ssh()).await;
    let node = p
        .create(&req(
            ResourceKind::Instance,
            "c.node[0]",
            json!({"instance_type": "ecs.gn7i-c8g1.2xlarge", "zone": ZONE, "image": "ubuntu-22.04-cuda",
                   "pricing": "on-demand", "root_gb": 200, "rdma": false, "gpu": "A10:1",
                   "user_data": "#!/bin/sh\n", "tags": {"team": "ml"}}),
            &[("subnet", &net.vsw), ("firewall", &net.sg)],
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
        id: ACCESS_KEY_ID,
        secret: ACCESS_KEY_SECRET,
    };
    for r in &sent {
        acs3::verify(r, &key).unwrap_or_else(|e| panic!("{} {}: {e:?}", r.method, r.query));
    }
    for name in [
        "aliyun_ecs_runinstances_v3",
        "aliyun_ecs_deleteinstances_v3",
        "aliyun_ecs_describeinstances_tags_v3",
    ] {
        let sdk = Shape::of(&recordings::load(name).request);
        let ours = sent
            .iter()
            .map(Shape::of)
            .find(|s| s.action == sdk.action)
            .unwrap_or_else(|| panic!("{name}: gpuform never called {:?}", sdk.action));
        assert_eq!(ours.differences(&sdk), known_differences(), "{name}");
    }
}
