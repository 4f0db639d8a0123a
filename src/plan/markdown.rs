//! The plan as a pull-request comment (`gpuform plan --markdown`): a summary
//! line, a table of changes per cluster with cost before → after, the budget
//! status, and the full diff in a collapsed block.

use super::render::render;
use super::{Action, Plan};
use crate::spec::Budget;
use std::collections::BTreeMap;
use std::fmt::Write;

use crate::views::usd;

fn delta(before: f64, after: f64) -> String {
    let d = after - before;
    if d.abs() < 0.005 {
        "±$0".to_string()
    } else if d > 0.0 {
        format!("+${d:.2}")
    } else {
        format!("−${:.2}", -d)
    }
}

/// A cell's text with the characters that would break a table escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Renders `plan` as GitHub/GitLab-flavoured markdown. `budget` is the
/// spec's (a plan over budget never gets here: it is an error).
pub fn render_markdown(plan: &Plan, budget: Option<&Budget>) -> String {
    let mut out = String::new();
    let s = &plan.summary;
    let c = &plan.cost;
    let _ = writeln!(out, "### gpuform plan · `{}`\n", cell(&plan.project));
    if plan.has_changes() {
        let _ = writeln!(
            out,
            "**{} to create, {} to update, {} to replace, {} to delete** · monthly cost {} → {} ({})\n",
            s.create,
            s.update,
            s.replace,
            s.delete,
            usd(c.monthly_usd_before),
            usd(c.monthly_usd_after),
            delta(c.monthly_usd_before, c.monthly_usd_after)
        );
    } else {
        let _ = writeln!(
            out,
            "**No changes.** The clouds match the spec ({} resource(s)) · monthly cost {}\n",
            s.no_op,
            usd(c.monthly_usd_after)
        );
    }
    // Changes per cluster (the first part of an address).
    let mut per: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for ch in &plan.changes {
        let address = &ch.address;
        let cluster = match address.cluster() {
            Some(c) => c.to_string(),
            None => ch.address.split('.').next().unwrap_or("").to_string(),
        };
        let e = per.entry(cluster).or_default();
        match ch.action {
            Action::Create => e[0] += 1,
            Action::Update => e[1] += 1,
            Action::Replace => e[2] += 1,
            Action::Delete => e[3] += 1,
            Action::NoOp => {}
        }
    }
    let costs: BTreeMap<&str, &super::ClusterCost> =
        c.clusters.iter().map(|k| (k.cluster.as_str(), k)).collect();
    let _ = writeln!(
        out,
        "| cluster | create | update | replace | delete | nodes | monthly before → after | Δ |"
    );
    let _ = writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for name in per.keys() {
        let n = per[name];
        let (nodes, money, d) = match costs.get(name.as_str()) {
            Some(k) => (
                format!("{} → {}", k.nodes_before, k.nodes_after),
                format!(
                    "{} → {}",
                    usd(k.monthly_usd_before),
                    usd(k.monthly_usd_after)
                ),
                delta(k.monthly_usd_before, k.monthly_usd_after),
            ),
            None => ("".into(), "".into(), "".into()),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            cell(name),
            n[0],
            n[1],
            n[2],
            n[3],
            nodes,
            money,
            d
        );
    }
    let _ = writeln!(
        out,
        "| **total** | **{}** | **{}** | **{}** | **{}** | | **{} → {}** | **{}** |\n",
        s.create,
        s.update,
        s.replace,
        s.delete,
        usd(c.monthly_usd_before),
        usd(c.monthly_usd_after),
        delta(c.monthly_usd_before, c.monthly_usd_after)
    );
    match budget {
        Some(b) => {
            let mut limits = Vec::new();
            if let Some(h) = b.max_hourly_usd {
                limits.push(format!("{}/h", usd(h)));
            }
            if let Some(m) = b.max_monthly_usd {
                limits.push(format!("{}/month", usd(m)));
            }
            let _ = writeln!(
                out,
                "✅ **Budget:** within {} ({}/h, {}/month after this plan)\n",
                limits.join(" and "),
                usd(c.hourly_usd_after),
                usd(c.monthly_usd_after)
            );
        }
        None => {
            let _ = writeln!(out, "ℹ️ **Budget:** none set in the spec\n");
        }
    }
    for w in &plan.warnings {
        let _ = writeln!(out, "> ⚠️ {}", cell(w));
    }
    if !plan.warnings.is_empty() {
        out.push('\n');
    }
    // The full diff, plain (no colour codes), collapsed.
    let text = crate::views::without_colours(|| render(plan, true));
    let fence = if text.contains("```") { "~~~~" } else { "```" };
    let _ = writeln!(
        out,
        "<details><summary>Full plan</summary>\n\n{fence}diff\n{}{fence}\n\n</details>",
        text
    );
    out
}
