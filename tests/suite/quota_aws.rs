//! Issue 31: the AWS provider reads EC2's GPU quotas through Service Quotas
//! (`ComputeApi::quota`), against the capacity stand-in
//! (`gpuform_standins::aws_capacity`) in front of moto, which has no EC2
//! quotas: the limit is what the stand-in was told, the use is the vCPUs of
//! the account's running instances of the family and market, made by a
//! gpuform apply through the stand-in (which forwards EC2 to moto). A bad
//! signature is refused by the stand-in's own SigV4 verifier; a denied read
//! is the permission (`auth`) kind. Start moto with `scripts/moto.sh PORT`
//! and set GPUFORM_TEST_MOTO_URL (the tests that need no moto run without).

use crate::moto::{self, boto3_in, capacity};
use crate::support;

use capacity::quotas::{G_VT_ON_DEMAND, G_VT_SPOT, P_ON_DEMAND, P_SPOT};
use capacity::AwsCapacity;
use gpuform_aws::AwsProvider;
use gpuform_provider::{ErrorKind, Provider, QuotaMarket, QuotaReading, QuotaUnit, Scope};
use std::path::Path;

fn moto_url() -> Option<String> {
    support::server_url(
        "GPUFORM_TEST_MOTO_URL",
        "scripts/test.sh starts moto and sets it",
    )
}

fn scope(region: &str) -> Scope {
    Scope {
        region: region.into(),
    }
}

/// The provider at the stand-in, signing with these keys.
async fn provider(standin: &AwsCapacity, keys: (&str, &str, Option<&str>)) -> AwsProvider {
    AwsProvider::from_keys(Some(standin.endpoint()), keys.0, keys.1, keys.2)
        .await
        .expect("aws provider")
        .with_placement_groups(false)
}

async fn quota(p: &AwsProvider, itype: &str, market: QuotaMarket) -> Option<QuotaReading> {
    p.quota(&scope("us-east-1"), itype, market)
        .await
        .unwrap_or_else(|e| panic!("quota of {itype} ({market:?}): {e}"))
}

/// The vCPUs of a type as moto's DescribeInstanceTypes says (boto3: an
/// oracle that is not the code under test).
fn vcpus(account: &moto::Account, itype: &str) -> u64 {
    let v = boto3_in(
        account,
        "us-east-1",
        &format!("print(json.dumps(ec2.describe_instance_types(InstanceTypes=['{itype}'])['InstanceTypes'][0]['VCpuInfo']['DefaultVCpus']))"),
    );
    v.as_u64().expect("a vCPU count")
}

/// One on-demand A100 node (p4d.24xlarge) and two spot T4 nodes
/// (g4dn.xlarge), through the stand-in.
fn spec(project: &str, endpoint: &str) -> String {
    format!(
        "project: {project}\nendpoints:\n  aws: {endpoint}\nclusters:\n  train:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a]\n    nodes: 1\n    gpu: A100-40GB:8\n    image: amazon-linux-2023\n  infer:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a]\n    nodes: 2\n    gpu: T4\n    pricing: spot\n    image: amazon-linux-2023\n"
    )
}

fn apply(dir: &Path, account: &moto::Account) {
    let args = ["apply", "spec.yaml", "--auto-approve"];
    let mut c = support::gpuform_cmd(dir, &args);
    c.envs(account.env())
        .env("AWS_REGION", "us-east-1")
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env("GPUFORM_AWS_SETTLE_MS", "0")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_PROFILE");
    support::succeeded(&c.output().expect("run gpuform"), &args);
}

#[tokio::test(flavor = "multi_thread")]
async fn quotas_read_the_limit_set_and_the_use_of_instances_gpuform_made() {
    let Some(moto_url) = moto_url() else { return };
    // An account of its own: moto's default one holds other tests' instances.
    let account = moto::fresh_accounts(1).pop().expect("an account");
    let standin = capacity::in_front_of(&moto_url, &[&account]);
    standin.set_quota("us-east-1", P_ON_DEMAND, 384);
    standin.set_quota("us-east-1", G_VT_SPOT, 64);
    // Another region's value is not this one's.
    standin.set_quota("us-west-2", G_VT_ON_DEMAND, 1000);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        spec("quota-read", &standin.endpoint()),
    )
    .unwrap();
    apply(dir.path(), &account);
    assert!(
        standin.forwarded() > 0 && standin.refused() == 0,
        "the apply went through the stand-in: {} forwarded, {} refused",
        standin.forwarded(),
        standin.refused()
    );

    let keys = (
        account.access_key_id.as_str(),
        account.secret_access_key.as_str(),
        Some(account.session_token.as_str()),
    );
    let p = provider(&standin, keys).await;
    // The plan of the apply may have read quotas too: count from here.
    let asked_before = standin.answered("GetServiceQuota");
    let p4d = vcpus(&account, "p4d.24xlarge");
    let g4dn = vcpus(&account, "g4dn.xlarge");

    let on_demand_p = quota(&p, "p4d.24xlarge", QuotaMarket::OnDemand)
        .await
        .expect("P has a quota");
    assert_eq!(
        on_demand_p,
        QuotaReading {
            code: Some(P_ON_DEMAND.into()),
            name: "Running On-Demand P instances".into(),
            unit: QuotaUnit::Vcpus,
            limit: Some(384),
            used: p4d,
            raise: format!("aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {P_ON_DEMAND} --desired-value N --region us-east-1"),
        }
    );
    // Another P type shares the family's quota and use; reserved launches
    // are on-demand ones.
    let p5 = quota(&p, "p5.48xlarge", QuotaMarket::Reserved)
        .await
        .expect("P has a quota");
    assert_eq!((p5.limit, p5.used), (Some(384), p4d));

    // The spot nodes count against the G and VT spot quota only.
    let spot_g = quota(&p, "g6e.xlarge", QuotaMarket::Spot)
        .await
        .expect("G has a quota");
    assert_eq!(
        (spot_g.code.as_deref(), spot_g.limit, spot_g.used),
        (Some(G_VT_SPOT), Some(64), 2 * g4dn)
    );
    let on_demand_g = quota(&p, "g4dn.xlarge", QuotaMarket::OnDemand)
        .await
        .expect("G has a quota");
    assert_eq!(
        (
            on_demand_g.code.as_deref(),
            on_demand_g.limit,
            on_demand_g.used
        ),
        (Some(G_VT_ON_DEMAND), Some(0), 0)
    );
    let spot_p = quota(&p, "p4d.24xlarge", QuotaMarket::Spot)
        .await
        .expect("P has a quota");
    assert_eq!((spot_p.code.as_deref(), spot_p.used), (Some(P_SPOT), 0));
    assert_eq!(standin.answered("GetServiceQuota") - asked_before, 5);

    // A family without a GPU quota asks nothing.
    let before = standin.requests();
    assert_eq!(quota(&p, "m7i.large", QuotaMarket::OnDemand).await, None);
    assert_eq!(standin.requests(), before);
}

/// Keys the stand-in does not accept, or accepts with another secret: its
/// verifier refuses both, EC2 and Service Quotas alike, before anything
/// reaches moto (none runs behind it here).
#[tokio::test]
async fn a_bad_signature_is_refused_by_the_standin() {
    let standin = AwsCapacity::start("http://127.0.0.1:9");
    let wrong = provider(&standin, ("testing", "not-the-secret", None)).await;

    let e = wrong
        .quota(&scope("us-east-1"), "p5.48xlarge", QuotaMarket::OnDemand)
        .await
        .expect_err("a bad signature is refused");
    assert_eq!(
        (e.kind, e.code.as_deref()),
        (ErrorKind::Auth, Some("InvalidSignatureException")),
        "{e}"
    );
    let e = wrong
        .list_owned(&scope("us-east-1"), "quota-sig")
        .await
        .expect_err("a bad signature is refused");
    assert_eq!(
        (e.kind, e.code.as_deref()),
        (ErrorKind::Auth, Some("SignatureDoesNotMatch")),
        "{e}"
    );
    let stranger = provider(&standin, ("AKIDSTRANGER", "testing", None)).await;
    let e = stranger
        .list_owned(&scope("us-east-1"), "quota-sig")
        .await
        .expect_err("an unknown key is refused");
    assert_eq!(
        (e.kind, e.code.as_deref()),
        (ErrorKind::Auth, Some("AuthFailure")),
        "{e}"
    );
    assert!(!e.to_string().contains("not-the-secret"), "{e}");
    // (list_owned's other Describe calls may still be arriving: counts
    // only grow from here.)
    assert!(standin.refused() >= 3);
    assert_eq!(standin.forwarded(), 0);
    assert_eq!(standin.answered("GetServiceQuota"), 0);

    // The right secret passes the same verifier: the quota is answered by
    // the stand-in, the use it then reads is forwarded to a moto that is
    // not there (a transient error, not a refusal).
    let right = provider(&standin, ("testing", "testing", None)).await;
    let e = right
        .quota(&scope("us-east-1"), "p5.48xlarge", QuotaMarket::OnDemand)
        .await
        .expect_err("no moto behind the stand-in");
    assert_eq!(e.kind, ErrorKind::Transient, "{e}");
    assert_eq!(standin.answered("GetServiceQuota"), 1);
    assert!(standin.forwarded() >= 1);
}

/// Without `servicequotas:GetServiceQuota` the read fails with the
/// permission kind, its code and a hint naming the permission.
#[tokio::test]
async fn a_denied_quota_read_is_the_permission_kind() {
    let standin = AwsCapacity::start("http://127.0.0.1:9");
    standin.deny_quotas(true);
    let p = provider(&standin, ("testing", "testing", None)).await;
    let e = p
        .quota(&scope("us-east-1"), "g5.xlarge", QuotaMarket::OnDemand)
        .await
        .expect_err("denied");
    assert_eq!(
        (e.kind, e.code.as_deref()),
        (ErrorKind::Auth, Some("AccessDeniedException")),
        "{e}"
    );
    assert!(e.message.contains("servicequotas:GetServiceQuota"), "{e}");
    assert_eq!(standin.answered("GetServiceQuota"), 1);
    assert_eq!(standin.refused(), 0);
}
