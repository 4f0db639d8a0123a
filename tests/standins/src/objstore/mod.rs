//! One local stand-in for the S3-like object-storage dialect of Alibaba
//! OSS, Tencent COS and Huawei OBS, parameterised by a [`Flavor`] per
//! cloud ([`oss::OSS`]).
//!
//! **This is not the cloud.** It follows the API references (see
//! [`state`]) as far as gpuform calls them, and checks strictly:
//!
//! - every request's signature, with the flavor's verifier from
//!   [`crate::verify`] (written from the vendors' signing guides; never the
//!   signer under test), for the virtual-hosted bucket the `Host` names;
//! - the XML bodies, parsed by the stand-in's own reader ([`xml`]), never
//!   by the client's code: an element in the wrong place is `MalformedXML`;
//! - `Content-MD5` of DeleteMultipleObjects;
//! - buckets of another account (`AccessDenied`, and PutBucket answering
//!   `BucketAlreadyExists`), bucket regions (a bucket is addressed through
//!   its own region's endpoint), `BucketNotEmpty`, `NoSuchBucket`,
//!   `NoSuchTagSet` / `NoSuchLifecycle` / no encryption rule as documented.
//!
//! Faults: [`Fault::Once`] fails the next call of an operation,
//! [`Fault::AtCall`] the N-th request, without taking effect; a
//! [`RequestHook`] runs after each request took effect and before it is
//! answered (a test kills the client there to crash at every call).
//! Tests put objects with [`ObjStoreMock::put_object`], leave multipart
//! uploads unfinished with [`ObjStoreMock::start_upload`], and change buckets
//! behind gpuform's back with the `*_behind` hooks.

pub mod cos;
pub mod obs;
pub mod oss;
pub mod state;
pub mod suite;
pub mod xml;

use crate::background::Background;
use crate::verify::{Key, Rejection, WireRequest};
use crate::{MockCloud, MockResource, RequestHook};
use axum::body::Body;
use axum::extract::State;
use axum::http::{Request as HttpRequest, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use base64::Engine as _;
use gpuform_provider::ResourceKind;
use state::{err, ApiError, Bucket, Obj, Op, Store};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What differs between the clouds the stand-in plays.
#[derive(Clone, Copy)]
pub struct Flavor {
    pub product: &'static str,
    pub header_prefix: &'static str,
    /// The service host of a region; buckets are `<bucket>.<service host>`.
    pub service_host: fn(&str) -> String,
    /// A region as ListBuckets' `Location` names it.
    pub location: fn(&str) -> String,
    pub regions: &'static [&'static str],
    pub key: Key<'static>,
    /// Verifies a request to `bucket` (`None`: the service) in `region`.
    pub verify: fn(&WireRequest, &Key<'_>, &str, Option<&str>) -> Result<(), Rejection>,
    /// Standard, infrequent, archive (and any other) class names.
    pub classes: &'static [&'static str],
    /// The header a PutBucket names the class in (`None`: the
    /// `CreateBucketConfiguration` body's `StorageClass`).
    pub class_header: Option<&'static str>,
    /// The sub-resource GetBucketInfo answers (`bucketInfo`).
    pub info_query: &'static str,
    pub info_xml: fn(&str, &Bucket) -> String,
    pub acl_xml: fn(&str) -> String,
    /// GetBucketTags of an untagged bucket: an empty `TagSet` (OSS) or 404
    /// `NoSuchTagSet`.
    pub empty_tag_set: bool,
    /// The code of that 404 (`NoSuchTagSet`; COS `NoSuchTagSetError`).
    pub no_tag_set_code: &'static str,
    /// GetBucketLifecycle of a bucket without rules (`NoSuchLifecycle`;
    /// COS and OBS `NoSuchLifecycleConfiguration`).
    pub no_lifecycle_code: &'static str,
    /// PutBucket of one's own bucket: rewrites it and answers 200 (OSS) or
    /// 409 `BucketAlreadyOwnedByYou`.
    pub owned_put_rewrites: bool,
    pub no_sse_code: &'static str,
    /// `ServerSideEncryptionConfiguration/Rule/…` rather than
    /// `ServerSideEncryptionRule/…`.
    pub sse_configuration: bool,
    pub sse_algorithms: &'static [&'static str],
    pub max_tags: usize,
    pub valid_name: fn(&str) -> bool,
    /// The environment pointing gpuform at the stand-in's base URL.
    pub env: fn(&str) -> Vec<(String, String)>,
}

impl Flavor {
    fn sse_xml(&self, alg: &str) -> String {
        let d = format!(
            "<ApplyServerSideEncryptionByDefault>{}</ApplyServerSideEncryptionByDefault>",
            xml::leaf("SSEAlgorithm", alg)
        );
        if self.sse_configuration {
            xml::doc(
                "ServerSideEncryptionConfiguration",
                &format!("<Rule>{d}</Rule>"),
            )
        } else {
            xml::doc("ServerSideEncryptionRule", &d)
        }
    }
}

/// Base64 of the MD5 of `body` (Content-MD5).
pub(crate) fn md5_b64(body: &[u8]) -> String {
    use md5::Digest;
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}

/// An injected failure; the call does not take effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The next call of the operation (`PutBucketLifecycle`…).
    Once {
        op: String,
        status: u16,
        code: String,
    },
    /// The request with this number (1-based, counting every request).
    AtCall { n: u64, status: u16, code: String },
}

struct Shared {
    flavor: Flavor,
    store: Mutex<Store>,
    faults: Mutex<Vec<Fault>>,
    requests: AtomicU64,
    hook: Mutex<Option<RequestHook>>,
    log: Mutex<Vec<String>>,
}

/// The running stand-in. Dropping it stops the server.
pub struct ObjStoreMock {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
    _server: Background,
}

impl ObjStoreMock {
    pub fn start(flavor: Flavor) -> ObjStoreMock {
        let shared = Arc::new(Shared {
            flavor,
            store: Mutex::new(Store::default()),
            faults: Mutex::new(Vec::new()),
            requests: AtomicU64::new(0),
            hook: Mutex::new(None),
            log: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (addr, server) = Background::serve("objstore-mock", app);
        ObjStoreMock {
            shared,
            addr,
            _server: server,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn inject(&self, f: Fault) {
        lock(&self.shared.faults).push(f);
    }

    /// The operations answered so far, in order (`PutBucket`, …), refused ones
    /// as `!PutBucket`.
    pub fn ops(&self) -> Vec<String> {
        lock(&self.shared.log).clone()
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        lock(&self.shared.store)
    }

    /// Puts an object (a new version when versioning is enabled).
    pub fn put_object(&self, bucket: &str, key: &str) -> bool {
        let mut s = self.store();
        s.seq += 1;
        let seq = s.seq;
        let Some(b) = s.buckets.get_mut(bucket) else {
            return false;
        };
        let versioned = b.versioning.as_deref() == Some("Enabled");
        if !versioned {
            b.objects.retain(|o| o.key != key);
        }
        let version = if versioned {
            format!("v{seq}")
        } else {
            "null".to_string()
        };
        b.objects.push(Obj {
            key: key.to_string(),
            version,
            marker: false,
            seq,
        });
        true
    }

    /// Starts a multipart upload of `key` that nobody completes (as a
    /// client that died mid-upload leaves it); its upload id, or `None`
    /// when there is no such bucket.
    pub fn start_upload(&self, bucket: &str, key: &str) -> Option<String> {
        let mut s = self.store();
        s.seq += 1;
        let id = format!("U{:08X}", s.seq);
        let b = s.buckets.get_mut(bucket)?;
        b.uploads.push((key.to_string(), id.clone()));
        Some(id)
    }

    /// Objects, versions and delete markers the bucket holds.
    pub fn object_count(&self, bucket: &str) -> Option<usize> {
        self.store().buckets.get(bucket).map(|b| b.objects.len())
    }

    /// A copy of a bucket's state.
    pub fn bucket(&self, name: &str) -> Option<Bucket> {
        self.store().buckets.get(name).cloned()
    }

    /// Another account's bucket: every call on it is AccessDenied.
    pub fn add_foreign(&self, name: &str, region: &str) {
        let b = Bucket {
            region: region.into(),
            foreign: true,
            acl: "private".into(),
            ..Bucket::default()
        };
        self.store().buckets.insert(name.into(), b);
    }

    /// A bucket of this account made outside gpuform, with these tags.
    pub fn add_behind(&self, name: &str, region: &str, tags: &[(&str, &str)]) {
        let b = Bucket {
            region: region.into(),
            class: self.shared.flavor.classes[0].into(),
            acl: "private".into(),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Bucket::default()
        };
        self.store().buckets.insert(name.into(), b);
    }

    /// Changes a bucket behind gpuform's back (drift tests).
    pub fn edit_behind(&self, name: &str, edit: impl FnOnce(&mut Bucket)) -> bool {
        match self.store().buckets.get_mut(name) {
            Some(b) => {
                edit(b);
                true
            }
            None => false,
        }
    }
}

impl MockCloud for ObjStoreMock {
    fn env(&self) -> Vec<(String, String)> {
        (self.shared.flavor.env)(&self.endpoint())
    }

    fn resources(&self) -> Vec<MockResource> {
        self.store()
            .buckets
            .iter()
            .filter(|(_, b)| !b.foreign)
            .map(|(n, b)| {
                MockResource::new(
                    ResourceKind::Bucket,
                    n,
                    &b.region,
                    b.tags.get("gpuform:address").cloned(),
                )
            })
            .collect()
    }

    fn delete_behind(&self, id: &str) -> bool {
        self.store().buckets.remove(id).is_some()
    }

    fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    fn set_hook(&self, hook: Option<RequestHook>) {
        *lock(&self.shared.hook) = hook;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The region and bucket a `Host` addresses.
fn route(f: &Flavor, host: &str) -> Option<(String, Option<String>)> {
    let host = host.split(':').next().unwrap_or(host);
    f.regions.iter().find_map(|r| {
        let service = (f.service_host)(r);
        if host == service {
            Some((r.to_string(), None))
        } else {
            let b = host.strip_suffix(&format!(".{service}"))?;
            (!b.is_empty() && !b.contains('.')).then(|| (r.to_string(), Some(b.to_string())))
        }
    })
}

async fn handle(State(shared): State<Arc<Shared>>, req: HttpRequest<Body>) -> Response {
    let n = shared.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 8 << 20)
        .await
        .unwrap_or_default();
    let f = shared.flavor;
    let wire = WireRequest::from_http(&parts.method, &parts.uri, &parts.headers, &body);
    let host = wire
        .header_values("host")
        .next()
        .unwrap_or_default()
        .to_string();
    let (result, name) = answer(&shared, &f, &wire, &host, n);
    lock(&shared.log).push(if result.is_ok() {
        name.to_string()
    } else {
        format!("!{name}")
    });
    // The call has taken effect (or was refused): tell the test before answering.
    let hook = lock(&shared.hook).clone();
    if let Some(h) = hook {
        h(n);
    }
    let request_id = format!("{:024X}", n);
    let id_header = format!("{}request-id", f.header_prefix);
    match result {
        Ok(xml) => {
            let ct = if xml.is_empty() {
                "text/plain"
            } else {
                "application/xml"
            };
            (
                StatusCode::OK,
                [
                    ("content-type", ct.to_string()),
                    (id_header.as_str(), request_id),
                ],
                xml,
            )
                .into_response()
        }
        Err(e) => {
            let body = xml::doc(
                "Error",
                &format!(
                    "{}{}{}{}",
                    xml::leaf("Code", &e.code),
                    xml::leaf("Message", &e.message),
                    xml::leaf("RequestId", &request_id),
                    xml::leaf("HostId", &host)
                ),
            );
            let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
            (
                status,
                [
                    ("content-type", "application/xml".to_string()),
                    (id_header.as_str(), request_id),
                ],
                body,
            )
                .into_response()
        }
    }
}

fn answer(
    shared: &Shared,
    f: &Flavor,
    wire: &WireRequest,
    host: &str,
    n: u64,
) -> (Result<String, ApiError>, &'static str) {
    let Some((region, bucket)) = route(f, host) else {
        return (
            Err(err(
                400,
                "InvalidURI",
                format!("`{host}` is not an endpoint of this service"),
            )),
            "Unknown",
        );
    };
    // Of the object operations, only AbortMultipartUpload is played.
    let key = match wire.path.strip_prefix('/') {
        Some("") => None,
        Some(k) if wire.method == "DELETE" && wire.query.contains("uploadId=") => decode(k),
        _ => {
            return (
                Err(err(
                    400,
                    "InvalidRequest",
                    "object operations are not part of this stand-in",
                )),
                "Unknown",
            )
        }
    };
    let Some(query) = parse_query(&wire.query) else {
        return (
            Err(err(
                400,
                "InvalidArgument",
                "The query string is not valid percent-encoding.",
            )),
            "Unknown",
        );
    };
    let op = Op {
        method: wire.method.as_str(),
        bucket: bucket.as_deref(),
        key: key.as_deref(),
        region: &region,
        query: &query,
        headers: &wire.headers,
        body: &wire.body,
    };
    let name = state::op_name(f, &op);
    if let Err(r) = (f.verify)(wire, &f.key, &region, bucket.as_deref()) {
        let e = match r {
            Rejection::UnknownKey(_) => err(403, "InvalidAccessKeyId", "The OSS Access Key Id you provided does not exist in our records."),
            Rejection::Mismatch { canonical } => err(403, "SignatureDoesNotMatch", format!("The request signature we calculated does not match the signature you provided. Canonical request: {canonical}")),
            other => err(403, "AccessDenied", other.to_string()),
        };
        return (Err(e), name);
    }
    {
        let mut faults = lock(&shared.faults);
        let hit = faults.iter().position(|fl| match fl {
            Fault::Once { op, .. } => op == name,
            Fault::AtCall { n: at, .. } => *at == n,
        });
        if let Some(i) = hit {
            let (Fault::Once { status, code, .. } | Fault::AtCall { status, code, .. }) =
                faults.remove(i);
            return (Err(err(status, &code, "injected by the test")), name);
        }
    }
    (lock(&shared.store).dispatch(f, &op), name)
}

/// Decodes `k=v&k` (RFC 3986 percent-encoding; `+` is a space, as the
/// SDKs' form encoders write it).
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
        match b[i] {
            b'%' => {
                out.push(u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}
