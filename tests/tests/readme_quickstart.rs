//! README's Rust quick start runs, and runs twice on the same file (as a user pasting it into a
//! program and running that program again would). The body of `quick_start` below is README's
//! block line for line: a test checks it.

use execstore::{Effects, Execution, ExecutionStore, StoreError};
use execstore_sqlite::{SqliteOptions, SqliteStore};

#[rustfmt::skip]
fn quick_start() -> Result<(), StoreError> {
    // readme: begin
    let store = SqliteStore::open("orders.db", SqliteOptions::new().prefix("harel"))?;
    let mut exe = match store.load("order-1")? {
        Some(exe) => exe,
        None => { let mut exe = Execution::new("order-1", "orders"); store.save(&mut exe)?; exe }
    };
    store.commit(&mut exe, &Effects::new().processed("evt-1"))?; // the state, its outbox, timers...: all or nothing
    // readme: end
    Ok(())
}

#[test]
fn the_readme_quick_start_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let here = std::env::current_dir().unwrap();
    std::env::set_current_dir(dir.path()).unwrap();
    let first = quick_start();
    let second = quick_start();
    std::env::set_current_dir(here).unwrap();
    first.expect("first run");
    second.expect("second run, on the file the first wrote");
}

/// README's Rust block under "Quick start" (its lines, indentation aside, `use` lines aside)
/// is the code above, between the markers.
#[test]
fn the_quick_start_is_the_readmes() {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find("## Quick start").expect("a Quick start section")..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let block = &section[start..start + section[start..].find("```").expect("closed")];
    let theirs: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("use "))
        .collect();
    let source = include_str!("readme_quickstart.rs");
    let begin = source.find("// readme: begin").unwrap();
    let end = source.find("// readme: end").unwrap();
    let ours: Vec<&str> = source[begin..end]
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(ours, theirs, "README's Rust quick start and this test differ");
}
