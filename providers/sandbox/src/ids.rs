//! Cloud-like resource ids.
//!
//! Every id comes from the inventory's sequence number (persisted, never
//! reused, not even after `reset`) pushed through a bijective bit mixer keyed
//! by the inventory's salt. A bijection of distinct numbers gives distinct
//! ids, so ids are unique without a lookup; the salt (random per inventory)
//! keeps a fresh inventory from handing out the ids of a deleted one.

use gpuform_provider::{Cloud, ResourceKind};

/// Bijective on `bits`-bit integers: xor-shifts and odd multiplications
/// modulo 2^bits are each invertible.
fn mix(x: u64, bits: u32) -> u64 {
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut x = x & mask;
    x ^= x >> (bits / 2);
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask;
    x ^= x >> (bits / 2 - 1);
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & mask;
    x ^= x >> (bits / 2 + 1);
    x
}

/// Not bijective; fills the parts of an id that carry no uniqueness.
fn hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn base36(mut x: u64, width: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(x % 36) as usize];
        x /= 36;
    }
    // Only ASCII digits and letters were written.
    String::from_utf8_lossy(&out).into_owned()
}

/// The id of the `seq`-th capacity reservation of an inventory with
/// `salt`: `cr-` and 17 hex digits, as EC2's.
pub(crate) fn reservation_id(seq: u64, salt: u64) -> String {
    format!("cr-{:017x}", mix(seq ^ salt.rotate_left(17), 64))
}

/// The id of the `seq`-th resource created in an inventory with `salt`.
/// Buckets are named by their `name` attribute and do not come here.
pub fn make_id(cloud: Cloud, kind: ResourceKind, seq: u64, salt: u64) -> String {
    let prefix = prefix(cloud, kind);
    match cloud {
        // e.g. i-0f3a9c1e2b4d5f607 (17 hex digits, as AWS's long ids)
        Cloud::Aws => format!("{prefix}{:017x}", mix(seq ^ salt, 64)),
        // e.g. i-bp1k2l3m4n5o6p7q8r9s (20 base-36 characters)
        Cloud::Alibaba => {
            let m = mix(seq ^ salt, 64);
            format!(
                "{prefix}{}{}",
                base36(hash(m) % 36u64.pow(7), 7),
                base36(m, 13)
            )
        }
        // e.g. ins-3k9d0q2z (8 base-36 characters; 40 bits < 36^8)
        Cloud::Tencent => format!("{prefix}{}", base36(mix(seq ^ salt, 40), 8)),
        // a version-4-shaped UUID whose 64 uniqueness bits avoid the fixed ones
        Cloud::Huawei => {
            let m = mix(seq ^ salt, 64);
            let h = hash(m ^ kind as u64);
            let time_low = (m >> 32) as u32;
            let time_mid = ((m >> 16) & 0xffff) as u16;
            let time_hi = 0x4000 | ((m >> 4) & 0x0fff) as u16;
            let clock = 0x8000 | (((m & 0xf) as u16) << 10) | ((h & 0x3ff) as u16);
            let node = (h >> 16) & 0xffff_ffff_ffff;
            format!("{time_low:08x}-{time_mid:04x}-{time_hi:04x}-{clock:04x}-{node:012x}")
        }
    }
}

fn prefix(cloud: Cloud, kind: ResourceKind) -> &'static str {
    use ResourceKind::*;
    match (cloud, kind) {
        (Cloud::Huawei, _) => "",
        (_, Network) => "vpc-",
        (_, Firewall) => "sg-",
        (Cloud::Aws, Subnet) => "subnet-",
        (Cloud::Aws, Placement) => "pg-",
        (Cloud::Aws, Instance) => "i-",
        (Cloud::Aws, Volume) => "vol-",
        (Cloud::Alibaba, Subnet) => "vsw-",
        (Cloud::Alibaba, Placement) => "ds-",
        (Cloud::Alibaba, Instance) => "i-",
        (Cloud::Alibaba, Volume) => "d-",
        (Cloud::Tencent, Subnet) => "subnet-",
        (Cloud::Tencent, Placement) => "ps-",
        (Cloud::Tencent, Instance) => "ins-",
        (Cloud::Tencent, Volume) => "disk-",
        (_, Bucket) => "",
        // A Capacity Block is a capacity reservation.
        (_, Block) => "cr-",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_look_like_the_clouds_and_are_unique() {
        let salt = 0x1234_5678_9abc_def0;
        for cloud in Cloud::ALL {
            for kind in ResourceKind::ALL {
                if kind == ResourceKind::Bucket {
                    continue;
                }
                let mut seen = HashSet::new();
                for seq in 1..20_000u64 {
                    let id = make_id(cloud, kind, seq, salt);
                    assert!(seen.insert(id.clone()), "duplicate {id}");
                }
            }
        }
        let aws = make_id(Cloud::Aws, ResourceKind::Instance, 1, salt);
        assert!(aws.starts_with("i-") && aws.len() == 19, "{aws}");
        let ali = make_id(Cloud::Alibaba, ResourceKind::Subnet, 1, salt);
        assert!(ali.starts_with("vsw-") && ali.len() == 24, "{ali}");
        let tc = make_id(Cloud::Tencent, ResourceKind::Instance, 1, salt);
        assert!(tc.starts_with("ins-") && tc.len() == 12, "{tc}");
        let hw = make_id(Cloud::Huawei, ResourceKind::Network, 1, salt);
        let parts: Vec<_> = hw.split('-').map(str::len).collect();
        assert_eq!(parts, vec![8, 4, 4, 4, 12], "{hw}");
        assert_eq!(&hw[14..15], "4", "{hw}");
    }

    #[test]
    fn mix_is_a_bijection_on_small_widths() {
        for bits in [8u32, 12] {
            let n = 1u64 << bits;
            let seen: HashSet<u64> = (0..n).map(|x| mix(x, bits)).collect();
            assert_eq!(seen.len() as u64, n);
        }
    }
}
