//! `gpuform kubeconfig`: a kubeconfig for a cluster's k3s server.

use crate::cli::args::*;
use crate::cli::out::{out, outln};
use crate::cli::{CmdResult, Failure};
use crate::engine::{self};
use gpuform_provider::attr;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::shared::*;

/// `gpuform kubeconfig`: the server's reported address from state, the
/// pinned server CA and a new admin client certificate (crate::k8s).
pub(super) fn kubeconfig(a: &KubeconfigArgs) -> CmdResult {
    use crate::spec::KubernetesMode;
    let loaded = load(&a.file, &a.vars)?;
    let Some(c) = loaded.spec.clusters.get(&a.cluster) else {
        let names: Vec<&str> = loaded.spec.clusters.keys().map(String::as_str).collect();
        return Err(Failure(format!(
            "{} has no cluster `{}`\n  hint: clusters: {}",
            a.file.display(),
            a.cluster,
            names.join(", ")
        )));
    };
    if c.kubernetes.as_ref().map(|k| k.mode) != Some(KubernetesMode::K3s) {
        return Err(Failure(format!(
            "cluster `{}` is not a k3s cluster gpuform makes\n  hint: add `kubernetes: {{ mode: k3s, token_env: K3S_TOKEN }}` to it (a kubeadm-join cluster's kubeconfig comes from that cluster)",
            a.cluster
        )));
    }
    let store = a.location.store(Some(&loaded)).map_err(engine_failure)?;
    let (doc, existed) = engine::read_state(&store, "")?;
    let server = crate::address::Address::in_cluster(&a.cluster, "node[0]");
    let record = doc
        .resources
        .get(&server)
        .filter(|_| existed)
        .ok_or_else(|| {
            Failure(format!(
            "{server} (the k3s server) is not in state {}\n  hint: `gpuform apply {}` creates it",
            store.location(),
            a.file.display()
        ))
        })?;
    let ip = |k: &str| {
        record
            .reported
            .get(k)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let address = match a.address.as_str() {
        "public" => ip("public_ip"),
        "private" => ip(attr::PRIVATE_IP),
        _ => ip("public_ip").or_else(|| ip(attr::PRIVATE_IP)),
    }
    .ok_or_else(|| {
        Failure(format!(
            "state has no {} address of {server}\n  hint: `gpuform apply` (or `gpuform plan`, which refreshes) records what the cloud reports",
            if a.address == "auto" { "reported" } else { a.address.as_str() }
        ))
    })?;
    let dir = store.secrets_dir();
    let cas = crate::k8s::load(&dir, &a.cluster)
        .map_err(Failure)?
        .ok_or_else(|| {
            Failure(format!(
                "no credentials for cluster `{}` in {}\n  hint: they are made on this machine by the apply that creates the server; a server made elsewhere or before gpuform made them: copy that machine's {} here, or replace the server (`gpuform apply --replace {server}`)",
                a.cluster,
                dir.display(),
                dir.display()
            ))
        })?;
    let (crt, key) = cas
        .issue_admin(crate::clock::today(), a.valid_days)
        .map_err(Failure)?;
    let name = format!("{}-{}", loaded.spec.project, a.cluster);
    let text = crate::k8s::kubeconfig(
        &name,
        &format!("https://{address}:6443"),
        &cas.server_ca_crt,
        &crt,
        &key,
    );
    match a.out.as_deref() {
        Some(p) if p == Path::new("-") => out!("{text}"),
        other => {
            let path = other
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(format!("{name}.kubeconfig")));
            crate::k8s::write_private(&path, text.as_bytes()).map_err(Failure)?;
            outln!(
                "Wrote {} (server https://{address}:6443, admin certificate valid {} days).\n  export KUBECONFIG={}",
                path.display(),
                a.valid_days,
                path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
