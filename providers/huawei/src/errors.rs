//! Huawei Cloud's error answers → neutral [`ErrorKind`]s, and the errors
//! this provider makes itself with a Huawei-specific hint (unpaid orders,
//! prepaid servers, servers that failed to build).

use crate::client::{s, sub_jobs};
use gpuform_provider::{ErrorKind, ProviderError};
use serde_json::Value;

/// The error a finished answer carries, if any: a 2xx is a success only when
/// it does not carry an error body (the ECS error table, "Error Codes",
/// support.huaweicloud.com/api-ecs/ecs_07_0002.html, lists flow control as
/// `202 Common.0024 exceeds flow over limit`). `what` names the call.
pub fn answer_error(
    status: u16,
    json: &Value,
    what: &str,
    request_id: Option<String>,
) -> Option<ProviderError> {
    if (200..300).contains(&status) && !is_error_body(json) {
        return None;
    }
    let (code, msg) = error_fields(json);
    let kind = classify(status, code.as_deref(), &msg);
    let msg = if msg.is_empty() {
        format!("HTTP {status}")
    } else {
        msg
    };
    let mut e = ProviderError::new(kind, format!("{what}: {msg}"));
    if let Some(c) = code {
        e = e.with_code(c);
    }
    if let Some(r) = request_id {
        e = e.with_request_id(r);
    }
    Some(e)
}

/// A job that ended in FAIL ("Querying Job Execution Status",
/// ecs_02_0901): the reason of its failed sub-job when there is one, the
/// job's own otherwise, classified like an answer.
pub fn job_failed(job_id: &str, job: &Value) -> ProviderError {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let code = text(job, "error_code");
    let reason = sub_jobs(job)
        .filter(|j| s(j, "status") == "FAIL")
        .find_map(|j| text(j, "fail_reason"))
        .or_else(|| text(job, "fail_reason"))
        .unwrap_or_else(|| "no reason given".to_string());
    let kind = classify(400, code.as_deref(), &reason);
    let mut e = ProviderError::new(kind, format!("job {job_id} failed: {reason}"));
    if let Some(c) = code.or_else(|| sub_jobs(job).find_map(|j| text(j, "error_code"))) {
        e = e.with_code(c);
    }
    e
}

/// A yearly/monthly order waiting to be paid: nothing happens until someone
/// pays it ("Querying Job Execution Status", ecs_02_0901: PENDING_PAYMENT),
/// so polling on is pointless. `order` is the order id when the create
/// answered one.
pub fn pending_payment(job_id: &str, order: Option<&str>) -> ProviderError {
    let message = match order {
        None => format!("job {job_id} is PENDING_PAYMENT: the yearly/monthly order awaits payment\n  hint: pay it in the Billing Center (Orders > My Orders) or let auto-pay settle it, then apply again"),
        Some(order) => format!("the yearly/monthly order {order} awaits payment (job {job_id} is PENDING_PAYMENT)\n  hint: pay it in the Billing Center (or top up the balance auto-pay draws on), then apply again"),
    };
    ProviderError::new(ErrorKind::Invalid, message).with_code(PENDING_PAYMENT)
}

/// The code [`pending_payment`] errors carry.
pub const PENDING_PAYMENT: &str = "PENDING_PAYMENT";

/// Servers that went to ERROR right after CreateServers (and were deleted):
/// ERROR is ECS's failure state ("ECS Statuses",
/// support.huaweicloud.com/api-ecs/ecs_08_0002.html), so this zone could not
/// build them; capacity, so the engine fails over to the next zone.
pub fn build_failed(ids: &[&str]) -> ProviderError {
    ProviderError::new(
        ErrorKind::Capacity,
        format!(
            "server {} went to ERROR after CreateServers and was deleted; this zone could not build it",
            ids.join(", ")
        ),
    )
    .with_code("ERROR")
}

/// Why DeleteServers would refuse this server, if it would: "Only ECSs
/// billed in the pay-per-use mode can be deleted" ("Deleting ECSs",
/// support.huaweicloud.com/intl/en-us/api-ecs/ecs_02_0103.html).
/// Yearly/monthly servers (`metadata.charging_mode` = "1", "Querying ECS
/// Details") end by unsubscription in the Billing Center.
pub fn undeletable(server: &Value) -> Option<ProviderError> {
    let md = server.get("metadata").unwrap_or(&Value::Null);
    (s(md, "charging_mode") == "1").then(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "server {} is yearly/monthly (prepaid): DeleteServers only deletes pay-per-use servers\n  hint: unsubscribe it in the Billing Center (Orders > Unsubscriptions); gpuform then sees it gone",
                s(server, "id")
            ),
        )
        .with_code("Ecs.0513")
    })
}

/// The error code and message from any of Huawei's error body shapes:
/// ECS `{"error": {"code", "message"}}`, APIG/EVS/IMS `{"error_code", "error_msg"}`,
/// VPC `{"code", "message"}`, Neutron `{"NeutronError": {"type", "message"}}`
/// and the OpenStack-style fault wrappers EVS answers with
/// (`{"badRequest": {"code", "message"}}`, `{"itemNotFound": {"message", "code": 404}}`,
/// see the error examples of the EVS/VBS references, support.huaweicloud.com/api-evs/).
/// `(None, _)` means the body is not an error.
pub fn error_fields(v: &Value) -> (Option<String>, String) {
    // Codes are strings, except in the fault wrappers where 404 is a number.
    let code = |v: Option<&Value>| match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let msg = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_default()
    };
    if let Some(e) = v.get("error").filter(|e| e.is_object()) {
        return (code(e.get("code")), msg(e.get("message")));
    }
    if v.get("error_code").is_some() {
        return (code(v.get("error_code")), msg(v.get("error_msg")));
    }
    if let Some(e) = v.get("NeutronError") {
        return (code(e.get("type")), msg(e.get("message")));
    }
    for f in FAULTS {
        if let Some(e) = v.get(f).filter(|e| e.is_object()) {
            let c = code(e.get("code")).or_else(|| Some(f.to_string()));
            return (c, msg(e.get("message")));
        }
    }
    (code(v.get("code")), msg(v.get("message")))
}

/// Whether a 2xx body is in fact an error answer. Job bodies carry
/// `error_code` of the job itself, so only the error wrappers count.
fn is_error_body(v: &Value) -> bool {
    let wrapped = |k: &str| v.get(k).is_some_and(Value::is_object);
    wrapped("error")
        || FAULTS.iter().any(|f| wrapped(f))
        || (v.get("error_code").is_some_and(Value::is_string)
            && v.get("job_id").is_none()
            && v.get("status").is_none())
}

/// OpenStack-style fault wrappers (EVS/VBS error examples).
const FAULTS: [&str; 7] = [
    "badRequest",
    "badrequest",
    "itemNotFound",
    "itemnotfound",
    "overLimit",
    "forbidden",
    "computeFault",
];

/// Huawei error → neutral kind. Sources: API Gateway error codes
/// (support.huaweicloud.com/devg-apisign/api-sign-errorcode.html), ECS error
/// codes (support.huaweicloud.com/api-ecs/ecs_07_0002.html), VPC and EVS error
/// code pages. Capacity has no single documented code (jobs fail with a
/// reason text), so it is recognised by the message as well.
pub fn classify(status: u16, code: Option<&str>, msg: &str) -> ErrorKind {
    let code = code.unwrap_or("");
    let m = msg.to_ascii_lowercase();
    // Common.0024 "exceeds flow over limit" (ECS error codes, ecs_07_0002).
    if status == 429
        || code == "APIGW.0308"
        || code == "Common.0024"
        || m.contains("flow over limit")
        || m.contains("throttl")
        || m.contains("too many requests")
    {
        return ErrorKind::Throttled;
    }
    // APIGW.0101: "The API does not exist" — a wrong endpoint or region, not a
    // missing resource (a delete must not count it as done).
    if code == "APIGW.0101" {
        return ErrorKind::Invalid;
    }
    if code.starts_with("APIGW.03") || status == 401 || code == "Ecs.0003" {
        return ErrorKind::Auth;
    }
    // IAM's refusal names the action, which may mention quotas
    // (`ecs:cloudServerQuotas:get`): it is a permission, not a full quota.
    if status == 403 && (m.contains("policy doesn't allow") || m.contains("not authorized")) {
        return ErrorKind::Auth;
    }
    let capacity = [
        "sold out",
        "insufficient resource",
        "insufficient capacity",
        "no valid host",
        "not enough resource",
        "resources are insufficient",
    ];
    if capacity.iter().any(|c| m.contains(c)) {
        return ErrorKind::Capacity;
    }
    if code == "Ecs.0001" || m.contains("quota") {
        return ErrorKind::Quota;
    }
    if status == 403 {
        return ErrorKind::Auth;
    }
    if status == 404 {
        return ErrorKind::NotFound;
    }
    let in_use = [
        "in use",
        "in-use",
        "still has",
        "still contains",
        "is being used",
        "has dependen",
        "associated with",
    ];
    if status == 409 || in_use.iter().any(|c| m.contains(c)) {
        return ErrorKind::DependencyViolation;
    }
    if status >= 500 {
        return ErrorKind::Transient;
    }
    ErrorKind::Invalid
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_shapes() {
        assert_eq!(
            error_fields(&json!({"error": {"code": "Ecs.0005", "message": "bad"}})),
            (Some("Ecs.0005".into()), "bad".into())
        );
        assert_eq!(
            error_fields(&json!({"error_code": "APIGW.0301", "error_msg": "sig"})),
            (Some("APIGW.0301".into()), "sig".into())
        );
        assert_eq!(
            error_fields(&json!({"code": "VPC.0202", "message": "x"})),
            (Some("VPC.0202".into()), "x".into())
        );
    }

    #[test]
    fn kinds() {
        use ErrorKind::*;
        let cases = [
            (429, Some("APIGW.0308"), "", Throttled),
            (401, Some("APIGW.0301"), "verify aksk signature fail", Auth),
            (404, Some("APIGW.0101"), "The API does not exist", Invalid),
            (400, Some("Ecs.0001"), "Insufficient ECS quota", Quota),
            (
                403,
                Some("Ecs.0319"),
                "Policy doesn't allow ecs:cloudServerQuotas:get to be performed.",
                Auth,
            ),
            (
                400,
                Some("Ecs.0000"),
                "flavor p2s.2xlarge.8 is sold out in cn-north-4a",
                Capacity,
            ),
            (404, Some("Ecs.0114"), "server not found", NotFound),
            (
                409,
                Some("VPC.0106"),
                "vpc still has subnets",
                DependencyViolation,
            ),
            (503, None, "", Transient),
            (400, Some("Ecs.0005"), "Invalid parameter values", Invalid),
        ];
        for (status, code, message, want) in cases {
            assert_eq!(
                classify(status, code, message),
                want,
                "{status} {code:?} {message:?}"
            );
        }
    }
}
