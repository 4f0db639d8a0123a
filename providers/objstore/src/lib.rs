//! gpuform's bucket flow over the S3-like REST dialect that Alibaba OSS,
//! Tencent COS and Huawei OBS share, written once and parameterised by a
//! per-cloud [`Dialect`] and a [`Signer`] the cloud crate implements with
//! `gpuform-signing`.
//!
//! The dialect: a bucket is a virtual host (`<bucket>.<service host>`),
//! its settings are sub-resources with XML bodies (`?tagging`,
//! `?versioning`, `?encryption`, `?lifecycle`, `?acl`), objects are listed
//! with ListObjects / ListObjectVersions, emptied with DeleteMultipleObjects
//! (`POST ?delete`, `Content-MD5`), and errors are `<Error><Code>` XML.
//! Written from the OSS API reference (alibabacloud.com/help/en/oss/
//! developer-reference/): PutBucket, GetBucketInfo, PutBucketTags /
//! GetBucketTags, PutBucketVersioning, PutBucketEncryption,
//! PutBucketLifecycle ("Lifecycle rule elements"), PutBucketAcl,
//! ListBuckets (GetService), ListObjects / ListObjectVersions,
//! DeleteMultipleObjects, DeleteBucket and "Error codes" (0015-00000102
//! BucketAlreadyExists: the name belongs to another account).
//!
//! **Create** ([`ObjStore::create`]) first asks whether the name exists
//! (`GET ?tagging`): OSS answers a second PutBucket of one's own bucket
//! with success and rewrites its metadata, so the create call cannot tell
//! "made" from "was there". Absent: `PUT /` (private ACL header, class
//! per [`ClassAt`]), then one `PUT ?tagging` with the ownership tags,
//! `gpuform:kind`, [`gpuform_provider::bucket::FORCE_DESTROY_TAG`] when
//! asked and the user tags, then versioning, encryption and lifecycle when
//! they differ from a new bucket's. Present in this account (an apply that
//! crashed after PutBucket, or a name reused): adopted only when it carries
//! this project's, address's and lineage's ownership tags, or no tags at
//! all and no objects; any other bucket is never touched. Not readable (an
//! `AccessDenied`, or a PutBucket answered `BucketAlreadyExists`): the name
//! belongs to someone else, a clear `invalid` error, never retried.
//!
//! **Read** reads every attribute back (tags, versioning, encryption,
//! lifecycle, ACL, class) and `object_count`: every object (every version
//! and delete marker once versioning was ever on), counted in pages of
//! 1,000 up to [`COUNT_PAGES`] pages — a larger bucket reports that bound,
//! which still refuses a delete.
//!
//! **Delete** refuses a bucket holding objects unless its force-destroy
//! tag says otherwise, then empties it in batches of 1,000 and deletes it.
//!
//! **List**: ListBuckets (paged by `marker`) filtered to the region's
//! location, then the tags of each (one call per bucket).

mod api;
mod dialect;
mod flow;
mod http;
mod manage;
pub mod xml;

pub use dialect::{any_tag_value, ClassAt, ClassRead, Dialect, RuleScope, SseForm};
use gpuform_http::Endpoint;

use gpuform_provider::Result;
use std::fmt;
use std::time::Duration;

/// The tag keeping the storage class on a cloud without a bucket-level
/// class ([`ClassAt::Tag`]).
pub const CLASS_TAG: &str = "gpuform:storage-class";

/// The ID of the one lifecycle rule gpuform writes.
pub const RULE_ID: &str = "gpuform";

/// Pages of 1,000 objects counted for `object_count`.
pub const COUNT_PAGES: usize = 10;

/// Objects per DeleteMultipleObjects call (the documented maximum).
pub const DELETE_BATCH: usize = 1000;

/// Signs a request of the dialect: the cloud crate implements it with its
/// scheme from `gpuform-signing`, adding its headers (a session token
/// first, then date and `Authorization`) to `req`. `bucket` is the virtual
/// host's bucket (`None` for ListBuckets). The error must not carry a
/// secret.
pub trait Signer: Send + Sync {
    fn sign(
        &self,
        req: &mut gpuform_signing::Request,
        region: &str,
        bucket: Option<&str>,
    ) -> Result<(), String>;
}

/// A cloud's object storage: its dialect, its signer, the HTTP client.
pub struct ObjStore {
    pub(crate) dialect: Dialect,
    pub(crate) signer: Box<dyn Signer>,
    pub(crate) endpoint: Option<Endpoint>,
    pub(crate) http: reqwest::Client,
    pub(crate) retries: u32,
    pub(crate) backoff: Duration,
}

impl fmt::Debug for ObjStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjStore")
            .field("product", &self.dialect.service.product)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl ObjStore {
    /// `endpoint` replaces where requests are sent (a stand-in, a proxy);
    /// the `Host` header and signature keep the cloud's virtual host.
    pub fn new(
        dialect: Dialect,
        signer: Box<dyn Signer>,
        endpoint: Option<Endpoint>,
    ) -> Result<ObjStore> {
        let http = gpuform_http::http_client(None)?;
        Ok(ObjStore {
            dialect,
            signer,
            endpoint,
            http,
            retries: 2,
            backoff: Duration::from_millis(200),
        })
    }

    /// Retries of a throttled or transient answer (default 2) and the first
    /// pause (default 200 ms, doubling).
    pub fn with_retries(mut self, retries: u32, backoff: Duration) -> ObjStore {
        self.retries = retries;
        self.backoff = backoff;
        self
    }

    pub fn dialect(&self) -> &Dialect {
        &self.dialect
    }

    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }
}

impl ObjStore {
    /// The same store sending to `endpoint` instead (`None`: the cloud's
    /// own hosts).
    pub fn with_endpoint(mut self, endpoint: Option<Endpoint>) -> ObjStore {
        self.endpoint = endpoint;
        self
    }
}
