//! The workspace log in the package: `RawWorkspaceStore` and `RawWorkspaceTx`, the
//! synchronous core that `npm/workspace.js` wraps as `WorkspaceStore` (with
//! `transaction(ref, async (tx) => ...)`, which queues a workspace's transactions, and
//! `subscribe`). Every operation of `execstore::workspace::WorkspaceStorage` and
//! `WorkspaceTx`, taking and returning reflexr's JSON shapes (snake_case keys, key order
//! kept); bad input is `INVALID_INPUT` and changes nothing.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::{
    Clock, Entry, EvaluationError, LogQuery, MemoryWorkspaceStorage, RuleProgress, Run, RunPolicy, RunQuery,
    RunStatus, ScopeState, StoredRule, StoredRuleStatus, Timestamp, WorkspaceRef, WorkspaceStorage,
    WorkspaceTx,
};
use execstore::{JsonObject, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::convert::{self, object, to_js, Unknown};
use crate::errors::{backend, invalid, WasmError};

type JsResult<T> = Result<T, JsValue>;

/// The JS clock (`Date.now()`, millisecond precision): wasm32-unknown-unknown has no other.
struct DateClock;

impl Clock for DateClock {
    fn now(&self) -> Timestamp {
        let micros = (js_sys::Date::now() * 1000.0) as i64;
        Timestamp::from_micros(micros)
            .or_else(|_| Timestamp::from_micros(0))
            .expect("the epoch is in range")
    }
}

// ---------------------------------------------------------------------------------------
// Shapes in.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsRef {
    tenant_id: String,
    workspace_id: String,
}

fn wref(value: &JsValue) -> Result<WorkspaceRef, WasmError> {
    let r: JsRef = object(value, "ref", Unknown::Refuse)?;
    let w = WorkspaceRef::new(r.tenant_id, r.workspace_id);
    w.check()?;
    Ok(w)
}

#[derive(Deserialize)]
struct JsEntry {
    id: String,
    #[serde(default)]
    actor: Value,
    event: JsonObject,
    #[serde(default)]
    causation: Option<Value>,
    #[serde(default)]
    correlation_id: Option<String>,
    #[serde(default)]
    traceparent: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct JsLogQuery {
    after_seq: i64,
    before_seq: Option<i64>,
    types: Option<Vec<String>>,
    limit: Option<usize>,
    last: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct JsRunQuery {
    rule: Option<String>,
    status: Option<String>,
    scope_key: Option<String>,
    limit: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct JsPolicy {
    disabled: BTreeSet<String>,
    ordered: BTreeSet<String>,
    blocking: BTreeSet<String>,
}

#[derive(Deserialize)]
struct JsStoredRule {
    rule: JsonObject,
    version: i64,
    #[serde(default = "active")]
    status: String,
    #[serde(default)]
    provenance: JsonObject,
}

fn active() -> String {
    "active".into()
}

/// An optional argument: `undefined` or `null` gives the default.
fn optional<T: Default + serde::de::DeserializeOwned>(value: &JsValue, field: &str) -> Result<T, WasmError> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    object(value, field, Unknown::Refuse)
}

/// A point in time: ISO 8601 text with an offset, or epoch milliseconds.
fn time(value: &JsValue, field: &str) -> Result<Timestamp, WasmError> {
    if let Some(text) = value.as_string() {
        return Timestamp::parse_json_text(&text).map_err(|e| retag(e, field));
    }
    let ms = convert::number(value, field)?;
    Timestamp::from_micros((ms * 1000.0).round() as i64).map_err(|e| retag(e, field))
}

fn retag(e: StoreError, field: &str) -> WasmError {
    match e {
        StoreError::InvalidInput { reason, .. } => invalid(field, reason),
        other => other.into(),
    }
}

fn non_negative(value: &JsValue, field: &str) -> Result<usize, WasmError> {
    let n = convert::integer(value, field)?;
    usize::try_from(n).map_err(|_| invalid(field, format!("{n} is negative")))
}

// ---------------------------------------------------------------------------------------
// Shapes out.

#[derive(Serialize)]
struct JsRefOut<'a> {
    tenant_id: &'a str,
    workspace_id: &'a str,
}

fn ref_out(w: &WorkspaceRef) -> JsRefOut<'_> {
    JsRefOut {
        tenant_id: &w.tenant_id,
        workspace_id: &w.workspace_id,
    }
}

fn stored_rule_value(s: &StoredRule) -> Value {
    let mut map = JsonObject::new();
    map.insert("rule".into(), Value::Object(s.rule.clone()));
    map.insert("version".into(), s.version.into());
    map.insert("status".into(), s.status.as_str().into());
    map.insert("provenance".into(), Value::Object(s.provenance.clone()));
    Value::Object(map)
}

fn out<T: Serialize + ?Sized>(value: &T) -> JsResult<JsValue> {
    Ok(to_js(value)?)
}

fn envelopes(list: &[execstore::workspace::Envelope]) -> JsResult<JsValue> {
    out(&list.iter().map(|e| e.to_value()).collect::<Vec<_>>())
}

fn runs(list: &[Run]) -> JsResult<JsValue> {
    out(&list.iter().map(Run::doc).collect::<Vec<_>>())
}

fn pairs<T>(list: &[(String, T)], f: impl Fn(&T) -> Value) -> JsResult<JsValue> {
    out(&list.iter().map(|(k, v)| (k.as_str(), f(v))).collect::<Vec<_>>())
}

// ---------------------------------------------------------------------------------------

/// The workspaces a transaction holds: wasm has no threads, so a `begin` on one cannot wait
/// here (`npm/workspace.js` queues them).
type Busy = Rc<RefCell<HashSet<WorkspaceRef>>>;

/// The synchronous workspace storage under the package's `WorkspaceStore` (use that).
#[wasm_bindgen]
pub struct RawWorkspaceStore {
    inner: Option<MemoryWorkspaceStorage>,
    busy: Busy,
}

/// A transaction under the package's `WorkspaceTx` (use `WorkspaceStore.transaction`).
#[wasm_bindgen]
pub struct RawWorkspaceTx {
    tx: Option<Box<dyn WorkspaceTx>>,
    workspace: WorkspaceRef,
    busy: Busy,
}

impl Drop for RawWorkspaceTx {
    fn drop(&mut self) {
        self.end();
    }
}

impl RawWorkspaceTx {
    fn end(&mut self) {
        self.tx.take();
        self.busy.borrow_mut().remove(&self.workspace);
    }

    fn tx(&mut self) -> Result<&mut dyn WorkspaceTx, WasmError> {
        match self.tx.as_mut() {
            Some(tx) => Ok(tx.as_mut()),
            None => Err(backend("the transaction has ended")),
        }
    }
}

#[wasm_bindgen]
impl RawWorkspaceTx {
    /// The workspace it holds.
    #[wasm_bindgen(js_name = workspaceRef, unchecked_return_type = "unknown")]
    pub fn workspace_ref(&self) -> JsResult<JsValue> {
        out(&ref_out(&self.workspace))
    }

    /// Appends entries; returns their envelopes.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn append(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] entries: JsValue,
    ) -> JsResult<JsValue> {
        let list: Vec<JsEntry> = object(&entries, "entries", Unknown::Refuse)?;
        let list: Vec<Entry> = list
            .into_iter()
            .map(|e| Entry {
                id: e.id,
                actor: e.actor,
                event: e.event,
                causation: e.causation.filter(|c| !c.is_null()),
                correlation_id: e.correlation_id,
                traceparent: e.traceparent,
            })
            .collect();
        let got = self.tx()?.append(&list).map_err(WasmError::from)?;
        envelopes(&got)
    }

    /// An envelope by event id, or null.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn envelope(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] event_id: JsValue,
    ) -> JsResult<JsValue> {
        let id = convert::string(&event_id, "eventId")?;
        let got = self.tx()?.envelope(&id).map_err(WasmError::from)?;
        out(&got.map(|e| e.to_value()))
    }

    /// The log's latest seq (this transaction's appends included).
    #[wasm_bindgen(js_name = headSeq)]
    pub fn head_seq(&mut self) -> JsResult<f64> {
        Ok(self.tx()?.head_seq().map_err(WasmError::from)? as f64)
    }

    /// Up to `limit` envelopes after `afterSeq`.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn read(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] after_seq: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] limit: JsValue,
    ) -> JsResult<JsValue> {
        let after = convert::integer(&after_seq, "afterSeq")?;
        let limit = non_negative(&limit, "limit")?;
        let got = self.tx()?.read(after, limit).map_err(WasmError::from)?;
        envelopes(&got)
    }

    /// A rule's progress, or null.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn progress(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] rule: JsValue,
    ) -> JsResult<JsValue> {
        let rule = convert::string(&rule, "rule")?;
        let got = self.tx()?.progress(&rule).map_err(WasmError::from)?;
        out(&got.as_ref().map(RuleProgress::doc))
    }

    /// Saves a rule's progress.
    #[wasm_bindgen(js_name = saveProgress)]
    pub fn save_progress(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] rule: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] progress: JsValue,
    ) -> JsResult<()> {
        let rule = convert::string(&rule, "rule")?;
        let doc: JsonObject = object(&progress, "progress", Unknown::Keep)?;
        self.tx()?
            .save_progress(&rule, &RuleProgress::from_doc(doc))
            .map_err(WasmError::from)?;
        Ok(())
    }

    /// The states of some scopes: `[key, state]` pairs, for the keys found, in the order asked.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn states(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] rule: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] keys: JsValue,
    ) -> JsResult<JsValue> {
        let rule = convert::string(&rule, "rule")?;
        let keys: Vec<String> = object(&keys, "keys", Unknown::Refuse)?;
        let got = self.tx()?.states(&rule, &keys).map_err(WasmError::from)?;
        pairs(&got, |s| Value::Object(s.doc().clone()))
    }

    /// Saves scope states given as `[key, state]` pairs.
    #[wasm_bindgen(js_name = saveStates)]
    pub fn save_states(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] rule: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] states: JsValue,
    ) -> JsResult<()> {
        let rule = convert::string(&rule, "rule")?;
        let list: Vec<(String, JsonObject)> = object(&states, "states", Unknown::Refuse)?;
        let list: Vec<(String, ScopeState)> = list
            .into_iter()
            .map(|(k, doc)| (k, ScopeState::from_doc(doc)))
            .collect();
        self.tx()?.save_states(&rule, &list).map_err(WasmError::from)?;
        Ok(())
    }

    /// Deletes every scope state of a rule.
    #[wasm_bindgen(js_name = clearStates)]
    pub fn clear_states(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] rule: JsValue,
    ) -> JsResult<()> {
        let rule = convert::string(&rule, "rule")?;
        self.tx()?.clear_states(&rule).map_err(WasmError::from)?;
        Ok(())
    }

    /// A run, or null.
    #[wasm_bindgen(unchecked_return_type = "unknown")]
    pub fn run(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] run_id: JsValue,
    ) -> JsResult<JsValue> {
        let id = convert::string(&run_id, "runId")?;
        let got = self.tx()?.run(&id).map_err(WasmError::from)?;
        out(&got.as_ref().map(Run::doc))
    }

    /// Inserts or updates runs.
    #[wasm_bindgen(js_name = saveRuns)]
    pub fn save_runs(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] list: JsValue,
    ) -> JsResult<()> {
        let docs: Vec<JsonObject> = object(&list, "runs", Unknown::Refuse)?;
        let list = docs
            .into_iter()
            .enumerate()
            .map(|(i, doc)| Run::from_doc(doc).map_err(|e| retag_at(e, &format!("runs[{i}]"))))
            .collect::<Result<Vec<_>, _>>()?;
        self.tx()?.save_runs(&list).map_err(WasmError::from)?;
        Ok(())
    }

    /// A scope's unsucceeded runs, in firing order.
    #[wasm_bindgen(js_name = scopeRuns, unchecked_return_type = "unknown")]
    pub fn scope_runs(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] rule: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] scope_key: JsValue,
    ) -> JsResult<JsValue> {
        let rule = convert::string(&rule, "rule")?;
        let key = convert::string(&scope_key, "scopeKey")?;
        let got = self.tx()?.scope_runs(&rule, &key).map_err(WasmError::from)?;
        runs(&got)
    }

    /// Records dead letters.
    #[wasm_bindgen(js_name = deadLetter)]
    pub fn dead_letter(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] errors: JsValue,
    ) -> JsResult<()> {
        let docs: Vec<JsonObject> = object(&errors, "errors", Unknown::Refuse)?;
        let list = docs
            .into_iter()
            .enumerate()
            .map(|(i, doc)| EvaluationError::from_doc(doc).map_err(|e| retag_at(e, &format!("errors[{i}]"))))
            .collect::<Result<Vec<_>, _>>()?;
        self.tx()?.dead_letter(&list).map_err(WasmError::from)?;
        Ok(())
    }

    /// A schedule's last tick (ISO text), or null.
    pub fn schedule(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] name: JsValue,
    ) -> JsResult<Option<String>> {
        let name = convert::string(&name, "name")?;
        let got = self.tx()?.schedule(&name).map_err(WasmError::from)?;
        Ok(got.map(|t| t.to_json_text()))
    }

    /// Saves a schedule's last tick.
    #[wasm_bindgen(js_name = saveSchedule)]
    pub fn save_schedule(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] at: JsValue,
    ) -> JsResult<()> {
        let name = convert::string(&name, "name")?;
        let at = time(&at, "at")?;
        self.tx()?.save_schedule(&name, at).map_err(WasmError::from)?;
        Ok(())
    }

    /// A stored rule, or null.
    #[wasm_bindgen(js_name = storedRule, unchecked_return_type = "unknown")]
    pub fn stored_rule(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] name: JsValue,
    ) -> JsResult<JsValue> {
        let name = convert::string(&name, "name")?;
        let got = self.tx()?.stored_rule(&name).map_err(WasmError::from)?;
        out(&got.as_ref().map(stored_rule_value))
    }

    /// The active stored rules, by name.
    #[wasm_bindgen(js_name = storedRules, unchecked_return_type = "unknown")]
    pub fn stored_rules(&mut self) -> JsResult<JsValue> {
        let got = self.tx()?.stored_rules().map_err(WasmError::from)?;
        out(&got.iter().map(stored_rule_value).collect::<Vec<_>>())
    }

    /// Saves a stored rule's next version.
    #[wasm_bindgen(js_name = saveStoredRule)]
    pub fn save_stored_rule(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] stored: JsValue,
    ) -> JsResult<()> {
        let s: JsStoredRule = object(&stored, "stored", Unknown::Refuse)?;
        let stored = StoredRule {
            rule: s.rule,
            version: s.version,
            status: StoredRuleStatus::parse(&s.status).map_err(|e| retag(e, "stored.status"))?,
            provenance: s.provenance,
        };
        self.tx()?.save_stored_rule(&stored).map_err(WasmError::from)?;
        Ok(())
    }

    /// Commits; the transaction ends whatever the outcome.
    pub fn commit(&mut self) -> JsResult<()> {
        let tx = self.tx.take();
        let result = match tx {
            Some(tx) => tx.commit().map_err(WasmError::from),
            None => Err(backend("the transaction has ended")),
        };
        self.end();
        Ok(result?)
    }

    /// Rolls back (nothing of it is kept); the transaction ends. Fine after an end.
    pub fn rollback(&mut self) {
        self.end();
    }

    /// Whether it has ended (committed or rolled back).
    #[wasm_bindgen(getter)]
    pub fn ended(&self) -> bool {
        self.tx.is_none()
    }
}

fn retag_at(e: StoreError, at: &str) -> WasmError {
    match e {
        StoreError::InvalidInput { field, reason } => invalid(format!("{at}.{field}"), reason),
        other => other.into(),
    }
}

impl RawWorkspaceStore {
    fn inner(&self) -> Result<&MemoryWorkspaceStorage, WasmError> {
        self.inner.as_ref().ok_or_else(|| backend("the store is closed"))
    }
}

#[wasm_bindgen]
impl RawWorkspaceStore {
    /// Workspaces in memory (the core's `MemoryWorkspaceStorage`), timed by `Date.now()`.
    pub fn memory() -> RawWorkspaceStore {
        RawWorkspaceStore {
            inner: Some(MemoryWorkspaceStorage::new(Arc::new(DateClock))),
            busy: Busy::default(),
        }
    }

    /// `"memory"` or `"closed"`.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        if self.inner.is_some() { "memory" } else { "closed" }.into()
    }

    /// Closes the store; every later call throws.
    pub fn close(&mut self) {
        self.inner = None;
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

    /// Begins a transaction; `BACKEND` (retryable) if one holds the workspace already.
    pub fn begin(
        &self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] workspace: JsValue,
    ) -> JsResult<RawWorkspaceTx> {
        let w = wref(&workspace)?;
        let inner = self.inner()?;
        if self.busy.borrow().contains(&w) {
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
        out(&got.iter().map(stored_rule_value).collect::<Vec<_>>())
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
