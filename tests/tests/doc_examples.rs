//! The Rust examples of README.md ("Quick start") and docs/guide.md ("Using the store") run as
//! a user pastes them, and run again on the file the first run wrote (load-or-create, never a
//! conflict on the second run). Each function's body between its markers is the document's
//! block line for line (indentation and `use` lines aside): a test checks each.

use execstore::executions::{Event, ListQuery, Status};
use execstore::{Effects, Execution, ExecutionStore, StoreError};
use execstore_sqlite::{SqliteOptions, SqliteStore};

#[rustfmt::skip]
fn readme_quick_start() -> Result<(), StoreError> {
    // example: begin
    let store = SqliteStore::open("orders.db", SqliteOptions::new().prefix("harel"))?;
    let mut exe = match store.load("order-1")? {
        Some(exe) => exe,
        None => { let mut exe = Execution::new("order-1", "orders"); store.save(&mut exe)?; exe }
    };
    store.commit(&mut exe, &Effects::new().processed("evt-1"))?; // the state, its outbox, timers...: all or nothing
    // example: end
    Ok(())
}

#[allow(unused_variables)]
#[rustfmt::skip]
fn guide_example() -> Result<(), StoreError> {
    // example: begin
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
    // example: end
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].active_path.as_deref(), Some("order.checkout"));
    Ok(())
}

/// The process's working directory is one for every test thread: one example at a time.
static CWD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `example` twice in a fresh folder (its files relative to it, as a user's program's).
fn runs_twice(example: fn() -> Result<(), StoreError>) {
    let _cwd = CWD.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let here = std::env::current_dir().unwrap();
    std::env::set_current_dir(dir.path()).unwrap();
    let first = example();
    let second = example();
    std::env::set_current_dir(here).unwrap();
    first.expect("first run");
    second.expect("second run, on the file the first wrote");
}

/// The first ```rust block of `doc` after `heading`, as its non-empty lines (trimmed, `use`
/// lines left out), equals the body of `function` in this file between its markers.
fn block_is(doc: &str, heading: &str, function: &str) {
    let section = &doc[doc.find(heading).unwrap_or_else(|| panic!("a section {heading}"))..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let block = &section[start..start + section[start..].find("```").expect("closed")];
    let theirs: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("use "))
        .collect();
    let source = include_str!("doc_examples.rs");
    let body = &source[source.find(&format!("fn {function}()")).expect("the function")..];
    let begin = body.find("// example: begin").unwrap();
    let end = body.find("// example: end").unwrap();
    let ours: Vec<&str> = body[begin..end]
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        ours, theirs,
        "the document's block ({heading}) and {function} differ"
    );
}

#[test]
fn the_readme_quick_start_runs_twice() {
    runs_twice(readme_quick_start);
}

#[test]
fn the_quick_start_is_the_readmes() {
    block_is(
        include_str!("../../README.md"),
        "## Quick start",
        "readme_quick_start",
    );
}

#[test]
fn the_guides_first_example_runs_twice() {
    runs_twice(guide_example);
}

#[test]
fn the_guide_example_is_the_guides() {
    block_is(
        include_str!("../../docs/guide.md"),
        "## Using the store",
        "guide_example",
    );
}
