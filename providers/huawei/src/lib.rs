//! gpuform's Huawei Cloud provider: ECS, VPC, EVS and IMS over their REST
//! APIs (reqwest), signed with `SDK-HMAC-SHA256` (`gpuform-signing`).
//!
//! See README.md for credentials, endpoints, what each neutral kind becomes
//! and what is left out (packed placement, buckets).

mod client;
mod tags;

pub use client::JobPolling;

use async_trait::async_trait;
use base64::Engine as _;
use client::{job_entity_ids, list_field, Call, Client, Service};
use gpuform_provider::provider::RateLimit;
use gpuform_provider::{
    Attrs, Cloud, CreateRequest, ErrorKind, ObservedResource, Provider, ProviderError,
    ResourceKind, Scope,
};
use gpuform_signing::Credentials;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Mutex;

pub const ENV_AK: &str = "HUAWEICLOUD_SDK_AK";
pub const ENV_SK: &str = "HUAWEICLOUD_SDK_SK";
pub const ENV_PROJECT_ID: &str = "HUAWEICLOUD_SDK_PROJECT_ID";
pub const ENV_ENDPOINT: &str = "GPUFORM_HUAWEI_ENDPOINT";
/// Overrides [`DEFAULT_SETTLE`] in milliseconds (tests against a stand-in
/// whose disks appear within a second).
pub const ENV_SETTLE_MS: &str = "GPUFORM_HUAWEI_SETTLE_MS";

/// "Creating EVS Disks" is asynchronous: until its job has made the disk, a
/// lookup may answer 404 / leave it out, and EVS creates take no idempotency
/// token (only the disk name guards a retry). After a crash, a create younger
/// than this that is not visible yet is looked for again before it is retried
/// (ARCHITECTURE.md, "Settle time"). EVS jobs finish within seconds; 30 s
/// leaves a wide margin without stalling recovery long.
pub const DEFAULT_SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

/// Page size for list calls (ECS detail, VPC/subnet/security-group lists,
/// EVS detail and the tag-filter calls all accept 1000).
const PAGE: usize = 1000;

pub struct HuaweiProvider {
    client: Client,
    /// `HUAWEICLOUD_SDK_PROJECT_ID`: the default project id.
    default_project: Option<String>,
    /// `HUAWEICLOUD_SDK_PROJECT_ID_<REGION>` (e.g. `..._CN_NORTH_4`).
    region_projects: HashMap<String, String>,
    rate: RateLimit,
    images: Mutex<HashMap<(String, String), String>>,
    settle: std::time::Duration,
}

/// Never shows credentials.
impl fmt::Debug for HuaweiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HuaweiProvider")
            .field("default_project", &self.default_project)
            .field("region_projects", &self.region_projects)
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

/// Reads credentials, project ids and the endpoint override from the
/// environment (see [`HuaweiProvider::from_vars`]).
pub fn from_env() -> Result<HuaweiProvider, ProviderError> {
    HuaweiProvider::from_vars(std::env::vars())
}

impl HuaweiProvider {
    /// Builds the provider from `(name, value)` pairs: `HUAWEICLOUD_SDK_AK`,
    /// `HUAWEICLOUD_SDK_SK`, `HUAWEICLOUD_SDK_PROJECT_ID` and/or
    /// `HUAWEICLOUD_SDK_PROJECT_ID_<REGION>`, `GPUFORM_HUAWEI_ENDPOINT`.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<HuaweiProvider, ProviderError> {
        let mut ak = None;
        let mut sk = None;
        let mut default_project = None;
        let mut region_projects = HashMap::new();
        let mut endpoint = None;
        let mut settle = DEFAULT_SETTLE;
        let region_prefix = format!("{ENV_PROJECT_ID}_");
        for (k, v) in vars {
            let v = v.trim().to_string();
            if v.is_empty() {
                continue;
            }
            match k.as_str() {
                ENV_AK => ak = Some(v),
                ENV_SK => sk = Some(v),
                ENV_PROJECT_ID => default_project = Some(v),
                ENV_ENDPOINT => endpoint = Some(v),
                ENV_SETTLE_MS => {
                    settle = std::time::Duration::from_millis(v.parse().map_err(|_| {
                        ProviderError::new(
                            ErrorKind::Invalid,
                            format!("{ENV_SETTLE_MS}=`{v}` is not a number of milliseconds"),
                        )
                    })?)
                }
                _ => {
                    if let Some(r) = k.strip_prefix(&region_prefix) {
                        region_projects.insert(r.to_ascii_uppercase(), v);
                    }
                }
            }
        }
        let (Some(ak), Some(sk)) = (ak, sk) else {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!("Huawei Cloud credentials missing: set {ENV_AK} and {ENV_SK} (an access key pair from IAM > My Credentials)"),
            ));
        };
        if default_project.is_none() && region_projects.is_empty() {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!("Huawei Cloud project id missing: set {ENV_PROJECT_ID} (or {ENV_PROJECT_ID}_<REGION>, e.g. {ENV_PROJECT_ID}_CN_NORTH_4; see My Credentials > API Credentials)"),
            ));
        }
        Ok(HuaweiProvider {
            client: Client::new(Credentials::new(ak, sk), endpoint)?,
            default_project,
            region_projects,
            rate: default_rate_limit(),
            images: Mutex::new(HashMap::new()),
            settle,
        })
    }

    /// How asynchronous jobs (server create/delete, volume create/attach)
    /// are polled; tests shorten it.
    pub fn with_job_polling(mut self, p: JobPolling) -> Self {
        self.client.polling = p;
        self
    }

    pub fn with_rate_limit(mut self, r: RateLimit) -> Self {
        self.rate = r;
        self
    }

    fn project(&self, region: &str) -> Result<&str, ProviderError> {
        let key = region.to_ascii_uppercase().replace('-', "_");
        self.region_projects
            .get(&key)
            .or(self.default_project.as_ref())
            .map(String::as_str)
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Auth,
                    format!("no Huawei Cloud project id for region {region}: set {ENV_PROJECT_ID}_{key} or {ENV_PROJECT_ID}"),
                )
            })
    }
}

/// Huawei publishes API flow control per API in API Gateway (a call over the
/// limit gets HTTP 429 `APIGW.0308`, "API Gateway error codes",
/// support.huaweicloud.com/devg-apisign/api-sign-errorcode.html) but the ECS
/// and VPC references give no per-tenant figure we could find. 10 calls/s with
/// a burst of 20 stays well inside the smallest limits the API Gateway
/// documents for a user; throttling still maps to `throttled` and is retried.
fn default_rate_limit() -> RateLimit {
    RateLimit {
        per_second: 10.0,
        burst: 20,
    }
}

// ----- small helpers ----------------------------------------------------------

fn attr_str<'a>(a: &'a Attrs, k: &str) -> Option<&'a str> {
    a.get(k).and_then(Value::as_str)
}

fn required<'a>(a: &'a Attrs, k: &str, kind: ResourceKind) -> Result<&'a str, ProviderError> {
    attr_str(a, k).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("{kind} needs the `{k}` attribute"),
        )
    })
}

fn reference<'a>(req: &'a CreateRequest, role: &str) -> Result<&'a str, ProviderError> {
    req.refs.get(role).map(String::as_str).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{} {} needs a `{role}` reference",
                req.kind, req.ownership.address
            ),
        )
    })
}

fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A resource name from the idempotency token: names are set atomically with
/// creation, so a create interrupted before its tags were added (security
/// groups) or its answer was recorded is found again by name.
fn name_for(token: &str) -> String {
    let n: String = token
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    if n.is_empty() {
        "gpuform".into()
    } else {
        n
    }
}

fn all_tags(req: &CreateRequest) -> Result<Vec<(String, String)>, ProviderError> {
    let mut t = tags::ownership_tags(&req.ownership)?;
    t.extend(tags::user_tags(&req.attrs)?);
    Ok(t)
}

fn kv_tags(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("key")?.as_str()?.to_string(), s(t, "value"))))
        .collect()
}

fn observed(
    kind: ResourceKind,
    id: &str,
    region: &str,
    tags: Option<&[(String, String)]>,
    mut attrs: Attrs,
    status: &str,
) -> ObservedResource {
    let ownership = tags.and_then(tags::ownership_from);
    if let Some(t) = tags {
        attrs.insert("tags".into(), tags::observed_user_tags(t));
    }
    ObservedResource {
        kind,
        id: id.to_string(),
        region: region.to_string(),
        ownership,
        attrs,
        status: status.to_ascii_lowercase(),
    }
}

/// First host of an IPv4 CIDR: Huawei subnets need an explicit `gateway_ip`.
fn gateway_of(cidr: &str) -> Result<String, ProviderError> {
    let bad = || ProviderError::new(ErrorKind::Invalid, format!("`{cidr}` is not an IPv4 CIDR"));
    let (ip, len) = cidr.split_once('/').ok_or_else(bad)?;
    let len: u32 = len.parse().map_err(|_| bad())?;
    let octets: Vec<u8> = ip
        .split('.')
        .map(|o| o.parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    if octets.len() != 4 || len > 30 {
        return Err(bad());
    }
    let n = u32::from_be_bytes([octets[0], octets[1], octets[2], octets[3]]);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let g = (n & mask) + 1;
    let b = g.to_be_bytes();
    Ok(format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]))
}

fn volume_type_to_huawei(t: &str) -> String {
    match t.to_ascii_lowercase().as_str() {
        "ssd" => "SSD".into(),
        "gp-ssd" | "gpssd" => "GPSSD".into(),
        "essd" => "ESSD".into(),
        "sas" => "SAS".into(),
        "hdd" | "sata" => "SATA".into(),
        other => other.to_ascii_uppercase(),
    }
}

fn volume_type_from_huawei(t: &str) -> String {
    match t {
        "SSD" => "ssd".into(),
        "GPSSD" => "gp-ssd".into(),
        "SATA" => "hdd".into(),
        other => other.to_ascii_lowercase(),
    }
}

/// How a pricing model goes into `extendparam` ("Creating ECSs",
/// support.huaweicloud.com/api-ecs/ecs_02_0101.html: chargingMode
/// prePaid/postPaid, periodType/periodNum, isAutoPay, marketType spot).
fn extendparam(pricing: &str) -> Result<Value, ProviderError> {
    Ok(match pricing {
        "on-demand" => json!({"chargingMode": "postPaid"}),
        "spot" => json!({"chargingMode": "postPaid", "marketType": "spot"}),
        "reserved-1y" | "reserved-3y" => json!({
            "chargingMode": "prePaid",
            "periodType": "year",
            "periodNum": if pricing == "reserved-1y" { 1 } else { 3 },
            "isAutoPay": "true",
            "isAutoRenew": "false",
        }),
        other => {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "pricing `{other}` is not one of on-demand, spot, reserved-1y, reserved-3y"
                ),
            ))
        }
    })
}

/// Logical image names → how to find a Huawei public image (IMS "Querying
/// Images", GET /v2/cloudimages, support.huaweicloud.com/api-ims/ims_03_0602.html:
/// `__imagetype=gold` are public images, `__platform` the OS family).
fn image_query(logical: &str) -> Option<(&'static str, &'static str, bool)> {
    Some(match logical {
        "ubuntu-20.04" => ("Ubuntu", "20.04", false),
        "ubuntu-22.04" => ("Ubuntu", "22.04", false),
        "ubuntu-24.04" => ("Ubuntu", "24.04", false),
        "ubuntu-20.04-cuda" => ("Ubuntu", "20.04", true),
        "ubuntu-22.04-cuda" => ("Ubuntu", "22.04", true),
        "ubuntu-24.04-cuda" => ("Ubuntu", "24.04", true),
        _ => return None,
    })
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

fn looks_like_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && [8, 4, 4, 4, 12]
            .iter()
            .zip(&parts)
            .all(|(n, p)| p.len() == *n)
        && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// Which resources a list should keep.
enum Filter<'a> {
    Project(&'a str),
    Ids(HashSet<&'a str>),
}

impl Filter<'_> {
    fn keeps(&self, id: &str, own_project: Option<&str>) -> bool {
        match self {
            Filter::Project(p) => own_project == Some(*p),
            Filter::Ids(ids) => ids.contains(id),
        }
    }
}

// ----- the provider -----------------------------------------------------------

impl HuaweiProvider {
    async fn send(&self, call: Call<'_>) -> Result<Value, ProviderError> {
        self.client.send(call).await
    }

    /// All pages of a marker-paginated v1 list (VPC "Querying VPCs"
    /// GET /v1/{project_id}/vpcs, "Querying Subnets" GET /v1/{project_id}/subnets,
    /// "Querying Security Groups" GET /v1/{project_id}/security-groups:
    /// `limit` + `marker` = id of the last item).
    async fn list_v1(
        &self,
        region: &str,
        pid: &str,
        what: &str,
        extra: &[(&str, &str)],
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut call = Call::new(Service::Vpc, region, "GET", format!("/v1/{pid}/{what}"))
                .query("limit", PAGE.to_string());
            for (k, v) in extra {
                call = call.query(k, *v);
            }
            if let Some(m) = &marker {
                call = call.query("marker", m.clone());
            }
            let v = self.send(call).await?;
            let key = what.replace('-', "_");
            let page = list_field(&v, &key, &format!("listing {what}"))?;
            let n = page.len();
            marker = page.last().map(|x| s(x, "id"));
            out.extend(page);
            if n < PAGE {
                return Ok(out);
            }
        }
    }

    /// Tags of VPC-service resources through the tag filter call ("Querying
    /// VPCs by Tag", POST /v2.0/{project_id}/vpcs/resource_instances/action,
    /// support.huaweicloud.com/api-vpc/vpc_tag_0005.html; the same for
    /// subnets and security-groups). `project` None = any gpuform project.
    async fn tagged(
        &self,
        region: &str,
        pid: &str,
        what: &str,
        project: Option<&str>,
    ) -> Result<HashMap<String, Vec<(String, String)>>, ProviderError> {
        let values: Vec<String> = project.map(tags::encode).into_iter().collect();
        let mut out = HashMap::new();
        let mut offset = 0usize;
        loop {
            let body = json!({
                "action": "filter",
                "limit": PAGE,
                "offset": offset,
                "tags": [{"key": tags::PROJECT, "values": values}],
            });
            let v = self
                .send(
                    Call::new(
                        Service::Vpc,
                        region,
                        "POST",
                        format!("/v2.0/{pid}/{what}/resource_instances/action"),
                    )
                    .body(body),
                )
                .await?;
            let page = list_field(&v, "resources", &format!("tag filter of {what}"))?;
            let total = v.get("total_count").and_then(Value::as_u64).unwrap_or(0) as usize;
            offset += page.len();
            for r in &page {
                out.insert(
                    s(r, "resource_id"),
                    kv_tags(r.get("tags").unwrap_or(&Value::Null)),
                );
            }
            if page.is_empty() || offset >= total {
                return Ok(out);
            }
        }
    }

    async fn observe_vpc_kind(
        &self,
        region: &str,
        kind: ResourceKind,
        filter: &Filter<'_>,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let pid = self.project(region)?;
        let what = match kind {
            ResourceKind::Network => "vpcs",
            ResourceKind::Subnet => "subnets",
            _ => "security-groups",
        };
        let project = match filter {
            Filter::Project(p) => Some(*p),
            Filter::Ids(_) => None,
        };
        let tagged = self.tagged(region, pid, what, project).await?;
        if matches!(filter, Filter::Project(_)) && tagged.is_empty() {
            return Ok(Vec::new());
        }
        let items = self.list_v1(region, pid, what, &[]).await?;
        let mut out = Vec::new();
        for it in items {
            let id = s(&it, "id");
            let t = tagged.get(&id);
            let own = t.and_then(|t| tags::ownership_from(t));
            if !filter.keeps(&id, own.as_ref().map(|o| o.project.as_str())) {
                continue;
            }
            let mut a = Attrs::new();
            let status = match kind {
                ResourceKind::Network => {
                    a.insert("cidr".into(), json!(s(&it, "cidr")));
                    match s(&it, "status").as_str() {
                        "OK" => "available".to_string(),
                        other => other.to_string(),
                    }
                }
                ResourceKind::Subnet => {
                    a.insert("cidr".into(), json!(s(&it, "cidr")));
                    a.insert("zone".into(), json!(s(&it, "availability_zone")));
                    match s(&it, "status").as_str() {
                        "ACTIVE" => "available".to_string(),
                        other => other.to_string(),
                    }
                }
                _ => {
                    a.insert("ingress".into(), observed_ingress(&it));
                    "available".to_string()
                }
            };
            out.push(observed(
                kind,
                &id,
                region,
                t.map(Vec::as_slice),
                a,
                &status,
            ));
        }
        Ok(out)
    }

    /// Every EVS disk of the project ("Querying EVS Disks (Batch)",
    /// GET /v2/{project_id}/cloudvolumes/detail, support.huaweicloud.com/api-evs/evs_04_2006.html:
    /// `limit` ≤ 1000, `offset` = records to skip).
    async fn all_volumes(&self, region: &str, pid: &str) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        loop {
            let v = self
                .send(
                    Call::new(
                        Service::Evs,
                        region,
                        "GET",
                        format!("/v2/{pid}/cloudvolumes/detail"),
                    )
                    .query("limit", PAGE.to_string())
                    .query("offset", out.len().to_string()),
                )
                .await?;
            let page = list_field(&v, "volumes", "listing EVS disks")?;
            let n = page.len();
            out.extend(page);
            if n < PAGE {
                return Ok(out);
            }
        }
    }

    async fn observe_volumes(
        &self,
        region: &str,
        filter: &Filter<'_>,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let pid = self.project(region)?;
        let vols = self.all_volumes(region, pid).await?;
        Ok(vols
            .iter()
            // System disks inherit the server's creation tags ("tags added
            // during ECS creation are also added to the system disk", ECS
            // user guide ecs_03_0902), gpuform's address included: they are
            // part of their server, never a volume of ours.
            .filter(|v| !is_system_disk(v))
            .filter_map(|v| {
                let o = observe_volume(v, region);
                let keep = filter.keeps(&o.id, o.ownership.as_ref().map(|x| x.project.as_str()));
                (keep && o.status != "deleting" && o.status != "deleted").then_some(o)
            })
            .collect())
    }

    /// "Querying Details About ECSs", GET /v1/{project_id}/cloudservers/detail
    /// (support.huaweicloud.com/api-ecs/zh-cn_topic_0094148850.html): `limit`
    /// ≤ 1000, `offset` = page number from 1, `tags` = `key=value`.
    async fn observe_servers(
        &self,
        region: &str,
        filter: &Filter<'_>,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let pid = self.project(region)?;
        let mut servers = Vec::new();
        let mut page_no = 1;
        loop {
            let mut call = Call::new(
                Service::Ecs,
                region,
                "GET",
                format!("/v1/{pid}/cloudservers/detail"),
            )
            .query("limit", PAGE.to_string())
            .query("offset", page_no.to_string());
            if let Filter::Project(p) = filter {
                call = call.query("tags", format!("{}={}", tags::PROJECT, tags::encode(p)));
            }
            let v = self.send(call).await?;
            let page = list_field(&v, "servers", "listing ECSs")?;
            let n = page.len();
            servers.extend(page);
            if n < PAGE {
                break;
            }
            page_no += 1;
        }
        servers.retain(|sv| !matches!(s(sv, "status").as_str(), "DELETED" | "SOFT_DELETED"));
        if servers.is_empty() {
            return Ok(Vec::new());
        }
        // Root disk sizes: one batched EVS listing, not one call per server.
        let sizes: HashMap<String, u64> = self
            .all_volumes(region, pid)
            .await?
            .iter()
            .filter_map(|v| Some((s(v, "id"), v.get("size")?.as_u64()?)))
            .collect();
        Ok(servers
            .iter()
            .map(|sv| observe_server(sv, region, &sizes))
            .filter(|o| filter.keeps(&o.id, o.ownership.as_ref().map(|x| x.project.as_str())))
            .collect())
    }

    async fn observe(
        &self,
        region: &str,
        kind: ResourceKind,
        filter: &Filter<'_>,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        match kind {
            ResourceKind::Network | ResourceKind::Subnet | ResourceKind::Firewall => {
                self.observe_vpc_kind(region, kind, filter).await
            }
            ResourceKind::Instance => self.observe_servers(region, filter).await,
            ResourceKind::Volume => self.observe_volumes(region, filter).await,
            ResourceKind::Placement => {
                // Server groups carry no tags: only a read by id finds them.
                let Filter::Ids(ids) = filter else {
                    return Ok(Vec::new());
                };
                let pid = self.project(region)?;
                let v = self
                    .send(Call::new(
                        Service::Ecs,
                        region,
                        "GET",
                        format!("/v1/{pid}/cloudservers/os-server-groups"),
                    ))
                    .await?;
                Ok(list_field(&v, "server_groups", "listing ECS groups")?
                    .iter()
                    .filter(|g| ids.contains(s(g, "id").as_str()))
                    .map(|g| {
                        let mut a = Attrs::new();
                        a.insert("strategy".into(), json!("spread"));
                        observed(
                            ResourceKind::Placement,
                            &s(g, "id"),
                            region,
                            None,
                            a,
                            "available",
                        )
                    })
                    .collect())
            }
            ResourceKind::Bucket => Ok(Vec::new()),
        }
    }

    async fn read_one(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
    ) -> Result<ObservedResource, ProviderError> {
        let ids: HashSet<&str> = [id].into_iter().collect();
        self.observe(region, kind, &Filter::Ids(ids))
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                ProviderError::new(ErrorKind::NotFound, format!("{kind} {id} not found"))
            })
    }

    // ----- create ---------------------------------------------------------------

    /// "Creating a VPC", POST /v1/{project_id}/vpcs
    /// (support.huaweicloud.com/api-vpc/vpc_api01_0001.html): `tags` as
    /// `key*value` strings, set atomically with the VPC.
    async fn create_network(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = req.scope.region.as_str();
        let pid = self.project(region)?;
        let name = name_for(&req.ownership.token);
        let tag_list = all_tags(req)?;
        let existing = self.list_v1(region, pid, "vpcs", &[]).await?;
        let id = match existing.iter().find(|v| s(v, "name") == name) {
            Some(v) => s(v, "id"),
            None => {
                let mut vpc = json!({
                    "name": name,
                    "description": format!("gpuform {}", req.ownership.address).replace(['<', '>'], ""),
                    "tags": tag_list.iter().map(|(k, v)| format!("{k}*{v}")).collect::<Vec<_>>(),
                });
                if let Some(c) = attr_str(&req.attrs, "cidr") {
                    vpc["cidr"] = json!(c);
                }
                let v = self
                    .send(
                        Call::new(Service::Vpc, region, "POST", format!("/v1/{pid}/vpcs"))
                            .body(json!({"vpc": vpc})),
                    )
                    .await?;
                s(v.get("vpc").unwrap_or(&Value::Null), "id")
            }
        };
        self.wait_vpc_ready(region, pid, &id).await?;
        self.read_one(region, ResourceKind::Network, &id).await
    }

    /// Polls a VPC until it is `OK`: it is `CREATING` at first ("Querying VPC
    /// Details", support.huaweicloud.com/api-vpc/vpc_api01_0002.html, field
    /// `status`: CREATING / OK), and a subnet made in it meanwhile is refused
    /// with `400 VPC.0004 VPC is not active, please try later` ("Error Codes",
    /// support.huaweicloud.com/api-vpc/vpc_api_0003.html).
    async fn wait_vpc_ready(&self, region: &str, pid: &str, id: &str) -> Result<(), ProviderError> {
        self.wait_status(
            Service::Vpc,
            region,
            format!("/v1/{pid}/vpcs/{id}"),
            "vpc",
            &["OK"],
            &["ERROR"],
        )
        .await
        .map(|_| ())
    }

    /// Polls a subnet until it is `ACTIVE`: a new subnet is `UNKNOWN` until it
    /// is attached to its VPC ("Querying Subnet Details",
    /// support.huaweicloud.com/api-vpc/vpc_subnet01_0002.html: ACTIVE = attached
    /// to the VPC, UNKNOWN = not yet, ERROR = failed).
    async fn wait_subnet_ready(
        &self,
        region: &str,
        pid: &str,
        id: &str,
    ) -> Result<Value, ProviderError> {
        self.wait_status(
            Service::Vpc,
            region,
            format!("/v1/{pid}/subnets/{id}"),
            "subnet",
            &["ACTIVE"],
            &["ERROR"],
        )
        .await
    }

    /// GETs `path` until `{key}.status` is one of `ready` (→ the object) or
    /// `failed` (→ error), with the job polling's backoff and deadline: every
    /// create waits for its resource's documented ready state before
    /// dependents start.
    async fn wait_status(
        &self,
        svc: Service,
        region: &str,
        path: String,
        key: &str,
        ready: &[&str],
        failed: &[&str],
    ) -> Result<Value, ProviderError> {
        let polling = self.client.polling;
        let start = std::time::Instant::now();
        let mut delay = polling.initial;
        loop {
            let v = self
                .send(Call::new(svc, region, "GET", path.clone()))
                .await?;
            let obj = v.get(key).cloned().ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Transient,
                    format!("GET {path}: the answer has no `{key}`"),
                )
            })?;
            let status = s(&obj, "status");
            if ready.contains(&status.as_str()) {
                return Ok(obj);
            }
            if failed.contains(&status.as_str()) {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!("{key} {} is {status}", s(&obj, "id")),
                ));
            }
            if start.elapsed() >= polling.deadline {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!(
                        "{key} {} still {status} after {}s",
                        s(&obj, "id"),
                        polling.deadline.as_secs()
                    ),
                ));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(polling.max);
        }
    }

    /// The region's private (intranet) DNS servers, by priority: "Querying
    /// Name Servers", GET /v2/nameservers?type=private&region=…
    /// (support.huaweicloud.com/api-dns/dns_api_69001.html). A subnet created
    /// without DNS servers cannot use the cloud's internal DNS ("Creating a
    /// Subnet", `dnsList`: empty by default, and then 无法使用云内网DNS功能).
    async fn private_dns(&self, region: &str) -> Result<Vec<String>, ProviderError> {
        let v = self
            .send(
                Call::new(Service::Dns, region, "GET", "/v2/nameservers".into())
                    .query("type", "private")
                    .query("region", region),
            )
            .await?;
        let mut records: Vec<(u64, String)> =
            list_field(&v, "nameservers", "listing name servers")?
                .iter()
                .filter(|n| s(n, "type") == "private")
                .flat_map(|n| {
                    n.get("ns_records")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                })
                .filter_map(|r| {
                    let a = s(&r, "address");
                    (!a.is_empty()).then(|| {
                        (
                            r.get("priority")
                                .and_then(Value::as_u64)
                                .unwrap_or(u64::MAX),
                            a,
                        )
                    })
                })
                .collect();
        records.sort();
        if records.is_empty() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("Huawei Cloud lists no private DNS server for region {region}; a subnet without one cannot resolve internal names"),
            ));
        }
        Ok(records.into_iter().map(|(_, a)| a).collect())
    }

    /// "Creating a Subnet", POST /v1/{project_id}/subnets
    /// (support.huaweicloud.com/api-vpc/vpc_subnet01_0001.html).
    async fn create_subnet(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = req.scope.region.as_str();
        let pid = self.project(region)?;
        let vpc = reference(req, "network")?;
        let cidr = required(&req.attrs, "cidr", req.kind)?;
        let zone = required(&req.attrs, "zone", req.kind)?;
        let name = name_for(&req.ownership.token);
        let tag_list = all_tags(req)?;
        let existing = self
            .list_v1(region, pid, "subnets", &[("vpc_id", vpc)])
            .await?;
        let id = match existing.iter().find(|v| s(v, "name") == name) {
            Some(v) => s(v, "id"),
            None => {
                // The VPC may have been adopted after a crash while still CREATING.
                self.wait_vpc_ready(region, pid, vpc).await?;
                let dns = self.private_dns(region).await?;
                let mut body = json!({"subnet": {
                    "name": name,
                    "cidr": cidr,
                    "gateway_ip": gateway_of(cidr)?,
                    "vpc_id": vpc,
                    "availability_zone": zone,
                    "primary_dns": dns[0],
                    "dnsList": dns,
                    "tags": tag_list.iter().map(|(k, v)| format!("{k}*{v}")).collect::<Vec<_>>(),
                }});
                if let Some(second) = dns.get(1) {
                    body["subnet"]["secondary_dns"] = json!(second);
                }
                let v = self
                    .send(
                        Call::new(Service::Vpc, region, "POST", format!("/v1/{pid}/subnets"))
                            .body(body),
                    )
                    .await?;
                s(v.get("subnet").unwrap_or(&Value::Null), "id")
            }
        };
        self.wait_subnet_ready(region, pid, &id).await?;
        self.read_one(region, ResourceKind::Subnet, &id).await
    }

    /// "Creating a Security Group", POST /v1/{project_id}/security-groups
    /// (support.huaweicloud.com/api-vpc/vpc_sg01_0001.html), then its tags
    /// ("Batch Creating Security Group Tags", POST
    /// /v2.0/{project_id}/security-groups/{id}/tags/action) and rules.
    async fn create_firewall(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = req.scope.region.as_str();
        let pid = self.project(region)?;
        let vpc = reference(req, "network")?;
        let name = name_for(&req.ownership.token);
        let tag_list = all_tags(req)?;
        let existing = self
            .list_v1(region, pid, "security-groups", &[("vpc_id", vpc)])
            .await?;
        let sg = match existing.into_iter().find(|v| s(v, "name") == name) {
            Some(v) => v,
            None => {
                let body = json!({"security_group": {"name": name, "vpc_id": vpc}});
                let v = self
                    .send(
                        Call::new(
                            Service::Vpc,
                            region,
                            "POST",
                            format!("/v1/{pid}/security-groups"),
                        )
                        .body(body),
                    )
                    .await?;
                v.get("security_group").cloned().unwrap_or(Value::Null)
            }
        };
        let id = s(&sg, "id");
        self.tag_action(region, pid, "security-groups", &id, "create", &tag_list)
            .await?;
        let ingress = req.attrs.get("ingress").cloned().unwrap_or(json!([]));
        self.sync_rules(region, pid, &sg, &ingress).await?;
        self.read_one(region, ResourceKind::Firewall, &id).await
    }

    /// VPC-service tag batch action ("Batch Creating or Deleting VPC Tags",
    /// POST /v2.0/{project_id}/vpcs/{vpc_id}/tags/action; same for subnets
    /// and security-groups).
    async fn tag_action(
        &self,
        region: &str,
        pid: &str,
        what: &str,
        id: &str,
        action: &str,
        t: &[(String, String)],
    ) -> Result<(), ProviderError> {
        if t.is_empty() {
            return Ok(());
        }
        let tags: Vec<Value> = t
            .iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect();
        self.send(
            Call::new(
                Service::Vpc,
                region,
                "POST",
                format!("/v2.0/{pid}/{what}/{id}/tags/action"),
            )
            .body(json!({"action": action, "tags": tags})),
        )
        .await?;
        Ok(())
    }

    /// Makes the group's rules: all traffic from members (a rule whose
    /// `remote_group_id` is the group itself) plus exactly the `ingress`
    /// CIDR rules ("Creating a Security Group Rule", POST
    /// /v1/{project_id}/security-group-rules; "Deleting a Security Group Rule",
    /// DELETE /v1/{project_id}/security-group-rules/{id}). Egress rules and
    /// other group rules are left alone.
    async fn sync_rules(
        &self,
        region: &str,
        pid: &str,
        sg: &Value,
        ingress: &Value,
    ) -> Result<(), ProviderError> {
        let id = s(sg, "id");
        let rules = sg
            .get("security_group_rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let is_ingress = |r: &Value| s(r, "direction") == "ingress";
        let has_self = rules.iter().any(|r| {
            is_ingress(r)
                && s(r, "remote_group_id") == id
                && s(r, "ethertype") == "IPv4"
                && r.get("protocol").is_none_or(Value::is_null)
        });
        let mut wanted: Vec<Value> = Vec::new();
        for i in ingress.as_array().into_iter().flatten() {
            wanted.push(rule_body(&id, i)?);
        }
        // Delete CIDR ingress rules that are no longer wanted.
        for r in rules
            .iter()
            .filter(|r| is_ingress(r) && !s(r, "remote_ip_prefix").is_empty())
        {
            if !wanted.iter().any(|w| same_rule(w, r)) {
                let rid = s(r, "id");
                match self
                    .send(Call::new(
                        Service::Vpc,
                        region,
                        "DELETE",
                        format!("/v1/{pid}/security-group-rules/{rid}"),
                    ))
                    .await
                {
                    Err(e) if e.kind != ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
        }
        let mut to_add = Vec::new();
        if !has_self {
            to_add.push(json!({"security_group_id": id, "direction": "ingress", "ethertype": "IPv4", "remote_group_id": id}));
        }
        for w in wanted {
            if !rules.iter().any(|r| is_ingress(r) && same_rule(&w, r)) {
                to_add.push(w);
            }
        }
        for body in to_add {
            self.send(
                Call::new(
                    Service::Vpc,
                    region,
                    "POST",
                    format!("/v1/{pid}/security-group-rules"),
                )
                .body(json!({"security_group_rule": body})),
            )
            .await?;
        }
        Ok(())
    }

    /// "Creating an ECS Group", POST /v1/{project_id}/cloudservers/os-server-groups
    /// (support.huaweicloud.com/api-ecs/ecs_03_1301.html). Huawei's ECS
    /// groups know only `anti-affinity`: they spread members over physical
    /// hosts. There is no "pack together" policy, which is what a multi-node
    /// NVLink/RDMA cluster (`strategy: cluster`) asks for, so that is refused
    /// rather than silently given the opposite; `spread` is honoured.
    async fn create_placement(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = req.scope.region.as_str();
        let strategy = attr_str(&req.attrs, "strategy").unwrap_or("cluster");
        if !matches!(strategy, "spread" | "anti-affinity") {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "Huawei Cloud has no packed placement: ECS groups only support anti-affinity (spreading nodes over hosts), the opposite of strategy `{strategy}` for NVLink/RDMA clusters\n  hint: use a single-node cluster, drop `interconnect: nvlink` / `fabric: rdma` for this cluster, or place it on a cloud with cluster placement groups"
                ),
            ));
        }
        let pid = self.project(region)?;
        let name = name_for(&req.ownership.token);
        let list = self
            .send(Call::new(
                Service::Ecs,
                region,
                "GET",
                format!("/v1/{pid}/cloudservers/os-server-groups"),
            ))
            .await?;
        let found = list_field(&list, "server_groups", "listing ECS groups")?
            .iter()
            .find(|g| s(g, "name") == name)
            .map(|g| s(g, "id"));
        let id = match found {
            Some(id) => id,
            None => {
                let v = self
                    .send(
                        Call::new(
                            Service::Ecs,
                            region,
                            "POST",
                            format!("/v1/{pid}/cloudservers/os-server-groups"),
                        )
                        .body(
                            json!({"server_group": {"name": name, "policies": ["anti-affinity"]}}),
                        ),
                    )
                    .await?;
                s(v.get("server_group").unwrap_or(&Value::Null), "id")
            }
        };
        self.read_one(region, ResourceKind::Placement, &id).await
    }

    async fn image_id(&self, region: &str, logical: &str) -> Result<String, ProviderError> {
        if looks_like_uuid(logical) {
            return Ok(logical.to_string());
        }
        let key = (region.to_string(), logical.to_string());
        if let Some(id) = self.images.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(id);
        }
        let (platform, version, gpu) = image_query(logical).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("unknown image `{logical}` for Huawei Cloud\n  hint: use ubuntu-20.04/22.04/24.04 (add -cuda for a GPU driver image) or an image id (UUID)"),
            )
        })?;
        let v = self
            .send(
                Call::new(Service::Ims, region, "GET", "/v2/cloudimages".to_string())
                    .query("__imagetype", "gold")
                    .query("__platform", platform)
                    .query("status", "active")
                    .query("limit", "100"),
            )
            .await?;
        let mut best: Option<(String, String)> = None;
        for img in &list_field(&v, "images", "listing public images")? {
            let name = s(img, "name");
            let lower = name.to_ascii_lowercase();
            let has_driver = ["cuda", "tesla", "gpu driver", "nvidia"]
                .iter()
                .any(|w| lower.contains(w));
            if !lower.contains(version) || has_driver != gpu {
                continue;
            }
            let created = s(img, "created_at");
            if best.as_ref().is_none_or(|(c, _)| created > *c) {
                best = Some((created, s(img, "id")));
            }
        }
        let id = best.map(|(_, id)| id).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "no public {platform} {version}{} image found in {region}",
                    if gpu { " image with a GPU driver" } else { "" }
                ),
            )
        })?;
        if let Ok(mut m) = self.images.lock() {
            m.insert(key, id.clone());
        }
        Ok(id)
    }

    /// "Creating ECSs", POST /v1.1/{project_id}/cloudservers
    /// (support.huaweicloud.com/api-ecs/ecs_02_0101.html): asynchronous,
    /// answers `job_id`; idempotent through the signed `X-Client-Token` header.
    async fn create_instance(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = req.scope.region.as_str();
        let pid = self.project(region)?;
        let a = &req.attrs;
        let flavor = required(a, "instance_type", req.kind)?;
        let zone = required(a, "zone", req.kind)?;
        let image = required(a, "image", req.kind)?;
        let pricing = attr_str(a, "pricing").unwrap_or("on-demand");
        let root_gb = a.get("root_gb").and_then(Value::as_u64).unwrap_or(40);
        let subnet = reference(req, "subnet")?;
        let extend = extendparam(pricing)?;
        let tag_list = all_tags(req)?;
        if tag_list.len() > 10 {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("an ECS takes at most 10 tags; gpuform uses 4, so at most 6 of your own (got {})", tag_list.len() - 4),
            ));
        }
        let image_ref = self.image_id(region, image).await?;
        // The subnet's VPC (`vpcid` is required), once the subnet is ACTIVE
        // (it may have been adopted after a crash while still UNKNOWN).
        let sn = self.wait_subnet_ready(region, pid, subnet).await?;
        let vpc_id = s(&sn, "vpc_id");
        let name: String = format!("{}-{}", req.ownership.project, req.ownership.address)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .take(64)
            .collect();
        let mut server = json!({
            "name": name,
            "flavorRef": flavor,
            "imageRef": image_ref,
            "availability_zone": zone,
            "vpcid": vpc_id,
            "nics": [{"subnet_id": subnet}],
            "root_volume": {"volumetype": "SSD", "size": root_gb},
            "count": 1,
            "extendparam": extend,
            "server_tags": tag_list.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
            "metadata": {"gpuform_image": image, "gpuform_pricing": pricing},
        });
        if let Some(fw) = req.refs.get("firewall") {
            server["security_groups"] = json!([{"id": fw}]);
        }
        if let Some(g) = req.refs.get("placement") {
            server["os:scheduler_hints"] = json!({"group": g});
        }
        if let Some(u) = attr_str(a, "user_data") {
            server["user_data"] = json!(base64::engine::general_purpose::STANDARD.encode(u));
        }
        let v = self
            .send(
                Call::new(
                    Service::Ecs,
                    region,
                    "POST",
                    format!("/v1.1/{pid}/cloudservers"),
                )
                .body(json!({"server": server}))
                .token(&client_token(&req.ownership.token, zone)),
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
            .wait_job(Service::Ecs, region, pid, &job_id, v.get("order_id"))
            .await
        {
            Ok(job) => job,
            Err(e) => {
                // A failed job can leave its server behind in ERROR.
                return Err(match self.remove_failed(region, pid, &answered).await? {
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
        if let Some(failed) = self.remove_failed(region, pid, &ids).await? {
            return Err(failed);
        }
        self.read_one(region, ResourceKind::Instance, &id).await
    }

    /// Deletes the servers among `ids` that are in ERROR and says why as a
    /// capacity error, so the engine fails over to the next zone instead of
    /// recording a broken node. ERROR is ECS's failure state ("ECS
    /// Statuses", support.huaweicloud.com/api-ecs/ecs_08_0002.html: "An exception
    /// has occurred on the ECS"); right after CreateServers it means this
    /// zone could not build it.
    async fn remove_failed(
        &self,
        region: &str,
        pid: &str,
        ids: &[String],
    ) -> Result<Option<ProviderError>, ProviderError> {
        if ids.is_empty() {
            return Ok(None);
        }
        let set: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let broken: Vec<ObservedResource> = self
            .observe(region, ResourceKind::Instance, &Filter::Ids(set))
            .await?
            .into_iter()
            .filter(|o| o.status == "error")
            .collect();
        if broken.is_empty() {
            return Ok(None);
        }
        let v = self
            .send(
                Call::new(Service::Ecs, region, "POST", format!("/v1/{pid}/cloudservers/delete"))
                    .body(json!({"servers": broken.iter().map(|o| json!({"id": o.id})).collect::<Vec<_>>(),
                                 "delete_publicip": true, "delete_volume": false})),
            )
            .await?;
        self.client
            .wait_job(Service::Ecs, region, pid, &s(&v, "job_id"))
            .await?;
        let names: Vec<&str> = broken.iter().map(|o| o.id.as_str()).collect();
        Ok(Some(
            ProviderError::new(
                ErrorKind::Capacity,
                format!(
                    "server {} went to ERROR after CreateServers and was deleted; this zone could not build it",
                    names.join(", ")
                ),
            )
            .with_code("ERROR"),
        ))
    }

    async fn wait_job(
        &self,
        svc: Service,
        region: &str,
        pid: &str,
        job_id: &str,
        order: Option<&Value>,
    ) -> Result<Value, ProviderError> {
        match self.client.wait_job(svc, region, pid, job_id).await {
            Err(e) if e.code.as_deref() == Some("PENDING_PAYMENT") => Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("the yearly/monthly order {} awaits payment (job {job_id} is PENDING_PAYMENT)\n  hint: pay it in the Billing Center (or top up the balance auto-pay draws on), then apply again", order.and_then(Value::as_str).unwrap_or("?")),
            )
            .with_code("PENDING_PAYMENT")),
            other => other,
        }
    }

    /// "Creating EVS Disks", POST /v2.1/{project_id}/cloudvolumes
    /// (support.huaweicloud.com/api-evs/evs_04_2003.html, asynchronous: job on
    /// the EVS endpoint), then "Attaching an EVS Disk to an ECS", POST
    /// /v1/{project_id}/cloudservers/{server_id}/attachvolume
    /// (support.huaweicloud.com/api-ecs/ecs_02_0605.html, an ECS job).
    async fn create_volume(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = req.scope.region.as_str();
        let pid = self.project(region)?;
        let a = &req.attrs;
        let zone = required(a, "zone", req.kind)?;
        let size = a.get("size_gb").and_then(Value::as_u64).ok_or_else(|| {
            ProviderError::new(ErrorKind::Invalid, "volume needs a numeric `size_gb`")
        })?;
        let vtype = volume_type_to_huawei(attr_str(a, "volume_type").unwrap_or("ssd"));
        let server = reference(req, "instance")?;
        let name = name_for(&req.ownership.token);
        let tag_list = all_tags(req)?;
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
                    "volume": {"name": name, "availability_zone": zone, "size": size, "volume_type": vtype, "tags": tag_map},
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
                self.volume(region, pid, &id).await?
            }
        };
        let id = s(&vol, "id");
        if attachment(&vol).as_deref() != Some(server) {
            self.attach_volume(region, pid, &id, server).await?;
        }
        Ok(observe_volume(
            &self.volume(region, pid, &id).await?,
            region,
        ))
    }

    /// "Attaching an EVS Disk to an ECS", POST
    /// /v1/{project_id}/cloudservers/{server_id}/attachvolume: a job.
    async fn attach_volume(
        &self,
        region: &str,
        pid: &str,
        id: &str,
        server: &str,
    ) -> Result<(), ProviderError> {
        let v = self
            .send(
                Call::new(
                    Service::Ecs,
                    region,
                    "POST",
                    format!("/v1/{pid}/cloudservers/{server}/attachvolume"),
                )
                .body(json!({"volumeAttachment": {"volumeId": id}})),
            )
            .await?;
        self.client
            .wait_job(Service::Ecs, region, pid, &s(&v, "job_id"))
            .await?;
        Ok(())
    }

    /// "Detaching an EVS Disk from an ECS", DELETE
    /// /v1/{project_id}/cloudservers/{server_id}/detachvolume/{volume_id}, from
    /// every server the disk's `attachments` name.
    async fn detach_volume(
        &self,
        region: &str,
        pid: &str,
        id: &str,
        vol: &Value,
    ) -> Result<(), ProviderError> {
        for at in vol
            .get("attachments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let server = s(at, "server_id");
            match self
                .send(Call::new(
                    Service::Ecs,
                    region,
                    "DELETE",
                    format!("/v1/{pid}/cloudservers/{server}/detachvolume/{id}"),
                ))
                .await
            {
                Ok(v) => {
                    self.client
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
    async fn volume(&self, region: &str, pid: &str, id: &str) -> Result<Value, ProviderError> {
        let v = self
            .send(Call::new(
                Service::Evs,
                region,
                "GET",
                format!("/v2/{pid}/cloudvolumes/{id}"),
            ))
            .await?;
        Ok(v.get("volume").cloned().unwrap_or(Value::Null))
    }

    // ----- delete ---------------------------------------------------------------

    async fn delete_inner(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
    ) -> Result<(), ProviderError> {
        let pid = self.project(region)?;
        let del = |svc, path: String| Call::new(svc, region, "DELETE", path);
        match kind {
            // "Deleting a VPC", DELETE /v1/{project_id}/vpcs/{vpc_id}.
            ResourceKind::Network => {
                self.send(del(Service::Vpc, format!("/v1/{pid}/vpcs/{id}")))
                    .await?;
            }
            // "Deleting a Subnet", DELETE /v1/{project_id}/vpcs/{vpc_id}/subnets/{subnet_id}.
            ResourceKind::Subnet => {
                let sn = self
                    .send(Call::new(
                        Service::Vpc,
                        region,
                        "GET",
                        format!("/v1/{pid}/subnets/{id}"),
                    ))
                    .await?;
                let vpc = s(sn.get("subnet").unwrap_or(&Value::Null), "vpc_id");
                self.send(del(
                    Service::Vpc,
                    format!("/v1/{pid}/vpcs/{vpc}/subnets/{id}"),
                ))
                .await?;
            }
            // "Deleting a Security Group", DELETE /v1/{project_id}/security-groups/{id}.
            ResourceKind::Firewall => {
                self.send(del(Service::Vpc, format!("/v1/{pid}/security-groups/{id}")))
                    .await?;
            }
            // "Deleting an ECS Group", DELETE /v1/{project_id}/cloudservers/os-server-groups/{id}.
            ResourceKind::Placement => {
                self.send(del(
                    Service::Ecs,
                    format!("/v1/{pid}/cloudservers/os-server-groups/{id}"),
                ))
                .await?;
            }
            // "Deleting ECSs", POST /v1/{project_id}/cloudservers/delete
            // (support.huaweicloud.com/api-ecs/ecs_02_0103.html), a job.
            ResourceKind::Instance => {
                let sv = self
                    .send(Call::new(
                        Service::Ecs,
                        region,
                        "GET",
                        format!("/v1/{pid}/cloudservers/{id}"),
                    ))
                    .await?;
                let server = sv.get("server").unwrap_or(&Value::Null);
                if matches!(s(server, "status").as_str(), "DELETED" | "SOFT_DELETED") {
                    return Ok(());
                }
                if let Some(e) = undeletable(server) {
                    return Err(e);
                }
                // `delete_volume: false`: data disks are detached and kept
                // ("Deleting ECSs": "If you set the parameter value to false,
                // the system only detaches the disks from the ECS and reserves
                // the disks"); the system disk goes with the server. gpuform
                // deletes its own data disks as their own resources, and a disk
                // someone attached outside gpuform is not ours to delete.
                let v = self
                    .send(
                        Call::new(Service::Ecs, region, "POST", format!("/v1/{pid}/cloudservers/delete"))
                            .body(json!({"servers": [{"id": id}], "delete_publicip": true, "delete_volume": false})),
                    )
                    .await?;
                self.client
                    .wait_job(Service::Ecs, region, pid, &s(&v, "job_id"))
                    .await?;
            }
            // Detach ("Detaching an EVS Disk from an ECS", DELETE
            // /v1/{project_id}/cloudservers/{server_id}/detachvolume/{volume_id}),
            // then "Deleting an EVS Disk", DELETE /v2/{project_id}/cloudvolumes/{volume_id}.
            ResourceKind::Volume => {
                let vol = self.volume(region, pid, id).await?;
                self.detach_volume(region, pid, id, &vol).await?;
                let v = self
                    .send(del(Service::Evs, format!("/v2/{pid}/cloudvolumes/{id}")))
                    .await?;
                let job = s(&v, "job_id");
                if !job.is_empty() {
                    self.client
                        .wait_job(Service::Evs, region, pid, &job)
                        .await?;
                }
            }
            ResourceKind::Bucket => return Err(bucket_unsupported()),
        }
        Ok(())
    }

    // ----- update ---------------------------------------------------------------

    async fn update_tags(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
        new: &Value,
    ) -> Result<(), ProviderError> {
        let pid = self.project(region)?;
        let current = self.read_one(region, kind, id).await?;
        let old: Vec<(String, String)> = current
            .attrs
            .get("tags")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        let mut want_attrs = Attrs::new();
        want_attrs.insert("tags".into(), new.clone());
        let want = tags::user_tags(&want_attrs)?;
        let remove: Vec<(String, String)> = old
            .iter()
            .filter(|(k, _)| !want.iter().any(|(w, _)| w == k))
            .cloned()
            .collect();
        let add: Vec<(String, String)> =
            want.iter().filter(|w| !old.contains(w)).cloned().collect();
        let (svc, base) = match kind {
            ResourceKind::Network => (Service::Vpc, format!("/v2.0/{pid}/vpcs/{id}")),
            ResourceKind::Subnet => (Service::Vpc, format!("/v2.0/{pid}/subnets/{id}")),
            ResourceKind::Firewall => (Service::Vpc, format!("/v2.0/{pid}/security-groups/{id}")),
            // "Batch Adding ECS Tags", POST /v1/{project_id}/cloudservers/{server_id}/tags/action.
            ResourceKind::Instance => (Service::Ecs, format!("/v1/{pid}/cloudservers/{id}")),
            // "Batch Adding Tags to an EVS Disk", POST /v2/{project_id}/cloudvolumes/{volume_id}/tags/action.
            ResourceKind::Volume => (Service::Evs, format!("/v2/{pid}/cloudvolumes/{id}")),
            ResourceKind::Placement => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    "Huawei ECS groups cannot carry tags",
                ))
            }
            ResourceKind::Bucket => return Err(bucket_unsupported()),
        };
        for (action, list) in [("delete", remove), ("create", add)] {
            if list.is_empty() {
                continue;
            }
            let tags: Vec<Value> = list
                .iter()
                .map(|(k, v)| json!({"key": k, "value": v}))
                .collect();
            self.send(
                Call::new(svc, region, "POST", format!("{base}/tags/action"))
                    .body(json!({"action": action, "tags": tags})),
            )
            .await?;
        }
        Ok(())
    }
}

/// Why DeleteServers would refuse this server, if it would: "Only ECSs
/// billed in the pay-per-use mode can be deleted" ("Deleting ECSs",
/// support.huaweicloud.com/intl/en-us/api-ecs/ecs_02_0103.html).
/// Yearly/monthly servers (`metadata.charging_mode` = "1", "Querying ECS
/// Details") end by unsubscription in the Billing Center.
pub fn undeletable(server: &Value) -> Option<ProviderError> {
    let md = server.get("metadata").unwrap_or(&Value::Null);
    (s(md, "charging_mode") == "1").then(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "server {} is yearly/monthly (prepaid): DeleteServers only deletes pay-per-use servers\n  hint: unsubscribe it in the Billing Center (Orders > Unsubscriptions); gpuform then sees it gone",
                s(server, "id")
            ),
        )
        .with_code("Ecs.0513")
    })
}

fn bucket_unsupported() -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        "buckets are not supported by the Huawei Cloud provider yet (OBS is a separate S3-style API)",
    )
}

fn rule_body(sg: &str, i: &Value) -> Result<Value, ProviderError> {
    let proto = i
        .get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("tcp")
        .to_ascii_lowercase();
    let cidr = i.get("cidr").and_then(Value::as_str).ok_or_else(|| {
        ProviderError::new(ErrorKind::Invalid, "firewall ingress rule needs a `cidr`")
    })?;
    let from = i.get("from_port").and_then(Value::as_u64);
    let to = i.get("to_port").and_then(Value::as_u64);
    let mut r = json!({
        "security_group_id": sg,
        "direction": "ingress",
        "ethertype": "IPv4",
        "protocol": proto,
        "remote_ip_prefix": cidr,
    });
    match proto.as_str() {
        "tcp" | "udp" => {
            r["port_range_min"] = json!(from);
            r["port_range_max"] = json!(to);
        }
        "icmp" => {
            // ICMP rules have no ports; keep the spec's range in the description
            // so the rule reads back as it was asked.
            if let (Some(f), Some(t)) = (from, to) {
                r["description"] = json!(format!("gpuform-ports={f}-{t}"));
            }
        }
        other => {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("protocol `{other}` is not tcp, udp or icmp"),
            ))
        }
    }
    Ok(r)
}

fn same_rule(want: &Value, have: &Value) -> bool {
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    s(want, "protocol") == s(have, "protocol")
        && s(want, "remote_ip_prefix") == s(have, "remote_ip_prefix")
        && n(want, "port_range_min") == n(have, "port_range_min")
        && n(want, "port_range_max") == n(have, "port_range_max")
}

/// The `ingress` attribute as observed: CIDR ingress rules, in the group's order.
fn observed_ingress(sg: &Value) -> Value {
    let mut out = Vec::new();
    for r in sg
        .get("security_group_rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if s(r, "direction") != "ingress" || s(r, "remote_ip_prefix").is_empty() {
            continue;
        }
        let proto = s(r, "protocol");
        let (mut from, mut to) = (
            r.get("port_range_min").cloned().unwrap_or(Value::Null),
            r.get("port_range_max").cloned().unwrap_or(Value::Null),
        );
        if let Some((f, t)) = s(r, "description")
            .strip_prefix("gpuform-ports=")
            .and_then(|p| p.split_once('-'))
        {
            if let (Ok(f), Ok(t)) = (f.parse::<u64>(), t.parse::<u64>()) {
                from = json!(f);
                to = json!(t);
            }
        }
        out.push(json!({"protocol": proto, "from_port": from, "to_port": to, "cidr": s(r, "remote_ip_prefix")}));
    }
    // The members' rule: ingress from the group itself (`remote_group_id`).
    let own = s(sg, "id");
    let members = sg
        .get("security_group_rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            s(r, "direction") == "ingress" && !own.is_empty() && s(r, "remote_group_id") == own
        });
    if !members {
        out.push(gpuform_provider::resource::member_rule_missing());
    }
    Value::Array(out)
}

/// The server a disk is attached to: the first of its `attachments`
/// ("Querying Details About an EVS Disk": server_id per attachment).
fn attachment(v: &Value) -> Option<String> {
    v.get("attachments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|at| s(at, "server_id"))
        .find(|sid| !sid.is_empty())
}

/// A server's system disk: EVS reports it `bootable` ("Querying EVS Disks
/// (Batch)", support.huaweicloud.com/api-evs/evs_04_2006.html). gpuform's data
/// disks are made empty, never from an image, so they are never bootable.
fn is_system_disk(v: &Value) -> bool {
    s(v, "bootable") == "true"
}

fn observe_volume(v: &Value, region: &str) -> ObservedResource {
    let tag_list: Vec<(String, String)> = v
        .get("tags")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, val)| (k.clone(), val.as_str().unwrap_or_default().to_string()))
        .collect();
    let mut a = Attrs::new();
    a.insert("zone".into(), json!(s(v, "availability_zone")));
    if let Some(n) = v.get("size").and_then(Value::as_u64) {
        a.insert("size_gb".into(), json!(n));
    }
    a.insert(
        "volume_type".into(),
        json!(volume_type_from_huawei(&s(v, "volume_type"))),
    );
    a.insert(
        "attached_to".into(),
        attachment(v).map_or(Value::Null, Value::String),
    );
    observed(
        ResourceKind::Volume,
        &s(v, "id"),
        region,
        Some(&tag_list),
        a,
        &s(v, "status"),
    )
}

/// An ECS from the v1 detail listing. `tags` there are `key=value` strings.
fn observe_server(sv: &Value, region: &str, root_sizes: &HashMap<String, u64>) -> ObservedResource {
    let tag_list: Vec<(String, String)> = sv
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|t| {
            t.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let md = sv.get("metadata").cloned().unwrap_or(Value::Null);
    let mut a = Attrs::new();
    if let Some(f) = sv.pointer("/flavor/id").and_then(Value::as_str) {
        a.insert("instance_type".into(), json!(f));
    }
    a.insert("zone".into(), json!(s(sv, "OS-EXT-AZ:availability_zone")));
    let image = match s(&md, "gpuform_image") {
        i if !i.is_empty() => i,
        _ => sv
            .pointer("/image/id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    };
    a.insert("image".into(), json!(image));
    let asked = s(&md, "gpuform_pricing");
    let pricing = match s(&md, "charging_mode").as_str() {
        "0" => "on-demand".to_string(),
        "2" => "spot".to_string(),
        "1" if asked.starts_with("reserved-") => asked,
        "1" => "reserved-1y".to_string(),
        _ => asked,
    };
    if !pricing.is_empty() {
        a.insert("pricing".into(), json!(pricing));
    }
    let boot = sv
        .get("os-extended-volumes:volumes_attached")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| s(v, "bootIndex") == "0")
        .map(|v| s(v, "id"));
    if let Some(size) = boot.and_then(|b| root_sizes.get(&b)) {
        a.insert("root_gb".into(), json!(size));
    }
    if let Some(u) = sv.get("OS-EXT-SRV-ATTR:user_data").and_then(Value::as_str) {
        if let Some(text) = base64::engine::general_purpose::STANDARD
            .decode(u)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        {
            a.insert("user_data".into(), json!(text));
        }
    }
    observed(
        ResourceKind::Instance,
        &s(sv, "id"),
        region,
        Some(&tag_list),
        a,
        &s(sv, "status"),
    )
}

#[async_trait]
impl Provider for HuaweiProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Huawei
    }

    fn label(&self) -> String {
        "huawei".into()
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    /// See [`DEFAULT_SETTLE`]: a new EVS disk may not be found until its job
    /// has made it, and EVS creates take no idempotency token.
    fn settle_time(&self) -> std::time::Duration {
        self.settle
    }

    /// Yearly/monthly servers: DeleteServers deletes pay-per-use ones only
    /// (see [`undeletable`]); refresh reads the billing mode into `pricing`.
    fn delete_refusal(&self, observed: &ObservedResource) -> Option<String> {
        let reserved = observed
            .attrs
            .get("pricing")
            .and_then(Value::as_str)
            .is_some_and(|p| p.starts_with("reserved-"));
        (observed.kind == ResourceKind::Instance && reserved).then(|| {
            format!(
                "server {} is yearly/monthly (prepaid) and DeleteServers only deletes pay-per-use servers (\"Deleting ECSs\", api-ecs/ecs_02_0103.html); unsubscribe it in the Billing Center first (Orders > Unsubscriptions), then plan again",
                observed.id
            )
        })
    }

    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        match req.kind {
            ResourceKind::Network => self.create_network(req).await,
            ResourceKind::Subnet => self.create_subnet(req).await,
            ResourceKind::Firewall => self.create_firewall(req).await,
            ResourceKind::Placement => self.create_placement(req).await,
            ResourceKind::Instance => self.create_instance(req).await,
            ResourceKind::Volume => self.create_volume(req).await,
            ResourceKind::Bucket => Err(bucket_unsupported()),
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
        let set: HashSet<&str> = ids.iter().map(String::as_str).collect();
        self.observe(&scope.region, kind, &Filter::Ids(set)).await
    }

    async fn list_owned(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let mut out = Vec::new();
        for kind in [
            ResourceKind::Network,
            ResourceKind::Subnet,
            ResourceKind::Firewall,
            ResourceKind::Instance,
            ResourceKind::Volume,
        ] {
            out.extend(
                self.observe(&scope.region, kind, &Filter::Project(project))
                    .await?,
            );
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
        let region = scope.region.as_str();
        for k in changes.keys() {
            if !kind.is_updatable(k) {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("`{k}` of a {kind} cannot change in place"),
                ));
            }
        }
        if let Some(t) = changes.get("tags") {
            self.update_tags(region, kind, id, t).await?;
        }
        if let (ResourceKind::Firewall, Some(ingress)) = (kind, changes.get("ingress")) {
            let pid = self.project(region)?;
            let v = self
                .send(Call::new(
                    Service::Vpc,
                    region,
                    "GET",
                    format!("/v1/{pid}/security-groups/{id}"),
                ))
                .await?;
            self.sync_rules(
                region,
                pid,
                v.get("security_group").unwrap_or(&Value::Null),
                ingress,
            )
            .await?;
        }
        if let (ResourceKind::Volume, Some(target)) = (kind, changes.get("attached_to")) {
            let pid = self.project(region)?;
            // A disk adopted after a crash may still be `creating` (CreateVolume
            // answers before it is usable); attach only once it is `available`.
            let mut vol = self.volume(region, pid, id).await?;
            for _ in 0..120 {
                if s(&vol, "status") != "creating" {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                vol = self.volume(region, pid, id).await?;
            }
            let want = match target {
                Value::Null => None,
                Value::String(i) => Some(i.as_str()),
                other => {
                    return Err(ProviderError::new(
                        ErrorKind::Invalid,
                        format!("`attached_to` must be a server id or null, got {other}"),
                    ))
                }
            };
            if attachment(&vol).as_deref() != want {
                self.detach_volume(region, pid, id, &vol).await?;
                if let Some(server) = want {
                    self.attach_volume(region, pid, id, server).await?;
                }
            }
        }
        if let (ResourceKind::Volume, Some(size)) = (kind, changes.get("size_gb")) {
            let pid = self.project(region)?;
            let new = size.as_u64().ok_or_else(|| {
                ProviderError::new(ErrorKind::Invalid, "size_gb must be a number")
            })?;
            let vol = self.volume(region, pid, id).await?;
            let old = vol.get("size").and_then(Value::as_u64).unwrap_or(0);
            if new < old {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("EVS disks cannot shrink ({old} GB → {new} GB)"),
                ));
            }
            if new > old {
                // "Expanding EVS Disk Capacity", POST /v2.1/{project_id}/cloudvolumes/{volume_id}/action.
                let v = self
                    .send(
                        Call::new(
                            Service::Evs,
                            region,
                            "POST",
                            format!("/v2.1/{pid}/cloudvolumes/{id}/action"),
                        )
                        .body(json!({"os-extend": {"new_size": new}})),
                    )
                    .await?;
                self.client
                    .wait_job(Service::Evs, region, pid, &s(&v, "job_id"))
                    .await?;
            }
        }
        self.read_one(region, kind, id).await
    }

    async fn delete(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
    ) -> Result<(), ProviderError> {
        match self.delete_inner(&scope.region, kind, id).await {
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway() {
        assert_eq!(gateway_of("10.0.0.0/24").unwrap(), "10.0.0.1");
        assert_eq!(gateway_of("10.0.7.0/20").unwrap(), "10.0.0.1");
        assert!(gateway_of("nope").is_err());
    }

    #[test]
    fn env_errors_name_variables_and_debug_hides_secret() {
        let e = HuaweiProvider::from_vars(vec![]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(e.message.contains(ENV_AK) && e.message.contains(ENV_SK));
        let e = HuaweiProvider::from_vars(vec![
            (ENV_AK.into(), "ak".into()),
            (ENV_SK.into(), "sk".into()),
        ])
        .unwrap_err();
        assert!(e.message.contains(ENV_PROJECT_ID));
        let p = HuaweiProvider::from_vars(vec![
            (ENV_AK.into(), "AKVALUE".into()),
            (ENV_SK.into(), "TOPSECRET".into()),
            (format!("{ENV_PROJECT_ID}_CN_NORTH_4"), "p4".into()),
        ])
        .unwrap();
        assert!(!format!("{p:?}").contains("TOPSECRET"));
        assert_eq!(p.project("cn-north-4").unwrap(), "p4");
        assert_eq!(p.project("cn-east-3").unwrap_err().kind, ErrorKind::Auth);
    }

    #[test]
    fn client_token_is_a_stable_uuid() {
        let t = "gf-0123456789abcdef0123456789abcdef";
        let a = client_token(t, "cn-north-4a");
        assert!(looks_like_uuid(&a), "{a}");
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
    fn uuid_shape() {
        assert!(looks_like_uuid("0a1b2c3d-0000-1111-2222-333344445555"));
        assert!(!looks_like_uuid("ubuntu-22.04-cuda"));
    }
}
