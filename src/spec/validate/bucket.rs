//! Buckets: their own rules, the names they get on their cloud, and the
//! clusters' `reads` of them.

use super::super::model::CloudName;
use super::super::yaml::{shorten, Entry, Node, Pos};
use super::{fields, join, list, parse_cloud, suggest, Validator};
use gpuform_provider::Cloud;
use serde_json::Value;

/// Whose bucket-name rules a bucket on `cloud` follows (the sandbox's own
/// buckets follow AWS's, which it mirrors); `None` for `any`.
fn name_rules(cloud: CloudName) -> Option<Cloud> {
    match cloud {
        CloudName::Aws | CloudName::Sandbox => Some(Cloud::Aws),
        CloudName::Alibaba => Some(Cloud::Alibaba),
        CloudName::Tencent => Some(Cloud::Tencent),
        CloudName::Huawei => Some(Cloud::Huawei),
        CloudName::Any => None,
    }
}

/// A bucket's name and where to report it: written, or `<project>-<key>`.
struct BucketName {
    name: String,
    at: Pos,
    path: String,
    derived: bool,
}

impl Validator {
    pub(super) fn bucket(&mut self, node: &Node, path: &str, at: Pos) -> Option<Value> {
        let obj = self.object(node, path, at, &fields::BUCKET)?;
        let lifecycle = obj.get("lifecycle");
        let noncurrent = lifecycle.and_then(|l| l.get("expire_noncurrent_after_days"));
        let versioning = obj.get("versioning").and_then(Value::as_bool) == Some(true);
        if noncurrent.is_some() && !versioning {
            let at = node
                .entry("lifecycle")
                .and_then(|e| e.value.entry("expire_noncurrent_after_days"))
                .map_or(at, |x| x.key_pos);
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

    /// Buckets live where their data is: `any` is not a place.
    pub(super) fn bucket_cloud(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.choice(node, path, &super::bucket_clouds(), "cloud")
    }

    /// The names buckets get on their cloud, checked by that cloud's rules
    /// (`gpuform_provider::bucket_name`; the sandbox's own buckets follow
    /// AWS's, which it mirrors): a bad name is refused here, where it is
    /// written (or, when derived from `project`, at the bucket).
    pub(super) fn bucket_names(&mut self, root: &Node) {
        let project = root.entry("project").and_then(|e| e.value.text());
        let Some(buckets) = root.entry("buckets") else {
            return;
        };
        for b in buckets.value.entries() {
            let Some(cloud_text) = b.value.entry("cloud").and_then(|e| e.value.text()) else {
                continue;
            };
            let Some(cloud) = parse_cloud(cloud_text).and_then(name_rules) else {
                continue; // reported by `cloud`
            };
            let Some(name) = self.bucket_name(b, cloud, project) else {
                continue;
            };
            if let Err(e) = gpuform_provider::bucket_name::check(cloud, &name.name) {
                let message = if name.derived {
                    format!(
                        "bucket `{}` would be named `{}` (`<project>-<key>`), which is not valid: {}",
                        shorten(&b.key),
                        shorten(&name.name),
                        e.problem
                    )
                } else {
                    format!(
                        "bucket name `{}` is not valid: {}",
                        shorten(&name.name),
                        e.problem
                    )
                };
                let hint = format!(
                    "{}{} Rule: {} E.g. `name: {}`",
                    if name.derived {
                        "set `name:` explicitly. "
                    } else {
                        ""
                    },
                    match cloud {
                        Cloud::Aws if cloud_text == CloudName::Sandbox.as_str() =>
                            "The sandbox mirrors AWS S3.",
                        Cloud::Aws => "On AWS S3 names are global.",
                        Cloud::Alibaba => "On Alibaba OSS names are global.",
                        Cloud::Tencent => "On Tencent COS names are per account.",
                        Cloud::Huawei => "On Huawei OBS names are global.",
                    },
                    e.rule,
                    e.example
                );
                self.error(name.at, &name.path, message, hint);
            }
        }
    }

    /// The name bucket `b` gets on `cloud`; `None` when there is none to
    /// check (reported elsewhere, or here: Tencent needs one written).
    fn bucket_name(
        &mut self,
        b: &Entry,
        cloud: Cloud,
        project: Option<&str>,
    ) -> Option<BucketName> {
        let path = format!("buckets.{}", b.key);
        match b.value.entry("name") {
            Some(e) => match e.value.text() {
                Some(n) if !n.trim().is_empty() => Some(BucketName {
                    name: n.to_string(),
                    at: e.value.start,
                    path: join(&path, "name"),
                    derived: false,
                }),
                _ => None, // reported by `name`
            },
            None if cloud == Cloud::Tencent => {
                self.error(
                    b.key_pos,
                    &path,
                    format!("bucket `{}` on Tencent COS needs a `name`", shorten(&b.key)),
                    "COS bucket names end with the account's APPID: write `name: NAME-APPID`; the APPID is the number on the console's Account Information page",
                );
                None
            }
            // Without a project, reported by `project`.
            None => project.map(|p| BucketName {
                name: format!("{p}-{}", b.key),
                at: b.key_pos,
                path,
                derived: true,
            }),
        }
    }

    /// Every `clusters.X.reads` entry names a key of `buckets:`, reported
    /// where it is written with the closest key.
    pub(super) fn bucket_reads(&mut self, root: &Node) {
        let buckets: Vec<&str> = root
            .entry("buckets")
            .map(|e| e.value.entries().iter().map(|b| b.key.as_str()).collect())
            .unwrap_or_default();
        let Some(clusters) = root.entry("clusters") else {
            return;
        };
        for c in clusters.value.entries() {
            let Some(reads) = c.value.entry("reads") else {
                continue;
            };
            for (i, item) in reads.value.items().iter().enumerate() {
                let Some(text) = item.text() else {
                    continue; // reported by `reads`
                };
                if text.trim().is_empty() || buckets.contains(&text) {
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
}
