//! Apply: walk the plan's dependency graph concurrently, calling providers,
//! and journal every intent and result the moment it is known.
//!
//! - [`graph`]: plan changes → a DAG of operations (petgraph).
//! - [`executor`]: the concurrent walk with parallelism, per-provider rate
//!   budgets, retries, failure isolation and Ctrl-C handling.
//! - [`progress`]: a progress bar on a terminal, plain lines otherwise.

pub mod executor;
pub mod graph;
pub mod progress;

pub use executor::{execute, ApplyOptions, ApplyReport, OpOutcome};
pub use graph::{build_graph, Op, OpKind};
