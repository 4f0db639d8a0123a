//! Validation: walks the YAML tree against the shape of [`Spec`](super::Spec),
//! collecting every problem (unknown keys, wrong types, bad values) with its
//! position, and builds the JSON value that serde then turns into a `Spec`.
//!
//! Walking the tree ourselves, rather than relying on serde's first error, is
//! what lets one run report many errors, each at its own line and column.
//! The allowed keys below must match the model; a unit test compares them with
//! the generated JSON Schema so they cannot drift apart.

use super::diagnostics::{Diagnostic, Diagnostics};
use super::model::{
    CapacitySource, CloudName, Fabric, GpuRequest, Ingress, InterconnectReq, KubeAddon,
    KubernetesMode, SpecNames, StateSettings, Strategy, VolumeType,
};
use super::window::Weekday;
use super::yaml::{shorten, Entry, Kind, Node, Pos, Style};
use gpuform_catalog::storage::StorageClass;
use gpuform_catalog::PricingModel;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const PRICING: &[&str] = PricingModel::NAMES;
const BACKENDS: &[&str] = StateSettings::NAMES;
/// The `capacity` sources written as a one-key mapping (the others are
/// [`CapacitySource::MARKETS`]); a test checks them against the model.
const RESERVATION: &str = "reservation";
const BLOCK: &str = "block";
const KUBEADM_JOIN: &str = KubernetesMode::KubeadmJoin.as_str();

/// The closest candidate to `name`, if close enough to be a likely typo.
pub(crate) fn suggest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let lower = name.to_lowercase();
    let limit = name.chars().count().div_ceil(3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (strsim::damerau_levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Cluster and bucket names: lowercase letters, digits and `-`, starting with a letter.
pub fn valid_resource_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A suggested valid name for an invalid one (lowercased, `_`/spaces to `-`).
fn fix_name(name: &str) -> String {
    let mut s: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    while s.starts_with(|c: char| !c.is_ascii_lowercase()) && !s.is_empty() {
        s.remove(0);
    }
    if s.is_empty() {
        "my-cluster".to_string()
    } else {
        s
    }
}

/// Checks an IPv4 or IPv6 CIDR; `Err((message, hint))`.
pub fn check_cidr(text: &str, allow_v6: bool) -> Result<(), (String, String)> {
    let example = if allow_v6 {
        "e.g. `10.0.0.0/16`, `0.0.0.0/0` or `::/0`"
    } else {
        "e.g. `10.0.0.0/16`"
    };
    let Some((addr, prefix)) = text.split_once('/') else {
        return Err((
            format!("`{}` is not a CIDR block (no `/prefix`)", shorten(text)),
            format!("write ADDRESS/PREFIX, {example}"),
        ));
    };
    let bad = || {
        (
            format!("`{}` is not a valid CIDR block", shorten(text)),
            format!("write ADDRESS/PREFIX, {example}"),
        )
    };
    let prefix: u32 =
        if !prefix.is_empty() && prefix.len() <= 3 && prefix.chars().all(|c| c.is_ascii_digit()) {
            prefix.parse().map_err(|_| bad())?
        } else {
            return Err(bad());
        };
    if let Ok(v4) = addr.parse::<Ipv4Addr>() {
        if prefix > 32 {
            return Err((
                format!("prefix /{prefix} in `{text}` is larger than 32"),
                format!("an IPv4 prefix is 0-32, {example}"),
            ));
        }
        let bits = u32::from(v4);
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix)
        };
        if bits & !mask != 0 {
            let net = Ipv4Addr::from(bits & mask);
            return Err((
                format!("`{text}` has host bits set"),
                format!("did you mean `{net}/{prefix}`?"),
            ));
        }
        return Ok(());
    }
    if allow_v6 {
        if let Ok(v6) = addr.parse::<Ipv6Addr>() {
            if prefix > 128 {
                return Err((
                    format!("prefix /{prefix} in `{text}` is larger than 128"),
                    "an IPv6 prefix is 0-128".to_string(),
                ));
            }
            let bits = u128::from(v6);
            let mask = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - prefix)
            };
            if bits & !mask != 0 {
                let net = Ipv6Addr::from(bits & mask);
                return Err((
                    format!("`{text}` has host bits set"),
                    format!("did you mean `{net}/{prefix}`?"),
                ));
            }
            return Ok(());
        }
    }
    Err(bad())
}

/// Checks `22` or `8000-8100` (1-65535, low ≤ high); `Err((message, hint))`.
pub fn check_ports(text: &str) -> Result<(u16, u16), (String, String)> {
    let hint = "write a port (`22`) or a range (`8000-8100`) between 1 and 65535".to_string();
    let port = |s: &str| -> Result<u16, (String, String)> {
        let s = s.trim();
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
            return Err((
                format!("`{}` is not a port or port range", shorten(text)),
                hint.clone(),
            ));
        }
        match s.parse::<u32>() {
            Ok(p) if (1..=65535).contains(&p) => Ok(p as u16),
            _ => Err((
                format!("port {} in `{}` is out of range", shorten(s), shorten(text)),
                hint.clone(),
            )),
        }
    };
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) => (port(a)?, port(b)?),
        None => {
            let p = port(text)?;
            (p, p)
        }
    };
    if lo > hi {
        return Err((
            format!("port range `{text}` is reversed"),
            format!("write `{hi}-{lo}`"),
        ));
    }
    Ok((lo, hi))
}

/// Walks a parsed spec, collecting diagnostics and building its JSON form.
pub(crate) struct Validator {
    file: String,
    pub diags: Diagnostics,
}

/// How the errors of a list of distinct names speak of it (see
/// `Validator::distinct_names`).
struct NameList {
    /// The spec key: `zones`.
    key: &'static str,
    /// What it should be: `a list`.
    expected: &'static str,
    /// The hint when it is neither a list nor a scalar.
    example: &'static str,
    /// One entry: `zone`.
    item: &'static str,
    /// The hint for an entry listed twice.
    once: &'static str,
}

const ZONES: NameList = NameList {
    key: "zones",
    expected: "a list",
    example: "write a list: `zones: [us-east-1a, us-east-1b]`",
    item: "zone",
    once: "list each zone once, in order of preference",
};

const READS: NameList = NameList {
    key: "reads",
    expected: "a list of buckets",
    example: "write a list of bucket keys: `reads: [datasets]`",
    item: "bucket",
    once: "list each bucket once",
};

type Conv = fn(&mut Validator, &Node, &str) -> Option<Value>;

struct Field {
    name: &'static str,
    required: bool,
    conv: Conv,
}

const fn req(name: &'static str, conv: Conv) -> Field {
    Field {
        name,
        required: true,
        conv,
    }
}
const fn opt(name: &'static str, conv: Conv) -> Field {
    Field {
        name,
        required: false,
        conv,
    }
}

const ROOT_FIELDS: &[Field] = &[
    req("project", Validator::project),
    opt("clusters", Validator::clusters),
    opt("buckets", Validator::buckets),
    opt("budget", Validator::budget),
    opt("state", Validator::state),
    opt("variables", Validator::variables),
    opt("endpoints", Validator::endpoints),
];

const CLUSTER_FIELDS: &[Field] = &[
    req("cloud", Validator::cloud),
    opt("region", Validator::nonempty),
    opt("candidates", Validator::candidates),
    opt("strategy", |v, n, p| {
        v.choice(n, p, Strategy::NAMES, "strategy")
    }),
    opt("zones", Validator::zones),
    req("nodes", Validator::count),
    req("gpu", Validator::gpu),
    opt("pricing", |v, n, p| {
        v.choice(n, p, PRICING, "pricing model")
    }),
    opt("capacity", Validator::capacity),
    opt("spot_max_price", Validator::positive),
    opt("interconnect", |v, n, p| {
        v.choice(n, p, InterconnectReq::NAMES, "interconnect")
    }),
    opt("fabric", |v, n, p| v.choice(n, p, Fabric::NAMES, "fabric")),
    opt("disk", Validator::disk),
    opt("image", Validator::nonempty),
    opt("mig", Validator::mig),
    opt("driver", Validator::driver),
    opt("local_nvme", Validator::local_nvme),
    opt("kubernetes", Validator::kubernetes),
    opt("instance_type", Validator::nonempty),
    opt("user_data", Validator::string),
    opt("ingress", Validator::ingress_list),
    opt("cidr", |v, n, p| v.cidr(n, p, false)),
    opt("reads", Validator::reads),
    opt("tags", Validator::tags),
    opt("spot_policy", |v, n, p| {
        v.object(n, p, n.start, SPOT_POLICY_FIELDS, "`spot_policy`", &[])
            .map(Value::Object)
    }),
    opt("expires_at", |v, n, p| {
        v.shaped(
            n,
            p,
            |t| super::model::lifetime_end(t).is_some(),
            "an instant like `2026-12-24T18:00:00Z` or a date like `2026-12-24`",
        )
    }),
    opt("maintenance_window", |v, n, p| {
        v.object(
            n,
            p,
            n.start,
            MAINTENANCE_WINDOW_FIELDS,
            "`maintenance_window`",
            &[],
        )
        .map(Value::Object)
    }),
];

const MAINTENANCE_WINDOW_FIELDS: &[Field] = &[
    opt("days", Validator::weekdays),
    req("start", |v, n, p| {
        v.shaped(
            n,
            p,
            |t| super::window::parse_clock(t).is_some(),
            "a time of day `HH:MM` on the 24-hour clock, like `02:00` or `22:30`",
        )
    }),
    req("duration", |v, n, p| {
        v.shaped(
            n,
            p,
            |t| super::window::parse_duration(t).is_some(),
            "a duration from `1m` to `7d`, like `30m` or `4h`",
        )
    }),
    opt("timezone", |v, n, p| {
        v.shaped(
            n,
            p,
            |t| super::window::parse_offset(t).is_some(),
            "`UTC` or a fixed offset like `+02:00` or `UTC-05:00` (zone names such as `Europe/Berlin` are not read: their offset moves with daylight saving)",
        )
    }),
];

const RESERVATION_FIELDS: &[Field] = &[req("tags", Validator::tags)];

const BLOCK_FIELDS: &[Field] = &[
    req("start", Validator::nonempty),
    req("hours", Validator::count),
    opt("count", Validator::count),
];

const KUBERNETES_FIELDS: &[Field] = &[
    req("mode", |v, n, p| {
        v.choice(n, p, KubernetesMode::NAMES, "Kubernetes mode")
    }),
    req("token_env", |v, n, p| {
        v.shaped(
            n,
            p,
            is_env_name,
            "an environment variable name like `K3S_TOKEN`",
        )
    }),
    opt("endpoint", |v, n, p| {
        v.shaped(n, p, is_endpoint, "`HOST:PORT`, e.g. `10.0.0.10:6443`")
    }),
    opt("ca_cert_hash", |v, n, p| {
        v.shaped(
            n,
            p,
            is_ca_hash,
            "`sha256:` and 64 hex digits (from `kubeadm token create --print-join-command`)",
        )
    }),
    opt("version", |v, n, p| {
        v.shaped(n, p, is_k8s_version, "a release like `v1.30.6+k3s1`")
    }),
    opt("taint", |v, n, p| {
        v.shaped(
            n,
            p,
            is_taint,
            "`KEY=VALUE:EFFECT`, e.g. `nvidia.com/gpu=present:NoSchedule`",
        )
    }),
    opt("dcgm_exporter", Validator::boolean),
    opt("addons", Validator::kube_addons),
];

/// `kubernetes.addons`: what a k3s server also deploys.
const KUBE_ADDONS: &[&str] = KubeAddon::NAMES;

const BUCKET_FIELDS: &[Field] = &[
    req("cloud", Validator::bucket_cloud),
    req("region", Validator::nonempty),
    opt("name", Validator::nonempty),
    opt("storage_class", |v, n, p| {
        v.choice(n, p, StorageClass::NAMES, "storage class")
    }),
    opt("versioning", Validator::boolean),
    opt("encryption", Validator::boolean),
    opt("lifecycle", Validator::lifecycle),
    opt("size_gb", Validator::size_gb),
    opt("force_destroy", Validator::boolean),
    opt("tags", Validator::tags),
];

const LIFECYCLE_FIELDS: &[Field] = &[
    opt("archive_after_days", Validator::count),
    opt("expire_noncurrent_after_days", Validator::count),
];

const SPOT_POLICY_FIELDS: &[Field] = &[
    opt("on_demand_base", Validator::count),
    opt("fallback", |v, n, p| {
        v.object(n, p, n.start, SPOT_FALLBACK_FIELDS, "`fallback`", &[])
            .map(Value::Object)
    }),
];

const SPOT_FALLBACK_FIELDS: &[Field] = &[
    req("after", Validator::count),
    req("within", Validator::duration),
    req("hold", Validator::duration),
];

const DISK_FIELDS: &[Field] = &[
    opt("root_gb", Validator::count),
    opt("data_gb", Validator::count),
    opt("data_type", Validator::volume_type),
];

const BUDGET_FIELDS: &[Field] = &[
    opt("max_hourly_usd", Validator::positive),
    opt("max_monthly_usd", Validator::positive),
    opt("allow_unpriced", Validator::boolean),
];

const STATE_LOCAL_FIELDS: &[Field] = &[
    req("backend", |v, n, p| {
        v.choice(n, p, BACKENDS, "state backend")
    }),
    opt("path", Validator::nonempty),
];

const STATE_POSTGRES_FIELDS: &[Field] = &[
    req("backend", |v, n, p| {
        v.choice(n, p, BACKENDS, "state backend")
    }),
    req("url", Validator::state_url),
    opt("schema", Validator::nonempty),
    opt("workspace", Validator::nonempty),
    opt("lease_seconds", Validator::count),
];

const STATE_S3_FIELDS: &[Field] = &[
    req("backend", |v, n, p| {
        v.choice(n, p, BACKENDS, "state backend")
    }),
    req("url", Validator::s3_state_url),
    opt("workspace", Validator::nonempty),
    opt("lease_seconds", Validator::count),
];

const VARIABLE_FIELDS: &[Field] = &[
    opt("default", Validator::string),
    opt("description", Validator::string),
];

const INGRESS_FIELDS: &[Field] = &[
    opt("protocol", |v, n, p| {
        v.choice(n, p, &Ingress::PROTOCOLS, "protocol")
    }),
    req("ports", Validator::ports),
    req("cidr", |v, n, p| v.cidr(n, p, true)),
];

const CLUSTER_ELSEWHERE: &[(&str, &str)] = &[
    ("root_gb", "disk"),
    ("data_gb", "disk"),
    ("ports", "ingress"),
    ("protocol", "ingress"),
    ("max_hourly_usd", "budget"),
    ("max_monthly_usd", "budget"),
];

impl Validator {
    pub fn new(file: &str) -> Validator {
        Validator {
            file: file.to_string(),
            diags: Diagnostics::new(),
        }
    }

    fn error(&mut self, pos: Pos, path: &str, message: impl Into<String>, hint: impl Into<String>) {
        self.diags.push(
            Diagnostic::new(&self.file, message)
                .at(pos.line, pos.col)
                .path(path)
                .hint(hint),
        );
    }

    /// The whole spec.
    pub fn spec(&mut self, root: Option<&Node>) -> Option<Value> {
        let Some(root) = root.filter(|r| !r.is_null()) else {
            self.error(
                Pos { line: 1, col: 1 },
                "",
                "the spec is empty",
                "start with `project: NAME` and a `clusters:` mapping (see examples/quickstart.yaml)",
            );
            return None;
        };
        let out = self
            .object(root, "", root.start, ROOT_FIELDS, "the spec", &[])
            .map(Value::Object);
        let before = self.diags.len();
        self.bucket_names(root);
        self.bucket_reads(root);
        if self.diags.len() > before {
            return None;
        }
        out
    }

    /// A mapping with known fields. `missing_at` is where a missing key is reported.
    fn object(
        &mut self,
        node: &Node,
        path: &str,
        missing_at: Pos,
        fields: &[Field],
        what: &str,
        elsewhere: &[(&str, &str)],
    ) -> Option<Map<String, Value>> {
        let Kind::Map(entries) = &node.kind else {
            let keys: Vec<&str> = fields.iter().map(|f| f.name).collect();
            self.error(
                node.start,
                path,
                format!("expected {what} as a mapping, found {}", node.describe()),
                format!("write `key: value` lines with the keys {}", list(&keys)),
            );
            return None;
        };
        let mut out = Map::new();
        let mut ok = true;
        for Entry {
            key,
            key_pos,
            value,
        } in entries
        {
            let p = join(path, key);
            let Some(field) = fields.iter().find(|f| f.name == key) else {
                let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
                let hint = if let Some(s) = suggest(key, names.iter().copied()) {
                    format!("did you mean `{s}`?")
                } else if let Some((_, parent)) = elsewhere.iter().find(|(k, _)| k == key) {
                    format!("`{key}` belongs under `{parent}:`")
                } else {
                    format!("the keys allowed here are {}", list(&names))
                };
                self.error(
                    *key_pos,
                    &p,
                    format!("unknown key `{}` in {what}", shorten(key)),
                    hint,
                );
                ok = false;
                continue;
            };
            if value.is_null() {
                if field.required {
                    self.error(
                        *key_pos,
                        &p,
                        format!("`{key}` needs a value"),
                        format!("write `{key}: ...` with a value"),
                    );
                    ok = false;
                }
                continue;
            }
            match (field.conv)(self, value, &p) {
                Some(v) => {
                    out.insert(key.clone(), v);
                }
                None => ok = false,
            }
        }
        for f in fields.iter().filter(|f| f.required) {
            let present = entries.iter().any(|e| e.key == f.name);
            if !present {
                self.error(
                    missing_at,
                    path,
                    format!("{what} is missing the required key `{}`", f.name),
                    format!("add `{}: ...`{}", f.name, example_for(f.name)),
                );
                ok = false;
            }
        }
        ok.then_some(out)
    }

    /// A mapping of validated names to objects.
    fn named_map(
        &mut self,
        node: &Node,
        path: &str,
        what: &str,
        conv: fn(&mut Validator, &Node, &str, Pos) -> Option<Value>,
    ) -> Option<Value> {
        let Kind::Map(entries) = &node.kind else {
            self.error(
                node.start,
                path,
                format!(
                    "expected `{path}` to be a mapping of {what} names to settings, found {}",
                    node.describe()
                ),
                format!("write `{path}:` followed by indented `NAME:` entries"),
            );
            return None;
        };
        let mut out = Map::new();
        let mut ok = true;
        for e in entries {
            let p = join(path, &e.key);
            if !valid_resource_name(&e.key) {
                self.error(
                    e.key_pos,
                    &p,
                    format!("invalid {what} name `{}`", shorten(&e.key)),
                    format!("names become parts of resource addresses: lowercase letters, digits and `-`, starting with a letter (e.g. `{}`)", fix_name(&e.key)),
                );
                ok = false;
            }
            if e.value.is_null() {
                self.error(
                    e.key_pos,
                    &p,
                    format!("{what} `{}` has no settings", shorten(&e.key)),
                    format!("indent its settings under `{}:`", shorten(&e.key)),
                );
                ok = false;
                continue;
            }
            match conv(self, &e.value, &p, e.key_pos) {
                Some(v) => {
                    out.insert(e.key.clone(), v);
                }
                None => ok = false,
            }
        }
        ok.then_some(Value::Object(out))
    }

    fn clusters(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.named_map(node, path, "cluster", Validator::cluster)
    }

    fn buckets(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.named_map(node, path, "bucket", Validator::bucket)
    }

    fn cluster(&mut self, node: &Node, path: &str, at: Pos) -> Option<Value> {
        let map = self.object(
            node,
            path,
            at,
            CLUSTER_FIELDS,
            "a cluster",
            CLUSTER_ELSEWHERE,
        );
        // `region`, `candidates` and `strategy` depend on `cloud`; checked on
        // the tree so that they are reported with the cluster's other errors.
        let Kind::Map(entries) = &node.kind else {
            return map.map(Value::Object);
        };
        let entry = |k: &str| entries.iter().find(|e| e.key == k);
        let cloud_text = entry("cloud").and_then(|e| match &e.value.kind {
            Kind::Scalar { text, .. } => Some(text.clone()),
            _ => None,
        });
        let Some(cloud_text) = cloud_text else {
            return map.map(Value::Object);
        };
        let any = cloud_text == "any";
        let mut ok = true;
        match entry("region") {
            Some(e) if !any && e.value.is_null() => {
                self.error(
                    e.key_pos,
                    &join(path, "region"),
                    "`region` needs a value",
                    "write `region: ...` with a value",
                );
                ok = false;
            }
            None if !any => {
                self.error(
                    at,
                    path,
                    "a cluster is missing the required key `region`",
                    "add `region: ...`, or write `cloud: any` to let gpuform choose",
                );
                ok = false;
            }
            Some(e) if any => {
                self.error(
                    e.key_pos,
                    &join(path, "region"),
                    "`region` cannot be set with `cloud: any`: the strategy chooses it",
                    "list where the cluster may run as `candidates: [aws/us-east-1, tencent]`",
                );
                ok = false;
            }
            _ => {}
        }
        for key in ["candidates", "strategy", "zones"] {
            let wrong = if key == "zones" { any } else { !any };
            if let Some(e) = entry(key).filter(|_| wrong) {
                let (msg, hint) = if key == "zones" {
                    (
                        "`zones` cannot be set with `cloud: any`: zones belong to a region".to_string(),
                        "pin a region with `candidates: [CLOUD/REGION]` and let gpuform use its zones in order".to_string(),
                    )
                } else {
                    (
                        format!("`{key}` only applies with `cloud: any`"),
                        "write `cloud: any`, or remove it".to_string(),
                    )
                };
                self.error(e.key_pos, &join(path, key), msg, hint);
                ok = false;
            }
        }
        // A spot cap or policy means nothing on another pricing model
        // (on-demand by default); a cap also applies to a `capacity` list's spot.
        for key in ["spot_max_price", "spot_policy"] {
            let Some(e) = entry(key) else { continue };
            let pricing = entry("pricing").and_then(|e| match &e.value.kind {
                Kind::Scalar { text, .. } => Some(text.as_str()),
                _ => None,
            });
            let spot_capacity =
                key == "spot_max_price" && entry("capacity").is_some_and(|e| lists_spot(&e.value));
            if pricing != Some("spot") && !spot_capacity {
                self.error(
                    e.key_pos,
                    &join(path, key),
                    format!(
                        "`{key}` only applies with `pricing: spot`, not `{}`",
                        pricing.unwrap_or("on-demand")
                    ),
                    format!("write `pricing: spot`, or remove `{key}`"),
                );
                ok = false;
            }
        }
        // `capacity` says how each node is paid for: with `pricing` too,
        // one of them would be ignored.
        if let (Some(c), Some(p)) = (entry("capacity"), entry("pricing")) {
            self.error(
                p.key_pos,
                &join(path, "pricing"),
                "`pricing` cannot be set with `capacity`: the capacity list says how each node is paid for",
                format!(
                    "remove `pricing`, and end `capacity` (line {}) with the market for the remaining nodes, e.g. `on-demand` or `spot`",
                    c.key_pos.line
                ),
            );
            ok = false;
        }
        if let Some(e) = entry("capacity").filter(|e| lists_bounded(&e.value)) {
            ok &= self.capacity_cloud(e, path, &cloud_text, any);
        }
        // Tencent refuses a tag that breaks its naming rules at the first
        // create (CreateVpc): report it here, where it is written.
        let may_run_on_tencent = cloud_text == "tencent"
            || (any && entry("candidates").is_none_or(|e| lists_tencent(&e.value)));
        if let Some(e) = entry("tags").filter(|_| may_run_on_tencent) {
            ok &= self.tencent_tags(&e.value, &join(path, "tags"));
        }
        if ok {
            map.map(Value::Object)
        } else {
            None
        }
    }

    /// Reservations and blocks are the account's in one region of one
    /// cloud; gpuform speaks reservations on AWS (and the sandbox
    /// mirroring it) and Alibaba Cloud (private pools), blocks on AWS only.
    fn capacity_cloud(&mut self, e: &Entry, path: &str, cloud_text: &str, any: bool) -> bool {
        let mut ok = true;
        let blocks = lists_blocks(&e.value);
        let speaks = match cloud_text {
            "aws" | "sandbox" => true,
            "alibaba" => !blocks,
            _ => false,
        };
        if !speaks {
            let (msg, hint) = if cloud_text == "alibaba" {
                (
                    "Capacity Blocks in `capacity` are supported on `cloud: aws` (and the sandbox), not `cloud: alibaba`".to_string(),
                    "on Alibaba Cloud, list a private pool: `{reservation: eap-…}` or `{reservation: crp-…}`".to_string(),
                )
            } else {
                (
                    format!(
                        "reservations and Capacity Blocks in `capacity` are supported on `cloud: aws` (and the sandbox), and reservations on `cloud: alibaba`, not `cloud: {cloud_text}`"
                    ),
                    if any {
                        "a reservation lives in one region: write `cloud: aws` or `cloud: alibaba` and its `region`".to_string()
                    } else {
                        "use `pricing:` (on-demand, spot, reserved-1y, reserved-3y) on this cloud".to_string()
                    },
                )
            };
            self.error(e.key_pos, &join(path, "capacity"), msg, hint);
            ok = false;
        } else {
            // An id names one cloud's reservation: EC2's `cr-…` or
            // Alibaba's private pools, `eap-…`/`crp-…`.
            let alibaba = cloud_text == "alibaba";
            for (at, id) in reservation_ids(&e.value) {
                if is_private_pool_id(&id) != alibaba {
                    let (what, hint) = if alibaba {
                        ("an AWS capacity reservation id", "on Alibaba Cloud a reservation is a private pool: an elasticity assurance (`eap-…`) or a capacity reservation (`crp-…`); `aliyun ecs DescribeElasticityAssurances` and `DescribeCapacityReservations` list them")
                    } else {
                        ("an Alibaba Cloud private pool id", "on AWS a reservation id is `cr-` and 17 hex digits (`aws ec2 describe-capacity-reservations` lists them)")
                    };
                    self.error(
                        at,
                        &join(path, "capacity"),
                        format!(
                            "`{}` is {what}, but this cluster is on `cloud: {cloud_text}`",
                            shorten(&id)
                        ),
                        hint,
                    );
                    ok = false;
                }
            }
        }
        ok
    }

    /// `capacity:`: an ordered list of `{reservation: ID}`,
    /// `{reservation: {tags: {...}}}`, `{block: {start, hours}}`,
    /// `on-demand`, `spot`; an unbounded market (the last to fill) ends it.
    fn capacity(&mut self, node: &Node, path: &str) -> Option<Value> {
        const EXAMPLE: &str =
            "write e.g. `capacity: [{reservation: cr-0123456789abcdef0}, on-demand]`";
        const SHAPES: &str = "a source is `{reservation: ID}`, `{block: {start: YYYY-MM-DD, hours: N}}`, `on-demand` or `spot`, one per list entry";
        let Kind::Seq(items) = &node.kind else {
            self.error(
                node.start,
                path,
                format!(
                    "expected a list of capacity sources, found {}",
                    node.describe()
                ),
                EXAMPLE,
            );
            return None;
        };
        if items.is_empty() {
            self.error(
                node.start,
                path,
                "`capacity` lists no source",
                format!("{EXAMPLE}, or remove it (then `pricing:` applies)"),
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        let mut market: Option<String> = None;
        let mut seen_ids: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            if let Some(m) = &market {
                self.error(
                    item.start,
                    &p,
                    format!("`{m}` before this entry takes every remaining node, so this one is never used"),
                    format!("put `{m}` last"),
                );
                ok = false;
                continue;
            }
            let value = match &item.kind {
                Kind::Scalar { text, .. } if CapacitySource::MARKETS.contains(&text.as_str()) => {
                    market = Some(text.clone());
                    Some(Value::String(text.clone()))
                }
                Kind::Scalar { text, .. } => {
                    let hint = if PRICING.contains(&text.as_str()) {
                        format!("`{text}` is a `pricing:` model; a capacity list ends with `on-demand` or `spot`")
                    } else if text.starts_with("cr-") {
                        format!("write `{{reservation: {text}}}`")
                    } else {
                        match suggest(text, CapacitySource::NAMES.iter().copied()) {
                            Some(s) => format!(
                                "did you mean `{s}`? Expected one of {}",
                                list(CapacitySource::NAMES)
                            ),
                            None => format!("expected one of {}", list(CapacitySource::NAMES)),
                        }
                    };
                    self.error(
                        item.start,
                        &p,
                        format!("unknown capacity source `{}`", shorten(text)),
                        hint,
                    );
                    None
                }
                Kind::Map(entries) if entries.len() == 1 => {
                    let e = &entries[0];
                    let ep = join(&p, &e.key);
                    match e.key.as_str() {
                        k if k == RESERVATION => {
                            self.reservation(&e.value, &ep, e.key_pos, &mut seen_ids)
                        }
                        k if k == BLOCK => self
                            .object(
                                &e.value,
                                &ep,
                                e.key_pos,
                                BLOCK_FIELDS,
                                "a Capacity Block",
                                &[],
                            )
                            .and_then(|m| self.block(&e.value, &ep, m)),
                        other => {
                            let hint = match suggest(other, [RESERVATION, BLOCK]) {
                                Some(s) => format!("did you mean `{s}`?"),
                                None => SHAPES.to_string(),
                            };
                            self.error(
                                e.key_pos,
                                &ep,
                                format!("unknown key `{}` in a capacity source", shorten(other)),
                                hint,
                            );
                            None
                        }
                    }
                    .map(|v| serde_json::json!({ e.key.clone(): v }))
                }
                _ => {
                    self.error(
                        item.start,
                        &p,
                        format!("expected a capacity source, found {}", item.describe()),
                        SHAPES,
                    );
                    None
                }
            };
            match value {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(Value::Array(out))
    }

    /// `reservation: cr-…` or `reservation: {tags: {KEY: VALUE}}`.
    fn reservation(
        &mut self,
        node: &Node,
        path: &str,
        at: Pos,
        seen: &mut Vec<String>,
    ) -> Option<Value> {
        match &node.kind {
            Kind::Scalar { text, .. } => {
                if !is_reservation_id(text) && !is_private_pool_id(text) {
                    self.error(
                        node.start,
                        path,
                        format!("`{}` is not a capacity reservation id", shorten(text)),
                        "an AWS reservation id is `cr-` and 17 hex digits (e.g. `cr-0123456789abcdef0`; `aws ec2 describe-capacity-reservations` lists them), an Alibaba Cloud private pool id `eap-…` or `crp-…`, or name it by tags: `{reservation: {tags: {team: ml}}}`",
                    );
                    return None;
                }
                if seen.contains(text) {
                    self.error(
                        node.start,
                        path,
                        format!("reservation `{text}` is listed twice"),
                        "list each reservation once",
                    );
                    return None;
                }
                seen.push(text.clone());
                Some(Value::String(text.clone()))
            }
            Kind::Map(_) => {
                let m = self.object(node, path, at, RESERVATION_FIELDS, "a reservation", &[])?;
                if m.get("tags")
                    .and_then(Value::as_object)
                    .is_none_or(|t| t.is_empty())
                {
                    self.error(
                        node.start,
                        &join(path, "tags"),
                        "a reservation named by tags needs at least one tag",
                        "write `{reservation: {tags: {team: ml}}}`",
                    );
                    return None;
                }
                Some(Value::Object(m))
            }
            _ => {
                self.error(
                    node.start,
                    path,
                    format!("expected a reservation id or `{{tags: ...}}`, found {}", node.describe()),
                    "write `{reservation: cr-0123456789abcdef0}` or `{reservation: {tags: {team: ml}}}`",
                );
                None
            }
        }
    }

    /// A block's `start` (a real date) and `hours` (EC2's durations: 1-day
    /// steps up to 14 days, 7-day steps up to 182 days, per "Find and
    /// purchase Capacity Blocks",
    /// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html).
    fn block(&mut self, node: &Node, path: &str, m: Map<String, Value>) -> Option<Value> {
        let Kind::Map(entries) = &node.kind else {
            return None;
        };
        let at = |k: &str| entries.iter().find(|e| e.key == k).map(|e| e.value.start);
        let mut ok = true;
        if let (Some(start), Some(pos)) = (m.get("start").and_then(Value::as_str), at("start")) {
            let dated = start.len() == 10
                && gpuform_catalog::Day::parse_iso(start).is_some_and(|d| d.to_string() == start);
            if !dated {
                self.error(
                    pos,
                    &join(path, "start"),
                    format!("`{}` is not a date", shorten(start)),
                    "write the first day as `YYYY-MM-DD`, e.g. `start: 2026-12-10`",
                );
                ok = false;
            }
        }
        if let (Some(hours), Some(pos)) = (m.get("hours").and_then(Value::as_u64), at("hours")) {
            let valid = (hours <= 336 && hours % 24 == 0) || (hours <= 4368 && hours % 168 == 0);
            if !valid {
                let down = if hours <= 336 {
                    hours / 24 * 24
                } else {
                    (hours / 168 * 168).min(4368)
                };
                self.error(
                    pos,
                    &join(path, "hours"),
                    format!("a Capacity Block cannot last {hours} hours"),
                    format!(
                        "EC2 sells whole days up to 14 (24 to 336 hours in steps of 24) and whole weeks up to 26 (up to 4368 in steps of 168){}",
                        if down >= 24 { format!("; the nearest shorter is {down}") } else { String::new() }
                    ),
                );
                ok = false;
            }
        }
        if let (Some(count), Some(pos)) = (m.get("count").and_then(Value::as_u64), at("count")) {
            // "Each Capacity Block can have up to 64 instances"
            // (capacity-blocks-purchase.html).
            if !(1..=64).contains(&count) {
                self.error(
                    pos,
                    &join(path, "count"),
                    format!("a Capacity Block cannot hold {count} instances"),
                    "EC2 sells blocks of 1 to 64 instances",
                );
                ok = false;
            }
        }
        ok.then_some(Value::Object(m))
    }

    /// Tags of a cluster that may run on Tencent Cloud, against its naming
    /// rules (`gpuform_tencent::tags`, from its tag "Use Limits" page 651/13354).
    fn tencent_tags(&mut self, node: &Node, path: &str) -> bool {
        let Kind::Map(entries) = &node.kind else {
            return true; // the shape is reported by `tags`
        };
        let mut ok = true;
        for e in entries
            .iter()
            .filter(|e| !e.key.trim().is_empty() && !e.key.starts_with("gpuform:"))
        {
            let (value, at) = match &e.value.kind {
                _ if e.value.is_null() => (String::new(), e.key_pos),
                Kind::Scalar { text, .. } => (text.clone(), e.value.start),
                _ => continue, // reported by `tags`
            };
            let problem = match gpuform_tencent::tags::check_key(&e.key) {
                Err(p) => Some((e.key_pos, p)),
                Ok(()) => gpuform_tencent::tags::check_value(&value)
                    .err()
                    .map(|p| (at, p)),
            };
            if let Some((pos, p)) = problem {
                let message = format!("{} (this cluster may run on Tencent Cloud)", p.message);
                self.error(pos, &join(path, &e.key), message, p.hint);
                ok = false;
            }
        }
        ok
    }

    /// `[CLOUD or CLOUD/REGION, ...]` for `cloud: any`.
    fn candidates(&mut self, node: &Node, path: &str) -> Option<Value> {
        let Kind::Seq(items) = &node.kind else {
            self.error(
                node.start,
                path,
                format!("expected a list of candidates, found {}", node.describe()),
                "write e.g. `candidates: [aws/us-east-1, tencent]`",
            );
            return None;
        };
        let clouds = real_clouds();
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(text) = self.scalar_text(item, &p, "a candidate like `aws/us-east-1`") else {
                ok = false;
                continue;
            };
            let cloud = text.split('/').next().unwrap_or("");
            if !clouds.contains(&cloud) || text.split('/').count() > 2 || text.ends_with('/') {
                let hint = match suggest(cloud, clouds.iter().copied()) {
                    Some(s) => format!(
                        "did you mean `{s}`? Write `CLOUD` or `CLOUD/REGION` with a cloud among {}",
                        list(&clouds)
                    ),
                    None => format!(
                        "write `CLOUD` or `CLOUD/REGION` with a cloud among {}",
                        list(&clouds)
                    ),
                };
                self.error(
                    item.start,
                    &p,
                    format!("`{}` is not a candidate", shorten(&text)),
                    hint,
                );
                ok = false;
                continue;
            }
            out.push(Value::String(text));
        }
        ok.then_some(Value::Array(out))
    }

    fn bucket(&mut self, node: &Node, path: &str, at: Pos) -> Option<Value> {
        let obj = self.object(node, path, at, BUCKET_FIELDS, "a bucket", &[])?;
        let lifecycle = obj.get("lifecycle");
        let noncurrent = lifecycle.and_then(|l| l.get("expire_noncurrent_after_days"));
        let versioning = obj.get("versioning").and_then(Value::as_bool) == Some(true);
        if noncurrent.is_some() && !versioning {
            let at = match &node.kind {
                Kind::Map(entries) => entries
                    .iter()
                    .find(|e| e.key == "lifecycle")
                    .and_then(|e| match &e.value.kind {
                        Kind::Map(l) => l
                            .iter()
                            .find(|x| x.key == "expire_noncurrent_after_days")
                            .map(|x| x.key_pos),
                        _ => None,
                    })
                    .unwrap_or(at),
                _ => at,
            };
            self.error(
                at,
                &join(path, "lifecycle.expire_noncurrent_after_days"),
                "`expire_noncurrent_after_days` needs `versioning: true`: without versioning no object has noncurrent versions",
                "add `versioning: true` to the bucket, or remove the rule",
            );
            return None;
        }
        Some(Value::Object(obj))
    }

    fn lifecycle(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.object(node, path, node.start, LIFECYCLE_FIELDS, "`lifecycle`", &[])
            .map(Value::Object)
    }

    /// The names buckets get on their cloud, checked by that cloud's rules
    /// (`gpuform_provider::bucket_name`; the sandbox's own buckets follow
    /// AWS's, which it mirrors): a bad name is refused here, where it is
    /// written (or, when derived from `project`, at the bucket).
    fn bucket_names(&mut self, root: &Node) {
        let Kind::Map(entries) = &root.kind else {
            return;
        };
        let scalar = |n: &Node| match &n.kind {
            Kind::Scalar { text, .. } => Some(text.clone()),
            _ => None,
        };
        let project = entries
            .iter()
            .find(|e| e.key == "project")
            .and_then(|e| scalar(&e.value));
        let Some(Kind::Map(buckets)) = entries
            .iter()
            .find(|e| e.key == "buckets")
            .map(|e| &e.value.kind)
        else {
            return;
        };
        for b in buckets {
            let Kind::Map(fields) = &b.value.kind else {
                continue;
            };
            let field = |k: &str| fields.iter().find(|e| e.key == k);
            let Some(cloud_text) = field("cloud").and_then(|e| scalar(&e.value)) else {
                continue;
            };
            let cloud = match cloud_text.as_str() {
                "aws" | "sandbox" => gpuform_provider::Cloud::Aws,
                "alibaba" => gpuform_provider::Cloud::Alibaba,
                "tencent" => gpuform_provider::Cloud::Tencent,
                "huawei" => gpuform_provider::Cloud::Huawei,
                _ => continue, // reported by `cloud`
            };
            let path = format!("buckets.{}", b.key);
            let (name, at, name_path) = match field("name") {
                Some(e) => match scalar(&e.value) {
                    Some(n) if !n.trim().is_empty() => (n, e.value.start, join(&path, "name")),
                    _ => continue, // reported by `name`
                },
                None if cloud == gpuform_provider::Cloud::Tencent => {
                    self.error(
                        b.key_pos,
                        &path,
                        format!("bucket `{}` on Tencent COS needs a `name`", shorten(&b.key)),
                        "COS bucket names end with the account's APPID: write `name: NAME-APPID`; the APPID is the number on the console's Account Information page",
                    );
                    continue;
                }
                None => match &project {
                    Some(p) => (format!("{p}-{}", b.key), b.key_pos, path.clone()),
                    None => continue, // reported by `project`
                },
            };
            if let Err(e) = gpuform_provider::bucket_name::check(cloud, &name) {
                let derived = field("name").is_none();
                let message = if derived {
                    format!(
                        "bucket `{}` would be named `{}` (`<project>-<key>`), which is not valid: {}",
                        shorten(&b.key),
                        shorten(&name),
                        e.problem
                    )
                } else {
                    format!(
                        "bucket name `{}` is not valid: {}",
                        shorten(&name),
                        e.problem
                    )
                };
                let hint = format!(
                    "{}{} Rule: {} E.g. `name: {}`",
                    if derived {
                        "set `name:` explicitly. "
                    } else {
                        ""
                    },
                    match cloud {
                        gpuform_provider::Cloud::Aws if cloud_text == "sandbox" =>
                            "The sandbox mirrors AWS S3.",
                        gpuform_provider::Cloud::Aws => "On AWS S3 names are global.",
                        gpuform_provider::Cloud::Alibaba => "On Alibaba OSS names are global.",
                        gpuform_provider::Cloud::Tencent => "On Tencent COS names are per account.",
                        gpuform_provider::Cloud::Huawei => "On Huawei OBS names are global.",
                    },
                    e.rule,
                    e.example
                );
                self.error(at, &name_path, message, hint);
            }
        }
    }

    /// A scalar whose text passes `ok`; `what` says what is expected. These
    /// values end up in the boot scripts, so only safe characters pass.
    fn shaped(
        &mut self,
        node: &Node,
        path: &str,
        ok: fn(&str) -> bool,
        what: &str,
    ) -> Option<Value> {
        let text = self.scalar_text(node, path, what)?;
        if ok(&text) {
            return Some(Value::String(text));
        }
        self.error(
            node.start,
            path,
            format!("`{}` is not {what}", shorten(&text)),
            format!("write {what}"),
        );
        None
    }

    /// `mig: 3g.40gb` or a mixed list per GPU `[3g.40gb, 2g.20gb, ...]`.
    fn mig(&mut self, node: &Node, path: &str) -> Option<Value> {
        const WHAT: &str = "a MIG profile like `3g.40gb`";
        match &node.kind {
            Kind::Seq(items) => {
                if items.is_empty() {
                    self.error(
                        node.start,
                        path,
                        "the MIG layout is empty",
                        "list the profiles of one GPU, e.g. `mig: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]`, or remove `mig:`",
                    );
                    return None;
                }
                let mut out = Vec::new();
                let mut ok = true;
                for (i, item) in items.iter().enumerate() {
                    match self.shaped(item, &format!("{path}[{i}]"), is_mig_profile, WHAT) {
                        Some(v) => out.push(v),
                        None => ok = false,
                    }
                }
                ok.then_some(Value::Array(out))
            }
            _ => self.shaped(node, path, is_mig_profile, WHAT),
        }
    }

    fn driver(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.shaped(
            node,
            path,
            |t| t == "none" || is_version(t),
            "a driver version like `550` (NVIDIA branch) or `6.2` (ROCm), or `none`",
        )
    }

    fn local_nvme(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.shaped(
            node,
            path,
            |t| matches!(t, "none" | "true" | "false") || is_mount_path(t),
            "an absolute mount path like `/data` (letters, digits, `._-/`), `true` (/data) or `none`",
        )
    }

    fn kubernetes(&mut self, node: &Node, path: &str) -> Option<Value> {
        let obj = self.object(
            node,
            path,
            node.start,
            KUBERNETES_FIELDS,
            "`kubernetes`",
            &[],
        )?;
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
            let at = match &node.kind {
                Kind::Map(entries) => entries
                    .iter()
                    .find(|e| e.key == *key)
                    .map_or(node.start, |e| e.key_pos),
                _ => node.start,
            };
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

    fn kube_addons(&mut self, node: &Node, path: &str) -> Option<Value> {
        let Kind::Seq(items) = &node.kind else {
            self.error(
                node.start,
                path,
                format!("expected `addons` as a list, found {}", node.describe()),
                format!("write `addons: [{}]`", KUBE_ADDONS[0]),
            );
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.choice(item, &format!("{path}[{i}]"), KUBE_ADDONS, "add-on") {
                Some(v) if !out.contains(&v) => out.push(v),
                Some(_) => {}
                None => ok = false,
            }
        }
        ok.then_some(Value::Array(out))
    }

    fn disk(&mut self, node: &Node, path: &str) -> Option<Value> {
        let disk = self.object(node, path, node.start, DISK_FIELDS, "`disk`", &[])?;
        if disk.contains_key("data_type") && !disk.contains_key("data_gb") {
            let at = match &node.kind {
                Kind::Map(entries) => entries.iter().find(|e| e.key == "data_type"),
                _ => None,
            }
            .map_or(node.start, |e| e.key_pos);
            self.error(
                at,
                &join(path, "data_type"),
                "`data_type` without `data_gb`: there is no data volume to give a type",
                "add `data_gb: SIZE` for a data volume, or remove `data_type`",
            );
            return None;
        }
        Some(Value::Object(disk))
    }

    /// `disk.data_type`: a neutral volume type, the same disk on every cloud.
    /// A cloud's own name (`gp3`, `cloud_essd`, `CLOUD_PREMIUM`, `SSD`) is
    /// refused, never guessed at: the same word names different disks on
    /// different clouds.
    fn volume_type(&mut self, node: &Node, path: &str) -> Option<Value> {
        let names = VolumeType::NAMES.iter().copied();
        let text = self.scalar_text(node, path, "a volume type")?;
        if VolumeType::parse(&text).is_some() {
            return Some(Value::String(text));
        }
        let meaning = VolumeType::ALL
            .map(|t| format!("`{t}` ({})", t.describe()))
            .join(", ");
        let hint = match suggest(&text, names) {
            Some(s) => format!("did you mean `{s}`? gpuform's volume types are {meaning}"),
            None => format!(
                "gpuform's volume types are {meaning}, the same on every cloud; a cloud's own disk names are not accepted"
            ),
        };
        self.error(
            node.start,
            path,
            format!("unknown volume type `{}`", shorten(&text)),
            hint,
        );
        None
    }

    fn budget(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.object(node, path, node.start, BUDGET_FIELDS, "`budget`", &[])
            .map(Value::Object)
    }

    fn state(&mut self, node: &Node, path: &str) -> Option<Value> {
        let backend = match &node.kind {
            Kind::Map(entries) => entries.iter().find(|e| e.key == "backend"),
            _ => {
                self.error(
                    node.start,
                    path,
                    format!("expected `state` as a mapping, found {}", node.describe()),
                    "write `state: { backend: local }`",
                );
                return None;
            }
        };
        let Some(backend) = backend else {
            self.error(
                node.start,
                path,
                "`state` is missing the required key `backend`",
                format!("add `backend: ...`, one of {}", list(BACKENDS)),
            );
            return None;
        };
        let p = join(path, "backend");
        let name = self.choice(&backend.value, &p, BACKENDS, "state backend")?;
        let fields = match name.as_str() {
            Some("local") => STATE_LOCAL_FIELDS,
            Some("postgres") => STATE_POSTGRES_FIELDS,
            Some("s3") => STATE_S3_FIELDS,
            _ => return None,
        };
        self.object(node, path, node.start, fields, "`state`", &[])
            .map(Value::Object)
    }

    fn variables(&mut self, node: &Node, path: &str) -> Option<Value> {
        let Kind::Map(entries) = &node.kind else {
            self.error(
                node.start,
                path,
                format!(
                    "expected `variables` as a mapping, found {}",
                    node.describe()
                ),
                "write `variables:` then `NAME: { default: VALUE }` entries",
            );
            return None;
        };
        let mut out = Map::new();
        let mut ok = true;
        for e in entries {
            let p = join(path, &e.key);
            if !super::vars::valid_name(&e.key) {
                self.error(
                    e.key_pos,
                    &p,
                    format!("invalid variable name `{}`", shorten(&e.key)),
                    "variable names are letters, digits and `_`, starting with a letter or `_`",
                );
                ok = false;
                continue;
            }
            if e.value.is_null() {
                out.insert(e.key.clone(), Value::Object(Map::new()));
                continue;
            }
            match self.object(&e.value, &p, e.key_pos, VARIABLE_FIELDS, "a variable", &[]) {
                Some(v) => {
                    out.insert(e.key.clone(), Value::Object(v));
                }
                None => ok = false,
            }
        }
        ok.then_some(Value::Object(out))
    }

    fn ingress_list(&mut self, node: &Node, path: &str) -> Option<Value> {
        let Kind::Seq(items) = &node.kind else {
            self.error(
                node.start,
                path,
                format!(
                    "expected `ingress` as a list of rules, found {}",
                    node.describe()
                ),
                "write `- { ports: \"22\", cidr: 203.0.113.0/24 }` items",
            );
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            match self.object(item, &p, item.start, INGRESS_FIELDS, "an ingress rule", &[]) {
                Some(v) => out.push(Value::Object(v)),
                None => ok = false,
            }
        }
        ok.then_some(Value::Array(out))
    }

    // ----- scalars ---------------------------------------------------------

    /// Any scalar as a string.
    fn scalar_text(&mut self, node: &Node, path: &str, what: &str) -> Option<String> {
        match &node.kind {
            Kind::Scalar { text, .. } => Some(text.clone()),
            _ => {
                let last = path.rsplit('.').next().unwrap_or(path);
                self.error(
                    node.start,
                    path,
                    format!("expected {what}, found {}", node.describe()),
                    format!("write `{last}: VALUE` on one line"),
                );
                None
            }
        }
    }

    /// `true` or `false`, unquoted (or from a variable).
    fn boolean(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = path.rsplit('.').next().unwrap_or(path);
        if let Kind::Scalar {
            text,
            style,
            substituted,
        } = &node.kind
        {
            if *style == Style::Plain || *substituted {
                match text.trim() {
                    "true" => return Some(Value::Bool(true)),
                    "false" => return Some(Value::Bool(false)),
                    _ => {}
                }
            }
        }
        self.error(
            node.start,
            path,
            format!(
                "expected `true` or `false` for `{key}`, found {}",
                node.describe()
            ),
            format!("write `{key}: true` or `{key}: false`, without quotes"),
        );
        None
    }

    /// A size in GB > 0 (an estimate: fractions are fine).
    fn size_gb(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = path.rsplit('.').next().unwrap_or(path);
        let parsed = match &node.kind {
            Kind::Scalar {
                text,
                style,
                substituted,
            } if *style == Style::Plain || *substituted => {
                text.trim().parse::<f64>().ok().filter(|f| f.is_finite())
            }
            _ => None,
        };
        match parsed {
            Some(f) if f > 0.0 => serde_json::Number::from_f64(f).map(Value::Number),
            _ => {
                self.error(
                    node.start,
                    path,
                    format!(
                        "expected a size in GB greater than 0 for `{key}`, found {}",
                        node.describe()
                    ),
                    format!("write the data you expect to store, e.g. `{key}: 500`"),
                );
                None
            }
        }
    }

    fn string(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.scalar_text(node, path, "a string").map(Value::String)
    }

    fn nonempty(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a string")?;
        if text.trim().is_empty() {
            self.error(
                node.start,
                path,
                "expected a non-empty string",
                format!(
                    "give `{}` a value or remove the key",
                    path.rsplit('.').next().unwrap_or(path)
                ),
            );
            return None;
        }
        Some(Value::String(text))
    }

    /// A state URL: a spec is committed, so it must carry no password.
    fn state_url(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.nonempty(node, path)?;
        let url = text.as_str().unwrap_or_default();
        if crate::state::redact_url(url) != url {
            self.error(
                node.start,
                path,
                "the state URL holds a password; a spec is shared and committed, so it must not",
                "remove the password from the URL and set PGPASSWORD (or ~/.pgpass) where gpuform runs",
            );
            return None;
        }
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            self.error(
                node.start,
                path,
                format!("expected a postgres:// URL, found `{}`", shorten(url)),
                "write e.g. `url: postgres://gpuform@db.internal:5432/infra`",
            );
            return None;
        }
        Some(text)
    }

    fn s3_state_url(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.nonempty(node, path)?;
        let url = text.as_str().unwrap_or_default();
        if !url.starts_with("s3://") {
            self.error(
                node.start,
                path,
                format!("expected an s3:// URL, found `{}`", shorten(url)),
                "write e.g. `url: s3://team-state/gpuform?region=us-east-1`",
            );
            return None;
        }
        if crate::state::redact_url(url) != url || url.contains('@') {
            self.error(
                node.start,
                path,
                "the state URL holds credentials; a spec is shared and committed, so it must not",
                "remove them; gpuform reads AWS credentials from the AWS chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance role)",
            );
            return None;
        }
        if let Err(message) = crate::state::backend::S3Url::parse(url) {
            self.error(
                node.start,
                path,
                message,
                "write e.g. `url: s3://team-state/gpuform?region=us-east-1`",
            );
            return None;
        }
        Some(text)
    }

    fn project(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a project name")?;
        let valid = text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && text.len() <= 64;
        if text.is_empty() {
            self.error(
                node.start,
                path,
                "the project name is empty",
                "write e.g. `project: llm-research`; it tags every resource and names the state",
            );
            return None;
        }
        if !valid {
            self.error(
                node.start,
                path,
                format!("invalid project name `{}`", shorten(&text)),
                "use up to 64 letters, digits, `-`, `_` and `.`, starting with a letter or digit; it tags every resource and names the state file",
            );
            return None;
        }
        Some(Value::String(text))
    }

    /// Buckets live where their data is: `any` is not a place.
    fn bucket_cloud(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.choice(node, path, &bucket_clouds(), "cloud")
    }

    fn cloud(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.choice(node, path, CloudName::NAMES, "cloud")
    }

    fn choice(&mut self, node: &Node, path: &str, allowed: &[&str], what: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, &format!("a {what}"))?;
        if allowed.contains(&text.as_str()) {
            return Some(Value::String(text));
        }
        let hint = match suggest(&text, allowed.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? Expected one of {}", list(allowed)),
            None => format!("expected one of {}", list(allowed)),
        };
        self.error(
            node.start,
            path,
            format!("unknown {what} `{}`", shorten(&text)),
            hint,
        );
        None
    }

    /// An integer ≥ 1 (plain, or quoted only when it came from a variable).
    /// A duration such as `30m`, `1h`, `2d`.
    fn duration(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.shaped(
            node,
            path,
            |t| humantime::parse_duration(t.trim()).is_ok_and(|d| !d.is_zero()),
            "a duration like `30m`, `1h` or `2d`",
        )
    }

    fn count(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = path.rsplit('.').next().unwrap_or(path);
        let Kind::Scalar {
            text,
            style,
            substituted,
        } = &node.kind
        else {
            self.error(
                node.start,
                path,
                format!("expected a whole number ≥ 1, found {}", node.describe()),
                format!("write e.g. `{key}: 2`"),
            );
            return None;
        };
        if *style != Style::Plain && !substituted {
            if text.trim().parse::<i64>().is_ok() {
                self.error(
                    node.start,
                    path,
                    format!(
                        "expected a whole number ≥ 1, found the string \"{}\"",
                        shorten(text)
                    ),
                    format!("remove the quotes: `{key}: {}`", text.trim()),
                );
            } else {
                self.error(
                    node.start,
                    path,
                    format!("expected a whole number ≥ 1, found {}", node.describe()),
                    format!("write e.g. `{key}: 2`"),
                );
            }
            return None;
        }
        let t = text.trim();
        match t.parse::<i64>() {
            Ok(n) if n >= 1 && n <= u32::MAX as i64 => Some(Value::from(n)),
            Ok(n) if n < 1 => {
                self.error(
                    node.start,
                    path,
                    format!("`{key}` must be at least 1, found {n}"),
                    format!("write e.g. `{key}: 1`; remove the cluster to have none"),
                );
                None
            }
            Ok(n) => {
                self.error(
                    node.start,
                    path,
                    format!("`{key}` is too large: {n}"),
                    format!("the largest value is {}", u32::MAX),
                );
                None
            }
            Err(_) => {
                let found = if t.is_empty() {
                    "an empty value".to_string()
                } else {
                    format!("\"{}\"", shorten(t))
                };
                let hint = if t.parse::<f64>().is_ok() {
                    format!("`{key}` is a whole number, e.g. `{key}: 2`")
                } else {
                    format!("write a number, e.g. `{key}: 4`")
                };
                self.error(
                    node.start,
                    path,
                    format!("expected a whole number ≥ 1 for `{key}`, found {found}"),
                    hint,
                );
                None
            }
        }
    }

    /// A number > 0 (for money).
    fn positive(&mut self, node: &Node, path: &str) -> Option<Value> {
        let key = path.rsplit('.').next().unwrap_or(path);
        let parsed = match &node.kind {
            Kind::Scalar {
                text,
                style,
                substituted,
            } if *style == Style::Plain || *substituted => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && !text.trim().starts_with('.')),
            _ => None,
        };
        match parsed {
            Some(f) if f > 0.0 => serde_json::Number::from_f64(f).map(Value::Number),
            Some(f) => {
                self.error(
                    node.start,
                    path,
                    format!("`{key}` must be greater than 0, found {f}"),
                    "remove the key to set no limit",
                );
                None
            }
            None => {
                self.error(
                    node.start,
                    path,
                    format!(
                        "expected an amount in US dollars for `{key}`, found {}",
                        node.describe()
                    ),
                    format!("write e.g. `{key}: 250`"),
                );
                None
            }
        }
    }

    fn gpu(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a GPU as MODEL[:COUNT]")?;
        match GpuRequest::parse(&text) {
            Ok(g) => Some(Value::String(format!("{}:{}", g.model, g.count))),
            Err((m, h)) => {
                self.error(node.start, path, m, h);
                None
            }
        }
    }

    /// `days: [sat, sun]` of a maintenance window: each a day once.
    fn weekdays(&mut self, node: &Node, path: &str) -> Option<Value> {
        const DAYS: &[&str] = Weekday::NAMES;
        let Kind::Seq(items) = &node.kind else {
            let hint = match &node.kind {
                Kind::Scalar { text, .. } => format!("write a list: `days: [{}]`", shorten(text)),
                _ => "write e.g. `days: [sat, sun]`".to_string(),
            };
            self.error(
                node.start,
                path,
                format!(
                    "expected `days` as a list of days, found {}",
                    node.describe()
                ),
                hint,
            );
            return None;
        };
        if items.is_empty() {
            self.error(
                node.start,
                path,
                "`days` is empty: the window would never open",
                "list the days it opens on, e.g. `days: [sat, sun]`, or remove `days:` for every day",
            );
            return None;
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(day) = self.scalar_text(item, &p, "a day") else {
                ok = false;
                continue;
            };
            if !DAYS.contains(&day.as_str()) {
                let lower = day.trim().to_lowercase();
                let hint = match DAYS.iter().find(|d| lower.starts_with(*d)) {
                    Some(d) => {
                        format!("write `{d}`: days are their first three letters, lowercase")
                    }
                    None => format!("expected one of {}", list(DAYS)),
                };
                self.error(
                    item.start,
                    &p,
                    format!("unknown day `{}`", shorten(&day)),
                    hint,
                );
                ok = false;
                continue;
            }
            if let Some(first) = seen.get(&day) {
                self.error(
                    item.start,
                    &p,
                    format!("day `{day}` is listed twice (first at line {first})"),
                    "list each day once",
                );
                ok = false;
                continue;
            }
            seen.insert(day.clone(), item.start.line);
            out.push(Value::String(day));
        }
        ok.then_some(Value::Array(out))
    }

    fn zones(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.distinct_names(node, path, &ZONES)
    }

    /// `reads: [BUCKET, ...]`: bucket keys, each once (that they name a
    /// bucket is checked on the whole tree, by `bucket_reads`).
    fn reads(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.distinct_names(node, path, &READS)
    }

    /// A list of non-empty names, each once (`zones`, `reads`), in the
    /// words `list` gives its errors.
    fn distinct_names(&mut self, node: &Node, path: &str, list: &NameList) -> Option<Value> {
        let Kind::Seq(items) = &node.kind else {
            let hint = match &node.kind {
                Kind::Scalar { text, .. } => {
                    format!("write a list: `{}: [{}]`", list.key, shorten(text))
                }
                _ => list.example.to_string(),
            };
            self.error(
                node.start,
                path,
                format!(
                    "expected `{}` as {}, found {}",
                    list.key,
                    list.expected,
                    node.describe()
                ),
                hint,
            );
            return None;
        };
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let p = format!("{path}[{i}]");
            let Some(Value::String(name)) = self.nonempty(item, &p) else {
                ok = false;
                continue;
            };
            if let Some(first) = seen.get(&name) {
                self.error(
                    item.start,
                    &p,
                    format!(
                        "{} `{}` is listed twice (first at line {first})",
                        list.item,
                        shorten(&name)
                    ),
                    list.once,
                );
                ok = false;
                continue;
            }
            seen.insert(name.clone(), item.start.line);
            out.push(Value::String(name));
        }
        ok.then_some(Value::Array(out))
    }

    /// Every `clusters.X.reads` entry names a key of `buckets:`, reported
    /// where it is written with the closest key.
    fn bucket_reads(&mut self, root: &Node) {
        let Kind::Map(entries) = &root.kind else {
            return;
        };
        let section = |k: &str| {
            entries
                .iter()
                .find(|e| e.key == k)
                .and_then(|e| match &e.value.kind {
                    Kind::Map(m) => Some(m),
                    _ => None,
                })
        };
        let buckets: Vec<&str> = section("buckets")
            .map(|m| m.iter().map(|e| e.key.as_str()).collect())
            .unwrap_or_default();
        let Some(clusters) = section("clusters") else {
            return;
        };
        for c in clusters {
            let Kind::Map(fields) = &c.value.kind else {
                continue;
            };
            let Some(Kind::Seq(items)) = fields
                .iter()
                .find(|e| e.key == "reads")
                .map(|e| &e.value.kind)
            else {
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                let Kind::Scalar { text, .. } = &item.kind else {
                    continue; // reported by `reads`
                };
                if text.trim().is_empty() || buckets.contains(&text.as_str()) {
                    continue;
                }
                let hint = match suggest(text, buckets.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None if buckets.is_empty() => format!(
                        "the spec has no `buckets:`; declare it there (`buckets: {{ {}: {{ cloud: ..., region: ... }} }}`)",
                        shorten(text)
                    ),
                    None => format!(
                        "the buckets are {}; or declare `{}` under `buckets:`",
                        list(&buckets),
                        shorten(text)
                    ),
                };
                self.error(
                    item.start,
                    &format!("clusters.{}.reads[{i}]", c.key),
                    format!(
                        "cluster `{}` reads bucket `{}`, which is not in `buckets:`",
                        shorten(&c.key),
                        shorten(text)
                    ),
                    hint,
                );
            }
        }
    }

    /// `endpoints: { CLOUD: URL }`.
    fn endpoints(&mut self, node: &Node, path: &str) -> Option<Value> {
        let clouds = real_clouds();
        let Kind::Map(entries) = &node.kind else {
            self.error(
                node.start,
                path,
                format!(
                    "expected `endpoints` as a mapping, found {}",
                    node.describe()
                ),
                "write `endpoints: { aws: https://ec2.us-east-1.amazonaws.com }`",
            );
            return None;
        };
        let mut out = Map::new();
        let mut ok = true;
        for e in entries {
            let p = join(path, &e.key);
            if !clouds.contains(&e.key.as_str()) {
                let hint = match suggest(&e.key, clouds.iter().copied()) {
                    Some(s) => format!(
                        "did you mean `{s}`? Endpoints are per cloud: {}",
                        list(&clouds)
                    ),
                    None => format!("endpoints are per cloud: {}", list(&clouds)),
                };
                self.error(
                    e.key_pos,
                    &p,
                    format!("unknown cloud `{}` in `endpoints`", shorten(&e.key)),
                    hint,
                );
                ok = false;
                continue;
            }
            let Some(url) = self.scalar_text(&e.value, &p, "a URL") else {
                ok = false;
                continue;
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
                self.error(
                    e.value.start,
                    &p,
                    format!("`{}` is not an http(s) URL", shorten(&url)),
                    "write the endpoint's base URL, e.g. `https://ec2.us-east-1.amazonaws.com` or `http://127.0.0.1:5555`",
                );
                ok = false;
                continue;
            }
            out.insert(e.key.clone(), Value::String(url));
        }
        ok.then_some(Value::Object(out))
    }

    fn tags(&mut self, node: &Node, path: &str) -> Option<Value> {
        let Kind::Map(entries) = &node.kind else {
            self.error(
                node.start,
                path,
                format!("expected `tags` as a mapping, found {}", node.describe()),
                "write `tags: { team: research }`",
            );
            return None;
        };
        let mut out = Map::new();
        let mut ok = true;
        for e in entries {
            let p = join(path, &e.key);
            if e.key.trim().is_empty() {
                self.error(e.key_pos, &p, "empty tag key", "give the tag a name");
                ok = false;
                continue;
            }
            if e.key.starts_with("gpuform:") {
                self.error(
                    e.key_pos,
                    &p,
                    format!(
                        "tag `{}` uses the reserved prefix `gpuform:`",
                        shorten(&e.key)
                    ),
                    "gpuform sets `gpuform:*` tags itself to find what it owns; choose another key",
                );
                ok = false;
                continue;
            }
            let value = if e.value.is_null() {
                Some(Value::String(String::new()))
            } else {
                self.string(&e.value, &p)
            };
            match value {
                Some(v) => {
                    out.insert(e.key.clone(), v);
                }
                None => ok = false,
            }
        }
        ok.then_some(Value::Object(out))
    }

    fn cidr(&mut self, node: &Node, path: &str, allow_v6: bool) -> Option<Value> {
        let text = self.scalar_text(node, path, "a CIDR block")?;
        if let Err((m, h)) = check_cidr(&text, allow_v6) {
            self.error(node.start, path, m, h);
            return None;
        }
        if !allow_v6 {
            // A cluster network: the clouds accept /8 to /28 for a private network.
            let prefix: u32 = text
                .rsplit('/')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            if !(8..=28).contains(&prefix) {
                self.error(
                    node.start,
                    path,
                    format!(
                        "network `{text}` has prefix /{prefix}; a cluster network needs /8 to /28"
                    ),
                    "e.g. `cidr: 10.0.0.0/16`",
                );
                return None;
            }
        }
        Some(Value::String(text))
    }

    fn ports(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a port or port range")?;
        match check_ports(&text) {
            Ok(_) => Some(Value::String(text)),
            Err((m, h)) => {
                self.error(node.start, path, m, h);
                None
            }
        }
    }
}

/// Whether a `candidates:` list names Tencent Cloud.
/// AWS capacity reservation ids: `cr-` and 17 (older: 8) lowercase hex digits.
fn is_reservation_id(t: &str) -> bool {
    t.strip_prefix("cr-").is_some_and(|h| {
        (h.len() == 17 || h.len() == 8)
            && h.chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

/// Whether a `capacity` list names a spot market.
fn lists_spot(capacity: &Node) -> bool {
    matches!(&capacity.kind, Kind::Seq(items)
        if items.iter().any(|i| matches!(&i.kind, Kind::Scalar { text, .. } if text == "spot")))
}

/// Alibaba Cloud private pool ids: an elasticity assurance (`eap-`) or a
/// capacity reservation (`crp-`), then lowercase letters and digits
/// (`eap-bp67acfmxazb4ph3****`, ECS API reference).
fn is_private_pool_id(t: &str) -> bool {
    ["eap-", "crp-"].iter().any(|p| {
        t.strip_prefix(p).is_some_and(|rest| {
            (8..=40).contains(&rest.len())
                && rest
                    .chars()
                    .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        })
    })
}

/// The reservation ids a `capacity` list names, where they are written.
fn reservation_ids(capacity: &Node) -> Vec<(Pos, String)> {
    let Kind::Seq(items) = &capacity.kind else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| match &i.kind {
            Kind::Map(entries) => entries.iter().find(|e| e.key == "reservation"),
            _ => None,
        })
        .filter_map(|e| match &e.value.kind {
            Kind::Scalar { text, .. } => Some((e.value.start, text.clone())),
            _ => None,
        })
        .collect()
}

/// Whether a `capacity` list names a Capacity Block.
fn lists_blocks(capacity: &Node) -> bool {
    matches!(&capacity.kind, Kind::Seq(items) if items.iter().any(|i|
        matches!(&i.kind, Kind::Map(entries) if entries.iter().any(|e| e.key == "block"))))
}

/// Whether a `capacity` list names a reservation or a block.
fn lists_bounded(capacity: &Node) -> bool {
    matches!(&capacity.kind, Kind::Seq(items) if items.iter().any(|i| matches!(i.kind, Kind::Map(_))))
}

fn lists_tencent(candidates: &Node) -> bool {
    let Kind::Seq(items) = &candidates.kind else {
        return false;
    };
    items.iter().any(|i| match &i.kind {
        Kind::Scalar { text, .. } => text.split('/').next() == Some("tencent"),
        _ => false,
    })
}

fn is_mig_profile(t: &str) -> bool {
    // `<n>g.<m>gb`, optionally `+me` (media extensions).
    let core = t.strip_suffix("+me").unwrap_or(t);
    let Some((g, mem)) = core.split_once("g.") else {
        return false;
    };
    let Some(m) = mem.strip_suffix("gb") else {
        return false;
    };
    !g.is_empty()
        && g.chars().all(|c| c.is_ascii_digit())
        && !m.is_empty()
        && m.chars().all(|c| c.is_ascii_digit())
}

fn is_version(t: &str) -> bool {
    !t.is_empty()
        && t.split('.').count() <= 3
        && t.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

fn is_mount_path(t: &str) -> bool {
    t.len() > 1
        && t.starts_with('/')
        && !t.contains("//")
        && !t.split('/').any(|p| p == ".." || p == ".")
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
}

fn is_env_name(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_endpoint(t: &str) -> bool {
    let Some((host, port)) = t.rsplit_once(':') else {
        return false;
    };
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        && port.parse::<u16>().is_ok_and(|p| p > 0)
}

fn is_ca_hash(t: &str) -> bool {
    t.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
}

fn is_k8s_version(t: &str) -> bool {
    t.strip_prefix('v').is_some_and(|r| {
        r.chars().next().is_some_and(|c| c.is_ascii_digit())
            && r.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'))
    })
}

fn is_taint(t: &str) -> bool {
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

/// The clouds a bucket may be on: every cloud but `any`.
fn bucket_clouds() -> Vec<&'static str> {
    let any = CloudName::Any.as_str();
    CloudName::NAMES
        .iter()
        .copied()
        .filter(|c| *c != any)
        .collect()
}

/// The clouds gpuform calls (`candidates`, `endpoints`): every cloud but
/// `any` and the sandbox.
fn real_clouds() -> Vec<&'static str> {
    let sandbox = CloudName::Sandbox.as_str();
    bucket_clouds()
        .into_iter()
        .filter(|c| *c != sandbox)
        .collect()
}

fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn example_for(key: &str) -> String {
    let example = match key {
        "cloud" => return format!(" (one of {})", bucket_clouds().join(", ")),
        "project" => " (e.g. `project: llm-research`)",
        "region" => " (e.g. `region: us-east-1`)",
        "nodes" => " (e.g. `nodes: 2`)",
        "gpu" => " (e.g. `gpu: A100-80GB:8` or `gpu: T4`)",
        "ports" => " (e.g. `ports: \"22\"` or `ports: 8000-8100`)",
        "cidr" => " (e.g. `cidr: 0.0.0.0/0`)",
        "duration" => " (e.g. `duration: 4h`)",
        _ => "",
    };
    example.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(
            suggest("zone", CLUSTER_FIELDS.iter().map(|f| f.name)).as_deref(),
            Some("zones")
        );
        assert_eq!(
            suggest("regoin", CLUSTER_FIELDS.iter().map(|f| f.name)).as_deref(),
            Some("region")
        );
        assert_eq!(
            suggest("gpus", CLUSTER_FIELDS.iter().map(|f| f.name)).as_deref(),
            Some("gpu")
        );
        assert_eq!(
            suggest("azure", ["aws", "alibaba", "tencent", "huawei", "sandbox"]),
            None
        );
        assert_eq!(suggest("AWS", ["aws", "alibaba"]).as_deref(), Some("aws"));
    }

    #[test]
    fn names() {
        assert!(valid_resource_name("trainer-2"));
        for bad in ["", "2x", "Trainer", "a_b", "a.b", "-a", "a b"] {
            assert!(!valid_resource_name(bad), "{bad}");
        }
        assert_eq!(fix_name("My_Trainer"), "my-trainer");
    }

    #[test]
    fn cidrs() {
        assert!(check_cidr("10.0.0.0/16", false).is_ok());
        assert!(check_cidr("0.0.0.0/0", true).is_ok());
        assert!(check_cidr("::/0", true).is_ok());
        assert!(check_cidr("2001:db8::/32", true).is_ok());
        assert!(check_cidr("::/0", false).is_err());
        assert!(check_cidr("10.0.0.0", false).is_err());
        assert!(check_cidr("10.0.0.0/33", false).is_err());
        assert!(check_cidr("10.0.0.256/16", false).is_err());
        assert!(check_cidr("10.0.0.0/+8", false).is_err());
        let (_, hint) = check_cidr("10.0.1.5/16", false).unwrap_err();
        assert!(hint.contains("10.0.0.0/16"), "{hint}");
    }

    #[test]
    fn ports() {
        assert_eq!(check_ports("22"), Ok((22, 22)));
        assert_eq!(check_ports("8000-8100"), Ok((8000, 8100)));
        for bad in ["0", "65536", "a", "", "10-", "-5", "100-10", "1-2-3", "+22"] {
            assert!(check_ports(bad).is_err(), "{bad}");
        }
    }

    /// The key lists above must be exactly the properties of the schema.
    #[test]
    fn allowed_keys_match_schema() {
        let schema = super::super::schema::schema_json();
        let defs = &schema["definitions"];
        let props = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v["properties"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            k.sort();
            k
        };
        let sorted = |keys: &[&str]| -> Vec<String> {
            let mut k: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
            k.sort();
            k
        };
        let names = |fields: &[Field], only_required: bool| -> Vec<String> {
            let mut k: Vec<String> = fields
                .iter()
                .filter(|f| f.required || !only_required)
                .map(|f| f.name.to_string())
                .collect();
            k.sort();
            k
        };
        let required = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v["required"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            k.sort();
            k
        };
        let state_local = &defs["StateSettings"]["oneOf"][0];
        for (schema_obj, fields) in [
            (&schema, ROOT_FIELDS),
            (&defs["Cluster"], CLUSTER_FIELDS),
            (&defs["Disk"], DISK_FIELDS),
            (&defs["Ingress"], INGRESS_FIELDS),
            (&defs["Bucket"], BUCKET_FIELDS),
            (&defs["Lifecycle"], LIFECYCLE_FIELDS),
            (&defs["SpotPolicy"], SPOT_POLICY_FIELDS),
            (&defs["SpotFallback"], SPOT_FALLBACK_FIELDS),
            (&defs["MaintenanceWindow"], MAINTENANCE_WINDOW_FIELDS),
            (&defs["Budget"], BUDGET_FIELDS),
            (&defs["Variable"], VARIABLE_FIELDS),
            (state_local, STATE_LOCAL_FIELDS),
            (&defs["StateSettings"]["oneOf"][1], STATE_POSTGRES_FIELDS),
            (&defs["StateSettings"]["oneOf"][2], STATE_S3_FIELDS),
        ] {
            assert_eq!(props(schema_obj), names(fields, false));
            assert_eq!(required(schema_obj), names(fields, true), "{schema_obj}");
        }
        let enum_of = |name: &str| -> Vec<String> {
            let d = &defs[name];
            let mut out: Vec<String> = Vec::new();
            if let Some(e) = d["enum"].as_array() {
                out.extend(e.iter().filter_map(|v| v.as_str().map(str::to_string)));
            }
            if let Some(one) = d["oneOf"].as_array() {
                for o in one {
                    if let Some(e) = o["enum"].as_array() {
                        out.extend(e.iter().filter_map(|v| v.as_str().map(str::to_string)));
                    }
                }
            }
            out.sort();
            out
        };
        assert_eq!(enum_of("PricingModelSchema"), sorted(PRICING));
        assert_eq!(enum_of("InterconnectReq"), sorted(InterconnectReq::NAMES));
        assert_eq!(enum_of("Fabric"), sorted(Fabric::NAMES));
        assert_eq!(enum_of("Weekday"), sorted(Weekday::NAMES));
        assert_eq!(enum_of("StorageClassSchema"), sorted(StorageClass::NAMES));
        assert_eq!(enum_of("VolumeTypeSchema"), sorted(VolumeType::NAMES));
        assert_eq!(enum_of("CloudName"), sorted(CloudName::NAMES));
        assert_eq!(enum_of("KubeAddon"), sorted(KUBE_ADDONS));
        let mut sources = vec![RESERVATION, BLOCK];
        sources.extend(CapacitySource::MARKETS);
        assert_eq!(sources, CapacitySource::NAMES);
        assert_eq!(
            KUBE_ADDONS,
            [crate::bootstrap::manifests::KUBEFLOW_TRAINING_OPERATOR]
        );
    }
}
