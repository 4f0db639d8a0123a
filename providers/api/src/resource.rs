//! The neutral resource model: what a cluster is made of, in words every
//! provider understands.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Attributes of a resource: neutral keys (documented per kind on
/// [`ResourceKind`]) to JSON values. A map rather than a struct per kind so
/// that diffing, state and rendering are one generic mechanism.
pub type Attrs = crate::SortedMap<serde_json::Value>;

/// A resource's dependencies: role (`subnet`, `instance`…) to the address
/// of the resource it stands on.
pub type Deps = crate::SortedMap<crate::Address>;

/// The kinds of resource a GPU cluster is made of.
///
/// Neutral attribute keys per kind:
/// - `network`: `cidr`
/// - `subnet`: `zone`, `cidr`
/// - `firewall`: `ingress` (list of `{protocol, from_port, to_port, cidr}`); all
///   traffic between members is always allowed. As observed, `ingress` holds
///   the rules the cloud reports, plus [`MEMBER_RULE_MISSING`] when the
///   members' rule is not there (a create interrupted before its rules were
///   authorized), so the diff plans an update that completes the group.
/// - `placement`: `strategy` (`cluster`: packed for NVLink/RDMA)
/// - `instance`: `instance_type`, `zone`, `image`, `pricing`, `root_gb`,
///   `rdma` (bool), `user_data`, `tags`; observed also `private_ip` (see
///   [`ResourceKind::reported_attrs`])
/// - `volume`: `zone`, `size_gb`, `volume_type`; observed also `attached_to`
///   (see [`ResourceKind::completion_attrs`])
/// - `bucket`: `name`, `storage_class` (`infrequent` / `archive`; absent is
///   `standard`), `versioning`, `encryption` (cloud-managed keys),
///   `lifecycle` (`{archive_after_days, expire_noncurrent_after_days}`),
///   `public_access_blocked`, `force_destroy` (a delete may empty it),
///   `size_gb` (the spec's estimate, for cost only: no call changes it),
///   `tags`; observed also `object_count` and `size_bytes` where the cloud
///   reports them
///
/// Dependencies are passed separately, as provider ids by role (see
/// [`crate::CreateRequest::refs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    Network,
    Subnet,
    Firewall,
    Placement,
    Instance,
    Volume,
    Bucket,
    /// An EC2 Capacity Block for ML, bought once and never cancelled: a
    /// capacity reservation with a window that nodes launch into.
    Block,
}

impl ResourceKind {
    pub const ALL: [ResourceKind; 8] = [
        ResourceKind::Network,
        ResourceKind::Subnet,
        ResourceKind::Firewall,
        ResourceKind::Placement,
        ResourceKind::Instance,
        ResourceKind::Volume,
        ResourceKind::Bucket,
        ResourceKind::Block,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ResourceKind::Network => "network",
            ResourceKind::Subnet => "subnet",
            ResourceKind::Firewall => "firewall",
            ResourceKind::Placement => "placement",
            ResourceKind::Instance => "instance",
            ResourceKind::Volume => "volume",
            ResourceKind::Bucket => "bucket",
            ResourceKind::Block => "block",
        }
    }

    /// Attributes that can change on an existing resource without replacing
    /// it. Every other attribute change forces a replacement.
    pub fn updatable_attrs(self) -> &'static [&'static str] {
        match self {
            ResourceKind::Instance => &[attr::TAGS],
            ResourceKind::Volume => &["size_gb", "tags", attr::ATTACHED_TO],
            ResourceKind::Firewall => &[attr::INGRESS, "tags"],
            ResourceKind::Bucket => &[
                "tags",
                "versioning",
                "encryption",
                "lifecycle",
                "public_access_blocked",
                "force_destroy",
                "size_gb",
            ],
            // A purchase: nothing about it changes after it is bought.
            ResourceKind::Block => &[],
            _ => &[attr::TAGS],
        }
    }

    pub fn is_updatable(self, attr: &str) -> bool {
        self.updatable_attrs().contains(&attr)
    }

    /// Observed-only attributes that say whether the steps a create makes
    /// after the resource exists were done. A create of several calls
    /// (CreateVolume then AttachVolume) can be killed between them; the
    /// resource is then adopted by its tags, and these attributes are how
    /// refresh sees what is missing, so that the plan completes it (an
    /// update) instead of ignoring it or replacing the resource.
    ///
    /// - `volume` `attached_to`: the provider id of the instance the volume
    ///   is attached to (or attaching to), `null` when it is detached.
    ///   Providers that report attachments always set the key; an absent key
    ///   means "not reported". In an update, `attached_to` = an instance id
    ///   attaches (detaching first from any other instance), `null` detaches;
    ///   both succeed when there is nothing to do.
    ///
    /// They are never part of the desired attributes nor recorded in state:
    /// the engine derives what they must be from the dependencies (a
    /// volume's `instance`). A firewall's equivalent is its observed
    /// `ingress` (see [`MEMBER_RULE_MISSING`]).
    pub fn completion_attrs(self) -> &'static [&'static str] {
        match self {
            ResourceKind::Volume => &[attr::ATTACHED_TO],
            _ => &[],
        }
    }
}

impl ResourceKind {
    /// Observed-only attributes that describe what the cloud chose when it
    /// made the resource: an instance's `private_ip` (its primary private
    /// IPv4 address in its subnet). Providers report them so that a
    /// dependent can use them at apply time (a k3s agent's user data holds
    /// its server's address); they are never desired, recorded in state nor
    /// compared by the diff, so a cloud that starts reporting one changes
    /// no plan.
    pub fn reported_attrs(self) -> &'static [&'static str] {
        match self {
            ResourceKind::Instance => &[attr::PRIVATE_IP],
            _ => &[],
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The entry a provider adds to a firewall's observed `ingress` when the
/// rule letting members reach each other is missing: the neutral `ingress`
/// lists only the spec's rules, so without it a group left bare by an
/// interrupted create would diff clean. An update of `ingress` always
/// (re)writes the members' rule with the listed ones.
pub const MEMBER_RULE_MISSING: &str = "all traffic between members";

/// `MEMBER_RULE_MISSING` as the JSON entry of an observed `ingress`.
pub fn member_rule_missing() -> serde_json::Value {
    serde_json::json!({ "missing": MEMBER_RULE_MISSING })
}

/// The entry a provider adds to a firewall's observed `ingress` when the
/// group does not let all outbound traffic out. Every firewall gpuform
/// makes allows all egress: most clouds' new groups do by default, a
/// Tencent group denies everything until its Egress policy is written (a
/// separate call, so a killed create can leave it without). Without this
/// marker such a group would diff clean while its nodes reach nothing; an
/// update of `ingress` always (re)opens egress.
pub const EGRESS_MISSING: &str = "all egress";

/// `EGRESS_MISSING` as the JSON entry of an observed `ingress`.
pub fn egress_missing() -> serde_json::Value {
    serde_json::json!({ "missing": EGRESS_MISSING })
}

/// The tags gpuform puts on everything it creates, atomically with the
/// creation. They are how a crashed apply's work is found again (adoption),
/// and how refresh finds everything of a project in a few paginated calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnershipTags {
    pub project: String,
    /// Resource address, e.g. `cluster.trainer.node[3]`.
    pub address: crate::Address,
    /// The idempotency token journaled before the create call.
    pub token: String,
    /// The state lineage: two states with the same project never adopt each
    /// other's resources.
    pub lineage: String,
    /// The state's workspace, when it is not `default` (no tag then, as
    /// before workspaces were tagged). Two workspaces of one project may
    /// hold the same addresses in one region: a refresh sees only its own
    /// workspace's resources, so they never meet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
}

impl OwnershipTags {
    pub const PROJECT: &'static str = "gpuform:project";
    pub const ADDRESS: &'static str = "gpuform:address";
    pub const TOKEN: &'static str = "gpuform:token";
    pub const LINEAGE: &'static str = "gpuform:lineage";
    pub const WORKSPACE: &'static str = "gpuform:workspace";
    /// Every ownership tag key: a cloud that replaces a resource's tags as
    /// a whole (bucket tagging) drops these before putting new ones.
    pub const KEYS: [&'static str; 5] = [
        Self::PROJECT,
        Self::ADDRESS,
        Self::TOKEN,
        Self::LINEAGE,
        Self::WORKSPACE,
    ];

    /// As cloud tags (key, value), in a fixed order.
    pub fn to_tags(&self) -> Vec<(&'static str, &str)> {
        let mut tags = vec![
            (Self::PROJECT, self.project.as_str()),
            (Self::ADDRESS, &self.address),
            (Self::TOKEN, &self.token),
            (Self::LINEAGE, &self.lineage),
        ];
        if let Some(w) = &self.workspace {
            tags.push((Self::WORKSPACE, w));
        }
        tags
    }

    /// [`OwnershipTags::to_tags`] as owned strings: what the clouds' tag
    /// lists and maps hold.
    pub fn owned_tags(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.to_tags()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
    }

    /// Whether this resource belongs to `workspace` (`None`: `default`).
    pub fn in_workspace(&self, workspace: Option<&str>) -> bool {
        self.workspace.as_deref() == workspace
    }

    /// Reads the ownership tags back from a resource's tags, if all are there.
    pub fn from_tags<'a>(mut get: impl FnMut(&str) -> Option<&'a str>) -> Option<Self> {
        Some(OwnershipTags {
            project: get(Self::PROJECT)?.to_string(),
            address: get(Self::ADDRESS)?.into(),
            token: get(Self::TOKEN)?.to_string(),
            lineage: get(Self::LINEAGE)?.to_string(),
            workspace: get(Self::WORKSPACE).map(str::to_string),
        })
    }
}

/// Tags a provider may add to keep what the engine asked for when the
/// cloud's API cannot report it back (so an unchanged resource diffs clean).
/// One set of names for every provider, so the clouds' consoles show the same.
pub mod record_tags {
    /// The neutral kind (`instance`, `volume`...).
    pub const KIND: &str = "gpuform:kind";
    /// The image the engine asked for (a logical name or a raw id).
    pub const IMAGE: &str = "gpuform:image";
    /// The pricing model the engine asked for.
    pub const PRICING: &str = "gpuform:pricing";
    /// Whether RDMA was asked for.
    pub const RDMA: &str = "gpuform:rdma";
}

/// A resource as a provider sees it in the cloud right now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedResource {
    pub kind: ResourceKind,
    /// The cloud's id (e.g. `i-0abc…`, `vpc-…`).
    pub id: String,
    pub region: String,
    /// Ownership tags, when the resource carries them.
    pub ownership: Option<OwnershipTags>,
    /// Neutral attributes as observed (same keys as the desired ones where
    /// the cloud reports them; missing keys mean "not reported").
    pub attrs: Attrs,
    /// The cloud's lifecycle status, lower case (`running`, `pending`, ...).
    /// Providers never return resources that are gone (terminated/deleted).
    pub status: String,
}

/// The neutral attribute keys (documented per kind on [`ResourceKind`]),
/// which resolve writes, the diff and the executor read, and every cloud's
/// observe functions report: one spelling, so a typo is a compile error
/// rather than an attribute nobody reads. A Capacity Block's keys are
/// [`crate::capacity::block_attr`]; a bucket's reported sizes are in
/// [`crate::bucket`].
pub mod attr {
    /// Where a subnet, instance or volume is.
    pub const ZONE: &str = "zone";
    /// A network's or subnet's address range.
    pub const CIDR: &str = "cidr";
    /// A firewall's rules (see [`super::ObservedIngress`](crate::ObservedIngress)).
    pub const INGRESS: &str = "ingress";
    /// A placement group's strategy (`cluster`).
    pub const STRATEGY: &str = "strategy";

    pub const INSTANCE_TYPE: &str = "instance_type";
    /// A logical image name or a cloud's raw image id.
    pub const IMAGE: &str = "image";
    /// `on-demand`, `spot` or `reserved`.
    pub const PRICING: &str = "pricing";
    pub const ROOT_GB: &str = "root_gb";
    pub const RDMA: &str = "rdma";
    pub const USER_DATA: &str = "user_data";
    /// The highest spot price a node may be billed (USD per hour).
    pub const SPOT_MAX_PRICE: &str = "spot_max_price";
    /// A node's MIG profile.
    pub const MIG: &str = "mig";
    /// An instance's primary private address (reported, never diffed).
    pub const PRIVATE_IP: &str = "private_ip";
    /// User tags of an instance or bucket.
    pub const TAGS: &str = "tags";

    /// A volume's size, or a bucket's estimated size (cost only).
    pub const SIZE_GB: &str = "size_gb";
    /// A volume's neutral type (`ssd`, `hdd`, ...).
    pub const VOLUME_TYPE: &str = "volume_type";
    /// The instance a volume is attached to (a completion attribute: see
    /// [`super::ResourceKind::completion_attrs`]).
    pub const ATTACHED_TO: &str = "attached_to";

    /// A bucket's name in its cloud.
    pub const NAME: &str = "name";
    pub const STORAGE_CLASS: &str = "storage_class";
    pub const VERSIONING: &str = "versioning";
    pub const ENCRYPTION: &str = "encryption";
    pub const LIFECYCLE: &str = "lifecycle";
    pub const PUBLIC_ACCESS_BLOCKED: &str = "public_access_blocked";
    /// Whether a delete may empty the bucket first.
    pub const FORCE_DESTROY: &str = "force_destroy";
}
