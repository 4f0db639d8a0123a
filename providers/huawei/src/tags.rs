//! Ownership and user tags as Huawei Cloud accepts them.
//!
//! Huawei's tag rules are narrower than gpuform's: ECS `server_tags` keys may
//! hold only letters, digits, `_` and `-` (at most 36 characters) and values
//! only letters, digits, `_`, `-` and `.` (at most 43 characters) — see
//! "Creating ECSs" (support.huaweicloud.com/api-ecs/ecs_02_0101.html, field
//! `server_tags`) and the VPC `ResourceTag` model (key ≤ 36, value ≤ 43).
//! So `gpuform:address` becomes the key `gpuform_address`, and values are
//! escaped: every character outside `[A-Za-z0-9.-]` is written as `_XX` per
//! UTF-8 byte (`cluster.a.node[3]` → `cluster.a.node_5B3_5D`).

use gpuform_provider::{ErrorKind, OwnershipTags, ProviderError};

pub const PROJECT: &str = "gpuform_project";
pub const ADDRESS: &str = "gpuform_address";
pub const TOKEN: &str = "gpuform_token";
pub const LINEAGE: &str = "gpuform_lineage";
/// Prefix of every tag key gpuform owns.
pub const PREFIX: &str = "gpuform_";

pub const MAX_KEY: usize = 36;
pub const MAX_VALUE: usize = 43;

/// Escapes a value into Huawei's tag-value alphabet (reversible, see [`decode`]).
pub fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    out
}

/// Reverses [`encode`]. Anything that is not a valid escape is kept as is.
pub fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| v.to_string())
}

/// The four ownership tags, encoded and checked against Huawei's limits.
pub fn ownership_tags(o: &OwnershipTags) -> Result<Vec<(String, String)>, ProviderError> {
    let pairs = [
        (PROJECT, &o.project),
        (ADDRESS, &o.address),
        (TOKEN, &o.token),
        (LINEAGE, &o.lineage),
    ];
    let mut out = Vec::new();
    for (k, v) in pairs {
        let e = encode(v);
        if e.chars().count() > MAX_VALUE {
            return Err(ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "`{v}` is too long for a Huawei Cloud tag value once escaped ({} > {MAX_VALUE} characters, tag {k}); use a shorter project or cluster name",
                    e.chars().count()
                ),
            ));
        }
        out.push((k.to_string(), e));
    }
    Ok(out)
}

/// The user's tags (`tags` attribute), checked: keys may not use gpuform's prefix.
pub fn user_tags(attrs: &gpuform_provider::Attrs) -> Result<Vec<(String, String)>, ProviderError> {
    let mut out = Vec::new();
    if let Some(serde_json::Value::Object(m)) = attrs.get("tags") {
        for (k, v) in m {
            if k.starts_with(PREFIX) || k.starts_with("gpuform:") {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("tag key `{k}` uses the reserved prefix gpuform"),
                ));
            }
            if k.chars().count() > MAX_KEY {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("tag key `{k}` is longer than Huawei Cloud's {MAX_KEY} characters"),
                ));
            }
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push((k.clone(), v));
        }
    }
    Ok(out)
}

/// Ownership read back from (key, value) tags as the cloud returns them.
pub fn ownership_from(tags: &[(String, String)]) -> Option<OwnershipTags> {
    let get = |k: &str| tags.iter().find(|(n, _)| n == k).map(|(_, v)| decode(v));
    Some(OwnershipTags {
        project: get(PROJECT)?,
        address: get(ADDRESS)?,
        token: get(TOKEN)?,
        lineage: get(LINEAGE)?,
    })
}

/// The user's tags as observed: everything but gpuform's own.
pub fn observed_user_tags(tags: &[(String, String)]) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (k, v) in tags {
        if !k.starts_with(PREFIX) {
            m.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
    }
    serde_json::Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for s in [
            "cluster.trainer.node[3]",
            "a_b",
            "gf-0123abc",
            "x y/ü",
            "_",
            "end_",
        ] {
            let e = encode(s);
            assert!(
                e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                "{e}"
            );
            assert_eq!(decode(&e), s);
        }
        assert_eq!(encode("cluster.a.node[3]"), "cluster.a.node_5B3_5D");
    }

    #[test]
    fn too_long_is_invalid() {
        let o = OwnershipTags {
            project: "p".into(),
            address: format!("cluster.{}.node[0]", "x".repeat(40)),
            token: "t".into(),
            lineage: "l".into(),
        };
        assert_eq!(ownership_tags(&o).unwrap_err().kind, ErrorKind::Invalid);
    }
}
