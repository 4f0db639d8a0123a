//! The stand-ins' object-storage verifiers (OSS V4 and V1, COS, OBS)
//! against every request the official SDKs signed
//! (`providers/signing/tests/fixtures/object_storage/`): each recording
//! verifies as sent; the wrong secret, another bucket and every
//! one-character change of a signed part are refused by the signature
//! check itself; and what a scheme leaves unsigned is shown to be so.

use gpuform_standins::recordings::{self, Recording};
use gpuform_standins::verify::{cos, obs, oss1, oss4, Key, Rejection, WireRequest};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Scheme {
    Oss4,
    Oss1,
    Cos,
    Obs,
}

fn scheme(rec: &Recording) -> Scheme {
    let file = rec.name.trim_start_matches("object_storage/");
    match file {
        f if f.starts_with("oss_") && f.ends_with("_v4") => Scheme::Oss4,
        f if f.starts_with("oss_") && f.ends_with("_v1") => Scheme::Oss1,
        f if f.starts_with("cos_") => Scheme::Cos,
        f if f.starts_with("obs_") => Scheme::Obs,
        _ => panic!("{}: no verifier; name it after its scheme", rec.name),
    }
}

fn verify(
    s: Scheme,
    req: &WireRequest,
    key: &Key,
    rec: &Recording,
    bucket: Option<&str>,
) -> Result<(), Rejection> {
    match s {
        Scheme::Oss4 => {
            let region = rec
                .region
                .as_deref()
                .expect("V4 recordings name the region");
            oss4::verify(req, key, region, bucket).map(drop)
        }
        Scheme::Oss1 => oss1::verify(req, key, bucket).map(drop),
        Scheme::Cos => cos::verify(req, key).map(drop),
        Scheme::Obs => obs::verify(req, key, bucket).map(drop),
    }
}

fn check(rec: &Recording, req: &WireRequest) -> Result<(), Rejection> {
    verify(scheme(rec), req, &rec.key(), rec, rec.bucket.as_deref())
}

#[test]
fn every_object_storage_recording_verifies() {
    let all = recordings::object_storage();
    let mut per_scheme = std::collections::BTreeMap::new();
    for rec in &all {
        if let Err(e) = check(rec, &rec.request) {
            panic!("{}: refused as recorded: {e:?}", rec.name);
        }
        *per_scheme.entry(scheme(rec)).or_insert(0) += 1;
    }
    assert_eq!(
        per_scheme.into_iter().collect::<Vec<_>>(),
        vec![
            (Scheme::Oss4, 9),
            (Scheme::Oss1, 9),
            (Scheme::Cos, 9),
            (Scheme::Obs, 9)
        ]
    );
}

#[test]
fn the_wrong_secret_or_bucket_is_refused() {
    for rec in recordings::object_storage() {
        let mut secret = rec.secret.clone();
        secret.push('x');
        let key = Key {
            id: &rec.access_key_id,
            secret: &secret,
        };
        let s = scheme(&rec);
        assert!(
            matches!(
                verify(s, &rec.request, &key, &rec, rec.bucket.as_deref()),
                Err(Rejection::Mismatch { .. })
            ),
            "{}: accepted with another secret",
            rec.name
        );
        // COS names the bucket in the signed Host; the others in the resource.
        if s != Scheme::Cos {
            assert!(
                matches!(
                    verify(s, &rec.request, &rec.key(), &rec, Some("another-bucket")),
                    Err(Rejection::Mismatch { .. })
                ),
                "{}: accepted for another bucket",
                rec.name
            );
        }
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
    let mut out = bytes.to_vec();
    out[at] = match bytes[at] {
        b'z' => b'a',
        b'Z' => b'A',
        b'9' => b'0',
        b => b + 1,
    };
    String::from_utf8(out).ok()
}

/// Query parameters a scheme signs: all of them for V4 and COS; for V1 and
/// OBS only the sub-resources (those the recordings use).
fn signs_param(s: Scheme, name: &str) -> bool {
    match s {
        Scheme::Oss4 | Scheme::Cos => true,
        Scheme::Oss1 => [
            "tagging",
            "versioning",
            "lifecycle",
            "encryption",
            "continuation-token",
            "delete",
        ]
        .contains(&name),
        Scheme::Obs => {
            ["tagging", "versioning", "lifecycle", "encryption", "delete"].contains(&name)
        }
    }
}

/// Headers a scheme signs, by lower-case name.
fn signs_header(s: Scheme, rec: &Recording, name: &str) -> bool {
    match s {
        Scheme::Oss4 => {
            name.starts_with("x-oss-") || name == "content-type" || name == "content-md5"
        }
        Scheme::Oss1 => {
            name.starts_with("x-oss-") || ["content-type", "content-md5", "date"].contains(&name)
        }
        Scheme::Obs => {
            name.starts_with("x-obs-") || ["content-type", "content-md5", "date"].contains(&name)
        }
        Scheme::Cos => {
            let auth = rec.request.header_values("authorization").next().unwrap();
            let list = auth
                .split('&')
                .find_map(|p| p.strip_prefix("q-header-list="))
                .unwrap();
            list.split(';').any(|n| n == name)
        }
    }
}

/// (what, changed request, whether the scheme signs it).
fn mutations(rec: &Recording) -> Vec<(String, WireRequest, bool)> {
    let s = scheme(rec);
    let base = &rec.request;
    let mut out = Vec::new();
    let mut push = |what: String, signed: bool, f: &dyn Fn(&mut WireRequest)| {
        let mut r = base.clone();
        f(&mut r);
        assert_ne!(&r, base, "{}: mutation {what} changed nothing", rec.name);
        out.push((what, r, signed));
    };
    push("method".into(), true, &|r| {
        r.method = bump(&r.method, true).unwrap()
    });
    push("path".into(), true, &|r| r.path.push('x'));
    let pairs: Vec<&str> = base.query.split('&').filter(|p| !p.is_empty()).collect();
    for (i, pair) in pairs.iter().enumerate() {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let changed = match bump(value, false) {
            Some(v) => format!("{name}={v}"),
            None => format!("{name}={value}x"),
        };
        push(format!("query {name}"), signs_param(s, name), &|r| {
            let mut p: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
            p[i] = changed.clone();
            r.query = p.join("&");
        });
    }
    for (at, (name, value)) in base.headers.iter().enumerate() {
        let lower = name.to_ascii_lowercase();
        if lower == "authorization" || bump(value, false).is_none() {
            continue;
        }
        push(
            format!("header {lower}"),
            signs_header(s, rec, &lower),
            &|r| r.headers[at].1 = bump(&r.headers[at].1, false).unwrap(),
        );
    }
    out
}

#[test]
fn one_character_changes_of_signed_parts_are_refused() {
    let mut refused = 0;
    let mut unsigned = 0;
    for rec in recordings::object_storage() {
        let s = scheme(&rec);
        for (what, req, signed) in mutations(&rec) {
            let got = check(&rec, &req);
            match (signed, &got) {
                (true, Err(Rejection::Mismatch { .. })) => refused += 1,
                // V4 compares x-oss-content-sha256 with the body first.
                (true, Err(Rejection::ContentHash))
                    if s == Scheme::Oss4 && what == "header x-oss-content-sha256" =>
                {
                    refused += 1
                }
                (false, Ok(())) => unsigned += 1,
                _ => panic!(
                    "{}: {what} changed (signed: {signed}), got {got:?}",
                    rec.name
                ),
            }
        }
    }
    eprintln!("{refused} signed changes refused, {unsigned} unsigned changes accepted");
    assert!(refused >= 140, "only {refused} mutations were refused");
    // Every scheme leaves User-Agent and the like unsigned; V1 and OBS also
    // the listing parameters.
    assert!(unsigned >= 100, "only {unsigned} unsigned changes");
}

#[test]
fn the_body_is_not_signed_but_content_md5_is() {
    // OSS V4 sends UNSIGNED-PAYLOAD and COS, V1 and OBS sign no body hash:
    // what protects a body is a signed Content-MD5, which the SDKs send for
    // tagging / lifecycle on COS and OBS.
    let mut checked = 0;
    for rec in recordings::object_storage() {
        if rec.request.body.is_empty() {
            continue;
        }
        let mut r = rec.request.clone();
        r.body.push(b' ');
        assert!(check(&rec, &r).is_ok(), "{}", rec.name);
        let has_md5 = rec.request.header_values("content-md5").next().is_some();
        if has_md5 {
            let mut r = rec.request.clone();
            let at = r
                .headers
                .iter()
                .position(|(n, _)| n.eq_ignore_ascii_case("content-md5"))
                .unwrap();
            r.headers[at].1 = bump(&r.headers[at].1, true).unwrap();
            assert!(check(&rec, &r).is_err(), "{}", rec.name);
            checked += 1;
        }
    }
    assert!(checked >= 6, "only {checked} recordings carry Content-MD5");
}
