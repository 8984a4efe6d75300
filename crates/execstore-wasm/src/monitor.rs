//! The JS `MonitorApi` class: the monitor's JSON API (the same code as the native server's,
//! `execstore-monitor-api`) over a `Store`, for the edge `fetch` handler and the in-browser
//! monitor's worker.

use execstore_monitor_api::{ApiRequest, MonitorApi as Api};
use serde::Deserialize;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::convert::{self, object, Unknown};
use crate::errors::WasmError;
use crate::store::Store;

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
}

/// The monitor's JSON API (routes, parameters, errors and shapes as the native `execstore
/// monitor`, README.md "Monitor") answered from a `Store`:
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
        Ok(MonitorApi {
            api: Api::new(info, options.token.as_deref()),
        })
    }

    /// Whether writes are allowed (a token was given).
    #[wasm_bindgen(getter)]
    pub fn writable(&self) -> bool {
        self.api.writable()
    }

    /// Answers one request: `method` (`"GET"`...), `target` (the path and query, as
    /// `url.pathname + url.search`), and the `Authorization` header's value if any.
    /// Returns `{status, body}` with `body` the JSON text. Never throws for a bad request
    /// (that is a 4xx answer); throws only if `method` or `target` is not a string.
    #[wasm_bindgen(unchecked_return_type = "ApiAnswer")]
    pub fn handle(
        &self,
        store: &Store,
        #[wasm_bindgen(unchecked_param_type = "string")] method: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] authorization: JsValue,
    ) -> Result<JsValue, JsValue> {
        let method = convert::string(&method, "method")?.to_ascii_uppercase();
        let target = convert::string(&target, "target")?;
        let authorization = authorization.as_string();
        let now = js_sys::Date::now() / 1000.0;
        let answer = match store.inner() {
            Ok(inner) => self.api.handle(
                inner,
                &ApiRequest::from_target(&method, &target, authorization.as_deref()),
                now,
            ),
            Err(e) => closed(e),
        };
        let out = js_sys::Object::new();
        js_sys::Reflect::set(&out, &"status".into(), &answer.status.into())?;
        js_sys::Reflect::set(&out, &"body".into(), &answer.body.to_string().into())?;
        Ok(out.into())
    }
}

/// The answer when the store is closed: a 503 in the API's error shape.
fn closed(e: WasmError) -> execstore_monitor_api::ApiResponse {
    execstore_monitor_api::ApiResponse {
        status: 503,
        body: serde_json::json!({ "error": { "code": e.code(), "message": e.to_string() } }),
    }
}
