//! Batches, group commit and the reader connection on SQLite: a batch is one transaction
//! (all of it or none of it when the backend fails), reads do not wait behind a commit, and
//! the group committer hands a failed transaction's error to every caller of it.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use execstore::{
    executions::{BatchItem, Event, GroupCommit, ListQuery},
    Effects, Execution, ExecutionStore, StoreError,
};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use rusqlite::Connection;

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("store.db")
}

fn open(path: &Path, busy_ms: u64) -> SqliteStore {
    let options = SqliteOptions::new().busy_timeout(Duration::from_millis(busy_ms));
    SqliteStore::open(path, options).unwrap()
}

fn count(conn: &Connection, table: &str) -> i64 {
    conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| row.get(0))
        .unwrap()
}

/// Every table's row count, read on a connection of its own.
fn counts(path: &Path) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    [
        "executions",
        "outbox",
        "processed_events",
        "timers",
        "spawns",
        "trace",
    ]
    .iter()
    .map(|table| count(&conn, table))
    .collect()
}

fn batch(store: &SqliteStore) -> Vec<BatchItem> {
    let mut old = store.load("old").unwrap().expect("stored");
    old.active_path = Some("root.next".into());
    let step = |id: &str| {
        Effects::new()
            .emit(Some(id), Event::new(format!("{id}-out"), "E"))
            .processed(format!("{id}-in"))
            .schedule("root.t", 5.0)
            .spawn(format!("{id}-child"), "root.c", Default::default())
            .trace(Default::default())
    };
    vec![
        BatchItem::new(old, step("old")),
        BatchItem::new(Execution::new("new", "d"), step("new")),
        BatchItem::new(Execution::new("", "d"), Effects::new()),
    ]
}

/// The transaction cannot start (another connection holds the write lock past the busy
/// timeout): the call fails as a whole with a retryable error, nothing is written and no
/// item's version moves. Retried later, the same batch commits.
#[test]
fn a_batch_that_cannot_commit_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = open(&path, 50);
    store.save(&mut Execution::new("old", "d")).unwrap();
    let before = counts(&path);

    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut items = batch(&store);
    let err = store.commit_batch(&mut items).unwrap_err();
    assert!(
        matches!(err, StoreError::Backend { retryable: true, .. }),
        "{err}"
    );
    let versions: Vec<i64> = items.iter().map(|item| item.execution.version).collect();
    assert_eq!(versions, [1, 0, 0], "no version moves when the batch fails");
    other.execute_batch("COMMIT").unwrap();
    assert_eq!(counts(&path), before, "nothing of the batch was written");

    let results = store.commit_batch(&mut items).unwrap();
    assert_eq!(results[0].as_ref().unwrap().len(), 1);
    assert_eq!(results[1].as_ref().unwrap().len(), 1);
    assert_eq!(results[2].as_ref().unwrap_err().code(), "INVALID_INPUT");
    let versions: Vec<i64> = items.iter().map(|item| item.execution.version).collect();
    assert_eq!(versions, [2, 1, 0]);
    assert_eq!(counts(&path)[..5], [2, 2, 2, 2, 2]);
}

/// The backend fails on a later item, after an earlier one was applied inside the
/// transaction: the whole batch rolls back, the call fails, no version moves.
#[test]
fn a_backend_failure_mid_batch_rolls_back_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = open(&path, 1000);
    store.save(&mut Execution::new("old", "d")).unwrap();
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch(
            "CREATE TRIGGER poison BEFORE INSERT ON outbox WHEN NEW.event LIKE '%new-out%' \
             BEGIN SELECT RAISE(ABORT, 'poisoned'); END;",
        )
        .unwrap();
    let before = counts(&path);
    let mut items = batch(&store);
    let err = store.commit_batch(&mut items).unwrap_err();
    assert!(
        matches!(err, StoreError::Backend { retryable: false, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("poisoned"), "{err}");
    let versions: Vec<i64> = items.iter().map(|item| item.execution.version).collect();
    assert_eq!(versions, [1, 0, 0]);
    assert_eq!(
        counts(&path),
        before,
        "the first item was rolled back with the rest"
    );
    assert_eq!(store.load("old").unwrap().unwrap().version, 1);

    other.execute_batch("DROP TRIGGER poison").unwrap();
    let results = store.commit_batch(&mut items).unwrap();
    assert!(results[0].is_ok() && results[1].is_ok());
}

/// While the writer waits for another connection's write lock (holding the store's writer
/// connection), reads go through the reader connection and answer at once. Once the commit
/// returns, a read sees it.
#[test]
fn reads_do_not_wait_behind_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = open(&path, 10_000);
    let mut exe = Execution::new("r", "d");
    store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new("e1", "E")).processed("in-1"),
        )
        .unwrap();

    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::thread::scope(|s| {
        let (started, wait_started) = mpsc::channel();
        let store = &store;
        let mut exe = exe.clone();
        let writer = s.spawn(move || {
            started.send(()).unwrap();
            store
                .commit(&mut exe, &Effects::new().processed("in-2"))
                .map(|_| exe.version)
        });
        wait_started.recv().unwrap();
        std::thread::sleep(Duration::from_millis(200)); // the writer is waiting for the lock
        let t0 = Instant::now();
        assert_eq!(store.load("r").unwrap().unwrap().version, 1);
        assert!(store.load_for_event("r", "in-1").unwrap().1);
        assert!(!store.is_processed("r", "in-2").unwrap());
        assert_eq!(store.list_executions(&ListQuery::new()).unwrap().items.len(), 1);
        assert_eq!(store.pending_outbox(None, 10).unwrap().len(), 1);
        assert!(store.read_trace("r").unwrap().is_empty());
        assert_eq!(store.ids_with_prefix("r").unwrap(), ["r"]);
        assert!(store.due_timers(1e9, None, 10).unwrap().is_empty());
        assert!(store.pending_spawns(None, 10).unwrap().is_empty());
        assert_eq!(store.schema_version().unwrap(), 13);
        let waited = t0.elapsed();
        assert!(!writer.is_finished(), "the writer is still waiting for the lock");
        other.execute_batch("COMMIT").unwrap();
        assert_eq!(writer.join().unwrap().unwrap(), 2);
        assert!(
            waited < Duration::from_secs(2),
            "reads waited {waited:?} behind a commit"
        );
    });
    assert_eq!(
        store.load("r").unwrap().unwrap().version,
        2,
        "a read sees a returned commit"
    );
    assert!(store.is_processed("r", "in-2").unwrap());
}

/// Closing the store checkpoints the WAL into the file and removes it, as with one
/// connection (the writer closes last).
#[test]
fn closing_leaves_no_wal() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = open(&path, 1000);
    for i in 0..20 {
        store.save(&mut Execution::new(format!("w{i}"), "d")).unwrap();
    }
    assert_eq!(store.ids_with_prefix("w").unwrap().len(), 20);
    drop(store);
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    assert!(!wal.exists(), "the WAL is gone after close");
    assert_eq!(open(&path, 1000).ids_with_prefix("w").unwrap().len(), 20);
}

/// A read-only open still reads everything and refuses batches and acks as it refuses
/// every write.
#[test]
fn read_only_refuses_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = open(&path, 1000);
    let mut exe = Execution::new("ro", "d");
    let seqs = store
        .commit(&mut exe, &Effects::new().emit(None, Event::new("e", "E")))
        .unwrap();
    drop(store);
    let ro = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
    assert_eq!(ro.load("ro").unwrap().unwrap().version, 1);
    let mut items = vec![BatchItem::new(exe.clone(), Effects::new())];
    let err = ro.commit_batch(&mut items).unwrap_err();
    assert!(
        matches!(err, StoreError::Backend { retryable: false, .. }),
        "{err}"
    );
    assert_eq!(items[0].execution.version, 1);
    assert!(ro.ack_outbox_many(&seqs).is_err());
    assert_eq!(ro.pending_outbox(None, 10).unwrap().len(), 1);
}

/// Through the group committer, a transaction that cannot start fails every caller of the
/// batch with the same retryable error; afterwards they all commit.
#[test]
fn group_commit_hands_a_failed_transaction_to_every_caller() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let group = GroupCommit::new(open(&path, 300));
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let group = &group;
                s.spawn(move || {
                    let mut exe = Execution::new(format!("g{t}"), "d");
                    let effects = Effects::new().emit(None, Event::new(format!("g{t}-out"), "E"));
                    let err = group.commit(&mut exe, &effects).unwrap_err();
                    assert_eq!(exe.version, 0);
                    (err.is_retryable(), err.to_string())
                })
            })
            .collect();
        for handle in handles {
            let (retryable, message) = handle.join().unwrap();
            assert!(retryable, "{message}");
            assert!(message.contains("locked"), "{message}");
        }
    });
    other.execute_batch("COMMIT").unwrap();
    assert!(group.pending_outbox(None, 10).unwrap().is_empty());
    for t in 0..4 {
        let mut exe = Execution::new(format!("g{t}"), "d");
        group.save(&mut exe).unwrap();
        assert_eq!(exe.version, 1);
    }
}
