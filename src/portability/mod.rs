//! The portability commands: where else a cluster could run, and moving it
//! there as a reviewed edit of the spec. Pure computation over the catalog
//! and a spec; none calls a cloud or touches state. The CLI
//! (`cli::portability`) parses and prints.
//!
//! - [`lockin`]: the clusters × clouds matrix of equivalents.
//! - [`migrate`]: re-target a cluster to another cloud as a text edit of the spec;
//!   [`migrate_bucket`]: the same for a bucket (recreated empty; the copy command).

pub mod lockin;
pub mod migrate;
pub mod migrate_bucket;
