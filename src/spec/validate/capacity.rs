//! A cluster's `capacity:` list: reservations, Capacity Blocks and the
//! market that ends it, and which clouds speak them.

use super::super::model::{CapacitySource, CloudName, SpecNames};
use super::super::yaml::{shorten, Entry, Kind, Node, Pos};
use super::{fields, join, list, parse_cloud, suggest, Validator};
use gpuform_catalog::PricingModel;
use serde_json::{Map, Value};

/// The sources written as a one-key mapping (`{reservation: …}`,
/// `{block: …}`), in [`CapacitySource::NAMES`]' order before the markets; a
/// test holds them to the model.
pub(super) const MAPPED_SOURCES: [&str; 2] = ["reservation", "block"];
const RESERVATION: &str = MAPPED_SOURCES[0];
const BLOCK: &str = MAPPED_SOURCES[1];

const EXAMPLE: &str = "write e.g. `capacity: [{reservation: cr-0123456789abcdef0}, on-demand]`";
const SHAPES: &str = "a source is `{reservation: ID}`, `{block: {start: YYYY-MM-DD, hours: N}}`, `on-demand` or `spot`, one per list entry";

impl Validator {
    /// `capacity:`: an ordered list of `{reservation: ID}`,
    /// `{reservation: {tags: {...}}}`, `{block: {start, hours}}`,
    /// `on-demand`, `spot`; an unbounded market (the last to fill) ends it.
    pub(super) fn capacity(&mut self, node: &Node, path: &str) -> Option<Value> {
        let items = self.expect(
            node.seq(),
            node,
            path,
            "a list of capacity sources",
            EXAMPLE,
        )?;
        if items.is_empty() {
            self.error(
                node.start,
                path,
                "`capacity` lists no source",
                format!("{EXAMPLE}, or remove it (then `pricing:` applies)"),
            );
            return None;
        }
        let mut market: Option<String> = None;
        let mut seen_ids: Vec<String> = Vec::new();
        self.each_item(items, path, |v, item, p| {
            if let Some(m) = &market {
                v.error(
                    item.start,
                    p,
                    format!("`{m}` before this entry takes every remaining node, so this one is never used"),
                    format!("put `{m}` last"),
                );
                return None;
            }
            v.capacity_source(item, p, &mut market, &mut seen_ids)
        })
        .map(Value::Array)
    }

    /// One entry of `capacity:`; a market is noted in `market`, a
    /// reservation id in `seen_ids`.
    fn capacity_source(
        &mut self,
        item: &Node,
        p: &str,
        market: &mut Option<String>,
        seen_ids: &mut Vec<String>,
    ) -> Option<Value> {
        match &item.kind {
            Kind::Scalar { text, .. } if CapacitySource::MARKETS.contains(&text.as_str()) => {
                *market = Some(text.clone());
                Some(Value::String(text.clone()))
            }
            Kind::Scalar { text, .. } => {
                let kinds = CapacitySource::NAMES;
                let hint = if PricingModel::ALL.iter().any(|m| m.as_str() == text) {
                    format!("`{text}` is a `pricing:` model; a capacity list ends with `on-demand` or `spot`")
                } else if text.starts_with("cr-") {
                    format!("write `{{reservation: {text}}}`")
                } else {
                    match suggest(text, kinds.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`? Expected one of {}", list(kinds)),
                        None => format!("expected one of {}", list(kinds)),
                    }
                };
                self.error(
                    item.start,
                    p,
                    format!("unknown capacity source `{}`", shorten(text)),
                    hint,
                );
                None
            }
            Kind::Map(entries) if entries.len() == 1 => {
                let e = &entries[0];
                self.mapped_source(e, &join(p, &e.key), seen_ids)
                    .map(|v| serde_json::json!({ e.key.clone(): v }))
            }
            _ => {
                self.error(
                    item.start,
                    p,
                    format!("expected a capacity source, found {}", item.describe()),
                    SHAPES,
                );
                None
            }
        }
    }

    /// `{reservation: …}` or `{block: …}`, the value of its one entry `e`.
    fn mapped_source(&mut self, e: &Entry, ep: &str, seen_ids: &mut Vec<String>) -> Option<Value> {
        match e.key.as_str() {
            RESERVATION => self.reservation(&e.value, ep, e.key_pos, seen_ids),
            BLOCK => self
                .object(&e.value, ep, e.key_pos, &fields::BLOCK)
                .and_then(|m| self.block(&e.value, ep, m)),
            other => {
                let hint = match suggest(other, MAPPED_SOURCES) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => SHAPES.to_string(),
                };
                self.error(
                    e.key_pos,
                    ep,
                    format!("unknown key `{}` in a capacity source", shorten(other)),
                    hint,
                );
                None
            }
        }
    }

    /// `reservation: cr-…` or `reservation: {tags: {KEY: VALUE}}`.
    fn reservation(
        &mut self,
        node: &Node,
        path: &str,
        at: Pos,
        seen: &mut Vec<String>,
    ) -> Option<Value> {
        match &node.kind {
            Kind::Scalar { text, .. } => {
                if !is_reservation_id(text) && !is_private_pool_id(text) {
                    self.error(
                        node.start,
                        path,
                        format!("`{}` is not a capacity reservation id", shorten(text)),
                        "an AWS reservation id is `cr-` and 17 hex digits (e.g. `cr-0123456789abcdef0`; `aws ec2 describe-capacity-reservations` lists them), an Alibaba Cloud private pool id `eap-…` or `crp-…`, or name it by tags: `{reservation: {tags: {team: ml}}}`",
                    );
                    return None;
                }
                if seen.contains(text) {
                    self.error(
                        node.start,
                        path,
                        format!("reservation `{text}` is listed twice"),
                        "list each reservation once",
                    );
                    return None;
                }
                seen.push(text.clone());
                Some(Value::String(text.clone()))
            }
            Kind::Map(_) => {
                let m = self.object(node, path, at, &fields::RESERVATION)?;
                if m.get("tags")
                    .and_then(Value::as_object)
                    .is_none_or(|t| t.is_empty())
                {
                    self.error(
                        node.start,
                        &join(path, "tags"),
                        "a reservation named by tags needs at least one tag",
                        "write `{reservation: {tags: {team: ml}}}`",
                    );
                    return None;
                }
                Some(Value::Object(m))
            }
            _ => {
                self.error(
                    node.start,
                    path,
                    format!("expected a reservation id or `{{tags: ...}}`, found {}", node.describe()),
                    "write `{reservation: cr-0123456789abcdef0}` or `{reservation: {tags: {team: ml}}}`",
                );
                None
            }
        }
    }

    /// A block's `start` (a real date) and `hours` (EC2's durations: 1-day
    /// steps up to 14 days, 7-day steps up to 182 days, per "Find and
    /// purchase Capacity Blocks",
    /// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html).
    fn block(&mut self, node: &Node, path: &str, m: Map<String, Value>) -> Option<Value> {
        let at = |k: &str| node.entry(k).map(|e| e.value.start);
        let mut ok = true;
        if let (Some(start), Some(pos)) = (m.get("start").and_then(Value::as_str), at("start")) {
            let dated = start.len() == 10
                && gpuform_catalog::Day::parse_iso(start).is_some_and(|d| d.to_string() == start);
            if !dated {
                self.error(
                    pos,
                    &join(path, "start"),
                    format!("`{}` is not a date", shorten(start)),
                    "write the first day as `YYYY-MM-DD`, e.g. `start: 2026-12-10`",
                );
                ok = false;
            }
        }
        if let (Some(hours), Some(pos)) = (m.get("hours").and_then(Value::as_u64), at("hours")) {
            let valid = (hours <= 336 && hours % 24 == 0) || (hours <= 4368 && hours % 168 == 0);
            if !valid {
                let down = if hours <= 336 {
                    hours / 24 * 24
                } else {
                    (hours / 168 * 168).min(4368)
                };
                self.error(
                    pos,
                    &join(path, "hours"),
                    format!("a Capacity Block cannot last {hours} hours"),
                    format!(
                        "EC2 sells whole days up to 14 (24 to 336 hours in steps of 24) and whole weeks up to 26 (up to 4368 in steps of 168){}",
                        if down >= 24 { format!("; the nearest shorter is {down}") } else { String::new() }
                    ),
                );
                ok = false;
            }
        }
        if let (Some(count), Some(pos)) = (m.get("count").and_then(Value::as_u64), at("count")) {
            // "Each Capacity Block can have up to 64 instances"
            // (capacity-blocks-purchase.html).
            if !(1..=64).contains(&count) {
                self.error(
                    pos,
                    &join(path, "count"),
                    format!("a Capacity Block cannot hold {count} instances"),
                    "EC2 sells blocks of 1 to 64 instances",
                );
                ok = false;
            }
        }
        ok.then_some(Value::Object(m))
    }

    /// Reservations and blocks are the account's in one region of one
    /// cloud; gpuform speaks reservations on AWS (and the sandbox
    /// mirroring it) and Alibaba Cloud (private pools), blocks on AWS only.
    pub(super) fn capacity_cloud(
        &mut self,
        e: &Entry,
        path: &str,
        cloud_text: &str,
        any: bool,
    ) -> bool {
        let cloud = parse_cloud(cloud_text);
        let alibaba = cloud == Some(CloudName::Alibaba);
        let speaks = match cloud {
            Some(CloudName::Aws | CloudName::Sandbox) => true,
            Some(CloudName::Alibaba) => !lists_blocks(&e.value),
            _ => false,
        };
        if speaks {
            return self.reservation_clouds(e, path, cloud_text, alibaba);
        }
        let (msg, hint) = if alibaba {
            (
                "Capacity Blocks in `capacity` are supported on `cloud: aws` (and the sandbox), not `cloud: alibaba`".to_string(),
                "on Alibaba Cloud, list a private pool: `{reservation: eap-…}` or `{reservation: crp-…}`".to_string(),
            )
        } else {
            (
                format!(
                    "reservations and Capacity Blocks in `capacity` are supported on `cloud: aws` (and the sandbox), and reservations on `cloud: alibaba`, not `cloud: {cloud_text}`"
                ),
                if any {
                    "a reservation lives in one region: write `cloud: aws` or `cloud: alibaba` and its `region`".to_string()
                } else {
                    "use `pricing:` (on-demand, spot, reserved-1y, reserved-3y) on this cloud".to_string()
                },
            )
        };
        self.error(e.key_pos, &join(path, "capacity"), msg, hint);
        false
    }

    /// An id names one cloud's reservation: EC2's `cr-…` or Alibaba's
    /// private pools, `eap-…`/`crp-…`.
    fn reservation_clouds(
        &mut self,
        e: &Entry,
        path: &str,
        cloud_text: &str,
        alibaba: bool,
    ) -> bool {
        let mut ok = true;
        for (at, id) in reservation_ids(&e.value) {
            if is_private_pool_id(&id) != alibaba {
                let (what, hint) = if alibaba {
                    ("an AWS capacity reservation id", "on Alibaba Cloud a reservation is a private pool: an elasticity assurance (`eap-…`) or a capacity reservation (`crp-…`); `aliyun ecs DescribeElasticityAssurances` and `DescribeCapacityReservations` list them")
                } else {
                    ("an Alibaba Cloud private pool id", "on AWS a reservation id is `cr-` and 17 hex digits (`aws ec2 describe-capacity-reservations` lists them)")
                };
                self.error(
                    at,
                    &join(path, "capacity"),
                    format!(
                        "`{}` is {what}, but this cluster is on `cloud: {cloud_text}`",
                        shorten(&id)
                    ),
                    hint,
                );
                ok = false;
            }
        }
        ok
    }
}

/// AWS capacity reservation ids: `cr-` and 17 (older: 8) lowercase hex digits.
fn is_reservation_id(t: &str) -> bool {
    t.strip_prefix("cr-").is_some_and(|h| {
        (h.len() == 17 || h.len() == 8)
            && h.chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

/// Alibaba Cloud private pool ids: an elasticity assurance (`eap-`) or a
/// capacity reservation (`crp-`), then lowercase letters and digits
/// (`eap-bp67acfmxazb4ph3****`, ECS API reference).
fn is_private_pool_id(t: &str) -> bool {
    ["eap-", "crp-"].iter().any(|p| {
        t.strip_prefix(p).is_some_and(|rest| {
            (8..=40).contains(&rest.len())
                && rest
                    .chars()
                    .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        })
    })
}

/// The reservation ids a `capacity` list names, where they are written.
fn reservation_ids(capacity: &Node) -> Vec<(Pos, String)> {
    capacity
        .items()
        .iter()
        .filter_map(|i| i.entry(RESERVATION))
        .filter_map(|e| Some((e.value.start, e.value.text()?.to_string())))
        .collect()
}

/// Whether a `capacity` list names a spot market.
pub(super) fn lists_spot(capacity: &Node) -> bool {
    let spot = CapacitySource::Spot.as_str();
    capacity.items().iter().any(|i| i.text() == Some(spot))
}

/// Whether a `capacity` list names a Capacity Block.
fn lists_blocks(capacity: &Node) -> bool {
    capacity.items().iter().any(|i| i.entry(BLOCK).is_some())
}

/// Whether a `capacity` list names a reservation or a block.
pub(super) fn lists_bounded(capacity: &Node) -> bool {
    capacity
        .items()
        .iter()
        .any(|i| matches!(i.kind, Kind::Map(_)))
}
