//! The counts by definition, status and root-ness, kept by triggers (migration 5's table,
//! folded by migration 8 into the graph's `now`, of which the counts are a view; `schema.rs`,
//! `graph.rs`): right under every writer, read by `count_by_status`, built for an old file by
//! its first writer, scanned by a read-only open of a file without them.

use super::*;
use execstore::executions::{control, ListQuery, Status};
use execstore::{Effects, ExecutionStore};

/// A counts row: definition, status, root-ness, how many.
type CountRow = (String, String, i64, i64);

/// The counts table, as `(definition, status, root, n)` rows with `n > 0`, in key order.
fn kept(conn: &Connection, pfx: &str) -> Vec<(String, String, i64, i64)> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT definition_id, status, root, n FROM {pfx}execstore_counts WHERE n <> 0 ORDER BY 1, 2, 3"
        ))
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// The same figures counted from harel's table itself.
fn scanned(conn: &Connection, pfx: &str) -> Vec<(String, String, i64, i64)> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT definition_id, COALESCE(json_extract(data,'$.status'), ''), \
             json_extract(data,'$.parent_id') IS NULL, COUNT(*) FROM {pfx}executions GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ))
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// The ids of the executions whose key columns (migration 13) differ from the expressions
/// over their document they keep: none, whoever wrote.
pub(crate) fn stale_keys(conn: &Connection, pfx: &str) -> Vec<String> {
    let differs: Vec<String> = super::keys::KEYS
        .iter()
        .map(|(expr, column)| format!("{column} IS NOT ({expr})"))
        .collect();
    let sql = format!(
        "SELECT id FROM {pfx}executions WHERE {} ORDER BY id",
        differs.join(" OR ")
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

fn count(store: &SqliteStore, query: ListQuery, status: Status) -> u64 {
    let counts = store.count_by_status(&query).unwrap();
    counts.into_iter().find(|(s, _)| *s == status).unwrap().1
}

/// Commits, status changes, a child, purge, terminate and purge-finished through the store,
/// then harel's own statements (its INSERT, CAS UPDATE and purge DELETE, as harel 0.9 runs
/// them) on another connection: after each, the kept figures equal a scan of the table.
#[test]
fn the_counts_follow_every_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    for (prefix, pfx) in [(None, ""), (Some("harel"), "harel_")] {
        let mut options = SqliteOptions::new();
        options.prefix = prefix.map(str::to_owned);
        let store = SqliteStore::open(&path, options).unwrap();
        let other = Connection::open(&path).unwrap();
        let same = |what: &str| {
            let conn = store.read().unwrap();
            assert_eq!(kept(&conn, pfx), scanned(&conn, pfx), "{what} ({pfx})");
            assert_eq!(stale_keys(&conn, pfx), Vec::<String>::new(), "{what} ({pfx})");
        };
        let mut exes = Vec::new();
        for i in 0..12 {
            let mut exe = Execution::new(format!("e{i:02}"), format!("d{}", i % 2));
            exe.status = Status::Running;
            if i == 11 {
                exe.parent_id = Some("e00".into());
            }
            store.save(&mut exe).unwrap();
            exes.push(exe);
        }
        same("inserts");
        assert_eq!(
            count(&store, ListQuery::new().definition("d1"), Status::Running),
            6
        );
        assert_eq!(
            count(&store, ListQuery::new().roots_only(true), Status::Running),
            11
        );
        for exe in exes.iter_mut().take(4) {
            exe.status = Status::Done;
            exe.finished_at = Some(2e9);
            store.commit(exe, &Effects::new()).unwrap();
        }
        // A step that changes no counted field fires no statement, and changes nothing.
        exes[5].active_path = Some("s.b".into());
        store.commit(&mut exes[5], &Effects::new()).unwrap();
        same("status changes");
        assert_eq!(count(&store, ListQuery::new(), Status::Done), 4);
        assert!(store.purge("e00", exes[0].version).unwrap());
        same("purge");
        control::terminate(&store, "e06", None, 2e9).unwrap();
        same("terminate");
        assert_eq!(count(&store, ListQuery::new(), Status::Cancelled), 1);
        control::purge_finished(&store, &control::PurgeFinished::new(0.0, 3e9), None).unwrap();
        same("purge-finished");
        assert_eq!(count(&store, ListQuery::new(), Status::Done), 0);

        // harel 0.9's own writes, on a connection execstore does not hold.
        let t = format!("{pfx}executions");
        other
            .execute(
                &format!("INSERT INTO {t} (id, definition_id, data, version) VALUES (?1, ?2, ?3, 1)"),
                [
                    "h1",
                    "d9",
                    r#"{"id": "h1", "definition_id": "d9", "status": "RUNNING"}"#,
                ],
            )
            .unwrap();
        same("harel's insert");
        other
            .execute(
                &format!("UPDATE {t} SET data = ?1, version = 2 WHERE id = ?2 AND version = 1"),
                [
                    r#"{"id": "h1", "definition_id": "d9", "status": "FAILED", "parent_id": "e01",
                    "active_path": "s.x", "created_at": 5, "updated_at": 6.5, "finished_at": 7.0}"#,
                    "h1",
                ],
            )
            .unwrap();
        other
            .execute(&format!("DELETE FROM {t} WHERE id = ?1"), ["e07"])
            .unwrap();
        same("harel's writes");
        assert_eq!(
            count(&store, ListQuery::new().definition("d9"), Status::Failed),
            1
        );
        assert_eq!(
            count(&store, ListQuery::new().definition("d9"), Status::Running),
            0
        );
        drop(store);
    }
}

/// `count_by_status` without a window, search or `where` reads the kept figures: its plan
/// names the counts table and never harel's, and a figure changed by hand is what it answers.
#[test]
fn the_counts_are_read_from_the_kept_figures() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    for i in 0..40 {
        let mut exe = Execution::new(format!("e{i:02}"), format!("d{}", i % 4));
        exe.status = Status::ALL[i % Status::ALL.len()];
        store.save(&mut exe).unwrap();
    }
    for query in [
        ListQuery::new(),
        ListQuery::new().definition("d1"),
        ListQuery::new().definition("d1").roots_only(true),
    ] {
        let p = super::tests::filtered_plan(
            &store,
            store.sql.maintained_counts(&query.count_filter().unwrap()),
        );
        assert!(p.iter().any(|s| s.contains("execstore_graph_now")), "{p:?}");
        assert!(!p.iter().any(|s| s.contains(" executions")), "{p:?}");
    }
    let before = count(&store, ListQuery::new().definition("d1"), Status::Running);
    store
        .lock()
        .unwrap()
        .execute(
            "UPDATE execstore_graph_now SET n = n + 1000 WHERE definition_id = 'd1' AND status = 'RUNNING'",
            [],
        )
        .unwrap();
    assert_eq!(
        count(&store, ListQuery::new().definition("d1"), Status::Running),
        before + 1000
    );
    // A time window is still counted from the rows.
    let windowed = ListQuery::new().definition("d1").created_between(Some(0.0), None);
    assert_eq!(count(&store, windowed, Status::Running), 0);
}

/// A file written before migration 5 (here: with it undone) is counted by scan when opened
/// read-only, and gets the figures, right, from its first writer.
#[test]
fn an_old_file_gets_its_counts_from_its_first_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
        for i in 0..9 {
            let mut exe = Execution::new(format!("e{i}"), "d");
            exe.status = if i < 3 { Status::Done } else { Status::Running };
            store.save(&mut exe).unwrap();
        }
        super::tests::rewind(&store.lock().unwrap(), 4);
    }
    let read_only = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
    assert!(!read_only
        .sql
        .has_counts
        .load(std::sync::atomic::Ordering::Relaxed));
    assert_eq!(count(&read_only, ListQuery::new(), Status::Done), 3);
    drop(read_only);
    let writer = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    assert!(writer.sql.has_counts.load(std::sync::atomic::Ordering::Relaxed));
    let conn = writer.read().unwrap();
    assert_eq!(
        kept(&conn, ""),
        vec![
            ("d".into(), "DONE".into(), 1, 3),
            ("d".into(), "RUNNING".into(), 1, 6)
        ]
    );
}

/// A document that is not JSON (not even JSON5) is refused by every other writer: by the
/// indexes' expressions and, where a hand dropped those, by the counts' triggers, which read
/// it as the indexes do (migration 12). One written past both (the triggers off) is not
/// counted, another writer can neither mend nor delete it (the error names it), and this
/// store purges it without counting it out.
#[test]
fn a_row_that_is_not_json_is_refused_and_never_counted() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    for id in ["fine", "hurt"] {
        let mut exe = Execution::new(id, "d");
        exe.status = Status::Running;
        store.save(&mut exe).unwrap();
    }
    let running = |n: i64| vec![("d".to_owned(), "RUNNING".to_owned(), 1, n)];
    let garbage =
        "INSERT INTO executions (id, definition_id, data, version) VALUES ('bad', 'd', '{not json', 1)";
    let malformed = |e: rusqlite::Error| assert!(e.to_string().contains("malformed JSON"), "{e}");
    let other = super::tests::other_writer(&store);
    malformed(other.execute(garbage, []).unwrap_err());
    other
        .execute_batch(
            "DROP INDEX execstore_executions_by_status; DROP INDEX execstore_executions_listing_created;
             DROP INDEX execstore_executions_listing_updated; DROP INDEX execstore_executions_by_finished;
             DROP INDEX execstore_executions_by_active_path;",
        )
        .unwrap();
    malformed(other.execute(garbage, []).unwrap_err());
    assert_eq!(kept(&other, ""), running(2));
    drop(other);
    store.lock().unwrap().execute(garbage, []).unwrap();
    assert_eq!(kept(&store.lock().unwrap(), ""), running(2));
    let other = super::tests::other_writer(&store);
    malformed(
        other
            .execute(
                "UPDATE executions SET data = '{\"status\": \"DONE\"}' WHERE id = 'bad'",
                [],
            )
            .unwrap_err(),
    );
    malformed(
        other
            .execute("DELETE FROM executions WHERE id = 'bad'", [])
            .unwrap_err(),
    );
    other
        .execute(
            "UPDATE executions SET data = json_set(data, '$.status', 'DONE') WHERE id = 'hurt'",
            [],
        )
        .unwrap();
    assert_eq!(
        kept(&other, ""),
        vec![
            ("d".to_owned(), "DONE".to_owned(), 1, 1),
            ("d".to_owned(), "RUNNING".to_owned(), 1, 1)
        ]
    );
    drop(other);
    assert!(store.purge("bad", 1).unwrap());
    assert!(store.purge("hurt", 1).unwrap());
    assert_eq!(kept(&store.lock().unwrap(), ""), running(1));
}

/// The kind (`table`, `view`) of `name` in the file of `conn`.
fn kind(conn: &Connection, name: &str) -> String {
    conn.query_row("SELECT type FROM sqlite_master WHERE name = ?1", [name], |r| {
        r.get(0)
    })
    .unwrap()
}

/// A file a build that knew migration 7 wrote (the counts in their own table, `now` without
/// root-ness), with children, statuses, paths and definitions mixed, then written by harel's
/// statements under its triggers, gets from this build's first writer (migration 8) the
/// counts and the graph's figures a scan gives, and keeps them through the writes after.
#[test]
fn a_file_at_migration_7_keeps_its_figures_through_migrations_8_and_9() {
    let listing = |conn: &Connection| -> Vec<String> {
        conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'execstore_executions_%' \
             AND (name LIKE '%updated' OR name LIKE '%created') ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v7.db");
    let definitions = ["d0", "d1", "d2"];
    {
        let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
        for i in 0..30 {
            let mut exe = Execution::new(format!("e{i:02}"), format!("d{}", i % 3));
            exe.status = Status::ALL[i % Status::ALL.len()];
            exe.active_path = Some(format!("s{}", i % 4));
            exe.parent_id = (i % 5 == 1).then(|| "e00".to_owned());
            store.save(&mut exe).unwrap();
            let step = super::graph_tests::step("Go", Some("s0"), "s1", &["g"]);
            store.commit(&mut exe, &Effects::new().trace(step)).unwrap();
        }
        let conn = super::tests::other_writer(&store);
        super::tests::rewind(&conn, 7);
        assert_eq!(kind(&conn, "execstore_counts"), "table");
        assert_eq!(listing(&conn).len(), 8, "{:?}", listing(&conn));
        conn.execute_batch(
            "UPDATE executions SET data = json_set(data, '$.status', 'DONE'), version = version + 1 WHERE id = 'e02';
             UPDATE executions SET data = json_remove(data, '$.parent_id'), version = version + 1 WHERE id = 'e06';
             DELETE FROM executions WHERE id = 'e07';",
        )
        .unwrap();
        assert_eq!(kept(&conn, ""), scanned(&conn, ""));
    }
    let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    {
        let conn = store.read().unwrap();
        // Migration 9 replaced the eight time indexes of migrations 2 and 6 with its two.
        assert_eq!(
            listing(&conn),
            [
                "execstore_executions_listing_created",
                "execstore_executions_listing_updated"
            ]
        );
        assert_eq!(kind(&conn, "execstore_counts"), "view");
        assert_eq!(kept(&conn, ""), scanned(&conn, ""));
    }
    super::graph_tests::same(&store, &definitions, "after migration 8");
    super::tests::other_writer(&store)
        .execute_batch(
            "UPDATE executions SET data = json_set(data, '$.parent_id', 'e00', '$.status', 'FAILED') WHERE id = 'e03';
             UPDATE executions SET data = json_set(data, '$.active_path', 's9') WHERE id = 'e04';
             UPDATE executions SET definition_id = 'd1' WHERE id = 'e05';",
        )
        .unwrap();
    let failed_roots = count(&store, ListQuery::new().roots_only(true), Status::Failed);
    let conn = store.read().unwrap();
    assert_eq!(kept(&conn, ""), scanned(&conn, ""));
    assert_eq!(
        failed_roots,
        scanned(&conn, "")
            .iter()
            .filter(|(_, s, root, _)| s == "FAILED" && *root == 1)
            .map(|(_, _, _, n)| *n as u64)
            .sum::<u64>()
    );
    drop(conn);
    super::graph_tests::same(&store, &definitions, "after harel's writes");
}

/// Whether the store's writer runs SQLite's triggers.
fn writer_triggers(store: &SqliteStore) -> bool {
    store
        .lock()
        .unwrap()
        .db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER)
        .unwrap()
}

/// The store's writer keeps the counts itself and runs no trigger while the counts' are the
/// only ones (migration 12): a trigger another connection adds fires for the store's writes
/// from its next transaction on, the counts then kept by the triggers (not twice), and once
/// it is dropped the writer runs without triggers again. A move to another definition is
/// counted under it either way, and listed there.
#[test]
fn the_writer_runs_no_trigger_while_only_the_counts_triggers_are_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    let other = Connection::open(&path).unwrap();
    let same = |what: &str| {
        let conn = store.read().unwrap();
        assert_eq!(kept(&conn, ""), scanned(&conn, ""), "{what}");
        assert_eq!(stale_keys(&conn, ""), Vec::<String>::new(), "{what}");
    };
    let mut exe = Execution::new("e", "d");
    store.save(&mut exe).unwrap();
    exe.status = Status::Running;
    store.commit(&mut exe, &Effects::new()).unwrap();
    assert!(!writer_triggers(&store));
    same("without triggers");
    other
        .execute_batch(
            "CREATE TABLE audit (id TEXT, status TEXT);
             CREATE TRIGGER audit AFTER UPDATE ON executions BEGIN
             INSERT INTO audit VALUES (new.id, json_extract(new.data, '$.status')); END;",
        )
        .unwrap();
    store.commit(&mut exe, &Effects::new()).unwrap();
    exe.status = Status::Done;
    store.commit(&mut exe, &Effects::new()).unwrap();
    assert!(writer_triggers(&store));
    same("with another trigger");
    let audited: Vec<String> = other
        .prepare("SELECT status FROM audit ORDER BY rowid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(audited, ["RUNNING", "DONE"]);
    // A move to another definition, counted by the triggers.
    exe.definition_id = "d2".into();
    store.commit(&mut exe, &Effects::new()).unwrap();
    same("a move with another trigger");
    assert_eq!(count(&store, ListQuery::new().definition("d2"), Status::Done), 1);
    assert_eq!(count(&store, ListQuery::new().definition("d"), Status::Done), 0);
    other.execute_batch("DROP TRIGGER audit").unwrap();
    let mut next = Execution::new("f", "d");
    store.save(&mut next).unwrap();
    assert!(!writer_triggers(&store));
    same("without triggers again");
    assert_eq!(count(&store, ListQuery::new(), Status::Done), 1);
    assert_eq!(count(&store, ListQuery::new(), Status::Pending), 1);
    // A move counted by the writer itself, harel's column moving with it.
    next.definition_id = "d3".into();
    store.save(&mut next).unwrap();
    same("a move without triggers");
    assert_eq!(
        count(&store, ListQuery::new().definition("d3"), Status::Pending),
        1
    );
    assert_eq!(
        count(&store, ListQuery::new().definition("d"), Status::Pending),
        0
    );
}

/// A file a newer build migrated (a migration this build does not know) keeps the triggers
/// on for this build's writer: the newer build's triggers may count otherwise, so they count.
#[test]
fn a_file_a_newer_build_migrated_keeps_the_writers_triggers_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n.db");
    drop(SqliteStore::open(&path, SqliteOptions::new()).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO execstore_migrations (version, description, checksum) VALUES (99, 'newer', 'x')",
            [],
        )
        .unwrap();
    let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("e", "d");
    store.save(&mut exe).unwrap();
    exe.status = Status::Done;
    store.commit(&mut exe, &Effects::new()).unwrap();
    assert!(writer_triggers(&store));
    let conn = store.read().unwrap();
    assert_eq!(kept(&conn, ""), scanned(&conn, ""));
    assert_eq!(kept(&conn, ""), vec![("d".to_owned(), "DONE".to_owned(), 1, 1)]);
}

/// The listing and the counts by filter read migration 13's columns, not the document: a
/// column a hand set apart from its document (triggers off, as no writer would) is what
/// they answer. (The same file read before the migration answers from the document: the
/// rewind tests.)
#[test]
fn the_reads_answer_from_the_key_columns() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("e", "d");
    exe.status = Status::Running;
    exe.active_path = Some("a.b".into());
    store.save(&mut exe).unwrap();
    {
        let conn = store.lock().unwrap();
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)
            .unwrap();
        conn.execute_batch(
            "UPDATE executions SET execstore_status = 'DONE', execstore_path = 'x.y' WHERE id = 'e'",
        )
        .unwrap();
    }
    let ids = |q: ListQuery| -> Vec<String> {
        let page = store.list_executions(&q).unwrap();
        page.items.into_iter().map(|s| s.id).collect()
    };
    assert_eq!(ids(ListQuery::new().status([Status::Done])), ["e"]);
    assert!(ids(ListQuery::new().status([Status::Running])).is_empty());
    let state = |s: &str| execstore::executions::search::parse_where(&format!("state = {s}"), 0.0).unwrap();
    assert_eq!(ids(ListQuery::new().filter(state("x"))), ["e"]);
    assert!(ids(ListQuery::new().filter(state("a"))).is_empty());
    let page = store.list_executions(&ListQuery::new()).unwrap();
    assert_eq!(
        page.items[0].status,
        Status::Done,
        "the summary's status is the column's"
    );
}

/// A save at version 0 is one INSERT; an id already stored is a conflict that changes
/// nothing (row, counts, listing), and a row a hand stored at version 0 is overwritten and
/// counted, as the memory store does.
#[test]
fn a_save_at_version_0_inserts_or_conflicts_and_changes_nothing() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("e", "d");
    exe.status = Status::Running;
    store.save(&mut exe).unwrap();
    let dump = |store: &SqliteStore| -> (Vec<String>, Vec<CountRow>) {
        let conn = store.read().unwrap();
        let rows = conn
            .prepare("SELECT id || ' ' || version || ' ' || data FROM executions ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        (rows, kept(&conn, ""))
    };
    let before = dump(&store);
    let mut again = Execution::new("e", "other");
    again.status = Status::Failed;
    let err = store.save(&mut again).unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Conflict {
                expected: 0,
                found: Some(1),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(again.version, 0);
    assert_eq!(dump(&store), before, "a refused save changed the store");

    // A hand's row at version 0 (harel never writes one).
    super::tests::other_writer(&store)
        .execute(
            "INSERT INTO executions (id, definition_id, data, version) VALUES ('h', 'd', ?1, 0)",
            [r#"{"id": "h", "definition_id": "d", "status": "PENDING"}"#],
        )
        .unwrap();
    let mut h = Execution::new("h", "d2");
    h.status = Status::Running;
    store.save(&mut h).unwrap();
    assert_eq!(h.version, 1);
    let conn = store.read().unwrap();
    assert_eq!(kept(&conn, ""), scanned(&conn, ""));
    assert_eq!(stale_keys(&conn, ""), Vec::<String>::new());
    drop(conn);
    assert_eq!(
        count(&store, ListQuery::new().definition("d2"), Status::Running),
        1
    );
    assert_eq!(
        count(&store, ListQuery::new().definition("d"), Status::Pending),
        0
    );
}

/// A file of `n` running executions of `d1` (`e0`...), written and closed by the store, and
/// a connection of the hand's on it.
fn running_file(path: &std::path::Path, n: usize) -> Connection {
    let store = SqliteStore::open(path, SqliteOptions::new()).unwrap();
    for i in 0..n {
        let mut exe = Execution::new(format!("e{i}"), "d1");
        exe.status = Status::Running;
        store.save(&mut exe).unwrap();
    }
    drop(store);
    Connection::open(path).unwrap()
}

/// The ids on the first page of `DONE` executions.
fn done_ids(store: &SqliteStore) -> Vec<String> {
    let page = store
        .list_executions(&ListQuery::new().status([Status::Done]))
        .unwrap();
    page.items.into_iter().map(|s| s.id).collect()
}

/// A hand drops the counts' and the key columns' triggers and an index (`mend.rs`), then
/// harel writes without them, leaving the kept counts and the columns stale. A read-only
/// open answers right all the same (it reads the documents); a writer's open creates what
/// was dropped and sets the counts and columns right, and harel's next write is kept again.
#[test]
fn a_writers_open_mends_what_a_hand_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mend.db");
    let hand = running_file(&path, 6);
    hand.execute_batch(
        "DROP TRIGGER execstore_keys_insert; DROP TRIGGER execstore_keys_update; \
         DROP TRIGGER execstore_graph_executions_insert; DROP TRIGGER execstore_graph_executions_update; \
         DROP INDEX execstore_executions_by_status;",
    )
    .unwrap();
    // harel 0.9's statements: a step that finishes e1, a new execution of d2.
    hand.execute(
        "UPDATE executions SET data = json_set(data, '$.status', 'DONE', '$.finished_at', 2e9), \
         version = version + 1 WHERE id = 'e1'",
        [],
    )
    .unwrap();
    hand.execute(
        "INSERT INTO executions (id, definition_id, data, version) VALUES (?1, ?2, ?3, 1)",
        [
            "h1",
            "d2",
            r#"{"id": "h1", "definition_id": "d2", "status": "RUNNING", "active_path": "s.a"}"#,
        ],
    )
    .unwrap();
    assert_eq!(stale_keys(&hand, ""), ["e1", "h1"]);
    assert_ne!(kept(&hand, ""), scanned(&hand, ""));

    let read_only = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
    assert_eq!(count(&read_only, ListQuery::new(), Status::Done), 1);
    assert_eq!(count(&read_only, ListQuery::new(), Status::Running), 6);
    assert_eq!(
        count(&read_only, ListQuery::new().definition("d2"), Status::Running),
        1
    );
    assert_eq!(done_ids(&read_only), ["e1"]);
    assert!(!read_only.graph_figures("d2", 10).unwrap().maintained);
    drop(read_only);

    let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    {
        let conn = store.read().unwrap();
        assert_eq!(stale_keys(&conn, ""), Vec::<String>::new());
        assert_eq!(kept(&conn, ""), scanned(&conn, ""));
        assert!(crate::db::has_index(&conn, "execstore_executions_by_status").unwrap());
        let triggers: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN \
                 ('execstore_keys_insert', 'execstore_keys_update', \
                 'execstore_graph_executions_insert', 'execstore_graph_executions_update')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(triggers, 4);
    }
    assert!(store.graph_figures("d2", 10).unwrap().maintained);
    assert_eq!(count(&store, ListQuery::new(), Status::Done), 1);
    hand.execute(
        "UPDATE executions SET data = json_set(data, '$.status', 'FAILED'), version = version + 1 \
         WHERE id = 'e2'",
        [],
    )
    .unwrap();
    let conn = store.read().unwrap();
    assert_eq!(stale_keys(&conn, ""), Vec::<String>::new());
    assert_eq!(kept(&conn, ""), scanned(&conn, ""));
}

/// A hand replaces the key columns' update trigger by one of the same name that does
/// nothing, and the status index by one over another column (`mend.rs`); harel's next step
/// leaves the columns stale. A read-only open reads the documents; a writer's open drops
/// each replacement and makes the migration's again.
#[test]
fn a_writers_open_mends_a_trigger_a_hand_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replaced.db");
    let hand = running_file(&path, 3);
    hand.execute_batch(
        "DROP TRIGGER execstore_keys_update; \
         CREATE TRIGGER execstore_keys_update AFTER UPDATE OF data ON executions BEGIN SELECT 1; END; \
         DROP INDEX execstore_executions_by_status; \
         CREATE INDEX execstore_executions_by_status ON executions (version);",
    )
    .unwrap();
    hand.execute(
        "UPDATE executions SET data = json_set(data, '$.status', 'DONE'), version = version + 1 WHERE id = 'e1'",
        [],
    )
    .unwrap();
    assert_eq!(stale_keys(&hand, ""), ["e1"]);

    let read_only = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
    assert_eq!(done_ids(&read_only), ["e1"]);
    drop(read_only);

    let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    let conn = store.read().unwrap();
    assert_eq!(stale_keys(&conn, ""), Vec::<String>::new());
    let text = |name: &str| -> String {
        conn.query_row("SELECT sql FROM sqlite_master WHERE name = ?1", [name], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let trigger = text("execstore_keys_update");
    assert!(trigger.contains("execstore_status = json_extract"), "{trigger}");
    let index = text("execstore_executions_by_status");
    assert!(index.ends_with("(execstore_status, id)"), "{index}");
    drop(conn);
    hand.execute(
        "UPDATE executions SET data = json_set(data, '$.status', 'FAILED'), version = version + 1 WHERE id = 'e2'",
        [],
    )
    .unwrap();
    assert_eq!(stale_keys(&store.read().unwrap(), ""), Vec::<String>::new());
    assert_eq!(count(&store, ListQuery::new(), Status::Failed), 1);
}
