//! Every request in `tests/fixtures/` was recorded from a vendor's official
//! Python SDK (see `fixtures/README.md`). Each test rebuilds the signer's
//! inputs from the recording (time, nonce, keys, method, host, path, decoded
//! query, the headers the SDK set, the exact body bytes) and requires the
//! very Authorization value / signature that the SDK put on the wire.

use crate::common;

use common::{
    all_same, credentials, fixture_names, independent, input, load, parse_time, same, Fixture,
};
use gpuform_signing::{acs3, aliyun_rpc, huawei, tc3, Request};

/// What is wrong with a family: too few fixtures, or each fixture whose
/// check fails.
fn failures(family: &Family) -> Vec<String> {
    let Family {
        prefix,
        wanted,
        min,
        check,
    } = family;
    let names: Vec<String> = fixture_names(prefix)
        .into_iter()
        .filter(|n| wanted(n))
        .collect();
    let mut failures: Vec<String> = names
        .iter()
        .filter_map(|n| check(n, &load(n)).err().map(|e| format!("{n}: {e}")))
        .collect();
    if names.len() < *min {
        failures.push(format!(
            "expected at least {min} picked fixtures {prefix}*, found {names:?}"
        ));
    }
    failures
}

const ALIBABA_KEYS: (&str, &str) = ("access_key_id", "access_key_secret");

/// The signer's input rebuilt from the recording: every header the SDK set
/// but those in `signer_sets` (the signer adds them) and the exact body.
fn signer_input(f: &Fixture, signer_sets: &[&str]) -> Request {
    let r = &f.recorded_request;
    Request {
        method: r.method.clone(),
        host: r.header("host").unwrap().to_string(),
        path: r.path(),
        query: r.query(),
        headers: r.sdk_headers(signer_sets),
        body: r.body.as_bytes().to_vec(),
    }
}

fn tencent(_: &str, f: &Fixture) -> Result<(), String> {
    let r = &f.recorded_request;
    let req = signer_input(f, &["host", "authorization", "x-tc-timestamp"]);
    let creds = credentials(f, ("secret_id", "secret_key"));
    let time = parse_time(&f.inputs["timestamp"]);
    let s = tc3::sign(&req, &creds, input(f, "service"), time).map_err(|e| e.to_string())?;
    all_same(&[
        (
            "canonical request",
            &s.canonical_request,
            independent(f, "canonical_request"),
        ),
        (
            "X-TC-Timestamp",
            &s.headers[0].1,
            r.header("X-TC-Timestamp").unwrap(),
        ),
        (
            "Authorization",
            s.authorization(),
            f.sdk_authorization.as_deref().unwrap(),
        ),
    ])
}

fn alibaba_v3(_: &str, f: &Fixture) -> Result<(), String> {
    let r = &f.recorded_request;
    let signer_sets = [
        "host",
        "authorization",
        "x-acs-date",
        "x-acs-signature-nonce",
        "x-acs-content-sha256",
    ];
    let req = signer_input(f, &signer_sets);
    let time = parse_time(&f.inputs["x-acs-date"]);
    let nonce = input(f, "nonce");
    let s =
        acs3::sign(&req, &credentials(f, ALIBABA_KEYS), time, nonce).map_err(|e| e.to_string())?;
    for (name, value) in &s.headers[..3] {
        same(name, value, r.header(name).unwrap())?;
    }
    all_same(&[
        (
            "canonical request",
            &s.canonical_request,
            independent(f, "canonical_request"),
        ),
        (
            "Authorization",
            s.authorization(),
            r.header("Authorization").unwrap(),
        ),
        (
            "signature",
            &s.signature,
            f.sdk_signature.as_deref().unwrap(),
        ),
    ])
}

fn alibaba_rpc(_: &str, f: &Fixture) -> Result<(), String> {
    let r = &f.recorded_request;
    let recorded: Vec<(String, String)> = r.query().into_iter().chain(r.body_form()).collect();
    let params: Vec<(String, String)> = recorded
        .iter()
        .filter(|(k, _)| !aliyun_rpc::RESERVED.contains(&k.as_str()))
        .cloned()
        .collect();
    // Legacy SDK fixtures name the inputs after the RPC parameters, Tea ones after the V3 headers.
    let time = f.inputs.get("Timestamp").unwrap_or(&f.inputs["x-acs-date"]);
    let nonce = f
        .inputs
        .get("SignatureNonce")
        .unwrap_or(&f.inputs["nonce"])
        .as_str()
        .unwrap();
    let creds = credentials(f, ALIBABA_KEYS);
    let s = aliyun_rpc::sign(&r.method, &params, &creds, parse_time(time), nonce)
        .map_err(|e| e.to_string())?;
    // The parameters the signer adds are the ones the SDK sent.
    for (k, v) in &s.params {
        let sent = recorded
            .iter()
            .find(|(rk, _)| rk == k)
            .map(|(_, v)| v.as_str());
        same(k, v, sent.unwrap_or("<not sent>"))?;
    }
    all_same(&[
        (
            "string to sign",
            &s.string_to_sign,
            independent(f, "string_to_sign"),
        ),
        (
            "signature",
            &s.signature,
            f.sdk_signature.as_deref().unwrap(),
        ),
    ])
}

fn huawei_apig(_: &str, f: &Fixture) -> Result<(), String> {
    let r = &f.recorded_request;
    let req = signer_input(f, &["host", "authorization", "x-sdk-date"]);
    let s = huawei::sign(
        &req,
        &credentials(f, ("ak", "sk")),
        parse_time(&f.inputs["x-sdk-date"]),
    )
    .map_err(|e| e.to_string())?;
    // What goes on the wire is what the SDK sent.
    let sent_target = r.target.splitn(4, '/').nth(3).map(|t| format!("/{t}"));
    all_same(&[
        (
            "X-Sdk-Date",
            &s.headers[0].1,
            r.header("X-Sdk-Date").unwrap(),
        ),
        (
            "canonical request",
            &s.canonical_request,
            independent(f, "canonical_request"),
        ),
        (
            "path?query",
            &req.encoded_target(),
            sent_target.as_deref().unwrap(),
        ),
        (
            "Authorization",
            s.authorization(),
            f.sdk_authorization.as_deref().unwrap(),
        ),
    ])
}

/// One family of recordings: the fixtures `prefix*` that `wanted` picks (at
/// least `min` of them), each checked with `check`.
struct Family {
    prefix: &'static str,
    wanted: fn(&str) -> bool,
    min: usize,
    check: fn(&str, &Fixture) -> Result<(), String>,
}

const FAMILIES: [Family; 4] = [
    Family {
        prefix: "tencent_",
        wanted: |_| true,
        min: 4,
        check: tencent,
    },
    // Alibaba's ACS3 (V3) recordings are named `aliyun_*_v3`.
    Family {
        prefix: "aliyun_",
        wanted: |n| n.ends_with("_v3"),
        min: 3,
        check: alibaba_v3,
    },
    // Alibaba's RPC (V2) recordings are named `aliyun_*_v2_*`.
    Family {
        prefix: "aliyun_",
        wanted: |n| n.contains("_v2_"),
        min: 5,
        check: alibaba_rpc,
    },
    Family {
        prefix: "huawei_",
        wanted: |_| true,
        min: 4,
        check: huawei_apig,
    },
];

/// Every family (Tencent TC3, Alibaba ACS3 and RPC, Huawei APIG) signs as
/// its SDK did; all failures are reported at once.
#[test]
fn every_recording_is_signed_as_the_sdk_did() {
    let failures: Vec<String> = FAMILIES.iter().flat_map(failures).collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn every_fixture_is_checked() {
    for n in fixture_names("") {
        let known = FAMILIES
            .iter()
            .any(|f| n.starts_with(f.prefix) && (f.wanted)(&n));
        assert!(known, "fixture {n} is not covered by any test");
    }
}
