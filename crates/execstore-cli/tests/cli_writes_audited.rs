//! The CLI's writes are audited like the monitor's: `suspend`, `resume`, `terminate`,
//! `purge`, `purge-finished` and `attributes declare|drop` record who (`cli (<OS user>)`,
//! role `admin`), what, on what, `--reason`, and the outcome; `execstore audit` reads them
//! back, and says what a `PENDING` entry means. An entry that cannot be recorded first
//! refuses the command, and nothing changes.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use execstore::executions::Status;
use execstore::operator::{AuditEntry, AuditQuery, OperatorStore, PENDING, PENDING_MEANS};
use execstore::{Execution, ExecutionStore};
use execstore_sqlite::{ConnectOptions, Db, SqliteOperatorStore, SqliteOptions, SqliteStore};
use serde_json::{json, Value};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `execstore --db s.db args` in `dir` as the OS user `user` (`None`: neither `USER`
/// nor `LOGNAME` set).
fn run_as(dir: &Path, user: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_execstore"));
    command
        .arg("--db")
        .arg("s.db")
        .args(args)
        .current_dir(dir)
        .env_remove("EXECSTORE_DB")
        .env_remove("USER")
        .env_remove("LOGNAME");
    if let Some(user) = user {
        command.env("USER", user);
    }
    command.output().expect("run execstore")
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

fn put(store: &SqliteStore, id: &str, status: Status, finished_at: Option<f64>) {
    let mut exe = Execution::new(id, "orders");
    exe.status = status;
    exe.finished_at = finished_at;
    exe.context.insert("customer".into(), json!("c-1"));
    store.save(&mut exe).expect("save");
}

fn store_file(dir: &Path) -> SqliteStore {
    let store = SqliteStore::open(dir.join("s.db"), SqliteOptions::new()).expect("store");
    put(&store, "run", Status::Running, None);
    put(&store, "old-1", Status::Done, Some(1_000.0));
    put(&store, "old-2", Status::Cancelled, Some(1_000.0));
    store
}

fn status(dir: &Path, id: &str) -> Option<Status> {
    let store = SqliteStore::open(dir.join("s.db"), SqliteOptions::new()).expect("store");
    store.load(id).expect("load").map(|e| e.status)
}

/// The entries, oldest first, as JSON without ids and times.
fn entries(dir: &Path) -> Vec<Value> {
    let out = run_as(dir, Some("x"), &["--json", "audit", "--limit", "100"]);
    let all: Vec<AuditEntry> = serde_json::from_str(&ok(&out)).expect("audit --json");
    all.into_iter()
        .rev()
        .map(|e| {
            assert!(e.at > 1_700_000_000.0, "stamped now: {}", e.at);
            json!({"actor": e.actor, "role": e.role, "action": e.action, "target": e.target,
                   "reason": e.reason, "outcome": e.outcome, "params": e.params})
        })
        .collect()
}

#[test]
fn every_write_command_is_recorded_with_the_os_user_reason_and_outcome() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    drop(store_file(d));

    ok(&run_as(
        d,
        Some("ada"),
        &["suspend", "run", "--reason", "incident 12"],
    ));
    // A failure: a stale version (exit 1), recorded with its code.
    let out = run_as(
        d,
        Some("ada"),
        &["resume", "run", "--expected-version", "1", "--reason", "retry"],
    );
    assert!(!out.status.success());
    // No user: `cli`; no reason: "".
    ok(&run_as(d, None, &["terminate", "run"]));
    ok(&run_as(
        d,
        Some("bob"),
        &[
            "attributes",
            "declare",
            "context.customer",
            "--reason",
            "find c-1",
        ],
    ));
    ok(&run_as(
        d,
        Some("bob"),
        &["attributes", "drop", "context.customer"],
    ));
    ok(&run_as(
        d,
        Some("bob"),
        &["purge-finished", "--older-than", "1h", "--reason", "cleanup"],
    ));
    ok(&run_as(d, Some("bob"), &["purge", "run", "--reason", "gone"]));
    assert_eq!(status(d, "run"), None, "purged");
    assert_eq!(status(d, "old-1"), None, "purged");

    let got = entries(d);
    let conflict = got[1]["params"].clone();
    let want = vec![
        json!({"actor": "cli (ada)", "role": "admin", "action": "executions.suspend", "target": "run",
               "reason": "incident 12", "outcome": "ok", "params": {}}),
        json!({"actor": "cli (ada)", "role": "admin", "action": "executions.resume", "target": "run",
               "reason": "retry", "outcome": "CONFLICT", "params": conflict}),
        json!({"actor": "cli", "role": "admin", "action": "executions.terminate", "target": "run",
               "reason": "", "outcome": "ok", "params": {}}),
        json!({"actor": "cli (bob)", "role": "admin", "action": "attributes", "target": "",
               "reason": "find c-1", "outcome": "ok", "params": {"path": "context.customer"}}),
        json!({"actor": "cli (bob)", "role": "admin", "action": "attributes.drop", "target": "",
               "reason": "", "outcome": "ok", "params": {"path": "context.customer"}}),
        json!({"actor": "cli (bob)", "role": "admin", "action": "control.purge-finished", "target": "",
               "reason": "cleanup", "outcome": "ok", "params": {"older_than_seconds": 3600.0, "status": [],
               "include_undated": false, "limit": null, "dry_run": false}}),
        json!({"actor": "cli (bob)", "role": "admin", "action": "control.purge-finished", "target": "old-1",
               "reason": "cleanup", "outcome": "ok", "params": {"bulk": true}}),
        json!({"actor": "cli (bob)", "role": "admin", "action": "control.purge-finished", "target": "old-2",
               "reason": "cleanup", "outcome": "ok", "params": {"bulk": true}}),
        json!({"actor": "cli (bob)", "role": "admin", "action": "executions.purge", "target": "run",
               "reason": "gone", "outcome": "ok", "params": {}}),
    ];
    assert_eq!(conflict, json!({"expected_version": 1}));
    assert_eq!(got, want);

    // The table names them too.
    let table = ok(&run_as(d, None, &["audit", "--target", "run"]));
    assert!(
        table.contains("cli (ada)") && table.contains("CONFLICT"),
        "{table}"
    );
}

#[test]
fn a_command_whose_entry_cannot_be_recorded_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    drop(store_file(d));
    // The audit table exists and refuses every insert (as a full disk or a broken table would).
    {
        let db = Db::open(d.join("s.db"), ConnectOptions::new()).expect("db");
        drop(SqliteOperatorStore::on(&db).expect("tables"));
        let conn = rusqlite::Connection::open(d.join("s.db")).expect("conn");
        conn.execute_batch(
            "CREATE TRIGGER no_audit BEFORE INSERT ON execstore_audit \
             BEGIN SELECT RAISE(ABORT, 'the audit log is full'); END",
        )
        .expect("trigger");
    }
    for args in [
        &["suspend", "run", "--reason", "x"][..],
        &["terminate", "run"],
        &["purge", "old-1"],
        &["purge-finished", "--older-than", "1h"],
        &["attributes", "declare", "context.customer"],
    ] {
        let out = run_as(d, Some("ada"), args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = text(&out.stderr);
        assert!(
            err.contains("nothing was changed") && err.contains("audit log is full"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(status(d, "run"), Some(Status::Running));
    assert_eq!(status(d, "old-1"), Some(Status::Done));
    assert_eq!(status(d, "old-2"), Some(Status::Cancelled));
    let store = SqliteStore::open(d.join("s.db"), SqliteOptions::new()).expect("store");
    assert!(
        store.attributes().expect("attributes").is_empty(),
        "nothing declared"
    );
}

#[test]
fn audit_says_what_a_pending_entry_means() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    drop(store_file(d));
    let db = Db::open(d.join("s.db"), ConnectOptions::new()).expect("db");
    let operator = SqliteOperatorStore::on(&db).expect("operator");
    operator
        .record_audit(&AuditEntry {
            id: 0,
            at: 1_800_000_000.0,
            actor: "ada".into(),
            role: "admin".into(),
            action: "executions.terminate".into(),
            target: "run".into(),
            reason: "stuck".into(),
            outcome: PENDING.into(),
            message: None,
            params: Default::default(),
        })
        .expect("record");
    assert_eq!(operator.list_audit(&AuditQuery::new()).expect("list").len(), 1);
    drop((operator, db));
    let table = ok(&run_as(d, None, &["audit"]));
    assert!(table.contains(PENDING_MEANS), "{table}");
}
