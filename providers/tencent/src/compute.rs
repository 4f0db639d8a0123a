//! Instances (CVM RunInstances) and placement groups (disaster recover
//! groups).
//!
//! RunInstances only starts a launch: the create polls DescribeInstances
//! until the instance leaves PENDING. TerminateInstances puts a pay-as-you-go
//! instance in the recycle bin, so a delete terminates it again from there.

use crate::client::{first_id, s, CVM};
use crate::errors::{reference_gone_is_invalid, undocumented};
use crate::images;
use crate::observe::observed;
use crate::refresh::{self, vpc_of_subnet};
use crate::tags::{resource_name, tag_list, tags_from_list, TAG_IMAGE, TAG_KIND, TAG_PRICING};
use crate::TencentProvider;
use async_trait::async_trait;
use base64::Engine as _;
use gpuform_provider::attr;
use gpuform_provider::Backoff;
use gpuform_provider::Result;
use gpuform_provider::{
    Attrs, Cloud, ComputeApi, Create, ErrorKind, InstanceSpec, ObservedResource, PlacementSpec,
    Pricing, ProviderError, QuotaMarket, QuotaReading, QuotaUnit, ResourceKind, Scope,
};
use serde_json::{json, Value};
use std::time::Duration;

#[async_trait]
impl ComputeApi for TencentProvider {
    /// Whether `itype` is on sale in `zone` now: DescribeZoneInstanceConfigInfos
    /// (https://www.tencentcloud.com/document/api/213/33254) filtered by
    /// `zone` and `instance-type`; an item with `Status` `SELL` is on sale,
    /// `SOLD_OUT` is not (no stock now), and no item means the zone does not
    /// offer the type at all. Placement skips such a zone before any create.
    async fn offered(&self, scope: &Scope, zone: &str, itype: &str) -> Result<Option<bool>> {
        const CONFIGS: &str = "DescribeZoneInstanceConfigInfos";
        let body = json!({"Filters": [
            {"Name": "zone", "Values": [zone]},
            {"Name": "instance-type", "Values": [itype]},
        ]});
        let resp = self.client.call(CVM, CONFIGS, &scope.region, &body).await?;
        let items = crate::client::documented_set(&resp, CONFIGS, "InstanceTypeQuotaSet")?;
        Ok(Some(items.iter().any(|i| {
            s(i, "Zone") == zone && s(i, "InstanceType") == itype && s(i, "Status") == "SELL"
        })))
    }

    /// Tencent's instance quotas are per zone (DescribeAccountQuota).
    fn quota_per_zone(&self) -> bool {
        true
    }

    /// DescribeAccountQuota (https://cloud.tencent.com/document/api/213/55628),
    /// filtered to the zone and the market's set: `PostPaidQuotaSet`
    /// (pay-as-you-go), `SpotPaidQuotaSet` (spot) or `PrePaidQuotaSet`
    /// (monthly), each item {UsedQuota, RemainingQuota, TotalQuota, Zone}
    /// counting instances, whatever their type.
    async fn zone_quota(
        &self,
        scope: &Scope,
        zone: &str,
        _itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        const QUOTA: &str = "DescribeAccountQuota";
        let (set, what) = match market {
            QuotaMarket::OnDemand => ("PostPaidQuotaSet", "pay-as-you-go"),
            QuotaMarket::Spot => ("SpotPaidQuotaSet", "spot"),
            QuotaMarket::Reserved => ("PrePaidQuotaSet", "monthly subscription"),
        };
        let body = json!({"Filters": [
            {"Name": "zone", "Values": [zone]},
            {"Name": "quota-type", "Values": [set]},
        ]});
        let resp = self.client.call(CVM, QUOTA, &scope.region, &body).await?;
        let quota = resp
            .get("AccountQuotaOverview")
            .and_then(|o| o.get("AccountQuota"))
            .ok_or_else(|| undocumented(QUOTA, "AccountQuotaOverview.AccountQuota"))?;
        let items = crate::client::documented_set(quota, QUOTA, set)?;
        // A zone the answer does not list has no quota to report.
        let Some(item) = items.iter().find(|i| s(i, "Zone") == zone) else {
            return Ok(None);
        };
        let n = |k: &str| item.get(k).and_then(Value::as_u64);
        let total =
            n("TotalQuota").ok_or_else(|| undocumented(QUOTA, &format!("{set}.TotalQuota")))?;
        Ok(Some(QuotaReading {
            code: Some(set.to_string()),
            name: format!("{what} instances"),
            unit: QuotaUnit::Instances,
            limit: Some(total),
            used: n("UsedQuota").unwrap_or(0),
            raise: "ask for a higher CVM instance quota in the console \
                    (https://console.cloud.tencent.com/cvm/quota, or a ticket)"
                .to_string(),
        }))
    }

    /// https://www.tencentcloud.com/document/api/213/33264 (CreateDisasterRecoverGroup):
    /// a HOST spread group (see [`TencentProvider`] on why not an HPC cluster).
    async fn create_placement(&self, req: &Create<PlacementSpec>) -> Result<ObservedResource> {
        let PlacementSpec {
            // Every group is a HOST spread group: Tencent has no packed one.
            strategy: _,
            rdma,
        } = &req.spec;
        if *rdma {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "RDMA placement on Tencent Cloud needs an HPC cluster (CreateHpcCluster) and an HCC \
                 instance family, which gpuform's Tencent catalog does not offer yet",
            ));
        }
        let region = req.region();
        let tags = tag_list(&req.ownership, &[], &req.tags);
        let body = json!({
            "Name": resource_name(&req.ownership, 60),
            "Type": "HOST",
            "ClientToken": req.ownership.token,
            "TagSpecification": [{"ResourceType": "ps", "Tags": tags}],
        });
        let resp = self
            .client
            .call(CVM, "CreateDisasterRecoverGroup", region, &body)
            .await?;
        let id = s(&resp, "DisasterRecoverGroupId");
        if id.is_empty() {
            return Err(undocumented(
                "CreateDisasterRecoverGroup",
                "DisasterRecoverGroupId",
            ));
        }
        Ok(observed(
            ResourceKind::Placement,
            id,
            region,
            &tags_from_list(&tags),
            Attrs::new(),
            "available",
        ))
    }

    /// https://www.tencentcloud.com/document/api/213/33266 (DeleteDisasterRecoverGroups)
    async fn delete_placement(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let body = json!({"DisasterRecoverGroupIds": [id]});
        self.client
            .call(CVM, "DeleteDisasterRecoverGroups", region, &body)
            .await?;
        Ok(())
    }

    /// https://www.tencentcloud.com/document/api/213/33237 (RunInstances), one
    /// instance, ClientToken = the journaled token; then waits for the launch's
    /// outcome.
    async fn create_instance(&self, req: &Create<InstanceSpec>) -> Result<ObservedResource> {
        let region = req.region();
        // Every field, named: a new one is a compile error here until it is sent.
        let InstanceSpec {
            instance_type,
            image,
            zone,
            pricing,
            spot_max_price,
            root_gb,
            // RDMA on Tencent is the HCC families in an HPC cluster, which the
            // catalog does not offer: no Tencent node is resolved with `rdma`.
            rdma: _,
            user_data,
            subnet,
            firewall,
            placement,
            capacity_reservation: _,
            capacity_block: _,
        } = &req.spec;
        req.refuse_reservation(Cloud::Tencent)?;
        // RunInstances places the node in one zone and subnet.
        let zone = req.needs(Cloud::Tencent, attr::ZONE, zone)?;
        let subnet = req.needs(Cloud::Tencent, "subnet", subnet)?;
        if req.ownership.token.len() > 64 || !req.ownership.token.is_ascii() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "the idempotency token must be at most 64 ASCII characters (RunInstances ClientToken)",
            ));
        }
        let image_id = images::image_id(self, region, image).await?;
        let vpc = vpc_of_subnet(self, region, subnet).await?;

        let mut extra: Vec<(&str, &str)> = vec![
            (TAG_KIND, ResourceKind::Instance.as_str()),
            (TAG_PRICING, pricing.as_str()),
        ];
        if !images::is_raw_id(image) {
            extra.push((TAG_IMAGE, image));
        }
        let tags = tag_list(&req.ownership, &extra, &req.tags);
        let mut body = json!({
            "Placement": {"Zone": zone},
            "InstanceType": instance_type,
            "ImageId": image_id,
            "InstanceCount": 1,
            "InstanceName": resource_name(&req.ownership, 60),
            "VirtualPrivateCloud": {"VpcId": vpc, "SubnetId": subnet},
            "ClientToken": req.ownership.token,
            "TagSpecification": [{"ResourceType": "instance", "Tags": tags}],
        });
        charge(&mut body, *pricing, *spot_max_price);
        if let Some(gb) = root_gb {
            body["SystemDisk"] = json!({"DiskSize": gb});
        }
        if let Some(sg) = firewall {
            body["SecurityGroupIds"] = json!([sg]);
        }
        if let Some(ps) = placement {
            body["DisasterRecoverGroupIds"] = json!([ps]);
        }
        if let Some(u) = user_data.as_deref().filter(|u| !u.is_empty()) {
            // UserData: base64 of the script, at most 16 KB once encoded.
            body["UserData"] =
                json!(base64::engine::general_purpose::STANDARD.encode(u.as_bytes()));
        }
        let resp = self
            .client
            .call(CVM, "RunInstances", region, &body)
            .await
            .map_err(reference_gone_is_invalid)?;
        let id = first_id(&resp, "RunInstances", "InstanceIdSet")?;
        match wait_launched(self, region, &id).await? {
            Some(v) if s(&v, "InstanceState") == "LAUNCH_FAILED" => {
                // A failed launch is no node: release it (it keeps its subnet
                // and group while it exists) and let the engine fail over to
                // another zone, as for a create refused for capacity.
                let why = Some(s(&v, "LatestOperationErrorMsg"))
                    .filter(|m| !m.is_empty())
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                terminate_instance(self, region, &id).await?;
                Err(ProviderError::new(
                    ErrorKind::Capacity,
                    format!(
                        "RunInstances: instance {id} ({instance_type} in {zone}) ended LAUNCH_FAILED{why}; it was released\n  hint: the launch failed in this zone; another zone may take it"
                    ),
                )
                .with_code("LAUNCH_FAILED"))
            }
            Some(v) => Ok(refresh::observe(&refresh::INSTANCE, &v, region)),
            None => {
                // Not visible yet (creation is asynchronous): report what was asked.
                let mut attrs = Attrs::new();
                attrs.insert(attr::INSTANCE_TYPE.into(), json!(instance_type));
                attrs.insert(attr::ZONE.into(), json!(zone));
                attrs.insert(attr::IMAGE.into(), json!(image));
                attrs.insert(attr::PRICING.into(), json!(pricing.as_str()));
                if let Some(gb) = root_gb {
                    attrs.insert(attr::ROOT_GB.into(), json!(gb));
                }
                let all = tags_from_list(&tag_list(&req.ownership, &extra, &req.tags));
                Ok(observed(
                    ResourceKind::Instance,
                    &id,
                    region,
                    &all,
                    attrs,
                    "pending",
                ))
            }
        }
    }

    /// See [`terminate_instance`] (also used to clean up a failed launch).
    async fn delete_instance(&self, scope: &Scope, id: &str) -> Result<()> {
        terminate_instance(self, &scope.region, id).await
    }
}

/// The RunInstances fields of a pricing model: pay-as-you-go, spot (capped
/// at `spot_max_price`, CNY per hour, when given), or a prepaid period of 12
/// or 36 months.
fn charge(body: &mut Value, pricing: Pricing, spot_max_price: Option<f64>) {
    match pricing {
        Pricing::OnDemand => body["InstanceChargeType"] = json!("POSTPAID_BY_HOUR"),
        Pricing::Spot => {
            body["InstanceChargeType"] = json!("SPOTPAID");
            // MaxPrice is required; without the user's cap, a high one: a
            // spot price never exceeds the on-demand price, so it means
            // "never outbid", as AWS's default.
            let max = spot_max_price.map_or_else(|| "1000".to_string(), |cny| cny.to_string());
            body["InstanceMarketOptions"] = json!({
                "MarketType": "spot",
                "SpotOptions": {"MaxPrice": max, "SpotInstanceType": "one-time"},
            });
        }
        Pricing::Reserved1y | Pricing::Reserved3y => {
            body["InstanceChargeType"] = json!("PREPAID");
            body["InstanceChargePrepaid"] = json!({
                "Period": pricing.commitment_months(),
                "RenewFlag": "NOTIFY_AND_MANUAL_RENEW",
            });
        }
    }
}

/// Polls a new instance until its launch has an outcome: RUNNING (or any
/// state past PENDING) or LAUNCH_FAILED (InstanceState, 213/15753).
/// `None`: still not visible after a few looks.
async fn wait_launched(p: &TencentProvider, region: &str, id: &str) -> Result<Option<Value>> {
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
    let mut unseen = 0;
    for _ in 0..120 {
        match refresh::describe_one(p, &refresh::INSTANCE, region, id).await? {
            Some(v) if s(&v, "InstanceState") != "PENDING" => return Ok(Some(v)),
            Some(_) => {}
            None => {
                unseen += 1;
                if unseen >= 5 {
                    return Ok(None);
                }
            }
        }
        backoff.sleep().await;
    }
    Err(ProviderError::new(
        ErrorKind::Transient,
        format!("instance {id}: still PENDING; its launch has no outcome yet"),
    ))
}

/// TerminateInstances (https://www.tencentcloud.com/document/api/213/33255)
/// puts a pay-as-you-go instance into the recycle bin, where it stays
/// SHUTDOWN for up to 2 hours and keeps its subnet, security groups and
/// disks (https://www.tencentcloud.com/document/product/213/4931, lifecycle
/// 213/4856); DeleteSubnet / DeleteSecurityGroup then fail with
/// ResourceInUse. So an instance found SHUTDOWN is terminated again, which
/// releases it, and this waits until it is gone. Gone already: done.
pub(crate) async fn terminate_instance(p: &TencentProvider, region: &str, id: &str) -> Result<()> {
    // Round 1 moves it to the recycle bin, round 2 releases it; one more
    // in case it was already in the bin before we came.
    for _ in 0..3 {
        let body = json!({"InstanceIds": [id]});
        match p
            .client
            .call(CVM, "TerminateInstances", region, &body)
            .await
        {
            Ok(_) => {}
            Err(e) if e.kind == ErrorKind::NotFound => return Ok(()),
            Err(e)
                if e.code.as_deref() == Some("UnsupportedOperation.InstanceStateTerminating") => {}
            Err(e) => return Err(e),
        }
        match wait_terminated(p, region, id).await? {
            None => return Ok(()),
            Some(state) if state == "SHUTDOWN" => continue,
            Some(state) => {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!("instance {id}: still {state} after TerminateInstances"),
                ))
            }
        }
    }
    Err(ProviderError::new(
        ErrorKind::Transient,
        format!("instance {id}: still in the recycle bin after terminating it again"),
    ))
}

/// Polls until a terminated instance is gone (`None`) or rests in the
/// recycle bin (`Some("SHUTDOWN")`); another state after the polls is
/// returned as it is.
async fn wait_terminated(p: &TencentProvider, region: &str, id: &str) -> Result<Option<String>> {
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
    let mut last = String::new();
    for _ in 0..80 {
        match refresh::describe_one(p, &refresh::INSTANCE, region, id).await? {
            None => return Ok(None),
            Some(v) if s(&v, "InstanceState") == "SHUTDOWN" => return Ok(Some("SHUTDOWN".into())),
            Some(v) => last = s(&v, "InstanceState").to_string(),
        }
        backoff.sleep().await;
    }
    Ok(Some(last))
}
