//! Alibaba OSS buckets through the gpuform binary, against the
//! object-storage stand-in (OSS flavor: OSS V4 signatures checked by its
//! own verifier) beside the ECS/VPC stand-in: create, a clean plan, drift,
//! the non-empty refusal, destroy, a crash at every OSS call of an apply,
//! and the secret never in state, plans or logs. The scenarios are the
//! ones every cloud runs (tests/buckets_e2e).

use crate::buckets_e2e;

use buckets_e2e::{crash_at_every_call, scenario, Case};
use gpuform_standins::alibaba::{AlibabaMock, ACCESS_KEY_SECRET};
use gpuform_standins::objstore::{oss::OSS, ObjStoreMock};

const ALIBABA: Case = Case {
    cloud: "alibaba",
    region: "cn-hangzhou",
    name: |p| format!("{p}-data-2026"),
    secret: ACCESS_KEY_SECRET,
    start: || (Box::new(AlibabaMock::start()), ObjStoreMock::start(OSS)),
};

#[test]
fn buckets_on_oss_from_create_to_destroy() {
    scenario(&ALIBABA);
}

#[test]
fn a_crash_at_every_oss_call_converges_to_one_bucket() {
    crash_at_every_call(&ALIBABA);
}
