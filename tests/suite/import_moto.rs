//! `gpuform import` against moto's EC2 (scripts/moto.sh;
//! GPUFORM_TEST_MOTO_URL): a VPC, subnet, security group, two GPU instances
//! and their data volumes made with boto3, without gpuform's tags, adopted;
//! the plan is clean, a scale-up adds one node, destroy removes them all; a
//! kill after each call of the import (the counting proxy SIGKILLs gpuform
//! once moto has done the call), then the import again, gives the same spec
//! and state. Each run works in a moto account of its own.

use crate::moto;
use crate::support;

use moto::killing_proxy::Proxy;
use moto::{boto3_in, fresh_accounts, moto_url, Account};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const REGION: &str = "us-east-1";

/// What the other tool made: returns the ids by name.
const SETUP: &str = r#"
ami = ec2.describe_images(Owners=['amazon'])['Images'][0]['ImageId']
vpc = ec2.create_vpc(CidrBlock='10.20.0.0/16')['Vpc']['VpcId']
subnet = ec2.create_subnet(VpcId=vpc, CidrBlock='10.20.0.0/24', AvailabilityZone='us-east-1a')['Subnet']['SubnetId']
sg = ec2.create_security_group(GroupName='legacy-ml', Description='legacy', VpcId=vpc)['GroupId']
ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=[{'IpProtocol':'tcp','FromPort':22,'ToPort':22,'IpRanges':[{'CidrIp':'0.0.0.0/0'}]}])
out = dict(ami=ami, vpc=vpc, subnet=subnet, sg=sg, nodes=[], volumes=[])
for n in range(2):
    i = ec2.run_instances(ImageId=ami, InstanceType='g4dn.xlarge', MinCount=1, MaxCount=1, SubnetId=subnet,
        SecurityGroupIds=[sg], TagSpecifications=[{'ResourceType':'instance','Tags':[{'Key':'team','Value':'ml'}]}])['Instances'][0]['InstanceId']
    v = ec2.create_volume(AvailabilityZone='us-east-1a', Size=50, VolumeType='gp2')['VolumeId']
    ec2.attach_volume(VolumeId=v, InstanceId=i, Device='/dev/sdf')
    out['nodes'].append(i)
    out['volumes'].append(v)
print(json.dumps(out))
"#;

fn spec(url: &str) -> String {
    format!("# the ML team's machines\nproject: legacyml\nendpoints:\n  aws: {url}\n")
}

fn gpuform(dir: &Path, account: &Account, args: &[&str]) -> Command {
    let mut c = support::gpuform_cmd(dir, args);
    c.envs(account.env())
        .env("AWS_REGION", REGION)
        .env("GPUFORM_AWS_PLACEMENT_GROUPS", "off")
        .env_remove("AWS_ENDPOINT_URL");
    c
}

fn run(dir: &Path, account: &Account, args: &[&str]) -> Output {
    gpuform(dir, account, args).output().expect("run gpuform")
}

fn ok(dir: &Path, account: &Account, args: &[&str]) -> String {
    support::succeeded(&run(dir, account, args), args)
}

fn import_args(ids: &Value) -> Vec<String> {
    let mut a: Vec<String> = [
        "import",
        "spec.yaml",
        "--cloud",
        "aws",
        "--region",
        REGION,
        "--name",
        "ml",
        "--auto-approve",
        "-q",
    ]
    .map(String::from)
    .to_vec();
    for i in ids["nodes"].as_array().unwrap() {
        a.push("--id".into());
        a.push(i.as_str().unwrap().into());
    }
    a
}

fn strs(a: &[String]) -> Vec<&str> {
    a.iter().map(String::as_str).collect()
}

/// Spec and records with every id replaced by its role in the setup.
fn normalized(dir: &Path, ids: &Value) -> (String, String) {
    let mut spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    let state = std::fs::read_to_string(dir.join(".gpuform/legacyml.state.json")).unwrap();
    let mut state: Value = serde_json::from_str(&state).unwrap();
    // The private addresses moto hands out differ from account to account.
    for r in state["resources"].as_object_mut().unwrap().values_mut() {
        r.as_object_mut().unwrap().remove("reported");
    }
    let mut records = serde_json::to_string_pretty(&state["resources"]).unwrap();
    let mut names: Vec<(String, String)> = ["ami", "vpc", "subnet", "sg"]
        .iter()
        .map(|k| (ids[*k].as_str().unwrap().to_string(), k.to_string()))
        .collect();
    // Nodes by the order of their ids (the import's), each volume by its node's.
    let text = |v: &Value| v.as_str().unwrap().to_string();
    let mut nodes: Vec<(String, String)> = ids["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(ids["volumes"].as_array().unwrap())
        .map(|(n, v)| (text(n), text(v)))
        .collect();
    nodes.sort();
    for (k, (node, volume)) in nodes.into_iter().enumerate() {
        names.push((node, format!("node{k}")));
        names.push((volume, format!("volume{k}")));
    }
    // The proxy's port differs from run to run.
    let endpoint = spec
        .lines()
        .find(|l| l.trim_start().starts_with("aws: http"))
        .map(str::to_string);
    if let Some(e) = endpoint {
        spec = spec.replace(&e, "  aws: <endpoint>");
    }
    for (id, name) in names {
        spec = spec.replace(&id, &format!("<{name}>"));
        records = records.replace(&id, &format!("<{name}>"));
    }
    (spec, records)
}

fn setup(account: &Account) -> Value {
    boto3_in(account, REGION, SETUP)
}

#[test]
fn import_boto3_made_instances_then_plan_clean_scale_up_and_destroy() {
    let Some(url) = support::server_url("GPUFORM_TEST_MOTO_URL", "scripts/moto.sh") else {
        return;
    };
    assert_eq!(url, moto_url());
    let account = &fresh_accounts(1)[0];
    let ids = setup(account);
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    std::fs::write(dir.join("spec.yaml"), spec(&url)).unwrap();

    ok(dir, account, &strs(&import_args(&ids)));
    let text = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    assert!(
        text.starts_with("# the ML team's machines\nproject: legacyml\n"),
        "{text}"
    );
    for line in [
        "  ml:",
        "    cloud: aws",
        "    zones: [\"us-east-1a\"]",
        "    nodes: 2",
        "    gpu: \"T4:1\"",
        "    driver: none",
        "    disk: {root_gb: 8, data_gb: 50}",
        "    cidr: \"10.20.0.0/16\"",
        "      - {protocol: tcp, ports: \"22\", cidr: \"0.0.0.0/0\"}",
        "    tags: {\"team\": \"ml\"}",
    ] {
        assert!(text.lines().any(|l| l == line), "`{line}` not in:\n{text}");
    }
    assert!(
        text.contains(&format!("    image: \"{}\"", ids["ami"].as_str().unwrap())),
        "{text}"
    );
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(".gpuform/legacyml.state.json")).unwrap(),
    )
    .unwrap();
    let r = &state["resources"];
    assert_eq!(r["cluster.ml.network"]["id"], ids["vpc"]);
    assert_eq!(r["cluster.ml.subnet[us-east-1a]"]["id"], ids["subnet"]);
    assert_eq!(r["cluster.ml.firewall"]["id"], ids["sg"]);
    // Nodes in the order of their ids, each with its own volume.
    let first = if ids["nodes"][0].as_str() < ids["nodes"][1].as_str() {
        0
    } else {
        1
    };
    assert_eq!(r["cluster.ml.node[0]"]["id"], ids["nodes"][first]);
    assert_eq!(r["cluster.ml.node[1]"]["id"], ids["nodes"][1 - first]);
    assert_eq!(r["cluster.ml.volume[0]"]["id"], ids["volumes"][first]);
    // What the spec cannot say is kept, not fought: the subnet's range,
    // the volume type (gp2 is no neutral type; a gp3 would read as `ssd`),
    // the group without the members' rule.
    assert_eq!(
        r["cluster.ml.subnet[us-east-1a]"]["kept"],
        serde_json::json!(["cidr"])
    );
    assert_eq!(
        r["cluster.ml.volume[0]"]["kept"],
        serde_json::json!(["volume_type"])
    );
    assert_eq!(
        r["cluster.ml.firewall"]["kept"],
        serde_json::json!(["ingress"])
    );
    // The ownership tags, seen by boto3.
    let tags = boto3_in(
        account,
        REGION,
        "print(json.dumps({t['ResourceId']: t['Value'] for t in ec2.describe_tags(Filters=[{'Name':'key','Values':['gpuform:address']}])['Tags']}))",
    );
    assert_eq!(
        tags[ids["nodes"][first].as_str().unwrap()],
        "cluster.ml.node[0]"
    );
    assert_eq!(tags[ids["vpc"].as_str().unwrap()], "cluster.ml.network");
    assert_eq!(tags.as_object().unwrap().len(), 7, "{tags:#}");

    let plan = run(dir, account, &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "clean after import:\n{}",
        String::from_utf8_lossy(&plan.stdout)
    );

    // Scale up: one node and its volume, nothing else.
    std::fs::write(
        dir.join("spec.yaml"),
        text.replace("    nodes: 2", "    nodes: 3"),
    )
    .unwrap();
    let p: Value =
        serde_json::from_str(&ok(dir, account, &["plan", "spec.yaml", "--json"])).unwrap();
    let changed: Vec<String> = p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["action"] != "no-op")
        .map(|c| {
            format!(
                "{} {}",
                c["action"].as_str().unwrap(),
                c["address"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        changed,
        vec!["create cluster.ml.node[2]", "create cluster.ml.volume[2]"]
    );
    ok(
        dir,
        account,
        &["apply", "spec.yaml", "--auto-approve", "-q"],
    );
    let plan = run(dir, account, &["plan", "spec.yaml", "--detailed-exitcode"]);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );

    ok(
        dir,
        account,
        &["destroy", "spec.yaml", "--auto-approve", "-q"],
    );
    let left = boto3_in(
        account,
        REGION,
        r#"
live = [i['InstanceId'] for r in ec2.describe_instances(Filters=[{'Name':'instance-state-name','Values':['pending','running','stopping','stopped']}])['Reservations'] for i in r['Instances']]
vols = [v['VolumeId'] for v in ec2.describe_volumes()['Volumes'] if v['State'] not in ('deleting', 'deleted') and not v['Attachments']]
vpcs = [v['VpcId'] for v in ec2.describe_vpcs()['Vpcs'] if not v.get('IsDefault')]
sgs = [g['GroupId'] for g in ec2.describe_security_groups()['SecurityGroups'] if g['GroupName'] == 'legacy-ml']
print(json.dumps(dict(live=live, vols=vols, vpcs=vpcs, sgs=sgs)))
"#,
    );
    assert_eq!(
        left,
        serde_json::json!({"live": [], "vols": [], "vpcs": [], "sgs": []}),
        "destroy removes everything imported and added"
    );
}

#[test]
fn a_kill_after_each_import_call_then_import_again_gives_the_same_spec_and_state() {
    let Some(url) = support::server_url("GPUFORM_TEST_MOTO_URL", "scripts/moto.sh") else {
        return;
    };
    let proxy = Proxy::start(&url);
    let mut accounts = moto::accounts();
    // Uninterrupted, for reference.
    let account = accounts.next().unwrap();
    let ids = setup(&account);
    let w = tempfile::tempdir().unwrap();
    std::fs::write(w.path().join("spec.yaml"), spec(&proxy.url)).unwrap();
    ok(w.path(), &account, &strs(&import_args(&ids)));
    let want = normalized(w.path(), &ids);

    let mut n = 1;
    loop {
        let account = accounts.next().unwrap();
        let ids = setup(&account);
        let w = tempfile::tempdir().unwrap();
        let dir = w.path();
        std::fs::write(dir.join("spec.yaml"), spec(&proxy.url)).unwrap();
        let args = import_args(&ids);
        let finished = proxy.run_armed(n, gpuform(dir, &account, &strs(&args)), "import");
        if finished.is_some() {
            assert!(n > 10, "an import makes more than {n} calls");
            break;
        }
        ok(dir, &account, &strs(&args));
        assert_eq!(
            normalized(dir, &ids),
            want,
            "killed after call {n}, then run again"
        );
        let plan = run(dir, &account, &["plan", "spec.yaml", "--detailed-exitcode"]);
        assert_eq!(
            plan.status.code(),
            Some(0),
            "after kill at {n}: {}",
            String::from_utf8_lossy(&plan.stdout)
        );
        n += 1;
    }
}
