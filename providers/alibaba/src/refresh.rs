//! Refresh: `read` and `list_owned`, batched. Each kind is one paginated
//! Describe call filtered by the project tag (or by ids), so its cost grows
//! with pages; a tag-filtered listing that reaches [`TAG_FILTER_CAP`] is
//! redone through ListTagResources and Describe by id. What each answer
//! item becomes is up to `observe.rs` (`observe_*`).

use crate::api::{Api, IdFilter};
use crate::client::{json_array, listed_items, text, Listing, Paging, Params};
use crate::observe::{
    observe_deployment_set, observe_disk, observe_group, observe_instance, observe_vpc,
    observe_vswitch, GroupRules,
};
use crate::tags::{tag_filter, tags_of};
use crate::{AlibabaProvider, Product};
use async_trait::async_trait;
use gpuform_provider::Backoff;
use gpuform_provider::Result;
use gpuform_provider::{
    ErrorKind, Inventory, InventoryApi, InventoryInstance, InventoryVolume, Lookup,
    ObservedResource, OwnershipTags, ProviderError, RefreshApi, ResourceKind, Scope,
};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// Tag-filtered Describe calls (DescribeInstances, DescribeDisks,
/// DescribeSecurityGroups, DescribeVpcs, DescribeVSwitches; parameter
/// `Tag.N.Key`) return at most 1,000 resources across all their pages, with
/// no sign of the cut; ListTagResources lists past it (the figure as issue 15
/// reports it from the Tag.N.Key descriptions; ListTagResources:
/// alibabacloud.com/help/en/vpc/developer-reference/api-vpc-2016-04-28-listtagresources).
/// A listing that reaches this many is redone through ListTagResources.
pub const TAG_FILTER_CAP: usize = 1000;
/// ListTagResources rows per page (VPC: MaxResults 1-50, default 50).
const TAG_PAGE: usize = 50;
/// System disk sizes by instance id, for `root_gb`.
fn system_sizes(disks: &[Value]) -> HashMap<String, u64> {
    disks
        .iter()
        .filter(|d| text(d, "Type") == "system")
        .filter_map(|d| Some((text(d, "InstanceId"), d.get("Size")?.as_u64()?)))
        .filter(|(i, _)| !i.is_empty())
        .collect()
}

impl AlibabaProvider {
    /// Every item `api` lists with `filter`.
    pub(crate) async fn describe(
        &self,
        region: &str,
        api: Api,
        filter: &Params,
    ) -> Result<Vec<Value>> {
        self.client.list_all(region, &api.listing(), filter).await
    }

    /// Everything of `api` that carries the project tag: one tag-filtered
    /// Describe listing, or, when that reaches [`TAG_FILTER_CAP`] and may
    /// have been cut, ListTagResources for the ids and Describe by id.
    async fn owned_of(&self, region: &str, project: &str, api: Api) -> Result<Vec<Value>> {
        let listed = self.describe(region, api, &tag_filter(project)).await?;
        if listed.len() < TAG_FILTER_CAP {
            return Ok(listed);
        }
        let ids = self.tagged_ids(region, api, project).await?;
        self.by_ids(region, api, &ids).await
    }

    /// Ids of `api` carrying the project tag: ListTagResources (ECS and
    /// VPC: ResourceType, Tag.N, NextToken; rows
    /// `TagResources.TagResource[].ResourceId`), every page.
    async fn tagged_ids(&self, region: &str, api: Api, project: &str) -> Result<Vec<String>> {
        let Some(rtype) = api.resource_type() else {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("{api:?} carries no tags on Alibaba Cloud"),
            ));
        };
        let product = api.listing().product;
        let listing = Listing {
            product,
            action: "ListTagResources",
            paging: Paging::Token((product == Product::Vpc).then_some(TAG_PAGE)),
            list: ("TagResources", "TagResource"),
        };
        let mut p = tag_filter(project);
        p.push("ResourceType", rtype);
        let mut seen = BTreeSet::new();
        Ok(self
            .client
            .list_all(region, &listing, &p)
            .await?
            .iter()
            .map(|row| text(row, "ResourceId"))
            .filter(|id| !id.is_empty() && seen.insert(id.clone()))
            .collect())
    }

    /// Items of `api` with these ids, in the batches each call takes.
    async fn by_ids(&self, region: &str, api: Api, ids: &[String]) -> Result<Vec<Value>> {
        let wanted: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        let batches: Vec<Params> = match api.id_filter() {
            IdFilter::None => vec![Params::default()],
            IdFilter::Comma(key, n) => ids
                .chunks(n)
                .map(|c| Params::one(key, c.join(",")))
                .collect(),
            IdFilter::Json(key, n) => ids
                .chunks(n)
                .map(|c| Params::one(key, json_array(c)))
                .collect(),
        };
        let mut out = Vec::new();
        for p in batches {
            out.extend(
                self.describe(region, api, &p)
                    .await?
                    .into_iter()
                    .filter(|v| wanted.contains(text(v, api.id_key()).as_str())),
            );
        }
        Ok(out)
    }

    /// Inbound and outbound rules of a group and its `InnerAccessPolicy`:
    /// DescribeSecurityGroupAttribute with Direction=all, one call per group
    /// (the API has no batched form); each permission says its `Direction`.
    /// An answer without `Permissions` is an error, not "no rules".
    pub(crate) async fn group_rules(&self, region: &str, group_id: &str) -> Result<GroupRules> {
        let mut p = Params::one("SecurityGroupId", group_id);
        p.push("Direction", "all");
        let action = "DescribeSecurityGroupAttribute";
        let body = self.ecs(region, action, &p).await?;
        let (egress, ingress) = listed_items(&body, "Permissions", "Permission", action)?
            .into_iter()
            .cloned()
            .partition(|r| text(r, "Direction").eq_ignore_ascii_case("egress"));
        Ok(GroupRules {
            ingress,
            egress,
            inner: text(&body, "InnerAccessPolicy"),
        })
    }

    async fn observe_groups(
        &self,
        region: &str,
        groups: Vec<Value>,
    ) -> Result<Vec<ObservedResource>> {
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            let id = text(&g, "SecurityGroupId");
            match self.group_rules(region, &id).await {
                Ok(rules) => out.push(observe_group(&g, &rules, region)),
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// System disk sizes of a project's instances, for `root_gb`.
    async fn root_sizes(&self, region: &str, project: &str) -> Result<HashMap<String, u64>> {
        let mut p = tag_filter(project);
        p.push("DiskType", "system");
        let mut disks = self.describe(region, Api::Disk, &p).await?;
        if disks.len() >= TAG_FILTER_CAP {
            // Possibly cut by the tag filter's cap: every tagged disk, by id.
            disks = self.owned_of(region, project, Api::Disk).await?;
        }
        Ok(system_sizes(&disks))
    }

    /// See [`gpuform_provider::CloudDriver::read`].
    pub(crate) async fn read_kind(
        &self,
        region: &str,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let api = Api::of(kind)?;
        let found = self.by_ids(region, api, ids).await?;
        Ok(match api {
            Api::Group => self.observe_groups(region, found).await?,
            Api::Instance => {
                // Root disk sizes: one tag-filtered DescribeDisks per project
                // the instances belong to (instances without tags report none).
                let projects: BTreeSet<String> = found
                    .iter()
                    .filter_map(|i| tags_of(i).get(OwnershipTags::PROJECT).cloned())
                    .collect();
                let mut sizes = HashMap::new();
                for project in projects {
                    sizes.extend(self.root_sizes(region, &project).await?);
                }
                found
                    .iter()
                    .map(|i| {
                        observe_instance(i, region, sizes.get(&text(i, "InstanceId")).copied())
                    })
                    .collect()
            }
            Api::Vpc => found.iter().map(|v| observe_vpc(v, region)).collect(),
            Api::VSwitch => found.iter().map(|v| observe_vswitch(v, region)).collect(),
            Api::DeploymentSet => found
                .iter()
                .map(|d| observe_deployment_set(d, region))
                .collect(),
            Api::Disk => found.iter().map(|d| observe_disk(d, region)).collect(),
            Api::Image => Vec::new(),
        })
    }

    pub(crate) async fn read_one(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
    ) -> Result<ObservedResource> {
        self.read_kind(region, kind, &[id.to_string()])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::NotFound,
                    format!("{kind} {id} was not found in {region}"),
                )
            })
    }

    /// Polls `read_one` until `done` holds (or the settle time runs out).
    pub(crate) async fn wait_for(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
        what: &str,
        done: impl Fn(&ObservedResource) -> bool,
    ) -> Result<ObservedResource> {
        let mut wait = Backoff::new(self.poll, Duration::from_secs(5)).until(self.settle);
        loop {
            match self.read_one(region, kind, id).await {
                Ok(o) if done(&o) => return Ok(o),
                Ok(o) if wait.expired() => {
                    return Err(ProviderError::new(
                        ErrorKind::Transient,
                        format!(
                            "{kind} {id} is still {} after {:?}, waiting for it to be {what}",
                            o.status, self.settle
                        ),
                    ))
                }
                // Eventually consistent reads: a fresh id may not show yet.
                Err(e) if e.kind == ErrorKind::NotFound && !wait.expired() => {}
                Err(e) => return Err(e),
                Ok(_) => {}
            }
            wait.sleep().await;
        }
    }
}

impl AlibabaProvider {
    /// Polls until `id` is no longer found (an asynchronous delete's end),
    /// or the settle time runs out.
    pub(crate) async fn wait_gone(&self, region: &str, kind: ResourceKind, id: &str) -> Result<()> {
        let mut wait = Backoff::new(self.poll, Duration::from_secs(5)).until(self.settle);
        loop {
            let found = self.read_kind(region, kind, &[id.to_string()]).await?;
            let Some(o) = found.first() else {
                return Ok(());
            };
            if !wait.sleep().await {
                return Err(ProviderError::new(
                    ErrorKind::Transient,
                    format!(
                        "{kind} {id} is still {} after {:?}, waiting for its delete to finish",
                        o.status, self.settle
                    ),
                ));
            }
        }
    }
}

#[async_trait]
impl RefreshApi for AlibabaProvider {
    async fn read(&self, q: &Lookup<'_>) -> Result<Vec<ObservedResource>> {
        let (scope, kind, ids) = (q.scope, q.kind, q.ids);
        self.read_kind(&scope.region, kind, ids).await
    }

    /// See [`gpuform_provider::CloudDriver::list_owned`].
    async fn list_owned(&self, scope: &Scope, project: &str) -> Result<Vec<ObservedResource>> {
        let region = scope.region.as_str();
        let no_filter = Params::default();
        let (vpcs, vswitches, groups, sets, instances, disks) = tokio::try_join!(
            self.owned_of(region, project, Api::Vpc),
            self.owned_of(region, project, Api::VSwitch),
            self.owned_of(region, project, Api::Group),
            // No tag filter exists for deployment sets: page through the
            // region's sets and keep those whose description names the project.
            self.describe(region, Api::DeploymentSet, &no_filter),
            self.owned_of(region, project, Api::Instance),
            // Data and system disks in one listing: system disks give root_gb.
            self.owned_of(region, project, Api::Disk),
        )?;
        let mut out = Vec::new();
        out.extend(vpcs.iter().map(|v| observe_vpc(v, region)));
        out.extend(vswitches.iter().map(|v| observe_vswitch(v, region)));
        out.extend(self.observe_groups(region, groups).await?);
        out.extend(sets.iter().map(|d| observe_deployment_set(d, region)));
        let sizes = system_sizes(&disks);
        out.extend(
            instances
                .iter()
                .map(|i| observe_instance(i, region, sizes.get(&text(i, "InstanceId")).copied())),
        );
        out.extend(
            disks
                .iter()
                .filter(|d| text(d, "Type") != "system")
                .map(|d| observe_disk(d, region)),
        );
        // The tag filter is the cloud's; check it here too, so that a
        // stand-in or an API that ignores it cannot hand over others' resources
        // (and deployment sets are filtered only here).
        out.retain(|o| {
            o.ownership
                .as_ref()
                .is_some_and(|own| own.project == project)
        });
        Ok(out)
    }
}

#[async_trait]
impl InventoryApi for AlibabaProvider {
    /// Everything in the region, of every owner (`gpuform audit`): one
    /// DescribeInstances listing and one DescribeDisks listing (every disk:
    /// the attached ones give each instance's disk size, those with
    /// `Status` `Available` are the unattached data disks), run at once.
    async fn inventory(&self, scope: &Scope) -> Result<Inventory> {
        let region = scope.region.as_str();
        let none = Params::default();
        let (instances, disks) = tokio::try_join!(
            self.describe(region, Api::Instance, &none),
            self.describe(region, Api::Disk, &none),
        )?;
        let mut disk_gb: HashMap<String, u64> = HashMap::new();
        for d in &disks {
            let owner = text(d, "InstanceId");
            if let (false, Some(gb)) = (owner.is_empty(), d.get("Size").and_then(Value::as_u64)) {
                *disk_gb.entry(owner).or_default() += gb;
            }
        }
        let sizes = system_sizes(&disks);
        // Each instance's data disks (what `gpuform import` takes along).
        let mut data: HashMap<String, Vec<String>> = HashMap::new();
        for d in &disks {
            let owner = text(d, "InstanceId");
            if !owner.is_empty() && text(d, "Type") != "system" {
                data.entry(owner).or_default().push(text(d, "DiskId"));
            }
        }
        let mut out = Inventory::default();
        for i in &instances {
            let id = text(i, "InstanceId");
            let o = observe_instance(i, region, sizes.get(&id).copied());
            let mut row = InventoryInstance::from_observed(
                &o,
                Some(text(i, "CreationTime")),
                disk_gb.get(&id).copied(),
            );
            row.tags.extend(tags_of(i));
            // DescribeInstances' VpcAttributes, SecurityGroupIds and
            // DeploymentSetId: what the instance is built on.
            let vpc = i.get("VpcAttributes");
            let field = |v: Option<&Value>, k: &str| {
                v.and_then(|v| v.get(k))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            for (role, value) in [
                ("network", field(vpc, "VpcId")),
                ("subnet", field(vpc, "VSwitchId")),
                ("placement", field(Some(i), "DeploymentSetId")),
            ] {
                if let Some(v) = value {
                    row.uses.insert(role.to_string(), v);
                }
            }
            row.firewalls = i
                .get("SecurityGroupIds")
                .and_then(|g| g.get("SecurityGroupId"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            row.data_volumes = data.remove(&id).unwrap_or_default();
            row.data_volumes.sort();
            out.instances.push(row);
        }
        for d in disks
            .iter()
            .filter(|d| text(d, "Status") == "Available" && text(d, "Type") != "system")
        {
            let mut row = InventoryVolume::from_observed(&observe_disk(d, region));
            row.tags.extend(tags_of(d));
            out.volumes.push(row);
        }
        Ok(out)
    }
}
