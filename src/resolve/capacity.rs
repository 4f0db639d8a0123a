//! A cluster's `capacity:` list: which source each node lands in.
//!
//! Pure like the rest of resolve: the engine reads the reservations a list
//! names at plan time (`engine::capacity`) and hands them in as
//! [`CapacityFacts`]; this module fills the sources in order. A
//! reservation's room for a cluster is what the cloud says is available
//! plus the cluster's own nodes already in it (from state), so that a
//! running node keeps its place and a re-plan shows no change.

use crate::address::Address;
use crate::spec::{CapacitySource, CloudName, Cluster, ReservationRef};
use gpuform_catalog::PricingModel;
use gpuform_provider::Reservation;
use std::collections::{BTreeMap, BTreeSet};

/// What the clouds said about the reservations of each cluster's list.
#[derive(Debug, Clone, Default)]
pub struct CapacityFacts {
    /// (cluster, index in its `capacity` list) → the reservations the entry
    /// names, as read at plan time, or why they could not be read. Absent:
    /// not read (a plan without refresh); only the cluster's own nodes
    /// already in it count then.
    pub read: BTreeMap<(String, usize), Result<Vec<Reservation>, String>>,
    /// Reservation id → addresses of nodes the state records in it.
    pub ours: BTreeMap<String, BTreeSet<Address>>,
    /// (cluster, index) of a `{block: …}` → the block: as bought (state),
    /// as an interrupted purchase asked for it (journal), or the offering
    /// to buy, read at plan time; or why there is none.
    pub blocks: BTreeMap<(String, usize), Result<BlockFact, String>>,
}

/// A Capacity Block of a cluster's list: bought, or the offering to buy.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockFact {
    /// Its attributes (`gpuform_provider::capacity::block_attr`): type,
    /// count, zone, first day, hours, window, upfront price.
    pub attrs: gpuform_provider::Attrs,
    /// Whether the state records it bought.
    pub bought: bool,
}

impl BlockFact {
    pub fn text(&self, key: &str) -> &str {
        self.attrs.get(key).and_then(|v| v.as_str()).unwrap_or("")
    }

    pub fn count(&self) -> u32 {
        self.attrs
            .get(gpuform_provider::capacity::block_attr::COUNT)
            .and_then(|v| v.as_u64())
            .unwrap_or(0) as u32
    }

    pub fn upfront_usd(&self) -> Option<f64> {
        self.attrs
            .get(gpuform_provider::capacity::block_attr::UPFRONT_USD)
            .and_then(|v| v.as_f64())
    }
}

/// The address of entry `i` of cluster `name`'s list when it is a block.
pub fn block_address(name: &str, i: usize) -> Address {
    Address::in_cluster(name, &format!("block[{i}]"))
}

/// Where one node lands.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSource {
    /// How the node is billed (a reservation's nodes: on-demand).
    pub pricing: PricingModel,
    /// The reservation it launches into.
    pub reservation: Option<String>,
    /// The Capacity Block (its address) it launches into.
    pub block: Option<Address>,
}

/// One source with room, in fill order.
struct Slot {
    pricing: PricingModel,
    /// The reservation it launches into.
    id: Option<String>,
    /// The reservation as read (absent when it was not).
    seen: Option<Reservation>,
    /// Nodes it may take; `None`: every node left.
    room: Option<u32>,
    ours: BTreeSet<Address>,
    /// The Capacity Block (address, as known) it is.
    block: Option<(Address, BlockFact)>,
}

/// The assignment of a cluster's nodes, with what the plan says of it.
pub struct Filled {
    pub nodes: Vec<NodeSource>,
    /// The zone and instance type the reservations hold (all the same).
    pub pinned: Option<(String, String)>,
    pub notes: Vec<String>,
    /// The list's Capacity Blocks: (address, block).
    pub blocks: Vec<(Address, BlockFact)>,
}

/// The market the cluster's nodes outside reservations use, for choosing
/// its instance type: the list's last market, else `pricing`.
pub fn market(c: &Cluster) -> PricingModel {
    c.capacity
        .iter()
        .rev()
        .find_map(|s| match s {
            CapacitySource::OnDemand => Some(PricingModel::OnDemand),
            CapacitySource::Spot => Some(PricingModel::Spot),
            _ => None,
        })
        .unwrap_or(if c.capacity.is_empty() {
            c.pricing
        } else {
            PricingModel::OnDemand
        })
}

/// Fills `c`'s nodes into its capacity list. `Err((yaml path, message,
/// hint))` when a source cannot be used or the list cannot hold them all.
pub fn fill(name: &str, path: &str, c: &Cluster, facts: &CapacityFacts) -> Result<Filled, Located> {
    let mut list = Sources::default();
    for (i, source) in c.capacity.iter().enumerate() {
        let at = format!("{path}.capacity[{i}]");
        match source {
            CapacitySource::OnDemand | CapacitySource::Spot => list.slots.push(Slot {
                pricing: if matches!(source, CapacitySource::Spot) {
                    PricingModel::Spot
                } else {
                    PricingModel::OnDemand
                },
                id: None,
                seen: None,
                room: None,
                ours: BTreeSet::new(),
                block: None,
            }),
            CapacitySource::Block(b) => list.block(name, i, b, at, facts)?,
            CapacitySource::Reservation(r) => list.reservation(name, c, r, at, facts, i)?,
        }
    }
    let (nodes, taken) = assign(name, path, c, &list.slots)?;
    list.describe(name, &taken);
    let Sources {
        slots,
        notes,
        pinned,
    } = list;
    let blocks = slots.into_iter().filter_map(|s| s.block).collect();
    Ok(Filled {
        nodes,
        pinned: pinned.map(|(z, t, _)| (z, t)),
        notes,
        blocks,
    })
}

/// `(yaml path, message, hint)`: where a capacity list cannot be used.
type Located = (String, String, String);

/// A cluster's capacity list as slots, read in order.
#[derive(Default)]
struct Sources {
    slots: Vec<Slot>,
    notes: Vec<String>,
    /// The zone and instance type the first reservation or block holds, and
    /// its name: every later one must hold the same.
    pinned: Option<(String, String, String)>,
}

impl Sources {
    /// A `{block: …}` entry: its offering, or the block bought.
    fn block(
        &mut self,
        name: &str,
        i: usize,
        b: &crate::spec::BlockRequest,
        at: String,
        facts: &CapacityFacts,
    ) -> Result<(), Located> {
        let fact = match facts.blocks.get(&(name.to_string(), i)) {
            Some(Ok(f)) => f.clone(),
            Some(Err(why)) => {
                return Err((
                    at,
                    why.clone(),
                    format!("`aws ec2 describe-capacity-block-offerings --instance-type TYPE --instance-count N --capacity-duration-hours {} --start-date-range {}T00:00:00Z` lists what EC2 sells; change `start`, `hours` or `count`, or remove the entry", b.hours, b.start),
                ))
            }
            None => {
                return Err((
                    at,
                    "the Capacity Block offering was not read (a plan without refresh)".into(),
                    "plan with refresh to read the offering, or buy the block first".into(),
                ))
            }
        };
        use gpuform_provider::capacity::block_attr as a;
        let address = block_address(name, i);
        let (zone, itype) = (
            fact.text(a::ZONE).to_string(),
            fact.text(a::INSTANCE_TYPE).to_string(),
        );
        match &self.pinned {
            Some((z, t, first)) if *z != zone || *t != itype => {
                return Err((
                    at,
                    format!("the Capacity Block holds {itype} in {zone}, but {first} holds {t} in {z}"),
                    "a cluster's nodes share one zone and instance type: list capacity of the same type and zone".into(),
                ));
            }
            Some(_) => {}
            None => self.pinned = Some((zone, itype, address.to_string())),
        }
        self.slots.push(Slot {
            pricing: PricingModel::OnDemand,
            id: None,
            seen: None,
            room: Some(fact.count()),
            ours: BTreeSet::new(),
            block: Some((address, fact)),
        });
        Ok(())
    }

    /// A `{reservation: …}` entry: each reservation it names that takes
    /// launches now, and those holding this cluster's nodes.
    fn reservation(
        &mut self,
        name: &str,
        c: &Cluster,
        r: &ReservationRef,
        at: String,
        facts: &CapacityFacts,
        i: usize,
    ) -> Result<(), Located> {
        let found = match facts.read.get(&(name.to_string(), i)) {
            Some(Ok(found)) => found.clone(),
            Some(Err(why)) => {
                return Err((
                    at,
                    format!("reservation {r} could not be read: {why}"),
                    if c.cloud == CloudName::Alibaba {
                        "check the credentials and their permissions ecs:DescribeElasticityAssurances and ecs:DescribeCapacityReservations".into()
                    } else {
                        "check the credentials and their permission ec2:DescribeCapacityReservations".into()
                    },
                ))
            }
            None => {
                // Not read: only what the state says is ours counts.
                if let ReservationRef::Id(id) = r {
                    let ours = facts.ours.get(id).cloned().unwrap_or_default();
                    self.notes.push(format!(
                        "cluster.{name}: reservation {id} was not read (no refresh); only its {} node(s) recorded in state are placed in it",
                        ours.len()
                    ));
                    self.slots.push(Slot {
                        pricing: PricingModel::OnDemand,
                        id: Some(id.clone()),
                        seen: None,
                        room: Some(ours.len() as u32),
                        ours,
                        block: None,
                    });
                }
                return Ok(());
            }
        };
        if found.is_empty() {
            return Err((
                at,
                format!(
                    "no capacity reservation {r} in {} {}",
                    c.cloud.as_str(),
                    c.region
                ),
                if c.cloud == CloudName::Alibaba {
                    "`aliyun ecs DescribeElasticityAssurances --RegionId REGION` and `aliyun ecs DescribeCapacityReservations --RegionId REGION` list the account's private pools".into()
                } else {
                    "`aws ec2 describe-capacity-reservations --region REGION` lists the account's reservations".into()
                },
            ));
        }
        for res in found {
            if !res.is_active() {
                // Not yet started (`scheduled`) or over: no launch now.
                // Nodes already launched into it keep running (EC2
                // bills them as on-demand): they stay; new ones go on.
                let ours = facts.ours.get(&res.id).cloned().unwrap_or_default();
                self.notes.push(format!(
                    "cluster.{name}: reservation {} is {}{}{}; new nodes go to the next source{}",
                    res.id,
                    res.state,
                    res.start
                        .as_deref()
                        .map(|s| format!(" (start {s})"))
                        .unwrap_or_default(),
                    res.end
                        .as_deref()
                        .map(|e| format!(" (end {e})"))
                        .unwrap_or_default(),
                    if ours.is_empty() {
                        String::new()
                    } else {
                        format!(", the {} in it stay", ours.len())
                    }
                ));
                if !ours.is_empty() {
                    self.slots.push(Slot {
                        pricing: PricingModel::OnDemand,
                        id: Some(res.id.clone()),
                        seen: None,
                        room: Some(ours.len() as u32),
                        ours,
                        block: None,
                    });
                }
                continue;
            }
            match &self.pinned {
                Some((zone, itype, first)) if *zone != res.zone || *itype != res.instance_type => {
                    return Err((
                        at,
                        format!(
                            "reservation {} holds {} in {}, but {first} holds {itype} in {zone}",
                            res.id, res.instance_type, res.zone
                        ),
                        "a cluster's nodes share one zone and instance type: list reservations of the same type and zone".into(),
                    ));
                }
                Some(_) => {}
                None => {
                    self.pinned =
                        Some((res.zone.clone(), res.instance_type.clone(), res.id.clone()))
                }
            }
            let ours = facts.ours.get(&res.id).cloned().unwrap_or_default();
            self.slots.push(Slot {
                pricing: PricingModel::OnDemand,
                room: Some(res.available + ours.len() as u32),
                id: Some(res.id.clone()),
                seen: Some(res),
                ours,
                block: None,
            });
        }
        Ok(())
    }

    /// The plan's note for each source: which nodes land in it, and what
    /// is left of it.
    fn describe(&mut self, name: &str, taken: &[Vec<u32>]) {
        for (slot, got) in self.slots.iter().zip(taken) {
            let list = node_list(got);
            if let Some((address, b)) = &slot.block {
                use gpuform_provider::capacity::block_attr as a;
                self.notes.push(format!(
                    "cluster.{name}: {list} in Capacity Block {address} ({} x {} in {}, {} to {}, ${:.2} paid up front{}; EC2 begins terminating its instances 30 minutes before its end)",
                    b.count(),
                    b.text(a::INSTANCE_TYPE),
                    b.text(a::ZONE),
                    b.text(a::START),
                    b.text(a::END),
                    b.upfront_usd().unwrap_or(0.0),
                    if b.bought { ", bought" } else { ", to buy: cannot be cancelled" },
                ));
                continue;
            }
            match (&slot.id, &slot.seen) {
                (None, _) if got.is_empty() => {}
                (None, _) => self
                    .notes
                    .push(format!("cluster.{name}: {list} {}", slot.pricing.as_str())),
                (Some(_), None) => {}
                (Some(_), Some(r)) => {
                    let new = got
                        .iter()
                        .filter(|n| {
                            !slot
                                .ours
                                .contains(&Address::in_cluster(name, &format!("node[{n}]")))
                        })
                        .count() as u32;
                    self.notes.push(format!(
                        "cluster.{name}: {} in reservation {} ({} in {}, {}): {} of {} available now, {} left after this plan",
                        list,
                        r.id,
                        r.instance_type,
                        r.zone,
                        // Active: it has started; what matters is its end.
                        match &r.end {
                            Some(e) => format!("until {e}"),
                            None => "open-ended".into(),
                        },
                        r.available,
                        r.total,
                        r.available.saturating_sub(new)
                    ));
                }
            }
        }
    }
}

/// Fills the nodes into the slots in order: each node's source, and the
/// nodes each slot took.
fn assign(
    name: &str,
    path: &str,
    c: &Cluster,
    slots: &[Slot],
) -> Result<(Vec<NodeSource>, Vec<Vec<u32>>), Located> {
    let mut nodes = Vec::with_capacity(c.nodes as usize);
    let mut taken: Vec<Vec<u32>> = vec![Vec::new(); slots.len()];
    for n in 0..c.nodes {
        let Some(k) = (0..slots.len()).find(|&k| {
            slots[k]
                .room
                .is_none_or(|room| (taken[k].len() as u32) < room)
        }) else {
            let held: u32 = slots.iter().filter_map(|s| s.room).sum();
            return Err((
                format!("{path}.capacity"),
                format!(
                    "cluster {name} has {} node(s) but its capacity list holds {held} now",
                    c.nodes
                ),
                "end `capacity` with `on-demand` or `spot` for the nodes beyond the reservations, or lower `nodes`".into(),
            ));
        };
        taken[k].push(n);
        nodes.push(NodeSource {
            pricing: slots[k].pricing,
            reservation: slots[k].id.clone(),
            block: slots[k].block.as_ref().map(|(a, _)| a.clone()),
        });
    }
    Ok((nodes, taken))
}

/// `node[0..2]`, `node[3]`: consecutive indexes as ranges.
fn node_list(nodes: &[u32]) -> String {
    match (nodes.first(), nodes.last()) {
        (Some(a), Some(b)) if a == b => format!("node[{a}]"),
        (Some(a), Some(b)) => format!("node[{a}..{b}]"),
        _ => "no node".into(),
    }
}
