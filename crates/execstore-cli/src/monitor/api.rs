//! The monitor's JSON API. Every answer is JSON; every failure is
//! `{"error": {"code": ..., "message": ...}}` with a 4xx or 5xx status.

use std::collections::HashSet;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use execstore::validate::MAX_PAGE;
use execstore::{encode_cursor, DueTimer, ExecutionStore, ExecutionSummary, ListQuery, Status, StoreError};
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use super::{digest, AppState};
use crate::commands::ALL_TIMERS;
use crate::time;

/// Page size when a request does not say.
const DEFAULT_LIMIT: usize = 50;
/// How many entries of each kind an execution's own timers, outbox and spawns are looked
/// for among (the store lists them store-wide only); past that the answer says `truncated`.
const SCAN_CAP: usize = 200_000;
/// How far up the parent chain a detail goes.
const MAX_ANCESTORS: usize = 64;
/// How many children a detail loads the summaries of.
const MAX_CHILDREN: usize = 500;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/info", get(info))
        .route("/api/changes", get(changes))
        .route("/api/counts", get(counts))
        .route("/api/executions", get(executions))
        .route("/api/executions/{id}", get(execution))
        .route("/api/executions/{id}/trace", get(trace))
        .route("/api/executions/{id}/pending", get(pending))
        .route("/api/outbox", get(outbox))
        .route("/api/outbox/{seq}/ack", post(ack_outbox))
        .route("/api/spawns", get(spawns))
        .route("/api/spawns/{seq}/ack", post(ack_spawn))
        .route("/api/timers", get(timers).delete(delete_timer))
        .route("/api/{*rest}", any(no_such_endpoint))
}

// ---------------------------------------------------------------------------------------------
// Errors

/// A failed request: its status and the JSON error body.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
    }

    fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "code": self.code, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let status = match &e {
            StoreError::InvalidInput { .. } => StatusCode::BAD_REQUEST,
            StoreError::NotFound { .. } => StatusCode::NOT_FOUND,
            StoreError::Conflict { .. } => StatusCode::CONFLICT,
            StoreError::Backend { retryable: true, .. } => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.code(), e.to_string())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}

type ApiResult = Result<Json<Value>, ApiError>;

async fn no_such_endpoint(Path(rest): Path<String>) -> ApiError {
    ApiError::not_found(format!("no endpoint /api/{rest} (see README.md, \"Monitor\")"))
}

/// Runs a blocking store call on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&dyn ExecutionStore) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.store.clone();
    tokio::task::spawn_blocking(move || f(&*store))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string()))?
}

// ---------------------------------------------------------------------------------------------
// Parameters

/// A request's query parameters: each known name at most once, any other name refused (a
/// misspelt filter is an error, not a silently unfiltered answer).
struct Params(Vec<(String, String)>);

impl Params {
    fn new(
        query: Result<Query<Vec<(String, String)>>, QueryRejection>,
        known: &[&str],
    ) -> Result<Self, ApiError> {
        let Query(pairs) = query?;
        let mut seen = HashSet::new();
        for (name, _) in &pairs {
            if !known.contains(&name.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {name:?} (known: {})",
                    known.join(", ")
                )));
            }
            if !seen.insert(name.as_str()) {
                return Err(ApiError::bad_request(format!("parameter {name:?} given twice")));
            }
        }
        Ok(Params(pairs))
    }

    /// The value of `name`; an empty value counts as absent.
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    fn limit(&self) -> Result<usize, ApiError> {
        match self.get("limit") {
            None => Ok(DEFAULT_LIMIT),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
                _ => Err(ApiError::bad_request(format!(
                    "limit {v:?} is not a whole number in 1..={MAX_PAGE}"
                ))),
            },
        }
    }

    fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.get(name) {
            None | Some("false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!(
                "{name} {v:?} is not true, false, 1 or 0"
            ))),
        }
    }

    fn seq(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.get(name)
            .map(|v| {
                v.parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| ApiError::bad_request(format!("{name} {v:?} is not a sequence number")))
            })
            .transpose()
    }

    fn time(&self, name: &str) -> Result<Option<f64>, ApiError> {
        self.get(name)
            .map(|v| {
                if v.eq_ignore_ascii_case("now") {
                    return Ok(time::now());
                }
                v.parse::<f64>()
                    .ok()
                    .filter(|t| t.is_finite() && *t >= 0.0)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("{name} {v:?} is not epoch seconds or \"now\""))
                    })
            })
            .transpose()
    }

    fn statuses(&self) -> Result<Option<Vec<Status>>, ApiError> {
        self.get("status")
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().parse::<Status>().map_err(ApiError::from))
                    .collect()
            })
            .transpose()
    }
}

fn seq_in_path(path: Result<Path<String>, PathRejection>) -> Result<i64, ApiError> {
    let Path(raw) = path?;
    raw.parse::<i64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| ApiError::bad_request(format!("{raw:?} is not a sequence number")))
}

fn id_in_path(path: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    let Path(id) = path?;
    execstore::validate::check_id("id", &id)?;
    Ok(id)
}

// ---------------------------------------------------------------------------------------------
// Writes

/// Writes need `Authorization: Bearer <token>` with the token given at start; without one
/// the monitor is read-only.
fn authorize(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = &state.token_digest else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "READ_ONLY",
            "this monitor is read-only: start it with --token (or EXECSTORE_MONITOR_TOKEN) to allow writes",
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match given {
        Some(token) if bool::from(digest(token).ct_eq(expected)) => Ok(()),
        _ => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "writes need the header `Authorization: Bearer <token>` with the monitor's token",
        )),
    }
}

async fn ack_outbox(
    State(state): State<AppState>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult {
    authorize(&state, &headers)?;
    let seq = seq_in_path(path)?;
    blocking(&state, move |store| Ok(store.ack_outbox(seq)?)).await?;
    Ok(Json(json!({ "acked": seq })))
}

async fn ack_spawn(
    State(state): State<AppState>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult {
    authorize(&state, &headers)?;
    let seq = seq_in_path(path)?;
    blocking(&state, move |store| Ok(store.ack_spawn(seq)?)).await?;
    Ok(Json(json!({ "acked": seq })))
}

async fn delete_timer(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult {
    authorize(&state, &headers)?;
    let params = Params::new(query, &["execution_id", "path", "fire_at"])?;
    let required = |name: &str| {
        params
            .get(name)
            .map(str::to_owned)
            .ok_or_else(|| ApiError::bad_request(format!("{name} is required")))
    };
    let execution_id = required("execution_id")?;
    let path = required("path")?;
    let fire_at = params
        .time("fire_at")?
        .ok_or_else(|| ApiError::bad_request("fire_at is required"))?;
    let (id, p) = (execution_id.clone(), path.clone());
    let deleted = blocking(&state, move |store| Ok(store.delete_timer(&id, &p, fire_at)?)).await?;
    if !deleted {
        return Err(ApiError::not_found(format!(
            "no timer of {execution_id} at {path} firing at {fire_at} (fired or re-armed meanwhile?)"
        )));
    }
    Ok(Json(json!({ "deleted": true })))
}

// ---------------------------------------------------------------------------------------------
// Reads

async fn info(State(state): State<AppState>) -> Json<Value> {
    let mut info = (*state.info).clone();
    if let Some(map) = info.as_object_mut() {
        map.insert("now".into(), json!(time::now()));
    }
    Json(info)
}

async fn changes(State(state): State<AppState>) -> ApiResult {
    let token = blocking(&state, |store| Ok(store.change_token()?)).await?;
    Ok(Json(json!({ "token": token, "now": time::now() })))
}

async fn counts(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult {
    let params = Params::new(query, &["definition", "roots_only"])?;
    let definition = params.get("definition").map(str::to_owned);
    let roots_only = params.flag("roots_only")?;
    let counts = blocking(&state, move |store| {
        Ok(store.status_counts(definition.as_deref(), roots_only)?)
    })
    .await?;
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    let by_status: serde_json::Map<String, Value> = counts
        .into_iter()
        .map(|(status, n)| (status.as_str().to_owned(), json!(n)))
        .collect();
    Ok(Json(json!({ "counts": by_status, "total": total })))
}

async fn executions(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult {
    let params = Params::new(
        query,
        &["status", "definition", "roots_only", "q", "limit", "cursor"],
    )?;
    let mut list = ListQuery::new()
        .limit(params.limit()?)
        .roots_only(params.flag("roots_only")?)
        .cursor(params.get("cursor").map(str::to_owned));
    if let Some(statuses) = params.statuses()? {
        list = list.status(statuses);
    }
    if let Some(definition) = params.get("definition") {
        list = list.definition(definition);
    }
    let prefix = params.get("q").map(str::to_owned);
    let page = blocking(&state, move |store| match prefix {
        Some(prefix) => search(store, list, &prefix),
        None => Ok(store.list_executions(&list)?),
    })
    .await?;
    Ok(Json(
        json!({ "items": page.items, "next_cursor": page.next_cursor }),
    ))
}

/// The executions whose id starts with `prefix` that pass the query's filters, one page at a
/// time, by the store's keyset: ids starting with `prefix` are one run in id order, right
/// after `prefix` itself (its exact match is read on its own on the first page).
fn search(
    store: &dyn ExecutionStore,
    mut query: ListQuery,
    prefix: &str,
) -> Result<execstore::ExecutionPage, ApiError> {
    execstore::validate::check_id("q", prefix)?;
    let mut items = Vec::new();
    if query.cursor.is_none() {
        query.validated_after()?;
        if let Some(exe) = store.load(prefix)? {
            if query.matches(exe.status, &exe.definition_id, exe.parent_id.as_deref()) {
                items.push(ExecutionSummary::of(&exe));
            }
        }
        query.cursor = Some(encode_cursor(prefix));
        if items.len() == query.limit {
            return Ok(execstore::ExecutionPage {
                items,
                next_cursor: query.cursor,
            });
        }
        query.limit -= items.len();
    }
    let page = store.list_executions(&query)?;
    let mut next_cursor = page.next_cursor;
    for summary in page.items {
        if !summary.id.starts_with(prefix) {
            next_cursor = None;
            break;
        }
        items.push(summary);
    }
    Ok(execstore::ExecutionPage { items, next_cursor })
}

async fn execution(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> ApiResult {
    let id = id_in_path(path)?;
    blocking(&state, move |store| {
        let exe = store
            .load(&id)?
            .ok_or_else(|| ApiError::not_found(format!("no execution {id}")))?;
        // The parent chain, root first.
        let mut ancestors = Vec::new();
        let mut parent = exe.parent_id.clone();
        let mut seen = HashSet::from([exe.id.clone()]);
        while let Some(pid) = parent {
            if ancestors.len() >= MAX_ANCESTORS || !seen.insert(pid.clone()) {
                break;
            }
            match store.load(&pid)? {
                Some(p) => {
                    parent = p.parent_id.clone();
                    ancestors.push(json!({ "id": pid, "summary": ExecutionSummary::of(&p) }));
                }
                None => {
                    ancestors.push(json!({ "id": pid, "summary": null }));
                    break;
                }
            }
        }
        ancestors.reverse();
        let mut children = Vec::new();
        for (child_id, join) in exe.children.iter().take(MAX_CHILDREN) {
            let summary = store.load(child_id)?.map(|c| ExecutionSummary::of(&c));
            children.push(json!({ "id": child_id, "join": join, "summary": summary }));
        }
        Ok(Json(json!({
            "execution": exe,
            "ancestors": ancestors,
            "children": children,
            "children_total": exe.children.len(),
        })))
    })
    .await
}

async fn trace(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> ApiResult {
    let id = id_in_path(path)?;
    blocking(&state, move |store| {
        if store.load(&id)?.is_none() {
            return Err(ApiError::not_found(format!("no execution {id}")));
        }
        let steps = store.read_trace(&id)?;
        Ok(Json(json!({ "items": steps, "trace_max": store.trace_max() })))
    })
    .await
}

/// An execution's armed timers, the outbox entries addressed to it and the spawn intents it
/// issued. The store lists these store-wide only, so they are picked out of its listings
/// (oldest first), at most [`SCAN_CAP`] entries of each read.
async fn pending(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> ApiResult {
    let id = id_in_path(path)?;
    blocking(&state, move |store| {
        if store.load(&id)?.is_none() {
            return Err(ApiError::not_found(format!("no execution {id}")));
        }
        let mut truncated = false;
        let mut timers = Vec::new();
        let mut after: Option<DueTimer> = None;
        let mut scanned = 0;
        loop {
            let page = store.due_timers(ALL_TIMERS, after.as_ref(), MAX_PAGE)?;
            scanned += page.len();
            let full = page.len() == MAX_PAGE;
            after = page.last().cloned();
            timers.extend(page.into_iter().filter(|t| t.execution_id == id));
            if !full {
                break;
            }
            if scanned >= SCAN_CAP {
                truncated = true;
                break;
            }
        }
        let mut outbox = Vec::new();
        let (mut after, mut scanned) = (None, 0);
        loop {
            let page = store.pending_outbox(after, MAX_PAGE)?;
            scanned += page.len();
            let full = page.len() == MAX_PAGE;
            after = page.last().map(|e| e.seq);
            outbox.extend(
                page.into_iter()
                    .filter(|e| e.target_id.as_deref() == Some(id.as_str())),
            );
            if !full {
                break;
            }
            if scanned >= SCAN_CAP {
                truncated = true;
                break;
            }
        }
        let mut spawns = Vec::new();
        let (mut after, mut scanned) = (None, 0);
        loop {
            let page = store.pending_spawns(after, MAX_PAGE)?;
            scanned += page.len();
            let full = page.len() == MAX_PAGE;
            after = page.last().map(|e| e.seq);
            spawns.extend(page.into_iter().filter(|e| e.parent_id == id));
            if !full {
                break;
            }
            if scanned >= SCAN_CAP {
                truncated = true;
                break;
            }
        }
        Ok(Json(json!({
            "timers": timers,
            "outbox": outbox,
            "spawns": spawns,
            "truncated": truncated,
            "now": time::now(),
        })))
    })
    .await
}

async fn outbox(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult {
    let params = Params::new(query, &["after", "limit"])?;
    let (after, limit) = (params.seq("after")?, params.limit()?);
    let items = blocking(&state, move |store| Ok(store.pending_outbox(after, limit)?)).await?;
    let next_after = (items.len() == limit)
        .then(|| items.last().map(|e| e.seq))
        .flatten();
    Ok(Json(
        json!({ "items": items, "next_after": next_after, "now": time::now() }),
    ))
}

async fn spawns(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult {
    let params = Params::new(query, &["after", "limit"])?;
    let (after, limit) = (params.seq("after")?, params.limit()?);
    let (items, next_after) = blocking(&state, move |store| {
        let entries = store.pending_spawns(after, limit)?;
        let next_after = (entries.len() == limit)
            .then(|| entries.last().map(|e| e.seq))
            .flatten();
        // A spawn intent has no time of its own: its parent's last commit is a lower bound
        // of how long it has waited (the fork was that commit or an earlier one).
        let mut parents: std::collections::HashMap<String, Option<f64>> = Default::default();
        let mut items = Vec::with_capacity(entries.len());
        for entry in entries {
            if !parents.contains_key(&entry.parent_id) {
                let updated = store.load(&entry.parent_id)?.and_then(|p| p.updated_at);
                parents.insert(entry.parent_id.clone(), updated);
            }
            let mut item = serde_json::to_value(&entry)
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string()))?;
            if let Some(map) = item.as_object_mut() {
                map.insert("parent_updated_at".into(), json!(parents[&entry.parent_id]));
            }
            items.push(item);
        }
        Ok((items, next_after))
    })
    .await?;
    Ok(Json(
        json!({ "items": items, "next_after": next_after, "now": time::now() }),
    ))
}

/// The opaque cursor of the timers listing: the last timer of the page, as JSON.
fn encode_timer_cursor(timer: &DueTimer) -> String {
    URL_SAFE_NO_PAD.encode(json!([timer.execution_id, timer.path, timer.fire_at]).to_string())
}

fn decode_timer_cursor(cursor: &str) -> Result<DueTimer, ApiError> {
    let bad = || ApiError::bad_request(format!("{cursor:?} is not a cursor of this listing"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let (execution_id, path, fire_at): (String, String, f64) =
        serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok(DueTimer {
        execution_id,
        path,
        fire_at,
    })
}

async fn timers(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> ApiResult {
    let params = Params::new(query, &["due_before", "cursor", "limit"])?;
    let due_before = params.time("due_before")?.unwrap_or(ALL_TIMERS);
    let limit = params.limit()?;
    let after = params.get("cursor").map(decode_timer_cursor).transpose()?;
    let items = blocking(&state, move |store| {
        Ok(store.due_timers(due_before, after.as_ref(), limit)?)
    })
    .await?;
    let next_cursor = (items.len() == limit)
        .then(|| items.last().map(encode_timer_cursor))
        .flatten();
    Ok(Json(
        json!({ "items": items, "next_cursor": next_cursor, "now": time::now() }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_cursors_round_trip_and_refuse_garbage() {
        let t = DueTimer {
            execution_id: "a\"b".into(),
            path: "x.y".into(),
            fire_at: 1.5,
        };
        assert_eq!(decode_timer_cursor(&encode_timer_cursor(&t)).unwrap(), t);
        assert!(decode_timer_cursor("!!").is_err());
        assert!(decode_timer_cursor(&URL_SAFE_NO_PAD.encode("[1]")).is_err());
    }
}
