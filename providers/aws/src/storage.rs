//! Data volumes (EBS): create, attach and detach, grow, delete. Buckets (S3)
//! are not EC2 and not supported yet.

use crate::client::{by_id, describe_volumes, empty_answer};
use crate::errors::{done, sent, Op};
use crate::instances::{existing_instance, launch_wait, wait_launched};
use crate::observe::{attachment, live_attachments, observe_volume, volume_gone};
use crate::tags::{client_token, new_tag_spec};
use crate::AwsProvider;
use async_trait::async_trait;
use aws_sdk_ec2::types::{ResourceType, Volume, VolumeState};
use aws_sdk_ec2::Client;
use gpuform_provider::Result;
use gpuform_provider::{
    Attachment, Backoff, Create, ErrorKind, ObservedResource, ProviderError, Scope, StorageApi,
    Update, VolumeSpec,
};
use std::time::Duration;

#[async_trait]
impl StorageApi for AwsProvider {
    async fn create_volume(&self, req: &Create<VolumeSpec>) -> Result<ObservedResource> {
        let c = self.client(&req.scope)?;
        // Every field, so that a new one is a compile error here.
        let VolumeSpec {
            size_gb,
            zone,
            volume_type,
            instance,
        } = &req.spec;
        let mut zone = zone.clone();
        if let (Some(id), None) = (instance, &zone) {
            zone = existing_instance(&c, id)
                .await?
                .placement()
                .and_then(|p| p.availability_zone())
                .map(str::to_string);
        }
        let zone = zone.ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                "a volume on aws needs `zone`, or an `instance` to take it from",
            )
        })?;
        let request = c
            .create_volume()
            .availability_zone(&zone)
            .size(*size_gb as i32)
            .volume_type(crate::volume_types::ebs(*volume_type))
            .client_token(client_token(&req.ownership.token))
            .tag_specifications(new_tag_spec(req, "volume", ResourceType::Volume));
        let out = sent("CreateVolume", Op::Create, request.send()).await?;
        let volume_id = out
            .volume_id()
            .ok_or_else(|| empty_answer("CreateVolume"))?
            .to_string();
        // Out of `creating` before answering, attached or not: the attach
        // that follows (now, or as an update) needs it `available`.
        let v = wait_created(&c, &volume_id).await?;
        if let Some(instance_id) = instance {
            // A retried create (same ClientToken) may find it attached already.
            if attachment(&v).as_deref() != Some(instance_id.as_str()) {
                attach(&c, &volume_id, instance_id).await?;
            }
        }
        let v = describe_volumes(&c, by_id("volume-id", &volume_id)).await?;
        let v = v.first().ok_or_else(|| empty_answer("DescribeVolumes"))?;
        Ok(observe_volume(v, req.region()))
    }

    /// Moves a volume to `to`: detaches it from any other instance first;
    /// nothing to do when it is already there.
    async fn attach_volume(&self, u: &Update<'_, Attachment>) -> Result<()> {
        let (scope, current, to) = (u.scope, u.current, u.want);
        let c = self.client(scope)?;
        let id = current.id.as_str();
        // Described again: detaching needs each attachment's instance and device.
        let vols = describe_volumes(&c, by_id("volume-id", id)).await?;
        let v = vols.first().ok_or_else(|| {
            ProviderError::new(ErrorKind::NotFound, format!("volume {id} does not exist"))
                .with_code("InvalidVolume.NotFound")
        })?;
        match to.instance() {
            None => detach_volume(&c, v).await,
            Some(instance) if attachment(v).as_deref() != Some(instance) => {
                detach_volume(&c, v).await?;
                // Adopted after a crash, it may still be `creating`.
                if v.state() == Some(&VolumeState::Creating) {
                    wait_created(&c, id).await?;
                }
                attach(&c, id, instance).await
            }
            Some(_) => Ok(()),
        }
    }

    /// ModifyVolume to the new size (EBS volumes only grow).
    async fn resize_volume(&self, u: &Update<'_, u32>) -> Result<()> {
        let (scope, current, size_gb) = (u.scope, u.current, *u.want);
        let size = i32::try_from(size_gb).map_err(|_| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("volume size_gb {size_gb} is not a size in GiB"),
            )
        })?;
        let c = self.client(scope)?;
        let request = c.modify_volume().volume_id(&current.id).size(size);
        done("ModifyVolume", Op::Other, request.send()).await
    }

    /// Detaches the volume when it is attached, then deletes it.
    async fn delete_volume(&self, scope: &Scope, id: &str) -> Result<()> {
        let c = &self.client(scope)?;
        let vols = describe_volumes(c, by_id("volume-id", id)).await?;
        let Some(v) = vols.first() else { return Ok(()) };
        if volume_gone(v) {
            return Ok(());
        }
        detach_volume(c, v).await?;
        let request = c.delete_volume().volume_id(id);
        done("DeleteVolume", Op::Other, request.send()).await
    }
}

/// The volume once DescribeVolumes shows it out of `creating`: AttachVolume
/// refuses a volume that is not `available` (IncorrectState). A new volume
/// is `creating` for a few seconds on AWS, and may not be listed at once
/// (eventual consistency); past two minutes this is a transient error.
async fn wait_created(c: &Client, volume_id: &str) -> Result<Volume> {
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5))
        .until(Duration::from_secs(120));
    loop {
        let listed = describe_volumes(c, by_id("volume-id", volume_id)).await?;
        match listed.into_iter().next() {
            Some(v) if v.state() != Some(&VolumeState::Creating) => return Ok(v),
            _ if !backoff.sleep().await => {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!("volume {volume_id} is still creating after two minutes"),
                ))
            }
            _ => {}
        }
    }
}

/// AttachVolume at the instance's first free device name, once the instance
/// has left `pending` ("Attaches an EBS volume to a running or stopped
/// instance", AttachVolume, EC2 API reference): an instance adopted after a
/// crash may still be launching.
async fn attach(c: &Client, volume_id: &str, instance_id: &str) -> Result<()> {
    let inst = existing_instance(c, instance_id).await?;
    let inst = wait_launched(c, inst, launch_wait()).await?;
    let used: Vec<String> = inst
        .block_device_mappings()
        .iter()
        .filter_map(|m| m.device_name().map(str::to_string))
        .collect();
    let device = free_device(&used).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("instance {instance_id} has no free device name left"),
        )
    })?;
    let request = c
        .attach_volume()
        .volume_id(volume_id)
        .instance_id(instance_id)
        .device(device);
    done("AttachVolume", Op::Create, request.send()).await
}

/// DetachVolume from every instance it is attached to, then waits a little
/// for it to be `available` (the engine retries DependencyViolation after).
async fn detach_volume(c: &Client, v: &Volume) -> Result<()> {
    let id = v.volume_id().unwrap_or_default();
    let attached: Vec<(Option<String>, Option<String>)> = live_attachments(v)
        .map(|a| {
            (
                a.instance_id().map(str::to_string),
                a.device().map(str::to_string),
            )
        })
        .collect();
    for (instance_id, device) in &attached {
        // Naming the instance and device is optional on AWS but makes the
        // call unambiguous (and moto requires the instance).
        let detached = c
            .detach_volume()
            .volume_id(id)
            .set_instance_id(instance_id.clone())
            .set_device(device.clone());
        match done("DetachVolume", Op::Other, detached.send()).await {
            // Detached (or gone) meanwhile: nothing left to do for it.
            Err(e) if e.kind != ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    if !attached.is_empty() {
        for _ in 0..15 {
            let now = describe_volumes(c, by_id("volume-id", id)).await?;
            if now
                .first()
                .map(|v| v.state() == Some(&VolumeState::Available))
                .unwrap_or(true)
            {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    Ok(())
}

/// The first free device name for a data volume (/dev/sdf ... /dev/sdp).
fn free_device(used: &[String]) -> Option<String> {
    let tail = |d: &str| -> String {
        d.trim_start_matches("/dev/")
            .trim_start_matches("sd")
            .trim_start_matches("xvd")
            .to_string()
    };
    let taken = |d: &str| used.iter().any(|u| tail(u) == tail(d));
    ('f'..='p')
        .map(|c| format!("/dev/sd{c}"))
        .find(|d| !taken(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_volume_devices() {
        assert_eq!(
            free_device(&["/dev/xvda".into()]).as_deref(),
            Some("/dev/sdf")
        );
        assert_eq!(
            free_device(&["/dev/sda1".into(), "/dev/sdf".into(), "/dev/xvdg".into()]).as_deref(),
            Some("/dev/sdh")
        );
        let all: Vec<String> = ('f'..='p').map(|c| format!("/dev/sd{c}")).collect();
        assert_eq!(free_device(&all), None);
    }
}
