//! Capacity an account holds ahead of launching: reservations (AWS
//! On-Demand Capacity Reservations), read at plan time
//! ([`crate::Provider::reservations`]) so that the plan says which node
//! lands in which reservation and what is left of each, and a create
//! launches into one ([`crate::InstanceSpec::capacity_reservation`]).

use std::collections::BTreeMap;

/// How a spec names a reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReservationFilter {
    /// Its id (`cr-0123456789abcdef0`).
    Id(String),
    /// Every reservation carrying all these tags.
    Tags(BTreeMap<String, String>),
}

/// One reservation as the cloud reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub id: String,
    pub instance_type: String,
    pub zone: String,
    /// Instances it holds in all.
    pub total: u32,
    /// Instances that may still launch into it (the rest run in it now).
    pub available: u32,
    /// `active`, `expired`, `cancelled`, `pending`, `failed`, `scheduled`
    /// (EC2's `State`); only an active one takes launches.
    pub state: String,
    /// When it starts taking launches (`YYYY-MM-DDTHH:MM:SSZ`), when the
    /// cloud says.
    pub start: Option<String>,
    /// When it ends (`YYYY-MM-DDTHH:MM:SSZ`), `None` when open-ended.
    pub end: Option<String>,
    /// Whether it takes only launches that name it (`targeted`) or any
    /// matching launch (`open`).
    pub targeted: bool,
    pub tags: BTreeMap<String, String>,
}

impl Reservation {
    /// Whether it takes launches now.
    pub fn is_active(&self) -> bool {
        self.state == "active"
    }

    /// Whether `filter` names it.
    pub fn matches(&self, filter: &ReservationFilter) -> bool {
        match filter {
            ReservationFilter::Id(id) => self.id == *id,
            ReservationFilter::Tags(want) => want.iter().all(|(k, v)| self.tags.get(k) == Some(v)),
        }
    }
}
