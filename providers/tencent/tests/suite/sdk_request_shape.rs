//! What the Tencent provider sends, compared with what the official SDK sent
//! for the same action (`providers/signing/tests/fixtures/tencent_*`):
//! method, path, content type, signed headers, action, version and the JSON
//! body's structure where both send a key. A recording proxy
//! (`gpuform_standins::tap`) sees the provider's requests on the wire on
//! their way to the stand-in; each must also pass the stand-in's own TC3
//! verifier.

use gpuform_standins::harness::{launch_list_delete, same_action, SdkShapes};
use gpuform_standins::shape::Shape;
use gpuform_standins::tap::Tap;
use gpuform_standins::tencent::{TencentMock, SECRET_ID, SECRET_KEY};
use gpuform_standins::verify::{tc3, Key};
use serde_json::{json, Value};

use crate::common;
use common::{network, node_request, provider_with, ZONE};

/// The SDK calls gpuform must make the same way, with no difference.
const SDK: SdkShapes = SdkShapes {
    recordings: &[
        "tencent_cvm_runinstances",
        "tencent_cvm_terminateinstances",
        "tencent_cvm_describeinstances_tagfilter",
        "tencent_vpc_createvpc",
    ],
    same_call: same_action,
    known_differences: &[],
};

#[tokio::test]
async fn requests_have_the_sdk_shape() {
    let mock = TencentMock::start();
    let tap = Tap::start(&mock.endpoint());
    let p = provider_with(&tap.endpoint(), SECRET_ID, SECRET_KEY);

    let net = network(&p).await;
    let a = json!({"instance_type": "GN7.2XLARGE32", "zone": ZONE, "image": "ubuntu-22.04-cuda",
                   "pricing": "spot", "spot_max_price": 9.5, "root_gb": 100, "rdma": false, "gpu": "T4:1",
                   "user_data": "#!/bin/sh\n", "tags": {"team": "ml"}});
    launch_list_delete(&p, &node_request(&net, "c.node[0]", a, None)).await;

    let key = Key {
        id: SECRET_ID,
        secret: SECRET_KEY,
    };
    SDK.assert_tapped(&tap, 6, key, tc3::verify);
    let sent = tap.requests();
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
}
