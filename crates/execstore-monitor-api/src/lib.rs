//! The execstore monitor's JSON API, as a plain function: a store and a request in, a status
//! and a JSON body out.
//!
//! One implementation behind every way the monitor is served: the native server
//! (`execstore monitor`, axum, in `execstore-cli`), the edge `fetch` handler and the
//! in-browser monitor (both over the wasm package's `MonitorApi`). The routes, parameters,
//! errors and JSON shapes are documented in README.md, under "Monitor".
//!
//! Nothing here serves HTTP, spawns a thread or reads a clock: the caller hands over the
//! request's method, path, query, `Authorization` header and body (every write's is a JSON
//! object with a `reason`), and the time (epoch seconds).
//!
//! Every write (a route whose method is not `GET`) goes through one path (`writes.rs`):
//! the caller's token and role ([`Tokens`], [`Role`]), the required `reason`, the handler,
//! then an audit entry with the outcome (`execstore::operator`).
//! Store calls are blocking; a server runs [`MonitorApi::handle`] where blocking is fine.
//! Every failure is `{"error": {"code": ..., "message": ...}}` with a 4xx or 5xx status.
#![deny(missing_docs)]

mod chart;
mod control;
mod error;
mod graph;
mod handlers;
pub mod metrics;
mod operator;
mod params;
mod recover;
mod routes;
mod search;
mod tokens;
mod workspaces;
mod writes;

pub use tokens::{
    check_token_name, digest, Caller, Role, Secret, TokenEntry, Tokens, TokensError, UnknownRole,
};

pub(crate) use error::{ApiError, ApiResult};

use std::sync::Arc;

use execstore::operator::{MemoryOperatorStore, OperatorStore};
use execstore::workspace::WorkspaceStorage;
use execstore::ExecutionStore;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

/// Page size when a request does not say.
pub const DEFAULT_LIMIT: usize = 50;

/// The `due_before` of "every timer": every armed timer, however far off.
pub use execstore::kit::validate::ALL_TIMERS;

/// One API request, as the server received it.
#[derive(Clone, Copy, Debug)]
pub struct ApiRequest<'a> {
    /// `GET`, `POST`, `DELETE`... (`HEAD` is answered as `GET`; the server drops the body).
    pub method: &'a str,
    /// The path as sent, still percent-encoded, starting with `/api/`.
    pub path: &'a str,
    /// The query string as sent, without the `?` (empty: none).
    pub query: &'a str,
    /// The `Authorization` header's value, if any (writes need `Bearer <token>`).
    pub authorization: Option<&'a str>,
    /// The request's body as sent (empty: none). Every write's is a JSON object with a
    /// `reason`.
    pub body: &'a [u8],
}

impl<'a> ApiRequest<'a> {
    /// A request for `target`, a path with an optional `?query` as in an HTTP request line.
    pub fn from_target(method: &'a str, target: &'a str, authorization: Option<&'a str>) -> Self {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        ApiRequest {
            method,
            path,
            query,
            authorization,
            body: &[],
        }
    }

    /// This request with `body` as its body.
    pub fn with_body(self, body: &'a [u8]) -> Self {
        ApiRequest { body, ..self }
    }
}

/// The answer: an HTTP status and a JSON body.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiResponse {
    /// The HTTP status code.
    pub status: u16,
    /// The JSON body (an error is `{"error": {"code", "message"}}`).
    pub body: Value,
}

/// What a monitor serves: an execution store, a workspace log, or both (a file or database
/// may hold harel's tables, reflexr's, or both). An endpoint of a contract the store does not
/// hold answers 404 saying so; `/api/info` says which it holds.
#[derive(Clone, Copy, Default)]
pub struct Stores<'a> {
    /// The execution store, if the target holds executions.
    pub executions: Option<&'a dyn ExecutionStore>,
    /// The workspace log, if the target holds reflexr's tables.
    pub workspaces: Option<&'a dyn WorkspaceStorage>,
}

/// The monitor's API over any store: what `/api/info` says about it, and the tokens.
#[derive(Clone)]
pub struct MonitorApi {
    info: Map<String, Value>,
    /// The tokens writes need (none: read-only).
    tokens: Tokens,
    /// Where the audit log and saved views are kept (in memory unless
    /// [`MonitorApi::with_operator`] names the store's own tables).
    operator: Arc<dyn OperatorStore>,
    /// The metrics samples, when the host keeps them ([`MonitorApi::with_metrics`]).
    metrics: Option<metrics::SharedRing>,
}

impl std::fmt::Debug for MonitorApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorApi")
            .field("info", &self.info)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl MonitorApi {
    /// An API whose `/api/info` answers `info` (the UI shows `store`, `backend`, `prefix`,
    /// `version`), plus `writable` and `now`. Writes need `token` (one `admin` token named
    /// `token`); `None`: read-only, every write answers 403.
    pub fn new(info: Map<String, Value>, token: Option<&str>) -> Self {
        Self::with_tokens(info, token.map_or_else(Tokens::none, Tokens::single))
    }

    /// An API whose writes need one of `tokens`, each allowed what its role allows.
    pub fn with_tokens(info: Map<String, Value>, tokens: Tokens) -> Self {
        MonitorApi {
            info,
            tokens,
            operator: Arc::new(MemoryOperatorStore::new()),
            metrics: None,
        }
    }

    /// This API keeping its audit log and saved views in `store` (the served store's own
    /// tables: `execstore_audit`, `execstore_views`).
    pub fn with_operator(mut self, store: Arc<dyn OperatorStore>) -> Self {
        self.operator = store;
        self
    }

    /// Whether writes are allowed (some token was given).
    pub fn writable(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The tokens.
    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// Answers `request` from `store`. `now` is the wall clock in epoch seconds (answers
    /// carry it, and `due_before=now` means it).
    pub fn handle(&self, store: &dyn ExecutionStore, request: &ApiRequest<'_>, now: f64) -> ApiResponse {
        let stores = Stores {
            executions: Some(store),
            workspaces: None,
        };
        self.handle_stores(stores, request, now)
    }

    /// Answers `request` from whichever stores the target holds (see [`Stores`]).
    pub fn handle_stores(&self, stores: Stores<'_>, request: &ApiRequest<'_>, now: f64) -> ApiResponse {
        self.handle_with_operator(stores, self.operator.as_ref(), request, now)
    }

    /// As [`MonitorApi::handle_stores`], keeping the audit log and saved views in `operator`
    /// for this request (the target's own tables, when the host opens targets per request,
    /// as the wasm package's `MonitorApi` does) instead of this API's.
    pub fn handle_with_operator(
        &self,
        stores: Stores<'_>,
        operator: &dyn OperatorStore,
        request: &ApiRequest<'_>,
        now: f64,
    ) -> ApiResponse {
        let call = Call {
            api: self,
            stores,
            operator,
            request,
            now,
            caller: self.tokens.identify(request.authorization),
        };
        match call.route() {
            Ok(body) => ApiResponse { status: 200, body },
            Err(e) => e.into_response(),
        }
    }
}

/// The opaque cursors of the timers and runs listings, for the fuzz targets
/// (`crates/execstore-fuzz-targets`): not part of the API, which hands them out and takes
/// them back only in `cursor` parameters.
#[doc(hidden)]
pub mod cursors {
    use execstore::executions::DueTimer;

    /// The `/api/timers` cursor after `timer`.
    pub fn encode_timer(timer: &DueTimer) -> String {
        crate::params::encode_timer_cursor(timer)
    }

    /// The timer a `/api/timers` cursor resumes after; the error is the 400's message.
    pub fn decode_timer(cursor: &str) -> Result<DueTimer, String> {
        crate::params::decode_timer_cursor(cursor).map_err(|e| e.message)
    }

    /// The runs listing's cursor at `offset`.
    pub fn encode_runs(offset: usize) -> String {
        crate::workspaces::encode_runs_cursor(offset)
    }

    /// The offset a runs listing's cursor resumes at; the error is the 400's message.
    pub fn decode_runs(cursor: &str) -> Result<usize, String> {
        crate::workspaces::decode_runs_cursor(cursor).map_err(|e| e.message)
    }
}

// ---------------------------------------------------------------------------------------------
// Answering a request (the route table is in routes.rs)

/// One request being answered.
pub(crate) struct Call<'a> {
    pub(crate) api: &'a MonitorApi,
    pub(crate) stores: Stores<'a>,
    /// Where this request's audit entries and saved views are kept.
    pub(crate) operator: &'a dyn OperatorStore,
    pub(crate) request: &'a ApiRequest<'a>,
    pub(crate) now: f64,
    /// Who sent the request.
    pub(crate) caller: Caller,
}

impl<'a> Call<'a> {
    /// The execution store, or a 404 saying the target holds none.
    pub(crate) fn exec(&self) -> Result<&'a dyn ExecutionStore, ApiError> {
        self.stores.executions.ok_or_else(|| {
            ApiError::not_found(
                "this store holds no executions (harel's tables), only a workspace log: see /api/workspaces",
            )
        })
    }

    /// Where the audit log and saved views are kept.
    pub(crate) fn operator(&self) -> &'a dyn OperatorStore {
        self.operator
    }

    /// The workspace log, or a 404 saying the target holds none.
    pub(crate) fn ws(&self) -> Result<&'a dyn WorkspaceStorage, ApiError> {
        self.stores.workspaces.ok_or_else(|| {
            ApiError::not_found("this store holds no workspace log (reflexr's reflexr_* tables)")
        })
    }
}

/// A path segment, percent-decoded; not UTF-8 is a 400.
pub(crate) fn decode(segment: &str) -> Result<String, ApiError> {
    percent_decode_str(segment)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ApiError::bad_request(format!("Invalid URL: {segment:?} is not UTF-8 once decoded")))
}

pub(crate) fn decode_lossy(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use execstore::{Execution, MemoryStore};
    use serde_json::json;

    fn api(token: Option<&str>) -> MonitorApi {
        let mut info = Map::new();
        info.insert("store".into(), json!("test"));
        MonitorApi::new(info, token)
    }

    fn get(api: &MonitorApi, store: &MemoryStore, target: &str) -> ApiResponse {
        api.handle(
            store,
            &ApiRequest::from_target("GET", target, None),
            1_700_000_000.0,
        )
    }

    fn store_with(ids: &[&str]) -> MemoryStore {
        let store = MemoryStore::new();
        for id in ids {
            let mut exe: Execution =
                serde_json::from_value(json!({ "id": id, "definition_id": "d", "status": "RUNNING" }))
                    .unwrap();
            store.save(&mut exe).unwrap();
        }
        store
    }

    #[test]
    fn every_timer_means_every_timer_however_far_off() {
        let store = store_with(&["far"]);
        let mut exe = store.load("far").unwrap().unwrap();
        let fx = execstore::Effects::new()
            .schedule("t.soon", 1_700_000_000.0)
            .schedule("t.2e12", 2e12)
            .schedule("t.1e300", 1e300);
        store.commit(&mut exe, &fx).unwrap();
        let api = api(None);
        let fire_at = |body: &Value, key: &str| -> Vec<f64> {
            body[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["fire_at"].as_f64().unwrap())
                .collect()
        };
        let all = get(&api, &store, "/api/timers");
        assert_eq!(
            fire_at(&all.body, "items"),
            [1_700_000_000.0, 2e12, 1e300],
            "{:?}",
            all.body
        );
        let pending = get(&api, &store, "/api/executions/far/pending");
        assert_eq!(fire_at(&pending.body, "timers"), [1_700_000_000.0, 2e12, 1e300]);
        let due = get(&api, &store, "/api/timers?due_before=now");
        assert_eq!(fire_at(&due.body, "items"), [1_700_000_000.0]);
    }

    #[test]
    fn routes_answer_and_unknown_ones_are_json_404s() {
        let store = store_with(&["a b", "c"]);
        let api = api(None);
        let info = get(&api, &store, "/api/info");
        assert_eq!(info.status, 200);
        assert_eq!(info.body["writable"], false);
        assert_eq!(info.body["bulk_limit"], json!(control::BULK_LIMIT));
        assert_eq!(info.body["now"], 1_700_000_000.0);
        // A percent-encoded id is decoded, as a server decodes a path segment.
        let one = get(&api, &store, "/api/executions/a%20b");
        assert_eq!(one.status, 200, "{:?}", one.body);
        assert_eq!(one.body["execution"]["id"], "a b");
        for target in [
            "/api/nope",
            "/api/executions/",
            "/api/executions/c/nope",
            "/api",
            "/x",
        ] {
            let a = get(&api, &store, target);
            assert_eq!(a.status, 404, "{target}");
            assert_eq!(a.body["error"]["code"], "NOT_FOUND", "{target}");
        }
        let bad = get(&api, &store, "/api/executions/%FF");
        assert_eq!(bad.status, 400);
    }

    #[test]
    fn methods_are_checked_and_writes_need_the_token() {
        let store = store_with(&["x"]);
        let read_only = api(None);
        let post = |api: &MonitorApi, target: &str, auth: Option<&str>| {
            let request = ApiRequest::from_target("POST", target, auth).with_body(br#"{"reason": "test"}"#);
            api.handle(&store, &request, 0.0)
        };
        assert_eq!(post(&read_only, "/api/info", None).status, 405);
        assert_eq!(
            post(&read_only, "/api/outbox/1/ack", None).body["error"]["code"],
            "READ_ONLY"
        );
        let writable = api(Some("s3cret"));
        assert_eq!(post(&writable, "/api/outbox/1/ack", None).status, 401);
        assert_eq!(
            post(&writable, "/api/outbox/1/ack", Some("Bearer nope")).status,
            401
        );
        // Authorized: the store answers (no such entry).
        let a = post(&writable, "/api/outbox/1/ack", Some("Bearer s3cret"));
        assert_eq!(a.status, 404, "{:?}", a.body);
        let head = read_only.handle(&store, &ApiRequest::from_target("HEAD", "/api/counts", None), 0.0);
        assert_eq!(head.status, 200);
        assert_eq!(head.body["total"], 1);
    }

    #[test]
    fn bad_parameters_are_400s() {
        let store = store_with(&[]);
        let api = api(None);
        for target in [
            "/api/executions?limit=0",
            "/api/executions?colour=red",
            "/api/executions?limit=5&limit=6",
            "/api/timers?due_before=yesterday",
        ] {
            assert_eq!(get(&api, &store, target).status, 400, "{target}");
        }
        assert_eq!(get(&api, &store, "/api/timers?due_before=now").status, 200);
    }
}

/// The crate's README (its crates.io page): its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
