//! A stand-in for Huawei Cloud's ECS, VPC, EVS and IMS REST APIs, for tests.
//!
//! This is NOT Huawei Cloud: it implements only the calls gpuform makes, from
//! the API reference pages cited beside each handler, on 127.0.0.1. Every
//! request's `SDK-HMAC-SHA256` signature is recomputed from what arrived
//! (method, Host, path, query, the headers named in `SignedHeaders`, body)
//! by the stand-in's own verifier ([`crate::verify::huawei`], not the signer
//! under test) and compared; a mismatch gets API Gateway's 401
//! `APIGW.0301` answer ("API Gateway error codes",
//! support.huaweicloud.com/devg-apisign/api-sign-errorcode.html).
//!
//! HTTP status codes, body shapes and ids (UUIDs) follow the reference. The
//! reference does not tie every failure to one code string, so codes the
//! pages do not name for a given call (the VPC/EVS not-found and in-use codes)
//! are marked "illustrative" below; the provider classifies them by status
//! and message, never by those strings alone.
//!
//! Asynchronous jobs ("Querying Job Execution Status", GET
//! /v1/{project_id}/jobs/{job_id}, support.huaweicloud.com/api-ecs/ecs_02_0901.html)
//! answer RUNNING to the first poll and SUCCESS (with their entities) to the
//! second, or once 300 ms (disk creates: 600 ms) have passed; only then does the
//! work take effect (a server goes BUILD → ACTIVE, a disk creating →
//! available, a delete removes). A disk still creating is not found by id
//! or in lists. A new VPC is CREATING and a new subnet UNKNOWN until read by
//! id twice or 300 ms have passed; dependents made before are refused.
//!
//! Documented behaviours of issue 15 modelled here, each beside its handler:
//! system disks carry the server's creation tags; `X-Client-Token` must be a
//! UUID; flow control answers `202 Common.0024`; subnets in a CREATING VPC
//! get `VPC.0004`; `delete_volume` defaults to false; prepaid servers cannot be
//! deleted; EVS errors come in `badRequest` / `itemNotFound` wrappers; unpaid
//! yearly/monthly orders leave jobs in PENDING_PAYMENT; "Querying Name
//! Servers" lists the private DNS servers. Toggles ([`HuaweiMock::throttle_ecs`],
//! [`HuaweiMock::break_builds`], [`HuaweiMock::hold_payments`],
//! [`HuaweiMock::sell_out_disks`]) switch the failure cases on.

use crate::background::Background;
use crate::verify::{huawei, Key, Rejection, WireRequest};
use crate::{MockCloud, MockResource, RequestHook};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use gpuform_provider::ResourceKind;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use time::OffsetDateTime;

pub const TEST_AK: &str = "HUAWEIMOCKAK0000TEST";
pub const TEST_SK: &str = "huawei-mock-secret-key-for-tests-only-0000";
pub const TEST_PROJECT_ID: &str = "0b5d2c3a4e6f47a8b9c0d1e2f3a4b5c6";

/// How long a job runs if nobody polls it twice; also how long a new VPC
/// stays CREATING and a new subnet UNKNOWN if nobody reads it twice.
const JOB_TIME: Duration = Duration::from_millis(300);

/// How long a disk create job runs if nobody polls it twice: a lost disk
/// create stays invisible that long (see `creating`).
const DISK_JOB_TIME: Duration = Duration::from_millis(600);

/// How long an attach or detach job runs if nobody polls it twice: the
/// disk stays `attaching` / `detaching` that long, so a run killed while
/// it ran finds it still in flight (on Huawei Cloud it takes seconds).
const ATTACH_JOB_TIME: Duration = Duration::from_millis(1500);

/// The settle time the stand-in tells gpuform to use (`GPUFORM_HUAWEI_SETTLE_MS`):
/// twice the longest a new disk stays invisible here.
const SETTLE_MS: u64 = 2 * DISK_JOB_TIME.as_millis() as u64;

/// The first poll pause the stand-in tells gpuform to use
/// (`GPUFORM_HUAWEI_POLL_MS`): its jobs finish at the second poll, so a real
/// cloud's half-second pause would only make the crash suites wait.
const POLL_MS: u64 = 20;

/// "METHOD /path" of every request that passed signature checks, in order
/// (see [`HuaweiMock::call_log`]).
pub type CallLog = Arc<Mutex<Vec<String>>>;

pub struct HuaweiMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _server: Background,
}

struct Shared {
    state: Mutex<State>,
    requests: AtomicU64,
    hook: Mutex<Option<RequestHook>>,
}

#[derive(Default)]
struct State {
    vpcs: Vec<Tagged>,
    subnets: Vec<Tagged>,
    sgs: Vec<Tagged>,
    groups: Vec<Value>,
    servers: Vec<Tagged>,
    volumes: Vec<Tagged>,
    jobs: HashMap<String, Job>,
    /// X-Client-Token → the answer first given for it.
    client_tokens: HashMap<String, Value>,
    images: Vec<Value>,
    /// Flavors that are "sold out" (capacity tests).
    sold_out: HashSet<String>,
    /// At most this many servers (quota tests).
    server_quota: Option<usize>,
    /// What ShowServerLimits answers (quota tests).
    limits: ServerLimits,
    /// ShowServerLimits is refused as unauthorized (a role without it).
    deny_limits: bool,
    /// The next N ECS requests are answered with flow control.
    throttle_ecs: u64,
    /// Flavors and AZs whose servers come up in ERROR.
    broken_flavors: HashSet<String>,
    broken_zones: HashSet<String>,
    /// Yearly/monthly orders are not paid (no balance for auto-pay).
    hold_payments: bool,
    /// EVS disk types that are sold out.
    sold_out_disks: HashSet<String>,
    /// VPCs (CREATING) and subnets (UNKNOWN) not ready yet: since when, and
    /// how often they were read by id.
    settling: HashMap<String, (Instant, u32)>,
    log: CallLog,
    /// What the BSS ratings quote (CNY), by flavor.
    prices: crate::prices::PriceBook,
    /// What KeystoneListRegions, NovaListAvailabilityZones and ListFlavors answer.
    geography: crate::geography::Geography,
}

/// The vCPU quotas ShowServerLimits reports (`absolute`), set by tests;
/// -1 is "no limit", as the reference says. Defaults are the reference's
/// example answer (support.huaweicloud.com/en-us/api-ecs/ecs_02_0801.html).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    pub max_total_cores: i64,
    pub total_cores_used: i64,
    pub max_total_spot_cores: i64,
    pub total_spot_cores_used: i64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_total_cores: 20480,
            total_cores_used: 40,
            max_total_spot_cores: 320,
            total_spot_cores_used: 0,
        }
    }
}

/// A resource body plus its tags (kept apart: each API shows tags its own way).
struct Tagged {
    body: Value,
    tags: Vec<(String, String)>,
}

impl Tagged {
    fn id(&self) -> &str {
        self.body
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

struct Job {
    body: Value,
    polls: u32,
    started: Instant,
    /// How long it runs if nobody polls it twice.
    duration: Duration,
    effect: Effect,
    fail: Option<(String, String)>,
}

enum Effect {
    ServerActive(String),
    ServerDelete(Vec<String>, bool),
    VolumeAvailable(String),
    VolumeDelete(String),
    VolumeExtend(String, u64),
    Attach { server: String, volume: String },
    Detach { server: String, volume: String },
    None,
}

type Answer = (StatusCode, Value);

impl HuaweiMock {
    /// Starts the server on 127.0.0.1 (a free port) on its own thread and runtime.
    pub fn start() -> HuaweiMock {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                images: public_images(),
                ..State::default()
            }),
            requests: AtomicU64::new(0),
            hook: Mutex::new(None),
        });
        let sh = shared.clone();
        let app = axum::Router::new().fallback(move |m: Method, u: Uri, h: HeaderMap, b: Bytes| {
            let sh = sh.clone();
            async move { handle(sh, m, u, h, b) }
        });
        let (addr, server) = Background::serve("huawei-mock", app);
        HuaweiMock {
            addr,
            shared,
            _server: server,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sets what the BSS price inquiries quote for a flavor (CNY); flavors
    /// without a price are refused as unknown specs.
    /// Adds a region and its zones to what KeystoneListRegions and
    /// NovaListAvailabilityZones list. Its project id is
    /// [`HuaweiMock::project_of`]: a region's calls are told apart by their
    /// project, as on Huawei Cloud where each region has its own.
    pub fn add_region(&self, region: &str, zones: &[&str]) {
        self.lock().geography.add_region(region, zones);
    }

    /// The project id of a region added with [`HuaweiMock::add_region`].
    pub fn project_of(region: &str) -> String {
        let h = region
            .bytes()
            .fold(0u64, |a, b| a.wrapping_mul(131).wrapping_add(u64::from(b)));
        format!("{h:016x}{:016x}", h ^ 0x5bd1_e995)
    }

    /// The variable that gives gpuform a region's project id.
    pub fn project_env(region: &str) -> (String, String) {
        (
            format!(
                "HUAWEICLOUD_SDK_PROJECT_ID_{}",
                region.to_ascii_uppercase().replace('-', "_")
            ),
            Self::project_of(region),
        )
    }

    /// Adds a flavor on sale (or sold out) in a zone to what ListFlavors answers.
    pub fn offer(&self, offer: crate::geography::ZoneOffer) {
        self.lock().geography.offer(offer);
    }

    pub fn set_price(&self, flavor: &str, price: crate::prices::ListPrice) {
        self.lock().prices.set(flavor, price);
    }

    /// After `n` more price answers, the BSS price inquiries fail with HTTP
    /// 500 (an outage half-way through a refresh); `None` ends it.
    pub fn fail_prices_after(&self, n: Option<u32>) {
        let mut st = self.lock();
        st.prices.fail_after = n;
        st.prices.answered = 0;
    }

    /// Makes a flavor "sold out": server create jobs for it fail.
    pub fn sell_out(&self, flavor: &str) {
        self.lock().sold_out.insert(flavor.to_string());
    }

    /// Limits how many servers the account may have (`Ecs.0001` beyond it).
    pub fn set_server_quota(&self, n: Option<usize>) {
        self.lock().server_quota = n;
    }

    /// Sets what ShowServerLimits answers.
    pub fn set_server_limits(&self, limits: ServerLimits) {
        self.lock().limits = limits;
    }

    /// Refuses ShowServerLimits with 403, as for a role without
    /// `ecs:cloudServerQuotas:get`.
    pub fn deny_server_limits(&self, deny: bool) {
        self.lock().deny_limits = deny;
    }

    /// The next `n` ECS requests get the documented flow-control answer,
    /// `202 Common.0024 exceeds flow over limit` ("Error Codes",
    /// support.huaweicloud.com/api-ecs/ecs_07_0002.html), and take no effect.
    pub fn throttle_ecs(&self, n: u64) {
        self.lock().throttle_ecs = n;
    }

    /// Servers of this flavor come up in ERROR and their create job fails.
    pub fn break_builds(&self, flavor: &str) {
        self.lock().broken_flavors.insert(flavor.to_string());
    }

    /// Servers built in this AZ come up in ERROR and their create job fails.
    pub fn break_builds_in_zone(&self, zone: &str) {
        self.lock().broken_zones.insert(zone.to_string());
    }

    /// Yearly/monthly orders stay unpaid: their create jobs stay
    /// PENDING_PAYMENT ("Querying Job Execution Status", ecs_02_0901).
    pub fn hold_payments(&self, on: bool) {
        self.lock().hold_payments = on;
    }

    /// EVS disks of this type (`SSD`, `GPSSD`...) are sold out.
    pub fn sell_out_disks(&self, volume_type: &str) {
        self.lock().sold_out_disks.insert(volume_type.to_string());
    }

    /// "METHOD /path" of every signed request, in order; shared, so a request
    /// hook can tell which call it is looking at.
    pub fn call_log(&self) -> CallLog {
        self.lock().log.clone()
    }

    /// Makes an empty data disk outside gpuform (no tags) and attaches it to
    /// `server` at once, as someone using the console would.
    pub fn attach_foreign_disk(&self, server: &str, size: u64) -> Option<String> {
        let mut st = self.lock();
        let zone = st
            .servers
            .iter()
            .find(|s| s.id() == server)
            .map(|s| str_of(&s.body, "OS-EXT-AZ:availability_zone"))?;
        let id = new_id();
        st.volumes.push(Tagged {
            body: json!({"id": id, "name": "attached-by-hand", "status": "in-use", "size": size,
                "availability_zone": zone, "volume_type": "SSD", "bootable": "false",
                "attachments": [{"server_id": server, "attachment_id": new_id(), "volume_id": id, "id": id, "device": "/dev/vdc"}],
                "metadata": {}, "multiattach": false, "created_at": now_iso()}),
            tags: Vec::new(),
        });
        if let Some(s) = st.servers.iter_mut().find(|s| s.id() == server) {
            if let Some(a) = s.body["os-extended-volumes:volumes_attached"].as_array_mut() {
                a.push(json!({"id": id, "bootIndex": "", "delete_on_termination": "false", "device": "/dev/vdc"}));
            }
        }
        Some(id)
    }

    /// Turns a pay-per-use server into a yearly/monthly one behind gpuform's
    /// back, as "Changing the ECS Billing Mode" (POST
    /// /v1/{project_id}/cloudservers/actions/change-charge-mode,
    /// support.huaweicloud.com/api-ecs/ecs_02_0211.html) does once the order is paid.
    pub fn make_prepaid(&self, server: &str) -> bool {
        let mut st = self.lock();
        match st.servers.iter_mut().find(|s| s.id() == server) {
            Some(s) => {
                s.body["metadata"]["charging_mode"] = json!("1");
                true
            }
            None => false,
        }
    }

    /// Removes gpuform's tags (`gpuform_*`) from a resource behind its back,
    /// and from a server also gpuform's metadata (`gpuform_image`,
    /// `gpuform_pricing`): it is then as a console or another tool makes it,
    /// what `gpuform import` adopts. False if there is no such resource.
    pub fn disown_behind(&self, id: &str) -> bool {
        let mut st = self.lock();
        let st = &mut *st;
        let found = [
            &mut st.vpcs,
            &mut st.subnets,
            &mut st.sgs,
            &mut st.servers,
            &mut st.volumes,
        ]
        .into_iter()
        .find_map(|list| list.iter_mut().find(|t| t.id() == id));
        let Some(t) = found else {
            return false;
        };
        t.tags.retain(|(k, _)| !k.starts_with("gpuform_"));
        if let Some(md) = t.body.get_mut("metadata").and_then(Value::as_object_mut) {
            md.retain(|k, _| !k.starts_with("gpuform_"));
        }
        // EVS answers a disk's tags in its body (`tags`: {key: value}).
        if t.body.get("tags").is_some_and(Value::is_object) {
            t.body["tags"] =
                Value::Object(t.tags.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
        }
        true
    }

    /// Every EVS disk id, system disks included (for tests).
    pub fn disk_ids(&self) -> Vec<String> {
        self.lock()
            .volumes
            .iter()
            .map(|v| v.id().to_string())
            .collect()
    }

    /// Whether an EVS disk with this id exists (also system disks, which
    /// [`MockCloud::resources`] leaves out).
    pub fn disk_exists(&self, id: &str) -> bool {
        self.lock().volumes.iter().any(|v| v.id() == id)
    }

    /// The subnet body as the VPC API shows it.
    pub fn subnet(&self, id: &str) -> Option<Value> {
        self.lock()
            .subnets
            .iter()
            .find(|s| s.id() == id)
            .map(|s| s.body.clone())
    }

    /// The servers as the ECS API shows them, in the order they were
    /// created (what a test checks a boot order and user data on).
    pub fn servers(&self) -> Vec<Value> {
        self.lock().servers.iter().map(|s| s.body.clone()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MockCloud for HuaweiMock {
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GPUFORM_HUAWEI_ENDPOINT".into(), self.endpoint()),
            ("HUAWEICLOUD_SDK_AK".into(), TEST_AK.into()),
            ("HUAWEICLOUD_SDK_SK".into(), TEST_SK.into()),
            ("HUAWEICLOUD_SDK_PROJECT_ID".into(), TEST_PROJECT_ID.into()),
            ("GPUFORM_HUAWEI_SETTLE_MS".into(), SETTLE_MS.to_string()),
            ("GPUFORM_HUAWEI_POLL_MS".into(), POLL_MS.to_string()),
        ]
    }

    /// Root disks (bootable EVS disks made with a server) are part of their
    /// server and are not listed on their own.
    fn resources(&self) -> Vec<MockResource> {
        let st = self.lock();
        let mut out = Vec::new();
        let mk = |kind, t: &Tagged| {
            MockResource::new(
                kind,
                t.id(),
                "mock",
                t.tags
                    .iter()
                    .find(|(k, _)| k == "gpuform_address")
                    .map(|(_, v)| decode_tag(v)),
            )
        };
        st.vpcs
            .iter()
            .for_each(|t| out.push(mk(ResourceKind::Network, t)));
        st.subnets
            .iter()
            .for_each(|t| out.push(mk(ResourceKind::Subnet, t)));
        for t in &st.sgs {
            let mut m = mk(ResourceKind::Firewall, t);
            m.ingress = sg_ingress_view(&t.body);
            out.push(m);
        }
        st.servers
            .iter()
            .for_each(|t| out.push(mk(ResourceKind::Instance, t)));
        for t in st
            .volumes
            .iter()
            .filter(|v| str_of(&v.body, "bootable") != "true")
        {
            let mut m = mk(ResourceKind::Volume, t);
            m.attached_to = t.body["attachments"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| str_of(a, "server_id"))
                .find(|s| !s.is_empty());
            out.push(m);
        }
        for g in &st.groups {
            out.push(MockResource::new(
                ResourceKind::Placement,
                &str_of(g, "id"),
                "mock",
                None,
            ));
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    fn delete_behind(&self, id: &str) -> bool {
        let mut st = self.lock();
        if st.servers.iter().any(|s| s.id() == id) {
            // As the console's "delete data disks" option would.
            remove_servers(&mut st, &[id.to_string()], true);
            return true;
        }
        if st.volumes.iter().any(|v| v.id() == id) {
            st.volumes.retain(|v| v.id() != id);
            return true;
        }
        let before = st.vpcs.len() + st.subnets.len() + st.sgs.len() + st.groups.len();
        st.vpcs.retain(|t| t.id() != id);
        st.subnets.retain(|t| t.id() != id);
        st.sgs.retain(|t| t.id() != id);
        st.groups.retain(|g| str_of(g, "id") != id);
        before != st.vpcs.len() + st.subnets.len() + st.sgs.len() + st.groups.len()
    }

    fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    fn set_hook(&self, hook: Option<RequestHook>) {
        *self.shared.hook.lock().unwrap_or_else(|e| e.into_inner()) = hook;
    }
}

// ----- plumbing ----------------------------------------------------------------

fn handle(sh: Arc<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let n = sh.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let request_id = new_id().replace('-', "");
    let (status, value) = match verify(&method, &uri, &headers, &body) {
        Err(msg) => (
            StatusCode::UNAUTHORIZED,
            json!({"error_msg": format!("Incorrect IAM authentication information: {msg}"), "error_code": "APIGW.0301", "request_id": request_id}),
        ),
        Ok(()) => {
            let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
            advance(&mut st);
            let client_token = headers
                .get("x-client-token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            route(&mut st, &method, &uri, &body, client_token)
        }
    };
    // The N-th request has taken effect: the test may "crash" the client now.
    let hook = sh.hook.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(h) = hook {
        h(n);
    }
    let mut resp = if value.is_null() {
        status.into_response()
    } else {
        (status, axum::Json(value)).into_response()
    };
    if let Ok(v) = request_id.parse() {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

/// Checks the SDK-HMAC-SHA256 signature with the stand-in's own verifier
/// ([`crate::verify::huawei`], not the signer under test), then the
/// X-Sdk-Date window (15 minutes).
fn verify(method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Result<(), String> {
    let wire = WireRequest::from_http(method, uri, headers, body);
    let key = Key {
        id: TEST_AK,
        secret: TEST_SK,
    };
    let verified = huawei::verify(&wire, &key).map_err(|r| match r {
        Rejection::Mismatch { .. } | Rejection::ContentHash => {
            "verify aksk signature fail".to_string()
        }
        other => other.to_string(),
    })?;
    let t = parse_sdk_date(&verified.sdk_date).ok_or("bad X-Sdk-Date")?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    if (now - t).abs() > 15 * 60 {
        return Err("the request has expired (X-Sdk-Date more than 15 minutes off)".into());
    }
    Ok(())
}

/// `YYYYMMDDTHHMMSSZ` → Unix seconds.
fn parse_sdk_date(d: &str) -> Option<i64> {
    let b = d.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| d.get(r)?.parse::<i64>().ok();
    let (y, m, day) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days * 86400 + hh * 3600 + mm * 60 + ss)
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// gpuform's tag-value escape (`_XX` per byte), read back for `MockResource::address`.
fn decode_tag(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'_' && i + 2 < b.len() {
            if let Some(x) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| v.to_string())
}

/// 32 random lower-case hex characters (ids and job ids).
fn random_hex() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

fn new_id() -> String {
    let h = random_hex();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn now_iso() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let dt = OffsetDateTime::from_unix_timestamp(t).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

fn str_of(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

// Error bodies as each service documents them.
fn ecs_err(status: StatusCode, code: &str, msg: &str) -> Answer {
    (status, json!({"error": {"code": code, "message": msg}}))
}
fn vpc_err(status: StatusCode, code: &str, msg: &str) -> Answer {
    (status, json!({"code": code, "message": msg}))
}
/// EVS answers 400 and 404 in the OpenStack fault wrappers
/// (`{"badRequest": {...}}`, `{"itemNotFound": {...}}`, as in the EVS/VBS
/// references' error examples), other failures as `{"error": {...}}`.
fn evs_err(status: StatusCode, code: &str, msg: &str) -> Answer {
    let key = match status {
        StatusCode::BAD_REQUEST => "badRequest",
        StatusCode::NOT_FOUND => "itemNotFound",
        _ => "error",
    };
    (status, json!({key: {"code": code, "message": msg}}))
}
fn no_api() -> Answer {
    (
        StatusCode::NOT_FOUND,
        json!({"error_code": "APIGW.0101", "error_msg": "The API does not exist or has not been published in the environment"}),
    )
}

fn ok(v: Value) -> Answer {
    (StatusCode::OK, v)
}

/// Tag rules of ECS `server_tags` and the VPC/EVS tag models: key
/// `[A-Za-z0-9_-]{1,36}`, value `[A-Za-z0-9_.-]{0,43}`, at most 10.
fn check_tags(t: &[(String, String)]) -> Result<(), String> {
    if t.len() > 10 {
        return Err("a resource takes at most 10 tags".into());
    }
    for (k, v) in t {
        let key_ok = !k.is_empty()
            && k.len() <= 36
            && k.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
        let val_ok = v.len() <= 43
            && v.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.');
        if !key_ok || !val_ok {
            return Err(format!("invalid tag {k}={v}"));
        }
    }
    Ok(())
}

fn kv_list(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("key")?.as_str()?.to_string(), str_of(t, "value"))))
        .collect()
}

/// The first host address of the subnet's CIDR block that is neither its
/// gateway nor held by a server in it: the fixed (private) address of a new
/// server's NIC.
fn free_address(st: &State, subnet: &str, cidr: &str, gateway: &str) -> Option<String> {
    let (base, len) = parse_cidr(cidr)?;
    let size = 1u64 << (32 - len);
    let taken: HashSet<String> = st
        .servers
        .iter()
        .filter(|sv| str_of(&sv.body, "gpuform_mock_subnet") == subnet)
        .filter_map(|sv| sv.body.get("addresses")?.as_object().cloned())
        .flat_map(|a| a.into_values())
        .filter_map(|l| l.as_array().cloned())
        .flatten()
        .map(|a| str_of(&a, "addr"))
        .collect();
    (1..size.saturating_sub(1))
        .map(|n| std::net::Ipv4Addr::from(base.wrapping_add(n as u32)).to_string())
        .find(|a| a != gateway && !taken.contains(a))
}

fn parse_cidr(c: &str) -> Option<(u32, u32)> {
    let (ip, len) = c.split_once('/')?;
    let len: u32 = len.parse().ok()?;
    let o: Vec<u8> = ip
        .split('.')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if o.len() != 4 || len > 32 {
        return None;
    }
    Some((u32::from_be_bytes([o[0], o[1], o[2], o[3]]), len))
}

fn mask(len: u32) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

fn cidr_within(inner: &str, outer: &str) -> bool {
    match (parse_cidr(inner), parse_cidr(outer)) {
        (Some((i, il)), Some((o, ol))) => il >= ol && (i & mask(ol)) == (o & mask(ol)),
        _ => false,
    }
}

fn ip_within(ip: &str, cidr: &str) -> bool {
    cidr_within(&format!("{ip}/32"), cidr)
}

fn public_images() -> Vec<Value> {
    // Shaped like IMS "Querying Images" (GET /v2/cloudimages,
    // support.huaweicloud.com/api-ims/ims_03_0602.html) answers.
    let img = |name: &str, ver: &str, created: &str| {
        json!({"id": new_id(), "name": name, "status": "active", "visibility": "public", "__imagetype": "gold",
               "__platform": "Ubuntu", "__os_version": format!("Ubuntu {ver} server 64bit"), "__os_type": "Linux",
               "min_disk": 40, "disk_format": "zvhd2", "created_at": created})
    };
    vec![
        img("Ubuntu 20.04 server 64bit", "20.04", "2023-01-10T00:00:00Z"),
        img("Ubuntu 22.04 server 64bit", "22.04", "2024-03-01T00:00:00Z"),
        img(
            "Ubuntu 22.04 server 64bit(40GB)",
            "22.04",
            "2023-05-01T00:00:00Z",
        ),
        img(
            "Ubuntu 22.04 server 64bit with Tesla Driver 535.54.03 and CUDA 12.2",
            "22.04",
            "2024-02-01T00:00:00Z",
        ),
        img("Ubuntu 24.04 server 64bit", "24.04", "2024-09-01T00:00:00Z"),
    ]
}

// ----- jobs ---------------------------------------------------------------------

fn new_job(
    st: &mut State,
    job_type: &str,
    entities: Value,
    effect: Effect,
    fail: Option<(String, String)>,
) -> String {
    let id = format!("ff80808{}", random_hex());
    let duration = match job_type {
        "createVolume" => DISK_JOB_TIME,
        "attachVolume" | "detachVolume" => ATTACH_JOB_TIME,
        _ => JOB_TIME,
    };
    let body = json!({"job_id": id, "job_type": job_type, "status": "RUNNING", "entities": entities,
                      "begin_time": now_iso(), "end_time": "", "error_code": null, "fail_reason": null});
    st.jobs.insert(
        id.clone(),
        Job {
            body,
            polls: 0,
            started: Instant::now(),
            duration,
            effect,
            fail,
        },
    );
    id
}

/// Completes jobs that have run long enough even if nobody polls them, and
/// makes VPCs/subnets ready that have waited long enough.
fn advance(st: &mut State) {
    let ready: Vec<String> = st
        .settling
        .iter()
        .filter(|(_, (since, _))| since.elapsed() >= JOB_TIME)
        .map(|(k, _)| k.clone())
        .collect();
    for id in ready {
        make_ready(st, &id);
    }
    let due: Vec<String> = st
        .jobs
        .iter()
        .filter(|(_, j)| {
            str_of(&j.body, "status") == "RUNNING" && j.started.elapsed() >= j.duration
        })
        .map(|(k, _)| k.clone())
        .collect();
    for id in due {
        finish_job(st, &id);
    }
}

fn finish_job(st: &mut State, id: &str) {
    let Some(job) = st.jobs.get_mut(id) else {
        return;
    };
    let effect = std::mem::replace(&mut job.effect, Effect::None);
    let end = now_iso();
    job.body["end_time"] = json!(end);
    if let Some((code, reason)) = job.fail.clone() {
        job.body["status"] = json!("FAIL");
        job.body["error_code"] = json!(code);
        job.body["fail_reason"] = json!(reason);
        if let Some(subs) = job
            .body
            .pointer_mut("/entities/sub_jobs")
            .and_then(Value::as_array_mut)
        {
            for s in subs {
                s["status"] = json!("FAIL");
                s["error_code"] = json!(code);
                s["fail_reason"] = json!(reason);
            }
        }
        return;
    }
    job.body["status"] = json!("SUCCESS");
    if let Some(subs) = job
        .body
        .pointer_mut("/entities/sub_jobs")
        .and_then(Value::as_array_mut)
    {
        for s in subs {
            s["status"] = json!("SUCCESS");
        }
    }
    match effect {
        Effect::ServerActive(sid) => {
            if let Some(s) = st.servers.iter_mut().find(|s| s.id() == sid) {
                s.body["status"] = json!("ACTIVE");
                s.body["OS-EXT-STS:vm_state"] = json!("active");
            }
        }
        Effect::ServerDelete(ids, delete_volume) => remove_servers(st, &ids, delete_volume),
        Effect::VolumeAvailable(vid) => {
            if let Some(v) = st.volumes.iter_mut().find(|v| v.id() == vid) {
                v.body["status"] = json!("available");
            }
        }
        Effect::VolumeDelete(vid) => st.volumes.retain(|v| v.id() != vid),
        Effect::VolumeExtend(vid, size) => {
            if let Some(v) = st.volumes.iter_mut().find(|v| v.id() == vid) {
                v.body["size"] = json!(size);
            }
        }
        Effect::Attach { server, volume } => {
            if let Some(v) = st.volumes.iter_mut().find(|v| v.id() == volume) {
                v.body["status"] = json!("in-use");
                let at = json!({"server_id": server, "attachment_id": new_id(), "volume_id": volume, "id": volume, "device": "/dev/vdb"});
                if let Some(a) = v.body["attachments"].as_array_mut() {
                    a.push(at);
                }
            }
            if let Some(s) = st.servers.iter_mut().find(|s| s.id() == server) {
                if let Some(a) = s.body["os-extended-volumes:volumes_attached"].as_array_mut() {
                    a.push(json!({"id": volume, "bootIndex": "", "delete_on_termination": "false", "device": "/dev/vdb"}));
                }
            }
        }
        Effect::Detach { server, volume } => detach(st, &server, &volume),
        Effect::None => {}
    }
}

/// "Querying VPC Details" by id: counts as a read of a settling VPC.
fn read_vpc<'a>(st: &'a mut State, id: &str) -> Option<&'a Tagged> {
    read_settling(st, id);
    st.vpcs.iter().find(|v| v.id() == id)
}

/// "Querying Subnet Details" by id: counts as a read of a settling subnet.
fn read_subnet<'a>(st: &'a mut State, id: &str) -> Option<&'a Tagged> {
    read_settling(st, id);
    st.subnets.iter().find(|v| v.id() == id)
}

/// A VPC becomes OK, a subnet ACTIVE.
fn make_ready(st: &mut State, id: &str) {
    st.settling.remove(id);
    if let Some(v) = st.vpcs.iter_mut().find(|v| v.id() == id) {
        v.body["status"] = json!("OK");
    }
    if let Some(s) = st.subnets.iter_mut().find(|s| s.id() == id) {
        s.body["status"] = json!("ACTIVE");
    }
}

/// A read by id of a VPC or subnet that is settling: the second one finds
/// it ready (like a job's second poll), so a client that waits is not slowed.
fn read_settling(st: &mut State, id: &str) {
    let done = match st.settling.get_mut(id) {
        Some((_, reads)) => {
            *reads += 1;
            *reads >= 2
        }
        None => false,
    };
    if done {
        make_ready(st, id);
    }
}

fn detach(st: &mut State, server: &str, volume: &str) {
    if let Some(v) = st.volumes.iter_mut().find(|v| v.id() == volume) {
        if let Some(a) = v.body["attachments"].as_array_mut() {
            a.retain(|x| str_of(x, "server_id") != server);
            let left = if a.is_empty() { "available" } else { "in-use" };
            v.body["status"] = json!(left);
        }
    }
    if let Some(s) = st.servers.iter_mut().find(|s| s.id() == server) {
        if let Some(a) = s.body["os-extended-volumes:volumes_attached"].as_array_mut() {
            a.retain(|x| str_of(x, "id") != volume);
        }
    }
}

/// Deletes servers ("Deleting ECSs", support.huaweicloud.com/api-ecs/ecs_02_0103.html):
/// the system disk always goes with its server; attached data disks are
/// deleted only with `delete_volume: true`, otherwise detached and kept.
fn remove_servers(st: &mut State, ids: &[String], delete_volume: bool) {
    for id in ids {
        let attached: Vec<(String, bool)> = st
            .volumes
            .iter()
            .filter(|v| {
                v.body["attachments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|a| str_of(a, "server_id") == *id)
            })
            .map(|v| (v.id().to_string(), str_of(&v.body, "bootable") == "true"))
            .collect();
        for (vid, system) in attached {
            if system || delete_volume {
                st.volumes.retain(|v| v.id() != vid);
            } else {
                detach(st, id, &vid);
            }
        }
        st.servers.retain(|s| s.id() != id);
        for g in &mut st.groups {
            if let Some(m) = g["members"].as_array_mut() {
                m.retain(|x| x.as_str() != Some(id));
            }
        }
    }
}

// ----- BSS price inquiries --------------------------------------------------------

fn bss_err(status: StatusCode, code: &str, msg: &str) -> Answer {
    (status, json!({"error_code": code, "error_msg": msg}))
}

/// "查询按需产品价格" (ListOnDemandResourceRatings, `POST
/// /v2/bills/ratings/on-demand-resources`, api-oce/bcloud_01001.html) and
/// "查询包年/包月产品价格" (ListRateOnPeriodDetail, `POST
/// /v2/bills/ratings/period-resources/subscribe-rate`, bcloud_01002.html).
/// Body: `project_id` and `product_infos[]` with `id`, `cloud_service_type`,
/// `resource_type`, `resource_spec` (`<flavor>.linux` for ECS), `region`,
/// and `usage_factor` / `usage_measure_id` (4 = hour) / `usage_value`, or
/// `period_type` (2 month, 3 year) / `period_num`; `subscription_num`.
/// Amounts in yuan (`measure_id` 1); the stand-in gives no discount.
fn bss_rating(st: &mut State, rest: &[&str], body: &Value) -> Answer {
    let bad = |m: &str| bss_err(StatusCode::BAD_REQUEST, "CBC.0100", m);
    if str_of(body, "project_id") != TEST_PROJECT_ID {
        return bss_err(
            StatusCode::FORBIDDEN,
            "CBC.0150",
            "Access denied. The project_id does not belong to the customer.",
        );
    }
    let Some(info) = body
        .get("product_infos")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    else {
        return bad("Invalid parameter: product_infos.");
    };
    if str_of(info, "cloud_service_type") != "hws.service.type.ec2"
        || str_of(info, "resource_type") != "hws.resource.type.vm"
    {
        return bad("Invalid parameter: cloud_service_type or resource_type.");
    }
    let spec = str_of(info, "resource_spec");
    let Some(flavor) = spec
        .strip_suffix(".linux")
        .or_else(|| spec.strip_suffix(".win"))
    else {
        return bad("Invalid parameter: resource_spec.");
    };
    let flavor = flavor.to_string();
    if str_of(info, "region").is_empty() {
        return bad("Invalid parameter: region.");
    }
    if st.prices.outage() {
        return bss_err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "CBC.0999",
            "Other errors.",
        );
    }
    let Some(list) = st.prices.get(&flavor) else {
        return bad(&format!(
            "Invalid parameter: resource_spec `{spec}` has no price (unknown flavor)."
        ));
    };
    let id = str_of(info, "id");
    let num = |k: &str| info.get(k).and_then(Value::as_u64);
    match rest {
        ["on-demand-resources"] => {
            if str_of(info, "usage_factor") != "Duration" || num("usage_measure_id") != Some(4) {
                return bad("Invalid parameter: usage_factor / usage_measure_id (this stand-in rates Duration in hours, measure 4).");
            }
            let hours = num("usage_value").unwrap_or(0) as f64;
            let amount = list.hourly * hours * num("subscription_num").unwrap_or(1) as f64;
            ok(json!({
                "amount": amount,
                "discount_amount": 0.0,
                "official_website_amount": amount,
                "measure_id": 1,
                "currency": "CNY",
                "product_rating_results": [{
                    "id": id, "product_id": format!("OFFI{flavor}"), "amount": amount,
                    "discount_amount": 0.0, "official_website_amount": amount, "measure_id": 1,
                }],
            }))
        }
        ["period-resources", "subscribe-rate"] => {
            let n = num("period_num").unwrap_or(0) as f64;
            let per = match num("period_type") {
                Some(2) => list.month,
                Some(3) => list.year,
                _ => return bad("Invalid parameter: period_type (2 month, 3 year)."),
            };
            let amount = per * n * num("subscription_num").unwrap_or(1) as f64;
            ok(json!({
                "official_website_rating_result": {
                    "official_website_amount": amount,
                    "measure_id": 1,
                    "product_rating_results": [{"id": id, "product_id": format!("OFFI{flavor}"), "official_website_amount": amount, "measure_id": 1}],
                },
                "optional_discount_rating_results": [],
                "currency": "CNY",
            }))
        }
        _ => no_api(),
    }
}

// ----- routing ------------------------------------------------------------------

fn route(st: &mut State, method: &Method, uri: &Uri, body: &[u8], token: Option<String>) -> Answer {
    let path = pct_decode(uri.path());
    let seg: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let query: Vec<(String, String)> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect();
    let q = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if let Ok(mut log) = st.log.lock() {
        log.push(format!("{method} {path}"));
    }
    // Flow control as the ECS error table documents it: a 202 that carries
    // an error, not the answer ("Error Codes", api-ecs/ecs_07_0002.html).
    if st.throttle_ecs > 0 && path.contains("/cloudservers") {
        st.throttle_ecs -= 1;
        return (
            StatusCode::ACCEPTED,
            json!({"error": {"code": "Common.0024", "message": "exceeds flow over limit"}}),
        );
    }
    let json_body: Value = if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => {
                return ecs_err(
                    StatusCode::BAD_REQUEST,
                    "Ecs.0005",
                    "request body is illegal.",
                )
            }
        }
    };
    // IMS has no project in its path.
    if let (&Method::GET, ["v2", "cloudimages"]) = (method, seg.as_slice()) {
        return list_images(st, &q);
    }
    // Nor IAM's KeystoneListRegions.
    if let (&Method::GET, ["v3", "regions"]) = (method, seg.as_slice()) {
        return keystone_list_regions(st);
    }
    // A region's own project (HuaweiMock::add_region): its zones and flavors.
    if let [version, project, rest @ ..] = seg.as_slice() {
        let region = st
            .geography
            .regions()
            .find(|r| HuaweiMock::project_of(r) == *project)
            .cloned();
        if let Some(region) = region {
            return match (method, *version, rest) {
                (&Method::GET, "v2.1", ["os-availability-zone"]) => {
                    nova_list_availability_zones(st, &region)
                }
                (&Method::GET, "v1", ["cloudservers", "flavors"]) => {
                    list_flavors(st, &region, q("availability_zone"))
                }
                (&Method::GET, "v1", ["cloudservers", "limits"]) => server_limits(st),
                _ => no_api(),
            };
        }
    }
    // Neither has DNS's "Querying Name Servers".
    if let (&Method::GET, ["v2", "nameservers"]) = (method, seg.as_slice()) {
        return name_servers(&q);
    }
    // BSS (price inquiries) has no project in its path either: it is in the body.
    if let (&Method::POST, ["v2", "bills", "ratings", rest @ ..]) = (method, seg.as_slice()) {
        return bss_rating(st, rest, &json_body);
    }
    if seg.len() < 2 {
        return no_api();
    }
    if seg[1] != TEST_PROJECT_ID {
        return (
            StatusCode::FORBIDDEN,
            json!({"error_code": "APIGW.0302", "error_msg": "The IAM user is not authorized to access the API (project id does not match the credentials)"}),
        );
    }
    let m = method.clone();
    match (m, seg[0], &seg[2..]) {
        // --- ECS
        (Method::POST, "v1.1", ["cloudservers"]) => create_servers(st, &json_body, token),
        (Method::GET, "v1", ["cloudservers", "detail"]) => list_servers(st, &q),
        (Method::GET, "v1", ["cloudservers", "limits"]) => server_limits(st),
        (Method::POST, "v1", ["cloudservers", "delete"]) => delete_servers(st, &json_body),
        (Method::GET, "v1", ["cloudservers", "os-server-groups"]) => {
            ok(json!({"server_groups": st.groups.clone()}))
        }
        (Method::POST, "v1", ["cloudservers", "os-server-groups"]) => create_group(st, &json_body),
        (Method::DELETE, "v1", ["cloudservers", "os-server-groups", id]) => {
            let n = st.groups.len();
            st.groups.retain(|g| str_of(g, "id") != *id);
            if n == st.groups.len() {
                ecs_err(
                    StatusCode::NOT_FOUND,
                    "Ecs.0114",
                    "server group not found (illustrative code)",
                )
            } else {
                (StatusCode::NO_CONTENT, Value::Null)
            }
        }
        (Method::GET, "v1", ["cloudservers", id]) => {
            match st.servers.iter().find(|s| s.id() == *id) {
                Some(s) => ok(json!({"server": server_view(s)})),
                None => ecs_err(
                    StatusCode::NOT_FOUND,
                    "Ecs.0114",
                    &format!("Instance[{id}] could not be found (illustrative code)"),
                ),
            }
        }
        (Method::POST, "v1", ["cloudservers", id, "attachvolume"]) => attach(st, id, &json_body),
        (Method::DELETE, "v1", ["cloudservers", id, "detachvolume", vol]) => {
            start_detach(st, id, vol)
        }
        (Method::POST, "v1", ["cloudservers", id, "tags", "action"]) => {
            let id = id.to_string();
            tag_action(
                st.servers.iter_mut().find(|s| s.id() == id),
                &json_body,
                Service::Ecs,
            )
        }
        (Method::GET, "v1", ["jobs", id]) => match st.jobs.get_mut(*id) {
            Some(j) => {
                j.polls += 1;
                let running = str_of(&j.body, "status") == "RUNNING";
                if running && j.polls >= 2 {
                    let id = id.to_string();
                    finish_job(st, &id);
                    ok(st
                        .jobs
                        .get(&id)
                        .map(|j| j.body.clone())
                        .unwrap_or(Value::Null))
                } else {
                    ok(j.body.clone())
                }
            }
            None => ecs_err(StatusCode::NOT_FOUND, "Ecs.0000", "job not found"),
        },
        // --- VPC
        (Method::POST, "v1", ["vpcs"]) => create_vpc(st, &json_body),
        (Method::GET, "v1", ["vpcs"]) => page_v1(&st.vpcs, "vpcs", &q, |_| true),
        (Method::GET, "v1", ["vpcs", id]) => match read_vpc(st, id) {
            Some(v) => ok(json!({"vpc": v.body})),
            None => vpc_err(
                StatusCode::NOT_FOUND,
                "VPC.0101",
                "vpc not found (illustrative code)",
            ),
        },
        (Method::DELETE, "v1", ["vpcs", id]) => delete_vpc(st, id),
        (Method::DELETE, "v1", ["vpcs", vpc, "subnets", id]) => delete_subnet(st, vpc, id),
        (Method::POST, "v1", ["subnets"]) => create_subnet(st, &json_body),
        (Method::GET, "v1", ["subnets"]) => {
            let vpc = q("vpc_id");
            page_v1(&st.subnets, "subnets", &q, |b| {
                vpc.as_deref().is_none_or(|v| str_of(b, "vpc_id") == v)
            })
        }
        (Method::GET, "v1", ["subnets", id]) => match read_subnet(st, id) {
            Some(v) => ok(json!({"subnet": v.body})),
            None => vpc_err(
                StatusCode::NOT_FOUND,
                "VPC.0202",
                "subnet not found (illustrative code)",
            ),
        },
        (Method::POST, "v1", ["security-groups"]) => create_sg(st, &json_body),
        (Method::GET, "v1", ["security-groups"]) => {
            let vpc = q("vpc_id");
            page_v1(&st.sgs, "security_groups", &q, |b| {
                vpc.as_deref().is_none_or(|v| str_of(b, "vpc_id") == v)
            })
        }
        (Method::GET, "v1", ["security-groups", id]) => match st.sgs.iter().find(|v| v.id() == *id)
        {
            Some(v) => ok(json!({"security_group": v.body})),
            None => vpc_err(
                StatusCode::NOT_FOUND,
                "VPC.0601",
                "security group not found (illustrative code)",
            ),
        },
        (Method::DELETE, "v1", ["security-groups", id]) => delete_sg(st, id),
        (Method::POST, "v1", ["security-group-rules"]) => create_rule(st, &json_body),
        (Method::DELETE, "v1", ["security-group-rules", id]) => delete_rule(st, id),
        (Method::POST, "v2.0", [what, "resource_instances", "action"]) => {
            let list = match *what {
                "vpcs" => &st.vpcs,
                "subnets" => &st.subnets,
                "security-groups" => &st.sgs,
                _ => return no_api(),
            };
            filter_by_tags(list, &json_body)
        }
        (Method::POST, "v2.0", [what, id, "tags", "action"]) => {
            let id = id.to_string();
            let list = match *what {
                "vpcs" => &mut st.vpcs,
                "subnets" => &mut st.subnets,
                "security-groups" => &mut st.sgs,
                _ => return no_api(),
            };
            tag_action(
                list.iter_mut().find(|t| t.id() == id),
                &json_body,
                Service::Vpc,
            )
        }
        // --- EVS
        (Method::POST, "v2.1", ["cloudvolumes"]) => create_volume(st, &json_body),
        (Method::GET, "v2", ["cloudvolumes", "detail"]) => list_volumes(st, &q),
        (Method::GET, "v2", ["cloudvolumes", id]) => {
            match st.volumes.iter().find(|v| v.id() == *id && !creating(v)) {
                Some(v) => ok(json!({"volume": volume_view(v)})),
                None => evs_err(
                    StatusCode::NOT_FOUND,
                    "EVS.4102",
                    "volume not found (illustrative code)",
                ),
            }
        }
        (Method::DELETE, "v2", ["cloudvolumes", id]) => delete_volume(st, id),
        (Method::POST, "v2.1", ["cloudvolumes", id, "action"]) => extend_volume(st, id, &json_body),
        (Method::POST, "v2", ["cloudvolumes", id, "tags", "action"]) => {
            let id = id.to_string();
            tag_action(
                st.volumes.iter_mut().find(|v| v.id() == id),
                &json_body,
                Service::Evs,
            )
        }
        _ => no_api(),
    }
}

#[derive(Clone, Copy)]
enum Service {
    Ecs,
    Vpc,
    Evs,
}

/// Marker pagination of the VPC v1 lists ("Querying VPCs", GET
/// /v1/{project_id}/vpcs, support.huaweicloud.com/api-vpc/vpc_api01_0003.html:
/// `limit`, `marker` = last id of the previous page).
fn page_v1(
    list: &[Tagged],
    key: &str,
    q: &dyn Fn(&str) -> Option<String>,
    keep: impl Fn(&Value) -> bool,
) -> Answer {
    let limit = q("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(2000)
        .min(2000);
    let items: Vec<&Value> = list.iter().map(|t| &t.body).filter(|b| keep(b)).collect();
    let start = match q("marker") {
        Some(m) => match items.iter().position(|b| str_of(b, "id") == m) {
            Some(p) => p + 1,
            None => return vpc_err(StatusCode::BAD_REQUEST, "VPC.0003", "marker not found"),
        },
        None => 0,
    };
    let page: Vec<Value> = items.into_iter().skip(start).take(limit).cloned().collect();
    ok(json!({ key: page }))
}

/// "Querying VPCs by Tag" (POST /v2.0/{project_id}/vpcs/resource_instances/action,
/// support.huaweicloud.com/api-vpc/vpc_tag_0005.html): keys AND, values OR,
/// empty `values` = any value; `offset`/`limit`; `action` filter or count.
fn filter_by_tags(list: &[Tagged], b: &Value) -> Answer {
    let action = str_of(b, "action");
    let wanted: Vec<(String, Vec<String>)> = b
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let vals = t
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            (str_of(t, "key"), vals)
        })
        .collect();
    let matches: Vec<&Tagged> = list
        .iter()
        .filter(|r| {
            wanted.iter().all(|(k, vals)| {
                r.tags
                    .iter()
                    .any(|(tk, tv)| tk == k && (vals.is_empty() || vals.contains(tv)))
            })
        })
        .collect();
    let total = matches.len();
    if action == "count" {
        return ok(json!({"total_count": total}));
    }
    if action != "filter" {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "action must be filter or count",
        );
    }
    let num = |k: &str, d: usize| match b.get(k) {
        Some(Value::Number(n)) => n.as_u64().map(|x| x as usize).unwrap_or(d),
        Some(Value::String(s)) => s.parse().unwrap_or(d),
        _ => d,
    };
    let (limit, offset) = (num("limit", 1000).clamp(1, 1000), num("offset", 0));
    let resources: Vec<Value> = matches
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|r| {
            json!({"resource_id": r.id(), "resource_detail": null, "resource_name": str_of(&r.body, "name"),
                   "tags": r.tags.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>()})
        })
        .collect();
    ok(json!({"resources": resources, "total_count": total}))
}

/// Batch tag create/delete: VPC "Batch Creating or Deleting VPC Tags", ECS
/// "Batch Adding/Deleting ECS Tags" (POST /v1/{project_id}/cloudservers/{id}/tags/action),
/// EVS "Batch Adding/Deleting Tags" — all answer 204 without a body.
fn tag_action(target: Option<&mut Tagged>, b: &Value, svc: Service) -> Answer {
    let Some(t) = target else {
        return match svc {
            Service::Ecs => ecs_err(
                StatusCode::NOT_FOUND,
                "Ecs.0114",
                "server not found (illustrative code)",
            ),
            Service::Vpc => vpc_err(
                StatusCode::NOT_FOUND,
                "VPC.0101",
                "resource not found (illustrative code)",
            ),
            Service::Evs => evs_err(
                StatusCode::NOT_FOUND,
                "EVS.4102",
                "volume not found (illustrative code)",
            ),
        };
    };
    let list = kv_list(b.get("tags"));
    match str_of(b, "action").as_str() {
        "create" => {
            let mut merged = t.tags.clone();
            for (k, v) in &list {
                merged.retain(|(mk, _)| mk != k);
                merged.push((k.clone(), v.clone()));
            }
            if let Err(e) = check_tags(&merged) {
                return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", &e);
            }
            t.tags = merged;
        }
        "delete" => t.tags.retain(|(k, _)| !list.iter().any(|(dk, _)| dk == k)),
        _ => {
            return vpc_err(
                StatusCode::BAD_REQUEST,
                "VPC.0002",
                "action must be create or delete",
            )
        }
    }
    if let Service::Evs = svc {
        t.body["tags"] = Value::Object(t.tags.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
    }
    (StatusCode::NO_CONTENT, Value::Null)
}

fn star_tags(v: Option<&Value>) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for t in v.and_then(Value::as_array).into_iter().flatten() {
        let s = t.as_str().ok_or("tags must be strings")?;
        let (k, v) = s
            .split_once('*')
            .ok_or_else(|| format!("tag `{s}` is not key*value"))?;
        out.push((k.to_string(), v.to_string()));
    }
    check_tags(&out)?;
    Ok(out)
}

// ----- VPC handlers ---------------------------------------------------------------

/// "Creating a VPC", POST /v1/{project_id}/vpcs (support.huaweicloud.com/api-vpc/vpc_api01_0001.html).
fn create_vpc(st: &mut State, b: &Value) -> Answer {
    let Some(v) = b.get("vpc") else {
        return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", "vpc is required");
    };
    let name = str_of(v, "name");
    let cidr = str_of(v, "cidr");
    if !cidr.is_empty() && parse_cidr(&cidr).is_none() {
        return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", "cidr is invalid");
    }
    if !name.is_empty() && st.vpcs.iter().any(|x| str_of(&x.body, "name") == name) {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "vpc name already exists",
        );
    }
    let tags = match star_tags(v.get("tags")) {
        Ok(t) => t,
        Err(e) => return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", &e),
    };
    // A new VPC is CREATING before it is OK ("Querying VPC Details", `status`).
    let body = json!({"id": new_id(), "name": name, "description": str_of(v, "description"), "cidr": cidr,
        "status": "CREATING", "routes": [], "enable_shared_snat": false, "enterprise_project_id": "0",
        "tenant_id": TEST_PROJECT_ID, "created_at": now_iso(), "updated_at": now_iso()});
    st.settling.insert(str_of(&body, "id"), (Instant::now(), 0));
    st.vpcs.push(Tagged {
        body: body.clone(),
        tags,
    });
    ok(json!({"vpc": body}))
}

/// "Deleting a VPC": refused while subnets remain (illustrative code).
fn delete_vpc(st: &mut State, id: &str) -> Answer {
    if !st.vpcs.iter().any(|v| v.id() == id) {
        return vpc_err(
            StatusCode::NOT_FOUND,
            "VPC.0101",
            "vpc not found (illustrative code)",
        );
    }
    if st.subnets.iter().any(|s| str_of(&s.body, "vpc_id") == id) {
        return vpc_err(
            StatusCode::CONFLICT,
            "VPC.0106",
            "vpc still has subnets, delete them first (illustrative code)",
        );
    }
    if st.sgs.iter().any(|s| str_of(&s.body, "vpc_id") == id) {
        return vpc_err(
            StatusCode::CONFLICT,
            "VPC.0106",
            "vpc is in use by security groups (illustrative code)",
        );
    }
    st.vpcs.retain(|v| v.id() != id);
    (StatusCode::NO_CONTENT, Value::Null)
}

/// "Creating a Subnet", POST /v1/{project_id}/subnets (support.huaweicloud.com/api-vpc/vpc_subnet01_0001.html).
fn create_subnet(st: &mut State, b: &Value) -> Answer {
    let Some(s) = b.get("subnet") else {
        return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", "subnet is required");
    };
    let (cidr, gw, vpc) = (
        str_of(s, "cidr"),
        str_of(s, "gateway_ip"),
        str_of(s, "vpc_id"),
    );
    let Some(v) = st.vpcs.iter().find(|v| v.id() == vpc) else {
        return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", "vpc_id does not exist");
    };
    // "Error Codes" (api-vpc/vpc_api_0003.html): 400 VPC.0004.
    if str_of(&v.body, "status") != "OK" {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0004",
            "VPC is not active, please try later.",
        );
    }
    if parse_cidr(&cidr).is_none_or(|(_, l)| l > 28)
        || !cidr_within(&cidr, &str_of(&v.body, "cidr"))
    {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "cidr must lie in the VPC's cidr with a mask of at most 28",
        );
    }
    if !ip_within(&gw, &cidr) {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "gateway_ip must lie in the subnet",
        );
    }
    if st.subnets.iter().any(|x| {
        str_of(&x.body, "vpc_id") == vpc && cidr_within(&str_of(&x.body, "cidr"), &cidr)
            || cidr_within(&cidr, &str_of(&x.body, "cidr")) && str_of(&x.body, "vpc_id") == vpc
    }) {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "cidr overlaps another subnet of the VPC",
        );
    }
    let tags = match star_tags(s.get("tags")) {
        Ok(t) => t,
        Err(e) => return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", &e),
    };
    let id = new_id();
    // UNKNOWN until attached to its VPC, then ACTIVE ("Querying Subnet
    // Details", `status`). DNS servers only as given: `dnsList` is empty by
    // default, and then the cloud's internal DNS is unusable ("Creating a
    // Subnet", `dnsList`).
    let dns: Vec<Value> = match s.get("dnsList").and_then(Value::as_array) {
        Some(l) => l.clone(),
        None => ["primary_dns", "secondary_dns"]
            .iter()
            .filter_map(|k| s.get(*k).cloned())
            .collect(),
    };
    let body = json!({"id": id, "name": str_of(s, "name"), "description": "", "cidr": cidr, "gateway_ip": gw,
        "vpc_id": vpc, "availability_zone": str_of(s, "availability_zone"), "status": "UNKNOWN", "dhcp_enable": true,
        "primary_dns": s.get("primary_dns").cloned().unwrap_or(Value::Null),
        "secondary_dns": s.get("secondary_dns").cloned().unwrap_or(Value::Null), "dnsList": dns,
        "neutron_network_id": id, "neutron_subnet_id": new_id(), "tenant_id": TEST_PROJECT_ID,
        "created_at": now_iso(), "updated_at": now_iso()});
    st.settling.insert(id.clone(), (Instant::now(), 0));
    st.subnets.push(Tagged {
        body: body.clone(),
        tags,
    });
    ok(json!({"subnet": body}))
}

/// "Deleting a Subnet", DELETE /v1/{project_id}/vpcs/{vpc_id}/subnets/{subnet_id}:
/// refused while servers have ports in it (illustrative code).
fn delete_subnet(st: &mut State, vpc: &str, id: &str) -> Answer {
    if !st
        .subnets
        .iter()
        .any(|s| s.id() == id && str_of(&s.body, "vpc_id") == vpc)
    {
        return vpc_err(
            StatusCode::NOT_FOUND,
            "VPC.0202",
            "subnet not found (illustrative code)",
        );
    }
    if st
        .servers
        .iter()
        .any(|s| str_of(&s.body, "gpuform_mock_subnet") == id)
    {
        return vpc_err(
            StatusCode::CONFLICT,
            "VPC.0211",
            "subnet is in use by ports of servers (illustrative code)",
        );
    }
    st.subnets.retain(|s| s.id() != id);
    (StatusCode::NO_CONTENT, Value::Null)
}

/// One rule as the VPC API shows it (every field of its body).
#[allow(clippy::too_many_arguments)]
fn rule(
    sg: &str,
    direction: &str,
    ethertype: &str,
    protocol: Value,
    min: Value,
    max: Value,
    prefix: Value,
    group: Value,
    desc: &str,
) -> Value {
    json!({"id": new_id(), "description": desc, "security_group_id": sg, "direction": direction, "ethertype": ethertype,
           "protocol": protocol, "port_range_min": min, "port_range_max": max, "remote_ip_prefix": prefix,
           "remote_group_id": group, "tenant_id": TEST_PROJECT_ID})
}

/// "Creating a Security Group", POST /v1/{project_id}/security-groups
/// (support.huaweicloud.com/api-vpc/vpc_sg01_0001.html). A new group comes
/// with its default rules: all egress, and all ingress from members.
fn create_sg(st: &mut State, b: &Value) -> Answer {
    let Some(s) = b.get("security_group") else {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "security_group is required",
        );
    };
    let vpc = str_of(s, "vpc_id");
    if !vpc.is_empty() && !st.vpcs.iter().any(|v| v.id() == vpc) {
        return vpc_err(StatusCode::BAD_REQUEST, "VPC.0002", "vpc_id does not exist");
    }
    let id = new_id();
    let n = Value::Null;
    let rules = vec![
        rule(
            &id,
            "egress",
            "IPv4",
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            "",
        ),
        rule(
            &id,
            "egress",
            "IPv6",
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            "",
        ),
        rule(
            &id,
            "ingress",
            "IPv4",
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            json!(id),
            "",
        ),
        rule(
            &id,
            "ingress",
            "IPv6",
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            json!(id),
            "",
        ),
    ];
    let body = json!({"id": id, "name": str_of(s, "name"), "description": "", "vpc_id": vpc,
        "enterprise_project_id": "0", "security_group_rules": rules});
    st.sgs.push(Tagged {
        body: body.clone(),
        tags: Vec::new(),
    });
    ok(json!({"security_group": body}))
}

fn delete_sg(st: &mut State, id: &str) -> Answer {
    if !st.sgs.iter().any(|s| s.id() == id) {
        return vpc_err(
            StatusCode::NOT_FOUND,
            "VPC.0601",
            "security group not found (illustrative code)",
        );
    }
    let in_use = st.servers.iter().any(|s| {
        s.body["security_groups"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|g| str_of(g, "id") == id)
    });
    if in_use {
        return vpc_err(
            StatusCode::CONFLICT,
            "VPC.0602",
            "security group is in use by servers (illustrative code)",
        );
    }
    st.sgs.retain(|s| s.id() != id);
    (StatusCode::NO_CONTENT, Value::Null)
}

/// "Creating a Security Group Rule", POST /v1/{project_id}/security-group-rules
/// (support.huaweicloud.com/api-vpc/vpc_sg01_0004.html); a duplicate is refused.
fn create_rule(st: &mut State, b: &Value) -> Answer {
    let Some(r) = b.get("security_group_rule") else {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "security_group_rule is required",
        );
    };
    let sg = str_of(r, "security_group_id");
    let Some(group) = st.sgs.iter_mut().find(|s| s.id() == sg) else {
        return vpc_err(
            StatusCode::NOT_FOUND,
            "VPC.0601",
            "security group not found (illustrative code)",
        );
    };
    let dir = str_of(r, "direction");
    if dir != "ingress" && dir != "egress" {
        return vpc_err(
            StatusCode::BAD_REQUEST,
            "VPC.0002",
            "direction must be ingress or egress",
        );
    }
    let proto = r.get("protocol").cloned().unwrap_or(Value::Null);
    if let Some(p) = proto.as_str() {
        if !["tcp", "udp", "icmp"].contains(&p) {
            return vpc_err(
                StatusCode::BAD_REQUEST,
                "VPC.0002",
                "protocol must be tcp, udp or icmp",
            );
        }
    }
    let get = |k: &str| r.get(k).cloned().unwrap_or(Value::Null);
    let new = rule(
        &sg,
        &dir,
        r.get("ethertype").and_then(Value::as_str).unwrap_or("IPv4"),
        proto,
        get("port_range_min"),
        get("port_range_max"),
        get("remote_ip_prefix"),
        get("remote_group_id"),
        r.get("description").and_then(Value::as_str).unwrap_or(""),
    );
    let same = |a: &Value| {
        [
            "direction",
            "ethertype",
            "protocol",
            "port_range_min",
            "port_range_max",
            "remote_ip_prefix",
            "remote_group_id",
        ]
        .iter()
        .all(|k| a.get(*k) == new.get(*k))
    };
    let rules = group.body["security_group_rules"].as_array_mut();
    let Some(rules) = rules else {
        return vpc_err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "VPC.9999",
            "corrupt group",
        );
    };
    if rules.iter().any(same) {
        return vpc_err(
            StatusCode::CONFLICT,
            "VPC.0604",
            "Security group rule already exists (illustrative code)",
        );
    }
    rules.push(new.clone());
    ok(json!({"security_group_rule": new}))
}

fn delete_rule(st: &mut State, id: &str) -> Answer {
    for g in &mut st.sgs {
        if let Some(rules) = g.body["security_group_rules"].as_array_mut() {
            let n = rules.len();
            rules.retain(|r| str_of(r, "id") != id);
            if rules.len() != n {
                return (StatusCode::NO_CONTENT, Value::Null);
            }
        }
    }
    vpc_err(
        StatusCode::NOT_FOUND,
        "VPC.0603",
        "security group rule not found (illustrative code)",
    )
}

// ----- ECS handlers ---------------------------------------------------------------

/// "Creating an ECS Group", POST /v1/{project_id}/cloudservers/os-server-groups
/// (support.huaweicloud.com/api-ecs/ecs_03_1301.html): only anti-affinity.
fn create_group(st: &mut State, b: &Value) -> Answer {
    let Some(g) = b.get("server_group") else {
        return ecs_err(
            StatusCode::BAD_REQUEST,
            "Ecs.0005",
            "server_group is required",
        );
    };
    let policies: Vec<&str> = g
        .get("policies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if policies != ["anti-affinity"] {
        return ecs_err(
            StatusCode::BAD_REQUEST,
            "Ecs.0005",
            "policies must be [\"anti-affinity\"]",
        );
    }
    let body = json!({"id": new_id(), "name": str_of(g, "name"), "policies": ["anti-affinity"], "members": [], "metadata": {}});
    st.groups.push(body.clone());
    ok(json!({"server_group": body}))
}

/// "Creating ECSs", POST /v1.1/{project_id}/cloudservers
/// (support.huaweicloud.com/api-ecs/ecs_02_0101.html): answers `job_id` and
/// `serverIds`; the same `X-Client-Token` gets the same answer again. The
/// token must be a UUID ("Idempotent Requests",
/// support.huaweicloud.com/intl/en-us/api-ecs/en-us_topic_0000001105258814.html:
/// "a 32-bit UUID ... generated by the client", e.g.
/// 46436810-d999-454c-bd85-e515fd258600).
fn create_servers(st: &mut State, b: &Value, token: Option<String>) -> Answer {
    if let Some(t) = &token {
        if !is_uuid(t) {
            return ecs_err(
                StatusCode::BAD_REQUEST,
                "Ecs.0123",
                "X-Client-Token must be a UUID (code as cited by issue 15)",
            );
        }
        if let Some(prev) = st.client_tokens.get(t) {
            return ok(prev.clone());
        }
    }
    let Some(s) = b.get("server") else {
        return ecs_err(
            StatusCode::BAD_REQUEST,
            "Ecs.0005",
            "request body is illegal.",
        );
    };
    let bad = |m: &str| ecs_err(StatusCode::BAD_REQUEST, "Ecs.0005", m);
    let count = s.get("count").and_then(Value::as_u64).unwrap_or(1);
    if !(1..=100).contains(&count) {
        return bad("count must be between 1 and 100");
    }
    let flavor = str_of(s, "flavorRef");
    let image = str_of(s, "imageRef");
    let zone = str_of(s, "availability_zone");
    let vpc = str_of(s, "vpcid");
    if flavor.is_empty() || image.is_empty() || vpc.is_empty() {
        return bad("flavorRef, imageRef and vpcid are required");
    }
    if !st.images.iter().any(|i| str_of(i, "id") == image) {
        return bad(&format!("image {image} does not exist"));
    }
    if !st.vpcs.iter().any(|v| v.id() == vpc) {
        return bad(&format!("vpc {vpc} does not exist"));
    }
    let nics: Vec<String> = s
        .get("nics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|n| str_of(n, "subnet_id"))
        .collect();
    let Some(subnet) = nics.first().cloned() else {
        return bad("nics is required");
    };
    let Some(sn) = st.subnets.iter().find(|x| x.id() == subnet) else {
        return bad(&format!("subnet {subnet} does not exist"));
    };
    if str_of(&sn.body, "vpc_id") != vpc {
        return bad("the subnet is not in vpcid");
    }
    if str_of(&sn.body, "status") != "ACTIVE" {
        return bad(&format!(
            "subnet {subnet} is not ACTIVE yet (illustrative: the reference names no code for this)"
        ));
    }
    let (sn_cidr, sn_gateway) = (str_of(&sn.body, "cidr"), str_of(&sn.body, "gateway_ip"));
    let sgs: Vec<String> = s
        .get("security_groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|g| str_of(g, "id"))
        .collect();
    for g in &sgs {
        if !st.sgs.iter().any(|x| x.id() == g) {
            return bad(&format!("security group {g} does not exist"));
        }
    }
    let group = s
        .pointer("/os:scheduler_hints/group")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(g) = &group {
        if !st.groups.iter().any(|x| str_of(x, "id") == *g) {
            return bad(&format!("server group {g} does not exist"));
        }
    }
    let tags = kv_list(s.get("server_tags"));
    if let Err(e) = check_tags(&tags) {
        return bad(&e);
    }
    let ext = s.get("extendparam").cloned().unwrap_or(json!({}));
    let charging = match (
        str_of(&ext, "chargingMode").as_str(),
        str_of(&ext, "marketType").as_str(),
    ) {
        ("prePaid", _) => {
            let n = ext.get("periodNum").and_then(Value::as_u64).unwrap_or(0);
            if str_of(&ext, "periodType") != "year" && str_of(&ext, "periodType") != "month"
                || n == 0
            {
                return bad("prePaid needs periodType and periodNum");
            }
            "1"
        }
        ("postPaid" | "", "spot") => "2",
        ("postPaid" | "", "") => "0",
        _ => return bad("extendparam.chargingMode must be prePaid or postPaid"),
    };
    if let Some(q) = st.server_quota {
        if st.servers.len() + count as usize > q {
            return ecs_err(
                StatusCode::BAD_REQUEST,
                "Ecs.0001",
                "Insufficient ECS quota. Contact customer service to increase quota.",
            );
        }
    }
    let root_size = s
        .pointer("/root_volume/size")
        .and_then(Value::as_u64)
        .unwrap_or(40);
    // An unpaid yearly/monthly order: the job waits for payment and nothing
    // is built until then.
    if charging == "1" && (st.hold_payments || str_of(&ext, "isAutoPay") != "true") {
        let job = new_job(
            st,
            "createServer",
            json!({"sub_jobs_total": count, "sub_jobs": []}),
            Effect::None,
            None,
        );
        if let Some(j) = st.jobs.get_mut(&job) {
            j.body["status"] = json!("PENDING_PAYMENT");
        }
        let answer = json!({"job_id": job, "order_id": format!("CS{}", &random_hex()[..16])});
        if let Some(t) = token {
            st.client_tokens.insert(t, answer.clone());
        }
        return ok(answer);
    }
    let sold_out = st.sold_out.contains(&flavor);
    let broken = st.broken_flavors.contains(&flavor) || st.broken_zones.contains(&zone);
    let mut ids = Vec::new();
    let mut subs = Vec::new();
    for i in 0..count {
        let id = new_id();
        subs.push(json!({"status": "RUNNING", "entities": {"server_id": id}, "job_id": format!("ff80808{}", random_hex()),
                         "job_type": "createSingleServer", "begin_time": now_iso(), "end_time": "", "error_code": null, "fail_reason": null}));
        if sold_out {
            continue;
        }
        let name = if count > 1 {
            format!("{}-{:04}", str_of(s, "name"), i + 1)
        } else {
            str_of(s, "name")
        };
        let Some(addr) = free_address(st, &subnet, &sn_cidr, &sn_gateway) else {
            return bad(&format!(
                "subnet {subnet} has no free IP address (illustrative: the reference names no code for this)"
            ));
        };
        let root = new_id();
        // "Tags added during ECS creation are also added to the system disk"
        // (ECS user guide, "Adding Tags", ecs_03_0902).
        st.volumes.push(Tagged {
            body: json!({"id": root, "name": format!("{name}-volume-0000"), "status": "in-use", "size": root_size,
                "availability_zone": zone, "volume_type": s.pointer("/root_volume/volumetype").and_then(Value::as_str).unwrap_or("SSD"),
                "bootable": "true", "attachments": [{"server_id": id, "attachment_id": new_id(), "volume_id": root, "id": root, "device": "/dev/vda"}],
                "metadata": {}, "multiattach": false, "created_at": now_iso()}),
            tags: tags.clone(),
        });
        let mut metadata = s
            .get("metadata")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or(json!({}));
        metadata["charging_mode"] = json!(charging);
        metadata["vpc_id"] = json!(vpc);
        metadata["metering.image_id"] = json!(image);
        let body = json!({
            "id": id, "name": name, "status": "BUILD", "OS-EXT-STS:vm_state": "building",
            "flavor": {"id": flavor, "name": flavor}, "image": {"id": image},
            "OS-EXT-AZ:availability_zone": zone, "metadata": metadata,
            "os-extended-volumes:volumes_attached": [{"id": root, "bootIndex": "0", "delete_on_termination": "true", "device": "/dev/vda"}],
            "security_groups": sgs.iter().map(|g| json!({"id": g})).collect::<Vec<_>>(),
            "addresses": {vpc.clone(): [{"version": "4", "addr": addr, "OS-EXT-IPS:type": "fixed",
                "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01", "OS-EXT-IPS:port_id": new_id()}]},
            "OS-EXT-SRV-ATTR:user_data": s.get("user_data").cloned().unwrap_or(Value::Null),
            "created": now_iso(), "updated": now_iso(), "tenant_id": TEST_PROJECT_ID,
            "gpuform_mock_subnet": subnet,
        });
        if let Some(g) = &group {
            if let Some(m) = st
                .groups
                .iter_mut()
                .find(|x| str_of(x, "id") == *g)
                .and_then(|x| x["members"].as_array_mut())
            {
                m.push(json!(id));
            }
        }
        st.servers.push(Tagged {
            body,
            tags: tags.clone(),
        });
        ids.push(id);
    }
    let fail = if sold_out {
        Some(("Ecs.0000".to_string(), format!("flavor {flavor} is sold out in {zone}: insufficient resources, try another flavor or AZ")))
    } else if broken {
        // The server exists but in ERROR ("ECS Statuses": an exception
        // occurred on the ECS); the job fails.
        for id in &ids {
            if let Some(srv) = st.servers.iter_mut().find(|x| x.id() == id) {
                srv.body["status"] = json!("ERROR");
                srv.body["OS-EXT-STS:vm_state"] = json!("error");
                srv.body["fault"] =
                    json!({"code": 500, "message": "build of the instance failed on the host"});
            }
        }
        Some((
            "Ecs.0000".to_string(),
            "create server failed: build of the instance failed on the host".to_string(),
        ))
    } else {
        None
    };
    let effect = match ids.first() {
        Some(id) if count == 1 && !broken => Effect::ServerActive(id.clone()),
        _ => Effect::None,
    };
    let job = new_job(
        st,
        "createServer",
        json!({"sub_jobs_total": count, "sub_jobs": subs}),
        effect,
        fail,
    );
    // Multi-server creates: activate the rest when the job ends too.
    if count > 1 && !broken {
        for id in &ids {
            if let Some(srv) = st.servers.iter_mut().find(|x| x.id() == id) {
                srv.body["status"] = json!("ACTIVE");
            }
        }
    }
    let answer = json!({"job_id": job, "serverIds": ids});
    if let Some(t) = token {
        st.client_tokens.insert(t, answer.clone());
    }
    ok(answer)
}

/// 8-4-4-4-12 hexadecimal digits.
fn is_uuid(t: &str) -> bool {
    let parts: Vec<&str> = t.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A server as the v1 detail calls show it: tags as `key=value` strings.
fn server_view(s: &Tagged) -> Value {
    let mut b = s.body.clone();
    if let Some(o) = b.as_object_mut() {
        o.remove("gpuform_mock_subnet");
    }
    b["tags"] = json!(s
        .tags
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>());
    b
}

/// "Querying Details About ECSs", GET /v1/{project_id}/cloudservers/detail
/// (support.huaweicloud.com/api-ecs/zh-cn_topic_0094148850.html): `offset` is
/// the page number (0 and 1 = first page), `limit` defaults to 25 (≤ 1000),
/// `tags` keeps servers carrying that `key=value` tag; `count` = all matches.
fn list_servers(st: &State, q: &dyn Fn(&str) -> Option<String>) -> Answer {
    let limit = q("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(25);
    if limit == 0 || limit > 1000 {
        return ecs_err(
            StatusCode::BAD_REQUEST,
            "Ecs.0005",
            "limit must be between 1 and 1000",
        );
    }
    let page = q("offset")
        .and_then(|o| o.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let tag = q("tags");
    let matching: Vec<Value> = st
        .servers
        .iter()
        .filter(|s| {
            tag.as_deref()
                .is_none_or(|t| s.tags.iter().any(|(k, v)| format!("{k}={v}") == t))
        })
        .map(server_view)
        .collect();
    let count = matching.len();
    let servers: Vec<Value> = matching
        .into_iter()
        .skip((page - 1) * limit)
        .take(limit)
        .collect();
    ok(json!({"count": count, "servers": servers}))
}

/// "Deleting ECSs", POST /v1/{project_id}/cloudservers/delete
/// (support.huaweicloud.com/api-ecs/ecs_02_0103.html): a job.
fn delete_servers(st: &mut State, b: &Value) -> Answer {
    let ids: Vec<String> = b
        .get("servers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| str_of(s, "id"))
        .collect();
    if ids.is_empty() {
        return ecs_err(StatusCode::BAD_REQUEST, "Ecs.0005", "servers is required");
    }
    for id in &ids {
        let Some(server) = st.servers.iter().find(|s| s.id() == id) else {
            return ecs_err(
                StatusCode::NOT_FOUND,
                "Ecs.0114",
                &format!("Instance[{id}] could not be found (illustrative code)"),
            );
        };
        // "Only ECSs billed in the pay-per-use mode can be deleted."
        if str_of(&server.body["metadata"], "charging_mode") == "1" {
            return ecs_err(
                StatusCode::BAD_REQUEST,
                "Ecs.0513",
                &format!("Instance[{id}] is a yearly/monthly ECS and cannot be deleted; unsubscribe it instead (code as cited by issue 15)"),
            );
        }
    }
    // `delete_volume` defaults to false: data disks are detached and kept.
    let delete_volume = b
        .get("delete_volume")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let subs: Vec<Value> = ids.iter().map(|id| json!({"status": "RUNNING", "entities": {"server_id": id}, "job_type": "deleteVM"})).collect();
    let job = new_job(
        st,
        "deleteVMs",
        json!({"sub_jobs_total": ids.len(), "sub_jobs": subs}),
        Effect::ServerDelete(ids, delete_volume),
        None,
    );
    ok(json!({"job_id": job}))
}

/// "Attaching an EVS Disk to an ECS", POST /v1/{project_id}/cloudservers/{server_id}/attachvolume
/// (support.huaweicloud.com/api-ecs/ecs_02_0605.html): a job.
fn attach(st: &mut State, server: &str, b: &Value) -> Answer {
    let vol = b
        .pointer("/volumeAttachment/volumeId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(s) = st.servers.iter().find(|s| s.id() == server) else {
        return ecs_err(
            StatusCode::NOT_FOUND,
            "Ecs.0114",
            "server not found (illustrative code)",
        );
    };
    let zone = str_of(&s.body, "OS-EXT-AZ:availability_zone");
    let Some(v) = st.volumes.iter().find(|v| v.id() == vol) else {
        return ecs_err(
            StatusCode::BAD_REQUEST,
            "Ecs.0005",
            &format!("volume {vol} does not exist"),
        );
    };
    if str_of(&v.body, "status") != "available" {
        return ecs_err(
            StatusCode::BAD_REQUEST,
            "Ecs.0005",
            &format!(
                "volume {vol} is {}, not available",
                str_of(&v.body, "status")
            ),
        );
    }
    if str_of(&v.body, "availability_zone") != zone {
        return ecs_err(
            StatusCode::BAD_REQUEST,
            "Ecs.0005",
            "the disk and the server are in different AZs",
        );
    }
    // The disk is `attaching`, with no attachment listed yet, until the ECS
    // job ends ("EVS Disk Status", support.huaweicloud.com/api-evs/evs_04_0040.html:
    // no operation is allowed meanwhile).
    if let Some(v) = st.volumes.iter_mut().find(|v| v.id() == vol) {
        v.body["status"] = json!("attaching");
    }
    let job = new_job(
        st,
        "attachVolume",
        json!({"server_id": server, "volume_id": vol}),
        Effect::Attach {
            server: server.into(),
            volume: vol,
        },
        None,
    );
    ok(json!({"job_id": job}))
}

/// "Detaching an EVS Disk from an ECS", DELETE
/// /v1/{project_id}/cloudservers/{server_id}/detachvolume/{volume_id}: a job.
fn start_detach(st: &mut State, server: &str, vol: &str) -> Answer {
    let attached = st.volumes.iter().any(|v| {
        v.id() == vol
            && v.body["attachments"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| str_of(a, "server_id") == server)
    });
    if !attached {
        return ecs_err(
            StatusCode::NOT_FOUND,
            "Ecs.0114",
            "the disk is not attached to this server (illustrative code)",
        );
    }
    // `detaching` until the job ends (the same status page).
    if let Some(v) = st.volumes.iter_mut().find(|v| v.id() == vol) {
        v.body["status"] = json!("detaching");
    }
    let job = new_job(
        st,
        "detachVolume",
        json!({"server_id": server, "volume_id": vol}),
        Effect::Detach {
            server: server.into(),
            volume: vol.into(),
        },
        None,
    );
    ok(json!({"job_id": job}))
}

// ----- EVS handlers ---------------------------------------------------------------

fn volume_view(v: &Tagged) -> Value {
    let mut b = v.body.clone();
    b["tags"] = Value::Object(v.tags.iter().map(|(k, x)| (k.clone(), json!(x))).collect());
    b
}

/// "Creating EVS Disks", POST /v2.1/{project_id}/cloudvolumes
/// (support.huaweicloud.com/api-evs/evs_04_2003.html): `tags` is a key/value
/// map; answers `job_id` and `volume_ids`.
fn create_volume(st: &mut State, b: &Value) -> Answer {
    let Some(v) = b.get("volume") else {
        return evs_err(StatusCode::BAD_REQUEST, "EVS.2001", "volume is required");
    };
    let size = v.get("size").and_then(Value::as_u64).unwrap_or(0);
    if !(10..=32768).contains(&size) {
        return evs_err(
            StatusCode::BAD_REQUEST,
            "EVS.2001",
            "size must be between 10 and 32768 GB",
        );
    }
    let vtype = str_of(v, "volume_type");
    if !["SATA", "SAS", "SSD", "GPSSD", "ESSD", "GPSSD2", "ESSD2"].contains(&vtype.as_str()) {
        return evs_err(
            StatusCode::BAD_REQUEST,
            "EVS.2001",
            &format!("volume_type {vtype} is invalid"),
        );
    }
    if st.sold_out_disks.contains(&vtype) {
        return evs_err(
            StatusCode::BAD_REQUEST,
            "EVS.5405",
            &format!("volume_type {vtype} is sold out in this AZ (illustrative code)"),
        );
    }
    let tags: Vec<(String, String)> = v
        .get("tags")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, x)| (k.clone(), x.as_str().unwrap_or_default().to_string()))
        .collect();
    if let Err(e) = check_tags(&tags) {
        return evs_err(StatusCode::BAD_REQUEST, "EVS.2001", &e);
    }
    let id = new_id();
    st.volumes.push(Tagged {
        body: json!({"id": id, "name": str_of(v, "name"), "status": "creating", "size": size,
            "availability_zone": str_of(v, "availability_zone"), "volume_type": vtype, "bootable": "false",
            "attachments": [], "metadata": v.get("metadata").cloned().unwrap_or(json!({})), "multiattach": false,
            "created_at": now_iso()}),
        tags,
    });
    let job = new_job(
        st,
        "createVolume",
        json!({"volume_id": id, "size": size, "volume_type": vtype}),
        Effect::VolumeAvailable(id.clone()),
        None,
    );
    ok(json!({"job_id": job, "volume_ids": [id]}))
}

/// "Querying EVS Disks (Batch)", GET /v2/{project_id}/cloudvolumes/detail
/// (support.huaweicloud.com/api-evs/evs_04_2006.html): `limit` (≤ 1000),
/// `offset` = records to skip, `name` filter; `count` = all matches.
fn list_volumes(st: &State, q: &dyn Fn(&str) -> Option<String>) -> Answer {
    let limit = q("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(1000);
    if limit == 0 || limit > 1000 {
        return evs_err(
            StatusCode::BAD_REQUEST,
            "EVS.2001",
            "limit must be between 1 and 1000",
        );
    }
    let offset = q("offset")
        .and_then(|o| o.parse::<usize>().ok())
        .unwrap_or(0);
    let name = q("name");
    let matching: Vec<Value> = st
        .volumes
        .iter()
        .filter(|v| !creating(v))
        .filter(|v| name.as_deref().is_none_or(|n| str_of(&v.body, "name") == n))
        .map(volume_view)
        .collect();
    let count = matching.len();
    ok(
        json!({"count": count, "volumes": matching.into_iter().skip(offset).take(limit).collect::<Vec<_>>()}),
    )
}

/// A disk whose create job has not made it yet: "Creating EVS Disks" is
/// asynchronous, and until the job has made the disk a query by id may
/// answer 404 and the list leave it out (issue 15, point 17, from the
/// CreateVolume reference); that is what a settle time is for.
fn creating(v: &Tagged) -> bool {
    str_of(&v.body, "status") == "creating"
}

/// KeystoneListRegions, GET /v3/regions
/// (https://support.huaweicloud.com/intl/en-us/api-iam/iam_05_0001.html):
/// `regions[]` {id, type, description, parent_region_id, links, locales}, `links`.
fn keystone_list_regions(st: &State) -> Answer {
    let regions: Vec<Value> = st
        .geography
        .regions()
        .map(|r| {
            json!({"id": r, "type": "public", "description": "", "parent_region_id": null,
                   "links": {"self": format!("https://iam.myhuaweicloud.com/v3/regions/{r}")},
                   "locales": {"en-us": r, "zh-cn": r}})
        })
        .collect();
    (
        StatusCode::OK,
        json!({"regions": regions, "links": {"self": "https://iam.myhuaweicloud.com/v3/regions", "previous": null, "next": null}}),
    )
}

/// NovaListAvailabilityZones, GET /v2.1/{project_id}/os-availability-zone
/// (https://support.huaweicloud.com/api-ecs/ecs_03_1801.html):
/// `availabilityZoneInfo[]` {zoneState.available, hosts (null), zoneName}.
fn nova_list_availability_zones(st: &State, region: &str) -> Answer {
    let zones: Vec<Value> = st
        .geography
        .zones(region)
        .into_iter()
        .flatten()
        .map(|z| json!({"zoneState": {"available": true}, "hosts": null, "zoneName": z}))
        .collect();
    (StatusCode::OK, json!({"availabilityZoneInfo": zones}))
}

/// ShowServerLimits ("Querying Tenant Quotas"), GET
/// /v1/{project_id}/cloudservers/limits
/// (support.huaweicloud.com/en-us/api-ecs/ecs_02_0801.html): `absolute`
/// with the tenant's limits and usage; the cores are what tests set, the
/// instance count is the servers that exist.
fn server_limits(st: &State) -> Answer {
    if st.deny_limits {
        return ecs_err(
            StatusCode::FORBIDDEN,
            "Ecs.0319",
            "Policy doesn't allow ecs:cloudServerQuotas:get to be performed.",
        );
    }
    let l = st.limits;
    ok(json!({"absolute": {
        "maxTotalInstances": st.server_quota.map(|q| q as i64).unwrap_or(-1),
        "totalInstancesUsed": st.servers.len(),
        "maxTotalCores": l.max_total_cores,
        "totalCoresUsed": l.total_cores_used,
        "maxTotalRAMSize": -1,
        "totalRAMUsed": 0,
        "maxTotalSpotInstances": -1,
        "maxTotalSpotCores": l.max_total_spot_cores,
        "maxTotalSpotRAMSize": -1,
        "totalSpotInstancesUsed": 0,
        "totalSpotCoresUsed": l.total_spot_cores_used,
        "totalSpotRAMUsed": 0,
        "maxServerGroups": 10,
        "maxServerGroupMembers": 16,
        "totalServerGroupsUsed": st.groups.len(),
        "limit_by_flavor": []
    }}))
}

/// ListFlavors, GET /v1/{project_id}/cloudservers/flavors[?availability_zone=]
/// (https://support.huaweicloud.com/intl/en-us/api-ecs/en-us_topic_0020212656.html):
/// `flavors[]` {id, name, vcpus (string), ram (MB), disk, os_extra_specs};
/// `os_extra_specs` (…/api-ecs/ecs_05_0003.html): `ecs:performancetype`
/// `gpu`, `cond:operation:status`, `cond:operation:az` (`az(status), …`
/// for every zone of the region: normal, sellout, or abandon where it is
/// not sold), `pci_passthrough:alias` (`nvidia-t4:<count>`). With
/// `availability_zone`, only flavors sold there (normal) are listed.
fn list_flavors(st: &State, region: &str, zone: Option<String>) -> Answer {
    let zones = st.geography.zones(region).cloned().unwrap_or_default();
    let offers = st.geography.offers_in(region);
    let mut names: Vec<&str> = offers.iter().map(|o| o.instance_type.as_str()).collect();
    names.sort();
    names.dedup();
    let flavors: Vec<Value> = names
        .into_iter()
        .filter_map(|n| {
            let status = |z: &str| match offers.iter().find(|o| o.instance_type == n && o.zone == z)
            {
                Some(o) if o.sold_out => "sellout",
                Some(_) => "normal",
                None => "abandon",
            };
            if zone.as_deref().is_some_and(|z| status(z) != "normal") {
                return None;
            }
            let gpus = offers
                .iter()
                .find(|o| o.instance_type == n)
                .map_or(0, |o| o.gpus);
            let by_zone: Vec<String> = zones
                .iter()
                .map(|z| format!("{z}({})", status(z)))
                .collect();
            Some(json!({
                "id": n, "name": n, "vcpus": "8", "ram": 32768, "disk": "0", "swap": "",
                "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false,
                "rxtx_factor": 1.0, "os-flavor-access:is_public": true, "links": [],
                "os_extra_specs": {
                    "ecs:performancetype": "gpu",
                    "cond:operation:status": "normal",
                    "cond:operation:az": by_zone.join(", "),
                    "pci_passthrough:alias": format!("nvidia-t4:{gpus}"),
                },
            }))
        })
        .collect();
    (StatusCode::OK, json!({"flavors": flavors}))
}

/// "Querying Name Servers", GET /v2/nameservers
/// (support.huaweicloud.com/api-dns/dns_api_69001.html): `type=private` and a
/// `region` give that region's intranet DNS servers. The addresses below
/// have the documented shape (100.125.x.x, by priority); they are not a
/// claim about any real region.
fn name_servers(q: &dyn Fn(&str) -> Option<String>) -> Answer {
    let region = q("region").unwrap_or_default();
    let private = json!({"type": "private", "region": region, "ns_records": [
        {"address": "100.125.1.250", "priority": 1},
        {"address": "100.125.129.250", "priority": 2},
    ]});
    let public = json!({"type": "public", "region": "", "ns_records": [
        {"hostname": "ns1.huaweicloud-dns.com.", "priority": 1},
    ]});
    let all = match q("type").as_deref() {
        Some("private") => vec![private],
        Some("public") => vec![public],
        _ => vec![private, public],
    };
    ok(json!({"nameservers": all}))
}

/// "Deleting an EVS Disk", DELETE /v2/{project_id}/cloudvolumes/{volume_id}:
/// refused while attached; otherwise a job.
fn delete_volume(st: &mut State, id: &str) -> Answer {
    let Some(v) = st.volumes.iter_mut().find(|v| v.id() == id) else {
        return evs_err(
            StatusCode::NOT_FOUND,
            "EVS.4102",
            "volume not found (illustrative code)",
        );
    };
    let status = str_of(&v.body, "status");
    if status == "in-use" {
        return evs_err(
            StatusCode::BAD_REQUEST,
            "EVS.4104",
            "volume is in-use, detach it first (illustrative code)",
        );
    }
    v.body["status"] = json!("deleting");
    let job = new_job(
        st,
        "deleteVolume",
        json!({"volume_id": id}),
        Effect::VolumeDelete(id.to_string()),
        None,
    );
    ok(json!({"job_id": job}))
}

/// "Expanding EVS Disk Capacity", POST /v2.1/{project_id}/cloudvolumes/{volume_id}/action.
fn extend_volume(st: &mut State, id: &str, b: &Value) -> Answer {
    let new = b
        .pointer("/os-extend/new_size")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let Some(v) = st.volumes.iter().find(|v| v.id() == id) else {
        return evs_err(
            StatusCode::NOT_FOUND,
            "EVS.4102",
            "volume not found (illustrative code)",
        );
    };
    if new <= v.body["size"].as_u64().unwrap_or(0) {
        return evs_err(
            StatusCode::BAD_REQUEST,
            "EVS.2001",
            "new_size must be larger than the current size",
        );
    }
    let job = new_job(
        st,
        "extendVolume",
        json!({"volume_id": id}),
        Effect::VolumeExtend(id.to_string(), new),
        None,
    );
    ok(json!({"job_id": job}))
}

// ----- IMS --------------------------------------------------------------------------

/// "Querying Images", GET /v2/cloudimages (support.huaweicloud.com/api-ims/ims_03_0602.html).
fn list_images(st: &State, q: &dyn Fn(&str) -> Option<String>) -> Answer {
    let keep = |i: &Value| {
        ["__imagetype", "__platform", "status", "name", "id"]
            .iter()
            .all(|k| q(k).is_none_or(|want| str_of(i, k) == want))
    };
    let limit = q("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(500);
    ok(
        json!({"images": st.images.iter().filter(|i| keep(i)).take(limit).cloned().collect::<Vec<_>>()}),
    )
}

/// A group's IPv4 ingress rules as [`MockResource::ingress`] entries.
fn sg_ingress_view(body: &Value) -> Vec<String> {
    let id = str_of(body, "id");
    let rules: Vec<&Value> = body["security_group_rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| str_of(r, "direction") == "ingress" && str_of(r, "ethertype") != "IPv6")
        .collect();
    let mut out = Vec::new();
    if rules.iter().any(|r| str_of(r, "remote_group_id") == id) {
        out.push(crate::MEMBERS.to_string());
    }
    // The default egress rule of a new group: IPv4, any protocol, anywhere.
    let egress_all = body["security_group_rules"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| {
            str_of(r, "direction") == "egress"
                && str_of(r, "ethertype") == "IPv4"
                && str_of(r, "protocol").is_empty()
                && str_of(r, "remote_group_id").is_empty()
                && matches!(str_of(r, "remote_ip_prefix").as_str(), "" | "0.0.0.0/0")
        });
    if egress_all {
        out.push(crate::EGRESS.to_string());
    }
    for r in rules
        .iter()
        .filter(|r| !str_of(r, "remote_ip_prefix").is_empty())
    {
        let ports = match (r["port_range_min"].as_u64(), r["port_range_max"].as_u64()) {
            (Some(a), Some(b)) => format!("{a}-{b}"),
            (Some(a), None) => format!("{a}-{a}"),
            _ => "all".to_string(),
        };
        let proto = str_of(r, "protocol");
        let proto = if proto.is_empty() {
            "all".to_string()
        } else {
            proto
        };
        out.push(crate::cidr_rule(
            &proto,
            &ports,
            &str_of(r, "remote_ip_prefix"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_date() {
        assert_eq!(parse_sdk_date("20191115T033655Z"), Some(1573789015));
        assert_eq!(parse_sdk_date("19700101T000000Z"), Some(0));
        assert_eq!(parse_sdk_date("2019-11-15"), None);
    }

    #[test]
    fn decoding() {
        assert_eq!(pct_decode("/v1/a%20b"), "/v1/a b");
        assert_eq!(decode_tag("cluster.a.node_5B3_5D"), "cluster.a.node[3]");
        assert!(cidr_within("10.0.1.0/24", "10.0.0.0/16"));
        assert!(!cidr_within("10.1.0.0/24", "10.0.0.0/16"));
    }
}
