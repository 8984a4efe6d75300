//! The workspace storage for `execstore.reflexr` (reflexr 0.1.1's Storage protocol).
//!
//! Two handles: `WorkspaceStore` (a memory, SQLite or PostgreSQL
//! [`WorkspaceStorage`]) and `WorkspaceTxn` (one open [`WorkspaceTx`]). Records cross as
//! reflexr's JSON text (`json.dumps(model.model_dump(mode="json"))`), instants as ISO 8601
//! text. Every call releases the GIL; the Python layer runs each one on a worker thread.
//!
//! The clock: the Python layer calls the user's clock itself, once per appended entry and once
//! per lease, and passes the instants down with the call; they reach the core's workspace front
//! as arguments ([`TimedWorkspace`]: `begin_timed`, `acquire_lease_timed`, and
//! [`TimedWorkspaceTx::append_timed`]). Where none are passed, the front reads its own clock,
//! the system's.

use crate::errors::IntoPy;
use execstore::workspace::{
    decode_text, decode_texts, Entry, EvaluationError, LogQuery, RuleProgress, Run, RunPolicy, RunQuery,
    RunStatus, ScopeState, StoredRule, TimedWorkspace, TimedWorkspaceTx, Timestamp, WorkspaceRef,
};
use execstore::StoreError;
use execstore_any::{Backend, Options, Target, MEMORY, POSTGRES, SQLITE};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

fn ts(field: &str, text: &str) -> execstore::Result<Timestamp> {
    Timestamp::parse_json_text(text).map_err(|e| match e {
        StoreError::InvalidInput { reason, .. } => StoreError::invalid(field, reason),
        other => other,
    })
}

fn timestamps(field: &str, texts: Option<Vec<String>>) -> execstore::Result<Vec<Timestamp>> {
    texts.unwrap_or_default().iter().map(|t| ts(field, t)).collect()
}

fn closed() -> PyErr {
    PyRuntimeError::new_err("the storage is closed")
}

/// A workspace storage: memory, SQLite or PostgreSQL.
#[pyclass(module = "execstore._core", frozen)]
pub(crate) struct WorkspaceStore {
    inner: RwLock<Option<Arc<dyn TimedWorkspace>>>,
}

impl WorkspaceStore {
    fn get(&self) -> PyResult<Arc<dyn TimedWorkspace>> {
        self.inner
            .read()
            .map_err(|_| closed())?
            .clone()
            .ok_or_else(closed)
    }

    fn new(storage: Arc<dyn TimedWorkspace>) -> Self {
        WorkspaceStore {
            inner: RwLock::new(Some(storage)),
        }
    }

    /// Runs `f` on the storage with the GIL released.
    fn call<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&dyn TimedWorkspace) -> execstore::Result<T> + Send,
    ) -> PyResult<T> {
        let storage = self.get()?;
        py.detach(|| f(&*storage)).py_err(py)
    }
}

/// `search_log`'s answer: the envelopes' JSON, how many were examined, the last seq examined
/// and where to go on.
type LogSearchAnswer = (Vec<String>, usize, Option<i64>, Option<i64>);

/// The workspace log of the row `backend` of execstore-any's table at `location` (the path or
/// DSN as given), on the system clock (the caller's instants come with each call).
fn open_workspaces(
    py: Python<'_>,
    backend: &'static Backend,
    location: String,
    options: Options,
) -> PyResult<WorkspaceStore> {
    let options = options.workspaces(true);
    let target = Target { backend, location };
    let stores = py.detach(|| target.open(&options)).py_err(py)?;
    let storage = stores
        .workspaces
        .ok_or_else(|| PyRuntimeError::new_err("the backend opened no workspace log"))?;
    Ok(WorkspaceStore::new(storage))
}

fn wref(tenant: &str, workspace: &str) -> WorkspaceRef {
    WorkspaceRef::new(tenant, workspace)
}

#[pymethods]
impl WorkspaceStore {
    /// A new, empty storage in memory.
    #[staticmethod]
    fn memory(py: Python<'_>) -> PyResult<Self> {
        open_workspaces(py, &MEMORY, String::new(), Options::new())
    }

    /// Opens (creating and migrating) a SQLite file.
    #[staticmethod]
    fn sqlite(py: Python<'_>, path: String, poll_interval: f64) -> PyResult<Self> {
        let poll = Duration::try_from_secs_f64(poll_interval)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err("poll_interval must be a positive time")
            })?;
        if path != ":memory:" {
            crate::errors::check_other_sqlite(py)?;
        }
        let mut options = Options::new();
        options.sqlite.workspace = options.sqlite.workspace.poll_interval(poll);
        open_workspaces(py, &SQLITE, path, options)
    }

    /// Connects to PostgreSQL (creating and migrating reflexr's tables in `schema`).
    #[staticmethod]
    #[pyo3(signature = (dsn, schema=None))]
    fn postgres(py: Python<'_>, dsn: String, schema: Option<String>) -> PyResult<Self> {
        let mut options = Options::new();
        options.postgres.connect.schema = schema;
        open_workspaces(py, &POSTGRES, dsn, options)
    }

    /// Closes the storage: later calls raise; calls in flight end first.
    fn close(&self, py: Python<'_>) {
        let taken = self.inner.write().ok().and_then(|mut g| g.take());
        py.detach(move || drop(taken));
    }

    /// Whether it was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().map(|g| g.is_none()).unwrap_or(true)
    }

    fn begin(&self, py: Python<'_>, tenant: &str, workspace: &str) -> PyResult<WorkspaceTxn> {
        let ws = wref(tenant, workspace);
        let tx = self.call(py, |s| s.begin_timed(&ws))?;
        Ok(WorkspaceTxn {
            tx: Mutex::new(Some(tx)),
        })
    }

    fn head_seq(&self, py: Python<'_>, tenant: &str, workspace: &str) -> PyResult<i64> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.head_seq(&ws))
    }

    #[pyo3(signature = (tenant, workspace, after_seq, before_seq, types, limit, last))]
    #[allow(clippy::too_many_arguments)]
    fn read(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        after_seq: i64,
        before_seq: Option<i64>,
        types: Option<Vec<String>>,
        limit: Option<usize>,
        last: Option<usize>,
    ) -> PyResult<Vec<String>> {
        let ws = wref(tenant, workspace);
        let query = LogQuery {
            after_seq,
            before_seq,
            types,
            limit,
            last,
        };
        self.call(py, |s| s.read(&ws, &query))
            .map(|es| es.iter().map(|e| e.to_json()).collect())
    }

    fn rule_history(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        name: &str,
    ) -> PyResult<Vec<String>> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.rule_history(&ws, name))
            .map(|es| es.iter().map(|e| e.to_json()).collect())
    }

    fn run(&self, py: Python<'_>, tenant: &str, workspace: &str, run_id: &str) -> PyResult<Option<String>> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.run(&ws, run_id))
            .map(|r| r.map(|r| r.to_json()))
    }

    #[pyo3(signature = (tenant, workspace, rule, status, scope_key, limit))]
    #[allow(clippy::too_many_arguments)]
    fn runs(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        rule: Option<String>,
        status: Option<&str>,
        scope_key: Option<String>,
        limit: Option<usize>,
    ) -> PyResult<Vec<String>> {
        let ws = wref(tenant, workspace);
        let status = status.map(RunStatus::parse).transpose().py_err(py)?;
        let query = RunQuery {
            rule,
            status,
            scope_key,
            limit,
        };
        self.call(py, |s| s.runs(&ws, &query))
            .map(|rs| rs.iter().map(Run::to_json).collect())
    }

    /// One page of a `where` search of the log (docs/search.md): the envelopes' JSON, how
    /// many envelopes were examined, the last seq examined and where to go on.
    #[pyo3(signature = (tenant, workspace, where_, after_seq, before_seq, newest_first, limit, scan, now))]
    #[allow(clippy::too_many_arguments)]
    fn search_log(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        where_: &str,
        after_seq: i64,
        before_seq: Option<i64>,
        newest_first: bool,
        limit: usize,
        scan: usize,
        now: f64,
    ) -> PyResult<LogSearchAnswer> {
        let ws = wref(tenant, workspace);
        let filter = execstore::workspace::parse_log_where(where_, now).py_err(py)?;
        let search = execstore::workspace::LogSearch {
            filter,
            after_seq,
            before_seq,
            newest_first,
            limit,
            scan,
        };
        self.call(py, |s| s.search_log(&ws, &search)).map(|page| {
            (
                page.envelopes.iter().map(|e| e.to_json()).collect(),
                page.scanned,
                page.scanned_to,
                page.next,
            )
        })
    }

    /// One page of a `where` search of the runs, newest first: the runs' JSON, how many runs
    /// were examined and the cursor to go on with.
    #[pyo3(signature = (tenant, workspace, where_, cursor, limit, scan, now))]
    #[allow(clippy::too_many_arguments)]
    fn search_runs(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        where_: &str,
        cursor: Option<i64>,
        limit: usize,
        scan: usize,
        now: f64,
    ) -> PyResult<(Vec<String>, usize, Option<i64>)> {
        let ws = wref(tenant, workspace);
        let filter = execstore::workspace::parse_run_where(where_, now).py_err(py)?;
        let search = execstore::workspace::RunSearch {
            filter,
            cursor,
            limit,
            scan,
        };
        self.call(py, |s| s.search_runs(&ws, &search)).map(|page| {
            (
                page.runs.iter().map(Run::to_json).collect(),
                page.scanned,
                page.next,
            )
        })
    }

    #[pyo3(signature = (tenant, workspace, rule))]
    fn dead_letters(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        rule: Option<String>,
    ) -> PyResult<Vec<String>> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.dead_letters(&ws, rule.as_deref()))
            .map(|ls| ls.iter().map(EvaluationError::to_json).collect())
    }

    fn progress(&self, py: Python<'_>, tenant: &str, workspace: &str) -> PyResult<Vec<(String, String)>> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.progress(&ws))
            .map(|ps| ps.into_iter().map(|(k, p)| (k, p.to_json())).collect())
    }

    fn schedules(&self, py: Python<'_>, tenant: &str, workspace: &str) -> PyResult<Vec<(String, String)>> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.schedules(&ws))
            .map(|ss| ss.into_iter().map(|(k, t)| (k, t.to_json_text())).collect())
    }

    fn stored_rules(&self, py: Python<'_>, tenant: &str, workspace: &str) -> PyResult<Vec<String>> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.stored_rules(&ws))
            .map(|rs| rs.iter().map(StoredRule::to_json).collect())
    }

    fn workspaces(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        self.call(py, |s| s.workspaces())
            .map(|ws| ws.into_iter().map(|w| (w.tenant_id, w.workspace_id)).collect())
    }

    fn due_runs(
        &self,
        py: Python<'_>,
        now: &str,
        limit: usize,
        disabled: Vec<String>,
        ordered: Vec<String>,
        blocking: Vec<String>,
    ) -> PyResult<Vec<(String, String, String)>> {
        let now = ts("now", now).py_err(py)?;
        let policy = RunPolicy {
            disabled: disabled.into_iter().collect(),
            ordered: ordered.into_iter().collect(),
            blocking: blocking.into_iter().collect(),
        };
        self.call(py, |s| s.due_runs(now, limit, &policy)).map(|rs| {
            rs.into_iter()
                .map(|(w, r)| (w.tenant_id, w.workspace_id, r.to_json()))
                .collect()
        })
    }

    /// Takes or renews a lease at `now` (the caller's clock), or at the system clock's time.
    #[pyo3(signature = (tenant, workspace, key, holder, ttl_micros, now=None))]
    #[allow(clippy::too_many_arguments)]
    fn acquire_lease(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        key: &str,
        holder: &str,
        ttl_micros: i64,
        now: Option<String>,
    ) -> PyResult<bool> {
        let ws = wref(tenant, workspace);
        let now = now.map(|n| ts("now", &n)).transpose().py_err(py)?;
        if ttl_micros <= 0 {
            return Err(StoreError::invalid("ttl", "must be more than zero")).py_err(py);
        }
        let ttl = Duration::from_micros(ttl_micros as u64);
        self.call(py, |s| s.acquire_lease_timed(&ws, key, holder, ttl, now))
    }

    fn release_lease(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        key: &str,
        holder: &str,
    ) -> PyResult<()> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.release_lease(&ws, key, holder))
    }

    fn cursor(&self, py: Python<'_>, tenant: &str, workspace: &str, name: &str) -> PyResult<i64> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.cursor(&ws, name))
    }

    fn save_cursor(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        name: &str,
        seq: i64,
    ) -> PyResult<()> {
        let ws = wref(tenant, workspace);
        self.call(py, |s| s.save_cursor(&ws, name, seq))
    }

    /// Blocks (GIL released) until the log may have grown past `after_seq`, or `timeout`
    /// seconds pass.
    fn wait_for_append(
        &self,
        py: Python<'_>,
        tenant: &str,
        workspace: &str,
        after_seq: i64,
        timeout: f64,
    ) -> PyResult<bool> {
        let ws = wref(tenant, workspace);
        let timeout = Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(Duration::ZERO);
        self.call(py, |s| s.wait_for_append(&ws, after_seq, timeout))
    }
}

/// One open transaction on a workspace; it holds the workspace until `commit` or `rollback`.
#[pyclass(module = "execstore._core", frozen)]
pub(crate) struct WorkspaceTxn {
    tx: Mutex<Option<Box<dyn TimedWorkspaceTx>>>,
}

impl WorkspaceTxn {
    /// Runs `f` on the open transaction with the GIL released.
    fn call<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut dyn TimedWorkspaceTx) -> execstore::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.tx.lock().map_err(|_| None)?;
            match guard.as_mut() {
                Some(tx) => f(&mut **tx).map_err(Some),
                None => Err(None),
            }
        })
        .map_err(|e| match e {
            Some(e) => crate::errors::to_py(py, e),
            None => PyRuntimeError::new_err("the transaction has ended"),
        })
    }
}

#[pymethods]
impl WorkspaceTxn {
    /// Appends entries (JSON texts) at `nows` (the caller's clock, one per entry), then at the
    /// system clock's time.
    #[pyo3(signature = (entries, nows=None))]
    fn append(
        &self,
        py: Python<'_>,
        entries: Vec<String>,
        nows: Option<Vec<String>>,
    ) -> PyResult<Vec<String>> {
        let nows = timestamps("now", nows).py_err(py)?;
        let entries = decode_texts("entries", &entries, Entry::from_value).py_err(py)?;
        self.call(py, |tx| tx.append_timed(&entries, nows))
            .map(|es| es.iter().map(|e| e.to_json()).collect())
    }

    fn envelope(&self, py: Python<'_>, event_id: &str) -> PyResult<Option<String>> {
        self.call(py, |tx| tx.envelope(event_id))
            .map(|e| e.map(|e| e.to_json()))
    }

    fn head_seq(&self, py: Python<'_>) -> PyResult<i64> {
        self.call(py, |tx| tx.head_seq())
    }

    fn read(&self, py: Python<'_>, after_seq: i64, limit: usize) -> PyResult<Vec<String>> {
        self.call(py, |tx| tx.read(after_seq, limit))
            .map(|es| es.iter().map(|e| e.to_json()).collect())
    }

    fn progress(&self, py: Python<'_>, rule: &str) -> PyResult<Option<String>> {
        self.call(py, |tx| tx.progress(rule))
            .map(|p| p.map(|p| p.to_json()))
    }

    fn save_progress(&self, py: Python<'_>, rule: &str, progress: &str) -> PyResult<()> {
        let progress = decode_text("progress", progress, RuleProgress::from_value).py_err(py)?;
        self.call(py, |tx| tx.save_progress(rule, &progress))
    }

    fn states(&self, py: Python<'_>, rule: &str, keys: Vec<String>) -> PyResult<Vec<(String, String)>> {
        self.call(py, |tx| tx.states(rule, &keys))
            .map(|ss| ss.into_iter().map(|(k, s)| (k, s.to_json())).collect())
    }

    fn save_states(&self, py: Python<'_>, rule: &str, states: Vec<(String, String)>) -> PyResult<()> {
        let states = states
            .into_iter()
            .enumerate()
            .map(|(i, (k, s))| {
                Ok((
                    k,
                    decode_text(&format!("states[{i}]"), &s, ScopeState::from_value)?,
                ))
            })
            .collect::<execstore::Result<Vec<_>>>()
            .py_err(py)?;
        self.call(py, |tx| tx.save_states(rule, &states))
    }

    fn clear_states(&self, py: Python<'_>, rule: &str) -> PyResult<()> {
        self.call(py, |tx| tx.clear_states(rule))
    }

    fn run(&self, py: Python<'_>, run_id: &str) -> PyResult<Option<String>> {
        self.call(py, |tx| tx.run(run_id)).map(|r| r.map(|r| r.to_json()))
    }

    fn save_runs(&self, py: Python<'_>, runs: Vec<String>) -> PyResult<()> {
        let runs = decode_texts("runs", &runs, Run::from_value).py_err(py)?;
        self.call(py, |tx| tx.save_runs(&runs))
    }

    fn scope_runs(&self, py: Python<'_>, rule: &str, scope_key: &str) -> PyResult<Vec<String>> {
        self.call(py, |tx| tx.scope_runs(rule, scope_key))
            .map(|rs| rs.iter().map(Run::to_json).collect())
    }

    fn dead_letter(&self, py: Python<'_>, errors: Vec<String>) -> PyResult<()> {
        let errors = decode_texts("errors", &errors, EvaluationError::from_value).py_err(py)?;
        self.call(py, |tx| tx.dead_letter(&errors))
    }

    fn schedule(&self, py: Python<'_>, name: &str) -> PyResult<Option<String>> {
        self.call(py, |tx| tx.schedule(name))
            .map(|t| t.map(|t| t.to_json_text()))
    }

    fn save_schedule(&self, py: Python<'_>, name: &str, at: &str) -> PyResult<()> {
        let at = ts("at", at).py_err(py)?;
        self.call(py, |tx| tx.save_schedule(name, at))
    }

    fn stored_rule(&self, py: Python<'_>, name: &str) -> PyResult<Option<String>> {
        self.call(py, |tx| tx.stored_rule(name))
            .map(|r| r.as_ref().map(StoredRule::to_json))
    }

    fn stored_rules(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.call(py, |tx| tx.stored_rules())
            .map(|rs| rs.iter().map(StoredRule::to_json).collect())
    }

    fn save_stored_rule(&self, py: Python<'_>, stored: &str) -> PyResult<()> {
        let stored = decode_text("stored", stored, StoredRule::from_value).py_err(py)?;
        self.call(py, |tx| tx.save_stored_rule(&stored))
    }

    /// Commits; the transaction has ended whatever the outcome.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let taken = self.tx.lock().ok().and_then(|mut g| g.take());
            match taken {
                Some(tx) => tx.commit().map_err(Some),
                None => Err(None),
            }
        })
        .map_err(|e| match e {
            Some(e) => crate::errors::to_py(py, e),
            None => PyRuntimeError::new_err("the transaction has ended"),
        })
    }

    /// Rolls back (does nothing if it has ended).
    fn rollback(&self, py: Python<'_>) {
        py.detach(|| {
            let taken = self.tx.lock().ok().and_then(|mut g| g.take());
            drop(taken);
        })
    }

    /// Whether it is still open.
    #[getter]
    fn open(&self) -> bool {
        self.tx.lock().map(|g| g.is_some()).unwrap_or(false)
    }
}

/// Registers the reflexr side's classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<WorkspaceStore>()?;
    m.add_class::<WorkspaceTxn>()?;
    Ok(())
}
