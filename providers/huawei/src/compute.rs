//! Servers (ECS) and placements (ECS server groups).

use crate::client::{job_entity_ids, s, Call, Service};
use crate::errors::{self, PENDING_PAYMENT};
use crate::refresh::{read, read_one, server_groups, wait_subnet_ready};
use crate::{images, tags, HuaweiProvider};
use async_trait::async_trait;
use base64::Engine as _;
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, ComputeApi, Create, ErrorKind, InstanceSpec, ObservedResource, PlacementSpec,
    PlacementStrategy, Pricing, ProviderError, QuotaMarket, QuotaReading, QuotaUnit, ResourceKind,
    Scope,
};
use serde_json::{json, Value};

/// An ECS takes at most 10 tags ("Creating ECSs", `server_tags`).
const MAX_SERVER_TAGS: usize = 10;

/// ShowServerLimits ("Querying Tenant Quotas", GET
/// /v1/{project_id}/cloudservers/limits,
/// support.huaweicloud.com/en-us/api-ecs/ecs_02_0801.html): `absolute`
/// holds `maxTotalCores` / `totalCoresUsed` and, for spot ECSs,
/// `maxTotalSpotCores` / `totalSpotCoresUsed`; -1 means no limit. The
/// project's quota is the region's: every flavor counts its vCPUs there.
pub(crate) fn cores_quota(v: &Value, market: QuotaMarket, region: &str) -> Result<QuotaReading> {
    let absolute = v.get("absolute").ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Transient,
            "ShowServerLimits: the answer has no `absolute` quotas",
        )
    })?;
    let (max, used, name) = match market {
        QuotaMarket::Spot => ("maxTotalSpotCores", "totalSpotCoresUsed", "spot ECS vCPUs"),
        _ => ("maxTotalCores", "totalCoresUsed", "ECS vCPUs"),
    };
    let int = |k: &str| absolute.get(k).and_then(Value::as_i64);
    let limit = int(max).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Transient,
            format!("ShowServerLimits: the answer has no `{max}`"),
        )
    })?;
    Ok(QuotaReading {
        code: Some(max.to_string()),
        name: name.to_string(),
        unit: QuotaUnit::Vcpus,
        limit: u64::try_from(limit).ok(),
        used: int(used).and_then(|u| u64::try_from(u).ok()).unwrap_or(0),
        raise: format!(
            "apply for a higher ECS vCPU quota in {region} on the console's My Quotas page \
             (https://console.huaweicloud.com/quotacenter/)"
        ),
    })
}

#[async_trait]
impl ComputeApi for HuaweiProvider {
    /// See [`HuaweiProvider::on_sale`].
    async fn offered(&self, scope: &Scope, zone: &str, itype: &str) -> Result<Option<bool>> {
        self.on_sale(&scope.region, zone, itype).await.map(Some)
    }

    /// The project's vCPU cores ([`cores_quota`]): every flavor counts
    /// against it, spot ECSs against the spot cores.
    async fn quota(
        &self,
        scope: &Scope,
        _itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        let pid = self.project(&scope.region)?.to_string();
        let path = format!("/v1/{pid}/cloudservers/limits");
        let v = self
            .send(Call::new(Service::Ecs, &scope.region, "GET", path))
            .await?;
        cores_quota(&v, market, &scope.region).map(Some)
    }

    /// "Creating an ECS Group", POST /v1/{project_id}/cloudservers/os-server-groups
    /// (support.huaweicloud.com/api-ecs/ecs_03_1301.html). Huawei's ECS
    /// groups know only `anti-affinity`: they spread members over physical
    /// hosts. There is no "pack together" policy, which is what a multi-node
    /// NVLink/RDMA cluster (`strategy: cluster`) asks for, so that is refused
    /// rather than silently given the opposite; `spread` is honoured.
    async fn create_placement(&self, req: &Create<PlacementSpec>) -> Result<ObservedResource> {
        let PlacementSpec { strategy, rdma: _ } = &req.spec;
        let region = req.region();
        if *strategy != PlacementStrategy::Spread {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "Huawei Cloud has no packed placement: ECS groups only support anti-affinity (spreading nodes over hosts), the opposite of strategy `{}` for NVLink/RDMA clusters\n  hint: use a single-node cluster, drop `interconnect: nvlink` / `fabric: rdma` for this cluster, or place it on a cloud with cluster placement groups",
                    strategy.as_str()
                ),
            ));
        }
        let pid = self.project(region)?;
        let name = tags::name_for(&req.ownership.token);
        let found = server_groups(self, region)
            .await?
            .iter()
            .find(|g| s(g, "name") == name)
            .map(|g| s(g, "id"));
        let id = match found {
            Some(id) => id,
            None => {
                let body = json!({"server_group": {"name": name, "policies": ["anti-affinity"]}});
                let path = format!("/v1/{pid}/cloudservers/os-server-groups");
                let v = self
                    .send(Call::new(Service::Ecs, region, "POST", path).body(body))
                    .await?;
                s(v.get("server_group").unwrap_or(&Value::Null), "id")
            }
        };
        read_one(self, region, ResourceKind::Placement, &id).await
    }

    /// "Creating ECSs", POST /v1.1/{project_id}/cloudservers
    /// (support.huaweicloud.com/api-ecs/ecs_02_0101.html): asynchronous,
    /// answers `job_id`; idempotent through the signed `X-Client-Token` header.
    async fn create_instance(&self, req: &Create<InstanceSpec>) -> Result<ObservedResource> {
        let InstanceSpec {
            instance_type,
            image,
            zone,
            pricing,
            spot_max_price,
            root_gb,
            // Huawei's RDMA comes with the flavor (the catalog picks one).
            rdma: _,
            user_data,
            subnet,
            firewall,
            placement,
            capacity_reservation: _,
            capacity_block: _,
        } = &req.spec;
        req.refuse_reservation(Cloud::Huawei)?;
        let region = req.region();
        let pid = self.project(region)?;
        let zone = req.needs(Cloud::Huawei, attr::ZONE, zone)?;
        let subnet = req.needs(Cloud::Huawei, "subnet", subnet)?;
        let tag_list = tags::for_create(req)?;
        if tag_list.len() > MAX_SERVER_TAGS {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "an ECS takes at most 10 tags; gpuform uses 4, so at most 6 of your own (got {})",
                    tag_list.len() - 4
                ),
            ));
        }
        let image_ref = images::image_id(self, region, image).await?;
        // The subnet's VPC (`vpcid` is required), once the subnet is ACTIVE
        // (it may have been adopted after a crash while still UNKNOWN).
        let sn = wait_subnet_ready(self, region, pid, subnet).await?;
        let name = tags::safe_name(&format!(
            "{}-{}",
            req.ownership.project, req.ownership.address
        ));
        let mut server = json!({
            "name": name,
            "flavorRef": instance_type,
            "imageRef": image_ref,
            "availability_zone": zone,
            "vpcid": s(&sn, "vpc_id"),
            "nics": [{"subnet_id": subnet}],
            "root_volume": {
                "volumetype": crate::volume_types::evs_type(gpuform_provider::VolumeType::default()),
                "size": root_gb.unwrap_or(40),
            },
            "count": 1,
            "extendparam": extendparam(*pricing, *spot_max_price),
            "server_tags": tags::objects(&tag_list),
            "metadata": {"gpuform_image": image, "gpuform_pricing": pricing.as_str()},
        });
        if let Some(fw) = firewall {
            server["security_groups"] = json!([{"id": fw}]);
        }
        if let Some(g) = placement {
            server["os:scheduler_hints"] = json!({"group": g});
        }
        if let Some(u) = user_data {
            server["user_data"] = json!(base64::engine::general_purpose::STANDARD.encode(u));
        }
        let token = client_token(&req.ownership.token, zone);
        let v = self
            .send(
                Call::new(
                    Service::Ecs,
                    region,
                    "POST",
                    format!("/v1.1/{pid}/cloudservers"),
                )
                .body(json!({"server": server}))
                .token(&token),
            )
            .await?;
        let job_id = s(&v, "job_id");
        if job_id.is_empty() {
            return Err(ProviderError::new(
                ErrorKind::Transient,
                "ECS create answered without a job_id",
            ));
        }
        let answered: Vec<String> = v
            .get("serverIds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let job = match self
            .client
            .wait_job(Service::Ecs, region, pid, &job_id)
            .await
        {
            Ok(job) => job,
            Err(e) => {
                let e = if e.code.as_deref() == Some(PENDING_PAYMENT) {
                    let order = v.get("order_id").and_then(Value::as_str).unwrap_or("?");
                    errors::pending_payment(&job_id, Some(order))
                } else {
                    e
                };
                // A failed job can leave its server behind in ERROR.
                return Err(match remove_failed(self, region, pid, &answered).await? {
                    Some(failed) if e.kind == ErrorKind::Invalid => failed,
                    _ => e,
                });
            }
        };
        let mut ids = job_entity_ids(&job, "server_id");
        if ids.is_empty() {
            ids = answered;
        }
        let id = ids.first().cloned().ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Transient,
                format!("job {job_id} succeeded but names no server"),
            )
        })?;
        if let Some(failed) = remove_failed(self, region, pid, &ids).await? {
            return Err(failed);
        }
        read_one(self, region, ResourceKind::Instance, &id).await
    }

    /// Reads the server ("Querying ECS Details", GET
    /// /v1/{project_id}/cloudservers/{id}) and deletes it unless it is gone
    /// already or prepaid ([`errors::undeletable`], refused before any delete).
    async fn delete_instance(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let pid = self.project(region)?;
        let path = format!("/v1/{pid}/cloudservers/{id}");
        let sv = self.client.get(Service::Ecs, region, path).await?;
        let server = sv.get("server").unwrap_or(&Value::Null);
        if matches!(s(server, "status").as_str(), "DELETED" | "SOFT_DELETED") {
            return Ok(());
        }
        if let Some(e) = errors::undeletable(server) {
            return Err(e);
        }
        delete_servers(self, region, pid, &[id]).await
    }

    /// "Deleting an ECS Group", DELETE /v1/{project_id}/cloudservers/os-server-groups/{id}.
    async fn delete_placement(&self, scope: &Scope, id: &str) -> Result<()> {
        let path = |pid: &str| format!("/v1/{pid}/cloudservers/os-server-groups/{id}");
        self.delete_in_project(Service::Ecs, scope, path).await
    }
}

/// How a pricing model goes into `extendparam` ("Creating ECSs",
/// support.huaweicloud.com/api-ecs/ecs_02_0101.html: chargingMode
/// prePaid/postPaid, periodType/periodNum, isAutoPay, marketType spot and
/// its cap `spotPrice`, CNY per hour, a string; absent, the on-demand price).
fn extendparam(pricing: Pricing, spot_max_price: Option<f64>) -> Value {
    match pricing {
        Pricing::OnDemand => json!({"chargingMode": "postPaid"}),
        Pricing::Spot => {
            let mut spot = json!({"chargingMode": "postPaid", "marketType": "spot"});
            if let Some(cny) = spot_max_price {
                spot["spotPrice"] = json!(cny.to_string());
            }
            spot
        }
        Pricing::Reserved1y | Pricing::Reserved3y => json!({
            "chargingMode": "prePaid",
            "periodType": "year",
            "periodNum": pricing.commitment_months().unwrap_or(12) / 12,
            "isAutoPay": "true",
            "isAutoRenew": "false",
        }),
    }
}

/// The `X-Client-Token` of a server create: the ECS idempotency page
/// ("Idempotent Requests", support.huaweicloud.com/intl/en-us/api-ecs/en-us_topic_0000001105258814.html)
/// requires a UUID (8-4-4-4-12), which gpuform's own token (`gf-` + 32 hex
/// digits) is not. Derived deterministically (SHA-256, RFC 9562 version 8
/// layout) from the journaled token and the zone, so a retry of the same
/// create sends the same UUID, while a create moved to another zone after a
/// failed attempt is not answered with that attempt's job.
fn client_token(token: &str, zone: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(token.as_bytes())
        .chain_update([0u8])
        .chain_update(zone.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// Deletes the servers among `ids` that are in ERROR and says why as a
/// capacity error ([`errors::build_failed`]), so the engine fails over to the
/// next zone instead of recording a broken node.
async fn remove_failed(
    p: &HuaweiProvider,
    region: &str,
    pid: &str,
    ids: &[String],
) -> Result<Option<ProviderError>> {
    if ids.is_empty() {
        return Ok(None);
    }
    let broken: Vec<ObservedResource> = read(p, region, ResourceKind::Instance, ids)
        .await?
        .into_iter()
        .filter(|o| o.status == "error")
        .collect();
    if broken.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = broken.iter().map(|o| o.id.as_str()).collect();
    delete_servers(p, region, pid, &names).await?;
    Ok(Some(errors::build_failed(&names)))
}

/// "Deleting ECSs", POST /v1/{project_id}/cloudservers/delete
/// (support.huaweicloud.com/api-ecs/ecs_02_0103.html), a job.
/// `delete_volume: false`: data disks are detached and kept ("If you set the
/// parameter value to false, the system only detaches the disks from the ECS
/// and reserves the disks"); the system disk goes with the server. gpuform
/// deletes its own data disks as their own resources, and a disk someone
/// attached outside gpuform is not ours to delete.
async fn delete_servers(p: &HuaweiProvider, region: &str, pid: &str, ids: &[&str]) -> Result<()> {
    let servers: Vec<Value> = ids.iter().map(|id| json!({"id": id})).collect();
    let body = json!({"servers": servers, "delete_publicip": true, "delete_volume": false});
    let path = format!("/v1/{pid}/cloudservers/delete");
    let call = Call::new(Service::Ecs, region, "POST", path).body(body);
    p.client.run_job(call, pid).await?;
    Ok(())
}

/// Yearly/monthly servers: DeleteServers deletes pay-per-use ones only
/// (see [`errors::undeletable`]); refresh reads the billing mode into
/// `pricing`.
pub fn delete_refusal(observed: &ObservedResource) -> Option<String> {
    let reserved = observed
        .attrs
        .get(attr::PRICING)
        .and_then(Value::as_str)
        .is_some_and(|p| p.starts_with("reserved-"));
    (observed.kind == ResourceKind::Instance && reserved).then(|| {
        format!(
            "server {} is yearly/monthly (prepaid) and DeleteServers only deletes pay-per-use servers (\"Deleting ECSs\", api-ecs/ecs_02_0103.html); unsubscribe it in the Billing Center first (Orders > Unsubscriptions), then plan again",
            observed.id
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_token_is_a_stable_uuid() {
        let t = "gf-0123456789abcdef0123456789abcdef";
        let a = client_token(t, "cn-north-4a");
        assert!(images::looks_like_uuid(&a), "{a}");
        assert_eq!(a, client_token(t, "cn-north-4a"), "a retry reuses it");
        assert_ne!(
            a,
            client_token(t, "cn-north-4b"),
            "another zone, another create"
        );
        assert_ne!(a, client_token("gf-other", "cn-north-4a"));
        // RFC 9562: version 8, variant 10xx.
        assert_eq!(&a[14..15], "8");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }

    #[test]
    fn pricing_models_become_extendparam() {
        assert_eq!(
            extendparam(Pricing::OnDemand, None),
            json!({"chargingMode": "postPaid"})
        );
        assert_eq!(
            extendparam(Pricing::Spot, None)["marketType"],
            json!("spot")
        );
        assert_eq!(extendparam(Pricing::Spot, None).get("spotPrice"), None);
        assert_eq!(
            extendparam(Pricing::Spot, Some(12.5))["spotPrice"],
            json!("12.5")
        );
        assert_eq!(
            extendparam(Pricing::Reserved1y, None)["periodNum"],
            json!(1)
        );
        assert_eq!(
            extendparam(Pricing::Reserved3y, None)["periodNum"],
            json!(3)
        );
        assert_eq!(
            extendparam(Pricing::Reserved3y, None)["chargingMode"],
            json!("prePaid")
        );
    }
}
