//! The alibaba crate's integration tests, as one test executable: a module per area (as cargo's own
//! testsuite is laid out), so the suite links once instead of once per file. Run one area with
//! `cargo test -p gpuform-alibaba --test suite <module>::`.

mod common;

mod buckets;
mod docs;
mod inventory;
mod mock;
mod pools;
mod quota;
mod sdk_request_shape;
mod volumes;
