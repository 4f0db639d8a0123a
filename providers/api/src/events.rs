//! Events a cloud pushes about instances (`gpuform reconcile --events`): a
//! spot interruption warning, a rebalance recommendation, a state change.
//! An [`EventSource`] delivers them; the reconciler starts a pass at once for
//! one that names an instance its state records, and deletes a message only
//! after the pass that handled it saved state, so a crash re-delivers it
//! (handling is idempotent because a pass is).
//!
//! How long each cloud warns before it takes spot capacity back (the notice
//! window a repair races against):
//! - AWS: two minutes, the EC2 Spot Instance Interruption Warning
//!   (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html);
//! - Alibaba: about five minutes; the instance is locked with `LockReason:
//!   Recycling` meanwhile
//!   (https://www.alibabacloud.com/help/en/ecs/user-guide/query-the-interruption-events-of-preemptible-instances);
//! - Tencent: about two minutes, `spot/termination-time` in the instance
//!   metadata (https://www.tencentcloud.com/document/product/213/32487);
//! - Huawei: the ECS guide gives no figure ("at short notice", a reclaim
//!   notification by SMN); CCE's node problem detector warns five minutes
//!   before (https://support.huaweicloud.com/intl/tr-tr/price-cce/cce_03_0026.html, an English page).
//!
//! Only AWS pushes events gpuform reads (EventBridge into SQS); the others
//! are polled by every pass (`Provider::list_owned`).

use crate::Result;
use async_trait::async_trait;
use std::time::Duration;

/// What happened to an instance, as far as reconcile cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The cloud takes a spot instance back soon (AWS: in two minutes).
    SpotInterruption,
    /// The cloud recommends moving off a spot instance (it may be
    /// interrupted later).
    Rebalance,
    /// The instance is stopping, stopped, shutting down or terminated.
    StateChange,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SpotInterruption => "spot-interruption",
            EventKind::Rebalance => "rebalance-recommendation",
            EventKind::StateChange => "state-change",
        }
    }
}

/// One event about one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceEvent {
    pub kind: EventKind,
    /// The cloud's instance id (`i-0abc…`).
    pub instance_id: String,
    /// The event's own time as the cloud wrote it (RFC 3339), if any.
    pub time: Option<String>,
    /// The region it happened in, if the event says.
    pub region: Option<String>,
    /// The new state of a state change (`terminated`…).
    pub state: Option<String>,
}

/// A message as received: the event in it (`None`: a message that is not
/// one of the events above, or one that needs no pass, such as a
/// state change to `running`), and what deletes it.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Stable across re-deliveries of one message.
    pub message_id: String,
    /// Deletes this delivery (the newest one of a message must be used).
    pub receipt: String,
    pub event: Option<InstanceEvent>,
}

/// Where events come from (an SQS queue on AWS).
#[async_trait]
pub trait EventSource: Send + Sync {
    /// Names the source for logs (never with credentials).
    fn describe(&self) -> String;
    /// Waits at most `wait` for messages (a long poll), returning at once
    /// when some arrive; an empty list when none did.
    async fn receive(&self, wait: Duration) -> Result<Vec<Delivery>>;
    /// Deletes handled messages by their receipts.
    async fn delete(&self, receipts: &[String]) -> Result<()>;
}
