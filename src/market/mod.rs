//! Price queries over the catalog: what the clouds sell and what it costs.
//! Pure computation; `gpuform offers` and `gpuform breakeven` print them.
//!
//! - [`offers`]: every offering meeting a GPU requirement, across clouds and regions.
//! - [`breakeven`]: reserved vs on-demand vs spot for an instance type.

pub mod breakeven;
pub mod offers;
