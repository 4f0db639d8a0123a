"""Golden ACS3-HMAC-SHA256 (V3) requests from the official alibabacloud_ecs20140526 (Tea/Darabonba) SDK.
The SDK's default signature_algorithm is ACS3-HMAC-SHA256 (do_request path);
pass --v2 to force the legacy RPC HMAC-SHA1 path (Config.signature_algorithm='v2').
Cases: RunInstances (the original golden), DescribeInstances with Tag.1.Key/Tag.1.Value and an InstanceName
whose values need escapes (space, '*', '~', '/', ':', non-ASCII), DeleteInstances (repeat list InstanceId.N, Force).
Nothing leaves 127.0.0.1: protocol=http + http_proxy pointing at a local recorder.
"""
import base64, hashlib, hmac, json, os, sys, urllib.parse
from unittest import mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recorder import Recorder, header, dump

from alibabacloud_tea_openapi import models as open_api_models
from alibabacloud_tea_openapi.utils import Utils as OAUtils
from alibabacloud_ecs20140526.client import Client as EcsClient
from alibabacloud_ecs20140526 import models as ecs_models
from darabonba.runtime import RuntimeOptions

V2 = "--v2" in sys.argv
AK, SK = "YourAccessKeyId", "YourAccessKeySecret"
HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_UA = "AlibabaCloud (Linux; x86_64) Python/3.11.7 Core/0.4.3 TeaDSL/2"   # pinned: UA is a signed header

def enc(s): return urllib.parse.quote(s, safe="-_.~")

def record(out_stem, region, method_name, req, fixed_date, fixed_nonce, response):
    host = "ecs.%s.aliyuncs.com" % region
    rec = Recorder(response)
    cfg = open_api_models.Config(access_key_id=AK, access_key_secret=SK, region_id=region, endpoint=host,
                                 protocol="http", http_proxy=rec.url)
    if V2:
        cfg.signature_algorithm = "v2"
    client = EcsClient(cfg)
    with mock.patch.object(OAUtils, "get_timestamp", staticmethod(lambda: fixed_date)), \
         mock.patch.object(OAUtils, "get_user_agent", staticmethod(lambda ua=None: FIXED_UA)), \
         mock.patch.object(OAUtils, "get_nonce", staticmethod(lambda: fixed_nonce)):
        resp = getattr(client, method_name)(req, RuntimeOptions(autoretry=False))
    r = rec.requests[-1]
    rec.close()

    u = urllib.parse.urlsplit(r["target"])
    pairs = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
    if V2:   # RPC V2: Signature is a query parameter, string-to-sign is METHOD&%2F&enc(sorted query + form body)
        params = [(k, v) for k, v in pairs if k != "Signature"] + urllib.parse.parse_qsl(r["body"], keep_blank_values=True)
        cq = "&".join("%s=%s" % (enc(k), enc(v)) for k, v in sorted(params))
        sts = r["method"] + "&%2F&" + enc(cq)
        sig = base64.b64encode(hmac.new((SK + "&").encode(), sts.encode(), hashlib.sha1).digest()).decode()
        sdk_sig = dict(pairs)["Signature"]
        independent = {"string_to_sign": sts, "signature": sig}
    else:    # V3: canonical request over query + signed headers + sha256(body)
        cq = "&".join("%s=%s" % (enc(k), enc(v)) for k, v in sorted(pairs))
        # Verify like the gateway does: canonicalize exactly the headers named in SignedHeaders.
        signed = header(r, "Authorization").split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
        hs = {k.lower(): v.strip() for k, v in r["headers"] if k.lower() in signed}
        names = sorted(hs)
        canon = "\n".join([r["method"], u.path or "/", cq, "".join("%s:%s\n" % (n, hs[n]) for n in names),
                           ";".join(names), hashlib.sha256(r["body"].encode()).hexdigest()])
        sts = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canon.encode()).hexdigest()
        sig = hmac.new(SK.encode(), sts.encode(), hashlib.sha256).hexdigest()
        sdk_sig = header(r, "Authorization").rsplit("Signature=", 1)[1]
        independent = {"canonical_request": canon, "string_to_sign": sts, "signature": sig}
    out = {"inputs": {"access_key_id": AK, "access_key_secret": SK, "x-acs-date": fixed_date, "nonce": fixed_nonce,
                      "mode": "v2-rpc-hmac-sha1" if V2 else "v3-acs3-hmac-sha256"},
           "recorded_request": r, "independent": independent, "sdk_signature": sdk_sig, "match": sdk_sig == sig,
           "parsed_response": resp.body.to_map()}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    dump(os.path.join(HERE, "golden", "%s_%s.json" % (out_stem, "v2_teasdk" if V2 else "v3")), out)

# 1. RunInstances (unchanged original golden)
record("aliyun_ecs_runinstances", "cn-hangzhou", "run_instances_with_options",
       ecs_models.RunInstancesRequest(
           region_id="cn-hangzhou", zone_id="cn-hangzhou-i", instance_type="ecs.gn7i-c32g1.8xlarge",
           image_id="ubuntu_22_04_x64_20G_alibase_20240101.vhd", v_switch_id="vsw-example1",
           security_group_id="sg-example1", instance_name="gpuform-node", amount=2, min_amount=2,
           instance_charge_type="PostPaid", spot_strategy="SpotAsPriceGo", spot_duration=0,
           deployment_set_id="ds-example1", client_token="gpuform-0001-clienttoken", dry_run=True,
           system_disk=ecs_models.RunInstancesRequestSystemDisk(category="cloud_essd", size="100"),
           tag=[ecs_models.RunInstancesRequestTag(key="gpuform", value="test")]),
       "2023-10-26T10:22:32Z", "3156853299f313e23d1673dc12e1703d",
       b'{"RequestId":"req-1","InstanceIdSets":{"InstanceIdSet":["i-000001","i-000002"]}}')

# 2. DescribeInstances: tag filter and name with values needing percent-escapes
record("aliyun_ecs_describeinstances_tags", "cn-shanghai", "describe_instances_with_options",
       ecs_models.DescribeInstancesRequest(
           region_id="cn-shanghai", max_results=100, instance_name="gpu node*~/1:训练",
           tag=[ecs_models.DescribeInstancesRequestTag(key="gpuform-cluster", value="训练 集群*~"),
                ecs_models.DescribeInstancesRequestTag(key="gpuform:owner", value="a+b=c&d")]),
       "2024-03-09T16:00:00Z", "5f0c2d1e9a8b47c6b3d2e1f0a9b8c7d6",
       b'{"RequestId":"req-2","TotalCount":0,"Instances":{"Instance":[]}}')

# 3. DeleteInstances: repeat list InstanceId.N, Force
record("aliyun_ecs_deleteinstances", "cn-hangzhou", "delete_instances_with_options",
       ecs_models.DeleteInstancesRequest(
           region_id="cn-hangzhou", instance_id=["i-000001", "i-000002"], force=True,
           client_token="gpuform-0002-clienttoken"),
       "2024-07-03T09:46:40Z", "0123456789abcdef0123456789abcdef",
       b'{"RequestId":"req-3"}')
