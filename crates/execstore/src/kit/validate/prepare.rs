//! Checked and serialized: what a write stores, byte for byte as harel does (the execution's
//! JSON at its new version, events, spawn contexts and trace steps), ready for a backend to
//! write, and the per-item outcomes of a batch.

use crate::error::{Result, StoreError};
use crate::executions::{Effects, Execution, TimerOp};
use crate::kit::pyjson;

use super::checks::{check_event_fields, check_execution, check_id, check_time, MAX_DOCUMENT_BYTES};

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
    /// What a listing filters and orders by, as `data` says it.
    pub keys: ListKeys,
}

/// The fields of a written document that a listing filters and orders by, with the values a
/// reader of `data` finds there: a backend that keeps them beside the row (so as not to parse
/// the document for each index) takes them from here.
#[derive(Clone, Debug, PartialEq)]
pub struct ListKeys {
    /// `status`, as stored (`"RUNNING"`, ...).
    pub status: &'static str,
    /// Whether `parent_id` is null: a root execution.
    pub root: bool,
    /// `created_at` (checked finite, so written as a number, or null).
    pub created_at: Option<f64>,
    /// `updated_at`.
    pub updated_at: Option<f64>,
    /// `finished_at`.
    pub finished_at: Option<f64>,
    /// `active_path`.
    pub active_path: Option<String>,
}

impl ListKeys {
    /// The keys of `exe` (checked).
    fn of(exe: &Execution) -> Self {
        ListKeys {
            status: exe.status.as_str(),
            root: exe.parent_id.is_none(),
            created_at: exe.created_at,
            updated_at: exe.updated_at,
            finished_at: exe.finished_at,
            active_path: exe.active_path.clone(),
        }
    }
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

/// `json` if it is within [`MAX_DOCUMENT_BYTES`]; else `InvalidInput` on the field `field()`
/// names (built only then).
fn check_size(field: impl FnOnce() -> String, json: String) -> Result<String> {
    if json.len() > MAX_DOCUMENT_BYTES {
        return Err(StoreError::invalid(
            field(),
            format!(
                "{} bytes of JSON is more than the limit of {MAX_DOCUMENT_BYTES}",
                json.len()
            ),
        ));
    }
    Ok(json)
}

/// Checks `exe` and serializes it at `version + 1`, as a CAS write stores it. `exe` itself
/// is left at its version: the store sets the new one only once the write is durable.
pub fn prepare_write(exe: &mut Execution) -> Result<PreparedWrite> {
    check_execution(exe)?;
    let expected = exe.version;
    exe.version = expected + 1;
    let data = exe.to_json();
    exe.version = expected;
    let data = check_size(|| "execution".into(), data)?;
    Ok(PreparedWrite {
        id: exe.id.clone(),
        definition_id: exe.definition_id.clone(),
        expected,
        version: expected + 1,
        data,
        keys: ListKeys::of(exe),
    })
}

/// Checks and serializes everything `commit` writes.
pub fn prepare_commit(exe: &mut Execution, effects: &Effects) -> Result<PreparedCommit> {
    let write = prepare_write(exe)?;
    let mut emits = Vec::with_capacity(effects.emits.len());
    // Field paths (`emits[0].event.id`) are built only for an error.
    for (i, emit) in effects.emits.iter().enumerate() {
        let at = || format!("emits[{i}]");
        if let Some(target) = &emit.target_id {
            check_id("target_id", target).map_err(|e| e.within(at))?;
        }
        check_event_fields(&emit.event).map_err(|e| e.within(|| format!("{}.event", at())))?;
        let json = serde_json::to_string(&emit.event).unwrap_or_default();
        emits.push((emit.target_id.clone(), check_size(at, json)?));
    }
    if let Some(id) = &effects.processed_event_id {
        check_id("processed_event_id", id)?;
    }
    for (i, op) in effects.timers.iter().enumerate() {
        let at = || format!("timers[{i}]");
        match op {
            TimerOp::Schedule { path, fire_at } => {
                check_id("path", path).map_err(|e| e.within(at))?;
                check_time("fire_at", *fire_at).map_err(|e| e.within(at))?;
            }
            TimerOp::Cancel { path } => check_id("path", path).map_err(|e| e.within(at))?,
        }
    }
    let mut spawns = Vec::with_capacity(effects.spawns.len());
    for (i, spawn) in effects.spawns.iter().enumerate() {
        check_id("child_id", &spawn.child_id).map_err(|e| e.within(|| format!("spawns[{i}]")))?;
        spawns.push(PreparedSpawn {
            child_id: spawn.child_id.clone(),
            root_path: spawn.root_path.clone(),
            context: check_size(
                || format!("spawns[{i}].context"),
                pyjson::dumps_object_exact(&spawn.context)
                    .map_err(|e| StoreError::invalid(format!("spawns[{i}].context"), e.to_string()))?,
            )?,
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

/// Checks an outbox event and serializes it as harel stores it (pydantic's
/// `model_dump_json`): a step's emit, or an entry enqueued alone
/// (`ExecutionStore::enqueue_outbox`). A bad field is `InvalidInput` on
/// `event.<field>`; past [`MAX_DOCUMENT_BYTES`], on `event`.
pub fn prepare_event(event: &crate::executions::Event) -> Result<String> {
    check_event_fields(event).map_err(|e| e.within(|| "event".to_owned()))?;
    let json = serde_json::to_string(event).unwrap_or_default();
    check_size(|| "event".into(), json)
}

/// Serializes a trace step as harel stores it (its marked values too: see
/// [`pyjson::dumps_exact`]).
pub fn prepare_trace(step: &crate::executions::TraceStep) -> Result<String> {
    let text = pyjson::dumps_object_exact(step).map_err(|e| StoreError::invalid("trace", e.to_string()))?;
    check_size(|| "trace".into(), text)
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
    pub fn new(items: &mut [crate::executions::BatchItem]) -> Self {
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
    pub fn finish(self, items: &mut [crate::executions::BatchItem]) -> Vec<Result<Vec<i64>>> {
        for ((item, p), result) in items.iter_mut().zip(&self.prepared).zip(&self.results) {
            if let (Some(p), Ok(_)) = (p, result) {
                item.execution.version = p.write.version;
            }
        }
        self.results
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executions::Execution;

    #[test]
    fn prepared_write_carries_bumped_version_and_keeps_caller_version() {
        let mut exe = Execution::new("a", "d");
        let w = prepare_write(&mut exe).unwrap();
        assert_eq!((w.expected, w.version), (0, 1));
        assert!(w.data.contains("\"version\":1"));
        assert_eq!(exe.version, 0);
    }
}
