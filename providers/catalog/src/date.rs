//! Dates and price ages: the calendar day type every "as of" and "today"
//! is read into, the age of a price from its `as_of` text, and the
//! hours-per-month convention of every monthly figure.
//!
//! Pure: nothing here reads the clock; callers pass today's [`Day`] in.

use serde::Serialize;

/// Hours in an average month, for monthly figures (365 × 24 / 12).
pub const HOURS_PER_MONTH: f64 = 730.0;

/// A calendar date, as days since 1970-01-01 (proleptic Gregorian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Day(pub i64);

impl Day {
    /// Days since the epoch of `y-m-d` (Howard Hinnant's `days_from_civil`).
    pub fn from_ymd(y: i64, m: u32, d: u32) -> Day {
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(m);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        Day(era * 146_097 + doe - 719_468)
    }

    /// Strictly `YYYY-MM-DD` naming a real calendar day.
    pub fn parse_iso(s: &str) -> Option<Day> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<u32> {
            let t = &s[r];
            t.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| t.parse().ok())?
        };
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        if !(1..=12).contains(&m) || d == 0 || d > days_in_month(i64::from(y), m) {
            return None;
        }
        Some(Day::from_ymd(i64::from(y), m, d))
    }
}

impl Day {
    /// The calendar date, `(year, month, day)` (Howard Hinnant's `civil_from_days`).
    pub fn ymd(self) -> (i64, u32, u32) {
        let z = self.0 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m, d)
    }
}

/// `YYYY-MM-DD`.
impl std::fmt::Display for Day {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m, d) = self.ymd();
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// How old a price is, read from its `as_of` text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PriceAge {
    /// `as_of` names a date (`2026-09-24`), a month (`2026-08`, read as its
    /// first day) or a year (`2024`, read as 1 January).
    Dated { days: i64, stale: bool },
    /// `as_of` says the date is unknown, or names no date gpuform can read.
    Unknown,
}

/// The first `YYYY[-MM[-DD]]` in an `as_of` text, as the earliest day it can
/// mean; `None` when the text says the date is unknown or has no date.
pub fn parse_as_of(as_of: &str) -> Option<Day> {
    let low = as_of.to_ascii_lowercase();
    // "undated (values unchanged since 2020-07-14 …)": the date in the
    // parenthesis is context, not the price's date.
    if low.contains("unknown") || low.trim_start().starts_with("undated") {
        return None;
    }
    let b = as_of.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let s = as_of.get(from..from + n)?;
        (s.len() == n && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    for i in 0..b.len() {
        if i > 0 && b[i - 1].is_ascii_digit() {
            continue;
        }
        let Some(y) = digits(i, 4) else { continue };
        if b.get(i + 4).is_some_and(|c| c.is_ascii_digit()) {
            continue;
        }
        if !(1990..=2999).contains(&y) {
            continue;
        }
        let mut month = 1;
        let mut day = 1;
        if b.get(i + 4) == Some(&b'-') {
            if let Some(m) = digits(i + 5, 2).filter(|m| (1..=12).contains(m)) {
                month = m;
                if b.get(i + 7) == Some(&b'-') {
                    if let Some(d) = digits(i + 8, 2).filter(|d| (1..=31).contains(d)) {
                        day = d;
                    }
                }
            }
        }
        return Some(Day::from_ymd(i64::from(y), month, day));
    }
    None
}

/// The age of a price dated `as_of` on `today`, flagged when older than `stale_days`.
pub fn price_age(as_of: &str, today: Day, stale_days: i64) -> PriceAge {
    match parse_as_of(as_of) {
        Some(d) => {
            let days = today.0 - d.0;
            PriceAge::Dated {
                days,
                stale: days > stale_days,
            }
        }
        None => PriceAge::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_parse_strictly() {
        assert_eq!(Day::parse_iso("1970-01-01"), Some(Day(0)));
        assert_eq!(
            Day::parse_iso("2026-11-29"),
            Some(Day::from_ymd(2026, 11, 29))
        );
        assert_eq!(
            Day::parse_iso("2024-02-29").map(|d| d.0 + 1),
            Day::parse_iso("2024-03-01").map(|d| d.0)
        );
        for bad in [
            "2025-02-29",
            "2026-13-01",
            "2026-04-31",
            "2026-1-01",
            "26-11-29",
            "2026/11/29",
            "",
            "2026-11-29x",
        ] {
            assert_eq!(Day::parse_iso(bad), None, "{bad}");
        }
    }

    #[test]
    fn days_print_as_they_parse() {
        for text in [
            "1970-01-01",
            "2000-02-29",
            "2026-11-29",
            "2026-12-31",
            "1999-03-01",
            "2100-02-28",
        ] {
            assert_eq!(Day::parse_iso(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn days_from_civil() {
        assert_eq!(Day::from_ymd(1970, 1, 1), Day(0));
        assert_eq!(Day::from_ymd(2000, 3, 1), Day(11_017));
        assert_eq!(
            Day::from_ymd(2026, 11, 29).0 - Day::from_ymd(2026, 1, 1).0,
            332
        );
        assert_eq!(
            Day::from_ymd(2024, 3, 1).0 - Day::from_ymd(2024, 2, 28).0,
            2
        );
    }

    #[test]
    fn as_of_forms() {
        assert_eq!(parse_as_of("2026-09-24"), Some(Day::from_ymd(2026, 9, 24)));
        assert_eq!(parse_as_of("2026-08"), Some(Day::from_ymd(2026, 8, 1)));
        assert_eq!(parse_as_of("2024"), Some(Day::from_ymd(2024, 1, 1)));
        assert_eq!(
            parse_as_of("snapshot>=2025-11"),
            Some(Day::from_ymd(2025, 11, 1))
        );
        assert_eq!(parse_as_of("doc-date-unknown"), None);
        assert_eq!(parse_as_of("doc-date-unknown(~2020-21?)"), None);
        assert_eq!(
            parse_as_of("undated (values unchanged since first commit 2020-07-14)"),
            None
        );
        assert_eq!(
            parse_as_of("2024-12-30 (commit date; file itself undated)"),
            Some(Day::from_ymd(2024, 12, 30))
        );
        assert_eq!(parse_as_of(""), None);
        assert_eq!(parse_as_of("v12345"), None);
        let today = Day::from_ymd(2026, 11, 29);
        assert_eq!(
            price_age("2026-09-24", today, 180),
            PriceAge::Dated {
                days: 66,
                stale: false
            }
        );
        assert!(matches!(
            price_age("2024", today, 180),
            PriceAge::Dated { stale: true, .. }
        ));
        assert_eq!(price_age("doc-date-unknown", today, 180), PriceAge::Unknown);
    }
}
