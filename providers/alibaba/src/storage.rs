//! Volumes (ECS cloud disks): `CreateDisk` in a zone, `AttachDisk` (at
//! create when the request names the instance, else as an update),
//! resizing, detaching and deleting. Buckets are not supported (OSS is another API).

use crate::api::Api;
use crate::client::{json_array, required, text, Params};
use crate::tags::naming;
use crate::volume_types;
use crate::AlibabaProvider;
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::ok_if_gone;
use gpuform_provider::Result;
use gpuform_provider::{
    Attachment, Cloud, Create, ErrorKind, ObservedResource, ProviderError, ResourceKind, Scope,
    StorageApi, Update, VolumeSpec,
};
use serde_json::Value;

impl AlibabaProvider {
    async fn wait_in_use(&self, region: &str, disk: &str) -> Result<ObservedResource> {
        self.wait_for(region, ResourceKind::Volume, disk, "in use", |o| {
            o.status == "in_use"
        })
        .await
    }

    /// Waits for a disk CreateDisk made to leave Creating ("Disk states",
    /// alibabacloud.com/help/en/ecs/developer-reference/disk-states): a new
    /// disk is then Available; one a retried create (same ClientToken)
    /// finds may be In_use already.
    async fn wait_created(&self, region: &str, disk: &str) -> Result<ObservedResource> {
        self.wait_for(region, ResourceKind::Volume, disk, "created", |o| {
            o.status != "creating"
        })
        .await
    }

    /// Waits for `instance` to be Running or Stopped, the states AttachDisk
    /// takes a data disk in (AttachDisk,
    /// alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-attachdisk):
    /// RunInstances answers while it is still Pending, and an instance
    /// adopted after a crash may be too.
    async fn wait_attachable(&self, region: &str, instance: &str) -> Result<ObservedResource> {
        self.wait_for(region, ResourceKind::Instance, instance, "running", |o| {
            o.status == "running" || o.status == "stopped"
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

    /// Puts `disk` on `instance` and waits until it is In_use there: once the
    /// instance takes disks and the disk has left Creating (AttachDisk wants
    /// it Available), detaching it first from any other instance.
    async fn attach_to(
        &self,
        region: &str,
        disk: &str,
        instance: &str,
    ) -> Result<ObservedResource> {
        self.wait_attachable(region, instance).await?;
        self.wait_created(region, disk).await?;
        let d = self.disk(region, disk).await?.ok_or_else(|| {
            ProviderError::new(ErrorKind::NotFound, format!("disk {disk} does not exist"))
        })?;
        if text(&d, "InstanceId") != instance {
            self.detach_disk(region, &d).await?;
            self.attach_disk(region, disk, instance).await?;
        }
        self.wait_in_use(region, disk).await
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
    /// CreateDisk (ECS,
    /// alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-createdisk):
    /// ZoneId (required without InstanceId), Size, DiskCategory, DiskName,
    /// ClientToken, Tag.N; answers DiskId. Without an instance the disk is
    /// made unattached in its zone and returned once it has left Creating,
    /// ready for the attach that follows ([`StorageApi::attach_volume`]);
    /// with one it is attached to it too.
    async fn create_volume(&self, req: &Create<VolumeSpec>) -> Result<ObservedResource> {
        let region = req.region();
        let VolumeSpec {
            size_gb,
            zone,
            volume_type,
            instance,
        } = &req.spec;
        let category = volume_types::category(*volume_type);
        let zone = match (zone, instance) {
            (Some(zone), _) => zone.clone(),
            // No zone in the spec: the instance's own.
            (None, Some(instance)) => {
                let inst = self.wait_attachable(region, instance).await?;
                let of_instance = inst.attrs.get(attr::ZONE).and_then(Value::as_str);
                let zone = of_instance.map(str::to_string);
                req.needs(Cloud::Alibaba, attr::ZONE, &zone)?.to_string()
            }
            (None, None) => req.needs(Cloud::Alibaba, attr::ZONE, zone)?.to_string(),
        };
        let mut p = Params::one("ZoneId", zone);
        p.push("Size", size_gb.to_string());
        p.push("DiskCategory", category);
        naming(&mut p, "DiskName", req, ResourceKind::Volume, &[])?;
        let body = self.ecs(region, "CreateDisk", &p).await?;
        let disk = required(&body, "DiskId", "CreateDisk")?;
        match instance {
            Some(instance) => self.attach_to(region, &disk, instance).await,
            None => self.wait_created(region, &disk).await,
        }
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
            // Right after its create the instance may still be Pending and
            // the disk Creating: attach_to waits for both.
            Attachment::To(instance) if text(&d, "InstanceId") != *instance => {
                self.attach_to(region, id, instance).await.map(|_| ())
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
