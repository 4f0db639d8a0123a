//! `gpuform import`: drives [`crate::engine::import`] and renders its plan.

use super::shared::{confirm, engine_failure, eprint_line, load, project_from_dir, providers_for};
use crate::address::Target;
use crate::cli::args::ImportArgs;
use crate::cli::credentials::credentials_hint;
use crate::cli::out::{errln, out, outln};
use crate::cli::{CmdResult, Failure};
use crate::engine::{self, import, EngineError};
use crate::spec::Vars;
use gpuform_catalog::Cloud;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The provider of `--cloud`: the sandbox mirrors AWS, as `cloud: sandbox` does.
fn provider_of(cloud: &str) -> Result<Target, Failure> {
    match cloud {
        "sandbox" => Ok(Target::sandbox(Cloud::Aws)),
        c => match Cloud::ALL.into_iter().find(|k| k.as_str() == c) {
            Some(k) => Ok(Target::real(k)),
            None => Err(Failure(format!(
            "unknown cloud `{c}`\n  hint: --cloud takes aws, alibaba, tencent, huawei or sandbox"
            ))),
        },
    }
}

/// An engine failure, with what to set when credentials are missing.
fn failure(e: EngineError) -> Failure {
    match import::is_credentials(&e) {
        Some(cloud) => Failure(format!("{e}\n  hint: {}", credentials_hint(cloud))),
        None => engine_failure(e),
    }
}

fn parse_tags(tags: &[String]) -> Result<Vec<(String, String)>, Failure> {
    tags.iter()
        .map(|t| {
            t.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| {
                    Failure(format!(
                        "--tag {t}: not KEY=VALUE\n  hint: e.g. --tag team=ml"
                    ))
                })
        })
        .collect()
}

pub(super) async fn import_cmd(a: ImportArgs, quiet: bool) -> CmdResult {
    let target = provider_of(&a.cloud)?;
    let tags = parse_tags(&a.tags)?;
    if a.ids.is_empty() && a.buckets.is_empty() && tags.is_empty() && !a.from_audit {
        return Err(Failure(
            "nothing chosen to import\n  hint: name instances with --id ID, buckets with --bucket NAME, take those with a tag with --tag KEY=VALUE, or every unmanaged one with --from-audit".into(),
        ));
    }
    let vars =
        Vars::parse_cli(&a.vars.vars, &a.vars.var_files).map_err(|d| Failure(d.to_string()))?;
    let loaded = if a.file.exists() {
        Some(load(&a.file, &a.vars)?)
    } else {
        None
    };
    let project = match (&loaded, &a.project) {
        (Some(l), Some(p)) if &l.spec.project != p => {
            return Err(Failure(format!(
                "{} is project `{}`, not `{p}`\n  hint: drop --project (it names the project of a new spec)",
                a.file.display(),
                l.spec.project
            )))
        }
        (Some(l), _) => l.spec.project.clone(),
        (None, Some(p)) => p.clone(),
        (None, None) => project_from_dir(&spec_dir(&a.file)),
    };
    // A new spec's state sits beside it, where the spec's own commands look.
    let state_flag: Option<PathBuf> = match (&a.location.state, &loaded) {
        (Some(s), _) => Some(s.clone()),
        (None, None) if a.location.state_url.is_none() => Some(
            spec_dir(&a.file)
                .join(engine::STATE_DIR)
                .join(format!("{project}.state.json")),
        ),
        _ => None,
    };
    let store = engine::state_store_for(
        loaded.as_ref(),
        Some(&project),
        state_flag.as_deref(),
        a.location.state_url.as_deref(),
    )
    .map_err(engine_failure)?;
    let endpoints = loaded
        .as_ref()
        .map(|l| l.spec.endpoints.clone())
        .unwrap_or_default();
    let providers = providers_for(&store, &endpoints);
    let mut locked = engine::lock_state(&store, &project, "import").map_err(engine_failure)?;
    if locked.existed && locked.doc.project != project {
        return Err(Failure(format!(
            "state {} belongs to project `{}`, not `{project}`\n  hint: pass --state with this project's own state file",
            store.location(),
            locked.doc.project
        )));
    }

    // An interrupted import is finished first, as it was approved.
    if let Some(pending) = import::pending(&store).map_err(engine_failure)? {
        import::check_resumable(&pending, &locked.doc, locked.existed).map_err(engine_failure)?;
        if !quiet && !a.json {
            errln!(
                "Finishing the interrupted import of {} resource(s) into {}...",
                pending.records.len(),
                pending.spec_path.display()
            );
        }
        import::run_import(
            &store,
            &mut locked.doc,
            &pending,
            &providers,
            &notify(quiet || a.json),
        )
        .await
        .map_err(failure)?;
        return finish(&pending, &store, a.json, quiet, true);
    }

    let catalog = super::shared::catalog_for(None)?;
    let req = import::ImportRequest {
        spec_path: &a.file,
        spec: loaded.as_ref(),
        project: project.clone(),
        vars: &vars,
        provider: target,
        region: a.region.clone(),
        selection: import::Selection {
            ids: a.ids.clone(),
            tags,
            unmanaged: a.from_audit,
            buckets: a.buckets.clone(),
        },
        name: a.name.clone(),
        catalog: &catalog,
    };
    let plan = import::plan_import(&req, &locked.doc, &providers)
        .await
        .map_err(failure)?;
    if plan.is_empty() {
        if a.json {
            return json_out(&plan, false);
        }
        if !quiet {
            outln!(
                "Nothing to import: this state manages them already ({}).",
                plan.already.join("; ")
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !a.json && !quiet {
        out!("{}", render(&plan, &store));
    }
    if !a.auto_approve {
        confirm("import these resources")?;
    }
    import::run_import(
        &store,
        &mut locked.doc,
        &plan,
        &providers,
        &notify(quiet || a.json),
    )
    .await
    .map_err(failure)?;
    finish(&plan, &store, a.json, quiet, false)
}

fn spec_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn notify(silent: bool) -> impl Fn(&str) + Sync {
    move |line: &str| {
        if !silent {
            eprint_line(line)
        }
    }
}

fn json_out(plan: &import::ImportPlan, done: bool) -> CmdResult {
    outln!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({"import": plan, "done": done}))
            .map_err(|e| Failure(e.to_string()))?
    );
    Ok(ExitCode::SUCCESS)
}

fn finish(
    plan: &import::ImportPlan,
    store: &crate::state::StateStore,
    json: bool,
    quiet: bool,
    resumed: bool,
) -> CmdResult {
    if json {
        return json_out(plan, true);
    }
    if !quiet {
        outln!(
            "\nImport {}: {} resource(s) tagged and recorded in {}; {} written. Next: `gpuform plan {}` shows no changes.",
            if resumed { "finished" } else { "complete" },
            plan.records.len(),
            store.location(),
            plan.spec_path.display(),
            plan.spec_path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The YAML an import adds, indented under its heading.
fn push_yaml(s: &mut String, yaml: &str) {
    for l in yaml.lines() {
        s.push_str(&format!("    {l}\n"));
    }
    s.push('\n');
}

/// What the import will write and tag, before it does.
fn render(plan: &import::ImportPlan, store: &crate::state::StateStore) -> String {
    let mut s = String::new();
    for c in &plan.clusters {
        s.push_str(&format!(
            "Cluster `{}` from {} {} ({} instance(s)), added to {}:\n\n",
            c.name,
            c.provider,
            c.region,
            c.instances.len(),
            plan.spec_path.display()
        ));
        push_yaml(&mut s, &c.yaml);
    }
    for b in &plan.buckets {
        s.push_str(&format!(
            "Bucket `{}` ({}) from {} {}, added to {}:\n\n",
            b.key,
            b.name,
            b.provider,
            b.region,
            plan.spec_path.display()
        ));
        push_yaml(&mut s, &b.yaml);
    }
    s.push_str(&format!(
        "State {} records {} resource(s), each tagged in the cloud (the only change there) with gpuform:project={}, gpuform:lineage={}, gpuform:address=ADDRESS and gpuform:token=import-ID:\n",
        store.location(),
        plan.records.len(),
        plan.tags.first().map_or("", |t| t.ownership.project.as_str()),
        plan.lineage
    ));
    let width = plan.records.keys().map(|a| a.len()).max().unwrap_or(0);
    for (address, r) in &plan.records {
        s.push_str(&format!("  + {address:<width$}  {} {}\n", r.kind, r.id));
    }
    if !plan.notes.is_empty() {
        s.push_str("\nNotes:\n");
        for n in &plan.notes {
            s.push_str(&format!("  - {n}\n"));
        }
    }
    if !plan.already.is_empty() {
        s.push_str(&format!(
            "\nAlready managed by this state: {}\n",
            plan.already.join("; ")
        ));
    }
    s
}
