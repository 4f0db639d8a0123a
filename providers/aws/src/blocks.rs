//! EC2 Capacity Blocks for ML: offerings (DescribeCapacityBlockOfferings),
//! the purchase (PurchaseCapacityBlock) and a bought block read back as
//! the capacity reservation it is (DescribeCapacityReservations).
//!
//! PurchaseCapacityBlock takes no ClientToken
//! (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_PurchaseCapacityBlock.html):
//! the purchase is tagged with the ownership tags (TagSpecification.N,
//! resource type `capacity-reservation`), and before every purchase the
//! block carrying this create's token is looked for by tag, so a retry
//! after a lost answer or a kill finds the block instead of buying another.

use crate::client::filter;
use crate::errors::{sent, Op};
use crate::tags::{creation_tags, ownership, tag_spec, tag_value};
use crate::AwsProvider;
use aws_sdk_ec2::primitives::{DateTime, DateTimeFormat};
use aws_sdk_ec2::types::{
    CapacityReservation, CapacityReservationInstancePlatform, CapacityReservationState,
    CapacityReservationType, Filter, ResourceType,
};
use aws_sdk_ec2::Client;
use gpuform_provider::capacity::block_attr as a;
use gpuform_provider::{
    Attrs, BlockOffering, BlockQuery, BlockSpec, Create, ErrorKind, ObservedResource,
    OwnershipTags, ProviderError, ResourceKind, Result, Scope,
};
use serde_json::json;

fn instant(d: Option<&DateTime>) -> String {
    d.and_then(|d| d.fmt(DateTimeFormat::DateTime).ok())
        .map(|s| match s.split_once('.') {
            // Whole seconds, as gpuform writes instants.
            Some((whole, _)) => format!("{whole}Z"),
            None => s,
        })
        .unwrap_or_default()
}

/// DescribeCapacityBlockOfferings for `q`: offerings that start on its
/// first day (StartDateRange is the earliest start, EndDateRange the
/// latest end:
/// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockOfferings.html).
pub(crate) async fn offerings(c: &Client, q: &BlockQuery) -> Result<Vec<BlockOffering>> {
    let first = DateTime::from_str(
        &format!("{}T00:00:00Z", q.start_day),
        DateTimeFormat::DateTime,
    )
    .map_err(|_| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("`{}` is not a date", q.start_day),
        )
    })?;
    // A block starting by the end of its first day ends by then plus its length.
    let last_start = first.secs() + 86_400 - 1;
    let request = c
        .describe_capacity_block_offerings()
        .instance_type(&q.instance_type)
        .instance_count(q.count as i32)
        .capacity_duration_hours(q.hours as i32)
        .start_date_range(first)
        .end_date_range(DateTime::from_secs(last_start + i64::from(q.hours) * 3600));
    let out = sent("DescribeCapacityBlockOfferings", Op::Other, request.send()).await?;
    Ok(out
        .capacity_block_offerings()
        .iter()
        // Priced in USD (the only currency EC2 quotes them in today).
        .filter(|o| o.currency_code().is_none_or(|c| c == "USD"))
        .map(|o| BlockOffering {
            id: o
                .capacity_block_offering_id()
                .unwrap_or_default()
                .to_string(),
            instance_type: o.instance_type().unwrap_or_default().to_string(),
            zone: o.availability_zone().unwrap_or_default().to_string(),
            count: o.instance_count().unwrap_or(0).max(0) as u32,
            start: instant(o.start_date()),
            end: instant(o.end_date()),
            hours: o.capacity_block_duration_hours().unwrap_or(0).max(0) as u32,
            upfront_usd: o
                .upfront_fee()
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0),
        })
        .collect())
}

/// A bought block as gpuform observes it.
fn observe(r: &CapacityReservation, region: &str) -> ObservedResource {
    let tags = r.tags();
    let mut attrs = Attrs::new();
    attrs.insert(
        a::INSTANCE_TYPE.into(),
        json!(r.instance_type().unwrap_or_default()),
    );
    attrs.insert(
        a::ZONE.into(),
        json!(r.availability_zone().unwrap_or_default()),
    );
    attrs.insert(
        a::COUNT.into(),
        json!(r.total_instance_count().unwrap_or(0).max(0)),
    );
    attrs.insert(a::START.into(), json!(instant(r.start_date())));
    attrs.insert(a::END.into(), json!(instant(r.end_date())));
    ObservedResource {
        kind: ResourceKind::Block,
        id: r.capacity_reservation_id().unwrap_or_default().to_string(),
        region: region.to_string(),
        ownership: ownership(tags),
        attrs,
        status: r
            .state()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
    }
}

/// The blocks among `reservations`, observed.
fn blocks<'a>(
    reservations: &'a [CapacityReservation],
    region: &'a str,
) -> impl Iterator<Item = ObservedResource> + 'a {
    reservations
        .iter()
        .filter(|r| r.reservation_type() == Some(&CapacityReservationType::CapacityBlock))
        .map(move |r| observe(r, region))
}

/// Every page of DescribeCapacityReservations with these filters.
async fn describe(c: &Client, filters: Vec<Filter>) -> Result<Vec<CapacityReservation>> {
    let mut out = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let request = c
            .describe_capacity_reservations()
            .set_filters((!filters.is_empty()).then(|| filters.clone()))
            .set_next_token(next.take());
        let page = sent("DescribeCapacityReservations", Op::Other, request.send()).await?;
        out.extend(page.capacity_reservations().iter().cloned());
        match page.next_token() {
            Some(t) if !t.is_empty() => next = Some(t.to_string()),
            _ => return Ok(out),
        }
    }
}

/// These blocks by id. EC2 has no id filter for reservations, and its
/// `CapacityReservationId.N` fails the whole call on one unknown id: the
/// account's reservations are listed and picked, so a gone block is absent.
pub(crate) async fn read(
    c: &Client,
    region: &str,
    ids: &[String],
) -> Result<Vec<ObservedResource>> {
    let all = describe(c, Vec::new()).await?;
    Ok(blocks(&all, region)
        .filter(|o| ids.contains(&o.id))
        .collect())
}

/// The blocks tagged with this project, for refresh (`list_owned`): a
/// state lost after a purchase adopts its block instead of buying another.
pub(crate) async fn owned(
    c: &Client,
    region: &str,
    project: &str,
) -> Result<Vec<ObservedResource>> {
    let tagged = describe(
        c,
        vec![filter(
            &format!("tag:{}", OwnershipTags::PROJECT),
            [project.to_string()],
        )],
    )
    .await?;
    // An expired or cancelled block holds nothing to adopt.
    let holds = |r: &&CapacityReservation| {
        !matches!(
            r.state(),
            Some(CapacityReservationState::Expired | CapacityReservationState::Cancelled)
        )
    };
    let live: Vec<CapacityReservation> = tagged.iter().filter(holds).cloned().collect();
    Ok(blocks(&live, region).collect())
}

/// The block an earlier attempt of this create bought: tagged with its token.
async fn tagged(c: &Client, region: &str, token: &str) -> Result<Option<ObservedResource>> {
    let found = describe(
        c,
        vec![filter(
            &format!("tag:{}", OwnershipTags::TOKEN),
            [token.to_string()],
        )],
    )
    .await?;
    Ok(found
        .iter()
        .find(|r| tag_value(r.tags(), OwnershipTags::TOKEN) == Some(token))
        .map(|r| observe(r, region)))
}

impl AwsProvider {
    pub(crate) async fn buy_block(&self, req: &Create<BlockSpec>) -> Result<ObservedResource> {
        let c = self.client(&req.scope)?;
        let region = req.scope.region.as_str();
        if let Some(found) = tagged(&c, region, &req.ownership.token).await? {
            return Ok(found);
        }
        let q = &req.spec.query;
        let offer = offerings(&c, q)
            .await?
            .into_iter()
            .find(|o| o.fits(q) && o.zone == req.spec.zone && o.end == req.spec.end)
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Capacity,
                    format!(
                        "no Capacity Block offering of {} x {} for {} hours from {} in {} is left",
                        q.count, q.instance_type, q.hours, q.start_day, req.spec.zone
                    ),
                )
            })?;
        let tags = creation_tags(&req.ownership, "block", &[], &req.tags);
        let request = c
            .purchase_capacity_block()
            .capacity_block_offering_id(&offer.id)
            .instance_platform(CapacityReservationInstancePlatform::LinuxUnix)
            .tag_specifications(tag_spec(ResourceType::CapacityReservation, &tags));
        let out = sent("PurchaseCapacityBlock", Op::Create, request.send()).await?;
        let r = out.capacity_reservation().ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Transient,
                "PurchaseCapacityBlock answered without its capacity reservation",
            )
        })?;
        let mut o = observe(r, region);
        o.attrs
            .insert(a::UPFRONT_USD.into(), json!(offer.upfront_usd));
        Ok(o)
    }

    pub(crate) async fn offer_blocks(
        &self,
        scope: &Scope,
        q: &BlockQuery,
    ) -> Result<Vec<BlockOffering>> {
        offerings(&self.client(scope)?, q).await
    }
}
