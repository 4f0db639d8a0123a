//! `gpuform migrate CLUSTER --to CLOUD[/REGION] FILE`: re-target one
//! cluster to another cloud as a text edit of the spec, so that comments and
//! layout survive, then prove the result loads and resolves.
//!
//! The edit touches only the cluster's own lines: `cloud:` and `region:`
//! values (at the positions [`LoadedSpec::locate`] gives), `zones:` (mapped
//! to the zones the catalog names for the new instance type, or dropped),
//! and, when the target has no exact equivalent, the neutral constraints the
//! nearest one cannot meet (`gpu:` count, `nodes:`, `interconnect:`,
//! `fabric:`). Escape hatches are replaced: a raw `instance_type:` is removed
//! (gpuform picks the equivalent), a raw image id becomes the logical default.

// `map_or(true, …)` keeps the workspace MSRV (1.80; `is_none_or` is 1.82).
#![allow(clippy::unnecessary_map_or)]

use super::lockin::{find_equivalent, is_raw_image, spec_cloud, Equivalent, Requirement};
use crate::resolve::{resolve, Desired, ResolveOptions};
use crate::spec::edit::BlockEditor;
use crate::spec::{self, CloudName, Cluster, LoadedSpec, Vars};
use crate::views::usd;
use gpuform_catalog::HOURS_PER_MONTH;
use gpuform_catalog::{Catalog, Interconnect};
use gpuform_provider::UserError;
use gpuform_provider::{attr, Cloud, ResourceKind};
use serde::Serialize;

/// The image a raw image id is replaced with (the spec's default).
const LOGICAL_IMAGE: &str = "ubuntu-22.04-cuda";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Migration {
    pub cluster: String,
    pub from_cloud: Option<Cloud>,
    pub from_region: String,
    pub to_cloud: Cloud,
    pub to_region: String,
    /// What the cluster runs on now (when its spec resolves), e.g. `p4de.24xlarge`.
    pub from_instance_type: Option<String>,
    /// What the re-targeted spec resolves to.
    pub to_instance_type: String,
    pub equivalent: Equivalent,
    /// The cluster per hour before and after (USD), when prices are known.
    pub hourly_before: Option<f64>,
    pub hourly_after: Option<f64>,
    /// Each change made to the spec, in words.
    pub changes: Vec<String>,
    /// What does not carry over, or needs a look.
    pub caveats: Vec<String>,
    /// The re-targeted spec text.
    #[serde(skip)]
    pub new_text: String,
    /// Unified diff old → new.
    pub diff: String,
}

impl Migration {
    pub fn hourly_delta(&self) -> Option<f64> {
        Some(self.hourly_after? - self.hourly_before?)
    }
}

fn err(message: impl Into<String>, hint: impl Into<String>) -> UserError {
    UserError::new(message, hint)
}

/// Re-targets `cluster` of `loaded` to `to` (and `region`, else the cheapest
/// region of `to` offering the equivalent). `vars` are those `loaded` was
/// loaded with (the result is re-loaded with them).
pub fn migrate(
    loaded: &LoadedSpec,
    vars: &Vars,
    catalog: &Catalog,
    cluster: &str,
    to: Cloud,
    region: Option<&str>,
    cny_per_usd: f64,
) -> Result<Migration, UserError> {
    let c = movable(loaded, cluster, to, region)?;
    let from_cloud = spec_cloud(c.cloud);
    let (req, eq) = equivalent(catalog, c, cluster, to, region, cny_per_usd)?;
    let mut e = Edit {
        ed: BlockEditor::new(loaded, &format!("clusters.{cluster}"))?,
        changes: Vec::new(),
        caveats: Vec::new(),
    };
    e.place(c, to, region, &eq)?;
    e.relax(c, &req, &eq, to)?;
    e.drop_escape_hatches(c, from_cloud, to, &eq)?;
    let Edit {
        ed,
        changes,
        mut caveats,
    } = e;
    let new_text = ed.finish();
    let (after, before) = prove(loaded, vars, catalog, &new_text, cny_per_usd)?;
    let (to_type, hourly_after) = cluster_cost(&after, cluster);
    let to_type = to_type.unwrap_or_else(|| eq.instance_type.clone());
    let (from_type, hourly_before) = match &before {
        Some(d) => cluster_cost(d, cluster),
        None => (None, None),
    };

    if !eq.exact {
        if let Some(d) = &eq.difference {
            caveats.push(format!(
                "no exact equivalent of {} on {to}: {to_type} differs: {d}",
                req.describe()
            ));
        }
    }
    caveats.extend(what_does_not_carry_over(
        loaded,
        catalog,
        cluster,
        from_cloud,
        to,
        &eq,
        &to_type,
        &req,
        cny_per_usd,
    ));

    let diff = spec::format_diff(&loaded.file_label(), &loaded.text, &new_text);
    Ok(Migration {
        cluster: cluster.to_string(),
        from_cloud,
        from_region: c.region.clone(),
        to_cloud: to,
        to_region: eq.region.clone(),
        from_instance_type: from_type,
        to_instance_type: to_type,
        equivalent: eq,
        hourly_before,
        hourly_after,
        changes,
        caveats,
        new_text,
        diff,
    })
}

/// The cluster, unless it runs on `to` (and `region`) already.
fn movable<'s>(
    loaded: &'s LoadedSpec,
    cluster: &str,
    to: Cloud,
    region: Option<&str>,
) -> Result<&'s Cluster, UserError> {
    let c = loaded.spec.clusters.get(cluster).ok_or_else(|| {
        let names: Vec<&str> = loaded.spec.clusters.keys().map(String::as_str).collect();
        err(
            format!("{} has no cluster `{cluster}`", loaded.file_label()),
            format!("clusters in the spec: {}", names.join(", ")),
        )
    })?;
    if c.cloud != CloudName::Any
        && c.cloud != CloudName::Sandbox
        && spec_cloud(c.cloud) == Some(to)
        && region.map_or(true, |r| r == c.region)
    {
        return Err(err(
            format!("cluster `{cluster}` already runs on {to} {}", c.region),
            format!("name another cloud, or another region: --to {to}/REGION"),
        ));
    }
    Ok(c)
}

/// What the cluster needs, and the nearest equivalent `to` offers.
fn equivalent(
    catalog: &Catalog,
    c: &Cluster,
    cluster: &str,
    to: Cloud,
    region: Option<&str>,
    cny_per_usd: f64,
) -> Result<(Requirement, Equivalent), UserError> {
    let req = Requirement::of(catalog, c).map_err(|e| {
        err(
            format!("cluster `{cluster}`: {e}"),
            "fix the GPU model first (`gpuform validate`)",
        )
    })?;
    let eq = find_equivalent(catalog, &req, to, region, cny_per_usd).map_err(|reasons| {
        let clouds: Vec<String> = Cloud::ALL
            .iter()
            .filter(|&&other| {
                other != to && !catalog.regions_offering(other, &req.gpu_model).is_empty()
            })
            .map(|c| c.to_string())
            .collect();
        err(
            format!(
                "cannot move cluster `{cluster}` ({}) to {}: {}",
                req.describe(),
                match region {
                    Some(r) => format!("{to} {r}"),
                    None => to.to_string(),
                },
                reasons
                    .iter()
                    .map(|r| r.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            if clouds.is_empty() {
                format!("no other cloud in the catalog offers {}", req.gpu_model)
            } else {
                format!("{} is offered on {}", req.gpu_model, clouds.join(", "))
            },
        )
    })?;

    Ok((req, eq))
}

/// The spec being edited, and each change and caveat in words.
struct Edit<'a> {
    ed: BlockEditor<'a>,
    changes: Vec<String>,
    caveats: Vec<String>,
}

impl Edit<'_> {
    /// cloud, region, zones; `cloud: any`'s choice removed.
    fn place(
        &mut self,
        c: &Cluster,
        to: Cloud,
        region: Option<&str>,
        eq: &Equivalent,
    ) -> Result<(), UserError> {
        let e = self;
        // cloud, region
        e.ed.replace_value("cloud", to.as_str())?;
        e.changes
            .push(format!("cloud: {} → {to}", c.cloud.as_str()));
        let region_text = e.ed.value_text("region");
        if e.ed.has("region") {
            e.ed.replace_value("region", &eq.region)?;
        } else {
            e.ed.insert_after(&["cloud"], "region", &eq.region)?;
        }
        e.changes.push(format!(
            "region: {} → {}{}",
            if c.region.is_empty() {
                "(none)"
            } else {
                &c.region
            },
            eq.region,
            match (region, &region_text) {
                (_, Some(t)) if t.contains("${") => format!(" (was `{t}`)"),
                (None, _) => format!(" (the cheapest {to} region offering {})", eq.instance_type),
                _ => String::new(),
            }
        ));
        // cloud: any leaves the choice to a strategy; a migrated cluster is pinne.ed.
        for key in ["candidates", "strategy"] {
            if e.ed.has(key) {
                e.ed.remove(key)?;
                e.changes.push(format!(
                    "{key}: removed (the cluster is pinned to {to} {})",
                    eq.region
                ));
            }
        }
        // zones
        match (&eq.zones, e.ed.has("zones")) {
            (Some(z), true) => {
                e.ed.replace_value("zones", &format!("[{}]", z.join(", ")))?;
                e.changes.push(format!(
                    "zones: [{}] → [{}] (the zones the catalog names for {})",
                    c.zones.join(", "),
                    z.join(", "),
                    eq.instance_type
                ));
            }
            (Some(z), false) => {
                e.ed.insert_after(
                    &["region", "cloud"],
                    "zones",
                    &format!("[{}]", z.join(", ")),
                )?;
                e.changes.push(format!(
                    "zones: added [{}] (the zones the catalog names for {})",
                    z.join(", "),
                    eq.instance_type
                ));
            }
            (None, true) => {
                e.ed.remove("zones")?;
                e.changes.push(format!(
                "zones: [{}] removed (no counterpart on {to}; every zone of {} is tried in order)",
                c.zones.join(", "),
                eq.region
            ));
            }
            (None, false) => {}
        }
        Ok(())
    }

    /// The nearest match: relax what it cannot meet.
    fn relax(
        &mut self,
        c: &Cluster,
        req: &Requirement,
        eq: &Equivalent,
        to: Cloud,
    ) -> Result<(), UserError> {
        let e = self;
        if eq.gpu_count != req.gpu_count {
            let gpu_text = format!("{}:{}", c.gpu.model, eq.gpu_count);
            e.ed.replace_value("gpu", &gpu_text)?;
            let total = u64::from(req.nodes) * u64::from(req.gpu_count);
            let nodes = total.div_ceil(u64::from(eq.gpu_count)).max(1);
            let nodes = u32::try_from(nodes).unwrap_or(u32::MAX);
            e.changes.push(format!(
                "gpu: {} → {gpu_text} ({to} has no {} × {})",
                c.gpu, req.gpu_count, req.gpu_model
            ));
            if nodes != req.nodes {
                match e.ed.value_text("nodes") {
                    Some(t) if t.trim() == req.nodes.to_string() => {
                        e.ed.replace_value("nodes", &nodes.to_string())?;
                        e.changes.push(format!(
                            "nodes: {} → {nodes} (keeps {total} GPUs in all)",
                            req.nodes
                        ));
                    }
                    other => e.caveats.push(format!(
                        "nodes is `{}`: set it to {nodes} to keep {total} GPUs in all",
                        other.unwrap_or_default()
                    )),
                }
            }
        }
        if let Some(want) = req.interconnect {
            if eq.interconnect != Some(want) {
                e.ed.replace_value("interconnect", "any")?;
                e.changes.push(format!(
                    "interconnect: {} → any ({} {})",
                    want.as_str(),
                    eq.instance_type,
                    match eq.interconnect {
                        Some(i) => format!("uses {}", i.as_str()),
                        None => "has no interconnect stated by any source".to_string(),
                    }
                ));
            }
        }
        if req.rdma && eq.rdma.is_none() {
            e.ed.replace_value("fabric", "ethernet")?;
            e.changes.push(format!(
                "fabric: rdma → ethernet ({} has no RDMA fabric gpuform knows)",
                eq.instance_type
            ));
        }
        Ok(())
    }

    /// A raw instance type or image of the old cloud means nothing on the new one.
    fn drop_escape_hatches(
        &mut self,
        c: &Cluster,
        from_cloud: Option<Cloud>,
        to: Cloud,
        eq: &Equivalent,
    ) -> Result<(), UserError> {
        let e = self;
        if let Some(raw) = &c.instance_type {
            e.ed.remove("instance_type")?;
            e.changes.push(format!(
            "instance_type: `{raw}` removed (a {} type; gpuform picks {} from gpu/interconnect/fabric)",
            from_cloud.map_or("cloud-specific".to_string(), |c| c.to_string()),
            eq.instance_type
        ));
        }
        if is_raw_image(from_cloud, &c.image) {
            e.ed.replace_value("image", LOGICAL_IMAGE)?;
            e.changes
                .push(format!("image: `{}` → {LOGICAL_IMAGE}", c.image));
            e.caveats.push(format!(
            "the raw image `{}` does not exist on {to}; check that {LOGICAL_IMAGE} has what your image had",
            c.image
        ));
        }

        Ok(())
    }
}

/// Proves the migrated text: it loads and resolves. Returns it resolved,
/// and the original resolved (when it does).
fn prove(
    loaded: &LoadedSpec,
    vars: &Vars,
    catalog: &Catalog,
    new_text: &str,
    cny_per_usd: f64,
) -> Result<(Desired, Option<Desired>), UserError> {
    let new_loaded = spec::load_str(&loaded.file_label(), new_text, vars).map_err(|d| {
        err(
            format!("internal error: the migrated spec does not load:\n{d}"),
            "please report this with the spec file",
        )
    })?;
    let opts = ResolveOptions {
        cny_per_usd,
        ..ResolveOptions::default()
    };
    let after = resolve(&new_loaded, catalog, &opts).map_err(|d| {
        err(
            format!("the migrated spec does not resolve:\n{d}"),
            "please report this with the spec file",
        )
    })?;
    // Restore the original text in the diagnostics registry for later messages.
    let _ = spec::load_str(&loaded.file_label(), &loaded.text, vars);
    let before = resolve(loaded, catalog, &opts).ok();
    Ok((after, before))
}

/// The cluster's instance type and hourly cost (sum over its nodes) in a resolved spec.
fn cluster_cost(d: &Desired, cluster: &str) -> (Option<String>, Option<f64>) {
    let nodes: Vec<_> = d
        .resources
        .iter()
        .filter(|r| r.kind == ResourceKind::Instance && r.address.belongs_to(cluster))
        .collect();
    let ty = nodes
        .first()
        .and_then(|r| r.attrs.get(attr::INSTANCE_TYPE))
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let cost = nodes
        .iter()
        .map(|r| r.hourly_usd)
        .sum::<Option<f64>>()
        .filter(|_| !nodes.is_empty());
    (ty, cost)
}

#[allow(clippy::too_many_arguments)]
fn what_does_not_carry_over(
    loaded: &LoadedSpec,
    catalog: &Catalog,
    cluster: &str,
    from: Option<Cloud>,
    to: Cloud,
    eq: &Equivalent,
    to_type: &str,
    req: &Requirement,
    cny_per_usd: f64,
) -> Vec<String> {
    let c = &loaded.spec.clusters[cluster];
    let from_name = from.map_or("the old cloud".to_string(), |c| c.to_string());
    let mut out = Vec::new();
    if eq.hourly_usd.is_none() {
        out.push(format!(
            "the catalog has no {} price for {to_type} in {}: the cost after the move is unknown",
            req.pricing.as_str(),
            eq.region
        ));
        if loaded
            .spec
            .budget
            .as_ref()
            .is_some_and(|b| !b.allow_unpriced)
        {
            out.push(format!(
                "the spec has a `budget:`, which fails closed: plans fail until {to_type} is priced (`gpuform prices refresh --cloud {to} --region {} --type {to_type}`, or `--prices FILE`), or `budget.allow_unpriced: true` is set",
                eq.region
            ));
        }
    }
    if matches!(
        req.pricing,
        gpuform_catalog::PricingModel::Reserved1y | gpuform_catalog::PricingModel::Reserved3y
    ) {
        out.push(format!(
            "pricing {}: a reservation bought on {from_name} does not move; a new one is needed on {to}{}",
            req.pricing.as_str(),
            if catalog.subscription_prices(to, to_type).is_empty() {
                String::new()
            } else {
                " (it sells monthly subscriptions for this type: see the catalog)".to_string()
            }
        ));
    }
    if req.pricing == gpuform_catalog::PricingModel::Spot {
        out.push(format!(
            "pricing spot: interruption rates and notice differ between {from_name} and {to}"
        ));
    }
    if let Some(m) = &c.mig {
        out.push(format!(
            "mig: {m} is set per GPU on the node; the catalog does not say whether {to} {to_type} passes whole GPUs through (MIG needs it)"
        ));
    }
    if let Some(size) = c.disk.data_gb {
        out.push(format!(
            "disk.data_gb: the {size} GiB data volume is created empty on {to} (`{}`: {to}'s own disk of that type, not the same product as {from_name}'s); copy the data yourself",
            c.disk.data_type
        ));
    }
    if !c.tags.is_empty() {
        out.push(format!(
            "tags: {} tag(s) carry over as written; {to} has its own limits on tag count, key length and reserved prefixes",
            c.tags.len()
        ));
    }
    if c.user_data.is_some() {
        out.push(format!(
            "user_data runs unchanged on {to}: check it for {from_name}-specific tools (CLIs, metadata URLs, fabric drivers)"
        ));
    }
    if req.rdma {
        if let (Some(new), Some(old_cloud)) = (eq.rdma, from) {
            let old = catalog
                .offerings()
                .iter()
                .filter(|o| o.cloud == old_cloud && o.region == c.region)
                .filter_map(|o| catalog.instance_type(o.cloud, &o.instance_type))
                .find(|t| {
                    t.gpu_model == req.gpu_model && t.gpu_count == req.gpu_count && t.rdma.is_some()
                })
                .and_then(|t| t.rdma);
            if let Some(old) = old.filter(|o| *o != new) {
                out.push(format!(
                    "fabric: RDMA is {} on {to}, not {}: NCCL/libfabric settings in images or user_data may need changes",
                    new.as_str(),
                    old.as_str()
                ));
            }
        }
    }
    if eq.interconnect.is_none() && req.interconnect == Some(Interconnect::Nvlink) {
        out.push(format!(
            "NVLink: no source states how {to_type}'s GPUs are linked"
        ));
    }
    if let Some(cap) = c.spot_max_price {
        // The cap is in the currency the catalog quotes each cloud in.
        let currency = |cloud: Cloud| if cloud == Cloud::Aws { "USD" } else { "CNY" };
        if from.map(currency) != Some(currency(to)) {
            out.push(format!(
                "spot_max_price: {cap} is read in {} on {to}: convert it from what it meant on {from_name}",
                currency(to)
            ));
        }
    }
    for (name, b) in &loaded.spec.buckets {
        if c.reads.contains(name) {
            if spec_cloud(b.cloud) == Some(to) && b.region == eq.region {
                continue;
            }
            let bucket_cloud = spec_cloud(b.cloud).unwrap_or(Cloud::Aws);
            let kind = if bucket_cloud == to {
                gpuform_catalog::transfer::TransferKind::InterRegion
            } else {
                gpuform_catalog::transfer::TransferKind::Internet
            };
            let price = gpuform_catalog::transfer::TransferPrices::builtin()
                .price(bucket_cloud, &b.region, kind)
                .map(|p| format!("${:.4}/GB", p.usd(cny_per_usd)))
                .unwrap_or_else(|| "price unknown".to_string());
            out.push(format!(
                "reads: bucket `{name}` stays on {} {}: reading it from {to} {} is {} data transfer ({price}); `gpuform migrate bucket.{name} --to {to}/{}` moves it (empty: data is copied by hand)",
                b.cloud.as_str(),
                b.region,
                eq.region,
                kind.as_str(),
                eq.region
            ));
        } else if spec_cloud(b.cloud) != Some(to) {
            out.push(format!(
                "bucket `{name}` stays on {} {}: reading it from {to} is billed as egress",
                b.cloud.as_str(),
                b.region
            ));
        }
    }
    for n in catalog.notes(to, &eq.region, to_type) {
        out.push(format!("catalog note on {to_type}: {n}"));
    }
    out.push(
        "nodes' disks are not copied: the new cluster starts from the image; the old one is destroyed after the new one is created"
            .to_string(),
    );
    out
}

/// The migration in words: the diff, the equivalent, the cost delta, the caveats.
pub fn render(m: &Migration) -> String {
    let mut out = String::new();
    if m.diff.is_empty() {
        out.push_str("(no change to the spec)\n");
    } else {
        out.push_str(&m.diff);
        if !m.diff.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push('\n');
    out.push_str(&format!(
        "Cluster `{}`: {} {} → {} {}\n",
        m.cluster,
        m.from_cloud.map_or("any".to_string(), |c| c.to_string()),
        if m.from_region.is_empty() {
            "(chosen by strategy)"
        } else {
            &m.from_region
        },
        m.to_cloud,
        m.to_region
    ));
    let e = &m.equivalent;
    out.push_str(&format!(
        "Instance type: {} → {} ({} × {}{}{}){}\n",
        m.from_instance_type.as_deref().unwrap_or("(unresolved)"),
        m.to_instance_type,
        e.gpu_count,
        e.gpu_model,
        e.interconnect
            .map(|i| format!(", {}", i.as_str()))
            .unwrap_or_default(),
        e.rdma
            .map(|r| format!(", {}", r.as_str()))
            .unwrap_or_default(),
        if e.exact {
            ", exact equivalent"
        } else {
            ", nearest match"
        }
    ));
    match (m.hourly_before, m.hourly_after) {
        (Some(b), Some(a)) => {
            let d = a - b;
            out.push_str(&format!(
                "Cost: {}/h → {}/h ({}{}/h); {}/month → {}/month ({}{}/month, {HOURS_PER_MONTH} h/month)\n",
                usd(b),
                usd(a),
                if d >= 0.0 { "+" } else { "" },
                usd(d),
                usd(b * HOURS_PER_MONTH),
                usd(a * HOURS_PER_MONTH),
                if d >= 0.0 { "+" } else { "" },
                usd(d * HOURS_PER_MONTH)
            ));
        }
        (b, a) => out.push_str(&format!(
            "Cost: {} → {} (a price is missing from the catalog; delta unknown)\n",
            b.map_or("unknown".to_string(), |v| format!("{}/h", usd(v))),
            a.map_or("unknown".to_string(), |v| format!("{}/h", usd(v)))
        )),
    }
    out.push_str("Changes:\n");
    for c in &m.changes {
        out.push_str(&format!("  - {c}\n"));
    }
    out.push_str("Does not carry over / check:\n");
    for c in &m.caveats {
        out.push_str(&format!("  - {c}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# head\nproject: p\nclusters:\n  t:\n    # the cloud\n    cloud: aws   # here\n    region: us-east-1\n    zones:\n      - us-east-1a\n      - us-east-1b\n    nodes: 2\n    gpu: A100-80GB:8\n    interconnect: nvlink\n    fabric: rdma\n    instance_type: p4de.24xlarge # raw\n";

    #[test]
    fn migrates_with_comments() {
        let vars = Vars::new();
        let loaded = spec::load_str("t.yaml", SPEC, &vars).unwrap();
        let m = migrate(
            &loaded,
            &vars,
            Catalog::builtin(),
            "t",
            Cloud::Alibaba,
            None,
            7.0,
        )
        .unwrap();
        assert!(
            m.new_text.contains("    cloud: alibaba   # here\n"),
            "{}",
            m.new_text
        );
        assert!(m.new_text.contains("# head\n") && m.new_text.contains("    # the cloud\n"));
        assert!(!m.new_text.contains("instance_type"), "{}", m.new_text);
        assert!(!m.new_text.contains("us-east-1a"), "{}", m.new_text);
        assert!(m.new_text.contains("fabric: ethernet"), "{}", m.new_text);
        assert!(
            m.to_instance_type.starts_with("ecs.gn7e"),
            "{}",
            m.to_instance_type
        );
        assert!(m.diff.contains("-    cloud: aws"), "{}", m.diff);
    }

    #[test]
    fn unknown_cluster_and_same_cloud() {
        let vars = Vars::new();
        let loaded = spec::load_str("t.yaml", SPEC, &vars).unwrap();
        let e = migrate(
            &loaded,
            &vars,
            Catalog::builtin(),
            "x",
            Cloud::Alibaba,
            None,
            7.0,
        )
        .unwrap_err();
        assert!(e.hint.contains("t"), "{e}");
        assert!(migrate(
            &loaded,
            &vars,
            Catalog::builtin(),
            "t",
            Cloud::Aws,
            None,
            7.0
        )
        .is_err());
    }
}
