//! Instances (ECS `RunInstances`, one call per node) and placements (ECS
//! deployment sets).

use crate::api::Api;
use crate::client::{
    empty_answer, items, json_array, required, text, Listing, Paging, Params, Product,
};
use crate::observe::SUBSCRIPTION_ENDS;
use crate::tags::{
    client_token, naming, placement_description, resource_name, IMAGE_TAG, PRICING_TAG, RDMA_TAG,
};
use crate::AlibabaProvider;
use async_trait::async_trait;
use base64::Engine as _;
use gpuform_provider::attr;
use gpuform_provider::ok_if_gone;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, ComputeApi, Create, ErrorKind, InstanceSpec, ObservedResource, PlacementSpec,
    PlacementStrategy, Pricing, ProviderError, QuotaMarket, QuotaReading, QuotaUnit, Reservation,
    ReservationFilter, ResourceKind, Scope,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The two kinds of ECS private pool a launch can target, each read by its
/// own Describe call (same request and answer shape): elasticity
/// assurances (`eap-…`, DescribeElasticityAssurances,
/// https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeelasticityassurances)
/// and capacity reservations (`crp-…`, DescribeCapacityReservations,
/// https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describecapacityreservations).
/// Both take `PrivatePoolOptions.Ids` (a JSON array of up to 100 ids),
/// `Tag.N.Key`/`Tag.N.Value` and `MaxResults` (≤ 100)/`NextToken`, and list
/// items with `PrivatePoolOptionsId`, `PrivatePoolOptionsMatchCriteria`
/// (Open | Target), `Status`, `StartTime`/`EndTime` (`yyyy-MM-ddTHH:mmZ`),
/// `Tags.Tag[]` and `AllocatedResources.AllocatedResource[]` {InstanceType,
/// zoneId, TotalAmount, UsedAmount}. Without `Status` both list every pool
/// but the Pending and Released ones.
pub(crate) const PRIVATE_POOLS: [Listing; 2] = [
    Listing {
        product: Product::Ecs,
        action: "DescribeElasticityAssurances",
        paging: Paging::Token(Some(100)),
        list: ("ElasticityAssuranceSet", "ElasticityAssuranceItem"),
    },
    Listing {
        product: Product::Ecs,
        action: "DescribeCapacityReservations",
        paging: Paging::Token(Some(100)),
        list: ("CapacityReservationSet", "CapacityReservationItem"),
    },
];

/// The code of a `PrivatePoolOptions.Ids` element that names no pool (400,
/// "The specified parameter \"PrivatePoolOptions.Ids\" exist invalid
/// element Id.").
const NO_SUCH_POOL: &str = "Invalid.PrivatePoolOptions.Ids";

impl AlibabaProvider {
    /// Waits for a new instance to be Running. RunInstances answers once the
    /// order is placed; the instance is Pending, then Running (instance
    /// lifecycle, help doc 25380). When stock runs out after that answer, ECS
    /// raises SystemFailure.Delete ("System events related to instance
    /// creation failures",
    /// alibabacloud.com/help/en/ecs/user-guide/view-instance-creation-failure-events):
    /// the instance shows Stopped without ever running
    /// and the system releases it, "in most cases within 5 minutes". An
    /// instance that stays Pending past the settle time is "an exception"
    /// per the lifecycle page. None of these is a node: it is released and
    /// the create fails as a capacity failure, so the apply retries
    /// elsewhere through the zone failover, as for OperationDenied.NoStock.
    async fn await_launch(&self, region: &str, id: &str) -> Result<ObservedResource> {
        let mut wait =
            gpuform_provider::Backoff::new(self.poll, Duration::from_secs(5)).until(self.settle);
        let mut seen = false;
        loop {
            let late = wait.expired();
            match self.read_one(region, ResourceKind::Instance, id).await {
                Ok(o) if o.status == "running" => return Ok(o),
                Ok(o) if o.status == "stopped" => {
                    return Err(self
                        .failed_launch(region, id, "stopped before it ever ran")
                        .await)
                }
                Ok(o) if late => {
                    let why = format!("still {} after {:?}", o.status, self.settle);
                    return Err(self.failed_launch(region, id, &why).await);
                }
                Ok(_) => seen = true,
                Err(e) if e.kind == ErrorKind::NotFound && (seen || late) => {
                    let why = if seen {
                        "released by the cloud before it ran"
                    } else {
                        "never listed by DescribeInstances"
                    };
                    return Err(self.failed_launch(region, id, why).await);
                }
                // Eventually consistent reads: a fresh id may not show yet.
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            wait.sleep().await;
        }
    }

    /// Releases an instance whose creation failed and returns the capacity
    /// error that reports it. If the release itself fails, that error is
    /// returned instead, so the create stays pending and is looked at again.
    async fn failed_launch(&self, region: &str, id: &str, why: &str) -> ProviderError {
        // DeleteInstances, Force=true: "Manually release the instance" is
        // one of the two documented ways out of SystemFailure.Delete.
        let mut p = Params::one("InstanceId.1", id);
        p.push("Force", "true");
        if let Err(e) = ok_if_gone(self.ecs(region, "DeleteInstances", &p).await) {
            return e;
        }
        ProviderError::new(
            ErrorKind::Capacity,
            format!(
                "instance {id} was accepted by RunInstances but its creation failed ({why}; \
                 ECS event SystemFailure.Delete: the zone could not supply it); it was released"
            ),
        )
        .with_code("SystemFailure.Delete")
    }
}

#[async_trait]
impl ComputeApi for AlibabaProvider {
    /// See [`AlibabaProvider::on_sale`].
    async fn offered(&self, scope: &Scope, zone: &str, itype: &str) -> Result<Option<bool>> {
        self.on_sale(&scope.region, zone, itype).await.map(Some)
    }

    /// Private pools (elasticity assurances and capacity reservations, see
    /// [`PRIVATE_POOLS`]) by id or by tags. An id names one kind by its
    /// prefix (`eap-`, `crp-`), so only that kind is asked; by tags, both.
    async fn reservations(
        &self,
        scope: &Scope,
        wanted: &ReservationFilter,
    ) -> Result<Vec<Reservation>> {
        let mut p = Params::default();
        let kinds: Vec<&Listing> = match wanted {
            ReservationFilter::Id(id) => {
                p.push(
                    "PrivatePoolOptions.Ids",
                    json_array(std::slice::from_ref(id)),
                );
                let only = if id.starts_with("crp-") { 1 } else { 0 };
                vec![&PRIVATE_POOLS[only]]
            }
            ReservationFilter::Tags(tags) => {
                let pairs: Vec<(String, String)> =
                    tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                p.tags(&pairs);
                PRIVATE_POOLS.iter().collect()
            }
        };
        let mut out = Vec::new();
        for l in kinds {
            let pools = match self.client.list_all(&scope.region, l, &p).await {
                Ok(pools) => pools,
                // "The specified private pool ID does not exist" (the
                // private pools' error list): an empty answer, not a failed
                // read, as EC2's InvalidCapacityReservationId.NotFound is.
                Err(e) if e.code.as_deref() == Some(NO_SUCH_POOL) => Vec::new(),
                Err(e) => return Err(e),
            };
            for pool in pools {
                out.extend(private_pool(&pool));
            }
        }
        Ok(out.into_iter().filter(|r| r.matches(wanted)).collect())
    }

    /// DescribeAccountAttributes (ECS,
    /// https://help.aliyun.com/document_detail/73772.html): the region's
    /// vCPU quota of pay-as-you-go instances (`max-` and
    /// `used-postpaid-instance-vcpu-count`) or of spot instances (`max-` and
    /// `used-spot-instance-vcpu-count`); every type counts its vCPUs.
    /// Subscriptions have no vCPU attribute: the cloud cannot tell.
    async fn quota(
        &self,
        scope: &Scope,
        _itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        const ACTION: &str = "DescribeAccountAttributes";
        let (kind, name) = match market {
            QuotaMarket::OnDemand => ("postpaid", "pay-as-you-go instance vCPUs"),
            QuotaMarket::Spot => ("spot", "spot instance vCPUs"),
            QuotaMarket::Reserved => return Ok(None),
        };
        let (max, used) = (
            format!("max-{kind}-instance-vcpu-count"),
            format!("used-{kind}-instance-vcpu-count"),
        );
        let mut p = Params::one("AttributeName.1", &max);
        p.push("AttributeName.2", &used);
        let body = self.ecs(&scope.region, ACTION, &p).await?;
        let value = |attr: &str| -> Result<u64> {
            let found = items(&body, "AccountAttributeItems", "AccountAttributeItem")
                .into_iter()
                .find(|i| text(i, "AttributeName") == attr)
                .and_then(|i| {
                    items(i, "AttributeValues", "ValueItem")
                        .first()
                        .map(|v| text(v, "Value"))
                });
            found
                .as_deref()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ProviderError::new(
                        ErrorKind::Transient,
                        format!("{ACTION}: the answer has no numeric `{attr}`"),
                    )
                })
        };
        Ok(Some(QuotaReading {
            code: Some(max.clone()),
            name: name.to_string(),
            unit: QuotaUnit::Vcpus,
            limit: Some(value(&max)?),
            used: value(&used)?,
            raise: format!(
                "request an increase of `{max}` in {} in the Quota Center \
                 (https://quotas.console.aliyun.com/products/ecs/quotas)",
                scope.region
            ),
        }))
    }

    async fn create_placement(&self, req: &Create<PlacementSpec>) -> Result<ObservedResource> {
        // CreateDeploymentSet (ECS): Strategy Availability | AvailabilityGroup
        // | LowLatency ("网络低时延策略"): LowLatency packs the instances
        // close together in the network, which is what NVLink/RDMA clusters want.
        let strategy = match req.spec.strategy {
            PlacementStrategy::Cluster => "LowLatency",
            PlacementStrategy::Spread => "Availability",
        };
        let mut p = Params::one("Strategy", strategy);
        p.push("DeploymentSetName", resource_name(&req.ownership));
        p.push("Description", placement_description(&req.ownership)?);
        p.push("ClientToken", client_token(&req.ownership.token)?);
        let body = self.ecs(req.region(), "CreateDeploymentSet", &p).await?;
        let id = required(&body, "DeploymentSetId", "CreateDeploymentSet")?;
        self.read_one(req.region(), ResourceKind::Placement, &id)
            .await
    }

    async fn create_instance(&self, req: &Create<InstanceSpec>) -> Result<ObservedResource> {
        let region = req.region();
        // Every field, named: a new one is a compile error here until
        // RunInstances sends it (or this says why it does not).
        let InstanceSpec {
            instance_type,
            image,
            zone,
            pricing,
            spot_max_price,
            root_gb,
            rdma,
            user_data,
            subnet,
            firewall,
            placement,
            capacity_reservation,
            capacity_block: _,
        } = &req.spec;
        let zone = req.needs(Cloud::Alibaba, attr::ZONE, zone)?;
        let subnet = req.needs(Cloud::Alibaba, "subnet", subnet)?;
        let group = req.needs(Cloud::Alibaba, "firewall", firewall)?;
        let image_id = self.resolve_image(region, image).await?;

        // RunInstances (ECS): one instance per call (Amount = MinAmount = 1),
        // so each carries its own address tag from the first instant.
        let mut p = Params::one("ZoneId", zone);
        p.push("InstanceType", instance_type.clone());
        p.push("ImageId", image_id);
        p.push("VSwitchId", subnet);
        p.push("SecurityGroupId", group);
        if let Some(ds) = placement {
            p.push("DeploymentSetId", ds.clone());
        }
        p.push("Amount", "1");
        p.push("MinAmount", "1");
        // RunInstances `PrivatePoolOptions.MatchCriteria` Target with
        // `PrivatePoolOptions.Id` (the elasticity assurance's or capacity
        // reservation's id): "the system uses the capacity in a specified
        // private pool ... If the specified private pool is unavailable, the
        // instance cannot be created" — never an ordinary launch instead
        // (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances,
        // https://www.alibabacloud.com/help/en/ecs/user-guide/use-a-private-pool-to-create-instances).
        // The pool's nodes are pay-as-you-go (resolve prices them on-demand),
        // as an elasticity assurance's launches must be. DescribeInstances
        // does not report the pool (DescribeInstanceAttachmentAttributes
        // would), so `capacity_reservation` is not observed: the diff keeps
        // the recorded value, as for AWS.
        if let Some(pool) = capacity_reservation {
            p.push("PrivatePoolOptions.MatchCriteria", "Target");
            p.push("PrivatePoolOptions.Id", pool.clone());
        }
        match pricing {
            Pricing::OnDemand => p.push("InstanceChargeType", "PostPaid"),
            Pricing::Spot => {
                p.push("InstanceChargeType", "PostPaid");
                // With a cap: SpotWithPriceLimit + SpotPriceLimit (CNY per
                // hour, at most three decimals, RunInstances reference);
                // without one, the market price up to the on-demand price.
                match spot_max_price {
                    Some(cny) => {
                        p.push("SpotStrategy", "SpotWithPriceLimit");
                        p.push("SpotPriceLimit", format!("{}", round3(*cny)));
                    }
                    None => p.push("SpotStrategy", "SpotAsPriceGo"),
                }
            }
            Pricing::Reserved1y | Pricing::Reserved3y => {
                // RunInstances (ECS API reference, `PeriodUnit` / `Period`,
                // alibabacloud.com/help/en/ecs/developer-reference/api-runinstances):
                // the unit is Week or Month, never Year; with Month the
                // period is 1-9, 12, 24, 36, 48 or 60. One and three years
                // are Month 12 and Month 36.
                let months = pricing.commitment_months().unwrap_or(12);
                p.push("InstanceChargeType", "PrePaid");
                p.push("Period", months.to_string());
                p.push("PeriodUnit", "Month");
                // No auto-renewal: a subscription gpuform made ends at its term.
                p.push("AutoRenew", "false");
            }
        }
        if let Some(gb) = root_gb {
            p.push("SystemDisk.Size", gb.to_string());
            p.push(
                "SystemDisk.Category",
                crate::volume_types::category(gpuform_provider::VolumeType::default()),
            );
        }
        if let Some(u) = user_data {
            let encoded = base64::engine::general_purpose::STANDARD.encode(u.as_bytes());
            // RunInstances: UserData is Base64 and at most 32 KB.
            if encoded.len() > 32 * 1024 {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("user_data is {} bytes once Base64-encoded; RunInstances takes at most 32 KB", encoded.len()),
                ));
            }
            p.push("UserData", encoded);
        }
        let extra = [
            (IMAGE_TAG, image.clone()),
            (PRICING_TAG, pricing.as_str().to_string()),
            (RDMA_TAG, rdma.to_string()),
        ];
        // RunInstances puts Tag.N on the instance and on the disks it makes.
        naming(&mut p, "InstanceName", req, ResourceKind::Instance, &extra)?;
        let body = self.ecs(region, "RunInstances", &p).await?;
        let id = items(&body, "InstanceIdSets", "InstanceIdSet")
            .first()
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| empty_answer("RunInstances"))?;
        self.await_launch(region, &id).await
    }

    async fn delete_placement(&self, scope: &Scope, id: &str) -> Result<()> {
        let p = Params::one("DeploymentSetId", id);
        ok_if_gone(self.ecs(&scope.region, "DeleteDeploymentSet", &p).await)
    }

    /// DeleteInstances (ECS API reference, help doc 126723,
    /// alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstances) "releases one or
    /// more pay-as-you-go instances or expired subscription instances":
    /// `Force=true` releases a Running one, `TerminateSubscription=true` an
    /// expired subscription. Nothing releases an unexpired subscription
    /// (there is no `TerminateSubscribedInstance`), so for one of those
    /// gpuform stops its renewal (ModifyInstanceAutoRenewAttribute
    /// `RenewalStatus=NotRenewal`, help doc 52843) and refuses, saying when it ends. Plans
    /// refuse such a deletion before anything is destroyed
    /// ([`delete_refusal`]); this is the last guard.
    async fn delete_instance(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let p = Params::one("InstanceIds", json_array(&[id.to_string()]));
        let Some(i) = self
            .describe(region, Api::Instance, &p)
            .await?
            .into_iter()
            .find(|i| text(i, "InstanceId") == id)
        else {
            return Ok(());
        };
        if let Some(ends) = unexpired_subscription(&i, &now_minutes()) {
            let mut p = Params::one("InstanceId", id);
            p.push("RenewalStatus", "NotRenewal");
            ok_if_gone(
                self.ecs(region, "ModifyInstanceAutoRenewAttribute", &p)
                    .await,
            )?;
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "{}; its auto-renewal is now off",
                    subscription_refusal(id, &ends)
                ),
            ));
        }
        let mut p = Params::one("InstanceId.1", id);
        p.push("Force", "true");
        if text(&i, "InstanceChargeType") == "PrePaid" {
            p.push("TerminateSubscription", "true");
        }
        ok_if_gone(self.ecs(region, "DeleteInstances", &p).await)
    }
}

/// One private pool as a [`Reservation`]: each of its allocated resources
/// (an instance type in a zone) is one, under the pool's id. `Active` takes
/// launches; Preparing/Prepared are `scheduled`, Released `expired`.
fn private_pool(pool: &Value) -> Vec<Reservation> {
    let state = match text(pool, "Status").as_str() {
        "Active" => "active",
        "Pending" | "Preparing" | "Prepared" => "scheduled",
        "Released" => "expired",
        other => return vec![unknown_state(pool, other)],
    };
    let tags: BTreeMap<String, String> = items(pool, "Tags", "Tag")
        .into_iter()
        .map(|t| (text(t, "TagKey"), text(t, "TagValue")))
        .collect();
    let time = |key: &str| Some(seconds(&text(pool, key))).filter(|t| !t.is_empty());
    items(pool, "AllocatedResources", "AllocatedResource")
        .into_iter()
        .map(|r| {
            let count = |key: &str| r.get(key).and_then(Value::as_u64).unwrap_or(0) as u32;
            let (total, used) = (count("TotalAmount"), count("UsedAmount"));
            // The reference writes the zone `zoneId`; accept `ZoneId` too.
            let zone = Some(text(r, "zoneId"))
                .filter(|z| !z.is_empty())
                .unwrap_or_else(|| text(r, "ZoneId"));
            Reservation {
                id: text(pool, "PrivatePoolOptionsId"),
                instance_type: text(r, "InstanceType"),
                zone,
                total,
                available: total.saturating_sub(used),
                state: state.to_string(),
                start: time("StartTime"),
                end: time("EndTime"),
                targeted: text(pool, "PrivatePoolOptionsMatchCriteria") == "Target",
                tags: tags.clone(),
            }
        })
        .collect()
}

/// A pool in a state the reference does not list: shown, never launched into.
fn unknown_state(pool: &Value, status: &str) -> Reservation {
    Reservation {
        id: text(pool, "PrivatePoolOptionsId"),
        instance_type: String::new(),
        zone: String::new(),
        total: 0,
        available: 0,
        state: status.to_lowercase(),
        start: None,
        end: None,
        targeted: false,
        tags: BTreeMap::new(),
    }
}

/// `2021-02-19T03:02Z` (the pools' times) as `2021-02-19T03:02:00Z`.
fn seconds(t: &str) -> String {
    match t.strip_suffix('Z') {
        Some(m) if m.len() == 16 => format!("{m}:00Z"),
        _ => t.to_string(),
    }
}

/// A price as Alibaba takes it: at most three decimals.
fn round3(price: f64) -> f64 {
    (price * 1000.0).round() / 1000.0
}

/// See [`gpuform_provider::Provider::delete_refusal`]: an unexpired
/// subscription cannot be released.
pub(crate) fn delete_refusal(observed: &ObservedResource) -> Option<String> {
    if observed.kind != ResourceKind::Instance {
        return None;
    }
    let ends = observed.attrs.get(SUBSCRIPTION_ENDS)?.as_str()?;
    (ends > now_minutes().as_str()).then(|| subscription_refusal(&observed.id, ends))
}

/// The current time as DescribeInstances writes ExpiredTime; such strings
/// order as the times they name.
fn now_minutes() -> String {
    let t = gpuform_signing::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}

/// The end of a subscription instance's term when it lies after `now`.
fn unexpired_subscription(i: &Value, now: &str) -> Option<String> {
    let ends = text(i, "ExpiredTime");
    (text(i, "InstanceChargeType") == "PrePaid" && ends.as_str() > now).then_some(ends)
}

fn subscription_refusal(id: &str, ends: &str) -> String {
    format!(
        "{id} is a subscription (reserved) instance paid until {ends}; Alibaba Cloud releases \
         subscription instances only once they have expired (DeleteInstances), so it cannot be \
         destroyed before then. gpuform made it without auto-renewal, so its term ends then; \
         stop renewal if it was turned on since (ModifyInstanceAutoRenewAttribute \
         RenewalStatus=NotRenewal, or the console's renewal settings), keep it in the spec until \
         that date, or leave it out with --target"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subscriptions_end_when_described() {
        let i = json!({"InstanceChargeType": "PrePaid", "ExpiredTime": "2027-11-29T16:00Z"});
        assert_eq!(
            unexpired_subscription(&i, "2026-11-29T00:00Z").as_deref(),
            Some("2027-11-29T16:00Z")
        );
        assert_eq!(unexpired_subscription(&i, "2027-11-29T16:01Z"), None);
        let paygo = json!({"InstanceChargeType": "PostPaid", "ExpiredTime": "2099-01-01T00:00Z"});
        assert_eq!(unexpired_subscription(&paygo, "2026-11-29T00:00Z"), None);
    }

    #[test]
    fn private_pools_read_as_reservations() {
        // The shape of DescribeCapacityReservations' sample answer.
        let pool = json!({"Status": "Active", "PrivatePoolOptionsMatchCriteria": "Target",
            "PrivatePoolOptionsId": "crp-bp1gubrkqutenqdd1234", "EndTime": "2027-02-19T03:02Z",
            "StartTime": "2026-02-19T02:01Z",
            "AllocatedResources": {"AllocatedResource": [{"UsedAmount": 1, "TotalAmount": 3,
                "AvailableAmount": 2, "zoneId": "cn-hangzhou-h", "InstanceType": "ecs.gn7i-c8g1.2xlarge"}]},
            "Tags": {"Tag": [{"TagValue": "ml", "TagKey": "team"}]}});
        let r = private_pool(&pool);
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!(r.id, "crp-bp1gubrkqutenqdd1234");
        assert_eq!(
            (r.instance_type.as_str(), r.zone.as_str()),
            ("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou-h")
        );
        assert_eq!((r.total, r.available), (3, 2));
        assert!(r.is_active() && r.targeted);
        assert_eq!(r.start.as_deref(), Some("2026-02-19T02:01:00Z"));
        assert_eq!(r.end.as_deref(), Some("2027-02-19T03:02:00Z"));
        assert_eq!(r.tags.get("team").map(String::as_str), Some("ml"));
        // Open, being prepared, no end: listed, takes no launch.
        let later = json!({"Status": "Prepared", "PrivatePoolOptionsMatchCriteria": "Open",
            "PrivatePoolOptionsId": "eap-bp67acfmxazb4ph3abcd", "EndTime": "",
            "AllocatedResources": {"AllocatedResource": [{"UsedAmount": 0, "TotalAmount": 2,
                "ZoneId": "cn-hangzhou-i", "InstanceType": "ecs.gn7i-c8g1.2xlarge"}]}});
        let r = &private_pool(&later)[0];
        assert_eq!(r.state, "scheduled");
        assert!(!r.is_active() && !r.targeted);
        assert_eq!((r.zone.as_str(), r.end.as_deref()), ("cn-hangzhou-i", None));
    }
}
