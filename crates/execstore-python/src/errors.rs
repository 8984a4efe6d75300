//! One Python exception per `StoreError` kind, under `execstore.StoreError`, made from the
//! core's one list of kinds, [`execstore::StoreError::CODES`]: the class of code `NOT_FOUND`
//! is `execstore.NotFoundError`. A kind the core adds gets its class with nothing written here
//! (its docstring is a generic one until [`doc`] names it), never another kind's.
//!
//! The harel and reflexr layers map them to the engines' own exceptions where the engines name
//! one (harel's `StoreConflict`, reflexr's `ValueError` messages).

use std::ffi::CString;

use execstore::StoreError as Error;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

create_exception!(
    execstore,
    StoreError,
    PyException,
    "A store operation failed; `code` says how."
);

/// The class name of a code: `ALREADY_EXISTS` -> `AlreadyExistsError`.
pub(crate) fn class_name(code: &str) -> String {
    let mut name: String = code
        .split('_')
        .filter(|word| !word.is_empty())
        .map(|word| word[..1].to_ascii_uppercase() + &word[1..].to_ascii_lowercase())
        .collect();
    name.push_str("Error");
    name
}

/// The docstring of a code's class.
fn doc(code: &str) -> &'static str {
    match code {
        "CONFLICT" => "A compare-and-swap write lost, or a stored rule's version is not the next one.",
        "INVALID_INPUT" => "The store refused the input; nothing was changed.",
        "NOT_FOUND" => "The operation names something that is not stored.",
        "ALREADY_EXISTS" => "An event id already in the workspace's log.",
        "CORRUPT" => "Stored data could not be read back.",
        "BACKEND" => "The database failed; `retryable` says whether a retry may help.",
        _ => "A store operation failed; `code` says how.",
    }
}

/// Each code's class, in [`execstore::StoreError::CODES`] order.
static CLASSES: PyOnceLock<Vec<(&'static str, Py<PyType>)>> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Vec<(&'static str, Py<PyType>)>> {
    CLASSES.get_or_try_init(py, || {
        let base = py.get_type::<StoreError>();
        Error::CODES
            .iter()
            .map(|&code| {
                let name = CString::new(format!("execstore.{}", class_name(code)))?;
                let doc = CString::new(doc(code))?;
                let class = PyErr::new_type(py, &name, Some(&doc), Some(&base), None)?;
                Ok((code, class))
            })
            .collect()
    })
}

/// Registers the exception classes: `StoreError` and one class per code, and `ERROR_CODES`
/// (the core's list, for the package's tests).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("StoreError", py.get_type::<StoreError>())?;
    for (code, class) in classes(py)? {
        m.add(class_name(code).as_str(), class.bind(py))?;
    }
    m.add("ERROR_CODES", PyTuple::new(py, Error::CODES)?)?;
    m.add_function(wrap_pyfunction!(invalid_input, m)?)?;
    m.add_function(wrap_pyfunction!(error_examples, m)?)?;
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

/// `execstore._core.error_examples()`: one exception of each kind, as the store raises them
/// ([`execstore::StoreError::examples`], in `ERROR_CODES` order), for the package's tests.
#[pyfunction]
fn error_examples(py: Python<'_>) -> Vec<Py<PyAny>> {
    Error::examples()
        .into_iter()
        .map(|e| to_py(py, e).into_value(py).into_any())
        .collect()
}

/// An [`execstore::StoreError`] as its Python exception, the class of its code, with its
/// fields as attributes (`code`, and `id`/`expected`/`found`, `field`/`reason`, `what`/`key`,
/// `retryable` as the kind has them).
pub(crate) fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let message = e.to_string();
    let code = e.code();
    let class = classes(py)
        .ok()
        .and_then(|all| all.iter().find(|(c, _)| *c == code))
        .map(|(_, class)| class.bind(py).clone());
    let err = match class {
        Some(class) => PyErr::from_type(class, message),
        // Unreachable (every code has its class); the base class, never another kind's.
        None => StoreError::new_err(message),
    };
    let value = err.value(py);
    let _ = value.setattr("code", code);
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
