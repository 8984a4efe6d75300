//! The execution store for `execstore.harel` (harel 0.9's store protocol).
//!
//! [`HarelStore`] is a handle on an `Arc<dyn ExecutionStore>` (SQLite or PostgreSQL, harel's
//! tables). Records cross as JSON text in harel's own shapes: `Execution.model_dump_json()`
//! in, an `ExecutionPage` / `Event` JSON out; the Python layer (`execstore/harel.py`) turns
//! them into harel's pydantic models and dataclasses. Every storage call releases the GIL.
//!
//! harel's `trace_max` is settable at any time; execstore fixes it when a store is opened, so
//! setting it opens the same database again with the new ring size and swaps the handle in
//! (calls already running finish on the old one). A `:memory:` store therefore lives in a
//! private temporary file (synchronous off), removed when the last handle on it is gone:
//! one private database per store, as harel's `:memory:` is.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use execstore::{
    executions::{DueTimer, Emit, Event, ListQuery, Spawn, Status, TimerOp, TraceStep},
    Effects, Execution, ExecutionStore, StoreError,
};
use execstore_any::{Options, POSTGRES, SQLITE};
use execstore_sqlite::Synchronous;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::IntoPy;

/// The largest page one read asks for (execstore's limit).
const PAGE: usize = 10_000;

/// A private temporary database file, removed (with its WAL and shared-memory files) when the
/// last store on it is dropped.
#[derive(Debug)]
struct TempDb(PathBuf);

impl TempDb {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "execstore-memory-{}-{}-{nanos}.db",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        TempDb(std::env::temp_dir().join(name))
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = self.0.clone().into_os_string();
            name.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(name));
        }
    }
}

/// Where a store's database is, to open it again with another `trace_max`.
#[derive(Clone, Debug)]
enum Target {
    Sqlite {
        path: PathBuf,
        temp: Option<Arc<TempDb>>,
        create_schema: bool,
    },
    Postgres {
        url: String,
        max_connections: u32,
        create_schema: bool,
    },
}

/// One opened store (and the temporary file it needs kept).
struct Opened {
    store: Arc<dyn ExecutionStore>,
    _temp: Option<Arc<TempDb>>,
}

struct State {
    opened: Option<Arc<Opened>>,
    trace_max: Option<u32>,
}

/// A handle on an execution store holding harel 0.9's tables: the Rust side of
/// `execstore.harel.SqliteStore` / `PostgresStore`. Safe to call from several threads.
#[pyclass(module = "execstore._core", frozen)]
pub(crate) struct HarelStore {
    target: Target,
    prefix: Option<String>,
    state: RwLock<State>,
}

fn prefix_of(prefix: &str) -> Option<String> {
    (!prefix.is_empty()).then(|| prefix.to_owned())
}

fn open(target: &Target, prefix: Option<&str>, trace_max: Option<u32>) -> execstore::Result<Opened> {
    let mut options = Options::new()
        .executions(true)
        .prefix(prefix)
        .trace_max(trace_max);
    // The row of execstore-any's table, handed the path or URL as it is (a harel path such as
    // `sqlite:x.db` is a file's name).
    let (row, location, temp) = match target {
        Target::Sqlite {
            path,
            temp,
            create_schema,
        } => {
            options.create_schema = *create_schema;
            if temp.is_some() {
                options.sqlite.connect.synchronous = Synchronous::Off;
            }
            (&SQLITE, path.to_string_lossy().into_owned(), temp.clone())
        }
        Target::Postgres {
            url,
            max_connections,
            create_schema,
        } => {
            options.create_schema = *create_schema;
            options.postgres.connect.max_connections = *max_connections;
            (&POSTGRES, url.clone(), None)
        }
    };
    let stores = execstore_any::Target {
        backend: row,
        location,
    }
    .open(&options)?;
    Ok(Opened {
        store: stores
            .executions
            .ok_or_else(|| StoreError::invalid("backend", "opened no execution store"))?,
        _temp: temp,
    })
}

fn check_trace_max(trace_max: Option<i64>) -> PyResult<Option<u32>> {
    match trace_max {
        None | Some(0) => Ok(None),
        Some(n) if n > 0 => u32::try_from(n)
            .map(Some)
            .map_err(|_| PyValueError::new_err(format!("trace_max {n} is too large"))),
        Some(n) => Err(PyValueError::new_err(format!(
            "trace_max must be 0, None or positive, got {n}"
        ))),
    }
}

fn parse_status(names: Vec<String>) -> PyResult<Vec<Status>> {
    names
        .iter()
        .map(|s| {
            s.parse::<Status>()
                .map_err(|e| PyValueError::new_err(e.to_string()))
        })
        .collect()
}

/// Refuses a JSON text holding an integer beyond 64 bits (a Python int): execstore would read
/// it as a float, silently changing the record. A linear scan, outside strings.
fn check_integers(field: &'static str, json: &str) -> execstore::Result<()> {
    let bytes = json.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => in_string = true,
            // `json.dumps`'s `-Infinity` is no integer (`NaN`, `Infinity` start with a letter).
            b'-' if json[i..].starts_with("-Infinity") => {
                i += "-Infinity".len();
                continue;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len() && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    i += 1;
                }
                let token = &json[start..i];
                let integral = !token.contains(['.', 'e', 'E']);
                if integral && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                    return Err(StoreError::invalid(
                        field,
                        format!(
                            "the integer {token} does not fit in 64 bits (it would be stored as a float)"
                        ),
                    ));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

fn parse_event(json: &str) -> execstore::Result<Event> {
    check_integers("event", json)?;
    serde_json::from_str(json).map_err(|e| StoreError::invalid("event", e.to_string()))
}

/// A trace step or spawn context as `json.dumps` wrote it, its `NaN`, `Infinity` and lone
/// surrogates kept (marked, see `execstore::kit::pyjson::loads_exact`), so the store writes back
/// the very text harel would.
fn parse_object(field: &'static str, json: &str) -> execstore::Result<TraceStep> {
    check_integers(field, json)?;
    execstore::kit::pyjson::loads_object_exact(json).map_err(|e| StoreError::invalid(field, e.to_string()))
}

/// A stored trace step or spawn context as `json.dumps` writes it, for `json.loads`.
fn dump_object(field: &'static str, object: &TraceStep) -> execstore::Result<String> {
    execstore::kit::pyjson::dumps_object_exact(object).map_err(|e| StoreError::Corrupt {
        what: field.to_owned(),
        reason: e.to_string(),
    })
}

/// A timer change as the Python layer passes it: `(action, path, fire_at)`.
type TimerArg = (String, String, f64);
/// A spawn as the Python layer passes it: `(child_id, root_path, context JSON)`.
type SpawnArg = (String, String, String);
/// An outbox entry as the Python layer takes it: `(seq, target_id, event JSON)`.
type OutboxRow = (i64, Option<String>, String);
/// A spawn intent as the Python layer takes it: `(seq, parent_id, child_id, root_path,
/// context JSON)`.
type SpawnRow = (i64, String, String, String, String);

impl HarelStore {
    fn new(target: Target, prefix: Option<String>, trace_max: Option<u32>, py: Python<'_>) -> PyResult<Self> {
        let opened = py
            .detach(|| open(&target, prefix.as_deref(), trace_max))
            .py_err(py)?;
        Ok(HarelStore {
            target,
            prefix,
            state: RwLock::new(State {
                opened: Some(Arc::new(opened)),
                trace_max,
            }),
        })
    }

    /// The open store, or the closed store's error.
    fn store(&self) -> PyResult<Arc<Opened>> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state
            .opened
            .clone()
            .ok_or_else(|| PyValueError::new_err("the store is closed"))
    }

    /// Runs `f` on the store with the GIL released; a `StoreError` becomes its exception.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&dyn ExecutionStore) -> execstore::Result<T> + Send,
    ) -> PyResult<T> {
        let opened = self.store()?;
        py.detach(|| f(opened.store.as_ref())).py_err(py)
    }
}

#[pymethods]
impl HarelStore {
    /// Opens (creating if needed) the SQLite database at `path` (`":memory:"`: a private
    /// database of this store alone) with harel's tables under `prefix`.
    #[staticmethod]
    #[pyo3(signature = (path, prefix, create_schema, trace_max))]
    fn open_sqlite(
        py: Python<'_>,
        path: &str,
        prefix: &str,
        create_schema: bool,
        trace_max: Option<i64>,
    ) -> PyResult<Self> {
        let trace_max = check_trace_max(trace_max)?;
        let prefix = prefix_of(prefix);
        if path.is_empty() {
            return Err(PyValueError::new_err("path must not be empty"));
        }
        // With `create_schema` false no DDL runs: a missing table fails the first operation
        // that needs it, as in harel (its `:memory:` is then an empty database).
        let target = if path == ":memory:" {
            let temp = Arc::new(TempDb::new());
            Target::Sqlite {
                path: temp.0.clone(),
                temp: Some(temp),
                create_schema,
            }
        } else {
            crate::errors::check_other_sqlite(py)?;
            Target::Sqlite {
                path: PathBuf::from(path),
                temp: None,
                create_schema,
            }
        };
        Self::new(target, prefix, trace_max, py)
    }

    /// Connects to PostgreSQL at `url` (a pool of up to `max_connections`) with harel's
    /// tables under `prefix`.
    #[staticmethod]
    #[pyo3(signature = (url, prefix, create_schema, trace_max, max_connections = 8))]
    fn open_postgres(
        py: Python<'_>,
        url: &str,
        prefix: &str,
        create_schema: bool,
        trace_max: Option<i64>,
        max_connections: u32,
    ) -> PyResult<Self> {
        let trace_max = check_trace_max(trace_max)?;
        let prefix = prefix_of(prefix);
        if max_connections == 0 {
            return Err(PyValueError::new_err("max_connections must be at least 1"));
        }
        let target = Target::Postgres {
            url: url.to_owned(),
            max_connections,
            create_schema,
        };
        Self::new(target, prefix, trace_max, py)
    }

    /// Drops the store's tables under `prefix` at `url` (for tests).
    #[staticmethod]
    fn drop_postgres(py: Python<'_>, url: &str, prefix: &str) -> PyResult<()> {
        let prefix = prefix_of(prefix);
        py.detach(|| execstore_postgres::drop_store(url, prefix.as_deref()))
            .py_err(py)
    }

    /// How many trace steps are kept per execution (0: all).
    #[getter]
    fn get_trace_max(&self) -> u32 {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state.trace_max.unwrap_or(0)
    }

    /// Sets the trace ring's size (0 or None: keep every step).
    #[setter]
    fn set_trace_max(&self, py: Python<'_>, value: Option<i64>) -> PyResult<()> {
        let trace_max = check_trace_max(value)?;
        self.store()?;
        if self.state.read().unwrap_or_else(|e| e.into_inner()).trace_max == trace_max {
            return Ok(());
        }
        let opened = py
            .detach(|| open(&self.target, self.prefix.as_deref(), trace_max))
            .py_err(py)?;
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        if state.opened.is_none() {
            return Err(PyValueError::new_err("the store is closed"));
        }
        state.opened = Some(Arc::new(opened));
        state.trace_max = trace_max;
        Ok(())
    }

    /// Whether the store is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .opened
            .is_none()
    }

    /// Closes the store: later calls raise `ValueError`. Calls running finish first.
    fn close(&self, py: Python<'_>) {
        let opened = self
            .state
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .opened
            .take();
        // The last handle closes its connections (a checkpoint, a pool): not under the GIL.
        py.detach(move || drop(opened));
    }

    /// The stored execution's JSON, or None.
    fn load(&self, py: Python<'_>, execution_id: &str) -> PyResult<Option<String>> {
        self.run(py, |s| Ok(s.load(execution_id)?.map(|e| e.to_json())))
    }

    /// `(execution JSON or None, whether event_id was processed)`, read together.
    fn load_for_event(
        &self,
        py: Python<'_>,
        execution_id: &str,
        event_id: &str,
    ) -> PyResult<(Option<String>, bool)> {
        self.run(py, |s| {
            let (exe, seen) = s.load_for_event(execution_id, event_id)?;
            Ok((exe.map(|e| e.to_json()), seen))
        })
    }

    /// The declared search attributes' paths.
    fn attributes(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.run(py, |s| Ok(s.attributes()?.into_iter().map(|a| a.path).collect()))
    }

    /// Declares a search attribute (builds its index); returns its canonical path.
    fn declare_attribute(&self, py: Python<'_>, path: &str) -> PyResult<String> {
        self.run(py, |s| Ok(s.declare_attribute(path)?.path))
    }

    /// Drops a search attribute and its index; whether there was one.
    fn drop_attribute(&self, py: Python<'_>, path: &str) -> PyResult<bool> {
        self.run(py, |s| s.drop_attribute(path))
    }

    /// `control::send`: the event `event_json` (harel's `Event` as pydantic writes it) for
    /// the execution `execution_id`, through the outbox; returns the entry's seq. Refused,
    /// writing nothing: an unknown id (`NotFoundError`), another version than
    /// `expected_version` (`ConflictError`), an execution not `RUNNING`, one of harel's
    /// control kinds, a bad or too large event (`InvalidInputError`).
    #[pyo3(signature = (execution_id, event_json, expected_version=None))]
    fn send(
        &self,
        py: Python<'_>,
        execution_id: &str,
        event_json: &str,
        expected_version: Option<i64>,
    ) -> PyResult<i64> {
        self.run(py, |s| {
            let event = parse_event(event_json)?;
            Ok(execstore::executions::control::send(s, execution_id, &event, expected_version)?.seq)
        })
    }

    /// Whether `execution_id` already processed `event_id`.
    fn is_processed(&self, py: Python<'_>, execution_id: &str, event_id: &str) -> PyResult<bool> {
        self.run(py, |s| s.is_processed(execution_id, event_id))
    }

    /// The CAS write of the execution `exe_json` (at its loaded version) with the step's
    /// effects, in one transaction. Returns `(new version, outbox seqs)`; a lost CAS raises
    /// `ConflictError` and writes nothing.
    #[pyo3(signature = (exe_json, emits, processed_event_id, timers, spawns, trace))]
    #[allow(clippy::too_many_arguments)] // harel's `commit`, one argument per effect
    fn commit(
        &self,
        py: Python<'_>,
        exe_json: &str,
        emits: Vec<(Option<String>, String)>,
        processed_event_id: Option<String>,
        timers: Vec<TimerArg>,
        spawns: Vec<SpawnArg>,
        trace: Option<String>,
    ) -> PyResult<(i64, Vec<i64>)> {
        for (action, _, _) in &timers {
            if action != "schedule" && action != "cancel" {
                return Err(PyValueError::new_err(format!(
                    "a timer's action is \"schedule\" or \"cancel\", got {action:?}"
                )));
            }
        }
        self.run(py, move |s| {
            check_integers("execution", exe_json)?;
            let mut exe = Execution::from_json(exe_json)?;
            let mut effects = Effects::new();
            for (target_id, event) in emits {
                effects.emits.push(Emit {
                    target_id,
                    event: parse_event(&event)?,
                });
            }
            effects.processed_event_id = processed_event_id;
            for (action, path, fire_at) in timers {
                effects.timers.push(if action == "schedule" {
                    TimerOp::Schedule { path, fire_at }
                } else {
                    TimerOp::Cancel { path }
                });
            }
            for (child_id, root_path, context) in spawns {
                effects.spawns.push(Spawn {
                    child_id,
                    root_path,
                    context: parse_object("spawn context", &context)?,
                });
            }
            if let Some(trace) = trace {
                effects.trace = Some(parse_object("trace", &trace)?);
            }
            let seqs = s.commit(&mut exe, &effects)?;
            Ok((exe.version, seqs))
        })
    }

    /// A page of summaries as `ExecutionPage` JSON. `limit` above execstore's page size is
    /// served by reading several pages. `windows` are the created, updated and finished
    /// windows as `(after, before)` epoch seconds, `[after, before)`; `search` finds an id
    /// prefix or a state (the core checks both: NaN, negative or inverted windows and an
    /// empty search are `InvalidInput`); `order` is `id` (the default) or `updated` (most
    /// recently updated first; anything else, and a cursor of the other order, is
    /// `InvalidInput`); `where_text` is a `where` query (docs/search.md), its relative times
    /// read against this process's clock.
    #[pyo3(signature = (status, definition_id, roots_only, limit, cursor, windows=None, search=None, order=None, where_text=None))]
    #[allow(clippy::too_many_arguments)]
    fn list_executions(
        &self,
        py: Python<'_>,
        status: Option<Vec<String>>,
        definition_id: Option<String>,
        roots_only: bool,
        limit: i64,
        cursor: Option<String>,
        windows: Option<[(Option<f64>, Option<f64>); 3]>,
        search: Option<String>,
        order: Option<String>,
        where_text: Option<String>,
    ) -> PyResult<String> {
        if limit < 1 {
            return Err(PyValueError::new_err(format!(
                "limit must be at least 1, got {limit}"
            )));
        }
        let status = status.map(parse_status).transpose()?;
        let wanted = usize::try_from(limit).unwrap_or(usize::MAX);
        self.run(py, move |s| {
            let order = match order.as_deref() {
                Some(order) => order.parse::<execstore::executions::ListOrder>()?,
                None => execstore::executions::ListOrder::Id,
            };
            let mut query = ListQuery::new()
                .roots_only(roots_only)
                .cursor(cursor)
                .order(order);
            query.status = status;
            query.definition_id = definition_id;
            if let Some([created, updated, finished]) = windows {
                query = query
                    .created_between(created.0, created.1)
                    .updated_between(updated.0, updated.1)
                    .finished_between(finished.0, finished.1);
            }
            query.search = search;
            if let Some(text) = &where_text {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                query.filter = Some(execstore::executions::parse_where(text, now)?);
            }
            let mut page = execstore::executions::ExecutionPage::default();
            loop {
                let left = wanted - page.items.len();
                query.limit = left.min(PAGE);
                let next = s.list_executions(&query)?;
                page.items.extend(next.items);
                page.scan = next.scan;
                page.next_cursor = next.next_cursor;
                if page.items.len() >= wanted || page.next_cursor.is_none() {
                    break;
                }
                query.cursor = page.next_cursor.clone();
            }
            serde_json::to_string(&page).map_err(|e| StoreError::invalid("page", e.to_string()))
        })
    }

    /// Every undelivered outbox entry, oldest first, as `(seq, target_id, event JSON)`.
    fn pending_outbox(&self, py: Python<'_>) -> PyResult<Vec<OutboxRow>> {
        self.run(py, |s| {
            let mut rows = Vec::new();
            let mut after = None;
            loop {
                let page = s.pending_outbox(after, PAGE)?;
                let full = page.len() == PAGE;
                after = page.last().map(|e| e.seq);
                rows.extend(page.into_iter().map(|e| {
                    let event = serde_json::to_string(&e.event).unwrap_or_default();
                    (e.seq, e.target_id, event)
                }));
                if !full {
                    return Ok(rows);
                }
            }
        })
    }

    /// Removes the delivered outbox entry `seq` (one already gone is no error, as in harel).
    fn ack_outbox(&self, py: Python<'_>, seq: i64) -> PyResult<()> {
        self.run(py, |s| match s.ack_outbox(seq) {
            Err(StoreError::NotFound { .. }) => Ok(()),
            other => other,
        })
    }

    /// Every pending spawn intent, oldest first, as `(seq, parent_id, child_id, root_path,
    /// context JSON)`.
    fn pending_spawns(&self, py: Python<'_>) -> PyResult<Vec<SpawnRow>> {
        self.run(py, |s| {
            let mut rows = Vec::new();
            let mut after = None;
            loop {
                let page = s.pending_spawns(after, PAGE)?;
                let full = page.len() == PAGE;
                after = page.last().map(|e| e.seq);
                for e in page {
                    let context = dump_object("spawn context", &e.context)?;
                    rows.push((e.seq, e.parent_id, e.child_id, e.root_path, context));
                }
                if !full {
                    return Ok(rows);
                }
            }
        })
    }

    /// Removes the done spawn intent `seq` (one already gone is no error, as in harel).
    fn ack_spawn(&self, py: Python<'_>, seq: i64) -> PyResult<()> {
        self.run(py, |s| match s.ack_spawn(seq) {
            Err(StoreError::NotFound { .. }) => Ok(()),
            other => other,
        })
    }

    /// Every timer due at `now`, soonest first, as `(execution_id, path, fire_at)`.
    fn due_timers(&self, py: Python<'_>, now: f64) -> PyResult<Vec<(String, String, f64)>> {
        self.run(py, |s| {
            let mut rows: Vec<DueTimer> = Vec::new();
            loop {
                let page = s.due_timers(now, rows.last(), PAGE)?;
                let full = page.len() == PAGE;
                rows.extend(page);
                if !full {
                    return Ok(rows
                        .into_iter()
                        .map(|t| (t.execution_id, t.path, t.fire_at))
                        .collect());
                }
            }
        })
    }

    /// Removes the timer of `(execution_id, path)` iff it still fires at `fire_at`.
    fn delete_timer(&self, py: Python<'_>, execution_id: &str, path: &str, fire_at: f64) -> PyResult<bool> {
        self.run(py, |s| s.delete_timer(execution_id, path, fire_at))
    }

    /// The kept trace steps, oldest first, each with its `index`, as a JSON array written as
    /// `json.dumps` writes it (`NaN`, `Infinity` and lone surrogates as harel stored them).
    fn read_trace(&self, py: Python<'_>, execution_id: &str) -> PyResult<String> {
        self.run(py, |s| {
            let steps = s.read_trace(execution_id)?;
            let mut out = String::from("[");
            for (i, step) in steps.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&dump_object("trace step", step)?);
            }
            out.push(']');
            Ok(out)
        })
    }

    /// Appends a trace step (JSON object) outside an event step; a missing execution is
    /// ignored, as harel's stores do.
    fn append_trace(&self, py: Python<'_>, execution_id: &str, step_json: &str) -> PyResult<()> {
        self.run(py, |s| {
            let step = parse_object("trace", step_json)?;
            match s.append_trace(execution_id, &step) {
                Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        })
    }

    /// The ids of every stored execution starting with `prefix`, ordered.
    fn ids_with_prefix(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<String>> {
        self.run(py, |s| s.ids_with_prefix(prefix))
    }

    /// Deletes the execution and everything keyed by it iff it is at `expected_version`.
    fn purge(&self, py: Python<'_>, execution_id: &str, expected_version: i64) -> PyResult<bool> {
        self.run(py, |s| s.purge(execution_id, expected_version))
    }

    /// The backend's name: `"sqlite"` or `"postgres"`.
    #[getter]
    fn backend(&self) -> &'static str {
        match self.target {
            Target::Sqlite { .. } => "sqlite",
            Target::Postgres { .. } => "postgres",
        }
    }

    fn __repr__(&self) -> String {
        let target = match &self.target {
            Target::Sqlite { temp: Some(_), .. } => "sqlite :memory:".to_owned(),
            Target::Sqlite { path, .. } => format!("sqlite {}", path.display()),
            Target::Postgres { .. } => "postgres".to_owned(),
        };
        let closed = if self.closed() { ", closed" } else { "" };
        format!(
            "<HarelStore {target} prefix={:?}{closed}>",
            self.prefix.as_deref().unwrap_or("")
        )
    }
}

/// Registers the harel side's classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HarelStore>()?;
    Ok(())
}
