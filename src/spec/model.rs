//! The spec's data model: what a user writes, in provider-neutral words.
//!
//! These types are the single source of truth for the YAML format and for
//! schemas/gpuform.schema.json (generated from them with schemars).

use gpuform_catalog::{Interconnect, PricingModel};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The spec's names of an enum's variants, one home for what serde reads and
/// writes and what the validator lists in its errors and hints.
pub trait SpecNames {
    /// Every variant's name as a spec writes it, in declaration order.
    const NAMES: &'static [&'static str];
}

/// Declares an enum of the spec with each variant's name written once,
/// `Variant = "name"`: it becomes the variant's `#[serde(rename)]` (so the
/// schema has it too), [`SpecNames::NAMES`] and `as_str`. Variants may carry
/// data (`Block(BlockRequest) = "block"`, `S3 { .. } = "s3"`).
macro_rules! spec_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident
                $( ( $($tuple:ty),* $(,)? ) )?
                $( { $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)? } )?
                = $text:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $text)]
                $variant
                $( ( $($tuple),* ) )?
                $( { $( $(#[$fmeta])* $field : $fty ),* } )?
            ),+
        }

        impl $crate::spec::model::SpecNames for $name {
            const NAMES: &'static [&'static str] = &[$($text),+];
        }

        impl $name {
            /// The variant's name as a spec writes it.
            pub const fn as_str(&self) -> &'static str {
                match self {
                    $( $name::$variant { .. } => $text, )+
                }
            }
        }
    };
}
pub(crate) use spec_enum;

/// A gpuform spec file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Project name: tags every resource (`gpuform:project`) and names the state.
    pub project: String,
    /// GPU clusters by name.
    #[serde(default)]
    pub clusters: BTreeMap<String, Cluster>,
    /// Object-storage buckets by name.
    #[serde(default)]
    pub buckets: BTreeMap<String, Bucket>,
    /// Spending limits; a plan above them fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// Where state is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateSettings>,
    /// Declared variables with optional defaults, substituted as `${var.NAME}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Variable>,
    /// API endpoint overrides per cloud (private endpoints, local test
    /// servers), e.g. `aws: http://127.0.0.1:5555`. Environment variables
    /// (`AWS_ENDPOINT_URL`, `GPUFORM_TENCENT_ENDPOINT`, ...) apply otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, String>,
}

spec_enum! {
    /// Where a cluster runs: a cloud, or the built-in sandbox (which simulates AWS
    /// unless `--sandbox` is used, which simulates each cluster's own cloud).
    // Listed to users in this order.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
    pub enum CloudName {
        /// Amazon Web Services.
        Aws = "aws",
        /// Alibaba Cloud.
        Alibaba = "alibaba",
        /// Tencent Cloud.
        Tencent = "tencent",
        /// Huawei Cloud.
        Huawei = "huawei",
        /// The built-in offline simulator.
        Sandbox = "sandbox",
        /// Let gpuform choose among `candidates` (default: every cloud and
        /// region it knows) by `strategy`.
        Any = "any",
    }
}

spec_enum! {
    /// How `cloud: any` chooses where a cluster runs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
    pub enum Strategy {
        /// The cheapest matching offer among all candidates (default).
        #[default]
        Cheapest = "cheapest",
        /// The first candidate, in the order written, that offers the GPU.
        Ordered = "ordered",
    }
}

spec_enum! {
    /// What links the GPUs inside a node.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
    pub enum InterconnectReq {
        /// GPUs linked by NVLink/NVSwitch inside each node.
        Nvlink = "nvlink",
        /// PCIe only.
        Pcie = "pcie",
        /// Whatever the instance type has (default).
        #[default]
        Any = "any",
    }
}

impl InterconnectReq {
    /// The link an instance type must have (`None`: any).
    pub fn required(self) -> Option<Interconnect> {
        match self {
            InterconnectReq::Nvlink => Some(Interconnect::Nvlink),
            InterconnectReq::Pcie => Some(Interconnect::Pcie),
            InterconnectReq::Any => None,
        }
    }
}

spec_enum! {
    /// The network between nodes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
    pub enum Fabric {
        /// RDMA between nodes: EFA on AWS, eRDMA on Alibaba, RoCE/IB elsewhere.
        Rdma = "rdma",
        /// Plain Ethernet/VPC networking (default).
        #[default]
        Ethernet = "ethernet",
    }
}

/// One GPU cluster: `nodes` identical machines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub cloud: CloudName,
    /// Required unless `cloud: any` (then the strategy picks it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// With `cloud: any`: where the cluster may run, as `CLOUD` or
    /// `CLOUD/REGION` (e.g. `[aws/us-east-1, tencent]`); empty means every
    /// cloud and region gpuform knows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// With `cloud: any`: `cheapest` (default) picks the cheapest offer among
    /// all candidates; `ordered` takes the first candidate that offers the
    /// GPU. Capacity failover follows the same order.
    #[serde(default)]
    pub strategy: Strategy,
    /// Zones in order of preference; empty means every zone of the region, in
    /// the cloud's order. Tried in order on capacity errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// Number of nodes (at least 1).
    #[schemars(schema_with = "count_schema")]
    pub nodes: u32,
    /// GPU model and count per node, e.g. `A100-80GB:8` or `T4` (count 1).
    pub gpu: GpuRequest,
    /// How the nodes are paid for: `on-demand` (default), `spot`,
    /// `reserved-1y` or `reserved-3y`.
    #[serde(default = "default_pricing")]
    #[schemars(with = "PricingModelSchema")]
    pub pricing: PricingModel,
    /// Where the nodes run, in order: each source takes nodes until it is
    /// full, then the next one does, e.g. `[{reservation: cr-0abc…},
    /// on-demand]`. A reservation is named by id or `{tags: {KEY: VALUE}}`
    /// (every active reservation with those tags, in id order); `on-demand`
    /// or `spot` last takes the rest. Replaces `pricing:` (absent, `pricing`
    /// alone says how every node is paid for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<CapacitySource>,
    /// With `pricing: spot` only: the most to pay per node-hour, in the
    /// currency the catalog quotes the cluster's cloud in (USD on AWS, CNY on
    /// Alibaba, Tencent and Huawei), e.g. `12.5`. Absent, the cloud's own cap
    /// (the on-demand price) applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "positive_price_schema")]
    pub spot_max_price: Option<f64>,
    #[serde(default)]
    pub interconnect: InterconnectReq,
    #[serde(default)]
    pub fabric: Fabric,
    #[serde(default)]
    pub disk: Disk,
    /// Logical image name each provider maps (e.g. `ubuntu-22.04-cuda`); a raw
    /// image id is accepted and reported as lock-in.
    #[serde(default = "default_image")]
    pub image: String,
    /// MIG layout of every GPU, applied at boot: one profile (`3g.40gb`: as
    /// many as fit) or a list for a mixed layout (`[3g.40gb, 2g.20gb,
    /// 1g.10gb, 1g.10gb]`), checked against the GPU's slice budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<MigSpec>,
    /// GPU driver to install at boot on images without one: an NVIDIA driver
    /// branch (`550`, default for NVIDIA GPUs on non-CUDA images) or a ROCm
    /// release for AMD GPUs (`6.2`); `none` skips it. CUDA images skip it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "driver_schema")]
    pub driver: Option<String>,
    /// Use the instance type's local NVMe disks (instance store): RAID 0
    /// when several, ext4, mounted at this path (`true` means `/data`);
    /// absent or `none`, they are left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "local_nvme_schema")]
    pub local_nvme: Option<String>,
    /// Make the nodes Kubernetes nodes at boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<Kubernetes>,
    /// Escape hatch: a raw provider instance type. Always reported as lock-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    /// Cloud-init / user-data script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data: Option<String>,
    /// Extra inbound rules; traffic between the cluster's nodes is always allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingress: Vec<Ingress>,
    /// Network CIDR of the cluster's private network.
    #[serde(default = "default_cidr")]
    pub cidr: String,
    /// Buckets the nodes read, by their key under `buckets:` (e.g.
    /// `[datasets]`). The bucket is made before the nodes; one in another
    /// region or on another cloud is flagged in the plan with the per-GB
    /// data-transfer price where the catalog knows it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    /// When the cluster's lifetime ends (a time-boxed experiment, the end of
    /// a Capacity Block): an instant such as `2026-12-24T18:00:00Z` or a date
    /// (`2026-12-24`: its start, UTC). From then on plans delete the cluster,
    /// and `gpuform reconcile` does so on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// With `pricing: spot`: how the pool stays alive when the cloud takes
    /// spot capacity back (`gpuform reconcile` acts on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot_policy: Option<SpotPolicy>,
    /// When `gpuform reconcile` may replace or delete what still runs
    /// (a fallback's on-demand nodes going back to spot, `--apply-all`'s
    /// replacements), e.g. `{days: [sat, sun], start: "02:00", duration: 4h}`.
    /// Outside it those wait; re-creating a lost node never does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_window: Option<super::window::MaintenanceWindow>,
}

/// `spot_policy:` of a spot cluster.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpotPolicy {
    /// The first N nodes (`node[0]`…) run on-demand: a base no reclaim takes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_demand_base: u32,
    /// After `after` reclaims within `within`, a reclaimed node comes back
    /// on-demand; once `hold` passes without a reclaim, spot again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<SpotFallback>,
}

/// `spot_policy.fallback`, e.g. `{after: 3, within: 1h, hold: 6h}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpotFallback {
    pub after: u32,
    /// A duration: `30m`, `1h`, `2d`.
    pub within: String,
    /// A duration: `6h`.
    pub hold: String,
}

impl SpotFallback {
    /// `(within, hold)` in seconds (validated at load).
    pub fn windows(&self) -> (i64, i64) {
        let secs = |t: &str| {
            humantime::parse_duration(t.trim())
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        };
        (secs(&self.within), secs(&self.hold))
    }

    /// Whether reclaims at `reclaims` (seconds, any order) put the pool on
    /// on-demand at `now`: some `after` of them came within `within`, the
    /// last of those less than `hold` ago.
    pub fn active(&self, reclaims: &[i64], now: i64) -> bool {
        let (within, hold) = self.windows();
        let mut at: Vec<i64> = reclaims.iter().copied().filter(|t| *t <= now).collect();
        at.sort_unstable();
        let n = self.after.max(1) as usize;
        at.windows(n)
            .filter(|w| w[n - 1] - w[0] <= within)
            .any(|w| now - w[n - 1] < hold)
    }
}

impl Cluster {
    /// [`Cluster::expires_at`] in seconds since the epoch (validated at load).
    pub fn expires_at_secs(&self) -> Option<i64> {
        self.expires_at.as_deref().and_then(lifetime_end)
    }
}

/// An `expires_at` value: an RFC 3339 instant, or a date meaning its start (UTC).
pub fn lifetime_end(text: &str) -> Option<i64> {
    let t = text.trim();
    crate::clock::parse_instant(t).or_else(|| {
        (t.len() == 10)
            .then(|| crate::clock::Day::parse_iso(t))
            .flatten()
            .map(|d| d.0 * 86_400)
    })
}

spec_enum! {
    /// One entry of a cluster's `capacity:` list.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub enum CapacitySource {
        /// An On-Demand Capacity Reservation the account holds: nodes launched
        /// into it are billed at the on-demand rate, which the reservation
        /// already pays while it is unused.
        Reservation(ReservationRef) = "reservation",
        /// An EC2 Capacity Block for ML to buy: `{start: YYYY-MM-DD, hours: N}`.
        Block(BlockRequest) = "block",
        /// Pay per hour, no commitment.
        OnDemand = "on-demand",
        /// Spare capacity at a discount; may be reclaimed.
        Spot = "spot",
    }
}

impl CapacitySource {
    /// The unbounded sources, markets, that may end a `capacity` list
    /// (those [`CapacitySource::unbounded`] is true of).
    pub const MARKETS: [&'static str; 2] = [
        CapacitySource::OnDemand.as_str(),
        CapacitySource::Spot.as_str(),
    ];

    /// Whether the source takes every node left (nothing after it is reached).
    pub fn unbounded(&self) -> bool {
        Self::MARKETS.contains(&self.as_str())
    }
}

/// A reservation by its id (`cr-` and 17 hex digits on AWS; on Alibaba Cloud
/// a private pool, `eap-…` or `crp-…`) or by tags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReservationRef {
    Id(String),
    Tags {
        /// Every active reservation carrying all these tags.
        tags: BTreeMap<String, String>,
    },
}

impl std::fmt::Display for ReservationRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReservationRef::Id(id) => f.write_str(id),
            ReservationRef::Tags { tags } => {
                let pairs: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "tagged {}", pairs.join(","))
            }
        }
    }
}

/// A Capacity Block to buy: when it starts and how long it lasts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockRequest {
    /// The first day, `YYYY-MM-DD` (EC2's blocks start and end at 11:30 UTC).
    pub start: String,
    /// Its length in hours: 24 to 336 in steps of 24, or up to 4368 (182
    /// days) in steps of 168.
    #[schemars(schema_with = "count_schema")]
    pub hours: u32,
    /// Instances it holds (EC2: 1 to 64); the cluster's `nodes` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// `MODEL[:COUNT]`, written as a string in YAML: `A100-80GB:8`, `T4` (count 1).
///
/// The model is checked against the catalog later (resolve); here only the
/// syntax: a model of letters, digits, `-`, `_`, `.`, and a count of at least 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GpuRequest {
    pub model: String,
    pub count: u32,
}

/// `mig:` as written: one profile for every slot of every GPU, or a mixed
/// list of profiles per GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MigSpec {
    Single(String),
    Mixed(Vec<String>),
}

impl MigSpec {
    /// The profiles named, in order (one for `Single`).
    pub fn profiles(&self) -> Vec<&str> {
        match self {
            MigSpec::Single(p) => vec![p.as_str()],
            MigSpec::Mixed(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

impl std::fmt::Display for MigSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MigSpec::Single(p) => f.write_str(p),
            MigSpec::Mixed(v) => write!(f, "[{}]", v.join(", ")),
        }
    }
}

spec_enum! {
    /// How the nodes join Kubernetes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum KubernetesMode {
        /// A small self-contained k3s cluster: server on `node[0]`, agents on
        /// the others, joining over the private network.
        K3s = "k3s",
        /// `kubeadm join` an existing cluster at `endpoint`.
        KubeadmJoin = "kubeadm-join",
    }
}

/// `kubernetes:` on a cluster. The join token is never written in the spec:
/// it is read from the environment variable `token_env` at apply time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Kubernetes {
    pub mode: KubernetesMode,
    /// Environment variable holding the join token (read by `apply` only).
    pub token_env: String,
    /// kubeadm-join: the API server, `HOST:PORT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// kubeadm-join: `sha256:<64 hex>` of the cluster CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_cert_hash: Option<String>,
    /// k3s: the release to install (e.g. `v1.30.6+k3s1`); the channel's
    /// stable one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A taint for the GPU nodes, `KEY=VALUE:EFFECT`
    /// (e.g. `nvidia.com/gpu=present:NoSchedule`), so that only pods that
    /// tolerate it run there; the DaemonSets gpuform deploys tolerate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taint: Option<String>,
    /// k3s: also deploy NVIDIA's DCGM exporter on every GPU node, so that
    /// Prometheus can scrape utilisation per GPU and per MIG instance
    /// (Service `kube-system/dcgm-exporter`, port 9400).
    #[serde(default, skip_serializing_if = "is_false")]
    pub dcgm_exporter: bool,
    /// k3s: more to deploy from pinned upstream manifests once the cluster
    /// is up: `kubeflow-training-operator` (Kubeflow's Training Operator,
    /// for `PyTorchJob` and friends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addons: Vec<KubeAddon>,
}

spec_enum! {
    /// An add-on a k3s server deploys (`kubernetes.addons`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum KubeAddon {
        /// Kubeflow Training Operator v1.8.1 (its `standalone` overlay):
        /// `PyTorchJob`, `TFJob`, `MPIJob`, ...
        KubeflowTrainingOperator = "kubeflow-training-operator",
    }
}

/// Disks of each node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Disk {
    /// Root volume size in GiB.
    #[serde(default = "default_root_gb")]
    #[schemars(schema_with = "count_schema")]
    pub root_gb: u32,
    /// Size of one extra data volume per node in GiB; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_count_schema")]
    pub data_gb: Option<u32>,
    /// The data volume's type, the same disk on every cloud: `ssd`
    /// (general-purpose SSD, the default) or `hdd` (hard disk). A cloud's
    /// own names (`gp3`, `cloud_essd`, `CLOUD_PREMIUM`, `SSD`) are not
    /// accepted. Needs `data_gb`.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(with = "VolumeTypeSchema")]
    pub data_type: VolumeType,
}

impl Default for Disk {
    fn default() -> Self {
        Disk {
            root_gb: default_root_gb(),
            data_gb: None,
            data_type: VolumeType::default(),
        }
    }
}

/// An inbound firewall rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ingress {
    /// `tcp`, `udp` or `icmp`.
    #[serde(default = "default_protocol")]
    pub protocol: String,
    /// A port (`22`) or range (`8000-8100`), 1-65535. Required for every
    /// protocol; for `icmp` it is checked but has no meaning (suggestion: make
    /// it optional for `icmp`).
    pub ports: String,
    /// Source CIDR.
    pub cidr: String,
}

impl Ingress {
    /// The protocols a rule may name (`protocol`), the first the default.
    pub const PROTOCOLS: [&'static str; 3] = ["tcp", "udp", "icmp"];
}

/// An object-storage bucket. Public access is always blocked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    pub cloud: CloudName,
    pub region: String,
    /// The bucket's name on the cloud (names are global on most clouds).
    /// Default: `<project>-<key>`. On Tencent COS it is required and ends
    /// with the account's APPID (`<name>-<APPID>`; the APPID is shown on the
    /// console's Account Information page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The storage class new objects get.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(with = "StorageClassSchema")]
    pub storage_class: StorageClass,
    /// Keep every version of an object.
    #[serde(default, skip_serializing_if = "is_false")]
    pub versioning: bool,
    /// Server-side encryption with cloud-managed keys (default on).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub encryption: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// An estimate of the data stored, in GB, for the monthly cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_gb: Option<f64>,
    /// Let a destroy delete a bucket that still holds objects (and them).
    #[serde(default, skip_serializing_if = "is_false")]
    pub force_destroy: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// The storage class of a bucket (one type for spec, requests and prices).
pub use gpuform_catalog::storage::StorageClass;

/// Schema stand-in for [`StorageClass`], which lives in the catalog crate
/// and has no `JsonSchema` (its serde names are mirrored here and checked
/// against the catalog's by `validate`'s tests).
// (The doc lines above are the schema's description.) The names' home is
// the catalog: each of its variants is mapped to one here by an exhaustive
// `match` (a new one does not build), and `schema_stand_ins_match_the_catalog`
// compares their serde names.
#[allow(dead_code)]
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum StorageClassSchema {
    /// Frequently read data (default).
    Standard,
    /// Read about once a month or less (S3 Standard-IA, OSS IA, COS
    /// STANDARD_IA, OBS WARM).
    Infrequent,
    /// Kept for years, read rarely, restored before reading (S3 Glacier
    /// Flexible Retrieval, OSS Archive, COS ARCHIVE, OBS COLD).
    Archive,
}

impl From<StorageClass> for StorageClassSchema {
    fn from(c: StorageClass) -> Self {
        match c {
            StorageClass::Standard => StorageClassSchema::Standard,
            StorageClass::Infrequent => StorageClassSchema::Infrequent,
            StorageClass::Archive => StorageClassSchema::Archive,
        }
    }
}

/// A data volume's type (one type for spec, requests and every cloud's table).
pub use gpuform_catalog::volume::VolumeType;

/// Schema stand-in for [`VolumeType`], which lives in the catalog crate and
/// has no `JsonSchema` (its serde names are mirrored here and checked
/// against the catalog's by `validate`'s tests).
// Kept consistent as `StorageClassSchema` is.
#[allow(dead_code)]
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum VolumeTypeSchema {
    /// A general-purpose SSD (default): EBS gp3, Alibaba ESSD, Tencent SSD
    /// cloud disk, Huawei ultra-high I/O.
    Ssd,
    /// A hard-disk volume, cheaper per GB: EBS st1, Alibaba ultra disk,
    /// Tencent premium cloud disk, Huawei high I/O.
    Hdd,
}

impl From<VolumeType> for VolumeTypeSchema {
    fn from(t: VolumeType) -> Self {
        match t {
            VolumeType::Ssd => VolumeTypeSchema::Ssd,
            VolumeType::Hdd => VolumeTypeSchema::Hdd,
        }
    }
}

/// Lifecycle rules of a bucket, each applying to every object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Lifecycle {
    /// Move objects to the archive class this many days after they are written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_after_days: Option<u32>,
    /// Delete versions that are no longer current this many days after they
    /// were replaced (needs `versioning: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_noncurrent_after_days: Option<u32>,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_true(b: &bool) -> bool {
    *b
}
fn yes() -> bool {
    true
}

/// Spending limits in US dollars (each > 0); a plan above them fails, and
/// so does a plan with a resource the catalog has no price for (its cost
/// cannot be checked) unless `allow_unpriced` is true.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hourly_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_monthly_usd: Option<f64>,
    /// Count resources without a price as $0 instead of failing the plan
    /// (default false: a budget fails closed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unpriced: bool,
}

spec_enum! {
/// Where state is kept, chosen by `backend`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "backend", deny_unknown_fields)]
pub enum StateSettings {
    /// A JSON file on local disk (default `.gpuform/<project>.state.json`).
    Local {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    } = "local",
    /// A PostgreSQL database shared by a team and its CI: `url` without a
    /// password (it comes from PGPASSWORD or ~/.pgpass); `--state-url` /
    /// `GPUFORM_STATE_URL` override it.
    Postgres {
        url: String,
        /// The schema holding gpuform's tables (default `gpuform`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema: Option<String>,
        /// States are keyed by project and workspace (default `default`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace: Option<String>,
        /// How long a lock outlives its holder's last renewal (default 60).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_seconds: Option<u64>,
    } = "postgres",
    /// An S3 bucket (or an S3-compatible server that honours conditional
    /// writes): `url` is `s3://bucket/prefix?region=…[&endpoint=…]`;
    /// credentials come from the AWS chain. `--state-url` /
    /// `GPUFORM_STATE_URL` override it.
    S3 {
        url: String,
        /// States are keyed by project and workspace (default `default`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace: Option<String>,
        /// How long a lock outlives its holder's last renewal (default 60).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_seconds: Option<u64>,
    } = "s3",
}
}

/// A declared variable: `variables: { nodes: { default: "2" } }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn default_pricing() -> PricingModel {
    PricingModel::OnDemand
}
fn default_image() -> String {
    "ubuntu-22.04-cuda".to_string()
}
fn default_root_gb() -> u32 {
    100
}
fn default_protocol() -> String {
    Ingress::PROTOCOLS[0].to_string()
}
fn default_cidr() -> String {
    "10.0.0.0/16".to_string()
}

// ---------------------------------------------------------------------------
// GpuRequest as a `MODEL[:COUNT]` string.

impl GpuRequest {
    /// Parses `MODEL[:COUNT]`. The error is a message and a hint.
    pub fn parse(text: &str) -> Result<GpuRequest, (String, String)> {
        let example = "write MODEL or MODEL:COUNT, e.g. `A100-80GB:8` or `T4`";
        if text.trim() != text || text.contains(' ') {
            return Err((
                format!("GPU `{text}` contains spaces"),
                format!("{example}, without spaces"),
            ));
        }
        let (model, count) = match text.split_once(':') {
            Some((m, c)) => (m, Some(c)),
            None => (text, None),
        };
        if model.is_empty() {
            return Err((format!("GPU `{text}` has no model"), example.to_string()));
        }
        let model_ok = model
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && model
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !model_ok {
            return Err((
                format!("GPU model `{model}` may contain only letters, digits, `-`, `_` and `.`"),
                example.to_string(),
            ));
        }
        let count = match count {
            None => 1,
            Some(c) => {
                if c.is_empty() || !c.chars().all(|ch| ch.is_ascii_digit()) {
                    return Err((
                        format!("GPU count `{c}` in `{text}` is not a whole number"),
                        example.to_string(),
                    ));
                }
                let n = c.trim_start_matches('0');
                if n.is_empty() {
                    return Err((
                        format!("GPU count in `{text}` must be at least 1"),
                        format!("use `{model}:1` (or just `{model}`) for one GPU per node"),
                    ));
                }
                if c.starts_with('0') {
                    return Err((
                        format!("GPU count `{c}` in `{text}` has a leading zero"),
                        format!("write `{model}:{n}`"),
                    ));
                }
                match n.parse::<u32>() {
                    Ok(v) => v,
                    Err(_) => {
                        return Err((
                            format!("GPU count `{c}` in `{text}` is too large"),
                            example.to_string(),
                        ))
                    }
                }
            }
        };
        Ok(GpuRequest {
            model: model.to_string(),
            count,
        })
    }
}

impl std::fmt::Display for GpuRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.count == 1 {
            write!(f, "{}", self.model)
        } else {
            write!(f, "{}:{}", self.model, self.count)
        }
    }
}

impl std::str::FromStr for GpuRequest {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GpuRequest::parse(s).map_err(|(m, h)| format!("{m} ({h})"))
    }
}

impl Serialize for GpuRequest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GpuRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = GpuRequest;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a GPU as MODEL[:COUNT], e.g. `A100-80GB:8` or `T4`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<GpuRequest, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// The regular expression the schema gives for [`GpuRequest`].
pub const GPU_PATTERN: &str = r"^[A-Za-z0-9][A-Za-z0-9._-]*(:[1-9][0-9]*)?$";

impl JsonSchema for GpuRequest {
    fn schema_name() -> String {
        "GpuRequest".to_string()
    }

    fn json_schema(_gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        use schemars::schema::{InstanceType, Metadata, SchemaObject, StringValidation};
        SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            string: Some(Box::new(StringValidation { pattern: Some(GPU_PATTERN.to_string()), ..Default::default() })),
            metadata: Some(Box::new(Metadata {
                description: Some("GPU model and count per node: MODEL[:COUNT], e.g. `A100-80GB:8` or `T4` (count 1).".into()),
                examples: vec![serde_json::json!("A100-80GB:8"), serde_json::json!("T4"), serde_json::json!("L4:1")],
                ..Default::default()
            })),
            ..Default::default()
        }
        .into()
    }
}

/// Schema stand-in for [`PricingModel`], which lives in the provider crate
/// and has no `JsonSchema` (its serde names are mirrored here).
// It lives in the catalog crate; kept consistent as `StorageClassSchema` is.
#[allow(dead_code)]
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum PricingModelSchema {
    /// Pay per hour, no commitment.
    OnDemand,
    /// Spare capacity at a discount; may be reclaimed.
    Spot,
    /// One-year reservation.
    #[serde(rename = "reserved-1y")]
    Reserved1y,
    /// Three-year reservation.
    #[serde(rename = "reserved-3y")]
    Reserved3y,
}

impl From<PricingModel> for PricingModelSchema {
    fn from(p: PricingModel) -> Self {
        match p {
            PricingModel::OnDemand => PricingModelSchema::OnDemand,
            PricingModel::Spot => PricingModelSchema::Spot,
            PricingModel::Reserved1y => PricingModelSchema::Reserved1y,
            PricingModel::Reserved3y => PricingModelSchema::Reserved3y,
        }
    }
}

/// A variable reference as a whole value, allowed where the schema expects a number.
const VAR_REF_PATTERN: &str = r"^\$\{var\.[A-Za-z_][A-Za-z0-9_]*\}$";

/// An integer of at least 1, or a `${var.NAME}` reference.
/// `local_nvme: /data` or `true` / `false`.
fn local_nvme_schema(_gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    use schemars::schema::{InstanceType, SchemaObject, SingleOrVec};
    SchemaObject {
        instance_type: Some(SingleOrVec::Vec(vec![
            InstanceType::String,
            InstanceType::Boolean,
        ])),
        ..Default::default()
    }
    .into()
}

/// `driver: 550` (a YAML number) or `driver: "6.2"` / `none`.
fn driver_schema(_gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    use schemars::schema::{InstanceType, SchemaObject, SingleOrVec};
    SchemaObject {
        instance_type: Some(SingleOrVec::Vec(vec![
            InstanceType::String,
            InstanceType::Integer,
            InstanceType::Number,
        ])),
        ..Default::default()
    }
    .into()
}

/// A price above 0 (the validator refuses 0 and below, with a located error).
fn positive_price_schema(_gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    use schemars::schema::{InstanceType, NumberValidation, SchemaObject};
    SchemaObject {
        instance_type: Some(InstanceType::Number.into()),
        number: Some(Box::new(NumberValidation {
            exclusive_minimum: Some(0.0),
            ..Default::default()
        })),
        ..Default::default()
    }
    .into()
}

fn count_schema(_gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    use schemars::schema::{
        InstanceType, NumberValidation, SchemaObject, StringValidation, SubschemaValidation,
    };
    let int = SchemaObject {
        instance_type: Some(InstanceType::Integer.into()),
        number: Some(Box::new(NumberValidation {
            minimum: Some(1.0),
            maximum: Some(u32::MAX as f64),
            ..Default::default()
        })),
        ..Default::default()
    };
    let var = SchemaObject {
        instance_type: Some(InstanceType::String.into()),
        string: Some(Box::new(StringValidation {
            pattern: Some(VAR_REF_PATTERN.to_string()),
            ..Default::default()
        })),
        ..Default::default()
    };
    SchemaObject {
        subschemas: Some(Box::new(SubschemaValidation {
            any_of: Some(vec![int.into(), var.into()]),
            ..Default::default()
        })),
        ..Default::default()
    }
    .into()
}

/// Like [`count_schema`], or null.
fn optional_count_schema(gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    use schemars::schema::{InstanceType, Schema, SchemaObject};
    let mut base = match count_schema(gen) {
        Schema::Object(o) => o,
        other => return other,
    };
    if let Some(sub) = base.subschemas.as_mut() {
        if let Some(any) = sub.any_of.as_mut() {
            any.push(
                SchemaObject {
                    instance_type: Some(InstanceType::Null.into()),
                    ..Default::default()
                }
                .into(),
            );
        }
    }
    base.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_request_syntax() {
        assert_eq!(
            GpuRequest::parse("A100-80GB:8"),
            Ok(GpuRequest {
                model: "A100-80GB".into(),
                count: 8
            })
        );
        assert_eq!(
            GpuRequest::parse("T4"),
            Ok(GpuRequest {
                model: "T4".into(),
                count: 1
            })
        );
        for bad in [
            "",
            ":2",
            "A100:0",
            "A100:",
            "A100:x",
            "A100:-1",
            "A 100",
            "A100:08",
            "A100:99999999999",
            "/x",
        ] {
            assert!(GpuRequest::parse(bad).is_err(), "{bad}");
        }
        assert!(GpuRequest::parse("A100:0")
            .unwrap_err()
            .0
            .contains("at least 1"));
    }

    #[test]
    fn gpu_request_serde_round_trip() {
        let g: GpuRequest = serde_json::from_value(serde_json::json!("H100:8")).unwrap();
        assert_eq!(
            serde_json::to_value(&g).unwrap(),
            serde_json::json!("H100:8")
        );
        let t: GpuRequest = serde_yaml::from_str("T4").unwrap();
        assert_eq!(t.to_string(), "T4");
        assert!(serde_json::from_value::<GpuRequest>(serde_json::json!("T4:0")).is_err());
        assert!(serde_json::from_value::<GpuRequest>(serde_json::json!(4)).is_err());
    }

    #[test]
    fn spec_names_are_serde_names() {
        fn check<T: SpecNames + Serialize + serde::de::DeserializeOwned>() {
            for name in T::NAMES {
                let v: T = serde_json::from_value(serde_json::json!(name)).unwrap();
                assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(name));
            }
        }
        check::<CloudName>();
        check::<Strategy>();
        check::<InterconnectReq>();
        check::<Fabric>();
        check::<KubernetesMode>();
        check::<KubeAddon>();
        check::<super::super::window::Weekday>();
        assert_eq!(CloudName::Huawei.as_str(), "huawei");
        assert!(
            CapacitySource::Spot.unbounded()
                && !CapacitySource::Block(BlockRequest {
                    start: "2026-12-10".into(),
                    hours: 24,
                    count: None,
                })
                .unbounded()
        );
    }

    /// The schema stand-ins name every catalog variant as the catalog does
    /// (their `From` is an exhaustive `match`: a catalog variant without a
    /// stand-in does not build; a stand-in too many fails
    /// `enums_match_the_schema`).
    #[test]
    fn schema_stand_ins_match_the_catalog() {
        for p in PricingModel::ALL {
            let stand_in = PricingModelSchema::from(p);
            assert_eq!(
                serde_json::to_value(stand_in).unwrap(),
                serde_json::to_value(p).unwrap()
            );
        }
        for c in StorageClass::ALL {
            let stand_in = StorageClassSchema::from(c);
            assert_eq!(
                serde_json::to_value(stand_in).unwrap(),
                serde_json::to_value(c).unwrap()
            );
        }
        for t in VolumeType::ALL {
            let stand_in = VolumeTypeSchema::from(t);
            assert_eq!(
                serde_json::to_value(stand_in).unwrap(),
                serde_json::to_value(t).unwrap()
            );
        }
    }
}
