"""Golden Alibaba OSS requests from the official `oss2` SDK, signed with V4
(OSS4-HMAC-SHA256, region cn-hangzhou) and with V1 (`OSS AccessKeyId:Signature`, HMAC-SHA1).

Cases (each once per signature version): create bucket (StorageClass body), put tagging,
put versioning, put lifecycle, put encryption, list objects with query, delete bucket,
delete one object (a key needing escapes) and delete a batch of objects.
Nothing leaves 127.0.0.1: plain-http endpoint + `proxies=` pointing at the local recorder.
Pinned: `datetime.utcnow` in oss2.auth (V4 date), `oss2.utils.http_date` (the Date header),
the User-Agent (it embeds the host's platform; it is not signed by either version).
Writes golden/oss_<case>_v4.json and golden/oss_<case>_v1.json.
"""
import base64, datetime as _dt, email.utils, hashlib, hmac, json, os, sys, urllib.parse
from unittest import mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recorder import Recorder, header, dump

import oss2
import oss2.auth, oss2.http, oss2.utils
from oss2.models import (BucketCreateConfig, Tagging, TaggingRule, BucketVersioningConfig, BucketLifecycle,
                         LifecycleRule, StorageTransition, NoncurrentVersionExpiration, ServerSideEncryptionRule)

# Fake keys (never valid anywhere).
AK, SK = "LTAI5tGpuformGoldenKey01", "GpuformGoldenSecretNotARealKey0123456789"
REGION = "cn-hangzhou"
ENDPOINT = "http://oss-cn-hangzhou.aliyuncs.com"
BUCKET = "gpuform-datasets-01"
HERE = os.path.dirname(os.path.abspath(__file__))
UA = "aliyun-sdk-python/2.19.1(gpuform-golden)"
OBJECT_KEY = "checkpoints/run 1/训练 a+b~.pt"

# The sub-resources V1 puts into the canonicalized resource (the SDK's own list, checked below).
V1_SUBRESOURCES = {"acl", "uploads", "location", "cors", "logging", "website", "referer", "lifecycle", "delete",
                   "append", "tagging", "objectMeta", "uploadId", "partNumber", "security-token", "position",
                   "img", "style", "styleName", "replication", "replicationProgress", "replicationLocation",
                   "cname", "bucketInfo", "comp", "qos", "live", "status", "vod", "startTime", "endTime",
                   "symlink", "x-oss-process", "response-content-type", "response-content-language",
                   "response-expires", "response-cache-control", "response-content-disposition",
                   "response-content-encoding", "udf", "udfName", "udfImage", "udfId", "udfImageDesc",
                   "udfApplication", "udfApplicationLog", "restore", "callback", "callback-var", "policy",
                   "encryption", "versions", "versioning", "versionId", "requestPayment", "x-oss-request-payer",
                   "sequential", "inventory", "inventoryId", "continuation-token", "asyncFetch", "worm", "wormId",
                   "wormExtend", "withHashContext", "x-oss-enable-md5", "x-oss-enable-sha1",
                   "x-oss-enable-sha256", "x-oss-hash-ctx", "x-oss-md5-ctx", "transferAcceleration",
                   "regionList", "cloudboxes", "x-oss-ac-source-ip", "x-oss-ac-subnet-mask", "x-oss-ac-vpc-id",
                   "x-oss-ac-forward-allow", "metaQuery", "resourceGroup", "rtc", "stat", "objectInfo", "link",
                   "group", "qosInfo", "publicAccessBlock"}


def enc(s, slash=False):
    return urllib.parse.quote(s, safe="-_.~" + ("/" if slash else ""))


def split_target(target):
    u = urllib.parse.urlsplit(target)
    return u.hostname, urllib.parse.unquote(u.path), urllib.parse.parse_qsl(u.query, keep_blank_values=True)


def bucket_and_key(host, path):
    """Virtual-host style: the bucket is the host's first label, the key the path without '/'."""
    if host.startswith(BUCKET + "."):
        return BUCKET, path[1:]
    return None, path[1:]


def independent_v4(r):
    host, path, query = split_target(r["target"])
    bucket, key = bucket_and_key(host, path)
    uri = enc("/" + bucket + "/" + key if bucket else "/", slash=True)
    q = "&".join(enc(k) + ("=" + enc(v) if v else "") for k, v in sorted((enc(k), v) for k, v in query)
                 for k in [urllib.parse.unquote(k)])
    auth = header(r, "Authorization")
    additional = [h for f in auth.split(", ") if f.startswith("AdditionalHeaders=")
                  for h in f.split("=", 1)[1].split(";")]
    signed = sorted((k.lower(), v) for k, v in r["headers"]
                    if k.lower().startswith("x-oss-") or k.lower() in ("content-type", "content-md5")
                    or k.lower() in additional)
    canon = "\n".join([r["method"], uri, q, "".join("%s:%s\n" % kv for kv in signed), ";".join(additional),
                       header(r, "x-oss-content-sha256") or "UNSIGNED-PAYLOAD"])
    dt = header(r, "x-oss-date")
    scope = "%s/%s/oss/aliyun_v4_request" % (dt[:8], REGION)
    sts = "OSS4-HMAC-SHA256\n%s\n%s\n%s" % (dt, scope, hashlib.sha256(canon.encode()).hexdigest())
    k = ("aliyun_v4" + SK).encode()
    for part in (dt[:8], REGION, "oss", "aliyun_v4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return {"canonical_request": canon, "string_to_sign": sts, "signature": sig}


def independent_v1(r):
    host, path, query = split_target(r["target"])
    bucket, key = bucket_and_key(host, path)
    oss_headers = sorted((k.lower(), v) for k, v in r["headers"] if k.lower().startswith("x-oss-"))
    sub = sorted((k, v) for k, v in query if k in V1_SUBRESOURCES)
    resource = ("/" + bucket + "/" + key if bucket else "/") + \
        ("?" + "&".join(k + ("=" + v if v else "") for k, v in sub) if sub else "")
    sts = "\n".join([r["method"], header(r, "Content-MD5") or "", header(r, "Content-Type") or "",
                     header(r, "Date") or "", "".join("%s:%s\n" % kv for kv in oss_headers) + resource])
    sig = base64.b64encode(hmac.new(SK.encode(), sts.encode(), hashlib.sha1).digest()).decode()
    return {"string_to_sign": sts, "signature": sig}


def record(name, call, fixed, version, response=b""):
    rec = Recorder(response, content_type="application/xml")
    auth = oss2.AuthV4(AK, SK) if version == "v4" else oss2.Auth(AK, SK)
    bucket = oss2.Bucket(auth, ENDPOINT, BUCKET, region=REGION, proxies={"http": rec.url, "https": rec.url})
    class FixedDatetime(_dt.datetime):
        @classmethod
        def utcnow(cls): return fixed
    http_date = email.utils.formatdate(fixed.replace(tzinfo=_dt.timezone.utc).timestamp(), usegmt=True)
    with mock.patch.object(oss2.auth, "datetime", FixedDatetime), \
         mock.patch.object(oss2.utils, "http_date", lambda timeval=None: http_date), \
         mock.patch.object(oss2.http, "USER_AGENT", UA):
        try:
            call(bucket)
        except (oss2.exceptions.OssError, SyntaxError):
            pass  # the canned answer may not parse as this call's result; the request is what counts
    r = rec.requests[-1]
    rec.close()
    auth_value = header(r, "Authorization")
    ind = independent_v4(r) if version == "v4" else independent_v1(r)
    if version == "v4":
        matched = auth_value.split("Signature=", 1)[1].split(",")[0] == ind["signature"]
        inputs = {"access_key_id": AK, "access_key_secret": SK, "region": REGION, "bucket": BUCKET,
                  "x-oss-date": fixed.strftime("%Y%m%dT%H%M%SZ")}
    else:
        matched = auth_value == "OSS %s:%s" % (AK, ind["signature"])
        inputs = {"access_key_id": AK, "access_key_secret": SK, "bucket": BUCKET, "date": http_date}
    out = {"inputs": inputs, "recorded_request": r, "independent": ind,
           "sdk_authorization": auth_value, "match": matched}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    dump(os.path.join(HERE, "golden", "oss_%s_%s.json" % (name, version)), out)


lifecycle = BucketLifecycle([LifecycleRule(
    "gpuform-archive", "checkpoints/", status=LifecycleRule.ENABLED,
    storage_transitions=[StorageTransition(days=30, storage_class=oss2.BUCKET_STORAGE_CLASS_ARCHIVE)],
    noncurrent_version_expiration=NoncurrentVersionExpiration(noncurrent_days=14))])
sse = ServerSideEncryptionRule()
sse.sse_algorithm = oss2.SERVER_SIDE_ENCRYPTION_AES256
tagging = Tagging(TaggingRule())
tagging.tag_set.add("gpuform-owner", "proj-训练 a+b")
tagging.tag_set.add("gpuform-cluster", "trainer")
versioning = BucketVersioningConfig()
versioning.status = oss2.BUCKET_VERSIONING_ENABLE

CASES = [
    ("createbucket", lambda b: b.create_bucket(oss2.BUCKET_ACL_PRIVATE,
                                               BucketCreateConfig(oss2.BUCKET_STORAGE_CLASS_IA)),
     _dt.datetime(2024, 3, 9, 16, 0, 0)),
    ("putbuckettagging", lambda b: b.put_bucket_tagging(tagging), _dt.datetime(2024, 3, 9, 16, 0, 1)),
    ("putbucketversioning", lambda b: b.put_bucket_versioning(versioning), _dt.datetime(2024, 7, 3, 9, 46, 40)),
    ("putbucketlifecycle", lambda b: b.put_bucket_lifecycle(lifecycle), _dt.datetime(2024, 7, 3, 9, 46, 41)),
    ("putbucketencryption", lambda b: b.put_bucket_encryption(sse), _dt.datetime(2024, 12, 31, 23, 59, 59)),
    ("listobjects", lambda b: b.list_objects_v2(prefix="checkpoints/run 1/训练", delimiter="/", max_keys=50,
                                                continuation_token="ck*~+="),
     _dt.datetime(2025, 1, 1, 0, 0, 0)),
    ("deletebucket", lambda b: b.delete_bucket(), _dt.datetime(2025, 2, 28, 12, 30, 5)),
    # Emptying a bucket (force_destroy): one object with a key needing escapes, then a batch.
    ("deleteobject", lambda b: b.delete_object(OBJECT_KEY), _dt.datetime(2025, 2, 28, 12, 30, 6)),
    ("deleteobjects", lambda b: b.batch_delete_objects([OBJECT_KEY, "checkpoints/step-2.pt"]),
     _dt.datetime(2025, 2, 28, 12, 30, 7)),
]

for version in ("v4", "v1"):
    for name, call, fixed in CASES:
        record(name, call, fixed, version)
