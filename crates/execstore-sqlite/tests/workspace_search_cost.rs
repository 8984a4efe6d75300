//! What one `where` page costs on a large log: a page examines at most its scan bound (a
//! range of the primary key), however long the log. Ignored by default (it writes
//! `EXECSTORE_SEARCH_ENVELOPES`, default 1,000,000, envelopes); run with
//! `cargo test --release -p execstore-sqlite --test workspace_search_cost -- --ignored --nocapture`.

use std::sync::Arc;
use std::time::Instant;

use execstore::workspace::{
    parse_log_where, Entry, LogSearch, ManualClock, Timestamp, WorkspaceRef, WorkspaceStorage,
};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage, Synchronous};
use serde_json::json;

#[test]
#[ignore = "writes a large log: run by hand to measure (docs/search.md)"]
fn a_page_costs_its_scan_not_the_log() {
    let n: usize = std::env::var("EXECSTORE_SEARCH_ENVELOPES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(Timestamp::parse_json_text("2026-01-01T12:00:00Z").unwrap());
    let s = SqliteWorkspaceStorage::open(
        dir.path().join("big.db"),
        SqliteWorkspaceOptions::new()
            .clock(Arc::new(clock))
            .synchronous(Synchronous::Off),
    )
    .unwrap();
    let w = WorkspaceRef::new("t", "w");
    let started = Instant::now();
    for chunk in 0..n.div_ceil(50_000) {
        let mut tx = s.begin(&w).unwrap();
        let entries: Vec<Entry> = (chunk * 50_000..((chunk + 1) * 50_000).min(n))
            .map(|i| {
                let service = ["auth", "billing", "search", "web"][i % 4];
                let event = json!({"type": "shop:hit", "service": service, "amount": i % 1000, "customer": format!("c-{}", i % 5000)});
                Entry::new(format!("e{i}"), json!({"kind": "source", "name": "m"}), event.as_object().unwrap().clone())
            })
            .collect();
        tx.append(&entries).unwrap();
        tx.commit().unwrap();
    }
    println!("wrote {n} envelopes in {:.1} s", started.elapsed().as_secs_f64());
    for (text, newest_first) in [
        ("event.customer = \"c-17\"", true),
        ("event.service = auth and event.amount > 990", true),
        ("event.nothing exists", true),
        ("event.customer = \"c-17\"", false),
    ] {
        let filter = parse_log_where(text, 0.0).unwrap();
        let search = LogSearch {
            newest_first,
            ..LogSearch::new(filter)
        };
        let mut times = Vec::new();
        let mut page = None;
        for _ in 0..5 {
            let t = Instant::now();
            page = Some(s.search_log(&w, &search).unwrap());
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        let page = page.unwrap();
        assert!(page.scanned <= search.scan);
        println!(
            "{text:?} newest_first={newest_first}: median {:.1} ms, max {:.1} ms; scanned {} to seq {:?}, {} matches",
            times[2],
            times[4],
            page.scanned,
            page.scanned_to,
            page.envelopes.len()
        );
    }
}
