//! `execstore._core`: the extension module behind the Python package `execstore`.
//!
//! The Python package owns the public classes (`execstore.harel`, `execstore.reflexr`); this
//! module gives them handles on the Rust stores. Records cross as JSON text, the stores' own
//! shapes (harel's and reflexr's pydantic models dump to exactly that text), so nothing is
//! converted field by field. Every storage call releases the GIL (`Python::detach`), so one
//! store can be called from several threads. Errors come out as the exceptions of
//! [`errors`]: one per `StoreError` kind.
#![deny(missing_docs)]

use pyo3::prelude::*;

mod errors;
mod harel;
mod reflexr;
mod transport;

/// The module `execstore._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    harel::register(m)?;
    reflexr::register(m)?;
    transport::register(m)?;
    Ok(())
}
