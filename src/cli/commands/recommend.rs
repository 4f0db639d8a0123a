//! `gpuform recommend`: arguments, the short prompt on a terminal, output.
//! The work is in [`crate::recommend`].

use crate::cli::out::{errprint, out, outln};
use crate::cli::{CmdResult, Failure};
use crate::recommend::{self as rec, Inputs};
use clap::Args;
use gpuform_catalog::DEFAULT_CNY_PER_USD;
use gpuform_provider::UserError;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// `gpuform recommend --params 70B --task fine-tuning ...`.
#[derive(Debug, Args, Clone)]
pub struct RecommendArgs {
    /// Model size in parameters, with K, M, B or T: `70B`, `1.5B`, `350M`. Required
    /// (asked for on a terminal).
    #[arg(long, value_name = "N")]
    pub params: Option<String>,
    /// training, fine-tuning (full-parameter, Adam) or inference. Required (asked for on a terminal).
    #[arg(long)]
    pub task: Option<String>,
    /// fp32, bf16, fp16 (training: mixed precision with Adam), or for inference also fp8, int8, int4.
    #[arg(long, default_value = "bf16")]
    pub precision: String,
    /// Training tokens (`300B`, `2T`): estimates the run's hours and cost (6 × params × tokens FLOPs).
    #[arg(long, value_name = "N")]
    pub tokens: Option<String>,
    /// How long the project runs: `36h`, `2w`, `6mo`, `1y`. Short (≤ a month) → spot;
    /// long (≥ 12 months) → reserved where utilisation passes the break-even.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Hours a month the machines run (730 = always on).
    #[arg(long, value_name = "H", allow_negative_numbers = true)]
    pub hours_per_month: Option<f64>,
    /// Who runs the machines: `none` (then the managed platforms are named) or `devops`.
    #[arg(long, default_value = "devops")]
    pub ops: String,
    /// Where the users are: southeast-asia, china, us-east, us-west, europe, japan, india.
    #[arg(long, value_name = "WHERE")]
    pub users: Option<String>,
    /// Most USD a month the configuration may cost.
    #[arg(long, value_name = "USD_PER_MONTH", allow_negative_numbers = true)]
    pub budget: Option<f64>,
    /// Clouds allowed, comma-separated (default: all): aws,alibaba,tencent,huawei.
    #[arg(long, value_name = "CLOUD,...")]
    pub clouds: Option<String>,
    /// Inference: tokens of context per sequence, for the KV cache.
    #[arg(long, default_value_t = 4096, value_name = "TOKENS")]
    pub context: u32,
    /// Inference: sequences served at once, for the KV cache.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub batch: u32,
    /// CNY per USD for prices quoted in yuan.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true)]
    pub cny_per_usd: Option<f64>,
    /// Price overrides, as for `plan --prices`; they win over the catalog.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Write the recommended configuration as a spec (its reasons as comments). Refuses to
    /// replace an existing file without --force.
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// With --write: replace the file if it exists.
    #[arg(long)]
    pub force: bool,
    /// With --write: the spec's project name.
    #[arg(long, default_value = "recommended")]
    pub project: String,
    /// The recommendation as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

fn input(e: UserError) -> Failure {
    Failure(format!("error: {e}"))
}

/// An optional flag, parsed when given.
fn optional<T>(
    flag: &Option<String>,
    parse: impl Fn(&str) -> Result<T, UserError>,
) -> Result<Option<T>, Failure> {
    flag.as_deref().map(parse).transpose().map_err(input)
}

/// Asks for a missing required input on a terminal; elsewhere, says which flag is missing.
fn ask(
    value: Option<String>,
    flag: &str,
    question: &str,
    example: &str,
) -> Result<String, Failure> {
    if let Some(v) = value {
        return Ok(v);
    }
    if !std::io::stdin().is_terminal() {
        return Err(Failure(format!(
            "error: {flag} is missing (stdin is not a terminal, so recommend does not ask)\n  hint: pass it, e.g. {flag} {example}"
        )));
    }
    errprint!("{question} [e.g. {example}]: ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Failure(format!("cannot read {flag} from the terminal: {e}")))?;
    let line = line.trim().to_string();
    if line.is_empty() {
        return Err(Failure(format!(
            "error: {flag} is required\n  hint: e.g. {flag} {example}"
        )));
    }
    Ok(line)
}

fn inputs(a: &RecommendArgs) -> Result<Inputs, Failure> {
    let params = ask(
        a.params.clone(),
        "--params",
        "Model size in parameters",
        "70B",
    )?;
    let params = rec::parse_params(&params).map_err(input)?;
    let task = ask(
        a.task.clone(),
        "--task",
        "Task (training, fine-tuning, inference)",
        "fine-tuning",
    )?;
    let task = rec::parse_task(&task).map_err(input)?;
    let mut i = Inputs::new(params, task);
    i.precision = rec::parse_precision(&a.precision).map_err(input)?;
    i.tokens = optional(&a.tokens, rec::parse_tokens)?;
    i.duration_hours = optional(&a.duration, rec::parse_duration)?;
    if let Some(h) = a.hours_per_month {
        i.hours_per_month = h;
    }
    i.ops = rec::parse_ops(&a.ops).map_err(input)?;
    i.users = optional(&a.users, rec::parse_users)?;
    i.budget_monthly_usd = a.budget;
    if let Some(c) = &a.clouds {
        i.clouds = rec::parse_clouds(c).map_err(input)?;
    }
    i.context = a.context;
    i.batch = a.batch;
    i.cny_per_usd = a.cny_per_usd.unwrap_or(DEFAULT_CNY_PER_USD);
    rec::check(&i).map_err(input)?;
    Ok(i)
}

pub fn recommend_cmd(a: RecommendArgs) -> CmdResult {
    let i = inputs(&a)?;
    if a.write.is_some() {
        rec::spec::check_project(&a.project).map_err(input)?;
    }
    if let Some(path) = &a.write {
        if path.exists() && !a.force {
            return Err(Failure(format!(
                "error: {} already exists; recommend does not replace it\n  hint: pass --force to replace it, or --write another path",
                path.display()
            )));
        }
    }
    let catalog = super::shared::catalog_for(a.prices.as_deref())?;
    let r = rec::recommend(&catalog, &i, crate::clock::today()).map_err(input)?;
    let written = match (&a.write, &r.top) {
        (Some(path), Some(_)) => {
            let text = rec::spec::spec_yaml(&r, &a.project).map_err(input)?;
            gpuform_catalog::fsio::AtomicWrite::new()
                .write(path, text.as_bytes())
                .map_err(|e| Failure(format!("cannot write {}: {e}", path.display())))?;
            Some(path.clone())
        }
        _ => None,
    };
    if a.json {
        let text = serde_json::to_string_pretty(&r)
            .map_err(|e| Failure(format!("cannot serialise the result: {e}")))?;
        outln!("{text}");
    } else {
        out!("{}", rec::render::render(&r));
        if let Some(p) = &written {
            outln!(
                "Wrote {}. Next: `gpuform validate {0}` and `gpuform plan {0} --sandbox`.",
                p.display()
            );
        }
    }
    if r.top.is_none() {
        return Err(Failure(format!(
            "error: no configuration of the allowed clouds fits{}\n  hint: allow more clouds (--clouds), raise --budget, lower --precision (inference), or shorten --context/--batch",
            if r.left_out.is_empty() {
                String::new()
            } else {
                format!(" (left out: {})", r.left_out.join("; "))
            }
        )));
    }
    Ok(ExitCode::SUCCESS)
}
