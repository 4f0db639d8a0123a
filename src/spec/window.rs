//! `maintenance_window:` of a cluster: when `gpuform reconcile` may make a
//! disruptive change on its own (replace or delete something that still
//! runs). A window is a weekly slot: the days it opens on, the time of day
//! it opens at, how long it stays open, in UTC or at a fixed offset.
//!
//! The functions here take `now` (seconds since the epoch) as an argument;
//! the reconciler passes [`crate::clock::now_secs`], which tests pin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest window: a week (a window that long is always open).
pub const MAX_DURATION_SECS: u64 = 7 * 86_400;

/// `maintenance_window`, e.g. `{days: [sat, sun], start: "02:00", duration: 4h}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceWindow {
    /// The days it opens on (`mon` … `sun`); absent, every day.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub days: Vec<Weekday>,
    /// When it opens, `HH:MM` (24-hour clock) in `timezone`.
    #[schemars(regex(pattern = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"))]
    pub start: String,
    /// How long it stays open: `30m`, `4h`, `1d` (at most `7d`).
    pub duration: String,
    /// `UTC` (default) or a fixed offset from it such as `+02:00` or
    /// `UTC-05:00`. Zone names (`Europe/Berlin`) are not read: their offset
    /// moves with daylight saving, a window at a fixed offset does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(UTC|(UTC)?[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"))]
    pub timezone: Option<String>,
}

super::model::spec_enum! {
    // A day of the week, as the spec writes it: its first three letters.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum Weekday {
        Mon = "mon",
        Tue = "tue",
        Wed = "wed",
        Thu = "thu",
        Fri = "fri",
        Sat = "sat",
        Sun = "sun",
    }
}

impl Weekday {
    /// Monday is 0.
    pub fn index(self) -> i64 {
        self as i64
    }
}

/// `HH:MM` as minutes after midnight.
pub fn parse_clock(text: &str) -> Option<i64> {
    let (h, m) = text.trim().split_once(':')?;
    let num = |s: &str, max: i64| -> Option<i64> {
        (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
            .filter(|n| *n <= max)
    };
    Some(num(h, 23)? * 60 + num(m, 59)?)
}

/// `UTC`, `+HH:MM`, `-HH:MM`, `UTC+HH:MM`, `UTC-HH:MM` as seconds east of UTC.
pub fn parse_offset(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("utc") || t == "Z" {
        return Some(0);
    }
    let t = t
        .strip_prefix("UTC")
        .or_else(|| t.strip_prefix("utc"))
        .unwrap_or(t);
    let (sign, rest) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    Some(sign * parse_clock(rest)? * 60)
}

/// A duration of a window, in seconds: above zero, at most a week.
pub fn parse_duration(text: &str) -> Option<u64> {
    humantime::parse_duration(text.trim())
        .ok()
        .map(|d| d.as_secs())
        .filter(|s| *s > 0 && *s <= MAX_DURATION_SECS)
}

/// Where `now` stands with respect to a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Open; it closes at this instant.
    Open { closes: i64 },
    /// Closed; it opens next at this instant.
    Closed { opens: i64 },
}

impl MaintenanceWindow {
    /// `(start after midnight, duration, offset east of UTC)` in seconds
    /// (the fields are validated at load; a bad one reads as never open).
    fn parts(&self) -> Option<(i64, i64, i64)> {
        let start = parse_clock(&self.start)? * 60;
        let duration = parse_duration(&self.duration)? as i64;
        let offset = match &self.timezone {
            Some(t) => parse_offset(t)?,
            None => 0,
        };
        Some((start, duration, offset))
    }

    fn opens_on(&self, local_day: i64) -> bool {
        // 1970-01-01 was a Thursday (index 3).
        let weekday = (local_day + 3).rem_euclid(7);
        self.days.is_empty() || self.days.iter().any(|d| d.index() == weekday)
    }

    /// Whether the window is open at `now`, and when it closes or opens next.
    pub fn standing(&self, now: i64) -> Standing {
        let Some((start, duration, offset)) = self.parts() else {
            return Standing::Closed { opens: i64::MAX };
        };
        let today = (now + offset).div_euclid(86_400);
        let mut closes: Option<i64> = None;
        let mut opens: Option<i64> = None;
        // A window opened up to a week ago may still be open.
        for day in today - 8..=today + 8 {
            if !self.opens_on(day) {
                continue;
            }
            let at = day * 86_400 + start - offset;
            if at <= now && now < at + duration {
                closes = Some(closes.map_or(at + duration, |c| c.max(at + duration)));
            } else if at > now && !matches!(opens, Some(o) if o <= at) {
                opens = Some(at);
            }
        }
        match (closes, opens) {
            (Some(closes), _) => Standing::Open { closes },
            (None, Some(opens)) => Standing::Closed { opens },
            (None, None) => Standing::Closed { opens: i64::MAX },
        }
    }

    /// The window in words, for log lines: `sat, sun 02:00 UTC for 4h`.
    pub fn describe(&self) -> String {
        let days = if self.days.is_empty() {
            "daily".to_string()
        } else {
            self.days
                .iter()
                .map(|d| d.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "{days} {} {} for {}",
            self.start.trim(),
            self.timezone.as_deref().unwrap_or("UTC"),
            self.duration.trim()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{format_instant, parse_instant};

    fn window(
        days: &[Weekday],
        start: &str,
        duration: &str,
        tz: Option<&str>,
    ) -> MaintenanceWindow {
        MaintenanceWindow {
            days: days.to_vec(),
            start: start.into(),
            duration: duration.into(),
            timezone: tz.map(String::from),
        }
    }

    fn at(t: &str) -> i64 {
        parse_instant(t).unwrap()
    }

    fn standing(w: &MaintenanceWindow, now: &str) -> String {
        match w.standing(at(now)) {
            Standing::Open { closes } => format!("open until {}", format_instant(closes)),
            Standing::Closed { opens } => format!("opens {}", format_instant(opens)),
        }
    }

    #[test]
    fn a_weekend_window_opens_and_closes_on_its_days() {
        use Weekday::*;
        let w = window(&[Sat, Sun], "02:00", "4h", None);
        // 2026-12-04 is a Friday.
        assert_eq!(
            standing(&w, "2026-12-04T12:00:00Z"),
            "opens 2026-12-05T02:00:00Z"
        );
        assert_eq!(
            standing(&w, "2026-12-05T02:00:00Z"),
            "open until 2026-12-05T06:00:00Z"
        );
        assert_eq!(
            standing(&w, "2026-12-05T05:59:59Z"),
            "open until 2026-12-05T06:00:00Z"
        );
        assert_eq!(
            standing(&w, "2026-12-05T06:00:00Z"),
            "opens 2026-12-06T02:00:00Z"
        );
        assert_eq!(
            standing(&w, "2026-12-06T07:00:00Z"),
            "opens 2026-12-12T02:00:00Z"
        );
    }

    #[test]
    fn a_window_past_midnight_and_at_an_offset() {
        use Weekday::*;
        // Sunday 23:00 for 2 h: open at Monday 00:30.
        let w = window(&[Sun], "23:00", "2h", None);
        assert_eq!(
            standing(&w, "2026-11-30T00:30:00Z"),
            "open until 2026-11-30T01:00:00Z"
        );
        // 02:00 at +02:00 is 00:00 UTC; every day.
        let w = window(&[], "02:00", "30m", Some("+02:00"));
        assert_eq!(
            standing(&w, "2026-12-04T23:59:00Z"),
            "opens 2026-12-05T00:00:00Z"
        );
        assert_eq!(
            standing(&w, "2026-12-05T00:10:00Z"),
            "open until 2026-12-05T00:30:00Z"
        );
        // Saturday 01:00 at UTC-05:00 is Saturday 06:00 UTC.
        let w = window(&[Sat], "01:00", "1h", Some("UTC-05:00"));
        assert_eq!(
            standing(&w, "2026-12-05T05:00:00Z"),
            "opens 2026-12-05T06:00:00Z"
        );
        // A week-long window is always open.
        let w = window(&[Mon], "00:00", "7d", None);
        assert!(matches!(
            w.standing(at("2026-12-06T23:00:00Z")),
            Standing::Open { .. }
        ));
    }

    #[test]
    fn the_parts_are_read_strictly() {
        assert_eq!(parse_clock("02:00"), Some(120));
        assert_eq!(parse_clock("23:59"), Some(23 * 60 + 59));
        for bad in ["2:00", "24:00", "02:60", "0200", "02:00:00", "", "noon"] {
            assert_eq!(parse_clock(bad), None, "{bad}");
        }
        assert_eq!(parse_offset("UTC"), Some(0));
        assert_eq!(parse_offset("+05:30"), Some(5 * 3600 + 1800));
        assert_eq!(parse_offset("UTC-03:00"), Some(-3 * 3600));
        for bad in ["Europe/Berlin", "+5", "+24:00", "CET", ""] {
            assert_eq!(parse_offset(bad), None, "{bad}");
        }
        assert_eq!(parse_duration("4h"), Some(4 * 3600));
        assert_eq!(parse_duration("7d"), Some(7 * 86_400));
        for bad in ["0s", "8d", "soon", ""] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
