//! What `gpuform recommend` is told: the workload's facts, their parsing
//! from the command line (each error names its flag and how to fix it), and
//! where regions are relative to the users.

use crate::market::offers;
use gpuform_catalog::{DEFAULT_CNY_PER_USD, HOURS_PER_MONTH};
use gpuform_provider::Cloud;
use gpuform_provider::UserError;
use serde::Serialize;

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

    pub(crate) fn allowed(&self, c: Cloud) -> bool {
        self.clouds.is_empty() || self.clouds.contains(&c)
    }
}

fn bad(flag: &str, text: &str, what: &str, hint: &str) -> UserError {
    UserError::new(format!("{flag}: `{text}` is not {what}"), hint)
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
pub fn parse_params(text: &str) -> Result<f64, UserError> {
    let hint = "write a number with K, M, B (billion) or T: 70B, 1.5B, 350M, 1.2T";
    let v = number_with_unit(
        text,
        &[("", 1.0), ("k", 1e3), ("m", 1e6), ("b", 1e9), ("t", 1e12)],
    )
    .ok_or_else(|| bad("--params", text, "a parameter count", hint))?;
    if !(1e6..=1e14).contains(&v) {
        return Err(UserError::new(
            format!(
                "--params: {} parameters is outside what recommend sizes (1M to 100T)",
                super::fit::sci(v)
            ),
            hint,
        ));
    }
    Ok(v)
}

/// `--tokens 2T`: training tokens.
pub fn parse_tokens(text: &str) -> Result<f64, UserError> {
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
pub fn parse_duration(text: &str) -> Result<f64, UserError> {
    let hint = "a number and a unit: h, d, w, mo (month, 730 h) or y, e.g. 36h, 2w, 6mo, 1y";
    if text.trim().to_ascii_lowercase().ends_with("min") || text.trim().ends_with('m') {
        return Err(UserError::new(
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

pub fn parse_task(text: &str) -> Result<Task, UserError> {
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

pub fn parse_precision(text: &str) -> Result<Precision, UserError> {
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

pub fn parse_ops(text: &str) -> Result<Ops, UserError> {
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

pub fn parse_users(text: &str) -> Result<Users, UserError> {
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
pub fn parse_clouds(text: &str) -> Result<Vec<Cloud>, UserError> {
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let c = offers::parse_cloud(part)
            .map_err(|e| UserError::new(format!("--clouds: {}", e.message), e.hint))?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(UserError::new(
            "--clouds: no cloud named",
            "write one or more of aws, alibaba, tencent, huawei, comma-separated",
        ));
    }
    Ok(out)
}

/// Checks the numeric inputs that are not parsed from text.
pub fn check(inputs: &Inputs) -> Result<(), UserError> {
    if !(inputs.hours_per_month.is_finite()
        && inputs.hours_per_month > 0.0
        && inputs.hours_per_month <= crate::market::breakeven::MAX_HOURS_PER_MONTH)
    {
        return Err(UserError::new(
            format!(
                "--hours-per-month must be above 0 and at most {}, found {}",
                crate::market::breakeven::MAX_HOURS_PER_MONTH,
                inputs.hours_per_month
            ),
            "730 is always on, 365 about half the month",
        ));
    }
    if let Some(b) = inputs.budget_monthly_usd {
        if !(b.is_finite() && b > 0.0) {
            return Err(UserError::new(
                format!("--budget must be a positive USD amount a month, found {b}"),
                "e.g. --budget 20000",
            ));
        }
    }
    if inputs.context == 0 || inputs.batch == 0 {
        return Err(UserError::new(
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
        return Err(UserError::new(
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
