//! EC2 Capacity Blocks for ML, which moto lacks, as the EC2 API reference
//! and user guide document them, in the EC2 query protocol:
//!
//! - `DescribeCapacityBlockOfferings`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityBlockOfferings.html):
//!   `InstanceType`, `InstanceCount`, `CapacityDurationHours` (required),
//!   `StartDateRange` (the earliest start), `EndDateRange` (the latest
//!   end); answers `capacityBlockOfferingSet` of `CapacityBlockOffering`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityBlockOffering.html:
//!   `capacityBlockOfferingId`, `instanceType`, `availabilityZone`,
//!   `instanceCount`, `startDate`, `endDate`, `capacityBlockDurationHours`,
//!   `upfrontFee`, `currencyCode`, `tenancy`).
//! - `PurchaseCapacityBlock`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_PurchaseCapacityBlock.html):
//!   `CapacityBlockOfferingId`, `InstancePlatform` (required),
//!   `TagSpecification.N` (no client token: a second call buys a second
//!   block); answers the `capacityReservation` the block is, of
//!   `reservationType` `capacity-block`, which DescribeCapacityReservations
//!   then lists like any reservation.
//!
//! What the account can buy is what the test sells
//! ([`AwsCapacity::sell_blocks`](super::AwsCapacity::sell_blocks): type,
//! zones, price per instance-hour), and time is the test's pinned "now"
//! ([`AwsCapacity::set_now`](super::AwsCapacity::set_now)), never the wall
//! clock. From the user guide
//! (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html):
//! blocks last 1 to 14 days in 1-day steps, or up to 182 days in 7-day
//! steps; they are sold up to 8 weeks ahead; they start and end at 11:30
//! UTC, and one may start at once (here: an offering on today starts at
//! "now"). A block is `scheduled` before its start, `active` in its window
//! and `expired` after its end; a launch into it needs
//! `InstanceMarketOptions.MarketType=capacity-block` and an active block
//! (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html).

use super::reservations::{
    missing, param, tag_specifications, Book, CapacityReservation, Ec2Error, XMLNS,
};
use std::collections::BTreeMap;

/// How far ahead blocks are sold (user guide: up to 8 weeks).
const MAX_DAYS_AHEAD: i64 = 56;
/// Seconds after midnight UTC when blocks start and end (11:30).
const BLOCK_SECOND_OF_DAY: i64 = 11 * 3600 + 30 * 60;
const DAY: i64 = 86_400;

/// What the test makes the account able to buy.
#[derive(Debug, Clone)]
pub struct BlockStock {
    pub zones: Vec<String>,
    pub usd_per_instance_hour: f64,
}

/// One offering as described (kept so a purchase can name it).
#[derive(Debug, Clone)]
struct Offering {
    region: String,
    instance_type: String,
    zone: String,
    count: u32,
    start: i64,
    end: i64,
}

/// The offerings side of the stand-in: stock, the pinned clock, and every
/// offering it has described (by id).
#[derive(Debug, Default)]
pub struct Market {
    /// (region, instance type) → stock.
    pub(super) stock: BTreeMap<(String, String), BlockStock>,
    described: BTreeMap<String, Offering>,
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or a bare date).
pub(super) fn parse_instant(s: &str) -> Option<i64> {
    let (date, time) = s.split_once('T').unwrap_or((s, "00:00:00Z"));
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let date = time::Date::from_calendar_date(
        i32::try_from(y).ok()?,
        time::Month::try_from(u8::try_from(m).ok()?).ok()?,
        u8::try_from(day).ok()?,
    )
    .ok()?;
    let time = time.trim_end_matches('Z');
    let time = time.split_once('.').map_or(time, |(whole, _)| whole);
    let mut t = time.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, mi, se) = (t.next()??, t.next()??, t.next().flatten().unwrap_or(0));
    let days = i64::from(date.to_julian_day())
        - i64::from(
            time::Date::from_calendar_date(1970, time::Month::January, 1)
                .ok()?
                .to_julian_day(),
        );
    Some(days * DAY + h * 3600 + mi * 60 + se)
}

/// The instant as EC2 writes it: `YYYY-MM-DDTHH:MM:SS.000Z`.
pub(super) fn format_instant(secs: i64) -> String {
    let t =
        time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.000Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

fn invalid(message: String) -> Ec2Error {
    (400, "InvalidParameterValue", message)
}

/// The clock the test pinned, or an error naming the missing setup.
pub(super) fn pinned(now: Option<i64>) -> Result<i64, Ec2Error> {
    now.ok_or((
        500,
        "InternalError",
        "the stand-in's clock is not set: the test must call AwsCapacity::set_now".into(),
    ))
}

impl Market {
    /// DescribeCapacityBlockOfferings, derived from the request, the stock
    /// and `now` alone: one offering per zone and start day that fits.
    pub(super) fn describe(
        &mut self,
        region: &str,
        p: &[(String, String)],
        now: i64,
    ) -> Result<String, Ec2Error> {
        let it = param(p, "InstanceType").ok_or_else(|| missing("InstanceType"))?;
        let count: u32 = param(p, "InstanceCount")
            .ok_or_else(|| missing("InstanceCount"))?
            .parse()
            .ok()
            .filter(|n| (1..=64).contains(n))
            .ok_or_else(|| invalid("InstanceCount must be between 1 and 64".into()))?;
        let hours: u32 = param(p, "CapacityDurationHours")
            .ok_or_else(|| missing("CapacityDurationHours"))?
            .parse()
            .map_err(|_| invalid("CapacityDurationHours must be an integer".into()))?;
        let whole_days = hours > 0 && hours.is_multiple_of(24) && hours <= 14 * 24;
        let whole_weeks = hours > 14 * 24 && hours.is_multiple_of(7 * 24) && hours <= 182 * 24;
        if !(whole_days || whole_weeks) {
            return Err(invalid(format!(
                "CapacityDurationHours {hours} is not a Capacity Block duration (1 to 14 days in 1-day steps, or up to 182 days in 7-day steps)"
            )));
        }
        let date = |name: &str| match param(p, name) {
            None => Ok(None),
            Some(v) => parse_instant(v)
                .map(Some)
                .ok_or_else(|| invalid(format!("{name} `{v}` is not a timestamp"))),
        };
        let earliest = date("StartDateRange")?.unwrap_or(now).max(now);
        let latest_end = date("EndDateRange")?;
        let today = now.div_euclid(DAY);
        let mut items = String::new();
        if let Some(stock) = self
            .stock
            .get(&(region.to_string(), it.to_string()))
            .cloned()
        {
            for day in today..=today + MAX_DAYS_AHEAD {
                // One starting today starts at once; later ones at 11:30.
                let start = if day == today {
                    now
                } else {
                    day * DAY + BLOCK_SECOND_OF_DAY
                };
                let end = (day + i64::from(hours / 24)) * DAY + BLOCK_SECOND_OF_DAY;
                if start < earliest || latest_end.is_some_and(|l| end > l) {
                    continue;
                }
                for (z, zone) in stock.zones.iter().enumerate() {
                    let upfront =
                        (stock.usd_per_instance_hour * f64::from(hours) * f64::from(count) * 100.0)
                            .round()
                            / 100.0;
                    let id = format!(
                        "cb-{:017x}",
                        (day as u64) << 24
                            | (z as u64) << 16
                            | u64::from(hours) << 6
                            | u64::from(count)
                    );
                    let o = Offering {
                        region: region.to_string(),
                        instance_type: it.to_string(),
                        zone: zone.clone(),
                        count,
                        start,
                        end,
                    };
                    items.push_str(&format!(
                        "<item><capacityBlockOfferingId>{id}</capacityBlockOfferingId><instanceType>{it}</instanceType>\
<availabilityZone>{zone}</availabilityZone><instanceCount>{count}</instanceCount>\
<startDate>{}</startDate><endDate>{}</endDate><capacityBlockDurationHours>{hours}</capacityBlockDurationHours>\
<upfrontFee>{upfront:.2}</upfrontFee><currencyCode>USD</currencyCode><tenancy>default</tenancy></item>",
                        format_instant(start),
                        format_instant(end),
                    ));
                    self.described.insert(id, o);
                }
            }
        }
        Ok(format!(
            "<DescribeCapacityBlockOfferingsResponse xmlns=\"{XMLNS}\"><requestId>{}</requestId><capacityBlockOfferingSet>{items}</capacityBlockOfferingSet></DescribeCapacityBlockOfferingsResponse>",
            super::wire_errors::REQUEST_ID
        ))
    }

    /// PurchaseCapacityBlock: the offering becomes a capacity reservation
    /// of type `capacity-block` in `book`, tagged as asked.
    pub(super) fn purchase(
        &mut self,
        book: &mut Book,
        region: &str,
        p: &[(String, String)],
        now: i64,
    ) -> Result<String, Ec2Error> {
        let id = param(p, "CapacityBlockOfferingId")
            .ok_or_else(|| missing("CapacityBlockOfferingId"))?;
        let platform = param(p, "InstancePlatform").ok_or_else(|| missing("InstancePlatform"))?;
        let Some(o) = self
            .described
            .get(id)
            .filter(|o| o.region == region)
            .cloned()
        else {
            return Err(invalid(format!(
                "The Capacity Block offering ID '{id}' does not exist"
            )));
        };
        if o.start < now && o.start.div_euclid(DAY) < now.div_euclid(DAY) {
            return Err(invalid(format!(
                "The Capacity Block offering '{id}' is no longer available"
            )));
        }
        let tags = tag_specifications(p, "TagSpecification");
        let r = book.add(CapacityReservation {
            id: String::new(),
            region: region.to_string(),
            instance_type: o.instance_type.clone(),
            platform: platform.to_string(),
            zone: o.zone.clone(),
            total: o.count,
            state: String::new(),
            start: Some(format_instant(o.start)),
            end: Some(format_instant(o.end)),
            match_criteria: "targeted".into(),
            reservation_type: super::reservations::CAPACITY_BLOCK.into(),
            tags,
            instances: Vec::new(),
        });
        book.now = Some(now);
        book.tick();
        let r = &book.by_id[&r];
        Ok(format!(
            "<PurchaseCapacityBlockResponse xmlns=\"{XMLNS}\"><requestId>{}</requestId><capacityReservation>{}</capacityReservation></PurchaseCapacityBlockResponse>",
            super::wire_errors::REQUEST_ID,
            r.xml(super::ACCOUNT_ID)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(raw: &str) -> Vec<(String, String)> {
        crate::verify::text::query_pairs(raw).unwrap()
    }

    #[test]
    fn instants_read_and_write_as_ec2_writes_them() {
        let t = parse_instant("2026-11-29T11:30:00Z").unwrap();
        assert_eq!(format_instant(t), "2026-11-29T11:30:00.000Z");
        assert_eq!(parse_instant("2026-11-29T11:30:00.000Z"), Some(t));
        assert_eq!(parse_instant("2026-11-29"), Some(t - BLOCK_SECOND_OF_DAY));
        assert_eq!(parse_instant("1970-01-02T00:00:00Z"), Some(DAY));
        assert_eq!(parse_instant("2026-13-01T00:00:00Z"), None);
    }

    #[test]
    fn offerings_follow_the_request_and_the_pinned_clock_and_a_purchase_is_a_reservation() {
        let now = parse_instant("2026-11-29T00:00:00Z").unwrap();
        let mut m = Market::default();
        m.stock.insert(
            ("us-east-1".into(), "p4d.24xlarge".into()),
            BlockStock {
                zones: vec!["us-east-1b".into()],
                usd_per_instance_hour: 10.0,
            },
        );
        let q = "Action=DescribeCapacityBlockOfferings&InstanceType=p4d.24xlarge&InstanceCount=2&CapacityDurationHours=48&StartDateRange=2026-11-29T00%3A00%3A00Z&EndDateRange=2026-12-01T23%3A59%3A59Z";
        let xml = m.describe("us-east-1", &pairs(q), now).unwrap();
        // Only the block starting today fits an end by 2026-12-01.
        assert_eq!(xml.matches("<item>").count(), 1, "{xml}");
        assert!(xml.contains("<startDate>2026-11-29T00:00:00.000Z</startDate><endDate>2026-12-01T11:30:00.000Z</endDate>"), "{xml}");
        assert!(xml.contains("<upfrontFee>960.00</upfrontFee>"), "{xml}");
        assert_eq!(m.describe("us-east-1", &pairs(q), now).unwrap(), xml);
        let odd = q.replace("=48", "=50");
        assert_eq!(
            m.describe("us-east-1", &pairs(&odd), now).unwrap_err().1,
            "InvalidParameterValue"
        );
        assert!(!m
            .describe("us-east-1", &pairs(&q.replace("p4d", "p5")), now)
            .unwrap()
            .contains("<item>"));

        let id = m.described.keys().next().unwrap().clone();
        let mut book = Book::default();
        let buy = format!("Action=PurchaseCapacityBlock&CapacityBlockOfferingId={id}&InstancePlatform=Linux%2FUNIX&TagSpecification.1.ResourceType=capacity-reservation&TagSpecification.1.Tag.1.Key=gpuform%3Atoken&TagSpecification.1.Tag.1.Value=t1");
        let bought = m
            .purchase(&mut book, "us-east-1", &pairs(&buy), now)
            .unwrap();
        assert!(
            bought.contains("<reservationType>capacity-block</reservationType>"),
            "{bought}"
        );
        assert!(bought.contains("<state>active</state>"), "{bought}");
        let by_tag = book
            .describe(
                "us-east-1",
                &pairs("Filter.1.Name=tag%3Agpuform%3Atoken&Filter.1.Value.1=t1"),
            )
            .unwrap();
        assert!(
            by_tag.contains("<totalInstanceCount>2</totalInstanceCount>"),
            "{by_tag}"
        );
        assert_eq!(
            m.purchase(
                &mut book,
                "us-east-1",
                &pairs(&buy.replace(&id, "cb-0")),
                now
            )
            .unwrap_err()
            .1,
            "InvalidParameterValue"
        );
        // Past its end, the block has expired.
        book.now = parse_instant("2026-12-02T00:00:00Z");
        let gone = book.describe("us-east-1", &pairs("")).unwrap();
        assert!(gone.contains("<state>expired</state>"), "{gone}");
    }
}
