//! Typed create requests: a [`CreateRequest`] read once into what each kind
//! of resource needs.
//!
//! The engine speaks in neutral attribute maps (diffing, state and plans are
//! one generic mechanism over them); a cloud needs fields. Reading the map
//! here, once, means that a missing or malformed attribute is the same error
//! with the same message on every cloud, and that a new attribute is a new
//! field that every cloud's create must handle or the compiler says so.

use crate::ingress::IngressRule;
use crate::resource::attr;
use crate::tags::UserTags;
use crate::Result;
use crate::{
    Attrs, Cloud, CreateRequest, ErrorKind, OwnershipTags, ProviderError, ResourceKind, Scope,
};
use serde_json::Value;

/// A create, typed: where, by whom (ownership, set atomically with the
/// creation), and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Create<T> {
    pub scope: Scope,
    pub ownership: OwnershipTags,
    pub tags: UserTags,
    pub spec: T,
}

impl<T> Create<T> {
    pub fn region(&self) -> &str {
        &self.scope.region
    }
}

/// The kind of resource a typed spec creates.
pub trait Spec {
    const KIND: ResourceKind;
}

impl<T: Spec> Create<T> {
    /// An attribute or reference (`zone`, `subnet`, `instance` ...) that the
    /// neutral request may leave out but without which `cloud` cannot create
    /// this kind: checked by every cloud with this one call, so the refusal
    /// reads the same everywhere.
    pub fn needs<'a>(
        &self,
        cloud: Cloud,
        what: &str,
        value: &'a Option<String>,
    ) -> Result<&'a str> {
        value.as_deref().ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "{} {}: {cloud} needs `{what}` to create it, and the request has none",
                    T::KIND,
                    self.ownership.address,
                ),
            )
        })
    }
}

impl Create<InstanceSpec> {
    /// For a cloud whose reservations gpuform does not speak: a launch that
    /// names one is refused, never made as an ordinary one.
    pub fn refuse_reservation(&self, cloud: Cloud) -> Result<()> {
        match &self.spec.capacity_reservation {
            None => Ok(()),
            Some(id) => Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "instance {}: gpuform cannot launch into capacity reservation {id} on {cloud} (reservations are supported on aws and alibaba)",
                    self.ownership.address
                ),
            )),
        }
    }
}

/// A network (VPC): `cidr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSpec {
    pub cidr: String,
}

/// A subnet of a network in one zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetSpec {
    /// Provider id of the network.
    pub network: String,
    pub zone: String,
    pub cidr: String,
}

/// A firewall (security group) of a network. All traffic between its
/// members is always allowed, besides `ingress`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirewallSpec {
    /// Provider id of the network.
    pub network: String,
    pub ingress: Vec<IngressRule>,
    /// The group only, with no rule at all (not even the members' rule):
    /// its rules come with an update of `ingress`, so that instances, which
    /// need only the group, are not kept waiting for them (the create
    /// attribute [`BARE`], set by the engine's split create).
    pub bare: bool,
}

/// A firewall create attribute: `true` makes the group without its rules
/// (see [`FirewallSpec::bare`]). Sent, never recorded.
pub const BARE: &str = "bare";

/// How a placement group places its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementStrategy {
    /// Packed close together, for NVLink/RDMA traffic between nodes.
    Cluster,
    /// Spread over distinct hardware.
    Spread,
}

impl PlacementStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            PlacementStrategy::Cluster => "cluster",
            PlacementStrategy::Spread => "spread",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementSpec {
    pub strategy: PlacementStrategy,
    /// Whether the group is asked to carry an RDMA fabric (optional `rdma`;
    /// the engine does not send it today): a cloud that can pack RDMA nodes
    /// only in a dedicated cluster (Tencent's HPC clusters) refuses it
    /// rather than pretend.
    pub rdma: bool,
}

/// How an instance is paid for: the catalog's pricing models, so that a
/// spec, a price and a launch speak of the same four.
pub use gpuform_catalog::PricingModel as Pricing;

/// The instance attribute naming the reservation a node launches into.
pub const CAPACITY_RESERVATION: &str = "capacity_reservation";

/// One GPU node.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceSpec {
    pub instance_type: String,
    /// A logical image name (`ubuntu-22.04-cuda`) or a raw image id.
    pub image: String,
    pub zone: Option<String>,
    pub pricing: Pricing,
    /// With [`Pricing::Spot`] only: the most to pay per node-hour, in the
    /// currency the catalog quotes this cloud in (USD on AWS, CNY on
    /// Alibaba, Tencent and Huawei); positive. Absent, the cloud's own cap
    /// (the on-demand price) applies.
    pub spot_max_price: Option<f64>,
    /// Root disk size in GiB; the image's default when absent.
    pub root_gb: Option<u32>,
    /// Whether the node gets the cloud's RDMA fabric (EFA, eRDMA, RoCE).
    pub rdma: bool,
    pub user_data: Option<String>,
    /// Provider ids of what the node is placed in.
    pub subnet: Option<String>,
    pub firewall: Option<String>,
    pub placement: Option<String>,
    /// The capacity reservation to launch into (`cr-…`), which must hold
    /// this type in this zone; absent, the cloud's open capacity.
    pub capacity_reservation: Option<String>,
    /// Whether that reservation is a Capacity Block (the node's `block`
    /// reference): EC2 then needs `InstanceMarketOptions.MarketType` =
    /// `capacity-block` besides the target.
    pub capacity_block: bool,
}

/// A Capacity Block to buy: the offering of this type, count, zone and
/// window is looked up and purchased (see [`crate::capacity::BlockQuery`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockSpec {
    pub query: crate::capacity::BlockQuery,
    /// The zone of the offering the plan showed.
    pub zone: String,
    /// The window the plan showed (`YYYY-MM-DDTHH:MM:SSZ`).
    pub start: String,
    pub end: String,
}

/// A data disk, attached to `instance` when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSpec {
    pub size_gb: u32,
    pub zone: Option<String>,
    /// Each cloud's `volume_types.rs` says what it is there; absent from
    /// the attributes, [`VolumeType`]'s default.
    pub volume_type: VolumeType,
    /// Provider id of the instance the disk is attached to.
    pub instance: Option<String>,
}

/// An object-storage bucket (neutral attributes on [`ResourceKind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketSpec {
    /// The full name on the cloud (on COS, `<name>-<APPID>`).
    pub name: String,
    pub storage_class: StorageClass,
    pub versioning: bool,
    /// Server-side encryption with cloud-managed keys.
    pub encryption: bool,
    pub lifecycle: BucketLifecycle,
    /// Always true from the engine; a bucket is never public.
    pub public_access_blocked: bool,
    /// Whether a delete may empty the bucket first.
    pub force_destroy: bool,
}

/// The storage class of a bucket's objects: the catalog's, mapped to each
/// cloud's own by its crate.
pub use gpuform_catalog::storage::StorageClass;
/// A data volume's neutral type: one for the spec, requests and clouds.
pub use gpuform_catalog::volume::{ObservedVolumeType, VolumeType};

/// A bucket's lifecycle rules; `None` is no rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BucketLifecycle {
    /// Move objects to the archive class this many days after writing.
    pub archive_after_days: Option<u32>,
    /// Delete noncurrent versions this many days after they were replaced.
    pub expire_noncurrent_after_days: Option<u32>,
}

impl BucketLifecycle {
    pub fn is_empty(&self) -> bool {
        *self == BucketLifecycle::default()
    }

    /// Reads the neutral `lifecycle` attribute (absent or null: no rules).
    pub fn parse(v: Option<&Value>) -> Result<BucketLifecycle> {
        let bad =
            |m: String| ProviderError::new(ErrorKind::Invalid, format!("bucket `lifecycle`: {m}"));
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Ok(BucketLifecycle::default());
        };
        let Some(obj) = v.as_object() else {
            return Err(bad(format!("must be an object, got {v}")));
        };
        let mut out = BucketLifecycle::default();
        for (k, n) in obj {
            let days = if n.is_null() {
                None
            } else {
                Some(
                    n.as_u64()
                        .and_then(|d| u32::try_from(d).ok())
                        .filter(|d| *d > 0)
                        .ok_or_else(|| {
                            bad(format!("`{k}` must be a number of days ≥ 1, got {n}"))
                        })?,
                )
            };
            match k.as_str() {
                "archive_after_days" => out.archive_after_days = days,
                "expire_noncurrent_after_days" => out.expire_noncurrent_after_days = days,
                other => return Err(bad(format!("unknown rule `{other}`"))),
            }
        }
        Ok(out)
    }

    /// The neutral attribute value: an object of the rules set (`{}` for none).
    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        if let Some(d) = self.archive_after_days {
            m.insert("archive_after_days".into(), Value::from(d));
        }
        if let Some(d) = self.expire_noncurrent_after_days {
            m.insert("expire_noncurrent_after_days".into(), Value::from(d));
        }
        Value::Object(m)
    }
}

/// Any create, by kind.
macro_rules! spec_kinds {
    ($($spec:ty => $kind:ident),* $(,)?) => {
        $(impl Spec for $spec {
            const KIND: ResourceKind = ResourceKind::$kind;
        })*
    };
}

spec_kinds! {
    NetworkSpec => Network,
    SubnetSpec => Subnet,
    FirewallSpec => Firewall,
    PlacementSpec => Placement,
    InstanceSpec => Instance,
    VolumeSpec => Volume,
    BucketSpec => Bucket,
    BlockSpec => Block,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Desired {
    Network(Create<NetworkSpec>),
    Subnet(Create<SubnetSpec>),
    Firewall(Create<FirewallSpec>),
    Placement(Create<PlacementSpec>),
    Instance(Create<InstanceSpec>),
    Volume(Create<VolumeSpec>),
    Bucket(Create<BucketSpec>),
    Block(Create<BlockSpec>),
}

impl Desired {
    /// Reads `req` into its kind's typed value. `tags` is the request's
    /// `tags` attribute, already checked by the cloud's rules.
    pub fn parse(req: &CreateRequest, tags: UserTags) -> Result<Desired> {
        let r = Reader { req };
        fn create<T>(req: &CreateRequest, tags: &UserTags, spec: T) -> Create<T> {
            Create {
                scope: req.scope.clone(),
                ownership: req.ownership.clone(),
                tags: tags.clone(),
                spec,
            }
        }
        let t = &tags;
        Ok(match req.kind {
            ResourceKind::Network => Desired::Network(create(
                req,
                t,
                NetworkSpec {
                    cidr: r.required_str(attr::CIDR)?,
                },
            )),
            ResourceKind::Subnet => Desired::Subnet(create(
                req,
                t,
                SubnetSpec {
                    network: r.required_ref("network")?,
                    zone: r.required_str(attr::ZONE)?,
                    cidr: r.required_str(attr::CIDR)?,
                },
            )),
            ResourceKind::Firewall => Desired::Firewall(create(
                req,
                t,
                FirewallSpec {
                    network: r.required_ref("network")?,
                    ingress: IngressRule::parse_list(req.attrs.get(attr::INGRESS))?,
                    bare: r.bool(BARE)?.unwrap_or(false),
                },
            )),
            ResourceKind::Placement => Desired::Placement(create(
                req,
                t,
                PlacementSpec {
                    strategy: match r.str(attr::STRATEGY)?.as_deref() {
                        None | Some("cluster") => PlacementStrategy::Cluster,
                        Some("spread") => PlacementStrategy::Spread,
                        Some(other) => {
                            return Err(r.bad(
                                "strategy",
                                format!(
                                    "`{other}` is not a placement strategy; use cluster or spread"
                                ),
                            ))
                        }
                    },
                    rdma: r.bool(attr::RDMA)?.unwrap_or(false),
                },
            )),
            ResourceKind::Instance => Desired::Instance(create(
                req,
                t,
                InstanceSpec {
                    instance_type: r.required_str(attr::INSTANCE_TYPE)?,
                    image: r.required_str(attr::IMAGE)?,
                    zone: r.str(attr::ZONE)?,
                    pricing: r.pricing()?,
                    spot_max_price: r.spot_max_price()?,
                    root_gb: r.u32(attr::ROOT_GB)?,
                    rdma: r.bool(attr::RDMA)?.unwrap_or(false),
                    user_data: r.str(attr::USER_DATA)?,
                    subnet: r.optional_ref("subnet"),
                    firewall: r.optional_ref("firewall"),
                    placement: r.optional_ref("placement"),
                    // A node in a block launches into the block's reservation.
                    capacity_reservation: match r.optional_ref("block") {
                        Some(id) => Some(id),
                        None => r.str(CAPACITY_RESERVATION)?,
                    },
                    capacity_block: r.optional_ref("block").is_some(),
                },
            )),
            ResourceKind::Volume => Desired::Volume(create(
                req,
                t,
                VolumeSpec {
                    size_gb: r
                        .u32(attr::SIZE_GB)?
                        .ok_or_else(|| r.missing(attr::SIZE_GB))?,
                    zone: r.str(attr::ZONE)?,
                    volume_type: match r.str(attr::VOLUME_TYPE)? {
                        None => VolumeType::default(),
                        Some(t) => VolumeType::parse(&t).ok_or_else(|| {
                            r.bad(
                                "volume_type",
                                format!("`{t}` is not one of {}", VolumeType::names().join(", ")),
                            )
                        })?,
                    },
                    instance: r.optional_ref("instance"),
                },
            )),
            ResourceKind::Block => {
                use crate::capacity::block_attr as a;
                Desired::Block(create(
                    req,
                    t,
                    BlockSpec {
                        query: crate::capacity::BlockQuery {
                            instance_type: r.required_str(a::INSTANCE_TYPE)?,
                            count: r.u32(a::COUNT)?.ok_or_else(|| r.missing(a::COUNT))?,
                            start_day: r.required_str(a::START_DAY)?,
                            hours: r.u32(a::HOURS)?.ok_or_else(|| r.missing(a::HOURS))?,
                        },
                        zone: r.required_str(a::ZONE)?,
                        start: r.required_str(a::START)?,
                        end: r.required_str(a::END)?,
                    },
                ))
            }
            ResourceKind::Bucket => Desired::Bucket(create(
                req,
                t,
                BucketSpec {
                    name: r.required_str(attr::NAME)?,
                    storage_class: match r.str(attr::STORAGE_CLASS)? {
                        None => StorageClass::Standard,
                        Some(c) => StorageClass::parse(&c).ok_or_else(|| {
                            r.bad(
                                "storage_class",
                                format!("`{c}` is not one of standard, infrequent, archive"),
                            )
                        })?,
                    },
                    versioning: r.bool(attr::VERSIONING)?.unwrap_or(false),
                    encryption: r.bool(attr::ENCRYPTION)?.unwrap_or(true),
                    lifecycle: BucketLifecycle::parse(req.attrs.get(attr::LIFECYCLE))?,
                    public_access_blocked: r.bool(attr::PUBLIC_ACCESS_BLOCKED)?.unwrap_or(true),
                    force_destroy: r.bool(attr::FORCE_DESTROY)?.unwrap_or(false),
                },
            )),
        })
    }

    pub fn kind(&self) -> ResourceKind {
        match self {
            Desired::Network(_) => ResourceKind::Network,
            Desired::Subnet(_) => ResourceKind::Subnet,
            Desired::Firewall(_) => ResourceKind::Firewall,
            Desired::Placement(_) => ResourceKind::Placement,
            Desired::Instance(_) => ResourceKind::Instance,
            Desired::Volume(_) => ResourceKind::Volume,
            Desired::Bucket(_) => ResourceKind::Bucket,
            Desired::Block(_) => ResourceKind::Block,
        }
    }
}

/// Reads attributes and references of one request, naming the kind and the
/// attribute in every error.
struct Reader<'a> {
    req: &'a CreateRequest,
}

impl Reader<'_> {
    fn attrs(&self) -> &Attrs {
        &self.req.attrs
    }

    fn bad(&self, key: &str, why: String) -> ProviderError {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("{} `{key}`: {why}", self.req.kind),
        )
    }

    fn missing(&self, key: &str) -> ProviderError {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("a {} needs `{key}`", self.req.kind),
        )
    }

    fn str(&self, key: &str) -> Result<Option<String>> {
        match self.attrs().get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.bad(key, format!("must be text, got {other}"))),
        }
    }

    fn required_str(&self, key: &str) -> Result<String> {
        match self.str(key)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(self.missing(key)),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.attrs().get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.bad(key, format!("must be true or false, got {other}"))),
        }
    }

    fn u32(&self, key: &str) -> Result<Option<u32>> {
        match self.attrs().get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.bad(key, format!("must be a whole number, got {v}"))),
        }
    }

    fn pricing(&self) -> Result<Pricing> {
        match self.str(attr::PRICING)? {
            None => Ok(Pricing::OnDemand),
            Some(p) => Pricing::parse(&p).ok_or_else(|| {
                self.bad(
                    "pricing",
                    format!("`{p}` is not one of on-demand, spot, reserved-1y, reserved-3y"),
                )
            }),
        }
    }

    /// A positive, finite price, and only on a spot instance.
    fn spot_max_price(&self) -> Result<Option<f64>> {
        const KEY: &str = "spot_max_price";
        let price = match self.attrs().get(KEY) {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite() && *f > 0.0)
                .ok_or_else(|| self.bad(KEY, format!("must be a price above 0, got {v}")))?,
        };
        match self.pricing()? {
            Pricing::Spot => Ok(Some(price)),
            other => Err(self.bad(
                KEY,
                format!(
                    "only applies with `pricing: spot`, not `{}`",
                    other.as_str()
                ),
            )),
        }
    }

    fn optional_ref(&self, role: &str) -> Option<String> {
        self.req.refs.get(role).cloned()
    }

    fn required_ref(&self, role: &str) -> Result<String> {
        self.optional_ref(role).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("a {} needs a `{role}` to belong to", self.req.kind),
            )
        })
    }
}

#[cfg(test)]
mod tests;
