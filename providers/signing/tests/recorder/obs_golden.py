"""Golden Huawei OBS requests from the official `esdk-obs-python` (`Authorization: OBS AK:Signature`).

Cases: create bucket (Location body, storage class and ACL headers), put tagging, put versioning,
put lifecycle, put encryption, list objects with query, delete bucket, delete one object (a key
needing escapes) and delete a batch of objects.
Nothing leaves 127.0.0.1: http server + proxy_host/proxy_port pointing at the local recorder,
no signature negotiation (it would send an extra request first), no retries.
Pinned: `datetime.datetime.utcnow` (the SDK imports it inside the call that sets `Date`).
Writes golden/obs_<case>.json.
"""
import base64, datetime as _dt, hashlib, hmac, json, os, sys, urllib.parse
from unittest import mock
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recorder import Recorder, header, dump

from obs import (ObsClient, CreateBucketHeader, TagInfo, Lifecycle, Rule, Transition,
                 NoncurrentVersionExpiration, DeleteObjectsRequest, Object)

# The example keys from the OBS signing guide's format examples (not valid anywhere).
AK, SK = "HCY8BGCN1YM5ZWYOK1MH", "9zYwf1uabSQY0JTnFqbUqG7vcfqYBaTdXde2GUcq"
SERVER = "http://obs.cn-north-4.myhuaweicloud.com"
BUCKET = "gpuform-datasets-01"
HERE = os.path.dirname(os.path.abspath(__file__))
OBJECT_KEY = "checkpoints/run 1/训练 a+b~.pt"

# Sub-resources the guide lists for CanonicalizedResource (those the cases use, and a few more).
SUBRESOURCES = {"acl", "lifecycle", "location", "logging", "notification", "partNumber", "policy", "uploadId",
                "uploads", "versionId", "versioning", "versions", "website", "quota", "storagePolicy",
                "storageinfo", "delete", "deletebucket", "cors", "restore", "tagging", "replication",
                "encryption", "inventory", "requestPayment", "metadata", "length", "append", "position",
                "storageClass", "x-image-process", "x-image-save-bucket", "x-image-save-object",
                "x-obs-security-token", "object-lock", "retention"}


def independent(r):
    """The guide's StringToSign from the recorded bytes."""
    u = urllib.parse.urlsplit(r["target"])
    host = u.hostname
    bucket = host.split(".")[0] if host.startswith(BUCKET + ".") else ""
    key = urllib.parse.unquote(u.path)[1:]
    obs = {}
    for k, v in r["headers"]:
        if k.lower().startswith("x-obs-"):
            obs.setdefault(k.lower(), []).append(v.strip())
    canon_headers = "".join("%s:%s\n" % (k, ",".join(obs[k])) for k in sorted(obs))
    sub = sorted((k, v) for k, v in urllib.parse.parse_qsl(u.query, keep_blank_values=True) if k in SUBRESOURCES)
    # The object key is URL-encoded in the resource ("/" and "~" kept).
    resource = ("/" + bucket + "/" if bucket else "/") + urllib.parse.quote(key, safe="/~")
    if sub:
        resource += "?" + "&".join(k + ("=" + v if v else "") for k, v in sub)
    date = "" if "x-obs-date" in obs else (header(r, "Date") or "")
    sts = "%s\n%s\n%s\n%s\n%s%s" % (r["method"], header(r, "Content-MD5") or "", header(r, "Content-Type") or "",
                                    date, canon_headers, resource)
    sig = base64.b64encode(hmac.new(SK.encode(), sts.encode(), hashlib.sha1).digest()).decode()
    return {"string_to_sign": sts, "signature": sig}


def record(name, call, fixed, response=b""):
    rec = Recorder(response, content_type="application/xml")
    client = ObsClient(access_key_id=AK, secret_access_key=SK, server=SERVER, is_signature_negotiation=False,
                       proxy_host="127.0.0.1", proxy_port=rec.port, max_retry_count=0)
    class FixedDatetime(_dt.datetime):
        @classmethod
        def utcnow(cls): return fixed
    with mock.patch("datetime.datetime", FixedDatetime):
        call(client)
    r = rec.requests[-1]
    rec.close()
    client.close()
    auth = header(r, "Authorization")
    ind = independent(r)
    out = {"inputs": {"ak": AK, "sk": SK, "bucket": BUCKET, "date": header(r, "Date")},
           "recorded_request": r, "independent": ind, "sdk_authorization": auth,
           "match": auth == "OBS %s:%s" % (AK, ind["signature"])}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    dump(os.path.join(HERE, "golden", "obs_%s.json" % name), out)


tags = TagInfo()
tags.addTag("gpuform-owner", "proj-训练 a+b").addTag("gpuform-cluster", "trainer")
lifecycle = Lifecycle(rule=[Rule(id="gpuform-archive", prefix="checkpoints/", status="Enabled",
                                 transition=Transition(storageClass="COLD", days=30),
                                 noncurrentVersionExpiration=NoncurrentVersionExpiration(noncurrentDays=14))])

CASES = [
    ("createbucket", lambda c: c.createBucket(BUCKET, header=CreateBucketHeader(aclControl="private",
                                                                                storageClass="WARM"),
                                              location="cn-north-4"), _dt.datetime(2024, 3, 9, 16, 0, 0)),
    ("putbuckettagging", lambda c: c.setBucketTagging(BUCKET, tags), _dt.datetime(2024, 3, 9, 16, 0, 1)),
    ("putbucketversioning", lambda c: c.setBucketVersioning(BUCKET, "Enabled"), _dt.datetime(2024, 7, 3, 9, 46, 40)),
    ("putbucketlifecycle", lambda c: c.setBucketLifecycle(BUCKET, lifecycle), _dt.datetime(2024, 7, 3, 9, 46, 41)),
    ("putbucketencryption", lambda c: c.setBucketEncryption(BUCKET, "kms"), _dt.datetime(2024, 12, 31, 23, 59, 59)),
    ("listobjects", lambda c: c.listObjects(BUCKET, prefix="checkpoints/run 1/训练", marker="ck*~+=", max_keys=50,
                                            delimiter="/"), _dt.datetime(2025, 1, 1, 0, 0, 0)),
    ("deletebucket", lambda c: c.deleteBucket(BUCKET), _dt.datetime(2025, 2, 28, 12, 30, 5)),
    # Emptying a bucket (force_destroy): one object with a key needing escapes, then a batch.
    ("deleteobject", lambda c: c.deleteObject(BUCKET, OBJECT_KEY), _dt.datetime(2025, 2, 28, 12, 30, 6)),
    ("deleteobjects", lambda c: c.deleteObjects(BUCKET, DeleteObjectsRequest(quiet=True, objects=[
        Object(key=OBJECT_KEY), Object(key="checkpoints/step-2.pt")])), _dt.datetime(2025, 2, 28, 12, 30, 7)),
]

for name, call, fixed in CASES:
    record(name, call, fixed)
