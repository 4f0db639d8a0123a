//! What differs between the clouds that speak the S3-like dialect: one
//! [`Dialect`] value per cloud, data and small functions only.

use gpuform_catalog::storage::ObjectService;
use gpuform_provider::Result;
use gpuform_provider::{Cloud, ErrorKind, StorageClass};

/// How the storage class is given when the bucket is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassAt {
    /// An element of the `CreateBucketConfiguration` body (OSS `StorageClass`).
    Body(&'static str),
    /// A request header (OBS `x-obs-storage-class`).
    Header(&'static str),
    /// The cloud has no bucket-level class (COS): gpuform keeps it as the
    /// tag [`crate::CLASS_TAG`].
    Tag,
}

/// How the storage class is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassRead {
    /// A GET of the sub-resource `query`, whose first element `element`
    /// holds the class (OSS `?bucketInfo` → `StorageClass`, OBS
    /// `?storageClass` → `DefaultStorageClass`).
    Subresource {
        query: &'static str,
        element: &'static str,
    },
    /// From the [`crate::CLASS_TAG`] tag (with [`ClassAt::Tag`]).
    Tag,
}

/// How a lifecycle rule says it applies to the whole bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    /// `<Prefix></Prefix>` (OSS, OBS).
    EmptyPrefix,
    /// `<Filter></Filter>` (COS, S3).
    EmptyFilter,
}

/// How default server-side encryption is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseForm {
    /// `<ServerSideEncryptionRule><ApplyServerSideEncryptionByDefault>…` (OSS).
    Rule,
    /// `<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>…`
    /// (COS, OBS, S3).
    Configuration,
}

/// One cloud's object-storage dialect.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    pub cloud: Cloud,
    /// The product (`OSS`, in messages), its class names and its service
    /// host of a region (`oss-cn-hangzhou.aliyuncs.com`; a bucket is
    /// addressed as the virtual host `<bucket>.<service host>`): the
    /// catalog's table of each cloud's object storage.
    pub service: &'static ObjectService,
    /// The prefix of the cloud's own headers (`x-oss-`).
    pub header_prefix: &'static str,
    /// A region as the cloud names a bucket's location in ListBuckets
    /// (`oss-cn-hangzhou`).
    pub location: fn(&str) -> String,
    /// The element of `CreateBucketConfiguration` that names the region,
    /// where the cloud wants one (OBS `Location`, S3 `LocationConstraint`).
    pub location_element: Option<&'static str>,
    pub class_at: ClassAt,
    pub class_read: ClassRead,
    pub rule_scope: RuleScope,
    pub sse: SseForm,
    /// The `SSEAlgorithm` of cloud-managed keys (`AES256`).
    pub sse_algorithm: &'static str,
    /// Tags per bucket the cloud takes.
    pub max_tags: usize,
    /// The cloud's limits on a tag value, checked on gpuform's own tags
    /// before any call (a long bucket key makes a long address).
    pub check_tag_value: fn(&str, &str) -> Result<()>,
    /// Cloud-specific error codes, before the shared table of
    /// [`Dialect::classify`].
    pub error_kind: fn(&str) -> Option<ErrorKind>,
}

impl Dialect {
    /// The cloud's name of a neutral class.
    pub fn class_name(&self, c: StorageClass) -> &'static str {
        self.service.class_name(c)
    }

    /// The neutral class of a cloud's name (case-insensitive); a class
    /// gpuform does not make (cold archive, deep archive) is `None`.
    pub fn class_of(&self, name: &str) -> Option<StorageClass> {
        self.service.class_of(name.trim())
    }

    /// The `<bucket>.<service host>` a bucket's requests go to.
    pub fn bucket_host(&self, region: &str, bucket: &str) -> String {
        format!("{bucket}.{}", (self.service.host)(region))
    }

    /// A header of the cloud's own (`acl` → `x-oss-acl`).
    pub fn header(&self, name: &str) -> String {
        format!("{}{name}", self.header_prefix)
    }

    /// The neutral kind of an error answer: the cloud's own codes first,
    /// then the codes the dialect shares, then the HTTP status.
    pub fn classify(&self, code: Option<&str>, status: u16) -> ErrorKind {
        if let Some(k) = code.and_then(self.error_kind) {
            return k;
        }
        match code.unwrap_or("") {
            "NoSuchBucket" | "NoSuchKey" => ErrorKind::NotFound,
            // Someone else's name: a clear error, never retried.
            "BucketAlreadyExists"
            | "BucketNotEmpty"
            | "InvalidBucketName"
            | "MalformedXML"
            | "InvalidArgument"
            | "InvalidRequest" => ErrorKind::Invalid,
            "AccessDenied"
            | "InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "InvalidSecurityToken"
            | "SecurityTokenExpired"
            | "RequestTimeTooSkewed" => ErrorKind::Auth,
            "TooManyBuckets" => ErrorKind::Quota,
            "SlowDown" | "Throttling" | "TooManyRequests" | "RequestLimitExceeded" => {
                ErrorKind::Throttled
            }
            "InternalError" | "ServiceUnavailable" | "OperationAborted" => ErrorKind::Transient,
            _ => match status {
                429 | 503 => ErrorKind::Throttled,
                s if s >= 500 => ErrorKind::Transient,
                401 | 403 => ErrorKind::Auth,
                404 => ErrorKind::NotFound,
                409 => ErrorKind::Invalid,
                _ => ErrorKind::Invalid,
            },
        }
    }
}

/// For a dialect whose tag values take anything gpuform writes.
pub fn any_tag_value(_key: &str, _value: &str) -> Result<()> {
    Ok(())
}
