//! gpuform's Alibaba Cloud provider, over the RPC APIs of ECS (2014-05-26)
//! and VPC (2016-04-28) with `reqwest` and the `ACS3-HMAC-SHA256` signer of
//! `gpuform-signing`. Alibaba has no official Rust SDK.
//!
//! | kind        | Alibaba Cloud                                                        |
//! | ----------- | -------------------------------------------------------------------- |
//! | `network`   | VPC `CreateVpc` (`cidr`)                                             |
//! | `subnet`    | VPC `CreateVSwitch` in `refs.network` (`zone`, `cidr`)              |
//! | `firewall`  | ECS `CreateSecurityGroup` in `refs.network` + `AuthorizeSecurityGroup` for `ingress`; members reach each other through the group's `InnerAccessPolicy=Accept` (a rule naming the group itself is refused) |
//! | `placement` | ECS `CreateDeploymentSet`, `Strategy=LowLatency` for `cluster` (packed, for NVLink/RDMA), `Availability` for `spread` |
//! | `instance`  | ECS `RunInstances`, `Amount=1`, one call per node, until Running (a failed launch is released and reported as capacity) |
//! | `volume`    | ECS `CreateDisk` + `AttachDisk` to `refs.instance`                   |
//! | `bucket`    | not supported (OSS is another API): an `invalid` error               |
//!
//! **Ownership.** VPCs, vSwitches, security groups, instances and disks get
//! the ownership tags (`gpuform:project`, `gpuform:address`,
//! `gpuform:token`, `gpuform:lineage`) plus `gpuform:kind` in the create call
//! itself (`Tag.N.Key` / `Tag.N.Value`), so nothing exists untagged even for
//! an instant, and the ownership token doubles as the call's `ClientToken`:
//! a retry with the same token returns the resource made by the first call.
//! Deployment sets have no tags in the API (`CreateDeploymentSet` takes
//! none, `DescribeDeploymentSets` filters by none), so their ownership is
//! written into the deployment set's description in the same call (see
//! [`placement_description`]); that too is atomic with the creation, so there
//! is no crash window where a deployment set exists without its owner.
//!
//! **Refresh** (`list_owned`, `read`) is batched: each kind is one
//! paginated Describe call filtered by the project tag (or by up to 100 ids),
//! so its cost grows with pages. A tag-filtered listing stops at 1,000
//! resources; one that reaches it is redone with `ListTagResources` and
//! Describe by id. Security-group rules need one
//! `DescribeSecurityGroupAttribute` per group (one group per cluster). An
//! answer without the list its reference documents is an error, never an
//! empty result.
//!
//! **Subscriptions** (`reserved-1y` / `reserved-3y`: `PrePaid`, 12 or 36
//! months) are released by `DeleteInstances` only once expired, so
//! [`Provider::delete_refusal`] makes a plan that would delete one before
//! its `ExpiredTime` fail before anything is destroyed.
//!
//! Credentials come from `ALIBABA_CLOUD_ACCESS_KEY_ID` /
//! `ALIBABA_CLOUD_ACCESS_KEY_SECRET` (and `ALIBABA_CLOUD_SECURITY_TOKEN` for
//! STS), as Alibaba's own CLI and SDKs read them; they never reach errors,
//! logs or `Debug` output.

mod client;
mod errors;

pub use client::{default_host, Endpoint, Product, RpcClient, CENTRAL_VPC_REGIONS};
pub use errors::classify;

use async_trait::async_trait;
use base64::Engine as _;
use gpuform_provider::provider::RateLimit;
use gpuform_provider::{
    Attrs, Cloud, CreateRequest, ErrorKind, ObservedResource, OwnershipTags, Provider,
    ProviderError, ResourceKind, Scope,
};
use gpuform_signing::Credentials;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

pub const ENV_ACCESS_KEY_ID: &str = "ALIBABA_CLOUD_ACCESS_KEY_ID";
pub const ENV_ACCESS_KEY_SECRET: &str = "ALIBABA_CLOUD_ACCESS_KEY_SECRET";
pub const ENV_SECURITY_TOKEN: &str = "ALIBABA_CLOUD_SECURITY_TOKEN";
pub const ENV_ENDPOINT: &str = "GPUFORM_ALIBABA_ENDPOINT";

/// Tag naming the neutral kind of what gpuform created.
pub const KIND_TAG: &str = gpuform_provider::resource::record_tags::KIND;
/// Tag keeping the image the engine asked for (a logical name or an id).
pub const IMAGE_TAG: &str = gpuform_provider::resource::record_tags::IMAGE;
/// Tag keeping the pricing model the engine asked for (`reserved-1y` and
/// `reserved-3y` are both `PrePaid` to ECS).
pub const PRICING_TAG: &str = gpuform_provider::resource::record_tags::PRICING;
/// Tag keeping whether RDMA was asked for.
pub const RDMA_TAG: &str = gpuform_provider::resource::record_tags::RDMA;

/// Prefix of a deployment set description that carries gpuform ownership.
pub const PLACEMENT_MARK: &str = "gpuform-owned";

/// Tags per resource (ECS and VPC: at most 20).
const MAX_TAGS: usize = 20;
/// Page sizes: the documented maxima. DescribeInstances, DescribeDisks and
/// DescribeSecurityGroups page with `MaxResults` (≤ 100) and `NextToken`;
/// DescribeVpcs, DescribeVSwitches and DescribeDeploymentSets with
/// `PageNumber` / `PageSize` (≤ 50).
const TOKEN_PAGE: usize = 100;
const NUMBER_PAGE: usize = 50;
/// Ids per batched Describe: `InstanceIds`, `DiskIds`, `SecurityGroupIds`,
/// `DeploymentSetIds` take JSON arrays of up to 100; DescribeVpcs `VpcId`
/// takes up to 20, comma-separated.
const ID_BATCH: usize = 100;
const VPC_ID_BATCH: usize = 20;
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

/// What list_owned lists by the project tag, and how ListTagResources
/// names it (ECS `ResourceType` instance | disk | securitygroup; VPC
/// `ResourceType` VPC | VSWITCH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tagged {
    Vpc,
    VSwitch,
    Group,
    Instance,
    Disk,
}

impl Tagged {
    fn product(self) -> Product {
        match self {
            Tagged::Vpc | Tagged::VSwitch => Product::Vpc,
            _ => Product::Ecs,
        }
    }

    fn resource_type(self) -> &'static str {
        match self {
            Tagged::Vpc => "VPC",
            Tagged::VSwitch => "VSWITCH",
            Tagged::Group => "securitygroup",
            Tagged::Instance => "instance",
            Tagged::Disk => "disk",
        }
    }

    fn id_key(self) -> &'static str {
        match self {
            Tagged::Vpc => "VpcId",
            Tagged::VSwitch => "VSwitchId",
            Tagged::Group => "SecurityGroupId",
            Tagged::Instance => "InstanceId",
            Tagged::Disk => "DiskId",
        }
    }
}

/// The Alibaba Cloud provider. Cheap to share; the HTTP client is reused.
pub struct AlibabaProvider {
    client: RpcClient,
    rate: RateLimit,
    images: Mutex<HashMap<(String, String), String>>,
    /// First delay when waiting for a resource to settle (doubles, ≤ 5 s).
    poll: Duration,
    /// Longest wait for a resource to settle (instance Running, disk Available).
    settle: Duration,
}

impl fmt::Debug for AlibabaProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlibabaProvider")
            .field("client", &self.client)
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

impl AlibabaProvider {
    /// ECS throttles every API operation per account and region per minute
    /// (ECS "API call throttling", help doc 437902: thresholds per operation
    /// in Quota Center > API Rate Limits; each operation page on
    /// api.aliyun.com states its own, e.g. DescribeImages 1000/60 s). The
    /// mutating operations an apply uses most (RunInstances, CreateDisk,
    /// AttachDisk, DeleteInstances) have far lower budgets than the reads,
    /// so gpuform's shared budget stays at 5 calls/s (300 a minute) with a
    /// burst of 20: under the write budgets while refresh needs only a few
    /// calls. Raise it with [`AlibabaProvider::with_rate_limit`] for an
    /// account with raised quotas.
    pub const DEFAULT_RATE: RateLimit = RateLimit {
        per_second: 5.0,
        burst: 20,
    };

    /// Reads credentials from `ALIBABA_CLOUD_ACCESS_KEY_ID`,
    /// `ALIBABA_CLOUD_ACCESS_KEY_SECRET` (and optional
    /// `ALIBABA_CLOUD_SECURITY_TOKEN`), and the endpoint override from
    /// `GPUFORM_ALIBABA_ENDPOINT`. Sends nothing.
    pub fn from_env() -> Result<AlibabaProvider, ProviderError> {
        Self::from_env_with_endpoint(None)
    }

    /// Like [`AlibabaProvider::from_env`], with an endpoint override (from a
    /// spec's `endpoints:`) that wins over `GPUFORM_ALIBABA_ENDPOINT`.
    pub fn from_env_with_endpoint(
        endpoint: Option<String>,
    ) -> Result<AlibabaProvider, ProviderError> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let (Some(id), Some(secret)) = (var(ENV_ACCESS_KEY_ID), var(ENV_ACCESS_KEY_SECRET)) else {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!(
                    "Alibaba Cloud credentials are missing: set {ENV_ACCESS_KEY_ID} and \
                     {ENV_ACCESS_KEY_SECRET} (and {ENV_SECURITY_TOKEN} for STS credentials), \
                     as for Alibaba's own CLI and SDKs"
                ),
            ));
        };
        let endpoint = endpoint
            .or_else(|| var(ENV_ENDPOINT))
            .map(|u| Endpoint::parse(&u))
            .transpose()?;
        Self::new(
            Credentials::new(id, secret),
            var(ENV_SECURITY_TOKEN),
            endpoint,
        )
    }

    /// A provider with explicit credentials and endpoint (tests, embedding).
    pub fn new(
        creds: Credentials,
        security_token: Option<String>,
        endpoint: Option<Endpoint>,
    ) -> Result<AlibabaProvider, ProviderError> {
        Ok(AlibabaProvider {
            client: RpcClient::new(creds, security_token, endpoint)?,
            rate: Self::DEFAULT_RATE,
            images: Mutex::new(HashMap::new()),
            poll: Duration::from_millis(500),
            settle: Duration::from_secs(600),
        })
    }

    pub fn with_rate_limit(mut self, rate: RateLimit) -> Self {
        self.rate = rate;
        self
    }

    /// How often and how long to poll while a resource settles (an instance
    /// leaving Pending before AttachDisk, a disk leaving In_use after
    /// DetachDisk). Local tests use a short first delay.
    pub fn with_polling(mut self, first: Duration, max_wait: Duration) -> Self {
        self.poll = first;
        self.settle = max_wait;
        self
    }

    /// The endpoint override in use, if any.
    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.client.endpoint()
    }

    async fn ecs(&self, region: &str, action: &str, p: &Params) -> Result<Value, ProviderError> {
        self.client.call(Product::Ecs, region, action, &p.0).await
    }

    async fn vpc(&self, region: &str, action: &str, p: &Params) -> Result<Value, ProviderError> {
        self.client.call(Product::Vpc, region, action, &p.0).await
    }

    // ----------------------------------------------------------------- pagination

    /// All items of a `PageNumber`/`PageSize` Describe call.
    async fn pages_by_number(
        &self,
        product: Product,
        region: &str,
        action: &str,
        base: &Params,
        path: (&str, &str),
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut page = 1usize;
        loop {
            let mut p = base.clone();
            p.push("PageNumber", page.to_string());
            p.push("PageSize", NUMBER_PAGE.to_string());
            let body = self.client.call(product, region, action, &p.0).await?;
            let got = listed_items(&body, path.0, path.1, action)?;
            let n = got.len();
            out.extend(got.into_iter().cloned());
            // A full page may have a successor; without a TotalCount, ask.
            let total = body.get("TotalCount").and_then(Value::as_u64);
            if n < NUMBER_PAGE || total.is_some_and(|t| out.len() as u64 >= t) {
                return Ok(out);
            }
            page += 1;
        }
    }

    /// All items of a `MaxResults`/`NextToken` Describe call.
    async fn pages_by_token(
        &self,
        region: &str,
        action: &str,
        base: &Params,
        path: (&str, &str),
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut p = base.clone();
            p.push("MaxResults", TOKEN_PAGE.to_string());
            if let Some(t) = &token {
                p.push("NextToken", t.clone());
            }
            let body = self.ecs(region, action, &p).await?;
            out.extend(
                listed_items(&body, path.0, path.1, action)?
                    .into_iter()
                    .cloned(),
            );
            match body.get("NextToken").and_then(Value::as_str) {
                Some(t) if !t.is_empty() && token.as_deref() != Some(t) => {
                    token = Some(t.to_string())
                }
                _ => return Ok(out),
            }
        }
    }

    // ----------------------------------------------------------------- describe

    async fn describe_vpcs(
        &self,
        region: &str,
        filter: &Params,
    ) -> Result<Vec<Value>, ProviderError> {
        // DescribeVpcs: PageNumber/PageSize ≤ 50, Tag.N, VpcId (≤ 20, comma-separated).
        self.pages_by_number(
            Product::Vpc,
            region,
            "DescribeVpcs",
            filter,
            ("Vpcs", "Vpc"),
        )
        .await
    }

    async fn describe_vswitches(
        &self,
        region: &str,
        filter: &Params,
    ) -> Result<Vec<Value>, ProviderError> {
        // DescribeVSwitches: PageNumber/PageSize ≤ 50, Tag.N, VpcId, VSwitchId.
        self.pages_by_number(
            Product::Vpc,
            region,
            "DescribeVSwitches",
            filter,
            ("VSwitches", "VSwitch"),
        )
        .await
    }

    async fn describe_groups(
        &self,
        region: &str,
        filter: &Params,
    ) -> Result<Vec<Value>, ProviderError> {
        // DescribeSecurityGroups: MaxResults ≤ 100 / NextToken, Tag.N, SecurityGroupIds.
        self.pages_by_token(
            region,
            "DescribeSecurityGroups",
            filter,
            ("SecurityGroups", "SecurityGroup"),
        )
        .await
    }

    async fn describe_deployment_sets(
        &self,
        region: &str,
        filter: &Params,
    ) -> Result<Vec<Value>, ProviderError> {
        // DescribeDeploymentSets: PageNumber/PageSize ≤ 50, DeploymentSetIds.
        self.pages_by_number(
            Product::Ecs,
            region,
            "DescribeDeploymentSets",
            filter,
            ("DeploymentSets", "DeploymentSet"),
        )
        .await
    }

    async fn describe_instances(
        &self,
        region: &str,
        filter: &Params,
    ) -> Result<Vec<Value>, ProviderError> {
        // DescribeInstances: MaxResults ≤ 100 / NextToken, Tag.N, InstanceIds.
        self.pages_by_token(
            region,
            "DescribeInstances",
            filter,
            ("Instances", "Instance"),
        )
        .await
    }

    async fn describe_disks(
        &self,
        region: &str,
        filter: &Params,
    ) -> Result<Vec<Value>, ProviderError> {
        // DescribeDisks: MaxResults / NextToken, Tag.N, DiskIds, DiskType.
        self.pages_by_token(region, "DescribeDisks", filter, ("Disks", "Disk"))
            .await
    }

    /// Describe items of `what` matching `filter`.
    async fn describe_tagged(
        &self,
        region: &str,
        what: Tagged,
        filter: &Params,
    ) -> Result<Vec<Value>, ProviderError> {
        match what {
            Tagged::Vpc => self.describe_vpcs(region, filter).await,
            Tagged::VSwitch => self.describe_vswitches(region, filter).await,
            Tagged::Group => self.describe_groups(region, filter).await,
            Tagged::Instance => self.describe_instances(region, filter).await,
            Tagged::Disk => self.describe_disks(region, filter).await,
        }
    }

    /// Everything of `what` that carries the project tag: one tag-filtered
    /// Describe listing, or, when that reaches [`TAG_FILTER_CAP`] and may
    /// have been cut, ListTagResources for the ids and Describe by id.
    async fn owned_of(
        &self,
        region: &str,
        project: &str,
        what: Tagged,
    ) -> Result<Vec<Value>, ProviderError> {
        let listed = self
            .describe_tagged(region, what, &tag_filter(project))
            .await?;
        if listed.len() < TAG_FILTER_CAP {
            return Ok(listed);
        }
        let ids = self.tagged_ids(region, what, project).await?;
        self.describe_ids(region, what, &ids).await
    }

    /// Ids of `what` carrying the project tag: ListTagResources (ECS and
    /// VPC: ResourceType, Tag.N, NextToken; rows
    /// `TagResources.TagResource[].ResourceId`), every page.
    async fn tagged_ids(
        &self,
        region: &str,
        what: Tagged,
        project: &str,
    ) -> Result<Vec<String>, ProviderError> {
        let action = "ListTagResources";
        let mut ids = Vec::new();
        let mut seen = BTreeSet::new();
        let mut token: Option<String> = None;
        loop {
            let mut p = tag_filter(project);
            p.push("ResourceType", what.resource_type());
            if what.product() == Product::Vpc {
                p.push("MaxResults", TAG_PAGE.to_string());
            }
            if let Some(t) = &token {
                p.push("NextToken", t.clone());
            }
            let body = self
                .client
                .call(what.product(), region, action, &p.0)
                .await?;
            for row in listed_items(&body, "TagResources", "TagResource", action)? {
                let id = text(row, "ResourceId");
                if !id.is_empty() && seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
            match body.get("NextToken").and_then(Value::as_str) {
                Some(t) if !t.is_empty() && token.as_deref() != Some(t) => {
                    token = Some(t.to_string())
                }
                _ => return Ok(ids),
            }
        }
    }

    /// Describe items of `what` with these ids, in the batches each call takes.
    async fn describe_ids(
        &self,
        region: &str,
        what: Tagged,
        ids: &[String],
    ) -> Result<Vec<Value>, ProviderError> {
        let wanted: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        let mut out = Vec::new();
        let batches: Vec<Params> = match what {
            // DescribeVSwitches filters by one VSwitchId only: page through the region.
            Tagged::VSwitch => vec![Params::default()],
            Tagged::Vpc => ids
                .chunks(VPC_ID_BATCH)
                .map(|c| {
                    let mut p = Params::default();
                    p.push("VpcId", c.join(","));
                    p
                })
                .collect(),
            _ => {
                let key = match what {
                    Tagged::Group => "SecurityGroupIds",
                    Tagged::Instance => "InstanceIds",
                    _ => "DiskIds",
                };
                ids.chunks(ID_BATCH)
                    .map(|c| {
                        let mut p = Params::default();
                        p.push(key, json_array(c));
                        p
                    })
                    .collect()
            }
        };
        for p in batches {
            out.extend(
                self.describe_tagged(region, what, &p)
                    .await?
                    .into_iter()
                    .filter(|v| wanted.contains(text(v, what.id_key()).as_str())),
            );
        }
        Ok(out)
    }

    /// Inbound rules of a group and its `InnerAccessPolicy`:
    /// DescribeSecurityGroupAttribute, one call per group (the API has no
    /// batched form). An answer without `Permissions` is an error, not "no rules".
    async fn group_rules(
        &self,
        region: &str,
        group_id: &str,
    ) -> Result<(Vec<Value>, String), ProviderError> {
        let mut p = Params::default();
        p.push("SecurityGroupId", group_id);
        p.push("Direction", "ingress");
        let action = "DescribeSecurityGroupAttribute";
        let body = self.ecs(region, action, &p).await?;
        let rules = listed_items(&body, "Permissions", "Permission", action)?
            .into_iter()
            .cloned()
            .collect();
        Ok((rules, text(&body, "InnerAccessPolicy")))
    }

    async fn observe_groups(
        &self,
        region: &str,
        groups: Vec<Value>,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            let id = text(&g, "SecurityGroupId");
            match self.group_rules(region, &id).await {
                Ok((rules, inner)) => out.push(observe_group(&g, &rules, &inner, region)),
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// System disk sizes by instance id, for `root_gb`.
    async fn root_sizes(
        &self,
        region: &str,
        project: &str,
    ) -> Result<HashMap<String, u64>, ProviderError> {
        let mut p = tag_filter(project);
        p.push("DiskType", "system");
        let mut disks = self.describe_disks(region, &p).await?;
        if disks.len() >= TAG_FILTER_CAP {
            // Possibly cut by the tag filter's cap: every tagged disk, by id.
            disks = self.owned_of(region, project, Tagged::Disk).await?;
        }
        Ok(system_sizes(&disks))
    }

    async fn read_impl(
        &self,
        region: &str,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let wanted: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        let mut out = Vec::new();
        if ids.is_empty() {
            return Ok(out);
        }
        match kind {
            ResourceKind::Network => {
                for chunk in ids.chunks(VPC_ID_BATCH) {
                    let mut p = Params::default();
                    p.push("VpcId", chunk.join(","));
                    for v in self.describe_vpcs(region, &p).await? {
                        if wanted.contains(text(&v, "VpcId").as_str()) {
                            out.push(observe_vpc(&v, region));
                        }
                    }
                }
            }
            ResourceKind::Subnet => {
                // DescribeVSwitches filters by one VSwitchId only: list the
                // region's vSwitches page by page instead of one call per id.
                for v in self.describe_vswitches(region, &Params::default()).await? {
                    if wanted.contains(text(&v, "VSwitchId").as_str()) {
                        out.push(observe_vswitch(&v, region));
                    }
                }
            }
            ResourceKind::Firewall => {
                for chunk in ids.chunks(ID_BATCH) {
                    let mut p = Params::default();
                    p.push("SecurityGroupIds", json_array(chunk));
                    let groups = self.describe_groups(region, &p).await?;
                    let groups = groups
                        .into_iter()
                        .filter(|g| wanted.contains(text(g, "SecurityGroupId").as_str()))
                        .collect();
                    out.extend(self.observe_groups(region, groups).await?);
                }
            }
            ResourceKind::Placement => {
                for chunk in ids.chunks(ID_BATCH) {
                    let mut p = Params::default();
                    p.push("DeploymentSetIds", json_array(chunk));
                    for d in self.describe_deployment_sets(region, &p).await? {
                        if wanted.contains(text(&d, "DeploymentSetId").as_str()) {
                            out.push(observe_deployment_set(&d, region));
                        }
                    }
                }
            }
            ResourceKind::Instance => {
                let mut found = Vec::new();
                for chunk in ids.chunks(ID_BATCH) {
                    let mut p = Params::default();
                    p.push("InstanceIds", json_array(chunk));
                    found.extend(
                        self.describe_instances(region, &p)
                            .await?
                            .into_iter()
                            .filter(|i| wanted.contains(text(i, "InstanceId").as_str())),
                    );
                }
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
                for i in &found {
                    let id = text(i, "InstanceId");
                    out.push(observe_instance(i, region, sizes.get(&id).copied()));
                }
            }
            ResourceKind::Volume => {
                for chunk in ids.chunks(ID_BATCH) {
                    let mut p = Params::default();
                    p.push("DiskIds", json_array(chunk));
                    for d in self.describe_disks(region, &p).await? {
                        if wanted.contains(text(&d, "DiskId").as_str()) {
                            out.push(observe_disk(&d, region));
                        }
                    }
                }
            }
            ResourceKind::Bucket => return Err(buckets_unsupported()),
        }
        Ok(out)
    }

    async fn read_one(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
    ) -> Result<ObservedResource, ProviderError> {
        self.read_impl(region, kind, &[id.to_string()])
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
    async fn wait_for(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
        what: &str,
        done: impl Fn(&ObservedResource) -> bool,
    ) -> Result<ObservedResource, ProviderError> {
        let start = tokio::time::Instant::now();
        let mut delay = self.poll;
        loop {
            match self.read_one(region, kind, id).await {
                Ok(o) if done(&o) => return Ok(o),
                Ok(o) if start.elapsed() >= self.settle => {
                    return Err(ProviderError::new(
                        ErrorKind::Transient,
                        format!(
                            "{kind} {id} is still {} after {:?}, waiting for it to be {what}",
                            o.status, self.settle
                        ),
                    ))
                }
                // Eventually consistent reads: a fresh id may not show yet.
                Err(e) if e.kind == ErrorKind::NotFound && start.elapsed() < self.settle => {}
                Err(e) => return Err(e),
                Ok(_) => {}
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    // ----------------------------------------------------------------- create

    async fn create_network(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let cidr = attr_str(a, "cidr")?.ok_or_else(|| missing("network", "cidr"))?;
        // CreateVpc (VPC 2016-04-28): CidrBlock, VpcName, Description,
        // ClientToken, Tag.N.Key/Value; answers VpcId.
        let mut p = Params::default();
        p.push("CidrBlock", cidr);
        p.push("VpcName", resource_name(&req.ownership));
        p.push("Description", description(&req.ownership));
        p.push("ClientToken", client_token(&req.ownership.token)?);
        p.tags(&creation_tags(
            &req.ownership,
            ResourceKind::Network,
            &user_tags(a)?,
            &[],
        )?);
        let body = self.vpc(region, "CreateVpc", &p).await?;
        let id = required(&body, "VpcId", "CreateVpc")?;
        // CreateVpc is asynchronous (Creating → Available).
        self.wait_for(region, ResourceKind::Network, &id, "available", |o| {
            o.status == "available"
        })
        .await
    }

    async fn create_subnet(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let vpc = reference(req, "network")?;
        let zone = attr_str(a, "zone")?.ok_or_else(|| missing("subnet", "zone"))?;
        let cidr = attr_str(a, "cidr")?.ok_or_else(|| missing("subnet", "cidr"))?;
        // CreateVSwitch (VPC 2016-04-28): VpcId, ZoneId, CidrBlock,
        // VSwitchName, ClientToken, Tag.N; answers VSwitchId.
        let mut p = Params::default();
        p.push("VpcId", vpc);
        p.push("ZoneId", zone);
        p.push("CidrBlock", cidr);
        p.push("VSwitchName", resource_name(&req.ownership));
        p.push("Description", description(&req.ownership));
        p.push("ClientToken", client_token(&req.ownership.token)?);
        p.tags(&creation_tags(
            &req.ownership,
            ResourceKind::Subnet,
            &user_tags(a)?,
            &[],
        )?);
        let body = self.vpc(region, "CreateVSwitch", &p).await?;
        let id = required(&body, "VSwitchId", "CreateVSwitch")?;
        self.wait_for(region, ResourceKind::Subnet, &id, "available", |o| {
            o.status == "available"
        })
        .await
    }

    async fn create_firewall(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let vpc = reference(req, "network")?;
        let rules = ingress_rules(a)?;
        // CreateSecurityGroup (ECS): VpcId, SecurityGroupName, Description,
        // SecurityGroupType, ClientToken, Tag.N; answers SecurityGroupId.
        let mut p = Params::default();
        p.push("VpcId", vpc);
        p.push("SecurityGroupName", resource_name(&req.ownership));
        p.push("Description", description(&req.ownership));
        p.push("SecurityGroupType", "normal");
        p.push("ClientToken", client_token(&req.ownership.token)?);
        p.tags(&creation_tags(
            &req.ownership,
            ResourceKind::Firewall,
            &user_tags(a)?,
            &[],
        )?);
        let body = self.ecs(region, "CreateSecurityGroup", &p).await?;
        let id = required(&body, "SecurityGroupId", "CreateSecurityGroup")?;
        // Members reach each other without a rule: a new basic group's
        // InnerAccessPolicy is Accept (see `sync_rules`). A crash between
        // these two calls leaves a tagged group without the spec's rules:
        // adoption finds it, its observed `ingress` differs from the
        // desired one, and the next plan updates it in place.
        self.sync_rules(region, &id, &rules, true).await?;
        self.read_one(region, ResourceKind::Firewall, &id).await
    }

    /// Makes the inbound rules of `group` exactly `rules`:
    /// AuthorizeSecurityGroup for what is missing, RevokeSecurityGroup for
    /// what is extra (`Permissions.N.*`, ≤ 100 per call).
    ///
    /// Traffic between members needs no rule, and cannot have one: a rule
    /// whose SourceGroupId is the group itself is refused with 403
    /// InvalidParamter.Conflict ("The specified SecurityGroupId should be
    /// different from the SourceGroupId", AuthorizeSecurityGroup and
    /// RevokeSecurityGroup error codes, help doc 25554). Instances of one basic group reach
    /// each other while its InnerAccessPolicy is Accept, the default
    /// (RunInstances: 同一个安全组内的实例之间可以互相访问;
    /// ModifySecurityGroupPolicy, alibabacloud.com/help/en/ecs/developer-reference/
    /// api-ecs-2014-05-26-modifysecuritygrouppolicy; DescribeSecurityGroupAttribute
    /// `InnerAccessPolicy`); a group found with Drop is set back to Accept.
    async fn sync_rules(
        &self,
        region: &str,
        group: &str,
        rules: &[Rule],
        fresh: bool,
    ) -> Result<(), ProviderError> {
        let current: Vec<Value> = if fresh {
            Vec::new()
        } else {
            let (current, inner) = self.group_rules(region, group).await?;
            if !inner_access_accepted(&inner) {
                // ModifySecurityGroupPolicy (ECS): SecurityGroupId, InnerAccessPolicy.
                let mut p = Params::default();
                p.push("SecurityGroupId", group);
                p.push("InnerAccessPolicy", "Accept");
                self.ecs(region, "ModifySecurityGroupPolicy", &p).await?;
            }
            current
        };
        let want: Vec<Perm> = rules.iter().map(Perm::from_rule).collect();
        let have: Vec<Perm> = current.iter().filter_map(Perm::from_api).collect();
        let add: Vec<&Perm> = want.iter().filter(|w| !have.contains(w)).collect();
        let remove: Vec<&Perm> = have.iter().filter(|h| !want.contains(h)).collect();
        for chunk in remove.chunks(100) {
            let mut p = Params::default();
            p.push("SecurityGroupId", group);
            for (i, perm) in chunk.iter().enumerate() {
                perm.push(&mut p, i + 1);
            }
            match self.ecs(region, "RevokeSecurityGroup", &p).await {
                Ok(_) => {}
                Err(e)
                    if e.kind == ErrorKind::NotFound
                        && e.code.as_deref() != Some("InvalidSecurityGroupId.NotFound") => {}
                Err(e) => return Err(e),
            }
        }
        for chunk in add.chunks(100) {
            let mut p = Params::default();
            p.push("SecurityGroupId", group);
            for (i, perm) in chunk.iter().enumerate() {
                perm.push(&mut p, i + 1);
            }
            self.ecs(region, "AuthorizeSecurityGroup", &p).await?;
        }
        Ok(())
    }

    async fn create_placement(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let strategy = attr_str(&req.attrs, "strategy")?.unwrap_or_else(|| "cluster".into());
        // CreateDeploymentSet (ECS): Strategy Availability | AvailabilityGroup
        // | LowLatency ("网络低时延策略"): LowLatency packs the instances
        // close together in the network, which is what NVLink/RDMA clusters want.
        let api_strategy = match strategy.as_str() {
            "cluster" => "LowLatency",
            "spread" => "Availability",
            other => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("placement strategy `{other}` is not one of cluster, spread"),
                ))
            }
        };
        let mut p = Params::default();
        p.push("Strategy", api_strategy);
        p.push("DeploymentSetName", resource_name(&req.ownership));
        p.push("Description", placement_description(&req.ownership)?);
        p.push("ClientToken", client_token(&req.ownership.token)?);
        let body = self.ecs(region, "CreateDeploymentSet", &p).await?;
        let id = required(&body, "DeploymentSetId", "CreateDeploymentSet")?;
        self.read_one(region, ResourceKind::Placement, &id).await
    }

    /// The image id for `image`: an id passes through; a logical name is
    /// looked up with DescribeImages among Alibaba's public images
    /// (`ImageOwnerAlias=system`, name match, newest `CreationTime`).
    pub async fn resolve_image(&self, region: &str, image: &str) -> Result<String, ProviderError> {
        if is_image_id(image) {
            return Ok(image.to_string());
        }
        let key = (region.to_string(), image.to_string());
        if let Some(id) = self.images.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(id);
        }
        let Some(prefix) = image_name_prefix(image) else {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "image `{image}` is neither an Alibaba image id nor a known name ({})",
                    LOGICAL_IMAGES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        let mut p = Params::default();
        p.push("ImageOwnerAlias", "system");
        p.push("ImageName", prefix);
        p.push("OSType", "linux");
        p.push("Architecture", "x86_64");
        p.push("Status", "Available");
        let images = self
            .pages_by_number(
                Product::Ecs,
                region,
                "DescribeImages",
                &p,
                ("Images", "Image"),
            )
            .await?;
        let best = images
            .iter()
            .filter(|i| {
                text(i, "ImageName").starts_with(prefix) || text(i, "ImageId").starts_with(prefix)
            })
            .max_by_key(|i| text(i, "CreationTime"))
            .map(|i| text(i, "ImageId"))
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "no public image named {prefix}* is available in {region} (for `{image}`)"
                    ),
                )
            })?;
        if let Ok(mut m) = self.images.lock() {
            m.insert(key, best.clone());
        }
        Ok(best)
    }

    async fn create_instance(
        &self,
        req: &CreateRequest,
    ) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let itype =
            attr_str(a, "instance_type")?.ok_or_else(|| missing("instance", "instance_type"))?;
        let zone = attr_str(a, "zone")?.ok_or_else(|| missing("instance", "zone"))?;
        let image = attr_str(a, "image")?.ok_or_else(|| missing("instance", "image"))?;
        let pricing = attr_str(a, "pricing")?.unwrap_or_else(|| "on-demand".to_string());
        let root_gb = attr_u64(a, "root_gb")?;
        let rdma = attr_bool(a, "rdma")?.unwrap_or(false);
        let subnet = reference(req, "subnet")?;
        let group = reference(req, "firewall")?;
        let image_id = self.resolve_image(region, &image).await?;

        // RunInstances (ECS): one instance per call (Amount = MinAmount = 1),
        // so each carries its own address tag from the first instant.
        let mut p = Params::default();
        p.push("ZoneId", zone);
        p.push("InstanceType", itype);
        p.push("ImageId", image_id);
        p.push("VSwitchId", subnet);
        p.push("SecurityGroupId", group);
        if let Some(ds) = req.refs.get("placement") {
            p.push("DeploymentSetId", ds.clone());
        }
        p.push("Amount", "1");
        p.push("MinAmount", "1");
        p.push("InstanceName", resource_name(&req.ownership));
        p.push("Description", description(&req.ownership));
        p.push("ClientToken", client_token(&req.ownership.token)?);
        match pricing.as_str() {
            "on-demand" => p.push("InstanceChargeType", "PostPaid"),
            "spot" => {
                p.push("InstanceChargeType", "PostPaid");
                p.push("SpotStrategy", "SpotAsPriceGo");
            }
            "reserved-1y" | "reserved-3y" => {
                // RunInstances (ECS API reference, `PeriodUnit` / `Period`,
                // alibabacloud.com/help/en/ecs/developer-reference/api-runinstances):
                // the unit is Week or Month, never Year; with Month the
                // period is 1-9, 12, 24, 36, 48 or 60. One and three years
                // are Month 12 and Month 36.
                p.push("InstanceChargeType", "PrePaid");
                p.push("Period", subscription_months(&pricing).to_string());
                p.push("PeriodUnit", "Month");
                // No auto-renewal: a subscription gpuform made ends at its term.
                p.push("AutoRenew", "false");
            }
            other => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!(
                        "pricing `{other}` is not one of on-demand, spot, reserved-1y, reserved-3y"
                    ),
                ))
            }
        }
        if let Some(gb) = root_gb {
            p.push("SystemDisk.Size", gb.to_string());
            p.push("SystemDisk.Category", "cloud_essd");
        }
        if let Some(u) = attr_str(a, "user_data")? {
            let encoded = base64::engine::general_purpose::STANDARD.encode(u.as_bytes());
            // RunInstances: UserData is Base64 and at most 32 KB.
            if encoded.len() > 32 * 1024 {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("user_data is {} bytes once Base64-encoded; RunInstances takes at most 32 KB", encoded.len()),
                ));
            }
            p.push("UserData", encoded);
        }
        let extra = [
            (IMAGE_TAG, image.clone()),
            (PRICING_TAG, pricing.clone()),
            (RDMA_TAG, rdma.to_string()),
        ];
        // RunInstances puts Tag.N on the instance and on the disks it makes.
        p.tags(&creation_tags(
            &req.ownership,
            ResourceKind::Instance,
            &user_tags(a)?,
            &extra,
        )?);
        let body = self.ecs(region, "RunInstances", &p).await?;
        let id = items(&body, "InstanceIdSets", "InstanceIdSet")
            .first()
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| empty_answer("RunInstances"))?;
        self.await_launch(region, &id).await
    }

    /// Waits for a new instance to be Running. RunInstances answers once the
    /// order is placed; the instance is Pending, then Running (instance
    /// lifecycle, help doc 25380). When stock runs out after that answer, ECS
    /// raises SystemFailure.Delete ("System events related to instance
    /// creation failures",
    /// alibabacloud.com/help/en/ecs/user-guide/view-instance-creation-failure-events):
    /// the instance shows Stopped without ever running
    /// and the system releases it, "in most cases within 5 minutes". An
    /// instance that stays Pending past the settle time is "an exception"
    /// per the lifecycle page. None of these is a node: it is released and
    /// the create fails as a capacity failure, so the apply retries
    /// elsewhere through the zone failover, as for OperationDenied.NoStock.
    async fn await_launch(
        &self,
        region: &str,
        id: &str,
    ) -> Result<ObservedResource, ProviderError> {
        let start = tokio::time::Instant::now();
        let mut delay = self.poll;
        let mut seen = false;
        loop {
            let late = start.elapsed() >= self.settle;
            match self.read_one(region, ResourceKind::Instance, id).await {
                Ok(o) if o.status == "running" => return Ok(o),
                Ok(o) if o.status == "stopped" => {
                    return Err(self
                        .failed_launch(region, id, "stopped before it ever ran")
                        .await)
                }
                Ok(o) if late => {
                    let why = format!("still {} after {:?}", o.status, self.settle);
                    return Err(self.failed_launch(region, id, &why).await);
                }
                Ok(_) => seen = true,
                Err(e) if e.kind == ErrorKind::NotFound && (seen || late) => {
                    let why = if seen {
                        "released by the cloud before it ran"
                    } else {
                        "never listed by DescribeInstances"
                    };
                    return Err(self.failed_launch(region, id, why).await);
                }
                // Eventually consistent reads: a fresh id may not show yet.
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    /// Releases an instance whose creation failed and returns the capacity
    /// error that reports it. If the release itself fails, that error is
    /// returned instead, so the create stays pending and is looked at again.
    async fn failed_launch(&self, region: &str, id: &str, why: &str) -> ProviderError {
        // DeleteInstances, Force=true: "Manually release the instance" is
        // one of the two documented ways out of SystemFailure.Delete.
        let mut p = Params::default();
        p.push("InstanceId.1", id);
        p.push("Force", "true");
        if let Err(e) = ok_if_gone(self.ecs(region, "DeleteInstances", &p).await) {
            return e;
        }
        ProviderError::new(
            ErrorKind::Capacity,
            format!(
                "instance {id} was accepted by RunInstances but its creation failed ({why}; \
                 ECS event SystemFailure.Delete: the zone could not supply it); it was released"
            ),
        )
        .with_code("SystemFailure.Delete")
    }

    async fn create_volume(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        let region = &req.scope.region;
        let a = &req.attrs;
        let size = attr_u64(a, "size_gb")?.ok_or_else(|| missing("volume", "size_gb"))?;
        let instance = reference(req, "instance")?;
        let category = disk_category(&attr_str(a, "volume_type")?.unwrap_or_else(|| "ssd".into()));
        // AttachDisk needs the instance Running (or Stopped): RunInstances
        // answers while it is still Pending.
        let inst = self
            .wait_for(region, ResourceKind::Instance, &instance, "running", |o| {
                o.status == "running" || o.status == "stopped"
            })
            .await?;
        let zone = match attr_str(a, "zone")? {
            Some(z) => z,
            None => inst
                .attrs
                .get("zone")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| missing("volume", "zone"))?,
        };
        // CreateDisk (ECS): ZoneId, Size, DiskCategory, DiskName,
        // ClientToken, Tag.N; answers DiskId.
        let mut p = Params::default();
        p.push("ZoneId", zone);
        p.push("Size", size.to_string());
        p.push("DiskCategory", category);
        p.push("DiskName", resource_name(&req.ownership));
        p.push("Description", description(&req.ownership));
        p.push("ClientToken", client_token(&req.ownership.token)?);
        p.tags(&creation_tags(
            &req.ownership,
            ResourceKind::Volume,
            &user_tags(a)?,
            &[],
        )?);
        let body = self.ecs(region, "CreateDisk", &p).await?;
        let disk = required(&body, "DiskId", "CreateDisk")?;
        // A retried create (same ClientToken) gets the same disk back, which
        // may already be attached.
        let d = self
            .wait_for(region, ResourceKind::Volume, &disk, "available", |o| {
                o.status != "creating"
            })
            .await?;
        if d.status != "in_use" {
            self.attach_disk(region, &disk, &instance).await?;
        }
        self.wait_for(region, ResourceKind::Volume, &disk, "in use", |o| {
            o.status == "in_use"
        })
        .await
    }

    /// AttachDisk (ECS): InstanceId, DiskId, DeleteWithInstance=false (the
    /// disk outlives its instance: DeleteInstances retains it).
    async fn attach_disk(
        &self,
        region: &str,
        disk: &str,
        instance: &str,
    ) -> Result<(), ProviderError> {
        let mut p = Params::default();
        p.push("InstanceId", instance);
        p.push("DiskId", disk);
        p.push("DeleteWithInstance", "false");
        self.ecs(region, "AttachDisk", &p).await?;
        Ok(())
    }

    /// DetachDisk (ECS) from the instance DescribeDisks names, then waits
    /// for `Available`. A disk that is gone or not attached is fine.
    async fn detach_disk(&self, region: &str, d: &Value) -> Result<(), ProviderError> {
        let id = text(d, "DiskId");
        let attached_to = text(d, "InstanceId");
        if attached_to.is_empty() {
            return Ok(());
        }
        let mut p = Params::default();
        p.push("InstanceId", attached_to);
        p.push("DiskId", id.clone());
        ok_if_gone(self.ecs(region, "DetachDisk", &p).await)?;
        match self
            .wait_for(region, ResourceKind::Volume, &id, "detached", |o| {
                o.status == "available"
            })
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn disk(&self, region: &str, id: &str) -> Result<Option<Value>, ProviderError> {
        let mut p = Params::default();
        p.push("DiskIds", json_array(&[id.to_string()]));
        Ok(self
            .describe_disks(region, &p)
            .await?
            .into_iter()
            .find(|d| text(d, "DiskId") == id))
    }

    // ----------------------------------------------------------------- delete

    async fn delete_volume(&self, region: &str, id: &str) -> Result<(), ProviderError> {
        let Some(d) = self.disk(region, id).await? else {
            return Ok(());
        };
        if !text(&d, "InstanceId").is_empty() {
            match self.detach_disk(region, &d).await {
                Ok(()) => {}
                Err(e) if e.kind == ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            }
            if self.disk(region, id).await?.is_none() {
                return Ok(());
            }
        }
        let mut p = Params::default();
        p.push("DiskId", id);
        ok_if_gone(self.ecs(region, "DeleteDisk", &p).await)
    }

    /// DeleteInstances (ECS API reference, help doc 126723,
    /// alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-deleteinstances) "releases one or
    /// more pay-as-you-go instances or expired subscription instances":
    /// `Force=true` releases a Running one, `TerminateSubscription=true` an
    /// expired subscription. Nothing releases an unexpired subscription
    /// (there is no `TerminateSubscribedInstance`), so for one of those
    /// gpuform stops its renewal (ModifyInstanceAutoRenewAttribute
    /// `RenewalStatus=NotRenewal`, help doc 52843) and refuses, saying when it ends. Plans
    /// refuse such a deletion before anything is destroyed
    /// ([`Provider::delete_refusal`]); this is the last guard.
    async fn delete_instance(&self, region: &str, id: &str) -> Result<(), ProviderError> {
        let mut p = Params::default();
        p.push("InstanceIds", json_array(&[id.to_string()]));
        let Some(i) = self
            .describe_instances(region, &p)
            .await?
            .into_iter()
            .find(|i| text(i, "InstanceId") == id)
        else {
            return Ok(());
        };
        if let Some(ends) = unexpired_subscription(&i, &now_minutes()) {
            let mut p = Params::default();
            p.push("InstanceId", id);
            p.push("RenewalStatus", "NotRenewal");
            ok_if_gone(
                self.ecs(region, "ModifyInstanceAutoRenewAttribute", &p)
                    .await,
            )?;
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "{}; its auto-renewal is now off",
                    subscription_refusal(id, &ends)
                ),
            ));
        }
        let mut p = Params::default();
        p.push("InstanceId.1", id);
        p.push("Force", "true");
        if text(&i, "InstanceChargeType") == "PrePaid" {
            p.push("TerminateSubscription", "true");
        }
        ok_if_gone(self.ecs(region, "DeleteInstances", &p).await)
    }

    async fn sync_tags(
        &self,
        region: &str,
        kind: ResourceKind,
        id: &str,
        new: &BTreeMap<String, String>,
    ) -> Result<(), ProviderError> {
        let (product, rtype) = match kind {
            ResourceKind::Network => (Product::Vpc, "VPC"),
            ResourceKind::Subnet => (Product::Vpc, "VSWITCH"),
            ResourceKind::Firewall => (Product::Ecs, "securitygroup"),
            ResourceKind::Instance => (Product::Ecs, "instance"),
            ResourceKind::Volume => (Product::Ecs, "disk"),
            ResourceKind::Placement => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    "Alibaba deployment sets carry no tags; change the spec's tags elsewhere",
                ))
            }
            ResourceKind::Bucket => return Err(buckets_unsupported()),
        };
        check_user_tags(new)?;
        let current = self.read_one(region, kind, id).await?;
        let have: BTreeMap<String, String> = current
            .attrs
            .get("tags")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let removed: Vec<&String> = have.keys().filter(|k| !new.contains_key(*k)).collect();
        let changed: Vec<(String, String)> = new
            .iter()
            .filter(|(k, v)| have.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !removed.is_empty() {
            // ECS UntagResources / VPC UnTagResources: ResourceType,
            // ResourceId.1, TagKey.N.
            let mut p = Params::default();
            p.push("ResourceType", rtype);
            p.push("ResourceId.1", id);
            for (i, k) in removed.iter().enumerate() {
                p.push(format!("TagKey.{}", i + 1), (*k).clone());
            }
            let action = if product == Product::Vpc {
                "UnTagResources"
            } else {
                "UntagResources"
            };
            self.client.call(product, region, action, &p.0).await?;
        }
        if !changed.is_empty() {
            // TagResources (ECS and VPC): ResourceType, ResourceId.1, Tag.N.
            let mut p = Params::default();
            p.push("ResourceType", rtype);
            p.push("ResourceId.1", id);
            p.tags(&changed);
            self.client
                .call(product, region, "TagResources", &p.0)
                .await?;
        }
        Ok(())
    }
}

#[async_trait]
impl Provider for AlibabaProvider {
    fn cloud(&self) -> Cloud {
        Cloud::Alibaba
    }

    fn label(&self) -> String {
        match self.client.endpoint() {
            Some(e) => format!("alibaba({})", e.authority),
            None => "alibaba".to_string(),
        }
    }

    fn rate_limit(&self) -> RateLimit {
        self.rate
    }

    async fn create(&self, req: &CreateRequest) -> Result<ObservedResource, ProviderError> {
        match req.kind {
            ResourceKind::Network => self.create_network(req).await,
            ResourceKind::Subnet => self.create_subnet(req).await,
            ResourceKind::Firewall => self.create_firewall(req).await,
            ResourceKind::Placement => self.create_placement(req).await,
            ResourceKind::Instance => self.create_instance(req).await,
            ResourceKind::Volume => self.create_volume(req).await,
            ResourceKind::Bucket => Err(buckets_unsupported()),
        }
    }

    async fn read(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        ids: &[String],
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        self.read_impl(&scope.region, kind, ids).await
    }

    async fn list_owned(
        &self,
        scope: &Scope,
        project: &str,
    ) -> Result<Vec<ObservedResource>, ProviderError> {
        let region = scope.region.as_str();
        let no_filter = Params::default();
        let (vpcs, vswitches, groups, sets, instances, disks) = tokio::try_join!(
            self.owned_of(region, project, Tagged::Vpc),
            self.owned_of(region, project, Tagged::VSwitch),
            self.owned_of(region, project, Tagged::Group),
            // No tag filter exists for deployment sets: page through the
            // region's sets and keep those whose description names the project.
            self.describe_deployment_sets(region, &no_filter),
            self.owned_of(region, project, Tagged::Instance),
            // Data and system disks in one listing: system disks give root_gb.
            self.owned_of(region, project, Tagged::Disk),
        )?;
        let mut out = Vec::new();
        out.extend(vpcs.iter().map(|v| observe_vpc(v, region)));
        out.extend(vswitches.iter().map(|v| observe_vswitch(v, region)));
        out.extend(self.observe_groups(region, groups).await?);
        out.extend(
            sets.iter()
                .map(|d| observe_deployment_set(d, region))
                .filter(|o| {
                    o.ownership
                        .as_ref()
                        .is_some_and(|own| own.project == project)
                }),
        );
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
        // stand-in or an API that ignores it cannot hand over others' resources.
        out.retain(|o| {
            o.ownership
                .as_ref()
                .is_some_and(|own| own.project == project)
        });
        Ok(out)
    }

    async fn update(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
        changes: &Attrs,
    ) -> Result<ObservedResource, ProviderError> {
        let region = scope.region.as_str();
        for key in changes.keys() {
            if !kind.is_updatable(key) {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("`{key}` of a {kind} cannot change in place; it needs a replacement"),
                ));
            }
        }
        if let Some(tags) = changes.get("tags") {
            let new = match tags {
                Value::Null => BTreeMap::new(),
                v => tags_from_value(v)?,
            };
            self.sync_tags(region, kind, id, &new).await?;
        }
        if let Some(ingress) = changes.get("ingress") {
            let mut a = Attrs::new();
            a.insert("ingress".into(), ingress.clone());
            let rules = ingress_rules(&a)?;
            self.sync_rules(region, id, &rules, false).await?;
        }
        if let Some(target) = changes.get("attached_to") {
            let d = self.disk(region, id).await?.ok_or_else(|| {
                ProviderError::new(ErrorKind::NotFound, format!("disk {id} does not exist"))
            })?;
            match target {
                Value::Null => self.detach_disk(region, &d).await?,
                Value::String(instance) if text(&d, "InstanceId") != *instance => {
                    self.detach_disk(region, &d).await?;
                    self.attach_disk(region, id, instance).await?;
                    self.wait_for(region, ResourceKind::Volume, id, "in use", |o| {
                        o.status == "in_use"
                    })
                    .await?;
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
            let size = size.as_u64().ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("volume size_gb {size} is not a size in GiB"),
                )
            })?;
            // ResizeDisk (ECS): DiskId, NewSize, Type=online (grow only).
            let mut p = Params::default();
            p.push("DiskId", id);
            p.push("NewSize", size.to_string());
            p.push("Type", "online");
            self.ecs(region, "ResizeDisk", &p).await?;
        }
        self.read_one(region, kind, id).await
    }

    fn delete_refusal(&self, observed: &ObservedResource) -> Option<String> {
        if observed.kind != ResourceKind::Instance {
            return None;
        }
        let ends = observed.attrs.get(SUBSCRIPTION_ENDS)?.as_str()?;
        (ends > now_minutes().as_str()).then(|| subscription_refusal(&observed.id, ends))
    }

    async fn delete(
        &self,
        scope: &Scope,
        kind: ResourceKind,
        id: &str,
    ) -> Result<(), ProviderError> {
        let region = scope.region.as_str();
        let mut p = Params::default();
        match kind {
            ResourceKind::Network => {
                p.push("VpcId", id);
                ok_if_gone(self.vpc(region, "DeleteVpc", &p).await)
            }
            ResourceKind::Subnet => {
                p.push("VSwitchId", id);
                ok_if_gone(self.vpc(region, "DeleteVSwitch", &p).await)
            }
            ResourceKind::Firewall => {
                p.push("SecurityGroupId", id);
                ok_if_gone(self.ecs(region, "DeleteSecurityGroup", &p).await)
            }
            ResourceKind::Placement => {
                p.push("DeploymentSetId", id);
                ok_if_gone(self.ecs(region, "DeleteDeploymentSet", &p).await)
            }
            ResourceKind::Instance => self.delete_instance(region, id).await,
            ResourceKind::Volume => self.delete_volume(region, id).await,
            ResourceKind::Bucket => Err(buckets_unsupported()),
        }
    }
}

/// Months of a reserved pricing model, as RunInstances takes them
/// (`PeriodUnit=Month`, `Period` 12 or 36).
fn subscription_months(pricing: &str) -> u32 {
    if pricing == "reserved-3y" {
        36
    } else {
        12
    }
}

// --------------------------------------------------------------------- params

/// RPC parameters in the order they are sent.
#[derive(Debug, Clone, Default)]
struct Params(Vec<(String, String)>);

impl Params {
    fn push(&mut self, k: impl Into<String>, v: impl Into<String>) {
        self.0.push((k.into(), v.into()));
    }

    /// `Tag.N.Key` / `Tag.N.Value`, N from 1.
    fn tags(&mut self, tags: &[(String, String)]) {
        for (i, (k, v)) in tags.iter().enumerate() {
            self.push(format!("Tag.{}.Key", i + 1), k.clone());
            self.push(format!("Tag.{}.Value", i + 1), v.clone());
        }
    }
}

/// The Describe filter for everything of a project.
fn tag_filter(project: &str) -> Params {
    let mut p = Params::default();
    p.tags(&[(OwnershipTags::PROJECT.to_string(), project.to_string())]);
    p
}

fn json_array(ids: &[String]) -> String {
    Value::Array(ids.iter().map(|i| Value::String(i.clone())).collect()).to_string()
}

// --------------------------------------------------------------------- tags

/// Ownership + kind + extra + user tags, as sent at creation.
fn creation_tags(
    own: &OwnershipTags,
    kind: ResourceKind,
    user: &BTreeMap<String, String>,
    extra: &[(&str, String)],
) -> Result<Vec<(String, String)>, ProviderError> {
    check_user_tags(user)?;
    let mut tags: Vec<(String, String)> = own
        .to_tags()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tags.push((KIND_TAG.to_string(), kind.as_str().to_string()));
    tags.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    tags.extend(user.iter().map(|(k, v)| (k.clone(), v.clone())));
    if tags.len() > MAX_TAGS {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "Alibaba Cloud takes at most {MAX_TAGS} tags per resource; gpuform uses {} and the spec adds {}",
                tags.len() - user.len(),
                user.len()
            ),
        ));
    }
    for (k, v) in &tags {
        if k.chars().count() > 128 || v.chars().count() > 128 {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("tag `{k}`: keys and values are at most 128 characters on Alibaba Cloud"),
            ));
        }
    }
    Ok(tags)
}

/// Tag rules of ECS and VPC (TagResources): keys not empty, not starting
/// with `aliyun` or `acs:`, no `http://` / `https://`; `gpuform:` is ours.
fn check_user_tags(user: &BTreeMap<String, String>) -> Result<(), ProviderError> {
    for (k, v) in user {
        let lk = k.to_ascii_lowercase();
        let bad = if k.is_empty() {
            Some("is empty")
        } else if lk.starts_with("gpuform:") {
            Some("uses the reserved prefix `gpuform:`")
        } else if lk.starts_with("aliyun") || lk.starts_with("acs:") {
            Some("starts with `aliyun` or `acs:`, which Alibaba Cloud reserves")
        } else if [k, v]
            .iter()
            .any(|s| s.contains("http://") || s.contains("https://"))
        {
            Some("contains http:// or https://, which Alibaba Cloud refuses")
        } else {
            None
        };
        if let Some(why) = bad {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("tag `{k}` {why}"),
            ));
        }
    }
    Ok(())
}

/// Tags of a Describe item: ECS answers `Tags.Tag[].TagKey/TagValue`, VPC
/// `Tags.Tag[].Key/Value`.
fn tags_of(item: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for t in items(item, "Tags", "Tag") {
        let k = t
            .get("TagKey")
            .or_else(|| t.get("Key"))
            .and_then(Value::as_str);
        let v = t
            .get("TagValue")
            .or_else(|| t.get("Value"))
            .and_then(Value::as_str);
        if let Some(k) = k {
            out.insert(k.to_string(), v.unwrap_or_default().to_string());
        }
    }
    out
}

fn ownership_of(tags: &BTreeMap<String, String>) -> Option<OwnershipTags> {
    OwnershipTags::from_tags(|k| tags.get(k).map(String::as_str))
}

fn user_tags_value(tags: &BTreeMap<String, String>) -> Value {
    Value::Object(
        tags.iter()
            .filter(|(k, _)| !k.starts_with("gpuform:"))
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn tags_from_value(v: &Value) -> Result<BTreeMap<String, String>, ProviderError> {
    let obj = v.as_object().ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!("`tags` must be a map of strings, got {v}"),
        )
    })?;
    obj.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("tag `{k}` must be a string, got {other}"),
            )),
        })
        .collect()
}

fn user_tags(a: &Attrs) -> Result<BTreeMap<String, String>, ProviderError> {
    match a.get("tags") {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(v) => tags_from_value(v),
    }
}

// --------------------------------------------------------------------- naming

/// A name Alibaba accepts for VPCs, vSwitches, groups, deployment sets,
/// instances and disks: 2-128 characters, starting with a letter, letters,
/// digits, `.` `_` `-` `:` only (deployment sets: no `.`).
fn resource_name(own: &OwnershipTags) -> String {
    let raw = format!("gpuform-{}-{}", own.project, own.address);
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(128);
    s
}

/// A free-text description: `gpuform <address>`.
fn description(own: &OwnershipTags) -> String {
    let mut d = format!("gpuform {} {}", own.project, own.address);
    d.retain(|c| !c.is_control());
    d.truncate(256);
    d
}

/// The ownership of a deployment set, in its description (at most 256
/// characters): `gpuform-owned project=P address=A token=T lineage=L`, each
/// value percent-encoded so spaces and `=` cannot confuse the parse.
pub fn placement_description(own: &OwnershipTags) -> Result<String, ProviderError> {
    let d = format!(
        "{PLACEMENT_MARK} project={} address={} token={} lineage={}",
        pct(&own.project),
        pct(&own.address),
        pct(&own.token),
        pct(&own.lineage)
    );
    if d.len() > 256 {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "the ownership of placement {} does not fit a deployment set description (256 characters); use a shorter project name",
                own.address
            ),
        ));
    }
    Ok(d)
}

/// Reads back what [`placement_description`] wrote.
pub fn parse_placement_description(d: &str) -> Option<OwnershipTags> {
    let rest = d.strip_prefix(PLACEMENT_MARK)?;
    let mut fields: HashMap<&str, String> = HashMap::new();
    for part in rest.split_whitespace() {
        let (k, v) = part.split_once('=')?;
        fields.insert(k, unpct(v)?);
    }
    Some(OwnershipTags {
        project: fields.remove("project")?,
        address: fields.remove("address")?,
        token: fields.remove("token")?,
        lineage: fields.remove("lineage")?,
    })
}

fn pct(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.:[]".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn unpct(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let h = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// ClientToken: at most 64 ASCII characters (every Create* page).
fn client_token(token: &str) -> Result<String, ProviderError> {
    if token.is_empty() || token.len() > 64 || !token.is_ascii() {
        return Err(ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "idempotency token `{token}` is not 1-64 ASCII characters, as ClientToken requires"
            ),
        ));
    }
    Ok(token.to_string())
}

// --------------------------------------------------------------------- images

/// Logical image names and the public image name prefix each maps to
/// (Alibaba's public images are named like `ubuntu_22_04_x64_20G_alibase_20240130.vhd`).
/// Alibaba's public images carry no NVIDIA driver: `-cuda` names map to the
/// plain OS image, and the driver/CUDA come from user_data (which is what the
/// console's "install GPU driver" option does too).
pub const LOGICAL_IMAGES: &[(&str, &str)] = &[
    ("ubuntu-22.04-cuda", "ubuntu_22_04_x64"),
    ("ubuntu-22.04", "ubuntu_22_04_x64"),
    ("ubuntu-24.04-cuda", "ubuntu_24_04_x64"),
    ("ubuntu-24.04", "ubuntu_24_04_x64"),
    ("ubuntu-20.04-cuda", "ubuntu_20_04_x64"),
    ("ubuntu-20.04", "ubuntu_20_04_x64"),
    ("alinux3", "aliyun_3_x64"),
    ("alibaba-cloud-linux-3", "aliyun_3_x64"),
];

pub fn image_name_prefix(logical: &str) -> Option<&'static str> {
    LOGICAL_IMAGES
        .iter()
        .find(|(n, _)| *n == logical)
        .map(|(_, p)| *p)
}

/// An Alibaba image id: a custom/shared image `m-…`, or a public image id
/// (`…_alibase_….vhd`).
pub fn is_image_id(s: &str) -> bool {
    s.starts_with("m-") || s.ends_with(".vhd")
}

// --------------------------------------------------------------------- rules

/// A neutral ingress rule.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    protocol: String,
    from: i64,
    to: i64,
    cidr: String,
}

fn ingress_rules(a: &Attrs) -> Result<Vec<Rule>, ProviderError> {
    let list = match a.get("ingress") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(l)) => l,
        Some(other) => {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("`ingress` must be a list, got {other}"),
            ))
        }
    };
    list.iter()
        .map(|r| {
            let bad = || {
                ProviderError::new(
                    ErrorKind::Invalid,
                    format!("ingress rule {r} needs protocol, from_port, to_port, cidr"),
                )
            };
            let protocol = r
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("tcp")
                .to_ascii_lowercase();
            if !["tcp", "udp", "icmp", "all"].contains(&protocol.as_str()) {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("ingress protocol `{protocol}` is not one of tcp, udp, icmp, all"),
                ));
            }
            Ok(Rule {
                protocol,
                from: r.get("from_port").and_then(Value::as_i64).ok_or_else(bad)?,
                to: r.get("to_port").and_then(Value::as_i64).ok_or_else(bad)?,
                cidr: r
                    .get("cidr")
                    .and_then(Value::as_str)
                    .ok_or_else(bad)?
                    .to_string(),
            })
        })
        .collect()
}

/// A permission as AuthorizeSecurityGroup takes it (`Permissions.N.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Perm {
    /// `tcp`, `udp`, `icmp`, `all` (the API is case-insensitive; lower case here).
    protocol: String,
    /// `from/to`; `-1/-1` for icmp and all.
    port_range: String,
    source_cidr: Option<String>,
    source_group: Option<String>,
    /// For icmp, the ports the spec gave (ICMP has none in the API), kept in
    /// the rule's description so that an unchanged rule reads back unchanged.
    description: String,
}

impl Perm {
    fn from_rule(r: &Rule) -> Perm {
        let portless = r.protocol == "icmp" || r.protocol == "all";
        Perm {
            protocol: r.protocol.clone(),
            port_range: if portless {
                "-1/-1".into()
            } else {
                format!("{}/{}", r.from, r.to)
            },
            source_cidr: Some(r.cidr.clone()),
            source_group: None,
            description: format!("gpuform ports={}-{}", r.from, r.to),
        }
    }

    fn from_api(v: &Value) -> Option<Perm> {
        let opt = |k: &str| Some(text(v, k)).filter(|s| !s.is_empty());
        if text(v, "Policy").eq_ignore_ascii_case("drop") {
            return None;
        }
        Some(Perm {
            protocol: text(v, "IpProtocol").to_ascii_lowercase(),
            port_range: text(v, "PortRange"),
            source_cidr: opt("SourceCidrIp"),
            source_group: opt("SourceGroupId"),
            description: text(v, "Description"),
        })
    }

    fn to_rule(&self) -> Option<Rule> {
        let cidr = self.source_cidr.clone()?;
        let (from, to) = match self
            .description
            .strip_prefix("gpuform ports=")
            .and_then(|p| p.split_once('-'))
        {
            Some((a, b)) if self.protocol == "icmp" || self.protocol == "all" => {
                (a.parse().ok()?, b.parse().ok()?)
            }
            _ => {
                let (a, b) = self.port_range.split_once('/')?;
                (a.parse().ok()?, b.parse().ok()?)
            }
        };
        Some(Rule {
            protocol: self.protocol.clone(),
            from,
            to,
            cidr,
        })
    }

    fn push(&self, p: &mut Params, n: usize) {
        let k = |f: &str| format!("Permissions.{n}.{f}");
        p.push(k("IpProtocol"), self.protocol.clone());
        p.push(k("PortRange"), self.port_range.clone());
        if let Some(c) = &self.source_cidr {
            p.push(k("SourceCidrIp"), c.clone());
        }
        if let Some(g) = &self.source_group {
            p.push(k("SourceGroupId"), g.clone());
        }
        p.push(k("Policy"), "accept");
        p.push(k("Description"), self.description.clone());
    }
}

// Perm equality for sync ignores the description only where the API may
// rewrite it; gpuform writes and compares its own, which is fine.

// --------------------------------------------------------------------- observe

fn observed(
    kind: ResourceKind,
    id: String,
    region: &str,
    tags: &BTreeMap<String, String>,
    mut attrs: Attrs,
    status: String,
) -> ObservedResource {
    attrs.insert("tags".into(), user_tags_value(tags));
    ObservedResource {
        kind,
        id,
        region: region.to_string(),
        ownership: ownership_of(tags),
        attrs,
        status,
    }
}

fn observe_vpc(v: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert("cidr".into(), json!(text(v, "CidrBlock")));
    observed(
        ResourceKind::Network,
        text(v, "VpcId"),
        region,
        &tags_of(v),
        a,
        text(v, "Status").to_ascii_lowercase(),
    )
}

fn observe_vswitch(v: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert("cidr".into(), json!(text(v, "CidrBlock")));
    a.insert("zone".into(), json!(text(v, "ZoneId")));
    observed(
        ResourceKind::Subnet,
        text(v, "VSwitchId"),
        region,
        &tags_of(v),
        a,
        text(v, "Status").to_ascii_lowercase(),
    )
}

/// Whether members of a group reach each other (`InnerAccessPolicy`,
/// case-insensitive; absent means the documented default, Accept).
fn inner_access_accepted(policy: &str) -> bool {
    policy.is_empty() || policy.eq_ignore_ascii_case("accept")
}

fn observe_group(g: &Value, rules: &[Value], inner: &str, region: &str) -> ObservedResource {
    let id = text(g, "SecurityGroupId");
    let perms: Vec<Perm> = rules.iter().filter_map(Perm::from_api).collect();
    let mut ingress: Vec<Value> = Vec::new();
    for p in &perms {
        if let Some(r) = p.to_rule() {
            let v = json!({"protocol": r.protocol, "from_port": r.from, "to_port": r.to, "cidr": r.cidr});
            if !ingress.contains(&v) {
                ingress.push(v);
            }
        }
    }
    // Members reach each other through InnerAccessPolicy=Accept, not a rule
    // (see `sync_rules`); when someone set it to Drop, say so in `ingress`,
    // so the plan updates the group (which sets it back).
    if !inner_access_accepted(inner) {
        ingress.push(json!({"missing": "all traffic between members (InnerAccessPolicy is Drop)"}));
    }
    let mut a = Attrs::new();
    a.insert("ingress".into(), Value::Array(ingress));
    observed(
        ResourceKind::Firewall,
        id,
        region,
        &tags_of(g),
        a,
        "available".into(),
    )
}

fn observe_deployment_set(d: &Value, region: &str) -> ObservedResource {
    let strategy = text(d, "DeploymentStrategy");
    let strategy = if strategy.is_empty() {
        text(d, "Strategy")
    } else {
        strategy
    };
    let mut a = Attrs::new();
    match strategy.as_str() {
        "LowLatency" => {
            a.insert("strategy".into(), json!("cluster"));
        }
        "Availability" => {
            a.insert("strategy".into(), json!("spread"));
        }
        _ => {}
    }
    let desc = text(d, "DeploymentSetDescription");
    let desc = if desc.is_empty() {
        text(d, "Description")
    } else {
        desc
    };
    ObservedResource {
        kind: ResourceKind::Placement,
        id: text(d, "DeploymentSetId"),
        region: region.to_string(),
        ownership: parse_placement_description(&desc),
        attrs: a,
        status: "available".into(),
    }
}

/// Observed attribute of a subscription instance: when its term ends
/// (DescribeInstances `ExpiredTime`, `yyyy-MM-ddTHH:mmZ` UTC).
pub const SUBSCRIPTION_ENDS: &str = "subscription_ends";

/// The current time as DescribeInstances writes ExpiredTime; such strings
/// order as the times they name.
fn now_minutes() -> String {
    let t = gpuform_signing::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}

/// The end of a subscription instance's term when it lies after `now`.
fn unexpired_subscription(i: &Value, now: &str) -> Option<String> {
    let ends = text(i, "ExpiredTime");
    (text(i, "InstanceChargeType") == "PrePaid" && ends.as_str() > now).then_some(ends)
}

fn subscription_refusal(id: &str, ends: &str) -> String {
    format!(
        "{id} is a subscription (reserved) instance paid until {ends}; Alibaba Cloud releases \
         subscription instances only once they have expired (DeleteInstances), so it cannot be \
         destroyed before then. gpuform made it without auto-renewal, so its term ends then; \
         stop renewal if it was turned on since (ModifyInstanceAutoRenewAttribute \
         RenewalStatus=NotRenewal, or the console's renewal settings), keep it in the spec until \
         that date, or leave it out with --target"
    )
}

fn observe_instance(i: &Value, region: &str, root_gb: Option<u64>) -> ObservedResource {
    let tags = tags_of(i);
    let mut a = Attrs::new();
    a.insert("instance_type".into(), json!(text(i, "InstanceType")));
    a.insert("zone".into(), json!(text(i, "ZoneId")));
    // The image asked for (logical name or id) while the instance still runs
    // the image gpuform resolved it to; the API's ImageId otherwise.
    let image = tags
        .get(IMAGE_TAG)
        .cloned()
        .unwrap_or_else(|| text(i, "ImageId"));
    a.insert("image".into(), json!(image));
    let charge = text(i, "InstanceChargeType");
    let spot = text(i, "SpotStrategy");
    let pricing = if charge == "PrePaid" {
        match tags.get(PRICING_TAG).map(String::as_str) {
            Some(p @ ("reserved-1y" | "reserved-3y")) => p.to_string(),
            _ => "reserved".to_string(),
        }
    } else if spot == "SpotAsPriceGo" || spot == "SpotWithPriceLimit" {
        "spot".to_string()
    } else {
        "on-demand".to_string()
    };
    a.insert("pricing".into(), json!(pricing));
    if charge == "PrePaid" {
        a.insert(SUBSCRIPTION_ENDS.into(), json!(text(i, "ExpiredTime")));
    }
    if let Some(gb) = root_gb {
        a.insert("root_gb".into(), json!(gb));
    }
    if let Some(r) = tags.get(RDMA_TAG) {
        a.insert("rdma".into(), json!(r == "true"));
    }
    observed(
        ResourceKind::Instance,
        text(i, "InstanceId"),
        region,
        &tags,
        a,
        text(i, "Status").to_ascii_lowercase(),
    )
}

fn observe_disk(d: &Value, region: &str) -> ObservedResource {
    let mut a = Attrs::new();
    a.insert("zone".into(), json!(text(d, "ZoneId")));
    if let Some(s) = d.get("Size").and_then(Value::as_u64) {
        a.insert("size_gb".into(), json!(s));
    }
    a.insert(
        "volume_type".into(),
        json!(volume_type(&text(d, "Category"))),
    );
    // DescribeDisks: InstanceId is the instance the disk is attached to,
    // set only while it is In_use (or Attaching).
    let status = text(d, "Status");
    let instance = text(d, "InstanceId");
    a.insert(
        "attached_to".into(),
        if matches!(status.as_str(), "In_use" | "Attaching") && !instance.is_empty() {
            json!(instance)
        } else {
            Value::Null
        },
    );
    observed(
        ResourceKind::Volume,
        text(d, "DiskId"),
        region,
        &tags_of(d),
        a,
        text(d, "Status").to_ascii_lowercase(),
    )
}

fn system_sizes(disks: &[Value]) -> HashMap<String, u64> {
    disks
        .iter()
        .filter(|d| text(d, "Type") == "system")
        .filter_map(|d| Some((text(d, "InstanceId"), d.get("Size")?.as_u64()?)))
        .filter(|(i, _)| !i.is_empty())
        .collect()
}

/// Neutral volume type → DiskCategory (CreateDisk).
fn disk_category(t: &str) -> String {
    match t {
        "ssd" => "cloud_essd".into(),
        "hdd" | "standard" => "cloud_efficiency".into(),
        other => other.to_string(),
    }
}

fn volume_type(category: &str) -> String {
    match category {
        "cloud_essd" => "ssd".into(),
        "cloud_efficiency" => "hdd".into(),
        other => other.to_string(),
    }
}

// --------------------------------------------------------------------- helpers

/// `body[outer][inner]` as a list, where the API reference documents that
/// list: an answer without `outer` (a 2xx from a throttling proxy, a
/// truncated body) is an error, never "nothing there" — read as empty, it
/// would make a refresh plan creates for what exists.
fn listed_items<'a>(
    body: &'a Value,
    outer: &str,
    inner: &str,
    action: &str,
) -> Result<Vec<&'a Value>, ProviderError> {
    if body.get(outer).is_none() {
        return Err(ProviderError::new(
            ErrorKind::Transient,
            format!("{action} answered without `{outer}`, which its API reference documents; not read as an empty list"),
        ));
    }
    Ok(items(body, outer, inner))
}

/// `body[outer][inner]` as a list (Alibaba wraps every list this way).
fn items<'a>(body: &'a Value, outer: &str, inner: &str) -> Vec<&'a Value> {
    match body.get(outer).and_then(|o| o.get(inner)) {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v @ Value::Object(_)) => vec![v],
        _ => Vec::new(),
    }
}

/// A field as text ("" when absent).
fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

fn required(body: &Value, key: &str, action: &str) -> Result<String, ProviderError> {
    Some(text(body, key))
        .filter(|s| !s.is_empty())
        .ok_or_else(|| empty_answer(action))
}

fn empty_answer(action: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Transient,
        format!("{action} answered without the id of what it made"),
    )
}

fn buckets_unsupported() -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        "buckets are not supported by the Alibaba Cloud provider yet (OSS is a separate API); \
         put the bucket on another cloud or create it outside gpuform",
    )
}

fn missing(kind: &str, attr: &str) -> ProviderError {
    ProviderError::new(ErrorKind::Invalid, format!("a {kind} needs `{attr}`"))
}

fn reference(req: &CreateRequest, role: &str) -> Result<String, ProviderError> {
    req.refs.get(role).cloned().ok_or_else(|| {
        ProviderError::new(
            ErrorKind::Invalid,
            format!(
                "{} {} needs a `{role}` reference",
                req.kind, req.ownership.address
            ),
        )
    })
}

fn ok_if_gone(r: Result<Value, ProviderError>) -> Result<(), ProviderError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
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

fn attr_u64(a: &Attrs, key: &str) -> Result<Option<u64>, ProviderError> {
    match a.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!("`{key}` must be a whole number, got {v}"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> OwnershipTags {
        OwnershipTags {
            project: "llm research".into(),
            address: "cluster.trainer.placement".into(),
            token: "gf-0123456789abcdef0123456789abcdef".into(),
            lineage: "5f0c2d3e-1111-2222-3333-444455556666".into(),
        }
    }

    #[test]
    fn placement_description_round_trips() {
        let d = placement_description(&own()).unwrap();
        assert!(d.len() <= 256 && d.starts_with(PLACEMENT_MARK));
        assert_eq!(parse_placement_description(&d), Some(own()));
        assert_eq!(parse_placement_description("someone else's set"), None);
    }

    #[test]
    fn tags_at_creation() {
        let mut user = BTreeMap::new();
        user.insert("team".to_string(), "ml".to_string());
        let t = creation_tags(
            &own(),
            ResourceKind::Instance,
            &user,
            &[(IMAGE_TAG, "ubuntu-22.04-cuda".into())],
        )
        .unwrap();
        assert_eq!(t.len(), 7);
        assert!(t.contains(&("gpuform:token".into(), own().token)));
        user.insert("gpuform:x".into(), "y".into());
        assert!(creation_tags(&own(), ResourceKind::Instance, &user, &[]).is_err());
        let mut many = BTreeMap::new();
        for i in 0..16 {
            many.insert(format!("k{i}"), "v".to_string());
        }
        assert!(creation_tags(&own(), ResourceKind::Network, &many, &[]).is_err());
    }

    #[test]
    fn names_images_tokens() {
        let n = resource_name(&own());
        assert!(n.starts_with("gpuform-llm-research-cluster-trainer-placement"));
        assert!(
            is_image_id("m-bp1abc") && is_image_id("ubuntu_22_04_x64_20G_alibase_20240130.vhd")
        );
        assert!(!is_image_id("ubuntu-22.04-cuda"));
        assert_eq!(
            image_name_prefix("ubuntu-22.04-cuda"),
            Some("ubuntu_22_04_x64")
        );
        assert!(client_token(&"x".repeat(65)).is_err());
        assert!(client_token("gf-1").is_ok());
    }

    #[test]
    fn rules_round_trip() {
        let r = Rule {
            protocol: "icmp".into(),
            from: 0,
            to: 0,
            cidr: "10.0.0.0/8".into(),
        };
        let p = Perm::from_rule(&r);
        assert_eq!(p.port_range, "-1/-1");
        assert_eq!(p.to_rule(), Some(r));
        let r = Rule {
            protocol: "tcp".into(),
            from: 22,
            to: 22,
            cidr: "0.0.0.0/0".into(),
        };
        assert_eq!(Perm::from_rule(&r).port_range, "22/22");
        assert_eq!(Perm::from_rule(&r).to_rule(), Some(r));
    }

    #[test]
    fn from_env_names_the_variables() {
        // Only asserts on the message: the variables may be set in a developer's shell.
        if std::env::var(ENV_ACCESS_KEY_ID).is_err() {
            let e = AlibabaProvider::from_env().unwrap_err();
            assert_eq!(e.kind, ErrorKind::Auth);
            assert!(
                e.message.contains(ENV_ACCESS_KEY_ID) && e.message.contains(ENV_ACCESS_KEY_SECRET)
            );
        }
    }
}
