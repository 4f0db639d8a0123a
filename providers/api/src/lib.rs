//! The neutral provider interface of gpuform.
//!
//! Everything above this crate (spec, resolve, plan, apply, state) speaks only
//! these types; everything below it (one crate per cloud, and the sandbox)
//! translates them into one cloud's API calls. Nothing cloud-specific leaks
//! upward except neutral error kinds and opaque provider ids.
//!
//! - [`Provider`] is what the engine calls; a cloud crate implements
//!   [`CloudDriver`] and its parts ([`NetworkApi`], [`ComputeApi`],
//!   [`StorageApi`], [`RefreshApi`], [`TagApi`]: typed, one method per kind
//!   and operation) and gets `Provider` from [`driver`].
//! - [`request`], [`change`], [`ingress`] and [`tags`] are the typed values
//!   a driver receives, read once from the engine's attribute maps.

pub mod address;
pub mod backoff;
pub mod bucket;
pub mod bucket_name;
pub mod capacity;
pub mod change;
pub mod discovery;
pub mod driver;
pub mod error;
pub mod events;
pub mod images;
pub mod ingress;
pub mod inventory;
pub mod prices;
pub mod provider;
pub mod quota;
pub mod request;
pub mod resource;
pub mod sorted_map;
pub mod tags;

pub use address::Address;
pub use backoff::Backoff;
pub use bucket_name::BucketNameError;
pub use capacity::{BlockOffering, BlockQuery, Reservation, ReservationFilter};
pub use change::{Attachment, BucketChange, ChangeSet, Update};
pub use discovery::{CatalogApi, RegionOffers};
pub use driver::{
    BucketApi, CloudDriver, ComputeApi, Lookup, NetworkApi, RefreshApi, StorageApi, TagApi,
};
pub use error::{ok_if_gone, ErrorKind, ProviderError, Result, UserError};
pub use events::{Delivery, EventKind, EventSource, InstanceEvent};
/// The clouds are data the catalog describes; the interface names them from there.
pub use gpuform_catalog::Cloud;
pub use images::{is_raw_image_id, is_raw_image_id_on_any, ImageCache};
pub use ingress::{IngressRule, ObservedIngress, Protocol};
pub use inventory::{
    Inventory, InventoryApi, InventoryBucket, InventoryInstance, InventoryVolume, RunState,
};
pub use prices::{LiveQuote, PriceApi, QuoteTerm};
pub use provider::{AlsoList, CreateRequest, ExistingResource, Provider, Scope};
pub use quota::{QuotaMarket, QuotaReading, QuotaUnit};
pub use request::{
    BlockSpec, BucketLifecycle, BucketSpec, Create, Desired, FirewallSpec, InstanceSpec,
    NetworkSpec, ObservedVolumeType, PlacementSpec, PlacementStrategy, Pricing, StorageClass,
    SubnetSpec, VolumeSpec, VolumeType,
};
pub use resource::{attr, Attrs, Deps, ObservedResource, OwnershipTags, ResourceKind};
pub use sorted_map::{Key, SortedMap};
pub use tags::{TagDiff, UserTags};
