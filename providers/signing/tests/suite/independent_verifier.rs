//! gpuform-signing against the stand-ins' verifiers
//! (`gpuform_standins::verify`), which were written separately from the
//! vendors' guides and share no code with this crate. The SDK recordings
//! cover what the SDKs happened to send; these requests add what they do
//! not: reserved and non-ASCII characters in paths, parameter names and
//! values, repeated and empty parameters, padded header values, mixed-case
//! header names, a port in the host, raw UTF-8 bodies. Each is signed here,
//! put on the wire the way the providers send it, and must verify there.

use gpuform_signing::{
    acs3, aliyun_rpc, canon, huawei, tc3, Credentials, OffsetDateTime, Request, Signed,
};
use gpuform_standins::verify::{acs3 as v_acs3, huawei as v_huawei, rpc as v_rpc, tc3 as v_tc3};
use gpuform_standins::verify::{Key, Rejection, WireRequest};

const ID: &str = "AKIDgpuformIndependent01";
const SECRET: &str = "s3cr3t/with+odd=chars&";
const KEY: Key = Key {
    id: ID,
    secret: SECRET,
};

fn creds() -> Credentials {
    Credentials::new(ID, SECRET)
}

fn at() -> OffsetDateTime {
    // 2024-12-31T23:59:59Z: the last second of a year.
    OffsetDateTime::from_unix_timestamp(1735689599).unwrap()
}

/// Query parameters that stress the encoding and the ordering.
fn tricky_query() -> Vec<(String, String)> {
    [
        ("Tag.1.Value", "训练 集群*~"),
        ("Tag.1.Key", "gpuform:address"),
        ("Tag.2.Value", "a+b=c&d/e?f#g%h"),
        ("Name", "gpu node*~/1"),
        ("Empty", ""),
        ("k", "b"),
        ("k", "a"),
        ("a/b", "slash in a name"),
        ("a.b", "dot in a name"),
        ("Ünïcode", "ключ"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The request as a provider sends it: `Host`, the caller's headers, the
/// signer's headers, `encoded_target()`, the body bytes.
fn wire(req: &Request, signed: &[(String, String)]) -> WireRequest {
    let mut headers = vec![("Host".to_string(), req.host.clone())];
    headers.extend(req.headers.iter().cloned());
    headers.extend(signed.iter().cloned());
    WireRequest::from_target(
        &req.method,
        &req.encoded_target(),
        headers,
        req.body.clone(),
    )
}

/// What the verifier made of a signed request; a refusal panics with its
/// reason beside what the signer signed.
fn accepted<V>(outcome: Result<V, Rejection>, s: &Signed) -> V {
    outcome.unwrap_or_else(|e| {
        panic!(
            "{e:?}\nsigner's canonical request:\n{}\nsigner's string to sign:\n{}",
            s.canonical_request, s.string_to_sign
        )
    })
}

#[test]
fn acs3_signatures_verify() {
    let mut req = Request::new("POST", "127.0.0.1:8080", "/")
        .with_header("x-acs-action", "DescribeInstances")
        .with_header("x-acs-version", "2014-05-26")
        .with_header("Accept", "application/json")
        .with_header("User-Agent", "  gpuform/0.1 (padded)  ");
    req.query = tricky_query();
    let s = acs3::sign(&req, &creds(), at(), "0123456789abcdef0123456789abcdef").unwrap();
    let v = accepted(v_acs3::verify(&wire(&req, &s.headers), &KEY), &s);
    assert_eq!(v.canonical_request, s.canonical_request);
    assert_eq!(v.date, "2024-12-31T23:59:59Z");
}

#[test]
fn rpc_signatures_verify() {
    for method in ["GET", "POST"] {
        let mut params = tricky_query();
        params.push(("Action".into(), "DescribeInstances".into()));
        params.push(("Version".into(), "2014-05-26".into()));
        let s = aliyun_rpc::sign(method, &params, &creds(), at(), "6a1b2c3d-4e5f").unwrap();
        params.extend(s.params.iter().cloned());
        let target = format!("/?{}", canon::encode_query_in_order(&params));
        let w = WireRequest::from_target(method, &target, vec![], vec![]);
        let v = v_rpc::verify(&w, &KEY).unwrap_or_else(|e| {
            panic!(
                "{method}: {e:?}\nsigner's string to sign:\n{}",
                s.string_to_sign
            )
        });
        assert_eq!(v.string_to_sign, s.string_to_sign);
    }
}

#[test]
fn tc3_signatures_verify() {
    let body =
        r#"{"Filters":[{"Name":"tag:gpuform-cluster","Values":["训练集群 *~"]}],"Limit":100}"#;
    let post = Request::new("POST", "cvm.tencentcloudapi.com", "/")
        .with_header("Content-Type", "application/json")
        .with_header("X-TC-Action", "DescribeInstances")
        .with_header("X-TC-Version", "2017-03-12")
        .with_header("X-TC-Region", "ap-guangzhou")
        .with_body(body.as_bytes());
    let mut get = Request::new("GET", "127.0.0.1:9000", "/")
        .with_header("Content-Type", "application/x-www-form-urlencoded");
    get.query = tricky_query();
    for (req, service) in [(post, "cvm"), (get, "vpc")] {
        let s = tc3::sign(&req, &creds(), service, at()).unwrap();
        let v = accepted(v_tc3::verify(&wire(&req, &s.headers), &KEY), &s);
        assert_eq!(v.canonical_request, s.canonical_request);
        assert_eq!((v.timestamp, v.service.as_str()), (1735689599, service));
    }
}

#[test]
fn huawei_signatures_verify() {
    let mut get = Request::new(
        "GET",
        "127.0.0.1:7000",
        "/v1/0b5d2c3a4e6f47a8b9c0d1e2f3a4b5c6/cloudservers/detail",
    )
    .with_header("Content-Type", "application/json")
    .with_header("X-Project-Id", " 0b5d2c3a4e6f47a8b9c0d1e2f3a4b5c6 ");
    get.query = tricky_query();
    let post = Request::new(
        "POST",
        "ecs.cn-north-4.myhuaweicloud.com",
        "/v1/p/jobs/a b~*训/",
    )
    .with_header("Content-Type", "application/json;charset=utf-8")
    .with_header("X-Client-Token", "gf-c-node-0")
    .with_body(r#"{"server":{"name":"训练 node"}}"#.as_bytes());
    for req in [get, post] {
        let s = huawei::sign(&req, &creds(), at()).unwrap();
        let v = accepted(v_huawei::verify(&wire(&req, &s.headers), &KEY), &s);
        assert_eq!(v.canonical_request, s.canonical_request);
        assert_eq!(v.sdk_date, "20241231T235959Z");
    }
}

// Object storage: the bucket is the first label of the virtual host, the
// object key the path; each request carries what the SDK recordings do not
// (keys and sub-resource values needing escapes, padded and mixed-case
// headers, an STS token, a port in the host, a body with non-ASCII text).

use gpuform_signing::{cos, obs, oss1, oss4};
use gpuform_standins::verify::{cos as v_cos, obs as v_obs, oss1 as v_oss1, oss4 as v_oss4};

const BUCKET: &str = "gpuform-data-01";
const KEY_PATH: &str = "/checkpoints/run 1/训练 a+b~*(1).pt";

/// A PUT of an object with headers every object-storage scheme signs,
/// named with `prefix` (`x-oss-`, `x-cos-`, `x-obs-`).
fn object_put(host: &str, prefix: &str) -> Request {
    Request::new("PUT", host, KEY_PATH)
        .with_header("Content-Type", "  text/plain; charset=utf-8 ")
        .with_header("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")
        .with_header(
            format!("{}Meta-Owner", prefix.to_ascii_uppercase()),
            " 训练 team ",
        )
        .with_header(
            format!("{prefix}security-token"),
            "STS.token/with+odd=chars",
        )
        .with_header("User-Agent", "gpuform/0.1 (not signed)")
        .with_body("训练 data\n".as_bytes())
}

fn with_subresources(mut req: Request) -> Request {
    req.query = vec![
        ("versionId".into(), "v 1/+=&".into()),
        ("acl".into(), String::new()),
        ("prefix".into(), "not/a sub-resource".into()),
        ("uploadId".into(), "训练~*".into()),
    ];
    req
}

#[test]
fn oss4_signatures_verify() {
    let host = format!("{BUCKET}.oss-cn-hangzhou.aliyuncs.com:8443");
    let mut put = object_put(&host, "x-oss-").with_header("Range", "bytes=0-9");
    put.query = tricky_query();
    let list =
        Request::new("GET", "oss-cn-hangzhou.aliyuncs.com", "/").with_query("prefix", "a b/");
    for (req, bucket, additional) in [
        (put, Some(BUCKET), &["range", "host"][..]),
        (list, None, &[][..]),
    ] {
        let scope = oss4::Scope {
            region: "cn-hangzhou",
            bucket,
        };
        let s = oss4::sign(&req, &creds(), scope, additional, at()).unwrap();
        let v = accepted(
            v_oss4::verify(&wire(&req, &s.headers), &KEY, "cn-hangzhou", bucket),
            &s,
        );
        assert_eq!(v.canonical_request, s.canonical_request);
        assert_eq!(v.date, "20241231T235959Z");
    }
}

#[test]
fn oss1_signatures_verify() {
    let host = format!("{BUCKET}.oss-cn-hangzhou.aliyuncs.com:8443");
    let put = with_subresources(object_put(&host, "x-oss-"));
    let list = Request::new("GET", "oss-cn-hangzhou.aliyuncs.com", "/");
    for (req, bucket) in [(put, Some(BUCKET)), (list, None)] {
        let s = oss1::OSS_V1.sign(&req, &creds(), bucket, at()).unwrap();
        let v = accepted(v_oss1::verify(&wire(&req, &s.headers), &KEY, bucket), &s);
        assert_eq!(v.string_to_sign, s.string_to_sign);
        assert_eq!(v.date, "Tue, 31 Dec 2024 23:59:59 GMT");
    }
}

#[test]
fn cos_signatures_verify() {
    let host = format!("{BUCKET}-1250000000.cos.ap-guangzhou.myqcloud.com:8443");
    let mut put = object_put(&host, "x-cos-").with_header("Content-Length", "12");
    // COS defines one value per parameter name (the signer refuses repeats).
    put.query = tricky_query()
        .into_iter()
        .filter(|(k, v)| !(k == "k" && v == "a"))
        .collect();
    let key_time = cos::KeyTime::around(at(), 3600);
    let s = cos::sign(&put, &creds(), key_time).unwrap();
    let v = accepted(v_cos::verify(&wire(&put, &s.headers), &KEY), &s);
    assert_eq!(v.http_string, s.canonical_request);
    assert_eq!((v.start, v.end), (1735689599 - 60, 1735689599 + 3600));
}

#[test]
fn obs_signatures_verify() {
    let host = format!("{BUCKET}.obs.cn-north-4.myhuaweicloud.com:8443");
    // Repeated x-obs- headers are merged, as the guide says.
    let put = with_subresources(object_put(&host, "x-obs-"))
        .with_header("x-obs-meta-tag", "b")
        .with_header("X-Obs-Meta-Tag", " a ");
    let dated = Request::new("DELETE", &host, "/")
        .with_query("lifecycle", "")
        .with_header("x-obs-date", "Tue, 31 Dec 2024 23:59:59 GMT");
    let list = Request::new("GET", "obs.cn-north-4.myhuaweicloud.com", "/");
    for (req, bucket) in [(put, Some(BUCKET)), (dated, Some(BUCKET)), (list, None)] {
        let s = obs::OBS.sign(&req, &creds(), bucket, at()).unwrap();
        let v = accepted(v_obs::verify(&wire(&req, &s.headers), &KEY, bucket), &s);
        assert_eq!(v.string_to_sign, s.string_to_sign);
        assert_eq!(v.date, "Tue, 31 Dec 2024 23:59:59 GMT");
    }
}
