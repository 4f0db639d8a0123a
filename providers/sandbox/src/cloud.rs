//! The sandbox cloud: one per inventory directory and process, shared by the
//! providers of every mirrored cloud.

use crate::errors::{perr, Code};
use crate::faults::Faults;
use crate::inventory::Inventory;
use crate::provider::SandboxProvider;
use crate::store::{delete_line, own_line, set_line, Store};
use crate::SandboxError;
use gpuform_provider::attr;
use gpuform_provider::Result;
use gpuform_provider::{Attrs, Cloud, ErrorKind, Provider, ProviderError, ResourceKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Instant;

/// A resource in the sandbox, as behind-the-back commands show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SandboxResource {
    /// The cloud the sandbox mirrored when it made this resource.
    pub cloud: Cloud,
    pub kind: ResourceKind,
    pub id: String,
    pub region: String,
    /// Ownership tags plus the user's `tags` attribute.
    pub tags: BTreeMap<String, String>,
    pub attrs: Attrs,
    /// The idempotency token it was created with.
    pub token: String,
}

/// The simulated cloud behind every `sandbox(<cloud>)` provider of a process.
pub struct SandboxCloud {
    dir: PathBuf,
    pub(crate) faults: Faults,
    calls: AtomicU64,
    pub(crate) inner: Mutex<Inner>,
    /// The day reservations expire against (`set_today`), as days since
    /// the epoch; `i64::MIN` when unset (nothing expires).
    today: std::sync::atomic::AtomicI64,
}

pub(crate) struct Inner {
    pub store: Store,
    pub inv: Inventory,
    rng: StdRng,
    bucket: Option<TokenBucket>,
    calls: u64,
    /// Spot instances given their interruption notice (fault `reclaim`),
    /// by the call at which they are reclaimed.
    notices: BTreeMap<(Cloud, Box<str>), u64>,
    /// Reused for log lines.
    pub scratch: Vec<u8>,
}

/// The outcome of starting one provider operation (one or more API calls).
pub(crate) struct Call {
    /// Whether this operation includes the `crash_after`-th call.
    crash: bool,
    pub request_id: String,
}

struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn take(&mut self, n: f64) -> bool {
        let now = Instant::now();
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= n {
            self.tokens -= n;
            true
        } else {
            false
        }
    }
}

/// The burst a rate allows: one second's worth.
pub(crate) fn burst_of(rate: f64) -> u32 {
    rate.ceil().clamp(1.0, f64::from(u32::MAX)) as u32
}

fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<SandboxCloud>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<PathBuf, Weak<SandboxCloud>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something did, the data
    // is still consistent (records are applied after they are written).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SandboxCloud {
    /// Opens the inventory in `dir` (created if needed) and replays it. In a
    /// process, every open of the same directory with the same faults returns
    /// the same cloud.
    pub fn open(dir: &Path, faults: Faults) -> Result<Arc<SandboxCloud>, SandboxError> {
        let io = |what: &str, source| SandboxError::Io {
            path: dir.to_path_buf(),
            what: what.to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| io("create the inventory directory", e))?;
        let dir =
            std::fs::canonicalize(dir).map_err(|e| io("resolve the inventory directory", e))?;
        let mut reg = lock(registry());
        if let Some(existing) = reg.get(&dir).and_then(Weak::upgrade) {
            if existing.faults == faults {
                return Ok(existing);
            }
            return Err(SandboxError::AlreadyOpen { dir });
        }
        reg.retain(|_, w| w.strong_count() > 0);
        let (inv, store) = Inventory::open(&dir)?;
        let bucket = faults.rate_per_second.map(|rate| TokenBucket {
            rate,
            burst: f64::from(burst_of(rate)),
            tokens: f64::from(burst_of(rate)),
            last: Instant::now(),
        });
        let cloud = Arc::new(SandboxCloud {
            dir: dir.clone(),
            calls: AtomicU64::new(0),
            today: std::sync::atomic::AtomicI64::new(i64::MIN),
            inner: Mutex::new(Inner {
                store,
                inv,
                rng: StdRng::seed_from_u64(faults.seed),
                bucket,
                calls: 0,
                notices: BTreeMap::new(),
                scratch: Vec::with_capacity(4096),
            }),
            faults,
        });
        reg.insert(dir, Arc::downgrade(&cloud));
        Ok(cloud)
    }

    /// A provider that mirrors `mirrors` (its catalog, ids and error codes).
    pub fn provider(self: &Arc<Self>, mirrors: Cloud) -> Arc<dyn Provider> {
        Arc::new(SandboxProvider::new(self.clone(), mirrors))
    }

    /// The inventory (`gpuform audit`) of the mirrored cloud.
    pub fn inventory(self: &Arc<Self>, mirrors: Cloud) -> Arc<dyn gpuform_provider::InventoryApi> {
        Arc::new(SandboxProvider::new(self.clone(), mirrors))
    }

    /// Provider API calls made so far in this process (pages count one each).
    pub fn api_calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// The inventory directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The faults this cloud injects.
    /// The day reservations and blocks are judged on: gpuform's clock
    /// (pinned by `GPUFORM_TODAY`), given by whoever opens the cloud, since
    /// the sandbox reads no clock of its own.
    pub fn set_today(&self, today: gpuform_catalog::Day) {
        self.today.store(today.0, Ordering::Relaxed);
    }

    pub(crate) fn today(&self) -> Option<gpuform_catalog::Day> {
        match self.today.load(Ordering::Relaxed) {
            i64::MIN => None,
            d => Some(gpuform_catalog::Day(d)),
        }
    }

    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Starts an operation of `pages` API calls: counts them, catches up
    /// with other processes' changes, and injects throttling, failures and
    /// rate limiting, all before any effect. The caller must pass the
    /// returned `Call` to [`SandboxCloud::end`] once the effect is written.
    pub(crate) fn begin(&self, inner: &mut Inner, cloud: Cloud, pages: u64) -> (Call, Result<()>) {
        let pages = pages.max(1);
        let first = inner.calls + 1;
        inner.calls += pages;
        self.calls.store(inner.calls, Ordering::SeqCst);
        let call = Call {
            crash: matches!(self.faults.crash_after, Some(n) if n >= first && n < first + pages),
            request_id: format!("sandbox-{:04x}-{first:08}", std::process::id() & 0xffff),
        };
        let check = (|| {
            if let Err(e) = inner.sync() {
                let kind = match e {
                    SandboxError::Corrupt { .. } => ErrorKind::Invalid,
                    _ => ErrorKind::Transient,
                };
                return Err(ProviderError::new(kind, e.to_string()));
            }
            self.reclaims(inner, first, pages);
            for _ in 0..pages {
                if self.faults.throttle_rate > 0.0
                    && inner.rng.gen::<f64>() < self.faults.throttle_rate
                {
                    return Err(perr(
                        cloud,
                        ErrorKind::Throttled,
                        Code::Throttled,
                        "injected throttling (sandbox fault `throttle`)",
                    ));
                }
                if self.faults.fail_rate > 0.0 && inner.rng.gen::<f64>() < self.faults.fail_rate {
                    return Err(perr(
                        cloud,
                        ErrorKind::Transient,
                        Code::Transient,
                        "We encountered an internal error. Please try again. \
                         (injected failure: sandbox fault `fail`)",
                    ));
                }
            }
            if let Some(b) = &mut inner.bucket {
                if !b.take(pages as f64) {
                    let rate = b.rate;
                    return Err(perr(
                        cloud,
                        ErrorKind::Throttled,
                        Code::Throttled,
                        format!("Request limit exceeded: more than {rate} calls per second (sandbox fault `rate`)"),
                    ));
                }
            }
            Ok(())
        })();
        (call, check)
    }

    /// Spot reclaims (faults `reclaim`, `reclaim_at`): calls `first..first +
    /// pages` may give running spot instances their notice, and reclaim
    /// those whose notice is due. Time in the sandbox is its call count.
    fn reclaims(&self, inner: &mut Inner, first: u64, pages: u64) {
        let f = &self.faults;
        if f.reclaim_rate <= 0.0 && f.reclaim_at.is_empty() && inner.notices.is_empty() {
            return;
        }
        for call in first..first + pages {
            let noticed = f.reclaim_at.contains(&call)
                || (f.reclaim_rate > 0.0 && inner.rng.gen::<f64>() < f.reclaim_rate);
            if !noticed {
                continue;
            }
            let spot: Vec<(Cloud, Box<str>)> = Cloud::ALL
                .into_iter()
                .flat_map(|c| {
                    inner
                        .store
                        .cloud(c)
                        .by_id
                        .iter()
                        .filter(|(_, e)| e.kind == ResourceKind::Instance && e.attrs.contains(SPOT))
                        .map(move |(id, _)| (c, id.clone()))
                })
                .filter(|k| !inner.notices.contains_key(k))
                .collect();
            // By id, so that a seed picks the same instances every run.
            let mut spot = spot;
            spot.sort();
            if !spot.is_empty() {
                let pick = spot[inner.rng.gen_range(0..spot.len())].clone();
                inner
                    .notices
                    .insert(pick, call + crate::faults::RECLAIM_NOTICE_CALLS);
            }
        }
        let now = first + pages - 1;
        let due: Vec<(Cloud, Box<str>)> = inner
            .notices
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for (cloud, id) in due {
            inner.notices.remove(&(cloud, id.clone()));
            if let Err(e) = reclaim(inner, cloud, &id) {
                tracing::warn!("sandbox: reclaiming {id}: {e}");
            }
        }
    }

    /// What a change behind gpuform's back names (an id or an ownership
    /// address), read after catching up with other processes: the locked
    /// cloud, the resource's cloud and id, and the resource.
    fn behind(
        &self,
        id_or_address: &str,
    ) -> Result<(MutexGuard<'_, Inner>, Cloud, String, SandboxResource), SandboxError> {
        let mut inner = self.lock();
        inner.sync()?;
        let (cloud, id) = inner.resolve(id_or_address)?;
        let Some(res) = inner.resource(cloud, &id) else {
            return Err(SandboxError::NotFound(id_or_address.to_string()));
        };
        Ok((inner, cloud, id, res))
    }

    /// Reclaims a spot instance behind gpuform's back, as the cloud does
    /// when it takes spot capacity back: its data volumes are released
    /// (detached) and the instance is gone.
    pub fn reclaim_behind(&self, id_or_address: &str) -> Result<SandboxResource, SandboxError> {
        let (mut inner, cloud, id, res) = self.behind(id_or_address)?;
        if res.kind != ResourceKind::Instance
            || res.attrs.get(attr::PRICING).and_then(|p| p.as_str()) != Some("spot")
        {
            return Err(SandboxError::DependencyViolation(format!(
                "{} {id} is not a spot instance: only spot capacity is reclaimed (use `gpuform sandbox delete` to delete it)",
                res.kind
            )));
        }
        reclaim(&mut inner, cloud, &id)?;
        Ok(res)
    }

    /// Ends an operation: with `crash_after` reached, the process dies now,
    /// after the effect and before the caller hears of it.
    pub(crate) fn end(&self, call: &Call) {
        if call.crash {
            // Not eprintln!: a closed stderr must not turn the crash into a panic.
            let _ = writeln!(
                std::io::stderr(),
                "gpuform sandbox: crash_after={} reached; aborting the process",
                self.faults.crash_after.unwrap_or_default()
            );
            std::process::abort();
        }
    }

    /// Everything alive, sorted by id.
    pub fn list_all(&self) -> Vec<SandboxResource> {
        let mut inner = self.lock();
        if let Err(e) = inner.sync() {
            tracing::warn!("sandbox: {e}; listing what this process last saw");
        }
        let mut out: Vec<SandboxResource> = Vec::with_capacity(inner.store.live());
        for cloud in Cloud::ALL {
            for id in inner.store.cloud(cloud).by_id.keys() {
                if let Some(r) = inner.resource(cloud, id) {
                    out.push(r);
                }
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id).then(a.cloud.cmp(&b.cloud)));
        out
    }

    /// Deletes a resource by id or ownership address, as someone in the
    /// cloud's console would (dependencies are enforced as the cloud does).
    pub fn delete_behind(&self, id_or_address: &str) -> Result<SandboxResource, SandboxError> {
        let (mut inner, cloud, id, res) = self.behind(id_or_address)?;
        if let Some(e) = inner.store.get(cloud, &id) {
            if e.dependents > 0 {
                return Err(SandboxError::DependencyViolation(format!(
                    "{} {id} has {} dependent resource(s) and cannot be deleted",
                    e.kind, e.dependents
                )));
            }
        }
        inner.inv.append(&delete_line(cloud, &id))?;
        inner.store.records += 1;
        inner.store.apply_delete(cloud, &id);
        Ok(res)
    }

    /// Removes a resource's ownership tags behind gpuform's back: it is then
    /// what a console, a script or another tool made (`gpuform import`'s
    /// starting point). Returns it as it was.
    pub fn disown_behind(&self, id_or_address: &str) -> Result<SandboxResource, SandboxError> {
        let (mut inner, cloud, id, res) = self.behind(id_or_address)?;
        inner.inv.append(&own_line(cloud, &id, None))?;
        inner.store.records += 1;
        inner.store.apply_own(cloud, &id, None);
        Ok(res)
    }

    /// Sets (or, with `null`, removes) one attribute of a resource behind
    /// gpuform's back, to make drift.
    pub fn set_attr_behind(
        &self,
        id_or_address: &str,
        key: &str,
        value: serde_json::Value,
    ) -> Result<(), SandboxError> {
        let mut inner = self.lock();
        inner.sync()?;
        let (cloud, id) = inner.resolve(id_or_address)?;
        let Some(e) = inner.store.get(cloud, &id) else {
            return Err(SandboxError::NotFound(id_or_address.to_string()));
        };
        let mut attrs = e.attrs();
        // A detached volume is stored as `attached_to: null`.
        if value.is_null() && key != attr::ATTACHED_TO {
            attrs.remove(key);
        } else {
            attrs.insert(key.into(), value);
        }
        let json = attrs_json(&attrs);
        inner.inv.append(&set_line(cloud, &id, &json))?;
        inner.store.records += 1;
        inner.store.apply_set(cloud, &id, json.into_boxed_str());
        Ok(())
    }

    /// Empties the inventory. Ids handed out before are never reused.
    pub fn reset(&self) -> Result<(), SandboxError> {
        let mut inner = self.lock();
        // Keep the id sequence of whatever is on disk now.
        let _ = inner.sync();
        let mut store = Store::new(inner.store.salt, inner.store.next_seq);
        inner.inv.rewrite(&mut store)?;
        inner.store = store;
        crate::reservations::reset(&self.dir)
    }

    /// Empties the inventory in `dir` without opening it: the way out of a
    /// corrupt inventory, which [`SandboxCloud::open`] refuses. A cloud open
    /// on `dir` in this or another process sees the reset on its next call.
    pub fn reset_dir(dir: &Path) -> Result<(), SandboxError> {
        crate::inventory::reset_dir(dir)?;
        crate::reservations::reset(dir)
    }
}

impl std::fmt::Debug for SandboxCloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxCloud")
            .field("dir", &self.dir)
            .field("faults", &self.faults)
            .field("api_calls", &self.api_calls())
            .finish()
    }
}

/// How a spot instance's stored attributes say so (compact JSON).
const SPOT: &str = "\"pricing\":\"spot\"";

/// Detaches the volumes attached to instance `id`, then deletes it: what a
/// cloud's spot reclaim leaves (the volumes are kept, available).
fn reclaim(inner: &mut Inner, cloud: Cloud, id: &str) -> Result<(), SandboxError> {
    let attached: Vec<(Box<str>, Attrs)> = inner
        .store
        .cloud(cloud)
        .by_id
        .iter()
        .filter(|(_, e)| e.kind == ResourceKind::Volume)
        .filter_map(|(vid, e)| {
            let attrs = e.attrs();
            (attrs.get(attr::ATTACHED_TO).and_then(|a| a.as_str()) == Some(id))
                .then(|| (vid.clone(), attrs))
        })
        .collect();
    for (vid, mut attrs) in attached {
        attrs.insert(attr::ATTACHED_TO.into(), serde_json::Value::Null);
        let json = attrs_json(&attrs);
        inner.inv.append(&set_line(cloud, &vid, &json))?;
        inner.store.records += 1;
        inner.store.apply_set(cloud, &vid, json.into_boxed_str());
    }
    inner.inv.append(&delete_line(cloud, id))?;
    inner.store.records += 1;
    inner.store.apply_delete(cloud, id);
    Ok(())
}

pub(crate) fn attrs_json(attrs: &Attrs) -> String {
    // A map of strings to JSON values always serializes.
    serde_json::to_string(attrs).unwrap_or_else(|_| String::from("{}"))
}

impl Inner {
    /// Catches up with changes another process made to the log (a
    /// behind-the-back command, or the next gpuform command while this
    /// process keeps its cloud open): one `stat` per call, a replay only
    /// when the file changed.
    pub fn sync(&mut self) -> Result<(), SandboxError> {
        if !self.inv.changed_on_disk() {
            return Ok(());
        }
        let dir = self
            .inv
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let (inv, store) = Inventory::open(&dir)?;
        self.inv = inv;
        self.store = store;
        Ok(())
    }

    fn resolve(&self, what: &str) -> Result<(Cloud, String), SandboxError> {
        let mut found: Vec<(Cloud, String)> = Cloud::ALL
            .into_iter()
            .filter(|c| self.store.get(*c, what).is_some())
            .map(|c| (c, what.to_string()))
            .collect();
        if found.is_empty() {
            if let Some(list) = self.store.by_address.get(what) {
                found = list.iter().map(|(c, id)| (*c, id.to_string())).collect();
            }
        }
        match found.len() {
            0 => Err(SandboxError::NotFound(what.to_string())),
            1 => Ok(found.remove(0)),
            _ => Err(SandboxError::Ambiguous {
                what: what.to_string(),
                matches: found
                    .iter()
                    .map(|(c, id)| format!("{id} (sandbox({c}))"))
                    .collect(),
            }),
        }
    }

    pub fn resource(&self, cloud: Cloud, id: &str) -> Option<SandboxResource> {
        let cs = self.store.cloud(cloud);
        let e = cs.by_id.get(id)?;
        let attrs = cs.reported_attrs(e, e.attrs());
        Some(SandboxResource {
            cloud,
            kind: e.kind,
            id: id.to_string(),
            region: e.region.to_string(),
            tags: e.tags(&attrs),
            attrs,
            token: e.token.to_string(),
        })
    }
}
