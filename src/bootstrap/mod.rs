//! Node bootstrap: what each instance runs at first boot so that it comes up
//! ready (GPU driver and container toolkit, MIG applied, local NVMe mounted,
//! Kubernetes joined), rendered once for every cloud as a cloud-init MIME
//! multipart document: a `text/cloud-config` part (the step scripts and the
//! MIG systemd unit as `write_files`, the entry script in `runcmd`), then the
//! user's own `user_data` as its own part, unchanged.
//!
//! Secrets never enter the document gpuform keeps: the join token and the
//! k3s server's private address are placeholders ([`placeholder`]) that
//! `apply` fills in just before the create call (`fill`); plans carry the
//! template, state only its SHA-256 (`user_data_sha256`).

pub mod manifests;
pub mod scripts;

use gpuform_provider::attr;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Placeholders filled at apply time. `@@GPUFORM_ENV:NAME@@`: the value of
/// the environment variable `NAME`; `@@GPUFORM_REF:ROLE.ATTR@@`: attribute
/// `ATTR` of the dependency `ROLE` as its provider reports it;
/// `@@GPUFORM_SECRET:NAME@@`: the cluster's credential `NAME` (base64) from
/// the user's local secret store (`crate::k8s`).
pub mod placeholder {
    pub fn env(name: &str) -> String {
        format!("@@GPUFORM_ENV:{name}@@")
    }
    pub fn secret(name: &str) -> String {
        format!("@@GPUFORM_SECRET:{name}@@")
    }
    pub fn dep_attr(role: &str, attr: &str) -> String {
        format!("@@GPUFORM_REF:{role}.{attr}@@")
    }
    /// Every placeholder in `text`, in order of appearance, without duplicates.
    pub fn find(text: &str) -> Vec<Placeholder> {
        let mut out: Vec<Placeholder> = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find("@@GPUFORM_") {
            let after = &rest[i + 2..];
            let Some(end) = after.find("@@") else { break };
            let body = &after[..end];
            let p = if let Some(n) = body.strip_prefix("GPUFORM_ENV:") {
                Some(Placeholder::Env(n.to_string()))
            } else if let Some(n) = body.strip_prefix("GPUFORM_SECRET:") {
                Some(Placeholder::Secret(n.to_string()))
            } else if let Some(r) = body.strip_prefix("GPUFORM_REF:") {
                r.split_once('.')
                    .map(|(role, attr)| Placeholder::DepAttr(role.to_string(), attr.to_string()))
            } else {
                None
            };
            if let Some(p) = p {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            rest = &after[end + 2..];
        }
        out
    }
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Placeholder {
        Env(String),
        DepAttr(String, String),
        Secret(String),
    }
    impl Placeholder {
        pub fn text(&self) -> String {
            match self {
                Placeholder::Env(n) => env(n),
                Placeholder::DepAttr(r, a) => dep_attr(r, a),
                Placeholder::Secret(n) => secret(n),
            }
        }
    }
}

/// The dependency role of a k3s agent on its server (the graph orders the
/// agents after the server; `apply` reads the server's `private_ip`).
pub const K3S_SERVER_ROLE: &str = "k3s_server";

/// The credentials a k3s server's document names (`@@GPUFORM_SECRET:…@@`),
/// each the base64 of a PEM the user's side made (`crate::k8s`).
pub const SECRET_SERVER_CA_CRT: &str = "server-ca.crt";
pub const SECRET_SERVER_CA_KEY: &str = "server-ca.key";
pub const SECRET_ADMIN_CA_CRT: &str = "admin-ca.crt";

/// The most bytes a filled credential takes: the base64 of the DER of an
/// ECDSA P-256 certificate (about 530 with gpuform's names; 700 with a
/// 63-character cluster name, `crate::k8s` tests it) or PKCS#8 key (184).
pub const SECRET_MAX_BYTES: usize = 720;
pub const SECRET_KEY_MAX_BYTES: usize = 200;

/// An upper bound of a document's length once its credentials are filled
/// in (join tokens and addresses are short and not counted).
pub fn max_filled_len(doc: &str) -> usize {
    let secrets: usize = placeholder::find(doc)
        .iter()
        .filter(|p| matches!(p, placeholder::Placeholder::Secret(_)))
        .map(|p| {
            let max = match p {
                placeholder::Placeholder::Secret(n) if n == SECRET_SERVER_CA_KEY => {
                    SECRET_KEY_MAX_BYTES
                }
                _ => SECRET_MAX_BYTES,
            };
            doc.matches(&p.text()).count() * max.saturating_sub(p.text().len())
        })
        .sum();
    doc.len() + secrets
}

/// GPU software to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Driver {
    Nvidia(String),
    Rocm(String),
}

/// Kubernetes for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kube {
    K3sServer {
        version: Option<String>,
    },
    K3sAgent {
        version: Option<String>,
    },
    Kubeadm {
        endpoint: String,
        ca_cert_hash: String,
    },
}

/// Everything one node's bootstrap depends on, already resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlan {
    pub cluster: String,
    pub gpu_model: String,
    pub gpu_count: u32,
    /// Memory of one GPU, MiB (the `nvidia.com/gpu.memory` label).
    pub gpu_memory_mib: u32,
    /// An NVIDIA GPU: device plugin, RuntimeClass, `nvidia.com/*` labels.
    pub nvidia: bool,
    pub driver: Option<Driver>,
    /// Per-GPU MIG layout.
    pub mig: Option<Vec<String>>,
    /// (devices, mount path)
    pub nvme: Option<(u32, String)>,
    pub kube: Option<Kube>,
    pub token_env: Option<String>,
    pub taint: Option<String>,
    /// k3s: deploy NVIDIA's DCGM exporter too.
    pub dcgm_exporter: bool,
    /// k3s: apply Kubeflow's Training Operator once the server is up.
    pub kubeflow_training_operator: bool,
    pub user_data: Option<String>,
}

/// The rendered document and what the plan shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The MIME multipart document (placeholders unfilled).
    pub document: String,
    /// SHA-256 (hex) of `document`.
    pub sha256: String,
    /// One readable line per step, for the plan.
    pub steps: Vec<String>,
    /// The cloud-config part alone.
    pub cloud_config: String,
    /// The step scripts by file name, in the order they run.
    pub scripts: Vec<(String, String)>,
}

impl NodePlan {
    pub fn is_empty(&self) -> bool {
        self.driver.is_none() && self.mig.is_none() && self.nvme.is_none() && self.kube.is_none()
    }

    /// `nvidia.com/mig.config` value: mig-parted's `all-<profile>` name for
    /// a uniform layout, a `gpuform-` name for a mixed one (whose config
    /// gpuform writes to /etc/nvidia-mig-manager/gpuform.yaml).
    pub fn mig_config_name(layout: &[String]) -> String {
        if layout.iter().all(|p| p == &layout[0]) {
            format!("all-{}", layout[0])
        } else {
            let mut sorted = layout.to_vec();
            sorted.sort();
            sorted.dedup();
            let counts: Vec<String> = sorted
                .iter()
                .map(|p| format!("{}x{p}", layout.iter().filter(|q| *q == p).count()))
                .collect();
            format!("gpuform-{}", counts.join("-"))
        }
    }

    /// The node's labels: gpuform's own, and GPU feature discovery's names
    /// for what gpuform knows before boot (NVIDIA k8s-device-plugin,
    /// docs/gpu-feature-discovery/README.md, "Generated Labels"): product,
    /// count, memory, MIG strategy, and per profile with `mixed`. GFD, if
    /// deployed later, overwrites them with what NVML reports.
    pub fn labels(&self) -> Vec<String> {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                        c
                    } else {
                        '-'
                    }
                })
                .take(63)
                .collect()
        };
        let mut l = vec![
            format!("gpuform.io/cluster={}", clean(&self.cluster)),
            format!("gpuform.io/gpu={}", clean(&self.gpu_model)),
        ];
        if let Some(layout) = &self.mig {
            let name = Self::mig_config_name(layout);
            l.push(format!("gpuform.io/mig-layout={}", clean(&name)));
            l.push(format!("nvidia.com/mig.config={}", clean(&name)));
        }
        if !self.nvidia {
            return l;
        }
        let strategy = manifests::MigStrategy::of(self.mig.as_deref());
        l.push("nvidia.com/gpu.present=true".into());
        match (&self.mig, strategy) {
            (Some(layout), manifests::MigStrategy::Single) => {
                l.push(format!(
                    "nvidia.com/gpu.product={}",
                    clean(&format!("{}-MIG-{}", self.gpu_model, layout[0]))
                ));
                l.push(format!(
                    "nvidia.com/gpu.count={}",
                    self.gpu_count * layout.len() as u32
                ));
            }
            (Some(layout), _) => {
                l.push(format!("nvidia.com/gpu.product={}", clean(&self.gpu_model)));
                l.push(format!("nvidia.com/gpu.count={}", self.gpu_count));
                for (res, n) in manifests::resources(Some(layout), self.gpu_count) {
                    let p = res.trim_start_matches("nvidia.com/mig-");
                    l.push(format!("nvidia.com/mig-{}.count={n}", clean(p)));
                }
            }
            (None, _) => {
                l.push(format!("nvidia.com/gpu.product={}", clean(&self.gpu_model)));
                l.push(format!("nvidia.com/gpu.count={}", self.gpu_count));
                l.push(format!("nvidia.com/gpu.memory={}", self.gpu_memory_mib));
            }
        }
        if self.mig.is_some() {
            l.push(format!("nvidia.com/mig.strategy={}", strategy.as_str()));
        }
        l
    }

    /// What a k3s server deploys for this cluster (`None`: not a k3s
    /// server, or not an NVIDIA GPU).
    pub fn addons(&self) -> Option<manifests::Addons> {
        let Some(Kube::K3sServer { version }) = &self.kube else {
            return None;
        };
        self.nvidia.then(|| manifests::Addons {
            strategy: manifests::MigStrategy::of(self.mig.as_deref()),
            dcgm_exporter: self.dcgm_exporter,
            taint: self.taint.clone(),
            runtime_class: !manifests::k3s_ships_runtime_class(version.as_deref()),
        })
    }

    /// What a pod asks for on these nodes, for the plan: `nvidia.com/gpu:
    /// 1 (16 per node)` or one line per MIG profile.
    pub fn pod_resources(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (name, n) in manifests::resources(self.mig.as_deref(), self.gpu_count) {
            let what = match (&self.mig, name.strip_prefix("nvidia.com/mig-")) {
                (Some(_), Some(p)) => format!("one {p} MIG instance"),
                (Some(layout), None) => format!("one {} MIG instance", layout[0]),
                (None, _) => format!("one {}", self.gpu_model),
            };
            v.push(format!("{name}: 1 = {what}; {n} per node"));
        }
        v
    }

    pub fn render(&self) -> Rendered {
        let mut p = Parts::default();
        self.driver_part(&mut p);
        self.nvme_part(&mut p);
        self.mig_part(&mut p);
        if let Some(k) = &self.kube {
            self.kube_part(k, &mut p);
        }
        let cc = cloud_config(&mut p);
        let Parts {
            mut steps, scripts, ..
        } = p;
        let mut parts: Vec<(String, String)> = vec![("text/cloud-config".into(), cc.clone())];
        if let Some(u) = &self.user_data {
            steps.push(format!(
                "user_data: merged as its own part ({})",
                user_part_type(u)
            ));
            parts.push((user_part_type(u).into(), u.clone()));
        }
        let document = multipart(&parts);
        let sha256 = hex::encode(Sha256::digest(document.as_bytes()));
        Rendered {
            document,
            sha256,
            steps,
            cloud_config: cc,
            scripts,
        }
    }

    fn driver_part(&self, p: &mut Parts) {
        match &self.driver {
            Some(Driver::Nvidia(b)) => {
                p.steps.push(format!(
                    "driver: NVIDIA {b} + NVIDIA Container Toolkit (vendor repositories)"
                ));
                p.scripts
                    .push(("driver.sh".into(), scripts::nvidia_driver(b)));
            }
            Some(Driver::Rocm(r)) => {
                p.steps
                    .push(format!("driver: AMD ROCm {r} (repo.radeon.com)"));
                p.scripts.push(("driver.sh".into(), scripts::rocm(r)));
            }
            None => {}
        }
    }

    fn nvme_part(&self, p: &mut Parts) {
        if let Some((n, mount)) = &self.nvme {
            p.steps.push(format!(
                "local NVMe: {n} disk(s){} → ext4 at {mount} (fstab, nofail)",
                if *n > 1 { " as RAID 0" } else { "" }
            ));
            p.scripts.push(("nvme.sh".into(), scripts::nvme(*n, mount)));
        }
    }

    fn mig_part(&self, p: &mut Parts) {
        if let Some(layout) = &self.mig {
            p.steps.push(format!(
                "MIG: {} on each of {} GPU(s), at every boot before the container runtime ({})",
                describe_layout(layout),
                self.gpu_count,
                Self::mig_config_name(layout)
            ));
            p.scripts
                .push(("mig.sh".into(), scripts::mig(layout, self.gpu_count)));
            p.files.push((
                "/etc/systemd/system/gpuform-mig.service".into(),
                scripts::mig_unit(),
                "0644",
            ));
            p.files.push((
                "/etc/nvidia-mig-manager/gpuform.yaml".into(),
                mig_parted_config(layout),
                "0644",
            ));
            p.after_main.push("gpuform-mig.service");
        }
    }

    /// Joining Kubernetes: the role's script, labels, taint, what a k3s
    /// server deploys.
    fn kube_part(&self, k: &Kube, p: &mut Parts) {
        let token = placeholder::env(self.token_env.as_deref().unwrap_or("GPUFORM_K8S_TOKEN"));
        let server = placeholder::dep_attr(K3S_SERVER_ROLE, attr::PRIVATE_IP);
        let labels = self.labels();
        let role = match k {
            Kube::K3sServer { version } => {
                p.steps.push(format!(
                    "kubernetes: k3s {} server (this node)",
                    version.as_deref().unwrap_or("stable")
                ));
                scripts::KubeRole::K3sServer {
                    version: version.as_deref(),
                }
            }
            Kube::K3sAgent { version } => {
                p.steps.push(format!(
                    "kubernetes: k3s {} agent, joins the server's private address",
                    version.as_deref().unwrap_or("stable")
                ));
                scripts::KubeRole::K3sAgent {
                    version: version.as_deref(),
                    server: &server,
                }
            }
            Kube::Kubeadm {
                endpoint,
                ca_cert_hash,
            } => {
                p.steps.push(format!("kubernetes: kubeadm join {endpoint}"));
                scripts::KubeRole::Kubeadm {
                    endpoint,
                    ca_cert_hash,
                }
            }
        };
        p.steps.push(format!("node labels: {}", labels.join(", ")));
        let server = matches!(k, Kube::K3sServer { .. });
        // The k3s server stays untainted: k3s's own pods (CoreDNS,
        // metrics-server, the Kubeflow operator) tolerate no GPU taint
        // and need a node.
        let taint = self.taint.as_deref().filter(|_| !server);
        match (&self.taint, taint) {
            (Some(t), Some(_)) => p.steps.push(format!("node taint: {t}")),
            (Some(t), None) => p.steps.push(format!(
                "node taint: none on the k3s server, so that k3s's own pods have a node ({t} on the agents)"
            )),
            _ => {}
        }
        if server {
            p.steps.push(
                "credentials: the cluster's server CA and the certificate of your admin CA, \
                 filled in at apply from your local secret store (`gpuform kubeconfig`); \
                 agents join with the agent token only"
                    .into(),
            );
        }
        if let Some(addons) = self.addons() {
            for (file, text) in addons.render() {
                p.files.push((
                    format!("{}/{file}", manifests::K3S_MANIFESTS_DIR),
                    text,
                    "0600",
                ));
            }
            for line in addons.describe() {
                p.steps.push(format!("k3s deploys: {line}"));
            }
        }
        let kubeflow = server && self.kubeflow_training_operator;
        if kubeflow {
            p.steps.push(format!(
                "k3s applies once up: Kubeflow Training Operator {} (kubectl apply --server-side -k {})",
                manifests::KUBEFLOW_TRAINING_OPERATOR_VERSION,
                manifests::kubeflow_training_operator_overlay()
            ));
        }
        if self.nvidia && matches!(k, Kube::K3sServer { .. } | Kube::K3sAgent { .. }) {
            for r in self.pod_resources() {
                p.steps.push(format!("pods request {r}"));
            }
        }
        p.scripts.push((
            "kubernetes.sh".into(),
            scripts::kubernetes(&scripts::KubeJoin {
                role,
                server_secrets: server.then(|| scripts::ServerSecrets {
                    server_ca_crt: placeholder::secret(SECRET_SERVER_CA_CRT),
                    server_ca_key: placeholder::secret(SECRET_SERVER_CA_KEY),
                    admin_ca_crt: placeholder::secret(SECRET_ADMIN_CA_CRT),
                }),
                labels: &labels,
                taint,
                kubeflow_overlay: kubeflow.then(manifests::kubeflow_training_operator_overlay),
                token: &token,
            }),
        ));
    }
}

/// What the steps of a bootstrap add: plan lines, scripts, other files and
/// units enabled after the main script.
#[derive(Default)]
struct Parts {
    steps: Vec<String>,
    scripts: Vec<(String, String)>,
    files: Vec<(String, String, &'static str)>,
    after_main: Vec<&'static str>,
}

/// The cloud-config part: every script and file written, the main script
/// run; the main script joins `p.scripts` as `bootstrap.sh`.
fn cloud_config(p: &mut Parts) -> String {
    let Parts {
        steps,
        scripts,
        files,
        after_main,
    } = p;
    let names: Vec<&str> = scripts.iter().map(|(n, _)| n.as_str()).collect();
    let mut main = scripts::main_script(&names);
    for unit in after_main.iter() {
        let _ = writeln!(main, "systemctl enable {unit}");
    }
    let mut cc = String::from("#cloud-config\n");
    cc.push_str("# gpuform bootstrap; `gpuform bootstrap show ADDRESS` prints this document\n");
    // What Kubernetes gets, readable at the top (the manifests follow).
    for step in steps.iter().filter(|s| {
        s.starts_with("k3s deploys:")
            || s.starts_with("k3s applies")
            || s.starts_with("pods request")
    }) {
        let _ = writeln!(cc, "# {step}");
    }
    cc.push_str("write_files:\n");
    let mut all: Vec<(String, String, &str)> = scripts
        .iter()
        .map(|(n, t)| (format!("{}/{n}", scripts::LIB_DIR), t.clone(), "0755"))
        .collect();
    all.push((format!("{}/bootstrap.sh", scripts::LIB_DIR), main, "0755"));
    all.extend(std::mem::take(files));
    for (path, content, mode) in &all {
        let _ = writeln!(cc, "  - path: {path}");
        let _ = writeln!(cc, "    permissions: '{mode}'");
        let _ = writeln!(cc, "    owner: root:root");
        cc.push_str("    content: |\n");
        for line in content.lines() {
            if line.is_empty() {
                cc.push('\n');
            } else {
                let _ = writeln!(cc, "      {line}");
            }
        }
    }
    let _ = writeln!(cc, "runcmd:\n  - [{}/bootstrap.sh]", scripts::LIB_DIR);
    scripts.push((
        "bootstrap.sh".into(),
        all.iter()
            .find(|f| f.0.ends_with("/bootstrap.sh"))
            .map(|f| f.1.clone())
            .unwrap_or_default(),
    ));

    cc
}

/// `[3g.40gb, 3g.40gb]` → `2 × 3g.40gb`; mixed: `1 × 3g.40gb + 2 × 1g.10gb`.
fn describe_layout(layout: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for p in layout {
        match seen.iter_mut().find(|(q, _)| *q == p.as_str()) {
            Some(e) => e.1 += 1,
            None => seen.push((p.as_str(), 1)),
        }
    }
    seen.iter()
        .map(|(p, n)| format!("{n} × {p}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

fn mig_parted_config(layout: &[String]) -> String {
    let mut sorted = layout.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut s = format!(
        "version: v1\nmig-configs:\n  {}:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n",
        NodePlan::mig_config_name(layout)
    );
    for p in &sorted {
        let _ = writeln!(
            s,
            "        \"{p}\": {}",
            layout.iter().filter(|q| *q == p).count()
        );
    }
    s
}

/// The MIME type cloud-init gives a user-data text by its first line.
pub fn user_part_type(text: &str) -> &'static str {
    let first = text.lines().next().unwrap_or("").trim_end();
    if first.starts_with("#cloud-config") {
        "text/cloud-config"
    } else if first.starts_with("#!") {
        "text/x-shellscript"
    } else if first.starts_with("#include") {
        "text/x-include-url"
    } else if first.starts_with("#cloud-boothook") {
        "text/cloud-boothook"
    } else {
        "text/x-shellscript"
    }
}

/// Whether a user_data text can be a part of gpuform's document.
pub fn check_user_data(text: &str) -> Result<(), String> {
    let first = text.lines().next().unwrap_or("").trim();
    if first.to_ascii_lowercase().starts_with("content-type:") || first.starts_with("MIME-Version")
    {
        return Err(
            "user_data is already a MIME multipart document; gpuform adds its own parts around it"
                .into(),
        );
    }
    if !(first.starts_with("#cloud-config")
        || first.starts_with("#!")
        || first.starts_with("#include")
        || first.starts_with("#cloud-boothook"))
    {
        return Err(format!(
            "cloud-init cannot tell what user_data is: its first line `{}` is not `#cloud-config`, `#!...`, `#include` or `#cloud-boothook`",
            first.chars().take(40).collect::<String>()
        ));
    }
    Ok(())
}

/// A MIME multipart/mixed document with a boundary derived from the parts
/// (so the same parts give the same bytes, and the boundary is not in them).
pub fn multipart(parts: &[(String, String)]) -> String {
    let mut h = Sha256::new();
    for (t, body) in parts {
        h.update(t.as_bytes());
        h.update(body.as_bytes());
    }
    let boundary = format!("==gpuform-{}==", &hex::encode(h.finalize())[..16]);
    let mut s =
        format!("Content-Type: multipart/mixed; boundary=\"{boundary}\"\nMIME-Version: 1.0\n\n");
    for (t, body) in parts {
        let _ = write!(
            s,
            "--{boundary}\nContent-Type: {t}; charset=\"utf-8\"\nMIME-Version: 1.0\nContent-Transfer-Encoding: 7bit\nMerge-Type: list(append)+dict(no_replace,recurse_list)+str()\n\n{body}"
        );
        if !body.ends_with('\n') {
            s.push('\n');
        }
    }
    let _ = writeln!(s, "--{boundary}--");
    s
}

/// The parts of a document made by [`multipart`]: (content type, body).
pub fn split_multipart(doc: &str) -> Vec<(String, String)> {
    let Some(b) = doc
        .lines()
        .next()
        .and_then(|l| l.split("boundary=\"").nth(1))
        .and_then(|r| r.split('"').next())
    else {
        return Vec::new();
    };
    let sep = format!("--{b}\n");
    let end = format!("--{b}--");
    let body = doc.split(&end).next().unwrap_or("");
    body.split(&sep)
        .skip(1)
        .filter_map(|part| {
            let (head, body) = part.split_once("\n\n")?;
            let t = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Type: "))?
                .split(';')
                .next()?
                .to_string();
            Some((t, body.to_string()))
        })
        .collect()
}

/// Checks the cloud-config parts of a document with cloud-init's own schema
/// validator when `cloud-init` is installed (`None` when it is not).
/// `Some(Err((part, message)))` names the first refused part: 0 is
/// gpuform's, 1 the user's own.
pub fn cloud_init_check(doc: &str) -> Option<Result<(), (usize, String)>> {
    let tool = ["/usr/bin/cloud-init", "/usr/local/bin/cloud-init"]
        .into_iter()
        .map(std::path::Path::new)
        .find(|p| p.exists())?;
    let dir = std::env::temp_dir();
    for (i, (kind, body)) in split_multipart(doc).iter().enumerate() {
        if kind != "text/cloud-config" {
            continue;
        }
        let file = dir.join(format!(
            "gpuform-cloud-config-{}-{i}.yaml",
            std::process::id()
        ));
        if std::fs::write(&file, body).is_err() {
            return None;
        }
        let out = std::process::Command::new(tool)
            .args(["schema", "--config-file"])
            .arg(&file)
            .output();
        let _ = std::fs::remove_file(&file);
        let out = out.ok()?;
        if !out.status.success() {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let why = text
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.contains("deprecations"))
                .map(|l| l.replace(&file.display().to_string(), "cloud-config"))
                .collect::<Vec<_>>()
                .join("; ");
            return Some(Err((i, why)));
        }
    }
    Some(Ok(()))
}

/// Fills the placeholders of a document at apply time. `value` answers
/// each placeholder; values must be plain tokens (no quotes, spaces or
/// shell metacharacters), as join tokens and IP addresses are. Errors name
/// the placeholder, never the value.
pub fn fill(
    doc: &str,
    mut value: impl FnMut(&placeholder::Placeholder) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = doc.to_string();
    for p in placeholder::find(doc) {
        let v = value(&p)?;
        if v.is_empty()
            || !v.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-' | '+' | '/' | '=')
            })
        {
            let what = match &p {
                placeholder::Placeholder::Env(n) => format!("environment variable {n}"),
                placeholder::Placeholder::DepAttr(r, a) => format!("{a} of the {r}"),
                placeholder::Placeholder::Secret(n) => format!("the credential {n}"),
            };
            return Err(format!(
                "{what} is empty or has characters a join token or address cannot have (allowed: letters, digits, . _ : - + / =)"
            ));
        }
        out = out.replace(&p.text(), &v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_round_trips_and_placeholders_fill() {
        let parts = vec![
            (
                "text/cloud-config".to_string(),
                "#cloud-config\nruncmd: []\n".to_string(),
            ),
            (
                "text/x-shellscript".to_string(),
                "#!/bin/sh\necho @@GPUFORM_ENV:T@@\n".to_string(),
            ),
        ];
        let doc = multipart(&parts);
        assert_eq!(split_multipart(&doc), parts);
        assert_eq!(
            placeholder::find(&doc),
            vec![placeholder::Placeholder::Env("T".into())]
        );
        let filled = fill(&doc, |_| Ok("abc.def".into())).unwrap();
        assert!(filled.contains("echo abc.def") && !filled.contains("@@"));
        let err = fill(&doc, |_| Ok("a'b; rm -rf /".into())).unwrap_err();
        assert!(err.contains("environment variable T") && !err.contains("rm -rf"));
    }

    #[test]
    fn user_data_kinds() {
        assert!(check_user_data("#!/bin/bash\necho\n").is_ok());
        assert!(check_user_data("#cloud-config\n{}\n").is_ok());
        assert!(check_user_data("echo hi\n").is_err());
        assert!(check_user_data("Content-Type: multipart/mixed\n").is_err());
    }
}
