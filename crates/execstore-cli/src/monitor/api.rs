//! The monitor's JSON API, served by axum: every `/api/...` request goes to
//! [`execstore_monitor_api::MonitorApi`], the one implementation of the routes, parameters,
//! errors and JSON shapes, shared with the edge handler and the in-browser monitor. Store
//! calls block, so each request is answered on tokio's blocking pool.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use execstore_monitor_api::ApiRequest;
use serde_json::json;

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

async fn answer(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let answered = tokio::task::spawn_blocking(move || {
        let request = ApiRequest {
            method: method.as_str(),
            path: uri.path(),
            query: uri.query().unwrap_or(""),
            authorization: authorization.as_deref(),
            body: &body,
        };
        state
            .api
            .handle_stores(state.served.stores(), &request, time::now())
    })
    .await;
    match answered {
        Ok(answer) => {
            let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, Json(answer.body)).into_response()
        }
        Err(e) => error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string()),
    }
}
