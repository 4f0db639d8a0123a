//! Every request in `tests/fixtures/` was recorded from a vendor's official
//! Python SDK (see `fixtures/README.md`). Each test rebuilds the signer's
//! inputs from the recording (time, nonce, keys, method, host, path, decoded
//! query, the headers the SDK set, the exact body bytes) and requires the
//! very Authorization value / signature that the SDK put on the wire.

mod common;

use common::{fixture_names, input, load, parse_time, Fixture};
use gpuform_signing::{acs3, aliyun_rpc, huawei, tc3, Credentials, Request};

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

fn same(what: &str, ours: &str, sdk: &str) -> Result<(), String> {
    if ours == sdk {
        Ok(())
    } else {
        Err(format!("{what} differs\n ours: {ours:?}\n  sdk: {sdk:?}"))
    }
}

/// `ours` against what the independent implementation computed as `key`.
fn same_as_independent(what: &str, ours: &str, f: &Fixture, key: &str) -> Result<(), String> {
    let theirs = f.independent[key]
        .as_str()
        .unwrap_or_else(|| panic!("the fixture has no independent {key}"));
    same(what, ours, theirs)
}

/// The signature against the one the SDK computed.
fn same_as_sdk_signature(signature: &str, f: &Fixture) -> Result<(), String> {
    same("signature", signature, f.sdk_signature.as_deref().unwrap())
}

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
    let creds = Credentials::new(input(f, "secret_id"), input(f, "secret_key"));
    let s = tc3::sign(
        &req,
        &creds,
        input(f, "service"),
        parse_time(&f.inputs["timestamp"]),
    )
    .map_err(|e| e.to_string())?;
    same_as_independent(
        "canonical request",
        &s.canonical_request,
        f,
        "canonical_request",
    )?;
    same(
        "X-TC-Timestamp",
        &s.headers[0].1,
        r.header("X-TC-Timestamp").unwrap(),
    )?;
    same(
        "Authorization",
        s.authorization(),
        f.sdk_authorization.as_deref().unwrap(),
    )
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
    let creds = Credentials::new(input(f, "access_key_id"), input(f, "access_key_secret"));
    let s = acs3::sign(
        &req,
        &creds,
        parse_time(&f.inputs["x-acs-date"]),
        input(f, "nonce"),
    )
    .map_err(|e| e.to_string())?;
    for (name, value) in &s.headers[..3] {
        same(name, value, r.header(name).unwrap())?;
    }
    same_as_independent(
        "canonical request",
        &s.canonical_request,
        f,
        "canonical_request",
    )?;
    same(
        "Authorization",
        s.authorization(),
        r.header("Authorization").unwrap(),
    )?;
    same_as_sdk_signature(&s.signature, f)
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
    let creds = Credentials::new(input(f, "access_key_id"), input(f, "access_key_secret"));
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
    same_as_independent("string to sign", &s.string_to_sign, f, "string_to_sign")?;
    same_as_sdk_signature(&s.signature, f)
}

fn huawei_apig(_: &str, f: &Fixture) -> Result<(), String> {
    let r = &f.recorded_request;
    let req = signer_input(f, &["host", "authorization", "x-sdk-date"]);
    let creds = Credentials::new(input(f, "ak"), input(f, "sk"));
    let s = huawei::sign(&req, &creds, parse_time(&f.inputs["x-sdk-date"]))
        .map_err(|e| e.to_string())?;
    same(
        "X-Sdk-Date",
        &s.headers[0].1,
        r.header("X-Sdk-Date").unwrap(),
    )?;
    same_as_independent(
        "canonical request",
        &s.canonical_request,
        f,
        "canonical_request",
    )?;
    // What goes on the wire is what the SDK sent.
    same(
        "path?query",
        &req.encoded_target(),
        r.target
            .splitn(4, '/')
            .nth(3)
            .map(|t| format!("/{t}"))
            .as_deref()
            .unwrap(),
    )?;
    same(
        "Authorization",
        s.authorization(),
        f.sdk_authorization.as_deref().unwrap(),
    )
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
