//! `gpuform audit` and `gpuform gc` against moto's EC2 (scripts/moto.sh;
//! GPUFORM_TEST_MOTO_URL): instances and volumes made directly with boto3,
//! with and without gpuform's tags, running and stopped, attached and not.
//! Every call gpuform makes goes through a counting proxy, so the audit of
//! 1,000 instances can assert how many list calls it took. Each test works
//! in a moto account of its own: what other test binaries leave in moto
//! (buckets, instances) is not in its audit, nor in its count of calls.

use crate::moto;
use crate::support;

use moto::killing_proxy::Proxy;
use moto::{boto3_in, fresh_accounts, moto_url, Account};

use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;
use std::sync::atomic::Ordering;

/// gpuform with `account`'s keys.
fn gpuform(dir: &Path, account: &Account, args: &[&str]) -> Output {
    support::gpuform_cmd(dir, args)
        .envs(account.env())
        .env("AWS_REGION", "us-east-1")
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env_remove("AWS_ENDPOINT_URL")
        .output()
        .expect("run gpuform")
}

fn ok(dir: &Path, account: &Account, args: &[&str]) -> String {
    support::succeeded(&gpuform(dir, account, args), args)
}

/// A spec of project `project` in `region` whose AWS endpoint is `url`.
fn spec(project: &str, region: &str, url: &str) -> String {
    format!(
        "project: {project}\nendpoints:\n  aws: {url}\nclusters:\n  infer:\n    cloud: aws\n    region: {region}\n    nodes: 1\n    gpu: T4\n    image: amazon-linux-2023\n"
    )
}

/// A state of `project` recording one instance.
fn state(project: &str, lineage: &str, region: &str, address: &str, id: &str) -> Value {
    json!({
        "format_version": 1,
        "lineage": lineage,
        "serial": 3,
        "project": project,
        "resources": {
            address: {
                "kind": "instance",
                "provider": "aws",
                "region": region,
                "id": id,
                "attrs": {"instance_type": "g4dn.xlarge"},
                "token": "tok-managed"
            }
        }
    })
}

/// The ownership tags, as boto3 TagSpecifications.
fn tags_py(project: &str, address: &str, lineage: &str, token: &str) -> String {
    format!(
        "[{{'Key':'gpuform:project','Value':'{project}'}},{{'Key':'gpuform:address','Value':'{address}'}},{{'Key':'gpuform:lineage','Value':'{lineage}'}},{{'Key':'gpuform:token','Value':'{token}'}}]"
    )
}

fn by_id<'a>(rows: &'a Value, id: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {rows:#}"))
}

/// Instances of one region, made with boto3, then audited and collected.
#[test]
fn audit_then_gc_on_moto() {
    let region = "eu-west-1";
    let account = &fresh_accounts(1)[0];
    let project = format!("audit{}", std::process::id());
    let lineage = "11111111-1111-1111-1111-111111111111";
    let lost = "22222222-2222-2222-2222-222222222222";
    let script = format!(
        r#"
# What an earlier run left in this account (same process id, same moto) goes first.
old = [i['InstanceId'] for r in ec2.describe_instances(Filters=[{{'Name':'instance-state-name','Values':['pending','running','stopping','stopped']}}])['Reservations'] for i in r['Instances']]
if old: ec2.terminate_instances(InstanceIds=old)
for v in ec2.describe_volumes(Filters=[{{'Name':'status','Values':['available']}}])['Volumes']: ec2.delete_volume(VolumeId=v['VolumeId'])
ami = ec2.describe_images(Owners=['amazon'])['Images'][0]['ImageId']
def run(tags=None, spot=False):
    kw = dict(ImageId=ami, InstanceType='g4dn.xlarge', MinCount=1, MaxCount=1)
    if tags: kw['TagSpecifications'] = [{{'ResourceType':'instance','Tags':tags}}]
    if spot: kw['InstanceMarketOptions'] = {{'MarketType':'spot'}}
    return ec2.run_instances(**kw)['Instances'][0]['InstanceId']
unmanaged = run([{{'Key':'team','Value':'ml'}}])
managed = run({managed})
orphan = run({orphan})
ec2.stop_instances(InstanceIds=[orphan])
spot = run(spot=True)
loose = ec2.create_volume(AvailabilityZone='{region}a', Size=77)['VolumeId']
stray_vol = ec2.create_volume(AvailabilityZone='{region}a', Size=33, TagSpecifications=[{{'ResourceType':'volume','Tags':{stray_tags}}}])['VolumeId']
print(json.dumps(dict(unmanaged=unmanaged, managed=managed, orphan=orphan, spot=spot, loose=loose, stray_vol=stray_vol)))
"#,
        managed = tags_py(&project, "cluster.infer.node[0]", lineage, "tok-managed"),
        orphan = tags_py(&project, "cluster.infer.node[1]", lost, "tok-lost"),
        stray_tags = tags_py(&project, "cluster.infer.volume[1]", lost, "tok-vol"),
    );
    let ids = boto3_in(account, region, &script);
    let id = |k: &str| ids[k].as_str().unwrap().to_string();

    let proxy = Proxy::start(&moto_url());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), spec(&project, region, &proxy.url)).unwrap();
    std::fs::create_dir_all(d.join(".gpuform")).unwrap();
    std::fs::write(
        d.join(format!(".gpuform/{project}.state.json")),
        state(
            &project,
            lineage,
            region,
            "cluster.infer.node[0]",
            &id("managed"),
        )
        .to_string(),
    )
    .unwrap();

    let before = proxy.calls.load(Ordering::SeqCst);
    let r: Value =
        serde_json::from_str(&ok(d, account, &["audit", "spec.yaml", "--json"])).unwrap();
    // One DescribeInstances and one DescribeVolumes, a page each, and one
    // S3 ListBuckets filtered by the region (audit lists buckets too).
    assert_eq!(
        proxy.calls.load(Ordering::SeqCst) - before,
        3,
        "list calls of the audit"
    );
    let inst = &r["instances"];
    assert_eq!(by_id(inst, &id("unmanaged"))["owner"], "unmanaged");
    assert_eq!(by_id(inst, &id("managed"))["owner"], "managed");
    assert_eq!(by_id(inst, &id("managed"))["project"], project.as_str());
    assert_eq!(by_id(inst, &id("orphan"))["owner"], "orphaned");
    assert_eq!(by_id(inst, &id("orphan"))["state"], "stopped");
    assert_eq!(by_id(inst, &id("managed"))["state"], "running");
    assert_eq!(by_id(inst, &id("spot"))["pricing"], "spot");
    assert_eq!(by_id(inst, &id("unmanaged"))["pricing"], "on-demand");
    assert_eq!(by_id(inst, &id("unmanaged"))["gpu_model"], "T4");
    assert_eq!(by_id(inst, &id("unmanaged"))["hourly_usd"], 0.587);
    assert!(by_id(inst, &id("unmanaged"))["launch_time"].is_string());
    let vols = &r["volumes"];
    assert_eq!(by_id(vols, &id("loose"))["owner"], "unmanaged");
    assert_eq!(by_id(vols, &id("loose"))["size_gb"], 77);
    assert_eq!(by_id(vols, &id("stray_vol"))["owner"], "orphaned");
    // Attached root volumes are not listed as unattached.
    assert_eq!(vols.as_array().unwrap().len(), 2, "{vols:#}");
    let findings: Vec<(String, String)> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().into(),
                f["subject"].as_str().unwrap().into(),
            )
        })
        .collect();
    for want in [
        ("stopped-paying-for-disks", id("orphan")),
        ("orphaned", id("orphan")),
        ("unattached-volume", id("loose")),
        ("unattached-volume", id("stray_vol")),
    ] {
        let want = (want.0.to_string(), want.1);
        assert!(
            findings.contains(&want),
            "{want:?} missing from {findings:?}"
        );
    }
    // Stateless on-demand pool: the managed node is a spot candidate.
    assert!(
        findings.contains(&("spot-candidate".into(), format!("{project}/infer"))),
        "{findings:?}"
    );

    // gc: deletes the orphan and the stray volume, keeps the recorded
    // instance and everything untagged.
    let out = ok(
        d,
        account,
        &["gc", "spec.yaml", "--auto-approve", "--other-states"],
    );
    assert!(
        out.contains(&id("orphan")) && out.contains(&id("stray_vol")),
        "{out}"
    );
    let left = boto3_in(
        account,
        region,
        "r = ec2.describe_instances()['Reservations']\nv = ec2.describe_volumes()['Volumes']\nprint(json.dumps(dict(i={x['InstanceId']: x['State']['Name'] for res in r for x in res['Instances']}, v=[x['VolumeId'] for x in v])))",
    );
    let state_of = |k: &str| left["i"][id(k)].as_str().unwrap().to_string();
    assert_eq!(state_of("orphan"), "terminated");
    assert_eq!(state_of("managed"), "running");
    assert_eq!(state_of("unmanaged"), "running");
    assert_eq!(state_of("spot"), "running");
    let vols: Vec<&str> = left["v"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        vols.contains(&id("loose").as_str()),
        "untagged volume deleted"
    );
    assert!(
        !vols.contains(&id("stray_vol").as_str()),
        "stray volume kept"
    );
    let again = ok(
        d,
        account,
        &["gc", "spec.yaml", "--auto-approve", "--other-states"],
    );
    assert!(again.contains("Nothing to collect"), "{again}");
}

#[test]
fn an_audit_of_1000_instances_takes_a_handful_of_list_calls() {
    let region = "ap-southeast-1";
    let account = &fresh_accounts(1)[0];
    // What an earlier run left in this account (a run of a process with
    // the same id, on a moto server that outlived it) is terminated first.
    let made = boto3_in(
        account,
        region,
        "ids = [i['InstanceId'] for r in ec2.describe_instances(Filters=[{'Name':'instance-state-name','Values':['pending','running','stopping','stopped']}])['Reservations'] for i in r['Instances']]\nif ids: ec2.terminate_instances(InstanceIds=ids)\nfor v in ec2.describe_volumes(Filters=[{'Name':'status','Values':['available']}])['Volumes']: ec2.delete_volume(VolumeId=v['VolumeId'])\nami = ec2.describe_images(Owners=['amazon'])['Images'][0]['ImageId']\nr = ec2.run_instances(ImageId=ami, InstanceType='g4dn.xlarge', MinCount=1000, MaxCount=1000)\nprint(json.dumps(len(r['Instances'])))",
    );
    assert_eq!(made, 1000);
    let proxy = Proxy::start(&moto_url());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        spec("thousand", region, &proxy.url),
    )
    .unwrap();
    let r: Value = serde_json::from_str(&ok(
        dir.path(),
        account,
        &[
            "audit",
            "spec.yaml",
            "--json",
            "--cloud",
            "aws",
            "--region",
            region,
        ],
    ))
    .unwrap();
    let n = r["instances"].as_array().unwrap().len();
    assert_eq!(n, 1000, "instances listed");
    // DescribeInstances at 1,000 a page and DescribeVolumes at 500 a page
    // (1,000 root volumes): at most 2 + 3 calls, whatever moto pages.
    let calls = proxy.calls.load(Ordering::SeqCst);
    assert!(calls <= 5, "{calls} calls for {n} instances");
}

#[test]
fn no_credentials_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["audit", "--cloud", "aws", "--region", "us-east-1"];
    let out = support::gpuform_cmd(dir.path(), &args)
        .env("AWS_ENDPOINT_URL_EC2", moto_url())
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_PROFILE")
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"))
        .env("AWS_CONFIG_FILE", dir.path().join("none"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("listing everything in aws us-east-1"), "{e}");
    assert!(e.to_lowercase().contains("credential"), "{e}");
}
