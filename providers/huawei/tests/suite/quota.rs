//! Quota at plan time (issue 31): `Provider::quota` reads ShowServerLimits'
//! vCPU cores (spot ECSs their own), as the stand-in answers from the
//! reference; a role without the permission is an `Auth` error.

use crate::common;

use gpuform_provider::{ErrorKind, Provider, QuotaMarket, QuotaUnit};
use gpuform_standins::huawei::{HuaweiMock, ServerLimits};

#[tokio::test]
async fn cores_and_spot_cores_come_from_show_server_limits() {
    let mock = HuaweiMock::start();
    mock.set_server_limits(ServerLimits {
        max_total_cores: 64,
        total_cores_used: 40,
        max_total_spot_cores: -1,
        total_spot_cores_used: 8,
    });
    let p = common::provider(&mock);
    let scope = common::scope();
    let q = p
        .quota(&scope, "p2s.2xlarge.8", QuotaMarket::OnDemand)
        .await
        .expect("ShowServerLimits")
        .expect("Huawei reports its cores");
    assert_eq!(q.code.as_deref(), Some("maxTotalCores"));
    assert_eq!(q.unit, QuotaUnit::Vcpus);
    assert_eq!((q.limit, q.used), (Some(64), 40));
    assert_eq!(q.have(), Some(24));
    assert!(q.raise.contains("quota"), "{}", q.raise);

    let spot = p
        .quota(&scope, "p2s.2xlarge.8", QuotaMarket::Spot)
        .await
        .expect("ShowServerLimits")
        .expect("spot cores");
    assert_eq!(spot.code.as_deref(), Some("maxTotalSpotCores"));
    assert_eq!((spot.limit, spot.used), (None, 8), "-1 is no limit");
}

#[tokio::test]
async fn a_role_without_the_permission_is_an_auth_error() {
    let mock = HuaweiMock::start();
    mock.deny_server_limits(true);
    let p = common::provider(&mock);
    let e = p
        .quota(&common::scope(), "p2s.2xlarge.8", QuotaMarket::OnDemand)
        .await
        .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Auth, "{e}");
}
