//! `gpuform validate`: the spec, the catalog's checks and the rendered bootstraps.

use crate::cli::args::*;
use crate::cli::out::outln;
use crate::cli::{CmdResult, Failure};
use crate::engine::{self, EngineError};

use crate::spec::{self, LoadedSpec, Vars};
use std::path::Path;
use std::process::ExitCode;

use super::shared::*;

/// Every distinct bootstrap document, checked with cloud-init's schema
/// validator when it is installed; a refusal points at the cluster (or its
/// `user_data`, when that part is the user's).
fn check_bootstraps(
    loaded: &LoadedSpec,
    desired: &crate::resolve::Desired,
) -> Result<(), spec::Diagnostics> {
    let mut diags = Vec::new();
    for (sha, doc) in &desired.documents {
        // The first node with this document, to point at its cluster.
        let Some(r) = desired.resources.iter().find(|r| {
            r.attrs
                .get(crate::resolve::USER_DATA_SHA256)
                .and_then(|v| v.as_str())
                == Some(sha)
        }) else {
            continue;
        };
        if let Some(Err((part, why))) = crate::bootstrap::cloud_init_check(doc) {
            let (path, whose) = if part == 0 {
                (r.yaml_path.clone(), "gpuform's bootstrap")
            } else {
                (format!("{}.user_data", r.yaml_path), "your user_data")
            };
            diags.push(loaded.diagnostic(
                &path,
                format!("cloud-init refuses {whose} for {}: {why}", r.address),
                Some("see `gpuform bootstrap show ADDRESS SPEC --part cloud-config`".into()),
            ));
        }
    }
    if diags.is_empty() {
        Ok(())
    } else {
        Err(spec::Diagnostics(diags))
    }
}

pub(super) fn validate(file: &Path, vars: &VarArgs, sandbox: bool, json: bool) -> CmdResult {
    let parsed = Vars::parse_cli(&vars.vars, &vars.var_files).and_then(|v| load_spec(file, &v));
    let catalog = catalog_for(None)?;
    let result = parsed.and_then(|loaded| {
        engine::desired(&loaded, &catalog, &resolve_opts(sandbox, None))
            .map_err(|e| match e {
                EngineError::Spec(d) => d,
                other => spec::Diagnostics(vec![spec::Diagnostic {
                    file: file.display().to_string(),
                    line: None,
                    column: None,
                    yaml_path: None,
                    message: other.to_string(),
                    hint: None,
                }]),
            })
            .and_then(|d| check_bootstraps(&loaded, &d).map(|()| d))
            .map(|d| (loaded, d))
    });
    match result {
        Ok((loaded, desired)) => {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"valid": true, "file": file.display().to_string(), "resources": desired.resources.len(), "lockin": desired.lockin, "diagnostics": []})
                );
            } else {
                outln!(
                    "{} is valid: project {}, {} cluster(s), {} resource(s).",
                    file.display(),
                    loaded.spec.project,
                    loaded.spec.clusters.len(),
                    desired.resources.len()
                );
                for l in &desired.lockin {
                    outln!("  lock-in: {}: {}", l.yaml_path, l.reason);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(d) => {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"valid": false, "file": file.display().to_string(), "diagnostics": d.to_json()})
                );
                Ok(ExitCode::from(1))
            } else {
                Err(Failure(d.to_string()))
            }
        }
    }
}
