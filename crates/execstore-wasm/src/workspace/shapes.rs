//! The JS shapes in and out of the workspace log: reflexr's JSON (snake_case keys, key
//! order kept), checked as it comes in.

use std::collections::BTreeSet;

use execstore::workspace::{Run, Timestamp, WorkspaceRef};
use execstore::StoreError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::JsResult;
use crate::convert::{self, object, to_js, Unknown};
use crate::errors::{invalid, WasmError};

// Shapes in.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JsRef {
    tenant_id: String,
    workspace_id: String,
}

pub(super) fn wref(value: &JsValue) -> Result<WorkspaceRef, WasmError> {
    let r: JsRef = object(value, "ref", Unknown::Refuse)?;
    let w = WorkspaceRef::new(r.tenant_id, r.workspace_id);
    w.check()?;
    Ok(w)
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JsLogQuery {
    pub(super) after_seq: i64,
    pub(super) before_seq: Option<i64>,
    pub(super) types: Option<Vec<String>>,
    pub(super) limit: Option<usize>,
    pub(super) last: Option<usize>,
}

/// `searchLog`'s and `searchRuns`'s query: `where` and the page's bounds.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JsSearch {
    #[serde(rename = "where")]
    pub(super) where_: Option<String>,
    pub(super) after_seq: i64,
    pub(super) before_seq: Option<i64>,
    pub(super) newest_first: bool,
    pub(super) cursor: Option<i64>,
    pub(super) limit: Option<usize>,
    pub(super) scan: Option<usize>,
}

impl JsSearch {
    /// The query text, required.
    pub(super) fn text(&self) -> Result<&str, WasmError> {
        self.where_.as_deref().ok_or_else(|| {
            WasmError::Store(StoreError::invalid(
                "where",
                "is required: a query such as event.service = \"auth\"",
            ))
        })
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JsRunQuery {
    pub(super) rule: Option<String>,
    pub(super) status: Option<String>,
    pub(super) scope_key: Option<String>,
    pub(super) limit: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JsPolicy {
    pub(super) disabled: BTreeSet<String>,
    pub(super) ordered: BTreeSet<String>,
    pub(super) blocking: BTreeSet<String>,
}

/// An optional argument: `undefined` or `null` gives the default.
pub(super) fn optional<T: Default + serde::de::DeserializeOwned>(
    value: &JsValue,
    field: &str,
) -> Result<T, WasmError> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    object(value, field, Unknown::Refuse)
}

/// A point in time: ISO 8601 text with an offset, or epoch milliseconds.
pub(super) fn time(value: &JsValue, field: &str) -> Result<Timestamp, WasmError> {
    if value.is_string() {
        let text = convert::string(value, field)?;
        return Timestamp::parse_json_text(&text).map_err(|e| retag(e, field));
    }
    let ms = convert::number(value, field)?;
    Timestamp::from_micros((ms * 1000.0).round() as i64).map_err(|e| retag(e, field))
}

pub(super) fn retag(e: StoreError, field: &str) -> WasmError {
    match e {
        StoreError::InvalidInput { reason, .. } => invalid(field, reason),
        other => other.into(),
    }
}

pub(super) fn non_negative(value: &JsValue, field: &str) -> Result<usize, WasmError> {
    let n = convert::integer(value, field)?;
    usize::try_from(n).map_err(|_| invalid(field, format!("{n} is negative")))
}

// ---------------------------------------------------------------------------------------
// Shapes out.

#[derive(Serialize)]
pub(super) struct JsRefOut<'a> {
    tenant_id: &'a str,
    workspace_id: &'a str,
}

pub(super) fn ref_out(w: &WorkspaceRef) -> JsRefOut<'_> {
    JsRefOut {
        tenant_id: &w.tenant_id,
        workspace_id: &w.workspace_id,
    }
}

pub(super) fn out<T: Serialize + ?Sized>(value: &T) -> JsResult<JsValue> {
    Ok(to_js(value)?)
}

pub(super) fn envelopes(list: &[execstore::workspace::Envelope]) -> JsResult<JsValue> {
    out(&list.iter().map(|e| e.to_value()).collect::<Vec<_>>())
}

pub(super) fn runs(list: &[Run]) -> JsResult<JsValue> {
    out(&list.iter().map(Run::doc).collect::<Vec<_>>())
}

pub(super) fn pairs<T>(list: &[(String, T)], f: impl Fn(&T) -> Value) -> JsResult<JsValue> {
    out(&list.iter().map(|(k, v)| (k.as_str(), f(v))).collect::<Vec<_>>())
}
