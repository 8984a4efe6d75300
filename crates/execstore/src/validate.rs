//! Input checks and serialization shared by every backend, so that all of them accept and
//! refuse exactly the same things and write exactly the same bytes.

use crate::error::{Result, StoreError};
use crate::model::{Effects, Event, Execution, TimerOp};
use crate::pyjson;

/// The largest JSON document (an execution, an event, a trace step, a spawn context) a store
/// accepts, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 8 << 20;
/// The longest id (execution, event, path) a store accepts, in bytes.
pub const MAX_ID_BYTES: usize = 4096;
/// The largest page any read returns.
pub const MAX_PAGE: usize = 10_000;

/// An execution ready to be CAS-written: checked, its version bumped in `data`.
#[derive(Clone, Debug)]
pub struct PreparedWrite {
    /// Its id.
    pub id: String,
    /// Its definition.
    pub definition_id: String,
    /// The version the stored row must have (the caller's).
    pub expected: i64,
    /// The version written (`expected + 1`).
    pub version: i64,
    /// The JSON written, carrying `version`.
    pub data: String,
}

/// A spawn ready to be stored.
#[derive(Clone, Debug)]
pub struct PreparedSpawn {
    /// The child's id.
    pub child_id: String,
    /// Its branch node.
    pub root_path: String,
    /// Its context as harel stores it (`json.dumps`).
    pub context: String,
}

/// Everything a commit writes, checked and serialized.
#[derive(Clone, Debug)]
pub struct PreparedCommit {
    /// The CAS write.
    pub write: PreparedWrite,
    /// Outbox rows: target and the event's JSON.
    pub emits: Vec<(Option<String>, String)>,
    /// The dedupe marker.
    pub processed_event_id: Option<String>,
    /// Timer changes.
    pub timers: Vec<TimerOp>,
    /// Spawn rows.
    pub spawns: Vec<PreparedSpawn>,
    /// The trace step as harel stores it (`json.dumps`).
    pub trace: Option<String>,
}

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

/// 9999-12-31T23:59:59Z in epoch seconds, the latest instant a date-time names: the `now`
/// that lists every timer an engine arms in practice (the CLI's and monitor's "all timers").
pub const LATEST_TIME: f64 = 253_402_300_799.0;

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

fn check_size(field: &str, json: String) -> Result<String> {
    if json.len() > MAX_DOCUMENT_BYTES {
        return Err(StoreError::invalid(
            field,
            format!(
                "{} bytes of JSON is more than the limit of {MAX_DOCUMENT_BYTES}",
                json.len()
            ),
        ));
    }
    Ok(json)
}

/// Checks an ISO 8601 date-time as pydantic (harel's models) reads it:
/// `YYYY-MM-DD[T ]HH:MM[:SS[.ffffff]][Z|±HH:MM|±HHMM]`, with a real calendar date, so that
/// harel can load whatever execstore stored.
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
    check_id(&format!("{field}.id"), &event.id)?;
    if event.kind.is_empty() {
        return Err(StoreError::invalid(format!("{field}.kind"), "must not be empty"));
    }
    if let Some(t) = &event.created_time {
        check_datetime(&format!("{field}.created_time"), t)?;
    }
    if let Some(t) = &event.received_time {
        check_datetime(&format!("{field}.received_time"), t)?;
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
        check_event(&format!("execution.deferred[{i}]"), ev)?;
    }
    Ok(())
}

/// Checks `exe` and serializes it at `version + 1`, as a CAS write stores it. `exe` itself
/// is left at its version: the store sets the new one only once the write is durable.
pub fn prepare_write(exe: &mut Execution) -> Result<PreparedWrite> {
    check_execution(exe)?;
    let expected = exe.version;
    exe.version = expected + 1;
    let data = exe.to_json();
    exe.version = expected;
    let data = check_size("execution", data)?;
    Ok(PreparedWrite {
        id: exe.id.clone(),
        definition_id: exe.definition_id.clone(),
        expected,
        version: expected + 1,
        data,
    })
}

/// Checks and serializes everything `commit` writes.
pub fn prepare_commit(exe: &mut Execution, effects: &Effects) -> Result<PreparedCommit> {
    let write = prepare_write(exe)?;
    let mut emits = Vec::with_capacity(effects.emits.len());
    for (i, emit) in effects.emits.iter().enumerate() {
        let field = format!("emits[{i}]");
        if let Some(target) = &emit.target_id {
            check_id(&format!("{field}.target_id"), target)?;
        }
        check_event(&format!("{field}.event"), &emit.event)?;
        let json = serde_json::to_string(&emit.event).unwrap_or_default();
        emits.push((emit.target_id.clone(), check_size(&field, json)?));
    }
    if let Some(id) = &effects.processed_event_id {
        check_id("processed_event_id", id)?;
    }
    for (i, op) in effects.timers.iter().enumerate() {
        match op {
            TimerOp::Schedule { path, fire_at } => {
                check_id(&format!("timers[{i}].path"), path)?;
                check_time(&format!("timers[{i}].fire_at"), *fire_at)?;
            }
            TimerOp::Cancel { path } => check_id(&format!("timers[{i}].path"), path)?,
        }
    }
    let mut spawns = Vec::with_capacity(effects.spawns.len());
    for (i, spawn) in effects.spawns.iter().enumerate() {
        check_id(&format!("spawns[{i}].child_id"), &spawn.child_id)?;
        spawns.push(PreparedSpawn {
            child_id: spawn.child_id.clone(),
            root_path: spawn.root_path.clone(),
            context: check_size(&format!("spawns[{i}].context"), pyjson::dumps(&spawn.context))?,
        });
    }
    let trace = match &effects.trace {
        Some(step) => Some(prepare_trace(step)?),
        None => None,
    };
    Ok(PreparedCommit {
        write,
        emits,
        processed_event_id: effects.processed_event_id.clone(),
        timers: effects.timers.clone(),
        spawns,
        trace,
    })
}

/// Serializes a trace step as harel stores it.
pub fn prepare_trace(step: &crate::model::TraceStep) -> Result<String> {
    check_size("trace", pyjson::dumps(step))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn prepared_write_carries_bumped_version_and_keeps_caller_version() {
        let mut exe = Execution::new("a", "d");
        let w = prepare_write(&mut exe).unwrap();
        assert_eq!((w.expected, w.version), (0, 1));
        assert!(w.data.contains("\"version\":1"));
        assert_eq!(exe.version, 0);
    }
}

/// A [`crate::ExecutionStore::commit_batch`] checked item by item before anything is written:
/// each item's prepared commit, or its own error as its outcome. A backend writes the
/// prepared ones ([`PreparedBatch::to_write`]), recording each outcome, then calls
/// [`PreparedBatch::finish`] once the transaction is durable.
#[derive(Debug)]
pub struct PreparedBatch {
    prepared: Vec<Option<PreparedCommit>>,
    results: Vec<Result<Vec<i64>>>,
}

impl PreparedBatch {
    /// Checks and serializes every item; an invalid one gets its `InvalidInput` as outcome.
    pub fn new(items: &mut [crate::BatchItem]) -> Self {
        let mut prepared = Vec::with_capacity(items.len());
        let mut results = Vec::with_capacity(items.len());
        for item in items.iter_mut() {
            match prepare_commit(&mut item.execution, &item.effects) {
                Ok(p) => {
                    prepared.push(Some(p));
                    results.push(Ok(Vec::new()));
                }
                Err(e) => {
                    prepared.push(None);
                    results.push(Err(e));
                }
            }
        }
        PreparedBatch { prepared, results }
    }

    /// Whether any item is left to write.
    pub fn has_writes(&self) -> bool {
        self.prepared.iter().any(Option::is_some)
    }

    /// The items to write, in order, each with the slot for its outcome.
    pub fn to_write(&mut self) -> impl Iterator<Item = (&PreparedCommit, &mut Result<Vec<i64>>)> {
        self.prepared
            .iter()
            .zip(self.results.iter_mut())
            .filter_map(|(p, r)| p.as_ref().map(|p| (p, r)))
    }

    /// Once the batch is durable: moves each committed item's version and returns every
    /// item's outcome, in order.
    pub fn finish(self, items: &mut [crate::BatchItem]) -> Vec<Result<Vec<i64>>> {
        for ((item, p), result) in items.iter_mut().zip(&self.prepared).zip(&self.results) {
            if let (Some(p), Ok(_)) = (p, result) {
                item.execution.version = p.write.version;
            }
        }
        self.results
    }
}
