//! Epoch seconds as UTC calendar text and as "in 5m" / "3h ago", without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock, epoch seconds.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Year, month, day of the proleptic Gregorian calendar for days since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Splits epoch seconds into calendar fields and microseconds. `None` for a time no
/// calendar text can show (not finite, or beyond year 9999).
fn fields(t: f64) -> Option<(i64, u32, u32, i64, i64, i64, i64)> {
    if !t.is_finite() || t.abs() > 253_402_300_799.0 {
        return None;
    }
    let micros_total = (t * 1e6).round() as i64;
    let secs = micros_total.div_euclid(1_000_000);
    let micros = micros_total.rem_euclid(1_000_000);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    Some((y, mo, d, sod / 3600, sod % 3600 / 60, sod % 60, micros))
}

/// `2025-06-01 12:03:04` (UTC), for tables.
pub fn utc(t: f64) -> String {
    match fields(t) {
        Some((y, mo, d, h, mi, s, _)) => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}"),
        // Past the year 9999 (harel may arm such timers): the seconds, short.
        None if t.is_finite() => format!("{t:e} s"),
        None => t.to_string(),
    }
}

/// `2025-06-01T12:03:04.123456Z`: an ISO 8601 UTC date-time as pydantic writes a
/// `datetime` (the shape of harel's `Event.created_time`).
pub fn iso_micros(t: f64) -> String {
    match fields(t) {
        Some((y, mo, d, h, mi, s, us)) => {
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z")
        }
        None => t.to_string(),
    }
}

/// A duration in the two largest units that matter: `42s`, `5m`, `3h 20m`, `4d 2h`.
pub fn span(seconds: f64) -> String {
    let s = seconds.abs().round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => match s % 3600 / 60 {
            0 => format!("{}h", s / 3600),
            m => format!("{}h {m}m", s / 3600),
        },
        _ => match s % 86_400 / 3600 {
            0 => format!("{}d", s / 86_400),
            h => format!("{}d {h}h", s / 86_400),
        },
    }
}

/// How `t` stands to `now`: `in 5m`, `overdue 2m` (for a deadline such as a timer).
pub fn until(t: f64, now: f64) -> String {
    if t > now {
        format!("in {}", span(t - now))
    } else {
        format!("overdue {}", span(now - t))
    }
}

/// How long ago `t` was: `3h ago` (or `in 2m` for a time ahead of the clock).
pub fn ago(t: f64, now: f64) -> String {
    if t > now {
        format!("in {}", span(t - now))
    } else {
        format!("{} ago", span(now - t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_text() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00");
        // date -u -d @1700000000 => 2023-11-14 22:13:20
        assert_eq!(utc(1_700_000_000.0), "2023-11-14 22:13:20");
        // A leap day, and the day after.
        assert_eq!(utc(951_782_400.0), "2000-02-29 00:00:00");
        assert_eq!(utc(951_868_800.0), "2000-03-01 00:00:00");
        assert_eq!(utc(-1.0), "1969-12-31 23:59:59");
        assert_eq!(iso_micros(1_700_000_000.25), "2023-11-14T22:13:20.250000Z");
        assert_eq!(utc(f64::NAN), "NaN");
    }

    #[test]
    fn relative_text() {
        assert_eq!(span(42.4), "42s");
        assert_eq!(span(300.0), "5m");
        assert_eq!(span(3600.0 * 3.0 + 1200.0), "3h 20m");
        assert_eq!(span(86_400.0 * 4.0 + 7200.0), "4d 2h");
        assert_eq!(until(1300.0, 1000.0), "in 5m");
        assert_eq!(until(880.0, 1000.0), "overdue 2m");
        assert_eq!(ago(1000.0 - 7200.0, 1000.0), "2h ago");
    }
}
