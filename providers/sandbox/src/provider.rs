//! `Provider` for the sandbox: validation against the mirrored cloud's
//! catalog, resource semantics (refs, dependencies, idempotency), and
//! cloud-like ids and error codes.

use crate::cloud::{attrs_json, burst_of, Inner, SandboxCloud};
use crate::ids::make_id;
use crate::store::{delete_line, set_line, CreateRec, Entry, MEMBERS_KEY};
use gpuform_catalog::{Catalog, Region};
use gpuform_provider::provider::RateLimit;
use gpuform_provider::{
    Attrs, Cloud, CreateRequest, ErrorKind, ObservedResource, Provider, ProviderError,
    ResourceKind, Scope,
};
use std::sync::Arc;

/// Results per page of `read` and `list_owned`; each page is one API call.
pub const PAGE_SIZE: usize = 1000;

/// What went wrong, to pick the mirrored cloud's error code.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Code {
    Region,
    Zone,
    InstanceType,
    NotOffered,
    Missing,
    BadValue,
    NotFound(ResourceKind),
    Dependency,
    Quota,
    Capacity,
    Throttled,
    Transient,
    Mismatch,
    BucketExists,
}

pub(crate) fn code(cloud: Cloud, c: Code) -> &'static str {
    use Cloud::*;
    use ResourceKind as K;
    match (c, cloud) {
        (Code::Region, Aws) => "InvalidParameterValue",
        (Code::Region, Alibaba) => "InvalidRegionId.NotFound",
        (Code::Region, Tencent) => "UnsupportedRegion",
        (Code::Region, Huawei) => "InvalidRegion",
        (Code::Zone, Aws) => "InvalidParameterValue",
        (Code::Zone, Alibaba) => "InvalidZoneId.NotFound",
        (Code::Zone, Tencent) => "InvalidZone.MismatchRegion",
        (Code::Zone, Huawei) => "InvalidAvailabilityZone",
        (Code::InstanceType, Aws) => "InvalidInstanceType",
        (Code::InstanceType, Alibaba) => "InvalidInstanceType.NotFound",
        (Code::InstanceType, Tencent) => "InvalidInstanceType",
        (Code::InstanceType, Huawei) => "InvalidFlavor",
        (Code::NotOffered, Aws) => "Unsupported",
        (Code::NotOffered, Alibaba) => "InvalidInstanceType.NotSupported",
        (Code::NotOffered, Tencent) => "InvalidInstanceType.NotSupported",
        (Code::NotOffered, Huawei) => "FlavorNotSupported",
        (Code::Missing, Huawei) => "InvalidParameter",
        (Code::Missing, _) => "MissingParameter",
        (Code::BadValue, Alibaba) | (Code::BadValue, Huawei) => "InvalidParameter",
        (Code::BadValue, _) => "InvalidParameterValue",
        (Code::NotFound(K::Bucket), _) => "NoSuchBucket",
        (Code::NotFound(k), Aws) => match k {
            K::Network => "InvalidVpcID.NotFound",
            K::Subnet => "InvalidSubnetID.NotFound",
            K::Firewall => "InvalidGroup.NotFound",
            K::Placement => "InvalidPlacementGroup.Unknown",
            K::Instance => "InvalidInstanceID.NotFound",
            _ => "InvalidVolume.NotFound",
        },
        (Code::NotFound(k), Alibaba) => match k {
            K::Network => "InvalidVpcId.NotFound",
            K::Subnet => "InvalidVSwitchId.NotFound",
            K::Firewall => "InvalidSecurityGroupId.NotFound",
            K::Placement => "InvalidDeploymentSetId.NotFound",
            K::Instance => "InvalidInstanceId.NotFound",
            _ => "InvalidDiskId.NotFound",
        },
        (Code::NotFound(_), _) => "ResourceNotFound",
        (Code::Dependency, Aws) | (Code::Dependency, Alibaba) => "DependencyViolation",
        (Code::Dependency, _) => "ResourceInUse",
        (Code::Quota, Aws) => "VcpuLimitExceeded",
        (Code::Quota, Alibaba) => "QuotaExceed.ElasticQuota",
        (Code::Quota, Tencent) => "LimitExceeded.InstanceQuota",
        (Code::Quota, Huawei) => "QuotaExceeded",
        (Code::Capacity, Aws) => "InsufficientInstanceCapacity",
        (Code::Capacity, Alibaba) => "OperationDenied.NoStock",
        (Code::Capacity, Tencent) => "ResourceInsufficient.SpecifiedInstanceType",
        (Code::Capacity, Huawei) => "InsufficientCapacity",
        (Code::Throttled, Alibaba) => "Throttling.User",
        (Code::Throttled, Huawei) => "APIGW.0308",
        (Code::Throttled, _) => "RequestLimitExceeded",
        (Code::Transient, Alibaba) => "ServiceUnavailable",
        (Code::Transient, Huawei) => "InternalServerError",
        (Code::Transient, _) => "InternalError",
        (Code::Mismatch, Tencent) | (Code::Mismatch, Huawei) => "InvalidParameter",
        (Code::Mismatch, _) => "IdempotentParameterMismatch",
        (Code::BucketExists, _) => "BucketAlreadyExists",
    }
}

/// A provider that mirrors one cloud.
pub(crate) struct SandboxProvider {
    sandbox: Arc<SandboxCloud>,
    cloud: Cloud,
}

impl SandboxProvider {
    pub fn new(sandbox: Arc<SandboxCloud>, cloud: Cloud) -> Self {
        SandboxProvider { sandbox, cloud }
    }

    async fn latency(&self, calls: u64) {
        let l = self.sandbox.faults.latency;
        if !l.is_zero() && calls > 0 {
            tokio::time::sleep(l.saturating_mul(u32::try_from(calls).unwrap_or(u32::MAX))).await;
        }
    }

    /// Runs one operation of `pages` calls under the lock: faults first,
    /// then `op`, then the crash point.
    fn run<T>(
        &self,
        inner: &mut Inner,
        pages: u64,
        op: impl FnOnce(&mut Inner) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        let (call, check) = self.sandbox.begin(inner, self.cloud, pages);
        let result = check.and_then(|()| op(inner));
        self.sandbox.end(&call);
        result.map_err(|e| e.with_request_id(call.request_id))
    }
}

fn pages_for(n: usize) -> u64 {
    n.div_ceil(PAGE_SIZE).max(1) as u64
}

#[async_trait::async_trait]
impl Provider for SandboxProvider {
    fn cloud(&self) -> Cloud {
        self.cloud
    }

    fn label(&self) -> String {
        format!("sandbox({})", self.cloud)
    }

    fn rate_limit(&self) -> RateLimit {
        match self.sandbox.faults.rate_per_second {
            Some(r) => RateLimit {
                per_second: r,
                burst: burst_of(r),
            },
            None => RateLimit {
                per_second: 100_000.0,
                burst: 10_000,
            },
        }
    }

    /// Volumes and firewalls are made in two calls, as on the clouds
    /// (CreateVolume + AttachVolume, CreateSecurityGroup +
    /// AuthorizeSecurityGroupIngress), so a crash between them leaves what
    /// a real cloud would: a detached volume, a group without rules. A
    /// retry with the same token finds the resource and does the rest.
    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        self.latency(1).await;
        let faults = &self.sandbox.faults;
        let made = {
            let mut inner = self.sandbox.lock();
            self.run(&mut inner, 1, |inner| {
                create(inner, self.cloud, faults, req)
            })?
        };
        let second_step = match req.kind {
            ResourceKind::Volume => {
                let instance = req.refs.get("instance").cloned().unwrap_or_default();
                (made.attrs.get("attached_to").and_then(|v| v.as_str()) != Some(instance.as_str()))
                    .then_some(("attached_to", serde_json::Value::String(instance)))
            }
            ResourceKind::Firewall => {
                let ingress = req
                    .attrs
                    .get("ingress")
                    .cloned()
                    .unwrap_or(serde_json::json!([]));
                (made.attrs.get("ingress") != Some(&ingress)).then_some(("ingress", ingress))
            }
            _ => None,
        };
        let Some((key, value)) = second_step else {
            return Ok(made);
        };
        self.latency(1).await;
        let mut inner = self.sandbox.lock();
        let changes: Attrs = [(key.to_string(), value)].into_iter().collect();
        self.run(&mut inner, 1, |inner| {
            update(inner, self.cloud, &req.scope, req.kind, &made.id, &changes)
        })
    }

    async fn read(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let pages = pages_for(ids.len());
        self.latency(pages).await;
        let mut inner = self.sandbox.lock();
        self.run(&mut inner, pages, |inner| {
            let cs = inner.store.cloud(self.cloud);
            Ok(ids
                .iter()
                .filter_map(|id| {
                    let e = cs.by_id.get(id.as_str())?;
                    (e.kind == kind && *e.region == *scope.region).then(|| cs.observe(id, e))
                })
                .collect())
        })
    }

    async fn list_owned(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let result = {
            let mut inner = self.sandbox.lock();
            // Catch up with other processes before counting pages.
            let _ = inner.sync();
            let count = owned_ids(&inner, self.cloud, scope, project).map_or(0, |s| s.len());
            let pages = pages_for(count);
            self.run(&mut inner, pages, |inner| {
                let cs = inner.store.cloud(self.cloud);
                Ok(owned_ids(inner, self.cloud, scope, project)
                    .map(|ids| {
                        ids.iter()
                            .filter_map(|id| cs.by_id.get(id).map(|e| cs.observe(id, e)))
                            .collect()
                    })
                    .unwrap_or_default())
            })
            .map(|r: Vec<ObservedResource>| (r, pages))
        };
        let (resources, pages) = result?;
        self.latency(pages).await;
        Ok(resources)
    }

    async fn update(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
        changes: &Attrs,
    ) -> Result<ObservedResource, ProviderError> {
        self.latency(1).await;
        let mut inner = self.sandbox.lock();
        self.run(&mut inner, 1, |inner| {
            update(inner, self.cloud, scope, kind, id, changes)
        })
    }

    async fn delete(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
    ) -> Result<(), ProviderError> {
        self.latency(1).await;
        let mut inner = self.sandbox.lock();
        self.run(&mut inner, 1, |inner| {
            delete(inner, self.cloud, scope, kind, id)
        })
    }
}

fn owned_ids<'a>(
    inner: &'a Inner,
    cloud: Cloud,
    scope: &Scope,
    project: &str,
) -> Option<&'a std::collections::BTreeSet<Box<str>>> {
    inner
        .store
        .cloud(cloud)
        .owned
        .get(scope.region.as_str())?
        .get(project)
}

fn perr(cloud: Cloud, kind: ErrorKind, c: Code, message: impl Into<String>) -> ProviderError {
    ProviderError::new(kind, message).with_code(code(cloud, c))
}

fn invalid(cloud: Cloud, c: Code, message: impl Into<String>) -> ProviderError {
    perr(cloud, ErrorKind::Invalid, c, message)
}

fn internal(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::new(ErrorKind::Transient, format!("sandbox inventory: {e}"))
}

fn list(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let v: Vec<String> = items.into_iter().map(|s| s.as_ref().to_string()).collect();
    if v.is_empty() {
        "(none)".to_string()
    } else {
        v.join(", ")
    }
}

fn opt_str<'a>(
    cloud: Cloud,
    attrs: &'a Attrs,
    key: &str,
) -> Result<Option<&'a str>, ProviderError> {
    match attrs.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(
            cloud,
            Code::BadValue,
            format!("attribute `{key}` must be a string, got {other}"),
        )),
    }
}

fn req_str<'a>(
    cloud: Cloud,
    kind: ResourceKind,
    attrs: &'a Attrs,
    key: &str,
) -> Result<&'a str, ProviderError> {
    opt_str(cloud, attrs, key)?.ok_or_else(|| {
        invalid(
            cloud,
            Code::Missing,
            format!("a {kind} needs the attribute `{key}`"),
        )
    })
}

fn check_zone<'a>(
    cloud: Cloud,
    region: &Region,
    attrs: &'a Attrs,
    kind: ResourceKind,
) -> Result<&'a str, ProviderError> {
    let zone = req_str(cloud, kind, attrs, "zone")?;
    if !region.zones.iter().any(|z| z == zone) {
        return Err(invalid(
            cloud,
            Code::Zone,
            format!(
                "zone `{zone}` is not in region {} of {cloud}; its zones are: {}",
                region.name,
                list(&region.zones)
            ),
        ));
    }
    Ok(zone)
}

/// The kind a ref role must point to.
fn role_kind(role: &str) -> Option<ResourceKind> {
    Some(match role {
        "network" => ResourceKind::Network,
        "subnet" => ResourceKind::Subnet,
        "firewall" => ResourceKind::Firewall,
        "placement" => ResourceKind::Placement,
        "instance" => ResourceKind::Instance,
        "volume" => ResourceKind::Volume,
        "bucket" => ResourceKind::Bucket,
        _ => return None,
    })
}

/// The ref roles a kind must have.
fn required_roles(kind: ResourceKind) -> &'static [&'static str] {
    match kind {
        ResourceKind::Subnet | ResourceKind::Firewall => &["network"],
        ResourceKind::Instance => &["subnet", "firewall"],
        ResourceKind::Volume => &["instance"],
        _ => &[],
    }
}

fn lookup_ref<'a>(
    inner: &'a Inner,
    cloud: Cloud,
    region: &str,
    role: &str,
    want: ResourceKind,
    id: &str,
) -> Result<&'a Entry, ProviderError> {
    match inner.store.get(cloud, id) {
        Some(e) if e.kind == want && *e.region == *region => Ok(e),
        Some(e) if e.kind != want => Err(invalid(
            cloud,
            Code::BadValue,
            format!("ref `{role}` = `{id}` is a {}, not a {want}", e.kind),
        )),
        _ => Err(perr(
            cloud,
            ErrorKind::NotFound,
            Code::NotFound(want),
            format!("the {want} `{id}` (ref `{role}`) does not exist in region {region}"),
        )),
    }
}

fn parse_cidr(s: &str) -> Option<(u32, u8)> {
    let (addr, len) = s.split_once('/')?;
    let len: u8 = len.parse().ok()?;
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    if len > 32 {
        return None;
    }
    let ip = u32::from(ip);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    (ip & !mask == 0).then_some((ip, len))
}

fn check_cidr(cloud: Cloud, kind: ResourceKind, cidr: &str) -> Result<(u32, u8), ProviderError> {
    let (ip, len) = parse_cidr(cidr).ok_or_else(|| {
        invalid(
            cloud,
            Code::BadValue,
            format!("`{cidr}` is not a valid IPv4 CIDR block for a {kind} (e.g. 10.0.0.0/16, host bits zero)"),
        )
    })?;
    if !(16..=28).contains(&len) {
        return Err(invalid(
            cloud,
            Code::BadValue,
            format!("the {kind} CIDR block `{cidr}` must have a prefix between /16 and /28"),
        ));
    }
    Ok((ip, len))
}

fn check_tags(cloud: Cloud, attrs: &Attrs) -> Result<(), ProviderError> {
    match attrs.get("tags") {
        None | Some(serde_json::Value::Null) => Ok(()),
        Some(serde_json::Value::Object(m)) if m.values().all(|v| v.is_string()) => Ok(()),
        Some(other) => Err(invalid(
            cloud,
            Code::BadValue,
            format!("attribute `tags` must be a map of strings to strings, got {other}"),
        )),
    }
}

fn create(
    inner: &mut Inner,
    cloud: Cloud,
    faults: &crate::Faults,
    req: &CreateRequest,
) -> Result<ObservedResource, ProviderError> {
    let region = req.scope.region.as_str();
    let token = req.ownership.token.as_str();
    let kind = req.kind;

    // Idempotency (ClientToken): the same token returns what it made.
    if !token.is_empty() {
        let cs = inner.store.cloud(cloud);
        if let Some(e) = cs
            .by_token
            .get(token)
            .and_then(|id| cs.by_id.get_key_value(id))
        {
            let (id, e) = e;
            if e.kind != kind || *e.region != *region {
                return Err(invalid(
                    cloud,
                    Code::Mismatch,
                    format!(
                        "idempotency token `{token}` was used for {} {id} in {}; a token \
                         cannot be reused for a {kind} in {region}",
                        e.kind, e.region
                    ),
                ));
            }
            return Ok(cs.observe(id, e));
        }
    }

    let catalog = Catalog::builtin();
    let Some(reg) = catalog.region(cloud, region) else {
        return Err(invalid(
            cloud,
            Code::Region,
            format!(
                "region `{region}` is not a {cloud} region; valid regions: {}",
                list(catalog.regions(cloud).iter().map(|r| r.name.as_str()))
            ),
        ));
    };
    let attrs = &req.attrs;
    check_tags(cloud, attrs)?;

    for role in required_roles(kind) {
        if !req.refs.contains_key(*role) {
            return Err(invalid(
                cloud,
                Code::Missing,
                format!("a {kind} needs a `{role}` ref (the provider id of its {role})"),
            ));
        }
    }
    for (role, id) in &req.refs {
        if let Some(want) = role_kind(role) {
            lookup_ref(inner, cloud, region, role, want, id)?;
        }
    }
    let ref_entry = |role: &str| -> Result<&Entry, ProviderError> {
        let id = req.refs.get(role).map(String::as_str).unwrap_or_default();
        lookup_ref(
            inner,
            cloud,
            region,
            role,
            role_kind(role).unwrap_or(kind),
            id,
        )
    };

    let mut zone: Option<String> = None;
    let mut gpus = 0u32;
    let mut bucket_name: Option<&str> = None;
    match kind {
        ResourceKind::Network => {
            if let Some(c) = opt_str(cloud, attrs, "cidr")? {
                check_cidr(cloud, kind, c)?;
            }
        }
        ResourceKind::Subnet => {
            zone = Some(check_zone(cloud, reg, attrs, kind)?.to_string());
            let net = ref_entry("network")?;
            if let Some(c) = opt_str(cloud, attrs, "cidr")? {
                let (ip, len) = check_cidr(cloud, kind, c)?;
                let net_cidr = net
                    .attrs()
                    .get("cidr")
                    .and_then(|v| v.as_str().map(str::to_string));
                if let Some((nip, nlen)) = net_cidr.as_deref().and_then(parse_cidr) {
                    let mask = if nlen == 0 {
                        0
                    } else {
                        u32::MAX << (32 - nlen)
                    };
                    if len < nlen || ip & mask != nip {
                        return Err(invalid(
                            cloud,
                            Code::BadValue,
                            format!(
                                "the subnet CIDR block `{c}` is not inside its network's `{}`",
                                net_cidr.as_deref().unwrap_or_default()
                            ),
                        ));
                    }
                }
            }
        }
        ResourceKind::Firewall => match attrs.get("ingress") {
            None | Some(serde_json::Value::Null) | Some(serde_json::Value::Array(_)) => {}
            Some(other) => {
                return Err(invalid(
                    cloud,
                    Code::BadValue,
                    format!("attribute `ingress` must be a list of rules, got {other}"),
                ))
            }
        },
        ResourceKind::Placement => {
            if let Some(s) = opt_str(cloud, attrs, "strategy")? {
                if !["cluster", "spread", "partition"].contains(&s) {
                    return Err(invalid(
                        cloud,
                        Code::BadValue,
                        format!(
                            "placement strategy `{s}` is not one of cluster, spread, partition"
                        ),
                    ));
                }
            }
        }
        ResourceKind::Instance => {
            let ty_name = req_str(cloud, kind, attrs, "instance_type")?;
            let Some(ty) = catalog.instance_type(cloud, ty_name) else {
                let types = catalog.instance_types(cloud);
                let mut near: Vec<&str> = types
                    .iter()
                    .map(|t| t.name.as_str())
                    .filter(|n| {
                        let fam = |s: &str| s.split('.').next().unwrap_or(s).to_string();
                        fam(n) == fam(ty_name)
                    })
                    .collect();
                if near.is_empty() {
                    near = types.iter().map(|t| t.name.as_str()).take(12).collect();
                }
                return Err(invalid(
                    cloud,
                    Code::InstanceType,
                    format!(
                        "`{ty_name}` is not a {cloud} GPU instance type in the catalog; \
                         for example: {}",
                        list(near)
                    ),
                ));
            };
            let z = check_zone(cloud, reg, attrs, kind)?;
            if catalog.offering(cloud, region, ty_name).is_none() {
                let regions: Vec<&str> = catalog
                    .offerings()
                    .iter()
                    .filter(|o| o.cloud == cloud && o.instance_type == ty_name)
                    .map(|o| o.region.as_str())
                    .collect();
                return Err(invalid(
                    cloud,
                    Code::NotOffered,
                    format!(
                        "instance type {ty_name} is not offered in {region}; \
                         regions that offer it: {}",
                        list(regions)
                    ),
                ));
            }
            let subnet = ref_entry("subnet")?;
            if subnet.zone.as_deref() != Some(z) {
                return Err(invalid(
                    cloud,
                    Code::BadValue,
                    format!(
                        "the instance asks for zone {z} but its subnet {} is in zone {}",
                        req.refs
                            .get("subnet")
                            .map(String::as_str)
                            .unwrap_or_default(),
                        subnet.zone.as_deref().unwrap_or("(none)")
                    ),
                ));
            }
            let firewall = ref_entry("firewall")?;
            if firewall.ref_of("network") != subnet.ref_of("network") {
                return Err(invalid(
                    cloud,
                    Code::BadValue,
                    format!(
                        "firewall {} and subnet {} belong to different networks",
                        req.refs
                            .get("firewall")
                            .map(String::as_str)
                            .unwrap_or_default(),
                        req.refs
                            .get("subnet")
                            .map(String::as_str)
                            .unwrap_or_default(),
                    ),
                ));
            }
            if let Some(av) = catalog.availability(cloud, region, ty_name) {
                if let (false, Some(zones)) = (av.assumed, &av.zones) {
                    if !zones.iter().any(|x| x == z) {
                        // Like a real cloud's "not supported in this zone":
                        // a zone problem, so the engine tries the next zone.
                        return Err(perr(
                            cloud,
                            ErrorKind::Capacity,
                            Code::NotOffered,
                            format!(
                                "instance type {ty_name} is not supported in zone {z}; \
                                 retry in one of: {}",
                                list(zones)
                            ),
                        ));
                    }
                }
            }
            gpus = ty.gpu_count;
            if let Some(quota) = faults.quota_gpus {
                let used = inner
                    .store
                    .cloud(cloud)
                    .gpus
                    .get(region)
                    .copied()
                    .unwrap_or(0);
                if used + u64::from(gpus) > u64::from(quota) {
                    return Err(perr(
                        cloud,
                        ErrorKind::Quota,
                        Code::Quota,
                        format!(
                            "GPU quota exceeded in {region}: quota `gpus per region` is {quota}, \
                             {used} in use, {gpus} more requested for {ty_name}"
                        ),
                    ));
                }
            }
            if faults.no_capacity(ty_name, z) {
                return Err(perr(
                    cloud,
                    ErrorKind::Capacity,
                    Code::Capacity,
                    format!(
                        "We currently do not have sufficient {ty_name} capacity in the \
                         Availability Zone you requested ({z}). (sandbox fault `capacity`)"
                    ),
                ));
            }
            zone = Some(z.to_string());
        }
        ResourceKind::Volume => {
            let inst = ref_entry("instance")?;
            if let Some(z) = opt_str(cloud, attrs, "zone")? {
                if inst.zone.as_deref() != Some(z) {
                    return Err(invalid(
                        cloud,
                        Code::Zone,
                        format!(
                            "the volume's zone {z} is not its instance's zone {}",
                            inst.zone.as_deref().unwrap_or("(none)")
                        ),
                    ));
                }
            }
            zone = inst.zone.as_deref().map(str::to_string);
            check_size(cloud, attrs, None)?;
        }
        ResourceKind::Bucket => {
            let name = req_str(cloud, kind, attrs, "name")?;
            let ok = (3..=63).contains(&name.len())
                && name.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                })
                && name.as_bytes()[0].is_ascii_alphanumeric()
                && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
            if !ok {
                return Err(invalid(
                    cloud,
                    Code::BadValue,
                    format!(
                        "bucket name `{name}` is invalid: 3-63 characters of lower-case letters, \
                         digits, `-` and `.`, starting and ending with a letter or digit"
                    ),
                ));
            }
            if inner.store.get(cloud, name).is_some() {
                return Err(invalid(
                    cloud,
                    Code::BucketExists,
                    format!("the bucket name `{name}` is already taken; bucket names are global"),
                ));
            }
            bucket_name = Some(name);
        }
    }

    let seq = inner.store.next_seq;
    let id = match bucket_name {
        Some(n) => n.to_string(),
        None => make_id(cloud, kind, seq, inner.store.salt),
    };
    if inner.store.get(cloud, &id).is_some() {
        return Err(internal(format!(
            "id {id} is already in use (was the log edited by hand?)"
        )));
    }
    // The first call makes the resource bare: the attachment and the rules
    // are the second call's (see `SandboxProvider::create`).
    let mut stored = attrs.clone();
    match kind {
        ResourceKind::Volume => {
            stored.insert("attached_to".into(), serde_json::Value::Null);
        }
        ResourceKind::Firewall => {
            stored.remove("ingress");
            stored.insert(MEMBERS_KEY.into(), serde_json::Value::Bool(false));
        }
        _ => {}
    }
    let json = attrs_json(&stored);
    let rec = CreateRec {
        seq,
        cloud,
        kind,
        id,
        region: region.to_string(),
        zone,
        gpus,
        project: req.ownership.project.clone(),
        address: req.ownership.address.clone(),
        token: token.to_string(),
        lineage: req.ownership.lineage.clone(),
        refs: req.refs.clone(),
        attrs: None,
    };
    let mut buf = std::mem::take(&mut inner.scratch);
    buf.clear();
    rec.write_line(&json, &mut buf);
    let written = inner.inv.append_bytes(&buf).map_err(internal);
    inner.scratch = buf;
    written?;
    inner.store.records += 1;
    inner
        .store
        .apply_create(&rec, json.into_boxed_str())
        .map_err(internal)?;
    let cs = inner.store.cloud(cloud);
    let e = cs
        .by_id
        .get(rec.id.as_str())
        .ok_or_else(|| internal("a created resource vanished"))?;
    Ok(cs.observe(&rec.id, e))
}

fn check_size(cloud: Cloud, attrs: &Attrs, current: Option<u64>) -> Result<(), ProviderError> {
    let Some(v) = attrs.get("size_gb") else {
        return Ok(());
    };
    let Some(n) = v.as_u64().filter(|n| *n > 0) else {
        return Err(invalid(
            cloud,
            Code::BadValue,
            format!("attribute `size_gb` must be a positive whole number, got {v}"),
        ));
    };
    if let Some(cur) = current {
        if n < cur {
            return Err(invalid(
                cloud,
                Code::BadValue,
                format!("a volume can only grow: size_gb {n} is less than the current {cur}"),
            ));
        }
    }
    Ok(())
}

fn existing<'a>(
    inner: &'a Inner,
    cloud: Cloud,
    scope: &Scope,
    kind: ResourceKind,
    id: &str,
) -> Result<Option<&'a Entry>, ProviderError> {
    match inner.store.get(cloud, id) {
        None => Ok(None),
        Some(e) if e.kind != kind => Err(invalid(
            cloud,
            Code::BadValue,
            format!("`{id}` is a {}, not a {kind}", e.kind),
        )),
        Some(e) if *e.region != *scope.region => Err(invalid(
            cloud,
            Code::BadValue,
            format!(
                "{kind} `{id}` is in region {}, not {}",
                e.region, scope.region
            ),
        )),
        Some(e) => Ok(Some(e)),
    }
}

fn update(
    inner: &mut Inner,
    cloud: Cloud,
    scope: &Scope,
    kind: ResourceKind,
    id: &str,
    changes: &Attrs,
) -> Result<ObservedResource, ProviderError> {
    let Some(e) = existing(inner, cloud, scope, kind, id)? else {
        return Err(perr(
            cloud,
            ErrorKind::NotFound,
            Code::NotFound(kind),
            format!(
                "the {kind} `{id}` does not exist in region {}",
                scope.region
            ),
        ));
    };
    for key in changes.keys() {
        if !kind.is_updatable(key) {
            return Err(invalid(
                cloud,
                Code::BadValue,
                format!(
                    "attribute `{key}` of a {kind} cannot change in place (updatable: {}); \
                     it needs a replacement",
                    list(kind.updatable_attrs())
                ),
            ));
        }
    }
    check_tags(cloud, changes)?;
    let mut attrs = e.attrs();
    if kind == ResourceKind::Volume {
        check_size(
            cloud,
            changes,
            attrs.get("size_gb").and_then(|v| v.as_u64()),
        )?;
    }
    if let Some(v) = changes.get("ingress") {
        if !(v.is_array() || v.is_null()) {
            return Err(invalid(
                cloud,
                Code::BadValue,
                format!("attribute `ingress` must be a list of rules, got {v}"),
            ));
        }
    }
    // AttachVolume / DetachVolume: to an instance of the volume's zone.
    if let Some(v) = changes.get("attached_to") {
        match v {
            serde_json::Value::Null => {}
            serde_json::Value::String(instance) => {
                let zone = e.zone.clone();
                let inst = lookup_ref(
                    inner,
                    cloud,
                    &scope.region,
                    "attached_to",
                    ResourceKind::Instance,
                    instance,
                )?;
                if inst.zone != zone {
                    return Err(invalid(
                        cloud,
                        Code::Zone,
                        format!(
                            "volume {id} in zone {} cannot attach to instance {instance} in zone {}",
                            zone.as_deref().unwrap_or("(none)"),
                            inst.zone.as_deref().unwrap_or("(none)")
                        ),
                    ));
                }
            }
            other => {
                return Err(invalid(
                    cloud,
                    Code::BadValue,
                    format!("attribute `attached_to` must be an instance id or null, got {other}"),
                ))
            }
        }
    }
    let cs = inner.store.cloud(cloud);
    let Some(e) = cs.by_id.get(id) else {
        return Err(internal("a resource vanished"));
    };
    if changes.is_empty() {
        return Ok(cs.observe(id, e));
    }
    for (k, v) in changes {
        // Detached is stored as null (absent means "attached at creation").
        if v.is_null() && k != "attached_to" {
            attrs.remove(k);
        } else {
            attrs.insert(k.clone(), v.clone());
        }
    }
    if changes.contains_key("ingress") {
        // Writing the rules always writes the members' rule with them.
        attrs.insert(MEMBERS_KEY.into(), serde_json::Value::Bool(true));
    }
    let json = attrs_json(&attrs);
    inner
        .inv
        .append(&set_line(cloud, id, &json))
        .map_err(internal)?;
    inner.store.records += 1;
    inner.store.apply_set(cloud, id, json.into_boxed_str());
    let cs = inner.store.cloud(cloud);
    let e = cs
        .by_id
        .get(id)
        .ok_or_else(|| internal("an updated resource vanished"))?;
    Ok(cs.observe(id, e))
}

fn delete(
    inner: &mut Inner,
    cloud: Cloud,
    scope: &Scope,
    kind: ResourceKind,
    id: &str,
) -> Result<(), ProviderError> {
    let Some(e) = existing(inner, cloud, scope, kind, id)? else {
        return Ok(());
    };
    if e.dependents > 0 {
        let what = match kind {
            ResourceKind::Network => "subnets or firewalls",
            _ => "instances",
        };
        return Err(perr(
            cloud,
            ErrorKind::DependencyViolation,
            Code::Dependency,
            format!(
                "The {kind} '{id}' has dependencies and cannot be deleted: {} {what} still use it",
                e.dependents
            ),
        ));
    }
    inner
        .inv
        .append(&delete_line(cloud, id))
        .map_err(internal)?;
    inner.store.records += 1;
    inner.store.apply_delete(cloud, id);
    Ok(())
}
