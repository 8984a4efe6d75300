//! `execstore list --where` and `execstore attributes`, end to end on a file: the filter
//! finds what it says with the other options, a scan is noted until the path is declared,
//! attributes are declared, listed and dropped, and bad input is refused with the file
//! unchanged.

mod common;

use std::path::Path;

use common::execstore;
use execstore::{executions::Status, Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};

/// `o00`..`o09`: customer `c-(i%3)`, total `i*25`, even ones DONE.
fn write_store(path: &Path) {
    let store = SqliteStore::open(path, SqliteOptions::new()).unwrap();
    for i in 0..10 {
        let mut exe = Execution::new(format!("o{i:02}"), "orders");
        exe.status = if i % 2 == 0 { Status::Done } else { Status::Running };
        exe.updated_at = Some(1_767_225_600.0 + i as f64);
        let ctx = json!({"customer": format!("c-{}", i % 3), "total": i * 25});
        exe.context = ctx.as_object().unwrap().clone();
        store.save(&mut exe).unwrap();
    }
}

fn run(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["--db", "s.db"];
    all.extend_from_slice(args);
    let out = execstore(dir, &all);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ids(dir: &Path, args: &[&str]) -> (Vec<String>, Value) {
    let mut all = vec!["--json", "list"];
    all.extend_from_slice(args);
    let (ok, out, err) = run(dir, &all);
    assert!(ok, "{args:?}: {err}");
    let page: Value = serde_json::from_str(&out).unwrap();
    let ids = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    (ids, page["scan"].clone())
}

#[test]
fn list_where_and_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_store(&d.join("s.db"));

    let (found, scan) = ids(d, &["--where", "context.customer = c-1"]);
    assert_eq!(found, ["o01", "o04", "o07"]);
    assert_eq!(scan, json!(["context.customer"]));
    let (found, _) = ids(
        d,
        &[
            "--status",
            "running",
            "--where",
            "context.total >= 100 or context.customer = c-0",
        ],
    );
    assert_eq!(found, ["o03", "o05", "o07", "o09"]);
    let (found, _) = ids(
        d,
        &[
            "--all",
            "--limit",
            "1",
            "--where",
            "context.customer ^= c- and context.total < 50",
        ],
    );
    assert_eq!(found, ["o00", "o01"]);
    // The table says it scanned.
    let (ok, out, _) = run(d, &["list", "--where", "context.customer = c-1"]);
    assert!(ok);
    assert!(
        out.contains("3 shown") && out.contains("scan: context.customer"),
        "{out}"
    );

    // Declared: listed, indexed, no more scan note.
    let (ok, out, err) = run(d, &["attributes", "declare", "context.customer"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("declared context.customer (index built in "),
        "{out}"
    );
    let (_, out, _) = run(d, &["attributes", "list"]);
    assert_eq!(out, "context.customer\n");
    let (_, out, _) = run(d, &["--json", "attributes", "list"]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!([{"path": "context.customer"}])
    );
    let (found, scan) = ids(d, &["--where", "context.customer = c-1"]);
    assert_eq!((found.len(), scan), (3, Value::Null));
    let (_, out, _) = run(d, &["list", "--where", "context.customer = c-1"]);
    assert!(!out.contains("scan:"), "{out}");
    let store = SqliteStore::open(d.join("s.db"), SqliteOptions::new()).unwrap();
    assert_eq!(store.attributes().unwrap().len(), 1);
    drop(store);

    // Bad input: refused, nothing changed.
    let before = std::fs::read(d.join("s.db")).unwrap();
    for args in [
        &["list", "--where", "context.customer ="][..],
        &["list", "--where", "nope = 1"],
        &["list", "--where", "updated > yesterday"],
        &["attributes", "declare", "status"],
        &["attributes", "drop", "context."],
    ] {
        let (ok, _, err) = run(d, args);
        assert!(!ok, "{args:?} succeeded");
        assert!(err.contains("invalid input"), "{args:?}: {err}");
    }
    let (_, err) = (0, run(d, &["list", "--where", "context.customer ="]).2);
    assert!(err.contains("at character 19: expected a value"), "{err}");
    assert_eq!(
        std::fs::read(d.join("s.db")).unwrap(),
        before,
        "the file is unchanged"
    );

    let (ok, out, _) = run(d, &["attributes", "drop", "context.customer"]);
    assert!(ok && out == "dropped context.customer\n", "{out}");
    let (_, out, _) = run(d, &["attributes", "drop", "context.customer"]);
    assert_eq!(out, "context.customer was not declared\n");
}

/// `execstore bench-search` at a tiny size, as a smoke: it runs on SQLite and memory and
/// prints every figure (it checks itself that the declared pages scanned nothing and found
/// what they should).
#[test]
fn bench_search_smoke() {
    let dir = tempfile::tempdir().unwrap();
    for backend in ["sqlite", "memory"] {
        let out = execstore(
            dir.path(),
            &[
                "--json",
                "bench-search",
                "--backend",
                backend,
                "--executions",
                "1000",
                "--queries",
                "3",
            ],
        );
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(line["executions"], json!(1000));
        let ms = line["ms"].as_object().unwrap();
        assert_eq!(ms.len(), 9, "{ms:?}");
        assert!(
            ms.values().all(|t| t.as_f64().is_some_and(|t| t >= 0.0)),
            "{ms:?}"
        );
    }
}
