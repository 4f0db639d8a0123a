"""Golden SDK-HMAC-SHA256 requests from the official huaweicloudsdkecs (ECS v1/v1.1).
Cases: CreateServers POST /v1.1/{project_id}/cloudservers (the original golden, with X-Client-Token),
ListServersDetails GET /v1/{project_id}/cloudservers/detail with query values needing escapes,
DeleteServers POST /v1/{project_id}/cloudservers/delete, ShowJob GET /v1/{project_id}/jobs/{job_id}.
Nothing leaves 127.0.0.1: http endpoint + HttpConfig proxy pointing at a local recorder;
project_id is given so no IAM lookup happens.
"""
import datetime as _dt, hashlib, hmac, json, os, sys, urllib.parse
from unittest import mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recorder import Recorder, header, dump

from huaweicloudsdkcore.auth.credentials import BasicCredentials
from huaweicloudsdkcore.http.http_config import HttpConfig
import huaweicloudsdkcore.signer.signer as hsigner
from huaweicloudsdkecs.v2 import EcsClient, model as m

AK, SK = "QTWAOYTTINDUT2QVKYUC", "MFyfvK41ba2giqM7Uio6PznpdUKGpownRZlmVmHc"
PROJECT = "77b6a44cba5143ab91d13ab9a8ff44fd"
HOST = "ecs.cn-north-4.myhuaweicloud.com"
HERE = os.path.dirname(os.path.abspath(__file__))

def enc(s): return urllib.parse.quote(s, safe="-_.~")

def record(out_name, method_name, req, fixed, response):
    class FixedDatetime(_dt.datetime):
        @classmethod
        def utcnow(cls): return fixed
    rec = Recorder(response)
    cfg = HttpConfig.get_default_config()
    cfg.proxy_protocol, cfg.proxy_host, cfg.proxy_port = "http", "127.0.0.1", rec.port
    cfg.retry_times = 0
    # User-Agent is a *signed* header in this SDK and by default embeds OS info + a random app UUID; pin it.
    cfg.user_agent = "gpuform-golden"
    client = (EcsClient.new_builder().with_http_config(cfg)
              .with_credentials(BasicCredentials(AK, SK, PROJECT))
              .with_endpoints(["http://" + HOST]).build())
    # HttpConfig.get_proxy() only fills the "https" key, so route plain http to the recorder explicitly
    client._http_client._proxy = {"http": rec.url, "https": rec.url}
    with mock.patch.object(hsigner, "datetime", FixedDatetime):
        resp = getattr(client, method_name)(req)
    r = rec.requests[-1]
    rec.close()

    # Independent stdlib re-computation using the SignedHeaders list the SDK declared
    u = urllib.parse.urlsplit(r["target"])
    auth = header(r, "Authorization")
    signed = auth.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    hs = {k.lower(): v.strip() for k, v in r["headers"] if k.lower() in signed}
    path = "/".join(enc(seg) for seg in urllib.parse.unquote(u.path).split("/"))
    path = path if path.endswith("/") else path + "/"
    cq = "&".join("%s=%s" % (enc(k), enc(v)) for k, v in sorted(urllib.parse.parse_qsl(u.query, keep_blank_values=True)))
    canon = "\n".join([r["method"], path, cq, "".join("%s:%s\n" % (n, hs[n]) for n in signed), ";".join(signed),
                       hashlib.sha256(r["body"].encode()).hexdigest() if r["body"] else hashlib.sha256(b"").hexdigest()])
    sts = "SDK-HMAC-SHA256\n%s\n%s" % (header(r, "X-Sdk-Date"), hashlib.sha256(canon.encode()).hexdigest())
    sig = hmac.new(SK.encode(), sts.encode(), hashlib.sha256).hexdigest()
    out = {"inputs": {"ak": AK, "sk": SK, "project_id": PROJECT, "x-sdk-date": fixed.strftime("%Y%m%dT%H%M%SZ")},
           "recorded_request": r, "independent": {"canonical_request": canon, "string_to_sign": sts, "signature": sig},
           "sdk_authorization": auth, "match": auth.endswith("Signature=" + sig),
           "parsed_response": resp.to_dict()}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    dump(os.path.join(HERE, "golden", out_name), out)

# 1. CreateServers (unchanged original golden)
server = m.PrePaidServer(
    image_ref="00000000-0000-0000-0000-000000000001", flavor_ref="p2s.2xlarge.8", name="gpuform-node",
    vpcid="vpc-0000-0001", nics=[m.PrePaidServerNic(subnet_id="subnet-0000-0001")],
    security_groups=[m.PrePaidServerSecurityGroup(id="sg-0000-0001")],
    root_volume=m.PrePaidServerRootVolume(volumetype="SSD", size=100), count=2,
    availability_zone="cn-north-4a",
    extendparam=m.PrePaidServerExtendParam(charging_mode="postPaid", market_type="spot"),
    osscheduler_hints=m.PrePaidServerSchedulerHints(group="sg-group-0001"))
record("huawei_ecs_createservers.json", "create_servers",
       m.CreateServersRequest(x_client_token="gpuform-0001-clienttoken",
                              body=m.CreateServersRequestBody(dry_run=True, server=server)),
       _dt.datetime(2019, 11, 15, 3, 36, 55),
       b'{"job_id":"job-1","serverIds":["srv-1","srv-2"]}')

# 2. ListServersDetails: GET with query values needing escapes (space, '*', '~', '/', ':', '=', non-ASCII)
record("huawei_ecs_listserversdetails_query.json", "list_servers_details",
       m.ListServersDetailsRequest(name="gpu node*~/训练", tags="gpuform-cluster=训练集群", not_tags="env=a b:c",
                                   limit=25, offset=1, status="ACTIVE", ip="10.0.0.1", enterprise_project_id="0"),
       _dt.datetime(2024, 3, 9, 16, 0, 0),
       b'{"count":0,"servers":[]}')

# 3. DeleteServers: POST /v1/{project_id}/cloudservers/delete
record("huawei_ecs_deleteservers.json", "delete_servers",
       m.DeleteServersRequest(body=m.DeleteServersRequestBody(
           delete_publicip=True, delete_volume=True,
           servers=[m.ServerId(id="srv-0000-0001"), m.ServerId(id="srv-0000-0002")])),
       _dt.datetime(2024, 7, 3, 9, 46, 40),
       b'{"job_id":"job-2"}')

# 4. ShowJob: GET /v1/{project_id}/jobs/{job_id}
record("huawei_ecs_showjob.json", "show_job",
       m.ShowJobRequest(job_id="ff80808288d41e1b018912c0a6e53e01"),
       _dt.datetime(2024, 12, 31, 23, 59, 59),
       b'{"job_id":"ff80808288d41e1b018912c0a6e53e01","job_type":"createServer","status":"SUCCESS"}')
