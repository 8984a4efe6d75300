//! The workspace recovery commands (`execstore::workspace::recover`) against the real
//! reflexr 0.1.1, on a SQLite file: execstore retries a dead run, replays a dead letter's
//! rule, releases a lapsed lease and pauses a stored rule; then reflexr's own `SqlStorage`
//! reads everything back (`tests/reflexr/recover_with_reflexr.py`): the retried run equals
//! what reflexr's own `retry` makes of the run as it was, byte for byte; each fact parses as
//! reflexr's event (`RunRequeued`, `RuleReset`, `RuleInstalled`); the progress and the paused
//! stored rule validate; the retried run is due; the released lease goes to a new holder.
//!
//! Without reflexr 0.1.1 the test prints `SKIPPED: ...` and passes, unless
//! `EXECSTORE_REQUIRE_REFLEXR=1`.

mod workspace_common;

use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::recover::{self, Operator, ReplayMode};
use execstore::workspace::{
    EvaluationError, ManualClock, StoredRule, StoredRuleStatus, WorkspaceRef, WorkspaceStorage,
};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde_json::{json, Value};
use workspace_common::variety::{at, entry, pending, progress, rule_json, source, with};
use workspace_common::{obj, reflexr, write_json};

fn op(id: &str, now: f64) -> Operator {
    Operator {
        actor: json!({"kind": "system", "name": "execstore-monitor"}),
        event_id: id.into(),
        now: at(now),
    }
}

#[test]
fn reflexr_reads_what_recovery_wrote() {
    let Some(rx) = reflexr() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recover.db");
    let clock = ManualClock::new(at(0.0));
    let options = SqliteWorkspaceOptions::new().clock(Arc::new(clock.clone()));
    let s = SqliteWorkspaceStorage::open(&path, options).expect("open");
    let w = WorkspaceRef::new("acme", "main");
    let rule = "chat:greet";
    let dead = with(
        &pending("run-1", rule, "o-1", 1, at(0.0)),
        json!({"status": "dead", "attempts": 5, "error": "TimeoutError: slow", "updated_at": at(3.0).to_json_text()}),
    );
    let mut tx = s.begin(&w).unwrap();
    tx.append(&[
        entry("e1", source("m"), json!({"type": "app:note.added", "n": 1})),
        entry("e2", source("m"), json!({"type": "app:note.added", "n": 2})),
        entry("e3", source("m"), json!({"type": "app:note.added", "n": 3})),
    ])
    .unwrap();
    tx.save_runs(std::slice::from_ref(&dead)).unwrap();
    tx.dead_letter(&[EvaluationError::new(rule, 2, "KeyError: 'n'")])
        .unwrap();
    tx.save_progress(rule, &progress(3, json!({}))).unwrap();
    tx.save_stored_rule(&StoredRule {
        rule: obj(rule_json(rule, "greets", json!({"text": "hi"}))),
        version: 1,
        status: StoredRuleStatus::Active,
        provenance: obj(json!({"by": "op"})),
    })
    .unwrap();
    tx.commit().unwrap();
    assert!(s
        .acquire_lease(&w, "run:run-1", "dead-worker", Duration::from_secs(10))
        .unwrap());

    let retried = recover::retry_run(&s, &w, "run-1", &op("fact-retry", 20.0)).unwrap();
    recover::replay_dead_letter(&s, &w, rule, 2, ReplayMode::Rebuild, &op("fact-replay", 21.0)).unwrap();
    recover::release_lapsed_lease(&s, &w, "run:run-1", at(22.0)).unwrap();
    let paused = recover::set_rule_enabled(&s, &w, rule, false, Some(1), &op("fact-pause", 23.0)).unwrap();
    drop(s);

    let spec = json!({
        "workspace": ["acme", "main"], "now": at(20.0).micros(), "run_id": "run-1",
        "dead_run": Value::Object(dead.doc().clone()), "rule": rule, "lease": "run:run-1",
        "facts": ["fact-retry", "fact-replay", "fact-pause"],
    });
    let spec_path = dir.path().join("spec.json");
    write_json(&spec_path, &spec);
    let out = rx.run(
        "recover_with_reflexr.py",
        path.as_os_str(),
        dir.path(),
        &[spec_path.as_os_str()],
    );

    assert_eq!(
        out["run"], out["reflexr_retry"],
        "the run reflexr's own retry makes"
    );
    let ours: Value = serde_json::from_str(&retried.to_json()).unwrap();
    let theirs: Value = serde_json::from_str(out["run"].as_str().unwrap()).unwrap();
    assert_eq!(ours, theirs);
    let kinds: Vec<&str> = out["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f[0].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["RunRequeued", "RuleReset", "RuleInstalled"]);
    let reset: Value = serde_json::from_str(out["facts"][1][1].as_str().unwrap()).unwrap();
    assert_eq!(
        (
            reset["reason"].clone(),
            reset["from_seq"].clone(),
            reset["generation"].clone()
        ),
        (json!("replayed"), json!(1), json!(2))
    );
    let progress: Value = serde_json::from_str(out["progress"].as_str().unwrap()).unwrap();
    assert_eq!(
        (progress["cursor"].clone(), progress["generation"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(out["enabled"], json!(false), "reflexr reads the rule as paused");
    let stored: Value = serde_json::from_str(out["stored_rule"].as_str().unwrap()).unwrap();
    assert_eq!(stored["version"], json!(paused.version));
    assert_eq!(out["due"], json!(["run-1"]), "the retried run is due");
    assert_eq!(
        out["lease_taken"],
        json!(true),
        "the released lease goes to a new holder"
    );
}
