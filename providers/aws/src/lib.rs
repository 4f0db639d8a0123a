//! gpuform's AWS provider, on the official `aws-sdk-ec2` (and `aws-sdk-s3`
//! for buckets).
//!
//! Neutral resource kinds map to EC2 as follows:
//!
//! | kind        | EC2                                                            |
//! | ----------- | -------------------------------------------------------------- |
//! | `network`   | VPC (`cidr`)                                                   |
//! | `subnet`    | subnet of `refs.network` in `zone` (`cidr`)                    |
//! | `firewall`  | security group in `refs.network`: all traffic between members (a self-referencing rule) plus `ingress` |
//! | `placement` | placement group (`strategy`, `cluster` by default); its id is its name |
//! | `instance`  | one RunInstances per node (MinCount = MaxCount = 1)            |
//! | `volume`    | CreateVolume (`size_gb`, `zone`, `volume_type`) + AttachVolume to `refs.instance` |
//! | `bucket`    | S3 bucket (aws-sdk-s3): CreateBucket, PutBucketTagging, then its settings (see `buckets`) |
//!
//! Everything created carries the ownership tags (`gpuform:project`,
//! `gpuform:address`, `gpuform:token`, `gpuform:lineage`) set atomically with
//! the creation (TagSpecifications), plus `gpuform:kind`; instances also keep
//! what the engine asked for where EC2 cannot report it back (`gpuform:image`,
//! `gpuform:pricing`, `gpuform:rdma`). Refresh (`list_owned`, `read`) is
//! batched: one paginated Describe call per kind, filtered by tag or id.
//!
//! This file is wiring only: the provider and its `CloudDriver` identity
//! (cloud, label, rate, kinds). Each part of the driver is implemented in
//! the module of its kind — `network` (`NetworkApi`: VPCs, subnets,
//! security groups), `compute` (`ComputeApi`: instances, placement groups),
//! `storage` (`StorageApi`: volumes), `buckets` (`BucketApi`: S3
//! buckets, with the S3 client of each region), `refresh` (`RefreshApi`: read,
//! list_owned), `tags` (`TagApi`) — next to `observe` (EC2's answers as
//! observed resources, shared by refresh and the parts), `instances` (an
//! instance looked up by id, a launch waited out, for compute and storage),
//! `images`, `client` (SDK config, clients, paginated Describe calls) and
//! `errors`.
//! `quotas` reads the EC2 GPU quotas through Service Quotas
//! (`aws-sdk-servicequotas`) for `ComputeApi::quota`.
//! `s3` is not part of the provider: the conditional object operations the
//! root crate's S3 state backend is built on.
//!
//! Credentials come from aws-config's standard chain and never reach errors,
//! logs or `Debug` output.

mod blocks;
mod buckets;
mod client;
mod compute;
mod discovery;
mod errors;
pub mod events;
mod images;
mod instances;
mod network;
mod observe;
pub mod prices;
pub mod quotas;
mod refresh;
pub mod s3;
mod storage;
mod tags;
mod volume_types;

pub use compute::{create_placement_group, run_instances, InstancePlan, TypeInfo};
pub use errors::{classify, Op};
pub use images::{is_ami_id, query_for, ImageQuery, LOGICAL_NAMES};
pub use instances::launch_failure;
pub use tags::{IMAGE_TAG, KIND_TAG, PRICING_TAG, RDMA_TAG, ROOT_VOLUME_KIND};

use aws_sdk_ec2::Client;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::Result;
use gpuform_provider::{Cloud, CloudDriver};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

/// The AWS provider. Cheap to share (`Arc`); one EC2 client per region,
/// created on first use.
pub struct AwsProvider {
    base: aws_config::SdkConfig,
    endpoint: Option<String>,
    clients: Mutex<HashMap<String, Client>>,
    s3_clients: Mutex<HashMap<String, aws_sdk_s3::Client>>,
    quota_clients: Mutex<HashMap<String, aws_sdk_servicequotas::Client>>,
    types: Mutex<HashMap<(String, String), TypeInfo>>,
    images: Mutex<HashMap<(String, String, String), images::ResolvedImage>>,
    rate: RateLimit,
    placement_groups: bool,
}

impl fmt::Debug for AwsProvider {
    // Deliberately not derived: the SDK config holds the credentials provider.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let regions: Vec<String> = self
            .clients
            .lock()
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("AwsProvider")
            .field(
                "endpoint",
                &self.endpoint.as_deref().map(client::redact_url),
            )
            .field(
                "default_region",
                &self.base.region().map(|r| r.as_ref().to_string()),
            )
            .field("regions", &regions)
            .field("rate", &self.rate)
            .field("placement_groups", &self.placement_groups)
            .finish_non_exhaustive()
    }
}

impl AwsProvider {
    /// EC2's request-rate throttling is a token bucket per account and
    /// region; the strictest bucket an apply meets is the one for mutating
    /// actions (RunInstances, Create*, Delete*...): 50 calls of burst,
    /// refilled at 5 per second. Describe calls have a larger bucket (100,
    /// 20/s), but refresh needs only a handful of them. So the engine's
    /// shared budget defaults to the mutating bucket: staying under it avoids
    /// RequestLimitExceeded, which AWS also counts against the account.
    pub const DEFAULT_RATE: RateLimit = RateLimit::new(5.0, 50);

    /// Loads credentials and region with aws-config's standard chain
    /// (environment, shared config and credentials files, SSO, web identity,
    /// ECS/IMDS). `AWS_ENDPOINT_URL` is honoured; `endpoint_override` wins
    /// over it. Nothing is sent until the first call, so this works offline.
    pub async fn from_env(endpoint_override: Option<String>) -> Result<AwsProvider> {
        let base = client::sdk_config(endpoint_override.as_deref()).await?;
        Ok(Self::with_config(base, endpoint_override))
    }

    /// As [`Self::from_env`], with fixed keys in place of the credential
    /// chain: a role's temporary keys handed over by a caller, or one account
    /// of a local test server (moto serves the account of the role that
    /// AssumeRole gave the keys for, each account its own cloud).
    pub async fn from_keys(
        endpoint_override: Option<String>,
        access_key_id: &str,
        secret_access_key: &str,
        session_token: Option<&str>,
    ) -> Result<AwsProvider> {
        let keys = aws_credential_types::Credentials::new(
            access_key_id,
            secret_access_key,
            session_token.map(str::to_string),
            None,
            "gpuform-fixed-keys",
        );
        let base = client::sdk_config(endpoint_override.as_deref())
            .await?
            .into_builder()
            .credentials_provider(
                aws_credential_types::provider::SharedCredentialsProvider::new(keys),
            )
            .build();
        Ok(Self::with_config(base, endpoint_override))
    }

    fn with_config(base: aws_config::SdkConfig, endpoint_override: Option<String>) -> AwsProvider {
        let endpoint = endpoint_override.or_else(|| base.endpoint_url().map(str::to_string));
        AwsProvider {
            base,
            endpoint,
            clients: Mutex::new(HashMap::new()),
            s3_clients: Mutex::new(HashMap::new()),
            quota_clients: Mutex::new(HashMap::new()),
            types: Mutex::new(HashMap::new()),
            images: Mutex::new(HashMap::new()),
            rate: Self::DEFAULT_RATE,
            placement_groups: true,
        }
    }

    /// Overrides the call budget (e.g. for an account with raised limits,
    /// or a local test server).
    pub fn with_rate_limit(mut self, rate: RateLimit) -> Self {
        self.rate = rate;
        self
    }

    /// Whether `list_owned` also lists placement groups (default true). Turn
    /// it off only against an EC2 emulation without placement groups (moto
    /// answers them with HTTP 500).
    pub fn with_placement_groups(mut self, on: bool) -> Self {
        self.placement_groups = on;
        self
    }

    /// The endpoint in use when it is not AWS's default.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }
}

impl CloudDriver for AwsProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Aws
    }

    fn label(&self) -> String {
        match &self.endpoint {
            Some(e) => format!("aws({})", client::redact_url(e)),
            None => "aws".to_string(),
        }
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    fn buckets(&self) -> Option<&dyn gpuform_provider::BucketApi> {
        Some(self)
    }

    fn settle_time(&self) -> Duration {
        client::settle_time()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn debug_output_holds_no_credentials() {
        std::env::set_var("AWS_ACCESS_KEY_ID", "AKIDSECRETSHOULDNOTSHOW");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "verysecretvalue123");
        let p = AwsProvider::from_env(Some("http://127.0.0.1:9".into()))
            .await
            .unwrap();
        let _ = p.ec2_client("us-east-1");
        let d = format!("{p:?}");
        assert!(
            !d.contains("AKIDSECRET") && !d.contains("verysecret"),
            "{d}"
        );
        assert!(d.contains("127.0.0.1:9"), "{d}");
        assert_eq!(CloudDriver::label(&p), "aws(http://127.0.0.1:9)");
        assert!(AwsProvider::from_env(Some("ftp://x".into())).await.is_err());
    }
}
