//! What the mirrored cloud's API checks beyond the request's shape (which
//! the typed parsers of `gpuform_provider` checked before the call): its
//! catalog (regions, zones, instance types, where they are offered), the
//! resources a request refers to, CIDR blocks, GPU quota and capacity.

use crate::cloud::Inner;
use crate::errors::{invalid, list, perr, Code};
use crate::faults::Faults;
use crate::store::Entry;
use gpuform_catalog::{Catalog, InstanceType, Region};
use gpuform_provider::{attr, Result};
use gpuform_provider::{Cloud, ErrorKind, ResourceKind};

/// The ref a kind cannot be made without (the provider id of a resource it
/// belongs to), which the neutral request may leave out: refused as the
/// cloud would.
pub(crate) fn required_ref<'a>(
    cloud: Cloud,
    kind: ResourceKind,
    id: Option<&'a str>,
    role: &str,
) -> Result<&'a str> {
    id.ok_or_else(|| {
        invalid(
            cloud,
            Code::Missing,
            format!("a {kind} needs a `{role}` ref (the provider id of its {role})"),
        )
    })
}

pub(crate) fn region(cloud: Cloud, name: &str) -> Result<&'static Region> {
    let catalog = Catalog::builtin();
    catalog.region(cloud, name).ok_or_else(|| {
        invalid(
            cloud,
            Code::Region,
            format!(
                "region `{name}` is not a {cloud} region; valid regions: {}",
                list(catalog.regions(cloud).iter().map(|r| r.name.as_str()))
            ),
        )
    })
}

pub(crate) fn zone(cloud: Cloud, region: &Region, zone: &str) -> Result<()> {
    if region.zones.iter().any(|z| z == zone) {
        return Ok(());
    }
    Err(invalid(
        cloud,
        Code::Zone,
        format!(
            "zone `{zone}` is not in region {} of {cloud}; its zones are: {}",
            region.name,
            list(&region.zones)
        ),
    ))
}

/// The kind a ref role must point to.
pub(crate) fn role_kind(role: &str) -> Option<ResourceKind> {
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

/// The live resource `id` that ref `role` points to: a `want` in `region`.
pub(crate) fn lookup_ref<'a>(
    inner: &'a Inner,
    cloud: Cloud,
    region: &str,
    (role, want): (&str, ResourceKind),
    id: &str,
) -> Result<&'a Entry> {
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

pub(crate) fn parse_cidr(s: &str) -> Option<(u32, u8)> {
    let (addr, len) = s.split_once('/')?;
    let len: u8 = len.parse().ok()?;
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    if len > 32 {
        return None;
    }
    let ip = u32::from(ip);
    (ip & !mask(len) == 0).then_some((ip, len))
}

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

pub(crate) fn cidr(cloud: Cloud, kind: ResourceKind, cidr: &str) -> Result<(u32, u8)> {
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

/// A subnet's block must lie inside its network's.
pub(crate) fn subnet_cidr(cloud: Cloud, cidr: &str, network: &Entry) -> Result<()> {
    let (ip, len) = self::cidr(cloud, ResourceKind::Subnet, cidr)?;
    let attrs = network.attrs();
    let Some(net_cidr) = attrs.get(attr::CIDR).and_then(|v| v.as_str()) else {
        return Ok(());
    };
    match parse_cidr(net_cidr) {
        Some((nip, nlen)) if len < nlen || ip & mask(nlen) != nip => Err(invalid(
            cloud,
            Code::BadValue,
            format!("the subnet CIDR block `{cidr}` is not inside its network's `{net_cidr}`"),
        )),
        _ => Ok(()),
    }
}

/// A subnet's block must overlap no other subnet of its network
/// (`network_id`): every cloud refuses that.
pub(crate) fn subnet_overlap(
    inner: &Inner,
    cloud: Cloud,
    cidr: &str,
    network_id: &str,
) -> Result<()> {
    let (ip, len) = self::cidr(cloud, ResourceKind::Subnet, cidr)?;
    let overlapping = inner.store.cloud(cloud).by_id.iter().find_map(|(id, e)| {
        if e.kind != ResourceKind::Subnet || e.ref_of("network") != Some(network_id) {
            return None;
        }
        let theirs = e.attrs().get(attr::CIDR)?.as_str()?.to_string();
        let (oip, olen) = parse_cidr(&theirs)?;
        let shorter = len.min(olen);
        (ip & mask(shorter) == oip & mask(shorter)).then(|| format!("`{theirs}` ({id})"))
    });
    match overlapping {
        Some(other) => Err(invalid(
            cloud,
            Code::SubnetConflict,
            format!("the subnet CIDR block `{cidr}` overlaps the network's subnet {other}"),
        )),
        None => Ok(()),
    }
}

/// A GPU instance type of the mirrored cloud's catalog, or an error that
/// names a few of its family (or of the catalog).
pub(crate) fn instance_type(cloud: Cloud, name: &str) -> Result<&'static InstanceType> {
    let catalog = Catalog::builtin();
    if let Some(ty) = catalog.instance_type(cloud, name) {
        return Ok(ty);
    }
    let family = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    let types = catalog.instance_types(cloud);
    let mut near: Vec<&str> = types
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| family(n) == family(name))
        .collect();
    if near.is_empty() {
        near = types.iter().map(|t| t.name.as_str()).take(12).collect();
    }
    Err(invalid(
        cloud,
        Code::InstanceType,
        format!(
            "`{name}` is not a {cloud} GPU instance type in the catalog; for example: {}",
            list(near)
        ),
    ))
}

/// The type is sold in the region, and (where the catalog knows its zones)
/// in the zone.
pub(crate) fn offered(cloud: Cloud, region: &str, zone: &str, ty: &str) -> Result<()> {
    let catalog = Catalog::builtin();
    if catalog.offering(cloud, region, ty).is_none() {
        let regions: Vec<&str> = catalog
            .offerings()
            .iter()
            .filter(|o| o.cloud == cloud && o.instance_type == ty)
            .map(|o| o.region.as_str())
            .collect();
        return Err(invalid(
            cloud,
            Code::NotOffered,
            format!(
                "instance type {ty} is not offered in {region}; regions that offer it: {}",
                list(regions)
            ),
        ));
    }
    if let Some(av) = catalog.availability(cloud, region, ty) {
        if let (false, Some(zones)) = (av.assumed, &av.zones) {
            if !zones.iter().any(|x| x == zone) {
                // Like a real cloud's "not supported in this zone": a zone
                // problem, so the engine tries the next zone.
                return Err(perr(
                    cloud,
                    ErrorKind::Capacity,
                    Code::NotOffered,
                    format!(
                        "instance type {ty} is not supported in zone {zone}; retry in one of: {}",
                        list(zones)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `entry` stands in `zone`; else a `code` error whose message `says`,
/// given the zone the entry is in (`(none)` when it has none).
pub(crate) fn in_zone(
    cloud: Cloud,
    code: Code,
    entry: &Entry,
    zone: &str,
    says: impl FnOnce(&str) -> String,
) -> Result<()> {
    match entry.zone.as_deref() {
        Some(z) if z == zone => Ok(()),
        theirs => Err(invalid(cloud, code, says(theirs.unwrap_or("(none)")))),
    }
}

/// An instance's subnet is in its zone, and its firewall in its subnet's
/// network.
pub(crate) fn instance_refs(
    cloud: Cloud,
    zone: &str,
    (subnet_id, subnet): (&str, &Entry),
    (firewall_id, firewall): (&str, &Entry),
) -> Result<()> {
    in_zone(cloud, Code::BadValue, subnet, zone, |theirs| {
        format!("the instance asks for zone {zone} but its subnet {subnet_id} is in zone {theirs}")
    })?;
    if firewall.ref_of("network") != subnet.ref_of("network") {
        return Err(invalid(
            cloud,
            Code::BadValue,
            format!("firewall {firewall_id} and subnet {subnet_id} belong to different networks"),
        ));
    }
    Ok(())
}

/// The `quota_gpus` and `capacity` faults, for `gpus` more of `ty` in `zone`.
pub(crate) fn quota_and_capacity(
    inner: &Inner,
    cloud: Cloud,
    faults: &Faults,
    (region, zone): (&str, &str),
    ty: &InstanceType,
) -> Result<()> {
    let (name, gpus) = (ty.name.as_str(), ty.gpu_count);
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
                     {used} in use, {gpus} more requested for {name}"
                ),
            ));
        }
    }
    if faults.no_capacity(name, zone) {
        return Err(perr(
            cloud,
            ErrorKind::Capacity,
            Code::Capacity,
            format!(
                "We currently do not have sufficient {name} capacity in the \
                 Availability Zone you requested ({zone}). (sandbox fault `capacity`)"
            ),
        ));
    }
    Ok(())
}

/// A disk of `size_gb`, growing from `current` when it exists.
pub(crate) fn volume_size(cloud: Cloud, size_gb: u32, current: Option<u64>) -> Result<()> {
    if size_gb == 0 {
        return Err(invalid(
            cloud,
            Code::BadValue,
            format!("attribute `size_gb` must be a positive whole number, got {size_gb}"),
        ));
    }
    match current {
        Some(cur) if u64::from(size_gb) < cur => Err(invalid(
            cloud,
            Code::BadValue,
            format!("a volume can only grow: size_gb {size_gb} is less than the current {cur}"),
        )),
        _ => Ok(()),
    }
}

/// The mirrored cloud's bucket naming rules (`gpuform_provider::bucket_name`),
/// and names are global.
pub(crate) fn bucket_name(inner: &Inner, cloud: Cloud, name: &str) -> Result<()> {
    if let Err(e) = gpuform_provider::bucket_name::check(cloud, name) {
        return Err(invalid(cloud, Code::BadValue, e.to_string()));
    }
    if inner.store.get(cloud, name).is_some() {
        return Err(invalid(
            cloud,
            Code::BucketExists,
            format!("the bucket name `{name}` is already taken; bucket names are global"),
        ));
    }
    Ok(())
}
