//! EC2 events through EventBridge into SQS (`gpuform reconcile --events
//! QUEUE_URL`): an [`EventSource`] on `aws-sdk-sqs` (ReceiveMessage with
//! WaitTimeSeconds, DeleteMessageBatch), the parsing of the three EC2 events
//! reconcile acts on, and the rules and queue policy a user creates once
//! ([`event_rules`]).
//!
//! The events (EventBridge delivers the whole event as the message body):
//! - `EC2 Spot Instance Interruption Warning`, two minutes before EC2 takes
//!   the instance back, `detail.instance-id`, `detail.instance-action`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html);
//! - `EC2 Instance Rebalance Recommendation`, `detail.instance-id`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html);
//! - `EC2 Instance State-change Notification`, `detail.instance-id`,
//!   `detail.state`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html).
//!
//! SQS calls: ReceiveMessage
//! (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html:
//! WaitTimeSeconds at most 20, MaxNumberOfMessages at most 10) and
//! DeleteMessageBatch (at most 10 entries; the newest receipt handle of a
//! message deletes it).

use crate::errors::map_sqs;
use async_trait::async_trait;
use aws_sdk_sqs::types::DeleteMessageBatchRequestEntry;
use gpuform_provider::{
    Delivery, ErrorKind, EventKind, EventSource, InstanceEvent, ProviderError, Result,
};
use serde_json::{json, Value};
use std::time::Duration;

/// The longest long poll SQS allows.
pub const MAX_WAIT: Duration = Duration::from_secs(20);
const BATCH: usize = 10;

pub const SPOT_WARNING: &str = "EC2 Spot Instance Interruption Warning";
pub const REBALANCE: &str = "EC2 Instance Rebalance Recommendation";
pub const STATE_CHANGE: &str = "EC2 Instance State-change Notification";
/// The states of a state change that lose a node; `pending` and `running`
/// need no pass (the rule's pattern leaves them out too).
pub const LOSING_STATES: [&str; 4] = ["stopping", "stopped", "shutting-down", "terminated"];

/// A queue URL, read: `https://sqs.REGION.amazonaws.com[.cn]/ACCOUNT/NAME`
/// (or the legacy `https://REGION.queue.amazonaws.com/…` and
/// `https://queue.amazonaws.com/…`, us-east-1). Another host (an emulator)
/// is the endpoint itself, its region the SDK configuration's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueUrl {
    pub url: String,
    /// `None`: not an AWS host.
    pub region: Option<String>,
    pub account: String,
    pub name: String,
    /// `scheme://host[:port]`: the endpoint for a host that is not AWS's.
    pub origin: String,
}

impl QueueUrl {
    pub fn parse(url: &str) -> std::result::Result<QueueUrl, String> {
        let bad = |why: &str| {
            format!(
                "--events {url:?} is not an SQS queue URL ({why})\n  hint: write it as SQS shows it, e.g. https://sqs.us-east-1.amazonaws.com/123456789012/gpuform-events"
            )
        };
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or_else(|| bad("it must start with https://"))?;
        let (host, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("no /ACCOUNT/NAME after the host"))?;
        let mut parts = path.trim_end_matches('/').split('/');
        let (Some(account), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("the path must be /ACCOUNT/NAME"));
        };
        if account.is_empty() || !account.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the account must be digits"));
        }
        if name.is_empty()
            || name.len() > 80
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        {
            return Err(bad("a queue name is 1 to 80 letters, digits, - and _"));
        }
        let bare = host.split(':').next().unwrap_or(host);
        let region = if let Some(r) = bare.strip_prefix("sqs.").and_then(|h| {
            h.strip_suffix(".amazonaws.com")
                .or(h.strip_suffix(".amazonaws.com.cn"))
        }) {
            Some(r.to_string())
        } else if bare == "queue.amazonaws.com" {
            Some("us-east-1".to_string())
        } else {
            bare.strip_suffix(".queue.amazonaws.com")
                .map(str::to_string)
        };
        let scheme = if url.starts_with("https://") {
            "https"
        } else {
            "http"
        };
        if region.is_some() && scheme != "https" {
            return Err(bad("SQS is served over https"));
        }
        Ok(QueueUrl {
            url: url.to_string(),
            region,
            account: account.to_string(),
            name: name.to_string(),
            origin: format!("{scheme}://{host}"),
        })
    }
}

/// The SQS queue reconcile reads events from.
pub struct SqsEvents {
    client: aws_sdk_sqs::Client,
    queue: QueueUrl,
}

impl SqsEvents {
    /// The client for the queue: credentials from aws-config's standard
    /// chain, the region from the URL (or the configuration's for an
    /// emulator, which is also the endpoint). Sends nothing.
    pub async fn from_url(url: &str) -> Result<SqsEvents> {
        let queue = QueueUrl::parse(url).map_err(|m| ProviderError::new(ErrorKind::Invalid, m))?;
        let base = crate::client::sdk_config(None).await?;
        let mut b = aws_sdk_sqs::config::Builder::from(&base);
        match &queue.region {
            Some(r) => b = b.region(aws_sdk_sqs::config::Region::new(r.clone())),
            None => {
                if base.region().is_none() {
                    b = b.region(aws_sdk_sqs::config::Region::new("us-east-1"));
                }
                b = b.endpoint_url(&queue.origin);
            }
        }
        Ok(SqsEvents {
            client: aws_sdk_sqs::Client::from_conf(b.build()),
            queue,
        })
    }
}

#[async_trait]
impl EventSource for SqsEvents {
    fn describe(&self) -> String {
        format!("SQS queue {}", self.queue.url)
    }

    async fn receive(&self, wait: Duration) -> Result<Vec<Delivery>> {
        let secs = wait.min(MAX_WAIT).as_secs() as i32;
        let out = self
            .client
            .receive_message()
            .queue_url(&self.queue.url)
            .max_number_of_messages(BATCH as i32)
            .wait_time_seconds(secs)
            .send()
            .await
            .map_err(|e| map_sqs("ReceiveMessage", e))?;
        Ok(out
            .messages()
            .iter()
            .filter_map(|m| {
                Some(Delivery {
                    message_id: m.message_id()?.to_string(),
                    receipt: m.receipt_handle()?.to_string(),
                    event: m.body().and_then(parse_event),
                })
            })
            .collect())
    }

    async fn delete(&self, receipts: &[String]) -> Result<()> {
        for chunk in receipts.chunks(BATCH) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(r)
                        .build()
                        .map_err(|e| {
                            ProviderError::new(
                                ErrorKind::Invalid,
                                format!("SQS DeleteMessageBatch: {e}"),
                            )
                        })
                })
                .collect::<Result<Vec<_>>>()?;
            let out = self
                .client
                .delete_message_batch()
                .queue_url(&self.queue.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| map_sqs("DeleteMessageBatch", e))?;
            // A receipt that expired (the message was received again) is
            // not an error of ours: the newer delivery is deleted later.
            if let Some(f) = out
                .failed()
                .iter()
                .find(|f| f.code() != "ReceiptHandleIsInvalid")
            {
                return Err(ProviderError::new(
                    if f.sender_fault() {
                        ErrorKind::Invalid
                    } else {
                        ErrorKind::Transient
                    },
                    format!(
                        "SQS DeleteMessageBatch failed: {} {}",
                        f.code(),
                        f.message().unwrap_or("")
                    ),
                )
                .with_code(f.code()));
            }
        }
        Ok(())
    }
}

/// The event in an EventBridge message body, when it is one reconcile acts
/// on: `None` for anything else, and for a state change to a state that
/// loses no node.
pub fn parse_event(body: &str) -> Option<InstanceEvent> {
    let v: Value = serde_json::from_str(body).ok()?;
    if v.get("source").and_then(Value::as_str) != Some("aws.ec2") {
        return None;
    }
    let detail = v.get("detail")?;
    let instance_id = detail.get("instance-id")?.as_str()?.to_string();
    let state = detail
        .get("state")
        .and_then(Value::as_str)
        .map(str::to_string);
    let kind = match v.get("detail-type")?.as_str()? {
        SPOT_WARNING => EventKind::SpotInterruption,
        REBALANCE => EventKind::Rebalance,
        STATE_CHANGE if LOSING_STATES.contains(&state.as_deref()?) => EventKind::StateChange,
        _ => return None,
    };
    Some(InstanceEvent {
        kind,
        instance_id,
        time: v.get("time").and_then(Value::as_str).map(str::to_string),
        region: v.get("region").and_then(Value::as_str).map(str::to_string),
        state,
    })
}

/// The rules' event patterns: one for the spot notices, one for the
/// state changes that lose a node (a `detail.state` filter would drop the
/// spot events, which have no state).
pub fn event_patterns() -> [(&'static str, Value); 2] {
    [
        (
            "gpuform-ec2-spot",
            json!({"source": ["aws.ec2"], "detail-type": [SPOT_WARNING, REBALANCE]}),
        ),
        (
            "gpuform-ec2-state",
            json!({"source": ["aws.ec2"], "detail-type": [STATE_CHANGE],
                   "detail": {"state": LOSING_STATES}}),
        ),
    ]
}

/// What a user creates once for `--events`: in every region the spec's
/// AWS clusters use, the two rules; in the queue's region they target the
/// queue, elsewhere the queue region's default event bus (EventBridge
/// delivers to an SQS queue of its own region only; a cross-region bus
/// target needs a role allowed `events:PutEvents` on that bus); and the
/// queue policy letting the queue region's rules send to it
/// (https://docs.aws.amazon.com/eventbridge/latest/userguide/resource-based-policies-eventbridge.html#eb-sqs-permissions).
/// Without a queue URL, its parts are placeholders.
pub fn event_rules(queue: Option<&QueueUrl>, regions: &[String]) -> String {
    let queue_region = queue
        .and_then(|q| q.region.clone())
        .or_else(|| regions.first().cloned())
        .unwrap_or_else(|| "us-east-1".into());
    let account = queue.map_or("ACCOUNT_ID".to_string(), |q| q.account.clone());
    let name = queue.map_or("gpuform-events".to_string(), |q| q.name.clone());
    let queue_arn = format!("arn:aws:sqs:{queue_region}:{account}:{name}");
    let mut regions: Vec<String> = regions.to_vec();
    if !regions.contains(&queue_region) {
        regions.insert(0, queue_region.clone());
    }
    let mut out = String::new();
    out.push_str(&format!(
        "# EventBridge rules and SQS queue policy for `gpuform reconcile --events`.\n# Queue: {queue_arn}\n\n"
    ));
    for region in &regions {
        let target = if *region == queue_region {
            queue_arn.clone()
        } else {
            format!("arn:aws:events:{queue_region}:{account}:event-bus/default")
        };
        for (rule, pattern) in event_patterns() {
            out.push_str(&format!(
                "aws events put-rule --region {region} --name {rule} --event-pattern '{pattern}'\n"
            ));
            let role = if *region == queue_region {
                String::new()
            } else {
                ",RoleArn=arn:aws:iam::".to_string()
                    + &account
                    + ":role/ROLE_ALLOWED_EVENTS_PUT_EVENTS"
            };
            out.push_str(&format!(
                "aws events put-targets --region {region} --rule {rule} --targets 'Id=gpuform,Arn={target}{role}'\n"
            ));
        }
        out.push('\n');
    }
    let rule_arns: Vec<String> = event_patterns()
        .iter()
        .map(|(rule, _)| format!("arn:aws:events:{queue_region}:{account}:rule/{rule}"))
        .collect();
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "gpuform-events",
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": queue_arn,
            "Condition": {"ArnEquals": {"aws:SourceArn": rule_arns}}
        }]
    });
    out.push_str(&format!(
        "# The queue policy (SetQueueAttributes Policy), letting the rules above send to it:\n{}\n",
        serde_json::to_string_pretty(&policy).unwrap_or_default()
    ));
    out.push_str(
        "\n# gpuform needs sqs:ReceiveMessage and sqs:DeleteMessage on the queue. Give each state its own queue:\n# a message naming no instance of the state is deleted as not its own.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(detail_type: &str, detail: Value) -> String {
        json!({"version": "0", "id": "e-1", "detail-type": detail_type, "source": "aws.ec2",
               "account": "123456789012", "time": "2026-11-29T03:00:00Z", "region": "us-east-1",
               "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],
               "detail": detail})
        .to_string()
    }

    #[test]
    fn the_three_ec2_events_are_read_and_others_are_not() {
        let spot = parse_event(&event(
            SPOT_WARNING,
            json!({"instance-id": "i-0abc", "instance-action": "terminate"}),
        ))
        .unwrap();
        assert_eq!(spot.kind, EventKind::SpotInterruption);
        assert_eq!(spot.instance_id, "i-0abc");
        assert_eq!(spot.time.as_deref(), Some("2026-11-29T03:00:00Z"));
        assert_eq!(spot.region.as_deref(), Some("us-east-1"));
        let r = parse_event(&event(REBALANCE, json!({"instance-id": "i-0abc"}))).unwrap();
        assert_eq!(r.kind, EventKind::Rebalance);
        let gone = parse_event(&event(
            STATE_CHANGE,
            json!({"instance-id": "i-0abc", "state": "terminated"}),
        ))
        .unwrap();
        assert_eq!(gone.kind, EventKind::StateChange);
        assert_eq!(gone.state.as_deref(), Some("terminated"));
        for ignored in [
            event(
                STATE_CHANGE,
                json!({"instance-id": "i-0abc", "state": "running"}),
            ),
            event(STATE_CHANGE, json!({"instance-id": "i-0abc"})),
            event(
                "AWS API Call via CloudTrail",
                json!({"instance-id": "i-0abc"}),
            ),
            event(SPOT_WARNING, json!({})),
            event(SPOT_WARNING, json!({"instance-id": "i-0abc"})).replace("aws.ec2", "my.app"),
            "not json".into(),
            "{}".into(),
        ] {
            assert_eq!(parse_event(&ignored), None, "{ignored}");
        }
    }

    #[test]
    fn queue_urls_are_read_and_bad_ones_say_why() {
        let q =
            QueueUrl::parse("https://sqs.eu-west-1.amazonaws.com/123456789012/gf-events").unwrap();
        assert_eq!(q.region.as_deref(), Some("eu-west-1"));
        assert_eq!(
            (q.account.as_str(), q.name.as_str()),
            ("123456789012", "gf-events")
        );
        assert_eq!(
            QueueUrl::parse("https://sqs.cn-north-1.amazonaws.com.cn/1/q")
                .unwrap()
                .region
                .as_deref(),
            Some("cn-north-1")
        );
        assert_eq!(
            QueueUrl::parse("https://us-west-2.queue.amazonaws.com/1/q")
                .unwrap()
                .region
                .as_deref(),
            Some("us-west-2")
        );
        let moto = QueueUrl::parse("http://127.0.0.1:5576/123456789012/q").unwrap();
        assert_eq!(moto.region, None);
        assert_eq!(moto.origin, "http://127.0.0.1:5576");
        for (bad, why) in [
            ("sqs.us-east-1.amazonaws.com/1/q", "https://"),
            ("https://sqs.us-east-1.amazonaws.com/q", "/ACCOUNT/NAME"),
            ("https://sqs.us-east-1.amazonaws.com/abc/q", "digits"),
            ("https://sqs.us-east-1.amazonaws.com/1/q/x", "/ACCOUNT/NAME"),
            ("https://sqs.us-east-1.amazonaws.com/1/q w", "queue name"),
            ("http://sqs.us-east-1.amazonaws.com/1/q", "https"),
        ] {
            let e = QueueUrl::parse(bad).unwrap_err();
            assert!(e.contains(why) && e.contains("hint:"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_rules_target_the_queue_in_its_region_and_its_bus_elsewhere() {
        let q = QueueUrl::parse("https://sqs.us-east-1.amazonaws.com/123456789012/gf").unwrap();
        let text = event_rules(Some(&q), &["us-west-2".into(), "us-east-1".into()]);
        assert!(text.contains(
            "--region us-east-1 --rule gpuform-ec2-spot --targets 'Id=gpuform,Arn=arn:aws:sqs:us-east-1:123456789012:gf'"
        ), "{text}");
        assert!(text.contains(
            "--region us-west-2 --rule gpuform-ec2-spot --targets 'Id=gpuform,Arn=arn:aws:events:us-east-1:123456789012:event-bus/default,RoleArn="
        ), "{text}");
        assert!(
            text.contains(SPOT_WARNING) && text.contains(REBALANCE) && text.contains(STATE_CHANGE)
        );
        assert!(text.contains("\"aws:SourceArn\""));
        assert!(text.contains("arn:aws:events:us-east-1:123456789012:rule/gpuform-ec2-state"));
        let placeholders = event_rules(None, &["eu-west-1".into()]);
        assert!(placeholders.contains("arn:aws:sqs:eu-west-1:ACCOUNT_ID:gpuform-events"));
    }
}
