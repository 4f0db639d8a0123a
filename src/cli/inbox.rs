//! The event inbox of `gpuform reconcile --events`: which received messages
//! start a pass, which are held until a pass that handled them saved state,
//! and when a held one is deleted.
//!
//! A message is deleted right away when it names no instance this state
//! records (or is no event reconcile acts on): give each state its own
//! queue. One that names a recorded instance starts a pass at once and is
//! held — not deleted, so a reconciler killed before saving leaves it to be
//! delivered again — until a pass saved state in which that instance is no
//! longer recorded (it was replaced or forgotten), or until [`WATCH`] has
//! passed since its receipt: a spot warning comes two minutes before the
//! instance goes, so while one is held a pass runs every [`FOLLOW_UP`]
//! and repairs the node as soon as it is gone. After a crash the message
//! comes back, names an id no longer recorded, and is deleted: handling is
//! idempotent because a pass is.

use crate::address::Address;
use gpuform_provider::{Delivery, EventSource, InstanceEvent, ProviderError};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a held event is watched: EC2's two-minute spot notice
/// (`gpuform_provider::events`) and half a minute for the termination.
pub const WATCH: Duration = Duration::from_secs(150);
/// Time between passes while an event is held.
pub const FOLLOW_UP: Duration = Duration::from_secs(5);
/// The wait after a failed receive before the next one.
const RETRY: Duration = Duration::from_secs(5);

/// An event held until a pass handles it.
#[derive(Debug, Clone)]
pub struct Held {
    pub receipt: String,
    pub event: InstanceEvent,
    /// The address the state recorded the instance at when it arrived.
    pub address: Address,
    pub received: Instant,
    /// [`crate::clock::wall_ms`] at receipt, for the log.
    pub received_ms: u64,
}

pub struct Inbox {
    source: Arc<dyn EventSource>,
    /// By message id (stable across re-deliveries; the newest receipt kept).
    held: BTreeMap<String, Held>,
}

/// What a wait for events ended with.
pub enum Woken {
    /// These events name recorded instances: pass now.
    Events(Vec<Held>),
    /// The time was up, or a signal came.
    Idle,
    /// Reading the queue failed (logged; the wait went on).
    Failed(ProviderError),
}

impl Inbox {
    pub fn new(source: Arc<dyn EventSource>) -> Inbox {
        Inbox {
            source,
            held: BTreeMap::new(),
        }
    }

    pub fn describe(&self) -> String {
        self.source.describe()
    }

    /// The held events (for the log of the pass that handles them).
    pub fn held(&self) -> impl Iterator<Item = &Held> {
        self.held.values()
    }

    /// How long to wait before the next pass: the interval, or
    /// [`FOLLOW_UP`] while an event is held.
    pub fn next_pass_in(&self, interval: Duration) -> Duration {
        if self.held.is_empty() {
            interval
        } else {
            interval.min(FOLLOW_UP)
        }
    }

    /// Long-polls for at most `d` (in polls SQS allows), until an event
    /// names an instance of `known` (id → address). Messages that name none
    /// are deleted.
    pub async fn wait(&mut self, d: Duration, known: &BTreeMap<String, Address>) -> Woken {
        let deadline = Instant::now() + d;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Woken::Idle;
            }
            // SQS waits in whole seconds; under one second is a short poll.
            let deliveries = match self.source.receive(left).await {
                Ok(d) => d,
                Err(e) => {
                    tokio::time::sleep(left.min(RETRY)).await;
                    return Woken::Failed(e);
                }
            };
            if deliveries.is_empty() && left < Duration::from_secs(1) {
                tokio::time::sleep(left).await;
            }
            let (fresh, stale) = self.sort(deliveries, known);
            if !stale.is_empty() {
                if let Err(e) = self.source.delete(&stale).await {
                    return Woken::Failed(e);
                }
            }
            if !fresh.is_empty() {
                return Woken::Events(fresh);
            }
        }
    }

    /// Holds the deliveries that name a known instance (returning the new
    /// ones) and returns the receipts of the rest, to delete.
    fn sort(
        &mut self,
        deliveries: Vec<Delivery>,
        known: &BTreeMap<String, Address>,
    ) -> (Vec<Held>, Vec<String>) {
        let mut fresh = Vec::new();
        let mut stale = Vec::new();
        for d in deliveries {
            let Some(event) = d.event else {
                stale.push(d.receipt);
                continue;
            };
            let Some(address) = known.get(&event.instance_id) else {
                stale.push(d.receipt);
                continue;
            };
            if let Some(h) = self.held.get_mut(&d.message_id) {
                // Delivered again (held past the queue's visibility timeout).
                h.receipt = d.receipt;
                continue;
            }
            let h = Held {
                receipt: d.receipt,
                event,
                address: address.clone(),
                received: Instant::now(),
                received_ms: crate::clock::wall_ms(),
            };
            self.held.insert(d.message_id, h.clone());
            fresh.push(h);
        }
        (fresh, stale)
    }

    /// After a pass that saved state, whose instances are `known`: deletes
    /// the held messages it handled (their instance is no longer recorded)
    /// and those watched for [`WATCH`]. Returns how many were deleted.
    pub async fn settle(
        &mut self,
        known: &BTreeMap<String, Address>,
    ) -> Result<usize, ProviderError> {
        let done: Vec<String> = self
            .held
            .iter()
            .filter(|(_, h)| {
                !known.contains_key(&h.event.instance_id) || h.received.elapsed() >= WATCH
            })
            .map(|(id, _)| id.clone())
            .collect();
        if done.is_empty() {
            return Ok(0);
        }
        let receipts: Vec<String> = done
            .iter()
            .filter_map(|id| self.held.get(id).map(|h| h.receipt.clone()))
            .collect();
        self.source.delete(&receipts).await?;
        for id in &done {
            self.held.remove(id);
        }
        Ok(done.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use gpuform_provider::EventKind;
    use std::sync::Mutex;

    /// Deliveries handed out once each, and the receipts deleted.
    #[derive(Default)]
    struct Queue {
        ready: Mutex<Vec<Delivery>>,
        deleted: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl EventSource for Queue {
        fn describe(&self) -> String {
            "test queue".into()
        }
        async fn receive(&self, _wait: Duration) -> gpuform_provider::Result<Vec<Delivery>> {
            Ok(std::mem::take(&mut *self.ready.lock().unwrap()))
        }
        async fn delete(&self, receipts: &[String]) -> gpuform_provider::Result<()> {
            self.deleted
                .lock()
                .unwrap()
                .extend(receipts.iter().cloned());
            Ok(())
        }
    }

    fn delivery(msg: &str, receipt: &str, instance: Option<&str>) -> Delivery {
        Delivery {
            message_id: msg.into(),
            receipt: receipt.into(),
            event: instance.map(|i| InstanceEvent {
                kind: EventKind::SpotInterruption,
                instance_id: i.into(),
                time: None,
                region: None,
                state: None,
            }),
        }
    }

    #[tokio::test]
    async fn an_event_is_held_until_a_saved_pass_no_longer_records_its_instance() {
        let q = Arc::new(Queue::default());
        let mut inbox = Inbox::new(q.clone());
        let known: BTreeMap<String, Address> =
            [("i-1".to_string(), "cluster.a.node[0]".into())].into();
        *q.ready.lock().unwrap() = vec![
            delivery("m1", "r1", Some("i-1")),
            delivery("m2", "r2", Some("i-other")),
            delivery("m3", "r3", None),
        ];
        let Woken::Events(fresh) = inbox.wait(Duration::from_secs(1), &known).await else {
            panic!("the event for i-1 starts a pass");
        };
        assert_eq!(fresh.len(), 1);
        assert_eq!(fresh[0].address, "cluster.a.node[0]");
        // Not ours, or not an event: deleted at once; ours is held.
        assert_eq!(*q.deleted.lock().unwrap(), ["r2", "r3"]);
        assert_eq!(inbox.next_pass_in(Duration::from_secs(60)), FOLLOW_UP);
        // Delivered again: the newest receipt is kept, no second pass.
        *q.ready.lock().unwrap() = vec![delivery("m1", "r1b", Some("i-1"))];
        assert!(matches!(
            inbox.wait(Duration::from_millis(50), &known).await,
            Woken::Idle
        ));
        // A pass that still records i-1 (the warning came before the loss).
        assert_eq!(inbox.settle(&known).await.unwrap(), 0);
        assert_eq!(q.deleted.lock().unwrap().len(), 2);
        // The pass that replaced it: deleted with its newest receipt.
        let after: BTreeMap<String, Address> =
            [("i-2".to_string(), "cluster.a.node[0]".into())].into();
        assert_eq!(inbox.settle(&after).await.unwrap(), 1);
        assert_eq!(*q.deleted.lock().unwrap(), ["r2", "r3", "r1b"]);
        assert_eq!(
            inbox.next_pass_in(Duration::from_secs(60)),
            Duration::from_secs(60)
        );
    }
}
