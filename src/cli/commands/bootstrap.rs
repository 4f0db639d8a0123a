//! `gpuform bootstrap show`: what a node runs at first boot.

use crate::cli::args::*;
use crate::cli::out::out;
use crate::cli::{CmdResult, Failure};
use crate::engine::{self};

use std::path::Path;
use std::process::ExitCode;

use super::shared::*;

pub(super) fn bootstrap_show(
    address: &str,
    file: &Path,
    vars: &VarArgs,
    sandbox: bool,
    part: Option<&str>,
) -> CmdResult {
    let loaded = load(file, vars)?;
    let desired = engine::desired(&loaded, &*catalog_for(None)?, &resolve_opts(sandbox, None))
        .map_err(|e| Failure(e.to_string()))?;
    let Some(r) = desired.get(address) else {
        let nodes: Vec<&str> = desired
            .resources
            .iter()
            .filter(|r| r.kind == gpuform_provider::ResourceKind::Instance)
            .map(|r| r.address.as_str())
            .take(8)
            .collect();
        return Err(Failure(format!(
            "{address} is not a node of {}\n  hint: nodes: {}",
            file.display(),
            nodes.join(", ")
        )));
    };
    let Some(doc) = r
        .attrs
        .get(crate::resolve::USER_DATA_SHA256)
        .and_then(|v| v.as_str())
        .and_then(|sha| desired.documents.get(sha))
    else {
        return Err(Failure(format!(
            "{address} has no bootstrap: nothing to set up at boot (CUDA image, no MIG, no local NVMe, no kubernetes)"
        )));
    };
    let parts = crate::bootstrap::split_multipart(doc);
    let text = match part {
        None => doc.to_string(),
        Some("cloud-config") => parts.first().map(|p| p.1.clone()).unwrap_or_default(),
        Some("user-data") => parts
            .get(1)
            .map(|p| p.1.clone())
            .ok_or_else(|| Failure(format!("{address} has no user_data of its own")))?,
        Some(name) => {
            let script = script_in(&parts[0].1, name).ok_or_else(|| {
                Failure(format!(
                    "{address} has no part `{name}`\n  hint: cloud-config, user-data, or a script or manifest: {}",
                    scripts_in(&parts[0].1).join(", ")
                ))
            })?;
            script
        }
    };
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The scripts (and a k3s server's manifests) a cloud-config part writes,
/// by file name.
fn scripts_in(cloud_config: &str) -> Vec<String> {
    cloud_config
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- path: "))
        .filter(|p| {
            p.ends_with(".sh") || p.starts_with(crate::bootstrap::manifests::K3S_MANIFESTS_DIR)
        })
        .filter_map(|p| p.rsplit('/').next())
        .map(str::to_string)
        .collect()
}

/// The content of one script a cloud-config part writes (block literal).
fn script_in(cloud_config: &str, name: &str) -> Option<String> {
    let mut lines = cloud_config.lines();
    lines.find(|l| {
        l.trim()
            .strip_prefix("- path: ")
            .is_some_and(|p| p.ends_with(&format!("/{name}")))
    })?;
    lines.find(|l| l.trim() == "content: |")?;
    let mut out = String::new();
    for l in lines {
        if l.is_empty() {
            out.push('\n');
        } else if let Some(body) = l.strip_prefix("      ") {
            out.push_str(body);
            out.push('\n');
        } else {
            break;
        }
    }
    Some(out)
}
