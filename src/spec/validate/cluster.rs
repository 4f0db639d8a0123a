//! A cluster: the rules between its keys (what `cloud` allows, what a spot
//! setting needs), and its values beyond one scalar: `candidates`, `zones`,
//! `reads`, `mig`, `driver`, `local_nvme`, `disk` and a maintenance
//! window's `days`.

use super::super::model::{CloudName, SpecNames, VolumeType};
use super::super::window::Weekday;
use super::super::yaml::{shorten, Kind, Node, Pos};
use super::capacity::{lists_bounded, lists_spot};
use super::{fields, join, list, real_clouds, suggest, Validator};
use gpuform_catalog::PricingModel;
use serde_json::Value;
use std::collections::HashMap;

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

impl Validator {
    pub(super) fn cluster(&mut self, node: &Node, path: &str, at: Pos) -> Option<Value> {
        let map = self.object(node, path, at, &fields::CLUSTER);
        // `region`, `candidates` and `strategy` depend on `cloud`; checked on
        // the tree so that they are reported with the cluster's other errors.
        let Some(cloud_text) = node.entry("cloud").and_then(|e| e.value.text()) else {
            return map.map(Value::Object);
        };
        if self.cluster_rules(node, path, at, cloud_text) {
            map.map(Value::Object)
        } else {
            None
        }
    }

    /// The rules between a cluster's keys, given its `cloud` as written.
    fn cluster_rules(&mut self, node: &Node, path: &str, at: Pos, cloud_text: &str) -> bool {
        let any = cloud_text == CloudName::Any.as_str();
        let mut ok = self.region_rule(node, path, at, any);
        ok &= self.any_only_keys(node, path, any);
        ok &= self.spot_keys(node, path);
        // `capacity` says how each node is paid for: with `pricing` too,
        // one of them would be ignored.
        if let (Some(c), Some(p)) = (node.entry("capacity"), node.entry("pricing")) {
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
        if let Some(e) = node.entry("capacity").filter(|e| lists_bounded(&e.value)) {
            ok &= self.capacity_cloud(e, path, cloud_text, any);
        }
        // Tencent refuses a tag that breaks its naming rules at the first
        // create (CreateVpc): report it here, where it is written.
        let tencent = CloudName::Tencent.as_str();
        let may_run_on_tencent = cloud_text == tencent
            || (any
                && node.entry("candidates").is_none_or(|e| {
                    e.value.items().iter().any(|i| {
                        i.text()
                            .is_some_and(|t| t.split('/').next() == Some(tencent))
                    })
                }));
        if let Some(e) = node.entry("tags").filter(|_| may_run_on_tencent) {
            ok &= self.tencent_tags(&e.value, &join(path, "tags"));
        }
        ok
    }

    /// `region` is required, except with `cloud: any`, which refuses it.
    fn region_rule(&mut self, node: &Node, path: &str, at: Pos, any: bool) -> bool {
        match node.entry("region") {
            Some(e) if !any && e.value.is_null() => {
                self.error(
                    e.key_pos,
                    &join(path, "region"),
                    "`region` needs a value",
                    "write `region: ...` with a value",
                );
                false
            }
            None if !any => {
                self.error(
                    at,
                    path,
                    "a cluster is missing the required key `region`",
                    "add `region: ...`, or write `cloud: any` to let gpuform choose",
                );
                false
            }
            Some(e) if any => {
                self.error(
                    e.key_pos,
                    &join(path, "region"),
                    "`region` cannot be set with `cloud: any`: the strategy chooses it",
                    "list where the cluster may run as `candidates: [aws/us-east-1, tencent]`",
                );
                false
            }
            _ => true,
        }
    }

    /// `candidates` and `strategy` only with `cloud: any`; `zones` never with it.
    fn any_only_keys(&mut self, node: &Node, path: &str, any: bool) -> bool {
        let mut ok = true;
        for key in ["candidates", "strategy", "zones"] {
            let wrong = if key == "zones" { any } else { !any };
            if let Some(e) = node.entry(key).filter(|_| wrong) {
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
        ok
    }

    /// A spot cap or policy means nothing on another pricing model
    /// (on-demand by default); a cap also applies to a `capacity` list's spot.
    fn spot_keys(&mut self, node: &Node, path: &str) -> bool {
        let mut ok = true;
        let pricing = node.entry("pricing").and_then(|e| e.value.text());
        for key in ["spot_max_price", "spot_policy"] {
            let Some(e) = node.entry(key) else { continue };
            let spot_capacity = key == "spot_max_price"
                && node.entry("capacity").is_some_and(|e| lists_spot(&e.value));
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
        ok
    }

    /// `[CLOUD or CLOUD/REGION, ...]` for `cloud: any`.
    pub(super) fn candidates(&mut self, node: &Node, path: &str) -> Option<Value> {
        let items = self.expect(
            node.seq(),
            node,
            path,
            "a list of candidates",
            "write e.g. `candidates: [aws/us-east-1, tencent]`",
        )?;
        let clouds = real_clouds();
        self.each_item(items, path, |v, item, p| {
            let text = v.scalar_text(item, p, "a candidate like `aws/us-east-1`")?;
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
                v.error(
                    item.start,
                    p,
                    format!("`{}` is not a candidate", shorten(&text)),
                    hint,
                );
                return None;
            }
            Some(Value::String(text))
        })
        .map(Value::Array)
    }

    pub(super) fn zones(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.distinct_names(node, path, &ZONES)
    }

    /// `reads: [BUCKET, ...]`: bucket keys, each once (that they name a
    /// bucket is checked on the whole tree, by `bucket_reads`).
    pub(super) fn reads(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.distinct_names(node, path, &READS)
    }

    /// A list of non-empty names, each once (`zones`, `reads`), in the
    /// words `list` gives its errors.
    fn distinct_names(&mut self, node: &Node, path: &str, list: &NameList) -> Option<Value> {
        let hint = match node.text() {
            Some(text) => format!("write a list: `{}: [{}]`", list.key, shorten(text)),
            None => list.example.to_string(),
        };
        let items = self.expect(
            node.seq(),
            node,
            path,
            &format!("`{}` as {}", list.key, list.expected),
            hint,
        )?;
        let mut seen: HashMap<String, usize> = HashMap::new();
        self.each_item(items, path, |v, item, p| {
            let Some(Value::String(name)) = v.nonempty(item, p) else {
                return None;
            };
            if let Some(first) = seen.get(&name) {
                v.error(
                    item.start,
                    p,
                    format!(
                        "{} `{}` is listed twice (first at line {first})",
                        list.item,
                        shorten(&name)
                    ),
                    list.once,
                );
                return None;
            }
            seen.insert(name.clone(), item.start.line);
            Some(Value::String(name))
        })
        .map(Value::Array)
    }

    /// `days: [sat, sun]` of a maintenance window: each a day once.
    pub(super) fn weekdays(&mut self, node: &Node, path: &str) -> Option<Value> {
        let days = Weekday::NAMES;
        let hint = match node.text() {
            Some(text) => format!("write a list: `days: [{}]`", shorten(text)),
            None => "write e.g. `days: [sat, sun]`".to_string(),
        };
        let items = self.expect(node.seq(), node, path, "`days` as a list of days", hint)?;
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
        self.each_item(items, path, |v, item, p| {
            let day = v.scalar_text(item, p, "a day")?;
            if !days.contains(&day.as_str()) {
                let lower = day.trim().to_lowercase();
                let hint = match days.iter().find(|d| lower.starts_with(*d)) {
                    Some(d) => {
                        format!("write `{d}`: days are their first three letters, lowercase")
                    }
                    None => format!("expected one of {}", list(days)),
                };
                v.error(
                    item.start,
                    p,
                    format!("unknown day `{}`", shorten(&day)),
                    hint,
                );
                return None;
            }
            if let Some(first) = seen.get(&day) {
                v.error(
                    item.start,
                    p,
                    format!("day `{day}` is listed twice (first at line {first})"),
                    "list each day once",
                );
                return None;
            }
            seen.insert(day.clone(), item.start.line);
            Some(Value::String(day))
        })
        .map(Value::Array)
    }

    /// `mig: 3g.40gb` or a mixed list per GPU `[3g.40gb, 2g.20gb, ...]`.
    pub(super) fn mig(&mut self, node: &Node, path: &str) -> Option<Value> {
        const WHAT: &str = "a MIG profile like `3g.40gb`";
        let Kind::Seq(items) = &node.kind else {
            return self.shaped(node, path, is_mig_profile, WHAT);
        };
        if items.is_empty() {
            self.error(
                node.start,
                path,
                "the MIG layout is empty",
                "list the profiles of one GPU, e.g. `mig: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]`, or remove `mig:`",
            );
            return None;
        }
        self.each_item(items, path, |v, item, p| {
            v.shaped(item, p, is_mig_profile, WHAT)
        })
        .map(Value::Array)
    }

    /// `pricing:`, one of the catalog's pricing models.
    pub(super) fn pricing(&mut self, node: &Node, path: &str) -> Option<Value> {
        let models = PricingModel::ALL.map(PricingModel::as_str);
        self.choice(node, path, &models, "pricing model")
    }

    pub(super) fn driver(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.shaped(
            node,
            path,
            |t| t == "none" || is_version(t),
            "a driver version like `550` (NVIDIA branch) or `6.2` (ROCm), or `none`",
        )
    }

    pub(super) fn local_nvme(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.shaped(
            node,
            path,
            |t| matches!(t, "none" | "true" | "false") || is_mount_path(t),
            "an absolute mount path like `/data` (letters, digits, `._-/`), `true` (/data) or `none`",
        )
    }

    pub(super) fn disk(&mut self, node: &Node, path: &str) -> Option<Value> {
        let disk = self.object(node, path, node.start, &fields::DISK)?;
        if disk.contains_key("data_type") && !disk.contains_key("data_gb") {
            let at = node.entry("data_type").map_or(node.start, |e| e.key_pos);
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
    pub(super) fn volume_type(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a volume type")?;
        if VolumeType::parse(&text).is_some() {
            return Some(Value::String(text));
        }
        let meaning = VolumeType::ALL
            .map(|t| format!("`{t}` ({})", t.describe()))
            .join(", ");
        let hint = match suggest(&text, VolumeType::names()) {
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
