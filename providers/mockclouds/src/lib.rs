//! Stand-ins for clouds we cannot reach from tests: local HTTP servers on
//! 127.0.0.1 that verify every request's signature (with the same credentials
//! the test gives gpuform) and answer as each API reference documents: ids,
//! states, pagination, error bodies, asynchronous jobs.
//!
//! They are NOT the clouds: they implement only what gpuform calls, and they
//! follow the documentation, not observed behaviour. Each module cites the
//! API reference pages it follows.
//!
//! Every server implements [`MockCloud`], so one scenario suite (create,
//! refresh, drift, scale, destroy, crash and re-apply) runs against all of them.

use gpuform_provider::ResourceKind;
use std::sync::Arc;

/// One resource alive in a mock cloud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockResource {
    pub kind: ResourceKind,
    pub id: String,
    pub region: String,
    /// The `gpuform:address` tag, when the resource carries one.
    pub address: Option<String>,
}

/// Called after the N-th request (1-based) has taken effect and before its
/// response is sent: a test kills the client here to simulate a crash at
/// the worst moment.
pub type RequestHook = Arc<dyn Fn(u64) + Send + Sync>;

pub trait MockCloud: Send + Sync {
    /// Environment variables that point gpuform's provider at this server
    /// (endpoint override and the test credentials).
    fn env(&self) -> Vec<(String, String)>;
    /// Everything alive, sorted by id.
    fn resources(&self) -> Vec<MockResource>;
    /// Deletes a resource behind gpuform's back (drift tests).
    fn delete_behind(&self, id: &str) -> bool;
    /// Requests served so far (including rejected ones).
    fn requests(&self) -> u64;
    fn set_hook(&self, hook: Option<RequestHook>);
}

pub mod alibaba;
pub mod huawei;
pub mod recordings;
pub mod shape;
pub mod tap;
pub mod tencent;
pub mod verify;
