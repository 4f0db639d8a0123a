//! The plan-time read of the capacity clusters name (`capacity:`): each
//! reservation entry is asked of its cloud (`Provider::reservations`), and
//! the state says which nodes already run in which reservation; resolve
//! then fills the nodes in (`resolve::capacity`).

use crate::providers::Providers;
use crate::resolve::capacity::{block_address, BlockFact, CapacityFacts};
use crate::resolve::ResolveOptions;
use crate::spec::{CapacitySource, CloudName, LoadedSpec, ReservationRef};
use crate::state::StateDoc;
use gpuform_catalog::Cloud;
use gpuform_provider::capacity::{block_attr, BLOCK_TERMINATION_LEAD_SECS};
use gpuform_provider::request::CAPACITY_RESERVATION;
use gpuform_provider::{BlockQuery, ReservationFilter, ResourceKind, Scope};

/// Reads what the spec's capacity lists name. `refresh: false` reads
/// nothing from the clouds (the state's record only). In a `preview`
/// (`gpuform plan`), a reservation that cannot be read is a warning, as an
/// unreachable cloud is there: the plan then places only the nodes the
/// state records in it; an apply stops at it (resolve's error).
pub async fn read(
    loaded: &LoadedSpec,
    opts: &ResolveOptions,
    doc: &StateDoc,
    providers: &Providers,
    (refresh, preview): (bool, bool),
) -> (CapacityFacts, Vec<String>) {
    let mut warnings = Vec::new();
    let mut facts = CapacityFacts::default();
    for (address, r) in &doc.resources {
        if r.kind != ResourceKind::Instance || address.is_duplicate() {
            continue;
        }
        if let Some(id) = r.attrs.get(CAPACITY_RESERVATION).and_then(|v| v.as_str()) {
            facts
                .ours
                .entry(id.to_string())
                .or_default()
                .insert(address.clone());
        }
    }
    // Blocks bought (state) or being bought (an interrupted purchase's
    // intent): what they were bought as, so a re-plan changes nothing and a
    // retry asks for the same offering.
    for (name, c) in &loaded.spec.clusters {
        for (i, source) in c.capacity.iter().enumerate() {
            if !matches!(source, CapacitySource::Block(_)) {
                continue;
            }
            let address = block_address(name, i);
            let known = doc
                .resources
                .get(&address)
                .map(|r| (r.attrs.clone(), true))
                .or_else(|| doc.pending.get(&address).map(|p| (p.attrs.clone(), false)));
            if let Some((attrs, bought)) = known {
                facts
                    .blocks
                    .insert((name.clone(), i), Ok(BlockFact { attrs, bought }));
            }
        }
    }
    if !refresh {
        return (facts, warnings);
    }
    for (name, c) in &loaded.spec.clusters {
        // Reservations are the account's in one region of AWS or Alibaba
        // Cloud (validated; `cloud: sandbox` mirrors AWS).
        let sandbox = opts.sandbox || c.cloud == CloudName::Sandbox;
        let target = crate::address::Target {
            cloud: if c.cloud == CloudName::Alibaba {
                Cloud::Alibaba
            } else {
                Cloud::Aws
            },
            sandbox,
        };
        for (i, source) in c.capacity.iter().enumerate() {
            if let CapacitySource::Block(b) = source {
                if facts.blocks.contains_key(&(name.clone(), i)) {
                    continue;
                }
                let found = offering(name, c, b, target, providers).await;
                facts.blocks.insert((name.clone(), i), found);
                continue;
            }
            let CapacitySource::Reservation(r) = source else {
                continue;
            };
            let filter = match r {
                ReservationRef::Id(id) => ReservationFilter::Id(id.clone()),
                ReservationRef::Tags { tags } => ReservationFilter::Tags(tags.clone()),
            };
            let scope = Scope {
                region: c.region.clone(),
            };
            let found = match providers.get(target).await {
                Ok(p) => p
                    .reservations(&scope, &filter)
                    .await
                    .map(|mut all| {
                        // In id order, so the fill order is stable.
                        all.sort_by(|a, b| a.id.cmp(&b.id));
                        all
                    })
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match found {
                Err(why) if preview => warnings.push(format!(
                    "cluster.{name}: reservation {r} could not be read ({why}); this plan places in it only the nodes the state records there, and an apply stops until it can be read"
                )),
                found => {
                    facts.read.insert((name.clone(), i), found);
                }
            }
        }
    }
    (facts, warnings)
}

/// The offering a cluster's `{block: …}` would buy: the first EC2 lists
/// for its instance type, count, first day and length.
async fn offering(
    name: &str,
    c: &crate::spec::Cluster,
    b: &crate::spec::BlockRequest,
    target: crate::address::Target,
    providers: &Providers,
) -> Result<BlockFact, String> {
    use gpuform_provider::capacity::block_attr as a;
    let Some(itype) = &c.instance_type else {
        return Err(format!(
            "cluster {name} buys a Capacity Block, which holds one instance type: write `instance_type:`"
        ));
    };
    let q = BlockQuery {
        instance_type: itype.clone(),
        count: b.count.unwrap_or(c.nodes),
        start_day: b.start.clone(),
        hours: b.hours,
    };
    let scope = Scope {
        region: c.region.clone(),
    };
    let p = providers.get(target).await.map_err(|e| e.to_string())?;
    let offers = p
        .block_offerings(&scope, &q)
        .await
        .map_err(|e| format!("Capacity Block offerings could not be read: {e}"))?;
    let Some(o) = offers.into_iter().find(|o| o.fits(&q)) else {
        return Err(format!(
            "no Capacity Block of {} x {} for {} hours starting {} is offered in {}",
            q.count, q.instance_type, q.hours, q.start_day, c.region
        ));
    };
    let attrs = [
        (a::INSTANCE_TYPE, serde_json::json!(o.instance_type)),
        (a::COUNT, serde_json::json!(o.count)),
        (a::ZONE, serde_json::json!(o.zone)),
        (a::START_DAY, serde_json::json!(q.start_day)),
        (a::HOURS, serde_json::json!(o.hours)),
        (a::START, serde_json::json!(o.start)),
        (a::END, serde_json::json!(o.end)),
        (a::UPFRONT_USD, serde_json::json!(o.upfront_usd)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Ok(BlockFact {
        attrs,
        bought: false,
    })
}

/// Whether node `node` may launch into block `block` (its attributes) at
/// `now`: not before its start, not once EC2 has begun terminating its
/// instances ([`BLOCK_TERMINATION_LEAD_SECS`] before its end).
/// The purchase guard: a plan that buys Capacity Blocks (a create of kind
/// `block`: paid up front, never cancelled) is applied only when the caller
/// allowed purchases (`ApplyOptions::allow_purchase`, `--allow-purchase`).
/// `engine::apply_plan` checks every plan it is given, a failover's re-plan
/// included, before any call or state write; the CLI checks too, before its
/// confirmation prompt, so the refusal comes first.
pub fn purchase_refusal(
    plan: &crate::plan::Plan,
    allowed: bool,
) -> Result<(), gpuform_provider::UserError> {
    let purchases: Vec<&str> = plan
        .changes
        .iter()
        .filter(|c| c.kind == ResourceKind::Block && c.action == crate::plan::Action::Create)
        .map(|c| c.address.as_str())
        .collect();
    if purchases.is_empty() || allowed {
        return Ok(());
    }
    Err(gpuform_provider::UserError::new(
        format!(
            "this apply would buy {} Capacity Block(s) ({}), which are paid up front and cannot be cancelled; nothing was done",
            purchases.len(),
            purchases.join(", ")
        ),
        "review the plan's block lines (offering, window, upfront price), then apply again with --allow-purchase",
    ))
}

pub fn block_window_open(
    node: &str,
    block: &str,
    attrs: &gpuform_provider::Attrs,
    now: i64,
) -> Result<(), String> {
    let at = |k: &str| attrs.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let (start, end) = (at(block_attr::START), at(block_attr::END));
    let parsed = |t: &str| crate::clock::parse_instant(t);
    let hint = "  hint: a block takes launches from its start until 30 minutes before its end; change the block's `start` (a new block is bought), or move the node to another source of `capacity`";
    match (parsed(start), parsed(end)) {
        (Some(s), _) if now < s => Err(format!(
            "{node}: Capacity Block {block} has not started: its window is {start} to {end}, and it is {} now\n{hint}",
            crate::clock::format_instant(now)
        )),
        (_, Some(e)) if now >= e - BLOCK_TERMINATION_LEAD_SECS => Err(format!(
            "{node}: Capacity Block {block} has ended ({end}; EC2 terminates its instances from 30 minutes before), and it is {} now\n{hint}",
            crate::clock::format_instant(now)
        )),
        (None, _) | (_, None) => Err(format!(
            "{node}: Capacity Block {block} has no window recorded (start `{start}`, end `{end}`)\n{hint}"
        )),
        _ => Ok(()),
    }
}

/// What a plan says of its Capacity Blocks: a purchase's offering, window,
/// price and that it cannot be cancelled; a block ending within 24 hours or
/// over; a destroyed block forgotten, not deleted.
pub fn block_findings(plan: &mut crate::plan::Plan, now: i64) {
    use crate::plan::Action;
    for c in plan
        .changes
        .iter()
        .filter(|c| c.kind == ResourceKind::Block)
    {
        let attrs = match c.action {
            Action::Delete => c.before.as_ref(),
            _ => c.after.as_ref(),
        };
        let Some(attrs) = attrs else { continue };
        let text = |k: &str| {
            attrs
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .to_string()
        };
        let end = text(block_attr::END);
        match c.action {
            Action::Delete => {
                plan.warnings.push(format!(
                    "{}: a Capacity Block cannot be deleted or cancelled; destroying it only forgets it, and it stays the account's until {end}",
                    c.address
                ));
                continue;
            }
            Action::Create => plan.notes.push(format!(
                "{}: buys Capacity Block offering {} x {} in {}, {} to {end}, ${:.2} paid up front; it cannot be cancelled, and EC2 begins terminating its instances 30 minutes before its end (apply needs --allow-purchase)",
                c.address,
                attrs.get(block_attr::COUNT).and_then(|v| v.as_u64()).unwrap_or(0),
                text(block_attr::INSTANCE_TYPE),
                text(block_attr::ZONE),
                text(block_attr::START),
                attrs.get(block_attr::UPFRONT_USD).and_then(|v| v.as_f64()).unwrap_or(0.0),
            )),
            _ => {}
        }
        match crate::clock::parse_instant(&end) {
            Some(e) if e <= now => plan.warnings.push(format!(
                "{}: Capacity Block ended at {end}; no node can launch into it",
                c.address
            )),
            Some(e) if e - now <= 24 * 3600 => plan.warnings.push(format!(
                "{}: Capacity Block ends within 24 hours, at {end}; EC2 begins terminating its instances 30 minutes before",
                c.address
            )),
            _ => {}
        }
    }
}
