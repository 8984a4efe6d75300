//! The recovery endpoints (writes): send an event to an execution through the outbox,
//! retry (harel's `redrive`) a `FAILED` one, and a control action over everything the list's
//! filter matches. See docs/recover.md.
//!
//! * `POST /api/executions/{id}/send[?expected_version=V]` with `{"event": {"name", "data"?,
//!   "id"?}}`: [`control::send`]. Without an `id`, the event's id (its dedupe key) is made
//!   from the execution, its version, the time and the event, so that two sends differ.
//! * `POST /api/executions/{id}/retry[?expected_version=V]` with `{"target_path"}`:
//!   [`control::redrive`], the target being a state the execution's own trace shows it
//!   arriving at and not a composite of another state there (the store holds no definition:
//!   this is how the monitor keeps harel's leaf check).
//! * `POST /api/control/{action}/matching?<the list's filter>[&dry_run=true][&max=N]` with
//!   `{}`: the filter is parsed by the list's own function ([`crate::handlers::list_filter`]);
//!   a dry run counts the matches; a run lists them all first (at most `max`, else 400 and
//!   nothing changes), then applies the action to each at the version it was listed at, each
//!   its own commit, and answers a summary and each target's result. A match an earlier
//!   target's action already wrote (a parent's regions) or removed (a purged tree) is not
//!   acted on again: its result says `covered`. `GET` on the same path is the dry run as a
//!   read (the UI's count before it asks for a reason), needing no token and no reason.
//!
//! A body's `reason` belongs to the write path (recorded by the audit), never read here.

use std::collections::{BTreeMap, HashSet};

use execstore::executions::control;
use execstore::executions::{Event, Status};
use execstore::kit::validate::MAX_PAGE;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::handlers::{list_filter, list_page, LIST_FILTERS};
use crate::params::{check_id, Params};
use crate::{ApiError, ApiResult, Call};

/// The most executions one action over everything matching may act on.
pub(crate) const MATCH_LIMIT: usize = 10_000;
/// The most data a sent event may carry (bytes of JSON).
pub(crate) const MAX_EVENT_DATA: usize = 256 * 1024;

pub(crate) fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "INVALID_INPUT", message)
}

/// The body as a JSON object, with `allowed` keys only (`reason`, the write path's, is let
/// through unread).
pub(crate) fn body_object(body: &[u8], allowed: &[&str]) -> Result<Map<String, Value>, ApiError> {
    let shape = || {
        let keys: Vec<String> = allowed.iter().map(|k| format!("{k:?}")).collect();
        format!(
            "a JSON object with {}",
            if keys.is_empty() {
                "no fields".into()
            } else {
                keys.join(", ")
            }
        )
    };
    let value: Value = serde_json::from_slice(if body.is_empty() { b"{}" } else { body })
        .map_err(|e| invalid(format!("the body must be {}: {e}", shape())))?;
    let Value::Object(mut object) = value else {
        return Err(invalid(format!("the body must be {}", shape())));
    };
    object.remove("reason");
    if let Some(key) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid(format!(
            "the body has an unknown key {key:?} ({})",
            shape()
        )));
    }
    Ok(object)
}

/// `{"name", "data"?, "id"?}` as an event for `id` (checked; the id made when absent).
fn parse_event(raw: Option<Value>, execution_id: &str, version: i64, now: f64) -> Result<Event, ApiError> {
    let Some(Value::Object(mut raw)) = raw else {
        return Err(invalid(
            "\"event\" must be an object {\"name\", \"data\"?, \"id\"?}",
        ));
    };
    let name = match raw.remove("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n,
        Some(Value::String(_)) => return Err(invalid("event.name must not be empty")),
        Some(_) => return Err(invalid("event.name must be a string")),
        None => return Err(invalid("event has no \"name\"")),
    };
    if name.len() > 200 {
        return Err(invalid("event.name is longer than 200 bytes"));
    }
    let data = match raw.remove("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(d)) => d,
        Some(_) => return Err(invalid("event.data must be a JSON object")),
    };
    let data_len = serde_json::to_string(&data).map_or(usize::MAX, |s| s.len());
    if data_len > MAX_EVENT_DATA {
        return Err(invalid(format!(
            "event.data is {data_len} bytes of JSON, more than {MAX_EVENT_DATA}"
        )));
    }
    let id = match raw.remove("id") {
        None | Some(Value::Null) => {
            let mut h = Sha256::new();
            h.update(execution_id.as_bytes());
            h.update(version.to_le_bytes());
            h.update(now.to_bits().to_le_bytes());
            h.update(name.as_bytes());
            h.update(serde_json::to_string(&data).unwrap_or_default().as_bytes());
            let digest = h.finalize();
            digest[..16].iter().map(|b| format!("{b:02x}")).collect()
        }
        Some(Value::String(id)) => {
            check_id(&id).map_err(|e| invalid(format!("event.id: {}", e.message)))?;
            id
        }
        Some(_) => return Err(invalid("event.id must be a string")),
    };
    if let Some(key) = raw.keys().next() {
        return Err(invalid(format!(
            "event has an unknown key {key:?} (only \"name\", \"data\", \"id\")"
        )));
    }
    let mut event = Event::new(id, name);
    event.data = data;
    Ok(event)
}

/// The states a retry may move `trace`'s execution to: every `to_path` its trace shows,
/// except one that another seen path lies inside (a composite).
pub(crate) fn retry_targets(trace: &[execstore::executions::TraceStep]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut all: Vec<&str> = Vec::new();
    for step in trace {
        for key in ["from_path", "to_path"] {
            if let Some(p) = step.get(key).and_then(Value::as_str) {
                all.push(p);
            }
        }
        if let Some(to) = step.get("to_path").and_then(Value::as_str) {
            if !seen.iter().any(|s| s == to) {
                seen.push(to.to_owned());
            }
        }
    }
    seen.retain(|p| {
        !all.iter().any(|other| {
            other.len() > p.len() && other.starts_with(p.as_str()) && other.as_bytes()[p.len()] == b'.'
        })
    });
    seen.sort();
    seen
}

impl Call<'_> {
    /// `POST /api/executions/{id}/send`.
    pub(crate) fn send(&self, id: String) -> ApiResult {
        check_id(&id)?;
        let params = Params::new(self.request.query, &["expected_version"], self.now)?;
        let expected = params.seq("expected_version")?;
        let mut body = body_object(self.request.body, &["event"])?;
        let store = self.exec()?;
        let version = match store.load(&id)? {
            Some(exe) => exe.version,
            None => return Err(ApiError::not_found(format!("no execution {id:?}"))),
        };
        let event = parse_event(body.remove("event"), &id, version, self.now)?;
        let sent = control::send(store, &id, &event, expected)?;
        Ok(json!({
            "action": "send",
            "id": id,
            "seq": sent.seq,
            "event": {"id": event.id, "name": event.kind, "data": event.data},
        }))
    }

    /// `POST /api/executions/{id}/retry`.
    pub(crate) fn retry(&self, id: String) -> ApiResult {
        check_id(&id)?;
        let params = Params::new(self.request.query, &["expected_version"], self.now)?;
        let expected = params.seq("expected_version")?;
        let mut body = body_object(self.request.body, &["target_path"])?;
        let target = match body.remove("target_path") {
            Some(Value::String(t)) if !t.is_empty() => t,
            Some(Value::String(_)) | None => return Err(invalid("\"target_path\" is required")),
            Some(_) => return Err(invalid("\"target_path\" must be a string")),
        };
        let store = self.exec()?;
        let Some(exe) = store.load(&id)? else {
            return Err(ApiError::not_found(format!("no execution {id:?}")));
        };
        if exe.status == Status::Failed {
            let targets = retry_targets(&store.read_trace(&id)?);
            if !targets.contains(&target) {
                return Err(invalid(format!(
                    "{target:?} is not a state {id}'s trace shows it resting in (known: {})",
                    if targets.is_empty() {
                        "none".to_owned()
                    } else {
                        targets.join(", ")
                    }
                )));
            }
        }
        let outcome = control::redrive(store, &id, &target, expected, self.now)?;
        Ok(json!({ "action": "retry", "id": id, "target_path": target, "changed": outcome.changed }))
    }

    /// `GET /api/executions/{id}/retry-targets`: the states [`Call::retry`] accepts.
    pub(crate) fn retry_targets(&self, id: String) -> ApiResult {
        check_id(&id)?;
        let store = self.exec()?;
        let Some(exe) = store.load(&id)? else {
            return Err(ApiError::not_found(format!("no execution {id:?}")));
        };
        let targets = retry_targets(&store.read_trace(&id)?);
        Ok(json!({
            "id": id,
            "status": exe.status,
            "retryable": exe.status == Status::Failed && exe.children.values().all(|c| c.finished),
            "active_path": exe.active_path,
            "error": exe.error,
            "targets": targets,
        }))
    }

    /// `POST /api/control/{action}/matching`, and its count, `GET` (a read: a dry run
    /// whatever the query says, open to every reader, recorded by no one).
    pub(crate) fn bulk_matching(&self, action: &str) -> ApiResult {
        let mut known: Vec<&str> = LIST_FILTERS.to_vec();
        known.extend(["dry_run", "max"]);
        let params = Params::new(self.request.query, &known, self.now)?;
        let dry_run = params.flag("dry_run")? || self.request.method != "POST";
        let max = match params.get("max") {
            None => MATCH_LIMIT,
            Some(raw) => raw
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MATCH_LIMIT).contains(n))
                .ok_or_else(|| invalid(format!("max {raw:?} is not an integer in 1..={MATCH_LIMIT}")))?,
        };
        body_object(self.request.body, &[])?;
        if !crate::control::ACTIONS.contains(&action) {
            return Err(ApiError::not_found(format!("no action {action:?}")));
        }
        let filter = list_filter(&params)?;
        let store = self.exec()?;
        // Everything matching, listed first (so the writes never move the listing under it).
        let mut targets: Vec<(String, i64)> = Vec::new();
        let mut query = filter.clone();
        query.query.limit = MAX_PAGE;
        // By id, whatever order the list showed: a parent comes before its regions (its
        // action covers them), and the order cannot move while the listing pages.
        query.query.order = execstore::executions::ListOrder::Id;
        loop {
            let page = list_page(store, &query)?;
            targets.extend(page.items.into_iter().map(|s| (s.id, s.version)));
            if targets.len() > max {
                break;
            }
            match page.next_cursor {
                Some(cursor) => query.query.cursor = Some(cursor),
                None => break,
            }
        }
        let matching = targets.len();
        if dry_run {
            return Ok(json!({
                "action": action, "dry_run": true,
                "matching": matching.min(max), "over_limit": matching > max, "max": max,
            }));
        }
        if matching > max {
            return Err(invalid(format!(
                "more than {max} executions match: narrow the filter (or raise max, at most {MATCH_LIMIT}); nothing was changed"
            )));
        }
        let mut failed: BTreeMap<String, usize> = BTreeMap::new();
        let (mut changed, mut unchanged, mut covered) = (0usize, 0usize, 0usize);
        // The executions an earlier target's action already wrote or removed (a parent's
        // regions, a purged tree): not acted on again, so not a conflict of their own.
        let mut touched: HashSet<String> = HashSet::new();
        let mut results: Vec<Value> = Vec::with_capacity(targets.len());
        for (id, version) in targets {
            if touched.contains(&id) {
                covered += 1;
                results.push(json!({"id": id, "ok": true, "changed": [], "covered": true}));
                continue;
            }
            let r = crate::control::result_entry(
                crate::control::apply(store, action, &id, Some(version), self.now),
                id,
            );
            for key in ["changed", "removed"] {
                for one in r[key].as_array().into_iter().flatten() {
                    if let Some(other) = one.get("id").and_then(Value::as_str).or_else(|| one.as_str()) {
                        touched.insert(other.to_owned());
                    }
                }
            }
            if r["ok"] == json!(false) {
                let code = r["error"]["code"].as_str().unwrap_or("ERROR").to_owned();
                *failed.entry(code).or_default() += 1;
            } else if r["changed"].as_array().is_some_and(Vec::is_empty) {
                unchanged += 1;
            } else {
                changed += 1;
            }
            results.push(r);
        }
        Ok(json!({
            "action": action,
            "matching": matching,
            "summary": {"changed": changed, "unchanged": unchanged, "covered": covered, "failed": failed},
            "results": results,
        }))
    }
}

#[cfg(test)]
mod tests;
