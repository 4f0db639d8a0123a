//! `gpuform lockin`: for each cluster of a spec and each cloud, could the
//! cluster run there (and at what cost), or what ties it to its cloud.
//!
//! The portability questions live here and are shared with `migrate`:
//! [`Requirement`] (what a cluster needs, in neutral words) and
//! [`find_equivalent`] (the cheapest instance type meeting it in a cloud,
//! or the nearest one with the difference named, or why there is none).

// `map_or(true, …)` keeps the workspace MSRV (1.80; `is_none_or` is 1.82).
#![allow(clippy::unnecessary_map_or)]

use crate::spec::{CloudName, Cluster, Fabric, LoadedSpec};
use crate::views::{self, usd};
use gpuform_catalog::HOURS_PER_MONTH;
use gpuform_catalog::{Catalog, Interconnect, OfferQuery, PricingModel, RdmaKind};
use gpuform_provider::Cloud;
use gpuform_provider::UserError;
use serde::Serialize;

/// What a cluster needs from an instance type, in neutral words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Requirement {
    /// Canonical GPU model name.
    pub gpu_model: String,
    pub gpu_count: u32,
    pub interconnect: Option<Interconnect>,
    pub rdma: bool,
    pub pricing: PricingModel,
    /// MIG profiles of one GPU's layout (empty: no MIG).
    pub mig: Vec<String>,
    pub nodes: u32,
}

impl Requirement {
    /// The requirement of a cluster; an error when its GPU model is not in the catalog.
    pub fn of(catalog: &Catalog, c: &Cluster) -> Result<Requirement, String> {
        let gpu = catalog.gpu(&c.gpu.model).map_err(|e| e.to_string())?;
        Ok(Requirement {
            gpu_model: gpu.name.clone(),
            gpu_count: c.gpu.count,
            interconnect: c.interconnect.required(),
            rdma: c.fabric == Fabric::Rdma,
            pricing: c.pricing,
            mig: c
                .mig
                .as_ref()
                .map(|m| m.profiles().iter().map(|p| p.to_string()).collect())
                .unwrap_or_default(),
            nodes: c.nodes,
        })
    }

    /// e.g. `8 × A100-80GB, nvlink, RDMA`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} × {}", self.gpu_count, self.gpu_model);
        if let Some(i) = self.interconnect {
            s.push_str(&format!(", {}", i.as_str()));
        }
        if self.rdma {
            s.push_str(", RDMA");
        }
        s
    }

    fn query(&self, cloud: Cloud, region: Option<&str>, cny_per_usd: f64) -> OfferQuery {
        OfferQuery {
            cloud: Some(cloud),
            region: region.map(str::to_string),
            gpu_model: Some(self.gpu_model.clone()),
            gpu_count: Some(self.gpu_count),
            interconnect: self.interconnect,
            rdma: self.rdma.then_some(true),
            pricing: self.pricing,
            cny_per_usd,
            ..OfferQuery::default()
        }
    }
}

/// An instance type standing in for a cluster's in some cloud and region.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Equivalent {
    pub cloud: Cloud,
    pub region: String,
    pub instance_type: String,
    pub gpu_model: String,
    pub gpu_count: u32,
    pub interconnect: Option<Interconnect>,
    pub rdma: Option<RdmaKind>,
    /// Per instance-hour, USD, for the requirement's pricing model.
    pub hourly_usd: Option<f64>,
    /// True when it meets the requirement exactly.
    pub exact: bool,
    /// How it differs from the requirement (empty when exact).
    pub difference: Option<String>,
    /// Zones the catalog names for this offering, if any.
    pub zones: Option<Vec<String>>,
}

/// Why a cluster cannot run somewhere as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReasonKind {
    GpuNotOffered,
    GpuCountNotOffered,
    InterconnectUnavailable,
    FabricUnavailable,
    EscapeHatch,
    RawImage,
    MigUnsupported,
    RegionNotKnown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub kind: ReasonKind,
    pub message: String,
}

impl Reason {
    fn new(kind: ReasonKind, message: impl Into<String>) -> Reason {
        Reason {
            kind,
            message: message.into(),
        }
    }
}

/// The cheapest exact equivalent of `req` in `cloud` (and `region`, when
/// given; otherwise the cheapest region), or else the nearest one by the
/// catalog's `closest` order, staying in that cloud (and region). `Err`
/// says why there is nothing at all.
pub fn find_equivalent(
    catalog: &Catalog,
    req: &Requirement,
    cloud: Cloud,
    region: Option<&str>,
    cny_per_usd: f64,
) -> Result<Equivalent, Vec<Reason>> {
    let q = req.query(cloud, region, cny_per_usd);
    let to_eq = |m: &gpuform_catalog::Match<'_>, exact: bool| Equivalent {
        cloud,
        region: m.offering.region.clone(),
        instance_type: m.instance.name.clone(),
        gpu_model: m.instance.gpu_model.clone(),
        gpu_count: m.instance.gpu_count,
        interconnect: m.instance.interconnect,
        rdma: m.instance.rdma,
        hourly_usd: m.hourly_usd,
        exact,
        difference: m.difference.clone(),
        zones: catalog
            .availability(cloud, &m.offering.region, &m.instance.name)
            .and_then(|a| a.zones.clone())
            .filter(|z| !z.is_empty()),
    };
    if let Some(m) = catalog.matching(&q).first() {
        return Ok(to_eq(m, true));
    }
    let reasons = why_not(catalog, req, cloud, region, cny_per_usd);
    if reasons.iter().any(|r| {
        matches!(
            r.kind,
            ReasonKind::GpuNotOffered | ReasonKind::RegionNotKnown
        )
    }) {
        return Err(reasons);
    }
    let nearest = catalog
        .closest(&q, usize::MAX)
        .into_iter()
        .find(|m| m.offering.cloud == cloud && region.map_or(true, |r| m.offering.region == r));
    match nearest {
        Some(m) => Ok(to_eq(&m, false)),
        None => Err(reasons),
    }
}

/// Why no instance type of `cloud` (in `region`) meets `req` exactly, most
/// basic reason first.
pub fn why_not(
    catalog: &Catalog,
    req: &Requirement,
    cloud: Cloud,
    region: Option<&str>,
    cny_per_usd: f64,
) -> Vec<Reason> {
    let full = req.query(cloud, region, cny_per_usd);
    let where_ = match region {
        Some(r) => format!("{cloud} {r}"),
        None => cloud.to_string(),
    };
    if let Some(r) = region {
        if catalog.region(cloud, r).is_none() {
            return vec![Reason::new(
                ReasonKind::RegionNotKnown,
                format!("{r} is not a {cloud} region gpuform knows"),
            )];
        }
    }
    let model_only = OfferQuery {
        gpu_count: None,
        interconnect: None,
        rdma: None,
        ..full.clone()
    };
    let with_model = catalog.matching(&model_only);
    if with_model.is_empty() {
        let elsewhere = region.is_some()
            && !catalog
                .matching(&OfferQuery {
                    region: None,
                    ..model_only.clone()
                })
                .is_empty();
        return vec![Reason::new(
            ReasonKind::GpuNotOffered,
            if elsewhere {
                format!(
                    "{where_} does not offer {} (other {cloud} regions do)",
                    req.gpu_model
                )
            } else {
                format!("{where_} does not offer {}", req.gpu_model)
            },
        )];
    }
    let with_count: Vec<_> = with_model
        .iter()
        .filter(|m| m.instance.gpu_count == req.gpu_count)
        .collect();
    if with_count.is_empty() {
        let mut counts: Vec<u32> = with_model.iter().map(|m| m.instance.gpu_count).collect();
        counts.sort_unstable();
        counts.dedup();
        let counts: Vec<String> = counts.iter().map(u32::to_string).collect();
        return vec![Reason::new(
            ReasonKind::GpuCountNotOffered,
            format!(
                "{where_} has {} only {} per instance, not {}",
                req.gpu_model,
                counts.join(", "),
                req.gpu_count
            ),
        )];
    }
    let mut out = Vec::new();
    if let Some(ic) = req.interconnect {
        if !with_count
            .iter()
            .any(|m| m.instance.interconnect == Some(ic))
        {
            let have: Vec<&str> = with_count
                .iter()
                .map(|m| {
                    m.instance
                        .interconnect
                        .map_or("not stated", Interconnect::as_str)
                })
                .collect();
            out.push(Reason::new(
                ReasonKind::InterconnectUnavailable,
                format!(
                    "no {} × {} over {} on {where_} (interconnect: {})",
                    req.gpu_count,
                    req.gpu_model,
                    ic.as_str(),
                    dedup(have).join(", ")
                ),
            ));
        }
    }
    if req.rdma && !with_count.iter().any(|m| m.instance.rdma.is_some()) {
        out.push(Reason::new(
            ReasonKind::FabricUnavailable,
            format!(
                "no {} × {} with an RDMA fabric on {where_}",
                req.gpu_count, req.gpu_model
            ),
        ));
    }
    if out.is_empty() {
        // Each constraint is met by some type, but no type meets them all.
        out.push(Reason::new(
            ReasonKind::FabricUnavailable,
            format!(
                "no {} × {} with both {} and RDMA on {where_}",
                req.gpu_count,
                req.gpu_model,
                req.interconnect
                    .map_or("its interconnect", Interconnect::as_str)
            ),
        ));
    }
    out
}

fn dedup(mut v: Vec<&str>) -> Vec<&str> {
    v.sort_unstable();
    v.dedup();
    v
}

/// A raw image id rather than a logical image name: of `cloud`, or of any
/// cloud when it is not known (`cloud: any`). Each cloud's own format
/// answers (`gpuform_provider::is_raw_image_id`).
pub fn is_raw_image(cloud: Option<Cloud>, image: &str) -> bool {
    match cloud {
        Some(c) => gpuform_provider::is_raw_image_id(c, image),
        None => gpuform_provider::is_raw_image_id_on_any(image),
    }
}

/// The cloud a spec's `cloud:` names (`sandbox` mirrors AWS), `None` for `any`.
pub fn spec_cloud(c: CloudName) -> Option<Cloud> {
    match c {
        CloudName::Aws | CloudName::Sandbox => Some(Cloud::Aws),
        CloudName::Alibaba => Some(Cloud::Alibaba),
        CloudName::Tencent => Some(Cloud::Tencent),
        CloudName::Huawei => Some(Cloud::Huawei),
        CloudName::Any => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Where the cluster runs now.
    Current,
    Portable,
    NotPortable,
}

/// One cluster × cloud.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub cloud: Cloud,
    pub status: Status,
    /// The cheapest equivalent there (exact when portable; the nearest otherwise, if any).
    pub equivalent: Option<Equivalent>,
    /// The whole cluster per hour (nodes × instance), USD, when the price is known.
    pub cluster_hourly_usd: Option<f64>,
    pub reasons: Vec<Reason>,
}

/// One cluster's row of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterRow {
    pub cluster: String,
    pub requirement: Option<Requirement>,
    /// Where it runs now (`None` for `cloud: any`).
    pub current_cloud: Option<Cloud>,
    pub current_region: Option<String>,
    pub cells: Vec<Cell>,
    /// Facts about the row (sandbox mirror, `cloud: any`, unknown GPU...).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockinReport {
    pub file: String,
    pub clouds: Vec<Cloud>,
    pub clusters: Vec<ClusterRow>,
    pub cny_per_usd: f64,
}

/// The matrix clusters × clouds of a loaded spec.
pub fn lockin(loaded: &LoadedSpec, catalog: &Catalog, cny_per_usd: f64) -> LockinReport {
    let clouds = Cloud::ALL.to_vec();
    let mut rows = Vec::new();
    for (name, c) in &loaded.spec.clusters {
        rows.push(cluster_row(catalog, name, c, &clouds, cny_per_usd));
    }
    LockinReport {
        file: loaded.path.display().to_string(),
        clouds,
        clusters: rows,
        cny_per_usd,
    }
}

fn cluster_row(
    catalog: &Catalog,
    name: &str,
    c: &Cluster,
    clouds: &[Cloud],
    cny_per_usd: f64,
) -> ClusterRow {
    let mut notes = Vec::new();
    let current = spec_cloud(c.cloud);
    match c.cloud {
        CloudName::Sandbox => notes.push("cloud: sandbox mirrors aws".to_string()),
        CloudName::Any => notes.push(if c.candidates.is_empty() {
            "cloud: any — gpuform picks among every cloud".to_string()
        } else {
            format!(
                "cloud: any — gpuform picks among {}",
                c.candidates.join(", ")
            )
        }),
        _ => {}
    }
    let req = match Requirement::of(catalog, c) {
        Ok(r) => r,
        Err(e) => {
            notes.push(e.clone());
            return ClusterRow {
                cluster: name.to_string(),
                requirement: None,
                current_cloud: current,
                current_region: current.map(|_| c.region.clone()),
                cells: clouds
                    .iter()
                    .map(|&cloud| Cell {
                        cloud,
                        status: if Some(cloud) == current {
                            Status::Current
                        } else {
                            Status::NotPortable
                        },
                        equivalent: None,
                        cluster_hourly_usd: None,
                        reasons: vec![Reason::new(ReasonKind::GpuNotOffered, e.clone())],
                    })
                    .collect(),
                notes,
            };
        }
    };
    let mut cells = Vec::new();
    for &cloud in clouds {
        let is_current = Some(cloud) == current;
        let mut reasons = Vec::new();
        let equivalent = if is_current {
            current_equivalent(catalog, c, &req, cloud, cny_per_usd, &mut reasons)
        } else {
            match find_equivalent(catalog, &req, cloud, None, cny_per_usd) {
                Ok(e) => {
                    if !e.exact {
                        reasons.extend(why_not(catalog, &req, cloud, None, cny_per_usd));
                    }
                    Some(e)
                }
                Err(r) => {
                    reasons.extend(r);
                    None
                }
            }
        };
        if !is_current {
            if let Some(raw) = &c.instance_type {
                reasons.push(Reason::new(
                    ReasonKind::EscapeHatch,
                    format!(
                        "raw instance type `{raw}` (escape hatch) exists only on {}; `gpuform migrate` replaces it",
                        current.map_or("its cloud".to_string(), |c| c.to_string())
                    ),
                ));
            }
            if is_raw_image(current, &c.image) {
                reasons.push(Reason::new(
                    ReasonKind::RawImage,
                    format!(
                        "raw image id `{}` exists only on {}",
                        c.image,
                        current.map_or("its cloud".to_string(), |c| c.to_string())
                    ),
                ));
            }
        }
        for profile in &req.mig {
            if let Ok(g) = catalog.gpu(&req.gpu_model) {
                if !g.mig_profiles.iter().any(|p| &p.name == profile) {
                    reasons.push(Reason::new(
                        ReasonKind::MigUnsupported,
                        format!("MIG profile `{profile}` is not possible on {}", g.name),
                    ));
                }
            }
        }
        let status = if is_current {
            Status::Current
        } else if reasons.is_empty() && equivalent.as_ref().is_some_and(|e| e.exact) {
            Status::Portable
        } else {
            Status::NotPortable
        };
        let cluster_hourly_usd = equivalent
            .as_ref()
            .and_then(|e| e.hourly_usd)
            .map(|h| h * f64::from(req.nodes));
        cells.push(Cell {
            cloud,
            status,
            equivalent,
            cluster_hourly_usd,
            reasons,
        });
    }
    ClusterRow {
        cluster: name.to_string(),
        requirement: Some(req),
        current_cloud: current,
        current_region: current.map(|_| c.region.clone()),
        cells,
        notes,
    }
}

/// What the cluster runs on now: its raw instance type, or the cheapest match in its region.
fn current_equivalent(
    catalog: &Catalog,
    c: &Cluster,
    req: &Requirement,
    cloud: Cloud,
    cny_per_usd: f64,
    reasons: &mut Vec<Reason>,
) -> Option<Equivalent> {
    if let Some(raw) = &c.instance_type {
        let o = catalog.offering(cloud, &c.region, raw)?;
        let t = catalog.instance_type(cloud, raw)?;
        return Some(Equivalent {
            cloud,
            region: c.region.clone(),
            instance_type: raw.clone(),
            gpu_model: t.gpu_model.clone(),
            gpu_count: t.gpu_count,
            interconnect: t.interconnect,
            rdma: t.rdma,
            hourly_usd: o
                .prices
                .get(&req.pricing)
                .map(|p| p.hourly_usd(cny_per_usd)),
            exact: true,
            difference: None,
            zones: None,
        });
    }
    match find_equivalent(catalog, req, cloud, Some(&c.region), cny_per_usd) {
        Ok(e) if e.exact => Some(e),
        Ok(_) | Err(_) => {
            reasons.extend(why_not(catalog, req, cloud, Some(&c.region), cny_per_usd));
            None
        }
    }
}

/// `+12%` / `-30%` of `new` against `old`.
pub fn percent_delta(old: f64, new: f64) -> String {
    if old <= 0.0 {
        return String::new();
    }
    let d = (new - old) / old * 100.0;
    if d.abs() < 0.5 {
        "±0%".to_string()
    } else {
        format!("{d:+.0}%")
    }
}

/// The matrix as a table, then every reason in full.
pub fn render_table(r: &LockinReport) -> String {
    let mut header = vec!["cluster".to_string()];
    header.extend(r.clouds.iter().map(|c| c.to_string()));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = views::table(&header, true);
    let mut details = Vec::new();
    for row in &r.clusters {
        let current_cost = row
            .cells
            .iter()
            .find(|c| c.status == Status::Current)
            .and_then(|c| c.cluster_hourly_usd);
        let mut first = vec![row.cluster.clone()];
        if let Some(req) = &row.requirement {
            first.push(format!(
                "{} node{} × {}",
                req.nodes,
                if req.nodes == 1 { "" } else { "s" },
                req.describe()
            ));
            first.push(req.pricing.as_str().to_string());
        }
        let mut cells = vec![first.join("\n")];
        for cell in &row.cells {
            let mut lines = Vec::new();
            let mark = match cell.status {
                Status::Current => "● current",
                Status::Portable => "✓ portable",
                Status::NotPortable => "✗ not portable",
            };
            lines.push(mark.to_string());
            if let Some(e) = &cell.equivalent {
                let label = if e.exact || cell.status == Status::Current {
                    e.instance_type.clone()
                } else {
                    format!("nearest: {}", e.instance_type)
                };
                lines.push(label);
                lines.push(e.region.clone());
                lines.push(match cell.cluster_hourly_usd {
                    Some(h) => {
                        let delta = match (cell.status, current_cost) {
                            (Status::Current, _) | (_, None) => String::new(),
                            (_, Some(old)) => format!(" ({})", percent_delta(old, h)),
                        };
                        format!("{}/h{delta}", usd(h))
                    }
                    None => "price unknown".to_string(),
                });
            }
            for reason in &cell.reasons {
                lines.push(short_reason(&reason.kind).to_string());
                details.push(format!(
                    "  {} on {}: {}",
                    row.cluster, cell.cloud, reason.message
                ));
            }
            cells.push(lines.join("\n"));
        }
        t.add_row(cells);
        for n in &row.notes {
            details.push(format!("  {}: {n}", row.cluster));
        }
    }
    let mut out = format!("Lock-in of {} (cost: whole cluster per hour):\n", r.file);
    out.push_str(&t.to_string());
    out.push('\n');
    if !details.is_empty() {
        out.push_str("Why:\n");
        for d in details {
            out.push_str(&d);
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "Monthly = hourly × {HOURS_PER_MONTH} h. Prices in CNY converted at {:.2} CNY per USD. Move a cluster with `gpuform migrate CLUSTER --to CLOUD {}`.\n",
        r.cny_per_usd, r.file
    ));
    out
}

fn short_reason(k: &ReasonKind) -> &'static str {
    match k {
        ReasonKind::GpuNotOffered => "GPU not offered",
        ReasonKind::GpuCountNotOffered => "GPU count not offered",
        ReasonKind::InterconnectUnavailable => "interconnect unavailable",
        ReasonKind::FabricUnavailable => "RDMA fabric unavailable",
        ReasonKind::EscapeHatch => "raw instance type",
        ReasonKind::RawImage => "raw image id",
        ReasonKind::MigUnsupported => "MIG profile impossible",
        ReasonKind::RegionNotKnown => "region unknown",
    }
}

/// Checks a `--to CLOUD[/REGION]` target.
pub fn parse_target(catalog: &Catalog, text: &str) -> Result<(Cloud, Option<String>), UserError> {
    let (cloud, region) = match text.split_once('/') {
        Some((c, r)) => (c, Some(r.trim())),
        None => (text, None),
    };
    if cloud.trim().eq_ignore_ascii_case("sandbox") || cloud.trim().eq_ignore_ascii_case("any") {
        return Err(UserError::new(
            format!("cannot migrate to `{cloud}`"),
            "name a cloud: aws, alibaba, tencent or huawei (use --sandbox on plan/apply to simulate it)",
        ));
    }
    let cloud = crate::market::offers::parse_cloud(cloud)?;
    match region {
        Some("") => Err(UserError::new(
            format!("`{text}` has an empty region"),
            format!("write {cloud} or {cloud}/REGION"),
        )),
        Some(r) => {
            crate::market::offers::check_region(catalog, Some(cloud), r)?;
            Ok((cloud, Some(r.to_string())))
        }
        None => Ok((cloud, None)),
    }
}
