//! `gpuform plan`, and the saved plan file (`--out`) it writes and apply reads.

use crate::cli::args::*;
use crate::cli::out::{out, outln};
use crate::cli::{CmdResult, Failure};
use crate::engine;
use crate::plan::render::render;
use crate::plan::Plan;

use gpuform_catalog::fsio::write_atomically;
use std::path::Path;
use std::process::ExitCode;

use super::shared::*;

pub(super) async fn plan(mut a: PlanArgs, quiet: bool) -> CmdResult {
    match a.format {
        Some(PlanFormat::Json) => a.json = true,
        Some(PlanFormat::Markdown) => a.markdown = true,
        Some(PlanFormat::Text) | None => {}
    }
    let loaded = load(&a.file, &a.vars)?;
    let store = a.location.store(Some(&loaded)).map_err(engine_failure)?;
    let providers = providers_for(&store, &loaded.spec.endpoints);
    // Work the state read does not wait for, on the second core meanwhile.
    warm_up(&providers, a.sandbox && a.change.refresh);
    let (doc, existed) = engine::read_state(&store, &loaded.spec.project)?;
    if existed && doc.project != loaded.spec.project {
        return Err(project_mismatch(&store, &doc, &loaded));
    }
    let catalog = catalog_for(a.change.prices.as_deref())?;
    let req = plan_request(&a.change, a.sandbox, &loaded, &catalog, a.destroy, true);
    let (mut plan, current) = engine::make_plan(&req, doc, existed, &providers)
        .await
        .map_err(engine_failure)?;
    plan.state_path = Some(store.location());
    plan.workspace = store.workspace().map(str::to_string);
    if let Some(out) = &a.out {
        write_plan_file(out, &plan)?;
    }
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&plan).expect("plans serialise")
        );
    } else if a.markdown {
        out!(
            "{}",
            crate::plan::markdown::render_markdown(&plan, loaded.spec.budget.as_ref())
        );
    } else if !quiet {
        out!("{}", render(&plan, a.verbose));
        // Notes explain choices; a plan that changes nothing has none to explain.
        if plan.has_changes() || a.verbose {
            for n in &plan.notes {
                outln!("  note: {n}");
            }
        }
        if let Some(out) = &a.out {
            outln!(
                "\nSaved the plan to {}. Apply exactly it with:\n  gpuform apply {}",
                out.display(),
                out.display()
            );
        }
    }
    let code = if a.detailed_exitcode && plan.has_changes() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    // The process ends with this command: freeing every attribute map one by
    // one would cost a third of a large plan's time (nothing here has a Drop
    // that matters: plans take no lock and sandbox writes are already made).
    std::mem::forget((plan, current, loaded, providers));
    Ok(code)
}

fn write_plan_file(out: &Path, plan: &Plan) -> Result<(), Failure> {
    let bytes = crate::plan::saved::encode(plan);
    // A plan holds what the state holds: encrypted like it when a key is set
    // (which also authenticates it: see `plan::saved`).
    let bytes = crate::state::crypto::seal(bytes)
        .map_err(|e| Failure(format!("cannot encrypt plan file {}: {e}", out.display())))?;
    write_atomically(out, &bytes)
        .map_err(|e| Failure(format!("cannot write plan file {}: {e}", out.display())))
}

/// A saved plan, if `file` is one, proven to be the plan that was made
/// (`plan::saved`); `None` when it is not a plan (a spec).
pub(super) fn read_plan_file(file: &Path) -> Result<Option<Plan>, Failure> {
    let bytes =
        std::fs::read(file).map_err(|e| Failure(format!("cannot read {}: {e}", file.display())))?;
    if !bytes.trim_ascii_start().starts_with(b"{") {
        return Ok(None);
    }
    let sealed = crate::state::crypto::is_encrypted(&bytes);
    let opened = crate::state::crypto::open(&bytes).map_err(|e| {
        Failure(format!(
            "plan file {} cannot be opened: {e}",
            file.display()
        ))
    })?;
    let label = file.display().to_string();
    let plan = crate::plan::saved::decode(&opened).map_err(|e| Failure(e.message(&label)))?;
    if plan.is_some() && !sealed && crate::state::crypto::enabled() {
        // Anyone can recompute a plain checksum; only the passphrase's
        // holder can seal. A plan made with the passphrase set is sealed.
        return Err(Failure(format!(
            "{label} is not encrypted, but {} is set: a plan made with the passphrase is always encrypted, which is what proves it was not replaced, so this one was made without it or swapped\n  hint: make a new plan with `gpuform plan SPEC --out FILE` and apply that",
            crate::state::crypto::PASSPHRASE_VAR
        )));
    }
    Ok(plan)
}
