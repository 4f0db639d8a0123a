//! Quota at plan time (issue 31): Tencent's instance quotas are per zone
//! and per charge type (DescribeAccountQuota), read through
//! `Provider::zone_quota`; a key without the permission is an `Auth` error.

use crate::common::{self, REGION, TYPE, ZONE};

use gpuform_provider::{ErrorKind, Provider, QuotaMarket, QuotaUnit};
use gpuform_standins::tencent::TencentMock;

#[tokio::test]
async fn each_zone_and_charge_type_has_its_own_instance_quota() {
    let mock = TencentMock::start();
    mock.set_zone_quota("PostPaidQuotaSet", ZONE, 2);
    mock.set_zone_quota("SpotPaidQuotaSet", ZONE, 7);
    mock.set_zone_quota("PostPaidQuotaSet", &format!("{REGION}-4"), 30);
    let p = common::provider(&mock);
    assert!(p.quota_per_zone());
    let scope = common::scope();
    let q = p
        .zone_quota(&scope, ZONE, TYPE, QuotaMarket::OnDemand)
        .await
        .expect("DescribeAccountQuota")
        .expect("the zone is listed");
    assert_eq!(q.code.as_deref(), Some("PostPaidQuotaSet"));
    assert_eq!(q.unit, QuotaUnit::Instances);
    assert_eq!((q.limit, q.used), (Some(2), 0));
    let spot = p
        .zone_quota(&scope, ZONE, TYPE, QuotaMarket::Spot)
        .await
        .expect("DescribeAccountQuota")
        .expect("spot quota");
    assert_eq!(
        (spot.code.as_deref(), spot.limit),
        (Some("SpotPaidQuotaSet"), Some(7))
    );
    let other = p
        .zone_quota(&scope, &format!("{REGION}-4"), TYPE, QuotaMarket::OnDemand)
        .await
        .expect("DescribeAccountQuota")
        .expect("the other zone");
    assert_eq!(
        other.limit,
        Some(30),
        "the zone asked for, not the first listed"
    );
}

#[tokio::test]
async fn a_key_without_the_permission_is_an_auth_error() {
    let mock = TencentMock::start();
    mock.deny_quota(true);
    let p = common::provider(&mock);
    let e = p
        .zone_quota(&common::scope(), ZONE, TYPE, QuotaMarket::OnDemand)
        .await
        .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Auth, "{e}");
}
