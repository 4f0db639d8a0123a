//! gpuform's Tencent Cloud provider over Tencent Cloud API 3.0 (POST JSON,
//! TC3-HMAC-SHA256), with `reqwest` and the signer of `gpuform-signing`.
//!
//! | neutral kind | Tencent Cloud (API version 2017-03-12 for cvm, vpc and cbs) |
//! | --- | --- |
//! | `network` | vpc:CreateVpc (tags at creation) |
//! | `subnet` | vpc:CreateSubnet |
//! | `firewall` | vpc:CreateSecurityGroup + CreateSecurityGroupPolicies (members, `ingress`, all egress); rules read back by DescribeSecurityGroupPolicies |
//! | `placement` | cvm:CreateDisasterRecoverGroup (see [`TencentProvider`] on why not an HPC cluster) |
//! | `instance` | cvm:RunInstances, one per node, ClientToken = the journaled token |
//! | `volume` | cbs:CreateDisks + AttachDisks |
//! | `bucket` | not supported (COS is not one of these APIs): an `invalid` error |
//!
//! Credentials: `TENCENTCLOUD_SECRET_ID`, `TENCENTCLOUD_SECRET_KEY` and optional
//! `TENCENTCLOUD_SESSION_TOKEN` (the variables tccli uses). Endpoint override:
//! `GPUFORM_TENCENT_ENDPOINT` (a base URL replacing
//! `https://{service}.tencentcloudapi.com` for every service).

mod client;
pub mod errors;
pub mod images;
pub mod tags;

use async_trait::async_trait;
use base64::Engine as _;
use client::{Client, SessionToken};
use gpuform_provider::provider::RateLimit;
use gpuform_provider::{
    Attrs, Cloud, CreateRequest, ErrorKind, ObservedResource, OwnershipTags, Provider,
    ProviderError, ResourceKind, Scope,
};
use gpuform_signing::Credentials;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

pub const ENV_SECRET_ID: &str = "TENCENTCLOUD_SECRET_ID";
pub const ENV_SECRET_KEY: &str = "TENCENTCLOUD_SECRET_KEY";
pub const ENV_SESSION_TOKEN: &str = "TENCENTCLOUD_SESSION_TOKEN";
pub const ENV_ENDPOINT: &str = "GPUFORM_TENCENT_ENDPOINT";

/// API versions (each action's page names its version).
const CVM: (&str, &str) = ("cvm", "2017-03-12");
const VPC: (&str, &str) = ("vpc", "2017-03-12");
const CBS: (&str, &str) = ("cbs", "2017-03-12");

/// Page size for Describe calls: the documented maximum `Limit` of
/// DescribeInstances, DescribeDisks, DescribeVpcs, DescribeSubnets,
/// DescribeSecurityGroups and DescribeDisasterRecoverGroups.
const PAGE: usize = 100;
/// Ids per Describe-by-id call: DescribeInstances / DescribeVpcs / DescribeDisks
/// take up to 100 ids; DescribeDisasterRecoverGroups' page says 10 in one
/// revision and 100 in another, so 10.
const IDS_PER_CALL: usize = 100;
const PLACEMENT_IDS_PER_CALL: usize = 10;

/// Tags gpuform adds beside the ownership tags, for what the API cannot report
/// back as it was asked.
const TAG_IMAGE: &str = gpuform_provider::resource::record_tags::IMAGE;
/// The neutral kind, on instances and data disks: RunInstances binds the
/// instance's tags to its system disk too (213/15730), so a disk tagged
/// `instance` is a system disk, never a volume.
const TAG_KIND: &str = gpuform_provider::resource::record_tags::KIND;
const TAG_PRICING: &str = gpuform_provider::resource::record_tags::PRICING;
const RESERVED_PREFIX: &str = "gpuform:";

/// The Tencent Cloud provider.
///
/// Placement: Tencent's placement groups (DisasterRecoverGroup) only
/// *spread* instances (over hosts, switches or racks); the only packed
/// placement is an HPC cluster, which only takes the RDMA (HCC) instance
/// families and is bound to one zone. The catalog has no HCC types yet, so no
/// resolved Tencent cluster can ask for RDMA, and the neutral `placement`
/// carries no zone. We therefore create a `HOST` spread group (whole-GPU
/// nodes each fill a host anyway; `SW`/`RACK` spreading would cost locality)
/// and refuse `rdma: true` placements with a clear `invalid` error rather
/// than pretending to pack.
#[derive(Debug)]
pub struct TencentProvider {
    client: Client,
    /// subnet id → VPC id (RunInstances needs both; a subnet never moves).
    subnet_vpc: Mutex<HashMap<String, String>>,
    /// (region, logical image) → image id.
    images: Mutex<HashMap<(String, String), String>>,
    rate: RateLimit,
}

/// Reads credentials and the endpoint override from the environment.
pub fn from_env() -> Result<TencentProvider, ProviderError> {
    TencentProvider::from_env()
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl TencentProvider {
    pub fn from_env() -> Result<TencentProvider, ProviderError> {
        Self::from_env_with_endpoint(None)
    }

    /// Like [`TencentProvider::from_env`], with an endpoint override (from a
    /// spec's `endpoints:`) that wins over `GPUFORM_TENCENT_ENDPOINT`.
    pub fn from_env_with_endpoint(
        endpoint: Option<String>,
    ) -> Result<TencentProvider, ProviderError> {
        let (Some(id), Some(key)) = (env_nonempty(ENV_SECRET_ID), env_nonempty(ENV_SECRET_KEY))
        else {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!(
                    "no Tencent Cloud credentials: set {ENV_SECRET_ID} and {ENV_SECRET_KEY} \
                     (and {ENV_SESSION_TOKEN} for temporary keys), as for tccli"
                ),
            ));
        };
        let token = env_nonempty(ENV_SESSION_TOKEN).map(SessionToken);
        let endpoint = match endpoint.or_else(|| env_nonempty(ENV_ENDPOINT)) {
            None => None,
            Some(raw) => Some(parse_endpoint(&raw)?),
        };
        TencentProvider::new(Credentials::new(id, key), token.map(|t| t.0), endpoint)
    }

    /// A provider with explicit credentials and an optional endpoint override.
    pub fn new(
        creds: Credentials,
        session_token: Option<String>,
        endpoint: Option<reqwest::Url>,
    ) -> Result<TencentProvider, ProviderError> {
        Ok(TencentProvider {
            client: Client::new(creds, session_token.map(SessionToken), endpoint)?,
            subnet_vpc: Mutex::new(HashMap::new()),
            images: Mutex::new(HashMap::new()),
            // RunInstances, CreateDisasterRecoverGroup and DescribeDisasterRecoverGroups
            // allow 10 requests/s each ("A maximum of 10 requests can be initiated per
            // second for this API" on their API pages; Describe* allow 40-100/s). The
            // engine keeps one bucket per provider, so it follows the tightest create call.
            rate: RateLimit {
                per_second: 10.0,
                burst: 10,
            },
        })
    }

    pub fn with_rate_limit(mut self, rate: RateLimit) -> Self {
        self.rate = rate;
        self
    }

    async fn call(
        &self,
        api: (&str, &str),
        action: &str,
        region: &str,
        body: Value,
    ) -> Result<Value, ProviderError> {
        self.client.call(api.0, api.1, action, region, &body).await
    }

    /// Every item of a paginated Describe call (Offset/Limit, `TotalCount`).
    /// VPC's Describe calls document Offset/Limit as strings, CVM's and
    /// CBS's as integers; `string_paging` picks the documented form.
    async fn describe_all(
        &self,
        api: (&str, &str),
        action: &str,
        region: &str,
        mut body: Map<String, Value>,
        set_key: &str,
        string_paging: bool,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut offset = 0usize;
        loop {
            let (o, l) = if string_paging {
                (json!(offset.to_string()), json!(PAGE.to_string()))
            } else {
                (json!(offset), json!(PAGE))
            };
            body.insert("Offset".into(), o);
            body.insert("Limit".into(), l);
            let resp = self
                .call(api, action, region, Value::Object(body.clone()))
                .await?;
            let items = documented_set(&resp, action, set_key)?;
            let total =
                resp.get("TotalCount")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| undocumented(action, "TotalCount"))? as usize;
            let n = items.len();
            out.extend(items);
            offset += n;
            if n == 0 || offset >= total {
                return Ok(out);
            }
        }
    }

    /// Describe-by-ids in batches. A batch that fails with not-found (some APIs
    /// reject the whole request when one id is gone) is split in halves until
    /// the missing ids are isolated, so a deleted resource costs a few calls,
    /// not one per id.
    #[allow(clippy::too_many_arguments)]
    async fn describe_ids(
        &self,
        api: (&str, &str),
        action: &str,
        region: &str,
        ids_key: &str,
        set_key: &str,
        ids: &[String],
        per_call: usize,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut work: Vec<Vec<String>> = ids.chunks(per_call.max(1)).map(|c| c.to_vec()).collect();
        while let Some(batch) = work.pop() {
            let mut body = Map::new();
            body.insert(ids_key.into(), json!(batch));
            // VPC's Describe calls document Limit as a String, CVM's and CBS's as an Integer.
            let limit = if api.0 == VPC.0 {
                json!(per_call.to_string())
            } else {
                json!(per_call)
            };
            body.insert("Limit".into(), limit);
            match self.call(api, action, region, Value::Object(body)).await {
                Ok(resp) => out.extend(documented_set(&resp, action, set_key)?),
                Err(e) if e.kind == ErrorKind::NotFound => {
                    if batch.len() > 1 {
                        let (a, b) = batch.split_at(batch.len() / 2);
                        work.push(a.to_vec());
                        work.push(b.to_vec());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}

/// A successful answer without the field its page documents (a proxy, a
/// throttling front end, a truncated body) is an error, never "nothing":
/// read as an empty list it would plan creates for what exists.
fn undocumented(action: &str, field: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Transient,
        format!("{action}: the answer has no `{field}`, which the API documents; not reading it as empty"),
    )
}

/// The documented list `set_key` of a Describe answer.
fn documented_set(resp: &Value, action: &str, set_key: &str) -> Result<Vec<Value>, ProviderError> {
    resp.get(set_key)
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| undocumented(action, set_key))
}

/// The documented object `key` of a create answer, with its id field set.
fn documented_object(
    resp: &Value,
    action: &str,
    key: &str,
    id_key: &str,
) -> Result<Value, ProviderError> {
    resp.get(key)
        .filter(|v| !s(v, id_key).is_empty())
        .cloned()
        .ok_or_else(|| undocumented(action, &format!("{key}.{id_key}")))
}

fn parse_endpoint(raw: &str) -> Result<reqwest::Url, ProviderError> {
    let url = reqwest::Url::parse(raw.trim()).map_err(|e| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{ENV_ENDPOINT} `{raw}` is not a URL ({e}); expected e.g. http://127.0.0.1:8080"
            ),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{ENV_ENDPOINT} `{raw}` must be an http(s) base URL such as http://127.0.0.1:8080"
            ),
        ));
    }
    Ok(url)
}

// ---------------------------------------------------------------- tags

fn tag_filter(key: &str, value: &str) -> Value {
    json!({"Name": format!("tag:{key}"), "Values": [value]})
}

/// User tags from a neutral `tags` attribute; `gpuform:` keys are reserved.
fn user_tags(attrs: &Attrs) -> Result<BTreeMap<String, String>, ProviderError> {
    let mut out = BTreeMap::new();
    let Some(v) = attrs.get("tags") else {
        return Ok(out);
    };
    if v.is_null() {
        return Ok(out);
    }
    let Some(map) = v.as_object() else {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            "`tags` must be a map of strings",
        ));
    };
    for (k, v) in map {
        if k.starts_with(RESERVED_PREFIX) {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("tag `{k}`: the `gpuform:` prefix is reserved"),
            ));
        }
        let v = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Err(p) = tags::check(k, &v) {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("tag `{k}`: {}\n  hint: {}", p.message, p.hint),
            ));
        }
        out.insert(k.clone(), v);
    }
    Ok(out)
}

/// `[{Key, Value}]`: ownership tags, gpuform's extra tags, then user tags.
fn tag_list(
    own: &OwnershipTags,
    extra: &[(&str, &str)],
    user: &BTreeMap<String, String>,
) -> Vec<Value> {
    let mut v: Vec<Value> = own
        .to_tags()
        .into_iter()
        .map(|(k, val)| json!({"Key": k, "Value": val}))
        .collect();
    v.extend(extra.iter().map(|(k, val)| json!({"Key": k, "Value": val})));
    v.extend(user.iter().map(|(k, val)| json!({"Key": k, "Value": val})));
    v
}

/// Tags of a described resource (`Tags` / `TagSet`, items `{Key, Value}`).
fn tags_of(item: &Value) -> BTreeMap<String, String> {
    let list = item
        .get("Tags")
        .or_else(|| item.get("TagSet"))
        .and_then(Value::as_array);
    let mut out = BTreeMap::new();
    for t in list.into_iter().flatten() {
        if let (Some(k), Some(v)) = (
            t.get("Key").and_then(Value::as_str),
            t.get("Value").and_then(Value::as_str),
        ) {
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

fn ownership_of(tags: &BTreeMap<String, String>) -> Option<OwnershipTags> {
    OwnershipTags::from_tags(|k| tags.get(k).map(String::as_str))
}

fn user_tags_value(tags: &BTreeMap<String, String>) -> Value {
    let m: Map<String, Value> = tags
        .iter()
        .filter(|(k, _)| !k.starts_with(RESERVED_PREFIX))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    Value::Object(m)
}

/// A resource name from the ownership tags, within `max` characters.
fn resource_name(own: &OwnershipTags, max: usize) -> String {
    let full = format!("{}-{}", own.project, own.address);
    full.chars().take(max).collect()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn attr_str<'a>(attrs: &'a Attrs, key: &str) -> Option<&'a str> {
    attrs.get(key).and_then(Value::as_str)
}

fn need_str<'a>(attrs: &'a Attrs, kind: ResourceKind, key: &str) -> Result<&'a str, ProviderError> {
    attr_str(attrs, key)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("{kind}: attribute `{key}` is missing"),
            )
        })
}

fn need_ref<'a>(req: &'a CreateRequest, role: &str) -> Result<&'a str, ProviderError> {
    req.refs
        .get(role)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "{} {}: no `{role}` reference",
                    req.kind, req.ownership.address
                ),
            )
        })
}

// ---------------------------------------------------------------- observed

fn observed(
    kind: ResourceKind,
    id: &str,
    region: &str,
    tags: &BTreeMap<String, String>,
    mut attrs: Attrs,
    status: &str,
) -> ObservedResource {
    attrs.insert("tags".into(), user_tags_value(tags));
    ObservedResource {
        kind,
        id: id.to_string(),
        region: region.to_string(),
        ownership: ownership_of(tags),
        attrs,
        status: status.to_ascii_lowercase(),
    }
}

fn observe_vpc(v: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert("cidr".into(), json!(s(v, "CidrBlock")));
    observed(
        ResourceKind::Network,
        s(v, "VpcId"),
        region,
        &tags_of(v),
        a,
        "available",
    )
}

fn observe_subnet(v: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert("cidr".into(), json!(s(v, "CidrBlock")));
    a.insert("zone".into(), json!(s(v, "Zone")));
    observed(
        ResourceKind::Subnet,
        s(v, "SubnetId"),
        region,
        &tags_of(v),
        a,
        "available",
    )
}

/// A security group with its observed `ingress` (see [`observed_ingress`]),
/// read by DescribeSecurityGroupPolicies; `None` leaves `ingress` out (the
/// recorded value stands).
fn observe_sg(v: &Value, region: &str, ingress: Option<Value>) -> ObservedResource {
    let mut a = Attrs::new();
    if let Some(i) = ingress {
        a.insert("ingress".into(), i);
    }
    observed(
        ResourceKind::Firewall,
        s(v, "SecurityGroupId"),
        region,
        &tags_of(v),
        a,
        "available",
    )
}

/// The `ingress` attribute as a group's Ingress policies
/// (DescribeSecurityGroupPolicies, 215/15804) say it is: the CIDR rules that
/// ACCEPT, in the group's order, in the neutral form
/// `{protocol, from_port, to_port, cidr}`, plus [`MEMBER_RULE_MISSING`]
/// when no policy accepts all traffic from the group itself. A new group
/// denies everything (CreateSecurityGroup, 215/15806): a create interrupted
/// before CreateSecurityGroupPolicies leaves it so, and this is how refresh
/// sees it.
///
/// [`MEMBER_RULE_MISSING`]: gpuform_provider::resource::MEMBER_RULE_MISSING
fn observed_ingress(sg: &str, policies: &[Value]) -> Value {
    let mut out = Vec::new();
    let mut members = false;
    for p in policies {
        if !s(p, "Action").eq_ignore_ascii_case("ACCEPT") {
            continue;
        }
        let proto = s(p, "Protocol").to_ascii_lowercase();
        let group = s(p, "SecurityGroupId");
        if !group.is_empty() {
            if group == sg && matches!(proto.as_str(), "all" | "") {
                members = true;
            }
            continue;
        }
        let cidr = s(p, "CidrBlock");
        if cidr.is_empty() {
            continue;
        }
        let (from, to) = ports_of_policy(p);
        out.push(json!({"protocol": proto, "from_port": from, "to_port": to, "cidr": cidr}));
    }
    if !members {
        out.push(gpuform_provider::resource::member_rule_missing());
    }
    Value::Array(out)
}

/// The description gpuform gives a CIDR policy: the port range as the spec
/// wrote it, for what `Port` cannot say (ICMP has no port; `ALL` is 0-65535
/// or whatever full range the spec spelled).
const PORTS_NOTE: &str = "gpuform ports=";

/// A policy's port range: `Port` ("80", "8000-8010"); when it is `ALL` or
/// absent, the range gpuform noted in `PolicyDescription`, else 0-65535.
fn ports_of_policy(p: &Value) -> (Value, Value) {
    let port = s(p, "Port").trim();
    let num = |x: &str| x.trim().parse::<u64>().ok();
    if let Some(n) = num(port) {
        return (json!(n), json!(n));
    }
    if let Some((a, b)) = port
        .split_once('-')
        .and_then(|(a, b)| Some((num(a)?, num(b)?)))
    {
        return (json!(a), json!(b));
    }
    let noted = s(p, "PolicyDescription")
        .strip_prefix(PORTS_NOTE)
        .and_then(|r| r.split_once('-'))
        .and_then(|(a, b)| Some((a.parse::<i64>().ok()?, b.parse::<i64>().ok()?)));
    match noted {
        Some((a, b)) => (json!(a), json!(b)),
        None => (json!(0), json!(65535)),
    }
}

fn observe_ps(v: &Value, region: &str) -> ObservedResource {
    observed(
        ResourceKind::Placement,
        s(v, "DisasterRecoverGroupId"),
        region,
        &tags_of(v),
        Attrs::new(),
        "available",
    )
}

fn pricing_of(charge_type: &str, tags: &BTreeMap<String, String>) -> Option<String> {
    match charge_type {
        "POSTPAID_BY_HOUR" => Some("on-demand".into()),
        "SPOTPAID" => Some("spot".into()),
        // The period is not reported back; gpuform tags what it asked for.
        "PREPAID" => Some(
            tags.get(TAG_PRICING)
                .cloned()
                .unwrap_or_else(|| "reserved-1y".into()),
        ),
        _ => None,
    }
}

fn observe_instance(v: &Value, region: &str) -> ObservedResource {
    let tags = tags_of(v);
    let mut a = Attrs::new();
    a.insert("instance_type".into(), json!(s(v, "InstanceType")));
    if let Some(z) = v
        .get("Placement")
        .and_then(|p| p.get("Zone"))
        .and_then(Value::as_str)
    {
        a.insert("zone".into(), json!(z));
    }
    let image = tags
        .get(TAG_IMAGE)
        .cloned()
        .unwrap_or_else(|| s(v, "ImageId").to_string());
    a.insert("image".into(), json!(image));
    if let Some(p) = pricing_of(s(v, "InstanceChargeType"), &tags) {
        a.insert("pricing".into(), json!(p));
    }
    if let Some(size) = v
        .get("SystemDisk")
        .and_then(|d| d.get("DiskSize"))
        .and_then(Value::as_u64)
    {
        a.insert("root_gb".into(), json!(size));
    }
    observed(
        ResourceKind::Instance,
        s(v, "InstanceId"),
        region,
        &tags,
        a,
        s(v, "InstanceState"),
    )
}

fn volume_type_to_api(t: &str) -> String {
    match t {
        "ssd" => "CLOUD_SSD".into(),
        "premium" | "standard" => "CLOUD_PREMIUM".into(),
        "hssd" | "enhanced-ssd" => "CLOUD_HSSD".into(),
        "bssd" | "balanced-ssd" => "CLOUD_BSSD".into(),
        "tssd" => "CLOUD_TSSD".into(),
        other => other.to_string(),
    }
}

fn volume_type_from_api(t: &str) -> String {
    match t {
        "CLOUD_SSD" => "ssd".into(),
        "CLOUD_PREMIUM" => "premium".into(),
        "CLOUD_HSSD" => "hssd".into(),
        "CLOUD_BSSD" => "bssd".into(),
        "CLOUD_TSSD" => "tssd".into(),
        other => other.to_string(),
    }
}

/// The instance a disk is attached (or attaching) to: DescribeDisks'
/// `InstanceId` while `DiskState` is ATTACHED or ATTACHING
/// (https://www.tencentcloud.com/document/api/362/16315).
fn attachment(v: &Value) -> Option<String> {
    let i = s(v, "InstanceId");
    (matches!(s(v, "DiskState"), "ATTACHED" | "ATTACHING") && !i.is_empty()).then(|| i.to_string())
}

fn observe_disk(v: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    if let Some(z) = v
        .get("Placement")
        .and_then(|p| p.get("Zone"))
        .and_then(Value::as_str)
    {
        a.insert("zone".into(), json!(z));
    }
    if let Some(size) = v.get("DiskSize").and_then(Value::as_u64) {
        a.insert("size_gb".into(), json!(size));
    }
    a.insert(
        "volume_type".into(),
        json!(volume_type_from_api(s(v, "DiskType"))),
    );
    a.insert(
        "attached_to".into(),
        attachment(v).map_or(Value::Null, Value::String),
    );
    observed(
        ResourceKind::Volume,
        s(v, "DiskId"),
        region,
        &tags_of(v),
        a,
        s(v, "DiskState"),
    )
}

/// Instances on their way out (TerminateInstances accepted, or in the recycle
/// bin awaiting release: SHUTDOWN, 213/4856) and launches that failed
/// (LAUNCH_FAILED, 213/15753) are not nodes.
fn instance_alive(v: &Value) -> bool {
    !matches!(
        s(v, "InstanceState"),
        "TERMINATING" | "SHUTDOWN" | "LAUNCH_FAILED"
    )
}

fn disk_alive(v: &Value) -> bool {
    !matches!(s(v, "DiskState"), "TORECYCLE")
}

/// Only data disks are volumes. RunInstances binds the instance's tags to its
/// system disk as well ("the tag can be bound to the corresponding CVM and
/// CBS instances at the same time", https://cloud.tencent.com/document/api/213/15730),
/// so a system disk carries a node's address and token: listed as a volume
/// it would be a stray to delete, or be adopted as the node after a crash.
/// `DiskUsage` is SYSTEM_DISK or DATA_DISK (DescribeDisks, 362/16315); a disk
/// tagged with another neutral kind is not a volume either.
fn is_volume(v: &Value) -> bool {
    let usage = s(v, "DiskUsage");
    let kind = tags_of(v).get(TAG_KIND).cloned();
    (usage.is_empty() || usage == "DATA_DISK")
        && kind.is_none_or(|k| k == ResourceKind::Volume.as_str())
}

fn unsupported_bucket() -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        "buckets are not supported by the Tencent Cloud provider yet (COS is a separate API); \
         remove the bucket from this cluster or put it on another cloud",
    )
}

// ---------------------------------------------------------------- firewall rules

fn port_of(rule: &Value) -> String {
    let from = rule.get("from_port").and_then(Value::as_i64);
    let to = rule.get("to_port").and_then(Value::as_i64).or(from);
    match (from, to) {
        (Some(f), Some(t)) if f <= 0 && (t <= 0 || t >= 65535) => "ALL".into(),
        (Some(f), Some(t)) if f == t => f.to_string(),
        (Some(f), Some(t)) => format!("{f}-{t}"),
        _ => "ALL".into(),
    }
}

/// Ingress policies: all traffic from the group's own members, then `ingress`.
fn ingress_policies(sg: &str, attrs: &Attrs) -> Result<Vec<Value>, ProviderError> {
    let mut v = vec![json!({
        "Protocol": "ALL",
        "SecurityGroupId": sg,
        "Action": "ACCEPT",
        "PolicyDescription": "gpuform: members of this group",
    })];
    let rules = attrs
        .get("ingress")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for r in rules {
        let proto = r
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("all")
            .to_ascii_uppercase();
        let proto = match proto.as_str() {
            "-1" | "ALL" | "ANY" => "ALL".to_string(),
            "TCP" | "UDP" | "ICMP" | "ICMPV6" | "GRE" => proto,
            other => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("firewall rule protocol `{other}`: Tencent allows tcp, udp, icmp, icmpv6, gre or all"),
                ))
            }
        };
        let cidr = r.get("cidr").and_then(Value::as_str).unwrap_or("0.0.0.0/0");
        let from = r.get("from_port").and_then(Value::as_i64);
        let to = r.get("to_port").and_then(Value::as_i64).or(from);
        let note = match (from, to) {
            (Some(f), Some(t)) => format!("{PORTS_NOTE}{f}-{t}"),
            _ => "gpuform".to_string(),
        };
        let mut p = json!({"Protocol": proto, "CidrBlock": cidr, "Action": "ACCEPT", "PolicyDescription": note});
        // `Port` only applies to TCP and UDP (CreateSecurityGroupPolicies page).
        if proto == "TCP" || proto == "UDP" {
            p["Port"] = json!(port_of(&r));
        }
        v.push(p);
    }
    Ok(v)
}

/// New groups deny everything in both directions (CreateSecurityGroup page),
/// so egress is opened explicitly.
fn egress_policies() -> Vec<Value> {
    vec![
        json!({"Protocol": "ALL", "CidrBlock": "0.0.0.0/0", "Action": "ACCEPT", "PolicyDescription": "gpuform: all egress"}),
    ]
}

// ---------------------------------------------------------------- provider

impl TencentProvider {
    /// A resource already made with this token (by a call whose answer was
    /// lost): CreateVpc, CreateSubnet and CreateSecurityGroup have no
    /// ClientToken, so a retry looks the token tag up first.
    async fn find_by_token(
        &self,
        api: (&str, &str),
        action: &str,
        region: &str,
        set_key: &str,
        token: &str,
    ) -> Result<Option<Value>, ProviderError> {
        let mut body = Map::new();
        body.insert(
            "Filters".into(),
            json!([tag_filter(OwnershipTags::TOKEN, token)]),
        );
        let items = self
            .describe_all(api, action, region, body, set_key, true)
            .await?;
        Ok(items.into_iter().next())
    }

    async fn vpc_of_subnet(&self, region: &str, subnet: &str) -> Result<String, ProviderError> {
        if let Some(v) = self
            .subnet_vpc
            .lock()
            .ok()
            .and_then(|m| m.get(subnet).cloned())
        {
            return Ok(v);
        }
        let found = self
            .describe_ids(
                VPC,
                "DescribeSubnets",
                region,
                "SubnetIds",
                "SubnetSet",
                &[subnet.to_string()],
                1,
            )
            .await?;
        let vpc = found
            .first()
            .map(|v| s(v, "VpcId").to_string())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("subnet {subnet} does not exist in {region}"),
                )
            })?;
        if let Ok(mut m) = self.subnet_vpc.lock() {
            m.insert(subnet.to_string(), vpc.clone());
        }
        Ok(vpc)
    }

    async fn image_id(&self, region: &str, image: &str) -> Result<String, ProviderError> {
        if images::is_raw_id(image) {
            return Ok(image.to_string());
        }
        let key = (region.to_string(), image.to_string());
        if let Some(id) = self.images.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(id);
        }
        let names = images::public_names(image).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "image `{image}` has no Tencent Cloud mapping; use one of {} or an `img-…` id",
                    images::known_names()
                ),
            )
        })?;
        let mut body = Map::new();
        body.insert(
            "Filters".into(),
            json!([
                {"Name": "image-type", "Values": ["PUBLIC_IMAGE"]},
                {"Name": "image-name", "Values": names},
            ]),
        );
        let found = self
            .describe_all(CVM, "DescribeImages", region, body, "ImageSet", false)
            .await?;
        // `image-name` is a fuzzy filter: keep exact names (either site's
        // spelling), newest first.
        let best = found
            .iter()
            .filter(|i| names.contains(&s(i, "ImageName")))
            .max_by(|a, b| s(a, "CreatedTime").cmp(s(b, "CreatedTime")))
            .map(|i| s(i, "ImageId").to_string())
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "no public image named {} (for `{image}`) in {region}",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ),
                )
            })?;
        if let Ok(mut m) = self.images.lock() {
            m.insert(key, best.clone());
        }
        Ok(best)
    }

    async fn create_network(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        if let Some(v) = self
            .find_by_token(VPC, "DescribeVpcs", region, "VpcSet", &req.ownership.token)
            .await?
        {
            return Ok(observe_vpc(&v, region));
        }
        let cidr = need_str(&req.attrs, req.kind, "cidr")?;
        let tags = tag_list(&req.ownership, &[], &user_tags(&req.attrs)?);
        // https://www.tencentcloud.com/document/api/215/15774 (CreateVpc)
        let resp = self
            .call(
                VPC,
                "CreateVpc",
                region,
                json!({
                    "VpcName": resource_name(&req.ownership, 60),
                    "CidrBlock": cidr,
                    "Tags": tags,
                }),
            )
            .await?;
        let vpc = documented_object(&resp, "CreateVpc", "Vpc", "VpcId")?;
        Ok(observe_vpc(&vpc, region))
    }

    async fn create_subnet(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        if let Some(v) = self
            .find_by_token(
                VPC,
                "DescribeSubnets",
                region,
                "SubnetSet",
                &req.ownership.token,
            )
            .await?
        {
            return Ok(observe_subnet(&v, region));
        }
        let vpc = need_ref(req, "network")?;
        let tags = tag_list(&req.ownership, &[], &user_tags(&req.attrs)?);
        // https://www.tencentcloud.com/document/api/215/15782 (CreateSubnet)
        let resp = self
            .call(
                VPC,
                "CreateSubnet",
                region,
                json!({
                    "VpcId": vpc,
                    "SubnetName": resource_name(&req.ownership, 60),
                    "CidrBlock": need_str(&req.attrs, req.kind, "cidr")?,
                    "Zone": need_str(&req.attrs, req.kind, "zone")?,
                    "Tags": tags,
                }),
            )
            .await?;
        let subnet = documented_object(&resp, "CreateSubnet", "Subnet", "SubnetId")?;
        if let Ok(mut m) = self.subnet_vpc.lock() {
            m.insert(s(&subnet, "SubnetId").to_string(), vpc.to_string());
        }
        Ok(observe_subnet(&subnet, region))
    }

    async fn create_firewall(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        if let Some(v) = self
            .find_by_token(
                VPC,
                "DescribeSecurityGroups",
                region,
                "SecurityGroupSet",
                &req.ownership.token,
            )
            .await?
        {
            // The group exists; its rules may not (the answer to an earlier
            // call was lost): set them whole, which is idempotent.
            let id = s(&v, "SecurityGroupId").to_string();
            self.replace_policies(region, &id, &req.attrs).await?;
            let written = observed_ingress(&id, &ingress_policies(&id, &req.attrs)?);
            return Ok(observe_sg(&v, region, Some(written)));
        }
        ingress_policies("sg-probe", &req.attrs)?; // validate the rules before creating anything
        let tags = tag_list(&req.ownership, &[], &user_tags(&req.attrs)?);
        // https://www.tencentcloud.com/document/api/215/15806 (CreateSecurityGroup)
        let resp = self
            .call(
                VPC,
                "CreateSecurityGroup",
                region,
                json!({
                    "GroupName": resource_name(&req.ownership, 60),
                    "GroupDescription": format!("gpuform {}", req.ownership.address),
                    "Tags": tags,
                }),
            )
            .await?;
        let sg = documented_object(
            &resp,
            "CreateSecurityGroup",
            "SecurityGroup",
            "SecurityGroupId",
        )?;
        let id = s(&sg, "SecurityGroupId").to_string();
        // https://www.tencentcloud.com/document/api/215/15807 (CreateSecurityGroupPolicies):
        // one direction per call.
        self.call(
            VPC,
            "CreateSecurityGroupPolicies",
            region,
            json!({
                "SecurityGroupId": id,
                "SecurityGroupPolicySet": {"Ingress": ingress_policies(&id, &req.attrs)?},
            }),
        )
        .await?;
        self.call(
            VPC,
            "CreateSecurityGroupPolicies",
            region,
            json!({
                "SecurityGroupId": id,
                "SecurityGroupPolicySet": {"Egress": egress_policies()},
            }),
        )
        .await?;
        let written = observed_ingress(&id, &ingress_policies(&id, &req.attrs)?);
        Ok(observe_sg(&sg, region, Some(written)))
    }

    /// A group's observed `ingress`: its Ingress policies, by
    /// https://www.tencentcloud.com/document/api/215/15804
    /// (DescribeSecurityGroupPolicies: `SecurityGroupPolicySet` with
    /// `Version`, `Ingress` and `Egress`). An answer without them is an
    /// error, never "no rules".
    async fn group_ingress(&self, region: &str, sg: &str) -> Result<Value, ProviderError> {
        const ACTION: &str = "DescribeSecurityGroupPolicies";
        let resp = self
            .call(VPC, ACTION, region, json!({ "SecurityGroupId": sg }))
            .await?;
        let ingress = resp
            .get("SecurityGroupPolicySet")
            .and_then(|set| set.get("Ingress"))
            .and_then(Value::as_array)
            .ok_or_else(|| undocumented(ACTION, "SecurityGroupPolicySet.Ingress"))?;
        Ok(observed_ingress(sg, ingress))
    }

    /// Security groups as observed, each with its rules read back.
    async fn observe_groups(
        &self,
        region: &str,
        groups: &[Value],
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            let ingress = self.group_ingress(region, s(g, "SecurityGroupId")).await?;
            out.push(observe_sg(g, region, Some(ingress)));
        }
        Ok(out)
    }

    /// https://www.tencentcloud.com/document/api/215/15810 (ModifySecurityGroupPolicies):
    /// replaces every rule of the group with the given set.
    async fn replace_policies(
        &self,
        region: &str,
        sg: &str,
        attrs: &Attrs,
    ) -> Result<(), ProviderError> {
        self.call(
            VPC,
            "ModifySecurityGroupPolicies",
            region,
            json!({
                "SecurityGroupId": sg,
                "SecurityGroupPolicySet": {
                    "Ingress": ingress_policies(sg, attrs)?,
                    "Egress": egress_policies(),
                },
            }),
        )
        .await?;
        Ok(())
    }

    async fn create_placement(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        if req.attrs.get("rdma").and_then(Value::as_bool) == Some(true) {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "RDMA placement on Tencent Cloud needs an HPC cluster (CreateHpcCluster) and an HCC \
                 instance family, which gpuform's Tencent catalog does not offer yet",
            ));
        }
        let region = &req.scope.region;
        let tags = tag_list(&req.ownership, &[], &user_tags(&req.attrs)?);
        // https://www.tencentcloud.com/document/api/213/33264 (CreateDisasterRecoverGroup)
        let resp = self
            .call(
                CVM,
                "CreateDisasterRecoverGroup",
                region,
                json!({
                    "Name": resource_name(&req.ownership, 60),
                    "Type": "HOST",
                    "ClientToken": req.ownership.token,
                    "TagSpecification": [{"ResourceType": "ps", "Tags": tags}],
                }),
            )
            .await?;
        let id = s(&resp, "DisasterRecoverGroupId").to_string();
        if id.is_empty() {
            return Err(undocumented(
                "CreateDisasterRecoverGroup",
                "DisasterRecoverGroupId",
            ));
        }
        let mut all: BTreeMap<String, String> = req
            .ownership
            .to_tags()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.extend(user_tags(&req.attrs)?);
        Ok(observed(
            ResourceKind::Placement,
            &id,
            region,
            &all,
            Attrs::new(),
            "available",
        ))
    }

    async fn create_instance(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let kind = req.kind;
        let zone = need_str(a, kind, "zone")?;
        let itype = need_str(a, kind, "instance_type")?;
        let image = need_str(a, kind, "image")?;
        let pricing = attr_str(a, "pricing").unwrap_or("on-demand");
        let subnet = need_ref(req, "subnet")?;
        let user = user_tags(a)?;
        if req.ownership.token.len() > 64 || !req.ownership.token.is_ascii() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "the idempotency token must be at most 64 ASCII characters (RunInstances ClientToken)",
            ));
        }
        let image_id = self.image_id(region, image).await?;
        let vpc = self.vpc_of_subnet(region, subnet).await?;

        let mut extra: Vec<(&str, &str)> = vec![
            (TAG_KIND, ResourceKind::Instance.as_str()),
            (TAG_PRICING, pricing),
        ];
        if !images::is_raw_id(image) {
            extra.push((TAG_IMAGE, image));
        }
        let tags = tag_list(&req.ownership, &extra, &user);
        // https://www.tencentcloud.com/document/api/213/33237 (RunInstances)
        let mut body = json!({
            "Placement": {"Zone": zone},
            "InstanceType": itype,
            "ImageId": image_id,
            "InstanceCount": 1,
            "InstanceName": resource_name(&req.ownership, 60),
            "VirtualPrivateCloud": {"VpcId": vpc, "SubnetId": subnet},
            "ClientToken": req.ownership.token,
            "TagSpecification": [{"ResourceType": "instance", "Tags": tags}],
        });
        match pricing {
            "on-demand" => body["InstanceChargeType"] = json!("POSTPAID_BY_HOUR"),
            "spot" => {
                body["InstanceChargeType"] = json!("SPOTPAID");
                // MaxPrice is required; a spot price never exceeds the on-demand
                // price, so a high cap means "never outbid", as AWS's default.
                body["InstanceMarketOptions"] = json!({
                    "MarketType": "spot",
                    "SpotOptions": {"MaxPrice": "1000", "SpotInstanceType": "one-time"},
                });
            }
            "reserved-1y" | "reserved-3y" => {
                body["InstanceChargeType"] = json!("PREPAID");
                let months = if pricing == "reserved-1y" { 12 } else { 36 };
                body["InstanceChargePrepaid"] =
                    json!({"Period": months, "RenewFlag": "NOTIFY_AND_MANUAL_RENEW"});
            }
            other => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "pricing `{other}`: expected on-demand, spot, reserved-1y or reserved-3y"
                    ),
                ))
            }
        }
        if let Some(gb) = a.get("root_gb").and_then(Value::as_u64) {
            body["SystemDisk"] = json!({"DiskSize": gb});
        }
        if let Some(sg) = req.refs.get("firewall") {
            body["SecurityGroupIds"] = json!([sg]);
        }
        if let Some(ps) = req.refs.get("placement") {
            body["DisasterRecoverGroupIds"] = json!([ps]);
        }
        if let Some(u) = attr_str(a, "user_data").filter(|u| !u.is_empty()) {
            // UserData: base64 of the script, at most 16 KB once encoded.
            body["UserData"] =
                json!(base64::engine::general_purpose::STANDARD.encode(u.as_bytes()));
        }
        let resp = self
            .call(CVM, "RunInstances", region, body)
            .await
            .map_err(reference_gone_is_invalid)?;
        let id = resp
            .get("InstanceIdSet")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                ProviderError::new(ErrorKind::Transient, "RunInstances returned no instance id")
            })?;
        match self.wait_launched(region, &id).await? {
            Some(v) if s(&v, "InstanceState") == "LAUNCH_FAILED" => {
                // A failed launch is no node: release it (it keeps its subnet
                // and group while it exists) and let the engine fail over to
                // another zone, as for a create refused for capacity.
                let why = v
                    .get("LatestOperationErrorMsg")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty())
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                self.delete_instance(region, &id).await?;
                return Err(ProviderError::new(
                    ErrorKind::Capacity,
                    format!(
                        "RunInstances: instance {id} ({itype} in {zone}) ended LAUNCH_FAILED{why}; it was released\n  hint: the launch failed in this zone; another zone may take it"
                    ),
                )
                .with_code("LAUNCH_FAILED"));
            }
            Some(v) => return Ok(observe_instance(&v, region)),
            None => {}
        }
        // Not visible yet (creation is asynchronous): report what was asked.
        let all = tags_from_list(&tag_list(&req.ownership, &extra, &user));
        let mut attrs = Attrs::new();
        for k in ["instance_type", "zone", "image", "pricing", "root_gb"] {
            if let Some(v) = a.get(k) {
                attrs.insert(k.into(), v.clone());
            }
        }
        Ok(observed(
            ResourceKind::Instance,
            &id,
            region,
            &all,
            attrs,
            "pending",
        ))
    }

    async fn describe_instance(
        &self,
        region: &str,
        id: &str,
    ) -> Result<Option<Value>, ProviderError> {
        let found = self
            .describe_ids(
                CVM,
                "DescribeInstances",
                region,
                "InstanceIds",
                "InstanceSet",
                &[id.to_string()],
                1,
            )
            .await?;
        Ok(found.into_iter().next())
    }

    /// Polls a new instance until its launch has an outcome: RUNNING (or any
    /// state past PENDING) or LAUNCH_FAILED (InstanceState, 213/15753).
    /// `None`: still not visible after a few looks.
    async fn wait_launched(&self, region: &str, id: &str) -> Result<Option<Value>, ProviderError> {
        let mut delay = Duration::from_millis(50);
        let mut unseen = 0;
        for _ in 0..120 {
            match self.describe_instance(region, id).await? {
                Some(v) if s(&v, "InstanceState") != "PENDING" => return Ok(Some(v)),
                Some(_) => {}
                None => {
                    unseen += 1;
                    if unseen >= 5 {
                        return Ok(None);
                    }
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        Err(ProviderError::new(
            ErrorKind::Transient,
            format!("instance {id}: still PENDING; its launch has no outcome yet"),
        ))
    }

    async fn describe_disk(&self, region: &str, id: &str) -> Result<Option<Value>, ProviderError> {
        let found = self
            .describe_ids(
                CBS,
                "DescribeDisks",
                region,
                "DiskIds",
                "DiskSet",
                &[id.to_string()],
                1,
            )
            .await?;
        Ok(found.into_iter().next())
    }

    /// Polls DescribeDisks until `done` holds (CBS operations are asynchronous).
    async fn wait_disk(
        &self,
        region: &str,
        id: &str,
        what: &str,
        done: impl Fn(Option<&Value>) -> bool,
    ) -> Result<Option<Value>, ProviderError> {
        let mut delay = Duration::from_millis(50);
        for _ in 0..60 {
            let d = self.describe_disk(region, id).await?;
            if done(d.as_ref()) {
                return Ok(d);
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(3));
        }
        Err(ProviderError::new(
            ErrorKind::Transient,
            format!("disk {id}: timed out waiting until {what}"),
        ))
    }

    async fn create_volume(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let instance = need_ref(req, "instance")?;
        let size = a.get("size_gb").and_then(Value::as_u64).ok_or_else(|| {
            ProviderError::new(ErrorKind::Invalid, "volume: attribute `size_gb` is missing")
        })?;
        let tags = tag_list(
            &req.ownership,
            &[(TAG_KIND, ResourceKind::Volume.as_str())],
            &user_tags(a)?,
        );
        // https://www.tencentcloud.com/document/api/362/16312 (CreateDisks)
        let resp = self
            .call(
                CBS,
                "CreateDisks",
                region,
                json!({
                    "Placement": {"Zone": need_str(a, req.kind, "zone")?},
                    "DiskChargeType": "POSTPAID_BY_HOUR",
                    "DiskType": volume_type_to_api(attr_str(a, "volume_type").unwrap_or("ssd")),
                    "DiskSize": size,
                    "DiskCount": 1,
                    "DiskName": resource_name(&req.ownership, 60),
                    "ClientToken": req.ownership.token,
                    "Tags": tags,
                }),
            )
            .await?;
        let id = resp
            .get("DiskIdSet")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                ProviderError::new(ErrorKind::Transient, "CreateDisks returned no disk id")
            })?;
        let disk = self
            .wait_disk(region, &id, "it exists", |d| {
                d.is_some_and(|d| {
                    matches!(s(d, "DiskState"), "UNATTACHED" | "ATTACHED" | "ATTACHING")
                })
            })
            .await?;
        let attached_here = disk
            .as_ref()
            .is_some_and(|d| s(d, "InstanceId") == instance);
        if !attached_here {
            self.attach_disk(region, &id, instance).await?;
        }
        let disk = self
            .wait_disk(region, &id, "it is attached", |d| {
                d.is_some_and(|d| s(d, "DiskState") == "ATTACHED")
            })
            .await?;
        match disk {
            Some(d) => Ok(observe_disk(&d, region)),
            None => Err(ProviderError::new(
                ErrorKind::Transient,
                format!("disk {id} vanished"),
            )),
        }
    }

    /// TerminateInstances (https://www.tencentcloud.com/document/api/213/33255)
    /// puts a pay-as-you-go instance into the recycle bin, where it stays
    /// SHUTDOWN for up to 2 hours and keeps its subnet, security groups and
    /// disks (https://www.tencentcloud.com/document/product/213/4931, lifecycle
    /// 213/4856); DeleteSubnet / DeleteSecurityGroup then fail with
    /// ResourceInUse. So an instance found SHUTDOWN is terminated again, which
    /// releases it, and this waits until it is gone.
    async fn delete_instance(&self, region: &str, id: &str) -> Result<(), ProviderError> {
        // Round 1 moves it to the recycle bin, round 2 releases it; one more
        // in case it was already in the bin before we came.
        for _ in 0..3 {
            match self
                .call(
                    CVM,
                    "TerminateInstances",
                    region,
                    json!({"InstanceIds": [id]}),
                )
                .await
            {
                Ok(_) => {}
                Err(e) if e.kind == ErrorKind::NotFound => return Ok(()),
                Err(e)
                    if e.code.as_deref()
                        == Some("UnsupportedOperation.InstanceStateTerminating") => {}
                Err(e) => return Err(e),
            }
            match self.wait_terminated(region, id).await? {
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
    async fn wait_terminated(
        &self,
        region: &str,
        id: &str,
    ) -> Result<Option<String>, ProviderError> {
        let mut delay = Duration::from_millis(50);
        let mut last = String::new();
        for _ in 0..80 {
            match self.describe_instance(region, id).await? {
                None => return Ok(None),
                Some(v) if s(&v, "InstanceState") == "SHUTDOWN" => {
                    return Ok(Some("SHUTDOWN".into()))
                }
                Some(v) => last = s(&v, "InstanceState").to_string(),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        Ok(Some(last))
    }

    /// After DeleteSubnet / DeleteSecurityGroup answered ResourceInUse:
    /// releases gpuform's instances that hold `filter` = `id` from the
    /// recycle bin (213/4931), and its failed launches, so that the next try
    /// can succeed. Instances without gpuform's tags are left alone.
    async fn release_recycled(
        &self,
        region: &str,
        filter: &str,
        id: &str,
    ) -> Result<usize, ProviderError> {
        let mut body = Map::new();
        body.insert(
            "Filters".into(),
            json!([
                {"Name": filter, "Values": [id]},
                {"Name": "instance-state", "Values": ["SHUTDOWN", "LAUNCH_FAILED"]},
            ]),
        );
        let recycled = self
            .describe_all(CVM, "DescribeInstances", region, body, "InstanceSet", false)
            .await?;
        let mut released = 0;
        for v in recycled {
            if ownership_of(&tags_of(&v)).is_some() {
                self.delete_instance(region, s(&v, "InstanceId")).await?;
                released += 1;
            }
        }
        Ok(released)
    }

    /// DeleteSubnet or DeleteSecurityGroup; on ResourceInUse, gpuform's
    /// instances still in the recycle bin are released and the call made once more.
    async fn delete_network_member(
        &self,
        region: &str,
        action: &str,
        id_key: &str,
        filter: &str,
        id: &str,
    ) -> Result<(), ProviderError> {
        let mut body = Map::new();
        body.insert(id_key.into(), json!(id));
        let body = Value::Object(body);
        match self.call(VPC, action, region, body.clone()).await {
            Err(e) if e.kind == ErrorKind::DependencyViolation => {
                if self.release_recycled(region, filter, id).await? == 0 {
                    return Err(e);
                }
                ok_if_gone(self.call(VPC, action, region, body).await)
            }
            other => ok_if_gone(other),
        }
    }

    /// https://www.tencentcloud.com/document/api/362/16313 (AttachDisks). The
    /// instance may still be starting: a busy answer is retried a few times.
    async fn attach_disk(
        &self,
        region: &str,
        id: &str,
        instance: &str,
    ) -> Result<(), ProviderError> {
        let mut delay = Duration::from_millis(100);
        let mut tries = 0;
        loop {
            match self
                .call(
                    CBS,
                    "AttachDisks",
                    region,
                    json!({"DiskIds": [id], "InstanceId": instance}),
                )
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if e.kind == ErrorKind::Transient && tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(reference_gone_is_invalid(e)),
            }
        }
    }

    /// `attached_to` in an update: detach, or attach (detaching from any
    /// other instance first), then wait for the documented end state.
    async fn set_attachment(
        &self,
        region: &str,
        id: &str,
        target: &Value,
    ) -> Result<(), ProviderError> {
        let disk = self.describe_disk(region, id).await?.ok_or_else(|| {
            ProviderError::new(ErrorKind::NotFound, format!("disk {id} does not exist"))
        })?;
        let want = match target {
            Value::Null => None,
            Value::String(i) => Some(i.as_str()),
            other => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("`attached_to` must be an instance id or null, got {other}"),
                ))
            }
        };
        if attachment(&disk).as_deref() == want {
            return Ok(());
        }
        self.detach_disk(region, id, &disk).await?;
        if let Some(instance) = want {
            self.attach_disk(region, id, instance).await?;
            self.wait_disk(region, id, "it is attached", |d| {
                d.is_some_and(|d| s(d, "DiskState") == "ATTACHED")
            })
            .await?;
        }
        Ok(())
    }

    /// DetachDisks when attached, then waits for UNATTACHED (or gone).
    /// Ok(false): the disk is gone.
    async fn detach_disk(
        &self,
        region: &str,
        id: &str,
        disk: &Value,
    ) -> Result<bool, ProviderError> {
        if !s(disk, "InstanceId").is_empty() || s(disk, "DiskState") != "UNATTACHED" {
            if s(disk, "DiskState") == "ATTACHED" {
                // https://www.tencentcloud.com/document/api/362/16316 (DetachDisks)
                match self
                    .call(CBS, "DetachDisks", region, json!({"DiskIds": [id]}))
                    .await
                {
                    Ok(_) => {}
                    Err(e) if e.kind == ErrorKind::NotFound => return Ok(false),
                    Err(e) => return Err(e),
                }
            }
            let d = self
                .wait_disk(region, id, "it is detached", |d| {
                    d.is_none_or(|d| s(d, "DiskState") == "UNATTACHED")
                })
                .await?;
            return Ok(d.is_some());
        }
        Ok(true)
    }

    async fn delete_volume(&self, region: &str, id: &str) -> Result<(), ProviderError> {
        let Some(disk) = self.describe_disk(region, id).await? else {
            return Ok(());
        };
        if !self.detach_disk(region, id, &disk).await? {
            return Ok(());
        }
        // https://www.tencentcloud.com/document/api/362/16321 (TerminateDisks)
        match self
            .call(CBS, "TerminateDisks", region, json!({"DiskIds": [id]}))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn tags_from_list(list: &[Value]) -> BTreeMap<String, String> {
    tags_of(&json!({"Tags": list}))
}

/// While creating, a referenced resource that is gone is a bad request, not
/// "this resource does not exist".
fn reference_gone_is_invalid(mut e: ProviderError) -> ProviderError {
    if e.kind == ErrorKind::NotFound {
        e.kind = ErrorKind::Invalid;
        e.message
            .push_str("\n  hint: a resource this one refers to no longer exists");
    }
    e
}

fn ok_if_gone(r: Result<Value, ProviderError>) -> Result<(), ProviderError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[async_trait]
impl Provider for TencentProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Tencent
    }

    fn label(&self) -> String {
        "tencent".into()
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        // Tags that break Tencent's rules are refused before any call.
        user_tags(&req.attrs)?;
        match req.kind {
            ResourceKind::Network => self.create_network(req).await,
            ResourceKind::Subnet => self.create_subnet(req).await,
            ResourceKind::Firewall => self.create_firewall(req).await,
            ResourceKind::Placement => self.create_placement(req).await,
            ResourceKind::Instance => self.create_instance(req).await,
            ResourceKind::Volume => self.create_volume(req).await,
            ResourceKind::Bucket => Err(unsupported_bucket()),
        }
    }

    async fn read(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let r = &scope.region;
        Ok(match kind {
            ResourceKind::Network => self
                .describe_ids(
                    VPC,
                    "DescribeVpcs",
                    r,
                    "VpcIds",
                    "VpcSet",
                    ids,
                    IDS_PER_CALL,
                )
                .await?
                .iter()
                .map(|v| observe_vpc(v, r))
                .collect(),
            ResourceKind::Subnet => self
                .describe_ids(
                    VPC,
                    "DescribeSubnets",
                    r,
                    "SubnetIds",
                    "SubnetSet",
                    ids,
                    IDS_PER_CALL,
                )
                .await?
                .iter()
                .map(|v| observe_subnet(v, r))
                .collect(),
            ResourceKind::Firewall => {
                let groups = self
                    .describe_ids(
                        VPC,
                        "DescribeSecurityGroups",
                        r,
                        "SecurityGroupIds",
                        "SecurityGroupSet",
                        ids,
                        IDS_PER_CALL,
                    )
                    .await?;
                self.observe_groups(r, &groups).await?
            }
            ResourceKind::Placement => self
                .describe_ids(
                    CVM,
                    "DescribeDisasterRecoverGroups",
                    r,
                    "DisasterRecoverGroupIds",
                    "DisasterRecoverGroupSet",
                    ids,
                    PLACEMENT_IDS_PER_CALL,
                )
                .await?
                .iter()
                .map(|v| observe_ps(v, r))
                .collect(),
            ResourceKind::Instance => self
                .describe_ids(
                    CVM,
                    "DescribeInstances",
                    r,
                    "InstanceIds",
                    "InstanceSet",
                    ids,
                    IDS_PER_CALL,
                )
                .await?
                .iter()
                .filter(|v| instance_alive(v))
                .map(|v| observe_instance(v, r))
                .collect(),
            ResourceKind::Volume => self
                .describe_ids(
                    CBS,
                    "DescribeDisks",
                    r,
                    "DiskIds",
                    "DiskSet",
                    ids,
                    IDS_PER_CALL,
                )
                .await?
                .iter()
                .filter(|v| disk_alive(v) && is_volume(v))
                .map(|v| observe_disk(v, r))
                .collect(),
            ResourceKind::Bucket => Vec::new(),
        })
    }

    async fn list_owned(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let r = &scope.region;
        let by_project = || {
            let mut m = Map::new();
            m.insert(
                "Filters".into(),
                json!([tag_filter(OwnershipTags::PROJECT, project)]),
            );
            m
        };
        let mut out = Vec::new();
        for v in self
            .describe_all(VPC, "DescribeVpcs", r, by_project(), "VpcSet", true)
            .await?
        {
            out.push(observe_vpc(&v, r));
        }
        for v in self
            .describe_all(VPC, "DescribeSubnets", r, by_project(), "SubnetSet", true)
            .await?
        {
            out.push(observe_subnet(&v, r));
        }
        let groups = self
            .describe_all(
                VPC,
                "DescribeSecurityGroups",
                r,
                by_project(),
                "SecurityGroupSet",
                true,
            )
            .await?;
        out.extend(self.observe_groups(r, &groups).await?);
        // DescribeDisasterRecoverGroups documents no tag filter: list the
        // region's groups (few) and keep ours by their Tags.
        for v in self
            .describe_all(
                CVM,
                "DescribeDisasterRecoverGroups",
                r,
                Map::new(),
                "DisasterRecoverGroupSet",
                false,
            )
            .await?
        {
            if tags_of(&v).get(OwnershipTags::PROJECT).map(String::as_str) == Some(project) {
                out.push(observe_ps(&v, r));
            }
        }
        for v in self
            .describe_all(
                CVM,
                "DescribeInstances",
                r,
                by_project(),
                "InstanceSet",
                false,
            )
            .await?
        {
            if instance_alive(&v) {
                out.push(observe_instance(&v, r));
            }
        }
        // Data disks only (disk-usage, DescribeDisks 362/16315): system disks
        // carry their instance's tags (213/15730).
        let mut data_disks = by_project();
        if let Some(Value::Array(f)) = data_disks.get_mut("Filters") {
            f.push(json!({"Name": "disk-usage", "Values": ["DATA_DISK"]}));
        }
        for v in self
            .describe_all(CBS, "DescribeDisks", r, data_disks, "DiskSet", false)
            .await?
        {
            if disk_alive(&v) && is_volume(&v) {
                out.push(observe_disk(&v, r));
            }
        }
        Ok(out)
    }

    async fn update(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
        changes: &Attrs,
    ) -> Result<ObservedResource, ProviderError> {
        let r = &scope.region;
        for key in changes.keys() {
            if !kind.is_updatable(key) {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "{kind} {id}: `{key}` cannot change in place (it forces a replacement)"
                    ),
                ));
            }
        }
        if changes.contains_key("tags") {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "{kind} {id}: changing tags in place is not supported by the Tencent Cloud provider yet \
                     (it needs the Tag API with the account's UIN); tags are set at creation"
                ),
            ));
        }
        match kind {
            ResourceKind::Firewall if changes.contains_key("ingress") => {
                self.replace_policies(r, id, changes).await?;
            }
            ResourceKind::Volume => {
                if let Some(target) = changes.get("attached_to") {
                    self.set_attachment(r, id, target).await?;
                }
                if let Some(size) = changes.get("size_gb").and_then(Value::as_u64) {
                    let current = self.describe_disk(r, id).await?.ok_or_else(|| {
                        ProviderError::new(ErrorKind::NotFound, format!("disk {id} does not exist"))
                    })?;
                    let now = current.get("DiskSize").and_then(Value::as_u64).unwrap_or(0);
                    if size < now {
                        return Err(ProviderError::new(
                            ErrorKind::Invalid,
                            format!("disk {id}: cloud disks only grow ({now} GB → {size} GB); replace it to shrink"),
                        ));
                    }
                    if size > now {
                        // https://www.tencentcloud.com/document/api/362/16320 (ResizeDisk)
                        self.call(
                            CBS,
                            "ResizeDisk",
                            r,
                            json!({"DiskId": id, "DiskSize": size}),
                        )
                        .await?;
                    }
                }
            }
            _ => {}
        }
        self.read(scope, kind, &[id.to_string()])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                ProviderError::new(ErrorKind::NotFound, format!("{kind} {id} does not exist"))
            })
    }

    async fn delete(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
    ) -> Result<(), ProviderError> {
        let r = &scope.region;
        match kind {
            // https://www.tencentcloud.com/document/api/215/15775 (DeleteVpc)
            ResourceKind::Network => {
                ok_if_gone(self.call(VPC, "DeleteVpc", r, json!({"VpcId": id})).await)
            }
            // https://www.tencentcloud.com/document/api/215/15783 (DeleteSubnet)
            ResourceKind::Subnet => {
                self.delete_network_member(r, "DeleteSubnet", "SubnetId", "subnet-id", id)
                    .await
            }
            // https://www.tencentcloud.com/document/api/215/15803 (DeleteSecurityGroup)
            ResourceKind::Firewall => {
                self.delete_network_member(
                    r,
                    "DeleteSecurityGroup",
                    "SecurityGroupId",
                    "security-group-id",
                    id,
                )
                .await
            }
            // https://www.tencentcloud.com/document/api/213/33266 (DeleteDisasterRecoverGroups)
            ResourceKind::Placement => ok_if_gone(
                self.call(
                    CVM,
                    "DeleteDisasterRecoverGroups",
                    r,
                    json!({"DisasterRecoverGroupIds": [id]}),
                )
                .await,
            ),
            ResourceKind::Instance => self.delete_instance(r, id).await,
            ResourceKind::Volume => self.delete_volume(r, id).await,
            ResourceKind::Bucket => Err(unsupported_bucket()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        assert_eq!(port_of(&json!({"from_port": 22, "to_port": 22})), "22");
        assert_eq!(
            port_of(&json!({"from_port": 8000, "to_port": 8010})),
            "8000-8010"
        );
        assert_eq!(port_of(&json!({"from_port": 0, "to_port": 65535})), "ALL");
        assert_eq!(port_of(&json!({})), "ALL");
    }

    #[test]
    fn endpoint_override_is_checked() {
        assert!(parse_endpoint("http://127.0.0.1:8080").is_ok());
        assert!(parse_endpoint("127.0.0.1:8080").is_err());
        assert!(parse_endpoint("ftp://x").is_err());
    }

    #[test]
    fn debug_hides_the_secret() {
        let p = TencentProvider::new(
            Credentials::new("AKIDtest", "very-secret-key"),
            Some("session-token-value".into()),
            None,
        )
        .unwrap();
        let d = format!("{p:?}");
        assert!(
            !d.contains("very-secret-key") && !d.contains("session-token-value"),
            "{d}"
        );
    }

    #[test]
    fn reserved_tags_are_refused() {
        let mut a = Attrs::new();
        a.insert("tags".into(), json!({"gpuform:x": "1"}));
        assert_eq!(user_tags(&a).unwrap_err().kind, ErrorKind::Invalid);
    }
}
