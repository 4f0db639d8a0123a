//! A [`Recommendation`] as text: the four steps, each with its reasons.

use super::rules::summary;
use super::{Candidate, Recommendation, Task};
use crate::views::{self, right_align, usd, usd_rate, Footnotes};

/// `the rule wins` / `the numbers win`.
pub fn winner_words(winner: &str) -> &'static str {
    if winner == "rule" {
        "the rule wins"
    } else {
        "the numbers win"
    }
}

/// The inputs in one line.
pub fn describe_inputs(r: &Recommendation) -> String {
    let i = &r.inputs;
    let mut parts = vec![
        format!("{} parameters", super::fit::sci(i.params)),
        i.task.as_str().to_string(),
        i.precision.as_str().to_string(),
    ];
    if let Some(t) = i.tokens {
        parts.push(format!("{} tokens", super::fit::sci(t)));
    }
    if let Some(h) = i.duration_hours {
        parts.push(format!("{h:.0} h project"));
    }
    parts.push(format!("{:.0} h/month", i.hours_per_month));
    parts.push(format!(
        "ops {}",
        match i.ops {
            super::Ops::None => "none",
            super::Ops::Devops => "devops",
        }
    ));
    if let Some(u) = i.users {
        parts.push(format!("users {}", u.as_str()));
    }
    if let Some(b) = i.budget_monthly_usd {
        parts.push(format!("budget {}/month", usd(b)));
    }
    parts.push(if i.clouds.is_empty() {
        "clouds: all".to_string()
    } else {
        format!(
            "clouds: {}",
            i.clouds
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    parts.join(", ")
}

fn fits_line(r: &Recommendation) -> Vec<String> {
    // The smallest configuration of each GPU model × count, as ranked.
    let mut seen: Vec<(String, u32)> = Vec::new();
    let mut out = Vec::new();
    for c in r.options.iter().chain(r.amd.options.iter()) {
        let key = (c.gpu_model.clone(), c.gpus_per_node);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push(format!(
            "{} node(s) of {} × {} ({:.0} GiB a node)",
            c.nodes,
            c.gpus_per_node,
            c.gpu_model,
            f64::from(c.gpus_per_node) * c.gpu_mem_gib
        ));
    }
    out
}

/// The recommendation as text.
pub fn render(r: &Recommendation) -> String {
    let mut out = String::new();
    let m = &r.memory;
    out.push_str(&format!("Recommendation for {}\n\n", describe_inputs(r)));

    out.push_str("1. Memory fit\n");
    out.push_str(&format!(
        "   bytes per parameter: {} = {}\n",
        m.bytes_per_param, m.breakdown
    ));
    if let (Some(l), Some(d)) = (m.layers, m.d_model) {
        out.push_str(&format!(
            "   shape estimated from the size: d_model = ∛(params × 128 / 12) rounded to 128 = {d}, layers = d_model / 128 = {l} (dense, no grouped-query attention: the KV cache is an upper bound)\n"
        ));
    }
    out.push_str(&format!("   need: {}\n", m.formula));
    out.push_str(&format!(
        "   overhead {:.0}%: {}\n",
        m.overhead * 100.0,
        m.overhead_why
    ));
    for l in fits_line(r) {
        out.push_str(&format!("   → {l}\n"));
    }
    out.push_str(&format!(
        "   {} offering(s) of the allowed clouds looked at, {} fit and are priced{}\n\n",
        r.considered,
        r.fitting,
        if r.left_out.is_empty() {
            String::new()
        } else {
            format!("; left out: {}", r.left_out.join("; "))
        }
    ));

    out.push_str("2. The guide's rules\n");
    for rule in &r.rules {
        let mark = if rule.applies {
            "applies"
        } else {
            "does not apply"
        };
        out.push_str(&format!(
            "   [{mark}] {}: {} — {}\n",
            rule.id, rule.rule, rule.reason
        ));
        if rule.applies && !rule.effect.is_empty() {
            out.push_str(&format!("       → {}\n", rule.effect));
        }
    }
    if !r.managed.is_empty() {
        out.push_str("   managed alternatives: ");
        out.push_str(
            &r.managed
                .iter()
                .map(|p| format!("{} ({})", p.name, p.cloud))
                .collect::<Vec<_>>()
                .join(", "),
        );
        out.push('\n');
    }
    for d in &r.disagreements {
        out.push_str(&format!("   Rule and numbers disagree ({}):\n", d.rule));
        out.push_str(&format!("     the rule says: {}\n", d.rule_says));
        out.push_str(&format!("     the numbers say: {}\n", d.numbers_say));
        out.push_str(&format!("     {}: {}\n", winner_words(d.winner), d.why));
    }
    out.push('\n');

    out.push_str(&format!("3. Price-performance, ranked {}\n", r.ranking));
    if r.options.is_empty() {
        out.push_str("   no configuration fits\n");
    } else {
        out.push_str(&table(r, &r.options));
    }
    out.push_str("   AMD: ");
    if r.amd.options.is_empty() {
        out.push_str(if r.amd.offered {
            "the allowed clouds offer MI250X/MI300X in the catalog, but no AMD configuration fits the rules and prices\n"
        } else {
            "no allowed cloud offers MI250X/MI300X in gpuform's catalog\n"
        });
    } else {
        out.push('\n');
        out.push_str(&table(r, &r.amd.options));
    }
    out.push_str(&format!("   AMD caveat: {}\n\n", r.amd.caveat));

    out.push_str("4. Recommended\n");
    match &r.top {
        Some(t) => {
            out.push_str(&format!(
                "   {} — {}/h, {}/month\n   pricing: {}\n",
                summary(t),
                usd_rate(t.hourly_usd),
                usd(t.monthly_usd),
                t.pricing_reason
            ));
            if let Some(c) = &t.checkpoint {
                out.push_str(&format!(
                    "   spot checkpoints: {} (reclaim notice {} s: {})\n",
                    c.why, c.notice_seconds, c.notice_source
                ));
            }
            if let (Some(h), Some(cost)) = (t.train_hours, t.train_cost_usd) {
                out.push_str(&format!(
                    "   training run: about {h:.0} h, {} (at {:.0}% of peak FP16)\n",
                    usd(cost),
                    super::MFU * 100.0
                ));
            }
            for n in &t.notes {
                out.push_str(&format!("   note: {n}\n"));
            }
            if !t.within_budget {
                out.push_str("   note: over --budget; nothing within it fits\n");
            }
            out.push_str("   `--write spec.yaml` writes it as a spec (validate and plan it with --sandbox first)\n");
        }
        None => out.push_str("   nothing: see the warnings\n"),
    }
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

fn table(r: &Recommendation, rows: &[Candidate]) -> String {
    let trains_with_tokens = r.inputs.task != Task::Inference && r.inputs.tokens.is_some();
    let mut header = vec![
        "#",
        "cloud",
        "region",
        "instance type",
        "GPUs × nodes",
        "pricing",
        "$/h",
        "$/month",
        "$/FP16-PFLOP-h",
    ];
    if trains_with_tokens {
        header.push("run h");
        header.push("run cost");
    }
    header.push("price (basis, date)");
    let mut t = views::table(&header, false);
    let mut notes = Footnotes::default();
    for (i, c) in rows.iter().enumerate() {
        let mut cells = vec![
            format!("{}", i + 1),
            c.cloud.to_string(),
            c.region.clone(),
            c.instance_type.clone(),
            format!("{} × {} × {}", c.gpus_per_node, c.gpu_model, c.nodes),
            c.pricing.to_string(),
            usd_rate(c.hourly_usd),
            usd(c.monthly_usd),
            c.usd_per_fp16_pflop_hour.map_or("—".into(), usd_rate),
        ];
        if trains_with_tokens {
            cells.push(c.train_hours.map_or("—".into(), |h| format!("{h:.0}")));
            cells.push(c.train_cost_usd.map_or("—".into(), usd));
        }
        let n = notes.number(&c.price_source);
        let mut last = format!("[{n}] {}, {}", c.price_basis, c.price_as_of);
        if !c.within_budget {
            last.push_str(", over budget");
        }
        cells.push(last);
        t.add_row(cells);
    }
    right_align(&mut t, &[6, 7, 8]);
    let mut out = String::new();
    for l in t.to_string().lines() {
        out.push_str(&format!("   {l}\n"));
    }
    out.push_str("   Price sources:\n");
    let mut src = String::new();
    notes.render(&mut src);
    for l in src.lines() {
        out.push_str(&format!("   {l}\n"));
    }
    out
}
