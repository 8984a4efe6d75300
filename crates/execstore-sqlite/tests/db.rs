//! One [`Db`] serves both contracts: the execution store and the workspace log built on it
//! share its connections (no file is opened twice), see one database (in memory too), and
//! take turns on the one writer, so a commit never lands inside a workspace transaction.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::{Entry, LogQuery, ManualClock, Timestamp, WorkspaceRef, WorkspaceStorage};
use execstore::{Effects, Execution, ExecutionStore};
use execstore_sqlite::{
    ConnectOptions, Db, SqliteOptions, SqliteStore, SqliteWorkspaceOptions, SqliteWorkspaceStorage,
};
use serde_json::json;

fn ws_options() -> SqliteWorkspaceOptions {
    let t0 = Timestamp::from_micros(1_767_268_800_000_000).unwrap();
    SqliteWorkspaceOptions::new().clock(Arc::new(ManualClock::new(t0)))
}

fn entry(id: &str) -> Entry {
    let event = json!({"type": "t:x"});
    Entry::new(
        id,
        json!({"kind": "source", "name": "t"}),
        event.as_object().unwrap().clone(),
    )
}

/// How many descriptors of this process have `path` open (each SQLite connection to a file
/// opens it once).
#[cfg(target_os = "linux")]
fn open_descriptors(path: &std::path::Path) -> usize {
    let path = path.canonicalize().unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| *target == path)
        .count()
}

/// The workspace log on the execution store's `Db` opens no connection of its own; the two
/// contracts opened apart open the file twice as often.
#[cfg(target_os = "linux")]
#[test]
fn both_contracts_on_one_db_open_the_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared.db");
    let db = Db::open(&shared, ConnectOptions::new()).unwrap();
    let store = SqliteStore::on(&db, SqliteOptions::new()).unwrap();
    let executions_alone = open_descriptors(&shared);
    let log = SqliteWorkspaceStorage::on(&db, ws_options()).unwrap();
    assert_eq!(
        open_descriptors(&shared),
        executions_alone,
        "the workspace log on the same Db opened the file again"
    );
    assert!(store.db().same(log.db()));

    let apart = dir.path().join("apart.db");
    let store2 = SqliteStore::open(&apart, SqliteOptions::new()).unwrap();
    let log2 = SqliteWorkspaceStorage::open(&apart, ws_options()).unwrap();
    assert!(!store2.db().same(log2.db()));
    assert!(
        open_descriptors(&apart) > executions_alone,
        "{} descriptors apart, {executions_alone} on one Db",
        open_descriptors(&apart)
    );

    // Both work on the shared one, and each sees the other's tables in the one file.
    store
        .commit(&mut Execution::new("e1", "d"), &Effects::new())
        .unwrap();
    let w = WorkspaceRef::new("t", "w");
    let mut tx = log.begin(&w).unwrap();
    tx.append(&[entry("a")]).unwrap();
    tx.commit().unwrap();
    drop((store, log, db));
    assert!(execstore_sqlite::has_execution_tables(&shared, None).unwrap());
    assert!(execstore_sqlite::has_workspace_tables(&shared).unwrap());
}

/// In memory both contracts see one database, and a commit of the execution store waits for
/// an open workspace transaction on the shared writer to end rather than running inside it
/// (or rolling it back).
#[test]
fn a_commit_waits_for_the_workspace_transaction_on_the_shared_writer() {
    let db = Db::open_in_memory(ConnectOptions::new()).unwrap();
    let store = SqliteStore::on(&db, SqliteOptions::new()).unwrap();
    let log = SqliteWorkspaceStorage::on(&db, ws_options()).unwrap();
    let w = WorkspaceRef::new("t", "w");

    let mut tx = log.begin(&w).unwrap();
    tx.append(&[entry("a")]).unwrap();
    let (done, finished) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let committed = store.commit(&mut Execution::new("e1", "d"), &Effects::new());
            done.send(committed).unwrap();
        });
        assert!(
            finished.recv_timeout(Duration::from_millis(300)).is_err(),
            "the commit ran while the workspace transaction held the writer"
        );
        tx.append(&[entry("b")]).unwrap();
        tx.commit().unwrap();
        let committed = finished.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(committed.unwrap(), Vec::<i64>::new());
    });
    let ids: Vec<String> = log
        .read(&w, &LogQuery::new())
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, ["a", "b"], "the transaction committed whole");
    assert_eq!(store.load("e1").unwrap().map(|e| e.version), Some(1));
}

/// A read-only Db serves both contracts' reads and refuses both contracts' writes.
#[test]
fn a_read_only_db_serves_both_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.db");
    {
        let db = Db::open(&path, ConnectOptions::new()).unwrap();
        let store = SqliteStore::on(&db, SqliteOptions::new()).unwrap();
        store
            .commit(&mut Execution::new("e1", "d"), &Effects::new())
            .unwrap();
        let log = SqliteWorkspaceStorage::on(&db, ws_options()).unwrap();
        let mut tx = log.begin(&WorkspaceRef::new("t", "w")).unwrap();
        tx.append(&[entry("a")]).unwrap();
        tx.commit().unwrap();
    }
    let db = Db::open(&path, ConnectOptions::new().read_only(true)).unwrap();
    assert!(db.is_read_only());
    let store = SqliteStore::on(&db, SqliteOptions::new()).unwrap();
    let log = SqliteWorkspaceStorage::on(&db, ws_options()).unwrap();
    assert!(store.load("e1").unwrap().is_some());
    assert_eq!(
        log.read(&WorkspaceRef::new("t", "w"), &LogQuery::new())
            .unwrap()
            .len(),
        1
    );
    assert!(store
        .commit(&mut Execution::new("e2", "d"), &Effects::new())
        .is_err());
    assert!(log.begin(&WorkspaceRef::new("t", "w")).is_err());
}
