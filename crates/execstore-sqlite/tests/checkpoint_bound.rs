//! `checkpoint_pages` bounds the `-wal` file: with 500 the file stays well under 2,000 pages
//! (a little over 500, when the checkpoint thread holds the checkpoint as a commit crosses it),
//! with the store's default it grows to the pages written (about 4,000 here) before a commit
//! copies them back.
//!
//! Ignored, and counted as skipped: the bound does not hold. On an idle 2-core machine the
//! `-wal` passes 2,000 pages in about one run of three (2,110 to 10,319 pages seen, on
//! 1121ee5's code as on today's), more under load: the checkpoint thread and the writer's own
//! automatic checkpoint get in each other's way, and the log does not start over while the
//! writer keeps committing. Two fixes tried (a commit waiting for the thread's next round; the
//! thread standing aside once the log passes the bound) did not make it hold. Run it with
//! `cargo test -p execstore-sqlite --test checkpoint_bound -- --ignored`.

use execstore::{Effects, Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};

#[test]
#[ignore = "the -wal passes the bound in about one run of three: the checkpoint thread and the writer's own checkpoint get in each other's way (see the file's doc)"]
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
