//! gpuform: declarative, crash-safe provisioning of GPU clusters across clouds.
//!
//! Layers (see ARCHITECTURE.md): spec → resolve (catalog) → plan (diff + DAG)
//! → apply (concurrent walk, journal) → state; providers behind a neutral trait.

// `Diagnostic` is large (source excerpt, YAML path, hint); it is built only on
// bad input, a cold path, so returning it by value costs nothing that matters.
#![allow(clippy::result_large_err)]

pub mod address;
pub mod apply;
pub mod audit;
pub mod bootstrap;
pub mod cli;
pub mod clock;
pub mod cost;
pub mod engine;
pub mod k8s;
pub mod market;
pub mod plan;
pub mod portability;
pub mod providers;
pub mod recommend;
pub mod refresh;
pub mod resolve;
pub mod spec;
pub mod state;
pub mod views;

pub use engine::EngineError;
