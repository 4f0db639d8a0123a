//! Stock at plan time (issue 31): `Provider::offered` reads ListFlavors'
//! per-zone sale status (`os_extra_specs` `cond:operation:az`), so
//! placement skips a zone where the flavor is sold out.

use crate::common;

use gpuform_provider::{Provider, Scope};
use gpuform_standins::geography::ZoneOffer;
use gpuform_standins::huawei::HuaweiMock;
use gpuform_standins::MockCloud;

#[tokio::test]
async fn a_flavor_sold_out_in_a_zone_is_not_offered_there() {
    let mock = HuaweiMock::start();
    let region = "ap-southeast-2";
    mock.add_region(region, &["ap-southeast-2a", "ap-southeast-2b"]);
    for (zone, sold_out) in [("ap-southeast-2a", true), ("ap-southeast-2b", false)] {
        mock.offer(ZoneOffer {
            zone: zone.into(),
            instance_type: "g6.4xlarge.4".into(),
            sold_out,
            gpus: 1,
        });
    }
    // The region's own project, as on Huawei Cloud.
    let mut env = mock.env();
    env.push(HuaweiMock::project_env(region));
    let p = common::provider_from(env);
    let scope = Scope {
        region: region.into(),
    };
    let offered = |zone: &'static str, flavor: &'static str| {
        let (p, scope) = (&p, &scope);
        async move { p.offered(scope, zone, flavor).await.expect("ListFlavors") }
    };
    assert_eq!(
        offered("ap-southeast-2a", "g6.4xlarge.4").await,
        Some(false),
        "sold out"
    );
    assert_eq!(
        offered("ap-southeast-2b", "g6.4xlarge.4").await,
        Some(true),
        "on sale"
    );
    assert_eq!(
        offered("ap-southeast-2b", "g6.99xlarge.4").await,
        Some(false),
        "a flavor the region does not list is not offered"
    );
}
