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

/// What a spec's `{block: …}` asks of EC2's Capacity Block offerings
/// (DescribeCapacityBlockOfferings: InstanceType, InstanceCount,
/// StartDateRange, EndDateRange, CapacityDurationHours;
/// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockOfferings.html).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockQuery {
    pub instance_type: String,
    pub count: u32,
    /// The day it starts, `YYYY-MM-DD` (the offering's start date range is
    /// that day).
    pub start_day: String,
    pub hours: u32,
}

/// One Capacity Block offering, as EC2's `CapacityBlockOffering` reports it
/// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityBlockOffering.html).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockOffering {
    pub id: String,
    pub instance_type: String,
    pub zone: String,
    pub count: u32,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub start: String,
    pub end: String,
    pub hours: u32,
    /// The price of the whole block, paid when it is bought.
    pub upfront_usd: f64,
}

impl BlockOffering {
    /// Whether it is what `q` asks for: the type, the count, the first day
    /// and the length (EC2 also offers blocks a little shorter or longer).
    pub fn fits(&self, q: &BlockQuery) -> bool {
        self.instance_type == q.instance_type
            && self.count == q.count
            && self.hours == q.hours
            && self.start.starts_with(&q.start_day)
    }
}

/// A block's attributes (desired, recorded and observed alike).
pub mod block_attr {
    pub use crate::attr::{INSTANCE_TYPE, ZONE};
    pub const COUNT: &str = "count";
    /// The spec's first day, `YYYY-MM-DD`.
    pub const START_DAY: &str = "start_day";
    pub const HOURS: &str = "hours";
    /// The offering's window, `YYYY-MM-DDTHH:MM:SSZ`.
    pub const START: &str = "start";
    pub const END: &str = "end";
    /// The offering's price, paid once.
    pub const UPFRONT_USD: &str = "upfront_usd";
}

/// How long before a Capacity Block's end EC2 begins terminating its
/// instances: the expiration warning comes 40 minutes before the end and
/// says the instances "will begin to terminate in 10 minutes"
/// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-monitor.html).
pub const BLOCK_TERMINATION_LEAD_SECS: i64 = 30 * 60;
