//! Service Quotas `GetServiceQuota` for EC2's GPU instance quotas
//! (https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_GetServiceQuota.html).
//!
//! Request (JSON 1.1): `{"ServiceCode", "QuotaCode", "ContextId"?}`.
//! Answer: `{"Quota": ServiceQuota}` with `ServiceCode`, `ServiceName`,
//! `QuotaArn`, `QuotaCode`, `QuotaName`, `Value` (a number), `Unit`,
//! `Adjustable`, `GlobalQuota`, `UsageMetric`, `QuotaAppliedAtLevel`
//! (https://docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_ServiceQuota.html).
//! Errors, all HTTP 400 but `ServiceException` (500): `AccessDeniedException`
//! ("You do not have sufficient permission to perform this action."),
//! `IllegalArgumentException`, `NoSuchResourceException` ("The specified
//! resource does not exist."), `TooManyRequestsException`.
//!
//! The quotas are EC2's vCPU quotas of running GPU instances per family
//! and market ("Amazon EC2 instance type quotas",
//! https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html):
//! their value counts vCPUs, their `Unit` is `None`, and their usage metric
//! is `AWS/Usage` `ResourceCount` with `Class` `<family>/OnDemand` or
//! `<family>/Spot`, `Resource` `vCPU`.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Running On-Demand P instances (vCPUs).
pub const P_ON_DEMAND: &str = "L-417A185B";
/// Running On-Demand G and VT instances (vCPUs).
pub const G_VT_ON_DEMAND: &str = "L-DB2E81BA";
/// All P Spot Instance Requests (vCPUs).
pub const P_SPOT: &str = "L-7212CCBC";
/// All G and VT Spot Instance Requests (vCPUs).
pub const G_VT_SPOT: &str = "L-3819A6DF";

/// One EC2 GPU quota the stand-in knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuQuota {
    pub code: &'static str,
    pub name: &'static str,
    /// The usage metric's `Class` dimension.
    pub class: &'static str,
}

pub const GPU_QUOTAS: [GpuQuota; 4] = [
    GpuQuota {
        code: P_ON_DEMAND,
        name: "Running On-Demand P instances",
        class: "P/OnDemand",
    },
    GpuQuota {
        code: G_VT_ON_DEMAND,
        name: "Running On-Demand G and VT instances",
        class: "G/OnDemand",
    },
    GpuQuota {
        code: P_SPOT,
        name: "All P Spot Instance Requests",
        class: "P/Spot",
    },
    GpuQuota {
        code: G_VT_SPOT,
        name: "All G and VT Spot Instance Requests",
        class: "G/Spot",
    },
];

/// The applied values a test set, per (region, code), and the denial switch.
#[derive(Default)]
pub(super) struct Book {
    values: HashMap<(String, String), f64>,
    pub(super) deny: bool,
}

impl Book {
    pub(super) fn set(&mut self, region: &str, code: &str, value: f64) {
        assert!(
            GPU_QUOTAS.iter().any(|q| q.code == code),
            "the stand-in knows no quota {code}"
        );
        self.values
            .insert((region.to_string(), code.to_string()), value);
    }

    fn value(&self, region: &str, code: &str) -> f64 {
        self.values
            .get(&(region.to_string(), code.to_string()))
            .copied()
            .unwrap_or(0.0)
    }
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    super::wire_errors::Protocol::Json.error(status, code, message)
}

/// The answer to Service Quotas operation `op` signed for `region`.
pub(super) fn answer(book: &Book, op: &str, region: &str, body: &[u8]) -> Response {
    if op != "GetServiceQuota" {
        return error(
            StatusCode::BAD_REQUEST,
            "UnknownOperationException",
            "This stand-in answers GetServiceQuota only.",
        );
    }
    if book.deny {
        return error(
            StatusCode::BAD_REQUEST,
            "AccessDeniedException",
            "You do not have sufficient permission to perform this action.",
        );
    }
    let params: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "SerializationException",
                "The request body is not JSON.",
            )
        }
    };
    let field = |name: &str| params.get(name).and_then(Value::as_str).unwrap_or("");
    let (service, code) = (field("ServiceCode"), field("QuotaCode"));
    if service.is_empty() || code.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "IllegalArgumentException",
            "ServiceCode and QuotaCode are required.",
        );
    }
    let Some(quota) = GPU_QUOTAS
        .iter()
        .find(|q| service == "ec2" && q.code == code)
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "NoSuchResourceException",
            "The specified resource does not exist.",
        );
    };
    let value = book.value(region, code);
    super::json_answer(
        StatusCode::OK,
        &json!({
            "Quota": {
                "ServiceCode": "ec2",
                "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
                "QuotaArn": format!("arn:aws:servicequotas:{region}:{}:ec2/{code}", super::ACCOUNT_ID),
                "QuotaCode": code,
                "QuotaName": quota.name,
                "Value": value,
                "Unit": "None",
                "Adjustable": true,
                "GlobalQuota": false,
                "QuotaAppliedAtLevel": "ACCOUNT",
                "UsageMetric": {
                    "MetricNamespace": "AWS/Usage",
                    "MetricName": "ResourceCount",
                    "MetricDimensions": {
                        "Class": quota.class,
                        "Resource": "vCPU",
                        "Service": "EC2",
                        "Type": "Resource",
                    },
                    "MetricStatisticRecommendation": "Maximum",
                },
            }
        }),
    )
}
