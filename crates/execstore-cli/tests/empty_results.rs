//! Empty results say so: every listing command, on a store whose tables hold nothing (or on
//! an execution with nothing of the kind), prints one plain "no ..." line on stdout instead of
//! a bare header or nothing at all; `--json` still prints an empty list.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::execstore;
use execstore::executions::Status;
use execstore::workspace::{Entry, ManualClock, Timestamp, WorkspaceRef, WorkspaceStorage};
use execstore::{Effects, Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, SqliteWorkspaceOptions, SqliteWorkspaceStorage};

/// A store file with execution tables holding one execution (nothing else) and a workspace
/// log holding one workspace with a single event (no runs, leases, cursors...).
fn empty_store(dir: &Path) -> PathBuf {
    let db = dir.join("empty.db");
    let store = SqliteStore::open(&db, SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("lonely-1", "orders");
    exe.status = Status::Running;
    store.commit(&mut exe, &Effects::new()).unwrap();
    drop(store);
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_micros(1_700_000_000_000_000).unwrap(),
    ));
    let ws = SqliteWorkspaceStorage::open(&db, SqliteWorkspaceOptions::new().clock(clock)).unwrap();
    drop(ws);
    db
}

fn stdout(dir: &Path, args: &[&str]) -> String {
    let out = execstore(dir, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_listing_command_says_when_it_found_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_store(dir.path());
    let db = db.to_str().unwrap();
    let ws = ["--tenant", "t", "--workspace", "w"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["list", "--status", "DONE"], "no executions"),
        (vec!["outbox"], "no undelivered outbox events"),
        (vec!["timers"], "no armed timers"),
        (vec!["spawns"], "no pending spawns"),
        (vec!["trace", "lonely-1"], "no trace steps"),
        (vec!["attributes", "list"], "no search attributes"),
        (vec!["audit"], "no audit entries"),
        (vec!["workspaces"], "no workspaces"),
        ([&["log"][..], &ws].concat(), "no events"),
        ([&["runs"][..], &ws].concat(), "no runs"),
        ([&["dead-letters"][..], &ws].concat(), "no dead letters"),
        ([&["leases"][..], &ws].concat(), "no leases"),
        ([&["cursors"][..], &ws].concat(), "no cursors"),
        ([&["progress"][..], &ws].concat(), "no rule progress"),
        ([&["schedules"][..], &ws].concat(), "no schedules"),
        ([&["rules"][..], &ws].concat(), "no stored rules"),
        (vec!["due-runs", "--now", "2030-01-01T00:00:00Z"], "no due runs"),
    ];
    let mut missing = Vec::new();
    for (args, said) in &cases {
        let out = stdout(dir.path(), &[&["--db", db][..], args].concat());
        if !out.to_lowercase().contains(said) {
            missing.push(format!("{args:?} printed {out:?}, not {said:?}"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn json_output_of_an_empty_result_is_still_an_empty_list() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_store(dir.path());
    let db = db.to_str().unwrap();
    for args in [
        &["outbox", "--json"][..],
        &["timers", "--json"],
        &["workspaces", "--json"],
    ] {
        let out = stdout(dir.path(), &[&["--db", db][..], args].concat());
        let value: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        let empty = match &value {
            serde_json::Value::Array(items) => items.is_empty(),
            serde_json::Value::Object(o) => o
                .get("items")
                .and_then(|i| i.as_array())
                .is_some_and(|i| i.is_empty()),
            _ => false,
        };
        assert!(empty, "{args:?}: {out}");
    }
}

/// The line is not printed blindly: a workspace with one event and a store with one
/// execution list them, without it.
#[test]
fn a_non_empty_listing_prints_no_empty_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = empty_store(dir.path());
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_micros(1_700_000_000_000_000).unwrap(),
    ));
    let storage = SqliteWorkspaceStorage::open(&db, SqliteWorkspaceOptions::new().clock(clock)).unwrap();
    let mut tx = storage.begin(&WorkspaceRef::new("t", "w")).unwrap();
    let event = serde_json::json!({"type": "Ping"});
    let serde_json::Value::Object(event) = event else {
        unreachable!()
    };
    tx.append(&[Entry::new("e1", serde_json::json!({"kind": "source"}), event)])
        .unwrap();
    tx.commit().unwrap();
    drop(storage);
    let db = db.to_str().unwrap();
    let out = stdout(
        dir.path(),
        &["--db", db, "log", "--tenant", "t", "--workspace", "w"],
    );
    assert!(
        out.contains("Ping") && !out.to_lowercase().contains("no events"),
        "{out}"
    );
    let out = stdout(dir.path(), &["--db", db, "workspaces"]);
    assert!(!out.to_lowercase().contains("no workspaces"), "{out}");
    let out = stdout(dir.path(), &["--db", db, "list"]);
    assert!(
        out.contains("lonely-1") && !out.contains("no executions"),
        "{out}"
    );
}
