//! The one table of Alibaba disk categories: gpuform's neutral
//! [`VolumeType`] → CreateDisk's `DiskCategory`
//! (alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-createdisk),
//! also the system disk's `SystemDisk.Category` (RunInstances). Read back
//! from DescribeDisks' `Category` through the same table ([`observed`]); a
//! category gpuform does not make (`cloud`, `cloud_ssd`, `cloud_auto`,
//! `cloud_essd_entry`) reads as ECS names it.

use gpuform_provider::{ObservedVolumeType, VolumeType};

/// The `DiskCategory` of a neutral type.
pub(crate) fn category(t: VolumeType) -> &'static str {
    match t {
        // Enterprise SSD (ESSD), at its default performance level PL1.
        VolumeType::Ssd => "cloud_essd",
        // Ultra disk: ECS's hard-disk-backed category still sold.
        VolumeType::Hdd => "cloud_efficiency",
    }
}

/// The neutral type of a disk's `Category`, or ECS's name for it.
pub(crate) fn observed(category_name: &str) -> ObservedVolumeType {
    ObservedVolumeType::read(category_name, category)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_neutral_type_is_one_category_and_reads_back() {
        // `ssd` is pinned: states recorded before the neutral type say `ssd`
        // for disks of this name, and must read back unchanged.
        assert_eq!(category(VolumeType::Ssd), "cloud_essd");
        assert_eq!(category(VolumeType::Hdd), "cloud_efficiency");
        for t in VolumeType::ALL {
            assert_eq!(observed(category(t)), ObservedVolumeType::Neutral(t));
        }
        assert_eq!(
            observed("cloud_auto"),
            ObservedVolumeType::Cloud("cloud_auto".into())
        );
    }
}
