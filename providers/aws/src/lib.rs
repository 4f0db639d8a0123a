//! gpuform's AWS provider, on the official `aws-sdk-ec2`.
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
//! | `bucket`    | not supported yet (S3 is not EC2): an `invalid` error          |
//!
//! Everything created carries the ownership tags (`gpuform:project`,
//! `gpuform:address`, `gpuform:token`, `gpuform:lineage`) set atomically with
//! the creation (TagSpecifications), plus `gpuform:kind`; instances also keep
//! what the engine asked for where EC2 cannot report it back (`gpuform:image`,
//! `gpuform:pricing`, `gpuform:rdma`). Refresh (`list_owned`, `read`) is
//! batched: one paginated Describe call per kind, filtered by tag or id.
//!
//! Credentials come from aws-config's standard chain and never reach errors,
//! logs or `Debug` output.

mod errors;
mod images;
mod requests;

pub use errors::{classify, Op};
pub use images::{is_ami_id, query_for, ImageQuery, LOGICAL_NAMES};
pub use requests::{InstancePlan, Rule};

use async_trait::async_trait;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_sdk_ec2::config::Region;
use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::types::{
    Filter, Instance, InstanceStateName, InstanceType as Ec2InstanceType, IpPermission,
    PlacementGroup, ResourceType, SecurityGroup, Subnet, Tag, Volume, VolumeState, VolumeType, Vpc,
};
use aws_sdk_ec2::Client;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::{
    Attrs, Cloud, CreateRequest, ErrorKind, ObservedResource, OwnershipTags, Provider,
    ProviderError, ResourceKind, Scope,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use errors::map_sdk;
use requests::{tag_spec, Tags};

/// Tag naming the neutral kind of what gpuform created.
pub const KIND_TAG: &str = gpuform_provider::resource::record_tags::KIND;
/// Tag keeping the image the engine asked for (a logical name or an AMI id).
pub const IMAGE_TAG: &str = gpuform_provider::resource::record_tags::IMAGE;
/// Tag keeping the pricing model the engine asked for.
pub const PRICING_TAG: &str = gpuform_provider::resource::record_tags::PRICING;
/// Tag keeping whether RDMA (EFA) was asked for.
pub const RDMA_TAG: &str = gpuform_provider::resource::record_tags::RDMA;
/// `gpuform:kind` of the root volume made by RunInstances.
pub const ROOT_VOLUME_KIND: &str = "root-volume";

/// Values per filter in one Describe call (EC2 accepts 200).
const FILTER_CHUNK: usize = 200;
/// Page sizes (EC2's maxima for these calls).
const PAGE: i32 = 1000;
const VOLUME_PAGE: i32 = 500;

/// What gpuform needs to know about an instance type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// EFA interfaces to attach for RDMA (0 when the type has no EFA).
    pub efa_interfaces: u32,
    /// `x86_64` or `arm64`.
    pub architecture: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ResolvedImage {
    image_id: String,
    root_device_name: Option<String>,
}

/// The AWS provider. Cheap to share (`Arc`); one EC2 client per region,
/// created on first use.
pub struct AwsProvider {
    base: aws_config::SdkConfig,
    endpoint: Option<String>,
    clients: Mutex<HashMap<String, Client>>,
    types: Mutex<HashMap<(String, String), TypeInfo>>,
    images: Mutex<HashMap<(String, String, String), ResolvedImage>>,
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
            .field("endpoint", &self.endpoint.as_deref().map(redact_url))
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
    pub const DEFAULT_RATE: RateLimit = RateLimit {
        per_second: 5.0,
        burst: 50,
    };

    /// Loads credentials and region with aws-config's standard chain
    /// (environment, shared config and credentials files, SSO, web identity,
    /// ECS/IMDS). `AWS_ENDPOINT_URL` is honoured; `endpoint_override` wins
    /// over it. Nothing is sent until the first call, so this works offline.
    pub async fn from_env(endpoint_override: Option<String>) -> Result<AwsProvider, ProviderError> {
        if let Some(url) = &endpoint_override {
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
            .retry_config(retry)
            .timeout_config(timeouts);
        if let Some(url) = &endpoint_override {
            loader = loader.endpoint_url(url);
        }
        let base = loader.load().await;
        let endpoint = endpoint_override.or_else(|| base.endpoint_url().map(str::to_string));
        Ok(AwsProvider {
            base,
            endpoint,
            clients: Mutex::new(HashMap::new()),
            types: Mutex::new(HashMap::new()),
            images: Mutex::new(HashMap::new()),
            rate: Self::DEFAULT_RATE,
            placement_groups: true,
        })
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

    fn client(&self, scope: &Scope) -> Result<Client, ProviderError> {
        if scope.region.trim().is_empty() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                "no AWS region given for this resource",
            ));
        }
        Ok(self.ec2_client(&scope.region))
    }

    /// EFA capacity and architecture of an instance type (DescribeInstanceTypes,
    /// cached per region and type).
    pub async fn type_info(
        &self,
        region: &str,
        instance_type: &str,
    ) -> Result<TypeInfo, ProviderError> {
        let key = (region.to_string(), instance_type.to_string());
        if let Some(t) = self
            .types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(t.clone());
        }
        let client = self.ec2_client(region);
        let out = client
            .describe_instance_types()
            .instance_types(Ec2InstanceType::from(instance_type))
            .send()
            .await
            .map_err(|e| map_sdk("DescribeInstanceTypes", Op::Create, e))?;
        let info = out.instance_types().first().ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("instance type `{instance_type}` is not offered in {region}"),
            )
            .with_code("InvalidInstanceType")
        })?;
        let efa_interfaces = match info.network_info() {
            Some(n) if n.efa_supported() == Some(true) => {
                let max_efa = n
                    .efa_info()
                    .and_then(|e| e.maximum_efa_interfaces())
                    .unwrap_or(1)
                    .max(1);
                let cards = n
                    .maximum_network_cards()
                    .unwrap_or(n.network_cards().len() as i32)
                    .max(1);
                max_efa.min(cards) as u32
            }
            _ => 0,
        };
        let archs: Vec<&str> = info
            .processor_info()
            .map(|p| {
                p.supported_architectures()
                    .iter()
                    .map(|a| a.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let architecture = if archs.is_empty() || archs.contains(&"x86_64") {
            "x86_64"
        } else {
            "arm64"
        };
        let t = TypeInfo {
            efa_interfaces,
            architecture: architecture.to_string(),
        };
        self.types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, t.clone());
        Ok(t)
    }

    /// The AMI for an image (a logical name or an `ami-...` id) on an
    /// architecture, with its root device name. Cached per region.
    pub async fn resolve_image(
        &self,
        region: &str,
        image: &str,
        architecture: &str,
    ) -> Result<(String, Option<String>), ProviderError> {
        let key = (
            region.to_string(),
            image.to_string(),
            architecture.to_string(),
        );
        if let Some(r) = self
            .images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok((r.image_id.clone(), r.root_device_name.clone()));
        }
        let client = self.ec2_client(region);
        let resolved = if is_ami_id(image) {
            let out = client
                .describe_images()
                .image_ids(image)
                .send()
                .await
                .map_err(|e| map_sdk("DescribeImages", Op::Create, e))?;
            let img = out.images().first().ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("image `{image}` does not exist in {region} or is not visible to this account"),
                )
                .with_code("InvalidAMIID.NotFound")
            })?;
            ResolvedImage {
                image_id: image.to_string(),
                root_device_name: img.root_device_name().map(str::to_string),
            }
        } else {
            let q = query_for(image, architecture).ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "unknown image `{image}` on aws; use one of {} or an AMI id (ami-...)",
                        LOGICAL_NAMES.join(", ")
                    ),
                )
            })?;
            let mut candidates = Vec::new();
            let mut pages = client
                .describe_images()
                .set_owners(Some(q.owners.clone()))
                .filters(filter("name", [q.name_pattern.clone()]))
                .filters(filter("architecture", [q.architecture.clone()]))
                .filters(filter("state", ["available".to_string()]))
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| map_sdk("DescribeImages", Op::Create, e))?;
                for img in page.images() {
                    candidates.push(images::Candidate {
                        image_id: img.image_id().unwrap_or_default().to_string(),
                        name: img.name().unwrap_or_default().to_string(),
                        creation_date: img.creation_date().unwrap_or_default().to_string(),
                        root_device_name: img.root_device_name().map(str::to_string),
                    });
                }
            }
            let best = images::newest(candidates).ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "no AMI for image `{image}` ({}) in {region}: none named `{}` owned by {}; hint: give an AMI id (ami-...) instead",
                        q.architecture,
                        q.name_pattern,
                        q.owners.join(",")
                    ),
                )
                .with_code("InvalidAMIID.NotFound")
            })?;
            ResolvedImage {
                image_id: best.image_id,
                root_device_name: best.root_device_name,
            }
        };
        tracing::debug!(region, image, ami = %resolved.image_id, "image resolved");
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, resolved.clone());
        Ok((resolved.image_id, resolved.root_device_name))
    }

    // ----- create -----------------------------------------------------------

    async fn create_network(
        &self,
        c: &Client,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let cidr = attr_str(&req.attrs, "cidr")?.ok_or_else(|| missing("network", "cidr"))?;
        let tags = creation_tags(&req.ownership, "network", &[], &user_tags(&req.attrs)?);
        let out = c
            .create_vpc()
            .cidr_block(cidr)
            .tag_specifications(tag_spec(ResourceType::Vpc, &tags))
            .send()
            .await
            .map_err(|e| map_sdk("CreateVpc", Op::Create, e))?;
        let vpc = out.vpc().ok_or_else(|| empty_answer("CreateVpc"))?;
        Ok(observe_vpc(vpc, &req.scope.region))
    }

    async fn create_subnet(
        &self,
        c: &Client,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let vpc = reference(req, "network")?;
        let cidr = attr_str(&req.attrs, "cidr")?.ok_or_else(|| missing("subnet", "cidr"))?;
        let zone = attr_str(&req.attrs, "zone")?;
        let tags = creation_tags(&req.ownership, "subnet", &[], &user_tags(&req.attrs)?);
        let out = c
            .create_subnet()
            .vpc_id(vpc)
            .cidr_block(cidr)
            .set_availability_zone(zone)
            .tag_specifications(tag_spec(ResourceType::Subnet, &tags))
            .send()
            .await
            .map_err(|e| map_sdk("CreateSubnet", Op::Create, e))?;
        let s = out.subnet().ok_or_else(|| empty_answer("CreateSubnet"))?;
        Ok(observe_subnet(s, &req.scope.region))
    }

    async fn create_firewall(
        &self,
        c: &Client,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let vpc = reference(req, "network")?;
        let rules = ingress_rules(&req.attrs)?;
        let tags = creation_tags(&req.ownership, "firewall", &[], &user_tags(&req.attrs)?);
        let name = derived_name(&req.ownership);
        let description = sanitize(
            &format!(
                "gpuform {} {}",
                req.ownership.project, req.ownership.address
            ),
            255,
        );
        let created = c
            .create_security_group()
            .group_name(&name)
            .description(description)
            .vpc_id(&vpc)
            .tag_specifications(tag_spec(ResourceType::SecurityGroup, &tags))
            .send()
            .await;
        let group_id = match created {
            Ok(out) => out
                .group_id()
                .ok_or_else(|| empty_answer("CreateSecurityGroup"))?
                .to_string(),
            Err(e) if e.code() == Some("InvalidGroup.Duplicate") => {
                // A retry of this very create (the name comes from the token):
                // adopt the group if it carries our token.
                let groups = describe_groups(
                    c,
                    vec![
                        filter("vpc-id", [vpc.clone()]),
                        filter("group-name", [name.clone()]),
                    ],
                )
                .await?;
                let g = groups
                    .into_iter()
                    .find(|g| tag_value(g.tags(), OwnershipTags::TOKEN) == Some(req.ownership.token.as_str()))
                    .ok_or_else(|| {
                        ProviderError::new(
                            ErrorKind::Invalid,
                            format!("security group `{name}` already exists in {vpc} and is not this resource's"),
                        )
                        .with_code("InvalidGroup.Duplicate")
                    })?;
                g.group_id().unwrap_or_default().to_string()
            }
            Err(e) => return Err(map_sdk("CreateSecurityGroup", Op::Create, e)),
        };
        let mut perms = vec![requests::self_permission(&group_id)];
        perms.extend(rules.iter().map(Rule::to_permission));
        authorize(c, &group_id, perms).await?;
        let g = describe_groups(c, vec![filter("group-id", [group_id.clone()])]).await?;
        let g = g
            .first()
            .ok_or_else(|| empty_answer("DescribeSecurityGroups"))?;
        Ok(observe_group(g, &req.scope.region))
    }

    async fn create_placement(
        &self,
        c: &Client,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let strategy = attr_str(&req.attrs, "strategy")?.unwrap_or_else(|| "cluster".to_string());
        let tags = creation_tags(&req.ownership, "placement", &[], &user_tags(&req.attrs)?);
        let name = derived_name(&req.ownership);
        match requests::create_placement_group(c, &name, &strategy, &tags)?
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if e.code() == Some("InvalidPlacementGroup.Duplicate") => {
                let groups =
                    describe_placement_groups(c, vec![filter("group-name", [name.clone()])])
                        .await?;
                if !groups.iter().any(|g| {
                    tag_value(g.tags(), OwnershipTags::TOKEN) == Some(req.ownership.token.as_str())
                }) {
                    return Err(ProviderError::new(
                        ErrorKind::Invalid,
                        format!(
                            "placement group `{name}` already exists and is not this resource's"
                        ),
                    )
                    .with_code("InvalidPlacementGroup.Duplicate"));
                }
            }
            Err(e) => return Err(map_sdk("CreatePlacementGroup", Op::Create, e)),
        }
        let groups =
            describe_placement_groups(c, vec![filter("group-name", [name.clone()])]).await?;
        let g = groups
            .first()
            .ok_or_else(|| empty_answer("DescribePlacementGroups"))?;
        Ok(observe_placement(g, &req.scope.region))
    }

    async fn create_instance(
        &self,
        c: &Client,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let instance_type =
            attr_str(a, "instance_type")?.ok_or_else(|| missing("instance", "instance_type"))?;
        let image = attr_str(a, "image")?.ok_or_else(|| missing("instance", "image"))?;
        let pricing = attr_str(a, "pricing")?.unwrap_or_else(|| "on-demand".to_string());
        let spot = match pricing.as_str() {
            "spot" => true,
            // Reserved instances and savings plans are billing constructs: the
            // launch is an ordinary on-demand one.
            "on-demand" | "reserved-1y" | "reserved-3y" => false,
            other => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "pricing `{other}` is not one of on-demand, spot, reserved-1y, reserved-3y"
                    ),
                ))
            }
        };
        let rdma = attr_bool(a, "rdma")?.unwrap_or(false);
        let root_gb = attr_u32(a, "root_gb")?;
        let user_data = attr_str(a, "user_data")?;
        let zone = attr_str(a, "zone")?;

        let info = self.type_info(region, &instance_type).await?;
        let (image_id, root_device_name) = self
            .resolve_image(region, &image, &info.architecture)
            .await?;
        if root_gb.is_some() && root_device_name.is_none() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("image {image_id} reports no root device, so its root volume size cannot be set"),
            ));
        }
        let user = user_tags(a)?;
        let extra = [
            (IMAGE_TAG, image.clone()),
            (PRICING_TAG, pricing.clone()),
            (RDMA_TAG, rdma.to_string()),
        ];
        let plan = InstancePlan {
            instance_type: instance_type.clone(),
            image_id,
            root_device_name,
            root_gb: root_gb.map(|g| g as i32),
            subnet_id: req.refs.get("subnet").cloned(),
            security_group_id: req.refs.get("firewall").cloned(),
            placement_group: req.refs.get("placement").cloned(),
            zone,
            spot,
            efa_interfaces: if rdma { info.efa_interfaces } else { 0 },
            user_data,
            client_token: client_token(&req.ownership.token),
            instance_tags: creation_tags(&req.ownership, "instance", &extra, &user),
            volume_tags: creation_tags(&req.ownership, ROOT_VOLUME_KIND, &[], &user),
        };
        tracing::debug!(
            region = %region,
            address = %req.ownership.address,
            instance_type = %plan.instance_type,
            efa = plan.efa_interfaces,
            spot,
            "RunInstances"
        );
        let out = requests::run_instances(c, &plan)
            .send()
            .await
            .map_err(|e| map_sdk("RunInstances", Op::Create, e))?;
        let inst = out
            .instances()
            .first()
            .ok_or_else(|| empty_answer("RunInstances"))?;
        let inst = wait_launched(c, inst.clone(), launch_wait()).await?;
        Ok(observe_instance(&inst, region, root_gb.map(|g| g as i32)))
    }

    async fn create_volume(
        &self,
        c: &Client,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let a = &req.attrs;
        let size = attr_u32(a, "size_gb")?.ok_or_else(|| missing("volume", "size_gb"))?;
        let instance = req.refs.get("instance").cloned();
        let mut zone = attr_str(a, "zone")?;
        if let (Some(id), None) = (&instance, &zone) {
            zone = existing_instance(c, id)
                .await?
                .placement()
                .and_then(|p| p.availability_zone())
                .map(str::to_string);
        }
        let zone = zone.ok_or_else(|| missing("volume", "zone"))?;
        let vtype = attr_str(a, "volume_type")?.unwrap_or_else(|| "gp3".to_string());
        let tags = creation_tags(&req.ownership, "volume", &[], &user_tags(a)?);
        let out = c
            .create_volume()
            .availability_zone(&zone)
            .size(size as i32)
            .volume_type(VolumeType::from(vtype.as_str()))
            .client_token(client_token(&req.ownership.token))
            .tag_specifications(tag_spec(ResourceType::Volume, &tags))
            .send()
            .await
            .map_err(|e| map_sdk("CreateVolume", Op::Create, e))?;
        let volume_id = out
            .volume_id()
            .ok_or_else(|| empty_answer("CreateVolume"))?
            .to_string();
        if let Some(instance_id) = instance {
            // A new volume is `creating` for a few seconds on AWS.
            let mut state = out.state().cloned();
            for _ in 0..60 {
                if state != Some(VolumeState::Creating) {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                state = describe_volumes(c, vec![filter("volume-id", [volume_id.clone()])])
                    .await?
                    .first()
                    .and_then(|v| v.state().cloned());
            }
            // A retried create (same ClientToken) may find it attached already.
            let v = describe_volumes(c, vec![filter("volume-id", [volume_id.clone()])]).await?;
            if v.first().and_then(attachment).as_deref() != Some(instance_id.as_str()) {
                attach_volume(c, &volume_id, &instance_id).await?;
            }
        }
        let v = describe_volumes(c, vec![filter("volume-id", [volume_id.clone()])]).await?;
        let v = v.first().ok_or_else(|| empty_answer("DescribeVolumes"))?;
        Ok(observe_volume(v, &req.scope.region))
    }

    // ----- read -------------------------------------------------------------

    async fn observe_instances(
        &self,
        c: &Client,
        region: &str,
        instances: Vec<Instance>,
        known_sizes: &HashMap<String, i32>,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let live: Vec<Instance> = instances.into_iter().filter(|i| !is_gone(i)).collect();
        // Root volume sizes: from the caller's volume listing, else one
        // batched DescribeVolumes by id.
        let mut sizes = known_sizes.clone();
        let missing: Vec<String> = live
            .iter()
            .filter_map(root_volume_id)
            .filter(|v| !sizes.contains_key(v))
            .collect();
        for chunk in missing.chunks(FILTER_CHUNK) {
            for v in describe_volumes(c, vec![filter("volume-id", chunk.to_vec())]).await? {
                if let (Some(id), Some(size)) = (v.volume_id(), v.size()) {
                    sizes.insert(id.to_string(), size);
                }
            }
        }
        Ok(live
            .iter()
            .map(|i| {
                let root = root_volume_id(i).and_then(|v| sizes.get(&v).copied());
                observe_instance(i, region, root)
            })
            .collect())
    }

    async fn read_impl(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let c = self.client(scope)?;
        let region = scope.region.as_str();
        let mut out = Vec::new();
        // Filters by id rather than the *Ids parameters: an id that no longer
        // exists is simply absent instead of failing the whole batch with
        // Invalid*ID.NotFound.
        let ids: Vec<String> = ids
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for chunk in ids.chunks(FILTER_CHUNK) {
            let chunk = chunk.to_vec();
            match kind {
                ResourceKind::Network => out.extend(
                    describe_vpcs(&c, vec![filter("vpc-id", chunk)])
                        .await?
                        .iter()
                        .map(|v| observe_vpc(v, region)),
                ),
                ResourceKind::Subnet => out.extend(
                    describe_subnets(&c, vec![filter("subnet-id", chunk)])
                        .await?
                        .iter()
                        .map(|s| observe_subnet(s, region)),
                ),
                ResourceKind::Firewall => out.extend(
                    describe_groups(&c, vec![filter("group-id", chunk)])
                        .await?
                        .iter()
                        .map(|g| observe_group(g, region)),
                ),
                ResourceKind::Placement => out.extend(
                    describe_placement_groups(&c, vec![filter("group-name", chunk)])
                        .await?
                        .iter()
                        .filter(|g| !placement_gone(g))
                        .map(|g| observe_placement(g, region)),
                ),
                ResourceKind::Instance => {
                    let found = describe_instances(&c, vec![filter("instance-id", chunk)]).await?;
                    out.extend(
                        self.observe_instances(&c, region, found, &HashMap::new())
                            .await?,
                    );
                }
                ResourceKind::Volume => out.extend(
                    describe_volumes(&c, vec![filter("volume-id", chunk)])
                        .await?
                        .iter()
                        .filter(|v| !volume_gone(v))
                        .map(|v| observe_volume(v, region)),
                ),
                ResourceKind::Bucket => return Err(buckets_unsupported()),
            }
        }
        Ok(out)
    }

    // ----- update -----------------------------------------------------------

    async fn sync_tags(
        &self,
        c: &Client,
        id: &str,
        current: &ObservedResource,
        desired: &Value,
    ) -> Result<(), ProviderError> {
        let want = tags_from_value(desired)?;
        let have: BTreeMap<String, String> = match current.attrs.get("tags") {
            Some(v) => tags_from_value(v)?,
            None => BTreeMap::new(),
        };
        let add: Vec<Tag> = want
            .iter()
            .filter(|(k, v)| have.get(*k) != Some(*v))
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect();
        let remove: Vec<Tag> = have
            .keys()
            .filter(|k| !want.contains_key(*k))
            .map(|k| Tag::builder().key(k).build())
            .collect();
        if !add.is_empty() {
            c.create_tags()
                .resources(id)
                .set_tags(Some(add))
                .send()
                .await
                .map_err(|e| map_sdk("CreateTags", Op::Other, e))?;
        }
        if !remove.is_empty() {
            c.delete_tags()
                .resources(id)
                .set_tags(Some(remove))
                .send()
                .await
                .map_err(|e| map_sdk("DeleteTags", Op::Other, e))?;
        }
        Ok(())
    }

    async fn read_one(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
    ) -> Result<ObservedResource, ProviderError> {
        self.read_impl(scope, kind, &[id.to_string()])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::NotFound,
                    format!("{kind} {id} does not exist in {}", scope.region),
                )
            })
    }

    // ----- delete -----------------------------------------------------------

    async fn delete_volume(&self, c: &Client, id: &str) -> Result<(), ProviderError> {
        let vols = describe_volumes(c, vec![filter("volume-id", [id.to_string()])]).await?;
        let Some(v) = vols.first() else { return Ok(()) };
        if volume_gone(v) {
            return Ok(());
        }
        detach_volume(c, v).await?;
        ok_if_gone(
            c.delete_volume().volume_id(id).send().await.map(|_| ()),
            "DeleteVolume",
        )
    }
}

#[async_trait]
impl Provider for AwsProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Aws
    }

    fn label(&self) -> String {
        match &self.endpoint {
            Some(e) => format!("aws({})", redact_url(e)),
            None => "aws".to_string(),
        }
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    /// DescribeInstanceTypeOfferings for one zone and type: one call, so a
    /// plan learns before any create that a zone does not sell the type.
    async fn offered(
        &self,
        scope: &Scope,
        zone: &str,
        instance_type: &str,
    ) -> Result<Option<bool>, ProviderError> {
        let c = self.client(scope)?;
        let out = c
            .describe_instance_type_offerings()
            .location_type(aws_sdk_ec2::types::LocationType::AvailabilityZone)
            .filters(Filter::builder().name("location").values(zone).build())
            .filters(
                Filter::builder()
                    .name("instance-type")
                    .values(instance_type)
                    .build(),
            )
            .send()
            .await
            .map_err(|e| map_sdk("DescribeInstanceTypeOfferings", Op::Other, e))?;
        Ok(Some(out.instance_type_offerings().iter().any(|o| {
            o.instance_type().map(|t| t.as_str()) == Some(instance_type)
        })))
    }

    /// EC2's Describe calls are eventually consistent: "it might take a few
    /// seconds" for a new resource to appear (EC2 API reference, "Eventual
    /// consistency"). CreateVpc, CreateSubnet, CreateVolume... take no
    /// ClientToken, so a lost create is looked for again before a retry.
    /// `GPUFORM_AWS_SETTLE_MS` overrides it, for tests against a
    /// consistent stand-in (moto answers only once it has done the work).
    fn settle_time(&self) -> std::time::Duration {
        std::env::var("GPUFORM_AWS_SETTLE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(std::time::Duration::from_millis)
            .unwrap_or(std::time::Duration::from_secs(10))
    }

    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let c = self.client(&req.scope)?;
        match req.kind {
            ResourceKind::Network => self.create_network(&c, req).await,
            ResourceKind::Subnet => self.create_subnet(&c, req).await,
            ResourceKind::Firewall => self.create_firewall(&c, req).await,
            ResourceKind::Placement => self.create_placement(&c, req).await,
            ResourceKind::Instance => self.create_instance(&c, req).await,
            ResourceKind::Volume => self.create_volume(&c, req).await,
            ResourceKind::Bucket => Err(buckets_unsupported()),
        }
    }

    async fn read(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read_impl(scope, kind, ids).await
    }

    async fn list_owned(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let c = self.client(scope)?;
        let region = scope.region.as_str();
        let owned = || {
            vec![filter(
                &format!("tag:{}", OwnershipTags::PROJECT),
                [project.to_string()],
            )]
        };
        let mut live_instances = owned();
        live_instances.push(filter(
            "instance-state-name",
            ["pending", "running", "stopping", "stopped"].map(String::from),
        ));
        let placement = async {
            if self.placement_groups {
                describe_placement_groups(&c, owned()).await
            } else {
                Ok(Vec::new())
            }
        };
        let (vpcs, subnets, groups, instances, volumes, pgs) = tokio::try_join!(
            describe_vpcs(&c, owned()),
            describe_subnets(&c, owned()),
            describe_groups(&c, owned()),
            describe_instances(&c, live_instances),
            describe_volumes(&c, owned()),
            placement,
        )?;
        let mut out = Vec::new();
        out.extend(vpcs.iter().map(|v| observe_vpc(v, region)));
        out.extend(subnets.iter().map(|s| observe_subnet(s, region)));
        out.extend(groups.iter().map(|g| observe_group(g, region)));
        out.extend(
            pgs.iter()
                .filter(|g| !placement_gone(g))
                .map(|g| observe_placement(g, region)),
        );
        let mut sizes = HashMap::new();
        for v in &volumes {
            if let (Some(id), Some(size)) = (v.volume_id(), v.size()) {
                sizes.insert(id.to_string(), size);
            }
        }
        out.extend(
            self.observe_instances(&c, region, instances, &sizes)
                .await?,
        );
        out.extend(
            volumes
                .iter()
                .filter(|v| {
                    !volume_gone(v) && tag_value(v.tags(), KIND_TAG) != Some(ROOT_VOLUME_KIND)
                })
                .map(|v| observe_volume(v, region)),
        );
        Ok(out)
    }

    async fn update(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
        changes: &Attrs,
    ) -> Result<ObservedResource, ProviderError> {
        let c = self.client(scope)?;
        for key in changes.keys() {
            if !kind.is_updatable(key) {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "`{key}` of a {kind} cannot change in place on aws; it needs a replacement"
                    ),
                ));
            }
        }
        let current = self.read_one(scope, kind, id).await?;
        if let Some(tags) = changes.get("tags") {
            // Placement groups are tagged by id, not by name.
            let target = if kind == ResourceKind::Placement {
                current
                    .attrs
                    .get("group_id")
                    .and_then(|v| v.as_str())
                    .unwrap_or(id)
                    .to_string()
            } else {
                id.to_string()
            };
            self.sync_tags(&c, &target, &current, tags).await?;
        }
        if let Some(ingress) = changes.get("ingress") {
            let mut want_attrs = Attrs::new();
            want_attrs.insert("ingress".into(), ingress.clone());
            let want: BTreeSet<Rule> = ingress_rules(&want_attrs)?.into_iter().collect();
            let (have, member_rule) = observed_rules(&current.attrs)?;
            let mut add: Vec<IpPermission> =
                want.difference(&have).map(Rule::to_permission).collect();
            if !member_rule {
                // Left out by a create interrupted before AuthorizeSecurityGroupIngress.
                add.push(requests::self_permission(id));
            }
            let remove: Vec<IpPermission> =
                have.difference(&want).map(Rule::to_permission).collect();
            if !add.is_empty() {
                authorize(&c, id, add).await?;
            }
            if !remove.is_empty() {
                c.revoke_security_group_ingress()
                    .group_id(id)
                    .set_ip_permissions(Some(remove))
                    .send()
                    .await
                    .map_err(|e| map_sdk("RevokeSecurityGroupIngress", Op::Other, e))?;
            }
        }
        if let Some(target) = changes.get("attached_to") {
            let vols = describe_volumes(&c, vec![filter("volume-id", [id.to_string()])]).await?;
            let v = vols.first().ok_or_else(|| {
                ProviderError::new(ErrorKind::NotFound, format!("volume {id} does not exist"))
                    .with_code("InvalidVolume.NotFound")
            })?;
            let have = attachment(v);
            match target {
                Value::Null => detach_volume(&c, v).await?,
                Value::String(instance) if have.as_deref() != Some(instance.as_str()) => {
                    detach_volume(&c, v).await?;
                    attach_volume(&c, id, instance).await?;
                }
                Value::String(_) => {}
                other => {
                    return Err(ProviderError::new(
                        ErrorKind::Invalid,
                        format!("`attached_to` must be an instance id or null, got {other}"),
                    ))
                }
            }
        }
        if let Some(size) = changes.get("size_gb") {
            let size = size
                .as_u64()
                .and_then(|s| i32::try_from(s).ok())
                .ok_or_else(|| {
                    ProviderError::new(
                        ErrorKind::Invalid,
                        format!("volume size_gb {size} is not a size in GiB"),
                    )
                })?;
            c.modify_volume()
                .volume_id(id)
                .size(size)
                .send()
                .await
                .map_err(|e| map_sdk("ModifyVolume", Op::Other, e))?;
        }
        self.read_one(scope, kind, id).await
    }

    async fn delete(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
    ) -> Result<(), ProviderError> {
        let c = self.client(scope)?;
        match kind {
            ResourceKind::Network => ok_if_gone(
                c.delete_vpc().vpc_id(id).send().await.map(|_| ()),
                "DeleteVpc",
            ),
            ResourceKind::Subnet => ok_if_gone(
                c.delete_subnet().subnet_id(id).send().await.map(|_| ()),
                "DeleteSubnet",
            ),
            ResourceKind::Firewall => ok_if_gone(
                c.delete_security_group()
                    .group_id(id)
                    .send()
                    .await
                    .map(|_| ()),
                "DeleteSecurityGroup",
            ),
            ResourceKind::Placement => ok_if_gone(
                c.delete_placement_group()
                    .group_name(id)
                    .send()
                    .await
                    .map(|_| ()),
                "DeletePlacementGroup",
            ),
            ResourceKind::Instance => ok_if_gone(
                c.terminate_instances()
                    .instance_ids(id)
                    .send()
                    .await
                    .map(|_| ()),
                "TerminateInstances",
            ),
            ResourceKind::Volume => self.delete_volume(&c, id).await,
            ResourceKind::Bucket => Err(buckets_unsupported()),
        }
    }
}

// ----- helpers ----------------------------------------------------------------

/// An endpoint URL without any `user:password@` part, for output.
fn redact_url(url: &str) -> String {
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

fn buckets_unsupported() -> ProviderError {
    ProviderError::new(ErrorKind::Invalid, "buckets on aws are not supported yet")
}

fn missing(kind: &str, attr: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        format!("a {kind} on aws needs `{attr}`"),
    )
}

fn empty_answer(action: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Transient,
        format!("EC2 {action} returned no resource"),
    )
}

fn reference(req: &CreateRequest, role: &str) -> Result<String, ProviderError> {
    req.refs.get(role).cloned().ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("a {} on aws needs a `{role}` to belong to", req.kind),
        )
    })
}

/// Deletes succeed when the resource is already gone.
fn ok_if_gone<E>(
    r: Result<(), aws_sdk_ec2::error::SdkError<E, aws_sdk_ec2::config::http::HttpResponse>>,
    action: &str,
) -> Result<(), ProviderError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match r {
        Ok(()) => Ok(()),
        Err(e) => {
            let err = map_sdk(action, Op::Other, e);
            if err.kind == ErrorKind::NotFound {
                Ok(())
            } else {
                Err(err)
            }
        }
    }
}

fn filter<I: IntoIterator<Item = String>>(name: &str, values: I) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values.into_iter().collect()))
        .build()
}

fn attr_str(a: &Attrs, key: &str) -> Result<Option<String>, ProviderError> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("`{key}` must be a string, got {other}"),
        )),
    }
}

fn attr_bool(a: &Attrs, key: &str) -> Result<Option<bool>, ProviderError> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("`{key}` must be true or false, got {other}"),
        )),
    }
}

fn attr_u32(a: &Attrs, key: &str) -> Result<Option<u32>, ProviderError> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("`{key}` must be a whole number, got {v}"),
                )
            }),
    }
}

fn tags_from_value(v: &Value) -> Result<BTreeMap<String, String>, ProviderError> {
    let obj = match v {
        Value::Null => return Ok(BTreeMap::new()),
        Value::Object(o) => o,
        other => {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("`tags` must be a map, got {other}"),
            ))
        }
    };
    let mut out = BTreeMap::new();
    for (k, v) in obj {
        let v = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("tag `{k}` must be a string, got {other}"),
                ))
            }
        };
        if k.starts_with("gpuform:") || k.to_ascii_lowercase().starts_with("aws:") {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("tag `{k}`: the prefixes gpuform: and aws: are reserved"),
            ));
        }
        out.insert(k.clone(), v);
    }
    Ok(out)
}

fn user_tags(a: &Attrs) -> Result<BTreeMap<String, String>, ProviderError> {
    match a.get("tags") {
        None => Ok(BTreeMap::new()),
        Some(v) => tags_from_value(v),
    }
}

/// The `Name` tag gpuform sets unless the user gives one: consoles show it.
fn default_name(own: &OwnershipTags) -> String {
    format!("{}/{}", own.project, own.address)
}

/// Ownership tags, `gpuform:kind`, the extra gpuform tags and the user's.
fn creation_tags(
    own: &OwnershipTags,
    kind: &str,
    extra: &[(&str, String)],
    user: &BTreeMap<String, String>,
) -> Tags {
    let mut tags: Tags = own
        .to_tags()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tags.push((KIND_TAG.to_string(), kind.to_string()));
    tags.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    if !user.contains_key("Name") {
        tags.push(("Name".to_string(), default_name(own)));
    }
    tags.extend(user.iter().map(|(k, v)| (k.clone(), v.clone())));
    tags
}

fn tag_value<'a>(tags: &'a [Tag], key: &str) -> Option<&'a str> {
    tags.iter()
        .find(|t| t.key() == Some(key))
        .and_then(|t| t.value())
}

fn ownership(tags: &[Tag]) -> Option<OwnershipTags> {
    OwnershipTags::from_tags(|k| tag_value(tags, k))
}

/// The user's tags as observed: without gpuform's and AWS's own, and without
/// the default `Name`.
fn observed_user_tags(tags: &[Tag], own: Option<&OwnershipTags>) -> Value {
    let default = own.map(default_name);
    let mut m = serde_json::Map::new();
    for t in tags {
        let (Some(k), v) = (t.key(), t.value().unwrap_or("")) else {
            continue;
        };
        if k.starts_with("gpuform:") || k.starts_with("aws:") {
            continue;
        }
        if k == "Name" && Some(v) == default.as_deref() {
            continue;
        }
        m.insert(k.to_string(), Value::String(v.to_string()));
    }
    Value::Object(m)
}

/// A name unique per resource and stable across retries of its create.
fn derived_name(own: &OwnershipTags) -> String {
    let token: String = own
        .token
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(12)
        .collect();
    let base = sanitize(&format!("gpuform-{}-{}", own.project, own.address), 200);
    format!("{base}-{token}")
}

/// Keeps the characters EC2 accepts in group names and descriptions.
fn sanitize(s: &str, max: usize) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-:/()#,@[]+=&;{}!$* ".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(max)
        .collect()
}

/// ClientToken: at most 64 ASCII characters; longer or non-ASCII tokens are
/// replaced by their SHA-256 (64 hex digits), stable across retries.
fn client_token(token: &str) -> String {
    if token.len() <= 64 && token.chars().all(|c| c.is_ascii_graphic()) {
        token.to_string()
    } else {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(token.as_bytes()))
    }
}

fn ingress_rules(a: &Attrs) -> Result<Vec<Rule>, ProviderError> {
    match a.get("ingress") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(rules)) => rules.iter().map(Rule::from_json).collect(),
        Some(other) => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("`ingress` must be a list, got {other}"),
        )),
    }
}

/// The rules of an observed `ingress`, and whether the members' rule is
/// there (see [`gpuform_provider::resource::MEMBER_RULE_MISSING`]).
fn observed_rules(a: &Attrs) -> Result<(BTreeSet<Rule>, bool), ProviderError> {
    let missing = gpuform_provider::resource::member_rule_missing();
    let mut rules = a.clone();
    let mut member_rule = true;
    if let Some(Value::Array(list)) = rules.get_mut("ingress") {
        member_rule = !list.contains(&missing);
        list.retain(|r| *r != missing);
    }
    Ok((ingress_rules(&rules)?.into_iter().collect(), member_rule))
}

/// The instance a volume is attached (or attaching) to, per DescribeVolumes'
/// `Attachments` (a volume detaching is on its way out).
fn attachment(v: &Volume) -> Option<String> {
    v.attachments()
        .iter()
        .find(|a| {
            matches!(
                a.state().map(|s| s.as_str()),
                Some("attached") | Some("attaching")
            )
        })
        .and_then(|a| a.instance_id())
        .map(str::to_string)
}

async fn existing_instance(c: &Client, id: &str) -> Result<Instance, ProviderError> {
    describe_instances(c, vec![filter("instance-id", [id.to_string()])])
        .await?
        .into_iter()
        .find(|i| !is_gone(i))
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("instance {id} to attach the volume to does not exist"),
            )
            .with_code("InvalidInstanceID.NotFound")
        })
}

/// AttachVolume at the instance's first free device name.
async fn attach_volume(
    c: &Client,
    volume_id: &str,
    instance_id: &str,
) -> Result<(), ProviderError> {
    let inst = existing_instance(c, instance_id).await?;
    let used: Vec<String> = inst
        .block_device_mappings()
        .iter()
        .filter_map(|m| m.device_name().map(str::to_string))
        .collect();
    let device = free_device(&used).ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("instance {instance_id} has no free device name left"),
        )
    })?;
    c.attach_volume()
        .volume_id(volume_id)
        .instance_id(instance_id)
        .device(device)
        .send()
        .await
        .map_err(|e| map_sdk("AttachVolume", Op::Create, e))?;
    Ok(())
}

/// DetachVolume from every instance it is attached to, then waits a little
/// for it to be `available` (the engine retries DependencyViolation after).
async fn detach_volume(c: &Client, v: &Volume) -> Result<(), ProviderError> {
    let id = v.volume_id().unwrap_or_default();
    let attached: Vec<(Option<String>, Option<String>)> = v
        .attachments()
        .iter()
        .filter(|a| {
            matches!(
                a.state().map(|s| s.as_str()),
                Some("attached") | Some("attaching")
            )
        })
        .map(|a| {
            (
                a.instance_id().map(str::to_string),
                a.device().map(str::to_string),
            )
        })
        .collect();
    for (instance_id, device) in &attached {
        // Naming the instance and device is optional on AWS but makes the
        // call unambiguous (and moto requires the instance).
        let detached = c
            .detach_volume()
            .volume_id(id)
            .set_instance_id(instance_id.clone())
            .set_device(device.clone())
            .send()
            .await;
        ok_if_gone(detached.map(|_| ()), "DetachVolume")?;
    }
    if !attached.is_empty() {
        for _ in 0..15 {
            let now = describe_volumes(c, vec![filter("volume-id", [id.to_string()])]).await?;
            if now
                .first()
                .map(|v| v.state() == Some(&VolumeState::Available))
                .unwrap_or(true)
            {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    Ok(())
}

/// The first free device name for a data volume (/dev/sdf ... /dev/sdp).
fn free_device(used: &[String]) -> Option<String> {
    let taken = |d: &str| {
        let tail = d
            .trim_start_matches("/dev/")
            .trim_start_matches("sd")
            .trim_start_matches("xvd");
        used.iter().any(|u| {
            u.trim_start_matches("/dev/")
                .trim_start_matches("sd")
                .trim_start_matches("xvd")
                == tail
        })
    };
    ('f'..='p')
        .map(|c| format!("/dev/sd{c}"))
        .find(|d| !taken(d))
}

async fn authorize(
    c: &Client,
    group_id: &str,
    perms: Vec<IpPermission>,
) -> Result<(), ProviderError> {
    let all = c
        .authorize_security_group_ingress()
        .group_id(group_id)
        .set_ip_permissions(Some(perms.clone()))
        .send()
        .await;
    match all {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some("InvalidPermission.Duplicate") => {
            // Some rules exist already (a retried create): add the rest one by one.
            for p in perms {
                match c
                    .authorize_security_group_ingress()
                    .group_id(group_id)
                    .ip_permissions(p)
                    .send()
                    .await
                {
                    Ok(_) => {}
                    Err(e) if e.code() == Some("InvalidPermission.Duplicate") => {}
                    Err(e) => return Err(map_sdk("AuthorizeSecurityGroupIngress", Op::Other, e)),
                }
            }
            Ok(())
        }
        Err(e) => Err(map_sdk("AuthorizeSecurityGroupIngress", Op::Create, e)),
    }
}

// ----- paginated Describe calls ----------------------------------------------

async fn describe_vpcs(c: &Client, filters: Vec<Filter>) -> Result<Vec<Vpc>, ProviderError> {
    let mut out = Vec::new();
    let mut pages = c
        .describe_vpcs()
        .set_filters(Some(filters))
        .max_results(PAGE)
        .into_paginator()
        .send();
    while let Some(p) = pages.next().await {
        out.extend(
            p.map_err(|e| map_sdk("DescribeVpcs", Op::Other, e))?
                .vpcs()
                .iter()
                .cloned(),
        );
    }
    Ok(out)
}

async fn describe_subnets(c: &Client, filters: Vec<Filter>) -> Result<Vec<Subnet>, ProviderError> {
    let mut out = Vec::new();
    let mut pages = c
        .describe_subnets()
        .set_filters(Some(filters))
        .max_results(PAGE)
        .into_paginator()
        .send();
    while let Some(p) = pages.next().await {
        out.extend(
            p.map_err(|e| map_sdk("DescribeSubnets", Op::Other, e))?
                .subnets()
                .iter()
                .cloned(),
        );
    }
    Ok(out)
}

async fn describe_groups(
    c: &Client,
    filters: Vec<Filter>,
) -> Result<Vec<SecurityGroup>, ProviderError> {
    let mut out = Vec::new();
    let mut pages = c
        .describe_security_groups()
        .set_filters(Some(filters))
        .max_results(PAGE)
        .into_paginator()
        .send();
    while let Some(p) = pages.next().await {
        out.extend(
            p.map_err(|e| map_sdk("DescribeSecurityGroups", Op::Other, e))?
                .security_groups()
                .iter()
                .cloned(),
        );
    }
    Ok(out)
}

async fn describe_instances(
    c: &Client,
    filters: Vec<Filter>,
) -> Result<Vec<Instance>, ProviderError> {
    let mut out = Vec::new();
    let mut pages = c
        .describe_instances()
        .set_filters(Some(filters))
        .max_results(PAGE)
        .into_paginator()
        .send();
    while let Some(p) = pages.next().await {
        let p = p.map_err(|e| map_sdk("DescribeInstances", Op::Other, e))?;
        for r in p.reservations() {
            out.extend(r.instances().iter().cloned());
        }
    }
    Ok(out)
}

async fn describe_volumes(c: &Client, filters: Vec<Filter>) -> Result<Vec<Volume>, ProviderError> {
    let mut out = Vec::new();
    let mut pages = c
        .describe_volumes()
        .set_filters(Some(filters))
        .max_results(VOLUME_PAGE)
        .into_paginator()
        .send();
    while let Some(p) = pages.next().await {
        out.extend(
            p.map_err(|e| map_sdk("DescribeVolumes", Op::Other, e))?
                .volumes()
                .iter()
                .cloned(),
        );
    }
    Ok(out)
}

/// DescribePlacementGroups is not paginated (an account has few of them).
async fn describe_placement_groups(
    c: &Client,
    filters: Vec<Filter>,
) -> Result<Vec<PlacementGroup>, ProviderError> {
    let out = c
        .describe_placement_groups()
        .set_filters(Some(filters))
        .send()
        .await
        .map_err(|e| map_sdk("DescribePlacementGroups", Op::Other, e))?;
    Ok(out.placement_groups().to_vec())
}

// ----- observed resources ----------------------------------------------------

fn observed(
    kind: ResourceKind,
    id: &str,
    region: &str,
    tags: &[Tag],
    mut attrs: Attrs,
    status: String,
) -> ObservedResource {
    let own = ownership(tags);
    attrs.insert("tags".into(), observed_user_tags(tags, own.as_ref()));
    ObservedResource {
        kind,
        id: id.to_string(),
        region: region.to_string(),
        ownership: own,
        attrs,
        status,
    }
}

fn observe_vpc(v: &Vpc, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    if let Some(c) = v.cidr_block() {
        a.insert("cidr".into(), c.into());
    }
    let status = v
        .state()
        .map(|s| s.as_str().to_ascii_lowercase())
        .unwrap_or_else(|| "available".into());
    observed(
        ResourceKind::Network,
        v.vpc_id().unwrap_or_default(),
        region,
        v.tags(),
        a,
        status,
    )
}

fn observe_subnet(s: &Subnet, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    if let Some(c) = s.cidr_block() {
        a.insert("cidr".into(), c.into());
    }
    if let Some(z) = s.availability_zone() {
        a.insert("zone".into(), z.into());
    }
    let status = s
        .state()
        .map(|s| s.as_str().to_ascii_lowercase())
        .unwrap_or_else(|| "available".into());
    observed(
        ResourceKind::Subnet,
        s.subnet_id().unwrap_or_default(),
        region,
        s.tags(),
        a,
        status,
    )
}

fn observe_group(g: &SecurityGroup, region: &str) -> ObservedResource {
    let mut rules: Vec<Rule> = g
        .ip_permissions()
        .iter()
        .flat_map(Rule::from_permission)
        .collect();
    rules.sort();
    rules.dedup();
    let mut ingress: Vec<Value> = rules.iter().map(Rule::to_json).collect();
    // The members' rule is a reference to the group itself.
    let own = g.group_id();
    let member_rule = g.ip_permissions().iter().any(|p| {
        p.user_id_group_pairs()
            .iter()
            .any(|pair| pair.group_id().is_some() && pair.group_id() == own)
    });
    if !member_rule {
        ingress.push(gpuform_provider::resource::member_rule_missing());
    }
    let mut a = Attrs::new();
    a.insert("ingress".into(), Value::Array(ingress));
    observed(
        ResourceKind::Firewall,
        g.group_id().unwrap_or_default(),
        region,
        g.tags(),
        a,
        "available".into(),
    )
}

fn placement_gone(g: &PlacementGroup) -> bool {
    matches!(
        g.state().map(|s| s.as_str()),
        Some("deleted") | Some("deleting")
    )
}

fn observe_placement(g: &PlacementGroup, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    if let Some(s) = g.strategy() {
        a.insert("strategy".into(), s.as_str().into());
    }
    if let Some(id) = g.group_id() {
        a.insert("group_id".into(), id.into());
    }
    let status = g
        .state()
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|| "available".into());
    observed(
        ResourceKind::Placement,
        g.group_name().unwrap_or_default(),
        region,
        g.tags(),
        a,
        status,
    )
}

fn volume_gone(v: &Volume) -> bool {
    matches!(
        v.state(),
        Some(VolumeState::Deleting) | Some(VolumeState::Deleted)
    )
}

fn observe_volume(v: &Volume, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    if let Some(z) = v.availability_zone() {
        a.insert("zone".into(), z.into());
    }
    if let Some(s) = v.size() {
        a.insert("size_gb".into(), s.into());
    }
    if let Some(t) = v.volume_type() {
        a.insert("volume_type".into(), t.as_str().into());
    }
    a.insert(
        "attached_to".into(),
        attachment(v).map_or(Value::Null, Value::String),
    );
    let status = v
        .state()
        .map(|s| s.as_str().to_string())
        .unwrap_or_default();
    observed(
        ResourceKind::Volume,
        v.volume_id().unwrap_or_default(),
        region,
        v.tags(),
        a,
        status,
    )
}

/// How long a create watches a new instance leave `pending`: a launch EC2
/// cannot complete goes `pending` → `shutting-down` → `terminated` (StateReason,
/// EC2 API reference), and that is a failed create, not a node. Past this
/// bound the instance is recorded as it is; if it ends terminated later,
/// refresh sees it gone and the plan re-creates it. `GPUFORM_AWS_LAUNCH_WAIT_MS`
/// overrides it (0: do not wait).
fn launch_wait() -> Duration {
    std::env::var("GPUFORM_AWS_LAUNCH_WAIT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(180))
}

/// Polls a new instance until it leaves `pending` or `wait` has passed; a
/// launch that ended is an error ([`launch_failure`]).
async fn wait_launched(
    c: &Client,
    mut inst: Instance,
    wait: Duration,
) -> Result<Instance, ProviderError> {
    let id = inst.instance_id().unwrap_or_default().to_string();
    let start = std::time::Instant::now();
    let mut delay = Duration::from_millis(200);
    loop {
        if let Some(e) = launch_failure(&inst) {
            return Err(e);
        }
        let pending = matches!(
            inst.state().and_then(|s| s.name()),
            None | Some(InstanceStateName::Pending)
        );
        if !pending || id.is_empty() || start.elapsed() >= wait {
            return Ok(inst);
        }
        tokio::time::sleep(delay.min(wait.saturating_sub(start.elapsed()))).await;
        delay = (delay * 2).min(Duration::from_secs(5));
        // Eventual consistency: a new instance may not be listed yet.
        if let Some(i) = describe_instances(c, vec![filter("instance-id", [id.clone()])])
            .await?
            .into_iter()
            .next()
        {
            inst = i;
        }
    }
}

/// A new instance that went to `shutting-down` or `terminated` failed to
/// launch. Its StateReason code (EC2 API reference, "StateReason") says why:
/// `Server.InsufficientInstanceCapacity` is capacity (the engine fails over
/// to the next zone); other `Server.*` reasons (an internal error, a Spot
/// interruption) are classed as capacity too, since retrying with the same
/// ClientToken would only return the same terminated instance;
/// `Client.VolumeLimitExceeded` is a quota; other `Client.*` reasons (a KMS
/// or snapshot problem, a shutdown from the OS) are the request's fault.
/// Nothing is left to clean up: a terminated instance releases everything.
pub fn launch_failure(i: &Instance) -> Option<ProviderError> {
    if !is_gone(i) {
        return None;
    }
    let id = i.instance_id().unwrap_or("?");
    let code = i.state_reason().and_then(|r| r.code()).unwrap_or("");
    let message = i.state_reason().and_then(|r| r.message()).unwrap_or("");
    let kind = if code == "Client.VolumeLimitExceeded" {
        ErrorKind::Quota
    } else if code.starts_with("Client.") {
        ErrorKind::Invalid
    } else {
        ErrorKind::Capacity
    };
    let hint = match kind {
        ErrorKind::Capacity => {
            "AWS could not launch it in this zone; another zone or a later try may succeed"
        }
        ErrorKind::Quota => {
            "an EBS volume or storage limit of the account; raise it in the Service Quotas console"
        }
        _ => "check the image, its snapshots and KMS keys, and the user data",
    };
    let why = if code.is_empty() {
        String::new()
    } else {
        format!(" ({code}: {message})")
    };
    Some(
        ProviderError::new(
            kind,
            format!("RunInstances: instance {id} terminated while launching{why}\n  hint: {hint}"),
        )
        .with_code(if code.is_empty() {
            "LaunchFailed"
        } else {
            code
        }),
    )
}

/// Terminated and shutting-down instances are gone for gpuform.
fn is_gone(i: &Instance) -> bool {
    matches!(
        i.state().and_then(|s| s.name()),
        Some(InstanceStateName::Terminated) | Some(InstanceStateName::ShuttingDown)
    )
}

fn root_volume_id(i: &Instance) -> Option<String> {
    let root = i.root_device_name()?;
    i.block_device_mappings()
        .iter()
        .find(|m| m.device_name() == Some(root))
        .and_then(|m| m.ebs())
        .and_then(|e| e.volume_id())
        .map(str::to_string)
}

fn observe_instance(i: &Instance, region: &str, root_gb: Option<i32>) -> ObservedResource {
    let tags = i.tags();
    let mut a = Attrs::new();
    if let Some(t) = i.instance_type() {
        a.insert("instance_type".into(), t.as_str().into());
    }
    if let Some(z) = i.placement().and_then(|p| p.availability_zone()) {
        a.insert("zone".into(), z.into());
    }
    // The image as the engine named it (a logical name maps to a different
    // AMI over time); the AMI id for instances gpuform did not launch.
    let image = tag_value(tags, IMAGE_TAG).or(i.image_id());
    if let Some(img) = image {
        a.insert("image".into(), img.into());
    }
    let spot = i
        .instance_lifecycle()
        .map(|l| l.as_str() == "spot")
        .unwrap_or(false);
    let pricing = if spot {
        "spot".to_string()
    } else {
        match tag_value(tags, PRICING_TAG) {
            Some(p) if p != "spot" => p.to_string(),
            _ => "on-demand".to_string(),
        }
    };
    a.insert("pricing".into(), pricing.into());
    if let Some(g) = root_gb {
        a.insert("root_gb".into(), g.into());
    }
    // EFA shows as interface type `efa`; when gpuform launched the instance,
    // the request is kept in a tag (an rdma request on a type without EFA
    // gets plain networking, and must not look like drift).
    let has_efa = i
        .network_interfaces()
        .iter()
        .any(|n| n.interface_type() == Some("efa"));
    let rdma = match tag_value(tags, RDMA_TAG) {
        Some(v) => v == "true",
        None => has_efa,
    };
    a.insert("rdma".into(), rdma.into());
    let status = i
        .state()
        .and_then(|s| s.name())
        .map(|n| n.as_str().to_string())
        .unwrap_or_default();
    observed(
        ResourceKind::Instance,
        i.instance_id().unwrap_or_default(),
        region,
        tags,
        a,
        status,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launched(state: InstanceStateName, reason: Option<&str>) -> Instance {
        let mut b = Instance::builder()
            .instance_id("i-0123456789abcdef0")
            .state(
                aws_sdk_ec2::types::InstanceState::builder()
                    .name(state)
                    .build(),
            );
        if let Some(code) = reason {
            b = b.state_reason(
                aws_sdk_ec2::types::StateReason::builder()
                    .code(code)
                    .message("reason text")
                    .build(),
            );
        }
        b.build()
    }

    /// Issue 15 point 3: `pending` → `terminated` is a failed create, and
    /// its StateReason decides what the engine does with it.
    #[test]
    fn a_launch_that_terminates_is_a_failed_create() {
        for state in [InstanceStateName::Pending, InstanceStateName::Running] {
            assert!(launch_failure(&launched(state, None)).is_none());
        }
        let cases = [
            ("Server.InsufficientInstanceCapacity", ErrorKind::Capacity),
            ("Server.InternalError", ErrorKind::Capacity),
            ("Server.SpotInstanceTermination", ErrorKind::Capacity),
            ("Client.VolumeLimitExceeded", ErrorKind::Quota),
            ("Client.InternalError", ErrorKind::Invalid),
            ("Client.InvalidSnapshot.NotFound", ErrorKind::Invalid),
        ];
        for state in [
            InstanceStateName::Terminated,
            InstanceStateName::ShuttingDown,
        ] {
            for (code, kind) in cases {
                let e = launch_failure(&launched(state.clone(), Some(code)))
                    .unwrap_or_else(|| panic!("{state:?} {code} is a failed launch"));
                assert_eq!(e.kind, kind, "{code}: {e}");
                assert_eq!(e.code.as_deref(), Some(code));
                assert!(e.to_string().contains("i-0123456789abcdef0"), "{e}");
            }
        }
        let e = launch_failure(&launched(InstanceStateName::Terminated, None)).expect("failed");
        assert_eq!(e.kind, ErrorKind::Capacity);
    }

    fn own() -> OwnershipTags {
        OwnershipTags {
            project: "llm".into(),
            address: "cluster.trainer.node[3]".into(),
            token: "0123456789abcdef-xyz".into(),
            lineage: "lin-1".into(),
        }
    }

    #[test]
    fn creation_tags_carry_ownership_kind_and_user_tags() {
        let mut user = BTreeMap::new();
        user.insert("team".to_string(), "ml".to_string());
        let tags = creation_tags(
            &own(),
            "instance",
            &[(IMAGE_TAG, "ubuntu-22.04-cuda".into())],
            &user,
        );
        let get = |k: &str| tags.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
        assert_eq!(get("gpuform:project"), Some("llm"));
        assert_eq!(get("gpuform:address"), Some("cluster.trainer.node[3]"));
        assert_eq!(get("gpuform:token"), Some("0123456789abcdef-xyz"));
        assert_eq!(get("gpuform:lineage"), Some("lin-1"));
        assert_eq!(get(KIND_TAG), Some("instance"));
        assert_eq!(get(IMAGE_TAG), Some("ubuntu-22.04-cuda"));
        assert_eq!(get("Name"), Some("llm/cluster.trainer.node[3]"));
        assert_eq!(get("team"), Some("ml"));

        // Observed back: only the user's tags.
        let sdk: Vec<Tag> = tags
            .iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect();
        let o = ownership(&sdk).unwrap();
        assert_eq!(o, own());
        assert_eq!(
            observed_user_tags(&sdk, Some(&o)),
            serde_json::json!({"team": "ml"})
        );
    }

    #[test]
    fn reserved_tag_prefixes_are_refused() {
        let v = serde_json::json!({"gpuform:project": "x"});
        assert_eq!(tags_from_value(&v).unwrap_err().kind, ErrorKind::Invalid);
        let v = serde_json::json!({"aws:foo": "x"});
        assert!(tags_from_value(&v).is_err());
    }

    #[test]
    fn names_and_tokens() {
        let n = derived_name(&own());
        assert_eq!(n, "gpuform-llm-cluster.trainer.node[3]-0123456789ab");
        assert_eq!(client_token("abc"), "abc");
        let long = "x".repeat(100);
        assert_eq!(client_token(&long).len(), 64);
        assert_eq!(client_token(&long), client_token(&long));
        assert_eq!(sanitize("a\"b<c>", 10), "a-b-c-");
    }

    #[test]
    fn endpoint_userinfo_is_redacted() {
        assert_eq!(redact_url("http://127.0.0.1:5555"), "http://127.0.0.1:5555");
        assert_eq!(
            redact_url("https://u:secret@ec2.example/x"),
            "https://***@ec2.example/x"
        );
    }

    #[test]
    fn data_volume_devices() {
        assert_eq!(
            free_device(&["/dev/xvda".into()]).as_deref(),
            Some("/dev/sdf")
        );
        assert_eq!(
            free_device(&["/dev/sda1".into(), "/dev/sdf".into(), "/dev/xvdg".into()]).as_deref(),
            Some("/dev/sdh")
        );
        let all: Vec<String> = ('f'..='p').map(|c| format!("/dev/sd{c}")).collect();
        assert_eq!(free_device(&all), None);
    }

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
        assert_eq!(p.label(), "aws(http://127.0.0.1:9)");
        assert!(AwsProvider::from_env(Some("ftp://x".into())).await.is_err());
    }
}
