//! `gpuform migrate bucket.KEY --to CLOUD[/REGION] FILE`: move a bucket to
//! another cloud (or region) as a text edit of the spec, like a cluster.
//!
//! A bucket is data, and gpuform never copies data: the edit makes the next
//! apply create the bucket empty on the new cloud (the new one first, then
//! the old one deleted — refused while it holds objects unless
//! `force_destroy: true`). So the migration says so, checks the name by the
//! new cloud's rules (COS: `<name>-<APPID>`, which gpuform cannot guess:
//! `--bucket-name`), prices the storage before and after, flags the clusters
//! that now read it across regions, and prints the copy command: rclone
//! (<https://rclone.org/s3/>), whose `s3` backend speaks all four services
//! (`provider=AWS`, `Alibaba`, `TencentCOS`, `HuaweiOBS`).

use super::lockin::spec_cloud;
use crate::spec::edit::BlockEditor;
use crate::spec::{self, CloudName, LoadedSpec, Vars};
use gpuform_catalog::storage::{object_service, StoragePrices};
use gpuform_catalog::transfer::{TransferKind, TransferPrices};
use gpuform_catalog::Catalog;
use gpuform_provider::UserError;
use gpuform_provider::{bucket_name, Cloud};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BucketMigration {
    /// The key under `buckets:`.
    pub bucket: String,
    pub from_cloud: Cloud,
    pub from_region: String,
    pub to_cloud: Cloud,
    pub to_region: String,
    /// The bucket's name on the old cloud and on the new one.
    pub from_name: String,
    pub to_name: String,
    pub storage_class: String,
    /// Storage a month (USD) before and after, from `size_gb` and the
    /// catalog; `None` with the reason in `caveats` when unknown.
    pub monthly_usd_before: Option<f64>,
    pub monthly_usd_after: Option<f64>,
    /// Each change made to the spec, in words.
    pub changes: Vec<String>,
    /// What happens to the data and what needs a look.
    pub caveats: Vec<String>,
    /// How to copy the data: rclone remotes and the sync command.
    pub copy_commands: Vec<String>,
    #[serde(skip)]
    pub new_text: String,
    pub diff: String,
}

fn err(message: impl Into<String>, hint: impl Into<String>) -> UserError {
    UserError {
        message: message.into(),
        hint: hint.into(),
    }
}

/// The object-storage service of a cloud, for messages.
fn service(cloud: Cloud) -> &'static str {
    object_service(cloud).product
}

/// The rclone `s3` remote for a cloud's object storage in a region (named
/// `<cloud>-<service>-<region>`, so the two sides never clash): its name and the `rclone config create` line (credentials are the user's to
/// add: gpuform never prints them).
fn rclone_remote(cloud: Cloud, region: &str) -> (String, String) {
    let name = format!("{cloud}-{}-{region}", service(cloud).to_ascii_lowercase());
    let endpoint = (object_service(cloud).host)(region);
    let settings = match cloud {
        Cloud::Aws => format!("provider=AWS env_auth=true region={region}"),
        Cloud::Alibaba => format!("provider=Alibaba endpoint={endpoint}"),
        Cloud::Tencent => format!("provider=TencentCOS endpoint={endpoint}"),
        Cloud::Huawei => format!("provider=HuaweiOBS region={region} endpoint={endpoint}"),
    };
    let line = format!("rclone config create {name} s3 {settings}");
    (name, line)
}

/// Moves bucket `key` of `loaded` to `to` (and `region`; absent, the region
/// of a cluster on `to` that reads it, else an error asking for one).
/// `new_name` replaces the bucket's name (needed for COS's APPID suffix).
#[allow(clippy::too_many_arguments)]
pub fn migrate_bucket(
    loaded: &LoadedSpec,
    vars: &Vars,
    catalog: &Catalog,
    key: &str,
    to: Cloud,
    region: Option<&str>,
    new_name: Option<&str>,
    cny_per_usd: f64,
) -> Result<BucketMigration, UserError> {
    let spec = &loaded.spec;
    let b = find(loaded, key)?;
    let from = spec_cloud(b.cloud).unwrap_or(Cloud::Aws);
    let readers: Vec<&String> = spec
        .clusters
        .iter()
        .filter(|(_, c)| c.reads.iter().any(|r| r == key))
        .map(|(n, _)| n)
        .collect();
    let to_region = target_region(spec, catalog, key, to, region, &readers)?;
    if b.cloud != CloudName::Sandbox && from == to && to_region == b.region {
        return Err(err(
            format!("bucket `{key}` is already on {to} {}", b.region),
            format!("name another cloud, or another region: --to {to}/REGION"),
        ));
    }
    let (from_name, to_name) = names(spec, b, key, to, new_name)?;
    let (new_text, changes) = edit(loaded, vars, b, key, to, &to_region, (&from_name, &to_name))?;
    let class = b.storage_class.as_str().to_string();
    let mut caveats = class_caveats(b, (from, to), &to_region, (&from_name, &to_name));
    // Storage a month, before and after.
    let monthly = |cloud: Cloud, region: &str| -> Result<f64, String> {
        let size = b
            .size_gb
            .ok_or_else(|| "no `size_gb` estimate in the spec".to_string())?;
        let p = StoragePrices::builtin()
            .price(cloud, region, &class)
            .ok_or_else(|| {
                format!("no {class} storage price for {cloud} {region} in the catalog")
            })?;
        Ok(size * p.usd(cny_per_usd))
    };
    let before = monthly(from, &b.region);
    let after = monthly(to, &to_region);
    for (when, r) in [("before", &before), ("after", &after)] {
        if let Err(why) = r {
            caveats.push(format!("storage cost {when} the move unknown: {why}"));
        }
    }
    caveats.extend(reader_caveats(spec, &readers, to, &to_region, cny_per_usd));
    let (src, src_create) = rclone_remote(from, &b.region);
    let (dst, dst_create) = rclone_remote(to, &to_region);
    let copy_commands = vec![
        src_create,
        dst_create,
        format!("rclone sync {src}:{from_name} {dst}:{to_name} --checksum --progress"),
    ];
    let diff = spec::format_diff(&loaded.file_label(), &loaded.text, &new_text);
    Ok(BucketMigration {
        bucket: key.to_string(),
        from_cloud: from,
        from_region: b.region.clone(),
        to_cloud: to,
        to_region,
        from_name,
        to_name,
        storage_class: class,
        monthly_usd_before: before.ok(),
        monthly_usd_after: after.ok(),
        changes,
        caveats,
        copy_commands,
        new_text,
        diff,
    })
}

/// The spec's bucket `key`.
fn find<'s>(loaded: &'s LoadedSpec, key: &str) -> Result<&'s spec::Bucket, UserError> {
    let spec = &loaded.spec;
    spec.buckets.get(key).ok_or_else(|| {
        let names: Vec<&str> = spec.buckets.keys().map(String::as_str).collect();
        err(
            format!("{} has no bucket `{key}`", loaded.file_label()),
            if names.is_empty() {
                "the spec has no `buckets:`".to_string()
            } else {
                format!("buckets in the spec: {}", names.join(", "))
            },
        )
    })
}

/// `region`, else the region of a cluster on `to` that reads the bucket.
fn target_region(
    spec: &spec::Spec,
    catalog: &Catalog,
    key: &str,
    to: Cloud,
    region: Option<&str>,
    readers: &[&String],
) -> Result<String, UserError> {
    Ok(match region {
        Some(r) => r.to_string(),
        None => spec
            .clusters
            .iter()
            .filter(|(n, c)| readers.contains(n) && spec_cloud(c.cloud) == Some(to))
            .map(|(_, c)| c.region.clone())
            .find(|r| !r.is_empty())
            .ok_or_else(|| {
                err(
                    format!("which {to} region should bucket `{key}` move to?"),
                    format!(
                        "write --to {to}/REGION ({to} regions: {})",
                        catalog
                            .regions(to)
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
    })
}

/// The bucket's name now and on `to`: `new_name`, else the same, checked
/// against `to`'s naming rule.
fn names(
    spec: &spec::Spec,
    b: &spec::Bucket,
    key: &str,
    to: Cloud,
    new_name: Option<&str>,
) -> Result<(String, String), UserError> {
    let from_name = b
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-{key}", spec.project));
    let to_name = new_name.map(str::to_string).unwrap_or(from_name.clone());
    if let Err(e) = bucket_name::check(to, &to_name) {
        let hint = if to == Cloud::Tencent && new_name.is_none() {
            format!(
                "COS bucket names end with the account's APPID (the number on the console's Account Information page): add --bucket-name {}-APPID",
                to_name
            )
        } else {
            format!("choose a valid name with --bucket-name, e.g. {}", e.example)
        };
        return Err(err(
            format!(
                "bucket `{key}` cannot keep the name `{to_name}` on {to} {}: {}. Rule: {}",
                service(to),
                e.problem,
                e.rule
            ),
            hint,
        ));
    }

    Ok((from_name, to_name))
}

/// The spec's text with the bucket moved, proven to load; each change in words.
fn edit(
    loaded: &LoadedSpec,
    vars: &Vars,
    b: &spec::Bucket,
    key: &str,
    to: Cloud,
    to_region: &str,
    (from_name, to_name): (&str, &str),
) -> Result<(String, Vec<String>), UserError> {
    let base = format!("buckets.{key}");
    let mut ed = BlockEditor::new(loaded, &base)?;
    let mut changes = Vec::new();
    ed.replace_value("cloud", to.as_str())?;
    changes.push(format!("cloud: {} → {to}", b.cloud.as_str()));
    ed.replace_value("region", to_region)?;
    changes.push(format!("region: {} → {to_region}", b.region));
    if to_name != from_name {
        if ed.has("name") {
            ed.replace_value("name", to_name)?;
        } else {
            ed.insert_after(&["region", "cloud"], "name", to_name)?;
        }
        changes.push(format!("name: {from_name} → {to_name}"));
    }
    let new_text = ed.finish();
    // Prove the result loads (validation checks the name again).
    spec::load_str(&loaded.file_label(), &new_text, vars).map_err(|d| {
        err(
            format!("the migrated spec does not load:\n{d}"),
            "fix what it says in the spec, then run migrate again",
        )
    })?;
    // Restore the original text in the diagnostics registry for later messages.
    let _ = spec::load_str(&loaded.file_label(), &loaded.text, vars);

    Ok((new_text, changes))
}

/// What moving the data and the storage class mean.
fn class_caveats(
    b: &spec::Bucket,
    (from, to): (Cloud, Cloud),
    to_region: &str,
    (from_name, to_name): (&str, &str),
) -> Vec<String> {
    let class = b.storage_class.as_str();
    let mut caveats = vec![
        format!(
            "data does not move: the next apply creates `{to_name}` empty on {to} {} {to_region}, then deletes `{from_name}` on {from} {}",
            service(to),
            service(from)
        ),
        format!(
            "a plan refuses to delete `{from_name}` while it holds objects (unless `force_destroy: true`); to keep the data, copy it (below) before setting `force_destroy`, or first add the new bucket under another key, copy, then remove the old one"
        ),
    ];
    if b.storage_class != spec::StorageClass::Standard {
        caveats.push(format!(
            "storage_class: {class} maps to {}'s own class ({})",
            service(to),
            object_service(to).class_name(b.storage_class)
        ));
    }
    if b.storage_class == spec::StorageClass::Archive || b.lifecycle.is_some() {
        caveats.push(
            "archived objects must be restored before they can be read and copied".to_string(),
        );
    }
    caveats
}

/// The clusters that read the bucket: where they are after the move.
fn reader_caveats(
    spec: &spec::Spec,
    readers: &[&String],
    to: Cloud,
    to_region: &str,
    cny_per_usd: f64,
) -> Vec<String> {
    let mut caveats = Vec::new();
    for name in readers {
        let c = &spec.clusters[*name];
        let Some(cloud) = spec_cloud(c.cloud) else {
            caveats.push(format!(
                "cluster `{name}` reads it from wherever `cloud: any` places it: `gpuform plan` flags a read across regions"
            ));
            continue;
        };
        if cloud == to && c.region == to_region {
            caveats.push(format!(
                "cluster `{name}` ({cloud}/{}) reads it in its own region after the move",
                c.region
            ));
            continue;
        }
        let kind = if cloud == to {
            TransferKind::InterRegion
        } else {
            TransferKind::Internet
        };
        let price = TransferPrices::builtin()
            .price(to, to_region, kind)
            .map(|p| format!("${:.4}/GB", p.usd(cny_per_usd)))
            .unwrap_or_else(|| "price unknown".to_string());
        caveats.push(format!(
            "cluster `{name}` ({cloud}/{}) reads it across {} after the move: {price} ({})",
            c.region,
            if cloud == to { "regions" } else { "clouds" },
            kind.as_str()
        ));
    }
    caveats
}

/// The bucket migration in words.
pub fn render(m: &BucketMigration) -> String {
    let usd = crate::views::usd;
    let mut out = String::new();
    out.push_str(&m.diff);
    if !m.diff.ends_with('\n') {
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&format!(
        "Bucket `{}`: {} {} {} → {} {} {} (`{}` → `{}`)\n",
        m.bucket,
        m.from_cloud,
        service(m.from_cloud),
        m.from_region,
        m.to_cloud,
        service(m.to_cloud),
        m.to_region,
        m.from_name,
        m.to_name
    ));
    match (m.monthly_usd_before, m.monthly_usd_after) {
        (Some(b), Some(a)) => {
            let d = a - b;
            out.push_str(&format!(
                "Storage ({}): {}/month → {}/month ({}{}/month)\n",
                m.storage_class,
                usd(b),
                usd(a),
                if d >= 0.0 { "+" } else { "" },
                usd(d)
            ));
        }
        (b, a) => out.push_str(&format!(
            "Storage ({}): {} → {} (delta unknown)\n",
            m.storage_class,
            b.map_or("unknown".to_string(), |v| format!("{}/month", usd(v))),
            a.map_or("unknown".to_string(), |v| format!("{}/month", usd(v)))
        )),
    }
    out.push_str("Changes:\n");
    for c in &m.changes {
        out.push_str(&format!("  - {c}\n"));
    }
    out.push_str("The data:\n");
    for c in &m.caveats {
        out.push_str(&format!("  - {c}\n"));
    }
    out.push_str(
        "Copy it with rclone (https://rclone.org/s3/: one `s3` remote per side; add each side's access keys with `rclone config update`, gpuform never prints them):\n",
    );
    for c in &m.copy_commands {
        out.push_str(&format!("  {c}\n"));
    }
    out
}
