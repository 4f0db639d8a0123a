//! The gpuform binary's and library's integration tests, as one test executable: a module per area
//! (as cargo's own testsuite is laid out), so the suite links once instead of once per file. Run
//! one area with `cargo test --test suite <module>::`.

mod buckets_e2e;
mod moto;
mod remote_state;
mod support;

mod alibaba_docs;
mod apply_steps;
mod audit_buckets;
mod audit_gc;
#[cfg(feature = "aws")]
mod audit_moto;
mod bootstrap;
mod bucket_cost;
mod bucket_placement;
#[cfg(feature = "aws")]
mod buckets_aws_moto;
mod capacity_alibaba;
mod capacity_aws;
mod capacity_blocks;
mod capacity_sandbox;
#[cfg(feature = "aws")]
mod catalog_aws_moto;
mod catalog_refresh;
mod ci_output;
mod cli_commands;
mod cli_output;
mod double_crash;
#[cfg(feature = "aws")]
mod e2e_aws_moto;
mod e2e_buckets_cos_obs;
mod e2e_buckets_oss;
mod e2e_clouds;
mod e2e_sandbox;
#[cfg(feature = "aws")]
mod events_moto;
mod failover;
mod huawei_docs;
mod import;
mod import_buckets;
#[cfg(feature = "aws")]
mod import_buckets_moto;
mod import_buckets_objstore;
#[cfg(feature = "aws")]
mod import_moto;
mod placement;
mod portability_breakeven;
mod portability_lockin;
mod portability_migrate;
mod portability_offers;
mod portability_prices;
mod prices_aws_moto;
mod prices_refresh;
mod quota;
#[cfg(feature = "aws")]
mod quota_aws;
mod recommend;
mod reconcile;
mod reconcile_window;
mod spec_buckets;
mod spec_errors;
mod spec_fmt;
mod spec_fuzz;
mod spec_schema;
mod spec_vars;
mod state_postgres;
#[cfg(feature = "aws")]
mod state_s3;
mod tencent_docs;
mod volume_type;
