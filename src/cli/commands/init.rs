//! `gpuform init`: a starter spec.

use crate::cli::out::outln;
use crate::cli::{CmdResult, Failure};

use crate::spec::{self, Vars};
use gpuform_catalog::fsio::write_atomically;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::shared::*;

/// The spec `gpuform init` writes: the README's quickstart, which CI applies.
const STARTER_SPEC: &str = include_str!("../../../examples/quickstart.yaml");

/// `gpuform init`: the quickstart spec under the user's project name, checked
/// by the same loader as every spec before it is written, never over a file.
pub(super) fn init(file: &Path, project: Option<&str>) -> CmdResult {
    if file.exists() {
        return Err(Failure(format!(
            "{} already exists; nothing was written\n  hint: name another file (`gpuform init other.yaml`) or edit this one",
            file.display()
        )));
    }
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let project = match project {
        Some(p) => p.to_string(),
        None => project_from_dir(&dir),
    };
    let text = STARTER_SPEC
        .lines()
        // The schema comment points into the repository's schemas/, which a
        // spec written elsewhere cannot reach.
        .filter(|l| !l.starts_with("# yaml-language-server:"))
        .skip_while(|l| l.trim() == "#" || l.is_empty())
        .map(|l| {
            if l.starts_with("project:") {
                format!("project: {project}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    // The starter must be a spec gpuform accepts, whatever name it was given.
    if let Err(d) = spec::load_str(&file.display().to_string(), &text, &Vars::new()) {
        return Err(Failure(format!(
            "the starter spec with project `{project}` is not valid; nothing was written\n{d}\n  hint: pass --project NAME (letters, digits and `-`)"
        )));
    }
    write_atomically(file, text.as_bytes())
        .map_err(|e| Failure(format!("cannot write {}: {e}", file.display())))?;
    outln!(
        "Wrote {} (project {project}): two one-GPU nodes and a bucket on the offline sandbox cloud.\nNext: gpuform plan {0}, then gpuform apply {0}.",
        file.display()
    );
    Ok(ExitCode::SUCCESS)
}
