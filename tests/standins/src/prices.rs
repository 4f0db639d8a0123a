//! The price list a stand-in quotes from (its price actions: Tencent
//! InquiryPriceRunInstances, Alibaba DescribePrice and
//! DescribeSpotPriceHistory, Huawei BSS ratings, the AWS Price List Query
//! API). Tests set the list prices; a type without one is unknown to the
//! stand-in's price API, as a type the cloud does not sell.

use std::collections::BTreeMap;

/// What a type costs at a stand-in, in the cloud's currency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListPrice {
    /// Pay-as-you-go, per hour.
    pub hourly: f64,
    /// A one-month subscription, for the month.
    pub month: f64,
    /// A one-year subscription, for the year.
    pub year: f64,
    /// Spot per hour; `None` when the type is not sold as spot.
    pub spot: Option<f64>,
    /// A three-year reservation (AWS standard, No Upfront), for the three
    /// years; `None` when the price list has no three-year term for it.
    pub three_years: Option<f64>,
}

/// The stand-in's price list and its price faults.
#[derive(Debug, Default)]
pub struct PriceBook {
    prices: BTreeMap<String, ListPrice>,
    /// After this many more price answers, every price request fails with
    /// the cloud's internal error (an outage half-way through a refresh).
    pub fail_after: Option<u32>,
    /// Price requests answered so far.
    pub answered: u32,
}

impl PriceBook {
    pub fn set(&mut self, instance_type: &str, price: ListPrice) {
        self.prices.insert(instance_type.to_string(), price);
    }

    pub fn get(&self, instance_type: &str) -> Option<ListPrice> {
        self.prices.get(instance_type).copied()
    }

    /// Counts one price request; `true` when the injected outage refuses it.
    pub fn outage(&mut self) -> bool {
        if let Some(n) = self.fail_after {
            if self.answered >= n {
                return true;
            }
        }
        self.answered += 1;
        false
    }
}
