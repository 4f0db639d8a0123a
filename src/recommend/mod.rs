//! `gpuform recommend`: the guide's decision tree, from a few facts about a
//! workload (size, task, precision, duration, team, users, budget, clouds)
//! to a ranked list of configurations and a ready spec.
//!
//! [`inputs`] reads the facts (each bad one names its flag and the fix).
//!
//! 1. [`fit`]: the GPU memory needed, and how many nodes of each instance
//!    type hold it;
//! 2. the guide's rules ([`RuleOutcome`]), each with its reason, and where a
//!    rule and the numbers disagree, both and the winner ([`Disagreement`]);
//! 3. price-performance across the allowed clouds from the catalog (through
//!    [`crate::market::offers`] and [`crate::market::breakeven`]), with an AMD option where
//!    the catalog has one;
//! 4. [`spec::spec_yaml`]: the top option as a spec with its reasons as comments.
//!
//! Pure: no printing, no cloud calls. [`render::render`] lays a
//! [`Recommendation`] out as text.

pub mod fit;
pub mod inputs;
pub mod render;
pub mod rules;
pub mod spec;

use crate::market::offers::{self, DEFAULT_STALE_DAYS};
use gpuform_catalog::{Catalog, Day, OfferQuery, HOURS_PER_MONTH};
use gpuform_provider::Cloud;
use gpuform_provider::UserError;
use serde::Serialize;

pub use fit::MemoryNeed;
pub use inputs::{
    area, check, parse_clouds, parse_duration, parse_ops, parse_params, parse_precision,
    parse_task, parse_tokens, parse_users, Area, Inputs, Ops, Precision, Task, Users,
};
pub use rules::{Disagreement, RuleOutcome};

/// A configuration never spans more nodes than this.
pub const MAX_NODES: u32 = 64;
/// Options listed (the JSON and the table).
pub const TOP_OPTIONS: usize = 10;

/// How a spot node's work is protected, from its cloud's reclaim notice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    pub notice_seconds: u32,
    pub notice_source: &'static str,
    /// Weights and optimizer states, GiB.
    pub checkpoint_gib: f64,
    /// At [`WRITE_GBPS_PER_NODE`] per node, every node writing its shard.
    pub save_seconds: f64,
    /// Whether a save started on the notice finishes within half of it.
    pub save_fits_notice: bool,
    pub interval_minutes: u32,
    pub why: String,
}

/// Checkpoint write throughput assumed per node (local NVMe or a parallel file system), GB/s.
pub const WRITE_GBPS_PER_NODE: f64 = 1.0;

/// A cloud's spot reclaim notice in seconds, and where it is written.
pub fn reclaim_notice(cloud: Cloud) -> (u32, &'static str) {
    match cloud {
        Cloud::Aws => (
            120,
            "docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html (two-minute warning)",
        ),
        Cloud::Tencent => (
            120,
            "Tencent CVM spot instances: reclaimed after a 2-minute notice (the guide's figure)",
        ),
        Cloud::Alibaba => (
            300,
            "Alibaba ECS spot instances: about 5 minutes in the Recycling lock before release (the guide's figure; help.aliyun.com 'detect and handle spot instance interruptions')",
        ),
        Cloud::Huawei => (
            300,
            "support.huaweicloud.com price-cce cce_03_0026 (Node Problem Detector alerts 5 minutes before a spot ECS is terminated)",
        ),
    }
}

/// The checkpoint plan of a spot training run of `nodes` nodes on `cloud`.
pub fn checkpoint_plan(
    cloud: Cloud,
    need: &MemoryNeed,
    precision: Precision,
    nodes: u32,
) -> Checkpoint {
    let (notice, source) = reclaim_notice(cloud);
    // Gradients are not saved: weights + master copy + optimizer.
    let grad = if precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let bytes = need.params * (need.bytes_per_param - grad);
    let save = bytes / (f64::from(nodes.max(1)) * WRITE_GBPS_PER_NODE * 1e9);
    let fits = save <= f64::from(notice) / 2.0;
    let interval_s = (10.0 * f64::from(notice))
        .max(20.0 * save)
        .clamp(600.0, 3600.0);
    let minutes = (interval_s / 60.0).ceil() as u32;
    let why = format!(
        "checkpoint every {minutes} min (the larger of 10 × the {notice} s reclaim notice and 20 × the {save:.0} s save, so that saving takes ≤ 5% of the time; kept within 10–60 min): a reclaim loses at most one interval of work. {}",
        if fits {
            format!("On the notice, save once more: the {save:.0} s save fits in half of the {notice} s notice.")
        } else {
            format!("A save on the notice does not fit ({save:.0} s > half of the {notice} s notice): rely on the periodic checkpoints.")
        }
    );
    Checkpoint {
        notice_seconds: notice,
        notice_source: source,
        checkpoint_gib: bytes / fit::GIB,
        save_seconds: save,
        save_fits_notice: fits,
        interval_minutes: minutes,
        why,
    }
}

/// Model FLOPs utilisation assumed for a training-time estimate.
pub const MFU: f64 = 0.40;

/// One configuration: an instance type in a region, how many, how paid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub cloud: Cloud,
    pub region: String,
    pub area: Area,
    /// How near the region is to `--users` (0 = first choice); `None` without `--users`.
    pub region_tier: Option<u8>,
    pub instance_type: String,
    pub gpu_model: String,
    pub vendor: String,
    pub gpus_per_node: u32,
    pub gpu_mem_gib: f64,
    pub nodes: u32,
    pub interconnect: Option<&'static str>,
    pub rdma: Option<&'static str>,
    pub pricing: &'static str,
    /// Why this pricing model (the guide's rules and the break-even).
    pub pricing_reason: String,
    /// One node, USD an hour, for `pricing`.
    pub node_hourly_usd: f64,
    /// Every node.
    pub hourly_usd: f64,
    /// At `hours_per_month` (a reservation is paid for all 730 h).
    pub monthly_usd: f64,
    /// USD per PFLOP-hour of dense FP16 tensor compute; `None` when the GPU's figure is unknown.
    pub usd_per_fp16_pflop_hour: Option<f64>,
    pub price_basis: &'static str,
    pub price_source: String,
    pub price_as_of: String,
    /// With `--tokens`: training hours at [`MFU`], and their cost.
    pub train_hours: Option<f64>,
    pub train_cost_usd: Option<f64>,
    pub within_budget: bool,
    /// In the GPU class the guide's size rule names (always true when no size rule applies).
    pub in_rule_class: bool,
    /// Spot training: how often to checkpoint.
    pub checkpoint: Option<Checkpoint>,
    pub notes: Vec<String>,
}

/// A managed platform that would run the workload instead of self-managed machines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManagedPlatform {
    pub cloud: Cloud,
    pub name: &'static str,
}

/// The managed ML platform of each cloud.
pub fn managed_platform(cloud: Cloud) -> &'static str {
    match cloud {
        Cloud::Aws => "Amazon SageMaker",
        Cloud::Alibaba => "Alibaba PAI (Platform for AI)",
        Cloud::Tencent => "Tencent TI-ONE (TI platform)",
        Cloud::Huawei => "Huawei ModelArts",
    }
}

/// What gpuform leaves to whoever runs the machines.
pub const NOT_DONE_BY_GPUFORM: &str = "gpuform provisions the machines, network, disks and buckets and boots them with drivers (and k3s if asked); it does not schedule or restart jobs, resume training after a reclaim, autoscale or roll out inference endpoints, patch the OS and drivers, or watch GPU health — a managed platform does those";

/// The AMD option and why it is not the default.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmdOption {
    /// Whether any allowed cloud in the catalog offers MI250X/MI300X.
    pub offered: bool,
    /// The best AMD configurations that fit, ranked like the others.
    pub options: Vec<Candidate>,
    pub caveat: &'static str,
}

pub const AMD_CAVEAT: &str = "ROCm runs PyTorch, JAX and vLLM, but CUDA-only code (custom kernels, some FlashAttention builds, TensorRT, bitsandbytes versions) must be ported or swapped; benchmark your own workload before committing. Never the top pick for that reason.";

/// What `gpuform recommend` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub inputs: Inputs,
    pub memory: MemoryNeed,
    pub rules: Vec<RuleOutcome>,
    pub disagreements: Vec<Disagreement>,
    /// How options are ranked, in words.
    pub ranking: String,
    /// The recommended configuration (the winner of any disagreement).
    pub top: Option<Candidate>,
    /// Best first, at most [`TOP_OPTIONS`] (NVIDIA; AMD below).
    pub options: Vec<Candidate>,
    pub amd: AmdOption,
    /// With `--ops none`: the managed platform of each allowed cloud.
    pub managed: Vec<ManagedPlatform>,
    /// Offerings looked at, fitting (priced) and why the others were left out.
    pub considered: usize,
    pub fitting: usize,
    pub left_out: Vec<String>,
    pub warnings: Vec<String>,
}

/// The recommendation for `inputs` over `catalog`, prices dated against `today`.
pub fn recommend(
    catalog: &Catalog,
    inputs: &Inputs,
    today: Day,
) -> Result<Recommendation, UserError> {
    check(inputs)?;
    let need = fit::memory_need(
        inputs.params,
        inputs.task,
        inputs.precision,
        inputs.context,
        inputs.batch,
    );
    let q = OfferQuery {
        cny_per_usd: inputs.cny_per_usd,
        ..OfferQuery::default()
    };
    let rows: Vec<offers::OfferRow> = offers::offers(catalog, &q, today, DEFAULT_STALE_DAYS)
        .offers
        .into_iter()
        .filter(|r| inputs.allowed(r.cloud))
        .collect();
    let considered = rows.len();
    let mut left = rules::LeftOut::default();
    let mut all = Vec::new();
    // Inference stays on one node per replica when any type holds it there.
    let single_node_inference = !inputs.task.trains()
        && rows
            .iter()
            .any(|r| fit::nodes_needed(need.total_gib, r.gpu_count, r.gpu_mem_gib) == 1);
    for row in &rows {
        if let Some(c) = rules::candidate(
            catalog,
            inputs,
            &need,
            row,
            single_node_inference,
            &mut left,
        ) {
            all.push(c);
        }
    }
    rules::rank(inputs, &mut all);
    let fitting = all.len();
    let (amd, nvidia): (Vec<Candidate>, Vec<Candidate>) =
        all.into_iter().partition(|c| c.vendor == "AMD");
    let amd_offered = rows
        .iter()
        .any(|r| catalog.gpu(&r.gpu_model).is_ok_and(|g| g.vendor == "AMD"));
    let (rules_out, disagreements, top) = rules::decide(inputs, &need, &nvidia, &left);
    let managed = if inputs.ops == Ops::None {
        Cloud::ALL
            .into_iter()
            .filter(|c| inputs.allowed(*c))
            .map(|c| ManagedPlatform {
                cloud: c,
                name: managed_platform(c),
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut warnings = Vec::new();
    if nvidia.is_empty() {
        warnings.push(format!(
            "no priced configuration of the allowed clouds holds {:.0} GiB within {MAX_NODES} nodes and meets the rules",
            need.total_gib
        ));
    }
    if left.unpriced > 0 {
        warnings.push(format!(
            "{} offering(s) would fit but have no price in the catalog; `gpuform offers GPU` shows how to price them (--prices FILE)",
            left.unpriced
        ));
    }
    let ranking = rules::ranking_words(inputs);
    Ok(Recommendation {
        inputs: inputs.clone(),
        memory: need,
        rules: rules_out,
        disagreements,
        ranking,
        top,
        options: nvidia.into_iter().take(TOP_OPTIONS).collect(),
        amd: AmdOption {
            offered: amd_offered,
            options: amd.into_iter().take(3).collect(),
            caveat: AMD_CAVEAT,
        },
        managed,
        considered,
        fitting,
        left_out: left.summary(),
        warnings,
    })
}

/// Hours a month as a share of the month.
pub(crate) fn utilisation(inputs: &Inputs) -> f64 {
    inputs.hours_per_month / HOURS_PER_MONTH
}
