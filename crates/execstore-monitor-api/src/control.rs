//! The control endpoints (writes, behind the token): `POST
//! /api/executions/{id}/{suspend|resume|terminate|purge}[?expected_version=V]`, harel 0.9's
//! control plane through [`execstore::executions::control`], with the monitor's clock.
//!
//! `expected_version` is the version the page showed: if the execution moved since, the
//! answer is 409 `CONFLICT` and nothing changes, so the UI can explain and refresh. A silent
//! no-op of harel's (suspending a DONE execution) answers 200 with `changed: []`; an unknown
//! id is 404; a refused purge (a child, a live tree) is 400 `INVALID_INPUT` with harel's
//! reason.
//!
//! `POST /api/control/{action}` makes one action on many executions in one request (the
//! UI's bulk actions): its JSON body names the targets, each with its own optional
//! `expected_version`, and the answer has one result per target (see
//! [`Call::bulk_control`]).

use execstore::executions::control::{self, Command};
use execstore::ExecutionStore;
use serde_json::{json, Map, Value};

use crate::params::{check_id, Params};
use crate::{ApiError, ApiResult, Call};

/// The most targets one `POST /api/control/{action}` may name.
pub(crate) const BULK_LIMIT: usize = 1000;

impl Call<'_> {
    /// `POST /api/executions/{id}/{action}`.
    pub(crate) fn control(&self, id: String, action: &str) -> ApiResult {
        check_id(&id)?;
        let params = Params::new(self.request.query, &["expected_version"], self.now)?;
        let expected = params.seq("expected_version")?;
        let store = self.exec()?;
        let mut fields = apply(store, action, &id, expected, self.now)?;
        fields.insert("action".into(), Value::from(action));
        fields.insert("id".into(), Value::from(id));
        Ok(Value::Object(fields))
    }

    /// `POST /api/control/{action}` with `{"targets": [{"id", "expected_version"?}, ...]}`:
    /// the action on each target in order, each its own commit exactly as
    /// `POST /api/executions/{id}/{action}` makes it. The whole body is checked before
    /// anything is written (a bad one is 400 `INVALID_INPUT` and changes nothing); then every
    /// target has its own result, in order: `{"id", "ok": true, ...}` with the single
    /// endpoint's fields, or `{"id", "ok": false, "status", "error": {"code", "message"}}`
    /// with the status and error the single endpoint would have answered.
    pub(crate) fn bulk_control(&self, action: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let store = self.exec()?;
        let targets = parse_targets(self.request.body)?;
        let results: Vec<Value> = targets
            .into_iter()
            .map(|(id, expected)| result_entry(apply(store, action, &id, expected, self.now), id))
            .collect();
        Ok(json!({ "action": action, "results": results }))
    }
}

/// The actions `POST /api/control/{action}` (and `.../matching`) make.
pub(crate) const ACTIONS: [&str; 4] = ["suspend", "resume", "terminate", "purge"];

/// One target's entry in a bulk answer: `{"id", "ok": true, ...fields}` or `{"id", "ok":
/// false, "status", "error": {"code", "message"}}`.
pub(crate) fn result_entry(outcome: Result<Map<String, Value>, ApiError>, id: String) -> Value {
    let mut entry = match outcome {
        Ok(mut fields) => {
            fields.insert("ok".into(), Value::Bool(true));
            fields
        }
        Err(e) => {
            let mut failed = Map::new();
            failed.insert("ok".into(), Value::Bool(false));
            failed.insert("status".into(), Value::from(e.status));
            failed.insert("error".into(), json!({ "code": e.code, "message": e.message }));
            failed
        }
    };
    entry.insert("id".into(), Value::from(id));
    Value::Object(entry)
}

/// `action` on one execution, as both endpoints make it: the outcome's fields (`changed`;
/// for a purge `purged`, `removed` and `swept`), without the action and the id.
pub(crate) fn apply(
    store: &dyn ExecutionStore,
    action: &str,
    id: &str,
    expected: Option<i64>,
    now: f64,
) -> Result<Map<String, Value>, ApiError> {
    let command = match action {
        "suspend" => Command::Suspend,
        "resume" => Command::Resume,
        "terminate" => Command::Terminate,
        "purge" => {
            let outcome = control::purge(store, id, expected, None)?;
            let mut fields = Map::new();
            fields.insert("purged".into(), json!(outcome.root_id));
            fields.insert("removed".into(), json!(outcome.removed));
            fields.insert("swept".into(), json!(outcome.swept));
            return Ok(fields);
        }
        other => return Err(ApiError::not_found(format!("no action {other:?}"))),
    };
    let outcome = control::run(store, command, id, expected, now)?;
    let mut fields = Map::new();
    fields.insert("changed".into(), json!(outcome.changed));
    Ok(fields)
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "INVALID_INPUT", message)
}

/// The bulk body's targets, every one checked: `(id, expected_version)` in order.
fn parse_targets(body: &[u8]) -> Result<Vec<(String, Option<i64>)>, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        invalid(format!(
            "the body must be JSON {{\"targets\": [{{\"id\": ..., \"expected_version\": ...}}, ...]}}: {e}"
        ))
    })?;
    let Value::Object(mut body) = value else {
        return Err(invalid("the body must be a JSON object {\"targets\": [...]}"));
    };
    let targets = body
        .remove("targets")
        .ok_or_else(|| invalid("the body has no \"targets\""))?;
    if let Some(key) = body.keys().next() {
        return Err(invalid(format!(
            "the body has an unknown key {key:?} (only \"targets\")"
        )));
    }
    let Value::Array(targets) = targets else {
        return Err(invalid("\"targets\" must be an array"));
    };
    if targets.len() > BULK_LIMIT {
        return Err(invalid(format!(
            "{} targets: at most {BULK_LIMIT} in one request",
            targets.len()
        )));
    }
    targets
        .into_iter()
        .enumerate()
        .map(|(i, target)| {
            let Value::Object(mut target) = target else {
                return Err(invalid(format!(
                    "targets[{i}] must be an object {{\"id\", \"expected_version\"?}}"
                )));
            };
            let id = match target.remove("id") {
                Some(Value::String(id)) => id,
                Some(_) => return Err(invalid(format!("targets[{i}].id must be a string"))),
                None => return Err(invalid(format!("targets[{i}] has no \"id\""))),
            };
            check_id(&id).map_err(|e| invalid(format!("targets[{i}]: {}", e.message)))?;
            let expected = match target.remove("expected_version") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_i64().filter(|n| *n >= 0).ok_or_else(|| {
                    invalid(format!(
                        "targets[{i}].expected_version {v} is not a non-negative integer"
                    ))
                })?),
            };
            if let Some(key) = target.keys().next() {
                return Err(invalid(format!(
                    "targets[{i}] has an unknown key {key:?} (only \"id\" and \"expected_version\")"
                )));
            }
            Ok((id, expected))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use execstore::{
        executions::{ChildState, Status},
        Execution, ExecutionStore, MemoryStore,
    };
    use serde_json::{json, Map, Value};

    use crate::{ApiRequest, ApiResponse, MonitorApi};

    const NOW: f64 = 1_800_000_000.0;

    fn store() -> MemoryStore {
        let store = MemoryStore::new();
        let put = |id: &str, status: Status, parent: Option<&str>, kids: &[&str]| {
            let mut exe = Execution::new(id, "d");
            exe.status = status;
            exe.parent_id = parent.map(str::to_owned);
            for k in kids {
                exe.children
                    .insert((*k).to_owned(), ChildState::region("d.r", "r"));
            }
            store.save(&mut exe).unwrap();
        };
        put("r", Status::Running, None, &["r:a"]);
        put("r:a", Status::Running, Some("r"), &[]);
        put("done", Status::Done, None, &[]);
        store
    }

    fn call(
        api: &MonitorApi,
        store: &MemoryStore,
        method: &str,
        target: &str,
        auth: Option<&str>,
    ) -> ApiResponse {
        let body = br#"{"reason": "a test"}"#;
        api.handle(
            store,
            &ApiRequest::from_target(method, target, auth).with_body(body),
            NOW,
        )
    }

    /// `body` with a `reason` when it is a JSON object (every write's body needs one);
    /// anything else as it is.
    fn with_reason(body: &str) -> String {
        match serde_json::from_str::<Value>(body) {
            Ok(Value::Object(mut fields)) => {
                fields.insert("reason".into(), json!("a test"));
                Value::Object(fields).to_string()
            }
            _ => body.to_owned(),
        }
    }

    fn status(store: &MemoryStore, id: &str) -> Option<Status> {
        store.load(id).unwrap().map(|e| e.status)
    }

    fn code(r: &ApiResponse) -> &Value {
        &r.body["error"]["code"]
    }

    #[test]
    fn control_needs_the_token_and_post() {
        let store = store();
        let read_only = MonitorApi::new(Map::new(), None);
        let r = call(&read_only, &store, "POST", "/api/executions/r/suspend", None);
        assert_eq!((r.status, code(&r)), (403, &json!("READ_ONLY")));
        let api = MonitorApi::new(Map::new(), Some("tok"));
        let r = call(&api, &store, "POST", "/api/executions/r/terminate", None);
        assert_eq!((r.status, code(&r)), (401, &json!("UNAUTHORIZED")));
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/terminate",
            Some("Bearer nope"),
        );
        assert_eq!(r.status, 401);
        let r = call(
            &api,
            &store,
            "GET",
            "/api/executions/r/terminate",
            Some("Bearer tok"),
        );
        assert_eq!(r.status, 405);
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/explode",
            Some("Bearer tok"),
        );
        assert_eq!(r.status, 404);
        assert_eq!(status(&store, "r"), Some(Status::Running), "nothing changed");
    }

    #[test]
    fn actions_conflicts_and_refusals() {
        let store = store();
        let api = MonitorApi::new(Map::new(), Some("tok"));
        let auth = Some("Bearer tok");
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/suspend?expected_version=1",
            auth,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["changed"].as_array().map(Vec::len), Some(2));
        assert_eq!(status(&store, "r:a"), Some(Status::Suspended));
        assert_eq!(
            store.load("r").unwrap().unwrap().updated_at,
            Some(NOW),
            "the monitor's clock"
        );

        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/resume?expected_version=1",
            auth,
        );
        assert_eq!((r.status, code(&r)), (409, &json!("CONFLICT")), "{}", r.body);
        assert_eq!(
            status(&store, "r"),
            Some(Status::Suspended),
            "a conflict changes nothing"
        );
        let r = call(&api, &store, "POST", "/api/executions/done/suspend", auth);
        assert_eq!(
            (r.status, &r.body["changed"]),
            (200, &json!([])),
            "harel's silent no-op"
        );
        let r = call(&api, &store, "POST", "/api/executions/nope/terminate", auth);
        assert_eq!((r.status, code(&r)), (404, &json!("NOT_FOUND")));
        let r = call(&api, &store, "POST", "/api/executions/r/purge", auth);
        assert_eq!((r.status, code(&r)), (400, &json!("INVALID_INPUT")));
        assert!(r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("purge refused: not finished"));
        let r = call(&api, &store, "POST", "/api/executions/r%3Aa/purge", auth);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("is a child of"),
            "{}",
            r.body
        );
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/purge?expected_version=x",
            auth,
        );
        assert_eq!(r.status, 400);

        let r = call(&api, &store, "POST", "/api/executions/r/terminate", auth);
        assert_eq!(r.status, 200);
        let r = call(&api, &store, "POST", "/api/executions/r/purge", auth);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["removed"], json!(["r:a", "r"]));
        assert_eq!(status(&store, "r"), None);
    }

    fn bulk(
        api: &MonitorApi,
        store: &MemoryStore,
        action: &str,
        body: &str,
        auth: Option<&str>,
    ) -> ApiResponse {
        let target = format!("/api/control/{action}");
        let body = with_reason(body);
        let request = ApiRequest::from_target("POST", &target, auth).with_body(body.as_bytes());
        api.handle(store, &request, NOW)
    }

    /// Every execution of the test store, as stored (an absent one: null).
    fn snapshot(store: &MemoryStore) -> Value {
        let all: Vec<Value> = ["r", "r:a", "done"]
            .iter()
            .map(|id| serde_json::to_value(store.load(id).unwrap()).unwrap())
            .collect();
        Value::Array(all)
    }

    #[test]
    fn bulk_control_needs_the_token_and_post() {
        let store = store();
        let before = snapshot(&store);
        let body = r#"{"targets": [{"id": "r"}]}"#;
        let read_only = MonitorApi::new(Map::new(), None);
        let r = bulk(&read_only, &store, "terminate", body, None);
        assert_eq!((r.status, code(&r)), (403, &json!("READ_ONLY")));
        let api = MonitorApi::new(Map::new(), Some("tok"));
        let r = bulk(&api, &store, "terminate", body, None);
        assert_eq!((r.status, code(&r)), (401, &json!("UNAUTHORIZED")));
        let r = bulk(&api, &store, "terminate", body, Some("Bearer nope"));
        assert_eq!((r.status, code(&r)), (401, &json!("UNAUTHORIZED")));
        let r = bulk(&api, &store, "explode", body, Some("Bearer tok"));
        assert_eq!((r.status, code(&r)), (404, &json!("NOT_FOUND")));
        let get = api.handle(
            &store,
            &ApiRequest::from_target("GET", "/api/control/terminate", Some("Bearer tok"))
                .with_body(body.as_bytes()),
            NOW,
        );
        assert_eq!(get.status, 405);
        assert_eq!(snapshot(&store), before, "nothing changed");
    }

    /// A target: its id and `expected_version`.
    type Target<'a> = (&'a str, Option<i64>);

    #[test]
    fn bulk_control_answers_each_target_as_the_single_endpoint_would() {
        let api = MonitorApi::new(Map::new(), Some("tok"));
        let auth = Some("Bearer tok");
        // In order: a change (r and its child), a no-op (DONE), a conflict (r moved to
        // version 2 just before), an unknown id; then purges: refused (not finished),
        // refused (a child), done.
        let steps: [(&str, &[Target]); 2] = [
            (
                "suspend",
                &[("r", Some(1)), ("done", None), ("r", Some(1)), ("nope", Some(3))],
            ),
            ("purge", &[("r", None), ("r:a", None), ("done", Some(1))]),
        ];
        let singly = store();
        let together = store();
        for (action, targets) in steps {
            let body = json!({
                "targets": targets
                    .iter()
                    .map(|(id, v)| match v {
                        Some(v) => json!({"id": id, "expected_version": v}),
                        None => json!({"id": id}),
                    })
                    .collect::<Vec<_>>()
            });
            let r = bulk(&api, &together, action, &body.to_string(), auth);
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.body["action"], json!(action));
            let results = r.body["results"].as_array().unwrap();
            assert_eq!(results.len(), targets.len());
            for ((id, v), got) in targets.iter().zip(results) {
                let query = v.map(|v| format!("?expected_version={v}")).unwrap_or_default();
                let target = format!("/api/executions/{}/{action}{query}", id.replace(':', "%3A"));
                let one = call(&api, &singly, "POST", &target, auth);
                assert_eq!(got["id"], json!(id));
                if one.status == 200 {
                    let mut want = one.body.as_object().unwrap().clone();
                    want.remove("action");
                    want.insert("ok".into(), json!(true));
                    assert_eq!(got, &Value::Object(want), "{id}");
                } else {
                    let want =
                        json!({"id": id, "ok": false, "status": one.status, "error": one.body["error"]});
                    assert_eq!(got, &want, "{id}");
                }
            }
            assert_eq!(snapshot(&together), snapshot(&singly), "the same commits");
        }
        let r = bulk(&api, &together, "suspend", "{\"targets\": []}", auth);
        assert_eq!((r.status, &r.body["results"]), (200, &json!([])));

        // What each target got, spelled out.
        let fresh = store();
        let body = json!({"targets": [
            {"id": "r", "expected_version": 1},
            {"id": "done"},
            {"id": "r", "expected_version": 1},
            {"id": "nope", "expected_version": null},
        ]});
        let r = bulk(&api, &fresh, "suspend", &body.to_string(), auth);
        let results = r.body["results"].as_array().unwrap();
        let oks: Vec<(&Value, &Value, &Value)> = results
            .iter()
            .map(|x| (&x["id"], &x["ok"], &x["status"]))
            .collect();
        assert_eq!(
            oks,
            [
                (&json!("r"), &json!(true), &Value::Null),
                (&json!("done"), &json!(true), &Value::Null),
                (&json!("r"), &json!(false), &json!(409)),
                (&json!("nope"), &json!(false), &json!(404)),
            ]
        );
        assert_eq!(results[0]["changed"].as_array().map(Vec::len), Some(2));
        assert_eq!(results[1]["changed"], json!([]));
        assert_eq!(results[2]["error"]["code"], "CONFLICT");
        assert_eq!(results[3]["error"]["code"], "NOT_FOUND");
        assert_eq!(status(&fresh, "r"), Some(Status::Suspended));
        assert_eq!(status(&fresh, "r:a"), Some(Status::Suspended));
        assert_eq!(
            fresh.load("r").unwrap().unwrap().updated_at,
            Some(NOW),
            "the monitor's clock"
        );
        let r = bulk(
            &api,
            &fresh,
            "purge",
            r#"{"targets": [{"id": "r"}, {"id": "done"}]}"#,
            auth,
        );
        let results = r.body["results"].as_array().unwrap();
        assert_eq!(
            (results[0]["status"].clone(), results[0]["error"]["code"].clone()),
            (json!(400), json!("INVALID_INPUT"))
        );
        assert_eq!(
            (results[1]["ok"].clone(), results[1]["removed"].clone()),
            (json!(true), json!(["done"]))
        );
        assert_eq!(status(&fresh, "r"), Some(Status::Suspended));
        assert_eq!(status(&fresh, "done"), None);
    }

    #[test]
    fn bulk_control_bad_input_changes_nothing() {
        let store = store();
        let before = snapshot(&store);
        let api = MonitorApi::new(Map::new(), Some("tok"));
        let auth = Some("Bearer tok");
        let too_many = json!({
            "targets": (0..=super::BULK_LIMIT).map(|_| json!({"id": "r"})).collect::<Vec<_>>()
        })
        .to_string();
        let long_id = "x".repeat(100_000);
        let long = json!({"targets": [{"id": "r"}, {"id": long_id}]}).to_string();
        for body in [
            "",
            "not json",
            "[1, 2]",
            "\"targets\"",
            "{}",
            r#"{"targets": {"id": "r"}}"#,
            r#"{"targets": null}"#,
            r#"{"targets": [{"id": "r"}], "extra": 1}"#,
            r#"{"targets": [{"id": "r"}, "done"]}"#,
            r#"{"targets": [{"id": "r"}, {}]}"#,
            r#"{"targets": [{"id": "r"}, {"id": 7}]}"#,
            r#"{"targets": [{"id": "r"}, {"id": ""}]}"#,
            r#"{"targets": [{"id": "r"}, {"id": "done", "expected_version": -1}]}"#,
            r#"{"targets": [{"id": "r"}, {"id": "done", "expected_version": 1.5}]}"#,
            r#"{"targets": [{"id": "r"}, {"id": "done", "expected_version": "1"}]}"#,
            r#"{"targets": [{"id": "r"}, {"id": "done", "expected_version": 1e30}]}"#,
            r#"{"targets": [{"id": "r"}, {"id": "done", "version": 1}]}"#,
            long.as_str(),
            too_many.as_str(),
        ] {
            let r = bulk(&api, &store, "terminate", body, auth);
            // No body at all: no reason, which the write path answers first; anything else
            // is malformed (not JSON, not an object, or the handler's refusal).
            let want = if body.trim().is_empty() {
                "REASON_REQUIRED"
            } else {
                "INVALID_INPUT"
            };
            assert_eq!(
                (r.status, code(&r)),
                (400, &json!(want)),
                "{body:.80}: {}",
                r.body
            );
            assert_eq!(snapshot(&store), before, "{body:.80}: nothing changed");
        }
        let r = api.handle(
            &store,
            &ApiRequest::from_target("POST", "/api/control/terminate?expected_version=1", auth)
                .with_body(br#"{"targets": [{"id": "r"}], "reason": "a test"}"#),
            NOW,
        );
        assert_eq!(r.status, 400, "no query parameters: {}", r.body);
        assert_eq!(snapshot(&store), before);

        // The limit itself is fine.
        let at_limit = json!({
            "targets": (0..super::BULK_LIMIT).map(|i| json!({"id": format!("nope{i}")})).collect::<Vec<_>>()
        })
        .to_string();
        let r = bulk(&api, &store, "terminate", &at_limit, auth);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.body["results"].as_array().map(Vec::len),
            Some(super::BULK_LIMIT)
        );
        assert_eq!(snapshot(&store), before);
    }
}
