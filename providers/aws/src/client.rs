//! Transport: the SDK configuration (retries, timeouts, endpoint), one EC2
//! client per region, and the paginated Describe calls every other module
//! reads the cloud with.

use crate::errors::{map_sdk, sent, Op};
use crate::AwsProvider;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_sdk_ec2::config::Region;
use aws_sdk_ec2::types::{Filter, Instance, PlacementGroup, SecurityGroup, Subnet, Volume, Vpc};
use aws_sdk_ec2::Client;
use gpuform_provider::Result;
use gpuform_provider::{ErrorKind, ProviderError, Scope};
use std::time::Duration;

/// Values per filter in one Describe call (EC2 accepts 200).
pub(crate) const FILTER_CHUNK: usize = 200;
/// Page sizes (EC2's maxima for these calls).
const PAGE: i32 = 1000;
const VOLUME_PAGE: i32 = 500;

/// The HTTPS client of every AWS SDK client and of aws-config's credential
/// providers: hyper with rustls on ring and the system's root certificates
/// (see Cargo.toml on why not the SDK's default).
pub(crate) fn https_client() -> aws_sdk_ec2::config::SharedHttpClient {
    use aws_smithy_http_client::tls;
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// The SDK configuration from aws-config's standard chain, with
/// `endpoint_override` (checked to be an http(s) URL) winning over
/// `AWS_ENDPOINT_URL`. Sends nothing.
pub(crate) async fn sdk_config(endpoint_override: Option<&str>) -> Result<aws_config::SdkConfig> {
    if let Some(url) = endpoint_override {
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("endpoint override `{url}` is not an http(s) URL"),
            ));
        }
    }
    // The SDK retries once on its own (a dropped connection, a 5xx);
    // everything else is left to the engine, which retries with its
    // shared rate budget and knows when to give up.
    let retry = RetryConfig::standard()
        .with_max_attempts(2)
        .with_initial_backoff(Duration::from_millis(200))
        .with_max_backoff(Duration::from_secs(2));
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(5))
        .operation_attempt_timeout(Duration::from_secs(60))
        .operation_timeout(Duration::from_secs(130))
        .build();
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(https_client())
        .retry_config(retry)
        .timeout_config(timeouts);
    if let Some(url) = endpoint_override {
        loader = loader.endpoint_url(url);
    }
    Ok(loader.load().await)
}

impl AwsProvider {
    /// The EC2 client of a region (created once, then shared).
    pub fn ec2_client(&self, region: &str) -> Client {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        clients
            .entry(region.to_string())
            .or_insert_with(|| {
                let mut b = aws_sdk_ec2::config::Builder::from(&self.base)
                    .region(Region::new(region.to_string()));
                if let Some(url) = &self.endpoint {
                    b = b.endpoint_url(url);
                }
                Client::from_conf(b.build())
            })
            .clone()
    }

    /// The client for a resource's scope; a scope without a region is a
    /// spec problem, refused before any call.
    pub(crate) fn client(&self, scope: &Scope) -> Result<Client> {
        if scope.region.trim().is_empty() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "no AWS region given for this resource",
            ));
        }
        Ok(self.ec2_client(&scope.region))
    }
}

/// EC2's Describe calls are eventually consistent: "it might take a few
/// seconds" for a new resource to appear (EC2 API reference, "Eventual
/// consistency"). CreateVpc, CreateSubnet, CreateVolume... take no
/// ClientToken, so a lost create is looked for again before a retry.
/// `GPUFORM_AWS_SETTLE_MS` overrides it, for tests against a consistent
/// stand-in (moto answers only once it has done the work).
pub(crate) fn settle_time() -> Duration {
    millis_from_env("GPUFORM_AWS_SETTLE_MS", Duration::from_secs(10))
}

/// A wait the environment variable `name` may override, in milliseconds
/// (tests against stand-ins shorten the clouds' documented waits).
pub(crate) fn millis_from_env(name: &str, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(default)
}

/// An endpoint URL without any `user:password@` part, for output.
pub(crate) fn redact_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://***@{host}{path}"),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    }
}

pub(crate) fn filter<I: IntoIterator<Item = String>>(name: &str, values: I) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values.into_iter().collect()))
        .build()
}

/// One filter on one id: how a single resource is looked up (a filter
/// rather than the `*Ids` parameter, so that a missing id is an empty answer
/// rather than an error).
pub(crate) fn by_id(name: &str, id: &str) -> Vec<Filter> {
    vec![filter(name, [id.to_string()])]
}

/// The error for a call that succeeded without the resource it was for.
pub(crate) fn empty_answer(action: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Transient,
        format!("EC2 {action} returned no resource"),
    )
}

// ----- paginated Describe calls ----------------------------------------------

/// Every item of every page of a Describe call (through the SDK's item
/// paginator); the first error stops the listing.
macro_rules! every_item {
    ($call:expr, $action:literal) => {
        $call
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| map_sdk($action, Op::Other, e))
    };
}

pub(crate) async fn describe_vpcs(c: &Client, f: Vec<Filter>) -> Result<Vec<Vpc>> {
    every_item!(
        c.describe_vpcs().set_filters(Some(f)).max_results(PAGE),
        "DescribeVpcs"
    )
}

pub(crate) async fn describe_subnets(c: &Client, f: Vec<Filter>) -> Result<Vec<Subnet>> {
    every_item!(
        c.describe_subnets().set_filters(Some(f)).max_results(PAGE),
        "DescribeSubnets"
    )
}

pub(crate) async fn describe_groups(c: &Client, f: Vec<Filter>) -> Result<Vec<SecurityGroup>> {
    every_item!(
        c.describe_security_groups()
            .set_filters(Some(f))
            .max_results(PAGE),
        "DescribeSecurityGroups"
    )
}

pub(crate) async fn describe_instances(c: &Client, f: Vec<Filter>) -> Result<Vec<Instance>> {
    let reservations: Vec<_> = every_item!(
        c.describe_instances()
            .set_filters(Some(f))
            .max_results(PAGE),
        "DescribeInstances"
    )?;
    Ok(reservations
        .into_iter()
        .flat_map(|r| r.instances.unwrap_or_default())
        .collect())
}

pub(crate) async fn describe_volumes(c: &Client, f: Vec<Filter>) -> Result<Vec<Volume>> {
    every_item!(
        c.describe_volumes()
            .set_filters(Some(f))
            .max_results(VOLUME_PAGE),
        "DescribeVolumes"
    )
}

/// DescribePlacementGroups is not paginated (an account has few of them).
pub(crate) async fn describe_placement_groups(
    c: &Client,
    f: Vec<Filter>,
) -> Result<Vec<PlacementGroup>> {
    let request = c.describe_placement_groups().set_filters(Some(f));
    let out = sent("DescribePlacementGroups", Op::Other, request.send()).await?;
    Ok(out.placement_groups().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_userinfo_is_redacted() {
        assert_eq!(redact_url("http://127.0.0.1:5555"), "http://127.0.0.1:5555");
        assert_eq!(
            redact_url("https://u:secret@ec2.example/x"),
            "https://***@ec2.example/x"
        );
    }

    #[tokio::test]
    async fn endpoint_overrides_must_be_urls() {
        let e = sdk_config(Some("ftp://x")).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert!(e.message.contains("not an http(s) URL"), "{e}");
    }
}
