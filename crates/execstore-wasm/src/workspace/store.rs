//! `RawWorkspaceStore`: the synchronous workspace storage under the package's
//! `WorkspaceStore`, in memory or (see `opfs`) in a SQLite file in OPFS.

use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::{
    EvaluationError, LogQuery, MemoryWorkspaceStorage, Run, RunPolicy, RunQuery, RunStatus, StoredRule,
    WorkspaceStorage,
};
use execstore::StoreError;
use serde_json::Value;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::file::FileWorkspace;
use super::opfs::OpfsWorkspace;
use super::shapes::{
    envelopes, non_negative, optional, out, pairs, ref_out, retag, runs, time, wref, JsLogQuery, JsPolicy,
    JsRunQuery, JsSearch,
};
use super::{Busy, DateClock, JsResult, RawWorkspaceTx};
use crate::convert;
use crate::errors::{backend, invalid, WasmError};

/// Where a store keeps its workspaces.
pub(super) enum Backend {
    /// The core's in-memory storage.
    Memory(MemoryWorkspaceStorage),
    /// SQLite in an OPFS pool, while this agent holds the store's lease (or between leases).
    Opfs(OpfsWorkspace),
    /// SQLite in a file on the local file system (Node), owned by this process.
    File(FileWorkspace),
}

/// The synchronous workspace storage under the package's `WorkspaceStore` (use that).
#[wasm_bindgen]
pub struct RawWorkspaceStore {
    pub(super) backend: Option<Backend>,
    pub(super) busy: Busy,
}

impl RawWorkspaceStore {
    pub(super) fn inner(&self) -> Result<&dyn WorkspaceStorage, WasmError> {
        match &self.backend {
            Some(Backend::Memory(m)) => Ok(m),
            Some(Backend::Opfs(o)) => o.storage(),
            Some(Backend::File(f)) => Ok(&f.storage),
            None => Err(backend("the store is closed")),
        }
    }
}

#[wasm_bindgen]
impl RawWorkspaceStore {
    /// Workspaces in memory (the core's `MemoryWorkspaceStorage`), timed by `Date.now()`.
    pub fn memory() -> RawWorkspaceStore {
        RawWorkspaceStore {
            backend: Some(Backend::Memory(MemoryWorkspaceStorage::new(Arc::new(DateClock)))),
            busy: Busy::default(),
        }
    }

    /// `"memory"`, `"opfs"`, `"file"` or `"closed"`.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        match &self.backend {
            Some(Backend::Memory(_)) => "memory",
            Some(Backend::Opfs(_)) => "opfs",
            Some(Backend::File(_)) => "file",
            None => "closed",
        }
        .into()
    }

    /// Closes the store (an OPFS store lets its files and lease go); every later call throws.
    pub fn close(&mut self) {
        self.backend = None;
    }

    /// `{durable, cross_process_wakeups}`.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn capabilities(&self) -> JsResult<JsValue> {
        let c = self.inner()?.capabilities();
        out(&serde_json::json!({"durable": c.durable, "cross_process_wakeups": c.cross_process_wakeups}))
    }

    /// Whether a transaction holds the workspace now.
    #[wasm_bindgen(js_name = isBusy)]
    pub fn is_busy(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<bool> {
        let w = wref(&workspace)?;
        Ok(self.busy.borrow().contains(&w))
    }

    /// Begins a transaction; `BACKEND` (retryable) if one holds the workspace already (in
    /// OPFS: if one is open on any workspace, the file having one connection).
    pub fn begin(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<RawWorkspaceTx> {
        let w = wref(&workspace)?;
        let inner = self.inner()?;
        if self.busy.borrow().contains(&w) || (self.one_connection() && !self.busy.borrow().is_empty()) {
            return Err(WasmError::Store(StoreError::Backend {
                message: format!("a transaction holds the workspace {w}"),
                retryable: true,
                source: None,
            })
            .into());
        }
        let tx = inner.begin(&w).map_err(WasmError::from)?;
        self.busy.borrow_mut().insert(w.clone());
        Ok(RawWorkspaceTx {
            tx: Some(tx),
            workspace: w,
            busy: self.busy.clone(),
        })
    }

    /// The log's latest seq, or 0.
    #[wasm_bindgen(js_name = headSeq)]
    pub fn head_seq(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<f64> {
        let w = wref(&workspace)?;
        Ok(self.inner()?.head_seq(&w).map_err(WasmError::from)? as f64)
    }

    /// A window of the log.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn read(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] query: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let q: JsLogQuery = optional(&query, "query")?;
        let q = LogQuery {
            after_seq: q.after_seq,
            before_seq: q.before_seq,
            types: q.types,
            limit: q.limit,
            last: q.last,
        };
        let got = self.inner()?.read(&w, &q).map_err(WasmError::from)?;
        envelopes(&got)
    }

    /// A stored rule's versions, oldest first.
    #[wasm_bindgen(js_name = ruleHistory, unchecked_return_type = "unknown")]
    pub fn rule_history(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] name: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let name = convert::string(&name, "name")?;
        let got = self.inner()?.rule_history(&w, &name).map_err(WasmError::from)?;
        envelopes(&got)
    }

    /// An envelope by event id, or null.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn envelope(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] event_id: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let id = convert::string(&event_id, "eventId")?;
        let got = self.inner()?.envelope(&w, &id).map_err(WasmError::from)?;
        out(&got.map(|e| e.to_value()))
    }

    /// A run, or null.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] run_id: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let id = convert::string(&run_id, "runId")?;
        let got = self.inner()?.run(&w, &id).map_err(WasmError::from)?;
        out(&got.as_ref().map(Run::doc))
    }

    /// Runs, newest first, filtered.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn runs(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] query: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let q: JsRunQuery = optional(&query, "query")?;
        let q = RunQuery {
            rule: q.rule,
            status: q
                .status
                .as_deref()
                .map(RunStatus::parse)
                .transpose()
                .map_err(|e| retag(e, "query.status"))?,
            scope_key: q.scope_key,
            limit: q.limit,
        };
        let got = self.inner()?.runs(&w, &q).map_err(WasmError::from)?;
        runs(&got)
    }

    /// One page of a `where` search of the log: `{items, scanned, scanned_to, next}`.
    #[wasm_bindgen(js_name = searchLog, unchecked_return_type = "unknown")]
    pub fn search_log(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] query: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let q: JsSearch = optional(&query, "query")?;
        let now = js_sys::Date::now() / 1000.0;
        let filter = execstore::workspace::parse_log_where(q.text()?, now).map_err(WasmError::from)?;
        let search = execstore::workspace::LogSearch {
            filter,
            after_seq: q.after_seq,
            before_seq: q.before_seq,
            newest_first: q.newest_first,
            limit: q.limit.unwrap_or(50),
            scan: q.scan.unwrap_or(execstore::workspace::search::SCAN_ROWS),
        };
        let page = self.inner()?.search_log(&w, &search).map_err(WasmError::from)?;
        out(&serde_json::json!({
            "items": page.envelopes.iter().map(|e| e.to_value()).collect::<Vec<_>>(),
            "scanned": page.scanned,
            "scanned_to": page.scanned_to,
            "next": page.next,
        }))
    }

    /// One page of a `where` search of the runs, newest first: `{items, scanned, next}`.
    #[wasm_bindgen(js_name = searchRuns, unchecked_return_type = "unknown")]
    pub fn search_runs(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] query: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let q: JsSearch = optional(&query, "query")?;
        let now = js_sys::Date::now() / 1000.0;
        let filter = execstore::workspace::parse_run_where(q.text()?, now).map_err(WasmError::from)?;
        let search = execstore::workspace::RunSearch {
            filter,
            cursor: q.cursor,
            limit: q.limit.unwrap_or(50),
            scan: q.scan.unwrap_or(execstore::workspace::search::SCAN_ROWS),
        };
        let page = self.inner()?.search_runs(&w, &search).map_err(WasmError::from)?;
        out(&serde_json::json!({
            "items": page.runs.iter().map(Run::doc).collect::<Vec<_>>(),
            "scanned": page.scanned,
            "next": page.next,
        }))
    }

    /// Dead letters, oldest first, of one rule or all.
    #[wasm_bindgen(js_name = deadLetters, unchecked_return_type = "unknown")]
    pub fn dead_letters(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] rule: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let rule = convert::opt_string(&rule, "rule")?;
        let got = self
            .inner()?
            .dead_letters(&w, rule.as_deref())
            .map_err(WasmError::from)?;
        out(&got.iter().map(EvaluationError::doc).collect::<Vec<_>>())
    }

    /// Every rule's progress: `[rule, progress]` pairs.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn progress(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let got = self.inner()?.progress(&w).map_err(WasmError::from)?;
        pairs(&got, |p| Value::Object(p.doc().clone()))
    }

    /// Each schedule's last tick: `[name, iso]` pairs.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn schedules(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let got = self.inner()?.schedules(&w).map_err(WasmError::from)?;
        pairs(&got, |t| Value::from(t.to_json_text()))
    }

    /// The active stored rules, by name.
    #[wasm_bindgen(js_name = storedRules, unchecked_return_type = "unknown")]
    pub fn stored_rules(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let got = self.inner()?.stored_rules(&w).map_err(WasmError::from)?;
        out(&got.iter().map(StoredRule::to_value).collect::<Vec<_>>())
    }

    /// Every workspace with a log.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn workspaces(&self) -> JsResult<JsValue> {
        let got = self.inner()?.workspaces().map_err(WasmError::from)?;
        out(&got.iter().map(ref_out).collect::<Vec<_>>())
    }

    /// A workspace's head, or null.
    #[wasm_bindgen(js_name = workspaceInfo, unchecked_return_type = "unknown")]
    pub fn workspace_info(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let got = self.inner()?.workspace_info(&w).map_err(WasmError::from)?;
        out(&got.map(|i| {
            serde_json::json!({
                "workspace": {"tenant_id": i.workspace.tenant_id, "workspace_id": i.workspace.workspace_id},
                "head_seq": i.head_seq,
                "head_ts": i.head_ts.map(|t| t.to_json_text()),
            })
        }))
    }

    /// The runs to attempt at `now`: `{workspace, run}` objects.
    #[wasm_bindgen(js_name = dueRuns, unchecked_return_type = "unknown")]
    pub fn due_runs(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] limit: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] policy: JsValue,
    ) -> JsResult<JsValue> {
        let now = time(&now, "now")?;
        let limit = non_negative(&limit, "limit")?;
        let p: JsPolicy = optional(&policy, "policy")?;
        let policy = RunPolicy {
            disabled: p.disabled,
            ordered: p.ordered,
            blocking: p.blocking,
        };
        let got = self
            .inner()?
            .due_runs(now, limit, &policy)
            .map_err(WasmError::from)?;
        out(&got
            .iter()
            .map(|(w, r)| serde_json::json!({"workspace": ref_out(w), "run": r.doc()}))
            .collect::<Vec<_>>())
    }

    /// Takes or renews a lease for `ttlMs` milliseconds; false if another holder has it.
    #[wasm_bindgen(js_name = acquireLease)]
    pub fn acquire_lease(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] holder: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] ttl_ms: JsValue,
    ) -> JsResult<bool> {
        let w = wref(&workspace)?;
        let key = convert::string(&key, "key")?;
        let holder = convert::string(&holder, "holder")?;
        let ms = convert::number(&ttl_ms, "ttlMs")?;
        if ms <= 0.0 {
            return Err(invalid("ttlMs", "a lease needs a ttl above zero").into());
        }
        let ttl = Duration::try_from_secs_f64(ms / 1000.0).map_err(|e| invalid("ttlMs", e.to_string()))?;
        Ok(self
            .inner()?
            .acquire_lease(&w, &key, &holder, ttl)
            .map_err(WasmError::from)?)
    }

    /// Releases a lease if `holder` has it.
    #[wasm_bindgen(js_name = releaseLease)]
    pub fn release_lease(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] holder: JsValue,
    ) -> JsResult<()> {
        let w = wref(&workspace)?;
        let key = convert::string(&key, "key")?;
        let holder = convert::string(&holder, "holder")?;
        self.inner()?
            .release_lease(&w, &key, &holder)
            .map_err(WasmError::from)?;
        Ok(())
    }

    /// Every lease of a workspace, by key.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn leases(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let got = self.inner()?.leases(&w).map_err(WasmError::from)?;
        out(&got
            .iter()
            .map(|l| serde_json::json!({"key": l.key, "holder": l.holder, "expires_at": l.expires_at.to_json_text()}))
            .collect::<Vec<_>>())
    }

    /// A consumer's cursor, or 0.
    pub fn cursor(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] name: JsValue,
    ) -> JsResult<f64> {
        let w = wref(&workspace)?;
        let name = convert::string(&name, "name")?;
        Ok(self.inner()?.cursor(&w, &name).map_err(WasmError::from)? as f64)
    }

    /// Saves a consumer's cursor (only forward).
    #[wasm_bindgen(js_name = saveCursor)]
    pub fn save_cursor(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] seq: JsValue,
    ) -> JsResult<()> {
        let w = wref(&workspace)?;
        let name = convert::string(&name, "name")?;
        let seq = convert::integer(&seq, "seq")?;
        self.inner()?
            .save_cursor(&w, &name, seq)
            .map_err(WasmError::from)?;
        Ok(())
    }

    /// Every cursor: `[name, seq]` pairs.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn cursors(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<JsValue> {
        let w = wref(&workspace)?;
        let got = self.inner()?.cursors(&w).map_err(WasmError::from)?;
        pairs(&got, |s| Value::from(*s))
    }
}
