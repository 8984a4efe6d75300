//! The input checks every backend shares: ids, times, page sizes, seqs, date-times, events
//! and executions. Nothing here serializes (see `prepare`).

use crate::error::{Result, StoreError};
use crate::executions::{Event, Execution};

/// The largest JSON document (an execution, an event, a trace step, a spawn context) a store
/// accepts, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 8 << 20;
/// The longest id (execution, event, path) a store accepts, in bytes.
pub const MAX_ID_BYTES: usize = 4096;
/// The largest page any read returns.
pub const MAX_PAGE: usize = 10_000;

/// Checks an id-like string: not empty, not too long, no NUL.
pub fn check_id(field: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(StoreError::invalid(field, "must not be empty"));
    }
    if value.len() > MAX_ID_BYTES {
        return Err(StoreError::invalid(
            field,
            format!("longer than {MAX_ID_BYTES} bytes"),
        ));
    }
    if value.contains('\0') {
        return Err(StoreError::invalid(field, "contains a NUL character"));
    }
    Ok(())
}

/// The `now` of "every timer" (the CLI's `timers` without a bound, the monitor's timer
/// listings): the largest finite time, which [`check_time`] accepts and every armed timer's
/// `fire_at` (finite, as `check_time` requires) is at or before, however far off (past the
/// year 9999 too), as harel's `due_timers(inf)` lists them. Every backend compares it as a
/// plain double (memory: `f64`, SQLite: `REAL`, PostgreSQL: `double precision`); the behaviour
/// suite checks it with timers at 2e12, 1e300 and `f64::MAX` itself.
pub const ALL_TIMERS: f64 = f64::MAX;

/// Checks a time in epoch seconds: finite and not negative.
pub fn check_time(field: &str, value: f64) -> Result<()> {
    if !value.is_finite() {
        return Err(StoreError::invalid(
            field,
            format!("{value} is not a finite number of seconds"),
        ));
    }
    if value < 0.0 {
        return Err(StoreError::invalid(field, format!("{value} is negative")));
    }
    Ok(())
}

/// Checks a page size.
pub fn check_limit(field: &str, limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_PAGE {
        return Err(StoreError::invalid(
            field,
            format!("{limit} is not in 1..={MAX_PAGE}"),
        ));
    }
    Ok(())
}

/// Checks an outbox or spawn sequence number.
pub fn check_seq(field: &str, seq: i64) -> Result<()> {
    if seq < 1 {
        return Err(StoreError::invalid(
            field,
            format!("{seq} is not a sequence number (1 or more)"),
        ));
    }
    Ok(())
}

/// Checks an ISO 8601 date-time as pydantic (harel's models) reads it:
/// `YYYY-MM-DD[T ]HH:MM[:SS[.ffffff]][Z|±HH:MM|±HHMM]`, with a real calendar date, so that
/// harel can load whatever execstore stored. (pydantic's lax mode also takes a bare date,
/// Unix seconds and more than six fraction digits, which it rewrites; execstore keeps the
/// text as given, so it refuses those.)
fn check_datetime(field: &str, value: &str) -> Result<()> {
    if parse_datetime(value).is_some() {
        Ok(())
    } else {
        Err(StoreError::invalid(
            field,
            format!("{value:?} is not an ISO 8601 date-time"),
        ))
    }
}

fn parse_datetime(value: &str) -> Option<()> {
    let b = value.as_bytes();
    let num = |at: usize, len: usize| -> Option<u32> {
        let part = b.get(at..at + len)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let byte = |at: usize| b.get(at).copied();
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    let date_ok = year >= 1 && byte(4)? == b'-' && byte(7)? == b'-' && (1..=days).contains(&day);
    let (hour, minute) = (num(11, 2)?, num(14, 2)?);
    let time_ok = matches!(byte(10)?, b'T' | b't' | b' ') && byte(13)? == b':' && hour < 24 && minute < 60;
    if !(date_ok && time_ok) {
        return None;
    }
    let mut at = 16;
    if byte(at) == Some(b':') {
        if num(at + 1, 2)? >= 60 {
            return None;
        }
        at += 3;
        if byte(at) == Some(b'.') {
            let frac = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if !(1..=6).contains(&frac) {
                return None;
            }
            at += 1 + frac;
        }
    }
    match &b[at..] {
        [] | [b'Z'] | [b'z'] => Some(()),
        [b'+' | b'-', ..] => {
            let colon = byte(at + 3) == Some(b':');
            let (hh, mm) = (num(at + 1, 2)?, num(at + if colon { 4 } else { 3 }, 2)?);
            let len = if colon { 6 } else { 5 };
            (b.len() == at + len && hh < 24 && mm < 60).then_some(())
        }
        _ => None,
    }
}

/// Checks an event (outbox, deferred).
pub fn check_event(field: &str, event: &Event) -> Result<()> {
    check_event_fields(event).map_err(|e| e.within(|| field.to_owned()))
}

/// [`check_event`] with each field named by itself (`id`, `kind`, ...).
pub(crate) fn check_event_fields(event: &Event) -> Result<()> {
    check_id("id", &event.id)?;
    if event.kind.is_empty() {
        return Err(StoreError::invalid("kind", "must not be empty"));
    }
    if let Some(t) = &event.created_time {
        check_datetime("created_time", t)?;
    }
    if let Some(t) = &event.received_time {
        check_datetime("received_time", t)?;
    }
    Ok(())
}

/// Checks an execution's own fields (not its size).
pub fn check_execution(exe: &Execution) -> Result<()> {
    check_id("execution.id", &exe.id)?;
    check_id("execution.definition_id", &exe.definition_id)?;
    if exe.version < 0 || exe.version == i64::MAX {
        return Err(StoreError::invalid(
            "execution.version",
            format!("{} is out of range", exe.version),
        ));
    }
    if !(0..=4).contains(&exe.priority) {
        return Err(StoreError::invalid(
            "execution.priority",
            format!("{} is not in 0..=4", exe.priority),
        ));
    }
    if exe.processed_events < 0 {
        return Err(StoreError::invalid(
            "execution.processed_events",
            "must not be negative",
        ));
    }
    for (name, t) in [
        ("execution.created_at", exe.created_at),
        ("execution.updated_at", exe.updated_at),
        ("execution.finished_at", exe.finished_at),
        ("execution.expires_at", exe.expires_at),
    ] {
        if let Some(t) = t {
            check_time(name, t)?;
        }
    }
    for (i, ev) in exe.deferred.iter().enumerate() {
        check_event_fields(ev).map_err(|e| e.within(|| format!("execution.deferred[{i}]")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pydantic's own verdict on these and more: `datetimes_get_pydantics_verdict` in
    /// tests/tests/harel_interop.rs asks harel's `Event` model about each.
    #[test]
    fn datetimes_as_pydantic_writes_them() {
        for ok in [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.123456+02:30",
            "2024-01-02T03:04:05",
            "2024-01-02 03:04",
            "2024-01-02T03:04:05-0500",
            "2024-02-29T23:59:59.5",
            "2000-02-29t00:00:00z",
        ] {
            check_datetime("t", ok).unwrap();
        }
        for bad in [
            "",
            "yesterday",
            "2024-13-02T03:04:05Z",
            "2024-01-02T03:04:05.Z",
            "2024-01-02T03:04:5",
            "2024-01-02T03:04:05+2",
        ] {
            assert!(check_datetime("t", bad).is_err(), "{bad}");
        }
    }
}
