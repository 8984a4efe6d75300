//! Read-only opens of both contracts are SQLite read-only opens: on a crashed writer's files
//! (copied while a writer held them mid-work: the same bytes a SIGKILL leaves) they change
//! nothing but a `-shm`, refuse a hot journal with a [`ReadOnlyRefusal`], and on a clean file
//! create no sidecar, then follow a writer that shows up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use execstore::workspace::{LogQuery, WorkspaceRef, WorkspaceStorage};
use execstore::{Effects, Execution, ExecutionStore, StoreError};
use execstore_sqlite::{
    has_execution_tables, recover, ReadOnlyRefusal, SqliteOptions, SqliteStore, SqliteWorkspaceOptions,
    SqliteWorkspaceStorage,
};

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn without_shm(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .filter(|(n, _)| !n.ends_with("-shm"))
        .map(|(n, b)| (n.clone(), b.clone()))
        .collect()
}

fn ro() -> SqliteOptions {
    SqliteOptions::new().read_only(true)
}

fn ws_ro() -> SqliteWorkspaceOptions {
    SqliteWorkspaceOptions::new().read_only(true)
}

/// A file with both contracts' tables and a few executions, closed cleanly.
fn store_file(dir: &Path) -> PathBuf {
    let path = dir.join("s.db");
    let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    for i in 0..5 {
        store
            .commit(&mut Execution::new(format!("e-{i}"), "d"), &Effects::new())
            .unwrap();
    }
    drop(store);
    drop(SqliteWorkspaceStorage::open(&path, SqliteWorkspaceOptions::new()).unwrap());
    path
}

fn copy_to(files: &[&Path], dir: &Path) {
    for f in files {
        std::fs::copy(f, dir.join(f.file_name().unwrap())).unwrap();
    }
}

fn refusal(err: &StoreError) -> Option<&ReadOnlyRefusal> {
    std::error::Error::source(err)?.downcast_ref::<ReadOnlyRefusal>()
}

#[test]
fn a_hot_journal_is_refused_with_what_to_do_and_left_to_roll_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path());
    let crash = tempfile::tempdir().unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
            .unwrap();
        conn.execute_batch("PRAGMA cache_size = 2; BEGIN; UPDATE executions SET version = version + 100;")
            .unwrap();
        conn.cache_flush().unwrap();
        // The file and its journal mid-transaction: what a SIGKILL would leave.
        let journal = PathBuf::from(format!("{}-journal", path.display()));
        copy_to(&[&path, &journal], crash.path());
        conn.execute_batch("ROLLBACK").unwrap();
    }
    let copy = crash.path().join("s.db");
    let before = files(crash.path());
    assert!(before.contains_key("s.db-journal"));

    let errors = [
        SqliteStore::open(&copy, ro()).err(),
        SqliteWorkspaceStorage::open(&copy, ws_ro()).err(),
        has_execution_tables(&copy, None).err(),
    ];
    for err in errors {
        let err = err.expect("a read-only open of a hot journal is refused");
        assert!(
            matches!(refusal(&err), Some(ReadOnlyRefusal::HotJournal { path }) if path == &copy),
            "{err:?}"
        );
        assert!(matches!(err, StoreError::Backend { retryable: false, .. }));
        assert!(err.to_string().contains("read-write"), "{err}");
    }
    assert_eq!(
        files(crash.path()),
        before,
        "nothing rolled back, nothing created"
    );

    // Opening it read-write once rolls it back; then it reads as before the transaction.
    recover(&copy).unwrap();
    assert!(!crash.path().join("s.db-journal").exists());
    let store = SqliteStore::open(&copy, ro()).unwrap();
    assert_eq!(store.load("e-0").unwrap().unwrap().version, 1);
}

#[test]
fn a_live_writers_wal_is_read_and_left_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path());
    let writer = SqliteStore::open(&path, SqliteOptions::new().checkpoint_pages(0)).unwrap();
    let ws_writer = SqliteWorkspaceStorage::open(&path, SqliteWorkspaceOptions::new()).unwrap();
    let ws = WorkspaceRef::new("t", "w");
    ws_writer.save_cursor(&ws, "c", 0).unwrap();
    for i in 0..50 {
        writer
            .commit(&mut Execution::new(format!("w-{i}"), "d"), &Effects::new())
            .unwrap();
    }
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    for with_shm in [false, true] {
        let crash = tempfile::tempdir().unwrap();
        copy_to(&[&path, &wal], crash.path());
        if with_shm {
            let shm = PathBuf::from(format!("{}-shm", path.display()));
            copy_to(&[&shm], crash.path());
        }
        let copy = crash.path().join("s.db");
        let before = files(crash.path());
        let store = SqliteStore::open(&copy, ro()).unwrap();
        assert_eq!(
            store.load("w-49").unwrap().unwrap().version,
            1,
            "the WAL's commits are read"
        );
        let storage = SqliteWorkspaceStorage::open(&copy, ws_ro()).unwrap();
        assert_eq!(storage.cursors(&ws).unwrap(), vec![("c".to_owned(), 0)]);
        assert!(storage.read(&ws, &LogQuery::new()).unwrap().is_empty());
        drop((store, storage));
        let after = files(crash.path());
        assert_eq!(without_shm(&after), without_shm(&before), "with -shm: {with_shm}");
        assert!(after.contains_key("s.db-wal"));
    }
}

#[test]
fn a_clean_file_is_read_without_sidecars_then_a_writer_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path());
    let before = files(dir.path());
    assert_eq!(before.len(), 1);
    let store = SqliteStore::open(&path, ro()).unwrap();
    let storage = SqliteWorkspaceStorage::open(&path, ws_ro()).unwrap();
    assert!(store.load("e-4").unwrap().is_some());
    let ws = WorkspaceRef::new("t", "late");
    assert!(storage.cursors(&ws).unwrap().is_empty());
    assert!(has_execution_tables(&path, None).unwrap());
    assert_eq!(files(dir.path()), before, "no -wal or -shm created by the reads");

    // A writer that comes, commits and goes (checkpointing, removing its -wal) between two
    // reads is seen by the next one.
    let early = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    early
        .commit(&mut Execution::new("early", "d"), &Effects::new())
        .unwrap();
    drop(early);
    assert!(!dir.path().join("s.db-wal").exists());
    assert!(
        store.load("early").unwrap().is_some(),
        "a writer that came and went is seen"
    );
    assert_eq!(files(dir.path()).len(), 1);

    let writer = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    let ws_writer = SqliteWorkspaceStorage::open(&path, SqliteWorkspaceOptions::new()).unwrap();
    writer
        .commit(&mut Execution::new("late", "d"), &Effects::new())
        .unwrap();
    ws_writer.save_cursor(&ws, "c", 0).unwrap();
    assert!(
        store.load("late").unwrap().is_some(),
        "the reader follows the writer's WAL"
    );
    assert_eq!(storage.cursors(&ws).unwrap(), vec![("c".to_owned(), 0)]);
    let mut exe = store.load("late").unwrap().unwrap();
    assert!(store.save(&mut exe).is_err(), "and still writes nothing");
}
