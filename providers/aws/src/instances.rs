//! The instance helpers compute and storage share: an instance that
//! exists, looked up by id, and a new launch waited out of `pending`.

use crate::client::{by_id, describe_instances, millis_from_env};
use crate::observe::is_gone;
use aws_sdk_ec2::types::{Instance, InstanceStateName};
use aws_sdk_ec2::Client;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
use std::time::Duration;

/// How long a create watches a new instance leave `pending`: a launch EC2
/// cannot complete goes `pending` → `shutting-down` → `terminated` (StateReason,
/// EC2 API reference), and that is a failed create, not a node. Past this
/// bound the instance is recorded as it is; if it ends terminated later,
/// refresh sees it gone and the plan re-creates it. `GPUFORM_AWS_LAUNCH_WAIT_MS`
/// overrides it (0: do not wait).
pub(crate) fn launch_wait() -> Duration {
    millis_from_env("GPUFORM_AWS_LAUNCH_WAIT_MS", Duration::from_secs(180))
}

/// Polls a new instance until it leaves `pending` or `wait` has passed; a
/// launch that ended is an error ([`launch_failure`]).
pub(crate) async fn wait_launched(
    c: &Client,
    mut inst: Instance,
    wait: Duration,
) -> Result<Instance> {
    let id = inst.instance_id().unwrap_or_default().to_string();
    let mut backoff =
        gpuform_provider::Backoff::new(Duration::from_millis(200), Duration::from_secs(5))
            .until(wait);
    loop {
        if let Some(e) = launch_failure(&inst) {
            return Err(e);
        }
        let pending = matches!(
            inst.state().and_then(|s| s.name()),
            None | Some(InstanceStateName::Pending)
        );
        if !pending || id.is_empty() || !backoff.sleep().await {
            return Ok(inst);
        }
        // Eventual consistency: a new instance may not be listed yet.
        if let Some(i) = describe_instances(c, by_id("instance-id", &id))
            .await?
            .into_iter()
            .next()
        {
            inst = i;
        }
    }
}

/// A new instance that went to `shutting-down` or `terminated` failed to
/// launch. Its StateReason code (EC2 API reference, "StateReason") says why:
/// `Server.InsufficientInstanceCapacity` is capacity (the engine fails over
/// to the next zone); other `Server.*` reasons (an internal error, a Spot
/// interruption) are classed as capacity too, since retrying with the same
/// ClientToken would only return the same terminated instance;
/// `Client.VolumeLimitExceeded` is a quota; other `Client.*` reasons (a KMS
/// or snapshot problem, a shutdown from the OS) are the request's fault.
/// Nothing is left to clean up: a terminated instance releases everything.
pub fn launch_failure(i: &Instance) -> Option<ProviderError> {
    if !is_gone(i) {
        return None;
    }
    let id = i.instance_id().unwrap_or("?");
    let code = i.state_reason().and_then(|r| r.code()).unwrap_or("");
    let message = i.state_reason().and_then(|r| r.message()).unwrap_or("");
    let kind = if code == "Client.VolumeLimitExceeded" {
        ErrorKind::Quota
    } else if code.starts_with("Client.") {
        ErrorKind::Invalid
    } else {
        ErrorKind::Capacity
    };
    let hint = match kind {
        ErrorKind::Capacity => {
            "AWS could not launch it in this zone; another zone or a later try may succeed"
        }
        ErrorKind::Quota => {
            "an EBS volume or storage limit of the account; raise it in the Service Quotas console"
        }
        _ => "check the image, its snapshots and KMS keys, and the user data",
    };
    let why = if code.is_empty() {
        String::new()
    } else {
        format!(" ({code}: {message})")
    };
    Some(
        ProviderError::new(
            kind,
            format!("RunInstances: instance {id} terminated while launching{why}\n  hint: {hint}"),
        )
        .with_code(if code.is_empty() {
            "LaunchFailed"
        } else {
            code
        }),
    )
}

/// An instance that exists (not terminated or shutting down), for what
/// refers to it; its absence is the caller's input problem.
pub(crate) async fn existing_instance(c: &Client, id: &str) -> Result<Instance> {
    describe_instances(c, by_id("instance-id", id))
        .await?
        .into_iter()
        .find(|i| !is_gone(i))
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("instance {id} to attach the volume to does not exist"),
            )
            .with_code("InvalidInstanceID.NotFound")
        })
}
