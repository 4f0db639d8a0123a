//! The spec layer: the YAML file a user writes, loaded with positions,
//! variables substituted, validated with diagnostics that point into the file,
//! described by a JSON Schema, and formatted canonically.
//!
//! ```text
//! text ──yaml (positions)──▶ tree ──vars──▶ tree ──validate──▶ JSON ──serde──▶ Spec
//! ```
//!
//! - [`load`] / [`load_str`]: a [`LoadedSpec`] or every problem found, as [`Diagnostics`];
//!   [`load_salvaging`] also keeps what validated, for the later checks.
//! - [`LoadedSpec::locate`] and [`LoadedSpec::diagnostic`]: later layers report
//!   their own findings (unknown GPU model, region not offered...) at the right line.
//! - [`Vars`]: `--var`, `--var-file`, `GPUFORM_VAR_*`, spec defaults.
//! - [`schema_json`]: the JSON Schema, committed as `schemas/gpuform.schema.json`.
//! - [`format`] / [`format_diff`]: `gpuform fmt` and `gpuform fmt --check`.
//! - [`edit::BlockEditor`]: comment-preserving text edits of one cluster (`gpuform migrate`).

pub mod diagnostics;
pub mod edit;
pub mod fmt;
pub mod load;
pub mod model;
pub mod schema;
pub mod validate;
pub mod vars;
pub mod window;
mod yaml;

pub use diagnostics::{Diagnostic, Diagnostics};
pub use fmt::{format, format_diff, format_named};
pub use load::{load, load_salvaging, load_str, LoadFailure, LoadedSpec};
pub use model::*;
pub use schema::{schema_json, schema_text, SCHEMA_PATH};
pub use vars::Vars;
pub use window::MaintenanceWindow;
