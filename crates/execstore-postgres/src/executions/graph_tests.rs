//! The graph figures kept by migration 9 (`graph.rs`): right under every writer (the step and
//! batch functions, harel 0.9's own statements, control calls, moves and truncates by hand),
//! read by `graph_figures` from the folded figures and their deltas, never from harel's
//! tables.

use execstore::executions::graph::graph_figures_by_scan;
use execstore::executions::{control, GraphFigures, Status, TraceStep};
use execstore::{Effects, Execution, ExecutionStore, StoreError};
use serde_json::json;

use super::test_support::on_own_prefix;
use super::PgStore;

/// Every trace.
const ALL: usize = usize::MAX;

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
fn same(store: &PgStore, definitions: &[&str], what: &str) {
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

fn step(kind: &str, from: Option<&str>, to: &str, guards: &[&str]) -> TraceStep {
    json!({"event_kind": kind, "from_path": from, "to_path": to, "guards": guards, "timestamp": 1.0})
        .as_object()
        .unwrap()
        .clone()
}

#[test]
fn the_graph_figures_follow_every_writer() {
    on_own_prefix("graph", "kg", |url, prefix, store| {
        let defs = ["d0", "d1", "d9"];
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
        same(store, &defs, "inserts");
        let max = store.trace_max().map_or(8, |m| m as usize);
        for (i, exe) in exes.iter_mut().enumerate() {
            exe.active_path = Some("a.x".into());
            store
                .commit(exe, &Effects::new().trace(step("Start", None, "a.x", &[])))
                .unwrap();
            let n_steps = if i == 4 { max + 3 } else { (i % 4) * 2 };
            for n in 0..n_steps {
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
        same(store, &defs, "steps, a ring evicted");
        assert!(store.purge("e00", exes[0].version).unwrap());
        same(store, &defs, "purge");
        control::terminate(store, "e08", None, 2e9).unwrap();
        same(store, &defs, "terminate");
        control::purge_finished(store, &control::PurgeFinished::new(0.0, 3e9), None).unwrap();
        same(store, &defs, "purge-finished");

        // harel 0.9's own writes, on another connection, as plain statements.
        let (t, tr) = (format!("{prefix}_executions"), format!("{prefix}_trace"));
        let mut other = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let trace = |other: &mut postgres::Client, id: &str, entry: &str| {
            other
                .execute(
                    &format!(
                        "INSERT INTO {tr} (execution_id, idx, entry) SELECT $1::text, \
                         COALESCE((SELECT MAX(idx) FROM {tr} WHERE execution_id = $1::text), -1) + 1, $2::text"
                    ),
                    &[&id, &entry],
                )
                .unwrap();
            other
                .execute(
                    &format!(
                        "DELETE FROM {tr} WHERE execution_id = $1::text AND idx <= \
                         (SELECT MAX(idx) FROM {tr} WHERE execution_id = $1::text) - 4"
                    ),
                    &[&id],
                )
                .unwrap();
        };
        trace(
            &mut other,
            "h1",
            r#"{"event_kind": "Start", "from_path": null, "to_path": "s", "guards": ["g"]}"#,
        );
        same(store, &defs, "a step without its execution");
        other
            .execute(
                &format!("INSERT INTO {t} (id, definition_id, data, version) VALUES ($1, $2, $3, 1)"),
                &[
                    &"h1",
                    &"d9",
                    &r#"{"id": "h1", "definition_id": "d9", "status": "RUNNING", "active_path": "s"}"#,
                ],
            )
            .unwrap();
        for n in 0..6 {
            let entry = format!(
                r#"{{"event_kind": "E{}", "from_path": "s", "to_path": "s", "guards": [1, null], "x": NaN}}"#,
                n % 2
            );
            trace(&mut other, "h1", &entry);
        }
        // Lone surrogates, as Python's json.dumps writes them (PostgreSQL's JSON refuses
        // them), beside a pair: the step is written and counted under the labels a scan reads.
        trace(
            &mut other,
            "h1",
            r#"{"event_kind": "E1\ud800", "from_path": "s\udfff", "to_path": "s", "guards": ["\ud83d\ude00", "x\udc00y"], "x": NaN}"#,
        );
        same(store, &defs, "lone surrogates");
        // A backslash itself before such text (`"\\ud800"`) labels its figure as the escape
        // would (the module's documentation): the write goes through, and taking the step out
        // takes out what it added.
        let last = format!("(SELECT MAX(idx) FROM {tr} WHERE execution_id = 'h1')");
        other
            .execute(
                &format!("INSERT INTO {tr} (execution_id, idx, entry) SELECT 'h1', {last} + 1, $1::text"),
                &[&r#"{"event_kind": "\\ud800", "from_path": "s", "to_path": "s"}"#],
            )
            .unwrap();
        other
            .execute(
                &format!("DELETE FROM {tr} WHERE execution_id = 'h1' AND idx = {last}"),
                &[],
            )
            .unwrap();
        same(
            store,
            &defs,
            "a backslash before surrogate text, written and taken out",
        );
        other
            .execute(
                &format!("UPDATE {t} SET data = $1, version = 2 WHERE id = $2 AND version = 1"),
                &[
                    &r#"{"id": "h1", "definition_id": "d9", "status": "FAILED", "active_path": "t"}"#,
                    &"h1",
                ],
            )
            .unwrap();
        same(store, &defs, "harel's writes");
        let d9 = store.graph_figures("d9", ALL).unwrap();
        assert_eq!(d9.steps.iter().map(|s| s.n).sum::<u64>(), 4);
        // By hand: an execution moved to another definition (and one to another id), a step
        // rewritten.
        other
            .execute(
                &format!("UPDATE {t} SET definition_id = 'd1' WHERE id = 'e02'"),
                &[],
            )
            .unwrap();
        other
            .execute(&format!("UPDATE {t} SET id = 'e03b' WHERE id = 'e03'"), &[])
            .unwrap();
        other
            .execute(
                &format!("UPDATE {tr} SET entry = '{{\"event_kind\": \"Z\"}}' WHERE execution_id = 'e05' AND idx = 0"),
                &[],
            )
            .unwrap();
        same(store, &defs, "moved by hand");
        // harel's purge: the execution, then its companions.
        other
            .execute(&format!("DELETE FROM {t} WHERE id = $1"), &[&"h1"])
            .unwrap();
        other
            .execute(&format!("DELETE FROM {tr} WHERE execution_id = $1"), &[&"h1"])
            .unwrap();
        same(store, &defs, "harel's purge");
        // The reads folded the deltas.
        let deltas: i64 = other
            .query_one(
                &format!("SELECT COUNT(*) FROM {prefix}_execstore_graph_deltas"),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(deltas, 0);
        other.execute(&format!("TRUNCATE {tr}"), &[]).unwrap();
        same(store, &defs, "trace truncated");
        other.execute(&format!("TRUNCATE {t}"), &[]).unwrap();
        same(store, &defs, "executions truncated");
    });
}

/// `graph_figures` reads where executions sit from the kept figures and their deltas by
/// definition (the primary key and the deltas' index), never harel's tables nor the keys; a
/// figure changed by hand is what it answers. The steps are read from the traces of the
/// `max_traces` most recently updated executions, as a scan reads them.
#[test]
fn the_graph_is_read_from_the_kept_figures() {
    on_own_prefix("graph", "kgr", |url, prefix, store| {
        for i in 0..20 {
            let mut exe = Execution::new(format!("e{i:02}"), format!("d{}", i % 2));
            exe.active_path = Some("s".into());
            store.save(&mut exe).unwrap();
            store
                .commit(&mut exe, &Effects::new().trace(step("Start", None, "s", &["g"])))
                .unwrap();
        }
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!(
                "SET enable_seqscan = off; ANALYZE {prefix}_execstore_graph, {prefix}_execstore_graph_deltas"
            ))
            .unwrap();
        let plan: Vec<String> = client
            .query(&format!("EXPLAIN {}", store.sql.graph.read), &[&"d1"])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains(&format!("{prefix}_execstore_graph_pkey")), "{plan}");
        assert!(
            plan.contains(&format!("{prefix}_execstore_graph_deltas_def")),
            "{plan}"
        );
        assert!(
            !plan.contains("_executions") && !plan.contains("_trace") && !plan.contains("execstore_keys"),
            "{plan}"
        );
        // Migration 12 left no trigger on the trace and no step's figure.
        let left: i64 = client
            .query_one(
                &format!(
                    "SELECT (SELECT COUNT(*) FROM pg_trigger WHERE tgrelid = '{prefix}_trace'::regclass \
                     AND NOT tgisinternal) + (SELECT COUNT(*) FROM {prefix}_execstore_graph WHERE kind > 0) \
                     + (SELECT COUNT(*) FROM {prefix}_execstore_graph_deltas WHERE kind > 0)"
                ),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(left, 0);
        // A read folds the deltas into the table: the figure changed next is the whole one.
        assert_eq!(store.graph_figures("d1", 0).unwrap().executions, 10);
        client
            .execute(
                &format!("UPDATE {prefix}_execstore_graph SET n = n + 1000 WHERE definition_id = 'd1' AND kind = 0"),
                &[],
            )
            .unwrap();
        let f = store.graph_figures("d1", 3).unwrap();
        assert_eq!((f.executions, f.traces_read, f.maintained), (1010, 3, true));
        assert_eq!((f.now[0].n, f.steps[0].n, f.guards[0].n), (1010, 3, 3));
        let scanned = graph_figures_by_scan(store, "d1", 3).unwrap();
        assert_eq!((&f.steps, &f.guards), (&scanned.steps, &scanned.guards));
        let none = store.graph_figures("d1", 0).unwrap();
        assert!(none.steps.is_empty() && none.guards.is_empty() && none.traces_read == 0);
    });
}

/// The deltas under `prefix`.
fn deltas(client: &mut postgres::Client, prefix: &str, table: &str) -> i64 {
    client
        .query_one(&format!("SELECT COUNT(*) FROM {prefix}_execstore_{table}"), &[])
        .unwrap()
        .get(0)
}

/// Migration 12: a statement writing many steps appends no figure, whether it inserts,
/// rewrites or deletes them, and the figures stay a scan's. Migration 11: a fold takes at
/// most the rows it is given, a read folds at most `FOLD_MAX` and sums the rest.
#[test]
fn a_bulk_statement_on_the_trace_appends_nothing_and_folds_are_bounded() {
    on_own_prefix("graph", "kgb", |url, prefix, store| {
        let defs = ["d0", "d1"];
        for i in 0..200 {
            let mut exe = Execution::new(format!("e{i:03}"), format!("d{}", i % 2));
            exe.active_path = Some("s".into());
            store.save(&mut exe).unwrap();
        }
        same(store, &defs, "saved");
        let mut other = postgres::Client::connect(url, postgres::NoTls).unwrap();
        assert_eq!(deltas(&mut other, prefix, "graph_deltas"), 0);
        // 2,000 steps in one statement, rewritten, then some deleted: since migration 12 the
        // trace appends no delta, and the steps read are the traces' own.
        other
            .execute(
                &format!(
                    "INSERT INTO {prefix}_trace (execution_id, idx, entry) \
                     SELECT e.id, g, CASE WHEN g % 2 = 0 \
                       THEN '{{\"event_kind\": \"Go\", \"from_path\": \"s\", \"to_path\": \"t\", \"guards\": [\"ok\", 1]}}' \
                       ELSE '{{\"event_kind\": \"Back\", \"from_path\": \"t\", \"to_path\": \"s\"}}' END \
                     FROM {prefix}_executions e, generate_series(0, 9) g"
                ),
                &[],
            )
            .unwrap();
        assert_eq!(deltas(&mut other, prefix, "graph_deltas"), 0);
        same(store, &defs, "a bulk insert");
        other
            .execute(
                &format!("UPDATE {prefix}_trace SET entry = '{{\"event_kind\": \"Z\", \"to_path\": \"s\"}}' WHERE idx >= 8"),
                &[],
            )
            .unwrap();
        other
            .execute(&format!("DELETE FROM {prefix}_trace WHERE idx < 4"), &[])
            .unwrap();
        assert_eq!(deltas(&mut other, prefix, "graph_deltas"), 0);
        same(store, &defs, "a bulk update and delete");
        let d0 = store.graph_figures("d0", ALL).unwrap();
        assert_eq!(d0.steps.iter().map(|s| s.n).sum::<u64>(), 100 * 6);

        // A bounded fold takes what it is given, and the figures are the same after it.
        let before = store.graph_figures("d1", ALL).unwrap();
        other
            .execute(
                &format!(
                    "INSERT INTO {prefix}_execstore_graph_deltas (definition_id, kind, a, b, c, n) \
                     SELECT 'd1', 0, '\"s\"', 'PENDING', '', 1 FROM generate_series(1, 10)"
                ),
                &[],
            )
            .unwrap();
        let folded: i64 = other
            .query_one(&format!("SELECT {prefix}_execstore_fold_graph(4)"), &[])
            .unwrap()
            .get(0);
        assert_eq!((folded, deltas(&mut other, prefix, "graph_deltas")), (4, 6));
        let after = store.graph_figures("d1", ALL).unwrap();
        let go = |f: &GraphFigures| f.executions;
        assert_eq!(go(&after), go(&before) + 10);

        // A read folds at most FOLD_MAX, and sums the rest.
        let max = i64::from(super::sql::FOLD_MAX);
        other
            .execute(
                &format!(
                    "INSERT INTO {prefix}_execstore_graph_deltas (definition_id, kind, a, b, c, n) \
                     SELECT 'd1', 0, '\"s\"', 'PENDING', '', 1 FROM generate_series(1, $1::int8)"
                ),
                &[&(max + 5)],
            )
            .unwrap();
        let read = store.graph_figures("d1", ALL).unwrap();
        assert_eq!(go(&read), go(&after) + max as u64 + 5);
        assert_eq!(deltas(&mut other, prefix, "graph_deltas"), 5);
        let pending = |store: &PgStore| {
            store
                .count_by_status(&execstore::executions::ListQuery::default())
                .unwrap()
                .into_iter()
                .find(|(s, _)| *s == Status::Pending)
                .unwrap()
                .1
        };
        assert_eq!(pending(store), 200);
        assert_eq!(deltas(&mut other, prefix, "count_deltas"), 0);
        other
            .execute(
                &format!(
                    "INSERT INTO {prefix}_execstore_count_deltas (definition_id, status, root, n) \
                     SELECT 'd1', 'PENDING', true, 0 FROM generate_series(1, $1::int8)"
                ),
                &[&(max + 7)],
            )
            .unwrap();
        assert_eq!(pending(store), 200);
        assert_eq!(deltas(&mut other, prefix, "count_deltas"), 7);
    });
}

/// Migration 11: writers fold (one listing-keys change in 1,024, at random; migration 12
/// took the trace's statements out), so the deltas stay few without a reader; never in a
/// transaction that is not `READ COMMITTED`. Each change appends two deltas (where the
/// execution was, where it is). The odds: a READ COMMITTED run of 30,000 changes leaves more
/// than 30,000 deltas once in two million runs; a REPEATABLE READ run of 5,000 would have
/// folded 99 times in 100.
#[test]
fn writers_fold_the_deltas_without_a_reader() {
    on_own_prefix("graph", "kgw", |url, prefix, store| {
        // Fifty executions take turns (one row updated 35,000 times in one transaction would
        // walk its chain of versions at every update).
        for i in 0..50 {
            let mut exe = Execution::new(format!("w{i:02}"), "d0");
            exe.active_path = Some("s".into());
            store.save(&mut exe).unwrap();
        }
        let mut other = postgres::Client::connect(url, postgres::NoTls).unwrap();
        // A read folds the saves' deltas (one of them may have folded already).
        assert_eq!(store.graph_figures("d0", 0).unwrap().executions, 50);
        assert_eq!(deltas(&mut other, prefix, "graph_deltas"), 0);
        // From 50 on, every update moves its execution (`t` in odd fifties, `s` in even ones).
        let moves = |from: i32, to: i32| {
            format!(
                "DO $$ BEGIN FOR i IN {from}..{to} LOOP \
                 UPDATE {prefix}_execstore_keys SET active_path = CASE WHEN i / 50 % 2 = 0 THEN 's' ELSE 't' END \
                 WHERE id = 'w' || lpad((i % 50)::text, 2, '0'); \
                 END LOOP; END $$"
            )
        };
        other
            .batch_execute(&format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; {}; COMMIT",
                moves(50, 5049)
            ))
            .unwrap();
        assert_eq!(deltas(&mut other, prefix, "graph_deltas"), 10_000);
        other.batch_execute(&moves(5050, 35049)).unwrap();
        let left = deltas(&mut other, prefix, "graph_deltas");
        assert!(left < 30_000, "{left} deltas left of 70,000");
        // The last round (i / 50 even) moved every one back to `s`.
        let d0 = store.graph_figures("d0", ALL).unwrap();
        assert_eq!(d0.now.len(), 1);
        assert_eq!((d0.now[0].active_path.as_deref(), d0.now[0].n), (Some("s"), 50));
    });
}

/// Writers fold as much as readers: migration 11's triggers call both folds with the literal
/// `FOLD_MAX` (its text is frozen by its checksum, so the constant follows it, not the other
/// way round), and with no other bound.
#[test]
fn writers_fold_at_most_what_readers_fold() {
    let text = super::graph::GRAPH_BY_STATEMENT;
    let max = super::sql::FOLD_MAX;
    for fold in ["execstore_fold_graph(", "execstore_fold_counts("] {
        let bounds: Vec<&str> = text
            .match_indices(fold)
            .map(|(at, _)| {
                let args = &text[at + fold.len()..];
                &args[..args.find(')').unwrap_or(args.len())]
            })
            .filter(|args| !args.contains("p_max"))
            .collect();
        assert_eq!(bounds, vec![max.to_string(); 2], "{fold}: every writer's bound");
    }
}
