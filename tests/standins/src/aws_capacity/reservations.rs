//! EC2 On-Demand Capacity Reservations, which moto lacks (shared notes on
//! moto), as the EC2 API reference documents them, in the EC2 query
//! protocol (form body `Action=…&Version=2016-11-15`, XML answers in the
//! `http://ec2.amazonaws.com/doc/2016-11-15/` namespace):
//!
//! - `CreateCapacityReservation`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateCapacityReservation.html):
//!   `InstanceType`, `InstancePlatform`, `AvailabilityZone`,
//!   `InstanceCount` (required), `EndDateType` (`unlimited` | `limited`),
//!   `EndDate`, `InstanceMatchCriteria` (`open` | `targeted`),
//!   `TagSpecifications.N.Tag.M.Key/Value`; answers `capacityReservation`.
//! - `DescribeCapacityReservations`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityReservations.html):
//!   `CapacityReservationId.N`, `Filter.N.Name` / `Filter.N.Value.M`
//!   (`tag:KEY`, `instance-type`, `availability-zone`, `state`); an unknown
//!   id is `InvalidCapacityReservationId.NotFound`; answers
//!   `capacityReservationSet` of `CapacityReservation`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html).
//! - `RunInstances` naming
//!   `CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html):
//!   checked here (the reservation exists and is active —
//!   `InvalidCapacityReservationId.NotFound`; its type and zone are the
//!   launch's — `InvalidParameterValue`; `MaxCount` fits what is left —
//!   `ReservationCapacityExceeded`, errors overview
//!   https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html),
//!   then forwarded to moto without the `CapacityReservationSpecification`
//!   parameters, which moto does not implement; the instances moto made
//!   count against the reservation until `TerminateInstances` ends them.

use super::wire_errors::xml_escape;
use std::collections::BTreeMap;

pub(super) const XMLNS: &str = "http://ec2.amazonaws.com/doc/2016-11-15/";
/// The request parameter prefix RunInstances names a reservation with.
pub(super) const TARGET_PREFIX: &str = "CapacityReservationSpecification.";
const TARGET_ID: &str =
    "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId";

/// `reservationType` of a bought Capacity Block (`default` otherwise).
pub const CAPACITY_BLOCK: &str = "capacity-block";
/// The RunInstances parameters that name a Capacity Block's market.
const MARKET_PREFIX: &str = "InstanceMarketOptions.";

/// One reservation as EC2 reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityReservation {
    pub id: String,
    pub region: String,
    pub instance_type: String,
    pub platform: String,
    pub zone: String,
    pub total: u32,
    /// `active`, `expired`, `cancelled`, …
    pub state: String,
    /// `YYYY-MM-DDTHH:MM:SS.000Z`: a Capacity Block's start (others
    /// started when made).
    pub start: Option<String>,
    /// `YYYY-MM-DDTHH:MM:SS.000Z` with `EndDateType` `limited`.
    pub end: Option<String>,
    /// `default`, or [`CAPACITY_BLOCK`] for a purchased block.
    pub reservation_type: String,
    pub match_criteria: String,
    pub tags: BTreeMap<String, String>,
    /// Instances launched into it that still run.
    pub instances: Vec<String>,
}

impl CapacityReservation {
    pub fn available(&self) -> u32 {
        self.total.saturating_sub(self.instances.len() as u32)
    }

    pub(super) fn xml(&self, account: &str) -> String {
        let tags: String = self
            .tags
            .iter()
            .map(|(k, v)| {
                format!(
                    "<item><key>{}</key><value>{}</value></item>",
                    xml_escape(k),
                    xml_escape(v)
                )
            })
            .collect();
        format!(
            "<capacityReservationId>{id}</capacityReservationId><ownerId>{account}</ownerId>\
<capacityReservationArn>arn:aws:ec2:{region}:{account}:capacity-reservation/{id}</capacityReservationArn>\
<instanceType>{it}</instanceType><instancePlatform>{pl}</instancePlatform><availabilityZone>{az}</availabilityZone>\
<tenancy>default</tenancy><totalInstanceCount>{total}</totalInstanceCount><availableInstanceCount>{avail}</availableInstanceCount>\
<ebsOptimized>false</ebsOptimized><ephemeralStorage>false</ephemeralStorage><state>{state}</state>\
<startDate>{start}</startDate>{end}<endDateType>{edt}</endDateType>\
<instanceMatchCriteria>{mc}</instanceMatchCriteria><createDate>2026-01-01T00:00:00.000Z</createDate>\
<tagSet>{tags}</tagSet><reservationType>{rt}</reservationType>",
            start = self.start.as_deref().unwrap_or("2026-01-01T00:00:00.000Z"),
            rt = self.reservation_type,
            id = self.id,
            region = self.region,
            it = xml_escape(&self.instance_type),
            pl = xml_escape(&self.platform),
            az = xml_escape(&self.zone),
            total = self.total,
            avail = self.available(),
            state = self.state,
            end = self.end.as_deref().map(|e| format!("<endDate>{e}</endDate>")).unwrap_or_default(),
            edt = if self.end.is_some() { "limited" } else { "unlimited" },
            mc = self.match_criteria,
        )
    }
}

/// Every reservation the stand-in holds.
#[derive(Debug, Default)]
pub struct Book {
    pub by_id: BTreeMap<String, CapacityReservation>,
    next: u64,
    /// The test's pinned clock (`AwsCapacity::set_now`): Capacity Blocks'
    /// states follow it; never the wall clock.
    pub(super) now: Option<i64>,
}

/// An EC2 error: (HTTP status, code, message).
pub(crate) type Ec2Error = (u16, &'static str, String);

pub(super) fn param<'a>(p: &'a [(String, String)], name: &str) -> Option<&'a str> {
    p.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// `Prefix.N[.rest]` groups: N → the pairs under it with `rest` as key.
/// The tags of a query request's `PREFIX.N.Tag.M.Key` / `.Value` pairs
/// (CreateCapacityReservation's `TagSpecifications`, PurchaseCapacityBlock's
/// `TagSpecification`).
pub(super) fn tag_specifications(p: &[(String, String)], prefix: &str) -> BTreeMap<String, String> {
    let mut tags = BTreeMap::new();
    for (_, spec) in indexed(p, prefix) {
        let pairs: Vec<(String, String)> = spec
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (_, tag) in indexed(&pairs, "Tag") {
            let value = |name: &str| {
                tag.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            };
            if let Some(k) = value("Key") {
                tags.insert(k, value("Value").unwrap_or_default());
            }
        }
    }
    tags
}

pub(super) fn indexed<'a>(
    p: &'a [(String, String)],
    prefix: &str,
) -> BTreeMap<u32, Vec<(&'a str, &'a str)>> {
    let mut out: BTreeMap<u32, Vec<(&str, &str)>> = BTreeMap::new();
    for (k, v) in p {
        let Some(rest) = k.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let (n, tail) = rest.split_once('.').unwrap_or((rest, ""));
        if let Ok(n) = n.parse() {
            out.entry(n).or_default().push((tail, v.as_str()));
        }
    }
    out
}

/// The filter names DescribeCapacityReservations documents and the
/// stand-in answers (besides `tag:KEY`); EC2 refuses others.
const FILTERS: &[&str] = &[
    "instance-type",
    "instance-platform",
    "owner-id",
    "availability-zone",
    "state",
    "instance-match-criteria",
    "end-date-type",
];

pub(super) fn missing(name: &str) -> Ec2Error {
    (
        400,
        "MissingParameter",
        format!("The request must contain the parameter {name}"),
    )
}

impl Book {
    /// Files `r` under a fresh id; returns the id.
    pub(super) fn add(&mut self, mut r: CapacityReservation) -> String {
        self.next += 1;
        let id = format!("cr-{:017x}", 0x0c0ffee0000u64 + self.next);
        r.id = id.clone();
        if r.state.is_empty() {
            r.state = "active".into();
        }
        self.by_id.insert(id.clone(), r);
        id
    }

    /// Capacity Blocks' states at the pinned clock: `scheduled` before
    /// their start, `active` in their window, `expired` after their end.
    pub(super) fn tick(&mut self) {
        let Some(now) = self.now else { return };
        for r in self.by_id.values_mut() {
            if r.reservation_type != CAPACITY_BLOCK {
                continue;
            }
            let at = |d: &Option<String>| d.as_deref().and_then(super::blocks::parse_instant);
            r.state = match (at(&r.start), at(&r.end)) {
                (Some(s), _) if now < s => "scheduled",
                (_, Some(e)) if now >= e => "expired",
                _ => "active",
            }
            .into();
        }
    }

    /// CreateCapacityReservation.
    pub(super) fn create(
        &mut self,
        region: &str,
        p: &[(String, String)],
    ) -> Result<String, Ec2Error> {
        let it = param(p, "InstanceType").ok_or_else(|| missing("InstanceType"))?;
        let platform = param(p, "InstancePlatform").ok_or_else(|| missing("InstancePlatform"))?;
        let count: u32 = param(p, "InstanceCount")
            .ok_or_else(|| missing("InstanceCount"))?
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or((
                400,
                "InvalidParameterValue",
                "InstanceCount must be a positive integer".to_string(),
            ))?;
        let zone = param(p, "AvailabilityZone").ok_or_else(|| missing("AvailabilityZone"))?;
        let end = match (
            param(p, "EndDateType").unwrap_or("unlimited"),
            param(p, "EndDate"),
        ) {
            ("unlimited", None) => None,
            ("limited", Some(d)) => Some(d.to_string()),
            _ => {
                return Err((
                    400,
                    "InvalidParameterCombination",
                    "EndDate is required with EndDateType limited, and only then".into(),
                ))
            }
        };
        let tags = tag_specifications(p, "TagSpecifications");
        let id = self.add(CapacityReservation {
            id: String::new(),
            region: region.to_string(),
            instance_type: it.to_string(),
            platform: platform.to_string(),
            zone: zone.to_string(),
            total: count,
            state: "active".into(),
            start: None,
            end,
            reservation_type: "default".into(),
            match_criteria: param(p, "InstanceMatchCriteria")
                .unwrap_or("open")
                .to_string(),
            tags,
            instances: Vec::new(),
        });
        Ok(format!(
            "<CreateCapacityReservationResponse xmlns=\"{XMLNS}\"><requestId>{}</requestId><capacityReservation>{}</capacityReservation></CreateCapacityReservationResponse>",
            super::wire_errors::REQUEST_ID,
            self.by_id[&id].xml(super::ACCOUNT_ID)
        ))
    }

    /// DescribeCapacityReservations.
    pub(super) fn describe(
        &mut self,
        region: &str,
        p: &[(String, String)],
    ) -> Result<String, Ec2Error> {
        self.tick();
        let ids: Vec<&str> = indexed(p, "CapacityReservationId")
            .values()
            .flat_map(|v| v.iter().map(|(_, id)| *id))
            .collect();
        for id in &ids {
            if self.by_id.get(*id).is_none_or(|r| r.region != region) {
                return Err((
                    400,
                    "InvalidCapacityReservationId.NotFound",
                    format!("The capacity reservation ID '{id}' does not exist"),
                ));
            }
        }
        let filters: Vec<(String, Vec<String>)> = indexed(p, "Filter")
            .into_values()
            .map(|f| {
                let name = f
                    .iter()
                    .find(|(k, _)| *k == "Name")
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default();
                let values = f
                    .iter()
                    .filter(|(k, _)| k.starts_with("Value."))
                    .map(|(_, v)| v.to_string())
                    .collect();
                (name, values)
            })
            .collect();
        if let Some((name, _)) = filters
            .iter()
            .find(|(n, _)| !FILTERS.contains(&n.as_str()) && !n.starts_with("tag:"))
        {
            return Err((
                400,
                "InvalidParameterValue",
                format!("The filter '{name}' is invalid"),
            ));
        }
        let mut items = String::new();
        for r in self.by_id.values().filter(|r| r.region == region) {
            if !ids.is_empty() && !ids.contains(&r.id.as_str()) {
                continue;
            }
            let keep = filters.iter().all(|(name, values)| {
                let have = match name.as_str() {
                    "instance-type" => Some(r.instance_type.as_str()),
                    "instance-platform" => Some(r.platform.as_str()),
                    "owner-id" => Some(super::ACCOUNT_ID),
                    "instance-match-criteria" => Some(r.match_criteria.as_str()),
                    "end-date-type" => Some(if r.end.is_some() {
                        "limited"
                    } else {
                        "unlimited"
                    }),
                    "availability-zone" => Some(r.zone.as_str()),
                    "state" => Some(r.state.as_str()),
                    n => n
                        .strip_prefix("tag:")
                        .and_then(|k| r.tags.get(k))
                        .map(String::as_str),
                };
                have.is_some_and(|h| values.iter().any(|v| v == h))
            });
            if keep {
                items.push_str(&format!("<item>{}</item>", r.xml(super::ACCOUNT_ID)));
            }
        }
        Ok(format!(
            "<DescribeCapacityReservationsResponse xmlns=\"{XMLNS}\"><requestId>{}</requestId><capacityReservationSet>{items}</capacityReservationSet></DescribeCapacityReservationsResponse>",
            super::wire_errors::REQUEST_ID
        ))
    }

    /// The reservation a RunInstances targets, checked; `None` when it
    /// names none.
    pub(super) fn admit(
        &mut self,
        region: &str,
        p: &[(String, String)],
    ) -> Result<Option<String>, Ec2Error> {
        self.tick();
        let market = param(p, "InstanceMarketOptions.MarketType");
        let Some(id) = param(p, TARGET_ID) else {
            if market == Some(CAPACITY_BLOCK) {
                return Err((
                    400,
                    "MissingParameter",
                    "A launch into the capacity-block market must target a Capacity Block (CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId)".into(),
                ));
            }
            return Ok(None);
        };
        let Some(r) = self.by_id.get(id).filter(|r| r.region == region) else {
            return Err((
                400,
                "InvalidCapacityReservationId.NotFound",
                format!("The capacity reservation ID '{id}' does not exist"),
            ));
        };
        let block = r.reservation_type == CAPACITY_BLOCK;
        if block != (market == Some(CAPACITY_BLOCK)) {
            return Err((
                400,
                "InvalidParameterCombination",
                if block {
                    format!("{id} is a Capacity Block: launch into it with InstanceMarketOptions.MarketType capacity-block")
                } else {
                    format!("{id} is not a Capacity Block: the capacity-block market launches only into one")
                },
            ));
        }
        if r.state != "active" {
            return Err(if block {
                (
                    400,
                    "InvalidParameterValue",
                    format!(
                        "Capacity Block {id} is {} (its window is {} to {}): instances launch into it only while it is active",
                        r.state,
                        r.start.as_deref().unwrap_or("?"),
                        r.end.as_deref().unwrap_or("?")
                    ),
                )
            } else {
                (
                    400,
                    "InvalidCapacityReservationId.NotFound",
                    format!("The capacity reservation ID '{id}' does not exist"),
                )
            });
        }
        let it = param(p, "InstanceType").unwrap_or("m1.small");
        let zone = param(p, "Placement.AvailabilityZone");
        if r.instance_type != it || zone.is_some_and(|z| z != r.zone) {
            return Err((
                400,
                "InvalidParameterValue",
                format!(
                    "The instance type or Availability Zone of the request does not match capacity reservation {id} ({} in {})",
                    r.instance_type, r.zone
                ),
            ));
        }
        let wanted: u32 = param(p, "MaxCount")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        if wanted > r.available() {
            return Err((
                400,
                "ReservationCapacityExceeded",
                format!("The targeted Capacity Reservation {id} does not have enough available instance capacity to fulfill your request"),
            ));
        }
        Ok(Some(id.to_string()))
    }

    /// Counts the instances moto made against reservation `id`.
    pub(super) fn launched(&mut self, id: &str, instances: Vec<String>) {
        if let Some(r) = self.by_id.get_mut(id) {
            r.instances.extend(instances);
        }
    }

    /// Frees what terminated instances held.
    pub(super) fn terminated(&mut self, instances: &[String]) {
        for r in self.by_id.values_mut() {
            r.instances.retain(|i| !instances.contains(i));
        }
    }
}

/// The body of a RunInstances without its reservation parameters and a
/// Capacity Block's market (moto implements neither), as sent otherwise
/// (pairs kept raw, in order).
pub(super) fn without_target(raw_body: &str) -> String {
    raw_body
        .split('&')
        .filter(|part| !part.starts_with(TARGET_PREFIX) && !part.starts_with(MARKET_PREFIX))
        .collect::<Vec<_>>()
        .join("&")
}

/// `<instanceId>` values of a RunInstances answer (moto's XML).
pub(super) fn instance_ids(xml: &str) -> Vec<String> {
    xml.split("<instanceId>")
        .skip(1)
        .filter_map(|s| s.split_once("</instanceId>").map(|(id, _)| id.to_string()))
        .collect()
}

/// `InstanceId.N` of a TerminateInstances.
pub(super) fn named_instances(p: &[(String, String)]) -> Vec<String> {
    indexed(p, "InstanceId")
        .into_values()
        .flat_map(|v| v.into_iter().map(|(_, id)| id.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(raw: &str) -> Vec<(String, String)> {
        crate::verify::text::query_pairs(raw).unwrap()
    }

    #[test]
    fn a_launch_is_checked_against_its_target_and_forwarded_without_it() {
        let mut book = Book::default();
        let made = book
            .create(
                "us-east-1",
                &pairs("Action=CreateCapacityReservation&InstanceType=p5.48xlarge&InstancePlatform=Linux%2FUNIX&AvailabilityZone=us-east-1a&InstanceCount=1&TagSpecifications.1.ResourceType=capacity-reservation&TagSpecifications.1.Tag.1.Key=team&TagSpecifications.1.Tag.1.Value=ml"),
            )
            .unwrap();
        let id = book.by_id.keys().next().unwrap().clone();
        assert!(made.contains(&format!(
            "<capacityReservationId>{id}</capacityReservationId>"
        )));
        assert_eq!(book.by_id[&id].tags["team"], "ml");
        let run = format!("Action=RunInstances&InstanceType=p5.48xlarge&MaxCount=1&MinCount=1&Placement.AvailabilityZone=us-east-1a&CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId={id}");
        assert_eq!(
            book.admit("us-east-1", &pairs(&run)).unwrap(),
            Some(id.clone())
        );
        assert_eq!(
            without_target(&run),
            "Action=RunInstances&InstanceType=p5.48xlarge&MaxCount=1&MinCount=1&Placement.AvailabilityZone=us-east-1a"
        );
        book.launched(
            &id,
            instance_ids("<item><instanceId>i-1</instanceId></item>"),
        );
        assert_eq!(
            book.admit("us-east-1", &pairs(&run)).unwrap_err().1,
            "ReservationCapacityExceeded"
        );
        let other_zone = run.replace("us-east-1a", "us-east-1b");
        book.terminated(&["i-1".to_string()]);
        assert_eq!(
            book.admit("us-east-1", &pairs(&other_zone)).unwrap_err().1,
            "InvalidParameterValue"
        );
        assert_eq!(
            book.admit("us-west-2", &pairs(&run)).unwrap_err().1,
            "InvalidCapacityReservationId.NotFound"
        );
        let by_tag = book
            .describe(
                "us-east-1",
                &pairs("Filter.1.Name=tag%3Ateam&Filter.1.Value.1=ml"),
            )
            .unwrap();
        assert!(by_tag.contains(&id), "{by_tag}");
        let none = book
            .describe(
                "us-east-1",
                &pairs("Filter.1.Name=tag%3Ateam&Filter.1.Value.1=web"),
            )
            .unwrap();
        assert!(!none.contains(&id), "{none}");
    }
}
