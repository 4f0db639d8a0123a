//! What the engine's workflows fail with; the CLI turns it into a message
//! and an exit code.

use crate::spec::Diagnostics;
use crate::state::StateError;
use gpuform_provider::ProviderError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Spec(Diagnostics),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("{context}: {error}")]
    Provider {
        context: String,
        error: ProviderError,
    },
    #[error("{0}")]
    Config(String),
    /// Refused input, worded for the user (what is wrong, how to fix it).
    #[error("{0}")]
    User(#[from] gpuform_provider::UserError),
    #[error("invalid plan: {0}")]
    Plan(String),
    #[error("{0}")]
    StalePlan(String),
    /// The account's quota cannot fit what the plan creates, anywhere the
    /// spec allows (`engine::quota`).
    #[error("{0}")]
    Quota(gpuform_provider::UserError),
    #[error("internal error: {0}")]
    Internal(String),
    /// Capacity failover found nowhere left to go: why the last re-plan
    /// failed, and every zone tried during this apply.
    #[error("{error}\n  tried: {}", tried.join("; "))]
    NoCapacityLeft {
        error: Box<EngineError>,
        tried: Vec<String>,
    },
}
