//! The mirrored cloud's error codes, and the errors the sandbox answers with.

use gpuform_provider::{Cloud, ErrorKind, ProviderError, ResourceKind};

/// What went wrong, to pick the mirrored cloud's error code.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Code {
    Region,
    Zone,
    InstanceType,
    NotOffered,
    Missing,
    BadValue,
    SubnetConflict,
    NotFound(ResourceKind),
    Dependency,
    Quota,
    Denied,
    Capacity,
    Throttled,
    Transient,
    Mismatch,
    BucketExists,
    BucketNotEmpty,
}

pub(crate) fn code(cloud: Cloud, c: Code) -> &'static str {
    use Cloud::*;
    use ResourceKind as K;
    match (c, cloud) {
        (Code::Region, Aws) => "InvalidParameterValue",
        (Code::Region, Alibaba) => "InvalidRegionId.NotFound",
        (Code::Region, Tencent) => "UnsupportedRegion",
        (Code::Region, Huawei) => "InvalidRegion",
        (Code::Zone, Aws) => "InvalidParameterValue",
        (Code::Zone, Alibaba) => "InvalidZoneId.NotFound",
        (Code::Zone, Tencent) => "InvalidZone.MismatchRegion",
        (Code::Zone, Huawei) => "InvalidAvailabilityZone",
        (Code::InstanceType, Aws) => "InvalidInstanceType",
        (Code::InstanceType, Alibaba) => "InvalidInstanceType.NotFound",
        (Code::InstanceType, Tencent) => "InvalidInstanceType",
        (Code::InstanceType, Huawei) => "InvalidFlavor",
        (Code::NotOffered, Aws) => "Unsupported",
        (Code::NotOffered, Alibaba) => "InvalidInstanceType.NotSupported",
        (Code::NotOffered, Tencent) => "InvalidInstanceType.NotSupported",
        (Code::NotOffered, Huawei) => "FlavorNotSupported",
        (Code::Missing, Huawei) => "InvalidParameter",
        (Code::Missing, _) => "MissingParameter",
        (Code::BadValue, Alibaba) | (Code::BadValue, Huawei) => "InvalidParameter",
        (Code::BadValue, _) => "InvalidParameterValue",
        (Code::SubnetConflict, Aws) => "InvalidSubnet.Conflict",
        (Code::SubnetConflict, Alibaba) => "InvalidCidrBlock.Overlapped",
        (Code::SubnetConflict, Tencent) => "InvalidParameterValue.SubnetConflict",
        (Code::SubnetConflict, Huawei) => "VPC.0002",
        (Code::NotFound(K::Bucket), _) => "NoSuchBucket",
        (Code::NotFound(k), Aws) => match k {
            K::Network => "InvalidVpcID.NotFound",
            K::Subnet => "InvalidSubnetID.NotFound",
            K::Firewall => "InvalidGroup.NotFound",
            K::Placement => "InvalidPlacementGroup.Unknown",
            K::Instance => "InvalidInstanceID.NotFound",
            _ => "InvalidVolume.NotFound",
        },
        (Code::NotFound(k), Alibaba) => match k {
            K::Network => "InvalidVpcId.NotFound",
            K::Subnet => "InvalidVSwitchId.NotFound",
            K::Firewall => "InvalidSecurityGroupId.NotFound",
            K::Placement => "InvalidDeploymentSetId.NotFound",
            K::Instance => "InvalidInstanceId.NotFound",
            _ => "InvalidDiskId.NotFound",
        },
        (Code::NotFound(_), _) => "ResourceNotFound",
        (Code::Dependency, Aws) | (Code::Dependency, Alibaba) => "DependencyViolation",
        (Code::Dependency, _) => "ResourceInUse",
        (Code::Quota, Aws) => "VcpuLimitExceeded",
        (Code::Quota, Alibaba) => "QuotaExceed.ElasticQuota",
        (Code::Quota, Tencent) => "LimitExceeded.InstanceQuota",
        (Code::Quota, Huawei) => "QuotaExceeded",
        (Code::Denied, Aws) => "AccessDeniedException",
        (Code::Denied, Alibaba) => "Forbidden.RAM",
        (Code::Denied, Tencent) => "UnauthorizedOperation",
        (Code::Denied, Huawei) => "Forbidden",
        (Code::Capacity, Aws) => "InsufficientInstanceCapacity",
        (Code::Capacity, Alibaba) => "OperationDenied.NoStock",
        (Code::Capacity, Tencent) => "ResourceInsufficient.SpecifiedInstanceType",
        (Code::Capacity, Huawei) => "InsufficientCapacity",
        (Code::Throttled, Alibaba) => "Throttling.User",
        (Code::Throttled, Huawei) => "APIGW.0308",
        (Code::Throttled, _) => "RequestLimitExceeded",
        (Code::Transient, Alibaba) => "ServiceUnavailable",
        (Code::Transient, Huawei) => "InternalServerError",
        (Code::Transient, _) => "InternalError",
        (Code::Mismatch, Tencent) | (Code::Mismatch, Huawei) => "InvalidParameter",
        (Code::Mismatch, _) => "IdempotentParameterMismatch",
        (Code::BucketExists, _) => "BucketAlreadyExists",
        // The same code on S3, OSS, COS and OBS.
        (Code::BucketNotEmpty, _) => "BucketNotEmpty",
    }
}

/// An error of `kind` with the mirrored cloud's code for `c`.
pub(crate) fn perr(
    cloud: Cloud,
    kind: ErrorKind,
    c: Code,
    message: impl Into<String>,
) -> ProviderError {
    ProviderError::new(kind, message).with_code(code(cloud, c))
}

/// A request the mirrored cloud refuses as invalid.
pub(crate) fn invalid(cloud: Cloud, c: Code, message: impl Into<String>) -> ProviderError {
    perr(cloud, ErrorKind::Invalid, c, message)
}

/// The inventory could not be written or is inconsistent: worth a retry.
pub(crate) fn internal(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::new(ErrorKind::Transient, format!("sandbox inventory: {e}"))
}

/// Names for a message: `a, b, c`, or `(none)`.
pub(crate) fn list(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let v: Vec<String> = items.into_iter().map(|s| s.as_ref().to_string()).collect();
    if v.is_empty() {
        "(none)".to_string()
    } else {
        v.join(", ")
    }
}
