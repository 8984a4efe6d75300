//! The recovery endpoints: success, unknown id, stale version, bad body (which changes
//! nothing), on the memory store.

use execstore::executions::{Effects, Status};
use execstore::{Execution, ExecutionStore, MemoryStore};
use serde_json::{json, Map, Value};

use crate::{ApiRequest, ApiResponse, MonitorApi};

const NOW: f64 = 1_800_000_000.0;
const AUTH: Option<&str> = Some("Bearer tok");

fn api() -> MonitorApi {
    MonitorApi::new(Map::new(), Some("tok"))
}

fn post(store: &MemoryStore, target: &str, body: &str) -> ApiResponse {
    let body = with_reason(body);
    api().handle(
        store,
        &ApiRequest::from_target("POST", target, AUTH).with_body(body.as_bytes()),
        NOW,
    )
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

fn get(store: &MemoryStore, target: &str) -> ApiResponse {
    api().handle(store, &ApiRequest::from_target("GET", target, AUTH), NOW)
}

fn code(r: &ApiResponse) -> (u16, &Value) {
    (r.status, &r.body["error"]["code"])
}

fn put(store: &MemoryStore, id: &str, status: Status) -> Execution {
    let mut exe = Execution::new(id, "order");
    exe.status = status;
    exe.root_path = "order".into();
    exe.active_path = Some("order.pay".into());
    store.save(&mut exe).unwrap();
    exe
}

/// Everything the store holds that a recovery action could change.
fn snapshot(store: &MemoryStore) -> Value {
    let ids = ["run", "done", "failed"];
    json!({
        "executions": ids.iter().map(|id| serde_json::to_value(store.load(id).unwrap()).unwrap()).collect::<Vec<_>>(),
        "outbox": serde_json::to_value(store.pending_outbox(None, 1000).unwrap()).unwrap(),
    })
}

fn store() -> MemoryStore {
    let store = MemoryStore::new();
    put(&store, "run", Status::Running);
    put(&store, "done", Status::Done);
    let mut failed = put(&store, "failed", Status::Failed);
    // Its trace: order.cart -> order.pay.charge (where it failed).
    for (from, to) in [(None, "order.cart"), (Some("order.cart"), "order.pay.charge")] {
        let step = json!({"event_kind": "x", "from_path": from, "to_path": to});
        let Value::Object(step) = step else { unreachable!() };
        store.commit(&mut failed, &Effects::new().trace(step)).unwrap();
    }
    failed.error = Some("boom".into());
    store.save(&mut failed).unwrap();
    store
}

#[test]
fn send_enqueues_the_event_for_the_relay() {
    let store = store();
    let r = post(
        &store,
        "/api/executions/run/send?expected_version=1",
        r#"{"event": {"name": "Approve", "data": {"by": "ops"}, "id": "ev-1"}}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let outbox = store.pending_outbox(None, 10).unwrap();
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0].target_id.as_deref(), Some("run"));
    assert_eq!(
        (outbox[0].event.id.as_str(), outbox[0].event.kind.as_str()),
        ("ev-1", "Approve")
    );
    assert_eq!(outbox[0].event.data["by"], json!("ops"));
    assert_eq!(r.body["seq"], json!(outbox[0].seq));
    assert_eq!(store.load("run").unwrap().unwrap().version, 1, "no step");

    // Without an id, one is made; two sends differ; a `reason` is the write path's.
    let a = post(
        &store,
        "/api/executions/run/send",
        r#"{"event": {"name": "Ping"}, "reason": "x"}"#,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let id = a.body["event"]["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32);
    let b = api().handle(
        &store,
        &ApiRequest::from_target("POST", "/api/executions/run/send", AUTH)
            .with_body(br#"{"event": {"name": "Ping"}, "reason": "test"}"#),
        NOW + 1.0,
    );
    assert_ne!(b.body["event"]["id"], json!(id));
    assert_eq!(store.pending_outbox(None, 10).unwrap().len(), 3);
}

#[test]
fn send_refusals_change_nothing() {
    let store = store();
    let before = snapshot(&store);
    let ok = r#"{"event": {"name": "Approve"}}"#;
    let cases: &[(&str, &str, u16, &str)] = &[
        ("/api/executions/nope/send", ok, 404, "NOT_FOUND"),
        ("/api/executions/run/send?expected_version=7", ok, 409, "CONFLICT"),
        ("/api/executions/done/send", ok, 400, "INVALID_INPUT"),
        ("/api/executions/failed/send", ok, 400, "INVALID_INPUT"),
        (
            "/api/executions/run/send?expected_version=x",
            ok,
            400,
            "BAD_REQUEST",
        ),
        ("/api/executions/run/send", "", 400, "INVALID_INPUT"),
        ("/api/executions/run/send", "nope", 400, "INVALID_INPUT"),
        ("/api/executions/run/send", "[1]", 400, "INVALID_INPUT"),
        ("/api/executions/run/send", "{}", 400, "INVALID_INPUT"),
        (
            "/api/executions/run/send",
            r#"{"event": "Approve"}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {}}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {"name": ""}}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {"name": 7}}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {"name": "A", "data": [1]}}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {"name": "A", "id": ""}}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {"name": "A", "kind": "B"}}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {"name": "Cancel"}}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/run/send",
            r#"{"event": {"name": "A"}, "extra": 1}"#,
            400,
            "INVALID_INPUT",
        ),
    ];
    for (target, body, status, want) in cases {
        let r = post(&store, target, body);
        assert_eq!(code(&r), (*status, &json!(want)), "{target} {body}: {}", r.body);
        assert_eq!(snapshot(&store), before, "{target} {body}: nothing changed");
    }
    let big = json!({"event": {"name": "A", "data": {"x": "y".repeat(super::MAX_EVENT_DATA)}}}).to_string();
    assert_eq!(code(&post(&store, "/api/executions/run/send", &big)).0, 400);
    let read_only = MonitorApi::new(Map::new(), None);
    let r = read_only.handle(
        &store,
        &ApiRequest::from_target("POST", "/api/executions/run/send", None).with_body(ok.as_bytes()),
        NOW,
    );
    assert_eq!(r.status, 403);
    assert_eq!(snapshot(&store), before);
}

#[test]
fn retry_redrives_a_failed_execution_to_a_state_its_trace_shows() {
    let store = store();
    let r = get(&store, "/api/executions/failed/retry-targets");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["targets"], json!(["order.cart", "order.pay.charge"]));
    assert_eq!(r.body["retryable"], json!(true));
    let version = store.load("failed").unwrap().unwrap().version;

    let before = snapshot(&store);
    let cases: &[(String, &str, u16, &str)] = &[
        (
            "/api/executions/nope/retry".into(),
            r#"{"target_path": "order.cart"}"#,
            404,
            "NOT_FOUND",
        ),
        (
            format!("/api/executions/failed/retry?expected_version={}", version - 1),
            r#"{"target_path": "order.cart"}"#,
            409,
            "CONFLICT",
        ),
        (
            "/api/executions/failed/retry".into(),
            r#"{"target_path": "order.pay"}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/failed/retry".into(),
            r#"{"target_path": "order.elsewhere"}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/failed/retry".into(),
            r#"{}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/failed/retry".into(),
            r#"{"target_path": 3}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/failed/retry".into(),
            r#"{"target_path": "order.cart", "x": 1}"#,
            400,
            "INVALID_INPUT",
        ),
        (
            "/api/executions/failed/retry".into(),
            "not json",
            400,
            "INVALID_INPUT",
        ),
    ];
    for (target, body, status, want) in cases {
        let r = post(&store, target, body);
        assert_eq!(code(&r), (*status, &json!(want)), "{target} {body}: {}", r.body);
        assert_eq!(snapshot(&store), before, "{target} {body}: nothing changed");
    }

    let r = post(
        &store,
        &format!("/api/executions/failed/retry?expected_version={version}"),
        r#"{"target_path": "order.cart"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["changed"][0]["to"], json!("RUNNING"));
    let exe = store.load("failed").unwrap().unwrap();
    assert_eq!(
        (exe.status, exe.active_path.as_deref(), exe.error),
        (Status::Running, Some("order.cart"), None)
    );
    assert_eq!(exe.updated_at, Some(NOW));
    // Not FAILED any more: harel's no-op.
    let r = post(
        &store,
        "/api/executions/failed/retry",
        r#"{"target_path": "order.cart"}"#,
    );
    assert_eq!((r.status, &r.body["changed"]), (200, &json!([])));
}

fn many() -> MemoryStore {
    let store = MemoryStore::new();
    for i in 0..25 {
        let status = if i % 5 == 0 { Status::Done } else { Status::Running };
        let mut exe = Execution::new(format!("m{i:02}"), if i % 2 == 0 { "even" } else { "odd" });
        exe.status = status;
        store.save(&mut exe).unwrap();
    }
    store
}

fn statuses(store: &MemoryStore) -> Vec<Status> {
    (0..25)
        .map(|i| store.load(&format!("m{i:02}")).unwrap().unwrap().status)
        .collect()
}

#[test]
fn bulk_matching_counts_then_acts_on_every_match() {
    let store = many();
    let before = statuses(&store);
    let r = post(
        &store,
        "/api/control/suspend/matching?status=RUNNING&definition=even&dry_run=true",
        "{}",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // Even i in 0..25 = 13, minus the DONE ones (0, 10, 20) = 10.
    assert_eq!(
        (r.body["matching"].clone(), r.body["over_limit"].clone()),
        (json!(10), json!(false))
    );
    assert_eq!(statuses(&store), before, "a dry run changes nothing");

    let r = post(
        &store,
        "/api/control/suspend/matching?status=RUNNING&definition=even&max=9",
        "{}",
    );
    assert_eq!(code(&r), (400, &json!("INVALID_INPUT")), "{}", r.body);
    assert_eq!(statuses(&store), before, "over the cap: nothing changed");
    let r = post(
        &store,
        "/api/control/suspend/matching?status=RUNNING&definition=even&max=9&dry_run=1",
        "{}",
    );
    assert_eq!(
        (r.body["matching"].clone(), r.body["over_limit"].clone()),
        (json!(9), json!(true))
    );

    let r = post(
        &store,
        "/api/control/suspend/matching?status=RUNNING&definition=even",
        r#"{"reason": "x"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["matching"], json!(10));
    assert_eq!(
        r.body["summary"],
        json!({"changed": 10, "unchanged": 0, "covered": 0, "failed": {}})
    );
    assert_eq!(r.body["results"].as_array().unwrap().len(), 10);
    for (i, s) in statuses(&store).into_iter().enumerate() {
        let want = if i % 5 == 0 {
            Status::Done
        } else if i % 2 == 0 {
            Status::Suspended
        } else {
            Status::Running
        };
        assert_eq!(s, want, "m{i:02}");
    }
    // A region its parent's action already moved is covered, not a conflict of its own.
    let tree = MemoryStore::new();
    for (id, parent) in [("p", None), ("p:r1", Some("p")), ("p:r2", Some("p"))] {
        let mut exe = Execution::new(id, "tree");
        exe.status = Status::Running;
        exe.parent_id = parent.map(str::to_owned);
        if parent.is_none() {
            for kid in ["p:r1", "p:r2"] {
                exe.children.insert(
                    kid.into(),
                    execstore::executions::ChildState::region("tree.r", kid),
                );
            }
        }
        tree.save(&mut exe).unwrap();
    }
    let r = post(&tree, "/api/control/suspend/matching?status=RUNNING", "{}");
    assert_eq!(
        r.body["summary"],
        json!({"changed": 1, "unchanged": 0, "covered": 2, "failed": {}}),
        "{}",
        r.body
    );
    assert_eq!(
        r.body["results"][1],
        json!({"id": "p:r1", "ok": true, "changed": [], "covered": true})
    );
    for id in ["p", "p:r1", "p:r2"] {
        assert_eq!(tree.load(id).unwrap().unwrap().status, Status::Suspended, "{id}");
    }

    // The id prefix filter (`q`) comes along too.
    let r = post(
        &store,
        "/api/control/terminate/matching?q=m1&status=RUNNING",
        "{}",
    );
    assert_eq!(r.body["matching"], json!(4), "{}", r.body); // m11 m13 m17 m19 (m15 DONE, evens suspended)
}

#[test]
fn bulk_matching_bad_input_changes_nothing() {
    let store = many();
    let before = statuses(&store);
    for (target, body) in [
        ("/api/control/suspend/matching?status=NOPE", "{}"),
        ("/api/control/suspend/matching?limit=5", "{}"),
        ("/api/control/suspend/matching?max=0", "{}"),
        ("/api/control/suspend/matching?max=10001", "{}"),
        ("/api/control/suspend/matching?dry_run=maybe", "{}"),
        ("/api/control/suspend/matching", r#"{"targets": []}"#),
        ("/api/control/suspend/matching", "[]"),
    ] {
        let r = post(&store, target, body);
        assert_eq!(r.status, 400, "{target} {body}: {}", r.body);
        assert_eq!(statuses(&store), before, "{target}");
    }
    let r = api().handle(
        &store,
        &ApiRequest::from_target("POST", "/api/control/suspend/matching", None),
        NOW,
    );
    assert_eq!(r.status, 401);
    assert_eq!(statuses(&store), before);
}
