//! The monitor list's first page at scale: fills a scratch SQLite file to each size and
//! times `list_executions` (limit 50) under each filter, in the `updated` and `created`
//! orders (the median of 7, ms).
//!
//! ```text
//! cargo run --release -p execstore-sqlite --example list_scale -- \
//!     [--sizes 100000,1000000] [--file PATH] [--null-times]
//! ```
//!
//! `--file` defaults to `execstore-list-scale.db` in the temporary directory (removed first).
//! `--null-times` leaves `created_at` and `updated_at` out of every document, as W1's
//! documents (and so `execstore bench --scale`'s) have them: each time order is then its
//! NULL tail, by id descending.
//!
//! The fill is fast rather than realistic in its history: 1,000 executions saved through the
//! contract (a W1-like mix: every second one RUNNING, the others DONE or FAILED, every fourth
//! a child of the one before it, five definitions, a small context; the 500 with the lowest
//! ids then moved to a sixth, `def-old`, whose copies go to `def-0`), then copied with new
//! ids and later times by `INSERT ... SELECT` on the same file (the migrations' indexes and
//! the counts' triggers see every copy, as they would a commit).

use std::time::Instant;

use execstore::executions::{ListOrder, ListQuery, Status};
use execstore::{Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};

const BASE: usize = 1_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut sizes = vec![100_000usize, 1_000_000];
    let mut file = std::env::temp_dir().join("execstore-list-scale.db");
    let mut null_times = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--null-times" {
            null_times = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sizes" => sizes = value.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--file" => file = value.into(),
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    let store = SqliteStore::open(&file, SqliteOptions::new().synchronous(Synchronous::Off))?;
    let t0 = 1.7e9;
    for i in 0..BASE {
        let mut exe = Execution::new(format!("x{i:04}"), format!("def-{}", i % 5));
        exe.status = match i % 10 {
            9 => Status::Failed,
            n if n % 2 == 0 => Status::Running,
            _ => Status::Done,
        };
        exe.active_path = Some(format!("root.s{}", i % 7));
        if !null_times {
            exe.created_at = Some(t0 + i as f64);
            exe.updated_at = Some(t0 + i as f64 + 0.5);
        }
        if i % 4 == 3 {
            exe.parent_id = Some(format!("x{:04}", i - 1));
        }
        let ctx = serde_json::json!({"customer": format!("c-{}", i % 97), "total": i});
        exe.context = ctx.as_object().cloned().unwrap_or_default();
        store.save(&mut exe)?;
    }
    drop(store);
    let conn = rusqlite::Connection::open(&file)?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;")?;
    // A definition no longer started: 500 of the oldest executions (of the base, never
    // copied), so its share falls as the store grows and its page is at the walk's far end.
    conn.execute(
        "UPDATE executions SET definition_id = 'def-old' WHERE id IN \
         (SELECT id FROM executions ORDER BY id LIMIT 500)",
        [],
    )?;
    // Copy k of the base: ids `x0000-k`, times k * BASE later, parents renamed alike.
    let copy = "INSERT INTO executions (id, definition_id, data, version) \
        SELECT id || '-' || ?1, CASE definition_id WHEN 'def-old' THEN 'def-0' ELSE definition_id END, json_set(data, '$.id', id || '-' || ?1, \
        '$.created_at', json_extract(data,'$.created_at') + ?1 * 1000, \
        '$.updated_at', json_extract(data,'$.updated_at') + ?1 * 1000, \
        '$.parent_id', CASE WHEN json_extract(data,'$.parent_id') IS NULL THEN NULL \
        ELSE json_extract(data,'$.parent_id') || '-' || ?1 END), version \
        FROM executions WHERE id NOT LIKE '%-%'";
    let mut copies = 0usize;
    let orders = [ListOrder::UpdatedDesc, ListOrder::CreatedDesc];
    println!("size,order,query,ms");
    for size in sizes {
        let started = Instant::now();
        while (copies + 1) * BASE < size {
            copies += 1;
            conn.execute(copy, [copies as i64])?;
        }
        eprintln!("filled to {size} in {:.1} s", started.elapsed().as_secs_f64());
        let store = SqliteStore::open(&file, SqliteOptions::new())?;
        let last = t0 + (copies * BASE) as f64;
        for order in orders {
            let q = || ListQuery::new().order(order).limit(50);
            let queries = [
                ("unfiltered", q()),
                ("status RUNNING", q().status([Status::Running])),
                ("status FAILED", q().status([Status::Failed])),
                ("RUNNING or FAILED", q().status([Status::Running, Status::Failed])),
                ("definition def-1", q().definition("def-1")),
                ("definition def-old (500, the oldest)", q().definition("def-old")),
                (
                    "RUNNING + def-old",
                    q().status([Status::Running]).definition("def-old"),
                ),
                ("roots only", q().roots_only(true)),
                (
                    "RUNNING + def-1 + roots",
                    q().status([Status::Running]).definition("def-1").roots_only(true),
                ),
                (
                    "updated window (last 2,000 s)",
                    q().updated_between(Some(last - 2_000.0), None),
                ),
                (
                    "created window (last 2,000 s)",
                    q().created_between(Some(last - 2_000.0), None),
                ),
                (
                    "created window (first 2,000 s)",
                    q().created_between(Some(t0), Some(t0 + 2_000.0)),
                ),
                (
                    "updated window (first 2,000 s)",
                    q().updated_between(Some(t0), Some(t0 + 2_000.0)),
                ),
            ];
            for (what, query) in queries {
                let mut times = Vec::with_capacity(7);
                let mut n = 0;
                for _ in 0..7 {
                    let t = Instant::now();
                    n = store.list_executions(&query)?.items.len();
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
                times.sort_by(f64::total_cmp);
                println!("{size},{order},{what} ({n} items),{:.3}", times[3]);
            }
        }
    }
    Ok(())
}
