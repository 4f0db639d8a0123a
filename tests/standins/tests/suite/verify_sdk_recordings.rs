//! The stand-ins' own verifiers against every request the official SDKs
//! signed (`providers/signing/tests/fixtures/`): each recording must verify
//! as it was sent, and every one-character change of what the canonical
//! request (RPC: the string to sign) covers must be refused by the
//! signature check itself, not by some earlier parse.

use gpuform_standins::recordings::{self, Recording};
use gpuform_standins::verify::{acs3, huawei, rpc, tc3, Key, Rejection, WireRequest};

type Verifier = fn(&WireRequest, &Key) -> Result<(), Rejection>;

/// Which scheme a recording uses, from its file name (see the fixtures' README).
fn verifier(name: &str) -> (Verifier, &'static str) {
    if name.starts_with("tencent_") {
        (|r, k| tc3::verify(r, k).map(drop), "tc3")
    } else if name.starts_with("huawei_") {
        (|r, k| huawei::verify(r, k).map(drop), "huawei")
    } else if name.starts_with("aliyun_") && name.ends_with("_v3") {
        (|r, k| acs3::verify(r, k).map(drop), "acs3")
    } else if name.starts_with("aliyun_") && name.contains("_v2_") {
        (|r, k| rpc::verify(r, k).map(drop), "rpc")
    } else {
        panic!("{name}: no verifier for this recording; name it after its scheme")
    }
}

#[test]
fn every_sdk_recording_verifies() {
    let all = recordings::all();
    assert_eq!(all.len(), 16, "the fixtures README lists 16 recordings");
    let mut per_scheme = std::collections::BTreeMap::new();
    for rec in &all {
        let (verify, scheme) = verifier(&rec.name);
        if let Err(e) = verify(&rec.request, &rec.key()) {
            panic!("{}: refused as recorded: {e:?}", rec.name);
        }
        *per_scheme.entry(scheme).or_insert(0) += 1;
    }
    assert_eq!(
        per_scheme.into_iter().collect::<Vec<_>>(),
        vec![("acs3", 3), ("huawei", 4), ("rpc", 5), ("tc3", 4)]
    );
}

#[test]
fn the_wrong_secret_is_refused() {
    for rec in recordings::all() {
        let (verify, _) = verifier(&rec.name);
        let mut secret = rec.secret.clone();
        secret.push('x');
        let key = Key {
            id: &rec.access_key_id,
            secret: &secret,
        };
        assert!(
            matches!(verify(&rec.request, &key), Err(Rejection::Mismatch { .. })),
            "{}: accepted with another secret",
            rec.name
        );
    }
}

/// Changes one character: the last letter or digit (or, with `first`, the
/// first) that is not inside a `%XY` escape, to the next one of its kind.
fn bump(s: &str, first: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut candidates = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            i += 3;
            continue;
        }
        if bytes[i].is_ascii_alphanumeric() {
            candidates.push(i);
        }
        i += 1;
    }
    let at = if first {
        *candidates.first()?
    } else {
        *candidates.last()?
    };
    let next = match bytes[at] {
        b'z' => b'a',
        b'Z' => b'A',
        b'9' => b'0',
        b => b + 1,
    };
    let mut out = bytes.to_vec();
    out[at] = next;
    String::from_utf8(out).ok()
}

/// Every one-character change of something the scheme signs.
fn mutations(rec: &Recording, scheme: &str) -> Vec<(String, WireRequest)> {
    let base = &rec.request;
    let mut out = Vec::new();
    let mut push = |what: String, f: &dyn Fn(&mut WireRequest)| {
        let mut r = base.clone();
        f(&mut r);
        assert_ne!(&r, base, "{}: mutation {what} changed nothing", rec.name);
        out.push((what, r));
    };
    push("method".into(), &|r| {
        r.method = bump(&r.method, true).unwrap()
    });
    if scheme != "rpc" {
        push("path".into(), &|r| {
            r.path = bump(&r.path, true).unwrap_or_else(|| format!("{}x", r.path))
        });
    }
    let pairs: Vec<&str> = base.query.split('&').filter(|p| !p.is_empty()).collect();
    for (i, pair) in pairs.iter().enumerate() {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if name == "Signature" {
            continue;
        }
        let changed = match bump(value, false) {
            Some(v) => format!("{name}={v}"),
            None => format!("{name}={value}x"),
        };
        push(format!("query {name}"), &|r| {
            let mut p: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
            p[i] = changed.clone();
            r.query = p.join("&");
        });
    }
    if scheme != "rpc" {
        let auth = base.header_values("authorization").next().unwrap();
        let signed = auth
            .split([',', ' '])
            .find_map(|f| f.strip_prefix("SignedHeaders="))
            .unwrap();
        let mut covered: Vec<&str> = signed.split(';').collect();
        if scheme == "tc3" {
            covered.push("x-tc-timestamp"); // in the string to sign
        }
        for name in covered {
            let at = base
                .headers
                .iter()
                .position(|(n, _)| n.eq_ignore_ascii_case(name))
                .unwrap_or_else(|| panic!("{}: signed header {name} not sent", rec.name));
            push(format!("header {name}"), &|r| {
                r.headers[at].1 = bump(&r.headers[at].1, false).unwrap()
            });
        }
        if !base.body.is_empty() {
            push("body".into(), &|r| {
                let text = String::from_utf8(r.body.clone()).unwrap();
                r.body = bump(&text, true).unwrap().into_bytes();
            });
        }
    }
    out
}

#[test]
fn one_character_changes_are_refused() {
    let mut checked = 0;
    for rec in recordings::all() {
        let (verify, scheme) = verifier(&rec.name);
        for (what, req) in mutations(&rec, scheme) {
            match verify(&req, &rec.key()) {
                Err(Rejection::Mismatch { .. }) => {}
                // ACS3 checks x-acs-content-sha256 against the body first.
                Err(Rejection::ContentHash) if scheme == "acs3" => {}
                // These name the scheme and the key: refused before the MAC.
                Err(Rejection::Malformed(_)) | Err(Rejection::UnknownKey(_))
                    if scheme == "rpc"
                        && ["SignatureMethod", "SignatureVersion", "AccessKeyId"]
                            .iter()
                            .any(|p| what == format!("query {p}")) => {}
                other => panic!("{}: {what} changed, got {other:?}", rec.name),
            }
            checked += 1;
        }
    }
    // 16 recordings × (method, path, each parameter, each signed header, body).
    eprintln!("{checked} one-character changes refused");
    assert!(checked > 200, "only {checked} mutations were checked");
}

#[test]
fn bump_changes_one_character_outside_escapes() {
    assert_eq!(bump("ab%2F", false).unwrap(), "ac%2F");
    assert_eq!(bump("Zz9", true).unwrap(), "Az9");
    assert_eq!(bump("z", false).unwrap(), "a");
    assert!(bump("%2F", false).is_none());
}
