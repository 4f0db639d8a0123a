//! Volumes: CBS cloud disks (CreateDisks + AttachDisks), resized and
//! re-attached in place. Buckets are not supported: COS is another API.
//!
//! CBS operations are asynchronous: each step waits on DescribeDisks for its
//! documented end state.

use crate::client::{first_id, s, CBS};
use crate::errors::reference_gone_is_invalid;
use crate::refresh;
use crate::tags::{resource_name, tag_list, TAG_KIND};
use crate::TencentProvider;
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::Backoff;
use gpuform_provider::Result;
use gpuform_provider::{
    Attachment, Cloud, Create, ErrorKind, ObservedResource, ProviderError, ResourceKind, Scope,
    StorageApi, Update, VolumeSpec,
};
use serde_json::{json, Value};
use std::time::Duration;

#[async_trait]
impl StorageApi for TencentProvider {
    /// https://www.tencentcloud.com/document/api/362/16312 (CreateDisks): an
    /// elastic disk in its zone; when the request names an instance, then
    /// AttachDisks to it. Without one the disk is returned once DescribeDisks
    /// shows it created (UNATTACHED), ready for the attach that follows
    /// ([`StorageApi::attach_volume`]).
    async fn create_volume(&self, req: &Create<VolumeSpec>) -> Result<ObservedResource> {
        let region = req.region();
        // Every field, named: a new one is a compile error here until it is sent.
        let VolumeSpec {
            size_gb,
            zone,
            volume_type,
            instance,
        } = &req.spec;
        // CreateDisks makes the disk in one zone (Placement.Zone, required).
        let zone = req.needs(Cloud::Tencent, attr::ZONE, zone)?;
        let tags = tag_list(
            &req.ownership,
            &[(TAG_KIND, ResourceKind::Volume.as_str())],
            &req.tags,
        );
        let body = json!({
            "Placement": {"Zone": zone},
            "DiskChargeType": "POSTPAID_BY_HOUR",
            "DiskType": crate::volume_types::disk_type(*volume_type),
            "DiskSize": size_gb,
            "DiskCount": 1,
            "DiskName": resource_name(&req.ownership, 60),
            "ClientToken": req.ownership.token,
            "Tags": tags,
        });
        let resp = self.client.call(CBS, "CreateDisks", region, &body).await?;
        let id = first_id(&resp, "CreateDisks", "DiskIdSet")?;
        // CreateDisks is asynchronous: "If a new cloud disk can be found and
        // its status is UNATTACHED or ATTACHED, the cloud disk has been
        // created successfully" (a retried create, same ClientToken, may find
        // it attached already).
        let disk = wait_disk(self, region, &id, "it exists", |d| {
            d.is_some_and(|d| matches!(s(d, "DiskState"), "UNATTACHED" | "ATTACHED" | "ATTACHING"))
        })
        .await?;
        let disk = match instance {
            Some(instance) if disk.as_ref().is_none_or(|d| s(d, "InstanceId") != instance) => {
                wait_attachable(self, region, instance).await?;
                attach_disk(self, region, &id, instance).await?;
                wait_attached(self, region, &id).await?
            }
            Some(_) => wait_attached(self, region, &id).await?,
            None => disk,
        };
        match disk {
            Some(d) => Ok(refresh::observe(&refresh::VOLUME, &d, region)),
            None => Err(ProviderError::new(
                ErrorKind::Transient,
                format!("disk {id} vanished"),
            )),
        }
    }

    /// Attaches the disk to `want` (detaching it from any other instance
    /// first), or detaches it, then waits for the documented end state.
    /// `current` is the disk as just read: its `attached_to` and status.
    async fn attach_volume(&self, u: &Update<'_, Attachment>) -> Result<()> {
        let (region, current, to) = (u.region(), u.current, u.want);
        let want = to.instance();
        let id = &current.id;
        let now = current.attrs.get(attr::ATTACHED_TO).and_then(Value::as_str);
        if now == want {
            return Ok(());
        }
        let state = current.status.to_ascii_uppercase();
        detach_disk(self, region, id, &state, now).await?;
        if let Some(instance) = want {
            // Right after its create the instance may still be PENDING.
            wait_attachable(self, region, instance).await?;
            attach_disk(self, region, id, instance).await?;
            wait_attached(self, region, id).await?;
        }
        Ok(())
    }

    /// https://www.tencentcloud.com/document/api/362/16320 (ResizeDisk): cloud
    /// disks only grow.
    async fn resize_volume(&self, u: &Update<'_, u32>) -> Result<()> {
        let (region, id, current, size_gb) = (u.region(), u.id(), u.current, *u.want);
        let now = current
            .attrs
            .get(attr::SIZE_GB)
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let size = u64::from(size_gb);
        if size < now {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "disk {id}: cloud disks only grow ({now} GB → {size} GB); replace it to shrink"
                ),
            ));
        }
        if size > now {
            let body = json!({"DiskId": id, "DiskSize": size});
            self.client.call(CBS, "ResizeDisk", region, &body).await?;
        }
        Ok(())
    }

    /// Detaches the disk, then https://www.tencentcloud.com/document/api/362/16321
    /// (TerminateDisks). Gone already: done.
    async fn delete_volume(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let Some(disk) = refresh::describe_one(self, &refresh::VOLUME, region, id).await? else {
            return Ok(());
        };
        let instance = Some(s(&disk, "InstanceId")).filter(|i| !i.is_empty());
        if !detach_disk(self, region, id, s(&disk, "DiskState"), instance).await? {
            return Ok(());
        }
        self.client
            .call(CBS, "TerminateDisks", region, &json!({"DiskIds": [id]}))
            .await?;
        Ok(())
    }
}

/// Polls DescribeDisks until `done` holds (CBS operations are asynchronous).
async fn wait_disk(
    p: &TencentProvider,
    region: &str,
    id: &str,
    what: &str,
    done: impl Fn(Option<&Value>) -> bool,
) -> Result<Option<Value>> {
    wait_on(p, &refresh::VOLUME, region, id, what, done).await
}

/// Polls `l`'s Describe call for `id` until `done` holds of what it answers
/// (`None`: not listed).
async fn wait_on(
    p: &TencentProvider,
    l: &refresh::Listing,
    region: &str,
    id: &str,
    what: &str,
    done: impl Fn(Option<&Value>) -> bool,
) -> Result<Option<Value>> {
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(3));
    for _ in 0..60 {
        let d = refresh::describe_one(p, l, region, id).await?;
        if done(d.as_ref()) {
            return Ok(d);
        }
        backoff.sleep().await;
    }
    Err(ProviderError::new(
        ErrorKind::Transient,
        format!("{} {id}: timed out waiting until {what}", l.kind),
    ))
}

/// Waits for `instance` to be RUNNING or STOPPED, its steady states
/// (InstanceState, https://www.tencentcloud.com/document/api/213/15753):
/// RunInstances answers while it is still PENDING, and an instance adopted
/// after a crash may be too. The AttachDisks page
/// (https://www.tencentcloud.com/document/api/362/16313) names no instance
/// states; a busy instance answers ResourceBusy, which [`attach_disk`]
/// still retries. One that will never run (LAUNCH_FAILED, terminated) is an
/// error at once.
async fn wait_attachable(p: &TencentProvider, region: &str, instance: &str) -> Result<()> {
    const NEVER: [&str; 3] = ["LAUNCH_FAILED", "SHUTDOWN", "TERMINATING"];
    let found = wait_on(p, &refresh::INSTANCE, region, instance, "it runs", |i| {
        i.is_some_and(|i| {
            let state = s(i, "InstanceState");
            matches!(state, "RUNNING" | "STOPPED") || NEVER.contains(&state)
        })
    })
    .await?;
    match found.as_ref().map(|i| s(i, "InstanceState")) {
        Some("RUNNING" | "STOPPED") => Ok(()),
        state => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "instance {instance} is {}: a disk cannot be attached to it",
                state.unwrap_or("not listed")
            ),
        )),
    }
}

async fn wait_attached(p: &TencentProvider, region: &str, id: &str) -> Result<Option<Value>> {
    wait_disk(p, region, id, "it is attached", |d| {
        d.is_some_and(|d| s(d, "DiskState") == "ATTACHED")
    })
    .await
}

/// https://www.tencentcloud.com/document/api/362/16313 (AttachDisks). The
/// instance may still be starting: a busy answer is retried a few times.
async fn attach_disk(p: &TencentProvider, region: &str, id: &str, instance: &str) -> Result<()> {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut tries = 0;
    let body = json!({"DiskIds": [id], "InstanceId": instance});
    loop {
        match p.client.call(CBS, "AttachDisks", region, &body).await {
            Ok(_) => return Ok(()),
            Err(e) if e.kind == ErrorKind::Transient && tries < 20 => {
                tries += 1;
                backoff.sleep().await;
            }
            Err(e) => return Err(reference_gone_is_invalid(e)),
        }
    }
}

/// DetachDisks when attached (`state` is its DiskState, `instance` the
/// instance it is on), then waits for UNATTACHED (or gone).
/// Ok(false): the disk is gone.
async fn detach_disk(
    p: &TencentProvider,
    region: &str,
    id: &str,
    state: &str,
    instance: Option<&str>,
) -> Result<bool> {
    if instance.is_none() && state == "UNATTACHED" {
        return Ok(true);
    }
    if state == "ATTACHED" {
        // https://www.tencentcloud.com/document/api/362/16316 (DetachDisks)
        match p
            .client
            .call(CBS, "DetachDisks", region, &json!({"DiskIds": [id]}))
            .await
        {
            Ok(_) => {}
            Err(e) if e.kind == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    let d = wait_disk(p, region, id, "it is detached", |d| {
        d.is_none_or(|d| s(d, "DiskState") == "UNATTACHED")
    })
    .await?;
    Ok(d.is_some())
}
