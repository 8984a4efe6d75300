//! The graph figures (`graph.rs`): where executions sit, kept by migrations 7 and 8's
//! triggers and read since migration 11 from the active path's index; the steps read from the
//! traces since migration 10. Right under every writer, built for an old file by its first
//! writer, scanned by a read-only open of a file without them.

use super::*;
use execstore::executions::graph::graph_figures_by_scan;
use execstore::executions::{control, GraphFigures, Status};
use execstore::{Effects, ExecutionStore};
use serde_json::json;

/// Every trace.
const ALL: usize = usize::MAX;

/// What must agree between the kept figures and a scan.
fn shown(f: &GraphFigures) -> impl PartialEq + std::fmt::Debug {
    (
        f.executions,
        f.traces_read,
        f.now.clone(),
        f.steps.clone(),
        f.guards.clone(),
    )
}

/// For every definition: the kept figures (maintained) equal a scan's.
pub(super) fn same(store: &SqliteStore, definitions: &[&str], what: &str) {
    for d in definitions {
        match (store.graph_figures(d, ALL), graph_figures_by_scan(store, d, ALL)) {
            (Ok(kept), Ok(scanned)) => {
                assert!(kept.maintained, "{what}: {d} maintained");
                assert_eq!(shown(&kept), shown(&scanned), "{what}: {d}");
            }
            (Err(StoreError::NotFound { .. }), Err(StoreError::NotFound { .. })) => {}
            (kept, scanned) => panic!("{what}: {d}: kept {kept:?}, scanned {scanned:?}"),
        }
    }
}

pub(super) fn step(
    kind: &str,
    from: Option<&str>,
    to: &str,
    guards: &[&str],
) -> execstore::executions::TraceStep {
    json!({"event_kind": kind, "from_path": from, "to_path": to, "guards": guards, "timestamp": 1.0})
        .as_object()
        .unwrap()
        .clone()
}

/// Commits with steps, a ring that evicts, purge, terminate and purge-finished through the
/// store, then harel 0.9's own statements on another connection (its INSERT, its trace
/// INSERT and ring DELETE, CAS UPDATE and purge DELETEs in its order), a trace written before
/// its execution, and hand-written moves: after each, the kept figures equal a scan.
#[test]
fn the_graph_figures_follow_every_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.db");
    for (prefix, pfx) in [(None, ""), (Some("harel"), "harel_")] {
        let mut options = SqliteOptions::new();
        options.prefix = prefix.map(str::to_owned);
        options.trace_max = Some(4);
        let store = SqliteStore::open(&path, options).unwrap();
        let defs = ["d0", "d1", "d9"];
        let other = Connection::open(&path).unwrap();
        let mut exes = Vec::new();
        for i in 0..10 {
            let mut exe = Execution::new(format!("e{i:02}"), format!("d{}", i % 2));
            exe.status = Status::Running;
            if i == 9 {
                exe.parent_id = Some("e08".into());
            }
            store.save(&mut exe).unwrap();
            exes.push(exe);
        }
        same(&store, &defs, "inserts");
        for (i, exe) in exes.iter_mut().enumerate() {
            exe.active_path = Some("a.x".into());
            store
                .commit(exe, &Effects::new().trace(step("Start", None, "a.x", &[])))
                .unwrap();
            for n in 0..(i % 4) * 2 {
                let (from, to) = if n % 2 == 0 { ("a.x", "b") } else { ("b", "a.x") };
                exe.active_path = Some(to.into());
                store
                    .commit(
                        exe,
                        &Effects::new().trace(step("Go", Some(from), to, &["ok", "ok"])),
                    )
                    .unwrap();
            }
        }
        same(&store, &defs, "steps, rings evicted");
        assert!(store
            .graph_figures("d1", ALL)
            .unwrap()
            .guards
            .iter()
            .any(|g| g.n > 1));
        assert!(store.purge("e00", exes[0].version).unwrap());
        same(&store, &defs, "purge");
        control::terminate(&store, "e08", None, 2e9).unwrap();
        same(&store, &defs, "terminate");
        control::purge_finished(&store, &control::PurgeFinished::new(0.0, 3e9), None).unwrap();
        same(&store, &defs, "purge-finished");

        // harel 0.9's own writes, on a connection execstore does not hold.
        let (t, tr) = (format!("{pfx}executions"), format!("{pfx}trace"));
        let trace = |id: &str, entry: &str| {
            other
                .execute(
                    &format!(
                        "INSERT INTO {tr} (execution_id, idx, entry) \
                         SELECT ?1, COALESCE((SELECT MAX(idx) FROM {tr} WHERE execution_id = ?1), -1) + 1, ?2"
                    ),
                    [id, entry],
                )
                .unwrap();
            other
                .execute(
                    &format!(
                        "DELETE FROM {tr} WHERE execution_id = ?1 AND idx <= \
                         (SELECT MAX(idx) FROM {tr} WHERE execution_id = ?1) - 4"
                    ),
                    [id],
                )
                .unwrap();
        };
        // A step written before its execution (counted when the execution lands).
        trace(
            "h1",
            r#"{"event_kind": "Start", "from_path": null, "to_path": "s", "guards": ["g"]}"#,
        );
        same(&store, &defs, "a step without its execution");
        other
            .execute(
                &format!("INSERT INTO {t} (id, definition_id, data, version) VALUES (?1, ?2, ?3, 1)"),
                [
                    "h1",
                    "d9",
                    r#"{"id": "h1", "definition_id": "d9", "status": "RUNNING", "active_path": "s"}"#,
                ],
            )
            .unwrap();
        for n in 0..6 {
            trace(
                "h1",
                &format!(
                    r#"{{"event_kind": "E{}", "from_path": "s", "to_path": "s", "guards": [1, null, "\ud800"], "x": NaN}}"#,
                    n % 2
                ),
            );
        }
        other
            .execute(
                &format!("UPDATE {t} SET data = ?1, version = 2 WHERE id = ?2 AND version = 1"),
                [
                    r#"{"id": "h1", "definition_id": "d9", "status": "FAILED", "active_path": "t"}"#,
                    "h1",
                ],
            )
            .unwrap();
        same(&store, &defs, "harel's writes");
        assert_eq!(
            store
                .graph_figures("d9", ALL)
                .unwrap()
                .steps
                .iter()
                .map(|s| s.n)
                .sum::<u64>(),
            4
        );
        // By hand: an execution moved to another definition, a step rewritten.
        other
            .execute(
                &format!("UPDATE {t} SET definition_id = 'd1' WHERE id = 'e02'"),
                [],
            )
            .unwrap();
        other
            .execute(
                &format!("UPDATE {tr} SET entry = '{{\"event_kind\": \"Z\"}}' WHERE execution_id = 'e03' AND idx = 0"),
                [],
            )
            .unwrap();
        same(&store, &defs, "moved by hand");
        // harel's purge: the execution, then its companions.
        other
            .execute(&format!("DELETE FROM {t} WHERE id = ?1"), ["h1"])
            .unwrap();
        other
            .execute(&format!("DELETE FROM {tr} WHERE execution_id = ?1"), ["h1"])
            .unwrap();
        same(&store, &defs, "harel's purge");
        assert!(matches!(
            store.graph_figures("d9", ALL),
            Err(StoreError::NotFound { .. })
        ));
        drop(store);
    }
}

/// Where executions sit is read from migration 11's index of the active path alone: its
/// plan reads that index as covering (no document of harel's table), and `now` keeps the
/// counts only (every row at the path `''`), so a figure changed by hand in `now` changes
/// no state's count, and a move by hand is read at once. The steps are read from the traces
/// of the `max_traces` most recently updated executions, as a scan reads them; migration 10
/// left no trigger on the trace and no table of steps.
#[test]
fn where_executions_sit_is_read_from_the_active_path_index() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    for i in 0..20 {
        let mut exe = Execution::new(format!("e{i:02}"), format!("d{}", i % 2));
        exe.active_path = Some("s".into());
        store.save(&mut exe).unwrap();
        store
            .commit(&mut exe, &Effects::new().trace(step("Start", None, "s", &["g"])))
            .unwrap();
    }
    assert!(store
        .sql
        .has_sitting_index
        .load(std::sync::atomic::Ordering::Relaxed));
    let p = super::tests::plan(&store, &store.sql.graph.sitting, &[&"d1"]);
    assert!(
        p.iter()
            .any(|s| s.contains("COVERING INDEX execstore_executions_by_active_path")),
        "{p:?}"
    );
    let conn = store.lock().unwrap();
    let paths: Vec<String> = conn
        .prepare("SELECT DISTINCT active_path FROM execstore_graph_now")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(paths, [""]);
    let left: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE tbl_name = 'trace' AND type = 'trigger' \
             OR name IN ('execstore_graph_steps', 'execstore_graph_guards')",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    drop(conn);
    let conn = super::tests::other_writer(&store);
    conn.execute_batch(
        "UPDATE execstore_graph_now SET n = n + 1000 WHERE definition_id = 'd1';
         UPDATE executions SET data = json_set(data, '$.active_path', 't') WHERE id = 'e01';",
    )
    .unwrap();
    drop(conn);
    let f = store.graph_figures("d1", 3).unwrap();
    assert_eq!((f.executions, f.traces_read, f.maintained), (10, 3, true));
    let now: Vec<(Option<&str>, u64)> = f.now.iter().map(|n| (n.active_path.as_deref(), n.n)).collect();
    assert_eq!(now, [(Some("s"), 9), (Some("t"), 1)]);
    assert_eq!((f.steps[0].n, f.guards[0].n), (3, 3));
    let scanned = graph_figures_by_scan(&store, "d1", 3).unwrap();
    assert_eq!(shown(&f), shown(&scanned));
    let none = store.graph_figures("d1", 0).unwrap();
    assert!(none.steps.is_empty() && none.guards.is_empty() && none.traces_read == 0);
}

/// A file migrated up to 10 (here: with 11 undone), opened read-only, reads where
/// executions sit from `now` as migrations 8 to 10 kept it; its first writer migrates it to
/// the index, and both answer what a scan does.
#[test]
fn a_file_at_migration_10_reads_where_executions_sit_as_it_was_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ten.db");
    {
        let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
        for i in 0..9 {
            let mut exe = Execution::new(format!("e{i}"), "d");
            exe.active_path = Some(if i < 3 { "a" } else { "b" }.into());
            store.save(&mut exe).unwrap();
        }
        super::tests::rewind(&store.lock().unwrap(), 10);
    }
    let read_only = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
    use std::sync::atomic::Ordering::Relaxed;
    assert!(read_only.sql.has_graph.load(Relaxed));
    assert!(!read_only.sql.has_sitting_index.load(Relaxed));
    let kept = read_only.graph_figures("d", ALL).unwrap();
    assert!(kept.maintained);
    assert_eq!(
        shown(&kept),
        shown(&graph_figures_by_scan(&read_only, "d", ALL).unwrap())
    );
    assert_eq!(kept.now.iter().map(|n| n.n).collect::<Vec<_>>(), [3, 6]);
    drop(read_only);
    let writer = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    assert!(writer.sql.has_sitting_index.load(Relaxed));
    assert_eq!(writer.schema_version().unwrap(), 13);
    assert_eq!(shown(&writer.graph_figures("d", ALL).unwrap()), shown(&kept));
}

/// A file written before migration 7 (here: with it undone) is scanned when opened
/// read-only, and gets the figures, right, from its first writer.
#[test]
fn an_old_file_gets_its_graph_figures_from_its_first_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
        for i in 0..9 {
            let mut exe = Execution::new(format!("e{i}"), "d");
            exe.active_path = Some(if i < 3 { "a" } else { "b" }.into());
            store.save(&mut exe).unwrap();
            store
                .commit(
                    &mut exe,
                    &Effects::new().trace(step("Go", Some("a"), "b", &["g"])),
                )
                .unwrap();
        }
        super::tests::rewind(&store.lock().unwrap(), 6);
    }
    let read_only = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
    assert!(!read_only.sql.has_graph.load(std::sync::atomic::Ordering::Relaxed));
    let scanned = read_only.graph_figures("d", ALL).unwrap();
    assert!(!scanned.maintained);
    drop(read_only);
    let writer = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    let kept = writer.graph_figures("d", ALL).unwrap();
    assert!(kept.maintained);
    assert_eq!(shown(&kept), shown(&scanned));
    assert_eq!((kept.steps[0].n, kept.guards[0].n, kept.now.len()), (9, 9, 2));
}

/// A document as Python's `json.dumps` writes a `NaN` (harel's context may hold one) is
/// read by SQLite's JSON functions (JSON5), the listing and a scan, and counted by the kept
/// figures too since migration 12 (migrations 5 to 11 left it out: their `json_valid` is
/// RFC 8259 only), whether another writer's triggers or this store's writer counted it.
#[test]
fn a_document_with_nan_is_counted_as_a_scan_counts_it() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("plain", "d");
    exe.active_path = Some("s".into());
    store.save(&mut exe).unwrap();
    super::tests::other_writer(&store)
        .execute(
            r#"INSERT INTO executions (id, definition_id, data, version) VALUES ('nan', 'd', '{"id": "nan", "definition_id": "d", "status": "RUNNING", "active_path": "s", "x": NaN}', 1)"#,
            [],
        )
        .unwrap();
    same(&store, &["d"], "a NaN document");
    // This store does not load it (its reader refuses NaN), but its purge counts it out.
    assert!(matches!(
        store.load("nan"),
        Err(execstore::StoreError::Corrupt { .. })
    ));
    assert!(store.purge("nan", 1).unwrap());
    same(&store, &["d"], "a NaN document, purged");
    let counts = store
        .count_by_status(&execstore::executions::ListQuery::new())
        .unwrap();
    assert!(
        counts.iter().all(|&(s, n)| n == u64::from(s == Status::Pending)),
        "{counts:?}"
    );
}
