//! The figures against what the stores hold, the ring's period, size and rates, and the
//! endpoint with and without a ring. The Prometheus text is parsed by Prometheus' own parser
//! in tests/prometheus.rs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::{
    Entry, EvaluationError, ManualClock, MemoryWorkspaceStorage, NewRun, Run, Timestamp, WorkspaceRef,
    WorkspaceStorage,
};
use execstore::{Effects, Execution, ExecutionStore, MemoryStore};
use serde_json::{json, Map, Value};

use super::*;
use crate::{ApiRequest, MonitorApi, Stores};

/// 2026-01-01T12:00:00Z.
const NOW: f64 = 1_767_268_800.0;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn exe(id: &str, definition: &str, status: &str, created: f64, finished: Option<f64>) -> Execution {
    serde_json::from_value(json!({
        "id": id, "definition_id": definition, "status": status,
        "created_at": created, "updated_at": finished.unwrap_or(created), "finished_at": finished,
    }))
    .unwrap()
}

/// Three executions of two definitions (one started and one finished in the last minute),
/// two outbox entries (the oldest created 90 s ago), a timer 5 s overdue and one to come,
/// and a spawn intent.
fn store() -> MemoryStore {
    let store = MemoryStore::new();
    for mut e in [
        exe("a1", "orders", "RUNNING", NOW - 30.0, None),
        exe("a2", "orders", "DONE", NOW - 300.0, Some(NOW - 10.0)),
        exe("b1", "billing", "FAILED", NOW - 500.0, Some(NOW - 400.0)),
    ] {
        store.save(&mut e).unwrap();
    }
    let mut a1 = store.load("a1").unwrap().unwrap();
    let mut old = execstore::executions::Event::new("ev1", "ping");
    old.created_time = Some("2026-01-01T11:58:30Z".into());
    let fx = Effects::new()
        .emit(Some("b1"), old)
        .emit(None, execstore::executions::Event::new("ev2", "pong"))
        .schedule("t.late", NOW - 5.0)
        .schedule("t.later", NOW + 100.0)
        .spawn("a1.child", "r", Map::new());
    store.commit(&mut a1, &fx).unwrap();
    store
}

fn run(id: &str, status: &str) -> Run {
    let pending = Run::pending(NewRun {
        id: id.into(),
        rule: "page".into(),
        scope_key: id.into(),
        scope: obj(json!({ "k": id })),
        fired_seq: 1,
        matched: vec![1],
        correlation_id: "e1".into(),
        depth: 0,
        now: Timestamp::from_secs_f64(NOW - 60.0).unwrap(),
    })
    .unwrap();
    pending.with(obj(json!({ "status": status }))).unwrap()
}

/// acme/prod: 3 envelopes, a cursor at 1, runs (2 pending, 1 dead), a dead letter, two
/// leases of which one lapsed; the clock at NOW.
fn workspaces() -> (MemoryWorkspaceStorage, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs_f64(NOW - 100.0).unwrap()));
    let s = MemoryWorkspaceStorage::new(clock.clone());
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&ws).unwrap();
    let entries: Vec<Entry> = (1..=3)
        .map(|i| {
            Entry::new(
                format!("e{i}"),
                json!({"kind": "source"}),
                obj(json!({"type": "x"})),
            )
        })
        .collect();
    tx.append(&entries).unwrap();
    tx.save_runs(&[run("r1", "pending"), run("r2", "pending"), run("r3", "dead")])
        .unwrap();
    tx.dead_letter(&[EvaluationError::new("page", 2, "KeyError")])
        .unwrap();
    tx.commit().unwrap();
    s.save_cursor(&ws, "exporter", 1).unwrap();
    assert!(s
        .acquire_lease(&ws, "run:r9", "w1", Duration::from_secs(10))
        .unwrap());
    assert!(s
        .acquire_lease(&ws, "other", "w2", Duration::from_secs(3600))
        .unwrap());
    clock.set(Timestamp::from_secs_f64(NOW).unwrap());
    (s, clock)
}

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = execstore::executions::Status::ALL
        .iter()
        .map(|s| (s.as_str().to_owned(), 0))
        .collect();
    for (k, v) in pairs {
        out.insert((*k).to_owned(), *v);
    }
    out
}

#[test]
fn a_snapshot_counts_what_the_stores_hold() {
    let store = store();
    let (log, _clock) = workspaces();
    let stores = Stores {
        executions: Some(&store),
        workspaces: Some(&log),
    };
    let s = snapshot::take(stores, NOW, &Default::default(), DEFINITION_COUNTS_MAX).unwrap();
    assert_eq!(s.at, NOW);
    assert!(s.truncated.is_empty(), "{:?}", s.truncated);
    let e = s.executions.unwrap();
    assert_eq!(e.by_status, counts(&[("RUNNING", 1), ("DONE", 1), ("FAILED", 1)]));
    assert_eq!(
        e.by_definition,
        BTreeMap::from([
            ("billing".to_owned(), counts(&[("FAILED", 1)])),
            ("orders".to_owned(), counts(&[("RUNNING", 1), ("DONE", 1)])),
        ])
    );
    // a1 was created 30 s ago (a2 300 s ago); a2 finished 10 s ago (b1 400 s ago). The
    // commit moved a1's updated_at, not its created_at.
    assert_eq!(e.started_last_minute, BTreeMap::from([("orders".to_owned(), 1)]));
    assert_eq!(
        e.finished_last_minute,
        BTreeMap::from([("orders".to_owned(), BTreeMap::from([("DONE".to_owned(), 1)]))])
    );
    assert_eq!(e.outbox_depth, 2);
    assert_eq!(e.outbox_oldest_age_seconds, Some(90.0));
    assert_eq!(e.spawns_pending, 1);
    assert_eq!((e.timers_armed, e.timers_due), (2, 1));
    assert_eq!(e.timer_lag_seconds, 5.0);
    let ws = s.workspaces.unwrap();
    assert_eq!(ws.len(), 1);
    let w = &ws[0];
    assert_eq!((w.tenant.as_str(), w.workspace.as_str()), ("acme", "prod"));
    assert_eq!(w.head_seq, 3);
    assert_eq!(w.cursor_lag, BTreeMap::from([("exporter".to_owned(), 2)]));
    assert_eq!(w.runs["pending"], 2);
    assert_eq!(w.runs["dead"], 1);
    assert_eq!(w.runs["succeeded"], 0);
    assert_eq!(w.runs.len(), execstore::workspace::RunStatus::ALL.len());
    assert_eq!(w.due_runs, 2);
    assert_eq!(w.dead_letters, 1);
    assert_eq!((w.leases, w.lapsed_leases), (2, 1));
    assert_eq!(w.log_rate_per_minute, None);
}

#[test]
fn an_empty_store_is_all_zeros_and_no_oldest_entry() {
    let store = MemoryStore::new();
    let stores = Stores {
        executions: Some(&store),
        workspaces: None,
    };
    let s = snapshot::take(stores, NOW, &Default::default(), DEFINITION_COUNTS_MAX).unwrap();
    assert_eq!(s.workspaces, None);
    let e = s.executions.unwrap();
    assert_eq!(e.by_status, counts(&[]));
    assert!(e.by_definition.is_empty());
    assert_eq!((e.outbox_depth, e.outbox_oldest_age_seconds), (0, None));
    assert_eq!((e.timers_armed, e.timers_due, e.timer_lag_seconds), (0, 0, 0.0));
}

fn get(api: &MonitorApi, stores: Stores<'_>, target: &str, now: f64) -> crate::ApiResponse {
    api.handle_stores(stores, &ApiRequest::from_target("GET", target, None), now)
}

#[test]
fn the_ring_keeps_its_size_and_rates_follow_the_log() {
    let store = MemoryStore::new();
    let (log, _clock) = workspaces();
    let stores = Stores {
        executions: Some(&store),
        workspaces: Some(&log),
    };
    let api = MonitorApi::new(Map::new(), None).with_metrics(MetricsConfig {
        period_seconds: 10.0,
        keep: 3,
        ..MetricsConfig::default()
    });
    assert!(api.sample_metrics(stores, NOW).unwrap());
    // Half a period later: not a sample (two samplers would make rates of noise).
    assert!(!api.sample_metrics(stores, NOW + 4.0).unwrap());
    // 6 envelopes in 10 s: 36 a minute.
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = log.begin(&ws).unwrap();
    let more: Vec<Entry> = (4..=9)
        .map(|i| {
            Entry::new(
                format!("e{i}"),
                json!({"kind": "source"}),
                obj(json!({"type": "x"})),
            )
        })
        .collect();
    tx.append(&more).unwrap();
    tx.commit().unwrap();
    assert!(api.sample_metrics(stores, NOW + 10.0).unwrap());
    let answer = get(&api, stores, "/api/metrics", NOW + 11.0);
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let samples = answer.body["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    assert_eq!(answer.body["live"], true);
    assert_eq!(answer.body["period"], 10.0);
    assert_eq!(samples[0]["workspaces"][0]["log_rate_per_minute"], Value::Null);
    assert_eq!(samples[1]["workspaces"][0]["log_rate_per_minute"], 36.0);
    assert_eq!(samples[1]["workspaces"][0]["head_seq"], 9);
    // `since` leaves out what the client has.
    let newer = get(
        &api,
        stores,
        &format!("/api/metrics?since={}", NOW + 5.0),
        NOW + 11.0,
    );
    assert_eq!(newer.body["samples"].as_array().unwrap().len(), 1);
    // Past `keep`, the oldest goes.
    for i in 2..=4 {
        assert!(api.sample_metrics(stores, NOW + 10.0 * f64::from(i)).unwrap());
    }
    let answer = get(&api, stores, "/api/metrics", NOW + 41.0);
    let at: Vec<f64> = answer.body["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["at"].as_f64().unwrap())
        .collect();
    assert_eq!(at, [NOW + 20.0, NOW + 30.0, NOW + 40.0]);
    assert_eq!(
        answer.body["samples"][2]["workspaces"][0]["log_rate_per_minute"],
        0.0
    );
}

#[test]
fn a_request_samples_when_no_sampler_ran_and_the_edge_answers_the_snapshot() {
    let store = store();
    let stores = Stores {
        executions: Some(&store),
        workspaces: None,
    };
    let ring = MonitorApi::new(Map::new(), None).with_metrics(MetricsConfig::default());
    let first = get(&ring, stores, "/api/metrics", NOW);
    assert_eq!(first.body["samples"].as_array().unwrap().len(), 1);
    // Within two periods of the last sample a request only reads the ring.
    let again = get(&ring, stores, "/api/metrics", NOW + 15.0);
    assert_eq!(again.body["samples"].as_array().unwrap().len(), 1);
    let late = get(&ring, stores, "/api/metrics", NOW + 25.0);
    assert_eq!(late.body["samples"].as_array().unwrap().len(), 2);
    // No ring: the current snapshot alone, each time.
    let edge = MonitorApi::new(Map::new(), None);
    let a = get(&edge, stores, "/api/metrics", NOW);
    assert_eq!(a.body["live"], false);
    assert_eq!(a.body["period"], Value::Null);
    assert_eq!(a.body["samples"][0]["executions"]["outbox_depth"], 2);
    assert_eq!(a.body["samples"][0]["at"], NOW);
    assert!(!edge.sample_metrics(stores, NOW).unwrap());
    // Bad parameters are 400s, as everywhere.
    assert_eq!(get(&edge, stores, "/api/metrics?since=soon", NOW).status, 400);
    assert_eq!(get(&edge, stores, "/api/metrics?x=1", NOW).status, 400);
}

#[test]
fn the_ring_learns_definitions_and_counts_them_later() {
    let store = store();
    let stores = Stores {
        executions: Some(&store),
        workspaces: None,
    };
    let api = MonitorApi::new(Map::new(), None).with_metrics(MetricsConfig::default());
    api.sample_metrics(stores, NOW).unwrap();
    // An hour later nothing changed in the last minute and the ring is not empty: the
    // definitions come from what the ring learnt, not from a new discovery read.
    api.sample_metrics(stores, NOW + 3600.0).unwrap();
    let answer = get(&api, stores, "/api/metrics", NOW + 3601.0);
    let last = &answer.body["samples"][1]["executions"];
    assert_eq!(last["by_definition"]["billing"]["FAILED"], 1);
    assert_eq!(last["by_definition"]["orders"]["RUNNING"], 1);
    assert_eq!(last["started_last_minute"], json!({}));
}

#[test]
fn label_values_are_escaped() {
    assert_eq!(prometheus::escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
    assert_eq!(prometheus::escape_label("x\ny"), "x\\ny");
}

#[test]
fn config_bounds_are_checked() {
    assert!(MetricsConfig::default().check().is_ok());
    for (period_seconds, keep) in [(0.5, 10), (f64::NAN, 10), (10.0, 1), (10.0, 1_000_000)] {
        let config = MetricsConfig {
            period_seconds,
            keep,
            ..MetricsConfig::default()
        };
        assert!(config.check().is_err());
    }
}

#[test]
fn past_the_limit_definitions_are_counted_every_ten_minutes_and_carried_between() {
    let store = store();
    let stores = Stores {
        executions: Some(&store),
        workspaces: None,
    };
    // The store's 3 executions are "many" for this ring.
    let api = MonitorApi::new(Map::new(), None).with_metrics(MetricsConfig {
        definition_counts_max: 2,
        ..MetricsConfig::default()
    });
    let by_definition = |at: f64| {
        let answer = get(&api, stores, "/api/metrics", at + 1.0);
        let last = answer.body["samples"].as_array().unwrap().last().unwrap().clone();
        (
            last["executions"]["by_definition"]["orders"]["RUNNING"].clone(),
            last["executions"]["by_definition_at"].clone(),
        )
    };
    // The first sample counts them.
    assert!(api.sample_metrics(stores, NOW).unwrap());
    assert_eq!(by_definition(NOW), (json!(1), json!(NOW)));
    // Then the store changes; the next samples carry the first counts, saying when they
    // were counted.
    let mut a1 = store.load("a1").unwrap().unwrap();
    a1.status = execstore::executions::Status::Done;
    store.save(&mut a1).unwrap();
    assert!(api.sample_metrics(stores, NOW + 10.0).unwrap());
    assert_eq!(by_definition(NOW + 10.0), (json!(1), json!(NOW)));
    assert!(api.sample_metrics(stores, NOW + 590.0).unwrap());
    assert_eq!(by_definition(NOW + 590.0), (json!(1), json!(NOW)));
    // Ten minutes after the last count: counted again.
    assert!(api.sample_metrics(stores, NOW + 600.0).unwrap());
    assert_eq!(by_definition(NOW + 600.0), (json!(0), json!(NOW + 600.0)));
    // A snapshot on its own over a store past the limit leaves them out.
    let none = snapshot::take(stores, NOW, &Default::default(), 2).unwrap();
    let e = none.executions.unwrap();
    assert!(e.by_definition.is_empty());
    assert_eq!(e.by_definition_at, None);
    assert_eq!(e.by_status.values().sum::<u64>(), 3);
}

#[test]
fn a_sample_under_way_is_not_taken_twice() {
    let store = store();
    let stores = Stores {
        executions: Some(&store),
        workspaces: None,
    };
    let api = MonitorApi::new(Map::new(), None).with_metrics(MetricsConfig::default());
    let ring = api.metrics.clone().unwrap();
    // The sampler is reading the stores: a request neither waits for it nor reads them too.
    lock(&ring).busy = true;
    assert!(!api.sample_metrics(stores, NOW).unwrap());
    let answer = get(&api, stores, "/api/metrics", NOW);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["samples"], json!([]));
    lock(&ring).busy = false;
    assert!(api.sample_metrics(stores, NOW).unwrap());
    // Done: the ring is free for the next one.
    assert!(!lock(&ring).busy);
}
