//! Huawei Cloud OBS signature (`Authorization: OBS AccessKeyID:Signature`,
//! HMAC-SHA1; OBS API "Authentication of Signature in a Header"), as the
//! official `esdk-obs-python` sends it. Not the APIG `SDK-HMAC-SHA256` of
//! [`crate::huawei`], which OBS does not accept.
//!
//! ```text
//! StringToSign = VERB \n Content-MD5 \n Content-Type \n Date \n
//!                CanonicalizedHeaders CanonicalizedResource
//! Signature    = Base64(HMAC-SHA1(SK, UTF-8(StringToSign)))
//! ```
//!
//! * Date: the `Date` header this signer returns (RFC 1123), or empty when
//!   the caller sends `x-obs-date` instead (then no `Date` is returned).
//! * CanonicalizedHeaders: every `x-obs-*` header, lower-case name, trimmed
//!   value, repeated names merged with `,`, sorted, `name:value\n` each.
//! * CanonicalizedResource: `/bucket/` then the object key (the decoded
//!   path without its leading `/`, encoded with `/` and `~` kept), then the
//!   sub-resources of [`SUBRESOURCES`] (and any `x-obs-*` parameter) the
//!   query carries, sorted, raw: `?lifecycle`, `?versionId=v1`. Other
//!   query parameters (`prefix`, `max-keys`…) are not signed.
//!
//! [`Signed::canonical_request`] holds the canonicalized headers and
//! resource.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::canon::subresources;
use crate::s3v2::{DateStandIn, Dialect};
use crate::Request;

/// Query parameters signed as sub-resources (compared case-insensitively).
pub const SUBRESOURCES: &[&str] = &[
    "acl",
    "append",
    "backtosource",
    "bucketstatus",
    "cors",
    "delete",
    "deletebucket",
    "directcoldaccess",
    "encryption",
    "inventory",
    "length",
    "lifecycle",
    "location",
    "logging",
    "metadata",
    "modify",
    "name",
    "notification",
    "object-lock",
    "obscompresspolicy",
    "partnumber",
    "policy",
    "policystatus",
    "position",
    "publicaccessblock",
    "quota",
    "rename",
    "replication",
    "requestpayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "retention",
    "storageclass",
    "storageinfo",
    "storagepolicy",
    "tagging",
    "torrent",
    "truncate",
    "uploadid",
    "uploads",
    "versionid",
    "versioning",
    "versions",
    "website",
    "x-image-process",
    "x-image-save-bucket",
    "x-image-save-object",
];

/// Object keys keep `/` and `~` in the canonicalized resource.
const KEY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// OBS's variant of the shared flow: an `x-obs-date` header empties the
/// Date line and no `Date` is sent.
pub const OBS: Dialect = Dialect {
    vendor: "OBS",
    date_header: "x-obs-date",
    date_stand_in: DateStandIn::EmptiesDate,
    canonical_headers: |req| Ok(canonical_headers(req)),
    resource,
};

/// Every `x-obs-*` header, repeated names merged with `,`.
fn canonical_headers(req: &Request) -> String {
    let mut obs: Vec<(String, Vec<String>)> = Vec::new();
    for (n, v) in &req.headers {
        let n = n.to_ascii_lowercase();
        if !n.starts_with("x-obs-") {
            continue;
        }
        let v = v.trim().to_string();
        match obs.iter_mut().find(|(k, _)| *k == n) {
            Some((_, vs)) => vs.push(v),
            None => obs.push((n, vec![v])),
        }
    }
    obs.sort();
    obs.iter()
        .map(|(n, vs)| format!("{n}:{}\n", vs.join(",")))
        .collect()
}

/// `/bucket/` then the encoded key, then the sub-resources.
fn resource(req: &Request, bucket: Option<&str>) -> String {
    let key = req.path.strip_prefix('/').unwrap_or(&req.path);
    let mut resource = match bucket {
        Some(b) => format!("/{b}/"),
        None => "/".to_string(),
    };
    resource.push_str(&utf8_percent_encode(key, KEY).to_string());
    resource.push_str(&subresources(&req.query, |k| {
        let l = k.to_ascii_lowercase();
        SUBRESOURCES.contains(&l.as_str()) || l.starts_with("x-obs-")
    }));
    resource
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Credentials, OffsetDateTime};

    const AK: &str = "HCY8BGCN1YM5ZWYOK1MH";
    const SK: &str = "9zYwf1uabSQY0JTnFqbUqG7vcfqYBaTdXde2GUcq";

    #[test]
    fn string_to_sign_layout() {
        let r = Request::new("PUT", "b.obs.cn-north-4.myhuaweicloud.com", "/dir/a b~.txt")
            .with_query("versionId", "v 1")
            .with_query("acl", "")
            .with_query("max-keys", "5")
            .with_header("Content-Type", "text/plain")
            .with_header("x-obs-meta-a", "2")
            .with_header("X-Obs-Meta-A", " 1 ")
            .with_header("x-obs-acl", "private");
        let t = OffsetDateTime::from_unix_timestamp(1710000000).unwrap();
        let s = OBS
            .sign(&r, &Credentials::new(AK, SK), Some("b"), t)
            .unwrap();
        assert_eq!(
            s.string_to_sign,
            "PUT\n\ntext/plain\nSat, 09 Mar 2024 16:00:00 GMT\n\
             x-obs-acl:private\nx-obs-meta-a:2,1\n/b/dir/a%20b~.txt?acl&versionId=v 1"
        );
        assert_eq!(
            s.headers[0],
            ("Date".into(), "Sat, 09 Mar 2024 16:00:00 GMT".into())
        );
    }

    #[test]
    fn x_obs_date_replaces_date() {
        let r = Request::new("GET", "obs.cn-north-4.myhuaweicloud.com", "/")
            .with_header("x-obs-date", "Sat, 09 Mar 2024 16:00:00 GMT");
        let t = OffsetDateTime::from_unix_timestamp(1710000000).unwrap();
        let s = OBS.sign(&r, &Credentials::new(AK, SK), None, t).unwrap();
        assert_eq!(
            s.string_to_sign,
            "GET\n\n\n\nx-obs-date:Sat, 09 Mar 2024 16:00:00 GMT\n/"
        );
        assert_eq!(s.headers.len(), 1);
    }

    #[test]
    fn subresource_list_is_sorted_and_lower_case() {
        let mut sorted = SUBRESOURCES.to_vec();
        sorted.sort();
        assert_eq!(sorted, SUBRESOURCES);
        assert!(SUBRESOURCES.iter().all(|s| s.to_ascii_lowercase() == *s));
    }
}
