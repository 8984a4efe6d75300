//! The JS `Store` class: every operation of the contract over a memory, SQLite-in-memory,
//! OPFS or (Node) file store.

use std::cell::RefCell;
use std::sync::Arc;

use execstore::operator::OperatorStore;
use execstore::{
    executions::{BatchItem, DueTimer, ListQuery, Status, TraceStep, DEFAULT_LIST_LIMIT},
    Effects, Execution, ExecutionStore, MemoryStore,
};
use execstore_sqlite::{SqliteOperatorStore, SqliteOptions, SqliteStore};
use js_sys::{Array, ArrayBuffer, Function, Object, Reflect, Uint8Array};
use serde::Deserialize;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::convert::{self, object, Unknown};
use crate::errors::{backend, invalid, WasmError};
use crate::image::{checked_image, ImageStore};
use crate::node_file::NodeFileStore;
use crate::opfs::{opfs_synchronous, OpfsOptions, OpfsStore};

type JsResult<T> = Result<T, JsValue>;

/// Where a store keeps its data.
enum Backend {
    Memory(MemoryStore),
    SqliteMemory(SqliteStore),
    Opfs(OpfsStore),
    Image(ImageStore),
    File(NodeFileStore),
    Closed,
}

/// An execution store. Make one with `Store.memory()`, `Store.sqliteMemory()`,
/// `await Store.openOpfs(name)` (in a dedicated worker) or `await Store.openFile(path)` (Node). Every method is synchronous and
/// throws a `StoreError` (an `Error` with `code`) on failure; bad input changes nothing.
#[wasm_bindgen]
pub struct Store {
    /// The operator's records (the monitor's audit log and saved views) in the SQLite
    /// database's own tables, opened by the first monitor request that needs them. Declared
    /// before `backend` so it is dropped first: it holds the database's handle.
    operator: RefCell<Option<Arc<SqliteOperatorStore>>>,
    backend: Backend,
    /// The execution tables' prefix it was opened with (found in the file when not given).
    prefix: Option<String>,
}

mod definitions;
mod options;

use options::*;

impl Store {
    fn with(backend: Backend) -> Store {
        Store {
            operator: RefCell::new(None),
            backend,
            prefix: None,
        }
    }

    fn prefixed(mut self, prefix: Option<String>) -> Store {
        self.prefix = prefix;
        self
    }
}

#[wasm_bindgen]
impl Store {
    /// A store in memory (the core's MemoryStore): fast, gone with the page or process.
    /// Options: `traceMax` (trace steps kept per execution, default 200; `0` keeps all).
    pub fn memory(
        #[wasm_bindgen(unchecked_optional_param_type = "MemoryOptions")] options: JsValue,
    ) -> JsResult<Store> {
        let options: LocalOptions = self::options(&options)?;
        if options.prefix.is_some() {
            return Err(invalid("options.prefix", "applies to SQLite stores only").into());
        }
        let store = match options.trace_max {
            Some(0) => MemoryStore::with_trace_max(None),
            Some(n) => MemoryStore::with_trace_max(Some(n)),
            None => MemoryStore::new(),
        };
        Ok(Store::with(Backend::Memory(store)))
    }

    /// A SQLite database (SQLite compiled to wasm, the same adapter and SQL as native) kept
    /// in memory, not persisted. Options: `traceMax`, `prefix` (table prefix, e.g. "harel").
    #[wasm_bindgen(js_name = sqliteMemory)]
    pub fn sqlite_memory(
        #[wasm_bindgen(unchecked_optional_param_type = "SqliteMemoryOptions")] options: JsValue,
    ) -> JsResult<Store> {
        let options: LocalOptions = self::options(&options)?;
        let prefix = options.prefix.clone();
        let store = SqliteStore::open_in_memory(sqlite_options(options.trace_max, options.prefix))
            .map_err(WasmError::from)?;
        Ok(Store::with(Backend::SqliteMemory(store)).prefixed(prefix))
    }

    /// Opens (creating if needed) the SQLite store `name` kept in the browser's Origin
    /// Private File System; only in a dedicated worker. One worker or tab at a time owns a
    /// store: another opener waits up to `options.waitMs` (default 5000; 0 fails at once)
    /// for it to be closed, then throws `LOCKED`. Other options: `traceMax`, `prefix`,
    /// `readOnly`, and `synchronous`, the durability of a commit that returned: `"full"`
    /// (the default: it survives a power loss too) or `"normal"` (no flush per commit: it
    /// survives a killed or crashed worker, tab or browser, while a power loss or OS crash
    /// may lose the commits since the last checkpoint, never half of one); anything else is
    /// `INVALID_INPUT`. See the package README's "Durability".
    #[wasm_bindgen(js_name = openOpfs)]
    pub async fn open_opfs(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "OpfsOptions")] options: JsValue,
    ) -> JsResult<Store> {
        let name = convert::string(&name, "name")?;
        let js: OpfsJsOptions = self::options(&options)?;
        let sqlite = opfs_sqlite_options(&js)?;
        let prefix = sqlite.prefix.clone();
        let store = OpfsStore::open(
            &name,
            OpfsOptions {
                wait_ms: js.wait_ms,
                sqlite,
            },
        )
        .await?;
        Ok(Store::with(Backend::Opfs(store)).prefixed(prefix))
    }

    /// Opens (creating if needed) the SQLite store file at `path` on the local file system;
    /// Node only (the package's Node entry). The file has the native store's format and
    /// tables: `execstore --db FILE` reads it once this store is closed, and a file the
    /// native CLI or harel wrote opens here. One process at a time owns a file (its lock
    /// file `<path>-lock`; a lock left by a killed process is taken over): another opener
    /// waits up to `options.waitMs` (default 5000; 0 fails at once) for it to be closed,
    /// then throws `LOCKED`. Other options: `traceMax`, `prefix`, and `synchronous`,
    /// `"full"` (the default: a commit that returned is on the device) or `"normal"` (it
    /// survives the process killed, not a power loss). A directory, a file that is not
    /// SQLite, a read-only file, or a file holding the store under another prefix:
    /// `INVALID_INPUT`, and nothing changes.
    #[wasm_bindgen(js_name = openFile)]
    pub async fn open_file(
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FileOptions")] options: JsValue,
    ) -> JsResult<Store> {
        let path = convert::string(&path, "path")?;
        let js: FileJsOptions = self::options(&options)?;
        let (sqlite, file) = file_options(js)?;
        let prefix = sqlite.prefix.clone();
        let store = NodeFileStore::open(&path, sqlite, file).await?;
        Ok(Store::with(Backend::File(store)).prefixed(prefix))
    }

    /// A SQLite store in wasm memory loaded from a database file's bytes (a `Uint8Array` or
    /// `ArrayBuffer`; e.g. a file written by `execstore demo` or harel), for Node, edge
    /// runtimes and pages: the file itself is not touched, changes stay in memory. Options:
    /// `prefix` (default: the one set of execution tables the file holds, `harel_*` for a
    /// file harel wrote; several: `INVALID_INPUT`, field `prefix`, listing them), `traceMax`,
    /// `readOnly`, and `wal`: the bytes
    /// of the file's `-wal` sidecar, if it has one with content (commits still there are
    /// recovered into the image first). Not a SQLite file: `INVALID_INPUT`; read-only on a
    /// file without the store's tables (a wrong prefix?): `NOT_FOUND`.
    #[wasm_bindgen(js_name = sqliteFromBytes)]
    pub fn sqlite_from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "BytesOptions")] options: JsValue,
    ) -> JsResult<Store> {
        let bytes = self::bytes(&bytes, "bytes")?;
        let (options, wal) = take_wal(&options, "options")?;
        let js: BytesOptions = self::options(&options)?;
        let detect = js.prefix.is_none();
        let sqlite = sqlite_options(js.trace_max, js.prefix).read_only(js.read_only);
        let store = ImageStore::load(&bytes, wal.as_deref(), sqlite, detect)?;
        let prefix = store.prefix().map(str::to_owned);
        Ok(Store::with(Backend::Image(store)).prefixed(prefix))
    }

    /// Imports a SQLite database file's bytes as the OPFS store `name` and opens it (in a
    /// dedicated worker, as `openOpfs`). The bytes are checked first (a SQLite file with
    /// the store's tables under `prefix`); a bad file changes nothing. An existing store
    /// `name` is replaced only with `replace: true` (else `INVALID_INPUT`). Options: those
    /// of `openOpfs`, `replace`, and `wal` (the bytes of the file's `-wal` sidecar, whose
    /// commits are recovered into the import).
    #[wasm_bindgen(js_name = importOpfs)]
    pub async fn import_opfs(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ImportOptions")] options: JsValue,
    ) -> JsResult<Store> {
        let name = convert::string(&name, "name")?;
        let bytes = self::bytes(&bytes, "bytes")?;
        let (options, wal) = take_wal(&options, "options")?;
        let (js, replace): (OpfsJsOptions, bool) = self::options::<ImportJsOptions>(&options)?.split();
        let mut sqlite = opfs_sqlite_options(&js)?;
        let detect = js.prefix.is_none();
        let (image, prefix) = checked_image(&bytes, wal.as_deref(), sqlite.clone(), detect)?;
        sqlite.prefix = prefix.clone();
        drop(bytes);
        let store = OpfsStore::import(
            &name,
            &image,
            OpfsOptions {
                wait_ms: js.wait_ms,
                sqlite,
            },
            replace,
        )
        .await?;
        Ok(Store::with(Backend::Opfs(store)).prefixed(prefix))
    }

    /// The execution tables' prefix the store opened (`"harel"` for harel's `harel_*`; found
    /// in the file by `sqliteFromBytes` and `importOpfs` when not given), or `null`: the bare
    /// names.
    #[wasm_bindgen(getter, unchecked_return_type = "string | null")]
    pub fn prefix(&self) -> JsValue {
        self.prefix.as_deref().map_or(JsValue::NULL, JsValue::from)
    }

    /// `"memory"`, `"sqlite-memory"`, `"opfs"`, `"file"`, or `"closed"`.
    #[wasm_bindgen(getter, unchecked_return_type = "StoreKind")]
    pub fn kind(&self) -> String {
        match &self.backend {
            Backend::Memory(_) => "memory",
            Backend::SqliteMemory(_) | Backend::Image(_) => "sqlite-memory",
            Backend::Opfs(_) => "opfs",
            Backend::File(_) => "file",
            Backend::Closed => "closed",
        }
        .into()
    }

    /// Closes the store: an OPFS store's database, its files and its lock are released, so
    /// another worker or tab can open it (a store file's lock file is removed, so another
    /// process can). Every later call throws. Closing twice is fine.
    pub fn close(&mut self) {
        self.operator = RefCell::new(None);
        self.backend = Backend::Closed;
    }

    /// The operator's records kept in this store: a SQLite store's own `execstore_audit` and
    /// `execstore_views` tables (created on first use unless the store is read-only), so the
    /// in-browser and edge monitors keep them with the data; `None` for a memory store (the
    /// monitor keeps them in its memory).
    pub(crate) fn operator(&self) -> Result<Option<Arc<dyn OperatorStore>>, WasmError> {
        let db = match &self.backend {
            Backend::Memory(_) => return Ok(None),
            Backend::SqliteMemory(s) => s.db(),
            Backend::Opfs(s) => s.store()?.db(),
            Backend::Image(s) => s.store()?.db(),
            Backend::File(s) => s.store()?.db(),
            Backend::Closed => return Err(backend("the store is closed")),
        };
        let mut cached = self.operator.borrow_mut();
        if let Some(operator) = cached.as_ref() {
            return Ok(Some(operator.clone() as Arc<dyn OperatorStore>));
        }
        let operator = Arc::new(SqliteOperatorStore::on(db)?);
        *cached = Some(operator.clone());
        Ok(Some(operator as Arc<dyn OperatorStore>))
    }

    pub(crate) fn inner(&self) -> Result<&dyn ExecutionStore, WasmError> {
        match &self.backend {
            Backend::Memory(s) => Ok(s),
            Backend::SqliteMemory(s) => Ok(s),
            Backend::Opfs(s) => Ok(s.store()?),
            Backend::Image(s) => Ok(s.store()?),
            Backend::File(s) => Ok(s.store()?),
            Backend::Closed => Err(backend("the store is closed")),
        }
    }

    /// What the store can do: `{durable, exclusive_claims, wakeups, definitions}`.
    #[wasm_bindgen(unchecked_return_type = "Capabilities")]
    pub fn capabilities(&self) -> JsResult<JsValue> {
        let caps = self.inner()?.capabilities();
        let out = Object::new();
        for (key, value) in [
            ("durable", caps.durable),
            ("exclusive_claims", caps.exclusive_claims),
            ("wakeups", caps.wakeups),
            ("definitions", caps.definitions),
        ] {
            Reflect::set(&out, &key.into(), &value.into())?;
        }
        Ok(out.into())
    }

    /// How many trace steps are kept per execution (`null`: all).
    #[wasm_bindgen(js_name = traceMax)]
    pub fn trace_max(&self) -> JsResult<Option<u32>> {
        Ok(self.inner()?.trace_max())
    }

    /// Writes `execution` at `version + 1` iff the stored one is still at `version` (a new
    /// execution has version 0). Returns the new version and sets it on `execution`.
    #[wasm_bindgen(unchecked_return_type = "number")]
    pub fn save(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ExecutionInput")] execution: JsValue,
    ) -> JsResult<JsValue> {
        let mut exe: Execution = object(&execution, "execution", Unknown::Keep)?;
        convert::execution_times(&execution, "execution", &exe)?;
        self.inner()?.save(&mut exe).map_err(WasmError::from)?;
        set_version(&execution, exe.version);
        Ok((exe.version as f64).into())
    }

    /// The event step: the CAS write of `execution` and, in one transaction, `effects`
    /// (outbox emits, the processed event id, timer changes, spawns, a trace step). Returns
    /// the outbox seq of each emit and sets the new version on `execution`. A lost CAS
    /// throws `CONFLICT` (with `id`, `expected`, `found`) and writes nothing.
    #[wasm_bindgen(unchecked_return_type = "number[]")]
    pub fn commit(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ExecutionInput")] execution: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Effects")] effects: JsValue,
    ) -> JsResult<JsValue> {
        let mut exe: Execution = object(&execution, "execution", Unknown::Keep)?;
        convert::execution_times(&execution, "execution", &exe)?;
        let effects: Effects = if effects.is_undefined() || effects.is_null() {
            Effects::new()
        } else {
            object(&effects, "effects", Unknown::Refuse)?
        };
        let seqs = self
            .inner()?
            .commit(&mut exe, &effects)
            .map_err(WasmError::from)?;
        set_version(&execution, exe.version);
        Ok(convert::to_js(&seqs)?)
    }

    /// Commits many event steps in one transaction (one sync: what makes OPFS writes fast).
    /// Each item has its own outcome, in order: `{ok: true, seqs, version}` (the new version
    /// is also set on the item's `execution`) or `{ok: false, error}` (a `CONFLICT` or
    /// `INVALID_INPUT` of that item only, which left no trace). A thrown error means nothing
    /// was committed.
    #[wasm_bindgen(js_name = commitBatch, unchecked_return_type = "BatchOutcome[]")]
    pub fn commit_batch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "BatchItem[]")] items: JsValue,
    ) -> JsResult<JsValue> {
        if !Array::is_array(&items) {
            return Err(invalid("items", "must be an array").into());
        }
        let parsed: Vec<JsBatchItem> = object(&items, "items", Unknown::Refuse)?;
        let items = Array::from(&items);
        for (i, item) in parsed.iter().enumerate() {
            let execution = Reflect::get(&items.get(i as u32), &"execution".into())?;
            convert::execution_times(&execution, &format!("items[{i}].execution"), &item.execution)?;
        }
        let mut batch: Vec<BatchItem> = parsed
            .into_iter()
            .map(|item| BatchItem::new(item.execution, item.effects.unwrap_or_default()))
            .collect();
        let outcomes = self.inner()?.commit_batch(&mut batch).map_err(WasmError::from)?;
        let out = Array::new();
        for (i, (outcome, item)) in outcomes.into_iter().zip(&batch).enumerate() {
            let entry = Object::new();
            match outcome {
                Ok(seqs) => {
                    let version = item.execution.version;
                    set_version(&Reflect::get(&items.get(i as u32), &"execution".into())?, version);
                    Reflect::set(&entry, &"ok".into(), &JsValue::TRUE)?;
                    Reflect::set(&entry, &"seqs".into(), &convert::to_js(&seqs)?)?;
                    Reflect::set(&entry, &"version".into(), &(version as f64).into())?;
                }
                Err(e) => {
                    Reflect::set(&entry, &"ok".into(), &JsValue::FALSE)?;
                    Reflect::set(&entry, &"error".into(), &WasmError::from(e).to_js())?;
                }
            }
            out.push(&entry);
        }
        Ok(out.into())
    }

    /// The stored execution, or `null`.
    #[wasm_bindgen(unchecked_return_type = "Execution | null")]
    pub fn load(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> JsResult<JsValue> {
        let id = convert::string(&id, "id")?;
        let exe = self.inner()?.load(&id).map_err(WasmError::from)?;
        Ok(convert::to_js(&exe)?)
    }

    /// The stored execution (or `null`) and whether it already processed `eventId`, read
    /// together.
    #[wasm_bindgen(js_name = loadForEvent, unchecked_return_type = "LoadedForEvent")]
    pub fn load_for_event(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = eventId)] event_id: JsValue,
    ) -> JsResult<JsValue> {
        let id = convert::string(&id, "id")?;
        let event_id = convert::string(&event_id, "eventId")?;
        let (exe, processed) = self
            .inner()?
            .load_for_event(&id, &event_id)
            .map_err(WasmError::from)?;
        let out = Object::new();
        Reflect::set(&out, &"execution".into(), &convert::to_js(&exe)?)?;
        Reflect::set(&out, &"processed".into(), &processed.into())?;
        Ok(out.into())
    }

    /// Whether `executionId` already processed `eventId`.
    #[wasm_bindgen(js_name = isProcessed)]
    pub fn is_processed(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = executionId)] execution_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = eventId)] event_id: JsValue,
    ) -> JsResult<bool> {
        let id = convert::string(&execution_id, "executionId")?;
        let event_id = convert::string(&event_id, "eventId")?;
        Ok(self
            .inner()?
            .is_processed(&id, &event_id)
            .map_err(WasmError::from)?)
    }

    /// One page of summaries, by id unless `order` is `"updated"` (most recently updated
    /// first) or `"created"` (newest created first). Pass the page's `next_cursor` as the
    /// next query's `cursor`; a cursor this store did not make, or made for another order, is
    /// `INVALID_INPUT`.
    #[wasm_bindgen(js_name = listExecutions, unchecked_return_type = "ExecutionPage")]
    pub fn list_executions(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ListQuery")] query: JsValue,
    ) -> JsResult<JsValue> {
        let js: JsListQuery = if query.is_undefined() || query.is_null() {
            JsListQuery::default()
        } else {
            object(&query, "query", Unknown::Refuse)?
        };
        convert::finite_where_none(
            &query,
            "query",
            &[
                ("created_after", js.created_after.is_none()),
                ("created_before", js.created_before.is_none()),
                ("updated_after", js.updated_after.is_none()),
                ("updated_before", js.updated_before.is_none()),
                ("finished_after", js.finished_after.is_none()),
                ("finished_before", js.finished_before.is_none()),
            ],
        )?;
        let mut q = ListQuery::new()
            .roots_only(js.roots_only)
            .limit(js.limit.unwrap_or(DEFAULT_LIST_LIMIT))
            .cursor(js.cursor)
            .created_between(js.created_after, js.created_before)
            .updated_between(js.updated_after, js.updated_before)
            .finished_between(js.finished_after, js.finished_before);
        q.search = js.search;
        if let Some(status) = js.status {
            q = q.status(status);
        }
        if let Some(definition) = js.definition_id {
            q = q.definition(definition);
        }
        if let Some(order) = js.order {
            q = q.order(order.parse().map_err(WasmError::from)?);
        }
        if let Some(text) = &js.where_text {
            let now = js_sys::Date::now() / 1000.0;
            q.filter = Some(execstore::executions::parse_where(text, now).map_err(WasmError::from)?);
        }
        let page = self.inner()?.list_executions(&q).map_err(WasmError::from)?;
        Ok(convert::to_js(&page)?)
    }

    /// The declared search attributes (`[{path}]`, by path).
    #[wasm_bindgen(unchecked_return_type = "SearchAttribute[]")]
    pub fn attributes(&self) -> JsResult<JsValue> {
        let all = self.inner()?.attributes().map_err(WasmError::from)?;
        Ok(convert::to_js(&all)?)
    }

    /// Declares the context path `path` (`"context.customer_id"`) a search attribute,
    /// building its index; returns it. Not a context path: `INVALID_INPUT`.
    #[wasm_bindgen(js_name = declareAttribute, unchecked_return_type = "SearchAttribute")]
    pub fn declare_attribute(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> JsResult<JsValue> {
        let path = convert::string(&path, "path")?;
        let a = self.inner()?.declare_attribute(&path).map_err(WasmError::from)?;
        Ok(convert::to_js(&a)?)
    }

    /// Drops a search attribute and its index; whether there was one.
    #[wasm_bindgen(js_name = dropAttribute)]
    pub fn drop_attribute(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> JsResult<bool> {
        let path = convert::string(&path, "path")?;
        Ok(self.inner()?.drop_attribute(&path).map_err(WasmError::from)?)
    }

    /// Undelivered outbox entries with `seq > after`, oldest first, at most `limit`
    /// (default 100).
    #[wasm_bindgen(js_name = pendingOutbox, unchecked_return_type = "OutboxEntry[]")]
    pub fn pending_outbox(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] after: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] limit: JsValue,
    ) -> JsResult<JsValue> {
        let after = convert::opt_integer(&after, "after")?;
        let limit = convert::limit(&limit, "limit", DEFAULT_LIST_LIMIT)?;
        let entries = self
            .inner()?
            .pending_outbox(after, limit)
            .map_err(WasmError::from)?;
        Ok(convert::to_js(&entries)?)
    }

    /// Sends `event` to the execution `executionId` as an engine would receive it: one
    /// outbox entry addressed to it, which a relay delivers like any emit (the execution
    /// itself is not written). Returns `{seq, target_id, event_id}`. Refused, changing
    /// nothing: an unknown id (`NOT_FOUND`), a stored version other than `expectedVersion`
    /// (`CONFLICT`), an execution not `RUNNING`, one of harel's own control kinds (`Start`,
    /// `Cancel`, ...), an empty kind or id, a NaN or infinite number in the event, a lone
    /// surrogate, an event too large (`INVALID_INPUT`).
    #[wasm_bindgen(unchecked_return_type = "Sent")]
    pub fn send(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = executionId)] execution_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Event")] event: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null", js_name = expectedVersion)]
        expected_version: JsValue,
    ) -> JsResult<JsValue> {
        let id = convert::string(&execution_id, "executionId")?;
        let expected = convert::opt_integer(&expected_version, "expectedVersion")?;
        convert::finite_everywhere(&event, "event")?;
        let event: execstore::executions::Event = object(&event, "event", Unknown::Keep)?;
        let sent = execstore::executions::control::send(self.inner()?, &id, &event, expected)
            .map_err(WasmError::from)?;
        Ok(convert::to_js(&sent)?)
    }

    /// Removes the delivered outbox entry `seq`; `NOT_FOUND` if there is none.
    #[wasm_bindgen(js_name = ackOutbox)]
    pub fn ack_outbox(&self, #[wasm_bindgen(unchecked_param_type = "number")] seq: JsValue) -> JsResult<()> {
        let seq = convert::integer(&seq, "seq")?;
        Ok(self.inner()?.ack_outbox(seq).map_err(WasmError::from)?)
    }

    /// Removes the delivered outbox entries `seqs` in one transaction; returns how many were
    /// removed (already-acked seqs are skipped).
    #[wasm_bindgen(js_name = ackOutboxMany)]
    pub fn ack_outbox_many(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number[]")] seqs: JsValue,
    ) -> JsResult<f64> {
        let seqs = convert::integers(&seqs, "seqs")?;
        Ok(self.inner()?.ack_outbox_many(&seqs).map_err(WasmError::from)? as f64)
    }

    /// Pending child creations with `seq > after`, oldest first, at most `limit` (default
    /// 100).
    #[wasm_bindgen(js_name = pendingSpawns, unchecked_return_type = "SpawnEntry[]")]
    pub fn pending_spawns(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] after: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] limit: JsValue,
    ) -> JsResult<JsValue> {
        let after = convert::opt_integer(&after, "after")?;
        let limit = convert::limit(&limit, "limit", DEFAULT_LIST_LIMIT)?;
        let entries = self
            .inner()?
            .pending_spawns(after, limit)
            .map_err(WasmError::from)?;
        Ok(convert::to_js(&entries)?)
    }

    /// Removes the done spawn intent `seq`; `NOT_FOUND` if there is none.
    #[wasm_bindgen(js_name = ackSpawn)]
    pub fn ack_spawn(&self, #[wasm_bindgen(unchecked_param_type = "number")] seq: JsValue) -> JsResult<()> {
        let seq = convert::integer(&seq, "seq")?;
        Ok(self.inner()?.ack_spawn(seq).map_err(WasmError::from)?)
    }

    /// Timers with `fire_at <= now` (epoch seconds), soonest first, at most `limit` (default
    /// 100), after `after` (the last timer of the previous page).
    #[wasm_bindgen(js_name = dueTimers, unchecked_return_type = "DueTimer[]")]
    pub fn due_timers(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "DueTimer | null")] after: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] limit: JsValue,
    ) -> JsResult<JsValue> {
        let now = convert::number(&now, "now")?;
        let after: Option<DueTimer> = if after.is_undefined() || after.is_null() {
            None
        } else {
            Some(object(&after, "after", Unknown::Refuse)?)
        };
        let limit = convert::limit(&limit, "limit", DEFAULT_LIST_LIMIT)?;
        let timers = self
            .inner()?
            .due_timers(now, after.as_ref(), limit)
            .map_err(WasmError::from)?;
        Ok(convert::to_js(&timers)?)
    }

    /// Removes the timer of `(executionId, path)` only if it still fires at `fireAt`;
    /// returns whether one was removed.
    #[wasm_bindgen(js_name = deleteTimer)]
    pub fn delete_timer(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = executionId)] execution_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number", js_name = fireAt)] fire_at: JsValue,
    ) -> JsResult<bool> {
        let id = convert::string(&execution_id, "executionId")?;
        let path = convert::string(&path, "path")?;
        let fire_at = convert::number(&fire_at, "fireAt")?;
        Ok(self
            .inner()?
            .delete_timer(&id, &path, fire_at)
            .map_err(WasmError::from)?)
    }

    /// The execution's kept trace steps, oldest first, each with its `index`.
    #[wasm_bindgen(js_name = readTrace, unchecked_return_type = "TraceStep[]")]
    pub fn read_trace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = executionId)] execution_id: JsValue,
    ) -> JsResult<JsValue> {
        let id = convert::string(&execution_id, "executionId")?;
        let steps = self.inner()?.read_trace(&id).map_err(WasmError::from)?;
        Ok(convert::to_js(&steps)?)
    }

    /// Appends a trace step outside an event step; returns its index. `NOT_FOUND` if no
    /// execution is stored under `executionId`.
    #[wasm_bindgen(js_name = appendTrace)]
    pub fn append_trace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = executionId)] execution_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "TraceStep")] step: JsValue,
    ) -> JsResult<f64> {
        let id = convert::string(&execution_id, "executionId")?;
        let step: TraceStep = object(&step, "step", Unknown::Keep)?;
        Ok(self.inner()?.append_trace(&id, &step).map_err(WasmError::from)? as f64)
    }

    /// The ids of every stored execution that starts with `prefix` (exactly, case
    /// sensitive), ordered.
    #[wasm_bindgen(js_name = idsWithPrefix, unchecked_return_type = "string[]")]
    pub fn ids_with_prefix(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] prefix: JsValue,
    ) -> JsResult<JsValue> {
        let prefix = convert::string(&prefix, "prefix")?;
        let ids = self.inner()?.ids_with_prefix(&prefix).map_err(WasmError::from)?;
        Ok(convert::to_js(&ids)?)
    }

    /// Deletes the execution and everything keyed by it iff it is still at
    /// `expectedVersion`; returns whether it did.
    pub fn purge(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string", js_name = executionId)] execution_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number", js_name = expectedVersion)] expected_version: JsValue,
    ) -> JsResult<bool> {
        let id = convert::string(&execution_id, "executionId")?;
        let expected = convert::integer(&expected_version, "expectedVersion")?;
        Ok(self.inner()?.purge(&id, expected).map_err(WasmError::from)?)
    }

    /// How many executions are in each status (every status listed, in the core's order),
    /// optionally of one definition and of roots only.
    #[wasm_bindgen(js_name = statusCounts, unchecked_return_type = "StatusCounts")]
    pub fn status_counts(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null", js_name = definitionId)]
        definition_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean", js_name = rootsOnly)] roots_only: JsValue,
    ) -> JsResult<JsValue> {
        let definition = convert::opt_string(&definition_id, "definitionId")?;
        let roots_only = convert::opt_bool(&roots_only, "rootsOnly", false)?;
        let mut query = ListQuery::new().roots_only(roots_only);
        query.definition_id = definition;
        let counts = self.inner()?.count_by_status(&query).map_err(WasmError::from)?;
        let out = Object::new();
        for (status, n) in counts {
            Reflect::set(&out, &status.as_str().into(), &(n as f64).into())?;
        }
        Ok(out.into())
    }

    /// A token that changes whenever the store's content may have changed (for a monitor's
    /// polling); opaque.
    #[wasm_bindgen(js_name = changeToken)]
    pub fn change_token(&self) -> JsResult<String> {
        Ok(self.inner()?.change_token().map_err(WasmError::from)?)
    }

    /// The relay's step: hands up to `limit` pending outbox entries to `deliver` and acks
    /// the seqs it returns; returns how many were acked. `deliver` must not call this store
    /// (the entries are claimed while it runs); if it throws, nothing is acked and the error
    /// is rethrown.
    #[wasm_bindgen(js_name = relayOutbox)]
    pub fn relay_outbox(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
        #[wasm_bindgen(unchecked_param_type = "(entries: OutboxEntry[]) => number[]")] deliver: JsValue,
    ) -> JsResult<f64> {
        let limit = convert::limit(&limit, "limit", DEFAULT_LIST_LIMIT)?;
        let deliver = callback(&deliver, "deliver")?;
        let failure = RefCell::new(None);
        let acked = self.inner()?.relay_outbox(limit, &mut |entries| {
            returned_seqs(&deliver, convert::to_js(entries), &failure)
        });
        finish_relay(acked, failure)
    }

    /// The spawner's step, as `relayOutbox` is the relay's: hands up to `limit` pending
    /// spawn intents to `create` and acks the seqs it returns.
    #[wasm_bindgen(js_name = relaySpawns)]
    pub fn relay_spawns(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
        #[wasm_bindgen(unchecked_param_type = "(entries: SpawnEntry[]) => number[]")] create: JsValue,
    ) -> JsResult<f64> {
        let limit = convert::limit(&limit, "limit", DEFAULT_LIST_LIMIT)?;
        let create = callback(&create, "create")?;
        let failure = RefCell::new(None);
        let acked = self.inner()?.relay_spawns(limit, &mut |entries| {
            returned_seqs(&create, convert::to_js(entries), &failure)
        });
        finish_relay(acked, failure)
    }

    /// The timer sweep's step: hands up to `limit` timers due at `now` to `fire` (which
    /// fires them the engine's way, e.g. with `deleteTimer` after the sweep); returns how
    /// many were offered.
    #[wasm_bindgen(js_name = sweepTimers)]
    pub fn sweep_timers(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
        #[wasm_bindgen(unchecked_param_type = "(timers: DueTimer[]) => void")] fire: JsValue,
    ) -> JsResult<f64> {
        let now = convert::number(&now, "now")?;
        let limit = convert::limit(&limit, "limit", DEFAULT_LIST_LIMIT)?;
        let fire = callback(&fire, "fire")?;
        let failure = RefCell::new(None);
        let offered = self.inner()?.sweep_timers(now, limit, &mut |timers| {
            match convert::to_js(timers) {
                Ok(arg) => {
                    call_back(&fire, arg, &failure);
                }
                Err(e) => *failure.borrow_mut() = Some(e.to_js()),
            };
        });
        finish_relay(offered, failure)
    }
}

/// The seqs a relay callback returned (none if it threw or returned something else; the
/// problem is kept in `failure` and rethrown once the store let go of the entries).
fn returned_seqs(
    callback: &Function,
    arg: Result<JsValue, WasmError>,
    failure: &RefCell<Option<JsValue>>,
) -> Vec<i64> {
    let arg = match arg {
        Ok(arg) => arg,
        Err(e) => {
            *failure.borrow_mut() = Some(e.to_js());
            return Vec::new();
        }
    };
    let Some(returned) = call_back(callback, arg, failure) else {
        return Vec::new();
    };
    match convert::integers(&returned, "returned seqs") {
        Ok(seqs) => seqs,
        Err(e) => {
            *failure.borrow_mut() = Some(e.to_js());
            Vec::new()
        }
    }
}

fn finish_relay(result: execstore::Result<usize>, failure: RefCell<Option<JsValue>>) -> JsResult<f64> {
    let n = result.map_err(WasmError::from)?;
    match failure.into_inner() {
        Some(error) => Err(error),
        None => Ok(n as f64),
    }
}
