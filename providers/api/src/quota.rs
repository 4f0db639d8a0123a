//! An account's quota for launching an instance type: what a cloud says the
//! limit is and how much of it is in use, read at plan time
//! ([`crate::Provider::quota`]) so that a plan that cannot fit fails before
//! any create.

/// One quota as the cloud reports it, for one instance type and market in
/// one region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaReading {
    /// The cloud's own code for the quota (AWS `L-417A185B`), when it has one.
    pub code: Option<String>,
    /// Its name as the cloud's console shows it
    /// (`Running On-Demand P instances`).
    pub name: String,
    /// What `limit` and `used` count.
    pub unit: QuotaUnit,
    /// The account's limit; `None` when the cloud reports no value.
    pub limit: Option<u64>,
    /// How much of it the account uses now.
    pub used: u64,
    /// How to raise it: a CLI command or a console page.
    pub raise: String,
}

/// What a quota counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaUnit {
    Vcpus,
    Gpus,
    Instances,
}

/// Which purchase a launch is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaMarket {
    OnDemand,
    Spot,
    /// Reserved capacity billed as such (AWS reserved instances are
    /// on-demand launches for quota purposes).
    Reserved,
}
