//! Points in time as reflexr stores them, and the injectable clock.
//!
//! A [`Timestamp`] is an instant with microsecond precision (as Python's `datetime`) and the
//! UTC offset it was given in, so a time inside a stored document round-trips exactly as
//! given: pydantic writes `2026-01-01T12:00:00.123000Z`, or `...+02:00` for another offset.
//! Columns that queries compare hold UTC only: SQLite as SQLAlchemy's text
//! (`2026-01-01 12:00:00.123000`), PostgreSQL as `timestamptz`.

use crate::error::{Result, StoreError};
use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Timelike, Utc};
use std::cmp::Ordering;
use std::fmt;
use std::sync::{Arc, Mutex};

/// An instant (microseconds since the Unix epoch, UTC) and the offset it is shown in.
///
/// Equality and order are by instant alone, as Python compares aware datetimes.
#[derive(Clone, Copy, Debug)]
pub struct Timestamp {
    micros: i64,
    offset_seconds: i32,
}

/// The earliest instant a timestamp may hold: 0001-01-01T00:00:00Z.
const MIN_MICROS: i64 = -62_135_596_800_000_000;
/// The latest instant a timestamp may hold: 9999-12-31T23:59:59.999999Z.
const MAX_MICROS: i64 = 253_402_300_799_999_999;

impl Timestamp {
    /// The instant `micros` microseconds after the Unix epoch, in UTC.
    pub fn from_micros(micros: i64) -> Result<Self> {
        if !(MIN_MICROS..=MAX_MICROS).contains(&micros) {
            return Err(StoreError::invalid(
                "timestamp",
                format!("{micros} microseconds is outside the years 1 to 9999"),
            ));
        }
        Ok(Timestamp {
            micros,
            offset_seconds: 0,
        })
    }

    /// The instant `seconds` after the Unix epoch (rounded to the microsecond), in UTC.
    /// NaN, infinities and times outside the years 1 to 9999 are refused.
    pub fn from_secs_f64(seconds: f64) -> Result<Self> {
        if !seconds.is_finite() {
            return Err(StoreError::invalid(
                "timestamp",
                format!("{seconds} is not a finite number of seconds"),
            ));
        }
        let micros = (seconds * 1e6).round();
        if micros < MIN_MICROS as f64 || micros > MAX_MICROS as f64 {
            return Err(StoreError::invalid(
                "timestamp",
                format!("{seconds} seconds is outside the years 1 to 9999"),
            ));
        }
        Timestamp::from_micros(micros as i64)
    }

    /// Microseconds since the Unix epoch.
    pub fn micros(&self) -> i64 {
        self.micros
    }

    /// Seconds since the Unix epoch.
    pub fn secs_f64(&self) -> f64 {
        self.micros as f64 / 1e6
    }

    /// The UTC offset it is shown in, in seconds east of UTC.
    pub fn offset_seconds(&self) -> i32 {
        self.offset_seconds
    }

    /// The same instant shown in UTC.
    pub fn to_utc(self) -> Self {
        Timestamp {
            micros: self.micros,
            offset_seconds: 0,
        }
    }

    /// This instant plus `micros` microseconds (same offset); an error past the year 9999.
    pub fn plus_micros(self, micros: i64) -> Result<Self> {
        let sum = self
            .micros
            .checked_add(micros)
            .ok_or_else(|| StoreError::invalid("timestamp", "out of range"))?;
        let mut out = Timestamp::from_micros(sum)?;
        out.offset_seconds = self.offset_seconds;
        Ok(out)
    }

    fn datetime(&self) -> DateTime<FixedOffset> {
        // In range by construction; the offset is within a day.
        let offset =
            FixedOffset::east_opt(self.offset_seconds).unwrap_or(FixedOffset::east_opt(0).expect("UTC"));
        let utc = DateTime::<Utc>::from_timestamp_micros(self.micros).unwrap_or_default();
        utc.with_timezone(&offset)
    }

    /// As pydantic writes an aware datetime in JSON: `2026-01-01T12:00:00Z`,
    /// `2026-01-01T12:00:00.123000Z`, `2026-01-01T14:00:00+02:00`.
    pub fn to_json_text(&self) -> String {
        let dt = self.datetime();
        let mut out = dt.format("%Y-%m-%dT%H:%M:%S").to_string();
        let micros = dt.nanosecond() / 1000;
        if micros != 0 {
            out.push_str(&format!(".{micros:06}"));
        }
        if self.offset_seconds == 0 {
            out.push('Z');
        } else {
            let sign = if self.offset_seconds < 0 { '-' } else { '+' };
            let abs = self.offset_seconds.unsigned_abs();
            out.push_str(&format!("{sign}{:02}:{:02}", abs / 3600, (abs % 3600) / 60));
        }
        out
    }

    /// Parses an ISO 8601 date-time with an offset (`Z` or `±HH:MM`), as pydantic writes and
    /// reads them, with up to microsecond precision.
    pub fn parse_json_text(text: &str) -> Result<Self> {
        let parsed = DateTime::parse_from_rfc3339(text)
            .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%:z"))
            .map_err(|e| {
                StoreError::invalid(
                    "timestamp",
                    format!("{text:?} is not an aware ISO 8601 date-time: {e}"),
                )
            })?;
        if parsed.nanosecond() % 1000 != 0 {
            return Err(StoreError::invalid(
                "timestamp",
                format!("{text:?} is more precise than a microsecond"),
            ));
        }
        let mut out = Timestamp::from_micros(parsed.timestamp_micros())?;
        out.offset_seconds = parsed.offset().local_minus_utc();
        Ok(out)
    }

    /// UTC as SQLAlchemy stores a date-time in SQLite: `2026-01-01 12:00:00.123000`. Text of
    /// this fixed width sorts as the instants do.
    pub fn to_sqlite_text(&self) -> String {
        let utc = DateTime::<Utc>::from_timestamp_micros(self.micros).unwrap_or_default();
        utc.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
    }

    /// Parses SQLAlchemy's SQLite date-time text (UTC, no offset; the fraction optional).
    pub fn parse_sqlite_text(text: &str) -> Result<Self> {
        let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").map_err(|e| {
            StoreError::invalid("timestamp", format!("{text:?} is not a stored date-time: {e}"))
        })?;
        Timestamp::from_micros(Utc.from_utc_datetime(&naive).timestamp_micros())
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.micros == other.micros
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> Ordering {
        self.micros.cmp(&other.micros)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json_text())
    }
}

/// Where a storage gets the current time: envelope timestamps and lease expiry.
/// Injectable, so tests move time by hand ([`ManualClock`]).
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

impl<F: Fn() -> Timestamp + Send + Sync> Clock for F {
    fn now(&self) -> Timestamp {
        self()
    }
}

/// A clock that shows what it was last set to: tests move it by hand. Clones share the time.
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<Mutex<Timestamp>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Sets the time (it may go backwards: a storage must cope, as reflexr's do).
    pub fn set(&self, to: Timestamp) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = to;
    }

    /// Moves the time forward by `micros` microseconds.
    pub fn advance_micros(&self, micros: i64) {
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(next) = now.plus_micros(micros) {
            *now = next;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The system clock, in UTC: the default. Not on `wasm32-unknown-unknown`, which has none
/// (a host there passes its own clock).
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        Timestamp::from_micros(micros).unwrap_or(Timestamp {
            micros: 0,
            offset_seconds: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pydantic_text_round_trips() {
        for text in [
            "2026-01-01T12:00:00Z",
            "2026-01-01T12:00:00.123000Z",
            "2026-01-01T01:02:03.000500+02:00",
            "2026-01-01T00:00:00-05:30",
        ] {
            let t = Timestamp::parse_json_text(text).unwrap();
            assert_eq!(t.to_json_text(), text);
        }
        let a = Timestamp::parse_json_text("2026-01-01T13:00:00+02:00").unwrap();
        assert_eq!(a.to_sqlite_text(), "2026-01-01 11:00:00.000000");
        assert_eq!(
            a,
            Timestamp::parse_sqlite_text("2026-01-01 11:00:00.000000").unwrap()
        );
        assert!(Timestamp::parse_json_text("2026-01-01T12:00:00").is_err());
        assert!(Timestamp::from_secs_f64(f64::NAN).is_err());
    }
}
