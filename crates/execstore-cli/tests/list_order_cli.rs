//! `execstore list --order`: `id` (the default, harel's), `updated` (most recently updated
//! first) or `created` (newest created first), pages following the cursor, and a cursor of
//! one order refused by the others.

mod common;

use std::path::Path;

use common::execstore;
use execstore::{Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::Value;

/// `x00`..`x07`, updated at (i * 3 % 8) seconds after 2026-01-01, `x07` never (no time);
/// created at (i * 5 % 8) seconds after it, `x00` never.
fn write_store(path: &Path) {
    let store = SqliteStore::open(path, SqliteOptions::new()).unwrap();
    for i in 0..8usize {
        let mut exe = Execution::new(format!("x{i:02}"), "orders");
        exe.updated_at = (i < 7).then(|| 1_767_225_600.0 + ((i * 3) % 8) as f64);
        exe.created_at = (i > 0).then(|| 1_767_225_600.0 + ((i * 5) % 8) as f64);
        store.save(&mut exe).unwrap();
    }
}

/// The page `list --json` prints for `args`: its ids and its next cursor.
fn page(dir: &Path, args: &[&str]) -> (Vec<String>, Option<String>) {
    let mut all = vec!["--db", "s.db", "--json", "list"];
    all.extend_from_slice(args);
    let out = execstore(dir, &all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    (ids, page["next_cursor"].as_str().map(str::to_owned))
}

fn x(numbers: &[usize]) -> Vec<String> {
    numbers.iter().map(|i| format!("x{i:02}")).collect()
}

#[test]
fn list_orders_by_id_or_by_update() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_store(&d.join("s.db"));
    // Seconds: x00 0, x01 3, x02 6, x03 1, x04 4, x05 7, x06 2; x07 none.
    let by_updated = x(&[5, 2, 4, 1, 6, 3, 0, 7]);
    assert_eq!(page(d, &["--order", "updated", "--all"]).0, by_updated);
    assert_eq!(page(d, &[]).0, x(&(0..8).collect::<Vec<_>>()), "id by default");
    assert_eq!(page(d, &["--order", "id"]).0, x(&(0..8).collect::<Vec<_>>()));
    // Page by page, following the printed cursor.
    let (first, cursor) = page(d, &["--order", "updated", "--limit", "3"]);
    assert_eq!(first, x(&[5, 2, 4]));
    let cursor = cursor.expect("more pages");
    let (second, _) = page(d, &["--order", "updated", "--limit", "3", "--cursor", &cursor]);
    assert_eq!(second, x(&[1, 6, 3]));
    // The cursor is refused in the other order; an unknown order is refused.
    let out = execstore(d, &["--db", "s.db", "list", "--order", "id", "--cursor", &cursor]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cursor"), "{err}");
    let out = execstore(d, &["--db", "s.db", "list", "--order", "newest"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("order"), "{err}");
}

#[test]
fn list_orders_by_creation() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_store(&d.join("s.db"));
    // Seconds: x01 5, x02 2, x03 7, x04 4, x05 1, x06 6, x07 3; x00 none.
    let by_created = x(&[3, 6, 1, 4, 7, 2, 5, 0]);
    assert_eq!(page(d, &["--order", "created", "--all"]).0, by_created);
    let (first, cursor) = page(d, &["--order", "created", "--limit", "3"]);
    assert_eq!(first, x(&[3, 6, 1]));
    let cursor = cursor.expect("more pages");
    let (second, _) = page(d, &["--order", "created", "--limit", "3", "--cursor", &cursor]);
    assert_eq!(second, x(&[4, 7, 2]));
    for other in ["id", "updated"] {
        let out = execstore(
            d,
            &["--db", "s.db", "list", "--order", other, "--cursor", &cursor],
        );
        assert!(!out.status.success(), "{other}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cursor"), "{err}");
    }
}
