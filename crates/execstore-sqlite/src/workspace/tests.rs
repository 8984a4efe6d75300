//! Unit tests of the workspace storage's internals: query plans and statement reuse.

use std::sync::Arc;

use execstore::workspace::{
    Entry, EvaluationError, LogQuery, ManualClock, Timestamp, WorkspaceRef, WorkspaceStorage,
};
use serde_json::json;

use super::reads::log_query;
use super::*;
use crate::Synchronous;

fn storage(dir: &tempfile::TempDir) -> SqliteWorkspaceStorage {
    let clock = ManualClock::new(Timestamp::from_micros(1_767_268_800_000_000).unwrap());
    let options = SqliteWorkspaceOptions::new()
        .clock(Arc::new(clock))
        .synchronous(Synchronous::Off);
    SqliteWorkspaceStorage::open(dir.path().join("w.db"), options).unwrap()
}

fn entry(id: String, kind: &str) -> Entry {
    let event = json!({"type": format!("t:{kind}"), "n": 1});
    Entry::new(
        id,
        json!({"kind": "source", "name": "t"}),
        event.as_object().unwrap().clone(),
    )
}

/// Fills two workspaces with envelopes of several types, so the planner has statistics-free
/// but non-trivial tables.
fn fill(s: &SqliteWorkspaceStorage) -> WorkspaceRef {
    let w = WorkspaceRef::new("t", "w");
    for ws in [&w, &WorkspaceRef::new("t", "other")] {
        let mut tx = s.begin(ws).unwrap();
        let entries: Vec<Entry> = (0..200)
            .map(|i| entry(format!("e{i}"), ["a", "b", "c", "d"][i % 4]))
            .collect();
        tx.append(&entries).unwrap();
        tx.commit().unwrap();
    }
    w
}

fn plan(s: &SqliteWorkspaceStorage, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Vec<String> {
    let conn = s.0.driver().inner.reader().unwrap();
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let rows = stmt.query_map(args, |row| row.get::<_, String>(3)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

fn assert_uses_index(plan: &[String], index: &str, what: &str) {
    assert!(
        plan.iter()
            .any(|step| step.contains("reflexr_events") && step.contains(index)),
        "{what}: {index} is not used: {plan:?}"
    );
    assert!(
        !plan
            .iter()
            .any(|step| step.starts_with("SCAN reflexr_events") && !step.contains("INDEX")),
        "{what}: full table scan: {plan:?}"
    );
}

/// A tail read walks the primary key backwards from the end of the workspace's range; a read
/// of some types is one range of `ix_reflexr_events_type` per type; a stored rule's history
/// one range of the partial `ix_reflexr_events_rule`.
#[test]
fn log_reads_use_the_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let s = storage(&dir);
    let w = fill(&s);
    let (t, ws, after, before, limit) = (&w.tenant_id, &w.workspace_id, 10i64, 150i64, 5i64);
    let pk = "sqlite_autoindex_reflexr_events_1";

    let p = plan(&s, &log_query(false, 0, true), &[t, ws, &after, &limit]);
    assert_uses_index(&p, pk, "tail");
    assert!(!p.iter().any(|s| s.contains("TEMP B-TREE")), "tail sorts: {p:?}");
    let p = plan(&s, &log_query(true, 0, true), &[t, ws, &after, &before, &limit]);
    assert_uses_index(&p, pk, "tail before a seq");
    let p = plan(&s, &log_query(false, 0, false), &[t, ws, &after, &limit]);
    assert_uses_index(&p, pk, "from a seq");
    assert!(!p.iter().any(|s| s.contains("TEMP B-TREE")), "head sorts: {p:?}");

    for last in [false, true] {
        let p = plan(&s, &log_query(false, 1, last), &[t, ws, &after, &"t:a", &limit]);
        assert_uses_index(&p, "ix_reflexr_events_type", "one type");
        let p = plan(
            &s,
            &log_query(true, 2, last),
            &[t, ws, &after, &before, &"t:a", &"t:c", &limit],
        );
        assert_uses_index(&p, "ix_reflexr_events_type", "two types");
    }

    let p = plan(&s, sql::RULE_HISTORY, &[t, ws, &"x:rule"]);
    assert_uses_index(&p, "ix_reflexr_events_rule", "rule history");
    let p = plan(
        &s,
        "SELECT envelope FROM reflexr_events WHERE tenant_id = ?1 AND workspace_id = ?2 AND event_id = ?3",
        &[t, ws, &"e7"],
    );
    assert_uses_index(&p, "sqlite_autoindex_reflexr_events_2", "envelope by id");

    // And they answer as the suite expects.
    let tail = s.read(&w, &LogQuery::new().types(["t:b"]).last(3)).unwrap();
    assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), [190, 194, 198]);
}

/// A page of leases is one range of the primary key, in its order (no sort of the
/// workspace's every lease row), and pages on from a key.
#[test]
fn a_page_of_leases_walks_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = storage(&dir);
    let w = WorkspaceRef::new("t", "w");
    for i in 0..50 {
        assert!(s
            .acquire_lease(&w, &format!("run:{i:03}"), "h", std::time::Duration::from_secs(9))
            .unwrap());
    }
    let p = plan(
        &s,
        sql::LEASES_PAGE,
        &[&w.tenant_id, &w.workspace_id, &"run:010", &5i64],
    );
    assert!(
        p.iter().any(|step| step.contains("reflexr_leases")
            && step.contains("sqlite_autoindex_reflexr_leases_1")
            && step.contains("key>?")),
        "not a range of the key: {p:?}"
    );
    assert!(!p.iter().any(|step| step.contains("TEMP B-TREE")), "sorts: {p:?}");
    let page = s.leases_page(&w, Some("run:010"), 3).unwrap();
    let keys: Vec<&str> = page.iter().map(|l| l.key.as_str()).collect();
    assert_eq!(keys, ["run:011", "run:012", "run:013"]);
}

/// A page of dead letters is one range of the primary key (all) or of
/// `ix_reflexr_dead_letters_rule` (one rule's), in position order, with no sort.
#[test]
fn a_page_of_dead_letters_walks_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let s = storage(&dir);
    let w = WorkspaceRef::new("t", "w");
    let mut tx = s.begin(&w).unwrap();
    let letters: Vec<EvaluationError> = (0..40)
        .map(|i| EvaluationError::new(if i % 4 == 0 { "rare" } else { "common" }, i, "boom"))
        .collect();
    tx.dead_letter(&letters).unwrap();
    tx.commit().unwrap();
    let (t, ws) = (&w.tenant_id, &w.workspace_id);
    for (sql, args, index) in [
        (
            sql::DEAD_LETTERS_PAGE,
            vec![t as &dyn rusqlite::ToSql, ws, &3i64, &5i64],
            "sqlite_autoindex_reflexr_dead_letters_1",
        ),
        (
            sql::RULE_DEAD_LETTERS_PAGE,
            vec![t as &dyn rusqlite::ToSql, ws, &"rare", &3i64, &5i64],
            "ix_reflexr_dead_letters_rule",
        ),
    ] {
        let p = plan(&s, sql, &args);
        assert!(
            p.iter().any(|step| step.contains("reflexr_dead_letters")
                && step.contains(index)
                && step.contains("position>?")),
            "not a range of {index}: {p:?}"
        );
        assert!(!p.iter().any(|step| step.contains("TEMP B-TREE")), "sorts: {p:?}");
    }
    let page = s.dead_letters_page(&w, Some("rare"), 0, 3).unwrap();
    let seqs: Vec<i64> = page
        .iter()
        .map(|(_, l)| l.doc()["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [0, 4, 8]);
}

/// The commit path prepares each statement once per connection and then reuses it.
#[test]
fn statements_are_prepared_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = storage(&dir);
    let w = WorkspaceRef::new("t", "w");
    for i in 0..20 {
        let mut tx = s.begin(&w).unwrap();
        tx.append(&[entry(format!("e{i}"), "a")]).unwrap();
        tx.commit().unwrap();
        s.read(&w, &LogQuery::new().last(2)).unwrap();
    }
    let conn = s.0.driver().inner.writer();
    for text in [
        sql::BEGIN_IMMEDIATE,
        sql::INSERT_EVENT,
        sql::UPDATE_WORKSPACE,
        sql::COMMIT,
    ] {
        let stmt = conn.prepare_cached(text).unwrap();
        assert!(stmt.get_status(rusqlite::StatementStatus::Run) >= 20, "{text}");
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0, "{text}");
    }
    drop(conn);
    let reader = s.0.driver().inner.reader().unwrap();
    let stmt = reader.prepare_cached(&log_query(false, 0, true)).unwrap();
    assert!(stmt.get_status(rusqlite::StatementStatus::Run) >= 20);
}

/// The writer connection and the reader have the pragmas of the options.
#[test]
fn pragmas_of_the_connections() {
    let dir = tempfile::tempdir().unwrap();
    let s = storage(&dir);
    let pragma = |conn: &rusqlite::Connection, name: &str| -> String {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| {
            row.get::<_, rusqlite::types::Value>(0)
        })
        .map(|v| match v {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t,
            other => format!("{other:?}"),
        })
        .unwrap()
    };
    let writer = s.0.driver().inner.writer();
    assert_eq!(pragma(&writer, "journal_mode"), "wal");
    assert_eq!(pragma(&writer, "synchronous"), "0");
    assert_eq!(pragma(&writer, "busy_timeout"), "5000");
    assert_eq!(pragma(&writer, "query_only"), "0");
    drop(writer);
    let reader = s.0.driver().inner.reader().unwrap();
    assert_eq!(pragma(&reader, "query_only"), "1");
}

/// The search's SQL narrows the rows it hands the matcher: only envelopes that may match
/// leave the database (the contract's answer is the matcher's either way, so only this shows
/// the SQL doing its part), within the window of seqs asked for.
#[test]
fn search_narrows_in_sql() {
    let dir = tempfile::tempdir().unwrap();
    let s = storage(&dir);
    let w = fill(&s);
    let conn = s.0.driver().inner.reader().unwrap();
    let f = |text: &str| execstore::workspace::parse_log_where(text, 0.0).unwrap();
    let got =
        super::search::log_candidates(&conn, &w, &f("type = t:b and event.n = 1"), (0, 200), false, 1000)
            .unwrap();
    assert_eq!(got.len(), 50);
    assert!(got.iter().all(|e| e.event_type() == "t:b"));
    let got =
        super::search::log_candidates(&conn, &w, &f("event.n = 2 or event.n > 5"), (0, 200), false, 1000)
            .unwrap();
    assert!(got.is_empty(), "no envelope has n = 2 or above 5: {}", got.len());
    let got = super::search::log_candidates(&conn, &w, &f("event.type ^= \"t:c\""), (100, 140), true, 1000)
        .unwrap();
    let seqs: Vec<i64> = got.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![139, 135, 131, 127, 123, 119, 115, 111, 107, 103]);
    let got =
        super::search::log_candidates(&conn, &w, &f("event.n exists and seq > 190"), (0, 200), false, 3)
            .unwrap();
    assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![191, 192, 193]);
}

/// `all_stored_rules` is answered by the driver's one read (its hook gives `Some`), not by a
/// call per workspace, and equals what those calls give.
#[test]
fn all_stored_rules_is_one_read() {
    use execstore::workspace::{StoredRule, StoredRuleStatus, WorkspaceDriver as _};
    let dir = tempfile::tempdir().unwrap();
    let s = storage(&dir);
    for (i, ws) in [WorkspaceRef::new("t", "b"), WorkspaceRef::new("t", "a")]
        .iter()
        .enumerate()
    {
        let mut tx = s.begin(ws).unwrap();
        tx.append(&[entry(format!("e{i}"), "a")]).unwrap();
        for name in ["r:x", "r:y"] {
            let rule = json!({"name": name, "n": i});
            tx.save_stored_rule(&StoredRule {
                rule: rule.as_object().unwrap().clone(),
                version: 1,
                status: StoredRuleStatus::Active,
                provenance: serde_json::Map::new(),
            })
            .unwrap();
        }
        tx.commit().unwrap();
    }
    let hooked =
        s.0.driver()
            .all_stored_rules()
            .unwrap()
            .expect("the driver's one read");
    assert_eq!(hooked.len(), 4);
    assert_eq!(hooked, execstore::workspace::rules_by_calls(&s).unwrap());
    assert_eq!(s.all_stored_rules().unwrap(), hooked);
}
