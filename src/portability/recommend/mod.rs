//! `gpuform recommend`: the guide's decision tree, from a few facts about a
//! workload (size, task, precision, duration, team, users, budget, clouds)
//! to a ranked list of configurations and a ready spec.
//!
//! 1. [`fit`]: the GPU memory needed, and how many nodes of each instance
//!    type hold it;
//! 2. the guide's rules ([`RuleOutcome`]), each with its reason, and where a
//!    rule and the numbers disagree, both and the winner ([`Disagreement`]);
//! 3. price-performance across the allowed clouds from the catalog (through
//!    [`super::offers`] and [`super::breakeven`]), with an AMD option where
//!    the catalog has one;
//! 4. [`spec::spec_yaml`]: the top option as a spec with its reasons as comments.
//!
//! Pure: no printing, no cloud calls. [`render::render`] lays a
//! [`Recommendation`] out as text.

pub mod fit;
pub mod render;
pub mod rules;
pub mod spec;

use super::offers::{self, InputError, DEFAULT_STALE_DAYS};
use gpuform_catalog::{Catalog, Day, OfferQuery, DEFAULT_CNY_PER_USD, HOURS_PER_MONTH};
use gpuform_provider::Cloud;
use serde::Serialize;

pub use fit::MemoryNeed;
pub use rules::{Disagreement, RuleOutcome};

/// A configuration never spans more nodes than this.
pub const MAX_NODES: u32 = 64;
/// Options listed (the JSON and the table).
pub const TOP_OPTIONS: usize = 10;

/// What the model is used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    Training,
    FineTuning,
    Inference,
}

impl Task {
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Training => "training",
            Task::FineTuning => "fine-tuning",
            Task::Inference => "inference",
        }
    }
    pub fn trains(self) -> bool {
        self != Task::Inference
    }
}

/// The numeric precision of the weights (inference) or of the mixed-precision
/// compute (training).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Int4,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
        }
    }
    /// Bytes per weight.
    pub fn bytes(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            Precision::Bf16 | Precision::Fp16 => 2.0,
            Precision::Fp8 | Precision::Int8 => 1.0,
            Precision::Int4 => 0.5,
        }
    }
}

/// Who runs the infrastructure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ops {
    /// No one whose job it is: a managed platform is the alternative.
    None,
    /// A team that runs machines and Kubernetes.
    Devops,
}

/// Where the users of the model (or the team) are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Users {
    SoutheastAsia,
    China,
    UsEast,
    UsWest,
    Europe,
    Japan,
    India,
}

impl Users {
    pub const ALL: [Users; 7] = [
        Users::SoutheastAsia,
        Users::China,
        Users::UsEast,
        Users::UsWest,
        Users::Europe,
        Users::Japan,
        Users::India,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Users::SoutheastAsia => "southeast-asia",
            Users::China => "china",
            Users::UsEast => "us-east",
            Users::UsWest => "us-west",
            Users::Europe => "europe",
            Users::Japan => "japan",
            Users::India => "india",
        }
    }

    /// How near a region of `area` is to these users: 0 = first choice.
    pub fn tier(self, area: Area) -> u8 {
        use Area::*;
        match (self, area) {
            (Users::SoutheastAsia, HongKong | Singapore) => 0,
            (Users::SoutheastAsia, SoutheastAsia) => 1,
            (Users::SoutheastAsia, ChinaMainland | Japan | India) => 2,
            (Users::China, ChinaMainland) => 0,
            (Users::China, HongKong) => 1,
            (Users::China, Singapore | SoutheastAsia | Japan) => 2,
            (Users::UsEast, UsEast) => 0,
            (Users::UsEast, UsWest) => 1,
            (Users::UsEast, Europe) => 2,
            (Users::UsWest, UsWest) => 0,
            (Users::UsWest, UsEast) => 1,
            (Users::UsWest, Japan) => 2,
            (Users::Europe, Europe) => 0,
            (Users::Europe, UsEast) => 1,
            (Users::Japan, Japan) => 0,
            (Users::Japan, HongKong | Singapore) => 1,
            (Users::Japan, ChinaMainland) => 2,
            (Users::India, India) => 0,
            (Users::India, Singapore) => 1,
            (Users::India, HongKong | SoutheastAsia) => 2,
            _ => 3,
        }
    }
}

/// Where a region is, as far as users' latency and law are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Area {
    ChinaMainland,
    HongKong,
    Singapore,
    SoutheastAsia,
    Japan,
    India,
    UsEast,
    UsWest,
    Europe,
    Other,
}

/// The area of a region, from the cloud's naming (each cloud names regions
/// its own way: `ap-southeast-1` is Singapore on AWS and Alibaba, Hong Kong
/// on Huawei).
pub fn area(cloud: Cloud, region: &str) -> Area {
    use Area::*;
    let r = region;
    match cloud {
        Cloud::Aws => match r {
            _ if r.starts_with("cn-") => ChinaMainland,
            "ap-east-1" => HongKong,
            "ap-southeast-1" => Singapore,
            "ap-southeast-3" | "ap-southeast-5" | "ap-southeast-7" => SoutheastAsia,
            "ap-northeast-1" | "ap-northeast-3" => Japan,
            _ if r.starts_with("ap-south-") => India,
            _ if r.starts_with("us-east-") => UsEast,
            _ if r.starts_with("us-west-") => UsWest,
            _ if r.starts_with("eu-") => Europe,
            _ => Other,
        },
        Cloud::Alibaba => match r {
            "cn-hongkong" => HongKong,
            _ if r.starts_with("cn-") => ChinaMainland,
            "ap-southeast-1" => Singapore,
            "ap-southeast-3" | "ap-southeast-5" | "ap-southeast-6" | "ap-southeast-7" => {
                SoutheastAsia
            }
            "ap-northeast-1" => Japan,
            "ap-south-1" => India,
            "us-east-1" => UsEast,
            "us-west-1" => UsWest,
            _ if r.starts_with("eu-") => Europe,
            _ => Other,
        },
        Cloud::Tencent => match r {
            "ap-hongkong" => HongKong,
            "ap-singapore" => Singapore,
            "ap-bangkok" | "ap-jakarta" => SoutheastAsia,
            "ap-tokyo" => Japan,
            "ap-mumbai" => India,
            "na-ashburn" => UsEast,
            "na-siliconvalley" => UsWest,
            _ if r.starts_with("eu-") => Europe,
            _ if [
                "ap-guangzhou",
                "ap-shanghai",
                "ap-beijing",
                "ap-nanjing",
                "ap-chengdu",
                "ap-chongqing",
                "ap-shenzhen",
                "ap-hangzhou",
                "ap-wuhan",
                "ap-changsha",
                "ap-shijiazhuang",
                "ap-xian",
                "ap-jinan",
                "ap-fuzhou",
                "ap-hefei",
                "ap-shenyang",
                "ap-zhengzhou",
                "ap-tianjin",
            ]
            .iter()
            .any(|c| r.starts_with(c)) =>
            {
                ChinaMainland
            }
            _ => Other,
        },
        Cloud::Huawei => match r {
            _ if r.starts_with("cn-") => ChinaMainland,
            "ap-southeast-1" => HongKong,
            "ap-southeast-3" => Singapore,
            "ap-southeast-2" | "ap-southeast-4" => SoutheastAsia,
            _ if r.starts_with("eu-") => Europe,
            _ => Other,
        },
    }
}

/// What the user told `recommend`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inputs {
    pub params: f64,
    pub task: Task,
    pub precision: Precision,
    /// Training tokens, for a training-time estimate.
    pub tokens: Option<f64>,
    /// How long the project runs, in hours of calendar time.
    pub duration_hours: Option<f64>,
    /// Hours a month the machines run (730 = always on).
    pub hours_per_month: f64,
    pub ops: Ops,
    pub users: Option<Users>,
    /// USD a month the configuration may cost.
    pub budget_monthly_usd: Option<f64>,
    /// Empty: every cloud gpuform knows.
    pub clouds: Vec<Cloud>,
    /// Inference: tokens of context per sequence (KV cache).
    pub context: u32,
    /// Inference: sequences served at once (KV cache).
    pub batch: u32,
    pub cny_per_usd: f64,
}

impl Inputs {
    /// The inputs with every optional one at its default.
    pub fn new(params: f64, task: Task) -> Inputs {
        Inputs {
            params,
            task,
            precision: Precision::Bf16,
            tokens: None,
            duration_hours: None,
            hours_per_month: HOURS_PER_MONTH,
            ops: Ops::Devops,
            users: None,
            budget_monthly_usd: None,
            clouds: Vec::new(),
            context: 4096,
            batch: 8,
            cny_per_usd: DEFAULT_CNY_PER_USD,
        }
    }

    fn allowed(&self, c: Cloud) -> bool {
        self.clouds.is_empty() || self.clouds.contains(&c)
    }
}

fn bad(flag: &str, text: &str, what: &str, hint: &str) -> InputError {
    InputError::new(format!("{flag}: `{text}` is not {what}"), hint)
}

/// A number with an optional unit suffix from `units` (case-insensitive),
/// e.g. `70B`; the multiplier of the unit found.
fn number_with_unit(text: &str, units: &[(&str, f64)]) -> Option<f64> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    // Longest unit first (`mo` before `m`).
    let mut sorted: Vec<&(&str, f64)> = units.iter().collect();
    sorted.sort_by_key(|(u, _)| std::cmp::Reverse(u.len()));
    let (num, mult) = sorted
        .iter()
        .find(|(u, _)| !u.is_empty() && lower.ends_with(u))
        .map(|(u, m)| (&t[..t.len() - u.len()], *m))
        .or_else(|| {
            units
                .iter()
                .find(|(u, _)| u.is_empty())
                .map(|(_, m)| (t, *m))
        })?;
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v * mult)
}

/// `--params 70B`: parameters, with K, M, B or T (or a plain number).
pub fn parse_params(text: &str) -> Result<f64, InputError> {
    let hint = "write a number with K, M, B (billion) or T: 70B, 1.5B, 350M, 1.2T";
    let v = number_with_unit(
        text,
        &[("", 1.0), ("k", 1e3), ("m", 1e6), ("b", 1e9), ("t", 1e12)],
    )
    .ok_or_else(|| bad("--params", text, "a parameter count", hint))?;
    if !(1e6..=1e14).contains(&v) {
        return Err(InputError::new(
            format!(
                "--params: {} parameters is outside what recommend sizes (1M to 100T)",
                fit::sci(v)
            ),
            hint,
        ));
    }
    Ok(v)
}

/// `--tokens 2T`: training tokens.
pub fn parse_tokens(text: &str) -> Result<f64, InputError> {
    number_with_unit(
        text,
        &[("", 1.0), ("k", 1e3), ("m", 1e6), ("b", 1e9), ("t", 1e12)],
    )
    .ok_or_else(|| {
        bad(
            "--tokens",
            text,
            "a token count",
            "write a number with K, M, B or T: 300B, 2T",
        )
    })
}

/// `--duration 2w`: hours of calendar time (`h`, `d`, `w`, `mo` = 730 h, `y` = 8760 h).
pub fn parse_duration(text: &str) -> Result<f64, InputError> {
    let hint = "a number and a unit: h, d, w, mo (month, 730 h) or y, e.g. 36h, 2w, 6mo, 1y";
    if text.trim().to_ascii_lowercase().ends_with("min") || text.trim().ends_with('m') {
        return Err(InputError::new(
            format!("--duration: `{text}` is ambiguous (minutes or months?)"),
            hint,
        ));
    }
    number_with_unit(
        text,
        &[
            ("h", 1.0),
            ("d", 24.0),
            ("w", 168.0),
            ("mo", HOURS_PER_MONTH),
            ("y", 12.0 * HOURS_PER_MONTH),
        ],
    )
    .ok_or_else(|| bad("--duration", text, "a duration", hint))
}

pub fn parse_task(text: &str) -> Result<Task, InputError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "training" | "train" | "pretraining" | "pre-training" => Ok(Task::Training),
        "fine-tuning" | "finetuning" | "fine-tune" | "finetune" => Ok(Task::FineTuning),
        "inference" | "serving" => Ok(Task::Inference),
        _ => Err(bad(
            "--task",
            text,
            "a task recommend knows",
            "write one of training, fine-tuning, inference",
        )),
    }
}

pub fn parse_precision(text: &str) -> Result<Precision, InputError> {
    let p = match text.trim().to_ascii_lowercase().as_str() {
        "fp32" | "float32" => Precision::Fp32,
        "bf16" | "bfloat16" => Precision::Bf16,
        "fp16" | "float16" | "half" => Precision::Fp16,
        "fp8" => Precision::Fp8,
        "int8" => Precision::Int8,
        "int4" => Precision::Int4,
        _ => {
            return Err(bad(
                "--precision",
                text,
                "a precision",
                "write one of fp32, bf16, fp16, fp8, int8, int4",
            ))
        }
    };
    Ok(p)
}

pub fn parse_ops(text: &str) -> Result<Ops, InputError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "none" | "no" => Ok(Ops::None),
        "devops" | "yes" | "team" => Ok(Ops::Devops),
        _ => Err(bad(
            "--ops",
            text,
            "an ops team answer",
            "write none (no one runs infrastructure) or devops",
        )),
    }
}

pub fn parse_users(text: &str) -> Result<Users, InputError> {
    let t = text.trim().to_ascii_lowercase().replace('_', "-");
    let alias = match t.as_str() {
        "sea" | "asean" => "southeast-asia",
        "cn" | "mainland-china" => "china",
        "eu" => "europe",
        "jp" => "japan",
        "in" => "india",
        other => other,
    };
    Users::ALL
        .into_iter()
        .find(|u| u.as_str() == alias)
        .ok_or_else(|| {
            bad(
                "--users",
                text,
                "a user region recommend knows",
                &format!("write one of {}", Users::ALL.map(Users::as_str).join(", ")),
            )
        })
}

/// `--clouds aws,alibaba`.
pub fn parse_clouds(text: &str) -> Result<Vec<Cloud>, InputError> {
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let c = offers::parse_cloud(part)
            .map_err(|e| InputError::new(format!("--clouds: {}", e.message), e.hint))?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(InputError::new(
            "--clouds: no cloud named",
            "write one or more of aws, alibaba, tencent, huawei, comma-separated",
        ));
    }
    Ok(out)
}

/// Checks the numeric inputs that are not parsed from text.
pub fn check(inputs: &Inputs) -> Result<(), InputError> {
    if !(inputs.hours_per_month.is_finite()
        && inputs.hours_per_month > 0.0
        && inputs.hours_per_month <= super::breakeven::MAX_HOURS_PER_MONTH)
    {
        return Err(InputError::new(
            format!(
                "--hours-per-month must be above 0 and at most {}, found {}",
                super::breakeven::MAX_HOURS_PER_MONTH,
                inputs.hours_per_month
            ),
            "730 is always on, 365 about half the month",
        ));
    }
    if let Some(b) = inputs.budget_monthly_usd {
        if !(b.is_finite() && b > 0.0) {
            return Err(InputError::new(
                format!("--budget must be a positive USD amount a month, found {b}"),
                "e.g. --budget 20000",
            ));
        }
    }
    if inputs.context == 0 || inputs.batch == 0 {
        return Err(InputError::new(
            "--context and --batch must be at least 1",
            "e.g. --context 4096 --batch 8",
        ));
    }
    if inputs.task.trains()
        && matches!(
            inputs.precision,
            Precision::Fp8 | Precision::Int8 | Precision::Int4
        )
    {
        return Err(InputError::new(
            format!(
                "--precision {} is for inference; {} is sized as mixed precision (bf16/fp16) or fp32 with Adam",
                inputs.precision.as_str(),
                inputs.task.as_str()
            ),
            "write --precision bf16 (the default), fp16 or fp32",
        ));
    }
    offers::check_rate(inputs.cny_per_usd)?;
    Ok(())
}

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
) -> Result<Recommendation, InputError> {
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
