//! `execstore log --where` and `execstore runs --where` end to end over a SQLite file with
//! reflexr's tables: the matches, the note saying how far a page scanned and how to go on,
//! and a bad query as a usage error that names the position.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use execstore::executions::JsonObject;
use execstore::workspace::{
    Clock, Entry, ManualClock, NewRun, Run, Timestamp, WorkspaceRef, WorkspaceStorage,
};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde_json::{json, Value};

fn execstore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(args)
        .env_remove("EXECSTORE_DB")
        .output()
        .expect("run execstore")
}

fn ok(args: &[&str]) -> (String, String) {
    let out = execstore(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// shop/main: 60 envelopes (`service` auth on every 6th, `amount` = seq), 20 runs fired by
/// envelope `3 * i + 1`, scope `{"customer": "c-<i % 4>"}`, every other one dead.
fn write_file(db: &Path) {
    let clock = ManualClock::new(Timestamp::parse_json_text("2026-01-01T12:00:00Z").unwrap());
    let s = SqliteWorkspaceStorage::open(db, SqliteWorkspaceOptions::new().clock(Arc::new(clock.clone())))
        .unwrap();
    let w = WorkspaceRef::new("shop", "main");
    let mut tx = s.begin(&w).unwrap();
    let entries: Vec<Entry> = (1..=60)
        .map(|i| {
            let service = if i % 6 == 0 { "auth" } else { "web" };
            Entry::new(
                format!("e{i}"),
                json!({"kind": "source", "name": "m"}),
                obj(json!({"type": "shop:hit", "service": service, "amount": i})),
            )
        })
        .collect();
    tx.append(&entries).unwrap();
    let runs: Vec<Run> = (0..20)
        .map(|i| {
            let r = Run::pending(NewRun {
                id: format!("r{i:02}"),
                rule: "bill".into(),
                scope_key: format!("k{i}"),
                scope: obj(json!({"customer": format!("c-{}", i % 4)})),
                fired_seq: 3 * i + 1,
                matched: vec![3 * i + 1],
                correlation_id: "x".into(),
                depth: 0,
                now: clock.now(),
            })
            .unwrap();
            if i % 2 == 0 {
                r.with(obj(json!({"status": "dead"}))).unwrap()
            } else {
                r
            }
        })
        .collect();
    tx.save_runs(&runs).unwrap();
    tx.commit().unwrap();
}

fn seqs(json_out: &str) -> Vec<i64> {
    let v: Vec<Value> = serde_json::from_str(json_out).unwrap();
    v.iter().map(|e| e["seq"].as_i64().unwrap()).collect()
}

fn ids(json_out: &str) -> Vec<String> {
    let v: Vec<Value> = serde_json::from_str(json_out).unwrap();
    v.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn log_and_runs_where() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.db");
    write_file(&db);
    let before = std::fs::read(&db).unwrap();
    let d = db.to_str().unwrap();
    let ws = ["--tenant", "shop", "--workspace", "main"];
    let with = |cmd: &[&str]| -> Vec<String> {
        ["--db", d]
            .iter()
            .chain(cmd)
            .chain(ws.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |cmd: &[&str]| {
        let args = with(cmd);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&refs)
    };

    let (out, note) = run(&["--json", "log", "--where", "event.service = auth"]);
    assert_eq!(seqs(&out), [6, 12, 18, 24, 30, 36, 42, 48, 54, 60]);
    assert!(
        note.contains("scanned up to seq 60 (60 envelopes), 10 matches; the window is done"),
        "{note}"
    );
    // A bounded scan, and going on from where it stopped.
    let (out, note) = run(&["--json", "log", "--where", "event.service = auth", "--scan", "20"]);
    assert_eq!(seqs(&out), [6, 12, 18]);
    assert!(
        note.contains("scanned up to seq 20 (20 envelopes), 3 matches; go on with --after 20"),
        "{note}"
    );
    let (out, _) = run(&[
        "--json",
        "log",
        "--where",
        "event.service = auth",
        "--scan",
        "20",
        "--after",
        "20",
    ]);
    assert_eq!(seqs(&out), [24, 30, 36]);
    // The tail, newest first, printed oldest first; a table says the same.
    let (out, note) = run(&[
        "--json",
        "log",
        "--where",
        "event.amount >= 10 and event.amount < 50",
        "--last",
        "2",
    ]);
    assert_eq!(seqs(&out), [48, 49]);
    assert!(note.contains("go on with --before 48"), "{note}");
    let (table, _) = run(&["log", "--where", "event.amount > 58", "--type", "shop:hit"]);
    assert!(
        table.contains("e59") && table.contains("e60") && !table.contains("e58"),
        "{table}"
    );
    assert!(table.contains("2 matches"), "{table}");

    // Runs: by the firing event, by scope and status, paged by cursor.
    let (out, note) = run(&["--json", "runs", "--where", "event.service = auth"]);
    // Runs fire at seqs 3i + 1, never a multiple of 6: no run was fired by an auth event.
    assert_eq!(ids(&out), Vec::<String>::new());
    assert!(
        note.contains("scanned 20 runs, 0 matches; every run examined"),
        "{note}"
    );
    let (out, _) = run(&["--json", "runs", "--where", "event.amount > 40"]);
    assert_eq!(ids(&out), ["r19", "r18", "r17", "r16", "r15", "r14"]);
    let (out, note) = run(&[
        "--json",
        "runs",
        "--where",
        "scope.customer = c-0",
        "--status",
        "dead",
        "--limit",
        "2",
    ]);
    assert_eq!(ids(&out), ["r16", "r12"]);
    let cursor = note.rsplit("--cursor ").next().unwrap().trim().to_owned();
    let (out, _) = run(&[
        "--json",
        "runs",
        "--where",
        "scope.customer = c-0",
        "--status",
        "dead",
        "--cursor",
        &cursor,
    ]);
    assert_eq!(ids(&out), ["r08", "r04", "r00"]);
    let (table, _) = run(&["runs", "--where", "rule exists", "--scan", "3"]);
    assert!(
        table.contains("r19") && table.contains("r17") && !table.contains("r16"),
        "{table}"
    );
    assert!(table.contains("scanned 3 runs"), "{table}");

    // A bad query: a usage error naming the position; the file is untouched.
    let out = execstore(
        &with(&["log", "--where", "event.service ="])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("where") && err.contains("at character 16"), "{err}");
    let out = execstore(
        &with(&["runs", "--where", "status = sleeping"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("none of"));
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "reads leave the file as it was"
    );
}
