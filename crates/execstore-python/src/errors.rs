//! One Python exception per `StoreError` kind, under `execstore.StoreError`.
//!
//! The harel and reflexr layers map them to the engines' own exceptions where the engines name
//! one (harel's `StoreConflict`, reflexr's `ValueError` messages).

use execstore::StoreError as Error;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    execstore,
    StoreError,
    PyException,
    "A store operation failed; `code` says how."
);
create_exception!(
    execstore,
    ConflictError,
    StoreError,
    "A compare-and-swap write lost, or a stored rule's version is not the next one."
);
create_exception!(
    execstore,
    InvalidInputError,
    StoreError,
    "The store refused the input; nothing was changed."
);
create_exception!(
    execstore,
    NotFoundError,
    StoreError,
    "The operation names something that is not stored."
);
create_exception!(
    execstore,
    AlreadyExistsError,
    StoreError,
    "An event id already in the workspace's log."
);
create_exception!(
    execstore,
    CorruptError,
    StoreError,
    "Stored data could not be read back."
);
create_exception!(
    execstore,
    BackendError,
    StoreError,
    "The database failed; `retryable` says whether a retry may help."
);

/// Registers the exception classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("InvalidInputError", py.get_type::<InvalidInputError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("AlreadyExistsError", py.get_type::<AlreadyExistsError>())?;
    m.add("CorruptError", py.get_type::<CorruptError>())?;
    m.add("BackendError", py.get_type::<BackendError>())?;
    m.add_function(wrap_pyfunction!(invalid_input, m)?)?;
    Ok(())
}

/// `execstore._core.invalid_input(field, reason)`: the `InvalidInputError` the store raises for
/// bad input (same message, `code`, `field` and `reason`), for the checks the Python layer
/// makes before a value is lost on its way in (a lone surrogate in a name, a NaN time that
/// pydantic would dump as `null`).
#[pyfunction]
fn invalid_input(py: Python<'_>, field: String, reason: String) -> Py<PyAny> {
    to_py(py, Error::invalid(field, reason)).into_value(py).into_any()
}

/// An [`execstore::StoreError`] as its Python exception, with its fields as attributes (`code`, and
/// `id`/`expected`/`found`, `field`/`reason`, `what`/`key`, `retryable` as the kind has them).
pub(crate) fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let message = e.to_string();
    let err = match &e {
        Error::Conflict { .. } => ConflictError::new_err(message),
        Error::InvalidInput { .. } => InvalidInputError::new_err(message),
        Error::NotFound { .. } => NotFoundError::new_err(message),
        Error::AlreadyExists { .. } => AlreadyExistsError::new_err(message),
        Error::Corrupt { .. } => CorruptError::new_err(message),
        _ => BackendError::new_err(message),
    };
    let value = err.value(py);
    let _ = value.setattr("code", e.code());
    let _ = match &e {
        Error::Conflict { id, expected, found } => value
            .setattr("id", id)
            .and_then(|_| value.setattr("expected", expected))
            .and_then(|_| value.setattr("found", found)),
        Error::InvalidInput { field, reason } => value
            .setattr("field", field)
            .and_then(|_| value.setattr("reason", reason)),
        Error::NotFound { what, key } | Error::AlreadyExists { what, key } => value
            .setattr("what", what)
            .and_then(|_| value.setattr("key", key)),
        Error::Backend { retryable, .. } => value.setattr("retryable", retryable),
        _ => Ok(()),
    };
    err
}

/// `Result<T, execstore::StoreError>` into `PyResult<T>`.
pub(crate) trait IntoPy<T> {
    /// The error as its Python exception.
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for execstore::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// Set to `1`, the caller's word that no `sqlite3` connection of this process opens the store's
/// files, where [`check_other_sqlite`] would refuse.
const ALLOW_OTHER_SQLITE_ENV: &str = "EXECSTORE_ALLOW_OTHER_SQLITE";

/// Refuses to open a SQLite file where the store's copy of SQLite (inside this extension) and
/// Python's `sqlite3` (another copy) cannot see each other's locks in one process, and this
/// process has loaded `sqlite3`: everywhere but 64-bit Linux (see
/// `execstore_sqlite::other_sqlite_safe`). Before anything is opened or created.
pub(crate) fn check_other_sqlite(py: Python<'_>) -> PyResult<()> {
    if execstore_sqlite::other_sqlite_safe()
        || std::env::var_os(ALLOW_OTHER_SQLITE_ENV).is_some_and(|v| v == "1")
        || !py.import("sys")?.getattr("modules")?.contains("_sqlite3")?
    {
        return Ok(());
    }
    Err(to_py(
        py,
        Error::Backend {
            message: format!(
                "execstore will not open a SQLite file in a process that loaded Python's sqlite3 \
                 on this platform: execstore's SQLite (a copy inside execstore._core) takes POSIX \
                 locks here, which Python's copy of SQLite does not see in the same process, so a \
                 sqlite3 connection to the file (harel's SqliteTransport or SqliteStore, a \
                 sqlite3.connect) could write at the same time as the store or delete its WAL. \
                 Only 64-bit Linux, where execstore takes open-file-description locks, is safe. \
                 Fix: open the file with sqlite3 from another process (and use \
                 execstore.harel.SqliteTransport), or, if no sqlite3 connection of this process \
                 ever opens this file, set {ALLOW_OTHER_SQLITE_ENV}=1"
            ),
            retryable: false,
            source: None,
        },
    ))
}
