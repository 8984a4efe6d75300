//! `GET /api/executions/{id}/bundle`: the archive bundle `purge` writes, read from a live
//! execution (so a download is a backup), the same JSON the purge hands its archiver.

use execstore::executions::{control, Status};
use execstore::{Execution, ExecutionStore, MemoryStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{json, Map, Value};

const NOW: f64 = 1_767_225_600.0;

/// `r` (RUNNING) with a region child `r:a` (found by its id, as harel's purge finds it), each with a trace step; `done` (DONE) alone.
fn store() -> MemoryStore {
    let store = MemoryStore::new();
    let mut root = Execution::new("r", "orders");
    root.status = Status::Running;
    root.context.insert("customer".into(), json!("c-17"));
    store.save(&mut root).unwrap();
    let mut child = Execution::new("r:a", "orders");
    child.status = Status::Running;
    child.parent_id = Some("r".into());
    store.save(&mut child).unwrap();
    let mut done = Execution::new("done", "orders");
    done.status = Status::Done;
    store.save(&mut done).unwrap();
    for id in ["r", "r:a", "done"] {
        let step = json!({"event_kind": "go", "from_path": "a", "to_path": "b"});
        store.append_trace(id, step.as_object().unwrap()).unwrap();
    }
    store
}

fn get(store: &MemoryStore, target: &str) -> (u16, Value) {
    let api = MonitorApi::new(Map::new(), None);
    let r = api.handle(store, &ApiRequest::from_target("GET", target, None), NOW);
    (r.status, r.body)
}

#[test]
fn a_live_tree_downloads_as_the_bundle_purge_would_write() {
    let store = store();
    let (status, body) = get(&store, "/api/executions/r/bundle");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["root_id"], "r");
    let ids: Vec<&str> = body["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r", "r:a"], "root first, then its child");
    assert_eq!(body["executions"][0]["context"]["customer"], "c-17");
    assert_eq!(body["traces"]["r:a"][0]["event_kind"], "go");
    assert_eq!(
        store.load("r").unwrap().map(|e| e.status),
        Some(Status::Running),
        "reading a bundle changes nothing"
    );
}

#[test]
fn the_bundle_is_byte_for_byte_what_purge_archives() {
    let store = store();
    let (status, body) = get(&store, "/api/executions/done/bundle");
    assert_eq!(status, 200, "{body}");
    let mut archived = None;
    let mut keep = |b: &Value| {
        archived = Some(b.clone());
        Ok(())
    };
    control::purge(&store, "done", None, Some(&mut keep)).unwrap();
    assert_eq!(
        serde_json::to_string(&body).unwrap(),
        serde_json::to_string(&archived.unwrap()).unwrap()
    );
}

#[test]
fn unknown_and_bad_ids_and_parameters_are_refused() {
    let store = store();
    let (status, body) = get(&store, "/api/executions/nope/bundle");
    assert_eq!((status, &body["error"]["code"]), (404, &json!("NOT_FOUND")));
    let (status, _) = get(&store, "/api/executions/r/bundle?pretty=1");
    assert_eq!(status, 400, "an unknown parameter");
    let (status, _) = get(&store, "/api/executions/%FF/bundle");
    assert_eq!(status, 400);
}
