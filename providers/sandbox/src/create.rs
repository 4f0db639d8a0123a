//! The first call of a create, as the mirrored cloud answers it: the
//! idempotency token, its checks (see `checks`), then the inventory record.

use crate::checks::{self, lookup_ref, required_ref, role_kind};
use crate::cloud::{attrs_json, Inner};
use crate::errors::{internal, invalid, Code};
use crate::faults::Faults;
use crate::ids::make_id;
use crate::store::{CreateRec, MEMBERS_KEY, OBJECT_COUNT};
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    Attrs, Cloud, CreateRequest, Desired, ObservedResource, ResourceKind, UserTags,
};
use serde_json::Value;

/// Makes `want` (read from `req`), or returns what the same token made.
pub(crate) fn create(
    inner: &mut Inner,
    cloud: Cloud,
    faults: &Faults,
    req: &CreateRequest,
    (want, tags): (&Desired, &UserTags),
) -> Result<ObservedResource> {
    let region = req.scope.region.as_str();
    let token = req.ownership.token.as_str();
    let kind = req.kind;

    // Idempotency (ClientToken): the same token returns what it made.
    if !token.is_empty() {
        let cs = inner.store.cloud(cloud);
        if let Some((id, e)) = cs
            .by_token
            .get(token)
            .and_then(|id| cs.by_id.get_key_value(id))
        {
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

    let reg = checks::region(cloud, region)?;
    let view: &Inner = inner;
    let refer = move |role: &str, id: &str| {
        let k = role_kind(role).unwrap_or(kind);
        lookup_ref(view, cloud, region, (role, k), id)
    };
    for (role, id) in &req.refs {
        if role_kind(role).is_some() {
            refer(role, id)?;
        }
    }

    let mut zone: Option<String> = None;
    let mut gpus = 0u32;
    match want {
        Desired::Network(c) => {
            checks::cidr(cloud, kind, &c.spec.cidr)?;
        }
        Desired::Subnet(c) => {
            checks::zone(cloud, reg, &c.spec.zone)?;
            zone = Some(c.spec.zone.clone());
            let network = refer("network", &c.spec.network)?;
            checks::subnet_cidr(cloud, &c.spec.cidr, network)?;
            checks::subnet_overlap(view, cloud, &c.spec.cidr, &c.spec.network)?;
        }
        Desired::Firewall(_) | Desired::Placement(_) => {}
        Desired::Instance(c) => {
            let s = &c.spec;
            let subnet_id = required_ref(cloud, kind, s.subnet.as_deref(), "subnet")?;
            let firewall_id = required_ref(cloud, kind, s.firewall.as_deref(), "firewall")?;
            let ty = checks::instance_type(cloud, &s.instance_type)?;
            let z = s.zone.as_deref().ok_or_else(|| {
                invalid(
                    cloud,
                    Code::Missing,
                    format!("a {kind} needs the attribute `zone`"),
                )
            })?;
            checks::zone(cloud, reg, z)?;
            checks::offered(cloud, region, z, &ty.name)?;
            checks::instance_refs(
                cloud,
                z,
                (subnet_id, refer("subnet", subnet_id)?),
                (firewall_id, refer("firewall", firewall_id)?),
            )?;
            crate::quota::check_create(view, cloud, faults, region, ty)?;
            checks::quota_and_capacity(view, cloud, faults, (region, z), ty)?;
            gpus = ty.gpu_count;
            zone = Some(z.to_string());
        }
        // CreateVolume takes a zone; an instance only says where to attach
        // it afterwards (and gives the zone when none is named).
        Desired::Volume(c) => {
            match (c.spec.instance.as_deref(), c.spec.zone.as_deref()) {
                (Some(instance_id), z) => {
                    let instance = refer("instance", instance_id)?;
                    if let Some(z) = z {
                        checks::in_zone(cloud, Code::Zone, instance, z, |theirs| {
                            format!("the volume's zone {z} is not its instance's zone {theirs}")
                        })?;
                    }
                    zone = instance.zone.as_deref().map(str::to_string);
                }
                (None, Some(z)) => {
                    checks::zone(cloud, reg, z)?;
                    zone = Some(z.to_string());
                }
                (None, None) => {
                    return Err(invalid(
                        cloud,
                        Code::Missing,
                        "a volume needs `zone`, or an `instance` ref to take it from",
                    ))
                }
            }
            checks::volume_size(cloud, c.spec.size_gb, None)?;
        }
        Desired::Bucket(c) => checks::bucket_name(view, cloud, &c.spec.name)?,
        // Bought through `blocks::purchase`, which honours no token.
        Desired::Block(_) => {
            return Err(internal("a Capacity Block is bought, not created"));
        }
    }

    let seq = inner.store.next_seq;
    let id = match want {
        Desired::Bucket(c) => c.spec.name.clone(),
        _ => make_id(cloud, kind, seq, inner.store.salt),
    };
    if inner.store.get(cloud, &id).is_some() {
        return Err(internal(format!(
            "id {id} is already in use (was the log edited by hand?)"
        )));
    }
    // The first call makes the resource bare: the attachment and the rules
    // are the second call's (see `SandboxProvider::create`).
    let mut stored = neutral_attrs(&req.attrs, Some(tags));
    match kind {
        ResourceKind::Volume => {
            stored.insert(attr::ATTACHED_TO.into(), Value::Null);
        }
        ResourceKind::Firewall => {
            stored.remove(attr::INGRESS);
            stored.remove(gpuform_provider::request::BARE);
            stored.insert(MEMBERS_KEY.into(), Value::Bool(false));
        }
        // The size is the spec's estimate: a cloud never reports it.
        ResourceKind::Bucket => {
            stored.remove(attr::SIZE_GB);
            stored.insert(OBJECT_COUNT.into(), Value::from(0));
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
        address: req.ownership.address.to_string(),
        token: token.to_string(),
        lineage: req.ownership.lineage.clone(),
        workspace: req.ownership.workspace.clone(),
        refs: req.refs.clone(),
        attrs: None,
    };
    append(inner, &rec, json)
}

/// Writes a create to the inventory log, then to the store, and answers
/// what the cloud now reports of it.
pub(crate) fn append(inner: &mut Inner, rec: &CreateRec, json: String) -> Result<ObservedResource> {
    let mut buf = std::mem::take(&mut inner.scratch);
    buf.clear();
    rec.write_line(&json, &mut buf);
    let written = inner.inv.append_bytes(&buf).map_err(internal);
    inner.scratch = buf;
    written?;
    inner.store.records += 1;
    inner
        .store
        .apply_create(rec, json.into_boxed_str())
        .map_err(internal)?;
    let cs = inner.store.cloud(rec.cloud);
    let e = cs
        .by_id
        .get(rec.id.as_str())
        .ok_or_else(|| internal("a created resource vanished"))?;
    Ok(cs.observe(&rec.id, e))
}

/// The attributes the inventory keeps: the engine's neutral ones, with the
/// user tags (when given) as the cloud reports them, as text.
pub(crate) fn neutral_attrs(attrs: &Attrs, tags: Option<&UserTags>) -> Attrs {
    let mut out = attrs.clone();
    if let (Some(tags), Some(v)) = (tags, out.get_mut(attr::TAGS)) {
        if !v.is_null() {
            *v = tags.to_value();
        }
    }
    out
}
