//! Live prices: "quote prices for these instance types in this region" with
//! the user's credentials, through each cloud's own price API.
//!
//! A separate small trait rather than a method of [`crate::CloudDriver`]:
//! pricing is not provisioning. Each cloud crate implements it in its
//! `prices.rs`.

use crate::provider::RateLimit;
use crate::Result;
use crate::{ErrorKind, ProviderError};
use async_trait::async_trait;
pub use gpuform_catalog::{LiveQuote, QuoteTerm};

#[async_trait]
pub trait PriceApi: Send + Sync {
    /// How many instance types per second a refresh may quote, and how many
    /// at once: each quote is a few API calls, so this is the cloud's
    /// request budget divided by the calls one quote makes.
    fn price_rate(&self) -> RateLimit {
        RateLimit::new(1.0, 1)
    }

    /// The prices the cloud quotes now for one instance type in one region:
    /// on-demand, spot, and the subscriptions or reservations it sells.
    /// A type the cloud does not sell there is an `invalid` error naming it.
    async fn quote_prices(&self, region: &str, instance_type: &str) -> Result<Vec<LiveQuote>>;
}

/// A positive, finite price read from an API answer, or an error naming the field.
pub fn positive_price(action: &str, field: &str, v: Option<f64>) -> Result<f64> {
    match v {
        Some(p) if p.is_finite() && p > 0.0 => Ok(p),
        Some(p) => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("{action}: the answer's {field} is {p}, not a price above zero"),
        )),
        None => Err(ProviderError::new(
            ErrorKind::Invalid,
            format!("{action}: the answer has no {field} (not the documented response)"),
        )),
    }
}
