//! Capacity Blocks for ML, as EC2 sells them
//! (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html):
//! offerings for an instance type, a count and a length, starting on a
//! day; bought once (PurchaseCapacityBlock takes no idempotency token, so
//! the sandbox dedupes nothing), never cancelled; a bought block is a
//! capacity reservation with a window that instances launch into.
//!
//! A block starts at 11:30 UTC on its first day and ends at 11:30 UTC
//! (EC2: "All Capacity Blocks end at 11:30AM UTC"); one whose first day is
//! today starts at once, so the sandbox (whose clock is the pinned day at
//! 00:00) can launch into it the day it is bought. Offerings reach 8 weeks
//! ahead, as EC2's do. The price is the catalog's on-demand price of the
//! type for every instance-hour, paid up front.
//!
//! Bought blocks are inventory entries of kind `block` (tags, token,
//! window in their attributes): read by id, listed as owned by their tags
//! until they expire (so a lost state adopts one instead of buying again),
//! found by the token their purchase was tagged with before a retry buys
//! (see [`SandboxProvider::create`](crate::provider)), never deleted.

use crate::checks;
use crate::cloud::{attrs_json, Inner};
use crate::ids::make_id;
use crate::store::CreateRec;
use gpuform_catalog::{Catalog, Day, PricingModel};
use gpuform_provider::capacity::block_attr as a;
use gpuform_provider::{
    BlockOffering, BlockQuery, BlockSpec, Cloud, Create, ErrorKind, ObservedResource,
    ProviderError, Result,
};
use serde_json::json;

/// How far ahead offerings reach: EC2 sells blocks up to 8 weeks in advance
/// (capacity-blocks-purchase.html).
const MAX_DAYS_AHEAD: i64 = 56;

/// 11:30 UTC, when blocks start and end.
const BLOCK_TIME: &str = "T11:30:00Z";

/// The offerings that `q` asks for in `region` on `today` (one per zone
/// that sells the type, in the catalog's zone order).
pub(crate) fn offerings(
    cloud: Cloud,
    region: &str,
    q: &BlockQuery,
    today: Option<Day>,
) -> Result<Vec<BlockOffering>> {
    let ty = checks::instance_type(cloud, &q.instance_type)?;
    let reg = checks::region(cloud, region)?;
    let first = Day::parse_iso(&q.start_day).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("StartDateRange `{}` is not a date", q.start_day),
        )
        .with_code("InvalidParameterValue")
    })?;
    if q.count == 0 || q.hours == 0 || !q.hours.is_multiple_of(24) {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "no Capacity Block of {} instance(s) for {} hours (1-day steps)",
                q.count, q.hours
            ),
        )
        .with_code("InvalidParameterValue"));
    }
    if let Some(t) = today {
        if first < t || first.0 - t.0 > MAX_DAYS_AHEAD {
            return Ok(Vec::new());
        }
    }
    let Some(price) = Catalog::builtin()
        .offering(cloud, region, &ty.name)
        .and_then(|o| o.prices.get(&PricingModel::OnDemand))
    else {
        return Ok(Vec::new());
    };
    let start = if today == Some(first) {
        format!("{first}T00:00:00Z")
    } else {
        format!("{first}{BLOCK_TIME}")
    };
    let end = format!("{}{BLOCK_TIME}", Day(first.0 + i64::from(q.hours / 24)));
    let upfront = price.hourly_usd(1.0) * f64::from(q.hours) * f64::from(q.count);
    let upfront = (upfront * 100.0).round() / 100.0;
    Ok(reg
        .zones
        .iter()
        .filter(|z| checks::offered(cloud, region, z, &ty.name).is_ok())
        .enumerate()
        .map(|(i, zone)| BlockOffering {
            id: format!(
                "cb-{:017x}",
                (first.0 as u64) << 12 | (i as u64) << 8 | u64::from(q.count)
            ),
            instance_type: ty.name.clone(),
            zone: zone.clone(),
            count: q.count,
            start: start.clone(),
            end: end.clone(),
            hours: q.hours,
            upfront_usd: upfront,
        })
        .collect())
}

/// The block bought with `token` (DescribeCapacityReservations filtered on
/// the token tag), when there is one.
pub(crate) fn tagged(
    inner: &Inner,
    cloud: Cloud,
    region: &str,
    token: &str,
) -> Option<ObservedResource> {
    if token.is_empty() {
        return None;
    }
    let cs = inner.store.cloud(cloud);
    cs.by_id
        .iter()
        .filter(|(_, e)| e.kind == gpuform_provider::ResourceKind::Block)
        .filter(|(_, e)| *e.region == *region && *e.token == *token)
        .map(|(id, e)| cs.observe(id, e))
        .next()
}

/// PurchaseCapacityBlock of `offering`, tagged with the request's ownership
/// tags; nothing dedupes it.
pub(crate) fn purchase(
    inner: &mut Inner,
    cloud: Cloud,
    req: &Create<BlockSpec>,
    offering: &BlockOffering,
) -> Result<ObservedResource> {
    let seq = inner.store.next_seq;
    let id = make_id(
        cloud,
        gpuform_provider::ResourceKind::Block,
        seq,
        inner.store.salt,
    );
    let attrs: gpuform_provider::Attrs = [
        (a::INSTANCE_TYPE, json!(offering.instance_type)),
        (a::COUNT, json!(offering.count)),
        (a::ZONE, json!(offering.zone)),
        (a::START_DAY, json!(req.spec.query.start_day)),
        (a::HOURS, json!(offering.hours)),
        (a::START, json!(offering.start)),
        (a::END, json!(offering.end)),
        (a::UPFRONT_USD, json!(offering.upfront_usd)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let json = attrs_json(&attrs);
    let o = &req.ownership;
    let rec = CreateRec {
        seq,
        cloud,
        kind: gpuform_provider::ResourceKind::Block,
        id,
        region: req.scope.region.clone(),
        zone: Some(offering.zone.clone()),
        gpus: 0,
        project: o.project.clone(),
        address: o.address.to_string(),
        token: o.token.clone(),
        lineage: o.lineage.clone(),
        workspace: o.workspace.clone(),
        refs: Default::default(),
        attrs: None,
    };
    crate::create::append(inner, &rec, json)
}

/// EC2's `State` of a block on `today` (the sandbox's clock: the pinned
/// day at 00:00 UTC): `scheduled` before its start, `active` until its
/// end, then `expired`. Instants of one format compare as text.
pub(crate) fn state(attrs: &gpuform_provider::Attrs, today: Option<Day>) -> &'static str {
    let Some(now) = today.map(|t| format!("{t}T00:00:00Z")) else {
        return "active";
    };
    let at = |k: &str| attrs.get(k).and_then(|v| v.as_str()).map(str::to_string);
    match (at(a::START), at(a::END)) {
        (_, Some(end)) if now >= end => "expired",
        (Some(start), _) if now < start => "scheduled",
        _ => "active",
    }
}
