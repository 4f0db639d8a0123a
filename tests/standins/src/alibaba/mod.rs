//! A local stand-in for the Alibaba Cloud ECS (2014-05-26) and VPC
//! (2016-04-28) RPC APIs, as far as gpuform uses them.
//!
//! **This is not Alibaba Cloud.** It follows the API reference pages cited
//! beside each action in [`cloud`], not observed behaviour, and implements
//! only what gpuform calls. What it does check, strictly:
//!
//! - every request's `ACS3-HMAC-SHA256` signature, recomputed by the
//!   stand-in's own verifier ([`crate::verify::acs3`], not the signer under
//!   test) from exactly what arrived (method, host, path, query,
//!   the headers named in `SignedHeaders`, the body), plus the
//!   `x-acs-content-sha256` body hash, the `x-acs-date` window (15 minutes)
//!   and nonce reuse; failures answer with Alibaba's common error codes
//!   (`SignatureDoesNotMatch`, `IncompleteSignature`,
//!   `InvalidAccessKeyId.NotFound`, `InvalidTimeStamp.Expired`,
//!   `SignatureNonceUsed`);
//! - the API version of each action (`x-acs-version`);
//! - ids in Alibaba's formats (`vpc-`, `vsw-`, `sg-`, `ds-`, `i-`, `d-`),
//!   `ClientToken` idempotency, `Tag.N` filters, both pagination styles
//!   (`PageNumber`/`PageSize`/`TotalCount` and `MaxResults`/`NextToken`),
//!   instance states (Pending → Running; `DeleteInstances` → gone), disk
//!   states (Creating → Available → In_use; AttachDisk only when Available), and
//!   `DependencyViolation.*` when deleting something still in use;
//! - the lifecycle rules gpuform once got wrong (issue 15): no rule whose
//!   `SourceGroupId` is its own group (403 `InvalidParamter.Conflict`; members
//!   reach each other through `InnerAccessPolicy`), `PeriodUnit` Week | Month
//!   with the documented periods only, `DeleteInstances` for pay-as-you-go
//!   and expired subscriptions only (`TerminateSubscription=true`), the
//!   1,000-resource cap of tag-filtered Describe calls (`ListTagResources`
//!   lists past it), and launches that fail after `RunInstances`
//!   (`SystemFailure.Delete`: Stopped, then released). Tests can inject a 2xx
//!   without the documented body ([`Fault::BareOnce`]).
//!
//! Error answers are `{"RequestId","HostId","Code","Message","Recommend"}`
//! with the HTTP status the reference lists for the code.
//!
//! One server answers for both products (the provider's endpoint override
//! points ECS and VPC at the same base URL); the action's version header
//! says which API is meant.

mod cloud;

use crate::background::Background;
use crate::verify::{acs3, Key, Rejection, WireRequest};
use crate::{MockCloud, MockResource, RequestHook};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request as HttpRequest, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use cloud::{ApiError, Cloud};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;

pub use cloud::{Fault, PoolKind, PoolSpec, VcpuQuota, TAG_FILTER_CAP};

/// Test credentials the stand-in accepts (and [`AlibabaMock::env`] hands out).
pub const ACCESS_KEY_ID: &str = "LTAI5tGpuformMockKeyId01";
pub const ACCESS_KEY_SECRET: &str = "gpuformMockSecretDoNotUseAnywhere0001";

/// The region the stand-in's resources live in when a test does not care.
pub const DEFAULT_REGION: &str = "cn-hangzhou";

struct Shared {
    cloud: Mutex<Cloud>,
    nonces: Mutex<HashSet<String>>,
    requests: AtomicU64,
    hook: Mutex<Option<RequestHook>>,
}

/// The running stand-in. Dropping it stops the server.
pub struct AlibabaMock {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
    _server: Background,
}

impl AlibabaMock {
    /// Starts the server on 127.0.0.1 (a free port) on its own thread and
    /// tokio runtime.
    pub fn start() -> AlibabaMock {
        let shared = Arc::new(Shared {
            cloud: Mutex::new(Cloud::new()),
            nonces: Mutex::new(HashSet::new()),
            requests: AtomicU64::new(0),
            hook: Mutex::new(None),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (addr, server) = Background::serve("alibaba-mock", app);
        AlibabaMock {
            shared,
            addr,
            _server: server,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Makes later requests fail: see [`Fault`].
    /// Sets what DescribePrice and DescribeSpotPriceHistory quote (CNY);
    /// types without a price are refused as unsupported.
    pub fn set_price(&self, instance_type: &str, price: crate::prices::ListPrice) {
        self.cloud().prices.set(instance_type, price);
    }

    /// Adds a region and its zones to what DescribeRegions and DescribeZones list.
    pub fn add_region(&self, region: &str, zones: &[&str]) {
        self.cloud().geography.add_region(region, zones);
    }

    /// Adds a type on sale (or sold out) in a zone to what DescribeAvailableResource answers.
    pub fn offer(&self, offer: crate::geography::ZoneOffer) {
        self.cloud().geography.offer(offer);
    }

    /// After `n` more price answers, the price actions fail with HTTP 500
    /// `InternalError` (an outage half-way through a refresh); `None` ends it.
    pub fn fail_prices_after(&self, n: Option<u32>) {
        let mut c = self.cloud();
        c.prices.fail_after = n;
        c.prices.answered = 0;
    }

    pub fn inject(&self, fault: Fault) {
        self.cloud().inject(fault);
    }

    /// Drops the one-shot faults ([`Fault::Once`], [`Fault::BareOnce`]) not consumed yet.
    pub fn clear_faults(&self) {
        self.cloud().clear_faults();
    }

    /// Sets the vCPU quotas DescribeAccountAttributes reports.
    pub fn set_vcpu_quota(&self, q: VcpuQuota) {
        self.cloud().vcpu_quota = q;
    }

    /// Refuses DescribeAccountAttributes as a RAM user without the permission.
    pub fn deny_account_attributes(&self, deny: bool) {
        self.cloud().deny_account_attributes = deny;
    }

    /// How long a new instance stays Pending before it is Running (default 50 ms).
    pub fn set_pending_time(&self, d: Duration) {
        self.cloud().pending_for = d;
    }

    /// How long a deleted vSwitch stays `Pending` before it is gone (default 50 ms).
    pub fn set_vswitch_deleting_time(&self, d: Duration) {
        self.cloud().deleting_for = d;
    }

    /// How long a new data disk stays Creating before it is Available
    /// (default 50 ms).
    pub fn set_disk_creating_time(&self, d: Duration) {
        self.cloud().disk_creating_for = d;
    }

    /// Makes a private pool (an elasticity assurance or a capacity
    /// reservation, as the console would); its id (`eap-…`, `crp-…`).
    pub fn create_pool(&self, spec: PoolSpec) -> String {
        self.cloud().create_pool(spec)
    }

    /// Sets a private pool's Status (Preparing, Active, Released, …);
    /// false if there is no such pool.
    pub fn set_pool_status(&self, id: &str, status: &str) -> bool {
        self.cloud().set_pool_status(id, status)
    }

    /// RunInstances launches counted against private pool `id`, ever
    /// (`None`: no such pool).
    pub fn pool_launches(&self, id: &str) -> Option<u32> {
        self.cloud().pool_launches(id)
    }

    /// Live instances in private pool `id` (its `UsedAmount`).
    pub fn pool_used(&self, id: &str) -> u32 {
        self.cloud().pool_used(id)
    }

    /// Tag keys and values of a live resource (for tests).
    pub fn tags(&self, id: &str) -> Option<Vec<(String, String)>> {
        self.cloud().tags_of(id)
    }

    /// Removes gpuform's tags from a resource behind its back: it is then
    /// unmanaged, what `gpuform import` adopts. False if there is none.
    pub fn disown_behind(&self, id: &str) -> bool {
        self.cloud().disown_behind(id)
    }

    /// Every disk id, system disks included (for tests).
    pub fn disk_ids(&self) -> Vec<String> {
        self.cloud().disk_ids()
    }

    /// A resource's current state as the API would describe it (for tests).
    pub fn status(&self, id: &str) -> Option<String> {
        self.cloud().status_of(id)
    }

    /// Ends a subscription instance's term now (false if `id` is not one).
    pub fn expire(&self, id: &str) -> bool {
        self.cloud().expire(id)
    }

    /// Drops all of a security group's outbound traffic behind gpuform's back
    /// (an egress rule with Policy=drop); false if there is no such group.
    pub fn drop_egress_behind(&self, id: &str) -> bool {
        self.cloud().drop_egress(id)
    }

    /// Sets a security group's InnerAccessPolicy (Accept | Drop) behind gpuform's back.
    pub fn set_inner_policy(&self, id: &str, policy: &str) -> bool {
        self.cloud().set_inner_policy(id, policy)
    }

    /// A subscription instance's RenewalStatus (AutoRenewal | Normal | NotRenewal).
    pub fn renewal(&self, id: &str) -> Option<String> {
        self.cloud().renewal_of(id)
    }

    /// A security group's inbound rules: (IpProtocol, PortRange, SourceCidrIp, SourceGroupId).
    pub fn rules(&self, id: &str) -> Option<Vec<(String, String, String, String)>> {
        self.cloud().rules_of(id)
    }

    fn cloud(&self) -> std::sync::MutexGuard<'_, Cloud> {
        self.shared.cloud.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl MockCloud for AlibabaMock {
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GPUFORM_ALIBABA_ENDPOINT".into(), self.endpoint()),
            ("ALIBABA_CLOUD_ACCESS_KEY_ID".into(), ACCESS_KEY_ID.into()),
            (
                "ALIBABA_CLOUD_ACCESS_KEY_SECRET".into(),
                ACCESS_KEY_SECRET.into(),
            ),
        ]
    }

    fn resources(&self) -> Vec<MockResource> {
        self.cloud().resources()
    }

    fn delete_behind(&self, id: &str) -> bool {
        self.cloud().delete_behind(id)
    }

    fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    fn set_hook(&self, hook: Option<RequestHook>) {
        *self.shared.hook.lock().unwrap_or_else(|p| p.into_inner()) = hook;
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: HttpRequest<Body>) -> Response {
    let n = shared.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let host = header(&parts.headers, "host").unwrap_or_default();
    let raw_query = parts.uri.query().unwrap_or("").to_string();
    let result = match parse_query(&raw_query) {
        None => Err(ApiError::new(
            400,
            "InvalidParameter",
            "The query string is not valid percent-encoding.",
        )),
        Some(query) => {
            let wire = WireRequest::from_http(&parts.method, &parts.uri, &parts.headers, &body);
            match verify(&shared, &wire) {
                Err(e) => Err(e),
                Ok(()) => {
                    let action = header(&parts.headers, "x-acs-action").unwrap_or_default();
                    let version = header(&parts.headers, "x-acs-version").unwrap_or_default();
                    let mut cloud = shared.cloud.lock().unwrap_or_else(|p| p.into_inner());
                    cloud.dispatch(&action, &version, &query)
                }
            }
        }
    };
    // The call has taken effect (or was refused): tell the test before answering.
    let hook = shared
        .hook
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some(h) = hook {
        h(n);
    }
    let request_id = cloud::request_id();
    match result {
        Ok(mut v) => {
            if let Value::Object(m) = &mut v {
                m.insert("RequestId".into(), Value::String(request_id));
            }
            json_response(StatusCode::OK, &v)
        }
        Err(e) => {
            let body = serde_json::json!({
                "RequestId": request_id,
                "HostId": host,
                "Code": e.code,
                "Message": e.message,
                "Recommend": format!("https://api.aliyun.com/troubleshoot?q={}", e.code),
            });
            json_response(
                StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST),
                &body,
            )
        }
    }
}

fn json_response(status: StatusCode, v: &Value) -> Response {
    (
        status,
        [("content-type", "application/json;charset=utf-8")],
        v.to_string(),
    )
        .into_response()
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    let vals: Vec<&str> = h
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if vals.is_empty() {
        None
    } else {
        Some(vals.join(","))
    }
}

/// Decodes `k=v&k=v` (RFC 3986 percent-encoding; `+` is a literal plus).
fn parse_query(q: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for part in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        out.push((decode(k)?, decode(v)?));
    }
    Some(out)
}

fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `2023-10-26T10:22:32Z` → time.
fn parse_date(s: &str) -> Option<OffsetDateTime> {
    let b = s.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (
        n(0..4)?,
        n(5..7)?,
        n(8..10)?,
        n(11..13)?,
        n(14..16)?,
        n(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    // Days from the civil date (proleptic Gregorian), 1970-01-01 = 0.
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    OffsetDateTime::from_unix_timestamp(days * 86400 + h * 3600 + mi * 60 + se).ok()
}

/// Checks the ACS3 signature of what arrived with the stand-in's own
/// verifier ([`crate::verify::acs3`]), then the date window and the nonce.
fn verify(shared: &Shared, wire: &WireRequest) -> Result<(), ApiError> {
    let incomplete = |why: &str| {
        ApiError::new(
            400,
            "IncompleteSignature",
            format!("The request signature does not conform to Aliyun standards: {why}."),
        )
    };
    let key = Key {
        id: ACCESS_KEY_ID,
        secret: ACCESS_KEY_SECRET,
    };
    let verified = acs3::verify(wire, &key).map_err(|r| match r {
        Rejection::Malformed(why) => incomplete(&why),
        Rejection::UnknownKey(_) => ApiError::new(
            404,
            "InvalidAccessKeyId.NotFound",
            "Specified access key is not found.",
        ),
        Rejection::ContentHash => ApiError::new(
            400,
            "SignatureDoesNotMatch",
            "Specified signature is not matched with our calculation: x-acs-content-sha256 is not the SHA-256 of the body.",
        ),
        // The canonical request stays out of the message: it may hold an STS token.
        Rejection::Mismatch { .. } => ApiError::new(
            400,
            "SignatureDoesNotMatch",
            "Specified signature is not matched with our calculation.",
        ),
    })?;
    let time = parse_date(&verified.date).ok_or_else(|| {
        ApiError::new(
            400,
            "InvalidTimeStamp.Format",
            "Specified time stamp or date value is not well formatted.",
        )
    })?;
    let skew = (OffsetDateTime::now_utc() - time).whole_seconds().abs();
    if skew > 15 * 60 {
        return Err(ApiError::new(
            400,
            "InvalidTimeStamp.Expired",
            "Specified time stamp or date value is expired.",
        ));
    }
    let mut seen = shared.nonces.lock().unwrap_or_else(|p| p.into_inner());
    if !seen.insert(verified.nonce) {
        return Err(ApiError::new(
            400,
            "SignatureNonceUsed",
            "Specified signature nonce was used already.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let t = parse_date("2023-10-26T10:22:32Z").unwrap();
        assert_eq!(t.unix_timestamp(), 1698315752);
        assert!(parse_date("2023-13-26T10:22:32Z").is_none());
        assert!(parse_date("yesterday").is_none());
    }

    #[test]
    fn queries() {
        let q = parse_query("a=b%20c&Tag.1.Key=gpuform%3Aproject&x").unwrap();
        assert_eq!(q[0], ("a".into(), "b c".into()));
        assert_eq!(q[1].1, "gpuform:project");
        assert_eq!(q[2], ("x".into(), "".into()));
        assert!(parse_query("a=%zz").is_none());
    }
}
