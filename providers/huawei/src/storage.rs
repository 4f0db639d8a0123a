//! Data disks (EVS): create, attach/detach through ECS, grow, delete.
//! Buckets (OBS) are not made yet.

use crate::client::{job_entity_ids, list_field, s, Call, Service};
use crate::observe::{attachment, observe_volume};
use crate::{tags, HuaweiProvider};
use async_trait::async_trait;
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    Attachment, Cloud, Create, ErrorKind, ObservedResource, ProviderError, Scope, StorageApi,
    Update, VolumeSpec,
};
use serde_json::{json, Value};

#[async_trait]
impl StorageApi for HuaweiProvider {
    /// "Creating EVS Disks", POST /v2.1/{project_id}/cloudvolumes
    /// (support.huaweicloud.com/api-evs/evs_04_2003.html, asynchronous: job on
    /// the EVS endpoint; `availability_zone` is required, a server is not),
    /// then, when the request names a server, "Attaching an EVS Disk to an
    /// ECS", POST /v1/{project_id}/cloudservers/{server_id}/attachvolume
    /// (support.huaweicloud.com/api-ecs/ecs_02_0605.html, an ECS job).
    /// Without a server the disk is returned once it has left `creating`
    /// (`available`: "can be attached", "EVS Disk Status",
    /// support.huaweicloud.com/api-evs/evs_04_0040.html), ready for the
    /// attach that follows ([`StorageApi::attach_volume`]).
    async fn create_volume(&self, req: &Create<VolumeSpec>) -> Result<ObservedResource> {
        let VolumeSpec {
            size_gb,
            zone,
            volume_type,
            instance,
        } = &req.spec;
        let region = req.region();
        let pid = self.project(region)?;
        let zone = req.needs(Cloud::Huawei, attr::ZONE, zone)?;
        let vtype = crate::volume_types::evs_type(*volume_type);
        let name = tags::name_for(&req.ownership.token);
        let tag_list = tags::for_create(req)?;
        // A create interrupted after EVS accepted it is found by its name.
        let found = self
            .send(
                Call::new(
                    Service::Evs,
                    region,
                    "GET",
                    format!("/v2/{pid}/cloudvolumes/detail"),
                )
                .query("name", name.clone()),
            )
            .await?;
        let existing = list_field(&found, "volumes", "looking up EVS disks by name")?
            .into_iter()
            .find(|v| s(v, "name") == name && s(v, "status") != "deleting");
        let vol = match existing {
            Some(v) => v,
            None => {
                let tag_map: serde_json::Map<String, Value> = tag_list
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                let body = json!({
                    "volume": {"name": name, "availability_zone": zone, "size": size_gb, "volume_type": vtype, "tags": tag_map},
                    "bssParam": {"chargingMode": "postPaid"},
                });
                let v = self
                    .send(
                        Call::new(
                            Service::Evs,
                            region,
                            "POST",
                            format!("/v2.1/{pid}/cloudvolumes"),
                        )
                        .body(body),
                    )
                    .await?;
                let job_id = s(&v, "job_id");
                let job = self
                    .client
                    .wait_job(Service::Evs, region, pid, &job_id)
                    .await?;
                let id = job_entity_ids(&job, "volume_id")
                    .into_iter()
                    .next()
                    .or_else(|| {
                        v.get("volume_ids")
                            .and_then(Value::as_array)?
                            .first()?
                            .as_str()
                            .map(str::to_string)
                    });
                let id = id.ok_or_else(|| {
                    ProviderError::new(
                        ErrorKind::Transient,
                        format!("EVS job {job_id} names no volume"),
                    )
                })?;
                volume(self, region, pid, &id).await?
            }
        };
        let id = s(&vol, "id");
        // A disk found after a crash may still be creating, or attaching to
        // its server: that attach finishes by itself.
        let vol = settled(self, region, pid, &id, vol).await?;
        if let Some(server) = instance {
            if attachment(&vol).as_deref() != Some(server.as_str()) {
                attach(self, region, pid, &id, server).await?;
            }
        }
        Ok(observe_volume(
            &volume(self, region, pid, &id).await?,
            region,
        ))
    }

    /// Attaches the disk to `to` (detaching it from any other server first) or
    /// detaches it, once no operation is in flight on it (see [`settled`]).
    async fn attach_volume(&self, u: &Update<'_, Attachment>) -> Result<()> {
        let (region, id, to) = (u.region(), u.id(), u.want);
        let pid = self.project(region)?;
        let vol = volume(self, region, pid, id).await?;
        let vol = settled(self, region, pid, id, vol).await?;
        let want = to.instance();
        if attachment(&vol).as_deref() != want {
            detach(self, region, pid, id, &vol).await?;
            if let Some(server) = want {
                attach(self, region, pid, id, server).await?;
            }
        }
        Ok(())
    }

    /// "Expanding EVS Disk Capacity", POST
    /// /v2.1/{project_id}/cloudvolumes/{volume_id}/action (a job). EVS disks
    /// only grow.
    async fn resize_volume(&self, u: &Update<'_, u32>) -> Result<()> {
        let (region, id, size_gb) = (u.region(), u.id(), *u.want);
        let pid = self.project(region)?;
        let new = u64::from(size_gb);
        let vol = volume(self, region, pid, id).await?;
        let old = vol.get("size").and_then(Value::as_u64).unwrap_or(0);
        if new < old {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("EVS disks cannot shrink ({old} GB → {new} GB)"),
            ));
        }
        if new > old {
            let path = format!("/v2.1/{pid}/cloudvolumes/{id}/action");
            let call = Call::new(Service::Evs, region, "POST", path)
                .body(json!({"os-extend": {"new_size": new}}));
            self.client.run_job(call, pid).await?;
        }
        Ok(())
    }

    /// Detaches the disk, then "Deleting an EVS Disk", DELETE
    /// /v2/{project_id}/cloudvolumes/{volume_id} (a job when it answers one).
    async fn delete_volume(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let pid = self.project(region)?;
        let vol = volume(self, region, pid, id).await?;
        let vol = settled(self, region, pid, id, vol).await?;
        detach(self, region, pid, id, &vol).await?;
        let path = format!("/v2/{pid}/cloudvolumes/{id}");
        let v = self.client.delete(Service::Evs, region, path).await?;
        let job = s(&v, "job_id");
        if !job.is_empty() {
            self.client
                .wait_job(Service::Evs, region, pid, &job)
                .await?;
        }
        Ok(())
    }
}

/// EVS disk statuses that end by themselves: an operation is in flight
/// ("EVS Disk Status", support.huaweicloud.com/api-evs/evs_04_0040.html).
/// A disk in one refuses a new attach or detach (an attach needs
/// `available`: Ecs.0103), and its `attachments` list is empty while it is
/// `attaching`; a run killed while the ECS attach job ran finds it so.
const IN_FLIGHT: [&str; 9] = [
    "creating",
    "attaching",
    "detaching",
    "extending",
    "downloading",
    "uploading",
    "backing-up",
    "restoring-backup",
    "rollbacking",
];

/// `vol` once no operation is in flight on it: read again every half
/// second, for up to a minute (a stuck disk is a transient error, never
/// a second attach that would fail).
async fn settled(
    p: &HuaweiProvider,
    region: &str,
    pid: &str,
    id: &str,
    vol: Value,
) -> Result<Value> {
    let mut vol = vol;
    let every = std::time::Duration::from_millis(500);
    let mut wait = gpuform_provider::Backoff::new(every, every).until(every * 120);
    loop {
        if !IN_FLIGHT.contains(&s(&vol, "status").as_str()) {
            return Ok(vol);
        }
        if !wait.sleep().await {
            break;
        }
        vol = volume(p, region, pid, id).await?;
    }
    Err(ProviderError::new(
        ErrorKind::Transient,
        format!(
            "EVS disk {id} is still {} after a minute",
            s(&vol, "status")
        ),
    ))
}

/// "Attaching an EVS Disk to an ECS", POST
/// /v1/{project_id}/cloudservers/{server_id}/attachvolume: a job, sent once
/// the server is ACTIVE or SHUTOFF ([`server_settled`]).
async fn attach(p: &HuaweiProvider, region: &str, pid: &str, id: &str, server: &str) -> Result<()> {
    server_settled(p, region, pid, server).await?;
    let path = format!("/v1/{pid}/cloudservers/{server}/attachvolume");
    let call = Call::new(Service::Ecs, region, "POST", path)
        .body(json!({"volumeAttachment": {"volumeId": id}}));
    p.client.run_job(call, pid).await?;
    Ok(())
}

/// Waits for `server` to be ACTIVE or SHUTOFF ("Querying ECS Details", GET
/// /v1/{project_id}/cloudservers/{server_id}), its steady states ("ECS
/// Statuses", support.huaweicloud.com/api-ecs/ecs_08_0002.html): a server
/// adopted after a crash may still be BUILD, "created but not running",
/// which the attach page does not promise to take (it refuses SUSPENDED
/// and PAUSED servers, support.huaweicloud.com/api-ecs/ecs_03_0903.html).
/// ERROR or DELETED never gets there and fails at once.
async fn server_settled(p: &HuaweiProvider, region: &str, pid: &str, server: &str) -> Result<()> {
    let path = format!("/v1/{pid}/cloudservers/{server}");
    let ready = ["ACTIVE", "SHUTOFF"];
    let failed = ["ERROR", "DELETED"];
    p.client
        .wait_status(Service::Ecs, region, path, "server", &ready, &failed)
        .await?;
    Ok(())
}

/// "Detaching an EVS Disk from an ECS", DELETE
/// /v1/{project_id}/cloudservers/{server_id}/detachvolume/{volume_id}, from
/// every server the disk's `attachments` name.
async fn detach(p: &HuaweiProvider, region: &str, pid: &str, id: &str, vol: &Value) -> Result<()> {
    for at in vol
        .get("attachments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let server = s(at, "server_id");
        let path = format!("/v1/{pid}/cloudservers/{server}/detachvolume/{id}");
        match p.client.delete(Service::Ecs, region, path).await {
            Ok(v) => {
                p.client
                    .wait_job(Service::Ecs, region, pid, &s(&v, "job_id"))
                    .await?;
            }
            Err(e) if e.kind == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// "Querying Details About an EVS Disk", GET /v2/{project_id}/cloudvolumes/{volume_id}.
async fn volume(p: &HuaweiProvider, region: &str, pid: &str, id: &str) -> Result<Value> {
    let path = format!("/v2/{pid}/cloudvolumes/{id}");
    let v = p.client.get(Service::Evs, region, path).await?;
    Ok(v.get("volume").cloned().unwrap_or(Value::Null))
}
