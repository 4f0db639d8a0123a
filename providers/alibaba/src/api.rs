//! The Describe table: for each kind gpuform reads, the ECS or VPC call
//! that lists it (`Api`), how it pages, filters by ids and names its tags.

use crate::client::{Listing, Paging};
use crate::Product;
use gpuform_provider::driver::unsupported;
use gpuform_provider::Result;
use gpuform_provider::{Cloud, ResourceKind};

/// `MaxResults` of the token-paged Describe calls: the documented maximum.
const TOKEN_PAGE: usize = 100;
/// Ids per batched Describe: `InstanceIds`, `DiskIds`, `SecurityGroupIds`,
/// `DeploymentSetIds` take JSON arrays of up to 100; DescribeVpcs `VpcId`
/// takes up to 20, comma-separated.
const ID_BATCH: usize = 100;
const VPC_ID_BATCH: usize = 20;

/// The Describe calls gpuform lists with, one per thing it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Vpc,
    VSwitch,
    Group,
    DeploymentSet,
    Instance,
    Disk,
    Image,
}

/// How a Describe call filters by ids.
pub(crate) enum IdFilter {
    /// It cannot (DescribeVSwitches takes one VSwitchId): page through the region.
    None,
    /// Up to `n` ids, comma-separated.
    Comma(&'static str, usize),
    /// Up to `n` ids as a JSON array.
    Json(&'static str, usize),
}

impl Api {
    /// The API behind a resource kind.
    pub(crate) fn of(kind: ResourceKind) -> Result<Api> {
        Ok(match kind {
            ResourceKind::Network => Api::Vpc,
            ResourceKind::Subnet => Api::VSwitch,
            ResourceKind::Firewall => Api::Group,
            ResourceKind::Placement => Api::DeploymentSet,
            ResourceKind::Instance => Api::Instance,
            ResourceKind::Volume => Api::Disk,
            ResourceKind::Bucket | ResourceKind::Block => {
                return Err(unsupported(Cloud::Alibaba, kind))
            }
        })
    }

    pub(crate) fn listing(self) -> Listing {
        let (product, action, paging, list) = match self {
            // PageNumber/PageSize ≤ 50, Tag.N, VpcId (≤ 20, comma-separated).
            Api::Vpc => (
                Product::Vpc,
                "DescribeVpcs",
                Paging::Number,
                ("Vpcs", "Vpc"),
            ),
            // PageNumber/PageSize ≤ 50, Tag.N, VpcId, VSwitchId.
            Api::VSwitch => (
                Product::Vpc,
                "DescribeVSwitches",
                Paging::Number,
                ("VSwitches", "VSwitch"),
            ),
            // MaxResults ≤ 100 / NextToken, Tag.N, SecurityGroupIds.
            Api::Group => (
                Product::Ecs,
                "DescribeSecurityGroups",
                Paging::Token(Some(TOKEN_PAGE)),
                ("SecurityGroups", "SecurityGroup"),
            ),
            // PageNumber/PageSize ≤ 50, DeploymentSetIds.
            Api::DeploymentSet => (
                Product::Ecs,
                "DescribeDeploymentSets",
                Paging::Number,
                ("DeploymentSets", "DeploymentSet"),
            ),
            // MaxResults ≤ 100 / NextToken, Tag.N, InstanceIds.
            Api::Instance => (
                Product::Ecs,
                "DescribeInstances",
                Paging::Token(Some(TOKEN_PAGE)),
                ("Instances", "Instance"),
            ),
            // MaxResults / NextToken, Tag.N, DiskIds, DiskType.
            Api::Disk => (
                Product::Ecs,
                "DescribeDisks",
                Paging::Token(Some(TOKEN_PAGE)),
                ("Disks", "Disk"),
            ),
            Api::Image => (
                Product::Ecs,
                "DescribeImages",
                Paging::Number,
                ("Images", "Image"),
            ),
        };
        Listing {
            product,
            action,
            paging,
            list,
        }
    }

    /// How ListTagResources and TagResources name it (ECS `ResourceType`
    /// instance | disk | securitygroup; VPC VPC | VSWITCH); `None` for what
    /// has no tags.
    pub(crate) fn resource_type(self) -> Option<&'static str> {
        match self {
            Api::Vpc => Some("VPC"),
            Api::VSwitch => Some("VSWITCH"),
            Api::Group => Some("securitygroup"),
            Api::Instance => Some("instance"),
            Api::Disk => Some("disk"),
            Api::DeploymentSet | Api::Image => None,
        }
    }

    pub(crate) fn id_key(self) -> &'static str {
        match self {
            Api::Vpc => "VpcId",
            Api::VSwitch => "VSwitchId",
            Api::Group => "SecurityGroupId",
            Api::DeploymentSet => "DeploymentSetId",
            Api::Instance => "InstanceId",
            Api::Disk => "DiskId",
            Api::Image => "ImageId",
        }
    }

    pub(crate) fn id_filter(self) -> IdFilter {
        match self {
            Api::Vpc => IdFilter::Comma("VpcId", VPC_ID_BATCH),
            Api::VSwitch | Api::Image => IdFilter::None,
            Api::Group => IdFilter::Json("SecurityGroupIds", ID_BATCH),
            Api::DeploymentSet => IdFilter::Json("DeploymentSetIds", ID_BATCH),
            Api::Instance => IdFilter::Json("InstanceIds", ID_BATCH),
            Api::Disk => IdFilter::Json("DiskIds", ID_BATCH),
        }
    }
}
