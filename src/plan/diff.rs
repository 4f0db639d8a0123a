//! The diff: desired resources vs recorded state vs what providers observe.

use super::{Action, CostSummary, Plan, ResourceChange, StateRef, Summary, PLAN_FORMAT_VERSION};
use crate::address::Address;
use crate::refresh::Current;
use crate::resolve::Desired;
use crate::state::Record;
use gpuform_catalog::HOURS_PER_MONTH;
use gpuform_catalog::{Catalog, PricingModel};
use gpuform_provider::attr;
use gpuform_provider::{Attrs, ResourceKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Plan to delete everything in state.
    pub destroy: bool,
    /// Limit the plan to these addresses (or address prefixes like
    /// `cluster.trainer`) and what they depend on.
    pub targets: Vec<String>,
    pub cny_per_usd: f64,
    /// Replace these addresses even when nothing forces it (`--replace`):
    /// how a node made before gpuform rendered bootstraps gets its bootstrap.
    pub replace: Vec<Address>,
}

/// Takes `desired` by value: its attributes and dependencies move into the
/// plan's changes instead of being cloned (and the copies dropped), which was
/// a tenth of a large no-op plan's time.
pub fn diff(
    mut desired: Desired,
    current: &Current,
    catalog: &Catalog,
    opts: &DiffOptions,
) -> Plan {
    let doc = &current.doc;
    // Sized once: at 50k resources each doubling left a freed buffer of
    // ~10 MB behind (a change is ~350 bytes).
    let mut changes: Vec<ResourceChange> = Vec::with_capacity(if opts.destroy {
        doc.resources.len() + current.strays.len()
    } else {
        desired.resources.len() + current.strays.len()
    });
    // Addresses whose provider id will change in this plan: their dependents must follow.
    let mut renewed: BTreeSet<Address> = BTreeSet::new();
    // Running nodes made before gpuform rendered bootstraps that keep
    // running without the one the spec now renders.
    let mut not_bootstrapped: Vec<Address> = Vec::new();

    if !opts.destroy {
        // Dependencies are always of an earlier kind (network → subnet → ...),
        // so visiting by kind sees every dependency's fate before its dependents.
        let mut order: Vec<usize> = (0..desired.resources.len()).collect();
        {
            let rs = &desired.resources;
            order.sort_by_key(|&i| (kind_rank(rs[i].kind), &rs[i].address));
        }
        for i in order {
            // Moved out: only the address (and kind, region) is read afterwards.
            let d = &mut desired.resources[i];
            let desired_attrs = std::mem::take(&mut d.attrs);
            let desired_deps = std::mem::take(&mut d.deps);
            let d = &desired.resources[i];
            let price_after = d.hourly_usd;
            let record = doc.resources.get(&d.address);
            let observed = current.observed.get(&d.address);
            let mut change = ResourceChange {
                address: d.address.clone(),
                kind: d.kind,
                provider: d.target,
                region: d.region.clone(),
                action: Action::NoOp,
                reason: None,
                replace_because: Vec::new(),
                id: None,
                old_provider: None,
                old_region: None,
                before: None,
                after: Some(desired_attrs),
                deps: desired_deps,
                old_deps: Default::default(),
                token: None,
                hourly_usd_before: None,
                hourly_usd_after: price_after,
            };
            match record {
                None => {
                    change.action = Action::Create;
                    change.token = current.abandoned.get(&d.address).cloned();
                    if change.token.is_some() {
                        change.reason = Some("an interrupted apply started it; retried with the same idempotency token".into());
                    }
                }
                Some(r) => {
                    against_record(
                        &mut change,
                        d,
                        r,
                        observed,
                        Seen {
                            doc,
                            catalog,
                            opts,
                            renewed: &renewed,
                        },
                        &mut not_bootstrapped,
                    );
                }
            }
            if matches!(change.action, Action::Create | Action::Replace) {
                renewed.insert(d.address.clone());
            }
            changes.push(change);
        }
    }

    // Everything recorded that is no longer desired (or all, for --destroy).
    for (address, r) in &doc.resources {
        if !opts.destroy && desired.get(address).is_some() {
            continue;
        }
        if matches!(current.observed.get(address), Some(None)) {
            // Already gone: just forget it (a delete that finds nothing succeeds).
        }
        changes.push(delete_change(
            address,
            r,
            catalog,
            opts,
            matches!(current.observed.get(address), Some(None)),
        ));
    }
    for (address, r) in &current.strays {
        let mut c = delete_change(address, r, catalog, opts, false);
        c.reason = Some(
            "a duplicate tagged with this state's lineage (left by an interrupted apply)".into(),
        );
        changes.push(c);
    }

    if !opts.targets.is_empty() {
        changes = restrict_to_targets(changes, &opts.targets);
    }
    // In place: a stable sort's scratch half-copy was ~9 MB at 50k, and an
    // address is planned once (the order of equal keys cannot matter).
    changes.sort_unstable_by(|a, b| a.address.cmp(&b.address));

    let (summary, cost) = totals(&changes);

    let documents = changes_documents(&changes, &desired);
    let warnings = std::mem::take(&mut desired.warnings)
        .into_iter()
        .chain(not_bootstrapped_warning(&not_bootstrapped, &changes))
        .collect();
    Plan {
        format_version: PLAN_FORMAT_VERSION,
        gpuform_version: env!("CARGO_PKG_VERSION").to_string(),
        project: doc.project.clone(),
        state: StateRef {
            lineage: None,
            serial: 0,
        },
        destroy: opts.destroy,
        changes,
        summary,
        cost,
        lockin: std::mem::take(&mut desired.lockin),
        notes: std::mem::take(&mut desired.notes),
        warnings,
        quotas: Vec::new(),
        transfers: transfers(&desired),
        state_path: None,
        workspace: None,
        endpoints: BTreeMap::new(),
        documents,
    }
}

/// What a change is compared against: the state, prices and options.
struct Seen<'a> {
    doc: &'a crate::state::StateDoc,
    catalog: &'a Catalog,
    opts: &'a DiffOptions,
    /// Addresses whose provider id changes in this plan.
    renewed: &'a BTreeSet<Address>,
}

/// A desired resource the state records: created again if it is gone,
/// replaced if it moves or what it stands on is renewed, else its
/// attributes compared.
fn against_record(
    change: &mut ResourceChange,
    d: &crate::resolve::DesiredResource,
    r: &Record,
    observed: Option<&Option<gpuform_provider::ObservedResource>>,
    seen: Seen<'_>,
    not_bootstrapped: &mut Vec<Address>,
) {
    let Seen {
        doc,
        catalog,
        opts,
        renewed,
    } = seen;
    change.id = Some(r.id.clone());
    change.old_deps = r.deps.clone();
    change.hourly_usd_before = record_price(r, catalog, opts.cny_per_usd);
    change.before = Some(actual_attrs(r, observed.and_then(|o| o.as_ref())));
    if matches!(observed, Some(None)) {
        change.action = Action::Create;
        change.id = None;
        change.before = None;
        change.hourly_usd_before = None;
        change.reason = Some(format!("{} was deleted outside gpuform", r.id));
    } else if r.provider != change.provider || r.region != d.region {
        change.action = Action::Replace;
        change.old_provider = Some(r.provider);
        change.old_region = Some(r.region.clone());
        change.reason = Some(format!(
            "moves from {} {} to {} {}",
            r.provider, r.region, change.provider, d.region
        ));
    } else if let Some(dep) = change
        .deps
        .iter()
        .find(|(role, a)| {
            renewed.contains(*a)
                && !follows_by_reattach(d.kind, role)
                && !crate::resolve::ordering_only(role)
        })
        .map(|(_, a)| a)
    {
        change.action = Action::Replace;
        change.reason = Some(format!("{dep} is replaced"));
    } else if binding_deps(&r.deps) != binding_deps(&change.deps) {
        change.action = Action::Replace;
        change.reason = Some("its dependencies changed".into());
    } else if opts.replace.contains(&d.address) {
        change.action = Action::Replace;
        change.reason = Some("asked for with --replace".into());
    } else {
        compare_attrs(change, d.kind, r, observed, not_bootstrapped);
    }
    if change.action == Action::Replace && d.kind == ResourceKind::Volume {
        let why = change.reason.take().unwrap_or_else(|| {
            format!(
                "{} cannot change in place",
                change.replace_because.join(", ")
            )
        });
        change.reason = Some(format!("{why}; the data on it does not follow"));
    }
    if matches!(change.action, Action::NoOp | Action::Update) {
        complete(change, doc, observed.and_then(|o| o.as_ref()), renewed);
    }
}

/// The attributes of a recorded resource against the spec's: an update of
/// what can change in place, a replace naming what cannot.
fn compare_attrs(
    change: &mut ResourceChange,
    kind: ResourceKind,
    r: &Record,
    observed: Option<&Option<gpuform_provider::ObservedResource>>,
    not_bootstrapped: &mut Vec<Address>,
) {
    // `change.after` holds the desired attributes (moved in);
    // a node made before bootstraps is compared without one.
    let wanted = change.after.take().unwrap_or_default();
    let kept = kept_unbootstrapped(r, &wanted);
    if kept.is_some() && wanted.contains_key(crate::resolve::USER_DATA_SHA256) {
        not_bootstrapped.push(change.address.clone());
    }
    let changed = change
        .before
        .as_ref()
        .map(|actual| changed_keys(actual, kept.as_ref().unwrap_or(&wanted)))
        .unwrap_or_default();
    let forcing: Vec<String> = changed
        .iter()
        .filter(|k| !kind.is_updatable(k))
        .cloned()
        .collect();
    if !forcing.is_empty() {
        change.action = Action::Replace;
        change.replace_because = forcing;
        // A new node gets the bootstrap, whatever the old one had.
        change.after = Some(wanted);
    } else {
        change.after = Some(kept.unwrap_or(wanted));
        if !changed.is_empty() {
            change.action = Action::Update;
        }
    }
    if !changed.is_empty() && observed_differs(r, observed.and_then(|o| o.as_ref()), &changed) {
        change.reason = Some("changed outside gpuform".into());
    }
}

/// The plan's data transfers: the reads of a bucket across regions or clouds.
fn transfers(desired: &Desired) -> Vec<super::DataTransfer> {
    desired
        .reads
        .iter()
        .filter(|r| r.crosses())
        .map(|r| super::DataTransfer {
            cluster: r.cluster.clone(),
            cluster_location: format!("{}/{}", r.cluster_cloud, r.cluster_region),
            bucket: r.bucket.clone(),
            bucket_location: format!("{}/{}", r.bucket_cloud, r.bucket_region),
            kind: if r.cluster_cloud == r.bucket_cloud {
                "inter-region"
            } else {
                "internet"
            }
            .to_string(),
            ..super::DataTransfer::default()
        })
        .collect()
}

/// A plan's counts by action and its cost before and after: computed once
/// by [`diff`], again for a plan narrowed to part of its changes
/// (`engine::reconcile` keeps only the repairs).
pub fn totals(changes: &[ResourceChange]) -> (Summary, CostSummary) {
    let mut summary = Summary::default();
    let mut cost = CostSummary::default();
    for c in changes {
        match c.action {
            Action::Create => summary.create += 1,
            Action::Update => summary.update += 1,
            Action::Replace => summary.replace += 1,
            Action::Delete => summary.delete += 1,
            Action::NoOp => summary.no_op += 1,
        }
        cost.hourly_usd_before += c.hourly_usd_before.unwrap_or(0.0);
        if c.action != Action::Delete {
            cost.hourly_usd_after += c.hourly_usd_after.unwrap_or(0.0);
            if c.kind == ResourceKind::Instance && c.hourly_usd_after.is_none() {
                cost.unpriced.push(c.address.clone());
            }
        }
    }
    cost.hourly_usd_delta = cost.hourly_usd_after - cost.hourly_usd_before;
    cost.monthly_usd_before = cost.hourly_usd_before * HOURS_PER_MONTH;
    cost.monthly_usd_after = cost.hourly_usd_after * HOURS_PER_MONTH;
    cost.monthly_usd_delta = cost.hourly_usd_delta * HOURS_PER_MONTH;
    (summary, cost)
}

/// A running node made before gpuform rendered node bootstraps (its
/// recorded `bootstrap` is [`crate::state::PRE_BOOTSTRAP`]) is not replaced
/// for the bootstrap the spec renders now: replacing every node of a
/// running cluster on upgrade would lose their local data and their work.
/// The attributes it is compared with (and keeps) are then the desired ones
/// with its recorded bootstrap and `user_data` instead of the rendered ones.
/// `None` when the node is not such a node, or when the user's own
/// `user_data` changed: that was always a replacement, and is one now, with
/// the bootstrap.
fn kept_unbootstrapped(r: &Record, desired: &Attrs) -> Option<Attrs> {
    use crate::resolve::{OWN_USER_DATA, USER_DATA_SHA256};
    if r.kind != ResourceKind::Instance
        || r.attrs.get("bootstrap").and_then(|v| v.as_str()) != Some(crate::state::PRE_BOOTSTRAP)
    {
        return None;
    }
    // The user's own user_data: recorded as `user_data` then; now
    // `own_user_data` beside a bootstrap, or `user_data` without one.
    let own = if desired.contains_key(USER_DATA_SHA256) {
        desired.get(OWN_USER_DATA)
    } else {
        desired.get(attr::USER_DATA)
    };
    if !same_value(r.attrs.get(attr::USER_DATA), own) {
        return None;
    }
    let mut want = desired.clone();
    for k in [
        USER_DATA_SHA256,
        OWN_USER_DATA,
        attr::USER_DATA,
        "bootstrap",
    ] {
        want.remove(k);
    }
    for k in [attr::USER_DATA, "bootstrap"] {
        if let Some(v) = r.attrs.get(k) {
            want.insert(k.into(), v.clone());
        }
    }
    Some(want)
}

/// The plan's warning about running nodes left without the bootstrap the
/// spec renders (see [`kept_unbootstrapped`]); only those the plan keeps.
fn not_bootstrapped_warning(addresses: &[Address], changes: &[ResourceChange]) -> Option<String> {
    let kept: Vec<&str> = addresses
        .iter()
        .filter(|a| {
            changes
                .iter()
                .any(|c| &c.address == *a && matches!(c.action, Action::NoOp | Action::Update))
        })
        .map(Address::as_str)
        .collect();
    if kept.is_empty() {
        return None;
    }
    Some(format!(
        "bootstrap: not applied to {} running node(s) made before gpuform rendered node bootstraps ({}); \
         `gpuform apply SPEC --replace ADDRESS` replaces a node to apply it (its local disks are lost)",
        kept.len(),
        kept.join(", ")
    ))
}

/// The bootstrap documents the creates and replaces of `changes` need.
fn changes_documents(changes: &[ResourceChange], desired: &Desired) -> BTreeMap<String, String> {
    changes
        .iter()
        .filter(|c| matches!(c.action, Action::Create | Action::Replace))
        .filter_map(|c| {
            c.after
                .as_ref()?
                .get(crate::resolve::USER_DATA_SHA256)?
                .as_str()
        })
        .filter_map(|sha| Some((sha.to_string(), desired.documents.get(sha)?.clone())))
        .collect()
}

fn delete_change(
    address: &Address,
    r: &Record,
    catalog: &Catalog,
    opts: &DiffOptions,
    gone: bool,
) -> ResourceChange {
    ResourceChange {
        address: address.clone(),
        kind: r.kind,
        provider: r.provider,
        region: r.region.clone(),
        action: Action::Delete,
        reason: gone.then(|| format!("{} was already deleted outside gpuform", r.id)),
        replace_because: Vec::new(),
        id: Some(r.id.clone()),
        old_provider: None,
        old_region: None,
        before: Some(r.attrs.clone()),
        after: None,
        deps: Default::default(),
        old_deps: r.deps.clone(),
        token: None,
        hourly_usd_before: record_price(r, catalog, opts.cny_per_usd),
        hourly_usd_after: None,
    }
}

/// A volume whose instance is re-created keeps its data: it is detached
/// and attached to the new instance (an update), not replaced with it.
/// The dependencies a resource is built on (its network, subnet, instance…),
/// without those that only order operations (a bucket its nodes read).
fn binding_deps(deps: &gpuform_provider::Deps) -> Vec<(&gpuform_provider::Key, &Address)> {
    deps.iter()
        .filter(|(role, _)| !crate::resolve::ordering_only(role))
        .collect()
}

fn follows_by_reattach(kind: ResourceKind, role: &str) -> bool {
    kind == ResourceKind::Volume && role == "instance"
}

/// Plans what a multi-step create left undone, or what was undone outside
/// gpuform, as seen in the completion attributes
/// ([`ResourceKind::completion_attrs`]): a volume not attached to its
/// instance is attached (after its instance is re-created, when it is).
fn complete(
    change: &mut ResourceChange,
    doc: &crate::state::StateDoc,
    observed: Option<&gpuform_provider::ObservedResource>,
    renewed: &BTreeSet<Address>,
) {
    if change.kind != ResourceKind::Volume {
        return;
    }
    let Some(instance) = change.deps.get("instance") else {
        return;
    };
    // A provider that does not report attachments leaves the key out.
    let Some(have) = observed.and_then(|o| o.attrs.get(attr::ATTACHED_TO)) else {
        return;
    };
    let renewing = renewed.contains(instance);
    let want = if renewing {
        None
    } else {
        doc.resources.get(instance).map(|r| r.id.clone())
    };
    if !renewing && want.is_some() && have.as_str() == want.as_deref() {
        return;
    }
    let after = serde_json::Value::String(want.unwrap_or_else(|| ATTACH_TO_NEW.to_string()));
    if let Some(b) = change.before.as_mut() {
        b.insert(attr::ATTACHED_TO.into(), have.clone());
    }
    if let Some(a) = change.after.as_mut() {
        a.insert(attr::ATTACHED_TO.into(), after);
    }
    if change.action == Action::NoOp {
        change.reason = Some(if renewing {
            format!("re-attached to the new {instance}; the volume and its data are kept")
        } else if have.is_null() {
            format!(
                "not attached to {instance} (an interrupted apply, or detached outside gpuform)"
            )
        } else {
            format!("attached elsewhere; re-attached to {instance}")
        });
    }
    change.action = Action::Update;
}

/// The planned `attached_to` of a volume whose instance is created by the
/// same apply: its id is known only then (the executor resolves it).
pub const ATTACH_TO_NEW: &str = "(the new instance, known after apply)";

/// Attributes as they are: the provider's observation where it reports a
/// key, the recorded request otherwise (so keys a cloud does not echo back
/// never show as perpetual changes).
pub(crate) fn actual_attrs(
    r: &Record,
    observed: Option<&gpuform_provider::ObservedResource>,
) -> Attrs {
    let mut a = r.attrs.clone();
    if let Some(o) = observed {
        for (k, v) in &o.attrs {
            // Completion attributes are compared against the dependencies
            // (see `complete`), never against the desired attributes.
            if r.kind.completion_attrs().contains(&k.as_str()) {
                continue;
            }
            // Reported attributes (a node's private address) are never compared.
            if r.kind.reported_attrs().contains(&k.as_str()) {
                continue;
            }
            // What an import kept as the cloud has it: the record speaks.
            if r.kept.iter().any(|kept| kept == k) {
                continue;
            }
            // Updatable attributes (tags...) count even when gpuform never set them.
            // (Only a differing value is copied: in a no-op plan none is.)
            if a.get(k) != Some(v) && (a.contains_key(k) || r.kind.is_updatable(k)) {
                a.insert(k.clone(), v.clone());
            }
        }
    }
    a
}

fn observed_differs(
    r: &Record,
    observed: Option<&gpuform_provider::ObservedResource>,
    keys: &[String],
) -> bool {
    let Some(o) = observed else { return false };
    keys.iter()
        .any(|k| o.attrs.contains_key(k) && o.attrs.get(k) != r.attrs.get(k))
}

/// The keys whose values differ, sorted. Both maps are sorted already, so
/// no set of the union is built (this runs once per resource of a plan).
/// Keys the diff does not compare: a rendered `user_data` is never recorded
/// (it is filled with secrets at apply time); its hash stands for it.
pub(crate) fn unrecorded(desired: &Attrs, key: &str) -> bool {
    key == attr::USER_DATA && desired.contains_key(crate::resolve::USER_DATA_SHA256)
}

pub(crate) fn changed_keys(actual: &Attrs, desired: &Attrs) -> Vec<String> {
    let mut changed: Vec<String> = actual
        .iter()
        .filter(|(k, _)| !unrecorded(desired, k))
        .filter(|(k, v)| !same_value(Some(v), desired.get(k)))
        .map(|(k, _)| k.to_string())
        .collect();
    let before = changed.len();
    changed.extend(
        desired
            .iter()
            .filter(|(k, v)| {
                !actual.contains_key(k) && !same_value(None, Some(v)) && !unrecorded(desired, k)
            })
            .map(|(k, _)| k.to_string()),
    );
    if changed.len() > before {
        changed.sort();
    }
    changed
}

/// Absent, null, `{}` and `[]` all mean "none": a cloud that reports empty
/// tags must not show a change against a spec that has no tags.
pub(crate) fn same_value(a: Option<&serde_json::Value>, b: Option<&serde_json::Value>) -> bool {
    fn empty(v: Option<&serde_json::Value>) -> bool {
        match v {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::Object(m)) => m.is_empty(),
            Some(serde_json::Value::Array(a)) => a.is_empty(),
            _ => false,
        }
    }
    a == b || (empty(a) && empty(b))
}

fn kind_rank(k: ResourceKind) -> u8 {
    match k {
        ResourceKind::Network | ResourceKind::Block => 0,
        ResourceKind::Placement => 1,
        ResourceKind::Bucket => 1,
        ResourceKind::Subnet => 2,
        ResourceKind::Firewall => 2,
        ResourceKind::Instance => 3,
        ResourceKind::Volume => 4,
    }
}

/// The hourly price of a recorded instance, from the catalog.
pub fn record_price(r: &Record, catalog: &Catalog, cny_per_usd: f64) -> Option<f64> {
    if r.kind != ResourceKind::Instance {
        return None;
    }
    let itype = r.attrs.get(attr::INSTANCE_TYPE)?.as_str()?;
    let pricing: PricingModel = serde_json::from_value(r.attrs.get(attr::PRICING)?.clone()).ok()?;
    let offering = catalog.offering(r.provider.cloud, &r.region, itype)?;
    Some(offering.prices.get(&pricing)?.hourly_usd(cny_per_usd))
}

/// Keeps the changes whose address matches a target (exactly, or as a
/// prefix ending at a `.` or `[`), plus what those depend on.
fn restrict_to_targets(changes: Vec<ResourceChange>, targets: &[String]) -> Vec<ResourceChange> {
    let by_addr: HashMap<&Address, &ResourceChange> =
        changes.iter().map(|c| (&c.address, c)).collect();
    let mut keep: BTreeSet<&Address> = BTreeSet::new();
    let mut stack: Vec<&Address> = changes
        .iter()
        .map(|c| &c.address)
        .filter(|a| targets.iter().any(|t| a.selected_by(t)))
        .collect();
    while let Some(a) = stack.pop() {
        if !keep.insert(a) {
            continue;
        }
        if let Some(c) = by_addr.get(a) {
            stack.extend(c.deps.values());
        }
    }
    let kept: Vec<bool> = changes.iter().map(|c| keep.contains(&c.address)).collect();
    changes
        .into_iter()
        .zip(kept)
        .filter_map(|(c, k)| k.then_some(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuform_provider::ObservedResource;
    use serde_json::json;

    fn subnet(kept: &[&str]) -> Record {
        Record {
            kind: ResourceKind::Subnet,
            provider: crate::address::Target::real(gpuform_provider::Cloud::Aws),
            region: "us-east-1".into(),
            id: "subnet-1".into(),
            attrs: [("cidr".to_string(), json!("10.0.0.0/20"))]
                .into_iter()
                .collect(),
            deps: Default::default(),
            token: "import-subnet-1".into(),
            reported: Default::default(),
            kept: kept.iter().map(|k| k.to_string()).collect(),
        }
    }

    #[test]
    fn a_kept_attribute_is_left_alone_until_the_spec_changes_it() {
        let observed = ObservedResource {
            kind: ResourceKind::Subnet,
            id: "subnet-1".into(),
            region: "us-east-1".into(),
            ownership: None,
            attrs: [("cidr".to_string(), json!("10.0.5.0/24"))]
                .into_iter()
                .collect(),
            status: "available".into(),
        };
        let spec =
            |cidr: &str| -> Attrs { [("cidr".to_string(), json!(cidr))].into_iter().collect() };
        // Not kept: the cloud's range differs from the spec's, a change.
        let plain = actual_attrs(&subnet(&[]), Some(&observed));
        assert_eq!(changed_keys(&plain, &spec("10.0.0.0/20")), vec!["cidr"]);
        // Kept: the record speaks, and it is what the spec says.
        let kept = actual_attrs(&subnet(&["cidr"]), Some(&observed));
        assert!(changed_keys(&kept, &spec("10.0.0.0/20")).is_empty());
        // Until the spec asks for another range.
        assert_eq!(changed_keys(&kept, &spec("10.0.32.0/20")), vec!["cidr"]);
    }

    /// `--target` keeps what it names and, transitively, what that stands
    /// on; nothing else, and the changes keep their order.
    #[test]
    fn a_target_keeps_its_dependencies_and_nothing_else() {
        let change = |address: &str, deps: &[(&str, &str)]| {
            let mut c = delete_change(
                &Address::from(address),
                &subnet(&[]),
                gpuform_catalog::Catalog::builtin(),
                &DiffOptions::default(),
                false,
            );
            c.deps = deps
                .iter()
                .map(|(r, a)| (r.to_string(), Address::from(*a)))
                .collect();
            c
        };
        let changes = vec![
            change("cluster.a.network", &[]),
            change("cluster.a.subnet[x]", &[("network", "cluster.a.network")]),
            change("cluster.a.node[0]", &[("subnet", "cluster.a.subnet[x]")]),
            change("cluster.a.node[1]", &[("subnet", "cluster.a.subnet[x]")]),
            change("cluster.b.network", &[]),
        ];
        let kept = |targets: &[&str]| -> Vec<String> {
            let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            restrict_to_targets(changes.clone(), &targets)
                .into_iter()
                .map(|c| c.address.to_string())
                .collect()
        };
        assert_eq!(
            kept(&["cluster.a.node[1]"]),
            [
                "cluster.a.network",
                "cluster.a.subnet[x]",
                "cluster.a.node[1]"
            ]
        );
        assert_eq!(kept(&["cluster.b"]), ["cluster.b.network"]);
        assert_eq!(kept(&["cluster.a.node"]).len(), 4);
        assert!(kept(&["cluster.c"]).is_empty());
    }
}
