//! The plan-time read of the capacity clusters name (`capacity:`): each
//! reservation entry is asked of its cloud (`Provider::reservations`), and
//! the state says which nodes already run in which reservation; resolve
//! then fills the nodes in (`resolve::capacity`).

use crate::address::Address;
use crate::providers::Providers;
use crate::resolve::capacity::CapacityFacts;
use crate::resolve::ResolveOptions;
use crate::spec::{CapacitySource, CloudName, LoadedSpec, ReservationRef};
use crate::state::StateDoc;
use gpuform_catalog::Cloud;
use gpuform_provider::request::CAPACITY_RESERVATION;
use gpuform_provider::{ReservationFilter, ResourceKind, Scope};

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
        if r.kind != ResourceKind::Instance || Address::new(address).is_duplicate() {
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
    if !refresh {
        return (facts, warnings);
    }
    for (name, c) in &loaded.spec.clusters {
        // Reservations are the account's in one region of AWS (validated).
        let sandbox = opts.sandbox || c.cloud == CloudName::Sandbox;
        let target = crate::address::Target {
            cloud: Cloud::Aws,
            sandbox,
        };
        for (i, source) in c.capacity.iter().enumerate() {
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
            let found = match providers.get(&target.key()).await {
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
