//! Unit tests of the execution store's internals: pragmas, query plans, statement reuse.

use super::*;
use crate::Synchronous;
use execstore::{
    executions::{Event, JsonObject, Status},
    Effects, ExecutionStore,
};
use rusqlite::config::DbConfig;
use std::time::Duration;

#[test]
fn upper_bounds() {
    assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
    assert_eq!(prefix_upper_bound("").as_deref(), None);
    assert_eq!(prefix_upper_bound("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
    assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
    assert_eq!(prefix_upper_bound("\u{10FFFF}").as_deref(), None);
}

#[test]
fn synchronous_parses_any_case() {
    assert_eq!("NORMAL".parse::<Synchronous>().unwrap(), Synchronous::Normal);
    assert_eq!("Off".parse::<Synchronous>().unwrap(), Synchronous::Off);
    assert_eq!("extra".parse::<Synchronous>().unwrap(), Synchronous::Extra);
    assert_eq!("full".parse::<Synchronous>().unwrap(), Synchronous::Full);
    let err = "fast".parse::<Synchronous>().unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }));
}

fn pragma(store: &SqliteStore, name: &str) -> String {
    let conn = store.lock().unwrap();
    conn.query_row(&format!("PRAGMA {name}"), [], |row| {
        row.get::<_, rusqlite::types::Value>(0)
    })
    .map(|v| match v {
        rusqlite::types::Value::Integer(i) => i.to_string(),
        rusqlite::types::Value::Text(t) => t,
        other => format!("{other:?}"),
    })
    .unwrap()
}

/// PRAGMA synchronous and busy_timeout belong to the connection, so they are read on the
/// store's own.
#[test]
fn pragmas_read_back_on_the_store_connection() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (level, want)) in [
        (Synchronous::Off, "0"),
        (Synchronous::Normal, "1"),
        (Synchronous::Full, "2"),
        (Synchronous::Extra, "3"),
    ]
    .into_iter()
    .enumerate()
    {
        let options = SqliteOptions::new()
            .synchronous(level)
            .busy_timeout(Duration::from_millis(1234));
        let store = SqliteStore::open(dir.path().join(format!("s{i}.db")), options).unwrap();
        assert_eq!(pragma(&store, "synchronous"), want, "{level:?}");
        assert_eq!(pragma(&store, "journal_mode"), "wal");
        assert_eq!(pragma(&store, "busy_timeout"), "1234");
    }
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    assert_eq!(pragma(&store, "synchronous"), "2");
    assert_eq!(pragma(&store, "busy_timeout"), "5000");
    assert_eq!(pragma(&store, "journal_mode"), "memory");
}

/// The query plan of a listing's statement `f`, one line per step (the listing tests of
/// filters.rs and order.rs), respelled as the store reads it.
pub(crate) fn filtered_plan(store: &SqliteStore, f: super::filters::Filtered) -> Vec<String> {
    let conn = store.lock().unwrap();
    let sql = store.sql.respelled(f.sql);
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(f.args), |row| row.get::<_, String>(3))
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// The query plan of `sql`, respelled as the store reads it.
pub(crate) fn plan(store: &SqliteStore, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Vec<String> {
    let conn = store.lock().unwrap();
    let sql = store.sql.respelled(sql.to_owned());
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let rows = stmt.query_map(args, |row| row.get::<_, String>(3)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

fn assert_uses_index(plan: &[String], table: &str, index: &str, what: &str) {
    assert!(
        plan.iter()
            .any(|step| step.contains(table) && step.contains(index)),
        "{what}: {index} is not used: {plan:?}"
    );
    assert!(
        !plan
            .iter()
            .any(|step| step.starts_with(&format!("SCAN {table}")) && !step.contains("INDEX")),
        "{what}: full table scan: {plan:?}"
    );
}

/// The listing filters and the timer sweep are answered from the migration's indexes,
/// which means their SQL spells the indexed expressions exactly.
#[test]
fn reads_use_the_indexes() {
    for (prefix, pfx) in [(None, ""), (Some("harel"), "harel_")] {
        let mut options = SqliteOptions::new();
        options.prefix = prefix.map(str::to_owned);
        let store = SqliteStore::open_in_memory(options).unwrap();
        let executions = format!("{pfx}executions");
        for i in 0..50 {
            let mut exe = Execution::new(format!("e{i:03}"), format!("d{}", i % 5));
            if i % 3 == 0 {
                exe.parent_id = Some("e000".into());
            }
            exe.status = Status::ALL[i % Status::ALL.len()];
            store.save(&mut exe).unwrap();
        }
        let s = &store.sql;
        let (after, def, running, done, limit) = ("e010", "d1", "RUNNING", "DONE", 11i64);

        let p = plan(&store, &s.list(false, false, 1, false), &[&running, &limit]);
        assert_uses_index(
            &p,
            &executions,
            &format!("{pfx}execstore_executions_by_status"),
            "status",
        );
        let p = plan(
            &store,
            &s.list(true, false, 1, false),
            &[&after, &running, &limit],
        );
        assert_uses_index(
            &p,
            &executions,
            &format!("{pfx}execstore_executions_by_status"),
            "status+cursor",
        );
        let p = plan(
            &store,
            &s.list(false, false, 2, false),
            &[&running, &done, &limit],
        );
        assert_uses_index(
            &p,
            &executions,
            &format!("{pfx}execstore_executions_by_status"),
            "statuses",
        );
        let p = plan(&store, &s.list(false, false, 0, true), &[&limit]);
        assert_uses_index(
            &p,
            &executions,
            &format!("sqlite_autoindex_{executions}_1"),
            "roots (most executions are roots: walking ids finds a page quickly)",
        );
        let p = plan(&store, &s.list(true, false, 0, true), &[&after, &limit]);
        assert_uses_index(
            &p,
            &executions,
            &format!("sqlite_autoindex_{executions}_1"),
            "roots+cursor",
        );
        let p = plan(&store, &s.list(false, true, 0, false), &[&def, &limit]);
        assert_uses_index(
            &p,
            &executions,
            &format!("{pfx}execstore_executions_by_definition"),
            "definition",
        );
        let p = plan(&store, &s.list(true, true, 0, false), &[&after, &def, &limit]);
        assert_uses_index(
            &p,
            &executions,
            &format!("{pfx}execstore_executions_by_definition"),
            "definition+cursor",
        );
        let p = plan(&store, &s.list(true, false, 0, false), &[&after, &limit]);
        assert_uses_index(
            &p,
            &executions,
            &format!("sqlite_autoindex_{executions}_1"),
            "cursor only",
        );

        let p = plan(&store, &s.due_timers, &[&1.0f64, &limit]);
        assert_uses_index(
            &p,
            &format!("{pfx}timers"),
            &format!("{pfx}execstore_timers_by_fire_at"),
            "due timers",
        );
        let p = plan(
            &store,
            &s.due_timers_after,
            &[&1.0f64, &0.5f64, &"a", &"p", &limit],
        );
        assert_uses_index(
            &p,
            &format!("{pfx}timers"),
            &format!("{pfx}execstore_timers_by_fire_at"),
            "due timers after a timer",
        );
        // A purge scans the outbox and spawns: indexes there would cost every commit and
        // every ack a page write, for the sake of a rare purge of tables a relay keeps short.
        let p = plan(&store, &s.ids_between, &[&"e01", &"e02"]);
        assert_uses_index(
            &p,
            &executions,
            &format!("sqlite_autoindex_{executions}_1"),
            "ids_with_prefix",
        );
    }
}

/// Every statement of the commit path is prepared once and then reused: none is
/// re-prepared when new values are bound (the trace ring's MAX subqueries were).
#[test]
fn commit_statements_are_prepared_once() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions::new().synchronous(Synchronous::Off);
    let store = SqliteStore::open(dir.path().join("p.db"), options).unwrap();
    let mut exe = Execution::new("x", "d");
    // The first commit inserts, the 20 after it step.
    for i in 0..21 {
        let mut step = JsonObject::new();
        step.insert("i".into(), i.into());
        let effects = Effects::new()
            .emit(None, Event::new(format!("e{i}"), "E"))
            .processed(format!("p{i}"))
            .schedule("t", f64::from(i))
            .spawn(format!("c{i}"), "root.c", JsonObject::new())
            .trace(step);
        store.commit(&mut exe, &effects).unwrap();
        store.append_trace("x", &JsonObject::new()).unwrap();
        store.read_trace("x").unwrap();
        store.load_for_event("x", &format!("p{i}")).unwrap();
    }
    let s = &store.sql;
    let conn = store.lock().unwrap();
    for sql in [
        &s.keyed.update_cas_same_counts,
        &s.insert_outbox,
        &s.insert_processed,
        &s.insert_spawn,
        &s.upsert_timer,
        &s.insert_trace,
        &s.insert_trace_returning,
        &s.cap_trace,
    ] {
        let stmt = conn.prepare_cached(sql).unwrap();
        assert!(stmt.get_status(rusqlite::StatementStatus::Run) >= 20, "{sql}");
        let reprepared = stmt.get_status(rusqlite::StatementStatus::RePrepare);
        assert_eq!(reprepared, 0, "re-prepared {reprepared} times: {sql}");
    }
    // No step moved a key its index must follow: each ran the one UPDATE that sets the
    // update time and the active path only, none the one that sets every key.
    let moved = conn.prepare_cached(&s.keyed.update_cas_moved).unwrap();
    assert_eq!(moved.get_status(rusqlite::StatementStatus::Run), 0);
    drop(moved);
    drop(conn);
    let reader = store.read().unwrap();
    for sql in [&s.read_trace, &s.load_for_event] {
        let stmt = reader.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0, "{sql}");
    }
}

/// A panic while the connection was held poisons the mutex; the store carries on, and a
/// transaction the panic left open is rolled back rather than committed later.
#[test]
fn poisoned_lock_is_recovered() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("p1", "d");
    store.save(&mut exe).unwrap();
    std::thread::scope(|scope| {
        let joined = scope
            .spawn(|| {
                let conn = store.db.shared.writer_mutex().lock().unwrap();
                conn.execute_batch("BEGIN IMMEDIATE; DELETE FROM executions;")
                    .unwrap();
                panic!("boom");
            })
            .join();
        assert!(joined.is_err());
    });
    assert!(store.db.shared.writer_mutex().is_poisoned());
    assert_eq!(store.load("p1").unwrap().map(|e| e.version), Some(1));
    store.save(&mut exe).unwrap();
    assert_eq!(store.load("p1").unwrap().map(|e| e.version), Some(2));
}

/// `checkpoint_pages` is the writer's `wal_autocheckpoint` (what it does to the `-wal` file's
/// size is `tests/checkpoint_bound.rs`, a binary of its own so that no sibling test starves
/// the checkpoint thread).
#[test]
fn checkpoint_pages_is_the_writers_autocheckpoint() {
    let dir = tempfile::tempdir().unwrap();
    for pages in [Some(500), None] {
        let mut options = SqliteOptions::new().synchronous(Synchronous::Normal);
        if let Some(pages) = pages {
            options = options.checkpoint_pages(pages);
        }
        let store = SqliteStore::open(dir.path().join(format!("c{pages:?}.db")), options).unwrap();
        let want = pages.unwrap_or(DEFAULT_CHECKPOINT_PAGES).to_string();
        assert_eq!(pragma(&store, "wal_autocheckpoint"), want);
    }
}

/// A point read (`load`, `load_for_event`, `is_processed`) answers while a commit holds the
/// writer, from the reader, and sees every commit that returned either way.
#[test]
fn point_reads_use_whichever_connection_is_free() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("p.db"), SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("a", "d");
    store.commit(&mut exe, &Effects::new().processed("ev1")).unwrap();
    let held = store.lock().unwrap();
    assert!(store.load("a").unwrap().is_some(), "the reader answers");
    assert!(store.is_processed("a", "ev1").unwrap());
    drop(held);
    exe.status = Status::Running;
    store.commit(&mut exe, &Effects::new()).unwrap();
    // With the reader held, only the writer can answer: a point read that went to the reader
    // would wait here until the deadline.
    let reader = store.read().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = tx.send(
                store
                    .load_for_event("a", "ev1")
                    .map(|(e, p)| (e.map(|e| e.status), p)),
            );
        });
        let answer = rx.recv_timeout(Duration::from_secs(5));
        drop(reader);
        let (status, processed) = answer.expect("the writer answers a point read").unwrap();
        assert_eq!(status, Some(Status::Running));
        assert!(processed);
    });
}

/// The store's checkpoint thread copies commits into the database file soon after they
/// return, long before the writer's own checkpoint (10,000 pages) would: the file grows to
/// hold them while the store is open. With `checkpoint_pages(0)` nothing does, and the
/// commits stay in the `-wal` file.
#[test]
fn commits_reach_the_database_file_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let file_pages = |pages: Option<u32>| -> (u64, u64) {
        let mut options = SqliteOptions::new().synchronous(Synchronous::Normal);
        if let Some(pages) = pages {
            options = options.checkpoint_pages(pages);
        }
        let path = dir.path().join(format!("b{pages:?}.db"));
        let store = SqliteStore::open(&path, options).unwrap();
        let len = || std::fs::metadata(&path).unwrap().len() / 4096;
        let before = len();
        for i in 0..300 {
            let mut exe = Execution::new(format!("e{i:05}"), "d");
            exe.context.insert("filler".into(), "x".repeat(3000).into());
            store.commit(&mut exe, &Effects::new()).unwrap();
        }
        // Long enough for many of the thread's pauses; the case without it waits less.
        let wait = if pages == Some(0) { 500 } else { 10_000 };
        let deadline = std::time::Instant::now() + Duration::from_millis(wait);
        while len() < before + 300 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        (before, len())
    };
    let (before, after) = file_pages(None);
    assert!(
        after >= before + 300,
        "{before} -> {after} pages: no checkpoint ran"
    );
    let (before, after) = file_pages(Some(0));
    assert_eq!(after, before, "nothing checkpoints with checkpoint_pages(0)");
}

/// Takes an unprefixed file this build wrote back to the state a build that knew migrations
/// up to `version` (4 to 8, or 10) left it in: the figures of migrations 5, 7, 8 and 10
/// dropped, those of 5, 7, 8 and 10 up to `version` made again from their released
/// statements (filled from the rows present); before 9, migration 9's indexes dropped and the
/// time indexes of migrations 2 and 6 made again; before 11, migration 2's index of the
/// active path made again; the record of every later one deleted.
pub(crate) fn rewind(conn: &Connection, version: i64) {
    let kept: Vec<(String, String)> = conn
        .prepare(
            "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view', 'table') \
             AND (name LIKE 'execstore_graph%' OR name LIKE 'execstore_counts%') \
             ORDER BY CASE type WHEN 'trigger' THEN 0 WHEN 'view' THEN 1 ELSE 2 END",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    for (kind, name) in kept {
        conn.execute_batch(&format!("DROP {kind} {name}")).unwrap();
    }
    if version < 13 {
        // Migration 13's columns out, and the indexes over the document's expressions
        // back (migration 1's, 3's and 9's here; the active path's by 2's, 11's or 12's
        // statements below).
        conn.execute_batch(
            "DROP TRIGGER execstore_keys_insert; DROP TRIGGER execstore_keys_update;
             DROP INDEX execstore_executions_by_status; DROP INDEX execstore_executions_by_finished;
             DROP INDEX execstore_executions_listing_updated; DROP INDEX execstore_executions_listing_created;
             DROP INDEX execstore_executions_by_active_path;",
        )
        .unwrap();
        for (_, column) in super::keys::KEYS {
            conn.execute_batch(&format!("ALTER TABLE executions DROP COLUMN {column}"))
                .unwrap();
        }
        let tables = super::schema::Tables::new(None).unwrap();
        let m = |v: i32| super::schema::MIGRATIONS.iter().find(|m| m.version == v).unwrap();
        let again = m(1).statements[..1]
            .iter()
            .chain(m(3).statements)
            .chain(m(9).statements.iter().filter(|s| s.starts_with("CREATE")));
        for stmt in again {
            conn.execute_batch(&super::schema::Sql::sql(&tables, stmt))
                .unwrap();
        }
    }
    if version < 9 {
        conn.execute_batch(
            "DROP INDEX execstore_executions_listing_updated;
             DROP INDEX execstore_executions_listing_created;",
        )
        .unwrap();
    }
    if version < 11 {
        conn.execute_batch("DROP INDEX IF EXISTS execstore_executions_by_active_path")
            .unwrap();
    }
    conn.execute(
        "DELETE FROM execstore_migrations WHERE version > ?1 OR version IN (2, 5, 6, 7, 8, 10, 11, 12)",
        [version],
    )
    .unwrap();
    let tables = super::schema::Tables::new(None).unwrap();
    for m in super::schema::MIGRATIONS
        .iter()
        .filter(|m| [2, 5, 6, 7, 8, 10, 11, 12].contains(&m.version) && i64::from(m.version) <= version)
    {
        for stmt in m.statements {
            conn.execute_batch(&super::schema::Sql::sql(&tables, stmt))
                .unwrap();
        }
        conn.execute(
            "INSERT INTO execstore_migrations (version, description, checksum) VALUES (?1, ?2, ?3)",
            rusqlite::params![m.version, m.description, m.checksum()],
        )
        .unwrap();
    }
}

/// The writer connection of `store` as every other writer has it, its triggers on (the
/// store's own writes keep the counts without them: `SqliteStore::keep_counts`), until
/// dropped: for the statements a test writes as harel or a hand would.
pub(crate) struct OtherWriter<'a> {
    conn: crate::db::Held<'a>,
    triggers: bool,
}

/// [`OtherWriter`] of `store`.
pub(crate) fn other_writer(store: &SqliteStore) -> OtherWriter<'_> {
    let conn = store.lock().unwrap();
    let triggers = conn.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER).unwrap();
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, true)
        .unwrap();
    conn.flush_prepared_statement_cache();
    OtherWriter { conn, triggers }
}

impl std::ops::Deref for OtherWriter<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for OtherWriter<'_> {
    fn drop(&mut self) {
        self.conn.flush_prepared_statement_cache();
        let _ = self
            .conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, self.triggers);
    }
}
