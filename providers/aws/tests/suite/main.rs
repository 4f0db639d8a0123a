//! The aws crate's integration tests, as one test executable: a module per area (as cargo's own
//! testsuite is laid out), so the suite links once instead of once per file. Run one area with
//! `cargo test -p gpuform-aws --test suite <module>::`.

mod common;

mod errors;
mod images;
mod lifecycle;
mod refresh;
mod storage;
