//! EC2 errors mapped to gpuform's neutral error kinds.
//!
//! The mapping is a pure function of the EC2 error code (and the HTTP status
//! when there is no code), so it is unit-tested as a table. Every
//! [`ProviderError`] built here carries the EC2 code and request id, and never
//! anything from the request's credentials: messages come from EC2's own error
//! body (which never echoes secrets) or from this module.

use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_ec2::config::http::HttpResponse;
use aws_sdk_ec2::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_ec2::operation::RequestId;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError};
use std::future::Future;

/// What kind of call failed: a `*.NotFound` code means "the resource is gone"
/// when reading or deleting it, but "your input is wrong" when it names
/// something the request refers to (an image, a subnet...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Create,
    Other,
}

/// Codes whose `NotFound` always means bad input, whatever the call.
const INPUT_NOT_FOUND_PREFIXES: &[&str] =
    &["InvalidAMIID.", "InvalidInstanceType", "InvalidKeyPair."];

/// The neutral kind of an EC2 error code. `status` is the HTTP status, used
/// when the code says nothing (5xx -> transient).
pub fn classify(code: &str, status: Option<u16>, op: Op) -> ErrorKind {
    match code {
        // Capacity: the engine tries the next zone.
        "InsufficientInstanceCapacity"
        | "InsufficientHostCapacity"
        | "InsufficientReservedInstanceCapacity"
        | "InsufficientCapacity"
        | "InsufficientCapacityOnHost"
        | "InsufficientFreeAddressesInSubnet"
        // A targeted capacity reservation without room (errors overview,
        // https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html).
        | "ReservationCapacityExceeded"
        | "SpotMaxPriceTooLow"
        | "Unsupported" => return ErrorKind::Capacity,
        // Throttling: back off within the shared rate budget.
        "RequestLimitExceeded"
        | "Throttling"
        | "ThrottlingException"
        | "RequestThrottled"
        | "RequestThrottledException"
        | "TooManyRequestsException"
        | "SlowDown" => return ErrorKind::Throttled,
        // Credentials and permissions.
        "AuthFailure"
        | "UnauthorizedOperation"
        | "Blocked"
        | "OptInRequired"
        | "PendingVerification"
        | "SignatureDoesNotMatch"
        | "InvalidClientTokenId"
        | "InvalidAccessKeyId"
        | "ExpiredToken"
        | "RequestExpired"
        | "MissingAuthenticationToken"
        | "AccessDenied"
        | "AccessDeniedException"
        // What the JSON services (Service Quotas, Pricing) answer for a bad
        // signature or key: not "invalid input" despite the prefix.
        | "InvalidSignatureException"
        | "UnrecognizedClientException"
        | "IncompleteSignature" => return ErrorKind::Auth,
        // Something still uses the resource, or it is not in a state that
        // allows the call yet: retry later.
        "DependencyViolation"
        | "VolumeInUse"
        | "IncorrectState"
        | "IncorrectInstanceState"
        | "InvalidPlacementGroup.InUse" => return ErrorKind::DependencyViolation,
        "InternalError" | "InternalFailure" | "ServiceUnavailable" | "Unavailable" => {
            return ErrorKind::Transient
        }
        _ => {}
    }
    if code.ends_with("LimitExceeded") {
        // InstanceLimitExceeded, VcpuLimitExceeded, VolumeLimitExceeded,
        // VpcLimitExceeded, MaxSpotInstanceCountExceeded is below.
        return ErrorKind::Quota;
    }
    if code == "MaxSpotInstanceCountExceeded" || code == "ResourceCountExceeded" {
        return ErrorKind::Quota;
    }
    if code.ends_with(".NotFound") || code.ends_with(".Unknown") {
        if INPUT_NOT_FOUND_PREFIXES.iter().any(|p| code.starts_with(p)) {
            return ErrorKind::Invalid;
        }
        return match op {
            // A create names the resources it refers to; one missing is an
            // input problem (stale state), not "the thing created is gone".
            Op::Create => ErrorKind::Invalid,
            Op::Other => ErrorKind::NotFound,
        };
    }
    if code.starts_with("Invalid")
        || code.starts_with("Missing")
        || code.starts_with("Unknown")
        || code.starts_with("Unsupported")
        || code == "IdempotentParameterMismatch"
        || code == "ValidationError"
        || code == "OperationNotPermitted"
    {
        return ErrorKind::Invalid;
    }
    match status {
        Some(s) if s >= 500 => ErrorKind::Transient,
        Some(429) => ErrorKind::Throttled,
        Some(401) | Some(403) => ErrorKind::Auth,
        Some(s) if s >= 400 => ErrorKind::Invalid,
        _ => ErrorKind::Transient,
    }
}

/// A hint appended to the message for codes where the fix is not obvious.
pub fn hint(code: &str, kind: ErrorKind) -> Option<String> {
    let h = if code.starts_with("InvalidAMIID") {
        "hint: the image does not exist in this region or is not visible to this account; use a logical image name (e.g. ubuntu-22.04-cuda) or an AMI id from this region"
    } else if code.starts_with("InvalidInstanceType") {
        "hint: this instance type does not exist or is not offered in this region; check `aws ec2 describe-instance-type-offerings`"
    } else if code.starts_with("InvalidSubnetID")
        || code.starts_with("InvalidGroup")
        || code.starts_with("InvalidVpcID")
        || code.starts_with("InvalidPlacementGroup")
    {
        "hint: a resource this one depends on is gone; run a refresh (plan) so gpuform re-creates it"
    } else if code == "InstanceLimitExceeded"
        || code == "VcpuLimitExceeded"
        || code == "MaxSpotInstanceCountExceeded"
    {
        "this is an EC2 service quota (vCPUs of running instances per family, e.g. \"Running On-Demand P instances\" or \"All P Spot Instance Requests\"); retrying will not help. Raise it in the Service Quotas console (Amazon EC2) or with `aws service-quotas request-service-quota-increase --service-code ec2 --quota-code <code> --desired-value <vCPUs>` (find the code with `aws service-quotas list-service-quotas --service-code ec2`)"
    } else if kind == ErrorKind::Quota {
        "this is an account quota; retrying will not help. Raise it in the Service Quotas console (Amazon EC2) or with `aws service-quotas request-service-quota-increase --service-code ec2 ...`"
    } else if kind == ErrorKind::Capacity {
        "AWS has no capacity for this request in this zone right now; another zone or a later try may succeed"
    } else if kind == ErrorKind::Auth {
        "hint: check the credentials aws-config found (environment, ~/.aws profiles, SSO, instance metadata) and their IAM permissions"
    } else {
        return None;
    };
    Some(h.to_string())
}

/// The AWS service a call went to: its name in messages and its codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    Ec2,
    S3,
    Quotas,
    Sqs,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Ec2 => "EC2",
            Service::S3 => "S3",
            Service::Quotas => "Service Quotas",
            Service::Sqs => "SQS",
        }
    }

    fn classify(self, code: &str, status: Option<u16>, op: Op) -> ErrorKind {
        match self {
            Service::Ec2 => classify(code, status, op),
            Service::S3 => classify_s3(code, status, op),
            Service::Quotas => classify_quotas(code, status, op),
            Service::Sqs => classify_sqs(code, status, op),
        }
    }
}

/// The neutral kind of an S3 error code: S3's own codes first (its
/// "absent" codes are read as absent by the callers before they get here),
/// then the codes S3 shares with EC2.
pub fn classify_s3(code: &str, status: Option<u16>, op: Op) -> ErrorKind {
    match code {
        "NoSuchBucket" => match op {
            Op::Create => ErrorKind::Invalid,
            Op::Other => ErrorKind::NotFound,
        },
        // Someone else's name (bucket names are global): never a retry.
        "BucketAlreadyExists"
        | "InvalidBucketName"
        | "IllegalLocationConstraintException"
        | "InvalidLocationConstraint"
        | "InvalidTag"
        | "MalformedXML"
        | "InvalidArgument"
        | "InvalidRequest" => ErrorKind::Invalid,
        // Another call on the bucket is under way (a create or delete not
        // finished yet), or a writer put objects while it was emptied.
        "OperationAborted" | "BucketNotEmpty" => ErrorKind::DependencyViolation,
        "TooManyBuckets" => ErrorKind::Quota,
        "SlowDown" => ErrorKind::Throttled,
        "RequestTimeout" | "RequestTimeTooSkewed" => ErrorKind::Transient,
        "AllAccessDisabled" | "InvalidToken" | "TokenRefreshRequired" | "AccountProblem" => {
            ErrorKind::Auth
        }
        "PermanentRedirect" | "AuthorizationHeaderMalformed" => ErrorKind::Invalid,
        _ => classify(code, status, op),
    }
}

/// The neutral kind of a Service Quotas error code (GetServiceQuota,
/// https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_GetServiceQuota.html):
/// a quota it does not have is absent (the caller reads it as "cannot
/// say"), a refused permission is `auth` like EC2's, a dependency's too.
pub fn classify_quotas(code: &str, status: Option<u16>, op: Op) -> ErrorKind {
    match code {
        "NoSuchResourceException" => ErrorKind::NotFound,
        "DependencyAccessDeniedException" | "AWSServiceAccessNotEnabledException" => {
            ErrorKind::Auth
        }
        "IllegalArgumentException" => ErrorKind::Invalid,
        "ServiceException" => ErrorKind::Transient,
        _ => classify(code, status, op),
    }
}

/// The neutral kind of an SQS error code (ReceiveMessage, DeleteMessageBatch:
/// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html#API_ReceiveMessage_Errors).
pub fn classify_sqs(code: &str, status: Option<u16>, op: Op) -> ErrorKind {
    match code {
        "QueueDoesNotExist" | "AWS.SimpleQueueService.NonExistentQueue" => ErrorKind::Invalid,
        "RequestThrottled" | "KmsThrottled" => ErrorKind::Throttled,
        "KmsAccessDenied" | "KmsDisabled" | "KmsInvalidKeyUsage" | "KmsInvalidState"
        | "KmsNotFound" | "KmsOptInRequired" => ErrorKind::Auth,
        "InvalidAddress" | "InvalidSecurity" | "OverLimit" | "UnsupportedOperation" => {
            ErrorKind::Invalid
        }
        _ => classify(code, status, op),
    }
}

fn sqs_hint(kind: ErrorKind, code: &str) -> Option<&'static str> {
    if code.contains("NonExistentQueue") || code == "QueueDoesNotExist" {
        return Some("hint: --events names a queue that does not exist in that account and region; create it (see `gpuform reconcile --print-event-rules`) or fix the URL");
    }
    (kind == ErrorKind::Auth).then_some(
        "hint: reading events needs the IAM permissions sqs:ReceiveMessage and sqs:DeleteMessage on the queue",
    )
}

fn quotas_hint(kind: ErrorKind) -> Option<&'static str> {
    (kind == ErrorKind::Auth).then_some(
        "hint: reading quotas needs the IAM permission servicequotas:GetServiceQuota (e.g. the ServiceQuotasReadOnlyAccess managed policy) besides ec2:DescribeInstances",
    )
}

fn s3_hint(code: &str) -> Option<&'static str> {
    Some(match code {
        "BucketAlreadyExists" => "S3 bucket names are global and this one is taken by another AWS account; pick another `name:` for the bucket",
        "TooManyBuckets" => "this is the account's bucket quota (Service Quotas: Amazon S3, \"General purpose buckets\"); retrying will not help",
        "PermanentRedirect" | "AuthorizationHeaderMalformed" => "hint: the bucket is in another region than the one the spec gives",
        _ => return None,
    })
}

/// Builds the neutral error from a code, message, status and request id.
pub(crate) fn from_parts_in(
    service: Service,
    action: &str,
    code: Option<&str>,
    message: Option<&str>,
    status: Option<u16>,
    request_id: Option<&str>,
    op: Op,
) -> ProviderError {
    let kind = service.classify(code.unwrap_or(""), status, op);
    let mut msg = format!("{} {action} failed", service.name());
    if let Some(m) = message.filter(|m| !m.is_empty()) {
        msg.push_str(": ");
        msg.push_str(m);
    } else if let Some(s) = status {
        msg.push_str(&format!(": HTTP {s}"));
    }
    let own = match service {
        Service::S3 => code.and_then(s3_hint),
        Service::Quotas => quotas_hint(kind),
        Service::Sqs => sqs_hint(kind, code.unwrap_or("")),
        Service::Ec2 => None,
    };
    if let Some(h) = own
        .map(str::to_string)
        .or_else(|| code.and_then(|c| hint(c, kind)))
    {
        msg.push_str(". ");
        msg.push_str(&h);
    }
    let mut err = ProviderError::new(kind, msg);
    if let Some(c) = code {
        err = err.with_code(c);
    }
    if let Some(r) = request_id {
        err = err.with_request_id(r);
    }
    err
}

/// Maps any SDK operation error to the neutral error.
pub fn map_sdk<E>(action: &str, op: Op, err: SdkError<E, HttpResponse>) -> ProviderError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    map_in(Service::Ec2, action, op, err)
}

/// Maps a Service Quotas SDK error to the neutral error.
pub(crate) fn map_quotas<E>(action: &str, op: Op, err: SdkError<E, HttpResponse>) -> ProviderError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    map_in(Service::Quotas, action, op, err)
}

/// Maps an SQS SDK error to the neutral error.
pub(crate) fn map_sqs<E>(action: &str, err: SdkError<E, HttpResponse>) -> ProviderError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    map_in(Service::Sqs, action, Op::Other, err)
}

/// Maps an S3 SDK error to the neutral error.
pub(crate) fn map_s3<E>(action: &str, op: Op, err: SdkError<E, HttpResponse>) -> ProviderError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    map_in(Service::S3, action, op, err)
}

fn map_in<E>(
    service: Service,
    action: &str,
    op: Op,
    err: SdkError<E, HttpResponse>,
) -> ProviderError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let svc = service.name();
    match &err {
        SdkError::ServiceError(se) => {
            let status = se.raw().status().as_u16();
            let meta = se.err().meta();
            let request_id = meta
                .request_id()
                .or_else(|| se.raw().headers().request_id());
            from_parts_in(
                service,
                action,
                meta.code(),
                meta.message(),
                Some(status),
                request_id,
                op,
            )
        }
        SdkError::ResponseError(re) => {
            // A response that is not EC2's XML (e.g. an HTML 500 page).
            let status = re.raw().status().as_u16();
            let request_id = re.raw().headers().request_id();
            let mut e = from_parts_in(
                service,
                action,
                None,
                Some(&format!("unparseable response (HTTP {status})")),
                Some(status),
                request_id,
                op,
            );
            if status < 500 && status != 429 {
                e.kind = ErrorKind::Invalid;
            }
            e
        }
        SdkError::TimeoutError(_) => {
            ProviderError::new(ErrorKind::Transient, format!("{svc} {action} timed out"))
        }
        SdkError::DispatchFailure(df) => {
            // Credentials are resolved just before sending: a failure there
            // is a dispatch failure whose cause is a CredentialsError.
            if let Some(ce) = credentials_error(&err) {
                return credentials_problem(svc, action, ce);
            }
            // Only fixed words here: nothing from the request goes into the
            // message.
            let what = if df.is_timeout() {
                "timed out".to_string()
            } else if df.is_io() {
                "could not reach the endpoint (I/O error)".to_string()
            } else {
                "could not send the request".to_string()
            };
            ProviderError::new(ErrorKind::Transient, format!("{svc} {action} {what}"))
        }
        SdkError::ConstructionFailure(_) => ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{svc} {action}: the request could not be built (missing region or invalid input?)"
            ),
        ),
        _ => ProviderError::new(ErrorKind::Transient, format!("{svc} {action} failed")),
    }
}

/// An AWS SDK operation error, as the mapping reads it.
pub(crate) trait OpError:
    ProvideErrorMetadata + std::error::Error + Send + Sync + 'static
{
}
impl<E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static> OpError for E {}

/// A request sent with an AWS SDK: its answer or the SDK's error.
pub(crate) trait Sending<T, E>:
    Future<Output = Result<T, SdkError<E, HttpResponse>>>
{
}
impl<F: Future<Output = Result<T, SdkError<E, HttpResponse>>>, T, E> Sending<T, E> for F {}

/// Sends an EC2 request: its answer, or the neutral error.
pub(crate) async fn sent<T, E: OpError>(
    action: &str,
    op: Op,
    request: impl Sending<T, E>,
) -> Result<T> {
    request.await.map_err(|e| map_sdk(action, op, e))
}

/// Sends a request whose answer is not needed (deletes, tag and rule
/// changes): done, or the neutral error.
pub(crate) async fn done<T, E: OpError>(
    action: &str,
    op: Op,
    request: impl Sending<T, E>,
) -> Result<()> {
    sent(action, op, request).await.map(drop)
}

/// The credentials error somewhere in the cause chain, if any.
pub(crate) fn credentials_error<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a CredentialsError> {
    let mut cur: Option<&'a (dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(ce) = e.downcast_ref::<CredentialsError>() {
            return Some(ce);
        }
        cur = e.source();
    }
    None
}

/// Missing or unusable credentials: `auth`, except a credentials source that
/// timed out (IMDS, SSO), which may answer on the next try.
fn credentials_problem(svc: &str, action: &str, ce: &CredentialsError) -> ProviderError {
    // CredentialsError's own Display names the failure class, never a secret.
    let (kind, what) = match ce {
        CredentialsError::ProviderTimedOut(_) => (
            ErrorKind::Transient,
            "timed out while loading AWS credentials",
        ),
        CredentialsError::CredentialsNotLoaded(_) => (ErrorKind::Auth, "no AWS credentials found"),
        CredentialsError::InvalidConfiguration(_) => (
            ErrorKind::Auth,
            "the AWS credentials configuration is invalid",
        ),
        _ => (ErrorKind::Auth, "AWS credentials could not be loaded"),
    };
    let mut msg = format!("{svc} {action}: {what}");
    if kind == ErrorKind::Auth {
        msg.push_str(
            ". hint: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE (with `aws sso login` for SSO), or run on an instance with a role",
        );
    }
    ProviderError::new(kind, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorKind::*;

    /// Every (code, op) of `table`, answered with HTTP 400, is its kind.
    fn check_table(
        classify: fn(&str, Option<u16>, Op) -> ErrorKind,
        table: &[(&str, Op, ErrorKind)],
    ) {
        for (code, op, want) in table {
            assert_eq!(classify(code, Some(400), *op), *want, "{code} ({op:?})");
        }
    }

    #[test]
    fn mapping_table() {
        let table: &[(&str, Op, ErrorKind)] = &[
            ("InsufficientInstanceCapacity", Op::Create, Capacity),
            ("Unsupported", Op::Create, Capacity),
            ("InsufficientHostCapacity", Op::Create, Capacity),
            ("RequestLimitExceeded", Op::Other, Throttled),
            ("Throttling", Op::Other, Throttled),
            ("InstanceLimitExceeded", Op::Create, Quota),
            ("VcpuLimitExceeded", Op::Create, Quota),
            ("MaxSpotInstanceCountExceeded", Op::Create, Quota),
            ("VolumeLimitExceeded", Op::Create, Quota),
            ("VpcLimitExceeded", Op::Create, Quota),
            ("DependencyViolation", Op::Other, DependencyViolation),
            ("VolumeInUse", Op::Other, DependencyViolation),
            ("IncorrectInstanceState", Op::Create, DependencyViolation),
            ("InvalidInstanceID.NotFound", Op::Other, NotFound),
            ("InvalidVpcID.NotFound", Op::Other, NotFound),
            ("InvalidGroup.NotFound", Op::Other, NotFound),
            ("InvalidPlacementGroup.Unknown", Op::Other, NotFound),
            ("InvalidSubnetID.NotFound", Op::Create, Invalid),
            ("InvalidAMIID.NotFound", Op::Create, Invalid),
            ("InvalidAMIID.NotFound", Op::Other, Invalid),
            ("InvalidAMIID.Malformed", Op::Create, Invalid),
            ("InvalidInstanceType", Op::Create, Invalid),
            ("InvalidParameterValue", Op::Create, Invalid),
            ("InvalidParameterCombination", Op::Create, Invalid),
            ("IdempotentParameterMismatch", Op::Create, Invalid),
            ("AuthFailure", Op::Other, Auth),
            ("UnauthorizedOperation", Op::Create, Auth),
            ("InternalError", Op::Other, Transient),
            ("ServiceUnavailable", Op::Other, Transient),
        ];
        check_table(classify, table);
        // No code: the status decides.
        assert_eq!(classify("", Some(500), Op::Other), Transient);
        assert_eq!(classify("", Some(503), Op::Create), Transient);
        assert_eq!(classify("", Some(403), Op::Other), Auth);
        assert_eq!(classify("", None, Op::Other), Transient);
        assert_eq!(classify("SomethingNew", Some(502), Op::Other), Transient);
    }

    #[test]
    fn s3_mapping_table() {
        let table: &[(&str, Op, ErrorKind)] = &[
            ("NoSuchBucket", Op::Other, NotFound),
            ("NoSuchBucket", Op::Create, Invalid),
            ("BucketAlreadyExists", Op::Create, Invalid),
            ("InvalidBucketName", Op::Create, Invalid),
            ("OperationAborted", Op::Create, DependencyViolation),
            ("BucketNotEmpty", Op::Other, DependencyViolation),
            ("TooManyBuckets", Op::Create, Quota),
            ("SlowDown", Op::Other, Throttled),
            ("AccessDenied", Op::Other, Auth),
            ("InvalidAccessKeyId", Op::Other, Auth),
            ("InternalError", Op::Other, Transient),
        ];
        check_table(classify_s3, table);
        assert_eq!(classify_s3("", Some(503), Op::Other), Transient);
        let e = from_parts_in(
            Service::S3,
            "CreateBucket",
            Some("BucketAlreadyExists"),
            Some("The requested bucket name is not available"),
            Some(409),
            None,
            Op::Create,
        );
        assert_eq!(e.kind, Invalid);
        assert!(
            e.message.starts_with("S3 CreateBucket failed")
                && e.message.contains("pick another `name:`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn service_quotas_mapping_table() {
        let table: &[(&str, Op, ErrorKind)] = &[
            ("NoSuchResourceException", Op::Other, NotFound),
            ("AccessDeniedException", Op::Other, Auth),
            ("DependencyAccessDeniedException", Op::Other, Auth),
            ("TooManyRequestsException", Op::Other, Throttled),
            ("InvalidSignatureException", Op::Other, Auth),
            ("UnrecognizedClientException", Op::Other, Auth),
            ("IllegalArgumentException", Op::Other, Invalid),
            ("ServiceException", Op::Other, Transient),
        ];
        check_table(classify_quotas, table);
        let e = from_parts_in(
            Service::Quotas,
            "GetServiceQuota",
            Some("AccessDeniedException"),
            Some("You do not have sufficient permission to perform this action."),
            Some(400),
            None,
            Op::Other,
        );
        assert_eq!(e.kind, Auth);
        assert!(
            e.message
                .starts_with("Service Quotas GetServiceQuota failed")
                && e.message.contains("servicequotas:GetServiceQuota"),
            "{}",
            e.message
        );
    }

    #[test]
    fn errors_carry_code_request_id_and_hints() {
        let e = from_parts_in(
            Service::Ec2,
            "RunInstances",
            Some("VcpuLimitExceeded"),
            Some("You have requested more vCPU capacity than your current vCPU limit of 0 allows"),
            Some(400),
            Some("req-123"),
            Op::Create,
        );
        assert_eq!(e.kind, Quota);
        assert_eq!(e.code.as_deref(), Some("VcpuLimitExceeded"));
        assert_eq!(e.request_id.as_deref(), Some("req-123"));
        assert!(
            e.message.contains("Service Quotas console"),
            "{}",
            e.message
        );
        assert!(
            e.message
                .contains("aws service-quotas request-service-quota-increase"),
            "{}",
            e.message
        );
        let shown = e.to_string();
        assert!(
            shown.contains("code VcpuLimitExceeded") && shown.contains("req-123"),
            "{shown}"
        );

        let e = from_parts_in(
            Service::Ec2,
            "RunInstances",
            Some("InvalidAMIID.NotFound"),
            Some("The image id '[ami-1]' does not exist"),
            Some(400),
            None,
            Op::Create,
        );
        assert_eq!(e.kind, Invalid);
        assert!(e.message.contains("hint: the image"), "{}", e.message);
    }
}

#[cfg(test)]
mod credential_tests {
    use super::*;
    use aws_credential_types::provider::{future, ProvideCredentials};
    use aws_sdk_ec2::config::{BehaviorVersion, Region};

    #[derive(Debug)]
    struct NoCredentials;
    impl ProvideCredentials for NoCredentials {
        fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            future::ProvideCredentials::ready(Err(CredentialsError::not_loaded(
                "none in this test",
            )))
        }
    }

    #[tokio::test]
    async fn missing_credentials_are_auth_errors() {
        let conf = aws_sdk_ec2::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            // Nothing listens there; the call fails before sending anyway.
            .endpoint_url("http://127.0.0.1:9")
            .credentials_provider(NoCredentials)
            .http_client(crate::client::https_client())
            .build();
        let client = aws_sdk_ec2::Client::from_conf(conf);
        let err = client.describe_vpcs().send().await.unwrap_err();
        let e = map_sdk("DescribeVpcs", Op::Other, err);
        assert_eq!(e.kind, ErrorKind::Auth, "{e}");
        assert!(e.message.contains("no AWS credentials found"), "{e}");
    }
}
