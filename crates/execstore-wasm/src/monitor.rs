//! The JS `MonitorApi` class: the monitor's JSON API (the same code as the native server's,
//! `execstore-monitor-api`) over a `Store` (executions) and a `WorkspaceImage` (a file's
//! workspace log, read-only), either or both, for the edge `fetch` handler and the
//! in-browser monitor's worker.

use std::sync::Arc;

use execstore::workspace::{Clock, Timestamp, WorkspaceStorage};
use execstore::ExecutionStore;
use execstore_monitor_api::metrics::MetricsConfig;
use execstore_monitor_api::{ApiRequest, MonitorApi as Api, Role, Secret, Stores, TokenEntry, Tokens};
use js_sys::{ArrayBuffer, Reflect, Uint8Array};
use serde::Deserialize;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::convert::{self, object, Unknown};
use crate::errors::{invalid, WasmError};
use crate::image::ImageWorkspaces;
use crate::store::Store;

/// The workspace log (reflexr's `reflexr_*` tables) of a SQLite file's bytes, read-only, for
/// the monitor: `MonitorApi.handleWorkspaces` (or `handleBoth`, with a `Store`) answers `/api/workspaces...` and `/api/due-runs` from it. The bytes are copied into wasm
/// memory (SQLite's memvfs), apart from any `Store` of the same file.
///
/// ```js
/// const workspaces = WorkspaceImage.fromBytes(bytes, { wal });   // NOT_FOUND: no reflexr tables
/// const { status, body } = api.handleWorkspaces(workspaces, "GET", "/api/workspaces");
/// ```
#[wasm_bindgen]
pub struct WorkspaceImage {
    inner: ImageWorkspaces,
}

/// The JS clock (`Date.now()`), which a read-only image's storage is given (it writes
/// nothing, so it stamps nothing; the API's answers take their `now` from the request).
struct DateClock;

impl Clock for DateClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_micros((js_sys::Date::now() * 1000.0) as i64)
            .or_else(|_| Timestamp::from_micros(0))
            .expect("the epoch is in range")
    }
}

/// A `Uint8Array` or `ArrayBuffer`'s bytes.
fn bytes_of(value: &JsValue, field: &str) -> Result<Vec<u8>, WasmError> {
    if value.is_instance_of::<Uint8Array>() || value.is_instance_of::<ArrayBuffer>() {
        Ok(Uint8Array::new(value).to_vec())
    } else {
        Err(invalid(field, "must be a Uint8Array or an ArrayBuffer"))
    }
}

#[wasm_bindgen]
impl WorkspaceImage {
    /// Loads a SQLite database file's `bytes` (and `options.wal`, its `-wal` sidecar's bytes,
    /// whose commits are recovered first) and opens its workspace log read-only: nothing in
    /// the bytes is changed. Not a SQLite file: `INVALID_INPUT` (field `bytes`); a file
    /// without reflexr's tables: `NOT_FOUND` (`what`: `"reflexr tables"`).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ wal?: Uint8Array | ArrayBuffer | null }")]
        options: JsValue,
    ) -> Result<WorkspaceImage, JsValue> {
        let bytes = bytes_of(&bytes, "bytes")?;
        let mut wal = None;
        if !(options.is_undefined() || options.is_null()) {
            if !options.is_object() {
                return Err(invalid("options", "must be an object").into());
            }
            for key in js_sys::Object::keys(options.unchecked_ref::<js_sys::Object>()).iter() {
                let key = key.as_string().unwrap_or_default();
                if key != "wal" {
                    return Err(invalid(format!("options.{key}"), "is not an option of fromBytes").into());
                }
            }
            let value = Reflect::get(&options, &"wal".into()).unwrap_or(JsValue::UNDEFINED);
            if !(value.is_undefined() || value.is_null()) {
                wal = Some(bytes_of(&value, "options.wal")?);
            }
        }
        let inner = ImageWorkspaces::load(&bytes, wal.as_deref(), Arc::new(DateClock))?;
        Ok(WorkspaceImage { inner })
    }

    /// The workspaces it holds, as `[{tenant_id, workspace_id}]`.
    #[wasm_bindgen(unchecked_return_type = "{ tenant_id: string; workspace_id: string }[]")]
    pub fn workspaces(&self) -> Result<JsValue, JsValue> {
        let list = self.inner.storage()?.workspaces().map_err(WasmError::from)?;
        let out = js_sys::Array::new();
        for ws in list {
            let o = js_sys::Object::new();
            Reflect::set(&o, &"tenant_id".into(), &ws.tenant_id.as_str().into())?;
            Reflect::set(&o, &"workspace_id".into(), &ws.workspace_id.as_str().into())?;
            out.push(&o);
        }
        Ok(out.into())
    }

    /// Frees its memory; later calls (and API requests over it) fail with `BACKEND`.
    pub fn close(&mut self) {
        self.inner.close();
    }
}

/// Options of `new MonitorApi()`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct MonitorOptions {
    /// What the UI's header shows as the store (a file name...).
    store: Option<String>,
    /// `/api/info`'s `backend`; default `"sqlite"`.
    backend: Option<String>,
    /// The table prefix the store was opened with, shown by the UI.
    prefix: Option<String>,
    /// The token writes need; none: read-only.
    token: Option<String>,
    /// Named tokens with roles (instead of `token`).
    tokens: Option<Vec<NamedToken>>,
    /// Keep a ring of metrics samples, taken by `sampleMetrics` (the in-browser monitor's
    /// worker, on a timer); none: `/api/metrics` answers the current snapshot alone.
    metrics: Option<MetricsOptions>,
}

/// `MonitorApiOptions.metrics`: the ring's period and size (defaults: the native monitor's,
/// one sample every 10 s, 360 kept).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct MetricsOptions {
    period_seconds: Option<f64>,
    keep: Option<usize>,
}

/// One of `MonitorApiOptions.tokens`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedToken {
    name: String,
    role: String,
    token: String,
}

/// The monitor's JSON API (routes, parameters, errors and shapes as the native `execstore
/// monitor`, docs/monitor.md) answered from a `Store`:
///
/// ```js
/// const api = new MonitorApi({ store: "demo.db", prefix: null });   // read-only: no token
/// const { status, body } = api.handle(store, "GET", "/api/executions?limit=5");
/// new Response(body, { status, headers: { "content-type": "application/json" } });
/// ```
#[wasm_bindgen]
pub struct MonitorApi {
    api: Api,
}

#[wasm_bindgen]
impl MonitorApi {
    /// An API whose `/api/info` names `options.store`, `options.backend` (default
    /// `"sqlite"`) and `options.prefix`. Writes (acks, timer removal) need
    /// `Authorization: Bearer <options.token>`; without a token every write answers 403.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "MonitorApiOptions")] options: JsValue,
    ) -> Result<MonitorApi, JsValue> {
        let options: MonitorOptions = if options.is_undefined() || options.is_null() {
            MonitorOptions::default()
        } else {
            object(&options, "options", Unknown::Refuse)?
        };
        if options.token.as_deref() == Some("") {
            return Err(crate::errors::invalid("options.token", "must not be empty").into());
        }
        let mut info = Map::new();
        info.insert("version".into(), env!("CARGO_PKG_VERSION").into());
        info.insert("store".into(), options.store.unwrap_or_default().into());
        info.insert(
            "backend".into(),
            options.backend.unwrap_or_else(|| "sqlite".into()).into(),
        );
        info.insert("prefix".into(), options.prefix.map_or(Value::Null, Value::from));
        let tokens = match (options.token, options.tokens) {
            (Some(_), Some(_)) => {
                return Err(crate::errors::invalid("options.tokens", "give token or tokens, not both").into())
            }
            (Some(token), None) => Tokens::single(&token),
            (None, Some(named)) => {
                let mut entries = Vec::with_capacity(named.len());
                for (i, t) in named.into_iter().enumerate() {
                    let role: Role = t.role.parse().map_err(|e: execstore_monitor_api::UnknownRole| {
                        crate::errors::invalid(format!("options.tokens[{i}].role"), e.to_string())
                    })?;
                    entries.push(TokenEntry {
                        name: t.name,
                        role,
                        secret: Secret::Plain(t.token),
                    });
                }
                Tokens::new(entries)
                    .map_err(|e| crate::errors::invalid(format!("options.tokens[{}]", e.index), e.message))?
            }
            (None, None) => Tokens::none(),
        };
        let mut api = Api::with_tokens(info, tokens);
        if let Some(metrics) = options.metrics {
            api = api.with_metrics(metrics_config(metrics)?);
        }
        Ok(MonitorApi { api })
    }

    /// Whether writes are allowed (a token was given).
    #[wasm_bindgen(getter)]
    pub fn writable(&self) -> bool {
        self.api.writable()
    }

    /// Answers one request from `store`: `method` (`"GET"`...), `target` (the path and
    /// query, as `url.pathname + url.search`), the `Authorization` header's value if any,
    /// and the request's body as text if any (`POST /api/control/{action}` reads it; a body
    /// that is not a string counts as none). Returns `{status, body}` with `body` the JSON
    /// text. Never throws for a bad request (that is a 4xx answer); throws only if `method`
    /// or `target` is not a string, or a string argument holds a lone UTF-16 surrogate
    /// (`INVALID_INPUT`: no URL or request body read as text holds one).
    /// The workspace endpoints answer 404 (the store holds no workspace log): see
    /// `handleBoth` and `handleWorkspaces` for a file that holds one.
    #[wasm_bindgen(unchecked_return_type = "ApiAnswer")]
    pub fn handle(
        &self,
        store: &Store,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] authorization: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] body: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.answer(Some(store), None, &method, &target, &authorization, &body)
    }

    /// As `handle`, from a file that holds executions (`store`) and a workspace log
    /// (`workspaces`): every endpoint answers, as the native monitor over such a file.
    #[wasm_bindgen(js_name = handleBoth, unchecked_return_type = "ApiAnswer")]
    pub fn handle_both(
        &self,
        store: &Store,
        workspaces: &WorkspaceImage,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] authorization: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] body: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.answer(
            Some(store),
            Some(workspaces),
            &method,
            &target,
            &authorization,
            &body,
        )
    }

    /// As `handle`, from a file that holds a workspace log only (a reflexr user's
    /// database): the execution endpoints answer 404 saying so; `/api/info`'s `holds` says
    /// `{executions: false, workspaces: true}`.
    #[wasm_bindgen(js_name = handleWorkspaces, unchecked_return_type = "ApiAnswer")]
    pub fn handle_workspaces(
        &self,
        workspaces: &WorkspaceImage,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] authorization: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] body: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.answer(None, Some(workspaces), &method, &target, &authorization, &body)
    }
}

impl MonitorApi {
    fn answer(
        &self,
        store: Option<&Store>,
        workspaces: Option<&WorkspaceImage>,
        method: &JsValue,
        target: &JsValue,
        authorization: &JsValue,
        body: &JsValue,
    ) -> Result<JsValue, JsValue> {
        let method = convert::string(method, "method")?.to_ascii_uppercase();
        let target = convert::string(target, "target")?;
        let authorization = optional_text(authorization, "authorization")?;
        let body = optional_text(body, "body")?.unwrap_or_default();
        let now = js_sys::Date::now() / 1000.0;
        let request =
            ApiRequest::from_target(&method, &target, authorization.as_deref()).with_body(body.as_bytes());
        // A SQLite store keeps the audit log and saved views in its own tables; a memory
        // store, and a workspace image alone, in this API's memory.
        let operator = store.map(Store::operator).transpose().map(Option::flatten);
        let answer = match (stores(store, workspaces), operator) {
            (Ok(stores), Ok(Some(operator))) => {
                self.api.handle_with_operator(stores, &*operator, &request, now)
            }
            (Ok(stores), Ok(None)) => self.api.handle_stores(stores, &request, now),
            (Err(e), _) | (_, Err(e)) => closed(e),
        };
        let out = js_sys::Object::new();
        js_sys::Reflect::set(&out, &"status".into(), &answer.status.into())?;
        js_sys::Reflect::set(&out, &"body".into(), &answer.body.to_string().into())?;
        Ok(out.into())
    }
}

/// A string argument that may be absent (any other kind of value counts as absent), taken
/// as [`convert::string`] takes one: a lone surrogate is `INVALID_INPUT`, not U+FFFD (a
/// body's ids must name what the caller named).
fn optional_text(value: &JsValue, field: &str) -> Result<Option<String>, JsValue> {
    if !value.is_string() {
        return Ok(None);
    }
    Ok(Some(convert::string(value, field)?))
}

/// What a request is answered from: a closed store or image is an error (503).
fn stores<'a>(
    store: Option<&'a Store>,
    workspaces: Option<&'a WorkspaceImage>,
) -> Result<Stores<'a>, WasmError> {
    let executions: Option<&dyn ExecutionStore> = store.map(Store::inner).transpose()?;
    let workspaces: Option<&dyn WorkspaceStorage> = match workspaces {
        Some(w) => Some(w.inner.storage()?),
        None => None,
    };
    Ok(Stores {
        executions,
        workspaces,
    })
}

/// The answer when the store is closed: a 503 in the API's error shape.
fn closed(e: WasmError) -> execstore_monitor_api::ApiResponse {
    execstore_monitor_api::ApiResponse {
        status: 503,
        body: serde_json::json!({ "error": { "code": e.code(), "message": e.to_string() } }),
    }
}

/// The ring's configuration `options` ask for, checked.
fn metrics_config(options: MetricsOptions) -> Result<MetricsConfig, WasmError> {
    let mut config = MetricsConfig::default();
    if let Some(period) = options.period_seconds {
        config.period_seconds = period;
    }
    if let Some(keep) = options.keep {
        config.keep = keep;
    }
    config
        .check()
        .map_err(|reason| invalid("options.metrics", reason))?;
    Ok(config)
}

// The metrics ring's sampler, for a host that runs no server task: the in-browser monitor's
// worker calls one of these every period, as the native monitor's sampler does.
#[wasm_bindgen]
impl MonitorApi {
    /// The ring's period in seconds (`options.metrics`), or `undefined` when the API keeps none.
    #[wasm_bindgen(getter, js_name = metricsPeriod)]
    pub fn metrics_period(&self) -> Option<f64> {
        self.api.metrics_config().map(|c| c.period_seconds)
    }

    /// Takes a metrics sample of `store` now into the ring that `options.metrics` asked for,
    /// the very sample `GET /api/metrics` answers. Whether one was added: not without a ring,
    /// nor less than half a period after the last one. A store that cannot be read throws
    /// (its code as the API would answer it).
    #[wasm_bindgen(js_name = sampleMetrics)]
    pub fn sample_metrics(&self, store: &Store) -> Result<bool, JsValue> {
        self.sample(Some(store), None)
    }

    /// As `sampleMetrics`, from a file that holds executions and a workspace log.
    #[wasm_bindgen(js_name = sampleMetricsBoth)]
    pub fn sample_metrics_both(&self, store: &Store, workspaces: &WorkspaceImage) -> Result<bool, JsValue> {
        self.sample(Some(store), Some(workspaces))
    }

    /// As `sampleMetrics`, from a file that holds a workspace log only.
    #[wasm_bindgen(js_name = sampleMetricsWorkspaces)]
    pub fn sample_metrics_workspaces(&self, workspaces: &WorkspaceImage) -> Result<bool, JsValue> {
        self.sample(None, Some(workspaces))
    }
}

impl MonitorApi {
    fn sample(&self, store: Option<&Store>, workspaces: Option<&WorkspaceImage>) -> Result<bool, JsValue> {
        let stores = stores(store, workspaces)?;
        let now = js_sys::Date::now() / 1000.0;
        self.api.sample_metrics(stores, now).map_err(|answer| {
            let error = &answer.body["error"];
            let message = error["message"].as_str().unwrap_or("the metrics sample failed");
            let code = error["code"].as_str().unwrap_or("BACKEND");
            let e = js_sys::Error::new(message);
            let _ = Reflect::set(&e, &"code".into(), &code.into());
            e.into()
        })
    }
}
