//! Capacity reservations the sandbox account holds, as EC2's On-Demand
//! Capacity Reservations behave: one instance type in one zone, a count,
//! an optional end, tags; an instance launched into one counts against it
//! while it lives. They are made behind gpuform's back
//! ([`SandboxCloud::reserve`], `gpuform sandbox reserve`) as an account
//! buys them outside gpuform, and kept in `reservations.json` beside the
//! inventory (every process sees the same). Expiry is against the day the
//! opener gives ([`SandboxCloud::set_today`]: gpuform's pinned clock).

use crate::checks;
use crate::cloud::{Inner, SandboxCloud};
use crate::SandboxError;
use gpuform_catalog::Day;
use gpuform_provider::{
    Cloud, ErrorKind, ProviderError, Reservation, ReservationFilter, ResourceKind, Result,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The file beside the inventory.
pub const RESERVATIONS_FILE: &str = "reservations.json";

/// One reservation as the sandbox keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReservation {
    pub id: String,
    /// The cloud it mirrors (`aws`).
    pub cloud: Cloud,
    pub region: String,
    pub zone: String,
    pub instance_type: String,
    pub count: u32,
    /// The day it starts (at 00:00 UTC): before it, it is `scheduled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// The day it ends (at 00:00 UTC): from that day on it is `expired`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// What to reserve (see [`SandboxCloud::reserve`]).
#[derive(Debug, Clone)]
pub struct ReserveRequest {
    pub cloud: Cloud,
    pub region: String,
    pub zone: String,
    pub instance_type: String,
    pub count: u32,
    pub start: Option<Day>,
    pub end: Option<Day>,
    pub tags: BTreeMap<String, String>,
}

pub(crate) fn load(dir: &Path) -> std::result::Result<Vec<SandboxReservation>, SandboxError> {
    let path = dir.join(RESERVATIONS_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| SandboxError::Corrupt {
            path,
            line: e.line(),
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(SandboxError::Io {
            path,
            what: "read the reservations".into(),
            source,
        }),
    }
}

fn save(dir: &Path, all: &[SandboxReservation]) -> std::result::Result<(), SandboxError> {
    let path = dir.join(RESERVATIONS_FILE);
    let bytes = serde_json::to_vec_pretty(all).expect("reservations serialize");
    gpuform_catalog::fsio::AtomicWrite::new()
        .write(&path, &bytes)
        .map_err(|source| SandboxError::Io {
            path,
            what: "write the reservations".into(),
            source,
        })
}

/// Forgets every reservation (`gpuform sandbox reset`).
pub(crate) fn reset(dir: &Path) -> std::result::Result<(), SandboxError> {
    match std::fs::remove_file(dir.join(RESERVATIONS_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SandboxError::Io {
            path: dir.join(RESERVATIONS_FILE),
            what: "remove the reservations".into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

impl SandboxReservation {
    /// EC2's `State` on `today`: `scheduled` before its start day,
    /// `active` until its end day, then `expired`.
    pub fn state(&self, today: Option<Day>) -> &'static str {
        let day = |d: &Option<String>| d.as_deref().and_then(Day::parse_iso);
        match today {
            Some(t) if day(&self.end).is_some_and(|e| t >= e) => "expired",
            Some(t) if day(&self.start).is_some_and(|s| t < s) => "scheduled",
            _ => "active",
        }
    }

    /// Live instances launched into it.
    fn used(&self, inner: &Inner) -> u32 {
        inner
            .store
            .cloud(self.cloud)
            .by_id
            .values()
            .filter(|e| e.kind == ResourceKind::Instance && *e.region == *self.region)
            .filter(|e| {
                e.attrs()
                    .get(gpuform_provider::request::CAPACITY_RESERVATION)
                    == Some(&serde_json::Value::String(self.id.clone()))
            })
            .count() as u32
    }

    /// As the provider interface reports it, with its use now.
    pub(crate) fn observed(&self, inner: &Inner, today: Option<Day>) -> Reservation {
        Reservation {
            id: self.id.clone(),
            instance_type: self.instance_type.clone(),
            zone: self.zone.clone(),
            total: self.count,
            available: self.count.saturating_sub(self.used(inner)),
            state: self.state(today).to_string(),
            start: self.start.as_ref().map(|d| format!("{d}T00:00:00Z")),
            end: self.end.as_ref().map(|d| format!("{d}T00:00:00Z")),
            targeted: true,
            tags: self.tags.clone(),
        }
    }
}

/// The reservations of `cloud` in `region` that `filter` names.
pub(crate) fn find(
    dir: &Path,
    inner: &Inner,
    (cloud, region): (Cloud, &str),
    filter: &ReservationFilter,
    today: Option<Day>,
) -> Result<Vec<Reservation>> {
    let all = load(dir).map_err(|e| ProviderError::new(ErrorKind::Transient, e.to_string()))?;
    Ok(all
        .iter()
        .filter(|r| r.cloud == cloud && r.region == region)
        .map(|r| r.observed(inner, today))
        .filter(|r| r.matches(filter))
        .collect())
}

/// Whether a launch of `itype` in `zone` may go into reservation `id`, as
/// EC2 checks a RunInstances with a CapacityReservationTarget (error codes
/// of https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html).
pub(crate) fn admit(
    dir: &Path,
    inner: &Inner,
    (cloud, region): (Cloud, &str),
    (id, itype, zone): (&str, &str, &str),
    today: Option<Day>,
) -> Result<()> {
    let all = load(dir).map_err(|e| ProviderError::new(ErrorKind::Transient, e.to_string()))?;
    if let Some(e) = inner.store.cloud(cloud).by_id.get(id) {
        if e.kind == ResourceKind::Block && *e.region == *region {
            return admit_block(inner, cloud, (id, e.attrs()), (itype, zone), today);
        }
    }
    let Some(r) = all
        .iter()
        .find(|r| r.cloud == cloud && r.region == region && r.id == id)
    else {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("the capacity reservation '{id}' does not exist in {region}"),
        )
        .with_code("InvalidCapacityReservationId.NotFound"));
    };
    let refuse = |msg: String| {
        Err(ProviderError::new(ErrorKind::Invalid, msg).with_code("InvalidParameterValue"))
    };
    if r.state(today) != "active" {
        return refuse(format!(
            "capacity reservation {id} is {} (its window: {} to {})",
            r.state(today),
            r.start.as_deref().unwrap_or("now"),
            r.end.as_deref().unwrap_or("open-ended")
        ));
    }
    if r.instance_type != itype || r.zone != zone {
        return refuse(format!(
            "capacity reservation {id} holds {} in {}, not {itype} in {zone}",
            r.instance_type, r.zone
        ));
    }
    if r.used(inner) >= r.count {
        return Err(ProviderError::new(
            ErrorKind::Capacity,
            format!(
                "capacity reservation {id} has no available capacity ({} of {} in use)",
                r.count, r.count
            ),
        )
        .with_code("ReservationCapacityExceeded"));
    }
    Ok(())
}

/// A launch into a bought Capacity Block: inside its window, of its type
/// in its zone, while it has room (live instances referring to it).
fn admit_block(
    inner: &Inner,
    cloud: Cloud,
    (id, attrs): (&str, gpuform_provider::Attrs),
    (itype, zone): (&str, &str),
    today: Option<Day>,
) -> Result<()> {
    use gpuform_provider::capacity::block_attr as a;
    let text = |k: &str| attrs.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let refuse = |msg: String| {
        Err(ProviderError::new(ErrorKind::Invalid, msg).with_code("InvalidParameterValue"))
    };
    let state = crate::blocks::state(&attrs, today);
    if state != "active" {
        return refuse(format!(
            "Capacity Block {id} is {state} (its window: {} to {})",
            text(a::START),
            text(a::END)
        ));
    }
    if text(a::INSTANCE_TYPE) != itype || text(a::ZONE) != zone {
        return refuse(format!(
            "Capacity Block {id} holds {} in {}, not {itype} in {zone}",
            text(a::INSTANCE_TYPE),
            text(a::ZONE)
        ));
    }
    let count = attrs.get(a::COUNT).and_then(|v| v.as_u64()).unwrap_or(0) as u32;
    let used = inner
        .store
        .cloud(cloud)
        .by_id
        .values()
        .filter(|e| e.kind == ResourceKind::Instance && e.ref_of("block") == Some(id))
        .count() as u32;
    if used >= count {
        return Err(ProviderError::new(
            ErrorKind::Capacity,
            format!("Capacity Block {id} has no available capacity ({used} of {count} in use)"),
        )
        .with_code("ReservationCapacityExceeded"));
    }
    Ok(())
}

impl SandboxCloud {
    /// Makes a reservation behind gpuform's back (as the account's owner
    /// buys one), checked against the mirrored cloud's catalog; returns it.
    pub fn reserve(
        &self,
        req: &ReserveRequest,
    ) -> std::result::Result<SandboxReservation, SandboxError> {
        let bad = |e: ProviderError| SandboxError::Invalid(e.message);
        let reg = checks::region(req.cloud, &req.region).map_err(bad)?;
        checks::zone(req.cloud, reg, &req.zone).map_err(bad)?;
        let ty = checks::instance_type(req.cloud, &req.instance_type).map_err(bad)?;
        checks::offered(req.cloud, &req.region, &req.zone, &ty.name).map_err(bad)?;
        if req.count == 0 {
            return Err(SandboxError::Invalid(
                "a reservation holds at least 1 instance".into(),
            ));
        }
        // One writer at a time, as for the inventory.
        let inner = self.lock();
        let mut all = load(self.dir())?;
        let salt = inner.store.salt;
        drop(inner);
        let id = crate::ids::reservation_id(all.len() as u64 + 1, salt);
        let r = SandboxReservation {
            id,
            cloud: req.cloud,
            region: req.region.clone(),
            zone: req.zone.clone(),
            instance_type: ty.name.clone(),
            count: req.count,
            start: req.start.map(|d| d.to_string()),
            end: req.end.map(|d| d.to_string()),
            tags: req.tags.clone(),
        };
        all.push(r.clone());
        save(self.dir(), &all)?;
        Ok(r)
    }

    /// Every reservation, with its use and state on the pinned day.
    pub fn reservations(
        &self,
    ) -> std::result::Result<Vec<(SandboxReservation, Reservation)>, SandboxError> {
        let mut inner = self.lock();
        inner.sync()?;
        let today = self.today();
        Ok(load(self.dir())?
            .into_iter()
            .map(|r| {
                let seen = r.observed(&inner, today);
                (r, seen)
            })
            .collect())
    }
}
