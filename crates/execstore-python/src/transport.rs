//! The transport for `execstore.harel.SqliteTransport`, `PostgresTransport` and their async
//! twins (harel 0.9's `Transport` protocol).
//!
//! [`HarelTransport`] is a handle on an `execstore::transport::Transport` (SQLite or
//! PostgreSQL, harel's transport tables). Events cross as JSON text in harel's shape (`Event.model_dump_json()`
//! in, the stored text's event out); the Python layer passes its clock's `now` to every call
//! that needs one, and builds harel's `Lease`. Every call releases the GIL.

use std::sync::{Arc, RwLock};

use execstore::transport::{Lease, Transport};
use execstore::StoreError;
use execstore_postgres::{PgTransport, PgTransportOptions};
use execstore_sqlite::{SqliteTransport, SqliteTransportOptions, Synchronous};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::IntoPy;

/// A claimed message as the Python layer takes it: `(seq, group_id, event JSON, token)`.
type Claimed = (i64, String, String, String);

/// A handle on a transport holding harel 0.9's transport tables: the Rust side of
/// `execstore.harel.SqliteTransport`. Safe to call from several threads.
#[pyclass(module = "execstore._core", frozen)]
pub(crate) struct HarelTransport {
    transport: RwLock<Option<Arc<dyn Transport>>>,
    label: String,
}

impl HarelTransport {
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&dyn Transport) -> execstore::Result<T> + Send,
    ) -> PyResult<T> {
        let transport = self
            .transport
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| PyValueError::new_err("the transport is closed"))?;
        py.detach(|| f(transport.as_ref())).py_err(py)
    }
}

impl HarelTransport {
    fn opened<T: Transport + 'static>(
        py: Python<'_>,
        opened: execstore::Result<T>,
        label: String,
    ) -> PyResult<Self> {
        let transport = match opened {
            Ok(t) => t,
            Err(StoreError::NotFound { key, .. }) => {
                return Err(PyValueError::new_err(format!(
                    "create_schema=False but the transport's table {key} does not exist"
                )))
            }
            Err(e) => return Err(crate::errors::to_py(py, e)),
        };
        Ok(HarelTransport {
            transport: RwLock::new(Some(Arc::new(transport))),
            label,
        })
    }
}

fn lease(seq: i64, group_id: String, token: String) -> Lease {
    Lease { seq, group_id, token }
}

#[pymethods]
impl HarelTransport {
    /// Opens (creating if needed) the SQLite database at `path` (`":memory:"`: a private
    /// database of this transport alone) with harel's transport tables under `prefix`, at
    /// `synchronous` (`"full"`, `"normal"`, `"off"` or `"extra"`).
    #[staticmethod]
    #[pyo3(signature = (path, prefix, create_schema, synchronous = "full"))]
    fn open_sqlite(
        py: Python<'_>,
        path: &str,
        prefix: &str,
        create_schema: bool,
        synchronous: &str,
    ) -> PyResult<Self> {
        if path.is_empty() {
            return Err(PyValueError::new_err("path must not be empty"));
        }
        let synchronous: Synchronous = synchronous.parse().py_err(py)?;
        let options = SqliteTransportOptions::new()
            .prefix(prefix)
            .create_schema(create_schema)
            .synchronous(synchronous);
        let opened = py.detach(|| SqliteTransport::open(path, options));
        Self::opened(py, opened, format!("sqlite {path} prefix={prefix:?}"))
    }

    /// Connects to PostgreSQL at `url` (a pool of up to `max_connections`) with harel's
    /// transport tables under `prefix`.
    #[staticmethod]
    #[pyo3(signature = (url, prefix, create_schema, max_connections = 8))]
    fn open_postgres(
        py: Python<'_>,
        url: &str,
        prefix: &str,
        create_schema: bool,
        max_connections: u32,
    ) -> PyResult<Self> {
        if max_connections == 0 {
            return Err(PyValueError::new_err("max_connections must be at least 1"));
        }
        let options = PgTransportOptions::new()
            .prefix(prefix)
            .create_schema(create_schema)
            .max_connections(max_connections);
        let opened = py.detach(|| PgTransport::open(url, options));
        Self::opened(py, opened, format!("postgres prefix={prefix:?}"))
    }

    /// Drops the transport's tables under `prefix` at `url` (for tests).
    #[staticmethod]
    fn drop_postgres(py: Python<'_>, url: &str, prefix: &str) -> PyResult<()> {
        py.detach(|| execstore_postgres::drop_transport(url, prefix))
            .py_err(py)
    }

    /// Appends the event (`Event.model_dump_json()`) to `group_id`'s queue; returns its seq.
    fn publish(&self, py: Python<'_>, group_id: &str, event_json: &str, priority: i64) -> PyResult<i64> {
        self.run(py, |t| {
            let event =
                serde_json::from_str(event_json).map_err(|e| StoreError::invalid("event", e.to_string()))?;
            t.publish(group_id, &event, priority)
        })
    }

    /// Leases a message until `now + visibility`: `(seq, group_id, event JSON, token)`, or
    /// None if nothing is claimable.
    fn claim(
        &self,
        py: Python<'_>,
        worker_id: &str,
        now: f64,
        visibility: f64,
        min_priority: i64,
    ) -> PyResult<Option<Claimed>> {
        self.run(py, |t| {
            Ok(t.claim(worker_id, now, visibility, min_priority)?.map(|d| {
                let event = serde_json::to_string(&d.event).unwrap_or_default();
                (d.lease.seq, d.lease.group_id, event, d.lease.token)
            }))
        })
    }

    /// Removes the leased message and frees its group.
    fn ack(&self, py: Python<'_>, seq: i64, group_id: String, token: String, now: f64) -> PyResult<()> {
        self.run(py, |t| t.ack(&lease(seq, group_id, token), now))
    }

    /// Returns the leased message: at once (`delay` 0), or parked until `now + delay`.
    #[allow(clippy::too_many_arguments)] // the lease's three parts, and the times
    fn nack(
        &self,
        py: Python<'_>,
        seq: i64,
        group_id: String,
        token: String,
        now: f64,
        delay: f64,
    ) -> PyResult<()> {
        self.run(py, |t| t.nack(&lease(seq, group_id, token), now, delay))
    }

    /// How many messages are queued (leased and parked ones included).
    fn depth(&self, py: Python<'_>) -> PyResult<u64> {
        self.run(py, |t| t.depth())
    }

    /// Whether the transport is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.transport.read().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// Closes the transport: later calls raise `ValueError`. Calls running finish first.
    fn close(&self, py: Python<'_>) {
        let t = self.transport.write().unwrap_or_else(|e| e.into_inner()).take();
        py.detach(move || drop(t));
    }

    fn __repr__(&self) -> String {
        let closed = if self.closed() { ", closed" } else { "" };
        format!("<HarelTransport {}{closed}>", self.label)
    }
}

/// Registers the transport's class.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HarelTransport>()?;
    Ok(())
}
