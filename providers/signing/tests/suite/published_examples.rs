//! The worked examples published by the vendors (the expected values are
//! the ones printed in their signing guides; see /fixtures/README.md), and
//! beside each one the variations of it that a signer must get right:
//! which headers are signed, what changes a signature, what is refused.
//! Each example's request is written once, here.

use gpuform_signing::{
    acs3, aliyun_rpc, huawei, tc3, Credentials, OffsetDateTime, Request, SignError, Signed,
};

fn at(unix: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(unix).unwrap()
}

/// The signer adds exactly the headers the guide shows: `own` in order,
/// then the printed `Authorization`.
fn assert_sends(s: &Signed, own: &[(&str, &str)], authorization: &str) {
    let want: Vec<(String, String)> = own
        .iter()
        .chain([&("Authorization", authorization)])
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(s.headers, want);
}

/// Tencent Cloud API 3.0 "Signature v3": DescribeInstances, 2019-02-25 16:44:25 UTC.
fn tc3_example() -> (Request, Credentials, OffsetDateTime) {
    let req = Request::new("POST", "cvm.tencentcloudapi.com", "/")
        .with_header("Content-Type", "application/json; charset=utf-8")
        .with_header("X-TC-Action", "DescribeInstances")
        .with_header("X-TC-Version", "2017-03-12")
        .with_header("X-TC-Region", "ap-guangzhou")
        .with_body(
            &br#"{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}"#[..],
        );
    let creds = Credentials::new(
        "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
        "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE",
    );
    (req, creds, at(1551113065))
}

#[test]
fn tencent_tc3_describe_instances() {
    let (req, creds, t) = tc3_example();
    let s = tc3::sign(&req, &creds, "cvm", t).unwrap();
    assert!(s.canonical_request.starts_with(
        "POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:cvm.tencentcloudapi.com\n\ncontent-type;host\n"
    ));
    assert!(s
        .string_to_sign
        .starts_with("TC3-HMAC-SHA256\n1551113065\n2019-02-25/cvm/tc3_request\n"));
    assert_sends(
        &s,
        &[("X-TC-Timestamp", "1551113065")],
        "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, \
         SignedHeaders=content-type;host, \
         Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168",
    );
}

#[test]
fn tc3_signs_content_type_and_host_only() {
    let (req, creds, t) = tc3_example();
    let a = tc3::sign(&req, &creds, "cvm", t).unwrap();
    let more = req.clone().with_header("X-TC-Language", "en-US");
    let b = tc3::sign(&more, &creds, "cvm", t).unwrap();
    assert_eq!(a.signature, b.signature);
}

#[test]
fn tc3_needs_content_type_refuses_resigning_and_never_names_the_secret() {
    let (req, creds, t) = tc3_example();
    let mut r = req.clone();
    r.headers.retain(|(n, _)| n != "Content-Type");
    let e = tc3::sign(&r, &creds, "cvm", t).unwrap_err();
    assert_eq!(e, SignError::MissingHeader("Content-Type"));
    assert!(!e.to_string().contains("Gu5t9x"));
    let mut r = req.clone();
    tc3::sign(&r, &creds, "cvm", t).unwrap().apply(&mut r);
    assert!(matches!(
        tc3::sign(&r, &creds, "cvm", t),
        Err(SignError::ReservedHeader(_))
    ));
}

/// Alibaba Cloud "V3 request structure and signature": RunInstances,
/// ecs.cn-shanghai, 2023-10-26T10:22:32Z.
fn acs3_example() -> (Request, Credentials, OffsetDateTime) {
    let req = Request::new("POST", "ecs.cn-shanghai.aliyuncs.com", "/")
        .with_query(
            "ImageId",
            "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd",
        )
        .with_query("RegionId", "cn-shanghai")
        .with_header("x-acs-action", "RunInstances")
        .with_header("x-acs-version", "2014-05-26");
    let creds = Credentials::new("YourAccessKeyId", "YourAccessKeySecret");
    (req, creds, at(1698315752))
}

#[test]
fn alibaba_acs3_run_instances() {
    let (req, creds, t) = acs3_example();
    let s = acs3::sign(&req, &creds, t, "3156853299f313e23d1673dc12e1703d").unwrap();
    assert_eq!(
        s.string_to_sign,
        "ACS3-HMAC-SHA256\n7ea06492da5221eba5297e897ce16e55f964061054b7695beedaac1145b1e259"
    );
    let own = [
        ("x-acs-date", "2023-10-26T10:22:32Z"),
        ("x-acs-signature-nonce", "3156853299f313e23d1673dc12e1703d"),
        (
            "x-acs-content-sha256",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
    ];
    assert_sends(
        &s,
        &own,
        "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,\
         SignedHeaders=host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,\
         Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0",
    );
}

#[test]
fn acs3_signs_every_given_header() {
    let (req, creds, t) = acs3_example();
    let r = req
        .with_header("Accept", "application/json")
        .with_header("User-Agent", "gpuform");
    let s = acs3::sign(&r, &creds, t, "n").unwrap();
    assert!(s.authorization().contains(
        "SignedHeaders=accept;host;user-agent;x-acs-action;x-acs-content-sha256;\
         x-acs-date;x-acs-signature-nonce;x-acs-version,"
    ));
}

#[test]
fn acs3_nonce_and_time_change_the_signature() {
    let (req, creds, t) = acs3_example();
    let a = acs3::sign(&req, &creds, t, "n1").unwrap();
    let b = acs3::sign(&req, &creds, t, "n2").unwrap();
    let c = acs3::sign(&req, &creds, at(1698315753), "n1").unwrap();
    assert_ne!(a.signature, b.signature);
    assert_ne!(a.signature, c.signature);
}

#[test]
fn acs3_refuses_a_signed_request_and_a_given_host() {
    let (req, creds, t) = acs3_example();
    let mut r = req.clone();
    acs3::sign(&r, &creds, t, "n").unwrap().apply(&mut r);
    assert!(matches!(
        acs3::sign(&r, &creds, t, "n"),
        Err(SignError::ReservedHeader(_))
    ));
    let r = req.with_header("Host", "x");
    assert_eq!(
        acs3::sign(&r, &creds, t, "n"),
        Err(SignError::ReservedHeader("Host".into()))
    );
}

#[test]
fn alibaba_rpc_describe_regions() {
    // ECS RPC "Signature method" example: DescribeRegions, testid/testsecret, GET.
    let params: Vec<(String, String)> = [
        ("Format", "XML"),
        ("Action", "DescribeRegions"),
        ("Version", "2014-05-26"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let creds = Credentials::new("testid", "testsecret");
    let s = aliyun_rpc::sign(
        "GET",
        &params,
        &creds,
        at(1456231584),
        "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
    )
    .unwrap();
    assert_eq!(s.signature, "OLeaidS1JvxuMvnyHOwuJ+uX5qY=");
    assert_eq!(
        s.params.last().unwrap(),
        &(
            "Signature".to_string(),
            "OLeaidS1JvxuMvnyHOwuJ+uX5qY=".to_string()
        )
    );
}

/// Huawei "API Request Signing Guide": GET .../vpcs?limit=2&marker=...,
/// 20191115T033655Z.
fn huawei_example() -> (Request, Credentials, OffsetDateTime) {
    let req = Request::new(
        "GET",
        "service.region.example.com",
        "/v1/77b6a44cba5143ab91d13ab9a8ff44fd/vpcs",
    )
    .with_query("marker", "13551d6b-755d-4757-b956-536f674975c0")
    .with_query("limit", "2")
    .with_header("Content-Type", "application/json");
    let creds = Credentials::new(
        "QTWAOYTTINDUT2QVKYUC",
        "MFyfvK41ba2giqM7Uio6PznpdUKGpownRZlmVmHc",
    );
    (req, creds, at(1573789015))
}

#[test]
fn huawei_apig_list_vpcs() {
    let (req, creds, t) = huawei_example();
    let s = huawei::sign(&req, &creds, t).unwrap();
    assert!(s.canonical_request.starts_with(
        "GET\n/v1/77b6a44cba5143ab91d13ab9a8ff44fd/vpcs/\n\
         limit=2&marker=13551d6b-755d-4757-b956-536f674975c0\n"
    ));
    assert_eq!(
        s.string_to_sign,
        "SDK-HMAC-SHA256\n20191115T033655Z\nb25362e603ee30f4f25e7858e8a7160fd36e803bb2dfe206278659d71a9bcd7a"
    );
    assert_sends(
        &s,
        &[("X-Sdk-Date", "20191115T033655Z")],
        "SDK-HMAC-SHA256 Access=QTWAOYTTINDUT2QVKYUC, SignedHeaders=content-type;host;x-sdk-date, \
         Signature=7be6668032f70418fcc22abc52071e57aff61b84a1d2381bb430d6870f4f6ebe",
    );
}

#[test]
fn huawei_sends_underscore_headers_unsigned() {
    let (req, creds, t) = huawei_example();
    let a = huawei::sign(&req, &creds, t).unwrap();
    let b = huawei::sign(&req.clone().with_header("X_Custom", "1"), &creds, t).unwrap();
    assert_eq!(a.signature, b.signature);
    let c = huawei::sign(&req.with_header("X-Client-Token", "t-1"), &creds, t).unwrap();
    assert!(c
        .authorization()
        .contains("SignedHeaders=content-type;host;x-client-token;x-sdk-date,"));
}

#[test]
fn huawei_does_not_double_a_trailing_slash() {
    let (mut req, creds, t) = huawei_example();
    req.path.push('/');
    let s = huawei::sign(&req, &creds, t).unwrap();
    assert!(s
        .canonical_request
        .starts_with("GET\n/v1/77b6a44cba5143ab91d13ab9a8ff44fd/vpcs/\n"));
}

#[test]
fn debug_output_never_shows_a_secret() {
    let (req, creds, t) = huawei_example();
    let s = huawei::sign(&req, &creds, t).unwrap();
    for text in [format!("{creds:?}"), format!("{s:?}"), format!("{req:?}")] {
        assert!(
            !text.contains("MFyfvK41ba2giqM7Uio6PznpdUKGpownRZlmVmHc"),
            "{text}"
        );
    }
}
