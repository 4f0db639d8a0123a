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
//!
//! Each also answers its cloud's price actions from a [`prices::PriceBook`]
//! the test fills; [`aws_pricing`] is the AWS Price List Query API's
//! GetProducts alone (moto, the AWS stand-in, has no pricing service), and
//! [`aws_capacity`] sits in front of moto for what moto lacks of an
//! account's capacity (Service Quotas' EC2 GPU quotas), forwarding the rest.

use gpuform_provider::ResourceKind;
use std::sync::Arc;

mod killer;
pub use killer::{kill_before_answer, Killer};

/// One resource alive in a mock cloud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockResource {
    pub kind: ResourceKind,
    pub id: String,
    pub region: String,
    /// The `gpuform:address` tag, when the resource carries one.
    pub address: Option<String>,
    /// A volume: the instance the cloud says it is attached to.
    pub attached_to: Option<String>,
    /// A firewall: what it lets in, as the cloud stores it, normalized:
    /// [`MEMBERS`] when its members reach each other, [`EGRESS`] when it
    /// lets all traffic out, then one [`cidr_rule`] per rule from a CIDR
    /// block. Empty for other kinds.
    pub ingress: Vec<String>,
}

impl MockResource {
    pub fn new(
        kind: ResourceKind,
        id: &str,
        region: &str,
        address: Option<String>,
    ) -> MockResource {
        MockResource {
            kind,
            id: id.to_string(),
            region: region.to_string(),
            address,
            attached_to: None,
            ingress: Vec::new(),
        }
    }
}

/// The [`MockResource::ingress`] entry saying members reach each other.
pub const MEMBERS: &str = "members";

/// The [`MockResource::ingress`] entry saying the group lets all outbound
/// traffic out (nodes can download drivers and join Kubernetes).
pub const EGRESS: &str = "all egress";

/// The [`MockResource::ingress`] entry of a CIDR rule: `tcp 8000-8100
/// 10.1.0.0/16`; `ports` is `FROM-TO` (a single port as `N-N`) or `all`.
pub fn cidr_rule(protocol: &str, ports: &str, cidr: &str) -> String {
    format!("{} {ports} {cidr}", protocol.to_ascii_lowercase())
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
pub mod aws_capacity;
pub mod aws_pricing;
mod background;
pub mod geography;
pub mod harness;
pub mod huawei;
pub mod objstore;
pub mod prices;
pub mod recordings;
pub mod shape;
pub mod tap;
pub mod tencent;
pub mod verify;
