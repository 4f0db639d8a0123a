"""Golden Tencent COS requests from the official `cos-python-sdk-v5` (XML API, `q-sign-algorithm=sha1`).

Cases: create bucket (multi-AZ CreateBucketConfiguration body, x-cos-acl), put tagging, put versioning,
put lifecycle, put encryption, list objects with query, delete bucket, delete one object (a key
needing escapes) and delete a batch of objects.
Nothing leaves 127.0.0.1: Scheme=http + Proxies pointing at the local recorder, Retry 0.
Pinned: `time.time()` in qcloud_cos.cos_auth (the SDK signs for [now-60, now+10000]).
Writes golden/cos_<case>.json.
"""
import hashlib, hmac, json, os, sys, urllib.parse
from unittest import mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recorder import Recorder, header, dump

import qcloud_cos.cos_auth
from qcloud_cos import CosConfig, CosS3Client

# Fake keys (never valid anywhere); APPID 1250000000 is the guide's example.
SECRET_ID, SECRET_KEY = "AKIDGpuformGoldenSecretIdNotReal0001", "GpuformGoldenSecretKeyNotReal0002"
REGION = "ap-guangzhou"
BUCKET = "gpuform-datasets-1250000000"
HERE = os.path.dirname(os.path.abspath(__file__))
OBJECT_KEY = "checkpoints/run 1/训练 a+b~.pt"


def enc(s):
    return urllib.parse.quote(s, safe="-_.~")


def independent(r):
    """The guide's steps, from the recorded bytes and the lists the Authorization declares."""
    auth = dict(kv.split("=", 1) for kv in header(r, "Authorization").split("&"))
    u = urllib.parse.urlsplit(r["target"])
    path = urllib.parse.unquote(u.path)
    query = {k.lower(): v for k, v in ((enc(k), enc(v)) for k, v in
                                        urllib.parse.parse_qsl(u.query, keep_blank_values=True))}
    heads = {}
    for k, v in r["headers"]:
        heads[enc(k).lower()] = enc(v)
    hlist = auth["q-header-list"].split(";") if auth["q-header-list"] else []
    plist = auth["q-url-param-list"].split(";") if auth["q-url-param-list"] else []
    http_string = "%s\n%s\n%s\n%s\n" % (r["method"].lower(), path,
                                        "&".join("%s=%s" % (k, query[k]) for k in plist),
                                        "&".join("%s=%s" % (k, heads[k]) for k in hlist))
    key_time = auth["q-key-time"]
    sts = "sha1\n%s\n%s\n" % (auth["q-sign-time"], hashlib.sha1(http_string.encode()).hexdigest())
    sign_key = hmac.new(SECRET_KEY.encode(), key_time.encode(), hashlib.sha1).hexdigest()
    sig = hmac.new(sign_key.encode(), sts.encode(), hashlib.sha1).hexdigest()
    # Every parameter that arrived is in the list (the SDK signs them all).
    complete = sorted(query) == plist
    return {"http_string": http_string, "string_to_sign": sts, "signature": sig, "all_params_signed": complete}


def record(name, call, now, response=b""):
    rec = Recorder(response, content_type="application/xml")
    conf = CosConfig(Region=REGION, SecretId=SECRET_ID, SecretKey=SECRET_KEY, Scheme="http",
                     Proxies={"http": rec.url, "https": rec.url})
    client = CosS3Client(conf, retry=0)
    with mock.patch.object(qcloud_cos.cos_auth.time, "time", lambda: float(now)):
        try:
            call(client)
        except Exception as e:  # the canned answer may not parse as this call's result
            if not rec.requests:
                raise
    r = rec.requests[-1]
    rec.close()
    auth = header(r, "Authorization")
    ind = independent(r)
    out = {"inputs": {"secret_id": SECRET_ID, "secret_key": SECRET_KEY, "region": REGION, "bucket": BUCKET,
                      "now": now, "sign_start": now - 60, "sign_end": now + 10000},
           "recorded_request": r, "independent": ind, "sdk_authorization": auth,
           "match": auth.endswith("&q-signature=" + ind["signature"]) and ind["all_params_signed"]}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    dump(os.path.join(HERE, "golden", "cos_%s.json" % name), out)


lifecycle = {"Rule": [{"ID": "gpuform-archive", "Status": "Enabled", "Filter": {"Prefix": "checkpoints/"},
                       "Transition": [{"Days": 30, "StorageClass": "ARCHIVE"}],
                       "NoncurrentVersionExpiration": {"NoncurrentDays": 14}}]}
tagging = {"TagSet": {"Tag": [{"Key": "gpuform-owner", "Value": "proj-训练 a+b"},
                              {"Key": "gpuform-cluster", "Value": "trainer"}]}}
sse = {"Rule": [{"ApplySideEncryptionConfiguration": {"SSEAlgorithm": "AES256"}}]}

CASES = [
    ("createbucket", lambda c: c.create_bucket(Bucket=BUCKET, BucketAZConfig="MAZ", ACL="private"), 1710000000),
    ("putbuckettagging", lambda c: c.put_bucket_tagging(Bucket=BUCKET, Tagging=tagging), 1710000001),
    ("putbucketversioning", lambda c: c.put_bucket_versioning(Bucket=BUCKET, Status="Enabled"), 1720000000),
    ("putbucketlifecycle", lambda c: c.put_bucket_lifecycle(Bucket=BUCKET, LifecycleConfiguration=lifecycle),
     1720000001),
    ("putbucketencryption", lambda c: c.put_bucket_encryption(Bucket=BUCKET, ServerSideEncryptionConfiguration=sse),
     1735689599),
    ("listobjects", lambda c: c.list_objects(Bucket=BUCKET, Prefix="checkpoints/run 1/训练", Delimiter="/",
                                             Marker="ck*~+=", MaxKeys=50), 1735689600),
    ("deletebucket", lambda c: c.delete_bucket(Bucket=BUCKET), 1740745805),
    # Emptying a bucket (force_destroy): one object with a key needing escapes, then a batch.
    ("deleteobject", lambda c: c.delete_object(Bucket=BUCKET, Key=OBJECT_KEY), 1740745806),
    ("deleteobjects", lambda c: c.delete_objects(Bucket=BUCKET, Delete={
        "Object": [{"Key": OBJECT_KEY}, {"Key": "checkpoints/step-2.pt"}], "Quiet": "true"}), 1740745807),
]

for name, call, now in CASES:
    record(name, call, now)
