//! `gpuform fmt`: specs in canonical form.

use crate::cli::out::{out, outln};
use crate::cli::{CmdResult, Failure};

use crate::spec::{self};
use gpuform_catalog::fsio::write_atomically;
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn fmt(files: &[PathBuf], check: bool) -> CmdResult {
    let mut unformatted = 0;
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Failure(format!("cannot read {}: {e}", f.display())))?;
        let formatted = spec::format(&text).map_err(|d| Failure(d.to_string()))?;
        if formatted == text {
            continue;
        }
        unformatted += 1;
        if check {
            out!(
                "{}",
                spec::format_diff(&f.display().to_string(), &text, &formatted)
            );
        } else {
            // Atomic: a crash never leaves a half-written spec.
            write_atomically(f, formatted.as_bytes())
                .map_err(|e| Failure(format!("cannot write {}: {e}", f.display())))?;
            outln!("{}", f.display());
        }
    }
    Ok(if check && unformatted > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
