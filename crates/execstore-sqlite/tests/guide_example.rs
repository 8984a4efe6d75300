//! docs/guide.md's first example ("Using the store") runs, and runs twice on the same file
//! (a second run loads what the first created instead of failing with a conflict). The body
//! of `guide_example` below is the guide's block line for line: a test checks it.

use execstore::executions::{Event, ListQuery, Status};
use execstore::{Effects, Execution, ExecutionStore, StoreError};
use execstore_sqlite::{SqliteOptions, SqliteStore};

#[allow(unused_variables)]
#[rustfmt::skip]
fn guide_example() -> Result<(), StoreError> {
    // guide: begin
    let store = SqliteStore::open("runs.db", SqliteOptions::new())?;

    // Load or create: a new execution is written at version 0 and stored at version 1 (saving
    // it again at version 0 would be a Conflict, so a second run loads it instead).
    if store.load("order-1")?.is_none() {
        let mut exe = Execution::new("order-1", "orders");
        exe.status = Status::Running;
        store.save(&mut exe)?;
    }

    // One event step: state, outbox, dedupe marker, timer, spawn and trace, in one transaction.
    let (loaded, seen) = store.load_for_event("order-1", "evt-42")?;
    let mut exe = loaded.expect("stored");
    if !seen {
        exe.active_path = Some("order.checkout".into());
        let effects = Effects::new()
            .emit(Some("payment-1"), Event::new("evt-43", "Charge"))
            .processed("evt-42")
            .schedule("order.checkout", 1_700_000_600.0)
            .trace(serde_json::json!({"event_kind": "Checkout"}).as_object().unwrap().clone());
        match store.commit(&mut exe, &effects) {
            Ok(outbox_seqs) => { /* durable: hand the outbox to the relay */ }
            Err(StoreError::Conflict { .. }) => { /* another writer won: reload and retry */ }
            Err(e) => return Err(e),
        }
    }

    // A monitor page: filters and an opaque cursor.
    let page = store.list_executions(&ListQuery::new().status([Status::Running]).limit(50))?;
    // guide: end
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].active_path.as_deref(), Some("order.checkout"));
    Ok(())
}

#[test]
fn the_guides_first_example_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let here = std::env::current_dir().unwrap();
    std::env::set_current_dir(dir.path()).unwrap();
    let first = guide_example();
    let second = guide_example();
    std::env::set_current_dir(here).unwrap();
    first.expect("first run");
    second.expect("second run, on the file the first wrote");
}

/// The guide's block (its lines, indentation aside) is the code above, between the markers.
#[test]
fn the_example_is_the_guides() {
    let guide = include_str!("../../../docs/guide.md");
    let start = guide.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let block = &guide[start..start + guide[start..].find("```").expect("closed")];
    let guide_lines: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("use "))
        .collect();
    let source = include_str!("guide_example.rs");
    let begin = source.find("// guide: begin").unwrap();
    let end = source.find("// guide: end").unwrap();
    let ours: Vec<&str> = source[begin..end]
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        ours, guide_lines,
        "docs/guide.md's first example and this test differ"
    );
}
