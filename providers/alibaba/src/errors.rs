//! Alibaba Cloud error codes → neutral error kinds.
//!
//! Sources: the "Error codes" table of each API reference page (RunInstances,
//! CreateDisk, DeleteVpc, DeleteSecurityGroup ...) and the common error codes
//! of the OpenAPI gateway (SignatureDoesNotMatch, InvalidAccessKeyId.NotFound,
//! InvalidTimeStamp.Expired, SignatureNonceUsed, Throttling*, InternalError,
//! ServiceUnavailable). The match is on the code first; the HTTP status
//! decides only for codes this table does not know.

use gpuform_provider::ErrorKind;

/// How a rule recognises a code.
enum Code {
    /// The code starts so (its `.`-qualified variants too).
    Starts(&'static str),
    /// Exactly this code.
    Is(&'static str),
    /// The code ends so.
    Ends(&'static str),
    /// The code starts with the first and also contains the second.
    StartsAndHas(&'static str, &'static str),
}

impl Code {
    fn matches(&self, code: &str) -> bool {
        match *self {
            Code::Starts(p) => code.starts_with(p),
            Code::Is(c) => code == c,
            Code::Ends(s) => code.ends_with(s),
            Code::StartsAndHas(p, part) => code.starts_with(p) && code.contains(part),
        }
    }
}

use Code::{Ends, Is, Starts, StartsAndHas};

/// The rules, in order: the first that knows a code decides its kind.
const RULES: &[(ErrorKind, &[Code])] = &[
    // Capacity: the zone has no stock of that type now; another zone may.
    (
        ErrorKind::Capacity,
        &[
            Starts("OperationDenied.NoStock"),
            Starts("Zone.NotOnSale"),
            Starts("InvalidResourceType.NotSupported"),
            Starts("OperationDenied.ResourceControl"),
            Is("ResourceNotAvailable"),
            Starts("InvalidZoneId.NotSupportShareEncryptedImage"),
            // The targeted private pool is used up (RunInstances), as EC2's
            // ReservationCapacityExceeded is for a reservation.
            Is("Invalid.PrivatePoolOptions.NoStock"),
        ],
    ),
    // Account limits.
    (
        ErrorKind::Quota,
        &[
            Starts("QuotaExceed"),
            Starts("QuotaExceeded"),
            Starts("Quota.Exceeded"),
            Starts("InvalidAccountStatus"),
            Starts("Account.Arrearage"),
            Starts("InsufficientBalance"),
        ],
    ),
    (
        ErrorKind::Throttled,
        &[Starts("Throttling"), Is("ServiceUnavailable.Throttling")],
    ),
    // Credentials: checked before the generic `*.NotFound` rule, since the
    // unknown-key code is `InvalidAccessKeyId.NotFound`.
    (
        ErrorKind::Auth,
        &[
            Starts("InvalidAccessKeyId"),
            Starts("SignatureDoesNotMatch"),
            Starts("IncompleteSignature"),
            Starts("InvalidSecurityToken"),
            Starts("InvalidTimeStamp"),
            Is("SignatureNonceUsed"),
            Starts("Forbidden.AccessKey"),
            Starts("Forbidden.RAM"),
            Starts("NoPermission"),
            Starts("Forbidden.Unauthorized"),
            Is("Forbidden"),
            Is("InvalidUser.Unauthorized"),
        ],
    ),
    (
        ErrorKind::DependencyViolation,
        &[Starts("DependencyViolation")],
    ),
    // `*.NotFound` and `*NotFound` (`Forbidden.VpcNotFound`).
    (ErrorKind::NotFound, &[Ends("NotFound")]),
    // A resource in a transitional state (an instance still Pending, a disk
    // still attaching, a VPC still Creating): the same call succeeds later.
    (
        ErrorKind::Transient,
        &[
            StartsAndHas("Incorrect", "Status"),
            Is("TaskConflict"),
            Is("OperationConflict"),
            Starts("LastTokenProcessing"),
            Starts("IdempotenceProcessing"),
            Is("InstanceNotReady"),
            Starts("InternalError"),
            Starts("ServiceUnavailable"),
            Starts("InternalFailure"),
            Starts("UnknownError"),
        ],
    ),
    (ErrorKind::Auth, &[Starts("Forbidden")]),
    (
        ErrorKind::Invalid,
        &[
            Starts("Invalid"),
            Starts("MissingParameter"),
            Starts("Missing"),
            Starts("IdempotentParameterMismatch"),
            Starts("OperationDenied"),
            Starts("UnsupportedParameter"),
        ],
    ),
];

/// The neutral kind of an Alibaba error `code` answered with HTTP `status`.
pub fn classify(code: Option<&str>, status: u16) -> ErrorKind {
    let Some(code) = code else {
        return by_status(status);
    };
    RULES
        .iter()
        .find(|(_, rules)| rules.iter().any(|r| r.matches(code)))
        .map_or_else(|| by_status(status), |(kind, _)| *kind)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_codes() {
        use ErrorKind::*;
        let cases = [
            ("OperationDenied.NoStock", 403, Capacity),
            ("Zone.NotOnSale", 403, Capacity),
            ("InvalidResourceType.NotSupported", 403, Capacity),
            ("QuotaExceed.ElasticQuotaNo", 403, Quota),
            ("InvalidAccountStatus.NotEnoughBalance", 403, Quota),
            ("Throttling.User", 400, Throttled),
            ("Throttling", 400, Throttled),
            ("InvalidAccessKeyId.NotFound", 404, Auth),
            ("SignatureDoesNotMatch", 400, Auth),
            ("Forbidden.RAM", 403, Auth),
            ("InvalidParameter", 400, Invalid),
            ("InvalidVpcId.Malformed", 400, Invalid),
            ("InvalidInstanceId.NotFound", 404, NotFound),
            ("InvalidVpcId.NotFound", 404, NotFound),
            ("Forbidden.VpcNotFound", 400, NotFound),
            ("DependencyViolation.VSwitch", 400, DependencyViolation),
            ("DependencyViolation", 403, DependencyViolation),
            ("InternalError", 500, Transient),
            ("ServiceUnavailable", 503, Transient),
            ("IncorrectInstanceStatus", 403, Transient),
            ("SomethingNew", 503, Transient),
        ];
        for (code, status, want) in cases {
            assert_eq!(classify(Some(code), status), want, "{code} ({status})");
        }
        assert_eq!(classify(None, 500), Transient);
    }
}
