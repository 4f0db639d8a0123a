//! `gpuform import` of buckets (`--bucket NAME`, and the buckets `--tag`
//! and `--from-audit` take along): the region's buckets as
//! `Provider::list_all_buckets` lists them for `audit`, each chosen one
//! read whole by name, written under the spec's `buckets:` in its neutral
//! words ([`crate::spec::edit::add_buckets`]) and recorded at the address
//! resolve gives it (`bucket.KEY`). Its tagging is a [`TagStep`] like an
//! instance's, so [`super::run_import`] journals it the same way.
//!
//! What the spec cannot say of a bucket is kept as the cloud has it and
//! said: a public ACL or no public access block (the spec always blocks),
//! no default encryption on S3 (the spec cannot ask for none there), a
//! class gpuform does not make, expiry of old versions without versioning,
//! and lifecycle rules that are not gpuform's (`other_lifecycle_rules`,
//! which no update touches).

use super::{owned_elsewhere, quote, refuse, tags_line, ImportPlan, ImportRequest, TagStep};
use crate::address::{Address, Target};
use crate::engine::EngineError;
use crate::plan::diff::{actual_attrs, changed_keys};
use crate::resolve::Desired;
use crate::state::document::Reported;
use crate::state::{Record, StateDoc};
use gpuform_catalog::Cloud;
use gpuform_provider::attr;
use gpuform_provider::bucket::{OTHER_LIFECYCLE_RULES, SIZE_BYTES};
use gpuform_provider::{
    BucketLifecycle, ObservedResource, OwnershipTags, Provider, ResourceKind, Scope, StorageClass,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A bucket the import writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedBucket {
    /// Its key under `buckets:`.
    pub key: String,
    /// Its name on the cloud (its id).
    pub name: String,
    pub provider: Target,
    pub region: String,
    /// Its lines in the spec, as written.
    pub yaml: String,
}

/// A chosen bucket, read whole, with the key it gets in the spec.
pub(super) struct Chosen {
    pub key: String,
    pub observed: ObservedResource,
}

/// The buckets of the region the selection names, read whole; refuses a
/// name that is not there, one another gpuform state owns, and one the
/// spec has already. Those this state records go to `plan.already`.
pub(super) async fn pick(
    req: &ImportRequest<'_>,
    doc: &StateDoc,
    provider: &dyn Provider,
    scope: &Scope,
    plan: &mut ImportPlan,
) -> Result<Vec<Chosen>, EngineError> {
    let sel = &req.selection;
    if sel.buckets.is_empty() && sel.tags.is_empty() && !sel.unmanaged {
        return Ok(Vec::new());
    }
    let listed = provider
        .list_all_buckets(scope)
        .await
        .map_err(|error| EngineError::Provider {
            context: format!(
                "listing the buckets of {} {} to import from them",
                req.provider, req.region
            ),
            error,
        })?;
    for name in &sel.buckets {
        if !listed.iter().any(|b| &b.id == name) {
            return Err(refuse(
                format!(
                    "there is no bucket `{name}` in {} {} that these credentials can see",
                    req.provider, req.region
                ),
                format!(
                    "check the name and the region (a bucket lives in one region, and a name taken by another account is not yours to import): `gpuform audit --cloud {} --region {}` lists the buckets there",
                    req.provider.cloud_flag(),
                    req.region
                ),
            ));
        }
    }
    let recorded = super::recorded_ids(doc);
    let in_spec = spec_bucket_names(req);
    let mut names = Vec::new();
    for b in &listed {
        let by_name = sel.buckets.contains(&b.id);
        let tags = user_tags(b);
        let by_tag = !sel.tags.is_empty() && sel.tags.iter().all(|(k, v)| tags.get(k) == Some(v));
        let unmanaged = sel.unmanaged && b.ownership.is_none();
        if !(by_name || by_tag || unmanaged) {
            continue;
        }
        if let Some(address) = recorded.get(b.id.as_str()) {
            plan.already.push(format!("{} is {address}", b.id));
            continue;
        }
        if let Some(own) = b.ownership.as_ref().filter(|o| o.lineage != doc.lineage) {
            if by_name {
                return Err(owned_elsewhere(
                    "bucket",
                    &b.id,
                    &own.project,
                    Some(own),
                    doc,
                ));
            }
            plan.notes.push(format!(
                "bucket {} is left out: gpuform project `{}` manages it",
                b.id, own.project
            ));
            continue;
        }
        if let Some(key) = in_spec.get(&b.id) {
            return Err(refuse(
                format!(
                    "bucket {} is already in the spec {} as `buckets.{key}`",
                    b.id,
                    req.spec_path.display()
                ),
                "`gpuform apply` adopts it there when it is empty and untagged; or remove `buckets.{key}` from the spec, then import it",
            ));
        }
        names.push(b.id.clone());
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let got = provider
        .read(scope, ResourceKind::Bucket, &names)
        .await
        .map_err(|error| EngineError::Provider {
            context: format!(
                "reading the buckets to import in {} {}",
                req.provider, req.region
            ),
            error,
        })?;
    let mut taken: BTreeSet<String> = req
        .spec
        .map(|l| l.spec.buckets.keys().cloned().collect())
        .unwrap_or_default();
    let cloud = target_cloud(req);
    let mut chosen = Vec::new();
    for name in names {
        let Some(observed) = got.iter().find(|o| o.id == name).cloned() else {
            return Err(refuse(
                format!(
                    "bucket {name} is gone from {} {} (it was listed a moment ago)",
                    req.provider, req.region
                ),
                "run import again",
            ));
        };
        // A tag put on between the listing and the read.
        if let Some(own) = observed
            .ownership
            .as_ref()
            .filter(|o| o.lineage != doc.lineage)
        {
            return Err(owned_elsewhere(
                "bucket",
                &name,
                &own.project,
                Some(own),
                doc,
            ));
        }
        let key = unique(bucket_key(&doc.project, &name, cloud), &mut taken);
        chosen.push(Chosen { key, observed });
    }
    Ok(chosen)
}

/// Each bucket name the spec has (as resolve names it), with its key.
fn spec_bucket_names(req: &ImportRequest<'_>) -> BTreeMap<String, String> {
    let Some(l) = req.spec else {
        return BTreeMap::new();
    };
    l.spec
        .buckets
        .iter()
        .map(|(key, b)| {
            let name = b
                .name
                .clone()
                .unwrap_or_else(|| format!("{}-{key}", l.spec.project));
            (name, key.clone())
        })
        .collect()
}

fn target_cloud(req: &ImportRequest<'_>) -> Option<Cloud> {
    (!req.provider.sandbox).then_some(req.provider.cloud)
}

/// A resource's user tags as the cloud reports them, values as text.
pub(super) fn user_tags(o: &ObservedResource) -> BTreeMap<String, String> {
    o.attrs
        .get(attr::TAGS)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The key a bucket gets under `buckets:`: what follows `<project>-` when
/// its name is the one gpuform would give it, else its name in the key's
/// alphabet (a COS name without its `-APPID`).
fn bucket_key(project: &str, name: &str, cloud: Option<Cloud>) -> String {
    if cloud != Some(Cloud::Tencent) {
        if let Some(rest) = name.strip_prefix(&format!("{project}-")) {
            if super::valid_cluster_name(rest) {
                return rest.to_string();
            }
        }
    }
    let mut base = name;
    if cloud == Some(Cloud::Tencent) {
        if let Some((head, appid)) = name.rsplit_once('-') {
            if !appid.is_empty() && appid.chars().all(|c| c.is_ascii_digit()) {
                base = head;
            }
        }
    }
    let mut key: String = base
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    while key.contains("--") {
        key = key.replace("--", "-");
    }
    let key = key.trim_matches('-').to_string();
    if key.starts_with(|c: char| c.is_ascii_lowercase()) {
        key
    } else {
        format!("bucket-{key}").trim_end_matches('-').to_string()
    }
}

/// `key`, or `key-2`, `key-3`... when the spec or another import has it.
fn unique(key: String, taken: &mut BTreeSet<String>) -> String {
    let mut out = key.clone();
    let mut n = 2;
    while taken.contains(&out) {
        out = format!("{key}-{n}");
        n += 1;
    }
    taken.insert(out.clone());
    out
}

/// Each bucket's lines for `buckets:`, from what the cloud shows; `notes`
/// gets what the spec cannot say.
pub(super) fn blocks(
    req: &ImportRequest<'_>,
    project: &str,
    chosen: &[Chosen],
    notes: &mut Vec<String>,
) -> Vec<Vec<String>> {
    let sandbox = req.provider.sandbox;
    let cloud = target_cloud(req);
    chosen
        .iter()
        .map(|c| {
            let o = &c.observed;
            let address = Address::of_bucket(&c.key);
            let flag = |k: &str| o.attrs.get(k).and_then(Value::as_bool);
            let mut lines = vec![
                format!(
                    "# imported by `gpuform import` from {} {}",
                    req.provider, req.region
                ),
                format!("{}:", c.key),
                format!(
                    "  cloud: {}",
                    if sandbox {
                        "sandbox"
                    } else {
                        cloud.map_or("aws", Cloud::as_str)
                    }
                ),
                format!("  region: {}", req.region),
            ];
            if cloud == Some(Cloud::Tencent) || o.id != format!("{project}-{}", c.key) {
                lines.push(format!("  name: {}", quote(&o.id)));
            }
            match o.attrs.get(attr::STORAGE_CLASS).and_then(Value::as_str) {
                None => {}
                Some(raw) => match StorageClass::parse(raw) {
                    Some(StorageClass::Standard) => {}
                    Some(class) => lines.push(format!("  storage_class: {}", class.as_str())),
                    None => notes.push(format!(
                        "{address} ({}): its storage class `{raw}` is not one the spec can say (standard, infrequent, archive); written as standard and kept as it is",
                        o.id
                    )),
                },
            }
            let versioning = flag(attr::VERSIONING) == Some(true);
            if versioning {
                lines.push("  versioning: true".to_string());
            }
            // S3 encrypts every object whatever its settings say: the spec
            // cannot ask for none there, so an unset default is kept.
            let aws = cloud == Some(Cloud::Aws);
            if flag(attr::ENCRYPTION) == Some(false) && !aws {
                lines.push("  encryption: false".to_string());
            }
            let lifecycle = BucketLifecycle::parse(o.attrs.get(attr::LIFECYCLE)).unwrap_or_default();
            let mut rules = Vec::new();
            if let Some(d) = lifecycle.archive_after_days {
                rules.push(format!("archive_after_days: {d}"));
            }
            if let Some(d) = lifecycle.expire_noncurrent_after_days {
                // The spec asks for versioning with it; without, it is kept.
                if versioning {
                    rules.push(format!("expire_noncurrent_after_days: {d}"));
                }
            }
            if !rules.is_empty() {
                lines.push(format!("  lifecycle: {{{}}}", rules.join(", ")));
            }
            if let Some(n) = o
                .attrs
                .get(OTHER_LIFECYCLE_RULES)
                .and_then(Value::as_u64)
                .filter(|n| *n > 0)
            {
                notes.push(format!(
                    "{address} ({}): {n} lifecycle rule(s) that are not gpuform's stay as they are; gpuform changes only its own rules",
                    o.id
                ));
            }
            if let Some(bytes) = o.attrs.get(SIZE_BYTES).and_then(Value::as_u64) {
                // GiB, as `audit` prices it.
                let gb = bytes.div_ceil(1 << 30).max(1);
                lines.push(format!("  size_gb: {gb}"));
            }
            if flag(attr::FORCE_DESTROY) == Some(true) {
                lines.push("  force_destroy: true".to_string());
            }
            lines.extend(tags_line(&user_tags(o)));
            lines
        })
        .collect()
}

/// Records each bucket at `bucket.KEY` with the attributes resolve derives
/// (what differs on the cloud is kept and noted), and plans its tagging.
pub(super) fn record(
    req: &ImportRequest<'_>,
    doc: &StateDoc,
    chosen: &[Chosen],
    blocks: &[Vec<String>],
    desired: &Desired,
    plan: &mut ImportPlan,
) -> Result<(), EngineError> {
    for (c, block) in chosen.iter().zip(blocks) {
        let address = Address::of_bucket(&c.key);
        let Some(d) = desired.get(&address) else {
            return Err(EngineError::Internal(format!(
                "import: the spec as written has no {address}"
            )));
        };
        let o = &c.observed;
        let token = super::import_token(&o.id);
        let mut record = Record {
            kind: ResourceKind::Bucket,
            provider: req.provider,
            region: d.region.clone(),
            id: o.id.clone(),
            attrs: d.attrs.clone(),
            deps: d.deps.clone(),
            token: token.clone(),
            reported: Reported::of(o),
            kept: Vec::new(),
        };
        let differs = changed_keys(&actual_attrs(&record, Some(o)), &d.attrs);
        for k in &differs {
            plan.notes.push(kept_note(&address, o, k, d.attrs.get(k)));
        }
        record.kept = differs;
        plan.tags.push(TagStep {
            address: address.clone(),
            kind: ResourceKind::Bucket,
            id: o.id.clone(),
            provider: req.provider,
            region: d.region.clone(),
            ownership: OwnershipTags {
                project: doc.project.clone(),
                address: address.clone(),
                token,
                lineage: doc.lineage.clone(),
                workspace: doc.workspace.clone(),
            },
        });
        plan.records.insert(address, record);
        plan.buckets.push(ImportedBucket {
            key: c.key.clone(),
            name: o.id.clone(),
            provider: req.provider,
            region: req.region.clone(),
            yaml: block.join("\n"),
        });
    }
    Ok(())
}

/// What the cloud keeps that the spec says otherwise, in a bucket's words.
fn kept_note(address: &str, o: &ObservedResource, key: &str, spec: Option<&Value>) -> String {
    match key {
        attr::PUBLIC_ACCESS_BLOCKED => format!(
            "{address} ({}): public access is not blocked on the cloud (a public ACL or policy, or no public access block), which the spec cannot say; kept as it is, and gpuform leaves it alone until the spec asks for something else",
            o.id
        ),
        attr::ENCRYPTION => format!(
            "{address} ({}): the bucket has no default encryption set (S3 encrypts every object with SSE-S3 anyway); kept as it is until the spec asks for something else",
            o.id
        ),
        _ => super::kept_note(address, &o.id, key, o.attrs.get(key), spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_spec_alphabet() {
        assert_eq!(bucket_key("shop", "shop-data", Some(Cloud::Aws)), "data");
        assert_eq!(
            bucket_key("shop", "Team.Data_2024", Some(Cloud::Aws)),
            "team-data-2024"
        );
        assert_eq!(bucket_key("shop", "42-logs", None), "bucket-42-logs");
        assert_eq!(
            bucket_key("shop", "shop-data-1250000000", Some(Cloud::Tencent)),
            "shop-data"
        );
        let mut taken = BTreeSet::from(["data".to_string()]);
        assert_eq!(unique("data".into(), &mut taken), "data-2");
        assert_eq!(unique("data".into(), &mut taken), "data-3");
    }
}
