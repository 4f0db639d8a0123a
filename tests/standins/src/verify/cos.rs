//! Tencent Cloud COS request signature, XML API ("Request Signature",
//! tencentcloud.com/document/api/436/7778).
//!
//! ```text
//! Authorization: q-sign-algorithm=sha1&q-ak=<SecretId>&q-sign-time=<s;e>&q-key-time=<s;e>
//!                &q-header-list=<a;b>&q-url-param-list=<a;b>&q-signature=<hex>
//! SignKey      = hex(HMAC-SHA1(SecretKey, KeyTime))
//! HttpString   = lower(method) \n UriPathname \n HttpParameters \n HttpHeaders \n
//! StringToSign = sha1 \n KeyTime \n hex(SHA1(HttpString)) \n
//! Signature    = hex(HMAC-SHA1(SignKey, StringToSign))
//! ```
//!
//! - HttpParameters / HttpHeaders: for each name of the list, in the list's
//!   order (lower-case, sorted), `urlencode(name)=urlencode(value)`, joined
//!   by `&`; names compare after URL-encoding and lower-casing.
//! - This stand-in is stricter than the guide's minimum in what must be in
//!   the lists, so that nothing that arrives goes unsigned: every query
//!   parameter, `host`, and every `x-cos-*` header that arrived.

use super::crypto::hmac_sha1_matches;
use super::text::encode;
use super::{decoded_query, malformed, object_key, signed_names, Key, Rejection, WireRequest};

const FIELDS: [&str; 7] = [
    "q-sign-algorithm",
    "q-ak",
    "q-sign-time",
    "q-key-time",
    "q-header-list",
    "q-url-param-list",
    "q-signature",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `q-sign-time` as Unix seconds: the caller checks that now lies inside.
    pub start: i64,
    pub end: i64,
    pub http_string: String,
}

pub fn verify(req: &WireRequest, key: &Key) -> Result<Verified, Rejection> {
    let auth = req
        .only_header("authorization")?
        .ok_or_else(|| malformed("no Authorization header"))?;
    let mut fields: Vec<(&str, &str)> = Vec::new();
    for part in auth.split('&') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| malformed(format!("Authorization part `{part}` has no `=`")))?;
        if !FIELDS.contains(&k) || fields.iter().any(|(n, _)| *n == k) {
            return Err(malformed(format!(
                "Authorization has an unknown or repeated `{k}`"
            )));
        }
        fields.push((k, v));
    }
    let get = |name: &str| -> Result<&str, Rejection> {
        fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| malformed(format!("Authorization has no `{name}`")))
    };
    if get("q-sign-algorithm")? != "sha1" {
        return Err(malformed("q-sign-algorithm must be sha1"));
    }
    let ak = get("q-ak")?;
    if ak != key.id {
        return Err(Rejection::UnknownKey(ak.to_string()));
    }
    let key_time = get("q-key-time")?;
    if get("q-sign-time")? != key_time {
        return Err(malformed("q-sign-time and q-key-time differ"));
    }
    let (start, end) = key_time
        .split_once(';')
        .and_then(|(s, e)| Some((s.parse::<i64>().ok()?, e.parse::<i64>().ok()?)))
        .filter(|(s, e)| s < e)
        .ok_or_else(|| malformed("q-key-time is not <start>;<end> in Unix seconds"))?;

    let lists = |name: &str| -> Result<Vec<&str>, Rejection> {
        let v = get(name)?;
        if v.is_empty() {
            Ok(Vec::new())
        } else {
            signed_names(v)
        }
    };
    let header_list = lists("q-header-list")?;
    let param_list = lists("q-url-param-list")?;

    // Parameters: every one that arrived is listed, and only those.
    let params: Vec<(String, String)> = decoded_query(req)?
        .iter()
        .map(|(k, v)| (encode(k).to_ascii_lowercase(), encode(v)))
        .collect();
    let mut arrived: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    arrived.sort();
    arrived.dedup();
    if arrived != param_list {
        return Err(malformed(format!(
            "q-url-param-list `{}` is not the parameters that arrived `{}`",
            param_list.join(";"),
            arrived.join(";")
        )));
    }
    let mut http_params = Vec::new();
    for name in &param_list {
        let mut values = params.iter().filter(|(k, _)| k == name);
        let (Some((_, v)), None) = (values.next(), values.next()) else {
            return Err(malformed(format!("parameter `{name}` is repeated")));
        };
        http_params.push(format!("{name}={v}"));
    }

    let mut headers: Vec<(String, &str)> = Vec::new();
    for (n, v) in &req.headers {
        headers.push((encode(n).to_ascii_lowercase(), v.as_str()));
    }
    for (n, _) in &headers {
        if (n == "host" || n.starts_with("x-cos-")) && !header_list.contains(&n.as_str()) {
            return Err(malformed(format!("header `{n}` arrived but is not signed")));
        }
    }
    let mut http_headers = Vec::new();
    for name in &header_list {
        let mut values = headers.iter().filter(|(k, _)| k == name);
        let (Some((_, v)), None) = (values.next(), values.next()) else {
            return Err(malformed(format!(
                "signed header `{name}` did not arrive exactly once"
            )));
        };
        http_headers.push(format!("{name}={}", encode(v.trim())));
    }

    let http_string = format!(
        "{}\n/{}\n{}\n{}\n",
        req.method.to_ascii_lowercase(),
        object_key(req)?,
        http_params.join("&"),
        http_headers.join("&"),
    );
    let string_to_sign = format!("sha1\n{key_time}\n{}\n", sha1_hex(http_string.as_bytes()));
    let sign_key = hex::encode(super::crypto::hmac_sha1(
        key.secret.as_bytes(),
        key_time.as_bytes(),
    ));
    let sent = get("q-signature")?;
    let sent_bytes = hex::decode(sent).unwrap_or_default();
    if sent.bytes().any(|b| b.is_ascii_uppercase())
        || !hmac_sha1_matches(sign_key.as_bytes(), string_to_sign.as_bytes(), &sent_bytes)
    {
        return Err(Rejection::Mismatch {
            canonical: http_string,
        });
    }
    Ok(Verified {
        start,
        end,
        http_string,
    })
}

fn sha1_hex(data: &[u8]) -> String {
    use sha1::Digest as _;
    hex::encode(sha1::Sha1::digest(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Key = Key {
        id: "AKIDGpuformGoldenSecretIdNotReal0001",
        secret: "GpuformGoldenSecretKeyNotReal0002",
    };

    /// DeleteBucket as `cos-python-sdk-v5` 1.9.44 signed it (fixtures/object_storage).
    fn sdk_delete_bucket() -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "DELETE",
            "http://gpuform-datasets-1250000000.cos.ap-guangzhou.myqcloud.com/",
            vec![
                h(
                    "Host",
                    "gpuform-datasets-1250000000.cos.ap-guangzhou.myqcloud.com",
                ),
                h("Content-Length", "0"),
                h("Authorization", AUTH),
            ],
            vec![],
        )
    }

    const AUTH: &str = "q-sign-algorithm=sha1&q-ak=AKIDGpuformGoldenSecretIdNotReal0001\
        &q-sign-time=1740745745;1740755805&q-key-time=1740745745;1740755805\
        &q-header-list=content-length;host&q-url-param-list=&q-signature=c264034ce6ad8b9c23cfb2554c07fab7465ae658";

    #[test]
    fn accepts_the_sdk_request_and_refuses_changes() {
        let v = verify(&sdk_delete_bucket(), &KEY).unwrap();
        assert_eq!((v.start, v.end), (1740745745, 1740755805));
        assert_eq!(
            v.http_string,
            "delete\n/\n\ncontent-length=0&host=gpuform-datasets-1250000000.cos.ap-guangzhou.myqcloud.com\n"
        );
        // An unsigned parameter or x-cos- header is refused before the MAC.
        let mut r = sdk_delete_bucket();
        r.query = "tagging".into();
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Malformed(_))));
        let mut r = sdk_delete_bucket();
        r.headers.push(("x-cos-acl".into(), "public-read".into()));
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Malformed(_))));
        let mut r = sdk_delete_bucket();
        r.method = "GET".into();
        assert!(matches!(verify(&r, &KEY), Err(Rejection::Mismatch { .. })));
    }
}
