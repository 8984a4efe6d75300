//! The monitor's leases page at scale: one workspace (`t0/w0`) of N run-lease rows (every other
//! one lapsed) beside a smaller one, written as reflexr writes them, then medians of 9 of
//! `leases()` (what the page read before: every row) and of `leases_page` for a page of 51
//! (the monitor's 50 and one to know whether more follow): the first, after the middle key,
//! and after the last.
//!
//! ```text
//! cargo run --release -p execstore-sqlite --example leases_page -- [--leases 1000000] [--db FILE]
//! ```
//!
//! Without `--db` the file is a temporary one; with it, an existing file's leases are used
//! as they are (nothing is added when `t0/w0` already holds some). The file also holds one
//! envelope of `t0/w0`, so that `execstore monitor --db FILE` shows the workspace.

use std::time::Instant;

use execstore::workspace::{Entry, WorkspaceRef, WorkspaceStorage};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};

fn median_ms(mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut times = Vec::new();
    let mut n = 0;
    for _ in 0..9 {
        let start = Instant::now();
        n = f();
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    (times[4], n)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let n: usize = arg("--leases").map_or(1_000_000, |v| v.parse().expect("--leases N"));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = arg("--db").map_or_else(|| dir.path().join("leases.db"), Into::into);
    let storage = SqliteWorkspaceStorage::open(&path, SqliteWorkspaceOptions::new()).expect("open");
    let w = WorkspaceRef::new("t0", "w0");
    if storage.leases_page(&w, None, 1).expect("page").is_empty() {
        let start = Instant::now();
        let mut conn = rusqlite::Connection::open(&path).expect("open");
        let tx = conn.transaction().expect("begin");
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO reflexr_leases (tenant_id, workspace_id, \"key\", holder, expires_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .expect("prepare");
            for (ws, count) in [("w0", n), ("w1", n / 10)] {
                for i in 0..count {
                    let expires = if i % 2 == 0 {
                        "2026-01-01 00:00:00.000000"
                    } else {
                        "2099-01-01 00:00:00.000000"
                    };
                    insert
                        .execute(rusqlite::params![
                            "t0",
                            ws,
                            format!("run:{ws}-r{i:07}"),
                            format!("worker-{}", i % 8),
                            expires
                        ])
                        .expect("insert");
                }
            }
        }
        tx.commit().expect("commit");
        // One envelope, so that the workspace exists for the monitor.
        let mut tx = storage.begin(&w).expect("begin");
        let event = serde_json::json!({"type": "bench:start"});
        tx.append(&[Entry::new(
            "e0",
            serde_json::json!({"kind": "source"}),
            event.as_object().expect("object").clone(),
        )])
        .expect("append");
        tx.commit().expect("commit");
        println!(
            "filled {n} leases (and {} beside) in {:.1} s",
            n / 10,
            start.elapsed().as_secs_f64()
        );
    }
    let (every, rows) = median_ms(|| storage.leases(&w).expect("leases").len());
    let middle = format!("run:w0-r{:07}", rows / 2);
    let last = storage.leases(&w).expect("leases").pop().map(|l| l.key);
    let (first, a) = median_ms(|| storage.leases_page(&w, None, 51).expect("page").len());
    let (mid, b) = median_ms(|| storage.leases_page(&w, Some(&middle), 51).expect("page").len());
    let (end, c) = median_ms(|| storage.leases_page(&w, last.as_deref(), 51).expect("page").len());
    println!("leases() (every row, {rows}): {every:.2} ms");
    println!("leases_page first ({a}): {first:.3} ms; after the middle ({b}): {mid:.3} ms; after the last ({c}): {end:.3} ms");
}
