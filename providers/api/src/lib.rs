//! The neutral provider interface of gpuform.
//!
//! Everything above this crate (spec, resolve, plan, apply, state) speaks only
//! these types; everything below it (one crate per cloud, and the sandbox)
//! translates them into one cloud's API calls. Nothing cloud-specific leaks
//! upward except neutral error kinds and opaque provider ids.

pub mod error;
pub mod provider;
pub mod resource;

pub use error::{ErrorKind, ProviderError};
/// The clouds are data the catalog describes; the interface names them from there.
pub use gpuform_catalog::Cloud;
pub use provider::{CreateRequest, Provider, Scope};
pub use resource::{Attrs, ObservedResource, OwnershipTags, ResourceKind};
