"""Golden legacy RPC (V2, SignatureVersion=1.0, HMAC-SHA1) requests from the official
aliyun-python-sdk-core + aliyun-python-sdk-ecs (AcsClient + RunInstancesRequest / DescribeInstancesRequest).
Cases: RunInstances (the original golden) and DescribeInstances with tag/name values needing escapes.
Nothing leaves 127.0.0.1: protocol http + proxy pointing at a local recorder.
"""
import base64, hashlib, hmac, json, os, sys, urllib.parse
from unittest import mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recorder import Recorder, header, dump

from aliyunsdkcore.client import AcsClient
from aliyunsdkcore.utils import parameter_helper
from aliyunsdkcore.auth.composer import rpc_signature_composer as rpc
from aliyunsdkecs.request.v20140526.RunInstancesRequest import RunInstancesRequest
from aliyunsdkecs.request.v20140526.DescribeInstancesRequest import DescribeInstancesRequest

AK, SK = "testid", "testsecret"
HERE = os.path.dirname(os.path.abspath(__file__))

def enc(s): return urllib.parse.quote(s, safe="-_.~")

def record(out_name, region, req, fixed_ts, fixed_nonce, response):
    rec = Recorder(response)
    client = AcsClient(AK, SK, region, auto_retry=False, proxy={"http": rec.url, "https": rec.url})
    req.set_endpoint("ecs.%s.aliyuncs.com" % region)
    req.set_protocol_type("http")
    req.set_accept_format("json")
    with mock.patch.object(rpc.helper, "get_iso_8061_date", lambda: fixed_ts), \
         mock.patch.object(rpc.helper, "get_uuid", lambda: fixed_nonce):
        body = client.do_action_with_exception(req)
    r = rec.requests[-1]
    rec.close()
    u = urllib.parse.urlsplit(r["target"])
    pairs = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
    params = [(k, v) for k, v in pairs if k != "Signature"] + urllib.parse.parse_qsl(r["body"], keep_blank_values=True)
    cq = "&".join("%s=%s" % (enc(k), enc(v)) for k, v in sorted(params))
    sts = r["method"] + "&%2F&" + enc(cq)
    sig = base64.b64encode(hmac.new((SK + "&").encode(), sts.encode(), hashlib.sha1).digest()).decode()
    sdk_sig = dict(pairs)["Signature"]
    out = {"inputs": {"access_key_id": AK, "access_key_secret": SK, "Timestamp": fixed_ts, "SignatureNonce": fixed_nonce},
           "recorded_request": r, "independent": {"string_to_sign": sts, "signature": sig},
           "sdk_signature": sdk_sig, "match": sdk_sig == sig, "response": json.loads(body)}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    dump(os.path.join(HERE, "golden", out_name), out)

# 1. RunInstances (unchanged original golden)
req = RunInstancesRequest()
req.set_ZoneId("cn-hangzhou-i"); req.set_InstanceType("ecs.gn7i-c32g1.8xlarge")
req.set_ImageId("ubuntu_22_04_x64_20G_alibase_20240101.vhd"); req.set_VSwitchId("vsw-example1")
req.set_SecurityGroupId("sg-example1"); req.set_InstanceName("gpuform-node")
req.set_Amount(2); req.set_MinAmount(2); req.set_InstanceChargeType("PostPaid")
req.set_SpotStrategy("SpotAsPriceGo"); req.set_DeploymentSetId("ds-example1")
req.set_ClientToken("gpuform-0001-clienttoken"); req.set_DryRun(True)
req.set_SystemDiskCategory("cloud_essd"); req.set_SystemDiskSize(100)
record("aliyun_ecs_runinstances_v2_legacy_sdk.json", "cn-hangzhou", req,
       "2016-02-23T12:46:24Z", "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
       b'{"RequestId":"req-1","InstanceIdSets":{"InstanceIdSet":["i-000001","i-000002"]}}')

# 2. DescribeInstances with values needing escapes (space, '*', '~', '/', ':', '+', '=', '&', non-ASCII)
req = DescribeInstancesRequest()
req.set_InstanceName("gpu node*~/1:训练")
req.set_MaxResults(100)
req.set_Tags([{"Key": "gpuform-cluster", "Value": "训练 集群*~"}, {"Key": "gpuform:owner", "Value": "a+b=c&d"}])
record("aliyun_ecs_describeinstances_tags_v2_legacy_sdk.json", "cn-shanghai", req,
       "2024-03-09T16:00:00Z", "6a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d",
       b'{"RequestId":"req-2","TotalCount":0,"Instances":{"Instance":[]}}')
