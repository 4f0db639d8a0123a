//! A data volume's type in gpuform's neutral words: the one type the spec
//! (`disk.data_type`), the typed request (`VolumeSpec::volume_type`), the
//! recorded attributes and the inventory use, with its one default. Each
//! cloud crate maps it to its own disk names in one table
//! (`providers/<cloud>/src/volume_types.rs`), an exhaustive `match`, and
//! reads the cloud's names back through [`ObservedVolumeType::read`].
//!
//! What the four clouds sell, per their API references:
//! - EBS `VolumeType` (CreateVolume,
//!   docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html):
//!   `gp2`/`gp3` general-purpose SSD, `io1`/`io2` provisioned-IOPS SSD,
//!   `st1` throughput HDD, `sc1` cold HDD, `standard` previous-generation
//!   magnetic.
//! - Alibaba ECS `DiskCategory` (CreateDisk,
//!   alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-createdisk):
//!   `cloud` basic, `cloud_efficiency` ultra disk, `cloud_ssd` standard SSD,
//!   `cloud_essd` ESSD (PL0–PL3), `cloud_auto` ESSD AutoPL, `cloud_essd_entry`.
//! - Tencent CBS `DiskType` (CreateDisks,
//!   tencentcloud.com/document/api/362/16312): `CLOUD_BASIC` HDD cloud
//!   storage, `CLOUD_PREMIUM` premium cloud disk (HDD-based), `CLOUD_BSSD`
//!   balanced SSD, `CLOUD_SSD` SSD, `CLOUD_HSSD` enhanced SSD, `CLOUD_TSSD`
//!   ultra SSD.
//! - Huawei EVS `volume_type` ("Creating EVS Disks",
//!   support.huaweicloud.com/api-evs/evs_04_2003.html): `SATA` common I/O,
//!   `SAS` high I/O (both HDD), `GPSSD` general-purpose SSD, `SSD` ultra-high
//!   I/O, `ESSD` extreme SSD, `GPSSD2`/`ESSD2`.
//!
//! Every cloud sells an SSD and a hard-disk class, so those are the neutral
//! types. The faster tiers are not one thing across clouds: each is sized by
//! its own performance parameter (EBS `Iops`, ESSD `PerformanceLevel`, CBS
//! `ThroughputPerformance`), which a neutral name alone cannot say.
//!
//! The clouds' own names are not accepted: the same word means different
//! disks on different clouds (`standard` is magnetic on EBS and was
//! Tencent's premium cloud disk; `SSD` is Huawei's ultra-high I/O), and a
//! spec must mean one thing wherever it lands.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The type of a node's data volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VolumeType {
    /// A general-purpose SSD (default): EBS gp3, Alibaba ESSD, Tencent
    /// SSD cloud disk, Huawei ultra-high I/O.
    #[default]
    Ssd,
    /// A hard-disk volume, cheaper per GB, for large sequential data: EBS
    /// st1, Alibaba ultra disk, Tencent premium cloud disk, Huawei high I/O.
    Hdd,
}

impl VolumeType {
    pub const ALL: [VolumeType; 2] = [VolumeType::Ssd, VolumeType::Hdd];

    /// The spec's name (also the recorded `volume_type` attribute).
    pub fn as_str(self) -> &'static str {
        match self {
            VolumeType::Ssd => "ssd",
            VolumeType::Hdd => "hdd",
        }
    }

    /// Every name the spec accepts, in [`VolumeType::ALL`]'s order.
    pub fn names() -> [&'static str; 2] {
        Self::ALL.map(VolumeType::as_str)
    }

    /// What it is, in a few words (for hints and the schema).
    pub fn describe(self) -> &'static str {
        match self {
            VolumeType::Ssd => "general-purpose SSD, the default",
            VolumeType::Hdd => "hard disk, cheaper per GB",
        }
    }

    /// A neutral name; a cloud's own name (`gp3`, `SSD`) is not one.
    pub fn parse(s: &str) -> Option<VolumeType> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for VolumeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A volume's type as a cloud reports it: the neutral type whose cloud name
/// it is, or else the cloud's own name as the cloud spells it (a disk made
/// outside gpuform, such as an EBS `io2`), which never equals a neutral
/// name, so a plan sees it differ from the spec's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ObservedVolumeType {
    Neutral(VolumeType),
    Cloud(String),
}

impl ObservedVolumeType {
    /// Reads `native` through a cloud's table (`to_cloud`: neutral → the
    /// cloud's name), so the reverse direction is derived, never written.
    pub fn read(native: &str, to_cloud: fn(VolumeType) -> &'static str) -> ObservedVolumeType {
        VolumeType::ALL
            .into_iter()
            .find(|t| to_cloud(*t) == native)
            .map_or_else(
                || ObservedVolumeType::Cloud(native.to_string()),
                ObservedVolumeType::Neutral,
            )
    }

    /// From an observed attribute: a neutral name, or a cloud's own.
    pub fn from_attr(s: &str) -> ObservedVolumeType {
        VolumeType::parse(s).map_or_else(
            || ObservedVolumeType::Cloud(s.to_string()),
            ObservedVolumeType::Neutral,
        )
    }

    /// What refresh records as the `volume_type` attribute.
    pub fn as_str(&self) -> &str {
        match self {
            ObservedVolumeType::Neutral(t) => t.as_str(),
            ObservedVolumeType::Cloud(s) => s,
        }
    }
}

impl fmt::Display for ObservedVolumeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(t: VolumeType) -> &'static str {
        match t {
            VolumeType::Ssd => "FAST",
            VolumeType::Hdd => "SLOW",
        }
    }

    #[test]
    fn names_parse_back_and_serde_agrees() {
        for t in VolumeType::ALL {
            assert_eq!(VolumeType::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert_eq!(VolumeType::default(), VolumeType::Ssd);
        // The clouds' own names are not neutral ones.
        for cloud_name in ["gp3", "SSD", "standard", "cloud_essd", "CLOUD_PREMIUM"] {
            assert_eq!(VolumeType::parse(cloud_name), None, "{cloud_name}");
        }
    }

    #[test]
    fn a_cloud_name_reads_back_through_its_table_or_stays_the_clouds() {
        assert_eq!(
            ObservedVolumeType::read("SLOW", table),
            ObservedVolumeType::Neutral(VolumeType::Hdd)
        );
        let other = ObservedVolumeType::read("io2", table);
        assert_eq!(other, ObservedVolumeType::Cloud("io2".into()));
        assert_eq!(ObservedVolumeType::from_attr(other.as_str()), other);
        assert_eq!(
            serde_json::to_value(ObservedVolumeType::Neutral(VolumeType::Ssd)).unwrap(),
            "ssd"
        );
        assert_eq!(
            serde_json::from_value::<ObservedVolumeType>(serde_json::json!("hdd")).unwrap(),
            ObservedVolumeType::Neutral(VolumeType::Hdd)
        );
    }
}
