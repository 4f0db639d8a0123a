//! Tencent Cloud API 3.0 error codes → neutral error kinds.
//!
//! Sources: the common error codes of API 3.0 ("Error Codes" page of every
//! product, e.g. https://www.tencentcloud.com/document/api/213/15694) and the
//! per-product codes listed on each action's page (CVM RunInstances
//! https://www.tencentcloud.com/document/api/213/33237, VPC, CBS). A code is
//! `Category` or `Category.Detail`; we classify by exact code first, then by
//! category prefix.

use gpuform_provider::{ErrorKind, ProviderError};

/// The neutral kind of a Tencent error code.
pub fn classify(code: &str) -> ErrorKind {
    // Exact codes whose category alone would mislead.
    match code {
        // Spot bid lost / no spot stock: another zone (or on-demand) may have it.
        "InvalidParameterValue.InsufficientOffering"
        | "InvalidParameterValue.InsufficientPrice" => return ErrorKind::Capacity,
        // "This zone does not sell this instance type": the next zone may.
        "ResourceUnavailable.InstanceType" | "ResourceNotFound.InvalidZoneInstanceType" => {
            return ErrorKind::Capacity
        }
        // A spread placement group holds a bounded number of instances (its
        // CvmInHostGroupQuota / CvmInSwitchGroupQuota / CvmInRackGroupQuota,
        // DescribeDisasterRecoverGroupQuota https://cloud.tencent.com/document/api/213/17811,
        // 213/33262): a full group is a quota, not a zone out of stock, and
        // another zone would not help.
        "ResourceInsufficient.DisasterRecoverGroupCvmQuota" => return ErrorKind::Quota,
        "InstancesQuotaLimitExceeded"
        | "UnsupportedOperation.InsufficientClusterQuota"
        | "InvalidParameterValue.TagQuotaLimitExceeded"
        | "InvalidAccount.InsufficientBalance"
        | "InvalidAccount.UnpaidOrder" => return ErrorKind::Quota,
        // A placement group / HPC cluster that still holds instances.
        "FailedOperation.PlacementSetNotEmpty" => return ErrorKind::DependencyViolation,
        // The same job is already running on the resource, or it is busy: try again.
        "ResourceBusy"
        | "MutexOperation.TaskRunning"
        | "OperationDenied.InstanceOperationInProgress"
        | "FailedOperation.InvalidImageState"
        | "UnsupportedOperation.InstanceStatePending"
        | "UnsupportedOperation.InstanceStateStarting"
        | "UnsupportedOperation.InstanceStateRebooting"
        | "UnsupportedOperation.InstanceStateStopping" => return ErrorKind::Transient,
        "FailedOperation.DisasterRecoverGroupNotFound" => return ErrorKind::NotFound,
        "InvalidImageId.NotFound" => return ErrorKind::Invalid,
        _ => {}
    }
    let starts = |p: &str| code.starts_with(p);
    if starts("RequestLimitExceeded") {
        ErrorKind::Throttled
    } else if starts("AuthFailure") || starts("UnauthorizedOperation") {
        ErrorKind::Auth
    } else if starts("ResourceInsufficient") || starts("ResourcesSoldOut") {
        ErrorKind::Capacity
    } else if starts("LimitExceeded") || code.ends_with("QuotaLimitExceeded") || code == "OverQuota"
    {
        ErrorKind::Quota
    } else if starts("ResourceNotFound") || code.ends_with(".NotFound") {
        ErrorKind::NotFound
    } else if starts("ResourceInUse") || starts("DependencyViolation") {
        ErrorKind::DependencyViolation
    } else if starts("InternalError")
        || code == "InternalServerError"
        || starts("ServiceUnavailable")
    {
        ErrorKind::Transient
    } else {
        // InvalidParameter*, InvalidParameterValue.*, MissingParameter,
        // UnknownParameter, InvalidAction, NoSuchVersion, Unsupported*,
        // InvalidZone.*, and anything undocumented: retrying will not help.
        ErrorKind::Invalid
    }
}

/// A hint appended to messages of some kinds, so the user knows what to do.
pub fn hint(kind: ErrorKind, code: &str) -> Option<&'static str> {
    match kind {
        ErrorKind::Quota if code == "ResourceInsufficient.DisasterRecoverGroupCvmQuota" => Some(
            "the placement group is full (instances per spread placement group, see DescribeDisasterRecoverGroupQuota); use fewer nodes per group or ask Tencent Cloud to raise the quota",
        ),
        ErrorKind::Auth if code.starts_with("AuthFailure") => Some(
            "check TENCENTCLOUD_SECRET_ID / TENCENTCLOUD_SECRET_KEY (and TENCENTCLOUD_SESSION_TOKEN for temporary keys) and the machine's clock",
        ),
        ErrorKind::Auth => Some("the key lacks a CAM permission for this action"),
        ErrorKind::Quota => Some(
            "an account quota or balance limit was hit; raise it in the Tencent Cloud console (quota centre) or lower the request",
        ),
        ErrorKind::Capacity => Some("no stock for this type here right now; another zone may have it"),
        _ => None,
    }
}

/// A successful answer without the field its page documents (a proxy, a
/// throttling front end, a truncated body) is an error, never "nothing":
/// read as an empty list it would plan creates for what exists.
pub(crate) fn undocumented(action: &str, field: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Transient,
        format!("{action}: the answer has no `{field}`, which the API documents; not reading it as empty"),
    )
}

/// While creating, a referenced resource that is gone is a bad request, not
/// "this resource does not exist".
pub(crate) fn reference_gone_is_invalid(mut e: ProviderError) -> ProviderError {
    if e.kind == ErrorKind::NotFound {
        e.kind = ErrorKind::Invalid;
        e.message
            .push_str("\n  hint: a resource this one refers to no longer exists");
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_codes() {
        let cases: [(ErrorKind, &[&str]); 7] = [
            (
                ErrorKind::Capacity,
                &[
                    "ResourceInsufficient.SpecifiedInstanceType",
                    "ResourceInsufficient.ZoneSoldOutForSpecifiedInstance",
                    "ResourcesSoldOut.SpecifiedInstanceType",
                    "InvalidParameterValue.InsufficientOffering",
                ],
            ),
            (
                ErrorKind::Quota,
                &[
                    "LimitExceeded.InstanceQuota",
                    "LimitExceeded.SpotQuota",
                    "InstancesQuotaLimitExceeded",
                    "ResourceInsufficient.DisasterRecoverGroupCvmQuota",
                ],
            ),
            (
                ErrorKind::Throttled,
                &[
                    "RequestLimitExceeded",
                    "RequestLimitExceeded.UinLimitExceeded",
                ],
            ),
            (
                ErrorKind::Auth,
                &[
                    "AuthFailure.SignatureFailure",
                    "AuthFailure.SecretIdNotFound",
                    "UnauthorizedOperation",
                ],
            ),
            (
                ErrorKind::Invalid,
                &[
                    "InvalidParameter",
                    "InvalidParameterValue.Range",
                    "InvalidParameterValue.LimitExceeded",
                    "MissingParameter",
                    "InvalidImageId.NotFound",
                ],
            ),
            (
                ErrorKind::NotFound,
                &[
                    "ResourceNotFound",
                    "ResourceNotFound.InvalidPlacementSet",
                    "InvalidInstanceId.NotFound",
                    "InvalidDiskId.NotFound",
                ],
            ),
            (
                ErrorKind::DependencyViolation,
                &["ResourceInUse", "FailedOperation.PlacementSetNotEmpty"],
            ),
        ];
        for (kind, codes) in cases {
            for code in codes {
                assert_eq!(classify(code), kind, "{code}");
            }
        }
        for code in [
            "InternalError",
            "InternalError.TradeUnknownError",
            "ResourceBusy",
        ] {
            assert_eq!(classify(code), ErrorKind::Transient, "{code}");
        }
    }

    #[test]
    fn a_gone_reference_is_a_bad_request() {
        let gone = ProviderError::new(ErrorKind::NotFound, "RunInstances: no such subnet");
        let e = reference_gone_is_invalid(gone.clone());
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert!(e.message.contains("no longer exists"), "{e}");
        let busy = ProviderError::new(ErrorKind::Transient, "busy");
        assert_eq!(reference_gone_is_invalid(busy.clone()), busy);
    }
}
