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
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    }
}

fn system_today() -> Day {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    Day(secs.div_euclid(86_400))
}
