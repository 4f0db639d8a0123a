//! The in-memory inventory: every live resource, indexed by id, token,
//! (region, project) and address, and the records that change it.
//!
//! Live calls and replay go through the same `apply_*` functions, so what a
//! process sees after reopening is exactly what the previous one had.

use gpuform_provider::attr;
use gpuform_provider::{Attrs, Cloud, ObservedResource, OwnershipTags, ResourceKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

pub(crate) const FORMAT_VERSION: u32 = 1;

/// A fast multiply-rotate hasher for the in-memory indexes (SipHash was a
/// tenth of a create's time). Keys are ids, tokens and addresses gpuform
/// made itself, in a local process: no untrusted input to defend against.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(i)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        // Spread the high bits down: hashbrown uses the top 7 for tags and
        // the low ones for buckets.
        let x = self.0;
        x ^ (x >> 29) ^ (x >> 47)
    }
}

pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;
pub(crate) type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FastHasher>>;

/// One line of the inventory log.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub(crate) enum Record {
    Header {
        version: u32,
        salt: u64,
        next_seq: u64,
    },
    Create(CreateRec),
    Set {
        cloud: Cloud,
        id: String,
        attrs: serde_json::Value,
    },
    Delete {
        cloud: Cloud,
        id: String,
    },
    /// A resource's ownership tags changed: set by `gpuform import`, or
    /// removed behind gpuform's back (`None`: it is nobody's, as what a
    /// console or another tool made).
    Own {
        cloud: Cloud,
        id: String,
        #[serde(default)]
        ownership: Option<OwnershipTags>,
    },
}

/// The fields of a create record other than `attrs` (written separately, as
/// the already-serialized JSON the store keeps).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CreateRec {
    pub seq: u64,
    pub cloud: Cloud,
    pub kind: ResourceKind,
    pub id: String,
    pub region: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(default)]
    pub gpus: u32,
    pub project: String,
    pub address: String,
    pub token: String,
    pub lineage: String,
    /// The ownership tags' workspace (absent: `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default)]
    pub refs: BTreeMap<String, String>,
    /// Kept as the log's text: replay stores it as is instead of building a
    /// tree and writing it out again.
    #[serde(default, skip_serializing)]
    pub attrs: Option<Box<serde_json::value::RawValue>>,
}

impl CreateRec {
    /// The log line for this record with `attrs_json` (a JSON object).
    pub fn line(&self, attrs_json: &str) -> String {
        let mut buf = Vec::with_capacity(attrs_json.len() + 512);
        self.write_line(attrs_json, &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }

    /// Appends the log line to `buf` (a buffer reused across calls, so a
    /// create allocates no line).
    pub fn write_line(&self, attrs_json: &str, buf: &mut Vec<u8>) {
        let start = buf.len();
        buf.extend_from_slice(b"{\"op\":\"create\",");
        let body = buf.len();
        // Serializing plain strings, numbers and maps into memory cannot fail.
        if serde_json::to_writer(&mut *buf, self).is_err() {
            buf.truncate(start);
            buf.extend_from_slice(b"{\"op\":\"create\",{}");
        }
        // Splice: drop the struct's own `{` and `}`, then add the attrs.
        buf.remove(body);
        buf.pop();
        buf.extend_from_slice(b",\"attrs\":");
        buf.extend_from_slice(attrs_json.as_bytes());
        buf.extend_from_slice(b"}\n");
    }
}

pub(crate) fn header_line(salt: u64, next_seq: u64) -> String {
    format!("{{\"op\":\"header\",\"version\":{FORMAT_VERSION},\"salt\":{salt},\"next_seq\":{next_seq}}}\n")
}

pub(crate) fn set_line(cloud: Cloud, id: &str, attrs_json: &str) -> String {
    format!(
        "{{\"op\":\"set\",\"cloud\":\"{}\",\"id\":{},\"attrs\":{attrs_json}}}\n",
        cloud.as_str(),
        json_str(id)
    )
}

pub(crate) fn own_line(cloud: Cloud, id: &str, ownership: Option<&OwnershipTags>) -> String {
    let own = serde_json::to_string(&ownership).unwrap_or_else(|_| String::from("null"));
    format!(
        "{{\"op\":\"own\",\"cloud\":\"{}\",\"id\":{},\"ownership\":{own}}}\n",
        cloud.as_str(),
        json_str(id)
    )
}

pub(crate) fn delete_line(cloud: Cloud, id: &str) -> String {
    format!(
        "{{\"op\":\"delete\",\"cloud\":\"{}\",\"id\":{}}}\n",
        cloud.as_str(),
        json_str(id)
    )
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// The roles of a kind's refs that keep the referenced resource from being
/// deleted (AWS's DependencyViolation). A volume's instance does not: ending
/// an instance detaches its volumes.
pub(crate) fn blocking_roles(kind: ResourceKind) -> &'static [&'static str] {
    match kind {
        ResourceKind::Subnet | ResourceKind::Firewall => &["network"],
        ResourceKind::Instance => &["subnet", "firewall", "placement"],
        _ => &[],
    }
}

pub(crate) struct Entry {
    pub kind: ResourceKind,
    pub seq: u64,
    pub region: Arc<str>,
    pub zone: Option<Arc<str>>,
    pub project: Arc<str>,
    pub lineage: Arc<str>,
    pub workspace: Option<Arc<str>>,
    pub address: Box<str>,
    pub token: Box<str>,
    /// The attributes as a compact JSON object: a few hundred bytes instead
    /// of a tree of maps (a BTreeMap node alone is ~600 bytes).
    pub attrs: Box<str>,
    pub refs: Box<[(Box<str>, Box<str>)]>,
    pub gpus: u32,
    /// Live resources whose blocking refs point here.
    pub dependents: u32,
}

impl Entry {
    pub fn attrs(&self) -> Attrs {
        serde_json::from_str(&self.attrs).unwrap_or_default()
    }

    pub fn ref_of(&self, role: &str) -> Option<&str> {
        self.refs
            .iter()
            .find(|(r, _)| &**r == role)
            .map(|(_, id)| &**id)
    }

    /// Its ownership tags; `None` for a resource nobody's tags claim (an
    /// empty project: made or left untagged behind gpuform's back).
    pub fn ownership(&self) -> Option<OwnershipTags> {
        (!self.project.is_empty()).then(|| OwnershipTags {
            project: self.project.to_string(),
            address: (*self.address).into(),
            token: self.token.to_string(),
            lineage: self.lineage.to_string(),
            workspace: self.workspace.as_deref().map(str::to_string),
        })
    }

    pub fn observed_with(&self, id: &str, attrs: Attrs) -> ObservedResource {
        ObservedResource {
            kind: self.kind,
            id: id.to_string(),
            region: self.region.to_string(),
            ownership: self.ownership(),
            attrs,
            status: if self.kind == ResourceKind::Instance {
                "running"
            } else {
                "available"
            }
            .to_string(),
        }
    }

    /// Ownership tags plus the user's `tags` attribute.
    pub fn tags(&self, attrs: &Attrs) -> BTreeMap<String, String> {
        let mut tags = BTreeMap::new();
        if let Some(serde_json::Value::Object(user)) = attrs.get(attr::TAGS) {
            for (k, v) in user {
                if let Some(v) = v.as_str() {
                    tags.insert(k.clone(), v.to_string());
                }
            }
        }
        if let Some(own) = self.ownership() {
            tags.extend(own.owned_tags());
        }
        tags
    }
}

/// project -> ids of its resources in one region, sorted.
pub(crate) type ProjectIds = HashMap<Arc<str>, BTreeSet<Box<str>>>;

#[derive(Default)]
pub(crate) struct CloudStore {
    pub by_id: HashMap<Box<str>, Entry>,
    pub by_token: HashMap<Box<str>, Box<str>>,
    /// region -> project -> ids (sorted, so pages are stable).
    pub owned: HashMap<Arc<str>, ProjectIds>,
    /// region -> GPUs of live instances.
    pub gpus: HashMap<Arc<str>, u64>,
}

/// Sandbox-internal attribute keys of the two-step creates (not neutral
/// attributes): whether a firewall's rules were authorized yet.
pub(crate) const MEMBERS_KEY: &str = "members";
/// A bucket's number of objects, as the clouds report it: 0 at creation;
/// tests put objects in with `Sandbox::set_attr_behind`.
pub(crate) const OBJECT_COUNT: &str = "object_count";

impl CloudStore {
    /// A resource as the cloud reports it (see [`CloudStore::reported_attrs`]).
    pub fn observe(&self, id: &str, e: &Entry) -> ObservedResource {
        e.observed_with(id, self.reported_attrs(e, e.attrs()))
    }

    /// An instance's primary private address, as DescribeInstances'
    /// `PrivateIpAddress`: a host of its subnet's CIDR block past the four
    /// addresses a cloud reserves at its start (and before the last),
    /// chosen by the instance's sequence number, so the same inventory
    /// always reports the same address without storing it. Addresses of a
    /// subnet repeat only after as many creates as it has hosts.
    fn private_ip(&self, e: &Entry) -> Option<String> {
        let subnet = self.by_id.get(e.ref_of("subnet")?)?;
        let cidr = subnet.attrs().get(attr::CIDR)?.as_str()?.to_string();
        let (net, len) = crate::checks::parse_cidr(&cidr)?;
        let hosts = (1u64 << (32 - u32::from(len)))
            .checked_sub(5)
            .filter(|h| *h > 0)?;
        let host = 4 + e.seq % hosts;
        Some(std::net::Ipv4Addr::from(net.wrapping_add(host as u32)).to_string())
    }

    /// Stored attributes as the cloud reports them, like DescribeVolumes'
    /// `Attachments` and DescribeSecurityGroups' `IpPermissions`: a volume's
    /// `attached_to` (null when detached or when its instance is gone: ending
    /// an instance detaches its volumes), an instance's `private_ip`
    /// ([`CloudStore::private_ip`]), and a firewall whose rules were
    /// never authorized reports no rules and the members' rule missing.
    pub fn reported_attrs(&self, e: &Entry, mut attrs: Attrs) -> Attrs {
        match e.kind {
            ResourceKind::Volume => {
                let attached = match attrs.get(attr::ATTACHED_TO) {
                    // Made before attachment was a step of its own: the
                    // create attached it to its instance at once.
                    None => e.ref_of("instance").map(str::to_string),
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(_) => None,
                };
                let live = attached.filter(|i| {
                    self.by_id
                        .get(i.as_str())
                        .is_some_and(|x| x.kind == ResourceKind::Instance)
                });
                attrs.insert(
                    attr::ATTACHED_TO.into(),
                    live.map_or(serde_json::Value::Null, serde_json::Value::String),
                );
            }
            ResourceKind::Instance => {
                if let Some(ip) = self.private_ip(e) {
                    attrs.insert(attr::PRIVATE_IP.into(), serde_json::Value::String(ip));
                }
            }
            // Evaluated for every firewall: the internal key never leaves.
            ResourceKind::Firewall
                if attrs.remove(MEMBERS_KEY) == Some(serde_json::Value::Bool(false)) =>
            {
                attrs.insert(
                    attr::INGRESS.into(),
                    serde_json::Value::Array(vec![
                        gpuform_provider::resource::member_rule_missing(),
                    ]),
                );
            }
            _ => {}
        }
        attrs
    }
}

pub(crate) struct Store {
    pub clouds: [CloudStore; 4],
    pub by_address: HashMap<Box<str>, Vec<(Cloud, Box<str>)>>,
    interned: HashSet<Arc<str>>,
    pub salt: u64,
    pub next_seq: u64,
    /// Lines in the log (header included), to decide on compaction.
    pub records: u64,
}

pub(crate) fn cloud_index(cloud: Cloud) -> usize {
    match cloud {
        Cloud::Aws => 0,
        Cloud::Alibaba => 1,
        Cloud::Tencent => 2,
        Cloud::Huawei => 3,
    }
}

impl Store {
    pub fn new(salt: u64, next_seq: u64) -> Store {
        Store {
            clouds: Default::default(),
            by_address: HashMap::default(),
            interned: HashSet::default(),
            salt,
            next_seq,
            records: 0,
        }
    }

    pub fn cloud(&self, cloud: Cloud) -> &CloudStore {
        &self.clouds[cloud_index(cloud)]
    }

    pub fn get(&self, cloud: Cloud, id: &str) -> Option<&Entry> {
        self.cloud(cloud).by_id.get(id)
    }

    pub fn live(&self) -> usize {
        self.clouds.iter().map(|c| c.by_id.len()).sum()
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.interned.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        self.interned.insert(a.clone());
        a
    }

    /// Adds a resource. `attrs_json` is a compact JSON object.
    pub fn apply_create(&mut self, rec: &CreateRec, attrs_json: Box<str>) -> Result<(), String> {
        let ci = cloud_index(rec.cloud);
        if self.clouds[ci].by_id.contains_key(rec.id.as_str()) {
            return Err(format!("{} `{}` is created twice", rec.kind, rec.id));
        }
        for role in blocking_roles(rec.kind) {
            if let Some(parent) = rec.refs.get(*role) {
                if let Some(p) = self.clouds[ci].by_id.get_mut(parent.as_str()) {
                    p.dependents += 1;
                }
            }
        }
        let region = self.intern(&rec.region);
        let project = self.intern(&rec.project);
        let lineage = self.intern(&rec.lineage);
        let workspace = rec.workspace.as_deref().map(|w| self.intern(w));
        let zone = rec.zone.as_deref().map(|z| self.intern(z));
        let id: Box<str> = rec.id.as_str().into();
        let cs = &mut self.clouds[ci];
        if !rec.token.is_empty() {
            cs.by_token.insert(rec.token.as_str().into(), id.clone());
        }
        cs.owned
            .entry(region.clone())
            .or_default()
            .entry(project.clone())
            .or_default()
            .insert(id.clone());
        if rec.gpus > 0 {
            *cs.gpus.entry(region.clone()).or_default() += u64::from(rec.gpus);
        }
        cs.by_id.insert(
            id.clone(),
            Entry {
                kind: rec.kind,
                seq: rec.seq,
                region,
                zone,
                project,
                lineage,
                workspace,
                address: rec.address.as_str().into(),
                token: rec.token.as_str().into(),
                attrs: attrs_json,
                refs: rec
                    .refs
                    .iter()
                    .map(|(k, v)| (Box::from(k.as_str()), Box::from(v.as_str())))
                    .collect(),
                gpus: rec.gpus,
                dependents: 0,
            },
        );
        self.by_address
            .entry(rec.address.as_str().into())
            .or_default()
            .push((rec.cloud, id));
        self.next_seq = self.next_seq.max(rec.seq + 1);
        Ok(())
    }

    /// Replaces a resource's attributes; a missing id is ignored.
    pub fn apply_set(&mut self, cloud: Cloud, id: &str, attrs_json: Box<str>) {
        if let Some(e) = self.clouds[cloud_index(cloud)].by_id.get_mut(id) {
            e.attrs = attrs_json;
        }
    }

    /// Removes a resource; a missing id is ignored (deletes are idempotent).
    pub fn apply_delete(&mut self, cloud: Cloud, id: &str) {
        let cs = &mut self.clouds[cloud_index(cloud)];
        let Some((id, e)) = cs.by_id.remove_entry(id) else {
            return;
        };
        for role in blocking_roles(e.kind) {
            if let Some(parent) = e.ref_of(role) {
                if let Some(p) = cs.by_id.get_mut(parent) {
                    p.dependents = p.dependents.saturating_sub(1);
                }
            }
        }
        if !e.token.is_empty() && cs.by_token.get(&*e.token) == Some(&id) {
            cs.by_token.remove(&*e.token);
        }
        if let Some(projects) = cs.owned.get_mut(&*e.region) {
            if let Some(ids) = projects.get_mut(&*e.project) {
                ids.remove(&id);
                if ids.is_empty() {
                    projects.remove(&*e.project);
                }
            }
        }
        if e.gpus > 0 {
            if let Some(n) = cs.gpus.get_mut(&*e.region) {
                *n = n.saturating_sub(u64::from(e.gpus));
            }
        }
        if let Some(list) = self.by_address.get_mut(&*e.address) {
            list.retain(|(c, i)| !(*c == cloud && *i == id));
            if list.is_empty() {
                self.by_address.remove(&*e.address);
            }
        }
    }

    /// Changes a resource's ownership tags, keeping every index in step
    /// (project, address, token); a missing id is ignored.
    pub fn apply_own(&mut self, cloud: Cloud, id: &str, own: Option<&OwnershipTags>) {
        let ci = cloud_index(cloud);
        let Some((key, e)) = self.clouds[ci].by_id.get_key_value(id) else {
            return;
        };
        let key = key.clone();
        let (region, old_project, old_address, old_token) = (
            e.region.clone(),
            e.project.clone(),
            e.address.clone(),
            e.token.clone(),
        );
        let empty = String::new();
        let project = self.intern(own.map_or(&empty, |o| &o.project));
        let lineage = self.intern(own.map_or(&empty, |o| &o.lineage));
        let workspace = own
            .and_then(|o| o.workspace.as_deref())
            .map(|w| self.intern(w));
        let address: Box<str> = own.map_or("", |o| o.address.as_str()).into();
        let token: Box<str> = own.map_or("", |o| o.token.as_str()).into();
        let cs = &mut self.clouds[ci];
        if let Some(projects) = cs.owned.get_mut(&*region) {
            if let Some(ids) = projects.get_mut(&*old_project) {
                ids.remove(&key);
                if ids.is_empty() {
                    projects.remove(&*old_project);
                }
            }
        }
        cs.owned
            .entry(region)
            .or_default()
            .entry(project.clone())
            .or_default()
            .insert(key.clone());
        if !old_token.is_empty() && cs.by_token.get(&*old_token) == Some(&key) {
            cs.by_token.remove(&*old_token);
        }
        if !token.is_empty() {
            cs.by_token.insert(token.clone(), key.clone());
        }
        if let Some(e) = cs.by_id.get_mut(&key) {
            e.project = project;
            e.lineage = lineage;
            e.workspace = workspace;
            e.address = address.clone();
            e.token = token;
        }
        if let Some(list) = self.by_address.get_mut(&*old_address) {
            list.retain(|(c, i)| !(*c == cloud && *i == key));
            if list.is_empty() {
                self.by_address.remove(&*old_address);
            }
        }
        if !address.is_empty() {
            self.by_address
                .entry(address)
                .or_default()
                .push((cloud, key));
        }
    }

    /// Applies one parsed log record (replay).
    pub fn apply(&mut self, rec: Record) -> Result<(), String> {
        match rec {
            Record::Header { .. } => Err("a header record in the middle of the log".to_string()),
            Record::Create(mut c) => {
                let attrs: Box<str> = match c.attrs.take() {
                    Some(raw) if raw.get().starts_with('{') => raw.into(),
                    Some(_) => return Err("`attrs` is not a JSON object".to_string()),
                    None => "{}".into(),
                };
                self.apply_create(&c, attrs)
            }
            Record::Set { cloud, id, attrs } => {
                if !attrs.is_object() {
                    return Err("`attrs` is not a JSON object".to_string());
                }
                self.apply_set(cloud, &id, attrs.to_string().into_boxed_str());
                Ok(())
            }
            Record::Delete { cloud, id } => {
                self.apply_delete(cloud, &id);
                Ok(())
            }
            Record::Own {
                cloud,
                id,
                ownership,
            } => {
                self.apply_own(cloud, &id, ownership.as_ref());
                Ok(())
            }
        }
    }

    /// The log lines that recreate this store: a header, then every live
    /// resource in creation order (parents before children, so dependents
    /// are counted again on replay).
    pub fn snapshot_lines(&self) -> Vec<String> {
        let mut all: Vec<(u64, Cloud, &str, &Entry)> = Vec::with_capacity(self.live());
        for cloud in Cloud::ALL {
            for (id, e) in &self.cloud(cloud).by_id {
                all.push((e.seq, cloud, id, e));
            }
        }
        all.sort_by_key(|(seq, ..)| *seq);
        let mut lines = Vec::with_capacity(all.len() + 1);
        lines.push(header_line(self.salt, self.next_seq));
        for (seq, cloud, id, e) in all {
            let rec = CreateRec {
                seq,
                cloud,
                kind: e.kind,
                id: id.to_string(),
                region: e.region.to_string(),
                zone: e.zone.as_deref().map(str::to_string),
                gpus: e.gpus,
                project: e.project.to_string(),
                address: e.address.to_string(),
                token: e.token.to_string(),
                lineage: e.lineage.to_string(),
                workspace: e.workspace.as_deref().map(str::to_string),
                refs: e
                    .refs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                attrs: None,
            };
            lines.push(rec.line(&e.attrs));
        }
        lines
    }
}
