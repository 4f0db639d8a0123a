//! Private pools: elasticity assurances (`eap-…`) and capacity reservations
//! (`crp-…`), which tests make (what the console or
//! CreateElasticityAssurance / CreateCapacityReservation would) and the
//! stand-in answers for as the ECS API reference documents:
//!
//! - DescribeElasticityAssurances
//!   (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeelasticityassurances)
//!   and DescribeCapacityReservations
//!   (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describecapacityreservations):
//!   `PrivatePoolOptions.Ids` (a JSON array of up to 100 ids), `Tag.N`,
//!   `InstanceType`, `ZoneId`, `Status` (All | Pending | Preparing |
//!   Prepared | Active | Released; unset: every pool but the Pending and
//!   Released ones), `MaxResults` (≤ 100)/`NextToken`. Answers
//!   `ElasticityAssuranceSet.ElasticityAssuranceItem[]` /
//!   `CapacityReservationSet.CapacityReservationItem[]` with
//!   `PrivatePoolOptionsId`, `PrivatePoolOptionsName`,
//!   `PrivatePoolOptionsMatchCriteria` (Open | Target), `Status`,
//!   `StartTime`/`EndTime` (`yyyy-MM-ddTHH:mmZ`), `InstanceChargeType`,
//!   `Tags.Tag[]` and `AllocatedResources.AllocatedResource[]`
//!   {InstanceType, `zoneId` (so written), TotalAmount, UsedAmount,
//!   AvailableAmount}. An id that names no pool of the kind is 400
//!   `Invalid.PrivatePoolOptions.Ids` ("exist invalid element Id").
//! - RunInstances
//!   (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances):
//!   `PrivatePoolOptions.MatchCriteria` Open | Target | None (default None)
//!   and `PrivatePoolOptions.Id`. Target launches into the named pool or
//!   not at all; Open into a matching open pool with room, else the public
//!   pool. Refusals, all HTTP 400, from the RunInstances error list:
//!   `MissingParameter.PrivatePoolOptions.Id`, `Invalid.PrivatePoolOptions.Id`
//!   ("The PrivatePool does not exist."), `Invalid.PrivatePoolOptions.status`
//!   ("The PrivatePool is expired or inactive."), `Invalid.InstanceType` /
//!   `Invalid.ZoneId` / `Invalid.InstanceChargeType` ("… does not match the
//!   PrivatePool."), `SpotNotSupported`, `Invalid.PrivatePoolOptions.NoStock`
//!   ("The PrivatePool has been used up.").
//!
//! A pool's `UsedAmount` is the live instances launched into it: releasing
//! one gives its room back.

use super::{
    ecs_tags, get, matches_tags, new_id, page_by_token, tags_param, ApiError, Cloud, Q, R,
};
use serde_json::json;

/// Which kind of private pool, and so which Describe call lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// An elasticity assurance (`eap-…`).
    ElasticityAssurance,
    /// A capacity reservation (`crp-…`).
    CapacityReservation,
}

impl PoolKind {
    fn prefix(self) -> &'static str {
        match self {
            PoolKind::ElasticityAssurance => "eap",
            PoolKind::CapacityReservation => "crp",
        }
    }

    fn list(self) -> (&'static str, &'static str) {
        match self {
            PoolKind::ElasticityAssurance => ("ElasticityAssuranceSet", "ElasticityAssuranceItem"),
            PoolKind::CapacityReservation => ("CapacityReservationSet", "CapacityReservationItem"),
        }
    }
}

/// A private pool as a test asks for it.
#[derive(Debug, Clone)]
pub struct PoolSpec {
    pub kind: PoolKind,
    pub region: String,
    pub zone: String,
    pub instance_type: String,
    /// Instances it holds.
    pub total: u32,
    /// Pending | Preparing | Prepared | Active | Released.
    pub status: String,
    /// Open | Target.
    pub match_criteria: String,
    pub tags: Vec<(String, String)>,
    /// `yyyy-MM-ddTHH:mmZ`.
    pub start: String,
    /// `yyyy-MM-ddTHH:mmZ`; `None`: released by hand (EndTimeType Unlimited).
    pub end: Option<String>,
}

impl PoolSpec {
    /// An active, targeted elasticity assurance of `total` × `instance_type`
    /// in `zone` of `region`, open-ended.
    pub fn active(region: &str, zone: &str, instance_type: &str, total: u32) -> PoolSpec {
        PoolSpec {
            kind: PoolKind::ElasticityAssurance,
            region: region.into(),
            zone: zone.into(),
            instance_type: instance_type.into(),
            total,
            status: "Active".into(),
            match_criteria: "Target".into(),
            tags: Vec::new(),
            start: "2026-11-01T00:00Z".into(),
            end: None,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Pool {
    id: String,
    spec: PoolSpec,
    /// Launches RunInstances counted against it, ever.
    launched: u32,
}

impl Cloud {
    /// Makes a private pool; its id.
    pub fn create_pool(&mut self, spec: PoolSpec) -> String {
        let id = new_id(spec.kind.prefix(), &spec.region);
        self.pools.push(Pool {
            id: id.clone(),
            spec,
            launched: 0,
        });
        id
    }

    /// Sets pool `id`'s Status (its lifecycle moving on); false if none.
    pub fn set_pool_status(&mut self, id: &str, status: &str) -> bool {
        match self.pools.iter_mut().find(|p| p.id == id) {
            Some(p) => {
                p.spec.status = status.into();
                true
            }
            None => false,
        }
    }

    /// Launches counted against pool `id` (`None`: no such pool).
    pub fn pool_launches(&self, id: &str) -> Option<u32> {
        self.pools.iter().find(|p| p.id == id).map(|p| p.launched)
    }

    /// Live instances in pool `id`.
    pub fn pool_used(&self, id: &str) -> u32 {
        self.instances
            .iter()
            .filter(|i| i.private_pool == id)
            .count() as u32
    }

    pub(super) fn describe_pools(&self, kind: PoolKind, region: &str, q: &Q) -> R {
        let ids: Option<Vec<String>> = match get(q, "PrivatePoolOptions.Ids") {
            None => None,
            Some(raw) => {
                let ids: Vec<String> = serde_json::from_str(raw).map_err(|_| {
                    ApiError::new(
                        400,
                        "InvalidParameter.PrivatePoolOptions.Ids",
                        "The specified PrivatePoolOptions.Ids is invalid.",
                    )
                })?;
                if ids.len() > 100 {
                    return Err(ApiError::new(
                        400,
                        "Invalid.TooManyPrivatePoolOptions.Ids",
                        "Too many PrivatePoolOptions.Ids in this request.",
                    ));
                }
                // "The specified private pool ID does not exist."
                if let Some(unknown) = ids.iter().find(|id| {
                    !self
                        .pools
                        .iter()
                        .any(|p| p.id == **id && p.spec.kind == kind && p.spec.region == region)
                }) {
                    return Err(ApiError::new(
                        400,
                        "Invalid.PrivatePoolOptions.Ids",
                        format!("The specified parameter \"PrivatePoolOptions.Ids\" exist invalid element Id: {unknown}."),
                    ));
                }
                Some(ids)
            }
        };
        let tags = tags_param(q)?;
        let status = get(q, "Status").unwrap_or("");
        let all: Vec<serde_json::Value> = self
            .pools
            .iter()
            .filter(|p| p.spec.kind == kind && p.spec.region == region)
            .filter(|p| ids.as_ref().is_none_or(|ids| ids.contains(&p.id)))
            .filter(|p| matches_tags(&p.spec.tags, &tags))
            .filter(|p| get(q, "InstanceType").is_none_or(|t| t == p.spec.instance_type))
            .filter(|p| get(q, "ZoneId").is_none_or(|z| z == p.spec.zone))
            .filter(|p| match status {
                "" => !matches!(p.spec.status.as_str(), "Pending" | "Released"),
                "All" => true,
                s => p.spec.status == s,
            })
            .map(|p| {
                let used = self.pool_used(&p.id);
                json!({
                    "PrivatePoolOptionsId": p.id,
                    "PrivatePoolOptionsName": "",
                    "PrivatePoolOptionsMatchCriteria": p.spec.match_criteria,
                    "RegionId": p.spec.region,
                    "Status": p.spec.status,
                    "StartTime": p.spec.start,
                    "EndTime": p.spec.end.clone().unwrap_or_default(),
                    "EndTimeType": if p.spec.end.is_some() { "Limited" } else { "Unlimited" },
                    "InstanceChargeType": "PostPaid",
                    "Description": "",
                    "AllocatedResources": {"AllocatedResource": [{
                        "InstanceType": p.spec.instance_type,
                        "zoneId": p.spec.zone,
                        "TotalAmount": p.spec.total,
                        "UsedAmount": used,
                        "AvailableAmount": p.spec.total.saturating_sub(used),
                    }]},
                    "Tags": ecs_tags(&p.spec.tags),
                })
            })
            .collect();
        page_by_token(q, all, kind.list())
    }

    /// The pool a RunInstances of `amount` × `itype` in `zone` launches
    /// into, checked; `None`: the public pool.
    pub(super) fn pool_for_launch(
        &self,
        region: &str,
        q: &Q,
        (zone, itype, charge, spot): (&str, &str, &str, &str),
        amount: usize,
    ) -> Result<Option<String>, ApiError> {
        let refuse = |code: &str, message: &str| Err(ApiError::new(400, code, message));
        let criteria = get(q, "PrivatePoolOptions.MatchCriteria").unwrap_or("None");
        let fits = |p: &Pool| {
            p.spec.status == "Active"
                && p.spec.instance_type == itype
                && p.spec.zone == zone
                && self.pool_used(&p.id) + amount as u32 <= p.spec.total
        };
        match criteria {
            "None" => Ok(None),
            "Open" => {
                if spot != "NoSpot" {
                    return Ok(None);
                }
                Ok(self
                    .pools
                    .iter()
                    .filter(|p| p.spec.region == region && p.spec.match_criteria == "Open")
                    .find(|p| fits(p))
                    .map(|p| p.id.clone()))
            }
            "Target" => {
                let Some(id) = get(q, "PrivatePoolOptions.Id").filter(|i| !i.is_empty()) else {
                    return refuse(
                        "MissingParameter.PrivatePoolOptions.Id",
                        "The specified PrivatePoolOptions.Id should not be null.",
                    );
                };
                let Some(p) = self
                    .pools
                    .iter()
                    .find(|p| p.id == id && p.spec.region == region)
                else {
                    return refuse(
                        "Invalid.PrivatePoolOptions.Id",
                        "The PrivatePool does not exist.",
                    );
                };
                if spot != "NoSpot" {
                    return refuse("SpotNotSupported", "Spot is not supported for PrivatePool.");
                }
                if p.spec.status != "Active" {
                    return refuse(
                        "Invalid.PrivatePoolOptions.status",
                        "The PrivatePool is expired or inactive.",
                    );
                }
                if p.spec.instance_type != itype {
                    return refuse(
                        "Invalid.InstanceType",
                        "The InstanceType does not match the PrivatePool.",
                    );
                }
                if p.spec.zone != zone {
                    return refuse(
                        "Invalid.ZoneId",
                        "The ZoneId does not match the PrivatePool.",
                    );
                }
                if charge != "PostPaid" {
                    return refuse(
                        "Invalid.InstanceChargeType",
                        "The InstanceChargeType does not match the PrivatePool.",
                    );
                }
                if !fits(p) {
                    return refuse(
                        "Invalid.PrivatePoolOptions.NoStock",
                        "The PrivatePool has been used up.",
                    );
                }
                Ok(Some(p.id.clone()))
            }
            _ => refuse(
                "Invalid.PrivatePoolOptions.MatchCriteria",
                "The specified parameter \"PrivatePoolOptions.MatchCriteria\" is invalid.",
            ),
        }
    }

    /// Counts a launch of `amount` against pool `id`.
    pub(super) fn count_launch(&mut self, id: &str, amount: usize) {
        if let Some(p) = self.pools.iter_mut().find(|p| p.id == id) {
            p.launched += amount as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ECS_VERSION;
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A network to launch into: (vSwitch, security group) in cn-hangzhou-h.
    fn network(c: &mut Cloud) -> (String, String) {
        let r = ("RegionId", "cn-hangzhou");
        let vpc = c
            .dispatch(
                "CreateVpc",
                "2016-04-28",
                &q(&[r, ("CidrBlock", "10.0.0.0/16")]),
            )
            .unwrap()["VpcId"]
            .as_str()
            .unwrap()
            .to_string();
        let vsw = c
            .dispatch(
                "CreateVSwitch",
                "2016-04-28",
                &q(&[
                    r,
                    ("VpcId", &vpc),
                    ("ZoneId", "cn-hangzhou-h"),
                    ("CidrBlock", "10.0.0.0/20"),
                ]),
            )
            .unwrap()["VSwitchId"]
            .as_str()
            .unwrap()
            .to_string();
        let sg = c
            .dispatch(
                "CreateSecurityGroup",
                ECS_VERSION,
                &q(&[r, ("VpcId", &vpc)]),
            )
            .unwrap()["SecurityGroupId"]
            .as_str()
            .unwrap()
            .to_string();
        (vsw, sg)
    }

    #[test]
    fn a_targeted_launch_is_checked_against_its_pool_and_counted() {
        let mut c = Cloud::new();
        let (vsw, sg) = network(&mut c);
        let pool = c.create_pool(PoolSpec::active(
            "cn-hangzhou",
            "cn-hangzhou-h",
            "ecs.gn7i-c8g1.2xlarge",
            1,
        ));
        assert!(pool.starts_with("eap-bp"), "{pool}");
        let launch = |c: &mut Cloud, itype: &str, zone: &str, id: &str| {
            c.dispatch(
                "RunInstances",
                ECS_VERSION,
                &q(&[
                    ("RegionId", "cn-hangzhou"),
                    ("ZoneId", zone),
                    ("InstanceType", itype),
                    ("ImageId", "ubuntu_22_04_x64_20G_alibase_20240130.vhd"),
                    ("VSwitchId", &vsw),
                    ("SecurityGroupId", &sg),
                    ("PrivatePoolOptions.MatchCriteria", "Target"),
                    ("PrivatePoolOptions.Id", id),
                ]),
            )
        };
        let code = |r: R| r.unwrap_err().code;
        let t = "ecs.gn7i-c8g1.2xlarge";
        assert_eq!(
            code(launch(
                &mut c,
                t,
                "cn-hangzhou-h",
                "eap-bpnosuchpool0000000"
            )),
            "Invalid.PrivatePoolOptions.Id"
        );
        assert_eq!(
            code(launch(
                &mut c,
                "ecs.gn7i-c16g1.4xlarge",
                "cn-hangzhou-h",
                &pool
            )),
            "Invalid.InstanceType"
        );
        // The vSwitch is in -h: a launch in another zone names it there.
        let other = c.create_pool(PoolSpec::active("cn-hangzhou", "cn-hangzhou-i", t, 1));
        assert_eq!(
            code(launch(&mut c, t, "cn-hangzhou-h", &other)),
            "Invalid.ZoneId"
        );
        assert!(c.set_pool_status(&pool, "Prepared"));
        assert_eq!(
            code(launch(&mut c, t, "cn-hangzhou-h", &pool)),
            "Invalid.PrivatePoolOptions.status"
        );
        assert!(c.set_pool_status(&pool, "Active"));
        assert_eq!(c.pool_launches(&pool), Some(0));
        launch(&mut c, t, "cn-hangzhou-h", &pool).unwrap();
        assert_eq!(c.pool_launches(&pool), Some(1));
        assert_eq!(c.pool_used(&pool), 1);
        assert_eq!(
            code(launch(&mut c, t, "cn-hangzhou-h", &pool)),
            "Invalid.PrivatePoolOptions.NoStock"
        );
        // As DescribeElasticityAssurances reports it.
        let v = c
            .dispatch(
                "DescribeElasticityAssurances",
                ECS_VERSION,
                &q(&[
                    ("RegionId", "cn-hangzhou"),
                    ("PrivatePoolOptions.Ids", &format!("[\"{pool}\"]")),
                ]),
            )
            .unwrap();
        let item = &v["ElasticityAssuranceSet"]["ElasticityAssuranceItem"][0];
        assert_eq!(item["PrivatePoolOptionsId"], pool.as_str());
        let r = &item["AllocatedResources"]["AllocatedResource"][0];
        assert_eq!(
            (r["TotalAmount"].as_u64(), r["UsedAmount"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(r["zoneId"], "cn-hangzhou-h");
        // Capacity reservations are another listing.
        let v = c
            .dispatch(
                "DescribeCapacityReservations",
                ECS_VERSION,
                &q(&[("RegionId", "cn-hangzhou")]),
            )
            .unwrap();
        assert_eq!(
            v["CapacityReservationSet"]["CapacityReservationItem"],
            serde_json::json!([])
        );
    }
}
