//! The stand-in's resources and the actions on them. Each action cites the
//! Alibaba Cloud API reference page it follows (help.aliyun.com /
//! alibabacloud.com "API reference" for ECS 2014-05-26 and VPC 2016-04-28);
//! codes and HTTP statuses come from each page's "Error codes" table or the
//! common error codes.

// `map_or(true, …)` keeps the crate's MSRV (1.80; `is_none_or` is 1.82).
#![allow(clippy::unnecessary_map_or)]

mod pools;

pub use pools::{PoolKind, PoolSpec};

use crate::MockResource;
use gpuform_provider::ResourceKind;
use serde_json::{json, Value};
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

pub const ECS_VERSION: &str = "2014-05-26";
pub const VPC_VERSION: &str = "2016-04-28";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, code: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
        }
    }
}

type R = Result<Value, ApiError>;

/// What a ClientToken was first used for: the ids made and the parameters sent.
type TokenUse = (Vec<String>, Vec<(String, String)>);

/// Faults a test can inject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// RunInstances of `instance_type` in `zone` answers 403
    /// `OperationDenied.NoStock` (RunInstances error codes) until cleared
    /// with an empty zone.
    NoStock { zone: String, instance_type: String },
    /// At most this many instances may exist; RunInstances beyond it answers
    /// 403 `QuotaExceed.ElasticQuotaNo`.
    InstanceQuota(usize),
    /// The next call of `action` fails with this status and code (e.g. 400
    /// `Throttling.User`, 503 `ServiceUnavailable`), without taking effect.
    Once {
        action: String,
        status: u16,
        code: String,
    },
    /// The next call of `action` answers HTTP 200 with a RequestId and no
    /// documented body (what a throttling proxy or a degraded gateway hands
    /// back), without taking effect. A client must read this as an error.
    BareOnce { action: String },
    /// RunInstances of `instance_type` in `zone` is accepted, then the
    /// instance fails to be created (until cleared with an empty zone).
    /// ECS "System events related to instance creation failures"
    /// (help.aliyun.com/en/ecs/user-guide/view-instance-creation-failure-events):
    /// when stock runs out after the order, the event SystemFailure.Delete
    /// is raised, the instance shows Stopped instead of ever Running, and the
    /// system releases it "in most cases within 5 minutes" (here: after four
    /// pending times); it can also be released by hand.
    LaunchFails { zone: String, instance_type: String },
}

/// DescribeInstances, DescribeDisks, DescribeSecurityGroups, DescribeVpcs and
/// DescribeVSwitches, parameter Tag.N.Key: when resources are filtered by
/// tags, at most 1,000 of them are returned across all pages; more need
/// ListTagResources (the figure as issue 15 reports it; not re-found
/// verbatim in the reference pages reachable here, see the provider README). The cap is silent (no error, no marker), so a client
/// that trusts a tag-filtered listing of ≥ 1,000 resources loses the rest.
pub const TAG_FILTER_CAP: usize = 1000;

#[derive(Debug, Clone)]
struct Vpc {
    id: String,
    region: String,
    cidr: String,
    name: String,
    tags: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
struct VSwitch {
    id: String,
    region: String,
    vpc: String,
    zone: String,
    cidr: String,
    name: String,
    tags: Vec<(String, String)>,
    /// Set by DeleteVSwitch, which is asynchronous: the vSwitch is
    /// `Pending` (and keeps its CIDR block) until `deleting_for` has passed.
    deleting_since: Option<std::time::Instant>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Perm {
    protocol: String,
    port_range: String,
    source_cidr: String,
    source_group: String,
    policy: String,
    description: String,
}

#[derive(Debug, Clone)]
struct Group {
    id: String,
    region: String,
    vpc: String,
    name: String,
    tags: Vec<(String, String)>,
    perms: Vec<Perm>,
    /// Accept (members reach each other; the default of a basic group) or Drop.
    inner_policy: String,
    /// Outbound rules. A basic group lets all traffic out until an egress
    /// rule drops it (CreateSecurityGroup; AuthorizeSecurityGroupEgress).
    egress: Vec<EgressRule>,
}

/// An outbound rule (AuthorizeSecurityGroupEgress `Permissions.N.*`).
#[derive(Debug, Clone)]
struct EgressRule {
    /// `SecurityGroupRuleId`, as DescribeSecurityGroupAttribute lists it.
    id: String,
    protocol: String,
    port_range: String,
    dest_cidr: String,
    /// accept | drop (the default: accept).
    policy: String,
    priority: String,
}

#[derive(Debug, Clone)]
struct DeploymentSet {
    id: String,
    region: String,
    name: String,
    description: String,
    strategy: String,
}

#[derive(Debug, Clone)]
struct Instance {
    id: String,
    region: String,
    zone: String,
    instance_type: String,
    image: String,
    vswitch: String,
    vpc: String,
    group: String,
    deployment_set: String,
    charge: String,
    spot: String,
    name: String,
    tags: Vec<(String, String)>,
    created: Instant,
    /// Subscription (PrePaid) end, Unix seconds; None for pay-as-you-go.
    expires: Option<i64>,
    /// ModifyInstanceAutoRenewAttribute RenewalStatus: AutoRenewal | Normal | NotRenewal.
    renewal: String,
    /// Accepted by RunInstances, then failed (see [`Fault::LaunchFails`]).
    launch_failed: bool,
    /// The primary private address, from the vSwitch's CIDR block.
    private_ip: String,
    /// The private pool it was launched into ("" for the public pool).
    private_pool: String,
}

#[derive(Debug, Clone)]
struct Disk {
    id: String,
    region: String,
    zone: String,
    size: u64,
    category: String,
    system: bool,
    instance: String,
    delete_with_instance: bool,
    name: String,
    tags: Vec<(String, String)>,
    /// When CreateDisk (or RunInstances, for a system disk) made it.
    created: Instant,
}

#[derive(Debug, Clone)]
struct Image {
    id: &'static str,
    name: &'static str,
    created: &'static str,
}

/// Public images the stand-in knows (names in Alibaba's public-image style).
const IMAGES: &[Image] = &[
    Image {
        id: "ubuntu_22_04_x64_20G_alibase_20230515.vhd",
        name: "ubuntu_22_04_x64_20G_alibase_20230515.vhd",
        created: "2023-05-15T08:00:00Z",
    },
    Image {
        id: "ubuntu_22_04_x64_20G_alibase_20240130.vhd",
        name: "ubuntu_22_04_x64_20G_alibase_20240130.vhd",
        created: "2024-01-30T08:00:00Z",
    },
    Image {
        id: "ubuntu_20_04_x64_20G_alibase_20240130.vhd",
        name: "ubuntu_20_04_x64_20G_alibase_20240130.vhd",
        created: "2024-01-30T08:00:00Z",
    },
    Image {
        id: "ubuntu_24_04_x64_20G_alibase_20240812.vhd",
        name: "ubuntu_24_04_x64_20G_alibase_20240812.vhd",
        created: "2024-08-12T08:00:00Z",
    },
    Image {
        id: "aliyun_3_x64_20G_alibase_20240528.vhd",
        name: "aliyun_3_x64_20G_alibase_20240528.vhd",
        created: "2024-05-28T08:00:00Z",
    },
];

/// Everything alive in the stand-in.
pub struct Cloud {
    vpcs: Vec<Vpc>,
    vswitches: Vec<VSwitch>,
    groups: Vec<Group>,
    sets: Vec<DeploymentSet>,
    instances: Vec<Instance>,
    disks: Vec<Disk>,
    /// Elasticity assurances and capacity reservations ([`pools`]).
    pools: Vec<pools::Pool>,
    /// (action, ClientToken) → (ids made, parameters of the first call).
    tokens: HashMap<(String, String), TokenUse>,
    faults: VecDeque<Fault>,
    no_stock: Vec<(String, String)>,
    launch_fails: Vec<(String, String)>,
    quota: Option<usize>,
    pub pending_for: Duration,
    /// How long a deleted vSwitch stays `Pending` before it is gone.
    pub deleting_for: Duration,
    /// How long a data disk made by CreateDisk stays Creating before it is
    /// Available (see [`Cloud::disk_status`]).
    pub disk_creating_for: Duration,
    /// What DescribePrice and DescribeSpotPriceHistory quote (CNY).
    pub prices: crate::prices::PriceBook,
    /// What DescribeRegions, DescribeZones and DescribeAvailableResource answer.
    pub geography: crate::geography::Geography,
    /// What DescribeAccountAttributes answers for the vCPU quotas.
    pub vcpu_quota: VcpuQuota,
    /// DescribeAccountAttributes is refused (`Forbidden.RAM`).
    pub deny_account_attributes: bool,
}

/// The vCPU attributes DescribeAccountAttributes reports (per region, the
/// same in every region of the stand-in), set by tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VcpuQuota {
    pub max_postpaid: u64,
    pub used_postpaid: u64,
    pub max_spot: u64,
    pub used_spot: u64,
}

impl Default for VcpuQuota {
    /// An assumption, not a documented default: room for a few GPU nodes.
    fn default() -> Self {
        VcpuQuota {
            max_postpaid: 1000,
            used_postpaid: 0,
            max_spot: 1000,
            used_spot: 0,
        }
    }
}

type Q = [(String, String)];

fn get<'a>(q: &'a Q, k: &str) -> Option<&'a str> {
    q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

fn need<'a>(q: &'a Q, k: &str) -> Result<&'a str, ApiError> {
    get(q, k)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::new(400, format!("Missing{k}"), format!("The input parameter \"{k}\" that is mandatory for processing this request is not supplied.")))
}

/// `Prefix.N.Field` values for N = 1, 2, … (stops at the first gap).
fn indexed(q: &Q, prefix: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for n in 1.. {
        let row: Vec<Option<&str>> = fields
            .iter()
            .map(|f| get(q, &format!("{prefix}.{n}.{f}")))
            .collect();
        if row.iter().all(Option::is_none) {
            break;
        }
        out.push(
            row.into_iter()
                .map(|v| v.unwrap_or_default().to_string())
                .collect(),
        );
    }
    out
}

/// `Prefix.N` values.
fn listed(q: &Q, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for n in 1.. {
        match get(q, &format!("{prefix}.{n}")) {
            Some(v) => out.push(v.to_string()),
            None => break,
        }
    }
    out
}

fn tags_param(q: &Q) -> Result<Vec<(String, String)>, ApiError> {
    let tags: Vec<(String, String)> = indexed(q, "Tag", &["Key", "Value"])
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    if tags.len() > 20 {
        return Err(ApiError::new(
            400,
            "InvalidTagCount",
            "The number of tags exceeds 20.",
        ));
    }
    for (k, _) in &tags {
        if k.is_empty() || k.starts_with("aliyun") || k.starts_with("acs:") {
            return Err(ApiError::new(
                400,
                "InvalidTagKey.Malformed",
                "The specified Tag.n.Key is not valid.",
            ));
        }
    }
    Ok(tags)
}

/// `Tag.N.Key`/`Tag.N.Value` as a filter: every given key must be there,
/// with the given value when one is given.
fn matches_tags(have: &[(String, String)], want: &[(String, String)]) -> bool {
    want.iter().all(|(k, v)| {
        have.iter()
            .any(|(hk, hv)| hk == k && (v.is_empty() || hv == v))
    })
}

/// A JSON array of ids (`["i-1","i-2"]`), as the batched Describe calls take.
fn id_array(q: &Q, k: &str, max: usize) -> Result<Option<Vec<String>>, ApiError> {
    let Some(raw) = get(q, k) else {
        return Ok(None);
    };
    let ids: Vec<String> = serde_json::from_str(raw).map_err(|_| {
        ApiError::new(
            400,
            format!("Invalid{k}.Malformed"),
            format!("The specified parameter \"{k}\" is not a JSON array."),
        )
    })?;
    if ids.len() > max {
        return Err(ApiError::new(
            400,
            format!("Invalid{k}.Malformed"),
            format!("\"{k}\" holds more than {max} ids."),
        ));
    }
    Ok(Some(ids))
}

fn ecs_tags(t: &[(String, String)]) -> Value {
    json!({"Tag": t.iter().map(|(k, v)| json!({"TagKey": k, "TagValue": v})).collect::<Vec<_>>()})
}

fn vpc_tags(t: &[(String, String)]) -> Value {
    json!({"Tag": t.iter().map(|(k, v)| json!({"Key": k, "Value": v})).collect::<Vec<_>>()})
}

fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    h.finish()
}

/// An id in Alibaba's style: `prefix-` + 2-letter region code + 18 lower-case alphanumerics.
fn new_id(prefix: &str, region: &str) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let code = match region {
        "cn-hangzhou" => "bp",
        "cn-shanghai" => "uf",
        "cn-beijing" => "2z",
        "cn-shenzhen" => "wz",
        _ => "gw",
    };
    let mut s = format!("{prefix}-{code}");
    let (mut a, mut b) = (random_u64(), random_u64());
    for i in 0..18 {
        let r = if i < 9 { &mut a } else { &mut b };
        s.push(ALPHABET[(*r % 36) as usize] as char);
        *r /= 36;
    }
    s
}

/// A RequestId in Alibaba's form (an upper-case UUID).
pub fn request_id() -> String {
    let h = format!("{:016X}{:016X}", random_u64(), random_u64());
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn now_iso() -> String {
    iso_minutes(unix_now())
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `yyyy-MM-ddTHH:mmZ`, as DescribeInstances writes ExpiredTime.
fn iso_minutes(secs: i64) -> String {
    let t =
        time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}

/// The subscription length RunInstances was asked for, in seconds (a month
/// counted as 30 days: only the order of ExpiredTime values matters here).
/// alibabacloud.com/help/en/ecs/developer-reference/api-runinstances;
/// InvalidPeriod is the code the API answers for a period it does not sell
/// (developer.aliyun.com/ask/604587 quotes it).
/// RunInstances, `PeriodUnit`: Week | Month (default Month); `Period`:
/// with Week 1, 2, 3, 4; with Month 1-9, 12, 24, 36, 48, 60; required for
/// PrePaid. Anything else (e.g. `PeriodUnit=Year`, which RunInstances does
/// not take) is refused like the API does: 400 InvalidPeriod ("The
/// specified period is not valid.") / InvalidPeriodUnit.
fn subscription_seconds(q: &Q) -> Result<i64, ApiError> {
    let unit = get(q, "PeriodUnit").unwrap_or("Month");
    let period: i64 = get(q, "Period")
        .ok_or_else(|| {
            ApiError::new(
                400,
                "MissingPeriod",
                "Period is required for PrePaid instances.",
            )
        })?
        .parse()
        .map_err(|_| ApiError::new(400, "InvalidPeriod", "The specified period is not valid."))?;
    let ok = match unit {
        "Week" => (1..=4).contains(&period),
        "Month" => (1..=9).contains(&period) || [12, 24, 36, 48, 60].contains(&period),
        _ => {
            return Err(ApiError::new(
                400,
                "InvalidPeriodUnit",
                "The specified PeriodUnit is not valid; use Week or Month.",
            ))
        }
    };
    if !ok {
        return Err(ApiError::new(
            400,
            "InvalidPeriod",
            "The specified period is not valid.",
        ));
    }
    let day = 86_400;
    Ok(if unit == "Week" {
        period * 7 * day
    } else {
        period * 30 * day
    })
}

fn valid_cidr(c: &str) -> bool {
    let Some((ip, bits)) = c.split_once('/') else {
        return false;
    };
    let octets: Vec<&str> = ip.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|o| o.parse::<u8>().is_ok())
        && bits.parse::<u8>().is_ok_and(|b| b <= 32)
}

/// Whether two valid IPv4 blocks share an address.
fn cidrs_overlap(a: &str, b: &str) -> bool {
    match (a.parse::<ipnet::Ipv4Net>(), b.parse::<ipnet::Ipv4Net>()) {
        (Ok(a), Ok(b)) => a.contains(&b.network()) || b.contains(&a.network()),
        _ => false,
    }
}

/// The silent cap of tag-filtered listings (see [`TAG_FILTER_CAP`]).
fn cap_tagged(mut all: Vec<Value>, tags: &[(String, String)]) -> Vec<Value> {
    if !tags.is_empty() {
        all.truncate(TAG_FILTER_CAP);
    }
    all
}

/// `PageNumber`/`PageSize` pagination (DescribeVpcs, DescribeVSwitches,
/// DescribeDeploymentSets, DescribeImages: PageSize ≤ 50, default 10).
fn page_by_number(q: &Q, all: Vec<Value>, list: (&str, &str)) -> R {
    let number: usize = get(q, "PageNumber").unwrap_or("1").parse().map_err(|_| {
        ApiError::new(
            400,
            "InvalidPageNumber",
            "The specified PageNumber is not valid.",
        )
    })?;
    let size: usize = get(q, "PageSize").unwrap_or("10").parse().map_err(|_| {
        ApiError::new(
            400,
            "InvalidPageSize",
            "The specified PageSize is not valid.",
        )
    })?;
    if number == 0 || size == 0 || size > 50 {
        return Err(ApiError::new(
            400,
            "InvalidParameter",
            "PageNumber starts at 1 and PageSize is 1 to 50.",
        ));
    }
    let total = all.len();
    let page: Vec<Value> = all
        .into_iter()
        .skip((number - 1) * size)
        .take(size)
        .collect();
    let mut v = json!({"TotalCount": total, "PageNumber": number, "PageSize": size});
    v[list.0] = json!({ list.1: page });
    Ok(v)
}

/// `MaxResults`/`NextToken` pagination (DescribeInstances,
/// DescribeSecurityGroups, DescribeDisks: MaxResults ≤ 100).
fn page_by_token(q: &Q, all: Vec<Value>, list: (&str, &str)) -> R {
    let max: usize = get(q, "MaxResults").unwrap_or("10").parse().map_err(|_| {
        ApiError::new(
            400,
            "InvalidParameter",
            "The specified MaxResults is not valid.",
        )
    })?;
    if max == 0 || max > 100 {
        return Err(ApiError::new(
            400,
            "InvalidParameter",
            "MaxResults is 1 to 100.",
        ));
    }
    let start = match get(q, "NextToken").filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => t
            .strip_prefix("nt")
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .ok_or_else(|| {
                ApiError::new(
                    400,
                    "InvalidNextToken",
                    "The specified NextToken is not valid.",
                )
            })?,
    };
    let total = all.len();
    let page: Vec<Value> = all.into_iter().skip(start).take(max).collect();
    let next = if start + page.len() < total {
        format!("nt{:08x}", start + page.len())
    } else {
        String::new()
    };
    let mut v = json!({"NextToken": next, "TotalCount": total, "MaxResults": max});
    v[list.0] = json!({ list.1: page });
    Ok(v)
}

/// Points of spot history per DescribeSpotPriceHistory page (the API pages
/// by `Offset` / `NextOffset`; a small page makes clients page).
const SPOT_PAGE: usize = 2;

impl Cloud {
    /// Counts a price request against the injected outage.
    fn price_outage(&mut self) -> Result<(), ApiError> {
        if self.prices.outage() {
            return Err(ApiError::new(
                500,
                "InternalError",
                "The request processing has failed due to some unknown error, exception or failure.",
            ));
        }
        Ok(())
    }

    fn list_price(&self, q: &Q) -> Result<crate::prices::ListPrice, ApiError> {
        let itype = need(q, "InstanceType")?;
        self.prices.get(itype).ok_or_else(|| {
            ApiError::new(
                400,
                "InvalidInstanceType.ValueNotSupported",
                format!("The specified InstanceType `{itype}` does not exist or is not supported."),
            )
        })
    }

    /// DescribePrice (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice):
    /// `ResourceType` (instance, the default), `InstanceType`, `PriceUnit`
    /// DescribeRegions — https://www.alibabacloud.com/help/en/ecs/api-regions-describeregions:
    /// `Regions.Region[]` {RegionId, LocalName, RegionEndpoint, Status}.
    fn describe_regions(&self) -> Value {
        let regions: Vec<Value> = self
            .geography
            .regions()
            .map(|r| json!({"RegionId": r, "LocalName": r, "RegionEndpoint": "ecs.aliyuncs.com", "Status": "available"}))
            .collect();
        json!({"Regions": {"Region": regions}})
    }

    /// The zones of a region the stand-in lists; another is
    /// `InvalidRegionId.NotFound` (ECS error center).
    fn zones_of(&self, region: &str) -> Result<Vec<String>, ApiError> {
        self.geography.zones(region).cloned().ok_or_else(|| {
            ApiError::new(
                404,
                "InvalidRegionId.NotFound",
                "The specified RegionId does not exist.",
            )
        })
    }

    /// DescribeZones — https://www.alibabacloud.com/help/en/ecs/api-describezones:
    /// `Zones.Zone[]` {ZoneId, LocalName, ZoneType, AvailableInstanceTypes.InstanceTypes[]}.
    fn describe_zones(&self, region: &str) -> R {
        let offers = self.geography.offers_in(region);
        let zones: Vec<Value> = self
            .zones_of(region)?
            .iter()
            .map(|z| {
                let types: Vec<&str> = offers
                    .iter()
                    .filter(|o| &o.zone == z && !o.sold_out)
                    .map(|o| o.instance_type.as_str())
                    .collect();
                json!({"ZoneId": z, "LocalName": z, "ZoneType": "AvailabilityZone",
                       "AvailableInstanceTypes": {"InstanceTypes": types}})
            })
            .collect();
        Ok(json!({"Zones": {"Zone": zones}}))
    }

    /// DescribeAvailableResource —
    /// https://www.alibabacloud.com/help/en/ecs/api-describeavailableresource:
    /// `DestinationResource` (required; this stand-in answers `InstanceType`),
    /// `ZoneId`, `InstanceType`; answers `AvailableZones.AvailableZone[]`
    /// {RegionId, ZoneId, Status, StatusCategory,
    /// `AvailableResources.AvailableResource[]` {Type,
    /// `SupportedResources.SupportedResource[]` {Value, Status
    /// (Available / SoldOut), StatusCategory (WithStock / WithoutStock)}}}.
    fn describe_available_resource(&self, region: &str, q: &Q) -> R {
        let dest = need(q, "DestinationResource")?;
        if dest != "InstanceType" {
            return Err(ApiError::new(
                400,
                "InvalidDestinationResource.NotSupported",
                format!("The DestinationResource `{dest}` is not supported by this stand-in."),
            ));
        }
        let only_zone = get(q, "ZoneId");
        let only_type = get(q, "InstanceType");
        let offers = self.geography.offers_in(region);
        let zones: Vec<Value> = self
            .zones_of(region)?
            .iter()
            .filter(|z| only_zone.is_none_or(|o| o == z.as_str()))
            .filter_map(|z| {
                let supported: Vec<Value> = offers
                    .iter()
                    .filter(|o| &o.zone == z && only_type.is_none_or(|t| t == o.instance_type))
                    .map(|o| {
                        json!({"Value": o.instance_type,
                               "Status": if o.sold_out { "SoldOut" } else { "Available" },
                               "StatusCategory": if o.sold_out { "WithoutStock" } else { "WithStock" }})
                    })
                    .collect();
                (!supported.is_empty()).then(|| {
                    json!({"RegionId": region, "ZoneId": z, "Status": "Available", "StatusCategory": "WithStock",
                           "AvailableResources": {"AvailableResource": [
                               {"Type": "InstanceType", "SupportedResources": {"SupportedResource": supported}}]}})
                })
            })
            .collect();
        Ok(json!({"AvailableZones": {"AvailableZone": zones}}))
    }

    /// Hour | Month | Week | Year with `Period`, `SpotStrategy`; answers
    /// `PriceInfo.Price` {OriginalPrice, DiscountPrice, TradePrice, Currency}
    /// and `PriceInfo.Rules.Rule[]`. The stand-in gives no discount.
    fn describe_price(&mut self, q: &Q) -> R {
        let rtype = get(q, "ResourceType").unwrap_or("instance");
        if rtype != "instance" {
            return Err(ApiError::new(
                400,
                "InvalidResourceType.NotSupported",
                format!("The ResourceType `{rtype}` is not supported by this stand-in."),
            ));
        }
        self.price_outage()?;
        let list = self.list_price(q)?;
        let period: u32 = match get(q, "Period") {
            None | Some("") => 1,
            Some(p) => p.parse().map_err(|_| {
                ApiError::new(400, "InvalidPeriod", "The specified Period is not valid.")
            })?,
        };
        let spot = !matches!(get(q, "SpotStrategy").unwrap_or("NoSpot"), "NoSpot");
        let unit = get(q, "PriceUnit").unwrap_or("Hour");
        let price = match (unit, spot) {
            ("Hour", false) => list.hourly,
            ("Hour", true) => list.spot.ok_or_else(|| {
                ApiError::new(
                    403,
                    "Zone.NotOnSale",
                    "The specified instance type is not sold as preemptible.",
                )
            })?,
            (_, true) => {
                return Err(ApiError::new(
                    400,
                    "InvalidParameter.SpotStrategy",
                    "Preemptible instances are billed by the hour.",
                ))
            }
            ("Month", _) => list.month * f64::from(period),
            ("Year", _) => list.year * f64::from(period),
            ("Week", _) => list.month * f64::from(period) / 4.0,
            (other, _) => {
                return Err(ApiError::new(
                    400,
                    "InvalidPriceUnit.ValueNotSupported",
                    format!("The PriceUnit `{other}` is not supported."),
                ))
            }
        };
        Ok(json!({
            "PriceInfo": {
                "Price": {"OriginalPrice": price, "DiscountPrice": 0.0, "TradePrice": price, "Currency": "CNY"},
                "Rules": {"Rule": []},
            }
        }))
    }

    /// DescribeSpotPriceHistory (…/api-ecs-2014-05-26-describespotpricehistory):
    /// `NetworkType` and `InstanceType` required, `ZoneId`, `Offset`; answers
    /// `SpotPrices.SpotPriceType[]` {ZoneId, InstanceType, SpotPrice,
    /// OriginPrice, Timestamp, NetworkType, IoOptimized}, `NextOffset` and
    /// `Currency`. The stand-in's history: five daily points ending at the
    /// list spot price, oldest first.
    fn spot_price_history(&mut self, q: &Q) -> R {
        need(q, "NetworkType")?;
        self.price_outage()?;
        let list = self.list_price(q)?;
        let itype = need(q, "InstanceType")?;
        let zone = get(q, "ZoneId").unwrap_or("");
        let points: Vec<Value> = match list.spot {
            None => Vec::new(),
            Some(s) => (0..5)
                .map(|i| {
                    json!({
                        "ZoneId": zone,
                        "InstanceType": itype,
                        "SpotPrice": s * (1.0 + 0.1 * f64::from(4 - i)),
                        "OriginPrice": list.hourly,
                        "Timestamp": format!("2026-11-{:02}T00:00:00Z", 24 + i),
                        "NetworkType": "vpc",
                        "IoOptimized": "optimized",
                    })
                })
                .collect(),
        };
        let offset: usize = get(q, "Offset").and_then(|o| o.parse().ok()).unwrap_or(0);
        let page: Vec<Value> = points
            .iter()
            .skip(offset)
            .take(SPOT_PAGE)
            .cloned()
            .collect();
        let next = if offset + page.len() < points.len() {
            offset + page.len()
        } else {
            0
        };
        Ok(json!({
            "SpotPrices": {"SpotPriceType": page},
            "NextOffset": next,
            "Currency": "CNY",
        }))
    }

    pub fn new() -> Cloud {
        Cloud {
            vpcs: Vec::new(),
            vswitches: Vec::new(),
            groups: Vec::new(),
            sets: Vec::new(),
            instances: Vec::new(),
            disks: Vec::new(),
            pools: Vec::new(),
            tokens: HashMap::new(),
            faults: VecDeque::new(),
            no_stock: Vec::new(),
            launch_fails: Vec::new(),
            quota: None,
            pending_for: Duration::from_millis(50),
            deleting_for: Duration::from_millis(50),
            disk_creating_for: Duration::from_millis(50),
            prices: Default::default(),
            geography: Default::default(),
            vcpu_quota: VcpuQuota::default(),
            deny_account_attributes: false,
        }
    }

    /// DescribeAccountAttributes — https://help.aliyun.com/document_detail/73772.html
    /// (https://www.alibabacloud.com/help/en/ecs/api-describeaccountattributes):
    /// `RegionId`, `AttributeName.N` (1-8; none: all); answers
    /// `AccountAttributeItems.AccountAttributeItem[]` {AttributeName,
    /// `AttributeValues.ValueItem[]` {Value, ExpiredTime, ZoneId,
    /// InstanceChargeType, InstanceType, Count, DiskCategory}}. This stand-in
    /// knows the four vCPU attributes and `max-security-groups`.
    fn describe_account_attributes(&self, q: &Q) -> R {
        if self.deny_account_attributes {
            return Err(ApiError::new(
                403,
                "Forbidden.RAM",
                "User not authorized to operate on the specified resource, or this API doesn't support RAM.",
            ));
        }
        let v = self.vcpu_quota;
        let known: [(&str, String); 5] = [
            (
                "max-postpaid-instance-vcpu-count",
                v.max_postpaid.to_string(),
            ),
            (
                "used-postpaid-instance-vcpu-count",
                v.used_postpaid.to_string(),
            ),
            ("max-spot-instance-vcpu-count", v.max_spot.to_string()),
            ("used-spot-instance-vcpu-count", v.used_spot.to_string()),
            ("max-security-groups", "800".to_string()),
        ];
        let asked = listed(q, "AttributeName");
        if asked.len() > 8 {
            return Err(ApiError::new(
                400,
                "InvalidParameter",
                "AttributeName.N accepts at most 8 names.",
            ));
        }
        let items: Vec<Value> = known
            .iter()
            .filter(|(name, _)| asked.is_empty() || asked.iter().any(|a| a == name))
            .map(|(name, value)| {
                json!({"AttributeName": name,
                       "AttributeValues": {"ValueItem": [
                           {"Value": value, "ExpiredTime": 0, "Count": 0}]}})
            })
            .collect();
        Ok(json!({"AccountAttributeItems": {"AccountAttributeItem": items}}))
    }

    pub fn inject(&mut self, f: Fault) {
        match f {
            Fault::NoStock {
                zone,
                instance_type,
            } if zone.is_empty() => self.no_stock.retain(|(_, t)| *t != instance_type),
            Fault::NoStock {
                zone,
                instance_type,
            } => self.no_stock.push((zone, instance_type)),
            Fault::LaunchFails {
                zone,
                instance_type,
            } if zone.is_empty() => self.launch_fails.retain(|(_, t)| *t != instance_type),
            Fault::LaunchFails {
                zone,
                instance_type,
            } => self.launch_fails.push((zone, instance_type)),
            Fault::InstanceQuota(n) => self.quota = Some(n),
            once @ (Fault::Once { .. } | Fault::BareOnce { .. }) => self.faults.push_back(once),
        }
    }

    /// Drops the injected one-shot faults not yet consumed.
    pub fn clear_faults(&mut self) {
        self.faults.clear();
    }

    /// Instance lifecycle (help doc 25380): Pending after creation, then
    /// Running; an expired subscription is Stopped ("Expired" in the console,
    /// `Stopped` in the API); a failed creation shows Stopped, never Running.
    fn instance_status(&self, i: &Instance) -> &'static str {
        if i.created.elapsed() < self.pending_for {
            "Pending"
        } else if i.launch_failed || i.expires.is_some_and(|e| e <= unix_now()) {
            "Stopped"
        } else {
            "Running"
        }
    }

    /// DeleteVSwitch's background task ends: the vSwitch is gone.
    fn finish_vswitch_deletes(&mut self) {
        let after = self.deleting_for;
        self.vswitches
            .retain(|s| s.deleting_since.is_none_or(|t| t.elapsed() < after));
    }

    /// Disk states ("Disk states", ECS API reference,
    /// alibabacloud.com/help/en/ecs/developer-reference/disk-states):
    /// a data disk CreateDisk made is Creating, then Available (unattached)
    /// or In_use once AttachDisk put it on an instance. System disks are
    /// made In_use with their instance.
    fn disk_status(&self, d: &Disk) -> &'static str {
        if !d.system && d.created.elapsed() < self.disk_creating_for {
            "Creating"
        } else if d.instance.is_empty() {
            "Available"
        } else {
            "In_use"
        }
    }

    /// The system releases instances whose creation failed (SystemFailure.Delete).
    fn release_failed_launches(&mut self) {
        let after = self.pending_for * 4;
        let gone: Vec<String> = self
            .instances
            .iter()
            .filter(|i| i.launch_failed && i.created.elapsed() >= after)
            .map(|i| i.id.clone())
            .collect();
        for id in gone {
            self.remove_instance(&id);
        }
    }

    pub fn dispatch(&mut self, action: &str, version: &str, q: &Q) -> R {
        let ecs = [
            "CreateSecurityGroup",
            "AuthorizeSecurityGroup",
            "RevokeSecurityGroup",
            "AuthorizeSecurityGroupEgress",
            "RevokeSecurityGroupEgress",
            "DescribeSecurityGroups",
            "DescribeSecurityGroupAttribute",
            "ModifySecurityGroupPolicy",
            "DeleteSecurityGroup",
            "CreateDeploymentSet",
            "DescribeDeploymentSets",
            "DeleteDeploymentSet",
            "DescribeImages",
            "RunInstances",
            "DescribeInstances",
            "DeleteInstances",
            "CreateDisk",
            "AttachDisk",
            "DetachDisk",
            "DescribeDisks",
            "DeleteDisk",
            "ResizeDisk",
            "TagResources",
            "UntagResources",
            "ListTagResources",
            "ModifyInstanceAutoRenewAttribute",
            "DescribePrice",
            "DescribeSpotPriceHistory",
            "DescribeRegions",
            "DescribeZones",
            "DescribeAvailableResource",
            "DescribeAccountAttributes",
            "DescribeElasticityAssurances",
            "DescribeCapacityReservations",
        ];
        let vpc = [
            "CreateVpc",
            "DescribeVpcs",
            "DeleteVpc",
            "CreateVSwitch",
            "DescribeVSwitches",
            "DeleteVSwitch",
            "TagResources",
            "UnTagResources",
            "ListTagResources",
        ];
        let known = match version {
            ECS_VERSION => ecs.contains(&action),
            VPC_VERSION => vpc.contains(&action),
            _ => {
                return Err(ApiError::new(
                    400,
                    "InvalidVersion",
                    format!("Specified parameter Version `{version}` is not valid."),
                ))
            }
        };
        if !known {
            // Common error code: the action does not exist in this API version.
            return Err(ApiError::new(
                404,
                "InvalidAction.NotFound",
                "Specified api is not found, please check your url and method.",
            ));
        }
        let region = need(q, "RegionId")?.to_string();
        self.release_failed_launches();
        self.finish_vswitch_deletes();
        if let Some(pos) = self.faults.iter().position(|f| {
            matches!(f, Fault::Once { action: a, .. } | Fault::BareOnce { action: a } if a == action)
        }) {
            match self.faults.remove(pos) {
                Some(Fault::Once { status, code, .. }) => {
                    return Err(ApiError::new(status, code, "Injected by the test."))
                }
                Some(Fault::BareOnce { .. }) => return Ok(json!({})),
                _ => {}
            }
        }
        let token = get(q, "ClientToken")
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if let Some(t) = &token {
            if t.len() > 64 || !t.is_ascii() {
                return Err(ApiError::new(
                    400,
                    "InvalidClientToken.Malformed",
                    "The specified ClientToken is not valid.",
                ));
            }
            if let Some((ids, first)) = self.tokens.get(&(action.to_string(), t.clone())) {
                // "How to ensure idempotence": the same ClientToken with the
                // same parameters returns the first call's result; different
                // parameters are IdempotentParameterMismatch.
                if first.as_slice() != q {
                    return Err(ApiError::new(400, "IdempotentParameterMismatch", "The request uses the same client token as a previous, but non-identical request."));
                }
                return Ok(self.created_answer(action, ids));
            }
        }
        let out = match (version, action) {
            (VPC_VERSION, "CreateVpc") => self.create_vpc(&region, q),
            (VPC_VERSION, "DescribeVpcs") => self.describe_vpcs(&region, q),
            (VPC_VERSION, "DeleteVpc") => self.delete_vpc(q),
            (VPC_VERSION, "CreateVSwitch") => self.create_vswitch(&region, q),
            (VPC_VERSION, "DescribeVSwitches") => self.describe_vswitches(&region, q),
            (VPC_VERSION, "DeleteVSwitch") => self.delete_vswitch(q),
            (VPC_VERSION, "TagResources") | (ECS_VERSION, "TagResources") => {
                self.tag_resources(version, q)
            }
            (VPC_VERSION, "UnTagResources") | (ECS_VERSION, "UntagResources") => {
                self.untag_resources(version, q)
            }
            (_, "ListTagResources") => self.list_tag_resources(version, &region, q),
            (_, "ModifyInstanceAutoRenewAttribute") => self.modify_auto_renew(q),
            (_, "CreateSecurityGroup") => self.create_group(&region, q),
            (_, "AuthorizeSecurityGroup") => self.authorize(q, true),
            (_, "RevokeSecurityGroup") => self.authorize(q, false),
            (_, "AuthorizeSecurityGroupEgress") => self.authorize_egress(q),
            (_, "RevokeSecurityGroupEgress") => self.revoke_egress(q),
            (_, "DescribeSecurityGroups") => self.describe_groups(&region, q),
            (_, "DescribeSecurityGroupAttribute") => self.group_attribute(q),
            (_, "ModifySecurityGroupPolicy") => self.modify_group_policy(q),
            (_, "DeleteSecurityGroup") => self.delete_group(q),
            (_, "CreateDeploymentSet") => self.create_set(&region, q),
            (_, "DescribeDeploymentSets") => self.describe_sets(&region, q),
            (_, "DeleteDeploymentSet") => self.delete_set(q),
            (_, "DescribeImages") => self.describe_images(&region, q),
            (_, "RunInstances") => self.run_instances(&region, q),
            (_, "DescribeInstances") => self.describe_instances(&region, q),
            (_, "DeleteInstances") => self.delete_instances(q),
            (_, "CreateDisk") => self.create_disk(&region, q),
            (_, "AttachDisk") => self.attach_disk(q),
            (_, "DetachDisk") => self.detach_disk(q),
            (_, "DescribeDisks") => self.describe_disks(&region, q),
            (_, "DeleteDisk") => self.delete_disk(q),
            (_, "ResizeDisk") => self.resize_disk(q),
            (ECS_VERSION, "DescribePrice") => self.describe_price(q),
            (ECS_VERSION, "DescribeSpotPriceHistory") => self.spot_price_history(q),
            (ECS_VERSION, "DescribeRegions") => Ok(self.describe_regions()),
            (ECS_VERSION, "DescribeZones") => self.describe_zones(&region),
            (ECS_VERSION, "DescribeAvailableResource") => {
                self.describe_available_resource(&region, q)
            }
            (ECS_VERSION, "DescribeAccountAttributes") => self.describe_account_attributes(q),
            (ECS_VERSION, "DescribeElasticityAssurances") => {
                self.describe_pools(PoolKind::ElasticityAssurance, &region, q)
            }
            (ECS_VERSION, "DescribeCapacityReservations") => {
                self.describe_pools(PoolKind::CapacityReservation, &region, q)
            }
            _ => Err(ApiError::new(
                404,
                "InvalidAction.NotFound",
                "Specified api is not found, please check your url and method.",
            )),
        };
        if let (Some(t), Ok(v)) = (&token, &out) {
            let ids = self.ids_in_answer(action, v);
            self.tokens
                .insert((action.to_string(), t.clone()), (ids, q.to_vec()));
        }
        out
    }

    fn ids_in_answer(&self, action: &str, v: &Value) -> Vec<String> {
        let one = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(|s| vec![s.to_string()])
                .unwrap_or_default()
        };
        match action {
            "CreateVpc" => one("VpcId"),
            "CreateVSwitch" => one("VSwitchId"),
            "CreateSecurityGroup" => one("SecurityGroupId"),
            "CreateDeploymentSet" => one("DeploymentSetId"),
            "CreateDisk" => one("DiskId"),
            "RunInstances" => v["InstanceIdSets"]["InstanceIdSet"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|i| i.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    fn created_answer(&self, action: &str, ids: &[String]) -> Value {
        let first = ids.first().cloned().unwrap_or_default();
        match action {
            "CreateVpc" => json!({"VpcId": first}),
            "CreateVSwitch" => json!({"VSwitchId": first}),
            "CreateSecurityGroup" => json!({"SecurityGroupId": first}),
            "CreateDeploymentSet" => json!({"DeploymentSetId": first}),
            "CreateDisk" => json!({"DiskId": first}),
            "RunInstances" => json!({"InstanceIdSets": {"InstanceIdSet": ids}}),
            _ => json!({}),
        }
    }

    // ------------------------------------------------------------------ VPC

    /// CreateVpc — VPC API reference "CreateVpc": CidrBlock (default
    /// 172.16.0.0/12), VpcName, Description, ClientToken, Tag.N; answers
    /// VpcId, VRouterId, RouteTableId, ResourceGroupId.
    fn create_vpc(&mut self, region: &str, q: &Q) -> R {
        let cidr = get(q, "CidrBlock").unwrap_or("172.16.0.0/12").to_string();
        if !valid_cidr(&cidr) {
            return Err(ApiError::new(
                400,
                "InvalidCidrBlock.Malformed",
                "Specified CIDR block is not valid.",
            ));
        }
        let tags = tags_param(q)?;
        let id = new_id("vpc", region);
        self.vpcs.push(Vpc {
            id: id.clone(),
            region: region.into(),
            cidr,
            name: get(q, "VpcName").unwrap_or_default().into(),
            tags,
        });
        Ok(
            json!({"VpcId": id, "VRouterId": new_id("vrt", region), "RouteTableId": new_id("vtb", region), "ResourceGroupId": "rg-acfmdefault"}),
        )
    }

    /// DescribeVpcs — VPC API reference "DescribeVpcs": VpcId (up to 20,
    /// comma-separated), Tag.N, PageNumber/PageSize (≤ 50); answers
    /// Vpcs.Vpc[] with Status Available and Tags.Tag[].Key/Value.
    fn describe_vpcs(&self, region: &str, q: &Q) -> R {
        let ids: Option<Vec<&str>> = get(q, "VpcId").map(|s| s.split(',').map(str::trim).collect());
        if ids.as_ref().is_some_and(|i| i.len() > 20) {
            return Err(ApiError::new(
                400,
                "InvalidVpcId.Malformed",
                "Up to 20 VPC ids are allowed.",
            ));
        }
        let tags = tags_param(q)?;
        let all: Vec<Value> = self
            .vpcs
            .iter()
            .filter(|v| v.region == region && ids.as_ref().map_or(true, |i| i.contains(&v.id.as_str())) && matches_tags(&v.tags, &tags))
            .map(|v| {
                let vsw: Vec<&str> = self.vswitches.iter().filter(|s| s.vpc == v.id).map(|s| s.id.as_str()).collect();
                json!({"VpcId": v.id, "RegionId": v.region, "Status": "Available", "VpcName": v.name, "CidrBlock": v.cidr,
                       "VSwitchIds": {"VSwitchId": vsw}, "Tags": vpc_tags(&v.tags), "IsDefault": false})
            })
            .collect();
        page_by_number(q, cap_tagged(all, &tags), ("Vpcs", "Vpc"))
    }

    /// DeleteVpc — VPC API reference "DeleteVpc", error codes: 400
    /// DependencyViolation.VSwitch / DependencyViolation.SecurityGroup
    /// ("Specified object has dependent resources"), 404 InvalidVpcId.NotFound.
    fn delete_vpc(&mut self, q: &Q) -> R {
        let id = need(q, "VpcId")?;
        if !self.vpcs.iter().any(|v| v.id == id) {
            return Err(ApiError::new(
                404,
                "InvalidVpcId.NotFound",
                "Specified VPC does not exist.",
            ));
        }
        if self.vswitches.iter().any(|s| s.vpc == id) {
            return Err(ApiError::new(
                400,
                "DependencyViolation.VSwitch",
                "Specified object has dependent resources",
            ));
        }
        if self.groups.iter().any(|g| g.vpc == id) {
            return Err(ApiError::new(
                400,
                "DependencyViolation.SecurityGroup",
                "Specified object has dependent resources SecurityGroup.",
            ));
        }
        self.vpcs.retain(|v| v.id != id);
        Ok(json!({}))
    }

    /// CreateVSwitch — VPC API reference "CreateVSwitch": ZoneId, CidrBlock,
    /// VpcId, VSwitchName, ClientToken, Tag.N; answers VSwitchId.
    fn create_vswitch(&mut self, region: &str, q: &Q) -> R {
        let vpc = need(q, "VpcId")?.to_string();
        let zone = need(q, "ZoneId")?.to_string();
        let cidr = need(q, "CidrBlock")?.to_string();
        if !self.vpcs.iter().any(|v| v.id == vpc && v.region == region) {
            return Err(ApiError::new(
                404,
                "InvalidVpcId.NotFound",
                "Specified VPC does not exist.",
            ));
        }
        if !zone.starts_with(region) {
            return Err(ApiError::new(
                400,
                "InvalidZoneId.NotFound",
                "The specified zone does not exist.",
            ));
        }
        if !valid_cidr(&cidr) {
            return Err(ApiError::new(
                400,
                "InvalidCidrBlock.Malformed",
                "Specified CIDR block is not valid.",
            ));
        }
        // "The specified CIDR block overlaps with that of another vSwitch".
        if self
            .vswitches
            .iter()
            .any(|s| s.vpc == vpc && cidrs_overlap(&s.cidr, &cidr))
        {
            return Err(ApiError::new(
                400,
                "InvalidCidrBlock.Overlapped",
                "The specified CIDR block overlaps with that of another vSwitch.",
            ));
        }
        let tags = tags_param(q)?;
        let id = new_id("vsw", region);
        self.vswitches.push(VSwitch {
            id: id.clone(),
            region: region.into(),
            vpc,
            zone,
            cidr,
            name: get(q, "VSwitchName").unwrap_or_default().into(),
            tags,
            deleting_since: None,
        });
        Ok(json!({"VSwitchId": id}))
    }

    /// DescribeVSwitches — VPC API reference "DescribeVSwitches": VpcId,
    /// VSwitchId, ZoneId, Tag.N, PageNumber/PageSize (≤ 50).
    fn describe_vswitches(&self, region: &str, q: &Q) -> R {
        let tags = tags_param(q)?;
        let all: Vec<Value> = self
            .vswitches
            .iter()
            .filter(|s| {
                s.region == region
                    && get(q, "VSwitchId").map_or(true, |i| i == s.id)
                    && get(q, "VpcId").map_or(true, |i| i == s.vpc)
                    && get(q, "ZoneId").map_or(true, |z| z == s.zone)
                    && matches_tags(&s.tags, &tags)
            })
            .map(|s| json!({"VSwitchId": s.id, "VpcId": s.vpc, "ZoneId": s.zone, "CidrBlock": s.cidr,
                             "Status": if s.deleting_since.is_some() { "Pending" } else { "Available" },
                             "VSwitchName": s.name, "Tags": vpc_tags(&s.tags)}))
            .collect();
        page_by_number(q, cap_tagged(all, &tags), ("VSwitches", "VSwitch"))
    }

    /// DeleteVSwitch — VPC API reference "DeleteVSwitch"
    /// (https://www.alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-deletevswitch):
    /// 400 DependencyViolation while instances use it, 404
    /// InvalidVSwitchId.NotFound. It is asynchronous: the vSwitch is
    /// `Pending` while it is deleted and gone after; only an `Available`
    /// vSwitch can be deleted (400 IncorrectVSwitchStatus "vpc subnet is in
    /// middle status"), and not while another vSwitch of its VPC is being
    /// deleted (400 OperationDenied.OtherSubnetProcessing). Until it is gone
    /// it keeps its CIDR block (CreateVSwitch answers
    /// InvalidCidrBlock.Overlapped) and its VPC (DeleteVpc answers
    /// DependencyViolation).
    fn delete_vswitch(&mut self, q: &Q) -> R {
        let id = need(q, "VSwitchId")?;
        let Some(vsw) = self.vswitches.iter().find(|s| s.id == id) else {
            return Err(ApiError::new(
                404,
                "InvalidVSwitchId.NotFound",
                "Specified virtual switch does not exist.",
            ));
        };
        if vsw.deleting_since.is_some() {
            return Err(ApiError::new(
                400,
                "IncorrectVSwitchStatus",
                "vpc subnet is in middle status.",
            ));
        }
        let vpc = vsw.vpc.clone();
        if self
            .vswitches
            .iter()
            .any(|s| s.vpc == vpc && s.deleting_since.is_some())
        {
            return Err(ApiError::new(
                400,
                "OperationDenied.OtherSubnetProcessing",
                "other subnet is processing.",
            ));
        }
        if self.instances.iter().any(|i| i.vswitch == id) {
            return Err(ApiError::new(
                400,
                "DependencyViolation",
                "Specified object has dependent resources.",
            ));
        }
        let now = std::time::Instant::now();
        for s in self.vswitches.iter_mut().filter(|s| s.id == id) {
            s.deleting_since = Some(now);
        }
        Ok(json!({}))
    }

    // ------------------------------------------------------------------ security groups

    /// CreateSecurityGroup — ECS API reference "CreateSecurityGroup": VpcId,
    /// SecurityGroupName, Description, SecurityGroupType, ClientToken, Tag.N;
    /// answers SecurityGroupId.
    fn create_group(&mut self, region: &str, q: &Q) -> R {
        let vpc = get(q, "VpcId").unwrap_or_default().to_string();
        if !vpc.is_empty() && !self.vpcs.iter().any(|v| v.id == vpc) {
            return Err(ApiError::new(
                404,
                "InvalidVpcId.NotFound",
                "Specified VPC does not exist.",
            ));
        }
        let tags = tags_param(q)?;
        let id = new_id("sg", region);
        self.groups.push(Group {
            id: id.clone(),
            region: region.into(),
            vpc,
            name: get(q, "SecurityGroupName").unwrap_or_default().into(),
            tags,
            perms: Vec::new(),
            inner_policy: "Accept".into(),
            egress: Vec::new(),
        });
        Ok(json!({"SecurityGroupId": id}))
    }

    /// AuthorizeSecurityGroup / RevokeSecurityGroup — ECS API reference:
    /// SecurityGroupId, Permissions.N.{IpProtocol, PortRange, SourceCidrIp,
    /// SourceGroupId, Policy, Description}. An identical existing rule is
    /// not added twice; revoking a rule that is not there changes nothing.
    fn authorize(&mut self, q: &Q, add: bool) -> R {
        let id = need(q, "SecurityGroupId")?.to_string();
        let rows = indexed(
            q,
            "Permissions",
            &[
                "IpProtocol",
                "PortRange",
                "SourceCidrIp",
                "SourceGroupId",
                "Policy",
                "Description",
            ],
        );
        if rows.is_empty() {
            return Err(ApiError::new(
                400,
                "MissingParameter",
                "Permissions.N.IpProtocol and Permissions.N.PortRange are required.",
            ));
        }
        let mut perms = Vec::new();
        for r in rows {
            let protocol = r[0].to_ascii_uppercase();
            if !["TCP", "UDP", "ICMP", "GRE", "ALL"].contains(&protocol.as_str()) {
                return Err(ApiError::new(
                    400,
                    "InvalidIpProtocol.Malformed",
                    "The specified IpProtocol is not valid.",
                ));
            }
            let range = r[1].clone();
            let ok_range = match range.split_once('/') {
                Some((a, b)) => match (a.parse::<i32>(), b.parse::<i32>()) {
                    (Ok(-1), Ok(-1)) => {
                        protocol == "ICMP" || protocol == "GRE" || protocol == "ALL"
                    }
                    (Ok(a), Ok(b)) => {
                        (1..=65535).contains(&a)
                            && (a..=65535).contains(&b)
                            && (protocol == "TCP" || protocol == "UDP")
                    }
                    _ => false,
                },
                None => false,
            };
            if !ok_range {
                return Err(ApiError::new(
                    400,
                    "InvalidPortRange.Malformed",
                    "The specified PortRange is not valid.",
                ));
            }
            if r[2].is_empty() && r[3].is_empty() {
                return Err(ApiError::new(
                    400,
                    "MissingParameter",
                    "SourceCidrIp or SourceGroupId is required.",
                ));
            }
            // AuthorizeSecurityGroup (help doc 25554) / RevokeSecurityGroup error codes: 403
            // InvalidParamter.Conflict (sic) "The specified SecurityGroupId
            // should be different from the SourceGroupId". Members of one
            // group reach each other through its InnerAccessPolicy (Accept by
            // default; DescribeSecurityGroupAttribute, ModifySecurityGroupPolicy).
            if r[3] == id {
                return Err(ApiError::new(
                    403,
                    "InvalidParamter.Conflict",
                    "The specified SecurityGroupId should be different from the SourceGroupId.",
                ));
            }
            if !r[3].is_empty() && !self.groups.iter().any(|g| g.id == r[3]) {
                return Err(ApiError::new(
                    404,
                    "InvalidSecurityGroupId.NotFound",
                    "The specified source security group does not exist.",
                ));
            }
            let policy = if r[4].is_empty() {
                "Accept".to_string()
            } else {
                capitalize(&r[4])
            };
            perms.push(Perm {
                protocol,
                port_range: range,
                source_cidr: r[2].clone(),
                source_group: r[3].clone(),
                policy,
                description: r[5].clone(),
            });
        }
        let g = self
            .groups
            .iter_mut()
            .find(|g| g.id == id)
            .ok_or_else(group_not_found)?;
        for p in perms {
            let same = |e: &Perm| {
                e.protocol == p.protocol
                    && e.port_range == p.port_range
                    && e.source_cidr == p.source_cidr
                    && e.source_group == p.source_group
                    && e.policy == p.policy
            };
            if add {
                if !g.perms.iter().any(same) {
                    g.perms.push(p);
                }
            } else {
                g.perms.retain(|e| !same(e));
            }
        }
        Ok(json!({}))
    }

    /// AuthorizeSecurityGroupEgress — ECS API reference
    /// (help.aliyun.com/document_detail/25560): SecurityGroupId,
    /// Permissions.N.{IpProtocol, PortRange, DestCidrIp, Policy (accept |
    /// drop, default accept), Priority (1-100, default 1)}. An identical
    /// rule is not added twice.
    fn authorize_egress(&mut self, q: &Q) -> R {
        let id = need(q, "SecurityGroupId")?.to_string();
        let rows = indexed(
            q,
            "Permissions",
            &[
                "IpProtocol",
                "PortRange",
                "DestCidrIp",
                "Policy",
                "Priority",
            ],
        );
        if rows.is_empty()
            || rows
                .iter()
                .any(|r| r[0].is_empty() || r[1].is_empty() || r[2].is_empty())
        {
            return Err(ApiError::new(
                400,
                "MissingParameter",
                "Permissions.N.IpProtocol, Permissions.N.PortRange and Permissions.N.DestCidrIp are required.",
            ));
        }
        let region = self
            .groups
            .iter()
            .find(|g| g.id == id)
            .ok_or_else(group_not_found)?
            .region
            .clone();
        let mut rules = Vec::new();
        for r in rows {
            let policy = match r[3].to_ascii_lowercase().as_str() {
                "" | "accept" => "accept",
                "drop" => "drop",
                _ => {
                    return Err(ApiError::new(
                        400,
                        "InvalidPolicy.Malformed",
                        "The specified Policy is not valid.",
                    ))
                }
            };
            rules.push(EgressRule {
                id: new_id("sgr", &region),
                protocol: r[0].to_ascii_uppercase(),
                port_range: r[1].clone(),
                dest_cidr: r[2].clone(),
                policy: policy.into(),
                priority: if r[4].is_empty() {
                    "1".into()
                } else {
                    r[4].clone()
                },
            });
        }
        let g = self
            .groups
            .iter_mut()
            .find(|g| g.id == id)
            .expect("found above");
        for r in rules {
            let same = |e: &EgressRule| {
                (
                    &e.protocol,
                    &e.port_range,
                    &e.dest_cidr,
                    &e.policy,
                    &e.priority,
                ) == (
                    &r.protocol,
                    &r.port_range,
                    &r.dest_cidr,
                    &r.policy,
                    &r.priority,
                )
            };
            if !g.egress.iter().any(same) {
                g.egress.push(r);
            }
        }
        Ok(json!({}))
    }

    /// RevokeSecurityGroupEgress — ECS API reference
    /// (help.aliyun.com/document_detail/25561): SecurityGroupId and either
    /// SecurityGroupRuleId.N (an id that does not exist:
    /// InvalidSecurityGroupRule.RuleNotExist, since 2024-07-08) or
    /// Permissions.N.{IpProtocol, PortRange, DestCidrIp, Policy} (no match:
    /// success, nothing deleted); not both.
    fn revoke_egress(&mut self, q: &Q) -> R {
        let id = need(q, "SecurityGroupId")?.to_string();
        let ids = listed(q, "SecurityGroupRuleId");
        let rows = indexed(
            q,
            "Permissions",
            &["IpProtocol", "PortRange", "DestCidrIp", "Policy"],
        );
        if !ids.is_empty() && !rows.is_empty() {
            return Err(ApiError::new(
                400,
                "InvalidParam.Conflict",
                "SecurityGroupRuleId and Permissions cannot be specified together.",
            ));
        }
        let g = self
            .groups
            .iter_mut()
            .find(|g| g.id == id)
            .ok_or_else(group_not_found)?;
        if ids.iter().any(|i| !g.egress.iter().any(|e| &e.id == i)) {
            return Err(ApiError::new(
                400,
                "InvalidSecurityGroupRule.RuleNotExist",
                "The specified security group rule does not exist.",
            ));
        }
        g.egress.retain(|e| !ids.contains(&e.id));
        for r in rows {
            let policy = if r[3].is_empty() {
                "accept".to_string()
            } else {
                r[3].to_ascii_lowercase()
            };
            g.egress.retain(|e| {
                !(e.protocol.eq_ignore_ascii_case(&r[0])
                    && e.port_range == r[1]
                    && e.dest_cidr == r[2]
                    && e.policy == policy)
            });
        }
        Ok(json!({}))
    }

    /// DescribeSecurityGroups — ECS API reference: SecurityGroupIds (JSON
    /// array, ≤ 100), VpcId, Tag.N, MaxResults/NextToken; answers
    /// SecurityGroups.SecurityGroup[] with Tags.Tag[].TagKey/TagValue.
    fn describe_groups(&self, region: &str, q: &Q) -> R {
        let ids = id_array(q, "SecurityGroupIds", 100)?;
        let tags = tags_param(q)?;
        let all: Vec<Value> = self
            .groups
            .iter()
            .filter(|g| g.region == region && ids.as_ref().map_or(true, |i| i.contains(&g.id)) && get(q, "VpcId").map_or(true, |v| v == g.vpc) && matches_tags(&g.tags, &tags))
            .map(|g| json!({"SecurityGroupId": g.id, "SecurityGroupName": g.name, "VpcId": g.vpc, "SecurityGroupType": "normal",
                             "CreationTime": now_iso(), "Tags": ecs_tags(&g.tags)}))
            .collect();
        page_by_token(
            q,
            cap_tagged(all, &tags),
            ("SecurityGroups", "SecurityGroup"),
        )
    }

    /// DescribeSecurityGroupAttribute — ECS API reference: SecurityGroupId,
    /// Direction; answers Permissions.Permission[].
    fn group_attribute(&self, q: &Q) -> R {
        let id = need(q, "SecurityGroupId")?;
        let g = self
            .groups
            .iter()
            .find(|g| g.id == id)
            .ok_or_else(group_not_found)?;
        let direction = get(q, "Direction").unwrap_or("all");
        let mut perms: Vec<Value> = Vec::new();
        if direction != "egress" {
            perms.extend(g.perms.iter().map(|p| {
                json!({"IpProtocol": p.protocol, "PortRange": p.port_range, "SourceCidrIp": p.source_cidr, "SourceGroupId": p.source_group,
                       "Policy": p.policy, "Direction": "ingress", "Description": p.description, "Priority": "1", "CreateTime": now_iso()})
            }));
        }
        if direction != "ingress" {
            perms.extend(g.egress.iter().map(|e| {
                json!({"SecurityGroupRuleId": e.id, "IpProtocol": e.protocol, "PortRange": e.port_range, "DestCidrIp": e.dest_cidr,
                       "Policy": e.policy, "Direction": "egress", "Priority": e.priority, "CreateTime": now_iso()})
            }));
        }
        Ok(
            json!({"SecurityGroupId": g.id, "SecurityGroupName": g.name, "VpcId": g.vpc, "RegionId": g.region, "InnerAccessPolicy": g.inner_policy,
                  "Permissions": {"Permission": perms}}),
        )
    }

    /// ModifySecurityGroupPolicy — ECS API reference: SecurityGroupId,
    /// InnerAccessPolicy Accept | Drop (case-insensitive). With Accept "the
    /// instances in the security group can communicate with each other".
    fn modify_group_policy(&mut self, q: &Q) -> R {
        let id = need(q, "SecurityGroupId")?.to_string();
        let policy = match need(q, "InnerAccessPolicy")?.to_ascii_lowercase().as_str() {
            "accept" => "Accept",
            "drop" => "Drop",
            _ => {
                return Err(ApiError::new(
                    400,
                    "InvalidInnerAccessPolicy.Malformed",
                    "The specified InnerAccessPolicy is not valid.",
                ))
            }
        };
        let g = self
            .groups
            .iter_mut()
            .find(|g| g.id == id)
            .ok_or_else(group_not_found)?;
        g.inner_policy = policy.into();
        Ok(json!({}))
    }

    /// DeleteSecurityGroup — ECS API reference, error codes: 403
    /// DependencyViolation ("There is still instance(s) in the specified
    /// security group."), 404 InvalidSecurityGroupId.NotFound.
    fn delete_group(&mut self, q: &Q) -> R {
        let id = need(q, "SecurityGroupId")?;
        if !self.groups.iter().any(|g| g.id == id) {
            return Err(group_not_found());
        }
        if self.instances.iter().any(|i| i.group == id) {
            return Err(ApiError::new(
                403,
                "DependencyViolation",
                "There is still instance(s) in the specified security group.",
            ));
        }
        if self
            .groups
            .iter()
            .any(|g| g.id != id && g.perms.iter().any(|p| p.source_group == id))
        {
            return Err(ApiError::new(
                403,
                "DependencyViolation",
                "The specified security group is referenced by another group's rules.",
            ));
        }
        self.groups.retain(|g| g.id != id);
        Ok(json!({}))
    }

    // ------------------------------------------------------------------ deployment sets

    /// CreateDeploymentSet — ECS API reference: Strategy (Availability,
    /// AvailabilityGroup, LowLatency; default Availability), DeploymentSetName,
    /// Description (2-256 characters), ClientToken; answers DeploymentSetId.
    /// No Tag parameter exists.
    fn create_set(&mut self, region: &str, q: &Q) -> R {
        let strategy = get(q, "Strategy").unwrap_or("Availability");
        if !["Availability", "AvailabilityGroup", "LowLatency"].contains(&strategy) {
            return Err(ApiError::new(
                400,
                "InvalidParameter.Strategy",
                "The specified Strategy is not valid.",
            ));
        }
        let desc = get(q, "Description").unwrap_or_default();
        if !desc.is_empty()
            && (desc.chars().count() < 2
                || desc.chars().count() > 256
                || desc.starts_with("http://")
                || desc.starts_with("https://"))
        {
            return Err(ApiError::new(400, "InvalidDescription.Malformed", "The description must be 2 to 256 characters and cannot start with http:// or https://."));
        }
        let id = new_id("ds", region);
        self.sets.push(DeploymentSet {
            id: id.clone(),
            region: region.into(),
            name: get(q, "DeploymentSetName").unwrap_or_default().into(),
            description: desc.into(),
            strategy: strategy.into(),
        });
        Ok(json!({"DeploymentSetId": id}))
    }

    /// DescribeDeploymentSets — ECS API reference: DeploymentSetIds (JSON
    /// array, ≤ 100), PageNumber/PageSize (≤ 50); answers
    /// DeploymentSets.DeploymentSet[] with DeploymentSetDescription,
    /// DeploymentStrategy, InstanceIds.InstanceId[].
    fn describe_sets(&self, region: &str, q: &Q) -> R {
        let ids = id_array(q, "DeploymentSetIds", 100)?;
        let all: Vec<Value> = self
            .sets
            .iter()
            .filter(|s| s.region == region && ids.as_ref().map_or(true, |i| i.contains(&s.id)))
            .map(|s| {
                let members: Vec<&str> = self.instances.iter().filter(|i| i.deployment_set == s.id).map(|i| i.id.as_str()).collect();
                json!({"DeploymentSetId": s.id, "DeploymentSetName": s.name, "DeploymentSetDescription": s.description,
                       "DeploymentStrategy": s.strategy, "Strategy": s.strategy, "InstanceAmount": members.len(),
                       "InstanceIds": {"InstanceId": members}, "CreationTime": now_iso()})
            })
            .collect();
        let mut v = page_by_number(q, all, ("DeploymentSets", "DeploymentSet"))?;
        v["RegionId"] = json!(region);
        Ok(v)
    }

    /// DeleteDeploymentSet — ECS API reference: DeploymentSetId; 404 for an
    /// unknown id. A set that still holds instances is refused (the page
    /// asks to move instances out first; the stand-in answers
    /// DependencyViolation for it).
    fn delete_set(&mut self, q: &Q) -> R {
        let id = need(q, "DeploymentSetId")?;
        if !self.sets.iter().any(|s| s.id == id) {
            return Err(ApiError::new(
                404,
                "InvalidDeploymentSetId.NotFound",
                "The specified deployment set does not exist.",
            ));
        }
        if self.instances.iter().any(|i| i.deployment_set == id) {
            return Err(ApiError::new(
                403,
                "DependencyViolation",
                "The deployment set still contains instances.",
            ));
        }
        self.sets.retain(|s| s.id != id);
        Ok(json!({}))
    }

    // ------------------------------------------------------------------ images

    /// DescribeImages — ECS API reference: ImageId, ImageName (fuzzy
    /// search), ImageOwnerAlias (system = public images), OSType,
    /// Architecture, Status, PageNumber/PageSize.
    fn describe_images(&self, _region: &str, q: &Q) -> R {
        if get(q, "ImageOwnerAlias").is_some_and(|o| o != "system") {
            return page_by_number(q, Vec::new(), ("Images", "Image"));
        }
        let all: Vec<Value> = IMAGES
            .iter()
            .filter(|i| get(q, "ImageId").map_or(true, |id| id == i.id) && get(q, "ImageName").map_or(true, |n| i.name.contains(n)))
            .filter(|_| get(q, "OSType").map_or(true, |o| o == "linux") && get(q, "Architecture").map_or(true, |a| a == "x86_64"))
            .map(|i| json!({"ImageId": i.id, "ImageName": i.name, "OSType": "linux", "Architecture": "x86_64", "CreationTime": i.created,
                             "Status": "Available", "ImageOwnerAlias": "system", "Size": 20}))
            .collect();
        page_by_number(q, all, ("Images", "Image"))
    }

    fn image_exists(&self, id: &str) -> bool {
        IMAGES.iter().any(|i| i.id == id)
    }

    // ------------------------------------------------------------------ instances

    /// RunInstances — ECS API reference "RunInstances": ZoneId, InstanceType,
    /// ImageId, VSwitchId, SecurityGroupId, DeploymentSetId, Amount (1-100),
    /// MinAmount, InstanceChargeType (PostPaid | PrePaid + Period/PeriodUnit),
    /// SpotStrategy, SystemDisk.Size/Category, UserData (Base64), ClientToken,
    /// Tag.N (set on the instance and its disks), PrivatePoolOptions.*
    /// (see [`pools`]). Answers
    /// InstanceIdSets.InstanceIdSet[]. Error codes used: 403
    /// OperationDenied.NoStock, 403 QuotaExceed.ElasticQuotaNo, 404
    /// InvalidImageId.NotFound / InvalidVSwitchId.NotFound /
    /// InvalidSecurityGroupId.NotFound / InvalidDeploymentSetId.NotFound.
    fn run_instances(&mut self, region: &str, q: &Q) -> R {
        let itype = need(q, "InstanceType")?.to_string();
        let image = need(q, "ImageId")?.to_string();
        let vsw_id = need(q, "VSwitchId")?.to_string();
        let group = need(q, "SecurityGroupId")?.to_string();
        let amount: usize = get(q, "Amount").unwrap_or("1").parse().map_err(|_| {
            ApiError::new(
                400,
                "InvalidAmount.Malformed",
                "The specified Amount is not valid.",
            )
        })?;
        if !(1..=100).contains(&amount) {
            return Err(ApiError::new(
                400,
                "InvalidAmount.Malformed",
                "Amount is 1 to 100.",
            ));
        }
        if !itype.starts_with("ecs.") {
            return Err(ApiError::new(
                400,
                "InvalidInstanceType.ValueUnauthorized",
                "The specified InstanceType does not exist or beyond the permitted range.",
            ));
        }
        if !self.image_exists(&image) {
            return Err(ApiError::new(
                404,
                "InvalidImageId.NotFound",
                "The specified ImageId does not exist.",
            ));
        }
        let vsw = self
            .vswitches
            .iter()
            .find(|s| s.id == vsw_id)
            .cloned()
            .ok_or_else(|| {
                ApiError::new(
                    404,
                    "InvalidVSwitchId.NotFound",
                    "Specified virtual switch does not exist.",
                )
            })?;
        let zone = get(q, "ZoneId").unwrap_or(&vsw.zone).to_string();
        if zone != vsw.zone {
            return Err(ApiError::new(
                400,
                "InvalidVSwitchId.NotBelongToZone",
                "The specified vswitch does not belong to the zone.",
            ));
        }
        let g = self
            .groups
            .iter()
            .find(|g| g.id == group)
            .ok_or_else(group_not_found)?;
        if g.vpc != vsw.vpc {
            return Err(ApiError::new(
                400,
                "InvalidSecurityGroupId.VPCMismatch",
                "The specified security group and the vswitch are not in the same VPC.",
            ));
        }
        let ds = get(q, "DeploymentSetId").unwrap_or_default().to_string();
        if !ds.is_empty() && !self.sets.iter().any(|s| s.id == ds) {
            return Err(ApiError::new(
                404,
                "InvalidDeploymentSetId.NotFound",
                "The specified deployment set does not exist.",
            ));
        }
        let charge = get(q, "InstanceChargeType")
            .unwrap_or("PostPaid")
            .to_string();
        if charge != "PostPaid" && charge != "PrePaid" {
            return Err(ApiError::new(
                400,
                "InvalidInstanceChargeType.ValueNotSupported",
                "The specified InstanceChargeType is not valid.",
            ));
        }
        let expires = if charge == "PrePaid" {
            Some(unix_now() + subscription_seconds(q)?)
        } else {
            None
        };
        let renewal = if get(q, "AutoRenew") == Some("true") {
            "AutoRenewal"
        } else {
            "Normal"
        };
        let spot = get(q, "SpotStrategy").unwrap_or("NoSpot").to_string();
        if !["NoSpot", "SpotAsPriceGo", "SpotWithPriceLimit"].contains(&spot.as_str())
            || (spot != "NoSpot" && charge != "PostPaid")
        {
            return Err(ApiError::new(
                400,
                "InvalidSpotStrategy",
                "The specified SpotStrategy is not valid.",
            ));
        }
        let pool = self.pool_for_launch(region, q, (&zone, &itype, &charge, &spot), amount)?;
        if self.no_stock.iter().any(|(z, t)| *z == zone && *t == itype) {
            return Err(ApiError::new(403, "OperationDenied.NoStock", "The requested resource is sold out in the specified zone; try other types of resources or other regions and zones."));
        }
        if let Some(max) = self.quota {
            if self.instances.len() + amount > max {
                return Err(ApiError::new(403, "QuotaExceed.ElasticQuotaNo", "The number of vCPUs assigned to the ECS instances has exceeded the quota in the zone."));
            }
        }
        let root: u64 = get(q, "SystemDisk.Size")
            .unwrap_or("40")
            .parse()
            .map_err(|_| {
                ApiError::new(
                    400,
                    "InvalidSystemDiskSize",
                    "The specified SystemDisk.Size is not valid.",
                )
            })?;
        if !(20..=2048).contains(&root) {
            return Err(ApiError::new(
                400,
                "InvalidSystemDiskSize.ValueNotSupported",
                "SystemDisk.Size is 20 to 2048 GiB.",
            ));
        }
        if let Some(u) = get(q, "UserData") {
            if u.len() > 32 * 1024
                || !u
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
            {
                return Err(ApiError::new(
                    400,
                    "InvalidUserData.NotBase64",
                    "The specified UserData is not valid Base64 (at most 32 KB).",
                ));
            }
        }
        let tags = tags_param(q)?;
        let launch_failed = self
            .launch_fails
            .iter()
            .any(|(z, t)| *z == zone && *t == itype);
        let mut ids = Vec::new();
        for _ in 0..amount {
            let id = new_id("i", region);
            let private_ip = self.free_address(&vsw)?;
            self.instances.push(Instance {
                id: id.clone(),
                region: region.into(),
                zone: zone.clone(),
                instance_type: itype.clone(),
                image: image.clone(),
                vswitch: vsw.id.clone(),
                vpc: vsw.vpc.clone(),
                group: group.clone(),
                deployment_set: ds.clone(),
                charge: charge.clone(),
                spot: spot.clone(),
                name: get(q, "InstanceName").unwrap_or_default().into(),
                tags: tags.clone(),
                created: Instant::now(),
                expires,
                renewal: renewal.into(),
                launch_failed,
                private_ip,
                private_pool: pool.clone().unwrap_or_default(),
            });
            self.disks.push(Disk {
                id: new_id("d", region),
                region: region.into(),
                zone: zone.clone(),
                size: root,
                category: get(q, "SystemDisk.Category")
                    .unwrap_or("cloud_efficiency")
                    .into(),
                system: true,
                instance: id.clone(),
                delete_with_instance: true,
                name: String::new(),
                tags: tags.clone(),
                created: Instant::now(),
            });
            ids.push(id);
        }
        if let Some(pool) = &pool {
            self.count_launch(pool, amount);
        }
        Ok(
            json!({"InstanceIdSets": {"InstanceIdSet": ids}, "OrderId": format!("{}", random_u64() % 1_000_000_000_000), "TradePrice": 0.0}),
        )
    }

    /// The first address of `vsw`'s CIDR block no live instance holds,
    /// past the first and before the last three, which a vSwitch reserves
    /// (VPC docs on vSwitches: the first and the last three IP addresses of
    /// each vSwitch CIDR block are reserved). 403 InvalidVSwitchId.IpNotEnough
    /// when it is full.
    fn free_address(&self, vsw: &VSwitch) -> Result<String, ApiError> {
        let full = || {
            ApiError::new(
                403,
                "InvalidVSwitchId.IpNotEnough",
                "The specified VSwitch has not enough IpAddress.",
            )
        };
        let (ip, bits) = vsw.cidr.split_once('/').ok_or_else(full)?;
        let base: std::net::Ipv4Addr = ip.parse().map_err(|_| full())?;
        let bits: u32 = bits.parse().map_err(|_| full())?;
        let size = 1u64 << (32 - bits.min(32));
        let taken: std::collections::HashSet<&str> = self
            .instances
            .iter()
            .filter(|i| i.vswitch == vsw.id)
            .map(|i| i.private_ip.as_str())
            .collect();
        (1..size.saturating_sub(3))
            .map(|n| std::net::Ipv4Addr::from(u32::from(base).wrapping_add(n as u32)).to_string())
            .find(|a| !taken.contains(a.as_str()))
            .ok_or_else(full)
    }

    /// DescribeInstances — ECS API reference: InstanceIds (JSON array,
    /// ≤ 100), Tag.N, VpcId, VSwitchId, ZoneId, MaxResults/NextToken;
    /// answers Instances.Instance[] (Status Pending/Running…).
    fn describe_instances(&self, region: &str, q: &Q) -> R {
        let ids = id_array(q, "InstanceIds", 100)?;
        let tags = tags_param(q)?;
        let all: Vec<Value> = self
            .instances
            .iter()
            .filter(|i| {
                i.region == region
                    && ids.as_ref().map_or(true, |x| x.contains(&i.id))
                    && get(q, "VpcId").map_or(true, |v| v == i.vpc)
                    && get(q, "VSwitchId").map_or(true, |v| v == i.vswitch)
                    && get(q, "ZoneId").map_or(true, |v| v == i.zone)
                    && matches_tags(&i.tags, &tags)
            })
            .map(|i| {
                json!({"InstanceId": i.id, "InstanceName": i.name, "RegionId": i.region, "ZoneId": i.zone, "InstanceType": i.instance_type,
                       "ImageId": i.image, "Status": self.instance_status(i), "InstanceChargeType": i.charge, "SpotStrategy": i.spot,
                       "ExpiredTime": i.expires.map_or_else(|| "2099-12-31T15:59Z".to_string(), iso_minutes),
                       "DeploymentSetId": i.deployment_set, "InstanceNetworkType": "vpc",
                       "VpcAttributes": {"VpcId": i.vpc, "VSwitchId": i.vswitch, "PrivateIpAddress": {"IpAddress": [i.private_ip]}},
                       "NetworkInterfaces": {"NetworkInterface": [{"Type": "Primary", "PrimaryIpAddress": i.private_ip,
                           "PrivateIpSets": {"PrivateIpSet": [{"Primary": true, "PrivateIpAddress": i.private_ip}]}}]},
                       "SecurityGroupIds": {"SecurityGroupId": [i.group]}, "Tags": ecs_tags(&i.tags), "CreationTime": now_iso()})
            })
            .collect();
        page_by_token(q, cap_tagged(all, &tags), ("Instances", "Instance"))
    }

    /// DeleteInstances — ECS API reference: InstanceId.N, Force (a Running
    /// instance needs Force=true, else 403 IncorrectInstanceStatus), 404
    /// InvalidInstanceId.NotFound. The system disk goes with the instance;
    /// data disks attached with DeleteWithInstance=false are detached.
    /// It "releases one or more pay-as-you-go instances or expired
    /// subscription instances" (help doc 126723,
    /// alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstances);
    /// an expired subscription is
    /// released only with TerminateSubscription=true ("whether to release
    /// expired subscription instances", default false). An unexpired
    /// subscription is refused: the page names no code for it, so the
    /// stand-in answers ECS's charge-type refusal, 403 ChargeTypeViolation.
    /// No parameter releases an unexpired subscription
    /// (`TerminateSubscribedInstance` exists in no ECS version).
    fn delete_instances(&mut self, q: &Q) -> R {
        let ids = listed(q, "InstanceId");
        if ids.is_empty() {
            return Err(ApiError::new(
                400,
                "MissingInstanceId",
                "InstanceId.N is required.",
            ));
        }
        let force = get(q, "Force") == Some("true");
        for id in &ids {
            let i = self.instances.iter().find(|i| i.id == *id).ok_or_else(|| {
                ApiError::new(
                    404,
                    "InvalidInstanceId.NotFound",
                    "The specified InstanceId does not exist.",
                )
            })?;
            if self.instance_status(i) == "Running" && !force {
                return Err(ApiError::new(
                    403,
                    "IncorrectInstanceStatus",
                    "The current status of the resource does not support this operation.",
                ));
            }
            if let Some(end) = i.expires.filter(|_| !i.launch_failed) {
                let expired = end <= unix_now();
                if !expired || get(q, "TerminateSubscription") != Some("true") {
                    return Err(ApiError::new(
                        403,
                        "ChargeTypeViolation",
                        "The operation is not permitted due to charge type of the instance.",
                    ));
                }
            }
        }
        for id in &ids {
            self.remove_instance(id);
        }
        Ok(json!({}))
    }

    /// ModifyInstanceAutoRenewAttribute — ECS API reference (help doc 52843): InstanceId
    /// (up to 100, comma-separated), RenewalStatus AutoRenewal | Normal |
    /// NotRenewal, AutoRenew, Duration, PeriodUnit; subscription instances
    /// only (a pay-as-you-go instance has nothing to renew: 403
    /// ChargeTypeViolation).
    fn modify_auto_renew(&mut self, q: &Q) -> R {
        let ids: Vec<String> = need(q, "InstanceId")?
            .split(',')
            .map(|s| s.trim().to_string())
            .collect();
        let status = match (get(q, "RenewalStatus"), get(q, "AutoRenew")) {
            (Some(s @ ("AutoRenewal" | "Normal" | "NotRenewal")), _) => s.to_string(),
            (Some(_), _) => {
                return Err(ApiError::new(
                    400,
                    "InvalidRenewalStatus.ValueNotSupported",
                    "The specified RenewalStatus is not valid.",
                ))
            }
            (None, Some("true")) => "AutoRenewal".into(),
            (None, _) => "Normal".into(),
        };
        for id in &ids {
            let i = self.instances.iter().find(|i| i.id == *id).ok_or_else(|| {
                ApiError::new(
                    404,
                    "InvalidInstanceId.NotFound",
                    "The specified InstanceId does not exist.",
                )
            })?;
            if i.expires.is_none() {
                return Err(ApiError::new(
                    403,
                    "ChargeTypeViolation",
                    "The operation is not permitted due to charge type of the instance.",
                ));
            }
        }
        for i in self.instances.iter_mut().filter(|i| ids.contains(&i.id)) {
            i.renewal = status.clone();
        }
        Ok(json!({}))
    }

    /// ListTagResources — ECS (ResourceType instance | disk | securitygroup …)
    /// and VPC (ResourceType VPC | VSWITCH …) API references: ResourceId.N,
    /// Tag.N (a resource must carry every given pair), NextToken; VPC also
    /// MaxResults 1-50 (default 50). Answers NextToken and
    /// TagResources.TagResource[] {ResourceId, ResourceType, TagKey,
    /// TagValue}: one row per matching resource and filter tag. This is the
    /// documented way past the 1,000-resource cap of tag-filtered Describe calls.
    fn list_tag_resources(&self, version: &str, region: &str, q: &Q) -> R {
        let rtype = need(q, "ResourceType")?.to_string();
        let ids = listed(q, "ResourceId");
        let tags = tags_param(q)?;
        if ids.is_empty() && tags.is_empty() {
            return Err(ApiError::new(
                400,
                "MissingParameter",
                "ResourceId.N or Tag.N is required.",
            ));
        }
        let max: usize = get(q, "MaxResults").unwrap_or("50").parse().unwrap_or(0);
        if !(1..=50).contains(&max) {
            return Err(ApiError::new(
                400,
                "InvalidParameter",
                "MaxResults is 1 to 50.",
            ));
        }
        let owned = |id: &str, region_of: &str, t: &[(String, String)]| {
            region_of == region
                && (ids.is_empty() || ids.iter().any(|x| x == id))
                && matches_tags(t, &tags)
        };
        let found: Vec<(String, Vec<(String, String)>)> =
            match (version, rtype.to_ascii_lowercase().as_str()) {
                (VPC_VERSION, "vpc") => self
                    .vpcs
                    .iter()
                    .filter(|v| owned(&v.id, &v.region, &v.tags))
                    .map(|v| (v.id.clone(), v.tags.clone()))
                    .collect(),
                (VPC_VERSION, "vswitch") => self
                    .vswitches
                    .iter()
                    .filter(|v| owned(&v.id, &v.region, &v.tags))
                    .map(|v| (v.id.clone(), v.tags.clone()))
                    .collect(),
                (ECS_VERSION, "instance") => self
                    .instances
                    .iter()
                    .filter(|v| owned(&v.id, &v.region, &v.tags))
                    .map(|v| (v.id.clone(), v.tags.clone()))
                    .collect(),
                (ECS_VERSION, "disk") => self
                    .disks
                    .iter()
                    .filter(|v| owned(&v.id, &v.region, &v.tags))
                    .map(|v| (v.id.clone(), v.tags.clone()))
                    .collect(),
                (ECS_VERSION, "securitygroup") => self
                    .groups
                    .iter()
                    .filter(|v| owned(&v.id, &v.region, &v.tags))
                    .map(|v| (v.id.clone(), v.tags.clone()))
                    .collect(),
                _ => {
                    return Err(ApiError::new(
                        400,
                        "InvalidResourceType.NotFound",
                        "The specified ResourceType is not valid.",
                    ))
                }
            };
        let rows: Vec<Value> = found
            .iter()
            .flat_map(|(id, have)| {
                have.iter()
                    .filter(|(k, _)| tags.is_empty() || tags.iter().any(|(fk, _)| fk == k))
                    .map(|(k, v)| json!({"ResourceId": id, "ResourceType": rtype, "TagKey": k, "TagValue": v}))
                    .collect::<Vec<_>>()
            })
            .collect();
        let start = match get(q, "NextToken").filter(|t| !t.is_empty()) {
            None => 0,
            Some(t) => t
                .strip_prefix("lt")
                .and_then(|h| usize::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    ApiError::new(
                        400,
                        "InvalidNextToken",
                        "The specified NextToken is not valid.",
                    )
                })?,
        };
        let total = rows.len();
        let page: Vec<Value> = rows.into_iter().skip(start).take(max).collect();
        let next = if start + page.len() < total {
            format!("lt{:08x}", start + page.len())
        } else {
            String::new()
        };
        Ok(json!({"NextToken": next, "TagResources": {"TagResource": page}}))
    }

    fn remove_instance(&mut self, id: &str) {
        self.instances.retain(|i| i.id != id);
        self.disks
            .retain(|d| !(d.instance == id && d.delete_with_instance));
        for d in self.disks.iter_mut().filter(|d| d.instance == id) {
            d.instance.clear();
        }
    }

    // ------------------------------------------------------------------ disks

    /// CreateDisk — ECS API reference
    /// (alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-createdisk):
    /// ZoneId (required when no InstanceId is given, as here: the disk is
    /// made unattached in that zone), Size, DiskCategory, DiskName,
    /// ClientToken, Tag.N; answers DiskId. The disk is Creating, then
    /// Available ([`Cloud::disk_status`]).
    fn create_disk(&mut self, region: &str, q: &Q) -> R {
        let zone = need(q, "ZoneId")?.to_string();
        let size: u64 = need(q, "Size")?
            .parse()
            .map_err(|_| ApiError::new(400, "InvalidSize", "The specified Size is not valid."))?;
        if !(20..=32768).contains(&size) {
            return Err(ApiError::new(
                400,
                "InvalidDiskSize.ValueNotSupported",
                "The specified disk size is out of range.",
            ));
        }
        let category = get(q, "DiskCategory").unwrap_or("cloud").to_string();
        let tags = tags_param(q)?;
        let id = new_id("d", region);
        self.disks.push(Disk {
            id: id.clone(),
            region: region.into(),
            zone,
            size,
            category,
            system: false,
            instance: String::new(),
            delete_with_instance: false,
            name: get(q, "DiskName").unwrap_or_default().into(),
            tags,
            created: Instant::now(),
        });
        Ok(json!({"DiskId": id, "OrderId": ""}))
    }

    /// AttachDisk — ECS API reference
    /// (alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-attachdisk):
    /// InstanceId, DiskId, DeleteWithInstance; 403 IncorrectInstanceStatus
    /// unless the instance is Running or Stopped, 403 IncorrectDiskStatus
    /// unless the disk is Available ("The disk must be in the Unattached
    /// (Available) state": not while still Creating), 404
    /// InvalidInstanceId.NotFound / InvalidDiskId.NotFound.
    fn attach_disk(&mut self, q: &Q) -> R {
        let iid = need(q, "InstanceId")?.to_string();
        let did = need(q, "DiskId")?.to_string();
        let inst = self.instances.iter().find(|i| i.id == iid).ok_or_else(|| {
            ApiError::new(
                404,
                "InvalidInstanceId.NotFound",
                "The specified InstanceId does not exist.",
            )
        })?;
        if self.instance_status(inst) != "Running" {
            return Err(ApiError::new(
                403,
                "IncorrectInstanceStatus",
                "The current status of the resource does not support this operation.",
            ));
        }
        let zone = inst.zone.clone();
        let status = self
            .disks
            .iter()
            .find(|d| d.id == did)
            .map(|d| self.disk_status(d))
            .ok_or_else(disk_not_found)?;
        let d = self
            .disks
            .iter_mut()
            .find(|d| d.id == did)
            .ok_or_else(disk_not_found)?;
        if status != "Available" {
            return Err(ApiError::new(
                403,
                "IncorrectDiskStatus",
                "The current disk status does not support this operation.",
            ));
        }
        if d.zone != zone {
            return Err(ApiError::new(
                403,
                "InstanceDiskNotMatch",
                "The specified instance and disk are not in the same zone.",
            ));
        }
        d.instance = iid;
        d.delete_with_instance = get(q, "DeleteWithInstance") == Some("true");
        Ok(json!({}))
    }

    /// DetachDisk — ECS API reference: InstanceId, DiskId; 403
    /// IncorrectDiskStatus when the disk is not attached to that instance.
    fn detach_disk(&mut self, q: &Q) -> R {
        let iid = need(q, "InstanceId")?.to_string();
        let did = need(q, "DiskId")?.to_string();
        let d = self
            .disks
            .iter_mut()
            .find(|d| d.id == did)
            .ok_or_else(disk_not_found)?;
        if d.instance != iid || d.system {
            return Err(ApiError::new(
                403,
                "IncorrectDiskStatus",
                "The current disk status does not support this operation.",
            ));
        }
        d.instance.clear();
        Ok(json!({}))
    }

    /// DescribeDisks — ECS API reference: DiskIds (JSON array, ≤ 100),
    /// InstanceId, DiskType (all | system | data), Tag.N,
    /// MaxResults/NextToken; answers Disks.Disk[] (Type, Status
    /// Creating/Available/In_use, InstanceId, Tags.Tag[].TagKey/TagValue).
    fn describe_disks(&self, region: &str, q: &Q) -> R {
        let ids = id_array(q, "DiskIds", 100)?;
        let tags = tags_param(q)?;
        let dtype = get(q, "DiskType").unwrap_or("all");
        let all: Vec<Value> = self
            .disks
            .iter()
            .filter(|d| {
                d.region == region
                    && ids.as_ref().map_or(true, |x| x.contains(&d.id))
                    && get(q, "InstanceId").map_or(true, |i| i == d.instance)
                    && (dtype == "all" || (dtype == "system") == d.system)
                    && matches_tags(&d.tags, &tags)
            })
            .map(|d| {
                json!({"DiskId": d.id, "DiskName": d.name, "RegionId": d.region, "ZoneId": d.zone, "Size": d.size, "Category": d.category,
                       "Type": if d.system { "system" } else { "data" }, "Status": self.disk_status(d),
                       "InstanceId": d.instance, "DeleteWithInstance": d.delete_with_instance, "Tags": ecs_tags(&d.tags)})
            })
            .collect();
        page_by_token(q, cap_tagged(all, &tags), ("Disks", "Disk"))
    }

    /// DeleteDisk — ECS API reference: DiskId; 403 IncorrectDiskStatus while
    /// In_use, 404 InvalidDiskId.NotFound.
    fn delete_disk(&mut self, q: &Q) -> R {
        let id = need(q, "DiskId")?;
        let d = self
            .disks
            .iter()
            .find(|d| d.id == id)
            .ok_or_else(disk_not_found)?;
        if !d.instance.is_empty() {
            return Err(ApiError::new(
                403,
                "IncorrectDiskStatus",
                "The current disk status does not support this operation.",
            ));
        }
        self.disks.retain(|d| d.id != id);
        Ok(json!({}))
    }

    /// ResizeDisk — ECS API reference: DiskId, NewSize (larger only), Type.
    fn resize_disk(&mut self, q: &Q) -> R {
        let id = need(q, "DiskId")?.to_string();
        let size: u64 = need(q, "NewSize")?.parse().map_err(|_| {
            ApiError::new(
                400,
                "InvalidDiskSize",
                "The specified NewSize is not valid.",
            )
        })?;
        let d = self
            .disks
            .iter_mut()
            .find(|d| d.id == id)
            .ok_or_else(disk_not_found)?;
        if size <= d.size {
            return Err(ApiError::new(
                400,
                "InvalidDiskSize.TooSmall",
                "The new size must be larger than the current size.",
            ));
        }
        d.size = size;
        Ok(json!({}))
    }

    // ------------------------------------------------------------------ tags

    fn tags_mut(
        &mut self,
        version: &str,
        rtype: &str,
        id: &str,
    ) -> Option<&mut Vec<(String, String)>> {
        match (version, rtype.to_ascii_lowercase().as_str()) {
            (VPC_VERSION, "vpc") => self
                .vpcs
                .iter_mut()
                .find(|v| v.id == id)
                .map(|v| &mut v.tags),
            (VPC_VERSION, "vswitch") => self
                .vswitches
                .iter_mut()
                .find(|v| v.id == id)
                .map(|v| &mut v.tags),
            (ECS_VERSION, "instance") => self
                .instances
                .iter_mut()
                .find(|v| v.id == id)
                .map(|v| &mut v.tags),
            (ECS_VERSION, "disk") => self
                .disks
                .iter_mut()
                .find(|v| v.id == id)
                .map(|v| &mut v.tags),
            (ECS_VERSION, "securitygroup") => self
                .groups
                .iter_mut()
                .find(|v| v.id == id)
                .map(|v| &mut v.tags),
            _ => None,
        }
    }

    /// TagResources — ECS and VPC API references: ResourceType, ResourceId.N,
    /// Tag.N; a key already there gets the new value.
    fn tag_resources(&mut self, version: &str, q: &Q) -> R {
        let rtype = need(q, "ResourceType")?.to_string();
        let ids = listed(q, "ResourceId");
        let tags = tags_param(q)?;
        for id in &ids {
            let have = self.tags_mut(version, &rtype, id).ok_or_else(|| {
                ApiError::new(
                    404,
                    "InvalidResourceId.NotFound",
                    "The specified ResourceIds are not found in our records.",
                )
            })?;
            for (k, v) in &tags {
                match have.iter_mut().find(|(hk, _)| hk == k) {
                    Some(e) => e.1 = v.clone(),
                    None => have.push((k.clone(), v.clone())),
                }
            }
            if have.len() > 20 {
                return Err(ApiError::new(
                    400,
                    "InvalidTagCount",
                    "A resource holds at most 20 tags.",
                ));
            }
        }
        Ok(json!({}))
    }

    /// UntagResources (ECS) / UnTagResources (VPC): ResourceType,
    /// ResourceId.N, TagKey.N.
    fn untag_resources(&mut self, version: &str, q: &Q) -> R {
        let rtype = need(q, "ResourceType")?.to_string();
        let ids = listed(q, "ResourceId");
        let keys = listed(q, "TagKey");
        let all = get(q, "All") == Some("true");
        for id in &ids {
            let have = self.tags_mut(version, &rtype, id).ok_or_else(|| {
                ApiError::new(
                    404,
                    "InvalidResourceId.NotFound",
                    "The specified ResourceIds are not found in our records.",
                )
            })?;
            have.retain(|(k, _)| !(all || keys.contains(k)));
        }
        Ok(json!({}))
    }

    // ------------------------------------------------------------------ test hooks

    pub fn disk_ids(&self) -> Vec<String> {
        self.disks.iter().map(|d| d.id.clone()).collect()
    }

    /// Removes gpuform's tags (`gpuform:*`) from a resource, as if a console
    /// or another tool had made it; false if there is no such resource.
    pub fn disown_behind(&mut self, id: &str) -> bool {
        let strip = |t: &mut Vec<(String, String)>| t.retain(|(k, _)| !k.starts_with("gpuform:"));
        if let Some(v) = self.vpcs.iter_mut().find(|v| v.id == id) {
            strip(&mut v.tags);
        } else if let Some(v) = self.vswitches.iter_mut().find(|v| v.id == id) {
            strip(&mut v.tags);
        } else if let Some(v) = self.groups.iter_mut().find(|v| v.id == id) {
            strip(&mut v.tags);
        } else if let Some(v) = self.instances.iter_mut().find(|v| v.id == id) {
            strip(&mut v.tags);
        } else if let Some(v) = self.disks.iter_mut().find(|v| v.id == id) {
            strip(&mut v.tags);
        } else {
            return false;
        }
        true
    }

    pub fn tags_of(&self, id: &str) -> Option<Vec<(String, String)>> {
        self.vpcs
            .iter()
            .find(|v| v.id == id)
            .map(|v| v.tags.clone())
            .or_else(|| {
                self.vswitches
                    .iter()
                    .find(|v| v.id == id)
                    .map(|v| v.tags.clone())
            })
            .or_else(|| {
                self.groups
                    .iter()
                    .find(|v| v.id == id)
                    .map(|v| v.tags.clone())
            })
            .or_else(|| {
                self.instances
                    .iter()
                    .find(|v| v.id == id)
                    .map(|v| v.tags.clone())
            })
            .or_else(|| {
                self.disks
                    .iter()
                    .find(|v| v.id == id)
                    .map(|v| v.tags.clone())
            })
    }

    /// Ends a subscription now, as if its term had run out (for tests).
    pub fn expire(&mut self, id: &str) -> bool {
        match self.instances.iter_mut().find(|i| i.id == id) {
            Some(i) if i.expires.is_some() => {
                i.expires = Some(unix_now() - 60);
                true
            }
            _ => false,
        }
    }

    /// Sets a group's InnerAccessPolicy behind gpuform's back (for tests).
    /// Adds an egress rule dropping all traffic out, as another client would
    /// (AuthorizeSecurityGroupEgress with Policy=drop); false if no such group.
    pub fn drop_egress(&mut self, id: &str) -> bool {
        match self.groups.iter_mut().find(|g| g.id == id) {
            Some(g) => {
                g.egress.push(EgressRule {
                    id: new_id("sgr", &g.region.clone()),
                    protocol: "ALL".into(),
                    port_range: "-1/-1".into(),
                    dest_cidr: "0.0.0.0/0".into(),
                    policy: "drop".into(),
                    priority: "1".into(),
                });
                true
            }
            None => false,
        }
    }

    pub fn set_inner_policy(&mut self, id: &str, policy: &str) -> bool {
        match self.groups.iter_mut().find(|g| g.id == id) {
            Some(g) => {
                g.inner_policy = policy.into();
                true
            }
            None => false,
        }
    }

    /// A subscription's RenewalStatus (for tests).
    pub fn renewal_of(&self, id: &str) -> Option<String> {
        self.instances
            .iter()
            .find(|i| i.id == id && i.expires.is_some())
            .map(|i| i.renewal.clone())
    }

    /// The group's inbound rules as (IpProtocol, PortRange, SourceCidrIp, SourceGroupId) (for tests).
    pub fn rules_of(&self, id: &str) -> Option<Vec<(String, String, String, String)>> {
        self.groups.iter().find(|g| g.id == id).map(|g| {
            g.perms
                .iter()
                .map(|p| {
                    (
                        p.protocol.clone(),
                        p.port_range.clone(),
                        p.source_cidr.clone(),
                        p.source_group.clone(),
                    )
                })
                .collect()
        })
    }

    pub fn status_of(&self, id: &str) -> Option<String> {
        if let Some(i) = self.instances.iter().find(|i| i.id == id) {
            return Some(self.instance_status(i).to_string());
        }
        if let Some(d) = self.disks.iter().find(|d| d.id == id) {
            return Some(self.disk_status(d).to_string());
        }
        let known = self.vpcs.iter().any(|v| v.id == id)
            || self.vswitches.iter().any(|v| v.id == id)
            || self.groups.iter().any(|v| v.id == id)
            || self.sets.iter().any(|v| v.id == id);
        known.then(|| "Available".to_string())
    }

    /// Everything alive (system disks are part of their instance), sorted by id.
    pub fn resources(&self) -> Vec<MockResource> {
        let addr = |t: &[(String, String)]| {
            t.iter()
                .find(|(k, _)| k == "gpuform:address")
                .map(|(_, v)| v.clone())
        };
        let mut out = Vec::new();
        out.extend(
            self.vpcs
                .iter()
                .map(|v| MockResource::new(ResourceKind::Network, &v.id, &v.region, addr(&v.tags))),
        );
        out.extend(
            self.vswitches
                .iter()
                .map(|v| MockResource::new(ResourceKind::Subnet, &v.id, &v.region, addr(&v.tags))),
        );
        out.extend(self.groups.iter().map(|v| {
            let mut m = MockResource::new(ResourceKind::Firewall, &v.id, &v.region, addr(&v.tags));
            // Members of a basic group reach each other unless its
            // InnerAccessPolicy is Drop (DescribeSecurityGroupAttribute).
            if v.inner_policy.eq_ignore_ascii_case("accept") {
                m.ingress.push(crate::MEMBERS.to_string());
            }
            // A basic group lets all traffic out until an egress rule drops it.
            if !v.egress.iter().any(|e| e.policy == "drop") {
                m.ingress.push(crate::EGRESS.to_string());
            }
            for p in v
                .perms
                .iter()
                .filter(|p| !p.source_cidr.is_empty() && !p.policy.eq_ignore_ascii_case("drop"))
            {
                let ports = match p.port_range.as_str() {
                    "" | "-1/-1" => "all".to_string(),
                    r => r.replace('/', "-"),
                };
                m.ingress
                    .push(crate::cidr_rule(&p.protocol, &ports, &p.source_cidr));
            }
            m
        }));
        out.extend(self.sets.iter().map(|v| {
            MockResource::new(
                ResourceKind::Placement,
                &v.id,
                &v.region,
                placement_address(&v.description),
            )
        }));
        out.extend(
            self.instances.iter().map(|v| {
                MockResource::new(ResourceKind::Instance, &v.id, &v.region, addr(&v.tags))
            }),
        );
        out.extend(self.disks.iter().filter(|d| !d.system).map(|v| {
            let mut m = MockResource::new(ResourceKind::Volume, &v.id, &v.region, addr(&v.tags));
            m.attached_to = Some(v.instance.clone()).filter(|i| !i.is_empty());
            m
        }));
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// Deletes a resource as someone in the console would, dependencies or
    /// not (an instance takes its system disk with it; a data disk is
    /// detached first; a VPC takes its vSwitches and groups).
    pub fn delete_behind(&mut self, id: &str) -> bool {
        if self.instances.iter().any(|i| i.id == id) {
            self.remove_instance(id);
        } else if self.disks.iter().any(|d| d.id == id && !d.system) {
            self.disks.retain(|d| d.id != id);
        } else if self.vpcs.iter().any(|v| v.id == id) {
            self.vpcs.retain(|v| v.id != id);
            self.vswitches.retain(|s| s.vpc != id);
            self.groups.retain(|g| g.vpc != id);
        } else if self.vswitches.iter().any(|s| s.id == id) {
            self.vswitches.retain(|s| s.id != id);
        } else if self.groups.iter().any(|g| g.id == id) {
            self.groups.retain(|g| g.id != id);
        } else if self.sets.iter().any(|s| s.id == id) {
            self.sets.retain(|s| s.id != id);
            for i in self.instances.iter_mut().filter(|i| i.deployment_set == id) {
                i.deployment_set.clear();
            }
        } else {
            return false;
        }
        true
    }
}

impl Default for Cloud {
    fn default() -> Self {
        Cloud::new()
    }
}

/// The `gpuform:address` a deployment set's description carries (see the
/// provider's `placement_description`: `gpuform-owned … address=<pct> …`).
fn placement_address(desc: &str) -> Option<String> {
    let rest = desc.strip_prefix("gpuform-owned")?;
    let v = rest
        .split_whitespace()
        .find_map(|p| p.strip_prefix("address="))?;
    let mut out = Vec::new();
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(v.get(i + 1..i + 3)?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn capitalize(s: &str) -> String {
    let l = s.to_ascii_lowercase();
    let mut c = l.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

fn group_not_found() -> ApiError {
    ApiError::new(
        404,
        "InvalidSecurityGroupId.NotFound",
        "The specified security group does not exist.",
    )
}

fn disk_not_found() -> ApiError {
    ApiError::new(
        404,
        "InvalidDiskId.NotFound",
        "The specified disk does not exist.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_vswitch_overlapping_another_of_its_vpc_is_refused() {
        let mut c = Cloud::new();
        let region = [("RegionId", "cn-hangzhou")];
        let mut vpc = || {
            let v = c.dispatch(
                "CreateVpc",
                VPC_VERSION,
                &q(&[region[0], ("CidrBlock", "10.0.0.0/16")]),
            );
            v.unwrap()["VpcId"].as_str().unwrap().to_string()
        };
        let (a, b) = (vpc(), vpc());
        let mut vswitch = |vpc: &str, cidr: &str| {
            let p = [
                region[0],
                ("VpcId", vpc),
                ("ZoneId", "cn-hangzhou-b"),
                ("CidrBlock", cidr),
            ];
            c.dispatch("CreateVSwitch", VPC_VERSION, &q(&p))
        };
        vswitch(&a, "10.0.0.0/20").unwrap();
        let e = vswitch(&a, "10.0.8.0/24").unwrap_err();
        assert_eq!(e.code, "InvalidCidrBlock.Overlapped");
        vswitch(&a, "10.0.16.0/20").unwrap();
        vswitch(&b, "10.0.0.0/20").unwrap();
    }
}
