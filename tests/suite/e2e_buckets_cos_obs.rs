//! Buckets on Tencent COS and Huawei OBS end to end: the gpuform binary
//! against the cloud's API stand-in and the object-storage stand-in in its
//! flavor (which verifies every signature with its own verifier and parses
//! every XML body with its own reader). One scenario per cloud — create
//! and read back, no-op plan, drift repaired, a non-empty bucket's destroy
//! refused with its count then forced, a name of another account a clear
//! error — a crash at every object-storage call of an apply, and the
//! secret never in state, plans or logs. The scenarios are the ones every
//! cloud runs (tests/buckets_e2e).

use crate::buckets_e2e;

use buckets_e2e::{crash_at_every_call, scenario, Case};
use gpuform_standins::objstore::{cos::COS, obs::OBS, ObjStoreMock};
use gpuform_standins::{huawei::HuaweiMock, tencent::TencentMock};

const TENCENT: Case = Case {
    cloud: "tencent",
    region: "ap-guangzhou",
    name: |p| format!("{p}-data-{}", gpuform_standins::objstore::cos::APPID),
    secret: gpuform_standins::tencent::SECRET_KEY,
    start: || (Box::new(TencentMock::start()), ObjStoreMock::start(COS)),
};

const HUAWEI: Case = Case {
    cloud: "huawei",
    region: "cn-north-4",
    name: |p| format!("{p}-data"),
    secret: gpuform_standins::huawei::TEST_SK,
    start: || (Box::new(HuaweiMock::start()), ObjStoreMock::start(OBS)),
};

#[test]
fn cos_bucket_scenario() {
    scenario(&TENCENT);
}

#[test]
fn cos_crash_at_every_call() {
    crash_at_every_call(&TENCENT);
}

#[test]
fn obs_bucket_scenario() {
    scenario(&HUAWEI);
}

#[test]
fn obs_crash_at_every_call() {
    crash_at_every_call(&HUAWEI);
}
