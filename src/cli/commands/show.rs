//! `gpuform show` and `gpuform output`: a saved plan or the state, read only.

use crate::cli::args::*;
use crate::cli::out::{out, outln};
use crate::cli::{CmdResult, Failure};
use crate::plan::render::render;
use gpuform_provider::attr;

use std::path::Path;
use std::process::ExitCode;

use super::plan::read_plan_file;
use super::shared::*;

pub(super) fn show(plan: Option<&Path>, s: &StateArgs, json: bool) -> CmdResult {
    if let Some(p) = plan {
        let plan = read_plan_file(p)?
            .ok_or_else(|| Failure(format!("{} is not a gpuform plan file", p.display())))?;
        if json {
            outln!(
                "{}",
                serde_json::to_string_pretty(&plan).expect("serialises")
            );
        } else {
            out!("{}", render(&plan, true));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (store, doc) = load_state(s)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "State {} — project {}, lineage {}, serial {}, {} resource(s)",
        store.location(),
        doc.project,
        doc.lineage,
        doc.serial,
        doc.resources.len()
    );
    for (address, r) in &doc.resources {
        outln!(
            "\n# {address}\n  {} {} ({} {})",
            r.kind,
            r.id,
            r.provider,
            r.region
        );
        for (k, v) in &r.attrs {
            outln!("    {k} = {v}");
        }
    }
    if !doc.pending.is_empty() {
        outln!(
            "\nInterrupted creates to be checked by the next refresh: {}",
            doc.pending.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn output(s: &StateArgs, json: bool) -> CmdResult {
    let (_, doc) = load_state(s)?;
    let nodes: Vec<serde_json::Value> = doc
        .resources
        .iter()
        .filter(|(_, r)| r.kind == gpuform_provider::ResourceKind::Instance)
        .map(|(a, r)| {
            serde_json::json!({
                "address": a, "id": r.id, "provider": r.provider, "region": r.region,
                "zone": r.attrs.get(attr::ZONE), "instance_type": r.attrs.get(attr::INSTANCE_TYPE),
                "private_ip": r.reported.private_ip,
            })
        })
        .collect();
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&nodes).expect("serialises")
        );
    } else {
        let mut table = crate::views::table(
            &[
                "address",
                "id",
                "provider",
                "zone",
                "instance type",
                "private ip",
            ],
            false,
        );
        for n in &nodes {
            let s = |k: &str| n[k].as_str().unwrap_or("").to_string();
            table.add_row([
                s("address"),
                s("id"),
                s("provider"),
                s("zone"),
                s("instance_type"),
                s("private_ip"),
            ]);
        }
        outln!("{table}");
    }
    Ok(ExitCode::SUCCESS)
}
