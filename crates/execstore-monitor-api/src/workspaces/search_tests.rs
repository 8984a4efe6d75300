//! `?where=` on a workspace's log and runs, and the workspace suggestions, over a memory
//! store: the answers, the bounded scan and its cursor, and bad queries as 400s.

use std::sync::Arc;

use execstore::workspace::WorkspaceStorage;
use execstore::workspace::{
    Entry, ManualClock, MemoryWorkspaceStorage, NewRun, Run, Timestamp, WorkspaceRef,
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

/// shop/main: 100 envelopes (`service` auth on every 10th, `amount` = seq), 30 runs, each
/// fired by envelope `3 * i + 1`, every third dead, scope `{"customer": "c-<i % 3>"}`.
fn storage() -> MemoryWorkspaceStorage {
    let s = MemoryWorkspaceStorage::new(Arc::new(ManualClock::new(at(0))));
    let ws = WorkspaceRef::new("shop", "main");
    let mut tx = s.begin(&ws).unwrap();
    let entries: Vec<Entry> = (1..=100)
        .map(|i| {
            let service = if i % 10 == 0 { "auth" } else { "web" };
            Entry::new(
                format!("e{i}"),
                json!({"kind": "source", "name": "m"}),
                obj(json!({"type": "shop:hit", "service": service, "amount": i})),
            )
        })
        .collect();
    tx.append(&entries).unwrap();
    let runs: Vec<Run> = (0..30)
        .map(|i| {
            let r = Run::pending(NewRun {
                id: format!("r{i:02}"),
                rule: "bill".into(),
                scope_key: format!("k{i}"),
                scope: obj(json!({"customer": format!("c-{}", i % 3)})),
                fired_seq: 3 * i + 1,
                matched: vec![3 * i + 1],
                correlation_id: "x".into(),
                depth: 0,
                now: at(i),
            })
            .unwrap();
            if i % 3 == 0 {
                r.with(obj(json!({"status": "dead"}))).unwrap()
            } else {
                r
            }
        })
        .collect();
    tx.save_runs(&runs).unwrap();
    tx.commit().unwrap();
    s
}

fn get(s: &MemoryWorkspaceStorage, target: &str) -> ApiResponse {
    let stores = Stores {
        executions: None,
        workspaces: Some(s),
    };
    MonitorApi::new(serde_json::Map::new(), None).handle_stores(
        stores,
        &ApiRequest::from_target("GET", target, None),
        at(3600).secs_f64(),
    )
}

fn ok(s: &MemoryWorkspaceStorage, target: &str) -> Value {
    let a = get(s, target);
    assert_eq!(a.status, 200, "{target}: {:?}", a.body);
    a.body
}

fn seqs(body: &Value) -> Vec<i64> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect()
}

fn run_ids(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["run"]["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_log_filters_by_the_events_fields_within_a_bounded_scan() {
    let s = storage();
    let log = "/api/workspaces/shop/main/log";
    let b = ok(&s, &format!("{log}?where=event.service%20%3D%20auth"));
    assert_eq!(seqs(&b), [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    assert_eq!(b["search"]["scanned"], 100);
    assert_eq!(b["search"]["done"], true);
    let b = ok(&s, &format!("{log}?where=event.amount%20%3E%2095"));
    assert_eq!(seqs(&b), [96, 97, 98, 99, 100]);
    // A scan of 25: seqs 1..=25 examined, two matches, go on after 25.
    let b = ok(&s, &format!("{log}?where=event.service%3Dauth&scan=25"));
    assert_eq!(seqs(&b), [10, 20]);
    assert_eq!(
        (b["search"]["scanned"].clone(), b["search"]["scanned_to"].clone()),
        (json!(25), json!(25))
    );
    assert_eq!(b["next_after"], 25);
    let b = ok(&s, &format!("{log}?where=event.service%3Dauth&scan=25&after=25"));
    assert_eq!(seqs(&b), [30, 40, 50]);
    // The tail (last): newest first from the head, items oldest first.
    let b = ok(&s, &format!("{log}?where=event.service%3Dauth&last=3"));
    assert_eq!(seqs(&b), [80, 90, 100]);
    assert_eq!(b["next_before"], 80);
    let b = ok(&s, &format!("{log}?where=event.service%3Dauth&last=3&before=80"));
    assert_eq!(seqs(&b), [50, 60, 70]);
    // With the type parameter: both hold.
    let b = ok(&s, &format!("{log}?where=event.amount%3C3&type=shop:hit,other"));
    assert_eq!(seqs(&b), [1, 2]);
    let b = ok(&s, &format!("{log}?where=event.amount%3C3&type=other"));
    assert_eq!(seqs(&b), Vec::<i64>::new());
}

#[test]
fn runs_filter_by_scope_status_and_the_firing_event() {
    let s = storage();
    let runs = "/api/workspaces/shop/main/runs";
    // Fired by e10 (r03), e40 (r13), e70 (r23), e100 (r33 does not exist): newest first.
    let b = ok(&s, &format!("{runs}?where=event.service%3Dauth"));
    assert_eq!(run_ids(&b), ["r23", "r13", "r03"]);
    let b = ok(
        &s,
        &format!("{runs}?where=scope.customer%3Dc-0%20and%20status%3Ddead&limit=4"),
    );
    assert_eq!(run_ids(&b), ["r27", "r24", "r21", "r18"]);
    let next = b["next_cursor"].as_str().unwrap().to_owned();
    let b = ok(
        &s,
        &format!("{runs}?where=scope.customer%3Dc-0%20and%20status%3Ddead&limit=4&cursor={next}"),
    );
    assert_eq!(run_ids(&b), ["r15", "r12", "r09", "r06"]);
    // The status parameter joins the query; each item keeps the listing's shape.
    let b = ok(&s, &format!("{runs}?where=rule%20exists&status=dead&scan=5"));
    assert_eq!(run_ids(&b), ["r27"]);
    assert_eq!(b["search"]["scanned"], 5);
    assert!(b["next_cursor"].is_string());
    assert!(b["items"][0].get("due").is_some() && b["items"][0].get("held_by").is_some());
    // An offset cursor of the plain listing is not a cursor of the search.
    let plain = ok(&s, &format!("{runs}?limit=2"));
    let c = plain["next_cursor"].as_str().unwrap();
    assert_eq!(
        get(&s, &format!("{runs}?where=rule%20exists&cursor={c}")).status,
        400
    );
}

#[test]
fn bad_queries_are_400s_naming_the_position() {
    let s = storage();
    for (target, says) in [
        (
            "/api/workspaces/shop/main/log?where=event.service%20%3D",
            "at character 16",
        ),
        (
            "/api/workspaces/shop/main/log?where=status%3Drunning",
            "unknown path status",
        ),
        (
            "/api/workspaces/shop/main/runs?where=status%3Dsleeping",
            "none of",
        ),
        (
            "/api/workspaces/shop/main/runs?where=context.x%3D1",
            "unknown path context.x",
        ),
        ("/api/workspaces/shop/main/log?where=seq%3E1&scan=0", "scan"),
    ] {
        let a = get(&s, target);
        assert_eq!(a.status, 400, "{target}: {:?}", a.body);
        let message = a.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{target}: {message}");
    }
    assert_eq!(s.head_seq(&WorkspaceRef::new("shop", "main")).unwrap(), 100);
}

#[test]
fn suggestions_sample_the_newest_records() {
    let s = storage();
    let b = ok(&s, "/api/workspaces/shop/main/suggest?of=log&path=event.");
    let paths: Vec<&str> = b["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"event.service") && paths.contains(&"event.amount"),
        "{paths:?}"
    );
    let b = ok(&s, "/api/workspaces/shop/main/suggest?of=log&path=event.service");
    assert_eq!(b["values"][0], json!({"value": "\"web\"", "count": 90}));
    let b = ok(
        &s,
        "/api/workspaces/shop/main/suggest?of=runs&path=scope.customer",
    );
    assert_eq!(b["values"].as_array().unwrap().len(), 3);
    assert_eq!(get(&s, "/api/workspaces/shop/main/suggest?of=nope").status, 400);
}
