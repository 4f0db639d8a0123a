//! Volumes (ECS cloud disks): `CreateDisk` + `AttachDisk`, resizing,
//! detaching and deleting. Buckets are not supported (OSS is another API).

use crate::client::{json_array, required, text, Params};
use crate::refresh::{observed, Api};
use crate::tags::{naming, tags_of};
use crate::AlibabaProvider;
use async_trait::async_trait;
use gpuform_provider::ok_if_gone;
use gpuform_provider::Result;
use gpuform_provider::{
    Attachment, Attrs, Cloud, Create, ErrorKind, ObservedResource, ProviderError, ResourceKind,
    Scope, StorageApi, Update, VolumeSpec,
};
use serde_json::{json, Value};

impl AlibabaProvider {
    async fn wait_in_use(&self, region: &str, disk: &str) -> Result<ObservedResource> {
        self.wait_for(region, ResourceKind::Volume, disk, "in use", |o| {
            o.status == "in_use"
        })
        .await
    }

    /// AttachDisk (ECS): InstanceId, DiskId, DeleteWithInstance=false (the
    /// disk outlives its instance: DeleteInstances retains it).
    async fn attach_disk(&self, region: &str, disk: &str, instance: &str) -> Result<()> {
        let mut p = Params::one("InstanceId", instance);
        p.push("DiskId", disk);
        p.push("DeleteWithInstance", "false");
        self.ecs(region, "AttachDisk", &p).await?;
        Ok(())
    }

    /// DetachDisk (ECS) from the instance DescribeDisks names, then waits
    /// for `Available`. A disk that is gone or not attached is fine.
    async fn detach_disk(&self, region: &str, d: &Value) -> Result<()> {
        let id = text(d, "DiskId");
        let attached_to = text(d, "InstanceId");
        if attached_to.is_empty() {
            return Ok(());
        }
        let mut p = Params::one("InstanceId", attached_to);
        p.push("DiskId", id.clone());
        ok_if_gone(self.ecs(region, "DetachDisk", &p).await)?;
        let detached = self.wait_for(region, ResourceKind::Volume, &id, "detached", |o| {
            o.status == "available"
        });
        ok_if_gone(detached.await)
    }

    /// The disk as DescribeDisks answers it, if it exists.
    async fn disk(&self, region: &str, id: &str) -> Result<Option<Value>> {
        let p = Params::one("DiskIds", json_array(&[id.to_string()]));
        Ok(self
            .describe(region, Api::Disk, &p)
            .await?
            .into_iter()
            .find(|d| text(d, "DiskId") == id))
    }
}

#[async_trait]
impl StorageApi for AlibabaProvider {
    async fn create_volume(&self, req: &Create<VolumeSpec>) -> Result<ObservedResource> {
        let region = req.region();
        let VolumeSpec {
            size_gb,
            zone,
            volume_type,
            instance,
        } = &req.spec;
        let instance = req.needs(Cloud::Alibaba, "instance", instance)?;
        let category = disk_category(volume_type.as_deref().unwrap_or("ssd"));
        // AttachDisk needs the instance Running (or Stopped): RunInstances
        // answers while it is still Pending.
        let inst = self
            .wait_for(region, ResourceKind::Instance, instance, "running", |o| {
                o.status == "running" || o.status == "stopped"
            })
            .await?;
        // No zone in the spec: the instance's own.
        let zone = zone.clone().or_else(|| {
            let of_instance = inst.attrs.get("zone").and_then(Value::as_str);
            of_instance.map(str::to_string)
        });
        let zone = req.needs(Cloud::Alibaba, "zone", &zone)?;
        // CreateDisk (ECS): ZoneId, Size, DiskCategory, DiskName,
        // ClientToken, Tag.N; answers DiskId.
        let mut p = Params::one("ZoneId", zone);
        p.push("Size", size_gb.to_string());
        p.push("DiskCategory", category);
        naming(&mut p, "DiskName", req, ResourceKind::Volume, &[])?;
        let body = self.ecs(region, "CreateDisk", &p).await?;
        let disk = required(&body, "DiskId", "CreateDisk")?;
        // A retried create (same ClientToken) gets the same disk back, which
        // may already be attached.
        let d = self
            .wait_for(region, ResourceKind::Volume, &disk, "available", |o| {
                o.status != "creating"
            })
            .await?;
        if d.status != "in_use" {
            self.attach_disk(region, &disk, instance).await?;
        }
        self.wait_in_use(region, &disk).await
    }

    /// Detaches the disk when attached, then DeleteDisk.
    async fn delete_volume(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let Some(d) = self.disk(region, id).await? else {
            return Ok(());
        };
        if !text(&d, "InstanceId").is_empty() {
            match self.detach_disk(region, &d).await {
                Ok(()) => {}
                Err(e) if e.kind == ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            }
            if self.disk(region, id).await?.is_none() {
                return Ok(());
            }
        }
        let p = Params::one("DiskId", id);
        ok_if_gone(self.ecs(region, "DeleteDisk", &p).await)
    }

    /// See [`gpuform_provider::CloudDriver::attach_volume`].
    async fn attach_volume(&self, u: &Update<'_, Attachment>) -> Result<()> {
        let (region, id, to) = (u.region(), u.id(), u.want);
        let d = self.disk(region, id).await?.ok_or_else(|| {
            ProviderError::new(ErrorKind::NotFound, format!("disk {id} does not exist"))
        })?;
        match to {
            Attachment::Detached => self.detach_disk(region, &d).await,
            Attachment::To(instance) if text(&d, "InstanceId") != *instance => {
                self.detach_disk(region, &d).await?;
                self.attach_disk(region, id, instance).await?;
                self.wait_in_use(region, id).await.map(|_| ())
            }
            Attachment::To(_) => Ok(()),
        }
    }

    /// ResizeDisk (ECS): DiskId, NewSize, Type=online (grow only).
    async fn resize_volume(&self, u: &Update<'_, u32>) -> Result<()> {
        let (region, current, size_gb) = (u.region(), u.current, *u.want);
        let mut p = Params::one("DiskId", current.id.clone());
        p.push("NewSize", size_gb.to_string());
        p.push("Type", "online");
        self.ecs(region, "ResizeDisk", &p).await?;
        Ok(())
    }
}

/// Neutral volume type → DiskCategory (CreateDisk).
fn disk_category(t: &str) -> String {
    match t {
        "ssd" => "cloud_essd".into(),
        "hdd" | "standard" => "cloud_efficiency".into(),
        other => other.to_string(),
    }
}

/// DiskCategory → neutral volume type.
fn volume_type(category: &str) -> String {
    match category {
        "cloud_essd" => "ssd".into(),
        "cloud_efficiency" => "hdd".into(),
        other => other.to_string(),
    }
}

/// A data disk as DescribeDisks reports it.
pub(crate) fn observe_disk(d: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert("zone".into(), json!(text(d, "ZoneId")));
    if let Some(s) = d.get("Size").and_then(Value::as_u64) {
        a.insert("size_gb".into(), json!(s));
    }
    a.insert(
        "volume_type".into(),
        json!(volume_type(&text(d, "Category"))),
    );
    // DescribeDisks: InstanceId is the instance the disk is attached to,
    // set only while it is In_use (or Attaching).
    let status = text(d, "Status");
    let instance = text(d, "InstanceId");
    a.insert(
        "attached_to".into(),
        if matches!(status.as_str(), "In_use" | "Attaching") && !instance.is_empty() {
            json!(instance)
        } else {
            Value::Null
        },
    );
    observed(ResourceKind::Volume, d, "DiskId", &tags_of(d), a, region)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disks_read_back_as_asked() {
        for t in ["ssd", "hdd", "cloud_auto"] {
            assert_eq!(volume_type(&disk_category(t)), t);
        }
        let d = json!({"DiskId": "d-1", "Status": "In_use", "InstanceId": "i-1", "Size": 500,
                       "Category": "cloud_essd", "ZoneId": "z"});
        let o = observe_disk(&d, "r");
        assert_eq!(
            (o.status.as_str(), &o.attrs["attached_to"]),
            ("in_use", &json!("i-1"))
        );
        let detaching = json!({"DiskId": "d-1", "Status": "Detaching", "InstanceId": "i-1"});
        assert_eq!(
            observe_disk(&detaching, "r").attrs["attached_to"],
            Value::Null
        );
    }
}
