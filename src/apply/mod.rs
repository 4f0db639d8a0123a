//! Apply: walk the plan's dependency graph concurrently, calling providers,
//! and journal every intent and result the moment it is known.
//!
//! - [`graph`]: plan changes → a DAG of operations (petgraph).
//! - [`executor`]: the concurrent walk with parallelism, per-provider rate
//!   budgets, retries, failure isolation and Ctrl-C handling.
//! - [`progress`]: how the walk reports progress ([`progress::ApplyProgress`]);
//!   it prints nothing itself.

pub mod executor;
pub mod graph;
pub mod progress;

pub use executor::{execute, ApplyOptions, ApplyReport, OpOutcome};
pub use graph::{build_graph, Op, OpKind};
