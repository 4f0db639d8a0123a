//! Object-storage buckets on Tencent Cloud COS (XML API): not made on this
//! cloud yet (its kinds leave buckets out, so the wrapper refuses them
//! before any call). What COS needs, from its API reference
//! (tencentcloud.com/document/product/436, page numbers below), for the
//! dialect of the shared S3-dialect layer:
//!
//! * Addressing: `<BucketName-APPID>.cos.<Region>.myqcloud.com` (7738).
//!   The APPID is the account's numeric id (console "Account Info"); COS
//!   names carry it, so the spec's name is the full `<name>-<APPID>`
//!   (`gpuform_provider::bucket_name` refuses one without it). Listing the
//!   buckets of a region: `GET /` on `cos.<Region>.myqcloud.com`, with the
//!   optional `tagkey` / `tagvalue` filter, `marker` / `max-keys` paging
//!   (8291, "GET Service").
//! * Signature: `q-sign-algorithm=sha1` (7778), `gpuform_signing::cos`.
//! * PUT Bucket (7738): no body (the region is the host's), `x-cos-acl:
//!   private` and `x-cos-tagging: k1=v1&k2=v2` (tags set by the creating
//!   call itself, up to 50). Errors 409 `BucketAlreadyExists` (someone
//!   else's) and `BucketAlreadyOwnedByYou`.
//! * Storage class: COS has no bucket default class (objects carry
//!   `x-cos-storage-class`: `STANDARD`, `STANDARD_IA`, `ARCHIVE`); the
//!   lifecycle transitions take `STANDARD_IA` / `ARCHIVE` (8280).
//! * PUT Bucket tagging `?tagging` (8281): `<Tagging><TagSet><Tag><Key>
//!   <Value>`, Content-MD5; GET answers 404 `NoSuchTagSetError` when none.
//! * PUT Bucket versioning `?versioning` (19889): `<VersioningConfiguration>
//!   <Status>Enabled|Suspended</Status>`.
//! * PUT Bucket lifecycle `?lifecycle` (8280): `<LifecycleConfiguration>
//!   <Rule><ID/><Filter><Prefix/></Filter><Status>Enabled</Status>
//!   <Transition><Days/><StorageClass>ARCHIVE</StorageClass></Transition>
//!   <NoncurrentVersionExpiration><NoncurrentDays/>…`, Content-MD5; DELETE
//!   `?lifecycle` removes it (8284).
//! * PUT Bucket encryption `?encryption` (33461): `<ServerSideEncryption
//!   Configuration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>
//!   AES256` (SSE-COS, cloud-managed keys); DELETE `?encryption` removes it.
//! * Public access: COS has no public-access-block API; a bucket is private
//!   by its ACL (`x-cos-acl: private`, PUT/GET Bucket acl 7737/7733).
//! * Emptying: GET Bucket Object Versions `?versions` (35521; `key-marker`,
//!   `version-id-marker`, `IsTruncated`), DELETE Multiple Objects
//!   `POST /?delete` (8289: at most 1,000 keys, Content-MD5 required,
//!   `<Delete><Quiet>true</Quiet><Object><Key/><VersionId/>`).
//! * DELETE Bucket (7732): 409 `BucketNotEmpty`, 404 `NoSuchBucket`.
//! * Errors (7730): XML `<Error><Code><Message><RequestId>`.

use crate::TencentProvider;
use gpuform_provider::BucketApi;

impl BucketApi for TencentProvider {}
