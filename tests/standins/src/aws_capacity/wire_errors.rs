//! Errors in the format of the protocol a request came in, so the SDK that
//! sent it parses them as it would AWS's:
//! - JSON 1.1 (Service Quotas): `{"__type": CODE, "Message": …}`
//!   (https://smithy.io/2.0/aws/protocols/aws-json-1_1-protocol.html, "Operation error serialization");
//! - EC2 query: `<Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>`
//!   (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html);
//! - S3 REST: `<Error><Code/><Message/><RequestId/></Error>`
//!   (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html);
//! - other query services (STS): `<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/></ErrorResponse>`
//!   (https://docs.aws.amazon.com/STS/latest/APIReference/CommonErrors.html).
//!
//! A refused signature: `SignatureDoesNotMatch` (HTTP 403) on EC2, S3 and
//! STS, `InvalidSignatureException` (403) on JSON services; an unknown key:
//! `AuthFailure` (401) on EC2, `InvalidAccessKeyId` on S3,
//! `InvalidClientTokenId` on STS, `UnrecognizedClientException` on JSON
//! services (the common errors pages above).

use crate::verify::{Rejection, WireRequest};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The request id of every answer made here (AWS's are UUIDs).
pub(super) const REQUEST_ID: &str = "7a62c49f-347e-4fc4-9331-6e8eEXAMPLE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Protocol {
    Json,
    Ec2,
    S3,
    Query,
}

impl Protocol {
    /// JSON when the request names an `X-Amz-Target`; otherwise by the
    /// service its credential scope names.
    pub(super) fn of(req: &WireRequest) -> Protocol {
        if req.header_values("x-amz-target").next().is_some() {
            return Protocol::Json;
        }
        match credential_part(req, 3).as_deref() {
            Some("ec2") => Protocol::Ec2,
            Some("s3") => Protocol::S3,
            _ => Protocol::Query,
        }
    }

    /// The answer to a request whose signature was refused.
    pub(super) fn refusal(self, why: &Rejection) -> Response {
        let (code, status) = match (why, self) {
            (Rejection::UnknownKey(_), Protocol::Json) => {
                ("UnrecognizedClientException", StatusCode::FORBIDDEN)
            }
            (Rejection::UnknownKey(_), Protocol::Ec2) => ("AuthFailure", StatusCode::UNAUTHORIZED),
            (Rejection::UnknownKey(_), Protocol::S3) => {
                ("InvalidAccessKeyId", StatusCode::FORBIDDEN)
            }
            (Rejection::UnknownKey(_), Protocol::Query) => {
                ("InvalidClientTokenId", StatusCode::FORBIDDEN)
            }
            (_, Protocol::Json) => ("InvalidSignatureException", StatusCode::FORBIDDEN),
            _ => ("SignatureDoesNotMatch", StatusCode::FORBIDDEN),
        };
        let message = match why {
            Rejection::UnknownKey(_) => {
                "The security token included in the request is invalid.".to_string()
            }
            other => format!(
                "The request signature we calculated does not match the signature you provided ({other})."
            ),
        };
        self.error(status, code, &message)
    }

    /// An error answer of this protocol.
    pub(super) fn error(self, status: StatusCode, code: &str, message: &str) -> Response {
        let message = xml_escape(message);
        let (content_type, body) = match self {
            Protocol::Json => {
                return super::json_answer(
                    status,
                    &serde_json::json!({"__type": code, "Message": message}),
                )
            }
            Protocol::Ec2 => (
                "text/xml;charset=UTF-8",
                format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors><RequestID>{REQUEST_ID}</RequestID></Response>"
                ),
            ),
            Protocol::S3 => (
                "application/xml",
                format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>{REQUEST_ID}</RequestId></Error>"
                ),
            ),
            Protocol::Query => (
                "text/xml",
                format!(
                    "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>{REQUEST_ID}</RequestId></ErrorResponse>"
                ),
            ),
        };
        (status, [("content-type", content_type)], body).into_response()
    }
}

/// Part `i` of the `Credential=AKID/date/region/service/aws4_request` field
/// of a SigV4 `Authorization` header (0: the key id, 3: the service).
pub(super) fn credential_part(req: &WireRequest, i: usize) -> Option<String> {
    let auth = req.header_values("authorization").next()?;
    let rest = auth.strip_prefix(crate::verify::sigv4::ALGORITHM)?;
    let credential = rest
        .split(',')
        .filter_map(|f| f.trim().strip_prefix("Credential="))
        .next()?;
    credential.split('/').nth(i).map(str::to_string)
}

pub(super) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed_for(service: &str, target: Option<&str>) -> WireRequest {
        let mut headers = vec![(
            "Authorization".to_string(),
            format!("AWS4-HMAC-SHA256 Credential=AKID/20261201/us-east-1/{service}/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"),
        )];
        if let Some(t) = target {
            headers.push(("X-Amz-Target".into(), t.into()));
        }
        WireRequest::from_target("POST", "/", headers, Vec::new())
    }

    #[test]
    fn the_protocol_follows_the_target_then_the_service() {
        assert_eq!(
            Protocol::of(&signed_for(
                "servicequotas",
                Some("ServiceQuotasV20190624.GetServiceQuota")
            )),
            Protocol::Json
        );
        assert_eq!(Protocol::of(&signed_for("ec2", None)), Protocol::Ec2);
        assert_eq!(Protocol::of(&signed_for("s3", None)), Protocol::S3);
        assert_eq!(Protocol::of(&signed_for("sts", None)), Protocol::Query);
        assert_eq!(
            credential_part(&signed_for("ec2", None), 0).as_deref(),
            Some("AKID")
        );
    }
}
