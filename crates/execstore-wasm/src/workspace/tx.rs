//! `RawWorkspaceTx`: one transaction on one workspace, under the package's `WorkspaceTx`.

use execstore::workspace::{
    decode_list, Entry, EvaluationError, RuleProgress, Run, ScopeState, StoredRule, WorkspaceRef, WorkspaceTx,
};
use execstore::{executions::JsonObject, StoreError};
use serde_json::Value;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::shapes::{envelopes, non_negative, out, pairs, ref_out, runs, time};
use super::{Busy, JsResult};
use crate::convert::{self, object, Unknown};
use crate::errors::{backend, invalid, WasmError};

/// A transaction under the package's `WorkspaceTx` (use `WorkspaceStore.transaction`).
#[wasm_bindgen]
pub struct RawWorkspaceTx {
    pub(super) tx: Option<Box<dyn WorkspaceTx>>,
    pub(super) workspace: WorkspaceRef,
    pub(super) busy: Busy,
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
        let list: Value = object(&entries, "entries", Unknown::Keep)?;
        let list = decode_list("entries", &list, Entry::from_object).map_err(WasmError::from)?;
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
        out(&got.as_ref().map(StoredRule::to_value))
    }

    /// The active stored rules, by name.
    #[wasm_bindgen(js_name = storedRules, unchecked_return_type = "unknown")]
    pub fn stored_rules(&mut self) -> JsResult<JsValue> {
        let got = self.tx()?.stored_rules().map_err(WasmError::from)?;
        out(&got.iter().map(StoredRule::to_value).collect::<Vec<_>>())
    }

    /// Saves a stored rule's next version.
    #[wasm_bindgen(js_name = saveStoredRule)]
    pub fn save_stored_rule(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "unknown")] stored: JsValue,
    ) -> JsResult<()> {
        let value: Value = object(&stored, "stored", Unknown::Keep)?;
        let stored =
            StoredRule::from_value(&value).map_err(|e| WasmError::from(e.within(|| "stored".into())))?;
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
