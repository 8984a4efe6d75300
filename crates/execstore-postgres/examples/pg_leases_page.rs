//! The monitor's leases page on PostgreSQL: fresh reflexr tables in a schema of their own
//! (dropped after) with one workspace (`t0/w0`) of N run-lease rows (every other one lapsed)
//! beside a smaller one, then medians of 9 of `leases()` (what the page read before: every
//! row) and of `leases_page` for a page of 51 (the monitor's 50 and one to know whether more
//! follow): the first, after the middle key, and after the last.
//!
//! ```text
//! cargo run --release -p execstore-postgres --example pg_leases_page -- URL [N]
//! ```

use std::time::Instant;

use execstore::workspace::{WorkspaceRef, WorkspaceStorage};
use execstore_postgres::{ConnectOptions, PgWorkspaceOptions, PgWorkspaceStorage};

#[path = "support/timing.rs"]
mod timing;
use timing::median_ms;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("a postgres:// URL");
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let schema = format!("leasespage{}", std::process::id());
    let options = PgWorkspaceOptions::new().connect(ConnectOptions::new().schema(schema.clone()));
    let storage = PgWorkspaceStorage::open(&url, options).expect("open");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let start = Instant::now();
    client
        .batch_execute(&format!(
            "SET search_path TO {schema}; \
             INSERT INTO reflexr_leases (tenant_id, workspace_id, key, holder, expires_at) \
             SELECT 't0', ws, 'run:' || ws || '-r' || lpad(g::text, 7, '0'), 'worker-' || (g % 8), \
               CASE WHEN g % 2 = 0 THEN timestamptz '2026-01-01Z' ELSE timestamptz '2099-01-01Z' END \
             FROM (VALUES ('w0', {n}), ('w1', {})) AS w(ws, count), generate_series(0, count - 1) g; \
             ANALYZE reflexr_leases",
            n / 10
        ))
        .expect("fill");
    println!(
        "filled {n} leases (and {} beside) in {:.1} s",
        n / 10,
        start.elapsed().as_secs_f64()
    );
    let w = WorkspaceRef::new("t0", "w0");
    let (every, rows) = median_ms(9, || storage.leases(&w).expect("leases").len());
    let middle = format!("run:w0-r{:07}", rows / 2);
    let last = storage.leases(&w).expect("leases").pop().map(|l| l.key);
    let (first, a) = median_ms(9, || storage.leases_page(&w, None, 51).expect("page").len());
    let (mid, b) = median_ms(9, || {
        storage.leases_page(&w, Some(&middle), 51).expect("page").len()
    });
    let (end, c) = median_ms(9, || {
        storage.leases_page(&w, last.as_deref(), 51).expect("page").len()
    });
    println!("leases() (every row, {rows}): {every:.2} ms");
    println!("leases_page first ({a}): {first:.3} ms; after the middle ({b}): {mid:.3} ms; after the last ({c}): {end:.3} ms");
    let plan = storage
        .explain_leases_page(&w, Some(&middle), 51, "")
        .expect("explain");
    println!("{plan}");
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .expect("drop");
}
