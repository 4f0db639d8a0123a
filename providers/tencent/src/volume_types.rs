//! The one table of Tencent CBS disk types: gpuform's neutral
//! [`VolumeType`] → CreateDisks' `DiskType`
//! (tencentcloud.com/document/api/362/16312: CLOUD_BASIC "HDD cloud
//! storage", CLOUD_PREMIUM "premium cloud disk", CLOUD_BSSD, CLOUD_SSD,
//! CLOUD_HSSD, CLOUD_TSSD). Read back from DescribeDisks' `DiskType` through
//! the same table ([`observed`]); a type gpuform does not make reads as CBS
//! names it.

use gpuform_provider::{ObservedVolumeType, VolumeType};

/// The `DiskType` of a neutral type.
pub(crate) fn disk_type(t: VolumeType) -> &'static str {
    match t {
        VolumeType::Ssd => "CLOUD_SSD",
        // Premium cloud disk: CBS's hard-disk-backed type (with an SSD
        // cache) still sold; CLOUD_BASIC is no longer offered for new disks.
        VolumeType::Hdd => "CLOUD_PREMIUM",
    }
}

/// The neutral type of a disk's `DiskType`, or CBS's name for it.
pub(crate) fn observed(disk_type_name: &str) -> ObservedVolumeType {
    ObservedVolumeType::read(disk_type_name, disk_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_neutral_type_is_one_disk_type_and_reads_back() {
        // `ssd` is pinned: states recorded before the neutral type say `ssd`
        // for disks of this name, and must read back unchanged.
        assert_eq!(disk_type(VolumeType::Ssd), "CLOUD_SSD");
        assert_eq!(disk_type(VolumeType::Hdd), "CLOUD_PREMIUM");
        for t in VolumeType::ALL {
            assert_eq!(observed(disk_type(t)), ObservedVolumeType::Neutral(t));
        }
        assert_eq!(
            observed("CLOUD_HSSD"),
            ObservedVolumeType::Cloud("CLOUD_HSSD".into())
        );
    }
}
