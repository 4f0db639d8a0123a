//! What a node needs to know to set itself up at boot: the MIG profile table
//! of each GPU model (compute and memory slices, how many instances of each
//! fit) and which instance types have local instance-store NVMe disks.
//!
//! Sources: `data/mig_profiles.csv` (NVIDIA's MIG user guide, "Supported MIG
//! Profiles") and `data/<cloud>/instance_store.csv`; see `data/README.md`.
//! Both are embedded and parsed on first use.

use crate::Cloud;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One MIG profile of one GPU model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigSlot {
    /// e.g. `3g.40gb`, `1g.10gb+me`.
    pub profile: String,
    /// Compute slices (GPCs) the profile takes.
    pub compute_slices: u32,
    /// Memory slices the profile takes.
    pub memory_slices: u32,
    /// How many instances of this profile alone fit on one GPU.
    pub max_instances: u32,
}

/// A GPU model's MIG budget and profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigTable {
    pub gpu: String,
    /// Compute slices of the whole GPU (7 on A100/H100/H200, 4 on A30).
    pub compute_slices: u32,
    /// Memory slices of the whole GPU (8 on A100/H100/H200, 4 on A30).
    pub memory_slices: u32,
    pub profiles: Vec<MigSlot>,
}

/// Why a layout does not fit a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutError {
    UnknownProfile {
        profile: String,
        known: Vec<String>,
    },
    TooMany {
        profile: String,
        count: u32,
        max: u32,
    },
    OverBudget {
        compute: u32,
        memory: u32,
        budget_compute: u32,
        budget_memory: u32,
    },
    MediaExtensions {
        count: u32,
    },
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::UnknownProfile { profile, known } => {
                write!(f, "MIG profile `{profile}` does not exist here (profiles: {})", known.join(", "))
            }
            LayoutError::TooMany { profile, count, max } => {
                write!(f, "{count} × {profile} do not fit: at most {max} per GPU")
            }
            LayoutError::OverBudget { compute, memory, budget_compute, budget_memory } => write!(
                f,
                "the layout takes {compute} compute and {memory} memory slices; one GPU has {budget_compute} compute and {budget_memory} memory slices"
            ),
            LayoutError::MediaExtensions { count } => {
                write!(f, "{count} `+me` profiles: only one instance per GPU can own the media engines")
            }
        }
    }
}

impl MigTable {
    pub fn profile(&self, name: &str) -> Option<&MigSlot> {
        self.profiles.iter().find(|p| p.profile == name)
    }

    /// Checks a per-GPU layout (profiles, repeated as many times as wanted)
    /// against the slice budget and the per-profile limits.
    pub fn check_layout(&self, layout: &[String]) -> Result<(), LayoutError> {
        let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
        let (mut compute, mut memory, mut me) = (0, 0, 0);
        for name in layout {
            let Some(slot) = self.profile(name) else {
                return Err(LayoutError::UnknownProfile {
                    profile: name.clone(),
                    known: self.profiles.iter().map(|p| p.profile.clone()).collect(),
                });
            };
            *counts.entry(slot.profile.as_str()).or_default() += 1;
            compute += slot.compute_slices;
            memory += slot.memory_slices;
            if slot.profile.ends_with("+me") {
                me += 1;
            }
        }
        for (name, count) in &counts {
            let max = self.profile(name).map(|p| p.max_instances).unwrap_or(0);
            if *count > max {
                return Err(LayoutError::TooMany {
                    profile: name.to_string(),
                    count: *count,
                    max,
                });
            }
        }
        if compute > self.compute_slices || memory > self.memory_slices {
            return Err(LayoutError::OverBudget {
                compute,
                memory,
                budget_compute: self.compute_slices,
                budget_memory: self.memory_slices,
            });
        }
        if me > 1 {
            return Err(LayoutError::MediaExtensions { count: me });
        }
        Ok(())
    }

    /// A single profile as the full layout of one GPU: as many as fit.
    pub fn fill(&self, profile: &str) -> Option<Vec<String>> {
        let slot = self.profile(profile)?;
        let by_compute = self.compute_slices / slot.compute_slices.max(1);
        let by_memory = self.memory_slices / slot.memory_slices.max(1);
        let n = slot.max_instances.min(by_compute).min(by_memory);
        Some(vec![slot.profile.clone(); n as usize])
    }
}

/// Local instance-store NVMe disks of an instance type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceStore {
    pub devices: u32,
    pub device_gb: u32,
}

const MIG_CSV: &str = include_str!("../data/mig_profiles.csv");
const AWS_STORE_CSV: &str = include_str!("../data/aws/instance_store.csv");

fn records(text: &str) -> Vec<csv::StringRecord> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text.as_bytes());
    r.records()
        .map(|r| r.expect("embedded CSV is checked by the crate's tests"))
        .collect()
}

fn num(rec: &csv::StringRecord, i: usize) -> u32 {
    rec.get(i)
        .and_then(|s| s.trim().parse().ok())
        .expect("embedded CSV is checked by the crate's tests")
}

fn mig_tables() -> &'static BTreeMap<String, MigTable> {
    static TABLES: OnceLock<BTreeMap<String, MigTable>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut out: BTreeMap<String, MigTable> = BTreeMap::new();
        for rec in records(MIG_CSV) {
            let gpu = rec[0].to_string();
            let t = out.entry(gpu.clone()).or_insert_with(|| MigTable {
                gpu,
                compute_slices: num(&rec, 5),
                memory_slices: num(&rec, 6),
                profiles: Vec::new(),
            });
            t.profiles.push(MigSlot {
                profile: rec[1].to_string(),
                compute_slices: num(&rec, 2),
                memory_slices: num(&rec, 3),
                max_instances: num(&rec, 4),
            });
        }
        out
    })
}

/// The MIG table of a GPU model (canonical catalog name), if it has MIG.
pub fn mig_table(gpu: &str) -> Option<&'static MigTable> {
    mig_tables().get(gpu)
}

/// The instance-store NVMe disks of `instance_type` on `cloud`; `None` when
/// the type has none or the catalog does not know (only AWS is sourced).
pub fn instance_store(cloud: Cloud, instance_type: &str) -> Option<InstanceStore> {
    static AWS: OnceLock<BTreeMap<String, InstanceStore>> = OnceLock::new();
    let aws = AWS.get_or_init(|| {
        records(AWS_STORE_CSV)
            .into_iter()
            .map(|rec| {
                (
                    rec[0].to_string(),
                    InstanceStore {
                        devices: num(&rec, 1),
                        device_gb: num(&rec, 2),
                    },
                )
            })
            .collect()
    });
    match cloud {
        Cloud::Aws => aws.get(instance_type).copied(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mig_row_parses_and_names_a_catalog_gpu() {
        let catalog = crate::Catalog::builtin();
        assert!(mig_tables().len() >= 10);
        for (gpu, t) in mig_tables() {
            assert!(catalog.gpu(gpu).is_ok(), "{gpu} is not in gpus.csv");
            for p in &t.profiles {
                assert!(p.compute_slices <= t.compute_slices && p.memory_slices <= t.memory_slices);
                // A profile alone repeated max_instances times fits the budget.
                let layout = vec![p.profile.clone(); p.max_instances as usize];
                assert_eq!(t.check_layout(&layout), Ok(()), "{gpu} {}", p.profile);
            }
        }
        for name in [
            "A100-40GB",
            "A100-80GB",
            "A30",
            "H100-80GB-SXM",
            "H200-141GB",
            "H20",
            "H800-80GB-SXM",
        ] {
            assert!(mig_table(name).is_some(), "{name}");
        }
    }

    #[test]
    fn layouts_are_checked_against_the_slice_budget() {
        let t = mig_table("A100-80GB").unwrap();
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            t.check_layout(&l(&["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"])),
            Ok(())
        );
        assert_eq!(
            t.check_layout(&l(&["4g.40gb", "3g.40gb", "1g.10gb"])),
            Err(LayoutError::OverBudget {
                compute: 8,
                memory: 9,
                budget_compute: 7,
                budget_memory: 8
            })
        );
        assert_eq!(
            t.check_layout(&l(&["3g.40gb", "3g.40gb", "3g.40gb"])),
            Err(LayoutError::TooMany {
                profile: "3g.40gb".into(),
                count: 3,
                max: 2
            })
        );
        assert!(matches!(
            t.check_layout(&l(&["3g.20gb"])),
            Err(LayoutError::UnknownProfile { .. })
        ));
        assert_eq!(t.fill("3g.40gb"), Some(l(&["3g.40gb", "3g.40gb"])));
        assert_eq!(t.fill("1g.20gb").map(|v| v.len()), Some(4));
        assert_eq!(
            mig_table("A30").unwrap().fill("2g.12gb").map(|v| v.len()),
            Some(2)
        );
    }

    #[test]
    fn instance_store_rows_name_catalog_types() {
        let catalog = crate::Catalog::builtin();
        for rec in records(AWS_STORE_CSV) {
            assert!(
                catalog
                    .instance_types(Cloud::Aws)
                    .iter()
                    .any(|t| t.name == rec[0]),
                "{} is not an AWS type in the catalog",
                &rec[0]
            );
        }
        assert_eq!(
            instance_store(Cloud::Aws, "p4de.24xlarge"),
            Some(InstanceStore {
                devices: 8,
                device_gb: 1000
            })
        );
        assert_eq!(instance_store(Cloud::Aws, "p3.2xlarge"), None);
    }
}
