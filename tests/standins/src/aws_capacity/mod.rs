//! A stand-in in front of moto for what moto lacks of an account's GPU
//! capacity: the EC2 quotas of Service Quotas (moto's `GetServiceQuota`
//! knows only `vpc`, see shared notes on moto). It is NOT AWS: it answers
//! those actions as their API reference pages document them, and forwards
//! every other request to moto unchanged (method, path, query, headers,
//! body), so a whole gpuform AWS flow runs through it with one endpoint
//! (`AWS_ENDPOINT_URL`, or a spec's `endpoints: aws:`).
//!
//! Every request's SigV4 signature is checked first with the stand-in's own
//! verifier ([`crate::verify::sigv4`], written from the IAM user guide) for
//! the key pairs it knows ([`ACCESS_KEY_ID`] / [`SECRET_ACCESS_KEY`], and
//! any a test adds for a moto account); a bad one is refused as AWS refuses
//! it, in the error format of the request's protocol ([`wire_errors`]).
//!
//! Answered here:
//! - Service Quotas `GetServiceQuota` (JSON 1.1, `X-Amz-Target:
//!   ServiceQuotasV20190624.GetServiceQuota`) for the four EC2 GPU quotas
//!   of [`quotas::GPU_QUOTAS`], with values a test sets per region
//!   ([`AwsCapacity::set_quota`]) and a mode that denies
//!   ([`AwsCapacity::deny_quotas`]).
//!
//! - EC2 `CreateCapacityReservation` and `DescribeCapacityReservations`,
//!   and `RunInstances` with a `CapacityReservationTarget`: checked against
//!   the reservation, forwarded to moto without the target and counted
//!   against it until `TerminateInstances` ([`reservations`]).
//!
//! - EC2 `DescribeCapacityBlockOfferings` and `PurchaseCapacityBlock`
//!   ([`blocks`]): offerings derived from the request, what the test sells
//!   ([`AwsCapacity::sell_blocks`]) and its pinned clock
//!   ([`AwsCapacity::set_now`]); a bought block is a capacity reservation
//!   of type `capacity-block`, launched into with the `capacity-block`
//!   market only while its window is open.
//!
//! Actions of the EC2 query protocol (`Action=…` in a form body) that moto
//! lacks go in a module of their own beside `quotas`, picked in `ec2`'s
//! dispatch before the request is forwarded.

pub mod blocks;
mod forward;
pub mod quotas;
pub mod reservations;
mod wire_errors;

use crate::background::Background;
use crate::verify::{sigv4, Key, Rejection, WireRequest};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use wire_errors::Protocol;

/// The key pair the stand-in accepts from the start: moto's default
/// account, as every moto-based test signs.
pub const ACCESS_KEY_ID: &str = "testing";
pub const SECRET_ACCESS_KEY: &str = "testing";

/// The account the stand-in names in quota ARNs (moto's default account).
pub const ACCOUNT_ID: &str = "123456789012";

/// The Service Quotas JSON target prefix (API version 2019-06-24).
const QUOTAS_TARGET: &str = "ServiceQuotasV20190624.";

#[derive(Default)]
struct Counts {
    requests: u64,
    refused: u64,
    forwarded: u64,
    /// Requests answered here, by action.
    answered: BTreeMap<String, u64>,
}

struct Shared {
    /// Access key id → secret.
    keys: Mutex<HashMap<String, String>>,
    quotas: Mutex<quotas::Book>,
    reservations: Mutex<reservations::Book>,
    /// Locked before `reservations` when both are.
    market: Mutex<blocks::Market>,
    counts: Mutex<Counts>,
    upstream: forward::Upstream,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running stand-in in front of one moto server; stops when dropped.
pub struct AwsCapacity {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _server: Background,
}

impl AwsCapacity {
    /// Serves on a free 127.0.0.1 port, forwarding what it does not answer
    /// to `moto_url` (`http://127.0.0.1:PORT`).
    pub fn start(moto_url: &str) -> AwsCapacity {
        let shared = Arc::new(Shared {
            keys: Mutex::new(HashMap::from([(
                ACCESS_KEY_ID.to_string(),
                SECRET_ACCESS_KEY.to_string(),
            )])),
            quotas: Mutex::new(quotas::Book::default()),
            reservations: Mutex::new(reservations::Book::default()),
            market: Mutex::new(blocks::Market::default()),
            counts: Mutex::new(Counts::default()),
            upstream: forward::Upstream::new(moto_url),
        });
        let sh = shared.clone();
        let app = axum::Router::new().fallback(move |m: Method, u: Uri, h: HeaderMap, b: Bytes| {
            let sh = sh.clone();
            async move { handle(&sh, m, u, h, b).await }
        });
        let (addr, server) = Background::serve("aws-capacity-standin", app);
        AwsCapacity {
            addr,
            shared,
            _server: server,
        }
    }

    /// `http://127.0.0.1:PORT`: the endpoint to give gpuform in place of moto's.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Accepts another key pair (a moto account's assumed-role keys).
    pub fn add_key(&self, access_key_id: &str, secret_access_key: &str) {
        lock(&self.shared.keys).insert(access_key_id.into(), secret_access_key.into());
    }

    /// Sets a quota's applied value (vCPUs) in `region`; see
    /// [`quotas::GPU_QUOTAS`] for the codes. Unset quotas are 0, as a new
    /// account's GPU quotas commonly are.
    pub fn set_quota(&self, region: &str, code: &str, vcpus: u64) {
        lock(&self.shared.quotas).set(region, code, vcpus as f64);
    }

    /// While on, `GetServiceQuota` answers `AccessDeniedException`, as for
    /// a caller without `servicequotas:GetServiceQuota`.
    pub fn deny_quotas(&self, deny: bool) {
        lock(&self.shared.quotas).deny = deny;
    }

    /// The capacity reservations the account holds now (with the
    /// instances counted against each).
    pub fn reservations(&self) -> Vec<reservations::CapacityReservation> {
        lock(&self.shared.reservations)
            .by_id
            .values()
            .cloned()
            .collect()
    }

    /// Pins the stand-in's clock (`YYYY-MM-DDTHH:MM:SSZ`): Capacity Block
    /// offerings start from it and blocks' windows open and close by it.
    /// Unset, the block actions answer an error; the wall clock is never read.
    pub fn set_now(&self, instant: &str) {
        let now = blocks::parse_instant(instant).expect("an instant YYYY-MM-DDTHH:MM:SSZ");
        lock(&self.shared.reservations).now = Some(now);
    }

    /// Sells Capacity Blocks of `instance_type` in these zones of `region`
    /// at `usd_per_instance_hour` (the upfront fee is that times hours
    /// times instances); nothing else is for sale.
    pub fn sell_blocks(
        &self,
        region: &str,
        instance_type: &str,
        zones: &[&str],
        usd_per_instance_hour: f64,
    ) {
        lock(&self.shared.market).stock.insert(
            (region.to_string(), instance_type.to_string()),
            blocks::BlockStock {
                zones: zones.iter().map(|z| z.to_string()).collect(),
                usd_per_instance_hour,
            },
        );
    }

    /// The Capacity Blocks the account bought (purchases that took effect).
    pub fn blocks_bought(&self) -> Vec<reservations::CapacityReservation> {
        lock(&self.shared.reservations)
            .by_id
            .values()
            .filter(|r| r.reservation_type == reservations::CAPACITY_BLOCK)
            .cloned()
            .collect()
    }

    /// Requests received, refused ones included.
    pub fn requests(&self) -> u64 {
        lock(&self.shared.counts).requests
    }

    /// Requests refused for their signature or key.
    pub fn refused(&self) -> u64 {
        lock(&self.shared.counts).refused
    }

    /// Requests forwarded to moto.
    pub fn forwarded(&self) -> u64 {
        lock(&self.shared.counts).forwarded
    }

    /// Requests of `action` (e.g. `GetServiceQuota`) answered here, errors included.
    pub fn answered(&self, action: &str) -> u64 {
        lock(&self.shared.counts)
            .answered
            .get(action)
            .copied()
            .unwrap_or(0)
    }
}

async fn handle(
    sh: &Shared,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    lock(&sh.counts).requests += 1;
    let wire = WireRequest::from_http(&method, &uri, &headers, &body);
    let protocol = Protocol::of(&wire);
    let verified = match verify(sh, &wire) {
        Ok(v) => v,
        Err(r) => {
            lock(&sh.counts).refused += 1;
            return protocol.refusal(&r);
        }
    };
    let target = wire.only_header("x-amz-target").ok().flatten();
    if let Some(op) = target.and_then(|t| t.strip_prefix(QUOTAS_TARGET)) {
        *lock(&sh.counts).answered.entry(op.to_string()).or_default() += 1;
        let book = lock(&sh.quotas);
        return quotas::answer(&book, op, &verified.region, &body);
    }
    if protocol == Protocol::Ec2 {
        if let Some(answer) = ec2(sh, &verified.region, (&method, &uri, &headers), &body).await {
            return answer;
        }
    }
    lock(&sh.counts).forwarded += 1;
    sh.upstream.send(method, &uri, &headers, body).await
}

/// The EC2 query actions answered or checked here (see `reservations`);
/// `None`: forward the request unchanged.
async fn ec2(
    sh: &Shared,
    region: &str,
    (method, uri, headers): (&Method, &Uri, &HeaderMap),
    body: &Bytes,
) -> Option<Response> {
    let raw = std::str::from_utf8(body).ok()?;
    let params = crate::verify::text::query_pairs(raw)?;
    let action = params.iter().find(|(k, _)| k == "Action")?.1.clone();
    let count = |sh: &Shared| *lock(&sh.counts).answered.entry(action.clone()).or_default() += 1;
    let answer = |r: Result<String, reservations::Ec2Error>| match r {
        Ok(xml) => {
            use axum::response::IntoResponse;
            (
                StatusCode::OK,
                [("content-type", "text/xml;charset=UTF-8")],
                xml,
            )
                .into_response()
        }
        Err((status, code, message)) => Protocol::Ec2.error(
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            code,
            &message,
        ),
    };
    match action.as_str() {
        "CreateCapacityReservation" => {
            count(sh);
            Some(answer(lock(&sh.reservations).create(region, &params)))
        }
        "DescribeCapacityBlockOfferings" => {
            count(sh);
            let now = lock(&sh.reservations).now;
            Some(answer(blocks::pinned(now).and_then(|now| {
                lock(&sh.market).describe(region, &params, now)
            })))
        }
        "PurchaseCapacityBlock" => {
            count(sh);
            let mut market = lock(&sh.market);
            let mut book = lock(&sh.reservations);
            Some(answer(blocks::pinned(book.now).and_then(|now| {
                market.purchase(&mut book, region, &params, now)
            })))
        }
        "DescribeCapacityReservations" => {
            count(sh);
            Some(answer(lock(&sh.reservations).describe(region, &params)))
        }
        "RunInstances" => {
            let target = match lock(&sh.reservations).admit(region, &params) {
                Ok(None) => return None,
                Ok(Some(id)) => id,
                Err(e) => {
                    count(sh);
                    return Some(answer(Err(e)));
                }
            };
            count(sh);
            lock(&sh.counts).forwarded += 1;
            let stripped = Bytes::from(reservations::without_target(raw));
            Some(
                match sh
                    .upstream
                    .exchange(method.clone(), uri, headers, stripped)
                    .await
                {
                    Ok((status, back, bytes)) => {
                        if status.is_success() {
                            let made = reservations::instance_ids(&String::from_utf8_lossy(&bytes));
                            lock(&sh.reservations).launched(&target, made);
                        }
                        use axum::response::IntoResponse;
                        (status, back, bytes).into_response()
                    }
                    Err(failed) => failed,
                },
            )
        }
        "TerminateInstances" => {
            lock(&sh.counts).forwarded += 1;
            Some(
                match sh
                    .upstream
                    .exchange(method.clone(), uri, headers, body.clone())
                    .await
                {
                    Ok((status, back, bytes)) => {
                        if status.is_success() {
                            lock(&sh.reservations)
                                .terminated(&reservations::named_instances(&params));
                        }
                        use axum::response::IntoResponse;
                        (status, back, bytes).into_response()
                    }
                    Err(failed) => failed,
                },
            )
        }
        _ => None,
    }
}

/// Checks the signature with the secret of the key the credential names.
fn verify(sh: &Shared, wire: &WireRequest) -> Result<sigv4::Verified, Rejection> {
    let akid = wire_errors::credential_part(wire, 0)
        .ok_or_else(|| Rejection::Malformed("no AWS4-HMAC-SHA256 Credential".into()))?;
    let secret = lock(&sh.keys)
        .get(&akid)
        .cloned()
        .ok_or(Rejection::UnknownKey(akid.clone()))?;
    sigv4::verify(
        wire,
        &Key {
            id: &akid,
            secret: &secret,
        },
    )
}

/// A JSON answer of the JSON 1.1 protocol.
fn json_answer(status: StatusCode, body: &serde_json::Value) -> Response {
    use axum::response::IntoResponse;
    (
        status,
        [
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amzn-requestid", wire_errors::REQUEST_ID),
        ],
        body.to_string(),
    )
        .into_response()
}
