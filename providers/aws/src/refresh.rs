//! Reading the cloud back: `read` by ids and `list_owned` by the project
//! tag, batched (one paginated Describe call per kind); EC2's answers read
//! as neutral observed resources in `observe`.

use crate::client::{
    describe_groups, describe_instances, describe_placement_groups, describe_subnets,
    describe_volumes, describe_vpcs, filter, FILTER_CHUNK,
};
use crate::observe::{
    is_gone, observe_group, observe_instance, observe_placements, observe_subnet, observe_volume,
    observe_vpc, root_volume_id, volume_gone,
};
use crate::tags::{tag_value, KIND_TAG, ROOT_VOLUME_KIND};
use crate::AwsProvider;
use async_trait::async_trait;
use aws_sdk_ec2::types::{Instance, Volume, VolumeState};
use aws_sdk_ec2::Client;
use gpuform_provider::driver::unsupported;
use gpuform_provider::Result;
use gpuform_provider::{
    Cloud, Inventory, InventoryApi, InventoryInstance, InventoryVolume, Lookup, ObservedResource,
    OwnershipTags, RefreshApi, ResourceKind, Scope,
};
use std::collections::{BTreeSet, HashMap};

#[async_trait]
impl RefreshApi for AwsProvider {
    /// Reads resources of one kind by id. Filters by id rather than the `*Ids`
    /// parameters: an id that no longer exists is simply absent instead of
    /// failing the whole batch with Invalid*ID.NotFound.
    async fn read(&self, q: &Lookup<'_>) -> Result<Vec<ObservedResource>> {
        let (scope, kind, ids) = (q.scope, q.kind, q.ids);
        let c = self.client(scope)?;
        let region = scope.region.as_str();
        let ids: Vec<String> = ids
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut out = Vec::new();
        for chunk in ids.chunks(FILTER_CHUNK) {
            let by_ids = |name: &str| vec![filter(name, chunk.to_vec())];
            match kind {
                ResourceKind::Network => {
                    let found = describe_vpcs(&c, by_ids("vpc-id")).await?;
                    out.extend(found.iter().map(|v| observe_vpc(v, region)));
                }
                ResourceKind::Subnet => {
                    let found = describe_subnets(&c, by_ids("subnet-id")).await?;
                    out.extend(found.iter().map(|s| observe_subnet(s, region)));
                }
                ResourceKind::Firewall => {
                    let found = describe_groups(&c, by_ids("group-id")).await?;
                    out.extend(found.iter().map(|g| observe_group(g, region)));
                }
                ResourceKind::Placement => {
                    let found = describe_placement_groups(&c, by_ids("group-name")).await?;
                    out.extend(observe_placements(&found, region));
                }
                ResourceKind::Instance => {
                    let found = describe_instances(&c, by_ids("instance-id")).await?;
                    out.extend(observe_instances(&c, region, found, &HashMap::new()).await?);
                }
                ResourceKind::Volume => {
                    let found = describe_volumes(&c, by_ids("volume-id")).await?;
                    out.extend(
                        found
                            .iter()
                            .filter(|v| !volume_gone(v))
                            .map(|v| observe_volume(v, region)),
                    );
                }
                ResourceKind::Block => {
                    out.extend(crate::blocks::read(&c, region, chunk).await?);
                }
                ResourceKind::Bucket => return Err(unsupported(Cloud::Aws, kind)),
            }
        }
        Ok(out)
    }

    /// Everything of `project` in the region: six Describe calls at once,
    /// filtered by `tag:gpuform:project` (placement groups only when enabled).
    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>> {
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
        out.extend(observe_placements(&pgs, region));
        let sizes: HashMap<String, i32> = volumes
            .iter()
            .filter_map(|v| Some((v.volume_id()?.to_string(), v.size()?)))
            .collect();
        out.extend(observe_instances(&c, region, instances, &sizes).await?);
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

    /// Capacity Blocks are capacity reservations: one
    /// DescribeCapacityReservations filtered on the project tag.
    async fn list_owned_blocks(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>> {
        crate::blocks::owned(&self.client(scope)?, &scope.region, project).await
    }
}

/// The live instances among `instances`, observed with their root volume
/// sizes: from `known_sizes` (the caller's volume listing), else one
/// batched DescribeVolumes by id.
async fn observe_instances(
    c: &Client,
    region: &str,
    instances: Vec<Instance>,
    known_sizes: &HashMap<String, i32>,
) -> Result<Vec<ObservedResource>> {
    let live: Vec<Instance> = instances.into_iter().filter(|i| !is_gone(i)).collect();
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

/// Everything in the region, of every owner (`gpuform audit`): one
/// DescribeInstances listing (live states, 1,000 a page) and one
/// DescribeVolumes listing (500 a page), run at once. All volumes are listed,
/// not only `status=available` ones, in the same calls: the attached ones
/// give each instance's disk size (what a stopped instance still pays for),
/// the `available` ones are the unattached volumes.
#[async_trait]
impl InventoryApi for AwsProvider {
    async fn inventory(&self, scope: &Scope) -> Result<Inventory> {
        let c = self.client(scope)?;
        let region = scope.region.as_str();
        let live = vec![filter(
            "instance-state-name",
            ["pending", "running", "stopping", "stopped"].map(String::from),
        )];
        let (instances, volumes) = tokio::try_join!(
            describe_instances(&c, live),
            describe_volumes(&c, Vec::new()),
        )?;
        let volumes: Vec<Volume> = volumes.into_iter().filter(|v| !volume_gone(v)).collect();
        let sizes: HashMap<String, i32> = volumes
            .iter()
            .filter_map(|v| Some((v.volume_id()?.to_string(), v.size()?)))
            .collect();
        let mut out = Inventory::default();
        for i in instances.iter().filter(|i| !is_gone(i)) {
            let attached: Vec<u64> = i
                .block_device_mappings()
                .iter()
                .filter_map(|m| m.ebs()?.volume_id())
                .filter_map(|v| sizes.get(v).map(|s| (*s).max(0) as u64))
                .collect();
            let disk_gb = (!attached.is_empty()).then(|| attached.iter().sum());
            let launch = i.launch_time().and_then(|t| {
                t.fmt(aws_sdk_ec2::primitives::DateTimeFormat::DateTime)
                    .ok()
            });
            let root = root_volume_id(i).and_then(|v| sizes.get(&v).copied());
            let o = observe_instance(i, region, root);
            let mut row = InventoryInstance::from_observed(&o, launch, disk_gb);
            // Every tag, the cloud's own (`aws:…`) included: audit shows what is there.
            for t in i.tags() {
                if let (Some(k), Some(v)) = (t.key(), t.value()) {
                    row.tags.insert(k.to_string(), v.to_string());
                }
            }
            uses(i, &mut row);
            out.instances.push(row);
        }
        for v in volumes
            .iter()
            .filter(|v| v.state() == Some(&VolumeState::Available))
        {
            let mut row = InventoryVolume::from_observed(&observe_volume(v, region));
            for t in v.tags() {
                if let (Some(k), Some(val)) = (t.key(), t.value()) {
                    row.tags.insert(k.to_string(), val.to_string());
                }
            }
            out.volumes.push(row);
        }
        Ok(out)
    }
}

/// What an instance is built on, for `gpuform import`: its VPC, subnet and
/// placement group, its security groups, and its EBS volumes other than the
/// root device (DescribeInstances' `VpcId`, `SubnetId`, `Placement.GroupName`,
/// `SecurityGroups`, `BlockDeviceMappings`).
fn uses(i: &Instance, row: &mut InventoryInstance) {
    let mut put = |role: &str, id: Option<&str>| {
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            row.uses.insert(role.to_string(), id.to_string());
        }
    };
    put("network", i.vpc_id());
    put("subnet", i.subnet_id());
    put("placement", i.placement().and_then(|p| p.group_name()));
    row.firewalls = i
        .security_groups()
        .iter()
        .filter_map(|g| g.group_id().map(str::to_string))
        .collect();
    let root = i.root_device_name();
    row.data_volumes = i
        .block_device_mappings()
        .iter()
        .filter(|m| m.device_name() != root)
        .filter_map(|m| m.ebs()?.volume_id().map(str::to_string))
        .collect();
}
