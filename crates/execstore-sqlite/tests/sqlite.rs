//! What is particular to the SQLite backend: its tables and migrations, harel
//! compatibility of the file, corrupt rows, locking between connections.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use execstore::{
    executions::{Event, JsonObject, ListQuery, Status},
    Effects, Execution, ExecutionStore, StoreError,
};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use rusqlite::Connection;
use serde_json::json;

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("store.db")
}

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path, SqliteOptions::new()).unwrap()
}

fn open_harel(path: &Path) -> SqliteStore {
    SqliteStore::open(path, SqliteOptions::new().prefix("harel")).unwrap()
}

fn names(conn: &Connection, kind: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = ?1 ORDER BY name")
        .unwrap();
    let rows = stmt.query_map([kind], |row| row.get(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

fn obj(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn text(conn: &Connection, sql: &str) -> String {
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

#[test]
fn table_names_without_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let _store = open(&db(&dir));
    let conn = Connection::open(db(&dir)).unwrap();
    assert_eq!(
        names(&conn, "table"),
        [
            "execstore_attributes",
            "execstore_graph_now",
            "execstore_migrations",
            "executions",
            "outbox",
            "processed_events",
            "spawns",
            "sqlite_sequence",
            "timers",
            "trace"
        ]
    );
    // The counts by definition and status: a view of the graph's figures (migration 8).
    assert_eq!(names(&conn, "view"), ["execstore_counts"]);
    let indexes: Vec<String> = names(&conn, "index")
        .into_iter()
        .filter(|n| !n.starts_with("sqlite_autoindex"))
        .collect();
    assert_eq!(
        indexes,
        [
            "execstore_executions_by_active_path",
            "execstore_executions_by_definition",
            "execstore_executions_by_finished",
            "execstore_executions_by_status",
            "execstore_executions_listing_created",
            "execstore_executions_listing_updated",
            "execstore_timers_by_fire_at"
        ]
    );
}

#[test]
fn table_names_with_harel_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let _store = open_harel(&db(&dir));
    let conn = Connection::open(db(&dir)).unwrap();
    assert_eq!(
        names(&conn, "table"),
        [
            "harel_execstore_attributes",
            "harel_execstore_graph_now",
            "harel_execstore_migrations",
            "harel_executions",
            "harel_outbox",
            "harel_processed_events",
            "harel_spawns",
            "harel_timers",
            "harel_trace",
            "sqlite_sequence"
        ]
    );
    assert_eq!(names(&conn, "view"), ["harel_execstore_counts"]);
    assert!(names(&conn, "index")
        .iter()
        .all(|n| n.starts_with("harel_execstore_") || n.starts_with("sqlite_autoindex_harel_")));
    // harel's exact DDL, and after its columns the listing's keys (migration 13), which
    // harel's statements never name.
    assert_eq!(
        text(&conn, "SELECT sql FROM sqlite_master WHERE name = 'harel_executions'"),
        "CREATE TABLE harel_executions (id TEXT PRIMARY KEY, definition_id TEXT NOT NULL, data TEXT NOT NULL, \
         version INTEGER NOT NULL, execstore_root, execstore_status, execstore_created, execstore_updated, \
         execstore_finished, execstore_path, execstore_path_json)"
    );
    assert_eq!(
        text(&conn, "SELECT sql FROM sqlite_master WHERE name = 'harel_timers'"),
        "CREATE TABLE harel_timers (execution_id TEXT NOT NULL, path TEXT NOT NULL, fire_at REAL NOT NULL, \
         PRIMARY KEY (execution_id, path))"
    );
}

#[test]
fn two_prefixes_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain = open(&db(&dir));
    let harel = open_harel(&db(&dir));
    plain.save(&mut Execution::new("only-plain", "d")).unwrap();
    assert!(harel.load("only-plain").unwrap().is_none());
    assert_eq!(plain.schema_version().unwrap(), 13);
    assert_eq!(harel.schema_version().unwrap(), 13);
}

#[test]
fn invalid_prefix_rejected_before_touching_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["", "1abc", "a-b", "a b", "x;DROP", "é", &"p".repeat(31)] {
        let err = SqliteStore::open(db(&dir), SqliteOptions::new().prefix(bad)).unwrap_err();
        assert!(
            matches!(&err, StoreError::InvalidInput { field, .. } if field == "prefix"),
            "{bad:?}: {err}"
        );
        let err = SqliteStore::open_in_memory(SqliteOptions::new().prefix(bad)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
    }
    assert!(!db(&dir).exists(), "a refused open created the file");
    SqliteStore::open(db(&dir), SqliteOptions::new().prefix(&*"p".repeat(30))).unwrap();
    SqliteStore::open(db(&dir), SqliteOptions::new().prefix("_x9")).unwrap();
}

#[test]
fn migrations_recorded_once_and_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..3 {
        let store = open(&db(&dir));
        assert_eq!(store.schema_version().unwrap(), 13);
    }
    let conn = Connection::open(db(&dir)).unwrap();
    let rows: Vec<(i64, String, String, String)> = conn
        .prepare("SELECT version, description, checksum, applied_at FROM execstore_migrations")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(rows.len(), 13, "{rows:?}");
    let (version, description, checksum, applied_at) = &rows[0];
    assert_eq!(*version, 1);
    assert!(!description.is_empty());
    assert!(checksum.starts_with("fnv1a64:"), "{checksum}");
    // Stamped by SQLite's clock: 2024-05-06T07:08:09.123Z
    assert_eq!(applied_at.len(), 24, "{applied_at}");
    assert!(
        applied_at.ends_with('Z') && &applied_at[10..11] == "T",
        "{applied_at}"
    );
}

#[test]
fn newer_migrations_left_alone_and_changed_ones_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(&db(&dir)));
    let conn = Connection::open(db(&dir)).unwrap();
    conn.execute(
        "INSERT INTO execstore_migrations (version, description, checksum) VALUES (100, 'from the future', 'x')",
        [],
    )
    .unwrap();
    let store = open(&db(&dir));
    assert_eq!(store.schema_version().unwrap(), 100);
    drop(store);

    conn.execute(
        "UPDATE execstore_migrations SET checksum = 'fnv1a64:0' WHERE version = 1",
        [],
    )
    .unwrap();
    let err = SqliteStore::open(db(&dir), SqliteOptions::new()).unwrap_err();
    assert!(
        matches!(err, StoreError::Backend { retryable: false, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("checksum"), "{err}");
}

#[test]
fn journal_mode_is_wal_and_memory_is_ephemeral() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(db(&dir), SqliteOptions::new().synchronous(Synchronous::Normal)).unwrap();
    let conn = Connection::open(db(&dir)).unwrap();
    assert_eq!(text(&conn, "PRAGMA journal_mode"), "wal");
    assert!(store.capabilities().durable);

    let memory = SqliteStore::open(":memory:", SqliteOptions::new()).unwrap();
    assert!(!memory.capabilities().durable);
    let other = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    memory.save(&mut Execution::new("m", "d")).unwrap();
    assert!(
        other.load("m").unwrap().is_none(),
        "each :memory: store is private"
    );

    let err = SqliteStore::open("", SqliteOptions::new()).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[test]
fn options_and_trace_max() {
    let o = SqliteOptions::default();
    assert_eq!(o.prefix, None);
    assert_eq!(o.connect.synchronous, Synchronous::Full);
    assert_eq!(o.trace_max, Some(200));
    assert_eq!(o.connect.busy_timeout, Duration::from_secs(5));
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    assert_eq!(store.trace_max(), Some(200));
    let store = SqliteStore::open_in_memory(SqliteOptions::new().trace_max(Some(0))).unwrap();
    assert_eq!(store.trace_max(), None);
    let store = SqliteStore::open_in_memory(SqliteOptions::new().trace_max(None)).unwrap();
    assert_eq!(store.trace_max(), None);

    // Without a cap every step is kept.
    let mut exe = Execution::new("t", "d");
    store.save(&mut exe).unwrap();
    for n in 0..250 {
        store.append_trace("t", &obj(json!({"n": n}))).unwrap();
    }
    assert_eq!(store.read_trace("t").unwrap().len(), 250);

    let capped = SqliteStore::open_in_memory(SqliteOptions::new().trace_max(Some(3))).unwrap();
    capped.save(&mut Execution::new("t", "d")).unwrap();
    for n in 0..5 {
        assert_eq!(capped.append_trace("t", &obj(json!({"n": n}))).unwrap(), n);
    }
    let kept: Vec<i64> = capped
        .read_trace("t")
        .unwrap()
        .iter()
        .map(|s| s["index"].as_i64().unwrap())
        .collect();
    assert_eq!(kept, [2, 3, 4]);
}

#[test]
fn invalid_cursor_is_invalid_input() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    for cursor in ["not a cursor", "", "MTAw", "YWZ0ZXI6"] {
        let err = store
            .list_executions(&ListQuery::new().cursor(Some(cursor.into())))
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::InvalidInput { field, .. } if field == "cursor"),
            "{cursor:?}: {err}"
        );
    }
    let err = store.list_executions(&ListQuery::new().limit(0)).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[test]
fn listing_pages_and_filters() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    for i in 0..25 {
        let mut exe = Execution::new(format!("x{i:02}"), if i % 2 == 0 { "even" } else { "odd" });
        exe.status = if i % 5 == 0 { Status::Done } else { Status::Running };
        if i % 3 == 0 {
            exe.parent_id = Some("x00".into());
        }
        exe.updated_at = Some(1_700_000_000.123_456_7 + f64::from(i));
        exe.finished_at = (exe.status == Status::Done).then_some(1_700_000_100.5);
        exe.outcome = (exe.status == Status::Done).then(|| "ok".to_owned());
        exe.active_path = Some(format!("root.s{i}"));
        store.save(&mut exe).unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list_executions(&ListQuery::new().limit(7).cursor(cursor))
            .unwrap();
        seen.extend(page.items.iter().map(|s| s.id.clone()));
        cursor = page.next_cursor;
        if cursor.is_none() {
            assert_eq!(page.items.len(), 4);
            break;
        }
    }
    assert_eq!(seen, (0..25).map(|i| format!("x{i:02}")).collect::<Vec<_>>());

    let page = store
        .list_executions(
            &ListQuery::new()
                .status([Status::Done, Status::Done])
                .definition("odd"),
        )
        .unwrap();
    let ids: Vec<&str> = page.items.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["x05", "x15"]);
    let s = &page.items[0];
    assert_eq!(s.definition_id, "odd");
    assert_eq!(s.version, 1);
    assert_eq!(s.outcome.as_deref(), Some("ok"));
    assert_eq!(s.active_path.as_deref(), Some("root.s5"));
    assert_eq!(s.finished_at, Some(1_700_000_100.5));
    assert_eq!(s.updated_at, Some(1_700_000_000.123_456_7 + 5.0));
    assert_eq!(s.parent_id, None);
    assert_eq!(
        Some(s.clone()),
        store
            .load("x05")
            .unwrap()
            .map(|e| execstore::executions::ExecutionSummary::of(&e))
    );

    let roots = store.list_executions(&ListQuery::new().roots_only(true)).unwrap();
    assert_eq!(roots.items.len(), 25 - 9);
    assert!(roots.items.iter().all(|s| s.parent_id.is_none()));
    let none = store.list_executions(&ListQuery::new().status([])).unwrap();
    assert!(none.items.is_empty() && none.next_cursor.is_none());
}

#[test]
fn ids_with_prefix_is_exact_and_case_sensitive() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    for id in [
        "Ab1",
        "ab1",
        "ab2",
        "a_b",
        "a%b",
        "axb",
        "ab",
        "ac",
        "a\u{10FFFF}z",
    ] {
        store.save(&mut Execution::new(id, "d")).unwrap();
    }
    assert_eq!(store.ids_with_prefix("ab").unwrap(), ["ab", "ab1", "ab2"]);
    assert_eq!(store.ids_with_prefix("a_").unwrap(), ["a_b"]);
    assert_eq!(store.ids_with_prefix("a%").unwrap(), ["a%b"]);
    assert_eq!(store.ids_with_prefix("A").unwrap(), ["Ab1"]);
    assert_eq!(store.ids_with_prefix("a\u{10FFFF}").unwrap(), ["a\u{10FFFF}z"]);
    assert_eq!(store.ids_with_prefix("").unwrap().len(), 9);
    assert!(store.ids_with_prefix("zz").unwrap().is_empty());
}

#[test]
fn corrupt_rows_are_corrupt_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&db(&dir));
    store.save(&mut Execution::new("fine", "d")).unwrap();
    let conn = Connection::open(db(&dir)).unwrap();
    conn.execute_batch(
        r#"INSERT INTO executions (id, definition_id, data, version) VALUES ('shape', 'd', '{"id": 5}', 1);
           INSERT INTO executions (id, definition_id, data, version) VALUES ('types', 'd', '{"id":"types","definition_id":"d","version":"one"}', 1);
           INSERT INTO executions (id, definition_id, data, version) VALUES ('status', 'd', '{"id":"status","definition_id":"d","status":"ASLEEP"}', 1);
           INSERT INTO outbox (target_id, event) VALUES ('fine', 'not json');
           INSERT INTO spawns (parent_id, child_id, root_path, context) VALUES ('fine', 'c', 'r', '[1, 2]');
           INSERT INTO trace (execution_id, idx, entry) VALUES ('fine', 0, '"a string"');"#,
    )
    .unwrap();
    for id in ["shape", "types", "status"] {
        let err = store.load(id).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{id}: {err}");
        let err = store.load_for_event(id, "e").unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{id}: {err}");
    }
    let err = store.list_executions(&ListQuery::new()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let err = store.pending_outbox(None, 10).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let err = store.pending_spawns(None, 10).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let err = store.read_trace("fine").unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");

    // `data` that is not JSON at all: the expression indexes refuse it on write...
    let refused = conn.execute(
        "INSERT INTO executions (id, definition_id, data, version) VALUES ('garbage', 'd', '{not json', 1)",
        [],
    );
    assert!(refused.is_err());
    // ...and so do the counts' triggers where a hand dropped them (migration 12)...
    conn.execute_batch(
        "DROP INDEX execstore_executions_by_status;
         DROP INDEX execstore_executions_listing_created;
         DROP INDEX execstore_executions_listing_updated;
         DROP INDEX execstore_executions_by_finished;
         DROP INDEX execstore_executions_by_active_path;
         DELETE FROM executions WHERE id <> 'fine';",
    )
    .unwrap();
    let refused = conn.execute(
        "INSERT INTO executions (id, definition_id, data, version) VALUES ('garbage', 'd', '{not json', 1)",
        [],
    );
    assert!(refused.unwrap_err().to_string().contains("malformed JSON"));
    // ...but a writer without triggers too may leave it.
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)
        .unwrap();
    conn.execute(
        "INSERT INTO executions (id, definition_id, data, version) VALUES ('garbage', 'd', '{not json', 1)",
        [],
    )
    .unwrap();
    let err = store.load("garbage").unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    // The listing and the counts skip it (it takes no monitor view down), and
    // `unreadable_executions` names it.
    assert!(
        store.unreadable_executions(10).unwrap().is_empty(),
        "none met yet"
    );
    let page = store.list_executions(&ListQuery::new()).unwrap();
    let ids: Vec<&str> = page.items.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["fine"]);
    let counts = store.count_by_status(&ListQuery::new()).unwrap();
    assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 1, "{counts:?}");
    let unreadable = store.unreadable_executions(10).unwrap();
    assert_eq!(unreadable.len(), 1, "{unreadable:?}");
    assert_eq!(
        (unreadable[0].id.as_str(), unreadable[0].field.as_str()),
        ("garbage", "data")
    );
    assert_eq!(store.load("fine").unwrap().unwrap().version, 1);
}

#[test]
fn concurrent_opens_of_a_fresh_file_migrate_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let store = SqliteStore::open(&path, SqliteOptions::new())?;
                store.save(&mut Execution::new(format!("t{i}"), "d"))?;
                store.schema_version()
            })
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().unwrap(), 13);
    }
    let conn = Connection::open(&path).unwrap();
    let count: i64 = conn
        .query_row("SELECT COUNT(*) FROM execstore_migrations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 13);
    assert_eq!(open(&path).ids_with_prefix("t").unwrap().len(), 8);
}

/// Several connections (as several processes would) writing the same file: every write
/// lands, none fails on a stale snapshot, and the CAS still catches a lost update.
#[test]
fn connections_share_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(open(&path));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = open(&path);
                for i in 0..50 {
                    let id = format!("w{t}-{i}");
                    let mut exe = Execution::new(&id, "d");
                    store.save(&mut exe).unwrap();
                    // Read, then write in a later transaction: with deferred transactions this
                    // is where a stale snapshot would fail with SQLITE_BUSY_SNAPSHOT.
                    let mut exe = store.load(&id).unwrap().unwrap();
                    store
                        .commit(
                            &mut exe,
                            &Effects::new().emit(Some(&id), Event::new(id.clone(), "E")),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let a = open(&path);
    let b = open(&path);
    assert_eq!(a.pending_outbox(None, 1000).unwrap().len(), 200);
    let mut from_a = a.load("w0-0").unwrap().unwrap();
    let mut from_b = b.load("w0-0").unwrap().unwrap();
    a.save(&mut from_a).unwrap();
    let err = b.save(&mut from_b).unwrap_err();
    match err {
        StoreError::Conflict { expected, found, .. } => assert_eq!((expected, found), (2, Some(3))),
        other => panic!("{other}"),
    }
    assert_eq!(from_b.version, 2);
}

#[test]
fn a_held_write_lock_is_a_retryable_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = SqliteStore::open(
        &path,
        SqliteOptions::new().busy_timeout(Duration::from_millis(50)),
    )
    .unwrap();
    let mut exe = Execution::new("busy", "d");
    store.save(&mut exe).unwrap();
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new("e", "E")).processed("in"),
        )
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Backend { retryable: true, .. }),
        "{err}"
    );
    assert!(err.is_retryable());
    assert_eq!(exe.version, 1, "a failed commit leaves the caller's version");
    let err = store.ack_outbox(1).unwrap_err();
    assert!(err.is_retryable(), "{err}");
    conn.execute_batch("COMMIT").unwrap();

    // Reads are not blocked by a writer (WAL) and the failed commit left nothing behind.
    assert!(store.pending_outbox(None, 10).unwrap().is_empty());
    assert!(!store.is_processed("busy", "in").unwrap());
    store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new("e", "E")).processed("in"),
        )
        .unwrap();
    assert_eq!(exe.version, 2);
    assert!(store.is_processed("busy", "in").unwrap());
}

/// A row as harel 0.9 writes it (`model_dump_json()`), with a field of a newer engine that
/// execstore does not know: it loads, and a save writes it back byte for byte, version aside.
#[test]
fn harel_row_round_trips_byte_identically() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_harel(&db(&dir));
    let row = |version: i64| {
        format!(
            r#"{{"id":"h1","definition_id":"d","definition_fqn":null,"root_path":"","status":"RUNNING","outcome":null,"error":null,"active_path":"root.a","history":{{"root":"root.a"}},"context":{{"n":1,"s":"é\n","f":0.1,"big":12345678901234567890,"neg":-2.5e-7,"nested":{{"z":[1,{{"y":null}}],"a":true}}}},"processed_events":3,"version":{version},"priority":2,"parent_id":null,"child_id":null,"deferred":[{{"id":"e1","kind":"K","created_time":"2024-05-06T07:08:09.123456Z","received_time":null,"data":{{"x":1}}}}],"children":{{"h1:c":{{"root_path":"root.p","finished":false,"outcome":null,"result":{{}},"submachine":false,"key":"k"}}}},"invoke_seq":{{"root.p":1}},"created_at":1700000000.5,"updated_at":1700053257.5716593,"finished_at":null,"expires_at":null,"future_field":{{"b":[1,2],"a":"x"}}}}"#
        )
    };
    let conn = Connection::open(db(&dir)).unwrap();
    conn.execute(
        "INSERT INTO harel_executions (id, definition_id, data, version) VALUES ('h1', 'd', ?1, 4)",
        [row(4)],
    )
    .unwrap();
    let mut exe = store.load("h1").unwrap().unwrap();
    assert_eq!(exe.version, 4);
    assert_eq!(exe.status, Status::Running);
    assert_eq!(exe.updated_at, Some(1_700_053_257.571_659_3));
    assert_eq!(exe.extra["future_field"], json!({"b": [1, 2], "a": "x"}));
    store.save(&mut exe).unwrap();
    assert_eq!(exe.version, 5);
    let stored: (String, i64) = conn
        .query_row(
            "SELECT data, version FROM harel_executions WHERE id = 'h1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(stored, (row(5), 5));
    let (loaded, processed) = store.load_for_event("h1", "e1").unwrap();
    assert_eq!(loaded, Some(exe));
    assert!(!processed);
}

/// The side tables hold what harel's `SqliteStore` writes: events as `model_dump_json()`,
/// spawn contexts and trace steps as `json.dumps()`.
#[test]
fn side_tables_hold_harels_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_harel(&db(&dir));
    let mut exe = Execution::new("s1", "d");
    let effects = Effects::new()
        .emit(
            Some("s1"),
            Event::new("e1", "Go").with_data(obj(json!({"k": "é", "n": 1.5}))),
        )
        .processed("in1")
        .spawn("s1:c", "root.p", obj(json!({"a": [1, 2.0], "b": {"c": "é"}})))
        .schedule("root.t", 1_700_000_000.25)
        .trace(obj(
            json!({"event_kind": "Go", "to_path": "root.b", "timestamp": 1e16}),
        ));
    let seqs = store.commit(&mut exe, &effects).unwrap();
    assert_eq!(seqs, [1]);
    let conn = Connection::open(db(&dir)).unwrap();
    assert_eq!(
        text(&conn, "SELECT event FROM harel_outbox"),
        r#"{"id":"e1","kind":"Go","created_time":null,"received_time":null,"data":{"k":"é","n":1.5}}"#
    );
    assert_eq!(
        text(&conn, "SELECT context FROM harel_spawns"),
        r#"{"a": [1, 2.0], "b": {"c": "\u00e9"}}"#
    );
    assert_eq!(
        text(&conn, "SELECT entry FROM harel_trace"),
        r#"{"event_kind": "Go", "to_path": "root.b", "timestamp": 1e+16}"#
    );
    let fire_at: f64 = conn
        .query_row("SELECT fire_at FROM harel_timers", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fire_at, 1_700_000_000.25);
    assert_eq!(text(&conn, "SELECT event_id FROM harel_processed_events"), "in1");
    let data = text(&conn, "SELECT data FROM harel_executions");
    assert_eq!(data, exe.to_json());
    assert!(data.contains(r#""version":1"#));
}

/// A file harel created (its tables, no execstore migrations yet) opens: the migration is
/// applied and harel's rows read back.
#[test]
fn opens_a_file_harel_created() {
    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(db(&dir)).unwrap();
    conn.execute_batch(
        r#"PRAGMA journal_mode=WAL;
        CREATE TABLE IF NOT EXISTS harel_executions (id TEXT PRIMARY KEY, definition_id TEXT NOT NULL, data TEXT NOT NULL, version INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS harel_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, target_id TEXT, event TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS harel_processed_events (execution_id TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (execution_id, event_id));
        CREATE TABLE IF NOT EXISTS harel_timers (execution_id TEXT NOT NULL, path TEXT NOT NULL, fire_at REAL NOT NULL, PRIMARY KEY (execution_id, path));
        CREATE TABLE IF NOT EXISTS harel_spawns (seq INTEGER PRIMARY KEY AUTOINCREMENT, parent_id TEXT NOT NULL, child_id TEXT NOT NULL, root_path TEXT NOT NULL, context TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS harel_trace (execution_id TEXT NOT NULL, idx INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (execution_id, idx));
        INSERT INTO harel_executions VALUES ('old', 'd', '{"id":"old","definition_id":"d","status":"DONE","version":7,"finished_at":1700000000.0}', 7);
        INSERT INTO harel_outbox (target_id, event) VALUES (NULL, '{"id":"e","kind":"K","created_time":null,"received_time":null,"data":{}}');
        INSERT INTO harel_spawns (parent_id, child_id, root_path, context) VALUES ('old', 'old:c', 'root.p', '{"a": 1}');
        INSERT INTO harel_timers VALUES ('old', 'root.t', 5.5);
        INSERT INTO harel_trace VALUES ('old', 3, '{"event_kind": "K"}');
        INSERT INTO harel_processed_events VALUES ('old', 'e0');"#,
    )
    .unwrap();
    let store = open_harel(&db(&dir));
    assert_eq!(store.schema_version().unwrap(), 13);
    let exe = store.load("old").unwrap().unwrap();
    assert_eq!((exe.version, exe.status), (7, Status::Done));
    let page = store
        .list_executions(&ListQuery::new().status([Status::Done]))
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].finished_at, Some(1_700_000_000.0));
    assert_eq!(store.pending_outbox(None, 10).unwrap()[0].target_id, None);
    assert_eq!(
        store.pending_spawns(None, 10).unwrap()[0].context,
        obj(json!({"a": 1}))
    );
    assert_eq!(store.due_timers(6.0, None, 10).unwrap()[0].fire_at, 5.5);
    let trace = store.read_trace("old").unwrap();
    assert_eq!(trace, [obj(json!({"event_kind": "K", "index": 3}))]);
    let mut exe = exe;
    store
        .commit(&mut exe, &Effects::new().trace(obj(json!({"event_kind": "L"}))))
        .unwrap();
    assert_eq!(store.read_trace("old").unwrap()[1]["index"], 4);
    assert!(store.is_processed("old", "e0").unwrap());
    assert!(store.purge("old", 8).unwrap());
    assert!(store.pending_spawns(None, 10).unwrap().is_empty());
    assert_eq!(
        store.pending_outbox(None, 10).unwrap().len(),
        1,
        "an untargeted event stays"
    );
}

/// The bytes of the database file and its WAL (empty when absent).
fn file_bytes(path: &Path) -> (Vec<u8>, Vec<u8>) {
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    (
        std::fs::read(path).unwrap(),
        std::fs::read(wal).unwrap_or_default(),
    )
}

#[test]
fn read_only_open_changes_nothing_on_a_harel_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        r#"PRAGMA journal_mode=WAL;
        CREATE TABLE harel_executions (id TEXT PRIMARY KEY, definition_id TEXT NOT NULL, data TEXT NOT NULL, version INTEGER NOT NULL);
        CREATE TABLE harel_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, target_id TEXT, event TEXT NOT NULL);
        CREATE TABLE harel_processed_events (execution_id TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (execution_id, event_id));
        CREATE TABLE harel_timers (execution_id TEXT NOT NULL, path TEXT NOT NULL, fire_at REAL NOT NULL, PRIMARY KEY (execution_id, path));
        CREATE TABLE harel_spawns (seq INTEGER PRIMARY KEY AUTOINCREMENT, parent_id TEXT NOT NULL, child_id TEXT NOT NULL, root_path TEXT NOT NULL, context TEXT NOT NULL);
        CREATE TABLE harel_trace (execution_id TEXT NOT NULL, idx INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (execution_id, idx));
        INSERT INTO harel_executions VALUES ('old', 'd', '{"id":"old","definition_id":"d","status":"DONE","version":7}', 7);
        INSERT INTO harel_timers VALUES ('old', 'root.t', 5.5);"#,
    )
    .unwrap();
    let before = (names(&conn, "table"), names(&conn, "index"), file_bytes(&path));

    let ro = SqliteOptions::new().prefix("harel").read_only(true);
    let store = SqliteStore::open(&path, ro.clone()).unwrap();
    assert_eq!(store.load("old").unwrap().unwrap().version, 7);
    assert_eq!(store.list_executions(&ListQuery::new()).unwrap().items.len(), 1);
    assert_eq!(store.due_timers(10.0, None, 10).unwrap().len(), 1);
    let mut exe = store.load("old").unwrap().unwrap();
    match store.save(&mut exe) {
        Err(StoreError::Backend { retryable: false, .. }) => {}
        other => panic!("a read-only store refuses writes, got {other:?}"),
    }
    assert_eq!(exe.version, 7);
    assert!(matches!(
        store.ack_outbox(1),
        Err(StoreError::Backend { .. }) | Err(StoreError::NotFound { .. })
    ));
    drop(store);

    // The wrong prefix is a clear error, and creates nothing either.
    match SqliteStore::open(&path, SqliteOptions::new().read_only(true)) {
        Err(StoreError::NotFound { what: "table", key }) => assert!(key.contains("executions"), "{key}"),
        other => panic!("expected NotFound for the missing tables, got {other:?}"),
    }
    let after = (names(&conn, "table"), names(&conn, "index"), file_bytes(&path));
    assert_eq!(
        after, before,
        "a read-only open leaves the file exactly as it was"
    );

    // A missing file is NotFound and is not created.
    let missing = dir.path().join("missing.db");
    assert!(matches!(
        SqliteStore::open(&missing, ro),
        Err(StoreError::NotFound { .. })
    ));
    assert!(!missing.exists());
}
