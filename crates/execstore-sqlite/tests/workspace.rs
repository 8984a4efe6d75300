//! The SQLite workspace storage beyond the behaviour suite: its schema and version record,
//! read-only opens, the probes, a file shared with the execution store, several storages on
//! one file (as several processes), and a panic inside a transaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

use execstore::workspace::{Entry, LogQuery, ManualClock, Timestamp, WorkspaceRef, WorkspaceStorage};
use execstore::{executions::ListQuery, Execution, ExecutionStore, StoreError};
use execstore_sqlite::{
    has_execution_tables, has_workspace_tables, SqliteOptions, SqliteStore, SqliteWorkspaceOptions,
    SqliteWorkspaceStorage,
};
use serde_json::json;

fn t0() -> Timestamp {
    Timestamp::from_micros(1_767_268_800_000_000).unwrap()
}

fn options() -> SqliteWorkspaceOptions {
    SqliteWorkspaceOptions::new().clock(Arc::new(ManualClock::new(t0())))
}

fn entry(id: &str) -> Entry {
    let event = json!({"type": "t:x", "text": "é"});
    Entry::new(
        id,
        json!({"kind": "source", "name": "t"}),
        event.as_object().unwrap().clone(),
    )
}

fn append(s: &dyn WorkspaceStorage, w: &WorkspaceRef, ids: &[&str]) {
    let mut tx = s.begin(w).unwrap();
    tx.append(&ids.iter().map(|id| entry(id)).collect::<Vec<_>>())
        .unwrap();
    tx.commit().unwrap();
}

fn refused<T: std::fmt::Debug>(r: execstore::Result<T>, what: &str) {
    match r {
        Err(StoreError::Backend { retryable: false, .. }) => {}
        other => panic!("{what}: expected a permanent backend error, got {other:?}"),
    }
}

fn sql(path: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[test]
fn a_new_file_records_reflexrs_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let s = SqliteWorkspaceStorage::open(&path, options()).unwrap();
    assert_eq!(s.schema_version().unwrap(), "0008");
    assert!(s.capabilities().durable);
    assert!(!s.capabilities().cross_process_wakeups);
    let conn = sql(&path);
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        [
            "reflexr_alembic_version",
            "reflexr_cursors",
            "reflexr_dead_letters",
            "reflexr_events",
            "reflexr_leases",
            "reflexr_rule_progress",
            "reflexr_rules",
            "reflexr_runs",
            "reflexr_schedules",
            "reflexr_scope_states",
            "reflexr_workspaces"
        ]
    );
    drop(s);
    // Opening again changes nothing.
    let schema = |conn: &rusqlite::Connection| -> Vec<(String, Option<String>)> {
        conn.prepare("SELECT name, sql FROM sqlite_master ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let before = schema(&conn);
    drop(SqliteWorkspaceStorage::open(&path, options()).unwrap());
    assert_eq!(schema(&conn), before);
    // ":memory:" is a private in-memory database with the same tables and version, on one
    // connection; read-only is refused there (an empty database has nothing to read).
    let memory = SqliteWorkspaceStorage::open(":memory:", options()).unwrap();
    assert_eq!(memory.schema_version().unwrap(), "0008");
    assert!(matches!(
        SqliteWorkspaceStorage::open(":memory:", options().read_only(true)),
        Err(StoreError::InvalidInput { .. })
    ));
}

#[test]
fn another_version_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    drop(SqliteWorkspaceStorage::open(&path, options()).unwrap());
    sql(&path)
        .execute("UPDATE reflexr_alembic_version SET version_num = '0009'", [])
        .unwrap();
    for read_only in [false, true] {
        match SqliteWorkspaceStorage::open(&path, options().read_only(read_only)) {
            Err(StoreError::Backend {
                message,
                retryable: false,
                ..
            }) => assert!(message.contains("0009") && message.contains("0008"), "{message}"),
            other => panic!("read_only {read_only}: {other:?}"),
        }
    }
    // Read-only with `any_version`: opened, saying which version it records; writing is
    // refused all the same.
    let other = SqliteWorkspaceStorage::open(&path, options().read_only(true).any_version(true)).unwrap();
    assert_eq!(other.schema_version().unwrap(), "0009");
    assert!(SqliteWorkspaceStorage::open(&path, options().any_version(true)).is_err());
    drop(other);
    // Tables without a version record (reflexr's create_schema) are refused too.
    sql(&path)
        .execute("DROP TABLE reflexr_alembic_version", [])
        .unwrap();
    assert!(matches!(
        SqliteWorkspaceStorage::open(&path, options()),
        Err(StoreError::Backend { .. })
    ));
}

#[test]
fn read_only_creates_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    assert!(matches!(
        SqliteWorkspaceStorage::open(&missing, options().read_only(true)),
        Err(StoreError::NotFound {
            what: "database file",
            ..
        })
    ));
    assert!(matches!(
        has_workspace_tables(&missing),
        Err(StoreError::NotFound { .. })
    ));
    assert!(!missing.exists(), "no file created");

    // A file of the execution store only: no reflexr tables.
    let exec = dir.path().join("exec.db");
    drop(SqliteStore::open(&exec, SqliteOptions::new()).unwrap());
    match SqliteWorkspaceStorage::open(&exec, options().read_only(true)) {
        Err(StoreError::NotFound {
            what: "reflexr tables",
            ..
        }) => {}
        other => panic!("{other:?}"),
    }

    let path = dir.path().join("w.db");
    let w = WorkspaceRef::new("t", "w");
    {
        let s = SqliteWorkspaceStorage::open(&path, options()).unwrap();
        append(&s, &w, &["a", "b"]);
        s.save_cursor(&w, "m", 2).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let s = SqliteWorkspaceStorage::open(&path, options().read_only(true)).unwrap();
    assert_eq!(s.read(&w, &LogQuery::new()).unwrap().len(), 2);
    assert_eq!(s.cursor(&w, "m").unwrap(), 2);
    assert_eq!(s.workspaces().unwrap(), vec![w.clone()]);
    refused(s.begin(&w).map(|_| ()), "begin");
    refused(
        s.acquire_lease(&w, "k", "me", Duration::from_secs(1)),
        "acquire_lease",
    );
    refused(s.release_lease(&w, "k", "me"), "release_lease");
    refused(s.save_cursor(&w, "m", 3), "save_cursor");
    assert!(!s.wait_for_append(&w, 2, Duration::from_millis(10)).unwrap());
    drop(s);
    assert!(std::fs::read(&path).unwrap() == bytes, "the file changed");
}

#[test]
fn probes_tell_what_a_file_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("both.db");
    drop(SqliteWorkspaceStorage::open(&path, options()).unwrap());
    assert!(has_workspace_tables(&path).unwrap());
    assert!(!has_execution_tables(&path, None).unwrap());
    drop(SqliteStore::open(&path, SqliteOptions::new().prefix("harel")).unwrap());
    assert!(has_execution_tables(&path, Some("harel")).unwrap());
    assert!(!has_execution_tables(&path, None).unwrap());
    assert!(matches!(
        has_execution_tables(&path, Some("bad prefix")),
        Err(StoreError::InvalidInput { .. })
    ));
    let exec = dir.path().join("exec.db");
    drop(SqliteStore::open(&exec, SqliteOptions::new()).unwrap());
    assert!(!has_workspace_tables(&exec).unwrap());
    assert!(has_execution_tables(&exec, None).unwrap());
}

/// harel's tables and reflexr's in one file, both stores open on it at once and writing from
/// threads of their own; each sees all of its own data afterwards, and after a reopen.
#[test]
fn both_contracts_share_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("both.db");
    let store = SqliteStore::open(&path, SqliteOptions::new().prefix("harel")).unwrap();
    let ws = SqliteWorkspaceStorage::open(&path, options()).unwrap();
    let w = WorkspaceRef::new("t", "w");
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..40 {
                let mut exe = Execution::new(format!("x{i}"), "d");
                store.save(&mut exe).unwrap();
            }
        });
        scope.spawn(|| {
            for i in 0..40 {
                append(&ws, &w, &[&format!("e{i}")]);
            }
        });
    });
    assert_eq!(ws.head_seq(&w).unwrap(), 40);
    assert_eq!(
        store
            .count_by_status(&ListQuery::new())
            .unwrap()
            .iter()
            .map(|(_, n)| n)
            .sum::<u64>(),
        40
    );
    drop((store, ws));
    let store = SqliteStore::open(&path, SqliteOptions::new().prefix("harel")).unwrap();
    let ws = SqliteWorkspaceStorage::open(&path, options()).unwrap();
    assert_eq!(ws.read(&w, &LogQuery::new()).unwrap().len(), 40);
    assert!(store.load("x39").unwrap().is_some());
    let check: String = sql(&path)
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

/// Two storages on one file stand for two processes: a transaction of one holds the other's
/// begin (SQLite's write lock) until the busy timeout, and the other's commits reach a waiter
/// within the poll interval.
#[test]
fn storages_on_one_file_take_turns_and_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let w = WorkspaceRef::new("t", "w");
    let a = SqliteWorkspaceStorage::open(&path, options().poll_interval(Duration::from_millis(50))).unwrap();
    let b = SqliteWorkspaceStorage::open(&path, options().busy_timeout(Duration::from_millis(200))).unwrap();
    let held = a.begin(&w).unwrap();
    let started = Instant::now();
    match b.begin(&w) {
        Err(e) => assert!(e.is_retryable(), "{e}"),
        Ok(_) => panic!("began while another storage held the write lock"),
    }
    assert!(started.elapsed() >= Duration::from_millis(150));
    drop(held);
    append(&b, &w, &["x"]);
    assert!(a.wait_for_append(&w, 0, Duration::from_secs(10)).unwrap());
    let started = Instant::now();
    let woke = std::thread::scope(|scope| {
        // A wait sees another storage's commit at its next poll (each wait returns by the poll
        // interval, 50 ms here), so a subscriber waits again, as this one does: on a loaded
        // machine the append may come after the first poll.
        let waiter =
            scope.spawn(|| (0..200).any(|_| a.wait_for_append(&w, 1, Duration::from_secs(10)).unwrap()));
        std::thread::sleep(Duration::from_millis(20));
        append(&b, &w, &["y"]);
        waiter.join().unwrap()
    });
    assert!(woke, "another storage's commit was seen");
    assert!(started.elapsed() < Duration::from_secs(5));
    // Nothing new: a waiter returns after the poll interval, not the whole timeout.
    let started = Instant::now();
    assert!(!a.wait_for_append(&w, 2, Duration::from_secs(10)).unwrap());
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A panic while a transaction is open rolls it back and hands the writer on.
#[test]
fn a_panic_inside_a_transaction_rolls_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteWorkspaceStorage::open(dir.path().join("w.db"), options()).unwrap();
    let w = WorkspaceRef::new("t", "w");
    append(&s, &w, &["a"]);
    let joined = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut tx = s.begin(&w).unwrap();
                tx.append(&[entry("b")]).unwrap();
                panic!("boom");
            })
            .join()
    });
    assert!(joined.is_err());
    assert_eq!(s.head_seq(&w).unwrap(), 1);
    append(&s, &w, &["b"]);
    assert_eq!(s.envelope(&w, "b").unwrap().unwrap().seq, 2);
}

/// A transaction moves between threads: begun on one, committed on another.
#[test]
fn a_transaction_moves_between_threads() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteWorkspaceStorage::open(dir.path().join("w.db"), options()).unwrap();
    let w = WorkspaceRef::new("t", "w");
    let mut tx = s.begin(&w).unwrap();
    tx.append(&[entry("a")]).unwrap();
    std::thread::spawn(move || tx.commit().unwrap()).join().unwrap();
    assert_eq!(s.head_seq(&w).unwrap(), 1);
}
