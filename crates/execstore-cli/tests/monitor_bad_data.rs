//! The monitor over damaged data: a file whose pages are garbage answers `CORRUPT` (what it
//! is), not `BACKEND` (a failure of the server that a retry or an operator could fix).

mod common;

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use common::{start_monitor, Monitor};
use serde_json::Value;

fn demo(dir: &Path, n: u32) -> PathBuf {
    let db = dir.join("demo.db");
    let out = common::execstore(
        dir,
        &[
            "demo",
            "--no-serve",
            "--db",
            db.to_str().unwrap(),
            "--executions",
            &n.to_string(),
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    db
}

fn get(monitor: &Monitor, path: &str) -> (u16, Value) {
    let mut response = monitor
        .agent
        .get(format!("{}{}", monitor.url, path.trim_start_matches('/')))
        .call()
        .expect("the request went through");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
    )
}

/// Garbage over the root page of the executions table: every read of it is a 500 `CORRUPT`
/// (before: `BACKEND`, "database disk image is malformed"), and what does not read it still
/// answers.
#[test]
fn a_damaged_file_answers_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path(), 200);
    let (root, page_size): (i64, i64) = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let root = conn
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = 'executions'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let page_size = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        (root, page_size)
    };
    assert!(root > 1, "the executions table is not on the schema page");
    {
        let mut file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        file.seek(SeekFrom::Start(((root - 1) * page_size) as u64))
            .unwrap();
        file.write_all(&vec![0xa5; page_size as usize]).unwrap();
    }
    let monitor = start_monitor(&["monitor", "--db", db.to_str().unwrap()], &[]);
    for path in ["/api/executions", "/api/counts", "/api/definitions/orders/graph"] {
        let (status, body) = get(&monitor, path);
        assert_eq!(status, 500, "{path}: {body}");
        assert_eq!(body["error"]["code"], "CORRUPT", "{path}: {body}");
    }
    let (status, body) = get(&monitor, "/api/info");
    assert_eq!(status, 200, "{body}");
}

/// A file whose workspace log records a reflexr schema version this build does not know: the
/// monitor starts all the same, read-only, and says so (on stderr, in `/api/info`'s
/// `warnings`, which the UI shows); before, it refused to start.
#[test]
fn an_unknown_reflexr_version_is_served_read_only_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path(), 20);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE reflexr_alembic_version SET version_num = '0009'", [])
        .unwrap();
    let monitor = start_monitor(&["monitor", "--db", db.to_str().unwrap()], &[]);
    let (status, info) = get(&monitor, "/api/info");
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["writable"], false);
    assert_eq!(info["holds"]["workspaces"], true, "{info}");
    let warnings = info["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{info}");
    let warning = warnings[0].as_str().unwrap();
    assert!(warning.contains("0009") && warning.contains("0008"), "{warning}");
    let (status, body) = get(&monitor, "/api/workspaces");
    assert_eq!(status, 200, "{body}");
    assert!(!body["items"].as_array().unwrap().is_empty(), "{body}");
    // A known version: no warning.
    let other_dir = tempfile::tempdir().unwrap();
    let known = demo(other_dir.path(), 20);
    let monitor = start_monitor(&["monitor", "--db", known.to_str().unwrap()], &[]);
    assert_eq!(get(&monitor, "/api/info").1["warnings"], serde_json::json!([]));
}
