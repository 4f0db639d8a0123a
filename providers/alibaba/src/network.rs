//! Networks (VPC `CreateVpc`), subnets (VPC `CreateVSwitch`) and firewalls
//! (ECS security groups and their inbound rules).

use crate::client::{required, text, Params};
use crate::observe::{drops_traffic, inner_access_accepted, Perm};
use crate::tags::naming;
use crate::AlibabaProvider;
use async_trait::async_trait;
use gpuform_provider::ok_if_gone;
use gpuform_provider::Result;
use gpuform_provider::{
    Create, ErrorKind, FirewallSpec, IngressRule, NetworkApi, NetworkSpec, ObservedResource,
    ResourceKind, Scope, SubnetSpec, Update,
};
use serde_json::Value;

impl AlibabaProvider {
    /// A VPC API create of a network (CreateVpc) or a subnet
    /// (CreateVSwitch): `p` plus the name, description, ClientToken and
    /// tags; the create is asynchronous (Creating → Available), so it waits.
    async fn create_in_vpc<T>(
        &self,
        req: &Create<T>,
        kind: ResourceKind,
        mut p: Params,
    ) -> Result<ObservedResource> {
        let region = req.region();
        // The action, its name parameter and the id it answers.
        let (action, name_key, id_key) = if kind == ResourceKind::Network {
            ("CreateVpc", "VpcName", "VpcId")
        } else {
            ("CreateVSwitch", "VSwitchName", "VSwitchId")
        };
        naming(&mut p, name_key, req, kind, &[])?;
        let body = self.vpc(region, action, &p).await?;
        let id = required(&body, id_key, action)?;
        self.wait_for(region, kind, &id, "available", |o| o.status == "available")
            .await
    }

    /// Lets all traffic out again: revokes the egress rules that drop
    /// traffic (someone else's; gpuform writes none), by their
    /// SecurityGroupRuleId — RevokeSecurityGroupEgress, ECS API reference
    /// (help.aliyun.com/document_detail/25561): SecurityGroupId,
    /// SecurityGroupRuleId.N. A rule already gone answers
    /// InvalidSecurityGroupRule.RuleNotExist: what was wanted.
    async fn open_egress(&self, region: &str, group: &str, egress: &[Value]) -> Result<()> {
        let drops: Vec<String> = egress
            .iter()
            .filter(|r| drops_traffic(r))
            .map(|r| text(r, "SecurityGroupRuleId"))
            .collect();
        for chunk in drops.chunks(100) {
            let mut p = Params::one("SecurityGroupId", group);
            for (n, id) in chunk.iter().enumerate() {
                p.push(format!("SecurityGroupRuleId.{}", n + 1), id.clone());
            }
            match self.ecs(region, "RevokeSecurityGroupEgress", &p).await {
                Err(e) if e.code.as_deref() == Some("InvalidSecurityGroupRule.RuleNotExist") => {}
                r => {
                    r?;
                }
            }
        }
        Ok(())
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
        rules: &[IngressRule],
        fresh: bool,
    ) -> Result<()> {
        let current: Vec<Value> = if fresh {
            Vec::new()
        } else {
            let current = self.group_rules(region, group).await?;
            if !inner_access_accepted(&current.inner) {
                // ModifySecurityGroupPolicy (ECS): SecurityGroupId, InnerAccessPolicy.
                let mut p = Params::one("SecurityGroupId", group);
                p.push("InnerAccessPolicy", "Accept");
                self.ecs(region, "ModifySecurityGroupPolicy", &p).await?;
            }
            self.open_egress(region, group, &current.egress).await?;
            current.ingress
        };
        let want: Vec<Perm> = rules.iter().map(Perm::from_rule).collect();
        let have: Vec<Perm> = current.iter().filter_map(Perm::from_api).collect();
        let add: Vec<&Perm> = want.iter().filter(|w| !have.contains(w)).collect();
        let remove: Vec<&Perm> = have.iter().filter(|h| !want.contains(h)).collect();
        for chunk in remove.chunks(100) {
            match self
                .ecs(region, "RevokeSecurityGroup", &Perm::params(group, chunk))
                .await
            {
                Ok(_) => {}
                Err(e)
                    if e.kind == ErrorKind::NotFound
                        && e.code.as_deref() != Some("InvalidSecurityGroupId.NotFound") => {}
                Err(e) => return Err(e),
            }
        }
        for chunk in add.chunks(100) {
            self.ecs(
                region,
                "AuthorizeSecurityGroup",
                &Perm::params(group, chunk),
            )
            .await?;
        }
        Ok(())
    }
}

#[async_trait]
impl NetworkApi for AlibabaProvider {
    async fn create_network(&self, req: &Create<NetworkSpec>) -> Result<ObservedResource> {
        // CreateVpc (VPC 2016-04-28): CidrBlock, VpcName, Description,
        // ClientToken, Tag.N.Key/Value; answers VpcId.
        let p = Params::one("CidrBlock", req.spec.cidr.clone());
        self.create_in_vpc(req, ResourceKind::Network, p).await
    }

    async fn create_subnet(&self, req: &Create<SubnetSpec>) -> Result<ObservedResource> {
        let s = &req.spec;
        // CreateVSwitch (VPC 2016-04-28): VpcId, ZoneId, CidrBlock,
        // VSwitchName, Description, ClientToken, Tag.N; answers VSwitchId.
        let mut p = Params::one("VpcId", s.network.clone());
        p.push("ZoneId", s.zone.clone());
        p.push("CidrBlock", s.cidr.clone());
        self.create_in_vpc(req, ResourceKind::Subnet, p).await
    }

    async fn create_firewall(&self, req: &Create<FirewallSpec>) -> Result<ObservedResource> {
        let region = req.region();
        // CreateSecurityGroup (ECS): VpcId, SecurityGroupName, Description,
        // SecurityGroupType, ClientToken, Tag.N; answers SecurityGroupId.
        let mut p = Params::one("VpcId", req.spec.network.clone());
        p.push("SecurityGroupType", "normal");
        naming(
            &mut p,
            "SecurityGroupName",
            req,
            ResourceKind::Firewall,
            &[],
        )?;
        let body = self.ecs(region, "CreateSecurityGroup", &p).await?;
        let id = required(&body, "SecurityGroupId", "CreateSecurityGroup")?;
        // Members reach each other without a rule: a new basic group's
        // InnerAccessPolicy is Accept (see `sync_rules`). A crash between
        // these two calls leaves a tagged group without the spec's rules:
        // adoption finds it, its observed `ingress` differs from the
        // desired one, and the next plan updates it in place.
        // Bare: the rules come by update_ingress (the engine's split create).
        if !req.spec.bare {
            self.sync_rules(region, &id, &req.spec.ingress, true)
                .await?;
        }
        self.read_one(region, ResourceKind::Firewall, &id).await
    }

    /// See [`gpuform_provider::CloudDriver::update_ingress`].
    async fn update_ingress(&self, u: &Update<'_, [IngressRule]>) -> Result<()> {
        let (region, current, want) = (u.region(), u.current, u.want);
        self.sync_rules(region, &current.id, want, false).await
    }

    async fn delete_firewall(&self, scope: &Scope, id: &str) -> Result<()> {
        let p = Params::one("SecurityGroupId", id);
        ok_if_gone(self.ecs(&scope.region, "DeleteSecurityGroup", &p).await)
    }

    async fn delete_network(&self, scope: &Scope, id: &str) -> Result<()> {
        let p = Params::one("VpcId", id);
        ok_if_gone(self.vpc(&scope.region, "DeleteVpc", &p).await)
    }

    /// DeleteVSwitch, then waits until the vSwitch is gone: the delete is
    /// asynchronous (VPC API reference "DeleteVSwitch": `Pending` while it
    /// is deleted, gone once deleted), and until then it holds its CIDR
    /// block and its VPC — a failover's next-zone vSwitch with the same
    /// range would be refused (InvalidCidrBlock.Overlapped), and so would
    /// DeleteVpc. A vSwitch already being deleted (IncorrectVSwitchStatus)
    /// is waited for the same way.
    async fn delete_subnet(&self, scope: &Scope, id: &str) -> Result<()> {
        let region = scope.region.as_str();
        let p = Params::one("VSwitchId", id);
        match self.vpc(region, "DeleteVSwitch", &p).await {
            Ok(_) => {}
            Err(e) if e.code.as_deref() == Some("IncorrectVSwitchStatus") => {}
            Err(e) => return ok_if_gone::<()>(Err(e)),
        }
        self.wait_gone(region, ResourceKind::Subnet, id).await
    }
}
