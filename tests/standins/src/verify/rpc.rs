//! Alibaba Cloud RPC signature, `SignatureMethod=HMAC-SHA1`,
//! `SignatureVersion=1.0` (ECS API "Request signatures", V2). gpuform signs
//! with [`super::acs3`]; this verifier exists so that the stand-in's checks
//! cover every scheme the SDK recordings use.
//!
//! ```text
//! CanonicalizedQueryString = every parameter but Signature (query, and a
//!     form-encoded body), sorted by name, name=value RFC 3986 encoded, joined with &
//! StringToSign = Method & percentEncode("/") & percentEncode(CanonicalizedQueryString)
//! Signature    = Base64(HMAC-SHA1(AccessKeySecret + "&", StringToSign))
//! ```

use base64::Engine as _;

use super::crypto::hmac_sha1_matches;
use super::text::{encode, query_pairs, sorted_query};
use super::{malformed, Key, Rejection, WireRequest};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub action: String,
    /// `Timestamp` as sent (`2016-02-23T12:46:24Z`).
    pub timestamp: String,
    pub nonce: String,
    pub string_to_sign: String,
}

pub fn verify(req: &WireRequest, key: &Key) -> Result<Verified, Rejection> {
    let mut params = query_pairs(&req.query)
        .ok_or_else(|| malformed("the query is not valid percent-encoding"))?;
    let form = req
        .only_header("content-type")?
        .is_some_and(|t| t.trim().starts_with("application/x-www-form-urlencoded"));
    if form {
        let body =
            std::str::from_utf8(&req.body).map_err(|_| malformed("the form body is not UTF-8"))?;
        params.extend(
            query_pairs(body)
                .ok_or_else(|| malformed("the form body is not valid percent-encoding"))?,
        );
    }
    let one = |name: &str| -> Result<String, Rejection> {
        let mut it = params.iter().filter(|(k, _)| k == name);
        match (it.next(), it.next()) {
            (Some((_, v)), None) => Ok(v.clone()),
            (None, _) => Err(malformed(format!("parameter `{name}` is missing"))),
            _ => Err(malformed(format!("parameter `{name}` is repeated"))),
        }
    };
    let signature = one("Signature")?;
    let access = one("AccessKeyId")?;
    if access != key.id {
        return Err(Rejection::UnknownKey(access));
    }
    if one("SignatureMethod")? != "HMAC-SHA1" || one("SignatureVersion")? != "1.0" {
        return Err(malformed(
            "only SignatureMethod HMAC-SHA1, SignatureVersion 1.0",
        ));
    }
    let (action, timestamp, nonce) = (one("Action")?, one("Timestamp")?, one("SignatureNonce")?);
    let signed: Vec<(String, String)> = params
        .into_iter()
        .filter(|(k, _)| k != "Signature")
        .collect();
    let string_to_sign = format!(
        "{}&{}&{}",
        req.method,
        encode("/"),
        encode(&sorted_query(&signed))
    );
    let sent = base64::engine::general_purpose::STANDARD
        .decode(signature.as_bytes())
        .unwrap_or_default();
    let secret = format!("{}&", key.secret);
    if !hmac_sha1_matches(secret.as_bytes(), string_to_sign.as_bytes(), &sent) {
        return Err(Rejection::Mismatch {
            canonical: string_to_sign,
        });
    }
    Ok(Verified {
        action,
        timestamp,
        nonce,
        string_to_sign,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_guide_example() {
        // DescribeRegions, testid / testsecret, 2016-02-23T12:46:24Z (GET).
        let key = Key {
            id: "testid",
            secret: "testsecret",
        };
        let target = "/?Timestamp=2016-02-23T12%3A46%3A24Z&Format=XML&AccessKeyId=testid\
            &Action=DescribeRegions&SignatureMethod=HMAC-SHA1\
            &SignatureNonce=3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf&Version=2014-05-26\
            &SignatureVersion=1.0&Signature=OLeaidS1JvxuMvnyHOwuJ%2BuX5qY%3D";
        let r = WireRequest::from_target("GET", target, vec![], vec![]);
        let v = verify(&r, &key).unwrap();
        assert_eq!(v.action, "DescribeRegions");
        assert!(v
            .string_to_sign
            .starts_with("GET&%2F&AccessKeyId%3Dtestid%26Action"));
        let mut post = r.clone();
        post.method = "POST".into();
        assert!(matches!(
            verify(&post, &key),
            Err(Rejection::Mismatch { .. })
        ));
        let mut changed = r;
        changed.query = changed.query.replace("Format=XML", "Format=XMM");
        assert!(matches!(
            verify(&changed, &key),
            Err(Rejection::Mismatch { .. })
        ));
    }
}
