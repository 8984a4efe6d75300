//! The graph figures kept by migrations 7 and 8's triggers (`graph.rs`; where executions sit,
//! the steps read from the traces since migration 10): right under every writer, read by
//! `graph_figures` from their own table, built for an old file by its first writer, scanned by
//! a read-only open of a file without them.

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

/// Where executions sit is read from the kept figures alone: one statement whose plan
/// searches `now` by its primary key and never harel's tables, and a figure changed by hand
/// is what it answers. The steps are read from the traces of the `max_traces` most recently
/// updated executions, as a scan reads them; migration 10 left no trigger on the trace and no
/// table of steps.
#[test]
fn the_graph_is_read_from_the_kept_figures() {
    let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
    for i in 0..20 {
        let mut exe = Execution::new(format!("e{i:02}"), format!("d{}", i % 2));
        exe.active_path = Some("s".into());
        store.save(&mut exe).unwrap();
        store
            .commit(&mut exe, &Effects::new().trace(step("Start", None, "s", &["g"])))
            .unwrap();
    }
    let p = super::tests::plan(&store, &store.sql.graph.read, &[&"d1"]);
    assert!(
        p.iter()
            .any(|s| s.contains("execstore_graph_now") && s.contains("PRIMARY KEY (definition_id=?)")),
        "{p:?}"
    );
    assert!(
        !p.iter()
            .any(|s| s.contains(" executions") || s.contains(" trace")),
        "{p:?}"
    );
    let left: Vec<String> = store
        .lock()
        .unwrap()
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
    store
        .lock()
        .unwrap()
        .execute(
            "UPDATE execstore_graph_now SET n = n + 1000 WHERE definition_id = 'd1'",
            [],
        )
        .unwrap();
    let f = store.graph_figures("d1", 3).unwrap();
    assert_eq!((f.executions, f.traces_read, f.maintained), (1010, 3, true));
    assert_eq!((f.now[0].n, f.steps[0].n, f.guards[0].n), (1010, 3, 3));
    let scanned = graph_figures_by_scan(&store, "d1", 3).unwrap();
    assert_eq!((&f.steps, &f.guards), (&scanned.steps, &scanned.guards));
    let none = store.graph_figures("d1", 0).unwrap();
    assert!(none.steps.is_empty() && none.guards.is_empty() && none.traces_read == 0);
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
