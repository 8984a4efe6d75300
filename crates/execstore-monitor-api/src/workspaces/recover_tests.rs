//! The workspace recovery endpoints over a memory store: success, unknown ids, a stale
//! version (409), bad bodies (400), each refusal changing nothing.

use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::{
    Entry, EvaluationError, LogQuery, ManualClock, MemoryWorkspaceStorage, NewRun, RuleProgress, Run,
    StoredRule, StoredRuleStatus, Timestamp, WorkspaceRef, WorkspaceStorage,
};
use serde_json::{json, Value};

use crate::{ApiRequest, ApiResponse, MonitorApi, Stores};

const T0: i64 = 1_767_268_800_000_000;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_micros(T0 + secs * 1_000_000).unwrap()
}

fn obj(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn run(id: &str, status: &str) -> Run {
    Run::pending(NewRun {
        id: id.into(),
        rule: "page".into(),
        scope_key: id.into(),
        scope: obj(json!({"k": id})),
        fired_seq: 1,
        matched: vec![1],
        correlation_id: "e1".into(),
        depth: 0,
        now: at(0),
    })
    .unwrap()
    .with(obj(json!({"status": status, "attempts": 3})))
    .unwrap()
}

/// acme/prod: two dead runs and a running one, a dead letter of `page` at 2, `page`'s
/// progress, the stored rule `page` (v1, enabled), a lease lapsed at 30 and one held to 600.
fn storage() -> MemoryWorkspaceStorage {
    let clock = Arc::new(ManualClock::new(at(0)));
    let s = MemoryWorkspaceStorage::new(clock.clone());
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&ws).unwrap();
    let source = json!({"kind": "source", "name": "m"});
    tx.append(&[
        Entry::new("e1", source.clone(), obj(json!({"type": "oncall:error"}))),
        Entry::new("e2", source.clone(), obj(json!({"type": "oncall:error"}))),
        Entry::new("e3", source, obj(json!({"type": "oncall:error"}))),
    ])
    .unwrap();
    tx.save_runs(&[run("r1", "dead"), run("r2", "dead"), run("r3", "running")])
        .unwrap();
    tx.dead_letter(&[EvaluationError::new("page", 2, "KeyError")])
        .unwrap();
    tx.save_progress(
        "page",
        &RuleProgress::from_doc(obj(
            json!({"cursor": 3, "generation": 1, "definition": "d1", "deadlines": {}, "silent_through": 0}),
        )),
    )
    .unwrap();
    tx.save_stored_rule(&StoredRule {
        rule: obj(json!({"name": "page", "enabled": true})),
        version: 1,
        status: StoredRuleStatus::Active,
        provenance: obj(json!({})),
    })
    .unwrap();
    tx.commit().unwrap();
    assert!(s
        .acquire_lease(&ws, "run:old", "gone-worker", Duration::from_secs(30))
        .unwrap());
    assert!(s
        .acquire_lease(&ws, "run:live", "worker", Duration::from_secs(600))
        .unwrap());
    clock.set(at(100));
    s
}

fn post(s: &MemoryWorkspaceStorage, target: &str, body: &str) -> ApiResponse {
    let api = MonitorApi::new(serde_json::Map::new(), Some("tok"));
    let stores = Stores {
        executions: None,
        workspaces: Some(s),
    };
    let body = with_reason(body);
    let request = ApiRequest::from_target("POST", target, Some("Bearer tok")).with_body(body.as_bytes());
    api.handle_stores(stores, &request, at(100).secs_f64())
}

/// `body` with the `reason` every write needs (the write path's, not the handler's): added
/// to a JSON object or an empty body; anything else is sent as it is (a bad body stays bad).
fn with_reason(body: &str) -> String {
    if body.trim().is_empty() {
        return r#"{"reason": "test"}"#.to_owned();
    }
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut fields)) if !fields.contains_key("reason") => {
            fields.insert("reason".into(), "test".into());
            serde_json::Value::Object(fields).to_string()
        }
        _ => body.to_owned(),
    }
}

fn snapshot(s: &MemoryWorkspaceStorage) -> String {
    let ws = WorkspaceRef::new("acme", "prod");
    let log: Vec<String> = s
        .read(&ws, &LogQuery::new())
        .unwrap()
        .iter()
        .map(|e| format!("{}{:?}", e.id, e.event))
        .collect();
    let runs: Vec<String> = s
        .runs(&ws, &Default::default())
        .unwrap()
        .iter()
        .map(Run::to_json)
        .collect();
    let progress: Vec<String> = s
        .progress(&ws)
        .unwrap()
        .iter()
        .map(|(n, p)| format!("{n}{}", p.to_json()))
        .collect();
    let rules: Vec<String> = s
        .stored_rules(&ws)
        .unwrap()
        .iter()
        .map(|r| format!("{}{:?}", r.version, r.rule))
        .collect();
    let leases: Vec<String> = s.leases(&ws).unwrap().iter().map(|l| format!("{l:?}")).collect();
    format!("{log:?}{runs:?}{progress:?}{rules:?}{leases:?}")
}

fn code(r: &ApiResponse) -> (u16, &Value) {
    (r.status, &r.body["error"]["code"])
}

const W: &str = "/api/workspaces/acme/prod";

#[test]
fn each_action_writes_what_reflexr_writes() {
    let s = storage();
    let ws = WorkspaceRef::new("acme", "prod");
    let r = post(&s, &format!("{W}/runs/r1/retry"), "{}");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (r.body["run"]["status"].clone(), r.body["run"]["attempts"].clone()),
        (json!("pending"), json!(0))
    );
    let fact = s
        .envelope(&ws, r.body["fact"].as_str().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(fact.event["type"], json!("reflexr:run_requeued"));
    // the single --token is the admin token named "token"
    assert_eq!(
        fact.actor,
        serde_json::json!({"kind": "system", "name": "execstore-monitor (token)"})
    );

    let r = post(&s, &format!("{W}/runs/retry-dead"), r#"{"rule": "page"}"#);
    assert_eq!(
        (r.status, r.body["retried"].clone()),
        (200, json!(1)),
        "{}",
        r.body
    );
    assert_eq!(s.run(&ws, "r2").unwrap().unwrap().status().as_str(), "pending");

    let r = post(
        &s,
        &format!("{W}/dead-letters/replay"),
        r#"{"rule": "page", "seq": 2, "mode": "refire"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["replayed"][0]["from_seq"], json!(1));
    assert_eq!(r.body["replayed"][0]["generation"], json!(2));
    let r = post(&s, &format!("{W}/dead-letters/replay-all"), "{}");
    assert_eq!(
        (r.status, r.body["replayed"][0]["generation"].clone()),
        (200, json!(3)),
        "{}",
        r.body
    );

    let r = post(&s, &format!("{W}/leases/run%3Aold/release"), "{}");
    assert_eq!(
        (r.status, r.body["holder"].clone()),
        (200, json!("gone-worker")),
        "{}",
        r.body
    );
    assert!(s.leases(&ws).unwrap().iter().all(|l| l.key != "run:old"));

    let r = post(&s, &format!("{W}/rules/page/pause?expected_version=1"), "{}");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (
            r.body["version"].clone(),
            r.body["enabled"].clone(),
            r.body["changed"].clone()
        ),
        (json!(2), json!(false), json!(true))
    );
    let r = post(&s, &format!("{W}/rules/page/pause"), "{}");
    assert_eq!(
        (r.body["version"].clone(), r.body["changed"].clone()),
        (json!(2), json!(false))
    );
    let r = post(
        &s,
        &format!("{W}/rules/page/resume?expected_version=2"),
        r#"{"reason": "done"}"#,
    );
    assert_eq!(
        (r.body["version"].clone(), r.body["enabled"].clone()),
        (json!(3), json!(true)),
        "{}",
        r.body
    );
}

#[test]
fn refusals_change_nothing() {
    let s = storage();
    let before = snapshot(&s);
    let cases: &[(&str, &str, u16, &str)] = &[
        ("/api/workspaces/acme/nope/runs/r1/retry", "{}", 404, "NOT_FOUND"),
        ("/runs/nope/retry", "{}", 404, "NOT_FOUND"),
        ("/runs/r3/retry", "{}", 400, "INVALID_INPUT"),
        ("/runs/r1/retry", "[]", 400, "INVALID_INPUT"),
        ("/runs/r1/retry", r#"{"x": 1}"#, 400, "INVALID_INPUT"),
        ("/runs/r1/retry?x=1", "{}", 400, "BAD_REQUEST"),
        ("/runs/retry-dead", r#"{"rule": 5}"#, 400, "INVALID_INPUT"),
        (
            "/dead-letters/replay",
            r#"{"rule": "page", "seq": 3}"#,
            404,
            "NOT_FOUND",
        ),
        (
            "/dead-letters/replay",
            r#"{"rule": "page"}"#,
            400,
            "INVALID_INPUT",
        ),
        ("/dead-letters/replay", r#"{"seq": 2}"#, 400, "INVALID_INPUT"),
        (
            "/dead-letters/replay",
            r#"{"rule": "page", "seq": 2, "mode": "again"}"#,
            400,
            "INVALID_INPUT",
        ),
        ("/dead-letters/replay-all", r#"{"mode": 1}"#, 400, "INVALID_INPUT"),
        ("/leases/run%3Alive/release", "{}", 400, "INVALID_INPUT"),
        ("/leases/nope/release", "{}", 404, "NOT_FOUND"),
        ("/rules/page/pause?expected_version=7", "{}", 409, "CONFLICT"),
        ("/rules/nope/pause", "{}", 404, "NOT_FOUND"),
        ("/rules/page/pause?expected_version=x", "{}", 400, "BAD_REQUEST"),
        ("/rules/page/resume", "not json", 400, "INVALID_INPUT"),
    ];
    for (path, body, status, want) in cases {
        let target = if path.starts_with("/api") {
            (*path).to_owned()
        } else {
            format!("{W}{path}")
        };
        let r = post(&s, &target, body);
        assert_eq!(code(&r), (*status, &json!(want)), "{target} {body}: {}", r.body);
        assert_eq!(snapshot(&s), before, "{target} {body}: nothing changed");
    }
    let read_only = MonitorApi::new(serde_json::Map::new(), None);
    let stores = Stores {
        executions: None,
        workspaces: Some(&s),
    };
    let r = read_only.handle_stores(
        stores,
        &ApiRequest::from_target("POST", &format!("{W}/runs/r1/retry"), None),
        0.0,
    );
    assert_eq!(r.status, 403);
    assert_eq!(snapshot(&s), before);
}
