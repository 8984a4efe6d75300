//! Store errors as JS `Error`s with a stable `code`.

use execstore::StoreError;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

use crate::wording::js_words;

/// What an operation of the package fails with: a store error, or an OPFS store another
/// worker or tab owns, or a store file another process owns.
#[derive(Debug, thiserror::Error)]
pub enum WasmError {
    /// An error of the store itself (the core's kinds).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The OPFS store is open elsewhere (another worker, tab, or an earlier open in this
    /// worker) and was not released within the wait allowed.
    #[error("the OPFS store {name:?} is open in another worker or tab (not released within {waited_ms} ms)")]
    Locked {
        /// The store's name.
        name: String,
        /// How long the open waited for it.
        waited_ms: f64,
    },
    /// The store file is owned by another process (or by another store in this one) and was
    /// not released within the wait allowed.
    #[error("the store file {path:?} is open in {} (not released within {waited_ms} ms)", holder(*pid))]
    FileLocked {
        /// The file's absolute path.
        path: String,
        /// The owner's pid, if known (`None`: a stale lock was being taken over by another opener).
        pid: Option<u32>,
        /// How long the open waited for it.
        waited_ms: f64,
    },
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_owned(),
    }
}

impl WasmError {
    /// The stable code JS sees: the core's (one of `StoreError::CODES`) or `LOCKED`.
    pub fn code(&self) -> &'static str {
        match self {
            WasmError::Store(e) => e.code(),
            WasmError::Locked { .. } | WasmError::FileLocked { .. } => "LOCKED",
        }
    }

    /// A JS `Error` named `StoreError` with `code`, the readable message, and the fields of
    /// its kind: `id`, `expected`, `found` (a number or `null`) for `CONFLICT`; `field` and
    /// `reason` for `INVALID_INPUT`; `what` and `key` for `NOT_FOUND` and `ALREADY_EXISTS`;
    /// `what` and `reason` for `CORRUPT`; `retryable` for `BACKEND`; `store` (its name) for
    /// `LOCKED` (as types.d.ts declares them; the core's tests/error_codes.rs checks that
    /// every kind of `StoreError::CODES` has its arm here and its interface there).
    /// serde's wording in the message and `reason` (`expected i64`, `struct JsRef`) is put in
    /// JS's words here, for every error of every method (wording.rs).
    pub fn to_js(&self) -> JsValue {
        let error = js_sys::Error::new(&js_words(&self.to_string()));
        error.set_name("StoreError");
        let mut fields: Vec<(&str, JsValue)> = vec![("code", self.code().into())];
        match self {
            WasmError::Store(StoreError::Conflict { id, expected, found }) => {
                fields.push(("id", id.as_str().into()));
                fields.push(("expected", (*expected as f64).into()));
                fields.push(("found", found.map_or(JsValue::NULL, |v| (v as f64).into())));
            }
            WasmError::Store(StoreError::InvalidInput { field, reason }) => {
                fields.push(("field", field.as_str().into()));
                fields.push(("reason", js_words(reason).into()));
            }
            WasmError::Store(StoreError::NotFound { what, key })
            | WasmError::Store(StoreError::AlreadyExists { what, key }) => {
                fields.push(("what", (*what).into()));
                fields.push(("key", key.as_str().into()));
            }
            WasmError::Store(StoreError::Corrupt { what, reason }) => {
                fields.push(("what", what.as_str().into()));
                fields.push(("reason", js_words(reason).into()));
            }
            WasmError::Store(StoreError::Backend { retryable, .. }) => {
                fields.push(("retryable", (*retryable).into()));
            }
            WasmError::Store(_) => {}
            WasmError::Locked { name, .. } => fields.push(("store", name.as_str().into())),
            WasmError::FileLocked { path, pid, .. } => {
                fields.push(("store", path.as_str().into()));
                fields.push(("pid", pid.map_or(JsValue::NULL, |p| f64::from(p).into())));
            }
        }
        for (key, value) in fields {
            // Setting a property on a fresh Error object cannot fail.
            let _ = Reflect::set(&error, &key.into(), &value);
        }
        error.into()
    }
}

impl From<WasmError> for JsValue {
    fn from(error: WasmError) -> JsValue {
        error.to_js()
    }
}

/// A backend failure outside the store (an OPFS or JS call that failed).
pub(crate) fn backend(message: impl Into<String>) -> WasmError {
    WasmError::Store(StoreError::Backend {
        message: message.into(),
        retryable: false,
        source: None,
    })
}

/// `INVALID_INPUT` for `field`.
pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> WasmError {
    WasmError::Store(StoreError::invalid(field, reason))
}

/// The text of a thrown JS value (an `Error`'s `name: message`, or the value itself).
pub(crate) fn describe(value: &JsValue) -> String {
    let text = |key: &str| Reflect::get(value, &key.into()).ok().and_then(|v| v.as_string());
    match (text("name"), text("message")) {
        (Some(name), Some(message)) => format!("{name}: {message}"),
        (_, Some(message)) => message,
        _ => value.as_string().unwrap_or_else(|| format!("{value:?}")),
    }
}
