//! gpuform: declarative, crash-safe provisioning of GPU clusters across clouds.
//!
//! Layers (see ARCHITECTURE.md): spec → resolve (catalog) → plan (diff + DAG)
//! → apply (concurrent walk, journal) → state; providers behind a neutral trait.

pub mod state;
pub mod spec;
