//! Today's date, read from one place.
//!
//! Everything gpuform prints that depends on the date (a price's age, "as
//! of", later lease expiry) asks [`today`]. Tests pin it with
//! `GPUFORM_TODAY=YYYY-MM-DD` so that no output of theirs depends on the day
//! they run; users never need it (it exists for tests and reproducible
//! reports, and is documented as such in `gpuform --help`).

use serde::Serialize;

/// The environment variable that pins today's date (`YYYY-MM-DD`, UTC).
pub const TODAY_ENV: &str = "GPUFORM_TODAY";

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

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `GPUFORM_TODAY` when set, otherwise the system clock (UTC).
///
/// A malformed override is reported once by [`check_env`] at start-up; here
/// it falls back to the system clock so that library callers never panic.
pub fn today() -> Day {
    pinned().ok().flatten().unwrap_or_else(system_today)
}

/// The pinned date, if any; an error names the variable, the value and the
/// expected form.
pub fn pinned() -> Result<Option<Day>, String> {
    match std::env::var(TODAY_ENV) {
        Ok(v) => Day::parse_iso(v.trim()).map(Some).ok_or_else(|| {
            format!(
                "error: {TODAY_ENV}={v:?} is not a date\n  hint: write it as YYYY-MM-DD, e.g. {TODAY_ENV}=2026-11-29, or unset it to use the system clock"
            )
        }),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("error: {TODAY_ENV} is not valid UTF-8\n  hint: write it as YYYY-MM-DD"))
        }
    }
}

fn system_today() -> Day {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    Day(secs.div_euclid(86_400))
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
}
