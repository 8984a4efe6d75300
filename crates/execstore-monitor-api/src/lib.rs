//! The execstore monitor's JSON API, as a plain function: a store and a request in, a status
//! and a JSON body out.
//!
//! One implementation behind every way the monitor is served: the native server
//! (`execstore monitor`, axum, in `execstore-cli`), the edge `fetch` handler and the
//! in-browser monitor (both over the wasm package's `MonitorApi`). The routes, parameters,
//! errors and JSON shapes are documented in README.md, under "Monitor".
//!
//! Nothing here serves HTTP, spawns a thread or reads a clock: the caller hands over the
//! request's method, path, query, `Authorization` header and body (read by `POST
//! /api/control/{action}` only), and the time (epoch seconds).
//! Store calls are blocking; a server runs [`MonitorApi::handle`] where blocking is fine.
//! Every failure is `{"error": {"code": ..., "message": ...}}` with a 4xx or 5xx status.
#![deny(missing_docs)]

mod control;
mod error;
mod graph;
mod handlers;
mod params;
mod routes;
mod search;
mod workspaces;

pub(crate) use error::{ApiError, ApiResult};

use execstore::workspace::WorkspaceStorage;
use execstore::ExecutionStore;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

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
    /// The request's body as sent (empty: none). Only `POST /api/control/{action}` reads it.
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

/// The monitor's API over any store: what `/api/info` says about it, and the write token.
#[derive(Clone, Debug)]
pub struct MonitorApi {
    info: Map<String, Value>,
    /// SHA-256 of the write token: compared in constant time, whatever its length.
    token_digest: Option<[u8; 32]>,
}

impl MonitorApi {
    /// An API whose `/api/info` answers `info` (the UI shows `store`, `backend`, `prefix`,
    /// `version`), plus `writable` and `now`. Writes need `token`; `None`: read-only, every
    /// write answers 403.
    pub fn new(info: Map<String, Value>, token: Option<&str>) -> Self {
        MonitorApi {
            info,
            token_digest: token.map(digest),
        }
    }

    /// Whether writes are allowed (a token was given).
    pub fn writable(&self) -> bool {
        self.token_digest.is_some()
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
        let call = Call {
            api: self,
            stores,
            request,
            now,
        };
        match call.route() {
            Ok(body) => ApiResponse { status: 200, body },
            Err(e) => e.into_response(),
        }
    }

    /// Writes need `Authorization: Bearer <token>` with the token given at start; without
    /// one the monitor is read-only.
    fn authorize(&self, authorization: Option<&str>) -> Result<(), ApiError> {
        let Some(expected) = &self.token_digest else {
            return Err(ApiError::new(
                403,
                "READ_ONLY",
                "this monitor is read-only: start it with --token (or EXECSTORE_MONITOR_TOKEN) to allow writes",
            ));
        };
        let given = authorization
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match given {
            Some(token) if bool::from(digest(token).ct_eq(expected)) => Ok(()),
            _ => Err(ApiError::new(
                401,
                "UNAUTHORIZED",
                "writes need the header `Authorization: Bearer <token>` with the monitor's token",
            )),
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

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

// ---------------------------------------------------------------------------------------------
// Answering a request (the route table is in routes.rs)

/// One request being answered.
pub(crate) struct Call<'a> {
    pub(crate) api: &'a MonitorApi,
    pub(crate) stores: Stores<'a>,
    pub(crate) request: &'a ApiRequest<'a>,
    pub(crate) now: f64,
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
            api.handle(&store, &ApiRequest::from_target("POST", target, auth), 0.0)
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
