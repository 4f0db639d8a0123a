//! Tencent Cloud API 3.0, `TC3-HMAC-SHA256`.
//!
//! Like the official SDKs, signs exactly `content-type;host`. The caller sets
//! `Content-Type` (`application/json` for POST JSON; the SDK sends it without
//! a charset) and the `X-TC-Action` / `X-TC-Version` / `X-TC-Region` headers,
//! which are sent but not signed. The canonical query string is the query
//! exactly as sent ([`Request::encoded_query`], in order; empty for POST), and
//! the body is hashed as given: never re-serialise it after signing.
//!
//! Key derivation: `HMAC("TC3" + secret, date) → service → "tc3_request"`,
//! where `date` is the UTC date of the timestamp.

use crate::canon::{
    canonical_request, derive_key, encode_query_in_order, find_header, reject_reserved, sha256_hex,
    utc_date,
};
use crate::{Credentials, OffsetDateTime, Request, SignError, Signed};

pub const ALGORITHM: &str = "TC3-HMAC-SHA256";
const SIGNED_HEADERS: &str = "content-type;host";

/// Signs `req` for `service` (the first label of the endpoint, e.g. `cvm`
/// for `cvm.tencentcloudapi.com`) at `time` (whole seconds are used).
/// Returns `X-TC-Timestamp` and `Authorization`.
pub fn sign(
    req: &Request,
    creds: &Credentials,
    service: &str,
    time: OffsetDateTime,
) -> Result<Signed, SignError> {
    reject_reserved(&req.headers, &["host", "authorization", "x-tc-timestamp"])?;
    let content_type = find_header(&req.headers, "content-type")
        .ok_or(SignError::MissingHeader("Content-Type"))?;
    let timestamp = time.unix_timestamp();
    let date = utc_date(time)?;

    let canonical_request = canonical_request(
        &req.method,
        &req.encoded_path(),
        &encode_query_in_order(&req.query),
        &format!("content-type:{}\nhost:{}\n", content_type.trim(), req.host),
        SIGNED_HEADERS,
        &sha256_hex(&req.body),
    );
    let scope = format!("{date}/{service}/tc3_request");
    let timestamp = timestamp.to_string();
    let authorization = |signature: &str| {
        format!(
            "{ALGORITHM} Credential={}/{scope}, SignedHeaders={SIGNED_HEADERS}, Signature={signature}",
            creds.access_key_id()
        )
    };
    let key = derive_key("TC3", creds.secret(), &[&date, service, "tc3_request"]);
    let head = [ALGORITHM, &timestamp, &scope];
    let own = [("X-TC-Timestamp", timestamp.as_str())];
    Ok(Signed::sha256(
        &head,
        canonical_request,
        &key,
        &own,
        authorization,
    ))
}

/// [`sign`] at the current time.
pub fn sign_now(req: &Request, creds: &Credentials, service: &str) -> Result<Signed, SignError> {
    sign(req, creds, service, crate::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds() -> Credentials {
        Credentials::new(
            "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
            "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE",
        )
    }

    fn doc_request() -> Request {
        Request::new("POST", "cvm.tencentcloudapi.com", "/")
            .with_header("Content-Type", "application/json; charset=utf-8")
            .with_header("X-TC-Action", "DescribeInstances")
            .with_body(
                &br#"{"Limit": 1, "Filters": [{"Values": ["\u672a\u547d\u540d"], "Name": "instance-name"}]}"#[..],
            )
    }

    fn doc_time() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1551113065).unwrap()
    }

    #[test]
    fn published_example() {
        // Tencent's "Signature v3" guide: DescribeInstances, ts 1551113065.
        let s = sign(&doc_request(), &creds(), "cvm", doc_time()).unwrap();
        assert_eq!(
            s.signature,
            "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
        );
        assert!(s.canonical_request.starts_with(
            "POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:cvm.tencentcloudapi.com\n\ncontent-type;host\n"
        ));
        assert!(s
            .string_to_sign
            .starts_with("TC3-HMAC-SHA256\n1551113065\n2019-02-25/cvm/tc3_request\n"));
        assert_eq!(s.headers[0], ("X-TC-Timestamp".into(), "1551113065".into()));
        assert_eq!(
            s.authorization(),
            "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, \
             SignedHeaders=content-type;host, \
             Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
        );
    }

    #[test]
    fn unsigned_headers_do_not_change_the_signature() {
        let a = sign(&doc_request(), &creds(), "cvm", doc_time()).unwrap();
        let b = sign(
            &doc_request().with_header("X-TC-Region", "ap-guangzhou"),
            &creds(),
            "cvm",
            doc_time(),
        )
        .unwrap();
        assert_eq!(a.signature, b.signature);
    }

    #[test]
    fn needs_content_type_and_refuses_resigning() {
        let mut r = doc_request();
        r.headers.retain(|(n, _)| n != "Content-Type");
        assert_eq!(
            sign(&r, &creds(), "cvm", doc_time()),
            Err(SignError::MissingHeader("Content-Type"))
        );
        let mut r = doc_request();
        sign(&r, &creds(), "cvm", doc_time()).unwrap().apply(&mut r);
        assert!(matches!(
            sign(&r, &creds(), "cvm", doc_time()),
            Err(SignError::ReservedHeader(_))
        ));
    }

    #[test]
    fn errors_never_mention_the_secret() {
        let mut r = doc_request();
        r.headers.clear();
        let e = sign(&r, &creds(), "cvm", doc_time())
            .unwrap_err()
            .to_string();
        assert!(!e.contains("Gu5t9x"));
    }
}
