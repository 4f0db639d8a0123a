//! What the Tencent stand-in holds: resources by id, idempotency tokens,
//! injected faults, and the deterministic lifecycle steps.

use crate::MockResource;
use gpuform_provider::ResourceKind;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

pub type Tags = Vec<(String, String)>;

pub const SYSTEM_DISK: &str = "SYSTEM_DISK";
pub const DATA_DISK: &str = "DATA_DISK";

pub struct Vpc {
    pub id: String,
    pub region: String,
    pub name: String,
    pub cidr: String,
    pub tags: Tags,
    pub created: String,
}

pub struct Subnet {
    pub id: String,
    pub region: String,
    pub vpc: String,
    pub name: String,
    pub cidr: String,
    pub zone: String,
    pub tags: Tags,
    pub created: String,
}

pub struct SecurityGroup {
    pub id: String,
    pub region: String,
    pub name: String,
    pub desc: String,
    pub tags: Tags,
    pub ingress: Vec<Value>,
    pub egress: Vec<Value>,
    /// The policy set's `Version`: one more with each change of the rules.
    pub version: u64,
    pub created: String,
}

pub struct PlacementGroup {
    pub id: String,
    pub region: String,
    pub name: String,
    pub kind: String,
    pub tags: Tags,
    pub created: String,
}

pub struct Instance {
    pub id: String,
    pub region: String,
    pub zone: String,
    pub name: String,
    pub itype: String,
    pub image: String,
    pub charge: String,
    pub period_months: Option<u64>,
    pub system_disk_gb: u64,
    pub system_disk_id: String,
    pub vpc: String,
    pub subnet: String,
    pub private_ip: String,
    pub security_groups: Vec<String>,
    pub placement: Option<String>,
    pub tags: Tags,
    pub state: String,
    /// The request number of the last state change.
    pub changed_at: u64,
    pub created: String,
    /// Injected: the launch fails (PENDING → LAUNCH_FAILED).
    pub launch_fails: bool,
    /// The pending TERMINATING step releases the instance for good (it was
    /// terminated from the recycle bin) instead of moving it there.
    pub releasing: bool,
}

pub struct Disk {
    pub id: String,
    pub region: String,
    pub zone: String,
    pub name: String,
    pub size: u64,
    pub dtype: String,
    pub charge: String,
    /// `SYSTEM_DISK` (made by RunInstances with its instance) or `DATA_DISK`.
    pub usage: &'static str,
    pub tags: Tags,
    pub state: String,
    pub instance: Option<String>,
    pub changed_at: u64,
    pub created: String,
}

pub struct Image {
    pub id: &'static str,
    pub name: &'static str,
    pub platform: &'static str,
    pub os_name: &'static str,
    pub created: &'static str,
}

/// Public images the stand-in knows (ids are the stand-in's own).
pub const IMAGES: &[Image] = &[
    Image {
        id: "img-22trbn9x",
        name: "Ubuntu Server 22.04 LTS 64bit",
        platform: "Ubuntu",
        os_name: "Ubuntu Server 22.04 LTS 64bit",
        created: "2023-05-10T03:00:00Z",
    },
    Image {
        id: "img-22oldv01",
        name: "Ubuntu Server 22.04 LTS 64bit",
        platform: "Ubuntu",
        os_name: "Ubuntu Server 22.04 LTS 64bit",
        created: "2022-06-01T03:00:00Z",
    },
    Image {
        id: "img-487zeit5",
        name: "Ubuntu Server 20.04 LTS 64bit",
        platform: "Ubuntu",
        os_name: "Ubuntu Server 20.04 LTS 64bit",
        created: "2021-03-01T03:00:00Z",
    },
    Image {
        id: "img-mmytdhbn",
        name: "Ubuntu Server 24.04 LTS 64bit",
        platform: "Ubuntu",
        os_name: "Ubuntu Server 24.04 LTS 64bit",
        created: "2024-05-01T03:00:00Z",
    },
    Image {
        id: "img-eb30mz89",
        name: "TencentOS Server 3.1 (TK4)",
        platform: "TencentOS",
        os_name: "TencentOS Server 3.1 (TK4)",
        created: "2023-01-01T03:00:00Z",
    },
    Image {
        id: "img-l8og963d",
        name: "Ubuntu Server 22.04 LTS 64bit GPU",
        platform: "Ubuntu",
        os_name: "Ubuntu Server 22.04 LTS 64bit",
        created: "2023-07-01T03:00:00Z",
    },
];

#[derive(Default)]
pub struct Faults {
    pub sold_out: HashSet<(String, String)>,
    /// (instance type, zone) whose launches fail after RunInstances accepted them.
    pub launch_fails: HashSet<(String, String)>,
    pub instance_quota: Option<usize>,
    pub throttle_next: u32,
    /// After this many more successful answers, the next one loses its
    /// documented body (only `RequestId` is left): what a client must not
    /// read as "nothing".
    pub strip_after: Option<u32>,
    /// Public image names as the China site writes them ("… 64位").
    pub china_site_images: bool,
    /// DescribeAccountQuota's `TotalQuota` by (quota set, zone), e.g.
    /// (`PostPaidQuotaSet`, `ap-guangzhou-3`); unset zones have
    /// [`DEFAULT_ZONE_QUOTA`].
    pub zone_quotas: BTreeMap<(String, String), u64>,
    /// DescribeAccountQuota is refused (`UnauthorizedOperation`).
    pub deny_quota: bool,
}

/// The stand-in's instances per zone and quota set when a test sets none
/// (an assumption: the reference documents the fields, not the defaults).
pub const DEFAULT_ZONE_QUOTA: u64 = 100;

pub struct State {
    pub tick: u64,
    seq: u64,
    pub vpcs: BTreeMap<String, Vpc>,
    pub subnets: BTreeMap<String, Subnet>,
    pub sgs: BTreeMap<String, SecurityGroup>,
    pub groups: BTreeMap<String, PlacementGroup>,
    pub instances: BTreeMap<String, Instance>,
    pub disks: BTreeMap<String, Disk>,
    /// (action, ClientToken) → the ids the first call returned.
    pub tokens: HashMap<(String, String), Vec<String>>,
    pub faults: Faults,
    /// What InquiryPriceRunInstances quotes (CNY).
    pub prices: crate::prices::PriceBook,
    /// What DescribeRegions, DescribeZones and DescribeZoneInstanceConfigInfos answer.
    pub geography: crate::geography::Geography,
}

impl State {
    pub fn new() -> State {
        State {
            tick: 0,
            seq: 0,
            vpcs: BTreeMap::new(),
            subnets: BTreeMap::new(),
            sgs: BTreeMap::new(),
            groups: BTreeMap::new(),
            instances: BTreeMap::new(),
            disks: BTreeMap::new(),
            tokens: HashMap::new(),
            faults: Faults::default(),
            prices: Default::default(),
            geography: Default::default(),
        }
    }

    /// A fresh id in Tencent's format: `prefix-` and 8 lower-case letters or digits.
    pub fn new_id(&mut self, prefix: &str) -> String {
        loop {
            self.seq += 1;
            // splitmix64 of the sequence number: stable, unique-looking ids.
            let mut z = self.seq.wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
            let mut s = String::with_capacity(prefix.len() + 9);
            s.push_str(prefix);
            s.push('-');
            for _ in 0..8 {
                s.push(ALPHABET[(z % 36) as usize] as char);
                z /= 36;
            }
            if !self.exists(&s) {
                return s;
            }
        }
    }

    fn exists(&self, id: &str) -> bool {
        self.vpcs.contains_key(id)
            || self.subnets.contains_key(id)
            || self.sgs.contains_key(id)
            || self.groups.contains_key(id)
            || self.instances.contains_key(id)
            || self.disks.contains_key(id)
    }

    /// Starts a request: finishes the steps begun by earlier requests.
    pub fn tick(&mut self) {
        self.tick += 1;
        let now = self.tick;
        let mut gone = Vec::new();
        for i in self.instances.values_mut() {
            if i.changed_at < now {
                match i.state.as_str() {
                    "PENDING" => {
                        // 213/15753 (InstanceState): a launch ends RUNNING or LAUNCH_FAILED.
                        i.state = if i.launch_fails {
                            "LAUNCH_FAILED".into()
                        } else {
                            "RUNNING".into()
                        };
                        i.changed_at = now;
                    }
                    "TERMINATING" if i.releasing => gone.push(i.id.clone()),
                    "TERMINATING" => {
                        // Terminated, not released: into the recycle bin
                        // (213/4856 "Reclaimed", 213/4931), reported as SHUTDOWN.
                        i.state = "SHUTDOWN".into();
                        i.changed_at = now;
                    }
                    _ => {}
                }
            }
        }
        for id in gone {
            self.release_instance(&id);
        }
        for d in self.disks.values_mut() {
            if d.changed_at < now {
                match d.state.as_str() {
                    "ATTACHING" => d.state = "ATTACHED".into(),
                    "DETACHING" => {
                        d.state = "UNATTACHED".into();
                        d.instance = None;
                    }
                    _ => continue,
                }
                d.changed_at = now;
            }
        }
    }

    pub fn tags_of(&self, id: &str) -> Option<Tags> {
        self.vpcs
            .get(id)
            .map(|r| r.tags.clone())
            .or_else(|| self.subnets.get(id).map(|r| r.tags.clone()))
            .or_else(|| self.sgs.get(id).map(|r| r.tags.clone()))
            .or_else(|| self.groups.get(id).map(|r| r.tags.clone()))
            .or_else(|| self.instances.get(id).map(|r| r.tags.clone()))
            .or_else(|| self.disks.get(id).map(|r| r.tags.clone()))
    }

    /// Everything alive (terminating instances are on their way out), by id.
    pub fn alive(&self) -> Vec<MockResource> {
        let addr = |t: &Tags| {
            t.iter()
                .find(|(k, _)| k == "gpuform:address")
                .map(|(_, v)| v.clone())
        };
        let mut out = Vec::new();
        let mk = |kind, id: &str, region: &str, tags: &Tags| {
            MockResource::new(kind, id, region, addr(tags))
        };
        for r in self.vpcs.values() {
            out.push(mk(ResourceKind::Network, &r.id, &r.region, &r.tags));
        }
        for r in self.subnets.values() {
            out.push(mk(ResourceKind::Subnet, &r.id, &r.region, &r.tags));
        }
        for r in self.sgs.values() {
            let mut m = mk(ResourceKind::Firewall, &r.id, &r.region, &r.tags);
            m.ingress = ingress_view(r);
            out.push(m);
        }
        for r in self.groups.values() {
            out.push(mk(ResourceKind::Placement, &r.id, &r.region, &r.tags));
        }
        for r in self.instances.values().filter(|i| i.state != "TERMINATING") {
            out.push(mk(ResourceKind::Instance, &r.id, &r.region, &r.tags));
        }
        // A system disk is part of its instance, not a volume of its own.
        for r in self.disks.values().filter(|d| d.usage == DATA_DISK) {
            let mut m = mk(ResourceKind::Volume, &r.id, &r.region, &r.tags);
            m.attached_to = r
                .instance
                .clone()
                .filter(|_| matches!(r.state.as_str(), "ATTACHED" | "ATTACHING"));
            out.push(m);
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// Removes a resource as someone in the console would (an instance's
    /// attached disks are detached and stay).
    pub fn delete_behind(&mut self, id: &str) -> bool {
        if self.instances.contains_key(id) {
            self.release_instance(id);
            return true;
        }
        self.vpcs.remove(id).is_some()
            || self.subnets.remove(id).is_some()
            || self.sgs.remove(id).is_some()
            || self.groups.remove(id).is_some()
            || self.disks.remove(id).is_some()
    }

    /// An instance released for good: its system disk goes with it, its data
    /// disks are detached and kept.
    pub fn release_instance(&mut self, id: &str) {
        self.instances.remove(id);
        // A ClientToken stands for its instance while that exists (an
        // assumption: the pages give no duration).
        self.tokens
            .retain(|(action, _), ids| action != "RunInstances" || !ids.iter().any(|i| i == id));
        self.disks
            .retain(|_, d| !(d.usage == SYSTEM_DISK && d.instance.as_deref() == Some(id)));
        self.detach_all(id);
    }

    pub fn detach_all(&mut self, instance: &str) {
        let now = self.tick;
        for d in self.disks.values_mut().filter(|d| d.usage == DATA_DISK) {
            if d.instance.as_deref() == Some(instance) {
                d.instance = None;
                d.state = "UNATTACHED".into();
                d.changed_at = now;
            }
        }
    }

    pub fn group_members(&self, group: &str) -> Vec<String> {
        self.instances
            .values()
            .filter(|i| i.placement.as_deref() == Some(group))
            .map(|i| i.id.clone())
            .collect()
    }
}

pub fn tags_json(tags: &Tags) -> Value {
    Value::Array(
        tags.iter()
            .map(|(k, v)| json!({"Key": k, "Value": v}))
            .collect(),
    )
}

/// UTC now as `YYYY-MM-DDThh:mm:ssZ` (ISO 8601, as the API reports times).
pub fn now_iso() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    iso(secs)
}

pub fn iso(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A group's ACCEPT Ingress policies as [`MockResource::ingress`] entries.
fn ingress_view(g: &SecurityGroup) -> Vec<String> {
    let text = |p: &Value, k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let accept: Vec<&Value> = g
        .ingress
        .iter()
        .filter(|p| text(p, "Action") == "ACCEPT")
        .collect();
    let mut out = Vec::new();
    if accept.iter().any(|p| text(p, "SecurityGroupId") == g.id) {
        out.push(crate::MEMBERS.to_string());
    }
    // Policies apply in order, the first match wins (VPC security group
    // overview, 215/20089): the first policy for every protocol to anywhere
    // decides, and a group with none lets nothing out.
    let first_all = g.egress.iter().find(|p| {
        matches!(
            text(p, "Protocol").to_ascii_uppercase().as_str(),
            "ALL" | ""
        ) && text(p, "CidrBlock") == "0.0.0.0/0"
    });
    if first_all.is_some_and(|p| text(p, "Action") == "ACCEPT") {
        out.push(crate::EGRESS.to_string());
    }
    for p in accept.iter().filter(|p| !text(p, "CidrBlock").is_empty()) {
        let port = text(p, "Port");
        let ports = match port.as_str() {
            "" | "ALL" => "all".to_string(),
            p if p.contains('-') => p.to_string(),
            p => format!("{p}-{p}"),
        };
        let proto = text(p, "Protocol");
        out.push(crate::cidr_rule(&proto, &ports, &text(p, "CidrBlock")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_551_113_065), "2019-02-25T16:44:25Z");
    }

    #[test]
    fn ids_have_tencent_shape() {
        let mut s = State::new();
        let a = s.new_id("ins");
        let b = s.new_id("ins");
        assert_ne!(a, b);
        assert_eq!(a.len(), 12);
        assert!(
            a.starts_with("ins-")
                && a[4..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }
}
