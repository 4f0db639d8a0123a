//! The stand-ins' own tests, as one test executable: a module per area (as cargo's own testsuite is
//! laid out), so the suite links once instead of once per file. Run one area with `cargo test -p
//! gpuform-standins --test suite <module>::`.

mod verify_object_storage_recordings;
mod verify_sdk_recordings;
