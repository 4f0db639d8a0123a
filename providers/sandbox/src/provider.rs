//! `Provider` for the sandbox: one mirrored cloud's calls, each under the
//! fault injection of [`SandboxCloud::begin`] and counted like the cloud's
//! API calls (pages included).
//!
//! Why `Provider` and not `CloudDriver`: the driver's blanket `Provider`
//! reads a resource before and after every update and calls once per kind
//! of change, where the sandbox makes one call; `crash_after=N`, `latency`
//! and the crash tests count calls, and would shift. What the blanket impl
//! does once for every cloud is done here with the same functions
//! ([`UserTags::parse`], [`Desired::parse`], [`ChangeSet::parse`]), before
//! any call as on the clouds, so a bad request gets the same message on
//! the sandbox as on every cloud; the mirrored cloud's reserved tag
//! prefixes apply as they do there.

use crate::blocks;
use crate::cloud::{burst_of, Inner, SandboxCloud};
use crate::create::create;
use crate::existing::{delete, own, update};
use crate::reservations;
use gpuform_provider::attr;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{
    Attachment, Attrs, BlockOffering, BlockQuery, BlockSpec, ChangeSet, Cloud, Create,
    CreateRequest, Desired, ErrorKind, ExistingResource, Inventory, InventoryApi,
    InventoryInstance, InventoryVolume, ObservedResource, OwnershipTags, Provider, ProviderError,
    QuotaMarket, QuotaReading, Reservation, ReservationFilter, ResourceKind, Scope, UserTags,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// Results per page of `read` and `list_owned`; each page is one API call.
pub const PAGE_SIZE: usize = 1000;

/// A provider that mirrors one cloud.
pub(crate) struct SandboxProvider {
    sandbox: Arc<SandboxCloud>,
    cloud: Cloud,
}

impl SandboxProvider {
    pub fn new(sandbox: Arc<SandboxCloud>, cloud: Cloud) -> Self {
        SandboxProvider { sandbox, cloud }
    }

    async fn latency(&self, calls: u64) {
        let l = self.sandbox.faults.latency;
        if !l.is_zero() && calls > 0 {
            tokio::time::sleep(l.saturating_mul(u32::try_from(calls).unwrap_or(u32::MAX))).await;
        }
    }

    /// Runs one operation of `pages` calls under the lock: faults first,
    /// then `op`, then the crash point.
    fn run<T>(
        &self,
        inner: &mut Inner,
        pages: u64,
        op: impl FnOnce(&mut Inner) -> Result<T>,
    ) -> Result<T> {
        let (call, check) = self.sandbox.begin(inner, self.cloud, pages);
        let result = check.and_then(|()| op(inner));
        self.sandbox.end(&call);
        result.map_err(|e| e.with_request_id(call.request_id))
    }

    /// One operation of `pages` calls: their latency, then [`Self::run`].
    async fn call<T>(
        &self,
        pages: u64,
        op: impl FnOnce(&mut Inner) -> Result<T> + Send,
    ) -> Result<T> {
        self.latency(pages).await;
        let mut inner = self.sandbox.lock();
        self.run(&mut inner, pages, op)
    }

    /// A listing, whose calls depend on what it finds: under the lock it
    /// catches up with other processes, `find` answers what is there and
    /// how many pages that is, and it runs as that many calls
    /// ([`Self::run`]); their latency is paid once the lock is released.
    async fn listing<T: Send>(&self, find: impl FnOnce(&Inner) -> (T, u64) + Send) -> Result<T> {
        let (found, pages) = {
            let mut inner = self.sandbox.lock();
            let _ = inner.sync();
            let (found, pages) = find(&inner);
            (self.run(&mut inner, pages, |_| Ok(found)), pages)
        };
        let found = found?;
        self.latency(pages).await;
        Ok(found)
    }
}

/// A tag as the mirrored cloud names it. Its reserved prefixes (and
/// gpuform's) are refused by `UserTags::parse` as on every cloud; the cloud
/// crates' own naming rules (`CloudDriver::check_tag`: lengths, alphabets)
/// are theirs, not the sandbox's.
fn tag_rules(_key: &str, _value: &str) -> Result<(), String> {
    Ok(())
}

/// The second call of a two-call create, when the first left it to do
/// (AttachVolume, AuthorizeSecurityGroupIngress): its changes, as given and
/// as read.
fn second_call(
    req: &CreateRequest,
    want: &Desired,
    made: &ObservedResource,
) -> Option<(Attrs, ChangeSet)> {
    let (key, value, set) = match want {
        Desired::Volume(c) => {
            let instance = c.spec.instance.as_ref()?;
            let set = ChangeSet {
                attachment: Some(Attachment::To(instance.clone())),
                ..ChangeSet::default()
            };
            (attr::ATTACHED_TO, Value::String(instance.clone()), set)
        }
        Desired::Firewall(c) if c.spec.bare => return None,
        Desired::Firewall(c) => {
            let rules = req.attrs.get(attr::INGRESS).cloned().unwrap_or(json!([]));
            let set = ChangeSet {
                ingress: Some(c.spec.ingress.clone()),
                ..ChangeSet::default()
            };
            (attr::INGRESS, rules, set)
        }
        _ => return None,
    };
    (made.attrs.get(key) != Some(&value))
        .then(|| ([(key.to_string(), value)].into_iter().collect(), set))
}

impl SandboxProvider {
    /// A Capacity Block, in the calls EC2 needs: the block tagged with this
    /// purchase's token (DescribeCapacityReservations, a tag filter), then
    /// the offerings (DescribeCapacityBlockOfferings), then
    /// PurchaseCapacityBlock, tagged. PurchaseCapacityBlock takes no
    /// idempotency token, so the look-up by tag before it is what keeps a
    /// retry after a lost answer, or after a kill, from buying twice.
    async fn buy_block(&self, c: &Create<BlockSpec>) -> Result<ObservedResource> {
        let region = c.scope.region.clone();
        let token = c.ownership.token.clone();
        let found = self
            .listing(|inner| (blocks::tagged(inner, self.cloud, &region, &token), 1))
            .await?;
        if let Some(made) = found {
            return Ok(made);
        }
        let offers = self.block_offerings(&c.scope, &c.spec.query).await?;
        // The offering the plan showed: its zone and window.
        let Some(offer) = offers
            .into_iter()
            .find(|o| o.fits(&c.spec.query) && o.zone == c.spec.zone && o.end == c.spec.end)
        else {
            return Err(ProviderError::new(
                ErrorKind::Capacity,
                format!(
                    "no Capacity Block offering of {} x {} for {} hours from {} in {} is left",
                    c.spec.query.count,
                    c.spec.query.instance_type,
                    c.spec.query.hours,
                    c.spec.query.start_day,
                    c.spec.zone
                ),
            ));
        };
        self.call(1, |inner| blocks::purchase(inner, self.cloud, c, &offer))
            .await
    }
}

fn pages_for(n: usize) -> u64 {
    n.div_ceil(PAGE_SIZE).max(1) as u64
}

#[async_trait::async_trait]
impl Provider for SandboxProvider {
    fn cloud(&self) -> Cloud {
        self.cloud
    }

    fn label(&self) -> String {
        format!("sandbox({})", self.cloud)
    }

    fn rate_limit(&self) -> RateLimit {
        match self.sandbox.faults.rate_per_second {
            Some(r) => RateLimit {
                per_second: r,
                burst: burst_of(r),
            },
            None => RateLimit {
                per_second: 100_000.0,
                burst: 10_000,
            },
        }
    }

    /// Volumes and firewalls are made in two calls, as on the clouds
    /// (CreateVolume + AttachVolume, CreateSecurityGroup +
    /// AuthorizeSecurityGroupIngress), so a crash between them leaves what
    /// a real cloud would: a detached volume, a group without rules. A
    /// retry with the same token finds the resource and does the rest.
    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource> {
        let tags = UserTags::parse(req.attrs.get(attr::TAGS), self.cloud, tag_rules)?;
        let want = Desired::parse(req, tags.clone())?;
        if let Desired::Block(c) = &want {
            return self.buy_block(c).await;
        }
        let faults = &self.sandbox.faults;
        let dir = self.sandbox.dir();
        let today = self.sandbox.today();
        let made = self
            .call(1, |inner| {
                // A launch into a reservation is checked against it first
                // (a retry of one already made is not counted twice).
                if let Desired::Instance(c) = &want {
                    let made_before = inner
                        .store
                        .cloud(self.cloud)
                        .by_token
                        .contains_key(req.ownership.token.as_str());
                    if let (Some(id), false) = (&c.spec.capacity_reservation, made_before) {
                        let at = (
                            id.as_str(),
                            c.spec.instance_type.as_str(),
                            c.spec.zone.as_deref().unwrap_or(""),
                        );
                        reservations::admit(
                            dir,
                            inner,
                            (self.cloud, &req.scope.region),
                            at,
                            today,
                        )?;
                    }
                }
                create(inner, self.cloud, faults, req, (&want, &tags))
            })
            .await?;
        // What the provider then waits out on the cloud (`boot=`, `disk=`):
        // an instance going to running, a new disk becoming available.
        let ready = match &want {
            Desired::Instance(_) => faults.boot,
            Desired::Volume(_) => faults.disk,
            _ => std::time::Duration::ZERO,
        };
        if !ready.is_zero() {
            tokio::time::sleep(ready).await;
        }
        let Some((changes, set)) = second_call(req, &want, &made) else {
            return Ok(made);
        };
        self.call(1, |inner| {
            update(
                inner,
                self.cloud,
                &req.scope,
                (req.kind, &made.id),
                (&set, &changes),
            )
        })
        .await
    }

    /// The `quota=` fault of the instance type's group, usage counted from
    /// the inventory; one call, as the clouds' quota reads are. A group
    /// without a `quota=` is not asked about (`None`), so plans without
    /// quota faults make no extra call (crash tests count calls).
    async fn quota(
        &self,
        scope: &Scope,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        let faults = &self.sandbox.faults;
        let ty = crate::checks::instance_type(self.cloud, itype)?;
        if faults
            .quota_for(crate::quota::group(self.cloud, ty), &scope.region)
            .is_none()
        {
            return Ok(None);
        }
        self.call(1, |inner| {
            crate::quota::reading(inner, self.cloud, faults, &scope.region, ty, market)
        })
        .await
    }

    /// DescribeCapacityBlockOfferings: one call.
    async fn block_offerings(&self, scope: &Scope, q: &BlockQuery) -> Result<Vec<BlockOffering>> {
        let today = self.sandbox.today();
        self.call(1, |_| {
            blocks::offerings(self.cloud, &scope.region, q, today)
        })
        .await
    }

    /// DescribeCapacityReservations: one call.
    async fn reservations(
        &self,
        scope: &Scope,
        filter: &ReservationFilter,
    ) -> Result<Vec<Reservation>> {
        let dir = self.sandbox.dir();
        let today = self.sandbox.today();
        self.listing(|inner| {
            let found = reservations::find(dir, inner, (self.cloud, &scope.region), filter, today);
            (found, 1)
        })
        .await?
    }

    /// Every bucket of the region, a page per [`PAGE_SIZE`] buckets (as
    /// S3's ListBuckets pages), counted as calls; `object_count` and
    /// `size_bytes` as `gpuform sandbox set` left them.
    async fn list_all_buckets(&self, scope: &Scope) -> Result<Vec<ObservedResource>> {
        self.listing(|inner| {
            let cs = inner.store.cloud(self.cloud);
            let mut out: Vec<ObservedResource> = cs
                .owned
                .get(scope.region.as_str())
                .into_iter()
                .flat_map(|projects| projects.values().flatten())
                .filter_map(|id| {
                    let e = cs.by_id.get(id)?;
                    (e.kind == ResourceKind::Bucket).then(|| cs.observe(id, e))
                })
                .collect();
            out.sort_by(|a, b| a.id.cmp(&b.id));
            let pages = pages_for(out.len());
            (out, pages)
        })
        .await
    }

    async fn read(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>> {
        self.call(pages_for(ids.len()), |inner| {
            let cs = inner.store.cloud(self.cloud);
            Ok(ids
                .iter()
                .filter_map(|id| {
                    let e = cs.by_id.get(id.as_str())?;
                    (e.kind == kind && *e.region == *scope.region).then(|| cs.observe(id, e))
                })
                .collect())
        })
        .await
    }

    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>> {
        let today = self.sandbox.today();
        self.listing(|inner| {
            let cs = inner.store.cloud(self.cloud);
            let ids = owned_ids(inner, self.cloud, scope, project);
            let pages = pages_for(ids.map_or(0, |s| s.len()));
            // Blocks are listed by their tags like the rest (on EC2, a
            // DescribeCapacityReservations filtered on the project tag), so
            // a lost state adopts a bought block instead of buying another;
            // an expired one holds nothing to adopt.
            let found = ids
                .into_iter()
                .flatten()
                .filter_map(|id| cs.by_id.get(id).map(|e| (id, e)))
                .map(|(id, e)| cs.observe(id, e))
                .filter(|o| {
                    o.kind != ResourceKind::Block || blocks::state(&o.attrs, today) != "expired"
                })
                .collect();
            (found, pages)
        })
        .await
    }

    async fn update(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
        changes: &Attrs,
    ) -> Result<ObservedResource> {
        let set = ChangeSet::parse(kind, changes, self.cloud, tag_rules)?;
        self.call(1, |inner| {
            update(inner, self.cloud, scope, (kind, id), (&set, changes))
        })
        .await
    }

    async fn delete(&self, scope: &Scope, kind: ResourceKind, id: &str) -> Result<()> {
        if kind == ResourceKind::Block {
            // No call cancels a block: it stays the account's until its end.
            return Ok(());
        }
        self.call(1, |inner| delete(inner, self.cloud, scope, kind, id))
            .await
    }

    async fn set_ownership(
        &self,
        resource: ExistingResource<'_>,
        ownership: &OwnershipTags,
    ) -> Result<()> {
        self.call(1, |inner| own(inner, self.cloud, resource, ownership))
            .await
    }
}

fn owned_ids<'a>(
    inner: &'a Inner,
    cloud: Cloud,
    scope: &Scope,
    project: &str,
) -> Option<&'a std::collections::BTreeSet<Box<str>>> {
    inner
        .store
        .cloud(cloud)
        .owned
        .get(scope.region.as_str())?
        .get(project)
}

/// Everything in a region (`gpuform audit`): two listings, instances and
/// volumes, each a page per [`PAGE_SIZE`] resources and counted as calls. An
/// instance runs unless `gpuform sandbox set` gave it a `status`
/// (`stopped`); a `launch_time` set the same way is reported as is.
#[async_trait::async_trait]
impl InventoryApi for SandboxProvider {
    async fn inventory(&self, scope: &Scope) -> Result<Inventory> {
        self.listing(|inner| {
            let cs = inner.store.cloud(self.cloud);
            let mut instances = Vec::new();
            let mut volumes = Vec::new();
            let ids = cs
                .owned
                .get(scope.region.as_str())
                .into_iter()
                .flat_map(|projects| projects.values().flatten());
            for id in ids {
                let Some(e) = cs.by_id.get(id) else { continue };
                match e.kind {
                    ResourceKind::Instance => instances.push(cs.observe(id, e)),
                    ResourceKind::Volume => volumes.push(cs.observe(id, e)),
                    _ => {}
                }
            }
            let pages = pages_for(instances.len()) + pages_for(volumes.len());
            let mut out = Inventory::default();
            // What each instance uses, from its references (as
            // DescribeInstances' SubnetId, VpcId, SecurityGroups, Placement
            // and BlockDeviceMappings say).
            let mut data_volumes: std::collections::BTreeMap<String, Vec<String>> =
                Default::default();
            for v in &volumes {
                if let Some(Value::String(i)) = v.attrs.get(attr::ATTACHED_TO) {
                    data_volumes
                        .entry(i.clone())
                        .or_default()
                        .push(v.id.clone());
                }
            }
            for mut o in instances {
                let text = |k: &str| o.attrs.get(k).and_then(Value::as_str).map(String::from);
                if let Some(s) = text("status") {
                    o.status = s;
                }
                let launch = text("launch_time");
                let disk = o.attrs.get(attr::ROOT_GB).and_then(Value::as_u64);
                let mut inst = InventoryInstance::from_observed(&o, launch, disk);
                if let Some(e) = cs.by_id.get(o.id.as_str()) {
                    for role in ["subnet", "placement"] {
                        if let Some(id) = e.ref_of(role) {
                            inst.uses.insert(role.to_string(), id.to_string());
                        }
                    }
                    let network = e
                        .ref_of("subnet")
                        .and_then(|s| cs.by_id.get(s))
                        .and_then(|s| s.ref_of("network"));
                    if let Some(n) = network {
                        inst.uses.insert("network".to_string(), n.to_string());
                    }
                    inst.firewalls
                        .extend(e.ref_of("firewall").map(str::to_string));
                }
                inst.data_volumes = data_volumes.remove(&o.id).unwrap_or_default();
                out.instances.push(inst);
            }
            out.volumes.extend(
                volumes
                    .iter()
                    .filter(|v| v.attrs.get(attr::ATTACHED_TO).is_none_or(Value::is_null))
                    .map(InventoryVolume::from_observed),
            );
            out.instances.sort_by(|a, b| a.id.cmp(&b.id));
            out.volumes.sort_by(|a, b| a.id.cmp(&b.id));
            (out, pages)
        })
        .await
    }
}
