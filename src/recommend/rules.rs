//! Step 2 and 3 of `gpuform recommend`: the guide's rules, each with its
//! reason, applied to every offering that holds the workload; the ranking;
//! and where a rule and the numbers disagree, both and the winner.

use super::fit::{self, MemoryNeed};
use super::{area, checkpoint_plan, Candidate, Inputs, Precision, Task, Users, MAX_NODES, MFU};
use crate::market::breakeven;
use crate::market::offers::OfferRow;
use crate::views::usd;
use gpuform_catalog::{Catalog, Offering, PricingModel, HOURS_PER_MONTH};
use serde::Serialize;

/// The guide's size rule for ≥ 100 B parameters names these (and their
/// export and successor variants).
pub const LARGE_CLASS: [&str; 11] = [
    "A100-40GB",
    "A100-80GB",
    "A800-80GB",
    "H100-80GB-SXM",
    "H100-80GB-PCIe",
    "H100-NVL-94GB",
    "H200-141GB",
    "H800-80GB-SXM",
    "H20",
    "B200",
    "B300",
];
/// The guide's size rule for < 1 B parameters: T4/V100-class and the modern L4/A10.
pub const SMALL_CLASS: [&str; 8] = [
    "T4",
    "T4g",
    "V100-16GB",
    "V100-32GB",
    "V100-32GB-PCIe",
    "L4",
    "A10",
    "A10G",
];
/// GPUs without native bf16: bf16 tensor cores start at compute capability
/// 8.0 (Ampere); Turing (T4, 7.5), Volta (V100, 7.0) and Pascal (P100, 6.0)
/// run bf16 only emulated (NVIDIA CUDA C++ Programming Guide, "Compute
/// Capabilities"; developer.nvidia.com/cuda-gpus for each model's number).
pub const NO_NATIVE_BF16: [&str; 6] = [
    "T4",
    "T4g",
    "V100-16GB",
    "V100-32GB",
    "V100-32GB-PCIe",
    "P100",
];
pub const LARGE_PARAMS: f64 = 100e9;
pub const SMALL_PARAMS: f64 = 1e9;
/// A project this short (hours) is short: spot.
pub const SHORT_HOURS: f64 = HOURS_PER_MONTH;
/// A project this long (hours) is long: reserved where it pays.
pub const LONG_HOURS: f64 = 12.0 * HOURS_PER_MONTH;
/// The numbers beat a rule only when this much cheaper by the ranking measure.
pub const NUMBERS_MARGIN: f64 = 0.10;

/// One rule of the guide, whether it applied here, why, and what it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleOutcome {
    /// Stable name: `large-model`, `small-model`, `training-nvlink`,
    /// `multi-node-rdma`, `inference-pcie`, `short-spot`, `long-reserved`,
    /// `no-ops-managed`, `users-southeast-asia`, `users-china`.
    pub id: &'static str,
    /// The rule in the guide's words.
    pub rule: &'static str,
    pub applies: bool,
    /// Why it applies or not, with the numbers.
    pub reason: String,
    /// What it changed in the recommendation (empty when it does not apply).
    pub effect: String,
}

/// A configuration in a few words, for a disagreement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pick {
    pub summary: String,
    pub hourly_usd: f64,
    pub monthly_usd: f64,
    /// The ranking measure (see `Recommendation::ranking`).
    pub measure: Option<f64>,
}

/// Where a rule and the numbers point at different configurations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagreement {
    pub rule: &'static str,
    pub rule_says: String,
    pub rule_pick: Option<Pick>,
    pub numbers_say: String,
    pub numbers_pick: Option<Pick>,
    /// `rule` or `numbers`.
    pub winner: &'static str,
    pub why: String,
}

/// Offerings left out, by reason.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeftOut {
    pub too_many_nodes: usize,
    pub no_nvlink: usize,
    pub no_rdma: usize,
    pub multi_node_inference: usize,
    pub unpriced: usize,
    /// Training offerings that needed more than one node (kept or not).
    pub multi_node_training: usize,
}

impl LeftOut {
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |n: usize, why: String| {
            if n > 0 {
                out.push(format!("{n} {why}"));
            }
        };
        add(
            self.too_many_nodes,
            format!("would need more than {MAX_NODES} nodes"),
        );
        add(
            self.no_nvlink,
            "lack NVLink for a job on more than one GPU (training needs it inside each node)"
                .into(),
        );
        add(
            self.no_rdma,
            "would span nodes without RDMA (multi-node training needs it)".into(),
        );
        add(
            self.multi_node_inference,
            "would split one inference replica across nodes while other types hold it on one"
                .into(),
        );
        add(self.unpriced, "fit but have no price in the catalog".into());
        out
    }
}

/// Whether a GPU belongs to the class the size rule names (true when no size rule applies).
pub fn in_size_class(params: f64, gpu_model: &str) -> bool {
    if params >= LARGE_PARAMS {
        LARGE_CLASS.contains(&gpu_model)
    } else if params < SMALL_PARAMS {
        SMALL_CLASS.contains(&gpu_model)
    } else {
        true
    }
}

/// The pricing model of one offering under the guide's rules, with its reason.
fn choose_pricing(
    catalog: &Catalog,
    inputs: &Inputs,
    o: &Offering,
    project_hours: Option<f64>,
) -> Option<(PricingModel, String)> {
    let rate = |p: PricingModel| {
        o.prices
            .get(&p)
            .map(|pr| pr.hourly_usd(inputs.cny_per_usd))
            .filter(|r| r.is_finite() && *r > 0.0)
    };
    let od = rate(PricingModel::OnDemand);
    let where_ = format!("{} in {} {}", o.instance_type, o.cloud, o.region);
    if let Some(h) = project_hours.filter(|h| *h <= SHORT_HOURS) {
        if rate(PricingModel::Spot).is_some() {
            return Some((
                PricingModel::Spot,
                format!("short project ({h:.0} h ≤ one month): spot, per the guide"),
            ));
        }
        return od.map(|_| {
            (
                PricingModel::OnDemand,
                format!("short project, but the catalog has no spot price for {where_}: on-demand"),
            )
        });
    }
    od?;
    if let Some(h) = project_hours.filter(|h| *h >= LONG_HOURS) {
        let months = h / HOURS_PER_MONTH;
        let u = super::utilisation(inputs);
        let row = breakeven::for_offering(catalog, o, inputs.hours_per_month, inputs.cny_per_usd);
        let mut tried = Vec::new();
        for term in [PricingModel::Reserved3y, PricingModel::Reserved1y] {
            let Some(b) = row
                .as_ref()
                .and_then(|r| r.break_even.iter().find(|b| b.pricing == term))
            else {
                tried.push(format!("no {term} price"));
                continue;
            };
            let term_months = f64::from(term.commitment_months().unwrap_or(12));
            let effective = b.utilisation * (term_months / months).max(1.0);
            if u >= effective {
                return Some((
                    term,
                    format!(
                        "long project ({months:.0} months) at {:.0}% use: {term} pays above {:.0}% ({:.0}% rate ratio{})",
                        u * 100.0,
                        effective * 100.0,
                        b.utilisation * 100.0,
                        if term_months > months {
                            format!(", × {term_months:.0}/{months:.0} months: the term outlasts the project")
                        } else {
                            String::new()
                        }
                    ) + &if tried.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", tried.join(", "))
                    },
                ));
            }
            tried.push(format!(
                "{term} pays only above {:.0}% use",
                effective * 100.0
            ));
        }
        return Some((
            PricingModel::OnDemand,
            format!(
                "long project at {:.0}% use, but {}: on-demand",
                u * 100.0,
                tried.join(", ")
            ),
        ));
    }
    Some((
        PricingModel::OnDemand,
        match project_hours {
            Some(h) => format!(
                "{:.1}-month project: neither short (spot) nor long (reserved): on-demand",
                h / HOURS_PER_MONTH
            ),
            None => {
                "no --duration (or --tokens): on-demand; give one for the spot and reserved rules"
                    .into()
            }
        },
    ))
}

/// One offering as a configuration that holds the workload, or `None`
/// (counted in `left`) when it does not fit the rules or has no price.
pub(crate) fn candidate(
    catalog: &Catalog,
    inputs: &Inputs,
    need: &MemoryNeed,
    row: &OfferRow,
    single_node_inference: bool,
    left: &mut LeftOut,
) -> Option<Candidate> {
    let gpu = catalog.gpu(&row.gpu_model).ok()?;
    let amd = gpu.vendor == "AMD";
    let nodes = fit::nodes_needed(need.total_gib, row.gpu_count, row.gpu_mem_gib);
    if nodes > MAX_NODES {
        left.too_many_nodes += 1;
        return None;
    }
    if inputs.task.trains() {
        if nodes > 1 {
            left.multi_node_training += 1;
        }
        // More than one GPU: NVLink inside each node, so a one-GPU type
        // only serves a job that fits its one GPU. AMD GPUs link through
        // Infinity Fabric, their NVLink.
        let gpus = u64::from(nodes) * u64::from(row.gpu_count);
        if gpus > 1 && !amd && row.interconnect != Some("nvlink") {
            left.no_nvlink += 1;
            return None;
        }
        if nodes > 1 && row.rdma.is_none() {
            left.no_rdma += 1;
            return None;
        }
    } else if single_node_inference && nodes > 1 {
        left.multi_node_inference += 1;
        return None;
    }
    let o = catalog.offering(row.cloud, &row.region, &row.instance_type)?;
    let total_gpus = f64::from(nodes) * f64::from(row.gpu_count);
    let fp16 = catalog
        .gpu_details(&row.gpu_model)
        .and_then(|d| d.fp16_tflops_dense)
        .filter(|f| *f > 0.0);
    let train_hours = match (inputs.task.trains(), inputs.tokens, fp16) {
        (true, Some(t), Some(f)) => {
            Some(6.0 * inputs.params * t / (total_gpus * f * 1e12 * MFU) / 3600.0)
        }
        _ => None,
    };
    let project_hours = inputs.duration_hours.or(train_hours);
    let Some((pricing, pricing_reason)) = choose_pricing(catalog, inputs, o, project_hours) else {
        left.unpriced += 1;
        return None;
    };
    let price = o.prices.get(&pricing)?;
    let node_rate = price.hourly_usd(inputs.cny_per_usd);
    let hourly = node_rate * f64::from(nodes);
    let billed = if pricing.commitment_months().is_some() {
        HOURS_PER_MONTH
    } else {
        inputs.hours_per_month
    };
    let monthly = hourly * billed;
    let area = area(row.cloud, &row.region);
    let mut notes = row.notes.clone();
    if row.availability == "assumed" {
        notes.push("no document says this region sells the type (assumed)".into());
    }
    let checkpoint = (pricing == PricingModel::Spot && inputs.task.trains())
        .then(|| checkpoint_plan(row.cloud, need, inputs.precision, nodes));
    if pricing == PricingModel::Spot && !inputs.task.trains() {
        notes.push(
            "spot inference: replicas are stateless, a reclaimed node is replaced; keep at least two, or one on-demand"
                .into(),
        );
    }
    if inputs.precision == Precision::Bf16 && NO_NATIVE_BF16.contains(&row.gpu_model.as_str()) {
        notes.push(format!(
            "{} has no native bf16 (compute capability below 8.0): bf16 runs emulated, several times slower; use fp16 (same memory, `--precision fp16`)",
            row.gpu_model
        ));
    }
    if nodes > 1 && !inputs.task.trains() {
        notes.push(format!(
            "one replica spans {nodes} nodes (pipeline parallelism): no single node of the allowed clouds holds it"
        ));
    }
    Some(Candidate {
        cloud: row.cloud,
        region: row.region.clone(),
        area,
        region_tier: inputs.users.map(|u| u.tier(area)),
        instance_type: row.instance_type.clone(),
        gpu_model: row.gpu_model.clone(),
        vendor: gpu.vendor.clone(),
        gpus_per_node: row.gpu_count,
        gpu_mem_gib: row.gpu_mem_gib,
        nodes,
        interconnect: row.interconnect,
        rdma: row.rdma,
        pricing: pricing.as_str(),
        pricing_reason,
        node_hourly_usd: node_rate,
        hourly_usd: hourly,
        monthly_usd: monthly,
        usd_per_fp16_pflop_hour: fp16.map(|f| node_rate / f64::from(row.gpu_count) / (f / 1000.0)),
        price_basis: price.basis.as_str(),
        price_source: price.source.clone(),
        price_as_of: price.as_of.clone(),
        train_hours,
        train_cost_usd: train_hours.map(|h| h * hourly),
        within_budget: inputs
            .budget_monthly_usd
            .is_none_or(|b| monthly <= b + 1e-9),
        in_rule_class: in_size_class(inputs.params, &row.gpu_model),
        checkpoint,
        notes,
    })
}

/// The ranking measure: lower is better; `None` when unknown.
pub fn measure(inputs: &Inputs, c: &Candidate) -> Option<f64> {
    match inputs.task {
        Task::Inference => Some(c.hourly_usd),
        _ if inputs.tokens.is_some() => c.train_cost_usd,
        _ => c.usd_per_fp16_pflop_hour,
    }
}

/// The ranking in words.
pub fn ranking_words(inputs: &Inputs) -> String {
    let by = match inputs.task {
        Task::Inference => "$/h of the smallest configuration that holds the model and its KV cache (throughput is not modelled)".to_string(),
        _ if inputs.tokens.is_some() => format!(
            "the whole training run's cost: 6 × params × tokens FLOPs at {:.0}% of dense FP16 peak",
            MFU * 100.0
        ),
        _ => "$/FP16-PFLOP-hour (cost per unit of training compute; configurations without a published FP16 figure last)".to_string(),
    };
    let mut parts = Vec::new();
    if inputs.budget_monthly_usd.is_some() {
        parts.push("within --budget first".to_string());
    }
    if let Some(u) = inputs.users {
        parts.push(format!("regions nearest {} users first", u.as_str()));
    }
    parts.push(format!("then by {by}"));
    parts.join(", ")
}

/// Best first: within budget, nearest users, the measure, $/h, then names.
pub(crate) fn rank(inputs: &Inputs, all: &mut [Candidate]) {
    all.sort_by(|a, b| {
        let key = |c: &Candidate| (!c.within_budget, c.region_tier.unwrap_or(0));
        key(a)
            .cmp(&key(b))
            .then_with(|| {
                measure(inputs, a)
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&measure(inputs, b).unwrap_or(f64::INFINITY))
            })
            .then_with(|| a.hourly_usd.total_cmp(&b.hourly_usd))
            .then_with(|| a.cloud.cmp(&b.cloud))
            .then_with(|| a.region.cmp(&b.region))
            .then_with(|| a.instance_type.cmp(&b.instance_type))
    });
}

/// `2 × p5.48xlarge (8 × H100-80GB-SXM) in aws us-east-1, spot`.
pub fn summary(c: &Candidate) -> String {
    format!(
        "{} × {} ({} × {}) in {} {}, {}",
        c.nodes, c.instance_type, c.gpus_per_node, c.gpu_model, c.cloud, c.region, c.pricing
    )
}

fn pick(inputs: &Inputs, c: &Candidate) -> Pick {
    Pick {
        summary: summary(c),
        hourly_usd: c.hourly_usd,
        monthly_usd: c.monthly_usd,
        measure: measure(inputs, c),
    }
}

fn fmt_measure(inputs: &Inputs, v: Option<f64>) -> String {
    match (inputs.task, v) {
        (_, None) => "unknown (no FP16 figure)".into(),
        (Task::Inference, Some(v)) => format!("{}/h", usd(v)),
        (_, Some(v)) if inputs.tokens.is_some() => format!("{} for the run", usd(v)),
        (_, Some(v)) => format!("{}/FP16-PFLOP-h", usd(v)),
    }
}

/// The size rule against the numbers: which configuration wins, and why.
fn size_disagreement(
    inputs: &Inputs,
    id: &'static str,
    rule_says: String,
    options: &[Candidate],
) -> Option<(Disagreement, usize)> {
    let numbers = options.first()?;
    if numbers.in_rule_class {
        return None;
    }
    let rule_i = options.iter().position(|c| c.in_rule_class);
    let numbers_say = format!(
        "{} ranks first: {}",
        summary(numbers),
        fmt_measure(inputs, measure(inputs, numbers))
    );
    let Some(ri) = rule_i else {
        return Some((
            Disagreement {
                rule: id,
                rule_says,
                rule_pick: None,
                numbers_say,
                numbers_pick: Some(pick(inputs, numbers)),
                winner: "numbers",
                why: "no configuration of the rule's GPU class fits the constraints and prices of the allowed clouds".into(),
            },
            0,
        ));
    };
    let rule = &options[ri];
    let (nm, rm) = (measure(inputs, numbers), measure(inputs, rule));
    let cheaper = matches!((nm, rm), (Some(n), Some(r)) if n <= r * (1.0 - NUMBERS_MARGIN));
    let (winner, why, idx) = if !cheaper {
        (
            "rule",
            format!(
                "the numbers' pick is not at least {:.0}% better ({} vs {}): a small difference does not pay for leaving the rule's well-trodden class (drivers, tooling, capacity)",
                NUMBERS_MARGIN * 100.0,
                fmt_measure(inputs, nm),
                fmt_measure(inputs, rm)
            ),
            ri,
        )
    } else if numbers.nodes > rule.nodes {
        (
            "rule",
            format!(
                "the numbers' pick needs {} nodes against {}: more nodes are more to fail and more traffic between them",
                numbers.nodes, rule.nodes
            ),
            ri,
        )
    } else if inputs.task.trains()
        && inputs.tokens.is_none()
        && numbers.hourly_usd > rule.hourly_usd
    {
        (
            "rule",
            format!(
                "without --tokens the job's size is unknown: the numbers' pick costs {}/h against {}/h, and its lower $/PFLOP-h pays only if the job keeps the GPUs busy (give --tokens to compare whole runs)",
                usd(numbers.hourly_usd),
                usd(rule.hourly_usd)
            ),
            ri,
        )
    } else {
        (
            "numbers",
            format!(
                "it meets every hard constraint (memory, interconnect, budget) and is at least {:.0}% better ({} vs {}) on no more nodes",
                NUMBERS_MARGIN * 100.0,
                fmt_measure(inputs, nm),
                fmt_measure(inputs, rm)
            ),
            0,
        )
    };
    Some((
        Disagreement {
            rule: id,
            rule_says: format!(
                "{rule_says}: {} ({})",
                summary(rule),
                fmt_measure(inputs, rm)
            ),
            rule_pick: Some(pick(inputs, rule)),
            numbers_say,
            numbers_pick: Some(pick(inputs, numbers)),
            winner,
            why,
        },
        idx,
    ))
}

/// The rules' outcomes, the disagreements and the recommended configuration.
pub(crate) fn decide(
    inputs: &Inputs,
    need: &MemoryNeed,
    options: &[Candidate],
    left: &LeftOut,
) -> (Vec<RuleOutcome>, Vec<Disagreement>, Option<Candidate>) {
    let mut d = Decided::default();
    let top = size_rules(inputs, options, &mut d);
    interconnect_rules(inputs, need, left, &top, &mut d);
    pricing_rules(inputs, &top, &mut d);
    team_and_users_rules(inputs, &top, &mut d);
    (d.rules, d.disagreements, top)
}

/// What the rules said, and where the numbers disagreed with them.
#[derive(Default)]
struct Decided {
    rules: Vec<RuleOutcome>,
    disagreements: Vec<Disagreement>,
}

/// The model's size: large and small models' GPU classes; the pick (the
/// cheapest, unless a size rule's class wins).
fn size_rules(inputs: &Inputs, options: &[Candidate], d: &mut Decided) -> Option<Candidate> {
    let p = fit::sci(inputs.params);
    let mut top_i = 0usize;
    let large = inputs.params >= LARGE_PARAMS;
    let small = inputs.params < SMALL_PARAMS;
    d.rules.push(RuleOutcome {
        id: "large-model",
        rule: "≥ 100 B parameters → A100/H100-class clusters",
        applies: large,
        reason: if large {
            format!("{p} parameters ≥ 100B")
        } else {
            format!("{p} parameters < 100B")
        },
        effect: if large {
            format!("prefer {}", LARGE_CLASS.join(", "))
        } else {
            String::new()
        },
    });
    d.rules.push(RuleOutcome {
        id: "small-model",
        rule: "< 1 B parameters → T4/V100-class GPUs (and their modern equivalents L4/A10)",
        applies: small,
        reason: if small {
            format!("{p} parameters < 1B")
        } else {
            format!("{p} parameters ≥ 1B")
        },
        effect: if small {
            format!("prefer {}", SMALL_CLASS.join(", "))
        } else {
            String::new()
        },
    });
    if large || small {
        let id = if large { "large-model" } else { "small-model" };
        let says = if large {
            "A100/H100-class"
        } else {
            "T4/V100-class (L4/A10)"
        };
        if let Some((found, i)) = size_disagreement(inputs, id, says.to_string(), options) {
            top_i = i;
            d.disagreements.push(found);
        }
    }
    options.get(top_i).cloned()
}

/// NVLink inside a node, RDMA between nodes, PCIe for inference.
fn interconnect_rules(
    inputs: &Inputs,
    need: &MemoryNeed,
    left: &LeftOut,
    top: &Option<Candidate>,
    d: &mut Decided,
) {
    let trains = inputs.task.trains();
    d.rules.push(RuleOutcome {
        id: "training-nvlink",
        rule: "training → NVLink between the GPUs inside a node",
        applies: trains,
        reason: format!("the task is {}", inputs.task.as_str()),
        effect: if trains {
            format!(
                "offerings without (stated) NVLink left out where the job needs more than one GPU: {}",
                left.no_nvlink
            )
        } else {
            String::new()
        },
    });
    // The rule is about the configuration recommended: a single-node pick
    // needs no fabric, even where smaller types would have needed several
    // nodes (those were still held to it, and the reason says how many).
    let top_nodes = top.as_ref().map_or(0, |t| t.nodes);
    let multi = trains && left.multi_node_training > 0 && top_nodes != 1;
    d.rules.push(RuleOutcome {
        id: "multi-node-rdma",
        rule: "multi-node training → RDMA between the nodes (EFA, eRDMA, RoCE, InfiniBand)",
        applies: multi,
        reason: if !trains {
            format!("the task is {}", inputs.task.as_str())
        } else if multi {
            format!(
                "{:.0} GiB does not fit one node of {} instance type offering(s)",
                need.total_gib, left.multi_node_training
            )
        } else if left.multi_node_training > 0 {
            format!(
                "the pick holds {:.0} GiB on one node; {} offering(s) that would need several nodes were held to the rule ({} without RDMA left out)",
                need.total_gib, left.multi_node_training, left.no_rdma
            )
        } else {
            format!(
                "{:.0} GiB fits one node of every instance type",
                need.total_gib
            )
        },
        effect: if multi {
            format!(
                "multi-node configurations without RDMA left out: {}{}",
                left.no_rdma,
                top.as_ref()
                    .filter(|t| t.nodes > 1)
                    .map(|t| format!(
                        "; the pick uses {} ({} nodes)",
                        t.rdma.unwrap_or("rdma"),
                        t.nodes
                    ))
                    .unwrap_or_default()
            )
        } else {
            String::new()
        },
    });
    d.rules.push(RuleOutcome {
        id: "inference-pcie",
        rule: "inference → PCIe is fine",
        applies: !trains,
        reason: format!("the task is {}", inputs.task.as_str()),
        effect: if trains {
            String::new()
        } else {
            "no interconnect required; NVLink types are ranked by price like the others".into()
        },
    });
}

/// Spot for short projects, reserved for long ones.
fn pricing_rules(inputs: &Inputs, top: &Option<Candidate>, d: &mut Decided) {
    let project = inputs
        .duration_hours
        .or_else(|| top.as_ref().and_then(|t| t.train_hours));
    let from = if inputs.duration_hours.is_some() {
        "--duration"
    } else {
        "the training-time estimate"
    };
    let short = project.is_some_and(|h| h <= SHORT_HOURS);
    d.rules.push(RuleOutcome {
        id: "short-spot",
        rule: "short projects → spot, checkpointing within the cloud's reclaim notice (AWS/Tencent 2 min, Alibaba ~5 min)",
        applies: short,
        reason: match project {
            None => "no --duration or --tokens: the project's length is unknown".into(),
            Some(h) if short => format!("{h:.0} h ({from}) ≤ one month (730 h)"),
            Some(h) => format!("{h:.0} h ({from}) > one month (730 h)"),
        },
        effect: match (top, short) {
            (Some(t), true) => match &t.checkpoint {
                Some(c) => format!(
                    "the pick is {}; {} (notice: {} s)",
                    t.pricing, c.why, c.notice_seconds
                ),
                None => format!("the pick is {}: {}", t.pricing, t.pricing_reason),
            },
            _ => String::new(),
        },
    });
    let long = project.is_some_and(|h| h >= LONG_HOURS);
    d.rules.push(RuleOutcome {
        id: "long-reserved",
        rule: "long projects → reserved-3y where utilisation passes the break-even",
        applies: long,
        reason: match project {
            None => "no --duration or --tokens: the project's length is unknown".into(),
            Some(h) => format!(
                "{:.1} months ({from}) {} 12 months",
                h / HOURS_PER_MONTH,
                if long { "≥" } else { "<" }
            ),
        },
        effect: match (top, long) {
            (Some(t), true) => format!("the pick is {}: {}", t.pricing, t.pricing_reason),
            _ => String::new(),
        },
    });
    if let (Some(t), true) = (top, long) {
        if t.pricing != PricingModel::Reserved3y.as_str() {
            d.disagreements.push(Disagreement {
                rule: "long-reserved",
                rule_says: "reserved-3y for a long project".into(),
                rule_pick: None,
                numbers_say: format!("{}: {}", t.pricing, t.pricing_reason),
                numbers_pick: Some(pick(inputs, t)),
                winner: "numbers",
                why: if t.pricing_reason.contains("no reserved-3y price") {
                    format!(
                        "the catalog has no reserved-3y price for {} in {} {}: {} is the best term it prices (`gpuform breakeven` compares them; --prices adds a quote)",
                        t.instance_type, t.cloud, t.region, t.pricing
                    )
                } else {
                    "a reservation is paid for every hour of its term: below the break-even utilisation it costs more than paying for the hours used".into()
                },
            });
        }
    }
}

/// Who runs the machines and where the users are.
fn team_and_users_rules(inputs: &Inputs, top: &Option<Candidate>, d: &mut Decided) {
    let no_ops = inputs.ops == super::Ops::None;
    d.rules.push(RuleOutcome {
        id: "no-ops-managed",
        rule: "no ops team → a managed platform (SageMaker, PAI, ModelArts, TI) instead of self-managed Kubernetes",
        applies: no_ops,
        reason: if no_ops {
            "--ops none: no one runs the machines".into()
        } else {
            "--ops devops: a team runs the machines".into()
        },
        effect: if no_ops {
            super::NOT_DONE_BY_GPUFORM.into()
        } else {
            String::new()
        },
    });

    // Users.
    let sea = inputs.users == Some(Users::SoutheastAsia);
    d.rules.push(RuleOutcome {
        id: "users-southeast-asia",
        rule: "users in Southeast Asia → Hong Kong / Singapore regions first",
        applies: sea,
        reason: match inputs.users {
            Some(u) => format!("--users {}", u.as_str()),
            None => "no --users".into(),
        },
        effect: if sea {
            region_effect(top, "Hong Kong or Singapore")
        } else {
            String::new()
        },
    });
    let china = inputs.users == Some(Users::China);
    d.rules.push(RuleOutcome {
        id: "users-china",
        rule: "users in mainland China → mainland China (CN) regions",
        applies: china,
        reason: match inputs.users {
            Some(u) => format!("--users {}", u.as_str()),
            None => "no --users".into(),
        },
        effect: if china {
            format!(
                "{}; serving the public in mainland China from there needs an ICP filing (备案)",
                region_effect(top, "mainland China")
            )
        } else {
            String::new()
        },
    });
}

fn region_effect(top: &Option<Candidate>, want: &str) -> String {
    match top {
        Some(t) if t.region_tier == Some(0) => format!(
            "regions ranked by distance to the users; the pick is in {} {} ({want})",
            t.cloud, t.region
        ),
        Some(t) => format!(
            "regions ranked by distance to the users, but no configuration in {want} fits: the pick is in {} {}",
            t.cloud, t.region
        ),
        None => "regions ranked by distance to the users".into(),
    }
}
