//! Alibaba Cloud error codes → neutral error kinds.
//!
//! Sources: the "Error codes" table of each API reference page (RunInstances,
//! CreateDisk, DeleteVpc, DeleteSecurityGroup ...) and the common error codes
//! of the OpenAPI gateway (SignatureDoesNotMatch, InvalidAccessKeyId.NotFound,
//! InvalidTimeStamp.Expired, SignatureNonceUsed, Throttling*, InternalError,
//! ServiceUnavailable). The match is on the code first; the HTTP status
//! decides only for codes this table does not know.

use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};

/// The neutral kind of an Alibaba error `code` answered with HTTP `status`.
pub fn classify(code: Option<&str>, status: u16) -> ErrorKind {
    let Some(code) = code else {
        return by_status(status);
    };
    let starts = |p: &str| code.starts_with(p);
    // Capacity: the zone has no stock of that type now; another zone may.
    if starts("OperationDenied.NoStock")
        || starts("Zone.NotOnSale")
        || starts("InvalidResourceType.NotSupported")
        || starts("OperationDenied.ResourceControl")
        || code == "ResourceNotAvailable"
        || starts("InvalidZoneId.NotSupportShareEncryptedImage")
    {
        return ErrorKind::Capacity;
    }
    // Account limits.
    if starts("QuotaExceed")
        || starts("QuotaExceeded")
        || starts("Quota.Exceeded")
        || starts("InvalidAccountStatus")
        || starts("Account.Arrearage")
        || starts("InsufficientBalance")
    {
        return ErrorKind::Quota;
    }
    if starts("Throttling") || code == "ServiceUnavailable.Throttling" {
        return ErrorKind::Throttled;
    }
    // Credentials: checked before the generic `*.NotFound` rule, since the
    // unknown-key code is `InvalidAccessKeyId.NotFound`.
    if starts("InvalidAccessKeyId")
        || starts("SignatureDoesNotMatch")
        || starts("IncompleteSignature")
        || starts("InvalidSecurityToken")
        || starts("InvalidTimeStamp")
        || code == "SignatureNonceUsed"
        || starts("Forbidden.AccessKey")
        || starts("Forbidden.RAM")
        || starts("NoPermission")
        || starts("Forbidden.Unauthorized")
        || code == "Forbidden"
        || code == "InvalidUser.Unauthorized"
    {
        return ErrorKind::Auth;
    }
    if starts("DependencyViolation") {
        return ErrorKind::DependencyViolation;
    }
    if code.ends_with(".NotFound") || code.ends_with("NotFound") {
        return ErrorKind::NotFound;
    }
    // A resource in a transitional state (an instance still Pending, a disk
    // still attaching, a VPC still Creating): the same call succeeds later.
    if (code.starts_with("Incorrect") && code.contains("Status"))
        || code == "TaskConflict"
        || code == "OperationConflict"
        || starts("LastTokenProcessing")
        || starts("IdempotenceProcessing")
        || code == "InstanceNotReady"
    {
        return ErrorKind::Transient;
    }
    if starts("InternalError")
        || starts("ServiceUnavailable")
        || starts("InternalFailure")
        || starts("UnknownError")
    {
        return ErrorKind::Transient;
    }
    if starts("Forbidden") {
        return ErrorKind::Auth;
    }
    if starts("Invalid")
        || starts("MissingParameter")
        || starts("Missing")
        || starts("IdempotentParameterMismatch")
        || starts("OperationDenied")
        || starts("UnsupportedParameter")
    {
        return ErrorKind::Invalid;
    }
    by_status(status)
}

fn by_status(status: u16) -> ErrorKind {
    match status {
        429 => ErrorKind::Throttled,
        401 | 403 => ErrorKind::Auth,
        404 => ErrorKind::NotFound,
        s if s >= 500 => ErrorKind::Transient,
        _ => ErrorKind::Invalid,
    }
}

/// A request that got no HTTP answer (connect failure, timeout, reset):
/// always safe to retry for Alibaba calls that carry a ClientToken, and
/// harmless for reads.
pub fn transport_error(action: &str, e: &reqwest::Error) -> ProviderError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "failed in transport"
    };
    ProviderError::new(ErrorKind::Transient, format!("{action} {what}: {e}"))
}

/// A delete or detach that finds its target gone has nothing left to do.
pub(crate) fn ok_if_gone(r: Result<serde_json::Value>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// An attribute that is optional in general but that ECS requires.
pub(crate) fn missing(kind: &str, attr: &str) -> ProviderError {
    ProviderError::new(ErrorKind::Invalid, format!("a {kind} needs `{attr}`"))
}

/// A reference (`subnet`, `firewall`, `instance`) that is optional in
/// general but that ECS requires.
pub(crate) fn required_ref<'a>(
    value: Option<&'a String>,
    kind: &str,
    address: &str,
    role: &str,
) -> Result<&'a str> {
    value.map(String::as_str).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("{kind} {address} needs a `{role}` reference"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_codes() {
        let k = |c: &str, s: u16| classify(Some(c), s);
        assert_eq!(k("OperationDenied.NoStock", 403), ErrorKind::Capacity);
        assert_eq!(k("Zone.NotOnSale", 403), ErrorKind::Capacity);
        assert_eq!(
            k("InvalidResourceType.NotSupported", 403),
            ErrorKind::Capacity
        );
        assert_eq!(k("QuotaExceed.ElasticQuotaNo", 403), ErrorKind::Quota);
        assert_eq!(
            k("InvalidAccountStatus.NotEnoughBalance", 403),
            ErrorKind::Quota
        );
        assert_eq!(k("Throttling.User", 400), ErrorKind::Throttled);
        assert_eq!(k("Throttling", 400), ErrorKind::Throttled);
        assert_eq!(k("InvalidAccessKeyId.NotFound", 404), ErrorKind::Auth);
        assert_eq!(k("SignatureDoesNotMatch", 400), ErrorKind::Auth);
        assert_eq!(k("Forbidden.RAM", 403), ErrorKind::Auth);
        assert_eq!(k("InvalidParameter", 400), ErrorKind::Invalid);
        assert_eq!(k("InvalidVpcId.Malformed", 400), ErrorKind::Invalid);
        assert_eq!(k("InvalidInstanceId.NotFound", 404), ErrorKind::NotFound);
        assert_eq!(k("InvalidVpcId.NotFound", 404), ErrorKind::NotFound);
        assert_eq!(k("Forbidden.VpcNotFound", 400), ErrorKind::NotFound);
        assert_eq!(
            k("DependencyViolation.VSwitch", 400),
            ErrorKind::DependencyViolation
        );
        assert_eq!(
            k("DependencyViolation", 403),
            ErrorKind::DependencyViolation
        );
        assert_eq!(k("InternalError", 500), ErrorKind::Transient);
        assert_eq!(k("ServiceUnavailable", 503), ErrorKind::Transient);
        assert_eq!(k("IncorrectInstanceStatus", 403), ErrorKind::Transient);
        assert_eq!(k("SomethingNew", 503), ErrorKind::Transient);
        assert_eq!(classify(None, 500), ErrorKind::Transient);
    }
}
