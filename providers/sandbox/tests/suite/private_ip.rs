//! A node reports its primary private address (as DescribeInstances'
//! `PrivateIpAddress`): a host of its subnet's CIDR block, the same on every
//! read and after the inventory is reopened; a k3s agent's user data is
//! filled with its server's.

use crate::common;

use common::*;
use gpuform_provider::{Cloud, ResourceKind};

fn in_subnet(ip: &str, net: [u8; 3]) -> bool {
    let a: std::net::Ipv4Addr = ip.parse().expect("an IPv4 address");
    let o = a.octets();
    o[..3] == net && o[3] >= 4 && o[3] < 255
}

#[tokio::test]
async fn instances_report_a_stable_private_address_in_their_subnet() {
    let World { dir, p, o, s, .. } = world("private-ip", "proj", "c").await;
    let second = create_id(
        &*p,
        &instance_req(&o, &s.subnet, &s.firewall, "proj", "c.node[1]"),
    )
    .await;
    let mut seen = Vec::new();
    for id in [&s.instance, &second] {
        let r = read_one(&*p, &o.region, ResourceKind::Instance, id).await;
        let ip = r[0].attrs["private_ip"]
            .as_str()
            .expect("private_ip")
            .to_string();
        assert!(
            in_subnet(&ip, [10, 0, 1]),
            "{ip} is not a host of 10.0.1.0/24"
        );
        seen.push(ip);
    }
    assert_ne!(seen[0], seen[1], "two nodes of a subnet, two addresses");
    // Networks, subnets and volumes have none.
    let net = read_one(&*p, &o.region, ResourceKind::Network, &s.network).await;
    assert!(!net[0].attrs.contains_key("private_ip"));
    // Reopened from its log, the inventory reports the same addresses.
    let again = open(&dir).provider(Cloud::Aws);
    for (id, ip) in [&s.instance, &second].into_iter().zip(&seen) {
        let r = read_one(&*again, &o.region, ResourceKind::Instance, id).await;
        assert_eq!(r[0].attrs["private_ip"].as_str(), Some(ip.as_str()));
    }
}
