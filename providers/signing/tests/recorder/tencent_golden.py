"""Golden TC3-HMAC-SHA256 requests from the official tencentcloud-sdk-python.
Cases: CVM RunInstances (the original golden), CVM DescribeInstances with a tag filter whose value is
non-ASCII (训练集群) and a name filter with spaces/'*'/'~', CVM TerminateInstances, and VPC CreateVpc
(other service, non-ASCII name, timestamp one second before a UTC midnight).
Nothing leaves 127.0.0.1: the SDK talks plain HTTP to a local recording proxy.
Usage: venv/bin/python tencent_golden.py   -> writes golden/tencent_*.json
"""
import datetime, hashlib, hmac, json, os, sys, uuid
from unittest import mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recorder import Recorder, header, dump

from tencentcloud.common import credential
from tencentcloud.common.profile.client_profile import ClientProfile
from tencentcloud.common.profile.http_profile import HttpProfile
from tencentcloud.cvm.v20170312 import cvm_client, models
from tencentcloud.vpc.v20170312 import vpc_client, models as vpc_models
import tencentcloud.common.abstract_client as ac

SECRET_ID, SECRET_KEY = "AKIDEXAMPLE", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE"
HERE = os.path.dirname(os.path.abspath(__file__))

# Independent stdlib re-computation of the signature from the recorded bytes
def tc3(secret_key, ts, service, ctype, host, body):
    date = datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d")
    canon = "POST\n/\n\ncontent-type:%s\nhost:%s\n\ncontent-type;host\n%s" % (
        ctype, host, hashlib.sha256(body.encode()).hexdigest())
    sts = "TC3-HMAC-SHA256\n%d\n%s/%s/tc3_request\n%s" % (ts, date, service, hashlib.sha256(canon.encode()).hexdigest())
    k = hmac.new(("TC3" + secret_key).encode(), date.encode(), hashlib.sha256).digest()
    k = hmac.new(k, service.encode(), hashlib.sha256).digest()
    k = hmac.new(k, b"tc3_request", hashlib.sha256).digest()
    return canon, sts, hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()

def record(out_name, client_mod, client_cls, service, region, action, req, ts, response, parse):
    rec = Recorder(response)
    hp = HttpProfile(protocol="http", endpoint="%s.tencentcloudapi.com" % service, proxy=rec.url, reqMethod="POST")
    cp = ClientProfile(signMethod="TC3-HMAC-SHA256", httpProfile=hp)
    cp.disable_region_breaker = True
    client = getattr(client_mod, client_cls)(credential.Credential(SECRET_ID, SECRET_KEY), region, cp)
    with mock.patch.object(ac.time, "time", return_value=float(ts)), \
         mock.patch.object(ac.uuid, "uuid4", return_value=uuid.UUID("00000000-0000-4000-8000-000000000001")):
        resp = getattr(client, action)(req)  # sends to the local recorder only
    r = rec.requests[-1]
    rec.close()
    canon, sts, sig = tc3(SECRET_KEY, int(header(r, "X-TC-Timestamp")), service,
                          header(r, "Content-Type"), header(r, "Host"), r["body"])
    auth = header(r, "Authorization")
    out = {"inputs": {"secret_id": SECRET_ID, "secret_key": SECRET_KEY, "timestamp": ts, "region": region,
                      "service": service, "action": action, "version": "2017-03-12"},
           "recorded_request": r, "independent": {"canonical_request": canon, "string_to_sign": sts, "signature": sig},
           "sdk_authorization": auth, "match": auth.endswith("Signature=" + sig)}
    out.update(parse(resp))
    print(json.dumps(out, indent=2, ensure_ascii=False))
    dump(os.path.join(HERE, "golden", out_name), out)

def from_json(model, obj):
    model.from_json_string(json.dumps(obj))
    return model

# 1. RunInstances (unchanged original golden)
record("tencent_cvm_runinstances.json", cvm_client, "CvmClient", "cvm", "ap-guangzhou", "RunInstances",
       from_json(models.RunInstancesRequest(), {
           "InstanceChargeType": "SPOTPAID",
           "InstanceMarketOptions": {"MarketType": "spot", "SpotOptions": {"MaxPrice": "30.0", "SpotInstanceType": "one-time"}},
           "Placement": {"Zone": "ap-guangzhou-6", "ProjectId": 0},
           "InstanceType": "GT4.41XLARGE948",
           "ImageId": "img-eb30mz89",
           "SystemDisk": {"DiskType": "CLOUD_PREMIUM", "DiskSize": 100},
           "VirtualPrivateCloud": {"VpcId": "vpc-example1", "SubnetId": "subnet-example1"},
           "InstanceCount": 2,
           "InstanceName": "gpuform-node",
           "SecurityGroupIds": ["sg-example1"],
           "ClientToken": "gpuform-0001-clienttoken",
           "DisasterRecoverGroupIds": ["ps-example1"],
           "HpcClusterId": "hpc-example1",
           "DryRun": True,
       }), 1700000000,  # 2023-11-14T22:13:20Z
       b'{"Response":{"InstanceIdSet":["ins-00000001","ins-00000002"],"RequestId":"req-1"}}',
       lambda resp: {"parsed_response_instance_ids": resp.InstanceIdSet})

# 2. DescribeInstances: tag filter with a non-ASCII value, name filter with space, '*' and '~'
record("tencent_cvm_describeinstances_tagfilter.json", cvm_client, "CvmClient", "cvm", "ap-shanghai",
       "DescribeInstances",
       from_json(models.DescribeInstancesRequest(), {
           "Filters": [{"Name": "tag:gpuform-cluster", "Values": ["训练集群"]},
                       {"Name": "instance-name", "Values": ["gpu node*~1"]}],
           "Offset": 0, "Limit": 100}),
       1710000000,  # 2024-03-09T16:00:00Z
       b'{"Response":{"TotalCount":1,"InstanceSet":[{"InstanceId":"ins-00000001"}],"RequestId":"req-2"}}',
       lambda resp: {"parsed_response_instance_ids": [i.InstanceId for i in resp.InstanceSet]})

# 3. TerminateInstances
record("tencent_cvm_terminateinstances.json", cvm_client, "CvmClient", "cvm", "ap-guangzhou",
       "TerminateInstances",
       from_json(models.TerminateInstancesRequest(), {"InstanceIds": ["ins-00000001", "ins-00000002"]}),
       1720000000,  # 2024-07-03T09:46:40Z
       b'{"Response":{"RequestId":"req-3"}}',
       lambda resp: {"parsed_response_request_id": resp.RequestId})

# 4. VPC CreateVpc: other service in the credential scope, non-ASCII name, 23:59:59 UTC
record("tencent_vpc_createvpc.json", vpc_client, "VpcClient", "vpc", "ap-singapore", "CreateVpc",
       from_json(vpc_models.CreateVpcRequest(), {
           "VpcName": "训练网络 gpu*~", "CidrBlock": "10.8.0.0/16",
           "Tags": [{"Key": "gpuform-cluster", "Value": "训练集群"}]}),
       1735689599,  # 2024-12-31T23:59:59Z
       b'{"Response":{"Vpc":{"VpcId":"vpc-00000001"},"RequestId":"req-4"}}',
       lambda resp: {"parsed_response_vpc_id": resp.Vpc.VpcId})
