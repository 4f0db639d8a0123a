//! The signing crate's integration tests, as one test executable: a module per area (as cargo's own
//! testsuite is laid out), so the suite links once instead of once per file. Run one area with
//! `cargo test -p gpuform-signing --test suite <module>::`.

mod common;

mod independent_verifier;
mod object_storage_recordings;
mod published_examples;
mod sdk_recordings;
