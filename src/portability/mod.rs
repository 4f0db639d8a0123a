//! The portability commands: what a cluster costs and where else it could
//! run. All pure computation over the catalog (and a spec); none calls a
//! cloud or touches state. The CLI (`cli::portability`) parses and prints.
//!
//! - [`cost`]: per-cluster cost in every plan, price-age warnings, the budget guard.
//! - [`offers`]: every offering meeting a GPU requirement, across clouds and regions.
//! - [`breakeven`]: reserved vs on-demand vs spot for an instance type.
//! - [`lockin`]: the clusters × clouds matrix of equivalents.
//! - [`migrate`]: re-target a cluster to another cloud as a text edit of the spec;
//!   [`migrate_bucket`]: the same for a bucket (recreated empty; the copy command).
//! - [`recommend`]: the guide's decision tree, from workload facts to a ranked choice and a spec.

pub mod audit;
pub mod breakeven;
pub mod cost;
pub mod lockin;
pub mod migrate;
pub mod migrate_bucket;
pub mod offers;
pub mod recommend;
