//! Inventory: everything in one (cloud, region) that the credentials can
//! see — not only gpuform's — for `gpuform audit`.
//!
//! A separate small trait rather than more methods on
//! [`crate::CloudDriver`]: a cloud answers it with a handful of paginated
//! list calls per region (its instance listing and its listing of unattached
//! data volumes), never one call per instance.

use crate::resource::attr;
use crate::Result;
use crate::{ObservedResource, ObservedVolumeType, OwnershipTags, Scope};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Whether an instance runs (and pays for its compute) as the cloud says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Starting or running: compute is billed.
    Running,
    /// Stopped or stopping: compute is not billed, its disks are.
    Stopped,
    /// Anything else the cloud reports (rebooting, error...).
    Other,
}

impl RunState {
    /// The neutral state of a cloud's instance status (any case): the
    /// statuses of DescribeInstances (EC2 `pending|running|stopping|stopped`,
    /// ECS `Pending|Starting|Running|Stopping|Stopped`, CVM
    /// `PENDING|RUNNING|STOPPING|STOPPED|STARTING|SHUTDOWN`) and of the
    /// Huawei ECS server list (`BUILD|ACTIVE|SHUTOFF`).
    pub fn of_status(status: &str) -> RunState {
        match status.to_ascii_lowercase().as_str() {
            "pending" | "starting" | "running" | "active" | "build" | "rebooting" | "reboot" => {
                RunState::Running
            }
            "stopping" | "stopped" | "shutoff" | "shutdown" => RunState::Stopped,
            _ => RunState::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Stopped => "stopped",
            RunState::Other => "other",
        }
    }
}

/// One instance as the cloud lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InventoryInstance {
    pub id: String,
    pub region: String,
    pub zone: Option<String>,
    pub instance_type: String,
    pub state: RunState,
    /// The cloud's own status word, lower case.
    pub status: String,
    /// When it was launched, as the cloud reports it (RFC 3339 / ISO 8601).
    pub launch_time: Option<String>,
    /// `spot`, `on-demand`, `reserved…` where the API says; `None` when it
    /// does not.
    pub pricing: Option<String>,
    /// Its tags as the cloud reports them (ownership tags included).
    pub tags: BTreeMap<String, String>,
    /// Its data and system disks in GB, where the listing says (for what a
    /// stopped instance still pays).
    pub disk_gb: Option<u64>,
    /// What it is built on, by dependency role (`network`, `subnet`,
    /// `placement`), where the listing says: what `gpuform import` takes
    /// with it. Empty on a cloud whose inventory does not say.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub uses: BTreeMap<String, String>,
    /// The firewalls (security groups) it is in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub firewalls: Vec<String>,
    /// Its attached data volumes (never its boot disk), by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_volumes: Vec<String>,
}

impl InventoryInstance {
    /// The `gpuform:project` tag, even when the other ownership tags are missing.
    pub fn project(&self) -> Option<&str> {
        self.tags.get(OwnershipTags::PROJECT).map(String::as_str)
    }

    /// The full set of ownership tags, when it carries them.
    pub fn ownership(&self) -> Option<OwnershipTags> {
        OwnershipTags::from_tags(|k| self.tags.get(k).map(String::as_str))
    }

    /// From a provider's observation of the instance (its `instance_type`,
    /// `zone`, `pricing` and user `tags` attributes, its ownership and
    /// status), plus what only the listing has.
    pub fn from_observed(
        o: &ObservedResource,
        launch_time: Option<String>,
        disk_gb: Option<u64>,
    ) -> InventoryInstance {
        let text = |k: &str| o.attrs.get(k).and_then(|v| v.as_str()).map(str::to_string);
        InventoryInstance {
            id: o.id.clone(),
            region: o.region.clone(),
            zone: text(attr::ZONE).filter(|z| !z.is_empty()),
            instance_type: text(attr::INSTANCE_TYPE).unwrap_or_default(),
            state: RunState::of_status(&o.status),
            status: o.status.to_ascii_lowercase(),
            launch_time: launch_time.filter(|t| !t.is_empty()),
            pricing: text(attr::PRICING).filter(|p| !p.is_empty()),
            tags: observed_tags(o),
            disk_gb,
            uses: BTreeMap::new(),
            firewalls: Vec::new(),
            data_volumes: Vec::new(),
        }
    }
}

/// A data volume attached to nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InventoryVolume {
    pub id: String,
    pub region: String,
    pub zone: Option<String>,
    pub size_gb: Option<u64>,
    /// Neutral when the cloud's table knows the disk, else the cloud's name.
    pub volume_type: Option<ObservedVolumeType>,
    pub tags: BTreeMap<String, String>,
}

impl InventoryVolume {
    pub fn project(&self) -> Option<&str> {
        self.tags.get(OwnershipTags::PROJECT).map(String::as_str)
    }

    pub fn from_observed(o: &ObservedResource) -> InventoryVolume {
        let text = |k: &str| o.attrs.get(k).and_then(|v| v.as_str()).map(str::to_string);
        InventoryVolume {
            id: o.id.clone(),
            region: o.region.clone(),
            zone: text(attr::ZONE).filter(|z| !z.is_empty()),
            size_gb: o.attrs.get(attr::SIZE_GB).and_then(|v| v.as_u64()),
            volume_type: text(attr::VOLUME_TYPE)
                .filter(|t| !t.is_empty())
                .map(|t| ObservedVolumeType::from_attr(&t)),
            tags: observed_tags(o),
        }
    }
}

/// A bucket, of any owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InventoryBucket {
    pub id: String,
    pub name: String,
    pub region: String,
    /// The neutral class new objects get: `standard`, `infrequent` or
    /// `archive` (`standard` when the cloud reports none).
    pub storage_class: String,
    /// Where the cloud reports them.
    pub object_count: Option<u64>,
    pub size_bytes: Option<u64>,
    pub tags: BTreeMap<String, String>,
}

impl InventoryBucket {
    pub fn project(&self) -> Option<&str> {
        self.tags.get(OwnershipTags::PROJECT).map(String::as_str)
    }

    /// From a provider's observation of the bucket (its `name`,
    /// `storage_class`, `object_count`, `size_bytes` and `tags`).
    pub fn from_observed(o: &ObservedResource) -> InventoryBucket {
        let text = |k: &str| o.attrs.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let count = |k: &str| o.attrs.get(k).and_then(|v| v.as_u64());
        InventoryBucket {
            id: o.id.clone(),
            name: text(attr::NAME).unwrap_or_else(|| o.id.clone()),
            region: o.region.clone(),
            storage_class: text(attr::STORAGE_CLASS).unwrap_or_else(|| "standard".to_string()),
            object_count: count(crate::bucket::OBJECT_COUNT),
            size_bytes: count(crate::bucket::SIZE_BYTES),
            tags: observed_tags(o),
        }
    }
}

/// User tags (`tags` attribute) plus ownership tags of an observation.
fn observed_tags(o: &ObservedResource) -> BTreeMap<String, String> {
    let mut tags = BTreeMap::new();
    if let Some(serde_json::Value::Object(user)) = o.attrs.get(attr::TAGS) {
        for (k, v) in user {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            tags.insert(k.clone(), v);
        }
    }
    if let Some(own) = &o.ownership {
        tags.extend(own.owned_tags());
    }
    tags
}

/// What one (cloud, region) holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Inventory {
    /// Every instance that is not terminated, of every owner.
    pub instances: Vec<InventoryInstance>,
    /// Every data volume attached to nothing.
    pub volumes: Vec<InventoryVolume>,
    /// Every bucket of the region (from [`crate::Provider::list_all_buckets`]).
    #[serde(default)]
    pub buckets: Vec<InventoryBucket>,
}

/// Everything in a region, of every owner, in a few paginated calls.
#[async_trait]
pub trait InventoryApi: Send + Sync {
    /// Every live instance and every unattached data volume in `scope`:
    /// one paginated listing per kind, whatever the number of instances.
    async fn inventory(&self, scope: &Scope) -> Result<Inventory>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_of_every_cloud_map_to_a_run_state() {
        for s in [
            "running", "Running", "RUNNING", "ACTIVE", "pending", "Starting",
        ] {
            assert_eq!(RunState::of_status(s), RunState::Running, "{s}");
        }
        for s in ["stopped", "Stopped", "STOPPED", "SHUTOFF", "stopping"] {
            assert_eq!(RunState::of_status(s), RunState::Stopped, "{s}");
        }
        assert_eq!(RunState::of_status("ERROR"), RunState::Other);
    }
}
