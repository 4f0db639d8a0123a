//! Calls on resources that exist: updates (tags, firewall rules, a volume's
//! size and attachment) and deletes, with the mirrored cloud's dependency
//! rules.

use crate::checks::{self, lookup_ref};
use crate::cloud::{attrs_json, Inner};
use crate::create::neutral_attrs;
use crate::errors::{internal, invalid, perr, Code};
use crate::store::{delete_line, own_line, set_line, Entry, MEMBERS_KEY, OBJECT_COUNT};
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{
    Attachment, Attrs, ChangeSet, Cloud, ErrorKind, ExistingResource, ObservedResource,
    OwnershipTags, ResourceKind, Scope,
};

/// The resource `id` if it is alive; an error if it is another kind or in
/// another region.
pub(crate) fn existing<'a>(
    inner: &'a Inner,
    cloud: Cloud,
    scope: &Scope,
    kind: ResourceKind,
    id: &str,
) -> Result<Option<&'a Entry>> {
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

/// The resource `id`, which must be alive: [`existing`], with a missing
/// one an error of kind [`ErrorKind::NotFound`].
fn alive<'a>(
    inner: &'a Inner,
    cloud: Cloud,
    scope: &Scope,
    kind: ResourceKind,
    id: &str,
) -> Result<&'a Entry> {
    existing(inner, cloud, scope, kind, id)?.ok_or_else(|| {
        perr(
            cloud,
            ErrorKind::NotFound,
            Code::NotFound(kind),
            format!(
                "the {kind} `{id}` does not exist in region {}",
                scope.region
            ),
        )
    })
}

/// Applies `changes` (read into `set`, which says what they mean) to `id`.
pub(crate) fn update(
    inner: &mut Inner,
    cloud: Cloud,
    scope: &Scope,
    (kind, id): (ResourceKind, &str),
    (set, changes): (&ChangeSet, &Attrs),
) -> Result<ObservedResource> {
    let e = alive(inner, cloud, scope, kind, id)?;
    let mut attrs = e.attrs();
    if let Some(size) = set.size_gb {
        checks::volume_size(
            cloud,
            size,
            attrs.get(attr::SIZE_GB).and_then(|v| v.as_u64()),
        )?;
    }
    // AttachVolume / DetachVolume: to an instance of the volume's zone.
    if let Some(Attachment::To(instance)) = &set.attachment {
        let inst = lookup_ref(
            inner,
            cloud,
            &scope.region,
            (attr::ATTACHED_TO, ResourceKind::Instance),
            instance,
        )?;
        if inst.zone != e.zone {
            return Err(invalid(
                cloud,
                Code::Zone,
                format!(
                    "volume {id} in zone {} cannot attach to instance {instance} in zone {}",
                    e.zone.as_deref().unwrap_or("(none)"),
                    inst.zone.as_deref().unwrap_or("(none)")
                ),
            ));
        }
    }
    if set.is_empty() {
        return Ok(inner.store.cloud(cloud).observe(id, e));
    }
    for (k, v) in neutral_attrs(changes, set.tags.as_ref()) {
        if kind == ResourceKind::Bucket && k == "size_gb" {
            continue; // the spec's estimate, which no cloud keeps
        }
        // Detached is stored as null (absent means "attached at creation").
        if v.is_null() && k != attr::ATTACHED_TO {
            attrs.remove(&k);
        } else {
            attrs.insert(k, v);
        }
    }
    if set.ingress.is_some() {
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

/// Puts ownership tags on `id` (`gpuform import`), as CreateTags would:
/// every other tag stays.
pub(crate) fn own(
    inner: &mut Inner,
    cloud: Cloud,
    ExistingResource { scope, kind, id }: ExistingResource<'_>,
    ownership: &OwnershipTags,
) -> Result<()> {
    alive(inner, cloud, scope, kind, id)?;
    inner
        .inv
        .append(&own_line(cloud, id, Some(ownership)))
        .map_err(internal)?;
    inner.store.records += 1;
    inner.store.apply_own(cloud, id, Some(ownership));
    Ok(())
}

/// Deletes `id`; one that is gone already is done.
pub(crate) fn delete(
    inner: &mut Inner,
    cloud: Cloud,
    scope: &Scope,
    kind: ResourceKind,
    id: &str,
) -> Result<()> {
    let Some(e) = existing(inner, cloud, scope, kind, id)? else {
        return Ok(());
    };
    if kind == ResourceKind::Bucket {
        let attrs = e.attrs();
        let objects = attrs
            .get(OBJECT_COUNT)
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let force = attrs.get(attr::FORCE_DESTROY).and_then(|v| v.as_bool()) == Some(true);
        if objects > 0 && !force {
            // Not a dependency to wait for: nothing gpuform does empties it.
            return Err(perr(
                cloud,
                ErrorKind::Invalid,
                Code::BucketNotEmpty,
                format!(
                    "The bucket '{id}' is not empty: it holds {objects} object(s). \
                     Delete them first, or set `force_destroy: true` on the bucket and apply \
                     before destroying it"
                ),
            ));
        }
    }
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
