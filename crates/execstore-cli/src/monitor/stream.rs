//! `GET /api/workspaces/{tenant}/{workspace}/stream?after=SEQ`: a workspace's log pushed as
//! server-sent events, fed by [`WorkspaceStorage::wait_for_append`] on the store this
//! process holds.
//!
//! Each answer is one batch: the request waits (on the blocking pool) until the log has
//! grown past `after` (or the `Last-Event-ID` a reconnecting `EventSource` sends), or
//! [`WAIT`] passes, then sends the new envelopes as `envelope` events (each `id:` its seq),
//! a `retry:` hint, and ends. The browser's `EventSource` reconnects at once with the last
//! id, so the tail follows the log without polling on a timer: a commit in this process wakes
//! the wait at once, another process's within the storage's poll interval (SQLite) or at
//! once (PostgreSQL's `LISTEN`). Ending each answer keeps the server free of open-ended
//! bodies and lets a proxy or a closed tab free its request within [`WAIT`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use execstore::workspace::{Envelope, LogQuery, WorkspaceRef};

use super::api::error_response;
use super::AppState;

/// How long one answer waits for the log to grow.
const WAIT: Duration = Duration::from_secs(15);
/// The most envelopes one answer sends (the client reconnects for the rest at once).
const BATCH: usize = 500;
/// How many streams may wait at once (each holds a blocking thread); past that a stream
/// answers at once with what there is, and its client comes back after `retry`.
const MAX_WAITING: usize = 8;
/// The reconnect delay the answers ask for, in milliseconds.
const RETRY_MS: u64 = 200;

static WAITING: AtomicUsize = AtomicUsize::new(0);

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/api/workspaces/{tenant}/{workspace}/stream", get(stream))
}

/// Releases a waiting slot when dropped.
struct Slot(bool);

impl Slot {
    fn take() -> Slot {
        let taken = WAITING.fetch_add(1, Ordering::SeqCst) < MAX_WAITING;
        if !taken {
            WAITING.fetch_sub(1, Ordering::SeqCst);
        }
        Slot(taken)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.0 {
            WAITING.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn bad_request(message: String) -> Response {
    error_response(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
}

/// A seq parameter; `Err` is the message of the 400.
fn parse_seq(name: &str, v: &str) -> Result<i64, String> {
    v.trim()
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| format!("{name} {v:?} is not a sequence number"))
}

async fn stream(
    State(state): State<AppState>,
    Path((tenant, workspace)): Path<(String, String)>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Response {
    let Some(storage) = state.served.workspaces.clone() else {
        return error_response(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "this store holds no workspace log (reflexr's reflexr_* tables)",
        );
    };
    let mut after = None;
    for (i, (name, value)) in query.iter().enumerate() {
        if name != "after" {
            return bad_request(format!("unknown parameter {name:?} (known: after)"));
        }
        if query[..i].iter().any(|(n, _)| n == name) {
            return bad_request(format!("parameter {name:?} given twice"));
        }
        if !value.is_empty() {
            after = Some(match parse_seq("after", value) {
                Ok(n) => n,
                Err(e) => return bad_request(e),
            });
        }
    }
    // A reconnecting EventSource says where it got to.
    if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        if !last.is_empty() {
            after = Some(match parse_seq("Last-Event-ID", last) {
                Ok(n) => n,
                Err(e) => return bad_request(e),
            });
        }
    }
    let ws = WorkspaceRef::new(tenant, workspace);
    if let Err(e) = ws.check() {
        return error_response(StatusCode::BAD_REQUEST, e.code(), e.to_string());
    }
    let answered = tokio::task::spawn_blocking(move || -> execstore::Result<Option<(i64, Vec<Envelope>)>> {
        let Some(info) = storage.workspace_info(&ws)? else {
            return Ok(None);
        };
        // No `after`: follow from the head (a tail shows what came before by itself).
        let after = after.unwrap_or(info.head_seq);
        let read = |after| storage.read(&ws, &LogQuery::new().after(after).limit(BATCH));
        let mut envelopes = read(after)?;
        if envelopes.is_empty() {
            let slot = Slot::take();
            if slot.0 {
                // A wait may end early (SQLite's polls return after each poll interval):
                // wait again until the log grew or WAIT has passed.
                let deadline = Instant::now() + WAIT;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    if storage.wait_for_append(&ws, after, left)? {
                        envelopes = read(after)?;
                        if !envelopes.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
        Ok(Some((after, envelopes)))
    })
    .await;
    let (after, envelopes) = match answered {
        Ok(Ok(Some(found))) => found,
        Ok(Ok(None)) => {
            return error_response(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "no such workspace in this store",
            )
        }
        Ok(Err(e)) => {
            let status = if e.is_retryable() {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            return error_response(status, e.code(), e.to_string());
        }
        Err(e) => return error_response(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string()),
    };
    let mut body = format!("retry: {RETRY_MS}\n");
    if envelopes.is_empty() {
        // Nothing new: the client reconnects from the same place.
        body.push_str(&format!(
            ": nothing after {after}\nid: {after}\nevent: idle\ndata: {{}}\n\n"
        ));
    }
    for e in &envelopes {
        // JSON text has no raw newline, so each envelope is one `data:` line.
        body.push_str(&format!(
            "id: {}\nevent: envelope\ndata: {}\n\n",
            e.seq,
            e.to_value()
        ));
    }
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response()
}
