//! `gpuform sandbox …`: act on the offline cloud behind gpuform's back.

use crate::cli::args::*;
use crate::cli::out::outln;
use crate::cli::{CmdResult, Failure};
use crate::engine::{self};
use crate::providers::Providers;

use std::path::PathBuf;
use std::process::ExitCode;

use super::shared::*;

pub(super) fn sandbox_cmd(c: SandboxCommand) -> CmdResult {
    let state = match &c {
        SandboxCommand::Ls { state, .. }
        | SandboxCommand::Delete { state, .. }
        | SandboxCommand::Reclaim { state, .. }
        | SandboxCommand::Set { state, .. }
        | SandboxCommand::Disown { state, .. }
        | SandboxCommand::Reserve { state, .. }
        | SandboxCommand::Reset { state } => state.clone(),
    };
    let dir = match std::env::var_os("GPUFORM_SANDBOX_DIR") {
        Some(d) => PathBuf::from(d),
        None => engine::sandbox_dir(&store_for(&state)?),
    };
    // Reset works on an inventory too damaged to open; the rest opens it.
    let open = || {
        Providers::new(dir.clone())
            .sandbox()
            .map_err(engine_failure)
    };
    match c {
        SandboxCommand::Reset { .. } => {
            gpuform_sandbox::SandboxCloud::reset_dir(&dir).map_err(|e| Failure(e.to_string()))?;
            outln!("The sandbox cloud at {} is empty.", dir.display());
        }
        SandboxCommand::Ls { json, .. } => {
            let all = open()?.list_all();
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&all).map_err(|e| Failure(e.to_string()))?
                );
            } else {
                for r in all {
                    let address = r
                        .tags
                        .get(gpuform_provider::OwnershipTags::ADDRESS)
                        .cloned()
                        .unwrap_or_default();
                    outln!(
                        "{:<24} {:<10} {:<9} {:<16} {address}",
                        r.id,
                        r.kind,
                        r.cloud,
                        r.region
                    );
                }
            }
        }
        SandboxCommand::Delete { target, .. } => {
            let r = open()?
                .delete_behind(&target)
                .map_err(|e| Failure(e.to_string()))?;
            outln!("Deleted {} {} behind gpuform's back.", r.kind, r.id);
        }
        SandboxCommand::Reclaim { target, .. } => {
            let r = open()?
                .reclaim_behind(&target)
                .map_err(|e| Failure(e.to_string()))?;
            outln!(
                "Reclaimed spot instance {} behind gpuform's back (its volumes are detached).",
                r.id
            );
        }
        SandboxCommand::Disown { target, .. } => {
            let r = open()?
                .disown_behind(&target)
                .map_err(|e| Failure(e.to_string()))?;
            outln!(
                "Removed gpuform's tags from {} {} behind its back.",
                r.kind,
                r.id
            );
        }
        SandboxCommand::Reserve {
            instance_type,
            region,
            zone,
            count,
            from,
            until,
            tags,
            ..
        } => {
            let day = |flag: &str, d: Option<String>| match d {
                None => Ok(None),
                Some(d) => gpuform_catalog::Day::parse_iso(&d)
                    .map(Some)
                    .ok_or_else(|| Failure(format!("--{flag} {d}: not a date; write YYYY-MM-DD"))),
            };
            let start = day("from", from)?;
            let end = day("until", until)?;
            let mut tag_map = std::collections::BTreeMap::new();
            for t in tags {
                let (k, v) = t
                    .split_once('=')
                    .ok_or_else(|| Failure(format!("--tag {t}: write KEY=VALUE")))?;
                tag_map.insert(k.to_string(), v.to_string());
            }
            let r = open()?
                .reserve(&gpuform_sandbox::ReserveRequest {
                    cloud: gpuform_provider::Cloud::Aws,
                    region,
                    zone,
                    instance_type,
                    count,
                    start,
                    end,
                    tags: tag_map,
                })
                .map_err(|e| Failure(e.to_string()))?;
            outln!("{}", r.id);
        }
        SandboxCommand::Set {
            target, assignment, ..
        } => {
            let (k, v) = assignment
                .split_once('=')
                .ok_or_else(|| Failure(format!("`{assignment}` is not KEY=VALUE")))?;
            let value = serde_json::from_str(v)
                .unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
            open()?
                .set_attr_behind(&target, k, value)
                .map_err(|e| Failure(e.to_string()))?;
            outln!("Set {k} on {target} behind gpuform's back.");
        }
    }
    Ok(ExitCode::SUCCESS)
}
