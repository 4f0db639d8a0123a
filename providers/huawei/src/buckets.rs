//! Object-storage buckets on Huawei Cloud OBS: not made on this cloud yet
//! (its kinds leave buckets out, so the wrapper refuses them before any
//! call). What OBS needs, from its API reference
//! (support.huaweicloud.com/api-obs, page ids below), for the dialect of
//! the shared S3-dialect layer:
//!
//! * Addressing: `<bucket>.obs.<region>.myhuaweicloud.com`; listing the
//!   buckets: `GET /` on `obs.<region>.myhuaweicloud.com` (obs_04_0020).
//! * Signature: `Authorization: OBS AK:Signature` (HMAC-SHA1,
//!   obs_04_0010), `gpuform_signing::obs` — not the APIG signer of the
//!   other Huawei services.
//! * Creating a bucket (obs_04_0021): `PUT /` with `x-obs-storage-class`
//!   (`STANDARD`, `WARM`, `COLD`), `x-obs-acl: private` and the body
//!   `<CreateBucketConfiguration><Location>region</Location>`. A namesake in
//!   the same account and region answers 200 (the create is idempotent),
//!   any other namesake 409 `BucketAlreadyExists` /
//!   `BucketAlreadyOwnedByYou`. Tags are not taken by the create.
//! * Tags `?tagging` (obs_04_0049): `<Tagging><TagSet><Tag><Key><Value>`,
//!   Content-MD5 required; at most 20 tags, key ≤ 36 and value ≤ 43
//!   characters, none of `, * | / < > = \`; GET answers 404 `NoSuchTagSet`
//!   when none.
//! * Versioning `?versioning` (obs_04_0041): `<VersioningConfiguration>
//!   <Status>Enabled|Suspended`.
//! * Lifecycle `?lifecycle` (obs_04_0034): `<LifecycleConfiguration><Rule>
//!   <ID/><Prefix/><Status>Enabled</Status><Transition><Days/>
//!   <StorageClass>COLD</StorageClass></Transition>
//!   <NoncurrentVersionExpiration><NoncurrentDays/>…` (a `Prefix` of its
//!   own, no `Filter`), Content-MD5 required; DELETE `?lifecycle` removes it.
//! * Encryption `?encryption` (obs_04_0062): `<ServerSideEncryption
//!   Configuration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>
//!   kms` (without `KMSMasterKeyID`: the default key OBS keeps in KMS);
//!   DELETE `?encryption` removes it (obs_04_0064).
//! * Public access block `?publicAccessBlock` (obs_04_0174):
//!   `<PublicAccessBlockConfiguration><BlockPublicAcls>…<IgnorePublicAcls>…
//!   <BlockPublicPolicy>…<RestrictPublicBuckets>`.
//! * Emptying: listing versions `?versions` (obs_04_0022), deleting objects
//!   in a batch `POST /?delete` (obs_04_0090: at most 1,000, Content-MD5).
//! * Deleting a bucket (obs_04_0024): 409 `BucketNotEmpty`.
//! * Errors (obs_04_0115): XML `<Error><Code><Message><RequestId>`.

use crate::HuaweiProvider;
use gpuform_provider::BucketApi;

impl BucketApi for HuaweiProvider {}
