//! The wrapper's contract, against a driver that records what it is asked.

use super::*;
use crate::OwnershipTags;
use crate::Result;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Knows networks and volumes only (and buckets with `buckets`); records
/// every call.
#[derive(Default)]
struct Recorder {
    buckets: bool,
    calls: Mutex<Vec<String>>,
    /// What `read` finds, by id.
    existing: Mutex<BTreeMap<String, ObservedResource>>,
}

impl Recorder {
    fn log(&self, s: String) {
        self.calls.lock().unwrap().push(s);
    }
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
    fn put(&self, kind: ResourceKind, id: &str, attrs: Attrs) {
        self.existing.lock().unwrap().insert(
            id.into(),
            ObservedResource {
                kind,
                id: id.into(),
                region: "r1".into(),
                ownership: None,
                attrs,
                status: "available".into(),
            },
        );
    }
}

fn gone(what: &str) -> ProviderError {
    ProviderError::new(ErrorKind::NotFound, format!("{what} is gone"))
}

impl CloudDriver for Recorder {
    fn cloud(&self) -> Cloud {
        Cloud::Huawei
    }
    fn label(&self) -> String {
        "recorder".into()
    }
    fn rate_limit(&self) -> RateLimit {
        RateLimit::new(10.0, 10)
    }
    fn kinds(&self) -> &'static [ResourceKind] {
        if self.buckets {
            &[
                ResourceKind::Network,
                ResourceKind::Volume,
                ResourceKind::Bucket,
            ]
        } else {
            &[ResourceKind::Network, ResourceKind::Volume]
        }
    }
    fn buckets(&self) -> Option<&dyn BucketApi> {
        Some(self)
    }
}

#[async_trait]
impl NetworkApi for Recorder {
    async fn create_network(&self, r: &Create<NetworkSpec>) -> Result<ObservedResource> {
        self.log(format!(
            "create_network {} tags={}",
            r.spec.cidr,
            r.tags.len()
        ));
        let mut attrs = Attrs::new();
        attrs.insert("cidr".into(), json!(r.spec.cidr));
        self.put(ResourceKind::Network, "n-1", attrs);
        Ok(self.existing.lock().unwrap()["n-1"].clone())
    }
    async fn create_subnet(&self, _: &Create<SubnetSpec>) -> Result<ObservedResource> {
        unreachable!("subnets are not among this driver's kinds")
    }
    async fn create_firewall(&self, _: &Create<FirewallSpec>) -> Result<ObservedResource> {
        unreachable!()
    }
    async fn update_ingress(&self, _: &Update<'_, [IngressRule]>) -> Result<()> {
        unreachable!()
    }
    async fn delete_network(&self, _: &Scope, id: &str) -> Result<()> {
        self.log(format!("delete_network {id}"));
        Err(gone(id))
    }
    async fn delete_subnet(&self, _: &Scope, _: &str) -> Result<()> {
        unreachable!()
    }
    async fn delete_firewall(&self, _: &Scope, _: &str) -> Result<()> {
        unreachable!()
    }
}

#[async_trait]
impl ComputeApi for Recorder {
    async fn create_instance(&self, _: &Create<InstanceSpec>) -> Result<ObservedResource> {
        unreachable!()
    }
    async fn delete_instance(&self, _: &Scope, _: &str) -> Result<()> {
        unreachable!()
    }
    async fn create_placement(&self, _: &Create<PlacementSpec>) -> Result<ObservedResource> {
        unreachable!()
    }
    async fn delete_placement(&self, _: &Scope, _: &str) -> Result<()> {
        unreachable!()
    }
}

#[async_trait]
impl BucketApi for Recorder {
    async fn list_buckets(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        self.log(format!("list_buckets {}", scope.region));
        Ok(self
            .existing
            .lock()
            .unwrap()
            .values()
            .filter(|r| r.kind == ResourceKind::Bucket)
            .cloned()
            .collect())
    }
}

#[async_trait]
impl StorageApi for Recorder {
    async fn create_volume(&self, r: &Create<VolumeSpec>) -> Result<ObservedResource> {
        self.log(format!("create_volume {}", r.spec.size_gb));
        Err(gone("zone"))
    }
    async fn resize_volume(&self, u: &Update<'_, u32>) -> Result<()> {
        let (c, size) = (u.current, *u.want);
        self.log(format!("resize {} {size}", c.id));
        let mut have = self.existing.lock().unwrap();
        have.get_mut(&c.id)
            .unwrap()
            .attrs
            .insert("size_gb".into(), json!(size));
        Ok(())
    }
    async fn attach_volume(&self, u: &Update<'_, Attachment>) -> Result<()> {
        let (c, to) = (u.current, u.want);
        self.log(format!("attach {} {:?}", c.id, to.instance()));
        Ok(())
    }
    async fn delete_volume(&self, _: &Scope, id: &str) -> Result<()> {
        self.log(format!("delete_volume {id}"));
        Err(ProviderError::new(ErrorKind::DependencyViolation, "in use"))
    }
}

#[async_trait]
impl RefreshApi for Recorder {
    async fn read(&self, q: &Lookup<'_>) -> Result<Vec<ObservedResource>> {
        let (kind, ids) = (q.kind, q.ids);
        self.log(format!("read {kind} {}", ids.join(",")));
        let have = self.existing.lock().unwrap();
        Ok(ids.iter().filter_map(|i| have.get(i).cloned()).collect())
    }
    async fn list_owned(&self, _: &Scope, _: &str) -> Result<Vec<ObservedResource>> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl TagApi for Recorder {
    fn check_tag(key: &str, _value: &str) -> Result<(), String> {
        if key.contains(' ') {
            Err("no spaces in keys here".into())
        } else {
            Ok(())
        }
    }
    async fn update_tags(&self, u: &Update<'_, UserTags>) -> Result<()> {
        let (c, want) = (u.current, u.want);
        self.log(format!("update_tags {} {:?}", c.id, want.as_map()));
        Ok(())
    }
}

fn scope() -> Scope {
    Scope {
        region: "r1".into(),
    }
}

fn request(kind: ResourceKind, attrs: serde_json::Value) -> CreateRequest {
    CreateRequest {
        kind,
        scope: scope(),
        attrs: serde_json::from_value(attrs).unwrap(),
        refs: BTreeMap::new(),
        ownership: OwnershipTags {
            project: "p".into(),
            address: "network.main".into(),
            token: "t".into(),
            lineage: "l".into(),
            workspace: None,
        },
    }
}

#[tokio::test]
async fn creates_are_typed_checked_and_dispatched_by_kind() {
    let d = Recorder::default();
    let p: &dyn Provider = &d;
    let made = p
        .create(&request(
            ResourceKind::Network,
            json!({"cidr": "10.0.0.0/16", "tags": {"team": "ml"}}),
        ))
        .await
        .unwrap();
    assert_eq!(made.id, "n-1");
    assert_eq!(d.calls(), vec!["create_network 10.0.0.0/16 tags=1"]);

    // Refused before any call: an unsupported kind, a missing attribute, a
    // reserved or (by this cloud's rules) malformed tag.
    let e = p
        .create(&request(ResourceKind::Subnet, json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        "subnet resources are not supported on huawei yet"
    );
    let e = p
        .create(&request(ResourceKind::Network, json!({})))
        .await
        .unwrap_err();
    assert_eq!(e.message, "a network needs `cidr`");
    for tags in [
        json!({"gpuform:x": "1"}),
        json!({"_SYS_x": "1"}),
        json!({"a b": "1"}),
    ] {
        let e = p
            .create(&request(
                ResourceKind::Network,
                json!({"cidr": "10.0.0.0/16", "tags": tags}),
            ))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{tags}: {e}");
    }
    assert_eq!(d.calls().len(), 1, "no call made for a refused create");
    // The driver's own errors pass through unchanged (a NotFound on create is not success).
    let e = p
        .create(&request(ResourceKind::Volume, json!({"size_gb": 10})))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn updates_check_apply_each_change_and_read_back() {
    let d = Recorder::default();
    d.put(ResourceKind::Volume, "v-1", Attrs::new());
    let p: &dyn Provider = &d;
    let changes: Attrs = serde_json::from_value(json!({
        "size_gb": 200, "attached_to": "i-9", "tags": {"team": "ml"}
    }))
    .unwrap();
    let after = p
        .update(&scope(), ResourceKind::Volume, "v-1", &changes)
        .await
        .unwrap();
    assert_eq!(
        after.attrs["size_gb"],
        json!(200),
        "the answer is read after the update"
    );
    assert_eq!(
        d.calls(),
        vec![
            "read volume v-1",
            "update_tags v-1 {\"team\": \"ml\"}",
            "attach v-1 Some(\"i-9\")",
            "resize v-1 200",
            "read volume v-1",
        ]
    );
    let bad: Attrs = serde_json::from_value(json!({"volume_type": "hdd"})).unwrap();
    let e = p
        .update(&scope(), ResourceKind::Volume, "v-1", &bad)
        .await
        .unwrap_err();
    assert!(e.message.contains("needs a replacement"), "{e}");
    let e = p
        .update(&scope(), ResourceKind::Volume, "v-404", &changes)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
}

#[tokio::test]
async fn deletes_of_gone_resources_succeed_and_other_errors_do_not() {
    let d = Recorder::default();
    let p: &dyn Provider = &d;
    p.delete(&scope(), ResourceKind::Network, "n-1")
        .await
        .unwrap();
    let e = p
        .delete(&scope(), ResourceKind::Volume, "v-1")
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::DependencyViolation);
    let e = p
        .delete(&scope(), ResourceKind::Bucket, "b")
        .await
        .unwrap_err();
    assert!(e.message.contains("not supported"));
    assert!(p
        .read(&scope(), ResourceKind::Subnet, &["s-1".into()])
        .await
        .unwrap()
        .is_empty());
    assert!(p
        .read(&scope(), ResourceKind::Network, &[])
        .await
        .unwrap()
        .is_empty());
    assert_eq!(d.calls(), vec!["delete_network n-1", "delete_volume v-1"]);
}

#[tokio::test]
async fn audit_lists_buckets_only_of_a_cloud_that_makes_them() {
    let without = Recorder::default();
    without.put(ResourceKind::Bucket, "b1", Attrs::new());
    let p: &dyn Provider = &without;
    let scope = Scope {
        region: "r1".into(),
    };
    assert!(p.list_all_buckets(&scope).await.unwrap().is_empty());
    assert!(without.calls().is_empty(), "{:?}", without.calls());

    let with = Recorder {
        buckets: true,
        ..Recorder::default()
    };
    with.put(ResourceKind::Bucket, "b1", Attrs::new());
    with.put(ResourceKind::Volume, "v1", Attrs::new());
    let p: &dyn Provider = &with;
    let listed = p.list_all_buckets(&scope).await.unwrap();
    assert_eq!(
        listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["b1"]
    );
    assert_eq!(with.calls(), ["list_buckets r1"]);
}
