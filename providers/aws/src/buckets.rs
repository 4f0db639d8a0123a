//! Object-storage buckets: not made on this cloud yet (its kinds leave
//! buckets out, so the wrapper refuses them before any call).

use crate::AwsProvider;
use gpuform_provider::BucketApi;

impl BucketApi for AwsProvider {}
