//! Cost in every plan: per cluster, the CNY rate used, how old the prices
//! are, and the budget guard — which names the cheapest way to fit.

use crate::address::Address;
use crate::address::Target;
use crate::plan::{Action, ClusterCost, Plan, StorageCost};
use crate::spec::{Diagnostic, LoadedSpec};
use gpuform_catalog::storage::{StoragePrice, StoragePrices};
use gpuform_catalog::{price_age, Day, PriceAge, HOURS_PER_MONTH};
use gpuform_catalog::{Catalog, Currency, PricingModel};
use gpuform_provider::attr;
use gpuform_provider::ResourceKind;
use std::collections::BTreeMap;

/// A bucket's storage a month from its attributes (`size_gb`,
/// `storage_class`) and the catalog: `(monthly USD, USD per GB-month,
/// price)`; `Err` says why it is unpriced.
fn bucket_monthly(
    provider: Target,
    region: &str,
    attrs: &gpuform_provider::Attrs,
    cny_per_usd: f64,
) -> Result<(f64, f64, &'static StoragePrice), String> {
    let Some(size) = attrs.get(attr::SIZE_GB).and_then(|v| v.as_f64()) else {
        return Err("no `size_gb` estimate in the spec".into());
    };
    let class = attrs
        .get(attr::STORAGE_CLASS)
        .and_then(|v| v.as_str())
        .unwrap_or("standard");
    let cloud = provider.cloud;
    let price = StoragePrices::builtin()
        .price(cloud, region, class)
        .ok_or_else(|| format!("no {class} storage price for {cloud} {region} in the catalog"))?;
    let per_gb = price.usd(cny_per_usd);
    Ok((size * per_gb, per_gb, price))
}

/// Fills the plan's per-bucket storage lines and adds them to the totals
/// (per hour as a month's share, so that hourly × hours = monthly still
/// holds). Returns whether a price was quoted in CNY.
fn storage_costs(plan: &mut Plan, cny_per_usd: f64) -> bool {
    let mut in_cny = false;
    let mut lines: Vec<StorageCost> = Vec::new();
    for c in plan
        .changes
        .iter()
        .filter(|c| c.kind == ResourceKind::Bucket)
    {
        let mut line = StorageCost {
            bucket: c.address.clone(),
            ..StorageCost::default()
        };
        if let Some(before) = &c.before {
            let provider = c.old_provider.unwrap_or(c.provider);
            let region = c.old_region.as_deref().unwrap_or(&c.region);
            if let Ok((m, _, _)) = bucket_monthly(provider, region, before, cny_per_usd) {
                line.monthly_usd_before = m;
            }
        }
        if c.action != Action::Delete {
            if let Some(after) = &c.after {
                line.storage_class = Some(
                    after
                        .get(attr::STORAGE_CLASS)
                        .and_then(|v| v.as_str())
                        .unwrap_or("standard")
                        .to_string(),
                );
                line.size_gb = after.get(attr::SIZE_GB).and_then(|v| v.as_f64());
                match bucket_monthly(c.provider, &c.region, after, cny_per_usd) {
                    Ok((m, per_gb, price)) => {
                        in_cny |= price.currency == Currency::CNY;
                        line.monthly_usd_after = m;
                        line.usd_per_gb_month = Some(per_gb);
                        line.price_basis =
                            Some(format!("{}, as of {}", price.basis.label(), price.as_of));
                    }
                    Err(why) => line.unpriced = Some(why),
                }
            }
        }
        lines.push(line);
    }
    let cost = &mut plan.cost;
    for l in &lines {
        cost.monthly_usd_before += l.monthly_usd_before;
        cost.monthly_usd_after += l.monthly_usd_after;
        cost.hourly_usd_before += l.monthly_usd_before / HOURS_PER_MONTH;
        cost.hourly_usd_after += l.monthly_usd_after / HOURS_PER_MONTH;
    }
    cost.hourly_usd_delta = cost.hourly_usd_after - cost.hourly_usd_before;
    cost.monthly_usd_delta = cost.monthly_usd_after - cost.monthly_usd_before;
    cost.storage = lines;
    in_cny
}

/// Prices each cross-region (or cross-cloud) read of a bucket from the
/// catalog's transfer prices, by the bucket's cloud and region (the side
/// that bills it), and says so in a warning line; "price unknown" where no
/// source gives one.
fn transfer_prices(plan: &mut Plan, cny_per_usd: f64) {
    use gpuform_catalog::transfer::{TransferKind, TransferPrices};
    let mut warnings = Vec::new();
    for t in &mut plan.transfers {
        let kind = if t.kind == "internet" {
            TransferKind::Internet
        } else {
            TransferKind::InterRegion
        };
        let (cloud, region) = t
            .bucket_location
            .split_once('/')
            .unwrap_or((t.bucket_location.as_str(), ""));
        let price = gpuform_catalog::Cloud::ALL
            .into_iter()
            .find(|c| c.as_str() == cloud)
            .and_then(|c| TransferPrices::builtin().price(c, region, kind));
        let shown = match price {
            Some(p) => {
                let usd = p.usd(cny_per_usd);
                t.usd_per_gb = Some(usd);
                t.quoted = (p.currency == Currency::CNY).then(|| format!("{:.2} CNY/GB", p.price));
                t.price_basis = format!("{}, as of {}", p.basis.label(), p.as_of);
                match &t.quoted {
                    Some(q) => format!("${usd:.4}/GB ({q}) [{} price {}]", t.kind, t.price_basis),
                    None => format!("${usd:.4}/GB [{} price {}]", t.kind, t.price_basis),
                }
            }
            None => {
                t.price_basis = format!(
                    "price unknown: the catalog has no {} price out of {cloud} {region}",
                    t.kind
                );
                t.price_basis.clone()
            }
        };
        warnings.push(format!(
            "cross-region data transfer: cluster {} ({}) reads bucket {} ({}): {shown}",
            t.cluster,
            t.cluster_location,
            t.bucket.strip_prefix("bucket.").unwrap_or(&t.bucket),
            t.bucket_location
        ));
    }
    plan.warnings.extend(warnings);
}

/// Prices older than this are called out in plans.
pub const STALE_AFTER_DAYS: i64 = 180;

/// Fills the plan's per-cluster costs, CNY note and price-age warnings.
pub fn annotate(plan: &mut Plan, catalog: &Catalog, cny_per_usd: f64, today: Day) {
    let mut clusters: BTreeMap<String, ClusterCost> = BTreeMap::new();
    let mut stale: BTreeMap<String, String> = BTreeMap::new();
    let mut undated: BTreeMap<String, String> = BTreeMap::new();
    // Notes saying a price is a range's upper value or approximate.
    let mut caveats: BTreeMap<String, String> = BTreeMap::new();
    let mut in_cny = false;
    for c in plan
        .changes
        .iter()
        .filter(|c| c.kind == ResourceKind::Instance)
    {
        let Some(name) = c.address.cluster() else {
            continue;
        };
        let e = clusters
            .entry(name.to_string())
            .or_insert_with(|| ClusterCost {
                cluster: name.to_string(),
                ..ClusterCost::default()
            });
        if c.before.is_some() {
            e.nodes_before += 1;
            e.hourly_usd_before += c.hourly_usd_before.unwrap_or(0.0);
        }
        if c.action == Action::Delete {
            continue;
        }
        let Some(after) = &c.after else { continue };
        e.nodes_after += 1;
        match c.hourly_usd_after {
            Some(h) => e.hourly_usd_after += h,
            None => e.unpriced_after += 1,
        }
        let pricing = after.get(attr::PRICING).and_then(|v| v.as_str());
        let itype = after.get(attr::INSTANCE_TYPE).and_then(|v| v.as_str());
        e.pricing = pricing.map(str::to_string);
        e.instance_type = itype.map(str::to_string);
        // Where the price came from, and how old it is.
        let cloud = c.provider.cloud;
        let (Some(itype), Some(pricing)) = (
            itype,
            pricing.and_then(|p| serde_json::from_value::<PricingModel>(serde_json::json!(p)).ok()),
        ) else {
            continue;
        };
        let Some(price) = catalog
            .offering(cloud, &c.region, itype)
            .and_then(|o| o.prices.get(&pricing))
        else {
            continue;
        };
        in_cny |= price.currency == Currency::CNY;
        e.price_basis = Some(match price.basis {
            // A live quote names the day and the region it was quoted for.
            gpuform_catalog::PriceBasis::Live => format!("live {} for {}", price.as_of, c.region),
            b => format!("{}, as of {}", b.label(), price.as_of),
        });
        let what = format!("{} {} {itype} {}", cloud, c.region, pricing.as_str());
        for n in catalog.notes(cloud, &c.region, itype) {
            let low = n.to_ascii_lowercase();
            if low.contains("range") || low.contains("approximate") {
                caveats.insert(what.clone(), n.to_string());
            }
        }
        match price_age(&price.as_of, today, STALE_AFTER_DAYS) {
            PriceAge::Dated { days, stale: true } => {
                stale.insert(what, format!("as of {}, {days} days ago", price.as_of));
            }
            PriceAge::Dated { .. } => {}
            PriceAge::Unknown => {
                undated.insert(what, price.as_of.clone());
            }
        }
    }
    for e in clusters.values_mut() {
        e.monthly_usd_before = e.hourly_usd_before * HOURS_PER_MONTH;
        e.monthly_usd_after = e.hourly_usd_after * HOURS_PER_MONTH;
    }
    plan.cost.clusters = clusters.into_values().collect();
    // Capacity Blocks are paid when bought, never by the hour.
    plan.cost.upfront_usd = plan
        .changes
        .iter()
        .filter(|c| c.kind == ResourceKind::Block && c.action == Action::Create)
        .filter_map(|c| c.after.as_ref()?.get("upfront_usd")?.as_f64())
        .sum();
    in_cny |= storage_costs(plan, cny_per_usd);
    transfer_prices(plan, cny_per_usd);
    plan.cost.cny_per_usd = cny_per_usd;
    plan.cost.prices_in_cny = in_cny;
    let list = |m: &BTreeMap<String, String>| {
        m.iter()
            .map(|(k, v)| format!("{k} ({v})"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !stale.is_empty() {
        plan.warnings.push(format!(
            "prices older than {STALE_AFTER_DAYS} days: {}; pass --prices FILE with current (or negotiated) prices",
            list(&stale)
        ));
    }
    if !caveats.is_empty() {
        plan.warnings
            .push(format!("price caveats: {}", list(&caveats)));
    }
    if !undated.is_empty() {
        plan.warnings.push(format!(
            "prices of unknown date: {}; check them, or pass --prices FILE",
            list(&undated)
        ));
    }
}

/// What the plan keeps that has no price, grouped by what would price it:
/// `(what, addresses)`, `what` being `aws us-east-1 p3.2xlarge reserved-3y`
/// for nodes or `bucket in huawei cn-north-4 (why)` for a bucket with a
/// size estimate but no storage price. A bucket without `size_gb` is not
/// here: its cost depends on the data, which no spec states.
fn unpriced_groups(plan: &Plan) -> BTreeMap<String, Vec<Address>> {
    let mut groups: BTreeMap<String, Vec<Address>> = BTreeMap::new();
    for c in plan.changes.iter().filter(|c| c.action != Action::Delete) {
        let after = |k: &str| {
            c.after
                .as_ref()
                .and_then(|a| a.get(k))
                .and_then(|v| v.as_str())
                .unwrap_or("?")
        };
        let cloud = c.provider.cloud;
        if c.kind == ResourceKind::Instance && c.hourly_usd_after.is_none() {
            let what = format!(
                "{cloud} {} {} {}",
                c.region,
                after(attr::INSTANCE_TYPE),
                after(attr::PRICING)
            );
            groups.entry(what).or_default().push(c.address.clone());
        }
    }
    for b in &plan.cost.storage {
        if let (Some(why), Some(_)) = (&b.unpriced, b.size_gb) {
            groups
                .entry(format!("bucket storage ({why})"))
                .or_default()
                .push(b.bucket.clone());
        }
    }
    groups
}

/// A budget fails closed: a resource without a price makes its plan fail,
/// naming each and how to price it, unless `budget.allow_unpriced` says to
/// count it as $0 (then the plan says so in a note).
fn unpriced_check(loaded: &LoadedSpec, plan: &mut Plan) -> Result<(), Diagnostic> {
    let Some(b) = &loaded.spec.budget else {
        return Ok(());
    };
    let groups = unpriced_groups(plan);
    if groups.is_empty() {
        return Ok(());
    }
    let count: usize = groups.values().map(Vec::len).sum();
    let listed = groups
        .iter()
        .map(|(what, addrs)| format!("{} ({what})", addrs.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    if b.allow_unpriced {
        plan.notes.push(format!(
            "budget.allow_unpriced: {count} resource(s) without a price count as $0 against the budget: {listed}"
        ));
        return Ok(());
    }
    let refresh: Vec<String> = groups
        .keys()
        .filter_map(|what| {
            let mut w = what.split(' ');
            let (cloud, region, itype) = (w.next()?, w.next()?, w.next()?);
            (cloud != "bucket").then(|| {
                format!("`gpuform prices refresh --cloud {cloud} --region {region} --type {itype}`")
            })
        })
        .collect();
    let mut hint = String::from("price them");
    if !refresh.is_empty() {
        hint.push_str(&format!(" with {}, or", refresh.join(", ")));
    }
    hint.push_str(" with `--prices FILE` (CSV: cloud,region,instance_type,pricing,price,currency), or choose a priced `pricing:`; to count them as $0 instead, write `budget: {..., allow_unpriced: true}`");
    Err(loaded.diagnostic(
        "budget",
        format!(
            "the budget cannot be checked: {count} resource(s) have no price, and a budget does not count them as $0: {listed}"
        ),
        Some(hint),
    ))
}

/// A plan whose cost exceeds the spec's budget is an error that says by how
/// much and names the cheapest single change that fits; so is one with
/// unpriced resources (see [`unpriced_check`]).
pub fn budget_check(
    loaded: &LoadedSpec,
    plan: &mut Plan,
    catalog: &Catalog,
) -> Result<(), Diagnostic> {
    let Some(b) = &loaded.spec.budget else {
        return Ok(());
    };
    unpriced_check(loaded, plan)?;
    // What this plan pays up front (Capacity Blocks) falls in this month.
    let upfront = plan.cost.upfront_usd;
    let fits = |hourly: f64| {
        b.max_hourly_usd.is_none_or(|m| hourly <= m + 1e-9)
            && b.max_monthly_usd
                .is_none_or(|m| hourly * HOURS_PER_MONTH + upfront <= m + 1e-9)
    };
    let total = plan.cost.hourly_usd_after;
    if fits(total) {
        return Ok(());
    }
    let mut over = Vec::new();
    if let Some(max) = b.max_hourly_usd.filter(|m| total > m + 1e-9) {
        over.push(format!(
            "${total:.2}/h exceeds budget.max_hourly_usd ${max:.2} by ${:.2}",
            total - max
        ));
    }
    let monthly = total * HOURS_PER_MONTH + upfront;
    if let Some(max) = b.max_monthly_usd.filter(|m| monthly > m + 1e-9) {
        over.push(format!(
            "${monthly:.0}/month{} exceeds budget.max_monthly_usd ${max:.0} by ${:.0}",
            if upfront > 0.0 {
                format!(" (with ${upfront:.0} paid up front for Capacity Blocks)")
            } else {
                String::new()
            },
            monthly - max
        ));
    }
    let hint = match cheapest_fit(loaded, plan, catalog, &fits) {
        Some(alt) => format!("cheapest compliant alternative: {alt}"),
        None => "no single cluster change fits: lower `nodes`, choose `pricing: spot` or a reserved term, or raise the budget"
            .to_string(),
    };
    Err(loaded.diagnostic(
        "budget",
        format!("the plan is over budget: {}", over.join("; ")),
        Some(hint),
    ))
}

/// The cheapest plan total reachable by moving one cluster to another offer
/// (any cloud, region or pricing model with the same GPUs, interconnect and
/// fabric) that fits the budget, described for the user.
fn cheapest_fit(
    loaded: &LoadedSpec,
    plan: &Plan,
    catalog: &Catalog,
    fits: &dyn Fn(f64) -> bool,
) -> Option<String> {
    let total = plan.cost.hourly_usd_after;
    let mut best: Option<(f64, String)> = None;
    for (name, c) in &loaded.spec.clusters {
        let Ok(gpu) = catalog.gpu(&c.gpu.model) else {
            continue;
        };
        let current: f64 = plan
            .cost
            .clusters
            .iter()
            .filter(|k| &k.cluster == name)
            .map(|k| k.hourly_usd_after)
            .sum();
        for pricing in PricingModel::ALL {
            let q = crate::resolve::node_query(c, &gpu.name, pricing, plan.cost.cny_per_usd);
            let Some((m, per_node)) = catalog
                .matching(&q)
                .into_iter()
                .find_map(|m| m.hourly_usd.map(|p| (m, p)))
            else {
                continue;
            };
            let new_total = total - current + per_node * c.nodes as f64;
            if !fits(new_total) || best.as_ref().is_some_and(|(t, _)| *t <= new_total) {
                continue;
            }
            best = Some((
                new_total,
                format!(
                    "cluster `{name}` as {} on {} {} ({} at ${per_node:.2}/h per node): plan total ${new_total:.2}/h, ${:.0}/month",
                    pricing.as_str(),
                    m.offering.cloud,
                    m.offering.region,
                    m.instance.name,
                    new_total * HOURS_PER_MONTH
                ),
            ));
        }
    }
    best.map(|(_, s)| s)
}
