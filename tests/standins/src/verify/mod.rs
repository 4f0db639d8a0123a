//! The stand-ins' own signature verifiers, one module per scheme, written
//! from the vendors' signing guides (cited in each module). They share no
//! code with `gpuform-signing`, the signer under test: if both were built
//! from the same helpers, a canonicalisation mistake would sign and verify
//! alike and every scenario would still pass.
//!
//! A verifier is a pure function of the request as it arrived on the wire
//! ([`WireRequest`]: raw path and query, header lines, body bytes) and the
//! one key pair a stand-in accepts ([`Key`]). It rebuilds the canonical
//! request from those bytes, recomputes the signature and compares it in
//! constant time. Clock checks (request age, nonce reuse) stay with the
//! caller, which gets the signed date or timestamp back; verifiers never
//! read the clock.
//!
//! | module | scheme | guide |
//! | --- | --- | --- |
//! | [`acs3`] | Alibaba `ACS3-HMAC-SHA256` | "V3 request structure and signature" |
//! | [`rpc`] | Alibaba RPC `HMAC-SHA1` 1.0 | ECS "Request signatures" (RPC, V2) |
//! | [`tc3`] | Tencent `TC3-HMAC-SHA256` | "Signature v3" |
//! | [`huawei`] | Huawei `SDK-HMAC-SHA256` | APIG "API Request Signing Guide" |
//! | [`oss4`] | Alibaba OSS `OSS4-HMAC-SHA256` | OSS "Include a V4 signature in the Authorization header" |
//! | [`oss1`] | Alibaba OSS V1 (`OSS AccessKeyId:Signature`) | OSS "Include a V1 signature in the Authorization header" |
//! | [`cos`] | Tencent COS `q-sign-algorithm=sha1` | COS "Request Signature" (XML API) |
//! | [`obs`] | Huawei OBS (`OBS AccessKeyID:Signature`) | OBS "Authentication of Signature in a Header" |
//! | [`sigv4`] | AWS `AWS4-HMAC-SHA256` | IAM "Create a signed AWS API request" |
//!
//! The object-storage verifiers also take the bucket the stand-in serves
//! (the first label of a virtual-hosted `Host`), which their canonical
//! resources name although it is not in the path.

pub mod acs3;
pub mod cos;
mod crypto;
pub mod huawei;
pub mod obs;
pub mod oss1;
pub mod oss4;
pub mod rpc;
pub mod sigv4;
pub mod tc3;
pub(crate) mod text;
mod wire;

pub use wire::WireRequest;

/// The access key pair a stand-in accepts.
#[derive(Clone, Copy)]
pub struct Key<'a> {
    pub id: &'a str,
    pub secret: &'a str,
}

/// Why a request was refused. Never carries the secret; `Mismatch` carries
/// what the stand-in signed, to compare with the client's own canonical
/// request when a test fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The signature is missing or not of the scheme's form (missing or
    /// unknown fields, a header that must be signed and is not, ...).
    Malformed(String),
    /// The access key id is not the stand-in's.
    UnknownKey(String),
    /// A content hash header does not match the body that arrived.
    ContentHash,
    /// The recomputed signature differs from the one sent.
    Mismatch {
        /// The canonical request (RPC: the string to sign) the stand-in built.
        canonical: String,
    },
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Malformed(why) => write!(f, "malformed signature: {why}"),
            Rejection::UnknownKey(id) => write!(f, "unknown access key `{id}`"),
            Rejection::ContentHash => f.write_str("the content hash header is not the body's"),
            Rejection::Mismatch { .. } => f.write_str("the signature does not match"),
        }
    }
}

/// `Malformed` with a message.
fn malformed(why: impl Into<String>) -> Rejection {
    Rejection::Malformed(why.into())
}

/// The fields of the one `Authorization` header, which must be of scheme
/// `algorithm` and carry each of `known` once (see [`auth_fields`]).
fn authorization<'a>(
    req: &'a WireRequest,
    algorithm: &str,
    known: &[&str],
) -> Result<Vec<(&'a str, &'a str)>, Rejection> {
    let auth = req
        .only_header("authorization")?
        .ok_or_else(|| malformed("no Authorization header"))?;
    let rest = auth
        .strip_prefix(algorithm)
        .and_then(|r| r.strip_prefix(' '))
        .ok_or_else(|| malformed(format!("Authorization is not {algorithm}")))?;
    auth_fields(rest, known)
}

/// The names of the `SignedHeaders` field (see [`signed_names`]), which
/// must include each of `required`.
fn signed_with<'a>(
    fields: &[(&'a str, &'a str)],
    required: &[&str],
) -> Result<Vec<&'a str>, Rejection> {
    let names = signed_names(field(fields, "SignedHeaders"))?;
    for required in required {
        if !names.contains(required) {
            return Err(malformed(format!("`{required}` must be signed")));
        }
    }
    Ok(names)
}

/// The decoded path (`/` when empty, see [`text::canonical_path`]) and the
/// sorted, re-encoded query, or why the raw ones are not valid
/// percent-encoding.
fn canonical_path_and_query(req: &WireRequest) -> Result<(String, String), Rejection> {
    let uri = text::canonical_path(&req.path)
        .ok_or_else(|| malformed("the path is not valid percent-encoding"))?;
    let query = text::query_pairs(&req.query)
        .ok_or_else(|| malformed("the query is not valid percent-encoding"))?;
    Ok((uri, text::sorted_query(&query)))
}

/// `Ok` when the `Signature` field is the HMAC-SHA256 of `string_to_sign`
/// under `signing_key`; otherwise a mismatch carrying `canonical_request`.
fn check_signature(
    signing_key: &[u8],
    string_to_sign: &str,
    fields: &[(&str, &str)],
    canonical_request: &str,
) -> Result<(), Rejection> {
    if crypto::hmac_sha256_matches_hex(
        signing_key,
        string_to_sign.as_bytes(),
        field(fields, "Signature"),
    ) {
        Ok(())
    } else {
        Err(Rejection::Mismatch {
            canonical: canonical_request.to_string(),
        })
    }
}

/// Reads `Name=value` fields of an `Authorization` header after the
/// algorithm name, separated by `,` (blanks around fields are ignored).
/// Every field must be one of `known`, exactly once.
fn auth_fields<'a>(rest: &'a str, known: &[&str]) -> Result<Vec<(&'a str, &'a str)>, Rejection> {
    auth_fields_optional(rest, known, &[])
}

/// [`auth_fields`] where the `optional` fields may also appear, at most once.
fn auth_fields_optional<'a>(
    rest: &'a str,
    required: &[&str],
    optional: &[&str],
) -> Result<Vec<(&'a str, &'a str)>, Rejection> {
    let known: Vec<&str> = required.iter().chain(optional).copied().collect();
    let mut out: Vec<(&str, &str)> = Vec::new();
    for part in rest.split(',') {
        let (name, value) = part.trim().split_once('=').ok_or_else(|| {
            malformed(format!("Authorization field `{}` has no `=`", part.trim()))
        })?;
        if !known.contains(&name) {
            return Err(malformed(format!(
                "Authorization has an unknown field `{name}`"
            )));
        }
        if out.iter().any(|(n, _)| *n == name) {
            return Err(malformed(format!("Authorization repeats `{name}`")));
        }
        out.push((name, value));
    }
    for k in required {
        if !out.iter().any(|(n, _)| n == k) {
            return Err(malformed(format!("Authorization has no `{k}`")));
        }
    }
    Ok(out)
}

fn field<'a>(fields: &[(&'a str, &'a str)], name: &str) -> &'a str {
    fields
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .unwrap_or_default()
}

/// The object key of a path as received: the decoded path without its
/// leading `/` (empty for a bucket operation).
fn object_key(req: &WireRequest) -> Result<String, Rejection> {
    let path = text::decode(&req.path, false)
        .ok_or_else(|| malformed("the path is not valid percent-encoding"))?;
    Ok(path.strip_prefix('/').unwrap_or(&path).to_string())
}

/// The query as received, decoded (`+` is a space, as the SDKs' form
/// encoders write it).
fn decoded_query(req: &WireRequest) -> Result<Vec<(String, String)>, Rejection> {
    text::query_pairs(&req.query)
        .ok_or_else(|| malformed("the query is not valid percent-encoding"))
}

/// `?a&b=v` from the pairs whose name `is_sub` accepts, sorted, values as
/// decoded; a name alone when its value is empty; empty if none (OSS V1 and
/// OBS canonicalized resources).
fn subresource_suffix(pairs: &[(String, String)], is_sub: impl Fn(&str) -> bool) -> String {
    let mut picked: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| is_sub(k)).collect();
    picked.sort();
    let parts: Vec<String> = picked
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// `name:value\n` for every header whose lower-case name `pick` accepts:
/// values trimmed, repeated names joined with `,` in arrival order, sorted
/// by name (the `x-oss-` / `x-obs-` block of OSS V1 and OBS).
fn prefixed_header_block(req: &WireRequest, pick: impl Fn(&str) -> bool) -> String {
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    for (n, v) in &req.headers {
        let n = n.to_ascii_lowercase();
        if !pick(&n) {
            continue;
        }
        match found.iter_mut().find(|(k, _)| *k == n) {
            Some((_, vs)) => vs.push(v.trim().to_string()),
            None => found.push((n, vec![v.trim().to_string()])),
        }
    }
    found.sort();
    found
        .iter()
        .map(|(n, vs)| format!("{n}:{}\n", vs.join(",")))
        .collect()
}

/// `<scheme> <id>:<base64 signature>` (OSS V1, OBS): the key id and the
/// decoded signature bytes.
fn id_and_base64_signature<'a>(
    req: &'a WireRequest,
    scheme: &str,
) -> Result<(&'a str, Vec<u8>), Rejection> {
    use base64::Engine as _;
    let auth = req
        .only_header("authorization")?
        .ok_or_else(|| malformed("no Authorization header"))?;
    let (id, sig) = auth
        .strip_prefix(scheme)
        .and_then(|r| r.strip_prefix(' '))
        .and_then(|r| r.split_once(':'))
        .ok_or_else(|| malformed(format!("Authorization is not `{scheme} <id>:<signature>`")))?;
    let sig = base64::engine::general_purpose::STANDARD
        .decode(sig.as_bytes())
        .map_err(|_| malformed("the signature is not Base64"))?;
    Ok((id, sig))
}

/// Splits a `SignedHeaders` list; the guides require lower-case names in
/// ascending order, so anything else is refused rather than re-sorted.
fn signed_names(list: &str) -> Result<Vec<&str>, Rejection> {
    let names: Vec<&str> = list.split(';').collect();
    for n in &names {
        if n.is_empty() || n.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(malformed(format!(
                "SignedHeaders `{list}` must list lower-case header names"
            )));
        }
    }
    if names.windows(2).any(|w| w[0] >= w[1]) {
        return Err(malformed(format!(
            "SignedHeaders `{list}` must be sorted and without repeats"
        )));
    }
    Ok(names)
}

/// `name:value\n` for every signed header, values trimmed; every signed
/// header must have arrived exactly once.
fn header_block(
    req: &WireRequest,
    names: &[&str],
    value: impl Fn(&str) -> String,
) -> Result<String, Rejection> {
    let mut block = String::new();
    for n in names {
        let v = req
            .only_header(n)?
            .ok_or_else(|| malformed(format!("signed header `{n}` did not arrive")))?;
        block.push_str(n);
        block.push(':');
        block.push_str(&value(v.trim()));
        block.push('\n');
    }
    Ok(block)
}
