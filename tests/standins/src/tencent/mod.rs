//! A stand-in for Tencent Cloud API 3.0 (cvm, vpc and cbs, version
//! 2017-03-12; for imports the Tag API and STS, 2018-08-13) on 127.0.0.1. It is NOT Tencent Cloud: it implements the
//! actions gpuform calls, as their API reference pages describe them (each
//! handler in `actions.rs` cites its page), and nothing else.
//!
//! Every request must be a POST with `Content-Type: application/json`, the
//! `X-TC-Action` / `X-TC-Version` / `X-TC-Region` / `X-TC-Timestamp` headers
//! and a TC3-HMAC-SHA256 `Authorization` that this server recomputes from the
//! received method, path, query, signed headers and body bytes with the
//! stand-in's own verifier, [`crate::verify::tc3`] ("Signature v3",
//! https://www.tencentcloud.com/document/api/213/30654). The service is the
//! one named in the credential scope (`date/service/tc3_request`), since one
//! local endpoint stands for cvm, vpc and cbs.
//!
//! Answers use the API 3.0 envelopes (https://www.tencentcloud.com/document/api/213/15694):
//! `{"Response": {..., "RequestId"}}` and, with HTTP 200,
//! `{"Response": {"Error": {"Code", "Message"}, "RequestId"}}`.
//!
//! Asynchronous behaviour is made deterministic: a state change that the API
//! reports in steps (instance PENDING → RUNNING or LAUNCH_FAILED, TERMINATING →
//! SHUTDOWN in the recycle bin, TERMINATING again → released, disk ATTACHING →
//! ATTACHED, DETACHING → UNATTACHED) completes at the start of the next request.

mod actions;
mod state;
mod tagging;

use crate::background::Background;
use crate::verify::{tc3, Key, Rejection, WireRequest};
use crate::{MockCloud, MockResource, RequestHook};
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use state::State;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use time::OffsetDateTime;

/// The test credentials the stand-in accepts (also returned by [`MockCloud::env`]).
pub const SECRET_ID: &str = "AKIDgpuformTencentMock0000000000000";
pub const SECRET_KEY: &str = "gpuformTencentMockSecretKey000000";

/// Largest accepted difference between `X-TC-Timestamp` and the server clock
/// (AuthFailure.SignatureExpire: "Timestamp and server time cannot differ by
/// more than five minutes").
const MAX_SKEW_SECS: i64 = 300;

struct Shared {
    state: Mutex<State>,
    requests: AtomicU64,
    hook: Mutex<Option<RequestHook>>,
}

/// A running Tencent Cloud stand-in; stops when dropped.
pub struct TencentMock {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _server: Background,
}

impl TencentMock {
    /// Starts the server on 127.0.0.1 (a free port) on its own thread and runtime.
    pub fn start() -> TencentMock {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            requests: AtomicU64::new(0),
            hook: Mutex::new(None),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (addr, server) = Background::serve("tencent-mock", app);
        TencentMock {
            addr,
            shared,
            _server: server,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut st = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut st)
    }

    /// Makes RunInstances of `instance_type` in `zone` fail with
    /// `ResourceInsufficient.SpecifiedInstanceType` (no stock).
    pub fn set_sold_out(&self, instance_type: &str, zone: &str) {
        self.with_state(|s| {
            s.faults
                .sold_out
                .insert((instance_type.to_string(), zone.to_string()))
        });
    }

    /// Makes launches of `instance_type` in `zone` fail: RunInstances accepts
    /// them, then the instance turns LAUNCH_FAILED instead of RUNNING (213/15753).
    pub fn set_launch_fails(&self, instance_type: &str, zone: &str) {
        self.with_state(|s| {
            s.faults
                .launch_fails
                .insert((instance_type.to_string(), zone.to_string()))
        });
    }

    /// After `skip` more successful answers, the next one carries no
    /// documented field, only `RequestId`. `None` cancels it.
    pub fn strip_answer(&self, skip: Option<u32>) {
        self.with_state(|s| s.faults.strip_after = skip);
    }

    /// Public images named as on the China site ("… 64位" for "… 64bit").
    pub fn use_china_site_image_names(&self) {
        self.with_state(|s| s.faults.china_site_images = true);
    }

    /// Terminates an instance as the console does: it goes to the recycle bin
    /// (SHUTDOWN) and keeps its subnet and security groups (213/4931).
    pub fn terminate_behind(&self, id: &str) -> bool {
        self.with_state(|s| match s.instances.get_mut(id) {
            Some(i) if i.state != "SHUTDOWN" => {
                i.state = "SHUTDOWN".into();
                i.changed_at = s.tick;
                true
            }
            _ => false,
        })
    }

    /// The system disk RunInstances made with an instance.
    pub fn system_disk(&self, instance: &str) -> Option<String> {
        self.with_state(|s| s.instances.get(instance).map(|i| i.system_disk_id.clone()))
    }

    /// Caps the instances the account may run (`LimitExceeded.InstanceQuota` past it).
    pub fn set_instance_quota(&self, max: Option<usize>) {
        self.with_state(|s| s.faults.instance_quota = max);
    }

    /// Sets DescribeAccountQuota's `TotalQuota` of `set` (`PostPaidQuotaSet`,
    /// `SpotPaidQuotaSet`, `PrePaidQuotaSet`) in `zone`; `UsedQuota` is the
    /// instances of that charge type the stand-in holds there.
    pub fn set_zone_quota(&self, set: &str, zone: &str, total: u64) {
        self.with_state(|s| {
            s.faults
                .zone_quotas
                .insert((set.to_string(), zone.to_string()), total)
        });
    }

    /// Refuses DescribeAccountQuota as a key without the CAM permission.
    pub fn deny_quota(&self, deny: bool) {
        self.with_state(|s| s.faults.deny_quota = deny);
    }

    /// The next `n` requests are refused with `RequestLimitExceeded`.
    pub fn throttle_next(&self, n: u32) {
        self.with_state(|s| s.faults.throttle_next = n);
    }

    /// The state of an instance (`PENDING`, `RUNNING`, `LAUNCH_FAILED`,
    /// `TERMINATING`, `SHUTDOWN` in the recycle bin), if it exists.
    pub fn instance_state(&self, id: &str) -> Option<String> {
        self.with_state(|s| s.instances.get(id).map(|i| i.state.clone()))
    }

    /// Removes gpuform's tags from a resource behind its back: it is then
    /// unmanaged, what `gpuform import` adopts. False if there is none.
    pub fn disown_behind(&self, id: &str) -> bool {
        self.with_state(|s| tagging::disown(s, id))
    }

    /// Every disk id, system disks included (for tests).
    pub fn disk_ids(&self) -> Vec<String> {
        self.with_state(|s| s.disks.keys().cloned().collect())
    }

    /// Tags of a resource, by id.
    pub fn tags(&self, id: &str) -> Option<Vec<(String, String)>> {
        self.with_state(|s| s.tags_of(id))
    }

    /// Removes the Ingress policies of a group that `matches` selects, as
    /// another client would (DeleteSecurityGroupPolicies, 215/15809).
    /// Returns how many went.
    pub fn remove_ingress_behind(&self, id: &str, matches: impl Fn(&Value) -> bool) -> usize {
        self.with_state(|s| match s.sgs.get_mut(id) {
            Some(g) => {
                let before = g.ingress.len();
                g.ingress.retain(|p| !matches(p));
                let gone = before - g.ingress.len();
                if gone > 0 {
                    g.version += 1;
                }
                gone
            }
            None => 0,
        })
    }

    /// Removes every Egress policy of a group, as another client would (or
    /// as a create killed between its two CreateSecurityGroupPolicies calls
    /// leaves it): the group then lets nothing out. Returns how many went.
    pub fn remove_egress_behind(&self, id: &str) -> usize {
        self.with_state(|s| match s.sgs.get_mut(id) {
            Some(g) => {
                let gone = std::mem::take(&mut g.egress).len();
                if gone > 0 {
                    g.version += 1;
                }
                gone
            }
            None => 0,
        })
    }

    /// Sets what InquiryPriceRunInstances quotes for a type (CNY); types
    /// without a price are refused as unknown.
    pub fn set_price(&self, instance_type: &str, price: crate::prices::ListPrice) {
        self.with_state(|s| s.prices.set(instance_type, price));
    }

    /// Adds a region and its zones to what DescribeRegions and DescribeZones list.
    pub fn add_region(&self, region: &str, zones: &[&str]) {
        self.with_state(|s| s.geography.add_region(region, zones));
    }

    /// Adds a type on sale (or sold out) in a zone to what
    /// DescribeZoneInstanceConfigInfos answers.
    pub fn offer(&self, offer: crate::geography::ZoneOffer) {
        self.with_state(|s| s.geography.offer(offer));
    }

    /// After `n` more price answers, InquiryPriceRunInstances fails with
    /// `InternalError` (an outage half-way through a refresh); `None` ends it.
    pub fn fail_prices_after(&self, n: Option<u32>) {
        self.with_state(|s| {
            s.prices.fail_after = n;
            s.prices.answered = 0;
        });
    }

    /// Ingress and egress policies of a security group (as stored from the requests).
    pub fn security_group_policies(&self, id: &str) -> Option<(Vec<Value>, Vec<Value>)> {
        self.with_state(|s| s.sgs.get(id).map(|g| (g.ingress.clone(), g.egress.clone())))
    }
}

impl MockCloud for TencentMock {
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GPUFORM_TENCENT_ENDPOINT".into(), self.endpoint()),
            ("TENCENTCLOUD_SECRET_ID".into(), SECRET_ID.into()),
            ("TENCENTCLOUD_SECRET_KEY".into(), SECRET_KEY.into()),
        ]
    }

    fn resources(&self) -> Vec<MockResource> {
        self.with_state(|s| s.alive())
    }

    fn delete_behind(&self, id: &str) -> bool {
        self.with_state(|s| s.delete_behind(id))
    }

    fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    fn set_hook(&self, hook: Option<RequestHook>) {
        *self.shared.hook.lock().unwrap_or_else(|p| p.into_inner()) = hook;
    }
}

/// An API error: `Code` and `Message` of the error envelope.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub code: String,
    pub message: String,
}

impl ApiError {
    pub fn new(code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

async fn handle(
    AxState(shared): AxState<Arc<Shared>>,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let n = shared.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let request_id = format!("6c0f7b2e-0000-4000-8000-{n:012x}");
    let outcome = serve(&shared, &method, &uri, &headers, &body);
    // The request has taken effect (or been refused): the hook may kill the
    // client now, before it sees the answer.
    let hook = shared
        .hook
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some(h) = hook {
        h(n);
    }
    let body = match outcome {
        Ok(mut v) => {
            if let Some(o) = v.as_object_mut() {
                o.insert("RequestId".into(), json!(request_id));
            }
            json!({ "Response": v })
        }
        Err(e) => json!({
            "Response": {
                "Error": {"Code": e.code, "Message": e.message},
                "RequestId": request_id,
            }
        }),
    };
    // API 3.0 answers errors with HTTP 200 and the error envelope.
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Checks the signature, then runs the action.
fn serve(
    shared: &Shared,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Value, ApiError> {
    let service = verify_signature(method, uri, headers, body)?;
    let action = header(headers, "x-tc-action").ok_or_else(|| {
        ApiError::new(
            "MissingParameter",
            "The request is missing the X-TC-Action header.",
        )
    })?;
    let version = header(headers, "x-tc-version").ok_or_else(|| {
        ApiError::new(
            "MissingParameter",
            "The request is missing the X-TC-Version header.",
        )
    })?;
    let region = header(headers, "x-tc-region").unwrap_or("");
    // cvm, vpc and cbs are 2017-03-12; the Tag API and STS 2018-08-13.
    let documented = match service.as_str() {
        "tag" | "sts" => "2018-08-13",
        _ => "2017-03-12",
    };
    if version != documented {
        return Err(ApiError::new(
            "NoSuchVersion",
            format!("The API version `{version}` of {service} does not exist."),
        ));
    }
    let params: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::new(
                "InvalidParameter",
                format!("The request body is not valid JSON: {e}."),
            )
        })?
    };
    if !params.is_object() {
        return Err(ApiError::new(
            "InvalidParameter",
            "The request body must be a JSON object.",
        ));
    }
    if region.is_empty() {
        return Err(ApiError::new(
            "MissingParameter",
            "The request is missing the X-TC-Region header.",
        ));
    }
    let mut st = shared.state.lock().unwrap_or_else(|p| p.into_inner());
    st.tick();
    if st.faults.throttle_next > 0 {
        st.faults.throttle_next -= 1;
        return Err(ApiError::new(
            "RequestLimitExceeded",
            "Your current request times exceeds the limit. Please try again later.",
        ));
    }
    actions::dispatch(&mut st, &service, action, region, &params)
}

/// Checks the TC3 signature with the stand-in's own verifier
/// ([`crate::verify::tc3`], not the signer under test), then the timestamp
/// window; returns the service of the credential scope.
fn verify_signature(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<String, ApiError> {
    let wire = WireRequest::from_http(method, uri, headers, body);
    let key = Key {
        id: SECRET_ID,
        secret: SECRET_KEY,
    };
    let verified = tc3::verify(&wire, &key).map_err(|r| match r {
        Rejection::Malformed(why) => {
            ApiError::new("AuthFailure.InvalidAuthorization", format!("{why}."))
        }
        Rejection::UnknownKey(_) => ApiError::new(
            "AuthFailure.SecretIdNotFound",
            "The SecretId is not found, please ensure that your SecretId is correct.",
        ),
        Rejection::ContentHash | Rejection::Mismatch { .. } => ApiError::new(
            "AuthFailure.SignatureFailure",
            "The provided credentials could not be validated. Please check your signature is correct.",
        ),
    })?;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    if (now - verified.timestamp).abs() > MAX_SKEW_SECS {
        return Err(ApiError::new(
            "AuthFailure.SignatureExpire",
            "Signature expired. Timestamp and server time cannot differ by more than five minutes.",
        ));
    }
    if method != Method::POST {
        return Err(ApiError::new(
            "InvalidParameter",
            "gpuform's stand-in accepts POST JSON requests only.",
        ));
    }
    Ok(verified.service)
}
