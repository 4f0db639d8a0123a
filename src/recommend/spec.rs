//! Step 4 of `gpuform recommend`: the top option as a spec, with the
//! reasons as comments, that `gpuform validate` and `gpuform plan` accept.

use super::{fit, Candidate, Precision, Recommendation, Task};
use crate::views::usd;
use gpuform_catalog::{PricingModel, HOURS_PER_MONTH};
use gpuform_provider::UserError;

/// One comment line: no line breaks can escape it.
fn comment(out: &mut String, indent: &str, text: &str) {
    for line in text.lines() {
        out.push_str(&format!("{indent}# {}\n", line.trim_end()));
    }
}

/// A data volume for each node: two checkpoints (training) or two copies
/// of the weights (inference), in GiB rounded up to 100.
fn data_gb(r: &Recommendation, top: &Candidate) -> (u32, String) {
    let m = &r.memory;
    let (gib, why) = if r.inputs.task == Task::Inference {
        (
            2.0 * m.states_gib,
            format!("two copies of the {:.0} GiB of weights", m.states_gib),
        )
    } else {
        let grad = if r.inputs.precision == Precision::Fp32 {
            4.0
        } else {
            2.0
        };
        let ckpt = m.params * (m.bytes_per_param - grad) / fit::GIB;
        (
            2.0 * ckpt / f64::from(top.nodes),
            format!(
                "two checkpoints (weights + optimizer, {:.0} B/param = {ckpt:.0} GiB) sharded over {} node(s)",
                m.bytes_per_param - grad,
                top.nodes
            ),
        )
    };
    let gb = ((gib / 100.0).ceil() * 100.0).max(100.0);
    (gb.min(f64::from(u32::MAX)) as u32, why)
}

/// Checks a project name the way specs require (letters, digits, `-`, `_`).
pub fn check_project(name: &str) -> Result<(), UserError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(UserError::new(
            format!("--project: `{name}` is not a project name"),
            "letters, digits, `-` and `_`, starting with a letter or digit, at most 63 characters",
        ))
    }
}

/// The recommended configuration as a spec named `project`.
pub fn spec_yaml(r: &Recommendation, project: &str) -> Result<String, UserError> {
    check_project(project)?;
    let Some(top) = &r.top else {
        return Err(UserError::new(
            "nothing to write: no configuration fits",
            "allow more clouds (--clouds), raise --budget, or lower --precision",
        ));
    };
    let mut out = String::new();
    comment(
        &mut out,
        "",
        &format!(
            "Written by `gpuform recommend` for: {}.",
            super::render::describe_inputs(r)
        ),
    );
    comment(&mut out, "", "Why this configuration:");
    comment(&mut out, "", &format!("- memory: {}", r.memory.formula));
    for rule in r.rules.iter().filter(|x| x.applies) {
        let effect = if rule.effect.is_empty() {
            String::new()
        } else {
            format!(" → {}", rule.effect)
        };
        comment(
            &mut out,
            "",
            &format!("- {}: {} ({}){effect}", rule.id, rule.rule, rule.reason),
        );
    }
    for d in &r.disagreements {
        comment(
            &mut out,
            "",
            &format!(
                "- rule vs numbers ({}): the rule says {}; the numbers say {}; {}: {}",
                d.rule,
                d.rule_says,
                d.numbers_say,
                super::render::winner_words(d.winner),
                d.why
            ),
        );
    }
    comment(
        &mut out,
        "",
        &format!(
            "- price: {}/h, {}/month ({} {}, {}; {} price, as of {})",
            usd(top.hourly_usd),
            usd(top.monthly_usd),
            top.nodes,
            top.instance_type,
            top.pricing,
            top.price_basis,
            top.price_as_of
        ),
    );
    comment(&mut out, "", &format!("  source: {}", top.price_source));
    if !r.managed.is_empty() {
        comment(
            &mut out,
            "",
            &format!(
                "- no ops team: consider {} instead; {}",
                r.managed
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", "),
                super::NOT_DONE_BY_GPUFORM
            ),
        );
    }
    out.push_str(&format!("project: {project}\n\nclusters:\n"));
    let name = match r.inputs.task {
        Task::Training => "trainer",
        Task::FineTuning => "finetune",
        Task::Inference => "server",
    };
    out.push_str(&format!("  {name}:\n"));
    out.push_str(&format!("    cloud: {}\n", top.cloud));
    out.push_str(&format!("    region: {}\n", top.region));
    out.push_str(&format!(
        "    nodes: {} # {:.0} GiB needed, {:.0} GiB a node\n",
        top.nodes,
        r.memory.total_gib,
        f64::from(top.gpus_per_node) * top.gpu_mem_gib
    ));
    out.push_str(&format!(
        "    gpu: {}:{} # per node ({} in the catalog)\n",
        top.gpu_model, top.gpus_per_node, top.instance_type
    ));
    out.push_str(&format!("    pricing: {}\n", top.pricing));
    comment(&mut out, "    ", &top.pricing_reason);
    if let Some(c) = &top.checkpoint {
        comment(&mut out, "    ", &format!("spot: {}", c.why));
    }
    let trains = r.inputs.task.trains();
    if trains && top.gpus_per_node > 1 && top.interconnect == Some("nvlink") {
        out.push_str("    interconnect: nvlink # training: NVLink inside each node\n");
    }
    if trains && top.nodes > 1 {
        out.push_str("    fabric: rdma # multi-node training: RDMA between the nodes\n");
    }
    let (gb, why) = data_gb(r, top);
    out.push_str("    disk:\n      root_gb: 200\n");
    out.push_str(&format!("      data_gb: {gb} # {why}\n"));
    out.push_str("    image: ubuntu-22.04-cuda\n");
    if let Some(b) = r.inputs.budget_monthly_usd {
        let billed = if PricingModel::parse(top.pricing)
            .and_then(|p| p.commitment_months())
            .is_some()
        {
            HOURS_PER_MONTH
        } else {
            r.inputs.hours_per_month
        };
        // A plan checks the hourly cost; the monthly budget at the hours
        // used is the same limit. Rounded up to the cent.
        let hourly = (b / billed * 100.0).ceil() / 100.0;
        out.push_str("\nbudget:\n");
        out.push_str(&format!(
            "  max_hourly_usd: {hourly:.2} # --budget {}/month at {billed:.0} h/month\n",
            usd(b)
        ));
    }
    Ok(out)
}
