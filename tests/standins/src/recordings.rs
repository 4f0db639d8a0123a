//! The requests the vendors' official SDKs sent, recorded in
//! `providers/signing/tests/fixtures/` (see its README), as [`WireRequest`]s:
//! what the stand-ins' verifiers and the shape checks compare against.

use crate::verify::{Key, WireRequest};
use serde_json::Value;
use std::path::PathBuf;

pub struct Recording {
    /// File name without `.json`.
    pub name: String,
    pub request: WireRequest,
    /// The key pair the SDK was given.
    pub access_key_id: String,
    pub secret: String,
    /// Object storage: the bucket the request's virtual host names, if it
    /// names one (`inputs.bucket` when `Host` starts with it).
    pub bucket: Option<String>,
    /// Object storage signed with OSS V4: the region of the scope.
    pub region: Option<String>,
}

impl Recording {
    pub fn key(&self) -> Key<'_> {
        Key {
            id: &self.access_key_id,
            secret: &self.secret,
        }
    }
}

pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../providers/signing/tests/fixtures")
}

/// Every recording of the compute and network APIs, sorted by name.
pub fn all() -> Vec<Recording> {
    names_in("").iter().map(|n| load(n)).collect()
}

/// The object-storage recordings (`fixtures/object_storage/`: OSS V4 and
/// V1, COS, OBS), sorted by name; each is named `object_storage/<file>`.
pub fn object_storage() -> Vec<Recording> {
    names_in(OBJECT_STORAGE)
        .iter()
        .map(|n| load(&format!("{OBJECT_STORAGE}/{n}")))
        .collect()
}

const OBJECT_STORAGE: &str = "object_storage";

/// The `.json` files directly in `dir()/sub`, without the suffix, sorted.
fn names_in(sub: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir().join(sub))
        .expect("the SDK recordings directory exists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .collect();
    names.sort();
    names
}

/// One recording by name (`tencent_cvm_runinstances`,
/// `object_storage/oss_createbucket_v4`).
pub fn load(name: &str) -> Recording {
    let path = dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s = |p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{name}: no string at {p}"))
            .to_string()
    };
    let r = &v["recorded_request"];
    let headers = r["headers"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: headers"))
        .iter()
        .map(|pair| {
            let p = |i: usize| pair[i].as_str().unwrap_or_default().to_string();
            (p(0), p(1))
        })
        .collect();
    let request = WireRequest::from_target(
        &s("/recorded_request/method"),
        &s("/recorded_request/target"),
        headers,
        s("/recorded_request/body").into_bytes(),
    );
    let inputs = &v["inputs"];
    let pick = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| inputs.get(*k).and_then(Value::as_str))
            .unwrap_or_else(|| panic!("{name}: inputs has none of {keys:?}"))
            .to_string()
    };
    let host = request
        .header_values("host")
        .next()
        .unwrap_or_default()
        .to_string();
    let text = |k: &str| inputs.get(k).and_then(Value::as_str).map(str::to_string);
    Recording {
        name: name.to_string(),
        access_key_id: pick(&["access_key_id", "secret_id", "ak"]),
        secret: pick(&["access_key_secret", "secret_key", "sk"]),
        bucket: text("bucket").filter(|b| host.starts_with(&format!("{b}."))),
        region: text("region"),
        request,
    }
}
