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
/// (before: `BACKEND`, "database disk image is malformed"), and what does not read it (the
/// info, the kept counts, where a definition's executions sit, without traces) still answers.
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
    let (status, body) = get(&monitor, "/api/executions");
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["code"], "CORRUPT", "{body}");
    // Where a definition's executions sit is read from the active path's index (migration
    // 11), a tree apart from the table's (the demo's 76 orders); its transitions are read
    // from the traces of executions listed from the table (since migration 10), which is a
    // CORRUPT like any read of it.
    let (status, body) = get(&monitor, "/api/definitions/orders/graph?traces=0");
    assert_eq!(
        (status, &body["maintained"], &body["executions"]),
        (200, &serde_json::json!(true), &serde_json::json!(76)),
        "{body}"
    );
    let (status, body) = get(&monitor, "/api/definitions/orders/graph");
    assert_eq!(
        (status, &body["error"]["code"]),
        (500, &serde_json::json!("CORRUPT")),
        "{body}"
    );
    let (status, body) = get(&monitor, "/api/info");
    assert_eq!(status, 200, "{body}");
    // The counts are read from the figures kept beside the table (docs/scale.md,
    // "The counts, kept up to date under every writer"), which the damage did not reach.
    let (status, body) = get(&monitor, "/api/counts");
    assert_eq!((status, &body["total"]), (200, &serde_json::json!(200)), "{body}");
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

fn post(monitor: &Monitor, path: &str, token: &str) -> (u16, Value) {
    let mut response = monitor
        .agent
        .post(format!("{}{}", monitor.url, path.trim_start_matches('/')))
        .header("Authorization", &format!("Bearer {token}"))
        .send(r#"{"reason": "test: recovery after the incident"}"#)
        .expect("the request went through");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
    )
}

/// With a token, the workspace log at the schema version this build knows is writable: the
/// recovery actions (docs/recover.md) write it (before, it was always opened read-only, and
/// every workspace action answered 500 "opened read-only"). At another version it stays
/// read-only, with its warning, token or not.
#[test]
fn with_a_token_the_workspace_log_takes_the_recovery_actions() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path(), 20);
    let release = "/api/workspaces/acme/prod/leases/relay/release";
    let monitor = start_monitor(&["monitor", "--db", db.to_str().unwrap(), "--token", "tok"], &[]);
    let (status, body) = post(&monitor, release, "tok");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["key"], "relay");
    let (_, leases) = get(&monitor, "/api/workspaces/acme/prod/leases");
    assert!(
        leases["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["key"] != "relay"),
        "{leases}"
    );
    drop(monitor);

    let other = tempfile::tempdir().unwrap();
    let newer = demo(other.path(), 20);
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute("UPDATE reflexr_alembic_version SET version_num = '0009'", [])
        .unwrap();
    let monitor = start_monitor(
        &["monitor", "--db", newer.to_str().unwrap(), "--token", "tok"],
        &[],
    );
    let (_, info) = get(&monitor, "/api/info");
    assert_eq!(info["warnings"].as_array().map(Vec::len), Some(1), "{info}");
    let (status, body) = post(&monitor, release, "tok");
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (500, Some("BACKEND")),
        "{body}"
    );
    let (_, leases) = get(&monitor, "/api/workspaces/acme/prod/leases");
    assert!(
        leases["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["key"] == "relay"),
        "read-only: nothing released"
    );
}

/// A file as harel leaves it (no execstore indexes or triggers, each of which would refuse
/// the write) with one execution whose stored document is garbage. The id of that execution.
fn one_garbage_row(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let objects: Vec<(String, String)> = conn
        .prepare(
            "SELECT type, name FROM sqlite_master WHERE type IN ('index', 'trigger') \
             AND name LIKE '%execstore%' AND sql IS NOT NULL",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (kind, name) in objects {
        conn.execute(&format!("DROP {kind} \"{name}\""), []).unwrap();
    }
    conn.execute("DROP TABLE execstore_migrations", []).unwrap();
    let id: String = conn
        .query_row(
            "SELECT id FROM executions ORDER BY id LIMIT 1 OFFSET 3",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute("UPDATE executions SET data = '{garbage' WHERE id = ?1", [&id])
        .unwrap();
    id
}

/// One execution whose document is not JSON takes no view down: the listing (every page),
/// the counts, a definition's graph and `/api/changes` answer 200 with the other rows and name
/// the bad one in `errors` (`{id, field, message}`). Before, each answered 500 `CORRUPT` for
/// the whole view.
#[test]
fn one_bad_row_is_named_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path(), 20);
    let total: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM executions", [], |r| r.get(0))
        .unwrap();
    let bad = one_garbage_row(&db);
    let monitor = start_monitor(&["monitor", "--db", db.to_str().unwrap()], &[]);
    let named = |body: &Value, what: &str| {
        let errors = body["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no errors in {body}"));
        assert_eq!(errors.len(), 1, "{what}: {body}");
        assert_eq!(errors[0]["id"], bad.as_str(), "{what}: {body}");
        assert_eq!(errors[0]["field"], "data", "{what}: {body}");
        assert!(
            errors[0]["message"].as_str().unwrap().contains("not JSON"),
            "{what}: {body}"
        );
    };
    // Every page of the listing, 5 at a time.
    let mut ids = Vec::new();
    let mut path = "/api/executions?limit=5".to_owned();
    loop {
        let (status, body) = get(&monitor, &path);
        assert_eq!(status, 200, "{path}: {body}");
        named(&body, &path);
        ids.extend(
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["id"].as_str().unwrap().to_owned()),
        );
        match body["next_cursor"].as_str() {
            Some(c) => path = format!("/api/executions?limit=5&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(ids.len() as i64, total - 1, "every other execution is listed");
    assert!(!ids.contains(&bad));
    let (status, counts) = get(&monitor, "/api/counts");
    assert_eq!(status, 200, "{counts}");
    assert_eq!(counts["total"], total - 1, "{counts}");
    named(&counts, "counts");
    let (status, running) = get(&monitor, "/api/executions?status=RUNNING,DONE");
    assert_eq!(status, 200, "{running}");
    let (status, graph) = get(&monitor, "/api/definitions/orders/graph");
    assert_eq!(status, 200, "{graph}");
    named(&graph, "graph");
    let (status, changes) = get(&monitor, "/api/changes");
    assert_eq!(status, 200, "{changes}");
    // The bad row itself: its detail says what is wrong.
    let (status, detail) = get(&monitor, &format!("/api/executions/{bad}"));
    assert_eq!(
        (status, detail["error"]["code"].as_str()),
        (500, Some("CORRUPT")),
        "{detail}"
    );
}

/// The same file opens with `--token` (before, building execstore's indexes over the garbage
/// document failed the open: "stored data is unreadable"): the listing names the bad row and a
/// write goes through.
#[test]
fn a_file_with_a_garbage_document_opens_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path(), 20);
    let bad = one_garbage_row(&db);
    let monitor = start_monitor(&["monitor", "--db", db.to_str().unwrap(), "--token", "t0k"], &[]);
    let (status, info) = get(&monitor, "/api/info");
    assert_eq!(
        (status, &info["writable"]),
        (200, &serde_json::json!(true)),
        "{info}"
    );
    let (status, list) = get(&monitor, "/api/executions");
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["errors"][0]["id"], bad.as_str(), "{list}");
    let (_, outbox) = get(&monitor, "/api/outbox");
    let seq = outbox["items"][0]["seq"]
        .as_i64()
        .expect("the demo leaves outbox entries");
    let mut response = monitor
        .agent
        .post(format!("{}api/outbox/{seq}/ack", monitor.url))
        .header("Authorization", "Bearer t0k")
        .send(r#"{"reason": "a test"}"#)
        .unwrap();
    let text = response.body_mut().read_to_string().unwrap();
    assert_eq!(response.status().as_u16(), 200, "{text}");
}
