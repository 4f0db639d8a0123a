//! `kubernetes:` of a cluster: what each mode needs and allows, its
//! add-ons, and the shapes of its values (they end up in boot scripts).

use super::super::model::{KubeAddon, KubernetesMode, SpecNames};
use super::super::yaml::Node;
use super::{fields, join, Validator};
use serde_json::Value;

const KUBEADM_JOIN: &str = KubernetesMode::KubeadmJoin.as_str();

impl Validator {
    pub(super) fn kubernetes(&mut self, node: &Node, path: &str) -> Option<Value> {
        let obj = self.object(node, path, node.start, &fields::KUBERNETES)?;
        let kubeadm = obj.get("mode").and_then(Value::as_str) == Some(KUBEADM_JOIN);
        let asked = |k: &str| match obj.get(k) {
            Some(Value::Bool(b)) => *b,
            Some(Value::Array(a)) => !a.is_empty(),
            _ => false,
        };
        let server_only: Vec<&str> = ["dcgm_exporter", "addons"]
            .into_iter()
            .filter(|k| kubeadm && asked(k))
            .collect();
        for key in &server_only {
            let at = node.entry(key).map_or(node.start, |e| e.key_pos);
            self.error(
                at,
                &join(path, key),
                format!("`{key}` needs `mode: k3s`: gpuform deploys it from the k3s server it makes"),
                "on a cluster you join with kubeadm, deploy it with that cluster's own tooling (NVIDIA's or Kubeflow's manifests), or drop the key",
            );
        }
        if !server_only.is_empty() {
            return None;
        }
        if kubeadm {
            let mut ok = true;
            for key in ["endpoint", "ca_cert_hash"] {
                if !obj.contains_key(key) {
                    self.error(
                        node.start,
                        path,
                        format!("`mode: kubeadm-join` needs `{key}`"),
                        "give the existing cluster's API endpoint and CA hash (`kubeadm token create --print-join-command` prints both)",
                    );
                    ok = false;
                }
            }
            if !ok {
                return None;
            }
        }
        Some(Value::Object(obj))
    }

    /// `kubernetes.addons`: what a k3s server also deploys, each once.
    pub(super) fn kube_addons(&mut self, node: &Node, path: &str) -> Option<Value> {
        let addons = KubeAddon::NAMES;
        let items = self.expect(
            node.seq(),
            node,
            path,
            "`addons` as a list",
            format!("write `addons: [{}]`", addons[0]),
        )?;
        let mut out = self.each_item(items, path, |v, item, p| {
            v.choice(item, p, addons, "add-on")
        })?;
        let mut seen = Vec::new();
        out.retain(|a| {
            let first = !seen.contains(a);
            seen.push(a.clone());
            first
        });
        Some(Value::Array(out))
    }
}

pub(super) fn is_env_name(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(super) fn is_endpoint(t: &str) -> bool {
    let Some((host, port)) = t.rsplit_once(':') else {
        return false;
    };
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        && port.parse::<u16>().is_ok_and(|p| p > 0)
}

pub(super) fn is_ca_hash(t: &str) -> bool {
    t.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
}

pub(super) fn is_k8s_version(t: &str) -> bool {
    t.strip_prefix('v').is_some_and(|r| {
        r.chars().next().is_some_and(|c| c.is_ascii_digit())
            && r.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'))
    })
}

pub(super) fn is_taint(t: &str) -> bool {
    let Some((kv, effect)) = t.rsplit_once(':') else {
        return false;
    };
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    let word = |s: &str, extra: &[char]| {
        s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') || extra.contains(&c)
        })
    };
    !key.is_empty()
        && word(key, &['/'])
        && word(value, &[])
        && matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
}
