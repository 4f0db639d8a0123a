//! The one table of Huawei EVS disk types: gpuform's neutral [`VolumeType`]
//! → the `volume_type` of "Creating EVS Disks"
//! (support.huaweicloud.com/api-evs/evs_04_2003.html: SATA common I/O, SAS
//! high I/O, GPSSD general-purpose SSD, SSD ultra-high I/O, ESSD extreme
//! SSD), also the system disk's `root_volume.volumetype` ("Creating an ECS",
//! support.huaweicloud.com/api-ecs/ecs_02_1009.html). Read back through the
//! same table ([`observed`]); a type gpuform does not make reads as EVS
//! names it.

use gpuform_provider::{ObservedVolumeType, VolumeType};

/// The EVS `volume_type` of a neutral type.
pub(crate) fn evs_type(t: VolumeType) -> &'static str {
    match t {
        // Ultra-high I/O: the SSD type every region sells.
        VolumeType::Ssd => "SSD",
        // High I/O, hard-disk-backed; SATA (common I/O) is the previous
        // generation.
        VolumeType::Hdd => "SAS",
    }
}

/// The neutral type of a disk's `volume_type`, or EVS's name for it.
pub(crate) fn observed(evs: &str) -> ObservedVolumeType {
    ObservedVolumeType::read(evs, evs_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_neutral_type_is_one_evs_type_and_reads_back() {
        // `ssd` is pinned: states recorded before the neutral type say `ssd`
        // for disks of this name, and must read back unchanged.
        assert_eq!(evs_type(VolumeType::Ssd), "SSD");
        assert_eq!(evs_type(VolumeType::Hdd), "SAS");
        for t in VolumeType::ALL {
            assert_eq!(observed(evs_type(t)), ObservedVolumeType::Neutral(t));
        }
        // Huawei's `SSD` is its own name, not the neutral `ssd` as typed.
        assert_eq!(observed("GPSSD"), ObservedVolumeType::Cloud("GPSSD".into()));
    }
}
