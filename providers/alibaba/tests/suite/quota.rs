//! Quota at plan time (issue 31): `Provider::quota` reads the region's
//! pay-as-you-go or spot vCPU quota from DescribeAccountAttributes, as the
//! stand-in answers from the reference; a RAM user without the permission
//! is an `Auth` error.

use crate::common;

use gpuform_provider::{ErrorKind, Provider, QuotaMarket, QuotaUnit};
use gpuform_standins::alibaba::{AlibabaMock, VcpuQuota};

const TYPE: &str = "ecs.gn7i-c8g1.2xlarge";

#[tokio::test]
async fn postpaid_and_spot_vcpus_come_from_describe_account_attributes() {
    let mock = AlibabaMock::start();
    mock.set_vcpu_quota(VcpuQuota {
        max_postpaid: 500,
        used_postpaid: 120,
        max_spot: 64,
        used_spot: 32,
    });
    let p = common::provider(&mock);
    let scope = common::scope();
    let q = p
        .quota(&scope, TYPE, QuotaMarket::OnDemand)
        .await
        .expect("DescribeAccountAttributes")
        .expect("Alibaba reports postpaid vCPUs");
    assert_eq!(q.code.as_deref(), Some("max-postpaid-instance-vcpu-count"));
    assert_eq!(q.unit, QuotaUnit::Vcpus);
    assert_eq!((q.limit, q.used), (Some(500), 120));
    assert!(q.raise.contains("Quota Center"), "{}", q.raise);
    let spot = p
        .quota(&scope, TYPE, QuotaMarket::Spot)
        .await
        .expect("DescribeAccountAttributes")
        .expect("spot vCPUs");
    assert_eq!(spot.code.as_deref(), Some("max-spot-instance-vcpu-count"));
    assert_eq!((spot.limit, spot.used), (Some(64), 32));
    // Subscriptions have no vCPU attribute: the cloud cannot tell.
    assert_eq!(
        p.quota(&scope, TYPE, QuotaMarket::Reserved)
            .await
            .expect("no call"),
        None
    );
}

#[tokio::test]
async fn a_ram_user_without_the_permission_is_an_auth_error() {
    let mock = AlibabaMock::start();
    mock.deny_account_attributes(true);
    let p = common::provider(&mock);
    let e = p
        .quota(&common::scope(), TYPE, QuotaMarket::OnDemand)
        .await
        .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Auth, "{e}");
}
