//! Instances (one RunInstances per node) and placement groups; what an
//! instance type offers (EFA, architecture, zones).
//!
//! The request builders are kept apart from sending them, so that unit
//! tests check the built request without a server.

use crate::client::{describe_placement_groups, empty_answer, filter};
use crate::errors::{done, map_sdk, sent, Op};
use crate::instances::{launch_wait, wait_launched};
use crate::observe::{observe_instance, observe_placement};
use crate::tags::{
    client_token, creation_tags, derived_name, tag_spec, tag_value, Tags, IMAGE_TAG, PRICING_TAG,
    RDMA_TAG, ROOT_VOLUME_KIND,
};
use crate::AwsProvider;
use async_trait::async_trait;
use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_sdk_ec2::operation::create_placement_group::builders::CreatePlacementGroupFluentBuilder;
use aws_sdk_ec2::operation::run_instances::builders::RunInstancesFluentBuilder;
use aws_sdk_ec2::types::{
    BlockDeviceMapping, CapacityReservationSpecification, CapacityReservationTarget,
    EbsBlockDevice, Filter, InstanceInterruptionBehavior, InstanceMarketOptionsRequest,
    InstanceNetworkInterfaceSpecification, InstanceType, LocationType, MarketType, Placement,
    PlacementStrategy as Ec2Strategy, ResourceType, SpotInstanceType, SpotMarketOptions,
};
use aws_sdk_ec2::Client;
use base64::Engine as _;
use gpuform_provider::Result;
use gpuform_provider::{
    ComputeApi, Create, ErrorKind, InstanceSpec, ObservedResource, OwnershipTags, PlacementSpec,
    PlacementStrategy, Pricing, ProviderError, QuotaMarket, QuotaReading, Reservation,
    ReservationFilter, Scope,
};

/// What gpuform needs to know about an instance type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// EFA interfaces to attach for RDMA (0 when the type has no EFA).
    pub efa_interfaces: u32,
    /// `x86_64` or `arm64`.
    pub architecture: String,
    /// Default vCPUs (`VCpuInfo.DefaultVCpus`): what EC2's vCPU quotas count.
    pub vcpus: u32,
}

impl AwsProvider {
    /// EFA capacity and architecture of an instance type (DescribeInstanceTypes,
    /// cached per region and type).
    pub async fn type_info(&self, region: &str, instance_type: &str) -> Result<TypeInfo> {
        let key = (region.to_string(), instance_type.to_string());
        if let Some(t) = self
            .types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(t.clone());
        }
        let request = self
            .ec2_client(region)
            .describe_instance_types()
            .instance_types(InstanceType::from(instance_type));
        let out = sent("DescribeInstanceTypes", Op::Create, request.send()).await?;
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
        let vcpus = info
            .v_cpu_info()
            .and_then(|v| v.default_v_cpus())
            .unwrap_or(0)
            .max(0) as u32;
        let t = TypeInfo {
            efa_interfaces,
            architecture: architecture.to_string(),
            vcpus,
        };
        self.types
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, t.clone());
        Ok(t)
    }
}

#[async_trait]
impl ComputeApi for AwsProvider {
    /// DescribeInstanceTypeOfferings for one zone and type: one call, so a plan
    /// learns before any create that a zone does not sell the type.
    async fn offered(&self, scope: &Scope, zone: &str, itype: &str) -> Result<Option<bool>> {
        let request = self
            .client(scope)?
            .describe_instance_type_offerings()
            .location_type(LocationType::AvailabilityZone)
            .filters(Filter::builder().name("location").values(zone).build())
            .filters(
                Filter::builder()
                    .name("instance-type")
                    .values(itype)
                    .build(),
            );
        let out = sent("DescribeInstanceTypeOfferings", Op::Other, request.send()).await?;
        Ok(Some(out.instance_type_offerings().iter().any(|o| {
            o.instance_type().map(|t| t.as_str()) == Some(itype)
        })))
    }

    /// DescribeCapacityReservations by id, or by `tag:KEY` filters
    /// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeCapacityReservations.html).
    async fn reservations(
        &self,
        scope: &Scope,
        wanted: &ReservationFilter,
    ) -> Result<Vec<Reservation>> {
        let mut request = self.client(scope)?.describe_capacity_reservations();
        request = match wanted {
            ReservationFilter::Id(id) => request.capacity_reservation_ids(id),
            ReservationFilter::Tags(tags) => tags.iter().fold(request, |r, (k, v)| {
                r.filters(filter(&format!("tag:{k}"), [v.clone()]))
            }),
        };
        let out = match sent("DescribeCapacityReservations", Op::Other, request.send()).await {
            Ok(out) => out,
            // An id EC2 does not know is an empty answer, not a failed read.
            Err(e) if e.code.as_deref() == Some("InvalidCapacityReservationId.NotFound") => {
                return Ok(Vec::new())
            }
            Err(e) => return Err(e),
        };
        Ok(out
            .capacity_reservations()
            .iter()
            .map(|r| Reservation {
                id: r.capacity_reservation_id().unwrap_or_default().to_string(),
                instance_type: r.instance_type().unwrap_or_default().to_string(),
                zone: r.availability_zone().unwrap_or_default().to_string(),
                total: r.total_instance_count().unwrap_or(0).max(0) as u32,
                available: r.available_instance_count().unwrap_or(0).max(0) as u32,
                state: r
                    .state()
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_default(),
                start: r.start_date().map(|d| {
                    d.fmt(aws_sdk_ec2::primitives::DateTimeFormat::DateTime)
                        .unwrap_or_default()
                }),
                end: r.end_date().map(|d| {
                    d.fmt(aws_sdk_ec2::primitives::DateTimeFormat::DateTime)
                        .unwrap_or_default()
                }),
                targeted: r.instance_match_criteria().map(|m| m.as_str()) == Some("targeted"),
                tags: r
                    .tags()
                    .iter()
                    .filter_map(|t| Some((t.key()?.to_string(), t.value()?.to_string())))
                    .collect(),
            })
            .filter(|r| r.matches(wanted))
            .collect())
    }

    /// The EC2 vCPU quota of the type's family and market, through Service
    /// Quotas, with this account's use (see [`crate::quotas`]).
    async fn quota(
        &self,
        scope: &Scope,
        itype: &str,
        market: QuotaMarket,
    ) -> Result<Option<QuotaReading>> {
        self.gpu_quota(scope, itype, market).await
    }

    async fn block_offerings(
        &self,
        scope: &Scope,
        q: &gpuform_provider::BlockQuery,
    ) -> Result<Vec<gpuform_provider::BlockOffering>> {
        self.offer_blocks(scope, q).await
    }

    /// See `blocks.rs`: looked up by its token's tag, then bought.
    async fn create_block(
        &self,
        req: &Create<gpuform_provider::BlockSpec>,
    ) -> Result<ObservedResource> {
        self.buy_block(req).await
    }

    async fn create_instance(&self, req: &Create<InstanceSpec>) -> Result<ObservedResource> {
        let c = self.client(&req.scope)?;
        let region = req.region();
        // Every field, so that a new one is a compile error here.
        let InstanceSpec {
            instance_type,
            image,
            zone,
            pricing,
            spot_max_price,
            root_gb,
            rdma,
            user_data,
            subnet,
            firewall,
            placement,
            capacity_reservation,
            capacity_block,
        } = &req.spec;
        let info = self.type_info(region, instance_type).await?;
        let (image_id, root_device_name) = self
            .resolve_image(region, image, &info.architecture)
            .await?;
        if root_gb.is_some() && root_device_name.is_none() {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "image {image_id} reports no root device, so its root volume size cannot be set"
                ),
            ));
        }
        let extra = [
            (IMAGE_TAG, image.clone()),
            (PRICING_TAG, pricing.as_str().to_string()),
            (RDMA_TAG, rdma.to_string()),
        ];
        let root_gb = root_gb.map(|g| g as i32);
        let plan = InstancePlan {
            instance_type: instance_type.clone(),
            image_id,
            root_device_name,
            root_gb,
            subnet_id: subnet.clone(),
            security_group_id: firewall.clone(),
            placement_group: placement.clone(),
            zone: zone.clone(),
            // Reserved instances and savings plans are billing constructs: the
            // launch is an ordinary on-demand one.
            spot: *pricing == Pricing::Spot,
            spot_max_price: spot_max_price.map(|usd| usd.to_string()),
            efa_interfaces: if *rdma { info.efa_interfaces } else { 0 },
            capacity_reservation: capacity_reservation.clone(),
            capacity_block: *capacity_block,
            user_data: user_data.clone(),
            client_token: client_token(&req.ownership.token),
            instance_tags: creation_tags(&req.ownership, "instance", &extra, &req.tags),
            volume_tags: creation_tags(&req.ownership, ROOT_VOLUME_KIND, &[], &req.tags),
        };
        tracing::debug!(
            region = %region,
            address = %req.ownership.address,
            instance_type = %plan.instance_type,
            efa = plan.efa_interfaces,
            spot = plan.spot,
            "RunInstances"
        );
        let request = run_instances(&c, &plan);
        let out = sent("RunInstances", Op::Create, request.send()).await?;
        let inst = out
            .instances()
            .first()
            .ok_or_else(|| empty_answer("RunInstances"))?;
        let inst = wait_launched(&c, inst.clone(), launch_wait()).await?;
        Ok(observe_instance(&inst, region, root_gb))
    }

    /// A placement group named after the ownership token: placement groups have
    /// no ClientToken, so a retry of the same create finds its group
    /// (InvalidPlacementGroup.Duplicate) and adopts it.
    async fn create_placement(&self, req: &Create<PlacementSpec>) -> Result<ObservedResource> {
        let c = self.client(&req.scope)?;
        // A cluster group is where EC2 packs EFA nodes: an RDMA group needs nothing more.
        let PlacementSpec { strategy, rdma: _ } = &req.spec;
        let tags = creation_tags(&req.ownership, "placement", &[], &req.tags);
        let name = derived_name(&req.ownership);
        let by_name = || vec![filter("group-name", [name.clone()])];
        match create_placement_group(&c, &name, *strategy, &tags)
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if e.code() == Some("InvalidPlacementGroup.Duplicate") => {
                let groups = describe_placement_groups(&c, by_name()).await?;
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
        let groups = describe_placement_groups(&c, by_name()).await?;
        let g = groups
            .first()
            .ok_or_else(|| empty_answer("DescribePlacementGroups"))?;
        Ok(observe_placement(g, req.region()))
    }

    async fn delete_instance(&self, scope: &Scope, id: &str) -> Result<()> {
        let request = self.client(scope)?.terminate_instances().instance_ids(id);
        done("TerminateInstances", Op::Other, request.send()).await
    }

    async fn delete_placement(&self, scope: &Scope, id: &str) -> Result<()> {
        let request = self.client(scope)?.delete_placement_group().group_name(id);
        done("DeletePlacementGroup", Op::Other, request.send()).await
    }
}

// ----- request builders --------------------------------------------------------

/// Everything RunInstances needs for one node, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct InstancePlan {
    pub instance_type: String,
    pub image_id: String,
    /// Root device of the image (from DescribeImages), for the root size.
    pub root_device_name: Option<String>,
    pub root_gb: Option<i32>,
    pub subnet_id: Option<String>,
    pub security_group_id: Option<String>,
    pub placement_group: Option<String>,
    pub zone: Option<String>,
    pub spot: bool,
    /// The most to pay per hour for a spot node, in USD (SpotOptions.MaxPrice);
    /// EC2's own cap (the on-demand price) when absent.
    pub spot_max_price: Option<String>,
    /// How many EFA interfaces to attach (0: plain networking).
    pub efa_interfaces: u32,
    /// The reservation to launch into (CapacityReservationTarget).
    pub capacity_reservation: Option<String>,
    /// Whether that reservation is a Capacity Block: the launch then needs
    /// `InstanceMarketOptions.MarketType=capacity-block`.
    pub capacity_block: bool,
    pub user_data: Option<String>,
    pub client_token: String,
    pub instance_tags: Tags,
    pub volume_tags: Tags,
}

/// One node per call: MinCount = MaxCount = 1, the ownership token as the
/// ClientToken, and the ownership tags on the instance and its volumes set
/// atomically with the launch.
pub fn run_instances(client: &Client, p: &InstancePlan) -> RunInstancesFluentBuilder {
    let mut b = client
        .run_instances()
        .instance_type(InstanceType::from(p.instance_type.as_str()))
        .image_id(&p.image_id)
        .min_count(1)
        .max_count(1)
        .client_token(&p.client_token)
        .tag_specifications(tag_spec(ResourceType::Instance, &p.instance_tags))
        .tag_specifications(tag_spec(ResourceType::Volume, &p.volume_tags));

    if p.efa_interfaces > 0 {
        // With explicit interfaces, the subnet and groups go on each one. One
        // EFA interface per network card: card 0 carries the primary
        // interface (device index 0), the others device index 1.
        for card in 0..p.efa_interfaces as i32 {
            let ni = InstanceNetworkInterfaceSpecification::builder()
                .network_card_index(card)
                .device_index(if card == 0 { 0 } else { 1 })
                .interface_type("efa")
                .delete_on_termination(true)
                .set_subnet_id(p.subnet_id.clone())
                .set_groups(p.security_group_id.clone().map(|g| vec![g]))
                .build();
            b = b.network_interfaces(ni);
        }
    } else {
        b = b.set_subnet_id(p.subnet_id.clone());
        if let Some(g) = &p.security_group_id {
            b = b.security_group_ids(g);
        }
    }

    if p.placement_group.is_some() || p.zone.is_some() {
        b = b.placement(
            Placement::builder()
                .set_group_name(p.placement_group.clone())
                .set_availability_zone(p.zone.clone())
                .build(),
        );
    }

    // Only the target: EC2 refuses a preference beside it unless it is
    // `capacity-reservations-only`, which a target implies (RunInstances,
    // CapacityReservationSpecification:
    // https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservationSpecification.html).
    if let Some(id) = &p.capacity_reservation {
        b = b.capacity_reservation_specification(
            CapacityReservationSpecification::builder()
                .capacity_reservation_target(
                    CapacityReservationTarget::builder()
                        .capacity_reservation_id(id)
                        .build(),
                )
                .build(),
        );
    }

    // A launch into a Capacity Block names the market besides the target
    // (RunInstances, InstanceMarketOptionsRequest.MarketType `capacity-block`:
    // https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceMarketOptionsRequest.html;
    // https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html).
    if p.capacity_block {
        b = b.instance_market_options(
            InstanceMarketOptionsRequest::builder()
                .market_type(MarketType::CapacityBlock)
                .build(),
        );
    } else if p.spot {
        b = b.instance_market_options(
            InstanceMarketOptionsRequest::builder()
                .market_type(MarketType::Spot)
                .spot_options(
                    SpotMarketOptions::builder()
                        .spot_instance_type(SpotInstanceType::OneTime)
                        .set_max_price(p.spot_max_price.clone())
                        .instance_interruption_behavior(InstanceInterruptionBehavior::Terminate)
                        .build(),
                )
                .build(),
        );
    }

    if let (Some(dev), Some(gb)) = (&p.root_device_name, p.root_gb) {
        b = b.block_device_mappings(
            BlockDeviceMapping::builder()
                .device_name(dev)
                .ebs(
                    EbsBlockDevice::builder()
                        .volume_size(gb)
                        .volume_type(crate::volume_types::ebs(
                            gpuform_provider::VolumeType::default(),
                        ))
                        .delete_on_termination(true)
                        .build(),
                )
                .build(),
        );
    }

    if let Some(ud) = &p.user_data {
        b = b.user_data(base64::engine::general_purpose::STANDARD.encode(ud.as_bytes()));
    }
    b
}

/// CreatePlacementGroup with its tags.
pub fn create_placement_group(
    client: &Client,
    name: &str,
    strategy: PlacementStrategy,
    tags: &Tags,
) -> CreatePlacementGroupFluentBuilder {
    let strategy = match strategy {
        PlacementStrategy::Cluster => Ec2Strategy::Cluster,
        PlacementStrategy::Spread => Ec2Strategy::Spread,
    };
    client
        .create_placement_group()
        .group_name(name)
        .strategy(strategy)
        .tag_specifications(tag_spec(ResourceType::PlacementGroup, tags))
}

#[cfg(test)]
mod tests;
