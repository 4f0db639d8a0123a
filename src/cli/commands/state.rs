//! `gpuform state …`: list, show, rm, push and pull the state.

use crate::cli::args::*;
use crate::cli::out::outln;
use crate::cli::{CmdResult, Failure};
use crate::engine::{self};

use crate::state::StateStore;
use std::process::ExitCode;

use super::shared::*;

/// The local and the remote store of `state push` / `pull`.
fn push_pull_stores(s: &StateArgs) -> Result<(StateStore, StateStore), Failure> {
    let Some(f) = &s.file else {
        return Err(Failure(
            "a remote state is named by its project\n  hint: pass the spec with -f SPEC".into(),
        ));
    };
    let loaded = load(f, &VarArgs::default())?;
    let remote =
        engine::state_store(Some(&loaded), None, s.state_url.as_deref()).map_err(engine_failure)?;
    if !remote.is_remote() {
        return Err(Failure(
            "no remote state is configured\n  hint: pass --state-url postgres://..., set GPUFORM_STATE_URL, or add `state: { backend: postgres, url: ... }` to the spec".into(),
        ));
    }
    let local = StateStore::new(
        s.state
            .clone()
            .unwrap_or_else(|| engine::state_path(Some(&loaded), None)),
    );
    Ok((local, remote))
}

fn state_push(s: &StateArgs) -> CmdResult {
    let (local, remote) = push_pull_stores(s)?;
    // Locking folds any journal left by an interrupted apply (the remote
    // backend's, then this disk's) and saves it: the first half of a push.
    let mut locked = engine::lock_state(&remote, "", "state push").map_err(engine_failure)?;
    let mut pushed = Vec::new();
    if locked.recovered {
        pushed.push("the journal of an interrupted apply".to_string());
    }
    if let Some(doc) = local.load()? {
        if locked.existed && locked.doc.lineage != doc.lineage {
            return Err(Failure(format!(
                "the remote state {} has lineage {}, the local state {} has lineage {}: they are different states, and pushing would overwrite one with the other; nothing was changed\n  hint: push to another workspace (GPUFORM_WORKSPACE) or project",
                remote.location(),
                locked.doc.lineage,
                local.location(),
                doc.lineage
            )));
        }
        if locked.existed && locked.doc.serial > doc.serial {
            return Err(Failure(format!(
                "the remote state {} is newer (serial {}) than the local state {} (serial {}); nothing was changed\n  hint: `gpuform state pull` to bring the remote one here",
                remote.location(),
                locked.doc.serial,
                local.location(),
                doc.serial
            )));
        }
        if !locked.existed || locked.doc != doc {
            let mut new = doc.clone();
            new.serial = new.serial.max(locked.doc.serial);
            remote.commit(&mut new)?;
            locked.doc = new;
        }
        // The remote state is the state now: keep the local file as a copy
        // under another name, so that no later command uses it by mistake.
        let kept = crate::state::store::sibling(local.path(), ".migrated");
        std::fs::rename(local.path(), &kept)
            .map_err(|e| Failure(format!("cannot rename {}: {e}", local.location())))?;
        pushed.push(format!(
            "the local state {} (serial {}; the file is kept as {})",
            local.location(),
            doc.serial,
            kept.display()
        ));
    } else if !locked.existed {
        return Err(Failure(format!(
            "nothing to push: no local state at {} and no remote state at {}",
            local.location(),
            remote.location()
        )));
    }
    if pushed.is_empty() {
        outln!(
            "The remote state {} is up to date (serial {}).",
            remote.location(),
            locked.doc.serial
        );
    } else {
        outln!(
            "Pushed {} to {} (serial {}).",
            pushed.join(" and "),
            remote.location(),
            locked.doc.serial
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn state_pull(s: &StateArgs) -> CmdResult {
    let (local, remote) = push_pull_stores(s)?;
    let locked_remote = engine::lock_state(&remote, "", "state pull").map_err(engine_failure)?;
    if !locked_remote.existed {
        return Err(Failure(format!("no state at {}", remote.location())));
    }
    let mut locked_local = engine::lock_state(&local, "", "state pull").map_err(engine_failure)?;
    if locked_local.existed && locked_local.doc.lineage != locked_remote.doc.lineage {
        return Err(Failure(format!(
            "the local state {} has lineage {}, the remote state {} has lineage {}: they are different states; nothing was changed\n  hint: move the local file away first if it is no longer needed",
            local.location(),
            locked_local.doc.lineage,
            remote.location(),
            locked_remote.doc.lineage
        )));
    }
    let doc = locked_remote.doc.clone();
    local.save(&doc)?;
    locked_local.doc = doc;
    outln!(
        "Pulled {} (serial {}) into {}.",
        remote.location(),
        locked_local.doc.serial,
        local.location()
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) fn state_cmd(c: StateCommand) -> CmdResult {
    match c {
        StateCommand::Push { state } => return state_push(&state),
        StateCommand::Pull { state } => return state_pull(&state),
        StateCommand::List { state } => {
            let (_, doc) = load_state(&state)?;
            for a in doc.resources.keys() {
                outln!("{a}");
            }
        }
        StateCommand::Show { address, state } => {
            let (_, doc) = load_state(&state)?;
            let r = doc
                .resources
                .get(&address)
                .ok_or_else(|| Failure(format!("no resource `{address}` in state")))?;
            outln!("{}", serde_json::to_string_pretty(r).expect("serialises"));
        }
        StateCommand::Rm { addresses, state } => {
            let store = store_for(&state)?;
            let mut locked = engine::lock_state(&store, "", "state rm").map_err(engine_failure)?;
            for a in &addresses {
                if locked.doc.resources.remove(a).is_none() {
                    return Err(Failure(format!(
                        "no resource `{a}` in state; nothing was changed"
                    )));
                }
            }
            store.commit(&mut locked.doc)?;
            outln!(
                "Removed {} address(es) from state; the resources themselves were not touched.",
                addresses.len()
            );
        }
        StateCommand::Mv { from, to, state } => {
            let store = store_for(&state)?;
            let mut locked = engine::lock_state(&store, "", "state mv").map_err(engine_failure)?;
            if locked.doc.resources.contains_key(&to) {
                return Err(Failure(format!(
                    "`{to}` is already in state; nothing was changed"
                )));
            }
            let r = locked
                .doc
                .resources
                .remove(&from)
                .ok_or_else(|| Failure(format!("no resource `{from}` in state")))?;
            locked.doc.resources.insert(to.clone(), r);
            store.commit(&mut locked.doc)?;
            outln!("Moved {from} to {to}.");
        }
    }
    Ok(ExitCode::SUCCESS)
}
