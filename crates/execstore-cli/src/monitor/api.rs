//! The monitor's JSON API, served by axum: every `/api/...` request goes to
//! [`execstore_monitor_api::MonitorApi`], the one implementation of the routes, parameters,
//! errors and JSON shapes, shared with the edge handler and the in-browser monitor. Store
//! calls block, so each request is answered on tokio's blocking pool. Answers are sent in
//! pieces, one copy shared by identical requests (`shared.rs`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use execstore_monitor_api::ApiRequest;
use serde_json::json;

use super::shared::{self, Encoded};
use super::AppState;
use crate::time;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/api/{*rest}", any(answer))
}

/// A JSON error answer, `{"error": {"code", "message"}}`, as the API's own.
pub(crate) fn error_response(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = json!({ "error": { "code": code, "message": message.into() } });
    (status, Json(body)).into_response()
}

/// The largest request body read (a bulk action's ids).
const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// Whether identical requests may share this one's answer (see `shared.rs`): the reads of
/// executions and definitions, the ones that can be large. The key also holds the store's
/// change token, so an answer is shared only while nothing changed.
fn shareable(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (path.starts_with("/api/executions") || path.starts_with("/api/definitions/"))
        // An execution's audit entries are not executions: the change token does not cover
        // them (an entry is recorded after its action's commit).
        && !path.ends_with("/audit")
}

async fn answer(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let body = match tokio::time::timeout(state.body_timeout, axum::body::to_bytes(body, BODY_LIMIT)).await {
        Ok(Ok(body)) => body,
        // Over the limit (as axum's own body extractor answered), or the client broke off.
        Ok(Err(e)) => {
            return error_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                format!("cannot read the request body (at most {BODY_LIMIT} bytes): {e}"),
            )
        }
        Err(_) => {
            return error_response(
                StatusCode::REQUEST_TIMEOUT,
                "REQUEST_TIMEOUT",
                "the request body did not arrive in time",
            )
        }
    };
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let shared = match (shareable(&method, uri.path()), state.served.executions.clone()) {
        (true, Some(store)) => match tokio::task::spawn_blocking(move || store.change_token()).await {
            Ok(Ok(token)) => Some(state.answers.cell(format!(
                "{token}\n{}?{}",
                uri.path(),
                uri.query().unwrap_or("")
            ))),
            // No token: answered on its own (the read itself will say what is wrong).
            _ => None,
        },
        _ => None,
    };
    let compute = {
        let state = state.clone();
        move || {
            let request = ApiRequest {
                method: method.as_str(),
                path: uri.path(),
                query: uri.query().unwrap_or(""),
                authorization: authorization.as_deref(),
                body: &body,
            };
            let answer = state
                .api
                .handle_stores(state.served.stores(), &request, time::now());
            Arc::new(Encoded::of(answer.status, &answer.body))
        }
    };
    let encoded = match &shared {
        Some(cell) => cell
            .get_or_try_init(|| tokio::task::spawn_blocking(compute))
            .await
            .cloned(),
        None => tokio::task::spawn_blocking(compute).await,
    };
    match encoded {
        Ok(encoded) => shared::response(encoded, shared),
        Err(e) => error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string()),
    }
}
