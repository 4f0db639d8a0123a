//! `gpuform graph`: the plan's dependency graph as DOT.

use crate::cli::args::*;
use crate::cli::out::outln;
use crate::cli::{CmdResult, Failure};
use crate::engine::{self};

use crate::address::Address;
use std::path::Path;
use std::process::ExitCode;

use super::shared::*;

pub(super) fn graph(file: &Path, vars: &VarArgs, sandbox: bool) -> CmdResult {
    let loaded = load(file, vars)?;
    let desired = engine::desired(&loaded, &*catalog_for(None)?, &resolve_opts(sandbox, None))
        .map_err(engine_failure)?;
    let mut g = petgraph::Graph::<Address, String>::new();
    let mut idx = std::collections::HashMap::new();
    for r in &desired.resources {
        idx.insert(r.address.clone(), g.add_node(r.address.clone()));
    }
    for r in &desired.resources {
        for (role, dep) in &r.deps {
            let (Some(&a), Some(&b)) = (idx.get(dep), idx.get(&r.address)) else {
                return Err(Failure(format!("{} depends on unknown {dep}", r.address)));
            };
            g.add_edge(a, b, role.to_string());
        }
    }
    if petgraph::algo::is_cyclic_directed(&g) {
        return Err(Failure("the resource graph has a cycle".into()));
    }
    outln!("{}", petgraph::dot::Dot::new(&g));
    Ok(ExitCode::SUCCESS)
}
