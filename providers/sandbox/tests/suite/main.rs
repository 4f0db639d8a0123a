//! The sandbox crate's integration tests, as one test executable: a module per area (as cargo's own
//! testsuite is laid out), so the suite links once instead of once per file. Run one area with
//! `cargo test -p gpuform-sandbox --test suite <module>::`.

mod common;

mod buckets;
mod crash;
mod faults;
mod inventory;
mod private_ip;
mod resources;
