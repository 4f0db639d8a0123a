//! Account quotas: which of the account's limits an instance type counts
//! against, and how full it is. Asked at plan time ([`crate::Provider::quota`])
//! so that a plan that cannot fit fails before anything is created, instead
//! of at the create call.

use serde::{Deserialize, Serialize};

/// Which of the account's limits an instance type counts against, and how full it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaReading {
    /// The cloud's quota code where it has one (AWS `L-417A185B`).
    pub code: Option<String>,
    /// `Running On-Demand P instances`, `postpaid vCPUs`, ...
    pub name: String,
    /// What one instance of the type uses of it.
    pub unit: QuotaUnit,
    /// `None`: no limit.
    pub limit: Option<u64>,
    pub used: u64,
    /// How to raise it: the CLI command or console page.
    pub raise: String,
}

impl QuotaReading {
    /// What is left: the limit less what is used (`None`: no limit).
    pub fn have(&self) -> Option<u64> {
        self.limit.map(|l| l.saturating_sub(self.used))
    }

    /// Whether `need` more units fit.
    pub fn fits(&self, need: u64) -> bool {
        match self.have() {
            Some(h) => need <= h,
            None => true,
        }
    }
}

/// What one instance counts as against a quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuotaUnit {
    Vcpus,
    Gpus,
    Instances,
}

impl QuotaUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaUnit::Vcpus => "vCPUs",
            QuotaUnit::Gpus => "GPUs",
            QuotaUnit::Instances => "instances",
        }
    }
}

impl std::fmt::Display for QuotaUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The market an instance is bought in, for picking the quota (on-demand and
/// spot quotas differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QuotaMarket {
    OnDemand,
    Spot,
    Reserved,
}

impl QuotaMarket {
    /// The market of an instance's `pricing` attribute (`on-demand`,
    /// `spot`, `reserved-1y`, `reserved-3y`); unknown reads as on-demand.
    pub fn of_pricing(pricing: Option<&str>) -> QuotaMarket {
        match pricing {
            Some("spot") => QuotaMarket::Spot,
            Some(p) if p.starts_with("reserved") => QuotaMarket::Reserved,
            _ => QuotaMarket::OnDemand,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QuotaMarket::OnDemand => "on-demand",
            QuotaMarket::Spot => "spot",
            QuotaMarket::Reserved => "reserved",
        }
    }
}

impl std::fmt::Display for QuotaMarket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(limit: Option<u64>, used: u64) -> QuotaReading {
        QuotaReading {
            code: None,
            name: "postpaid vCPUs".into(),
            unit: QuotaUnit::Vcpus,
            limit,
            used,
            raise: "console".into(),
        }
    }

    #[test]
    fn what_is_left_is_limit_less_used_and_no_limit_always_fits() {
        assert_eq!(reading(Some(192), 100).have(), Some(92));
        assert!(reading(Some(192), 100).fits(92));
        assert!(!reading(Some(192), 100).fits(93));
        // Used above the limit (lowered after launch) leaves nothing, not an overflow.
        assert_eq!(reading(Some(8), 16).have(), Some(0));
        assert!(reading(None, 1_000).fits(u64::MAX));
    }

    #[test]
    fn pricing_names_its_market() {
        assert_eq!(QuotaMarket::of_pricing(Some("spot")), QuotaMarket::Spot);
        assert_eq!(
            QuotaMarket::of_pricing(Some("reserved-3y")),
            QuotaMarket::Reserved
        );
        assert_eq!(
            QuotaMarket::of_pricing(Some("on-demand")),
            QuotaMarket::OnDemand
        );
        assert_eq!(QuotaMarket::of_pricing(None), QuotaMarket::OnDemand);
    }
}
