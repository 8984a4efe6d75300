//! `checkpoint_pages` bounds the `-wal` file: with 500 the file stays well under 2,000 pages
//! (a little over 500, when the checkpoint thread holds the checkpoint as a commit crosses it),
//! with the store's default it grows to the pages written (about 4,000 here) before a commit
//! copies them back.
//!
//! A binary of its own: run beside the crate's other unit tests, a starved checkpoint thread
//! keeps the writer's automatic checkpoint from running (it gives way to the thread's), and
//! the file grows past the bound; see the closing note of issue 24.

use execstore::{Effects, Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};

#[test]
fn checkpoint_pages_bound_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let wal_pages = |pages: Option<u32>| -> u64 {
        let mut options = SqliteOptions::new().synchronous(Synchronous::Normal);
        if let Some(pages) = pages {
            options = options.checkpoint_pages(pages);
        }
        let path = dir.path().join(format!("c{pages:?}.db"));
        let store = SqliteStore::open(&path, options).unwrap();
        // About two pages a commit (the row, one page of each index, and its neighbours).
        for i in 0..2000 {
            let mut exe = Execution::new(format!("e{i:05}"), "d");
            exe.context.insert("filler".into(), "x".repeat(3000).into());
            store.commit(&mut exe, &Effects::new()).unwrap();
        }
        let bytes = std::fs::metadata(dir.path().join(format!("c{pages:?}.db-wal")))
            .unwrap()
            .len();
        bytes / 4096
    };
    let small = wal_pages(Some(500));
    let ours = wal_pages(None);
    assert!(small < 2000, "{small} pages");
    assert!(ours > 3000, "{ours} pages");
}
