//! The one table of EBS volume types: gpuform's neutral [`VolumeType`] →
//! CreateVolume's `VolumeType`
//! (docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html;
//! kinds in docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html).
//! Read back through the same table ([`observed`]); a type gpuform does not
//! make (gp2, io1, io2, sc1, standard) reads as EC2 names it.

use aws_sdk_ec2::types::VolumeType as Ebs;
use gpuform_provider::{ObservedVolumeType, VolumeType};

/// The EBS name of a neutral type, for a data volume and for the root disk.
pub(crate) fn ebs_name(t: VolumeType) -> &'static str {
    match t {
        // General Purpose SSD, the current generation.
        VolumeType::Ssd => "gp3",
        // Throughput Optimized HDD (at least 125 GiB).
        VolumeType::Hdd => "st1",
    }
}

/// The SDK's value of a neutral type.
pub(crate) fn ebs(t: VolumeType) -> Ebs {
    Ebs::from(ebs_name(t))
}

/// The neutral type of a volume EC2 reports, or EC2's name for it.
pub(crate) fn observed(ebs: &str) -> ObservedVolumeType {
    ObservedVolumeType::read(ebs, ebs_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_neutral_type_is_a_current_ebs_type_and_reads_back() {
        for t in VolumeType::ALL {
            // A name the SDK knows (not `Unknown`), so EC2 accepts it.
            assert!(Ebs::values().contains(&ebs_name(t)), "{t}");
            assert_eq!(observed(ebs(t).as_str()), ObservedVolumeType::Neutral(t));
        }
        assert_eq!(ebs_name(VolumeType::Ssd), "gp3");
        assert_eq!(ebs_name(VolumeType::Hdd), "st1");
        // `standard` is EBS's magnetic type, not gpuform's anything.
        assert_eq!(observed("standard").as_str(), "standard");
        assert_eq!(observed("io2"), ObservedVolumeType::Cloud("io2".into()));
    }
}
