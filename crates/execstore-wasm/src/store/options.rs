//! What `Store`'s constructors and operations take from JS: the options objects, a list
//! query, a batch item, file bytes and callbacks.

use super::*;
use crate::node_file::FileOptions;

/// Options of `Store.memory()` and `Store.sqliteMemory()`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct LocalOptions {
    pub(super) trace_max: Option<u32>,
    pub(super) prefix: Option<String>,
}

/// Options of `Store.openOpfs()`.
#[derive(Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct OpfsJsOptions {
    pub(super) wait_ms: f64,
    pub(super) trace_max: Option<u32>,
    pub(super) prefix: Option<String>,
    pub(super) synchronous: Option<String>,
    pub(super) read_only: bool,
}

impl Default for OpfsJsOptions {
    fn default() -> Self {
        OpfsJsOptions {
            wait_ms: OpfsOptions::default().wait_ms,
            trace_max: None,
            prefix: None,
            synchronous: None,
            read_only: false,
        }
    }
}

/// Options of `Store.openFile()`.
#[derive(Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct FileJsOptions {
    pub(super) wait_ms: f64,
    pub(super) trace_max: Option<u32>,
    pub(super) prefix: Option<String>,
    pub(super) synchronous: Option<String>,
}

impl Default for FileJsOptions {
    fn default() -> Self {
        FileJsOptions {
            wait_ms: FileOptions::default().wait_ms,
            trace_max: None,
            prefix: None,
            synchronous: None,
        }
    }
}

/// The SQLite options and the file's of `Store.openFile()`.
pub(super) fn file_options(js: FileJsOptions) -> Result<(SqliteOptions, FileOptions), WasmError> {
    let mut file = FileOptions {
        wait_ms: js.wait_ms,
        ..FileOptions::default()
    };
    if let Some(level) = &js.synchronous {
        file.synchronous = opfs_synchronous(level, "options.synchronous")?;
    }
    Ok((sqlite_options(js.trace_max, js.prefix), file))
}

/// Options of `Store.sqliteFromBytes()` (less `wal`, taken apart).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct BytesOptions {
    pub(super) trace_max: Option<u32>,
    pub(super) prefix: Option<String>,
    pub(super) read_only: bool,
}

/// Options of `Store.importOpfs()` (less `wal`, taken apart): those of `openOpfs`, and
/// `replace`.
#[derive(Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ImportJsOptions {
    pub(super) wait_ms: f64,
    pub(super) trace_max: Option<u32>,
    pub(super) prefix: Option<String>,
    pub(super) synchronous: Option<String>,
    pub(super) read_only: bool,
    pub(super) replace: bool,
}

impl Default for ImportJsOptions {
    fn default() -> Self {
        let open = OpfsJsOptions::default();
        ImportJsOptions {
            wait_ms: open.wait_ms,
            trace_max: open.trace_max,
            prefix: open.prefix,
            synchronous: open.synchronous,
            read_only: open.read_only,
            replace: false,
        }
    }
}

impl ImportJsOptions {
    /// The options of the open that follows the import, and `replace`.
    pub(super) fn split(self) -> (OpfsJsOptions, bool) {
        let open = OpfsJsOptions {
            wait_ms: self.wait_ms,
            trace_max: self.trace_max,
            prefix: self.prefix,
            synchronous: self.synchronous,
            read_only: self.read_only,
        };
        (open, self.replace)
    }
}

/// A list query as JS passes it: every key optional, snake_case as in the core.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JsListQuery {
    pub(super) status: Option<Vec<Status>>,
    pub(super) definition_id: Option<String>,
    pub(super) roots_only: bool,
    pub(super) limit: Option<usize>,
    pub(super) cursor: Option<String>,
    pub(super) created_after: Option<f64>,
    pub(super) created_before: Option<f64>,
    pub(super) updated_after: Option<f64>,
    pub(super) updated_before: Option<f64>,
    pub(super) finished_after: Option<f64>,
    pub(super) finished_before: Option<f64>,
    pub(super) search: Option<String>,
    /// `id` (the default) or `updated` (most recently updated first).
    pub(super) order: Option<String>,
    /// A `where` query (docs/search.md); relative times against the page's clock.
    #[serde(rename = "where")]
    pub(super) where_text: Option<String>,
}

/// One item of `commitBatch`.
#[derive(Deserialize)]
pub(super) struct JsBatchItem {
    pub(super) execution: Execution,
    #[serde(default)]
    pub(super) effects: Option<Effects>,
}

/// The options object: `undefined` or `null` gives the defaults.
pub(super) fn options<T: Default + serde::de::DeserializeOwned>(value: &JsValue) -> Result<T, WasmError> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    object(value, "options", Unknown::Refuse)
}

pub(super) fn sqlite_options(trace_max: Option<u32>, prefix: Option<String>) -> SqliteOptions {
    let mut options = SqliteOptions::new();
    if let Some(n) = trace_max {
        options = options.trace_max(Some(n));
    }
    if let Some(prefix) = prefix {
        options = options.prefix(prefix);
    }
    options
}

/// Sets `version` on the caller's object after a committed write, so an execution can be
/// changed and committed again. A frozen object keeps its old version (the return value
/// still says the new one).
pub(super) fn set_version(target: &JsValue, version: i64) {
    let _ = Reflect::set(target, &"version".into(), &(version as f64).into());
}

/// Runs a JS callback from inside a store operation: its result, or the error it threw kept
/// in `failure` (the operation then sees an empty answer and acks nothing).
pub(super) fn call_back(
    callback: &Function,
    arg: JsValue,
    failure: &RefCell<Option<JsValue>>,
) -> Option<JsValue> {
    if failure.borrow().is_some() {
        return None;
    }
    match callback.call1(&JsValue::UNDEFINED, &arg) {
        Ok(value) => Some(value),
        Err(e) => {
            *failure.borrow_mut() = Some(e);
            None
        }
    }
}

pub(super) fn callback(value: &JsValue, field: &str) -> Result<Function, WasmError> {
    value
        .clone()
        .dyn_into::<Function>()
        .map_err(|_| invalid(field, "must be a function"))
}

/// The bytes of a file: a `Uint8Array` (a Node `Buffer` is one) or an `ArrayBuffer`,
/// copied into wasm memory.
pub(super) fn bytes(value: &JsValue, field: &str) -> Result<Vec<u8>, WasmError> {
    if value.is_instance_of::<Uint8Array>() || value.is_instance_of::<ArrayBuffer>() {
        Ok(Uint8Array::new(value).to_vec())
    } else {
        Err(invalid(field, "must be a Uint8Array or an ArrayBuffer"))
    }
}

/// Splits `options.wal` (the bytes of a `-wal` sidecar) from the other options, which are
/// JSON-shaped and parsed as such.
pub(super) fn take_wal(options: &JsValue, field: &str) -> Result<(JsValue, Option<Vec<u8>>), WasmError> {
    if !options.is_object() {
        return Ok((options.clone(), None));
    }
    let wal = Reflect::get(options, &"wal".into()).unwrap_or(JsValue::UNDEFINED);
    if wal.is_undefined() || wal.is_null() {
        return Ok((options.clone(), None));
    }
    let wal = bytes(&wal, &format!("{field}.wal"))?;
    let rest = Object::assign(&Object::new(), options.unchecked_ref());
    let _ = Reflect::delete_property(&rest, &"wal".into());
    Ok((rest.into(), Some(wal)))
}

pub(super) fn opfs_sqlite_options(js: &OpfsJsOptions) -> Result<SqliteOptions, WasmError> {
    let mut sqlite = sqlite_options(js.trace_max, js.prefix.clone()).read_only(js.read_only);
    if let Some(level) = &js.synchronous {
        sqlite = sqlite.synchronous(opfs_synchronous(level, "options.synchronous")?);
    }
    Ok(sqlite)
}
