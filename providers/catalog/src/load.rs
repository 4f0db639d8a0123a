//! Parsing and checking the catalog's CSV files.

use super::{
    instance_family, normalize_gpu_name, Availability, Catalog, Currency, GpuDetails, GpuModel,
    InstanceType, Interconnect, MigProfile, Note, Offering, OfferingInfo, Price, PriceBasis,
    PricingModel, RdmaKind, Region, SubscriptionPrice,
};
use crate::sources::{CatalogSources, CloudSources, Source};
use crate::Cloud;
use std::collections::{BTreeMap, HashMap};

/// A problem in a catalog file, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct CatalogError {
    pub file: String,
    /// 1-based line of the offending row (1 = header).
    pub line: u64,
    pub message: String,
}

pub(super) struct Row<'s> {
    file: &'s str,
    pub(super) line: u64,
    header: &'s HashMap<String, usize>,
    rec: csv::StringRecord,
}

impl<'s> Row<'s> {
    pub(super) fn err(&self, message: impl Into<String>) -> CatalogError {
        CatalogError {
            file: self.file.to_string(),
            line: self.line,
            message: message.into(),
        }
    }
    pub(super) fn get(&self, col: &str) -> &str {
        self.header
            .get(col)
            .and_then(|&i| self.rec.get(i))
            .map(str::trim)
            .unwrap_or("")
    }
    pub(super) fn req(&self, col: &str) -> Result<&str, CatalogError> {
        let v = self.get(col);
        if v.is_empty() {
            Err(self.err(format!("column `{col}` is empty; it is required")))
        } else {
            Ok(v)
        }
    }
    /// The `instance_type` cell, which must name one of `cloud`'s `types`.
    fn known_type<T>(
        &self,
        cloud: Cloud,
        types: &BTreeMap<String, T>,
    ) -> Result<&str, CatalogError> {
        let it = self.req("instance_type")?;
        if types.contains_key(it) {
            Ok(it)
        } else {
            Err(self.err(format!("unknown {cloud} instance type `{it}`")))
        }
    }
    fn opt_f64(&self, col: &str) -> Result<Option<f64>, CatalogError> {
        let v = self.get(col);
        if v.is_empty() {
            return Ok(None);
        }
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(self.err(format!(
                "column `{col}`: expected a non-negative number, found `{v}`"
            ))),
        }
    }
    pub(super) fn f64(&self, col: &str) -> Result<f64, CatalogError> {
        self.opt_f64(col)?
            .ok_or_else(|| self.err(format!("column `{col}` is empty; it is required")))
    }
    fn u32(&self, col: &str) -> Result<u32, CatalogError> {
        let v = self.req(col)?;
        v.parse::<u32>().map_err(|_| {
            self.err(format!(
                "column `{col}`: expected a whole number, found `{v}`"
            ))
        })
    }
}

/// The columns every price table has, after its own.
const PRICE_COLUMNS: [&str; 4] = ["price", "currency", "source", "as_of"];

/// A price table's required columns: its own `lead`, then [`PRICE_COLUMNS`].
pub(super) fn price_table<'c>(lead: &[&'c str]) -> Vec<&'c str> {
    [lead, &PRICE_COLUMNS[..]].concat()
}

/// Parses `src` and calls `f` for each data row; checks the header has `required` columns.
pub(super) fn rows(
    src: &Source<'_>,
    required: &[&str],
    mut f: impl FnMut(Row<'_>) -> Result<(), CatalogError>,
) -> Result<(), CatalogError> {
    let err = |line: u64, message: String| CatalogError {
        file: src.file.to_string(),
        line,
        message,
    };
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(src.text.as_bytes());
    let header_rec = rdr
        .headers()
        .map_err(|e| err(1, format!("cannot read the header: {e}")))?
        .clone();
    let header: HashMap<String, usize> = header_rec
        .iter()
        .enumerate()
        .map(|(i, h)| (h.trim().to_string(), i))
        .collect();
    for col in required {
        if !header.contains_key(*col) {
            return Err(err(
                1,
                format!(
                    "missing column `{col}` (header has: {})",
                    header_rec.iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    for rec in rdr.records() {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                return Err(err(line, format!("malformed CSV row: {e}")));
            }
        };
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        if rec.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        f(Row {
            file: src.file,
            line,
            header: &header,
            rec,
        })?;
    }
    Ok(())
}

fn parse_bool_cell(row: &Row<'_>, col: &str) -> Result<bool, CatalogError> {
    match row.get(col) {
        "yes" => Ok(true),
        "no" | "" => Ok(false),
        other => Err(row.err(format!(
            "column `{col}`: expected yes, no or empty, found `{other}`"
        ))),
    }
}

fn parse_mig(row: &Row<'_>) -> Result<Vec<MigProfile>, CatalogError> {
    let cell = row.get("mig_profiles");
    let mut out = Vec::new();
    for part in cell.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || {
            row.err(format!("column `mig_profiles`: expected `<profile>*<count>` like `3g.40gb*2`, found `{part}`"))
        };
        let (name, count) = part.split_once('*').ok_or_else(bad)?;
        let per_gpu: u32 = count.trim().parse().map_err(|_| bad())?;
        let name = name.trim();
        if name.is_empty() || per_gpu == 0 || !name.contains('g') {
            return Err(bad());
        }
        out.push(MigProfile {
            name: name.to_string(),
            per_gpu,
        });
    }
    Ok(out)
}

fn split_list(cell: &str) -> Vec<String> {
    cell.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub(super) fn parse_pricing(row: &Row<'_>) -> Result<PricingModel, CatalogError> {
    let v = row.req("pricing")?;
    PricingModel::parse(v).ok_or_else(|| {
        row.err(format!(
            "column `pricing`: expected on-demand, spot, reserved-1y or reserved-3y, found `{v}`"
        ))
    })
}

pub(super) fn parse_currency(row: &Row<'_>) -> Result<Currency, CatalogError> {
    match row.req("currency")? {
        "USD" => Ok(Currency::USD),
        "CNY" => Ok(Currency::CNY),
        other => Err(row.err(format!(
            "column `currency`: expected USD or CNY, found `{other}`"
        ))),
    }
}

/// The `cloud` column of a price table.
pub(super) fn parse_cloud(row: &Row<'_>) -> Result<Cloud, CatalogError> {
    let text = row.req("cloud")?;
    Cloud::ALL
        .into_iter()
        .find(|c| c.as_str() == text)
        .ok_or_else(|| row.err(format!("unknown cloud `{text}`")))
}

/// The `region` column of a storage or transfer price table: `*` is a
/// price its source gives for no region, assumed to hold in every one.
pub(super) fn parse_price_region(
    row: &Row<'_>,
) -> Result<(Option<String>, crate::PriceBasis), CatalogError> {
    let region = row.req("region")?;
    Ok(if region == "*" {
        (None, crate::PriceBasis::Assumed)
    } else {
        (Some(region.to_string()), crate::PriceBasis::Sourced)
    })
}

/// What [`build`] gathers table by table before it indexes them.
#[derive(Default)]
struct Tables {
    gpus: Vec<GpuModel>,
    details: Vec<GpuDetails>,
    gpu_names: HashMap<String, usize>,
    gpu_shared: HashMap<String, Vec<usize>>,
    instance_types: Vec<InstanceType>,
    regions: Vec<Region>,
    /// (cloud, region, type) -> where it is offered.
    offered: BTreeMap<(Cloud, String, String), Availability>,
    /// (cloud, region, type) -> prices.
    regional: BTreeMap<(Cloud, String, String), BTreeMap<PricingModel, Price>>,
    /// Region-less prices per (cloud, type).
    anywhere: BTreeMap<(Cloud, String), BTreeMap<PricingModel, Price>>,
    subscriptions: Vec<SubscriptionPrice>,
    notes: Vec<Note>,
}

pub(crate) fn build(sources: &CatalogSources<'_>) -> Result<Catalog, CatalogError> {
    let mut t = Tables::default();
    t.read_gpus(&sources.gpus)?;
    for cs in &sources.clouds {
        let cloud = cs.cloud;
        if sources.clouds.iter().filter(|c| c.cloud == cloud).count() > 1 {
            return Err(CatalogError {
                file: cs.instance_types.file.to_string(),
                line: 0,
                message: format!("cloud {cloud} is given twice"),
            });
        }
        let types = t.read_instance_types(cs)?;
        let cloud_regions = read_regions(cs)?;
        t.read_availability(cs, &types, &cloud_regions)?;
        t.read_prices(cs, &types)?;
        if let Some(src) = &cs.subscriptions {
            t.read_subscriptions(cloud, src, &types, &cloud_regions)?;
        }
        if let Some(src) = &cs.notes {
            t.read_notes(cloud, src, &types, &cloud_regions)?;
        }
        t.instance_types.extend(types.into_values());
        t.regions.extend(cloud_regions);
    }
    Ok(t.into_catalog())
}

impl Tables {
    /// gpus.csv: names, aliases and shared names must each name one GPU.
    fn read_gpus(&mut self, g: &Source<'_>) -> Result<(), CatalogError> {
        let Tables {
            gpus,
            details,
            gpu_names,
            gpu_shared,
            ..
        } = self;
        let mut shared_rows: Vec<(String, usize, u64)> = Vec::new();
        rows(
            g,
            &[
                "name",
                "aliases",
                "shared_names",
                "vendor",
                "mem_gib",
                "nvlink",
                "mig_profiles",
                "source",
            ],
            |row| {
                let name = row.req("name")?.to_string();
                let idx = gpus.len();
                let aliases = split_list(row.get("aliases"));
                for n in std::iter::once(&name).chain(aliases.iter()) {
                    if let Some(&prev) = gpu_names.get(&normalize_gpu_name(n)) {
                        return Err(row.err(format!(
                            "GPU name `{n}` is already used by `{}`",
                            gpus[prev].name
                        )));
                    }
                    gpu_names.insert(normalize_gpu_name(n), idx);
                }
                for s in split_list(row.get("shared_names")) {
                    shared_rows.push((s, idx, row.line));
                }
                gpus.push(GpuModel {
                    name: name.clone(),
                    aliases,
                    vendor: row.req("vendor")?.to_string(),
                    mem_gib: row.f64("mem_gib")?,
                    nvlink: parse_bool_cell(&row, "nvlink")?,
                    mig_profiles: parse_mig(&row)?,
                });
                details.push(GpuDetails {
                    name,
                    fp16_tflops_dense: row.opt_f64("fp16_tflops_dense")?,
                    bf16_tflops_dense: row.opt_f64("bf16_tflops_dense")?,
                    tdp_w: row.get("tdp_w").to_string(),
                    interconnect_note: row.get("interconnect_note").to_string(),
                    mig_note: row.get("mig_note").to_string(),
                    source: row.req("source")?.to_string(),
                });
                Ok(())
            },
        )?;
        for (s, idx, line) in &shared_rows {
            let key = normalize_gpu_name(s);
            if let Some(&owner) = gpu_names.get(&key) {
                return Err(CatalogError {
                    file: g.file.to_string(),
                    line: *line,
                    message: format!(
                        "shared name `{s}` is also a name or alias of `{}`",
                        gpus[owner].name
                    ),
                });
            }
            gpu_shared.entry(key).or_default().push(*idx);
        }
        for (s, idx, line) in &shared_rows {
            if gpu_shared[&normalize_gpu_name(s)].len() < 2 {
                return Err(CatalogError {
                    file: g.file.to_string(),
                    line: *line,
                    message: format!(
                        "shared name `{s}` belongs to `{}` only; make it an alias instead",
                        gpus[*idx].name
                    ),
                });
            }
        }
        Ok(())
    }

    /// One cloud's instance types; each GPU model must be in gpus.csv.
    fn read_instance_types(
        &self,
        cs: &CloudSources<'_>,
    ) -> Result<BTreeMap<String, InstanceType>, CatalogError> {
        let (cloud, gpus, gpu_names) = (cs.cloud, &self.gpus, &self.gpu_names);
        let mut types: BTreeMap<String, InstanceType> = BTreeMap::new();
        rows(
            &cs.instance_types,
            &[
                "name",
                "gpu_model",
                "gpu_count",
                "gpu_mem_gib",
                "vcpus",
                "ram_gib",
                "interconnect",
                "rdma",
                "network_gbps",
                "source",
            ],
            |row| {
                let name = row.req("name")?.to_string();
                if types.contains_key(&name) {
                    return Err(row.err(format!("instance type `{name}` is listed twice")));
                }
                let model = row.req("gpu_model")?;
                if !gpus.iter().any(|g| g.name == model) {
                    let hint = gpu_names
                        .get(&normalize_gpu_name(model))
                        .map(|&i| format!(" (write the canonical name `{}`)", gpus[i].name))
                        .unwrap_or_default();
                    return Err(row.err(format!("unknown GPU model `{model}`{hint}")));
                }
                let gpu_count = row.u32("gpu_count")?;
                if gpu_count == 0 {
                    return Err(row.err("gpu_count must be at least 1"));
                }
                let interconnect = match row.get("interconnect") {
                    "" => None,
                    "nvlink" => Some(Interconnect::Nvlink),
                    "pcie" => Some(Interconnect::Pcie),
                    other => {
                        return Err(row.err(format!(
                        "column `interconnect`: expected nvlink, pcie or empty, found `{other}`"
                    )))
                    }
                };
                let rdma = match row.get("rdma") {
                "" | "none" => None,
                "efa" => Some(RdmaKind::Efa),
                "erdma" => Some(RdmaKind::Erdma),
                "roce" => Some(RdmaKind::Roce),
                "infiniband" => Some(RdmaKind::Infiniband),
                other => return Err(row.err(format!("column `rdma`: expected efa, erdma, roce, infiniband, none or empty, found `{other}`"))),
            };
                row.req("source")?;
                types.insert(
                    name.clone(),
                    InstanceType {
                        cloud,
                        name,
                        gpu_model: model.to_string(),
                        gpu_count,
                        gpu_mem_gib: row.f64("gpu_mem_gib")?,
                        vcpus: row.u32("vcpus")?,
                        ram_gib: row.f64("ram_gib")?,
                        interconnect,
                        rdma,
                        network_gbps: row.opt_f64("network_gbps")?,
                    },
                );
                Ok(())
            },
        )?;
        Ok(types)
    }

    /// Where each type is offered: a type or a whole family per row.
    fn read_availability(
        &mut self,
        cs: &CloudSources<'_>,
        types: &BTreeMap<String, InstanceType>,
        cloud_regions: &[Region],
    ) -> Result<(), CatalogError> {
        let (cloud, offered) = (cs.cloud, &mut self.offered);
        rows(
            &cs.availability,
            &["region", "offer", "zones", "source"],
            |row| {
                let region_name = row.req("region")?;
                let region = cloud_regions
                    .iter()
                    .find(|r| r.name == region_name)
                    .ok_or_else(|| {
                        row.err(format!(
                            "unknown {cloud} region `{region_name}` (not in {})",
                            cs.regions.file
                        ))
                    })?;
                let offer = row.req("offer")?;
                let names: Vec<String> = if types.contains_key(offer) {
                    vec![offer.to_string()]
                } else {
                    types
                        .values()
                        .filter(|t| instance_family(cloud, &t.name) == offer)
                        .map(|t| t.name.clone())
                        .collect()
                };
                if names.is_empty() {
                    return Err(row.err(format!(
                        "`{offer}` is neither an instance type nor a family in {}",
                        cs.instance_types.file
                    )));
                }
                let zones = split_list(row.get("zones"));
                for z in &zones {
                    if !region.zones.contains(z) {
                        return Err(row.err(format!(
                            "zone `{z}` is not a zone of region `{region_name}`"
                        )));
                    }
                }
                let source = row.req("source")?.to_string();
                let availability = Availability {
                    zones: if zones.is_empty() { None } else { Some(zones) },
                    assumed: source.starts_with("assumed"),
                    source,
                    discovered_on: None,
                };
                for n in names {
                    let key = (cloud, region_name.to_string(), n.clone());
                    if offered.contains_key(&key) {
                        return Err(row.err(format!(
                            "`{n}` in `{region_name}` is already offered by an earlier row"
                        )));
                    }
                    offered.insert(key, availability.clone());
                }
                Ok(())
            },
        )?;
        Ok(())
    }

    /// Prices per region, or `*` for every region that offers the type.
    fn read_prices(
        &mut self,
        cs: &CloudSources<'_>,
        types: &BTreeMap<String, InstanceType>,
    ) -> Result<(), CatalogError> {
        let cloud = cs.cloud;
        let Tables {
            offered,
            regional,
            anywhere,
            ..
        } = self;
        rows(
            &cs.prices,
            &price_table(&["region", "instance_type", "pricing"]),
            |row| {
                let region = row.req("region")?;
                let it = row.known_type(cloud, types)?;
                let pricing = parse_pricing(&row)?;
                let hourly = row.f64("price")?;
                if hourly <= 0.0 {
                    return Err(row.err("price must be above zero"));
                }
                let price = Price {
                    hourly,
                    currency: parse_currency(&row)?,
                    source: row.req("source")?.to_string(),
                    as_of: row.req("as_of")?.to_string(),
                    basis: if region == "*" {
                        PriceBasis::Assumed
                    } else {
                        PriceBasis::Sourced
                    },
                };
                let slot = if region == "*" {
                    if !offered.keys().any(|(c, _, t)| *c == cloud && t == it) {
                        return Err(row.err(format!(
                            "`{it}` has a price but no region offers it (see {})",
                            cs.availability.file
                        )));
                    }
                    anywhere.entry((cloud, it.to_string())).or_default()
                } else {
                    if !offered.contains_key(&(cloud, region.to_string(), it.to_string())) {
                        return Err(row.err(format!(
                            "`{it}` has a price in `{region}`, but {} does not offer it there",
                            cs.availability.file
                        )));
                    }
                    regional
                        .entry((cloud, region.to_string(), it.to_string()))
                        .or_default()
                };
                if slot.insert(pricing, price).is_some() {
                    return Err(row.err(format!(
                        "a second {} price for `{it}` in `{region}`",
                        pricing.as_str()
                    )));
                }
                Ok(())
            },
        )?;
        Ok(())
    }

    /// Subscriptions (包年包月) by months.
    fn read_subscriptions(
        &mut self,
        cloud: Cloud,
        src: &Source<'_>,
        types: &BTreeMap<String, InstanceType>,
        cloud_regions: &[Region],
    ) -> Result<(), CatalogError> {
        let subscriptions = &mut self.subscriptions;
        rows(
            src,
            &price_table(&["region", "instance_type", "months", "note"]),
            |row| {
                let region = row.req("region")?;
                let it = row.known_type(cloud, types)?;
                if region != "*" && !cloud_regions.iter().any(|r| r.name == region) {
                    return Err(row.err(format!("unknown {cloud} region `{region}`")));
                }
                let months = row.u32("months")?;
                if months == 0 {
                    return Err(row.err("months must be at least 1"));
                }
                subscriptions.push(SubscriptionPrice {
                    cloud,
                    region: (region != "*").then(|| region.to_string()),
                    instance_type: it.to_string(),
                    months,
                    price: row.f64("price")?,
                    currency: parse_currency(&row)?,
                    source: row.req("source")?.to_string(),
                    as_of: row.req("as_of")?.to_string(),
                    note: row.get("note").to_string(),
                    live: false,
                });
                Ok(())
            },
        )?;
        Ok(())
    }

    /// Notes on a region, a type or a family (`p5*`).
    fn read_notes(
        &mut self,
        cloud: Cloud,
        src: &Source<'_>,
        types: &BTreeMap<String, InstanceType>,
        cloud_regions: &[Region],
    ) -> Result<(), CatalogError> {
        let notes = &mut self.notes;
        rows(src, &["region", "instance_type", "note"], |row| {
            let region = row.req("region")?;
            if region != "*" && !cloud_regions.iter().any(|r| r.name == region) {
                return Err(row.err(format!("unknown {cloud} region `{region}`")));
            }
            let it = row.req("instance_type")?;
            let matches = |t: &str| match it.strip_suffix('*') {
                Some(prefix) => t.starts_with(prefix),
                None => t == it,
            };
            if it != "*" && !types.keys().any(|t| matches(t)) {
                return Err(row.err(format!("`{it}` matches no {cloud} instance type")));
            }
            notes.push(Note {
                cloud,
                region: (region != "*").then(|| region.to_string()),
                instance_type: (it != "*").then(|| it.to_string()),
                text: row.req("note")?.to_string(),
            });
            Ok(())
        })?;
        Ok(())
    }

    /// Sorted, indexed, each offering with its prices.
    fn into_catalog(self) -> Catalog {
        let Tables {
            gpus,
            details,
            gpu_names,
            gpu_shared,
            mut instance_types,
            regions,
            offered,
            mut regional,
            anywhere,
            subscriptions,
            notes,
        } = self;
        instance_types.sort_by(|a, b| (a.cloud, &a.name).cmp(&(b.cloud, &b.name)));
        let instance_index = instance_types
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.cloud, t.name.clone()), i))
            .collect();
        let region_index = regions
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.cloud, r.name.clone()), i))
            .collect();

        let mut offerings = Vec::with_capacity(offered.len());
        let mut offering_info = Vec::with_capacity(offered.len());
        for ((cloud, region, it), availability) in offered {
            let mut prices = anywhere
                .get(&(cloud, it.clone()))
                .cloned()
                .unwrap_or_default();
            if let Some(r) = regional.remove(&(cloud, region.clone(), it.clone())) {
                prices.extend(r);
            }
            // Alibaba, Tencent and Huawei sell a one-year subscription (包年)
            // where AWS sells a 1-year reservation: it is their reserved-1y.
            if cloud != Cloud::Aws && !prices.contains_key(&PricingModel::Reserved1y) {
                let year = |want: Option<&str>| {
                    subscriptions.iter().find(|s: &&SubscriptionPrice| {
                        s.cloud == cloud
                            && s.instance_type == it
                            && s.months == 12
                            && s.region.as_deref() == want
                    })
                };
                if let Some(y) = year(Some(region.as_str())).or_else(|| year(None)) {
                    let hours = 12.0 * crate::HOURS_PER_MONTH;
                    prices.insert(
                        PricingModel::Reserved1y,
                        Price {
                            hourly: y.price / hours,
                            currency: y.currency,
                            source: format!(
                                "{} [one-year subscription (包年) {} {} ÷ {hours} h]",
                                y.source,
                                y.price,
                                y.currency.as_str()
                            ),
                            as_of: y.as_of.clone(),
                            basis: if y.region.is_some() {
                                PriceBasis::Sourced
                            } else {
                                PriceBasis::Assumed
                            },
                        },
                    );
                }
            }
            offerings.push(Offering {
                cloud,
                region,
                instance_type: it,
                prices,
            });
            offering_info.push(OfferingInfo { availability });
        }
        let offering_index = offerings
            .iter()
            .enumerate()
            .map(|(i, o)| ((o.cloud, o.region.clone(), o.instance_type.clone()), i))
            .collect();
        Catalog {
            gpus,
            gpu_details: details,
            gpu_names,
            gpu_shared,
            instance_types,
            instance_index,
            regions,
            region_index,
            offerings,
            offering_info,
            offering_index,
            subscriptions,
            notes,
        }
    }
}

/// One cloud's regions and their zones.
fn read_regions(cs: &CloudSources<'_>) -> Result<Vec<Region>, CatalogError> {
    let cloud = cs.cloud;
    let mut cloud_regions: Vec<Region> = Vec::new();
    rows(&cs.regions, &["region", "zones", "source"], |row| {
        let name = row.req("region")?.to_string();
        if cloud_regions.iter().any(|r| r.name == name) {
            return Err(row.err(format!("region `{name}` is listed twice")));
        }
        let zones = split_list(row.req("zones")?);
        for z in &zones {
            if !z.starts_with(name.as_str()) || z.len() == name.len() {
                return Err(row.err(format!("zone `{z}` does not belong to region `{name}`")));
            }
        }
        row.req("source")?;
        cloud_regions.push(Region { cloud, name, zones });
        Ok(())
    })?;
    Ok(cloud_regions)
}
