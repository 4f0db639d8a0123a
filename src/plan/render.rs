//! Human rendering of plans, Terraform-style: one block per changed
//! resource, per-attribute before → after, multi-line values as a unified
//! diff, a summary line and the cost.

use super::{Action, Plan, ResourceChange};
use crate::views::{amount, paint, Paint};
use gpuform_catalog::HOURS_PER_MONTH;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The plan for a person. A plan without changes says so in one line and
/// its cost totals; its per-cluster cost lines come with `verbose` (at 5,000
/// resources they were hundreds of lines saying nothing changes).
pub fn render(plan: &Plan, verbose: bool) -> String {
    let mut out = String::new();
    let changed: Vec<&ResourceChange> = plan
        .changes
        .iter()
        .filter(|c| c.action != Action::NoOp)
        .collect();
    for w in &plan.warnings {
        let _ = writeln!(out, "{} {w}", paint("Warning:", Paint::Yellow));
    }
    if changed.is_empty() {
        let _ = writeln!(
            out,
            "{} The clouds match the spec ({} resource(s)).",
            paint("No changes.", Paint::Bold),
            plan.summary.no_op
        );
        render_cost(&mut out, plan, verbose);
        return out;
    }
    let _ = writeln!(out, "gpuform will perform the following actions:\n");
    for c in changed {
        render_change(&mut out, c);
    }
    let s = &plan.summary;
    let _ = writeln!(
        out,
        "{} {} to add, {} to change, {} to replace, {} to destroy.",
        paint("Plan:", Paint::Bold),
        s.create,
        s.update,
        s.replace,
        s.delete
    );
    render_cost(&mut out, plan, true);
    if !plan.lockin.is_empty() {
        let _ = writeln!(out, "\nLock-in (provider-specific choices):");
        for l in &plan.lockin {
            let _ = writeln!(out, "  - {}: {}", l.yaml_path, l.reason);
        }
    }
    out
}

/// The cost totals; with `detail`, a line per cluster and bucket and the
/// notes on currency and unpriced instances.
fn render_cost(out: &mut String, plan: &Plan, detail: bool) {
    let c = &plan.cost;
    let sign = |d: f64| {
        if d >= 0.0 {
            format!("+${}", amount(d))
        } else {
            format!("-${}", amount(-d))
        }
    };
    if c.unpriced.is_empty() {
        let _ = writeln!(
            out,
            "{} ${}/h → ${}/h ({}/h); ${}/month → ${}/month ({}/month, {} h/month)",
            paint("Cost:", Paint::Bold),
            amount(c.hourly_usd_before),
            amount(c.hourly_usd_after),
            sign(c.hourly_usd_delta),
            amount(c.monthly_usd_before),
            amount(c.monthly_usd_after),
            sign(c.monthly_usd_delta),
            HOURS_PER_MONTH
        );
    } else {
        // Unpriced is unknown, not $0: the plan must not look cheaper.
        let _ = writeln!(
            out,
            "{} ${}/h → unknown (${}/h priced + {} unpriced instance(s)); ${}/month → unknown (at least ${}/month, {} h/month)",
            paint("Cost:", Paint::Bold),
            amount(c.hourly_usd_before),
            amount(c.hourly_usd_after),
            c.unpriced.len(),
            amount(c.monthly_usd_before),
            amount(c.monthly_usd_after),
            HOURS_PER_MONTH
        );
    }
    if c.upfront_usd > 0.0 {
        let _ = writeln!(
            out,
            "      paid up front: ${} for Capacity Blocks (once, not per hour; their nodes add $0/h)",
            amount(c.upfront_usd)
        );
    }
    if !detail {
        return;
    }
    for k in &c.clusters {
        let nodes = if k.nodes_before == k.nodes_after {
            format!("{}", k.nodes_after)
        } else {
            format!("{} → {}", k.nodes_before, k.nodes_after)
        };
        let after = if k.unpriced_after == 0 {
            format!(
                "${}/h (${}/month)",
                amount(k.hourly_usd_after),
                amount(k.monthly_usd_after)
            )
        } else {
            format!(
                "unknown ({} of {} node(s) without a price)",
                k.unpriced_after, k.nodes_after
            )
        };
        let _ = writeln!(
            out,
            "      cluster {}: {nodes} × {} {}: ${}/h → {after}{}",
            k.cluster,
            k.instance_type.as_deref().unwrap_or("-"),
            k.pricing.as_deref().unwrap_or(""),
            amount(k.hourly_usd_before),
            k.price_basis
                .as_deref()
                .map_or(String::new(), |b| format!(" [price {b}]")),
        );
    }
    for b in &c.storage {
        let name = b.bucket.strip_prefix("bucket.").unwrap_or(&b.bucket);
        let Some(class) = &b.storage_class else {
            let _ = writeln!(
                out,
                "      bucket {name}: storage ${}/month → $0/month (destroyed)",
                amount(b.monthly_usd_before)
            );
            continue;
        };
        let size = b
            .size_gb
            .map_or("size unknown".to_string(), |gb| format!("{gb} GB"));
        match (&b.unpriced, b.usd_per_gb_month) {
            (None, Some(per_gb)) => {
                let _ = writeln!(
                    out,
                    "      bucket {name}: {size} {class} × ${per_gb:.4}/GB-month = ${}/month{}",
                    amount(b.monthly_usd_after),
                    b.price_basis
                        .as_deref()
                        .map_or(String::new(), |p| format!(" [price {p}]")),
                );
            }
            (why, _) => {
                let _ = writeln!(
                    out,
                    "      bucket {name}: {size} {class}: counts as $0/month ({})",
                    why.as_deref().unwrap_or("no price")
                );
            }
        }
    }
    if c.prices_in_cny {
        let _ = writeln!(
            out,
            "      prices quoted in CNY are converted at {:.2} CNY per USD (--cny-per-usd to change)",
            c.cny_per_usd
        );
    }
    if !c.unpriced.is_empty() {
        let _ = writeln!(
            out,
            "      {} instance(s) have no price in the catalog for their pricing model and count as $0: {}",
            c.unpriced.len(),
            abbreviate(&c.unpriced, 3)
        );
    }
}

fn render_change(out: &mut String, c: &ResourceChange) {
    let (symbol, verb) = match c.action {
        Action::Create => ("+", "will be created"),
        Action::Update => ("~", "will be updated in place"),
        Action::Replace => ("-/+", "must be replaced"),
        Action::Delete => ("-", "will be destroyed"),
        Action::NoOp => (" ", "is unchanged"),
    };
    let colored = |s: &str| -> String {
        match c.action {
            Action::Create => paint(s, Paint::Green),
            Action::Update => paint(s, Paint::Yellow),
            Action::Replace => paint(s, Paint::Magenta),
            Action::Delete => paint(s, Paint::Red),
            Action::NoOp => s.to_string(),
        }
    };
    let mut why = String::new();
    if !c.replace_because.is_empty() {
        why = format!(" ({} forces replacement)", c.replace_because.join(", "));
    }
    if let Some(r) = &c.reason {
        why.push_str(&format!(" ({r})"));
    }
    let _ = writeln!(out, "  # {} {verb}{why}", paint(&c.address, Paint::Bold));
    let upfront = c
        .after
        .as_ref()
        .filter(|_| c.kind == gpuform_provider::ResourceKind::Block)
        .and_then(|a| a.get("upfront_usd")?.as_f64());
    let price = match (c.hourly_usd_before, c.hourly_usd_after, c.action) {
        _ if upfront.is_some() && c.action == Action::Create => format!(
            ", ${} paid up front, cannot be cancelled",
            amount(upfront.unwrap_or(0.0))
        ),
        (_, Some(a), Action::Create) => format!(", ${}/h", amount(a)),
        (Some(b), _, Action::Delete) => format!(", -${}/h", amount(b)),
        (Some(b), Some(a), _) if (a - b).abs() > 1e-9 => {
            format!(", ${}/h → ${}/h", amount(b), amount(a))
        }
        (_, Some(a), _) => format!(", ${}/h", amount(a)),
        _ => String::new(),
    };
    let id = c.id.as_ref().map(|i| format!(" {i}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "  {} {}{id} ({} {}{price})",
        colored(symbol),
        c.kind,
        c.provider,
        c.region
    );

    let empty = Default::default();
    let before = c.before.as_ref().unwrap_or(&empty);
    let after = c.after.as_ref().unwrap_or(&empty);
    let keys: BTreeSet<&gpuform_provider::Key> = before.keys().chain(after.keys()).collect();
    let width = keys.iter().map(|k| k.len()).max().unwrap_or(0);
    // A rendered bootstrap shows as its hash and its steps (one per line, so
    // a change reads as a diff); the document is `gpuform bootstrap show`'s.
    let steps = |v: Option<&Value>| -> Option<Value> {
        let lines: Vec<&str> = v?.as_array()?.iter().filter_map(|s| s.as_str()).collect();
        Some(Value::String(format!("{}\n", lines.join("\n"))))
    };
    for k in keys {
        if crate::plan::diff::unrecorded(after, k) {
            continue;
        }
        let (b, a) = if k == "bootstrap" {
            (steps(before.get(k)), steps(after.get(k)))
        } else {
            (before.get(k).cloned(), after.get(k).cloned())
        };
        let (b, a) = (b.as_ref(), a.as_ref());
        let forces = c.replace_because.iter().any(|r| r == k.as_str());
        let line = match (c.action, b, a) {
            (Action::Create, _, Some(a)) => attr_line("+", k, width, None, Some(a)),
            (Action::Delete, Some(b), _) => attr_line("-", k, width, Some(b), None),
            (_, Some(b), Some(a)) if a == b => continue,
            (_, b, a) => attr_line("~", k, width, b, a),
        };
        // Terraform's marker goes at the end of the value's last line.
        match (forces, line.strip_suffix('\n')) {
            (true, Some(body)) => {
                let _ = writeln!(out, "{body} # forces replacement");
            }
            _ => out.push_str(&line),
        }
    }
    let _ = writeln!(out);
}

fn attr_line(
    sym: &str,
    key: &str,
    width: usize,
    before: Option<&Value>,
    after: Option<&Value>,
) -> String {
    // Multi-line strings (user-data) read best as a unified diff.
    let multi = |v: Option<&Value>| v.and_then(|v| v.as_str()).is_some_and(|s| s.contains('\n'));
    if multi(before) || multi(after) {
        let b = before.and_then(|v| v.as_str()).unwrap_or("");
        let a = after.and_then(|v| v.as_str()).unwrap_or("");
        let mut s = format!("      {sym} {key:<width$} = <<EOT\n");
        let diff = similar::TextDiff::from_lines(b, a);
        for change in diff.iter_all_changes() {
            let tag = match change.tag() {
                similar::ChangeTag::Delete => "-",
                similar::ChangeTag::Insert => "+",
                similar::ChangeTag::Equal => " ",
            };
            let _ = write!(s, "          {tag} {}", change.value());
            if !change.value().ends_with('\n') {
                s.push('\n');
            }
        }
        s.push_str("        EOT\n");
        return s;
    }
    match (before, after) {
        (None, Some(a)) if sym == "~" => {
            format!("      {sym} {key:<width$} = (none) -> {}\n", show(a))
        }
        (None, Some(a)) => format!("      {sym} {key:<width$} = {}\n", show(a)),
        (Some(b), None) if sym == "~" => {
            format!("      {sym} {key:<width$} = {} -> (none)\n", show(b))
        }
        (Some(b), None) => format!("      {sym} {key:<width$} = {}\n", show(b)),
        (Some(b), Some(a)) => format!("      {sym} {key:<width$} = {} -> {}\n", show(b), show(a)),
        (None, None) => String::new(),
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn abbreviate(items: &[crate::address::Address], n: usize) -> String {
    let listed: Vec<&str> = items.iter().take(n).map(|a| a.as_str()).collect();
    if items.len() <= n {
        listed.join(", ")
    } else {
        format!("{} and {} more", listed.join(", "), items.len() - n)
    }
}
