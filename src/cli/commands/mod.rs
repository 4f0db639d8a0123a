//! One file per command, each over the engine (`crate::engine`), as
//! cargo's `commands/` are over its `ops`. `run` dispatches.

use crate::cli::args::*;
use crate::cli::out::outln;
use crate::cli::CmdResult;

use crate::state::StateLock;
use std::process::ExitCode;

mod apply;
pub(crate) mod audit;
mod bootstrap;
pub(crate) mod catalog;
mod fmt;
mod graph;
pub(crate) mod import;
mod init;
mod kubeconfig;
mod plan;
pub(crate) mod portability;
pub(crate) mod prices;
pub(crate) mod recommend;
pub(crate) mod reconcile;
mod sandbox;
pub(crate) mod shared;
mod show;
mod state;
mod validate;

use apply::apply;
use bootstrap::bootstrap_show;
use fmt::fmt;
use graph::graph;
use init::init;
use kubeconfig::kubeconfig;
use plan::plan;
use sandbox::sandbox_cmd;
use shared::*;
use show::{output, show};
use state::state_cmd;
use validate::validate;

pub async fn run(cli: Cli) -> CmdResult {
    let quiet = cli.quiet;
    match cli.command {
        Command::Validate {
            file,
            vars,
            sandbox,
            json,
        } => validate(&file, &vars, sandbox, json),
        Command::Init { file, project } => init(&file, project.as_deref()),
        Command::Fmt { files, check } => fmt(&files, check),
        Command::Plan(a) => plan(a, quiet).await,
        Command::Apply(a) => apply(a, false, quiet).await,
        Command::Destroy(a) => apply(a, true, quiet).await,
        Command::Reconcile(a) => reconcile::reconcile_cmd(a).await,
        Command::Show { plan, state, json } => show(plan.as_deref(), &state, json),
        Command::Output { state, json } => output(&state, json),
        Command::Kubeconfig(a) => kubeconfig(&a),
        Command::State(c) => state_cmd(c),
        Command::Graph {
            file,
            vars,
            sandbox,
        } => graph(&file, &vars, sandbox),
        Command::ForceUnlock { id, state } => {
            let store = store_for(&state)?;
            let info = StateLock::force_unlock(&store, &id)?;
            outln!(
                "Unlocked {} (was held by {} pid {}).",
                store.location(),
                info.owner,
                info.pid
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Sandbox(c) => sandbox_cmd(c),
        Command::Offers(a) => portability::offers_cmd(a),
        Command::Breakeven(a) => portability::breakeven_cmd(a),
        Command::Lockin(a) => portability::lockin_cmd(a),
        Command::Bootstrap(BootstrapCommand::Show {
            address,
            file,
            vars,
            sandbox,
            part,
        }) => bootstrap_show(&address, &file, &vars, sandbox, part.as_deref()),
        Command::Migrate(a) => portability::migrate_cmd(a),
        Command::Recommend(a) => recommend::recommend_cmd(a),
        Command::Audit(a) => audit::audit_cmd(a).await,
        Command::Import(a) => import::import_cmd(a, cli.quiet).await,
        Command::Gc(a) => audit::gc_cmd(a, quiet).await,
        Command::Prices(c) => prices::prices_cmd(c, quiet).await,
        Command::Catalog(c) => catalog::catalog_cmd(c, quiet).await,
        Command::Version => {
            outln!("gpuform {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            // Generated whole first: clap_complete panics on a write error.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "gpuform", &mut script);
            super::out::stdout_bytes(&script);
            Ok(ExitCode::SUCCESS)
        }
    }
}
