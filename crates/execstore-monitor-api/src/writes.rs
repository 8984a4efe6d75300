//! The one write path: every row of `ROUTES` whose method is not `GET` is answered here
//! ([`Call::write`]), so a handler does nothing about tokens, roles, reasons or the audit.
//!
//! 1. Who: without tokens the monitor is read-only (403 `READ_ONLY`, nothing recorded: the
//!    store was opened read-only); a request without a known token is 401 `UNAUTHORIZED`, one
//!    whose role is too weak 403 `FORBIDDEN` ([`required_role`]); both are recorded.
//! 2. Why: the body is a JSON object whose `reason` is a string of 1..=500 characters (not
//!    only white space); a body that is not a JSON object is 400 `INVALID_INPUT`, an object
//!    without a good reason 400 `REASON_REQUIRED`, and nothing changes (not recorded: a
//!    request that cannot say why is no action).
//! 3. An audit entry records who, what, on what, why and the request's parameters, with the
//!    outcome `PENDING`, before anything changes. If it cannot be recorded the write is 503
//!    `AUDIT_UNAVAILABLE` and the handler never runs: no action is made unaudited.
//! 4. The handler runs on the body without `reason`.
//! 5. The entry's outcome is set (`ok`, or the error's code and message). A bulk answer
//!    (`results`, one per `id`) also records one entry per target, each with its own
//!    outcome. A crash between 4 and 5 leaves the entry `PENDING`: the action's outcome is
//!    unknown, and every surface says so (docs/operators.md).

use execstore::operator::{AuditEntry, MAX_PARAMS_BYTES, MAX_REASON_CHARS, MAX_TEXT_BYTES, OK, PENDING};
use execstore::StoreError;
use serde_json::{Map, Value};

use crate::routes::Endpoint;
use crate::{decode_lossy, ApiError, ApiRequest, ApiResult, Call, Caller, Role};

/// The segments of a write's pattern that make it an `admin` write (purges; declaring search
/// attributes). Every other write is `act`.
const ADMIN_SEGMENTS: &[&str] = &["purge", "attributes"];

/// The role a write needs.
pub(crate) fn required_role(endpoint: &Endpoint) -> Role {
    if endpoint.pattern.split('/').any(|s| ADMIN_SEGMENTS.contains(&s)) {
        Role::Admin
    } else {
        Role::Act
    }
}

/// A write's name in the audit log: the pattern's fixed segments after `/api/`, joined by
/// `.`, and `.put` or `.delete` for those methods (`executions.suspend`, `control.purge`,
/// `outbox.ack`, `timers.delete`, `views.put`).
pub(crate) fn action_name(endpoint: &Endpoint) -> String {
    let mut parts: Vec<&str> = endpoint
        .pattern
        .trim_start_matches("/api/")
        .split('/')
        .filter(|s| !s.starts_with('{') && !s.is_empty())
        .collect();
    match endpoint.method {
        "PUT" => parts.push("put"),
        "DELETE" => parts.push("delete"),
        _ => {}
    }
    parts.join(".")
}

pub(crate) fn read_only() -> ApiError {
    ApiError::new(
        403,
        "READ_ONLY",
        "this monitor is read-only: start it with --token or --tokens (or EXECSTORE_MONITOR_TOKEN, \
         EXECSTORE_MONITOR_TOKENS) to allow writes",
    )
}

pub(crate) fn unauthorized() -> ApiError {
    ApiError::new(
        401,
        "UNAUTHORIZED",
        "writes need the header `Authorization: Bearer <token>` with one of the monitor's tokens",
    )
}

/// The refusal of a write whose audit entry could not be recorded before the action.
fn audit_unavailable(e: &StoreError) -> ApiError {
    ApiError::new(
        503,
        "AUDIT_UNAVAILABLE",
        format!("the action was not made: its audit entry could not be recorded first ({e})"),
    )
}

/// Test only (feature `crash-hook`): with `EXECSTORE_CRASH_AFTER_ACTION` set, the process
/// aborts between a write's action and the recording of its outcome, as a crash there would.
#[cfg(feature = "crash-hook")]
fn crash_point() {
    if std::env::var_os("EXECSTORE_CRASH_AFTER_ACTION").is_some() {
        std::process::abort();
    }
}

#[cfg(not(feature = "crash-hook"))]
fn crash_point() {}

fn reason_required(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "REASON_REQUIRED", message)
}

/// The body's `reason` and its other fields; the error is the 400.
fn split_reason(body: &[u8]) -> Result<(String, Map<String, Value>), ApiError> {
    let shape = "every write's body is a JSON object with a \"reason\" (a string of 1 to 500 characters)";
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(reason_required(format!("no body: {shape}")));
    }
    // A body that is not a JSON object is malformed input, whatever it meant to say.
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            400,
            "INVALID_INPUT",
            format!("the body is not JSON ({e}): {shape}"),
        )
    })?;
    let Value::Object(mut fields) = value else {
        return Err(ApiError::new(
            400,
            "INVALID_INPUT",
            format!("the body is not a JSON object: {shape}"),
        ));
    };
    let reason = match fields.remove("reason") {
        Some(Value::String(r)) => r,
        Some(_) => return Err(reason_required(format!("\"reason\" is not a string: {shape}"))),
        None => return Err(reason_required(format!("no \"reason\": {shape}"))),
    };
    let n = reason.chars().count();
    if reason.trim().is_empty() || n > MAX_REASON_CHARS || reason.contains('\0') {
        return Err(reason_required(format!(
            "\"reason\" has {n} characters{}: {shape}",
            if reason.trim().is_empty() {
                " and nothing but white space"
            } else {
                ""
            }
        )));
    }
    Ok((reason, fields))
}

/// A write's target: its path parameters, decoded and joined by `/` (an execution id, an
/// outbox seq, `tenant/workspace/...`), or else its `execution_id` query parameter.
fn target_of(args: &[&str], query: &Map<String, Value>) -> String {
    if args.is_empty() {
        return query
            .get("execution_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
    }
    args.iter().map(|a| decode_lossy(a)).collect::<Vec<_>>().join("/")
}

/// The query's pairs (numbers as numbers), as recorded; a malformed query records nothing
/// (the handler refuses it).
fn query_params(query: &str) -> Map<String, Value> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    pairs
        .into_iter()
        .map(|(k, v)| {
            let value = match v.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => Value::from(loggable(&v)),
            };
            (loggable(&k), value)
        })
        .collect()
}

/// The parameters recorded: the query's, then the body's fields, as the log can hold them
/// (NUL characters replaced; when they are too long for the log, arrays are recorded by
/// count and any other field still too long by size), so that a request the handler refuses
/// is still recorded, and refused by the handler, not by the log.
fn params_of(query: &Map<String, Value>, body: &Map<String, Value>) -> Map<String, Value> {
    let mut params = query.clone();
    for (k, v) in body {
        params.insert(loggable(k), without_nul(v.clone()));
    }
    let size = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
    if size(&Value::Object(params.clone())) > MAX_PARAMS_BYTES {
        for v in params.values_mut() {
            if let Value::Array(items) = v {
                *v = serde_json::json!({ "count": items.len(), "omitted": true });
            }
        }
    }
    if size(&Value::Object(params.clone())) > MAX_PARAMS_BYTES {
        for v in params.values_mut() {
            let n = size(v);
            if n > 256 {
                *v = serde_json::json!({ "bytes": n, "omitted": true });
            }
        }
    }
    params
}

/// `text` with NUL characters replaced (the log holds none).
fn loggable(text: &str) -> String {
    text.replace('\0', "\u{fffd}")
}

fn without_nul(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(loggable(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nul).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (loggable(&k), without_nul(v)))
                .collect(),
        ),
        other => other,
    }
}

/// A target as the log holds it: NUL characters replaced, cut at [`MAX_TEXT_BYTES`].
fn loggable_target(target: &str) -> String {
    let mut t = loggable(target);
    if t.len() > MAX_TEXT_BYTES {
        let mut end = MAX_TEXT_BYTES;
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        t.truncate(end);
    }
    t
}

impl Call<'_> {
    /// Answers a write by `endpoint` (module docs).
    pub(crate) fn write(&self, endpoint: &Endpoint, args: &[&str]) -> ApiResult {
        if !self.api.writable() {
            return Err(read_only());
        }
        let query = query_params(self.request.query);
        let mut entry = AuditEntry {
            id: 0,
            at: self.now,
            actor: self.caller.name().to_owned(),
            role: self.caller.role_name().to_owned(),
            action: action_name(endpoint),
            target: loggable_target(&target_of(args, &query)),
            reason: String::new(),
            outcome: OK.into(),
            message: None,
            params: params_of(&query, &Map::new()),
        };
        let needed = required_role(endpoint);
        let refused = match &self.caller {
            Caller::Known { role, .. } if role.allows(needed) => None,
            Caller::Known { name, role } => Some(ApiError::new(
                403,
                "FORBIDDEN",
                format!("{name} has the role {role}: {} needs {needed}", entry.action),
            )),
            _ => Some(unauthorized()),
        };
        if let Some(e) = refused {
            // The reason, if the body gives one, says what was attempted.
            if let Ok((reason, body)) = split_reason(self.request.body) {
                entry.reason = reason;
                entry.params = params_of(&query, &body);
            }
            self.record(&mut entry, Err(&e));
            return Err(e);
        }
        let (reason, body) = split_reason(self.request.body)?;
        entry.reason = reason;
        entry.params = params_of(&query, &body);
        let stripped = serde_json::to_vec(&Value::Object(body.clone()))
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let request = ApiRequest {
            body: &stripped,
            ..*self.request
        };
        let call = Call {
            api: self.api,
            stores: self.stores,
            operator: self.operator,
            request: &request,
            now: self.now,
            caller: self.caller.clone(),
        };
        // Recorded before anything changes: an action whose record cannot be written is not
        // made (an operator never acts unaudited).
        let pending = AuditEntry {
            outcome: PENDING.into(),
            ..entry.clone()
        };
        let id = self
            .operator()
            .record_audit(&pending)
            .map_err(|e| audit_unavailable(&e))?;
        let mut result = (endpoint.handler)(&call, args);
        crash_point();
        let audited = match &result {
            Ok(answer) => match per_target(answer, &body) {
                Some(entries) => {
                    // The request's entry says the bulk call ended; each target gets its own.
                    let mut first_error = self.operator().set_audit_outcome(id, OK, None).err();
                    for (target, outcome, message, extra) in entries {
                        let mut one = AuditEntry {
                            target,
                            outcome,
                            message,
                            ..entry.clone()
                        };
                        one.params.remove("targets");
                        one.params.insert("bulk".into(), Value::Bool(true));
                        one.params.extend(extra);
                        if let Err(e) = self.operator().record_audit(&one) {
                            first_error.get_or_insert(e);
                        }
                    }
                    first_error.map_or(Ok(()), Err)
                }
                None => self.operator().set_audit_outcome(id, OK, None).map(|_| ()),
            },
            Err(e) => self
                .operator()
                .set_audit_outcome(id, e.code, Some(&e.message))
                .map(|_| ()),
        };
        if let (Err(e), Ok(Value::Object(answer))) = (audited, &mut result) {
            // The action is done: its answer stands, saying its entry stays PENDING (or a
            // bulk target's entry is missing).
            answer.insert("audit_error".into(), Value::from(e.to_string()));
        }
        result
    }

    /// Records `entry` with the outcome `result`; a failure to record a refusal is not the
    /// caller's concern (the refusal is answered all the same).
    fn record(&self, entry: &mut AuditEntry, result: Result<(), &ApiError>) {
        match result {
            Ok(()) => entry.outcome = OK.into(),
            Err(e) => {
                entry.outcome = e.code.into();
                entry.message = Some(e.message.clone());
            }
        }
        let _ = self.operator().record_audit(entry);
    }
}

/// One entry per target of a bulk answer (`{"results": [{"id", "ok", "error"?}, ...]}`):
/// `(target, outcome, message, the target's own parameters)`.
type TargetOutcome = (String, String, Option<String>, Map<String, Value>);

fn per_target(answer: &Value, body: &Map<String, Value>) -> Option<Vec<TargetOutcome>> {
    let results = answer.get("results")?.as_array()?;
    let asked = body.get("targets").and_then(Value::as_array);
    results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let id = r.get("id")?.as_str()?.to_owned();
            let (outcome, message) = if r.get("ok") == Some(&Value::Bool(true)) {
                (OK.to_owned(), None)
            } else {
                let code = r
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("ERROR")
                    .to_owned();
                let message = r
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (code, message)
            };
            let mut extra = Map::new();
            if let Some(Value::Object(t)) = asked.and_then(|a| a.get(i)) {
                for (k, v) in t {
                    if k != "id" {
                        extra.insert(k.clone(), v.clone());
                    }
                }
            }
            Some((id, outcome, message, extra))
        })
        .collect()
}
