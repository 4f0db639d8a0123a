//! The Kubernetes objects a k3s server deploys so that pods can ask for
//! GPUs: the `nvidia` RuntimeClass (when k3s does not ship it), NVIDIA's
//! device plugin with the MIG strategy of the cluster's layout, and
//! (opt-in) NVIDIA's DCGM exporter.
//!
//! They are written to k3s's auto-deploy directory before k3s first starts:
//! "On server nodes, any file found in /var/lib/rancher/k3s/server/manifests
//! will automatically be deployed to Kubernetes in a manner similar to
//! `kubectl apply`, both on startup and when the file is changed on disk"
//! (https://docs.k3s.io/installation/packaged-components, "Auto-Deploying
//! Manifests (AddOns)"). Deleting a file does not delete its objects.
//!
//! Every object rendered here is checked against the Kubernetes schema of
//! the pinned k3s version by `tests/suite/bootstrap.rs` (kubernetes-validate).

use std::fmt::Write as _;

/// k3s's auto-deploy directory (see the module documentation).
pub const K3S_MANIFESTS_DIR: &str = "/var/lib/rancher/k3s/server/manifests";

/// NVIDIA k8s-device-plugin: the image and version its own static manifest
/// deploys (github.com/NVIDIA/k8s-device-plugin,
/// deployments/static/nvidia-device-plugin.yml at v0.17.1).
pub const DEVICE_PLUGIN_VERSION: &str = "v0.17.1";
pub const DEVICE_PLUGIN_IMAGE: &str = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1";

/// NVIDIA DCGM exporter: the image tag of its Helm chart's values
/// (github.com/NVIDIA/dcgm-exporter, deployment/values.yaml): DCGM 4.2.3,
/// exporter 4.1.3.
pub const DCGM_EXPORTER_VERSION: &str = "4.2.3-4.1.3";
pub const DCGM_EXPORTER_IMAGE: &str = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04";
/// The port the exporter serves `/metrics` on.
pub const DCGM_EXPORTER_PORT: u16 = 9400;

/// Kubeflow's Training Operator, applied by the server from its pinned
/// upstream kustomize overlay once the API answers, as Kubeflow's install
/// guide does (https://www.kubeflow.org/docs/components/training/installation:
/// "kubectl apply --server-side -k ...standalone?ref=v1.8.1", the stable
/// release; needs Kubernetes 1.28 or later). Its CRDs are too large for
/// user data, so they are fetched on the node (kubectl needs git for a
/// remote overlay).
pub const KUBEFLOW_TRAINING_OPERATOR: &str = "kubeflow-training-operator";
pub const KUBEFLOW_TRAINING_OPERATOR_VERSION: &str = "v1.8.1";
pub fn kubeflow_training_operator_overlay() -> String {
    format!(
        "github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref={KUBEFLOW_TRAINING_OPERATOR_VERSION}"
    )
}

/// How the device plugin exposes MIG devices (k8s-device-plugin README,
/// "MIG support"; NVIDIA's "MIG Support in Kubernetes"): `none` exposes
/// whole GPUs; `single` exposes every MIG device as `nvidia.com/gpu`, for
/// nodes whose GPUs all have one layout of one profile; `mixed` exposes
/// each profile as its own resource `nvidia.com/mig-<profile>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigStrategy {
    None,
    Single,
    Mixed,
}

impl MigStrategy {
    /// The strategy of a per-GPU layout (every GPU of every node of a
    /// gpuform cluster has the same one): one profile → `single`.
    pub fn of(layout: Option<&[String]>) -> MigStrategy {
        match layout {
            None => MigStrategy::None,
            Some(l) if l.iter().all(|p| p == &l[0]) => MigStrategy::Single,
            Some(_) => MigStrategy::Mixed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MigStrategy::None => "none",
            MigStrategy::Single => "single",
            MigStrategy::Mixed => "mixed",
        }
    }
}

/// The extended resources a pod requests on these nodes, with how many of
/// each one node offers.
pub fn resources(layout: Option<&[String]>, gpus: u32) -> Vec<(String, u32)> {
    match (MigStrategy::of(layout), layout) {
        (MigStrategy::Mixed, Some(l)) => {
            let mut out: Vec<(String, u32)> = Vec::new();
            for p in l {
                let name = format!("nvidia.com/mig-{p}");
                match out.iter_mut().find(|(n, _)| *n == name) {
                    Some(e) => e.1 += gpus,
                    None => out.push((name, gpus)),
                }
            }
            out
        }
        (_, Some(l)) => vec![("nvidia.com/gpu".into(), gpus * l.len() as u32)],
        (_, None) => vec![("nvidia.com/gpu".into(), gpus)],
    }
}

/// What the server deploys for one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addons {
    pub strategy: MigStrategy,
    pub dcgm_exporter: bool,
    /// The taint of the GPU nodes (`KEY=VALUE:EFFECT`), which the
    /// DaemonSets must tolerate.
    pub taint: Option<String>,
    /// Write the `nvidia` RuntimeClass: only for a k3s that does not
    /// ship it (see [`k3s_ships_runtime_class`]).
    pub runtime_class: bool,
}

/// Whether a k3s release (`None`: the stable channel) deploys RuntimeClass
/// `nvidia` itself: k3s pre-installs a RuntimeClass for every runtime it
/// can detect, nvidia included, since v1.29 (k3s-io/k3s#8700, fixed by
/// #8751; a plain install lists `nvidia`: NVIDIA/dcgm-exporter#291). A
/// second manifest of the same object would have two k3s AddOns fight over
/// it, so gpuform writes its own only for older releases.
pub fn k3s_ships_runtime_class(version: Option<&str>) -> bool {
    let Some(v) = version else { return true };
    let mut it = v.trim_start_matches('v').split(['.', '+', '-']);
    match (
        it.next().and_then(|m| m.parse::<u32>().ok()),
        it.next().and_then(|m| m.parse::<u32>().ok()),
    ) {
        (Some(major), Some(minor)) => (major, minor) >= (1, 29),
        _ => true,
    }
}

impl Addons {
    /// One line per object for the plan and `bootstrap show`.
    pub fn describe(&self) -> Vec<String> {
        let mut v = vec![
            if self.runtime_class {
                "RuntimeClass nvidia (handler nvidia: the NVIDIA container runtime k3s configures)"
            } else {
                "RuntimeClass nvidia: k3s's own (packaged since v1.29), for the NVIDIA container runtime it configures"
            }
            .to_string(),
            format!(
                "NVIDIA device plugin {DEVICE_PLUGIN_VERSION} DaemonSet ({DEVICE_PLUGIN_IMAGE}), MIG strategy {}",
                self.strategy.as_str()
            ),
        ];
        if self.dcgm_exporter {
            v.push(format!(
                "NVIDIA DCGM exporter {DCGM_EXPORTER_VERSION} DaemonSet + Service kube-system/dcgm-exporter :{DCGM_EXPORTER_PORT}/metrics"
            ));
        }
        v
    }

    /// The manifest files, by file name in [`K3S_MANIFESTS_DIR`].
    pub fn render(&self) -> Vec<(String, String)> {
        let mut files = Vec::new();
        if self.runtime_class {
            files.push((
                "gpuform-nvidia-runtimeclass.yaml".to_string(),
                runtime_class(),
            ));
        }
        files.push((
            "gpuform-nvidia-device-plugin.yaml".to_string(),
            device_plugin(self.strategy, self.taint.as_deref()),
        ));
        if self.dcgm_exporter {
            files.push((
                "gpuform-dcgm-exporter.yaml".to_string(),
                dcgm_exporter(self.taint.as_deref()),
            ));
        }
        files
    }
}

fn runtime_class() -> String {
    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
        .to_string()
}

/// Tolerations of a GPU DaemonSet: NVIDIA's own taint key and the spec's.
fn tolerations(taint: Option<&str>) -> String {
    let mut keys = vec!["nvidia.com/gpu".to_string()];
    if let Some(k) = taint.and_then(|t| t.split(['=', ':']).next()) {
        if !keys.iter().any(|x| x == k) {
            keys.push(k.to_string());
        }
    }
    let mut s = String::from("      tolerations:\n");
    for k in keys {
        let _ = writeln!(s, "      - {{key: {k}, operator: Exists}}");
    }
    s
}

/// The device plugin DaemonSet, after NVIDIA's static manifest: on the
/// GPU nodes only (`nvidia.com/gpu.present`, a label gpuform sets), in the
/// NVIDIA runtime, with the MIG strategy as `MIG_STRATEGY`.
fn device_plugin(strategy: MigStrategy, taint: Option<&str>) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvidia-device-plugin-daemonset
  namespace: kube-system
spec:
  selector:
    matchLabels: {{name: nvidia-device-plugin-ds}}
  template:
    metadata:
      labels: {{name: nvidia-device-plugin-ds}}
    spec:
      runtimeClassName: nvidia
      nodeSelector: {{nvidia.com/gpu.present: "true"}}
{tolerations}      priorityClassName: system-node-critical
      containers:
      - name: nvidia-device-plugin-ctr
        image: {DEVICE_PLUGIN_IMAGE}
        env:
        - {{name: MIG_STRATEGY, value: {strategy}}}
        - {{name: FAIL_ON_INIT_ERROR, value: "false"}}
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {{drop: [ALL]}}
        volumeMounts:
        - {{name: device-plugins, mountPath: /var/lib/kubelet/device-plugins}}
      volumes:
      - name: device-plugins
        hostPath: {{path: /var/lib/kubelet/device-plugins, type: Directory}}
"#,
        tolerations = tolerations(taint),
        strategy = strategy.as_str(),
    )
}

/// The DCGM exporter DaemonSet and its Service, after NVIDIA's Helm chart:
/// per-GPU metrics, and per MIG instance (`GPU_I_ID`, `GPU_I_PROFILE`
/// labels) on MIG nodes; pods mapped to the GPUs they use through the
/// kubelet's pod-resources socket.
fn dcgm_exporter(taint: Option<&str>) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: dcgm-exporter
  namespace: kube-system
spec:
  selector:
    matchLabels: {{app: dcgm-exporter}}
  template:
    metadata:
      labels: {{app: dcgm-exporter}}
    spec:
      runtimeClassName: nvidia
      nodeSelector: {{nvidia.com/gpu.present: "true"}}
{tolerations}      containers:
      - name: dcgm-exporter
        image: {DCGM_EXPORTER_IMAGE}
        env:
        - {{name: DCGM_EXPORTER_LISTEN, value: ":{DCGM_EXPORTER_PORT}"}}
        - {{name: DCGM_EXPORTER_KUBERNETES, value: "true"}}
        ports:
        - {{name: metrics, containerPort: {DCGM_EXPORTER_PORT}}}
        securityContext:
          runAsUser: 0
          capabilities: {{add: [SYS_ADMIN]}}
        volumeMounts:
        - {{name: pod-resources, readOnly: true, mountPath: /var/lib/kubelet/pod-resources}}
      volumes:
      - name: pod-resources
        hostPath: {{path: /var/lib/kubelet/pod-resources}}
---
apiVersion: v1
kind: Service
metadata:
  name: dcgm-exporter
  namespace: kube-system
  labels: {{app: dcgm-exporter}}
spec:
  selector: {{app: dcgm-exporter}}
  ports:
  - {{name: metrics, port: {DCGM_EXPORTER_PORT}, targetPort: metrics}}
"#,
        tolerations = tolerations(taint),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn strategy_and_resource_names_follow_the_layout() {
        assert_eq!(MigStrategy::of(None), MigStrategy::None);
        assert_eq!(resources(None, 8), vec![("nvidia.com/gpu".into(), 8)]);
        let single = l(&["3g.40gb", "3g.40gb"]);
        assert_eq!(MigStrategy::of(Some(&single)), MigStrategy::Single);
        assert_eq!(
            resources(Some(&single), 8),
            vec![("nvidia.com/gpu".into(), 16)]
        );
        let mixed = l(&["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]);
        assert_eq!(MigStrategy::of(Some(&mixed)), MigStrategy::Mixed);
        assert_eq!(
            resources(Some(&mixed), 2),
            vec![
                ("nvidia.com/mig-3g.40gb".into(), 2),
                ("nvidia.com/mig-2g.20gb".into(), 2),
                ("nvidia.com/mig-1g.10gb".into(), 4)
            ]
        );
    }

    #[test]
    fn the_runtime_class_is_k3s_own_from_v1_29() {
        assert!(k3s_ships_runtime_class(None));
        assert!(k3s_ships_runtime_class(Some("v1.30.6+k3s1")));
        assert!(k3s_ships_runtime_class(Some("v1.29.0+k3s1")));
        assert!(!k3s_ships_runtime_class(Some("v1.28.15+k3s1")));
    }

    #[test]
    fn a_spec_taint_is_tolerated_once() {
        let t = tolerations(Some("dedicated=gpu:NoSchedule"));
        assert!(t.contains("key: nvidia.com/gpu,") && t.contains("key: dedicated,"));
        let t = tolerations(Some("nvidia.com/gpu=present:NoSchedule"));
        assert_eq!(t.matches("key:").count(), 1);
    }
}
