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

/// Every recording, sorted by name.
pub fn all() -> Vec<Recording> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("the SDK recordings directory exists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .collect();
    names.sort();
    names.iter().map(|n| load(n)).collect()
}

/// One recording by name (`tencent_cvm_runinstances`).
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
    Recording {
        name: name.to_string(),
        request,
        access_key_id: pick(&["access_key_id", "secret_id", "ak"]),
        secret: pick(&["access_key_secret", "secret_key", "sk"]),
    }
}
