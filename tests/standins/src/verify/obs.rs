//! Huawei Cloud OBS signature in a header ("Authentication of Signature in
//! a Header", support.huaweicloud.com/intl/en-us/api-obs/obs_04_0010.html).
//!
//! ```text
//! Authorization: OBS <AccessKeyID>:<Signature>
//! StringToSign = HTTP-Verb \n Content-MD5 \n Content-Type \n Date \n
//!                CanonicalizedHeaders CanonicalizedResource
//! Signature    = Base64(HMAC-SHA1(SK, UTF-8(StringToSign)))
//! ```
//!
//! - Date: the `Date` header; empty when an `x-obs-date` header is sent
//!   (which is then signed among the CanonicalizedHeaders).
//! - CanonicalizedHeaders: `x-obs-*` headers, lower-case names, values
//!   trimmed, repeated names merged with `,`, sorted by name.
//! - CanonicalizedResource: `/<bucket>/<object key>` (the key URL-encoded,
//!   `/` kept), then the sub-resources sorted by name: `?acl`,
//!   `?versionId=v1` (values as they are, not encoded).

use super::crypto::hmac_sha1_matches;
use super::text::encode;
use super::{
    decoded_query, id_and_base64_signature, malformed, object_key, prefixed_header_block,
    subresource_suffix, Key, Rejection, WireRequest,
};

/// The sub-resources of the guide's table (compared case-insensitively).
const SUBRESOURCES: &[&str] = &[
    "acl",
    "append",
    "cors",
    "delete",
    "deletebucket",
    "encryption",
    "inventory",
    "length",
    "lifecycle",
    "location",
    "logging",
    "metadata",
    "notification",
    "partnumber",
    "policy",
    "position",
    "quota",
    "replication",
    "requestpayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "storageclass",
    "storageinfo",
    "storagepolicy",
    "tagging",
    "torrent",
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The date that was signed (`Date`, or `x-obs-date`): the caller checks its age.
    pub date: String,
    pub string_to_sign: String,
}

/// Verifies `req`, sent to `bucket` (virtual host; `None` for a
/// service-level call).
pub fn verify(req: &WireRequest, key: &Key, bucket: Option<&str>) -> Result<Verified, Rejection> {
    let (id, sent) = id_and_base64_signature(req, "OBS")?;
    if id != key.id {
        return Err(Rejection::UnknownKey(id.to_string()));
    }
    let (date, date_line) = match req.only_header("x-obs-date")? {
        Some(d) => (d.trim().to_string(), String::new()),
        None => {
            let d = req
                .only_header("date")?
                .ok_or_else(|| malformed("no Date or x-obs-date header"))?
                .trim()
                .to_string();
            (d.clone(), d)
        }
    };
    let key_part = object_key(req)?
        .split('/')
        .map(encode)
        .collect::<Vec<_>>()
        .join("/");
    let resource = match bucket {
        Some(b) => format!("/{b}/{key_part}"),
        None => format!("/{key_part}"),
    };
    let query = decoded_query(req)?;
    let string_to_sign = format!(
        "{}\n{}\n{}\n{date_line}\n{}{resource}{}",
        req.method,
        req.only_header("content-md5")?.unwrap_or_default().trim(),
        req.only_header("content-type")?.unwrap_or_default().trim(),
        prefixed_header_block(req, |n| n.starts_with("x-obs-")),
        subresource_suffix(&query, |k| {
            let l = k.to_ascii_lowercase();
            SUBRESOURCES.contains(&l.as_str()) || l.starts_with("x-obs-")
        }),
    );
    if !hmac_sha1_matches(key.secret.as_bytes(), string_to_sign.as_bytes(), &sent) {
        return Err(Rejection::Mismatch {
            canonical: string_to_sign,
        });
    }
    Ok(Verified {
        date,
        string_to_sign,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide's example keys.
    const KEY: Key = Key {
        id: "HCY8BGCN1YM5ZWYOK1MH",
        secret: "9zYwf1uabSQY0JTnFqbUqG7vcfqYBaTdXde2GUcq",
    };

    /// CreateBucket as `esdk-obs-python` 3.26.6 signed it (fixtures/object_storage).
    fn sdk_create_bucket() -> WireRequest {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        WireRequest::from_target(
            "PUT",
            "http://gpuform-datasets-01.obs.cn-north-4.myhuaweicloud.com/",
            vec![
                h("x-obs-acl", "private"),
                h("x-obs-storage-class", "WARM"),
                h("Host", "gpuform-datasets-01.obs.cn-north-4.myhuaweicloud.com"),
                h("Date", "Sat, 09 Mar 2024 16:00:00 GMT"),
                h("Authorization", "OBS HCY8BGCN1YM5ZWYOK1MH:6jAHJly6PzNASqITLZXUs/7kykI="),
            ],
            b"<CreateBucketConfiguration><Location>cn-north-4</Location></CreateBucketConfiguration>"
                .to_vec(),
        )
    }

    #[test]
    fn accepts_the_sdk_request_and_refuses_changes() {
        let v = verify(&sdk_create_bucket(), &KEY, Some("gpuform-datasets-01")).unwrap();
        assert_eq!(
            v.string_to_sign,
            "PUT\n\n\nSat, 09 Mar 2024 16:00:00 GMT\nx-obs-acl:private\nx-obs-storage-class:WARM\n/gpuform-datasets-01/"
        );
        let mut r = sdk_create_bucket();
        r.headers[1].1 = "COLD".into();
        assert!(matches!(
            verify(&r, &KEY, Some("gpuform-datasets-01")),
            Err(Rejection::Mismatch { .. })
        ));
        let mut r = sdk_create_bucket();
        r.headers.remove(3);
        assert!(matches!(
            verify(&r, &KEY, Some("gpuform-datasets-01")),
            Err(Rejection::Malformed(_))
        ));
        assert!(matches!(
            verify(&sdk_create_bucket(), &KEY, Some("other")),
            Err(Rejection::Mismatch { .. })
        ));
        let stranger = Key {
            id: "X",
            secret: KEY.secret,
        };
        assert_eq!(
            verify(&sdk_create_bucket(), &stranger, Some("gpuform-datasets-01")),
            Err(Rejection::UnknownKey("HCY8BGCN1YM5ZWYOK1MH".into()))
        );
    }
}
