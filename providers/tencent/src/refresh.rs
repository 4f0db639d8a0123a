//! Reading resources back: `read` (Describe-by-ids) and `list_owned`
//! (Describe with a tag filter), one [`Listing`] per kind, and `observe`,
//! which reads a described item of a listing as an [`ObservedResource`]
//! (with [`crate::observe`]).
//!
//! An answer without the list (or, for a create, the object) its page
//! documents is an error, never an empty result (see
//! [`crate::errors::undocumented`]); a throttled call fails the refresh.

use crate::client::{s, Api, CBS, CVM, VPC};
use crate::errors::undocumented;
use crate::observe::{attachment, described, observed_ingress};
use crate::tags::{tag_filter, tags_of, TAG_KIND};
use crate::TencentProvider;
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    ErrorKind, Inventory, InventoryApi, InventoryInstance, InventoryVolume, Lookup,
    ObservedResource, OwnershipTags, ProviderError, RefreshApi, ResourceKind, Scope,
};
use serde_json::{json, Map, Value};

/// How one kind is described: its Describe call, the keys of its request
/// and answer, and how `list_owned` filters it.
#[derive(Debug)]
pub(crate) struct Listing {
    pub(crate) kind: ResourceKind,
    pub(crate) api: Api,
    pub(crate) action: &'static str,
    /// The request's id list (`VpcIds`).
    ids_key: &'static str,
    /// The answer's list (`VpcSet`).
    pub(crate) set_key: &'static str,
    /// An item's id (`VpcId`).
    pub(crate) id_key: &'static str,
    /// Ids per Describe-by-id call: DescribeInstances / DescribeVpcs /
    /// DescribeDisks take up to 100 ids; DescribeDisasterRecoverGroups' page
    /// says 10 in one revision and 100 in another, so 10.
    ids_per_call: usize,
    /// Whether the Describe call takes a `tag:` filter. Without one
    /// (DescribeDisasterRecoverGroups documents none) the region's items are
    /// listed and kept by their tags.
    tag_filter: bool,
    /// One more filter for `list_owned`.
    extra_filter: Option<(&'static str, &'static str)>,
}

impl Listing {
    fn keys(&self) -> (&'static str, &'static str) {
        (self.ids_key, self.set_key)
    }
}

const fn listing(
    kind: ResourceKind,
    api: Api,
    action: &'static str,
    (ids_key, set_key, id_key): (&'static str, &'static str, &'static str),
) -> Listing {
    Listing {
        kind,
        api,
        action,
        ids_key,
        set_key,
        id_key,
        ids_per_call: 100,
        tag_filter: true,
        extra_filter: None,
    }
}

/// DescribeVpcs.
pub(crate) const NETWORK: Listing = listing(
    ResourceKind::Network,
    VPC,
    "DescribeVpcs",
    ("VpcIds", "VpcSet", "VpcId"),
);
/// DescribeSubnets.
pub(crate) const SUBNET: Listing = listing(
    ResourceKind::Subnet,
    VPC,
    "DescribeSubnets",
    ("SubnetIds", "SubnetSet", "SubnetId"),
);
/// DescribeSecurityGroups.
pub(crate) const FIREWALL: Listing = listing(
    ResourceKind::Firewall,
    VPC,
    "DescribeSecurityGroups",
    ("SecurityGroupIds", "SecurityGroupSet", "SecurityGroupId"),
);
/// DescribeDisasterRecoverGroups: no tag filter.
pub(crate) const PLACEMENT: Listing = Listing {
    ids_per_call: 10,
    tag_filter: false,
    ..listing(
        ResourceKind::Placement,
        CVM,
        "DescribeDisasterRecoverGroups",
        (
            "DisasterRecoverGroupIds",
            "DisasterRecoverGroupSet",
            "DisasterRecoverGroupId",
        ),
    )
};
/// DescribeInstances.
pub(crate) const INSTANCE: Listing = listing(
    ResourceKind::Instance,
    CVM,
    "DescribeInstances",
    ("InstanceIds", "InstanceSet", "InstanceId"),
);
/// DescribeDisks (362/16315), data disks only: system disks carry their
/// instance's tags (213/15730).
pub(crate) const VOLUME: Listing = Listing {
    extra_filter: Some(("disk-usage", "DATA_DISK")),
    ..listing(
        ResourceKind::Volume,
        CBS,
        "DescribeDisks",
        ("DiskIds", "DiskSet", "DiskId"),
    )
};

const LISTINGS: [&Listing; 6] = [&NETWORK, &SUBNET, &FIREWALL, &PLACEMENT, &INSTANCE, &VOLUME];

fn listing_of(kind: ResourceKind) -> Option<&'static Listing> {
    LISTINGS.into_iter().find(|l| l.kind == kind)
}

/// One resource by id, as its Describe call answers; `None` when it is gone.
pub(crate) async fn describe_one(
    p: &TencentProvider,
    l: &Listing,
    region: &str,
    id: &str,
) -> Result<Option<Value>> {
    let found = p
        .client
        .describe_ids(l.api, l.action, region, l.keys(), &[id.to_string()], 1)
        .await?;
    Ok(found.into_iter().next())
}

#[async_trait]
impl RefreshApi for TencentProvider {
    /// The given resources of one kind; gone ones (and items that are not
    /// resources of the kind) are left out.
    async fn read(&self, q: &Lookup<'_>) -> Result<Vec<ObservedResource>> {
        let (scope, kind, ids) = (q.scope, q.kind, q.ids);
        let region = scope.region.as_str();
        let Some(l) = listing_of(kind) else {
            return Ok(Vec::new());
        };
        let found = self
            .client
            .describe_ids(l.api, l.action, region, l.keys(), ids, l.ids_per_call)
            .await?;
        observe_all(self, l, found.iter().filter(|v| counts(l, v)), region).await
    }

    /// Everything of `project` in `region`: one paginated call per kind
    /// (Limit 100) filtered by `tag:gpuform:project`.
    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>> {
        let region = scope.region.as_str();
        let mut out = Vec::new();
        for l in LISTINGS {
            let mut ours = Vec::new();
            let mut filters = Vec::new();
            if l.tag_filter {
                filters.push(tag_filter(OwnershipTags::PROJECT, project));
            }
            if let Some((name, value)) = l.extra_filter {
                filters.push(json!({"Name": name, "Values": [value]}));
            }
            let mut body = Map::new();
            if !filters.is_empty() {
                body.insert("Filters".into(), Value::Array(filters));
            }
            for v in self
                .client
                .describe_all(l.api, l.action, region, body, l.set_key)
                .await?
            {
                let tagged = l.tag_filter
                    || tags_of(&v).get(OwnershipTags::PROJECT).map(String::as_str) == Some(project);
                if tagged && counts(l, &v) {
                    ours.push(v);
                }
            }
            out.extend(observe_all(self, l, ours.iter(), region).await?);
        }
        Ok(out)
    }
}

/// [`observe`] of each item; a security group also gets its rules read
/// back (one DescribeSecurityGroupPolicies each: DescribeSecurityGroups does
/// not answer them), so a bare or drifted group shows in the plan.
async fn observe_all<'a>(
    p: &TencentProvider,
    l: &Listing,
    items: impl Iterator<Item = &'a Value>,
    region: &str,
) -> Result<Vec<ObservedResource>> {
    let mut out = Vec::new();
    for v in items {
        let mut o = observe(l, v, region);
        if l.kind == ResourceKind::Firewall {
            let ingress = group_ingress(p, region, &o.id).await?;
            o.attrs.insert(attr::INGRESS.into(), ingress);
        }
        out.push(o);
    }
    Ok(out)
}

/// Whether a described item is a live resource of the listing's kind.
fn counts(l: &Listing, v: &Value) -> bool {
    match l.kind {
        ResourceKind::Instance => instance_alive(v),
        ResourceKind::Volume => disk_alive(v) && is_volume(v),
        _ => true,
    }
}

/// A described item as the neutral resource of the listing's kind.
pub(crate) fn observe(l: &Listing, v: &Value, region: &str) -> ObservedResource {
    described(l.kind, l.id_key, v, region)
}

/// Instances on their way out (TerminateInstances accepted, or in the recycle
/// bin awaiting release: SHUTDOWN, 213/4856) and launches that failed
/// (LAUNCH_FAILED, 213/15753) are not nodes.
fn instance_alive(v: &Value) -> bool {
    !matches!(
        s(v, "InstanceState"),
        "TERMINATING" | "SHUTDOWN" | "LAUNCH_FAILED"
    )
}

fn disk_alive(v: &Value) -> bool {
    !matches!(s(v, "DiskState"), "TORECYCLE")
}

/// Only data disks are volumes. RunInstances binds the instance's tags to its
/// system disk as well ("the tag can be bound to the corresponding CVM and
/// CBS instances at the same time", https://cloud.tencent.com/document/api/213/15730),
/// so a system disk carries a node's address and token: listed as a volume
/// it would be a stray to delete, or be adopted as the node after a crash.
/// `DiskUsage` is SYSTEM_DISK or DATA_DISK (DescribeDisks, 362/16315); a disk
/// tagged with another neutral kind is not a volume either.
fn is_volume(v: &Value) -> bool {
    let usage = s(v, "DiskUsage");
    let kind = tags_of(v).get(TAG_KIND).cloned();
    (usage.is_empty() || usage == "DATA_DISK")
        && kind.is_none_or(|k| k == ResourceKind::Volume.as_str())
}

/// Everything in the region, of every owner (`gpuform audit`, `gpuform
/// import`): one DescribeInstances listing (its `SystemDisk` and `DataDisks`
/// give each instance's disk size, `CreatedTime` its launch,
/// `VirtualPrivateCloud`, `SecurityGroupIds` and `DisasterRecoverGroupId`
/// what it is built on, 213/15753) and one DescribeDisks listing filtered by
/// `disk-usage` DATA_DISK (362/16315): the UNATTACHED ones are listed, the
/// others give each instance its data disks (`InstanceId`). Each paged by 100.
#[async_trait]
impl InventoryApi for TencentProvider {
    async fn inventory(&self, scope: &Scope) -> Result<Inventory> {
        let region = scope.region.as_str();
        let mut disk_filter = Map::new();
        disk_filter.insert(
            "Filters".into(),
            json!([{"Name": "disk-usage", "Values": ["DATA_DISK"]}]),
        );
        let (instances, disks) = tokio::try_join!(
            self.client.describe_all(
                INSTANCE.api,
                INSTANCE.action,
                region,
                Map::new(),
                INSTANCE.set_key
            ),
            self.client.describe_all(
                VOLUME.api,
                VOLUME.action,
                region,
                disk_filter,
                VOLUME.set_key
            ),
        )?;
        let disks: Vec<&Value> = disks
            .iter()
            .filter(|v| disk_alive(v) && is_volume(v))
            .collect();
        let mut out = Inventory::default();
        for v in instances.iter().filter(|v| instance_alive(v)) {
            let size = |d: &Value| d.get("DiskSize").and_then(Value::as_u64).unwrap_or(0);
            let system = v.get("SystemDisk").map_or(0, size);
            let data: u64 = v
                .get("DataDisks")
                .and_then(Value::as_array)
                .map_or(0, |ds| ds.iter().map(size).sum());
            let disk_gb = Some(system + data).filter(|gb| *gb > 0);
            let o = observe(&INSTANCE, v, region);
            let mut row = InventoryInstance::from_observed(
                &o,
                Some(s(v, "CreatedTime").to_string()),
                disk_gb,
            );
            row.tags.extend(tags_of(v));
            built_on(v, &disks, &mut row);
            out.instances.push(row);
        }
        for v in disks.iter().filter(|v| s(v, "DiskState") == "UNATTACHED") {
            let mut row = InventoryVolume::from_observed(&observe(&VOLUME, v, region));
            row.tags.extend(tags_of(v));
            out.volumes.push(row);
        }
        Ok(out)
    }
}

/// What an instance is built on, by DescribeInstances' `VirtualPrivateCloud`
/// {`VpcId`, `SubnetId`}, `SecurityGroupIds` and `DisasterRecoverGroupId`
/// (213/15753), and its data disks: those `disks` attached to it.
fn built_on(v: &Value, disks: &[&Value], row: &mut InventoryInstance) {
    let vpc = v.get("VirtualPrivateCloud").unwrap_or(&Value::Null);
    for (role, id) in [
        ("network", s(vpc, "VpcId")),
        ("subnet", s(vpc, "SubnetId")),
        ("placement", s(v, "DisasterRecoverGroupId")),
    ] {
        if !id.is_empty() {
            row.uses.insert(role.to_string(), id.to_string());
        }
    }
    row.firewalls = v
        .get("SecurityGroupIds")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    row.data_volumes = disks
        .iter()
        .filter(|d| attachment(d).as_deref() == Some(row.id.as_str()))
        .map(|d| s(d, "DiskId").to_string())
        .collect();
    row.data_volumes.sort();
}

/// The VPC of a subnet (RunInstances needs both), cached: a subnet never moves.
pub(crate) async fn vpc_of_subnet(
    p: &TencentProvider,
    region: &str,
    subnet: &str,
) -> Result<String> {
    if let Some(v) = p
        .subnet_vpc
        .lock()
        .ok()
        .and_then(|m| m.get(subnet).cloned())
    {
        return Ok(v);
    }
    let found = describe_one(p, &SUBNET, region, subnet).await?;
    let vpc = found
        .map(|v| s(&v, "VpcId").to_string())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("subnet {subnet} does not exist in {region}"),
            )
        })?;
    if let Ok(mut m) = p.subnet_vpc.lock() {
        m.insert(subnet.to_string(), vpc.clone());
    }
    Ok(vpc)
}

/// A group's observed `ingress`: its Ingress policies, by
/// https://www.tencentcloud.com/document/api/215/15804
/// (DescribeSecurityGroupPolicies: `SecurityGroupPolicySet` with
/// `Version`, `Ingress` and `Egress`). An answer without them is an
/// error, never "no rules".
pub(crate) async fn group_ingress(p: &TencentProvider, region: &str, sg: &str) -> Result<Value> {
    const ACTION: &str = "DescribeSecurityGroupPolicies";
    let resp = p
        .client
        .call(VPC, ACTION, region, &json!({ "SecurityGroupId": sg }))
        .await?;
    let direction = |d: &str| {
        resp.get("SecurityGroupPolicySet")
            .and_then(|set| set.get(d))
            .and_then(Value::as_array)
            .ok_or_else(|| undocumented(ACTION, &format!("SecurityGroupPolicySet.{d}")))
    };
    Ok(observed_ingress(
        sg,
        direction("Ingress")?,
        direction("Egress")?,
    ))
}
