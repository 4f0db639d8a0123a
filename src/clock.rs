//! Today's date, read from one place.
//!
//! Everything gpuform prints that depends on the date (a price's age, "as
//! of", later lease expiry) asks [`today`]. Tests pin it with
//! `GPUFORM_TODAY=YYYY-MM-DD` so that no output of theirs depends on the day
//! they run; users never need it (it exists for tests and reproducible
//! reports, and is documented as such in `gpuform --help`).

pub use gpuform_catalog::Day;

/// The environment variable that pins today's date (`YYYY-MM-DD`, UTC).
pub const TODAY_ENV: &str = "GPUFORM_TODAY";

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

/// Now, in seconds since the Unix epoch (UTC): 00:00 of the pinned day when
/// `GPUFORM_TODAY` is set (so that uptimes and month-to-date costs in
/// tests do not depend on when they run), otherwise the system clock.
pub fn now_secs() -> i64 {
    match pinned().ok().flatten() {
        Some(day) => day.0 * 86_400,
        None => (wall_ms() / 1000) as i64,
    }
}

fn system_today() -> Day {
    Day((wall_ms() / 86_400_000) as i64)
}

/// The system clock, milliseconds since the Unix epoch, never pinned:
/// leases and the age of an interrupted create are compared across
/// processes (and hosts), which a pinned day would freeze.
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An instant of [`wall_ms`] as RFC 3339 in whole seconds (UTC).
pub fn rfc3339_ms(ms: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

/// The system clock as RFC 3339 in whole seconds (UTC), never pinned: when
/// a lock was taken, when a create failed.
pub fn wall_rfc3339() -> String {
    rfc3339_ms(wall_ms())
}

/// Seconds since the epoch of an RFC 3339 / ISO 8601 instant as the clouds
/// write them: `2026-11-02T10:00:00Z`, `…T10:00:00.000Z`, `…T10:00Z`
/// (Alibaba), `…+08:00`. `None` when it is not one.
pub fn parse_instant(text: &str) -> Option<i64> {
    let t = text.trim();
    let day = gpuform_catalog::Day::parse_iso(t.get(0..10)?)?;
    let rest = t.get(10..)?;
    let rest = rest.strip_prefix('T').or_else(|| rest.strip_prefix(' '))?;
    let (clock, offset) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "Z"),
    };
    let mut parts = clock.split(':');
    let num = |s: Option<&str>| -> Option<i64> {
        let s = s?;
        (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
    };
    let h = num(parts.next())?;
    let m = num(parts.next())?;
    let s = match parts.next() {
        None => 0,
        Some(sec) => num(Some(sec.split('.').next()?))?,
    };
    if parts.next().is_some() || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let off = match offset {
        "Z" | "z" => 0,
        o => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let hm = o.get(1..)?.replace(':', "");
            if hm.len() != 4 || !hm.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            sign * (hm[0..2].parse::<i64>().ok()? * 3600 + hm[2..4].parse::<i64>().ok()? * 60)
        }
    };
    Some(day.0 * 86_400 + h * 3600 + m * 60 + s - off)
}

/// `now` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_instant(secs: i64) -> String {
    let (y, m, d) = Day(secs.div_euclid(86_400)).ymd();
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// 00:00 UTC on the first of the month of `now`.
pub fn month_start(now: i64) -> i64 {
    let (y, m, _) = Day(now.div_euclid(86_400)).ymd();
    Day::from_ymd(y, m, 1).0 * 86_400
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_as_the_clouds_write_them() {
        let base = parse_instant("2026-11-02T10:00:00Z").unwrap();
        assert_eq!(format_instant(base), "2026-11-02T10:00:00Z");
        assert_eq!(parse_instant("2026-11-02T10:00Z"), Some(base));
        assert_eq!(parse_instant("2026-11-02T10:00:00.123Z"), Some(base));
        assert_eq!(parse_instant("2026-11-02T18:00:00+08:00"), Some(base));
        assert_eq!(parse_instant("2026-11-02T05:00:00-05:00"), Some(base));
        assert_eq!(parse_instant("2026-11-02 10:00:00"), Some(base));
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00Z",
            "2026-11-02T25:00Z",
            "2026-11-02T10:00+8",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
        assert_eq!(format_instant(month_start(base)), "2026-11-01T00:00:00Z");
        let jan = parse_instant("2027-01-31T23:59:59Z").unwrap();
        assert_eq!(format_instant(month_start(jan)), "2027-01-01T00:00:00Z");
    }
}
