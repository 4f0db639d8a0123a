//! What every cloud crate's tests against a stand-in build the same way:
//! typed create requests with ownership tags, a network (VPC, subnet,
//! firewall) to put instances in, and the check that what a provider sent
//! on the wire (through a [`Tap`](crate::tap::Tap)) is signed correctly and
//! has the shape of the official SDK's recording of the same call.
//!
//! How a cloud crate's tests use it (Alibaba, Huawei and Tencent do; a new
//! cloud's adopts it the same way):
//!
//! 1. In `tests/suite/common/mod.rs`, one [`Owner`] per test project (region,
//!    project, lineage) and a `provider(&mock)` of the crate; requests are
//!    `owner.request(kind, address, token, attrs, refs)`, with
//!    [`token_of`] when the test does not care about the token, or the
//!    typed [`Owner::volume`] and [`Owner::standalone`]; [`create`],
//!    [`refused`] and the owner's `read`/`update`/`delete`/`owned` for the
//!    calls, each naming what failed.
//! 2. A network: [`create_net`] with a closure that names the three
//!    requests (the crate's own addresses and tokens).
//! 3. `tests/suite/sdk_request_shape.rs`: start the stand-in, a
//!    [`Tap`](crate::tap::Tap) in front of it, the provider at
//!    `tap.endpoint()` (or [`env_through`] for env-configured providers),
//!    make the calls ([`launch_list_delete`] after the network), then
//!    [`SdkShapes::assert_tapped`] with the stand-in's key and verifier:
//!    [`assert_signed`] and [`SdkShapes::assert_matched_by`] in one.

use crate::recordings;
use crate::shape::Shape;
use crate::tap::Tap;
use crate::verify::{Key, Rejection, WireRequest};
use crate::MockCloud;
use gpuform_provider::{
    Attrs, CreateRequest, Inventory, InventoryInstance, ObservedResource, OwnershipTags, Provider,
    ProviderError, ResourceKind, RunState, Scope,
};
use serde_json::{json, Value};
use std::future::Future;

/// Who owns the resources a test creates: the region they are made in, the
/// gpuform project and the state's lineage.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub region: &'a str,
    pub project: &'a str,
    pub lineage: &'a str,
}

impl Owner<'_> {
    pub fn scope(&self) -> Scope {
        Scope {
            region: self.region.into(),
        }
    }

    /// A create request of `kind` at `address`, owned with `token`; `attrs`
    /// is a JSON object, `refs` pairs a role (`network`, `subnet`…) with an id.
    pub fn request(
        &self,
        kind: ResourceKind,
        address: &str,
        token: String,
        attrs: Value,
        refs: &[(&str, &str)],
    ) -> CreateRequest {
        CreateRequest {
            kind,
            scope: self.scope(),
            attrs: attrs_of(attrs),
            refs: refs
                .iter()
                .map(|(role, id)| (role.to_string(), id.to_string()))
                .collect(),
            ownership: self.ownership(address, token),
        }
    }

    /// An SSD data disk of `size_gb` in `zone` at `address` (its token
    /// derived from the address), attached to `instance`.
    pub fn volume(&self, address: &str, zone: &str, size_gb: u64, instance: &str) -> CreateRequest {
        let a = json!({"zone": zone, "size_gb": size_gb, "volume_type": "ssd"});
        let refs = [("instance", instance)];
        self.request(ResourceKind::Volume, address, token_of(address), a, &refs)
    }

    /// A resource of `kind` at `address` with the attributes `attrs` and no
    /// references (a network, a placement group, a bucket), its token derived
    /// from the address.
    pub fn standalone(&self, kind: ResourceKind, address: &str, attrs: Value) -> CreateRequest {
        self.request(kind, address, token_of(address), attrs, &[])
    }

    /// Reads `ids` of `kind` in the owner's region, which must succeed.
    pub async fn read<P: Provider + ?Sized>(
        &self,
        p: &P,
        kind: ResourceKind,
        ids: &[String],
    ) -> Vec<ObservedResource> {
        p.read(&self.scope(), kind, ids)
            .await
            .unwrap_or_else(|e| panic!("read {kind} {ids:?}: {e}"))
    }

    /// Updates `id` of `kind` in the owner's region with `changes` (a JSON
    /// object): the provider's answer, for tests of refusals too.
    pub async fn update<P: Provider + ?Sized>(
        &self,
        p: &P,
        kind: ResourceKind,
        id: &str,
        changes: Value,
    ) -> gpuform_provider::Result<ObservedResource> {
        p.update(&self.scope(), kind, id, &attrs_of(changes)).await
    }

    /// Deletes `id` of `kind` in the owner's region, which must succeed
    /// (as it does for what is already gone).
    pub async fn delete<P: Provider + ?Sized>(&self, p: &P, kind: ResourceKind, id: &str) {
        p.delete(&self.scope(), kind, id)
            .await
            .unwrap_or_else(|e| panic!("delete {kind} {id}: {e}"));
    }

    /// What the owner's project owns in its region, which must list.
    pub async fn owned<P: Provider + ?Sized>(&self, p: &P) -> Vec<ObservedResource> {
        p.list_owned(&self.scope(), self.project)
            .await
            .unwrap_or_else(|e| panic!("list_owned {}: {e}", self.project))
    }

    /// The ownership tags of `address` with `token`.
    pub fn ownership(&self, address: &str, token: String) -> OwnershipTags {
        OwnershipTags {
            project: self.project.into(),
            address: address.into(),
            token,
            lineage: self.lineage.into(),
            workspace: None,
        }
    }
}

/// Creates `req` through `p`, panicking with its address when that fails.
pub async fn create<P: Provider + ?Sized>(p: &P, req: &CreateRequest) -> ObservedResource {
    p.create(req)
        .await
        .unwrap_or_else(|e| panic!("create {}: {e}", req.ownership.address))
}

/// The error a create of `req` through `p` must end in; a create that
/// succeeds panics with the request's address and `why` it should not.
pub async fn refused<P: Provider + ?Sized>(p: &P, req: &CreateRequest, why: &str) -> ProviderError {
    match p.create(req).await {
        Ok(o) => panic!("{} was created ({}): {why}", req.ownership.address, o.id),
        Err(e) => e,
    }
}

/// Asserts what an audit must see of the node `id`: in `inv`, of `project`,
/// running on demand as `instance_type`. Returns it for what else the
/// caller checks.
pub fn assert_running_on_demand<'a>(
    inv: &'a Inventory,
    id: &str,
    project: &str,
    instance_type: &str,
) -> &'a InventoryInstance {
    let i = inv.instances.iter().find(|i| i.id == id);
    let i = i.unwrap_or_else(|| panic!("{id} is not in the inventory"));
    assert_eq!(i.project(), Some(project), "{id}");
    assert_eq!(i.state, RunState::Running, "{id}");
    assert_eq!(i.pricing.as_deref(), Some("on-demand"), "{id}");
    assert_eq!(i.instance_type, instance_type, "{id}");
    i
}

/// What `work` returns and how many requests the stand-in `mock` served
/// while it ran.
pub async fn counted<T>(mock: &impl MockCloud, work: impl Future<Output = T>) -> (T, u64) {
    let before = mock.requests();
    let out = work.await;
    (out, mock.requests() - before)
}

/// A token derived from an address: `c.node[0]` → `gf-c-node-0-`.
pub fn token_of(address: &str) -> String {
    format!("gf-{}", address.replace(['.', '[', ']'], "-"))
}

/// The attributes of a JSON object; anything else is a mistake in the test.
pub fn attrs_of(v: Value) -> Attrs {
    match v {
        Value::Object(map) => map.into_iter().collect(),
        other => panic!("attributes are a JSON object, not {other}"),
    }
}

/// SSH from anywhere, as a neutral `ingress`.
pub fn ssh() -> Value {
    json!([{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"}])
}

/// A network (10.0.0.0/16), one subnet in it and a firewall.
pub struct Net {
    pub network: ObservedResource,
    pub subnet: ObservedResource,
    pub firewall: ObservedResource,
}

/// Creates a [`Net`] through `p`: the subnet `{"zone": zone, "cidr":
/// subnet_cidr}`, the firewall with the rules `ingress`. `request(kind,
/// attrs, refs)` makes the create request of each (the caller's addresses
/// and tokens). A failed create panics with its address.
pub async fn create_net<P: Provider + ?Sized>(
    p: &P,
    zone: &str,
    subnet_cidr: &str,
    ingress: Value,
    request: impl Fn(ResourceKind, Value, &[(&str, &str)]) -> CreateRequest,
) -> Net {
    let create = |req: CreateRequest| async move {
        p.create(&req)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", req.ownership.address))
    };
    let network = create(request(
        ResourceKind::Network,
        json!({"cidr": "10.0.0.0/16"}),
        &[],
    ))
    .await;
    let refs = [("network", network.id.as_str())];
    let subnet = create(request(
        ResourceKind::Subnet,
        json!({"zone": zone, "cidr": subnet_cidr}),
        &refs,
    ))
    .await;
    let firewall = create(request(
        ResourceKind::Firewall,
        json!({ "ingress": ingress }),
        &refs,
    ))
    .await;
    Net {
        network,
        subnet,
        firewall,
    }
}

/// The calls an SDK-shape test makes once the network stands: create the
/// instance `node`, list what its project owns, delete the node.
pub async fn launch_list_delete<P: Provider + ?Sized>(p: &P, node: &CreateRequest) {
    let what = &node.ownership.address;
    let created = p
        .create(node)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    p.list_owned(&node.scope, &node.ownership.project)
        .await
        .unwrap_or_else(|e| panic!("list_owned: {e}"));
    p.delete(&node.scope, ResourceKind::Instance, &created.id)
        .await
        .unwrap_or_else(|e| panic!("delete {what}: {e}"));
}

/// A stand-in's environment (see [`MockCloud::env`](crate::MockCloud::env))
/// with the endpoint variable `var` pointed at `endpoint` (a tap's).
pub fn env_through(env: Vec<(String, String)>, var: &str, endpoint: &str) -> Vec<(String, String)> {
    env.into_iter()
        .map(|(k, v)| {
            if k == var {
                (k, endpoint.to_string())
            } else {
                (k, v)
            }
        })
        .collect()
}

/// Asserts that at least `min` requests were sent and that each passes the
/// stand-in's `verify` (one of [`crate::verify`]'s) with `key`.
pub fn assert_signed<V>(
    sent: &[WireRequest],
    min: usize,
    key: Key,
    verify: fn(&WireRequest, &Key) -> Result<V, Rejection>,
) {
    assert!(
        sent.len() >= min,
        "only {} requests went through the tap",
        sent.len()
    );
    for r in sent {
        if let Err(e) = verify(r, &key) {
            panic!("{} {}?{}: {e:?}", r.method, r.path, r.query);
        }
    }
}

/// Which recorded SDK calls gpuform must make, how a sent request is found
/// for a recording, and what gpuform deliberately does differently.
pub struct SdkShapes<'a> {
    /// Recording names (`recordings::load`).
    pub recordings: &'a [&'a str],
    /// Whether a request of ours is the recording's call: [`same_action`]
    /// for action-style APIs, [`same_method_and_path`] for REST ones.
    pub same_call: fn(&Shape, &Shape) -> bool,
    /// Every difference [`Shape::differences`] must report, in its order.
    pub known_differences: &'a [&'a str],
}

/// The same `x-acs-action`/`X-TC-Action` header.
pub fn same_action(ours: &Shape, sdk: &Shape) -> bool {
    ours.action == sdk.action
}

/// The same method and path (ids replaced).
pub fn same_method_and_path(ours: &Shape, sdk: &Shape) -> bool {
    ours.method == sdk.method && ours.path == sdk.path
}

impl SdkShapes<'_> {
    /// Asserts what went through `tap`: at least `min` requests, each
    /// signed ([`assert_signed`] with `key` and `verify`), and matching the
    /// recordings ([`SdkShapes::assert_matched_by`]).
    pub fn assert_tapped<V>(
        &self,
        tap: &Tap,
        min: usize,
        key: Key,
        verify: fn(&WireRequest, &Key) -> Result<V, Rejection>,
    ) {
        let sent = tap.requests();
        assert_signed(&sent, min, key, verify);
        self.assert_matched_by(&sent);
    }

    /// Asserts that for every recording one of `sent` is the same call and
    /// differs from it in exactly the known differences.
    pub fn assert_matched_by(&self, sent: &[WireRequest]) {
        let known: Vec<String> = self
            .known_differences
            .iter()
            .map(|d| d.to_string())
            .collect();
        for name in self.recordings {
            let sdk = Shape::of(&recordings::load(name).request);
            let ours = sent
                .iter()
                .map(Shape::of)
                .find(|s| (self.same_call)(s, &sdk))
                .unwrap_or_else(|| {
                    panic!(
                        "{name}: gpuform never called {} {} {:?}",
                        sdk.method, sdk.path, sdk.action
                    )
                });
            assert_eq!(ours.differences(&sdk), known, "{name}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_attrs() {
        assert_eq!(token_of("c.node[0]"), "gf-c-node-0-");
        let a = attrs_of(json!({"cidr": "10.0.0.0/16"}));
        assert_eq!(a.len(), 1);
        assert_eq!(a["cidr"], "10.0.0.0/16");
    }

    /// A stand-in that only counts the requests it is told it served.
    struct Counter(std::sync::atomic::AtomicU64);

    impl crate::MockCloud for Counter {
        fn env(&self) -> Vec<(String, String)> {
            Vec::new()
        }
        fn resources(&self) -> Vec<crate::MockResource> {
            Vec::new()
        }
        fn delete_behind(&self, _id: &str) -> bool {
            false
        }
        fn requests(&self) -> u64 {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
        fn set_hook(&self, _hook: Option<crate::RequestHook>) {}
    }

    #[tokio::test]
    async fn counted_counts_only_what_the_work_sent() {
        let mock = Counter(std::sync::atomic::AtomicU64::new(7));
        let serve = |n| mock.0.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
        let (out, calls) = counted(&mock, async { serve(3) + 100 }).await;
        assert_eq!((out, calls), (107, 3));
    }

    #[test]
    fn env_through_replaces_only_the_endpoint() {
        let env = vec![
            ("E".to_string(), "http://a".to_string()),
            ("K".to_string(), "k".to_string()),
        ];
        assert_eq!(
            env_through(env, "E", "http://tap"),
            vec![
                ("E".to_string(), "http://tap".to_string()),
                ("K".to_string(), "k".to_string()),
            ]
        );
    }
}
