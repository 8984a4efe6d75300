//! The workspace log against the real reflexr 0.1.1, on SQLite files: reflexr writes and
//! execstore reads (read-only first, leaving the file byte-identical, then read-write), every
//! stored text re-serialized byte for byte; execstore writes and reflexr reads (its migrate
//! finds nothing to do), then appends; and one program of calls applied by both leaves the same
//! rows in every table.
//!
//! reflexr's Python comes from `EXECSTORE_REFLEXR_PYTHON`, else the venv `scripts/test` makes;
//! without one the tests print `SKIPPED: ...` and pass, unless `EXECSTORE_REQUIRE_REFLEXR=1`.

mod workspace_common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use execstore::kit::pyjson;
use execstore::workspace::{
    Envelope, EvaluationError, LogQuery, ManualClock, RuleProgress, Run, ScopeState, Timestamp, WorkspaceRef,
    WorkspaceStorage,
};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use rusqlite::types::ValueRef;
use serde_json::{json, Value};
use workspace_common::variety::{self, at};
use workspace_common::{arr, assert_same, dump, i, program, reflexr, s, without_tx, write_json};

fn open(path: &Path, clock: &ManualClock, read_only: bool) -> SqliteWorkspaceStorage {
    let options = SqliteWorkspaceOptions::new()
        .clock(Arc::new(clock.clone()))
        .read_only(read_only);
    SqliteWorkspaceStorage::open(path, options).expect("open the workspace storage")
}

fn sql(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open")
}

/// `sqlite_master` in creation order, without the root pages.
fn schema(path: &Path) -> Vec<Vec<Option<String>>> {
    let conn = sql(path);
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((0..4).map(|n| r.get(n).unwrap()).collect()))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Every row of every `reflexr_*` table (ordered by all its columns), each value with its
/// storage class.
fn table_rows(path: &Path) -> BTreeMap<String, Vec<Vec<String>>> {
    let conn = sql(path);
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'reflexr%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = BTreeMap::new();
    for table in tables {
        let n = conn
            .prepare(&format!("SELECT * FROM \"{table}\""))
            .unwrap()
            .column_count();
        let order: Vec<String> = (1..=n).map(|c| c.to_string()).collect();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT * FROM \"{table}\" ORDER BY {}",
                order.join(", ")
            ))
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((0..n)
                    .map(|c| match r.get_ref(c).unwrap() {
                        ValueRef::Null => "NULL".to_owned(),
                        ValueRef::Integer(v) => format!("int:{v}"),
                        ValueRef::Real(v) => format!("real:{v:?}"),
                        ValueRef::Text(t) => format!("text:{}", String::from_utf8_lossy(t)),
                        ValueRef::Blob(b) => format!("blob:{b:?}"),
                    })
                    .collect::<Vec<_>>())
            })
            .unwrap();
        out.insert(table, rows.collect::<Result<_, _>>().unwrap());
    }
    out
}

/// Every stored text re-serializes byte for byte once execstore has read it, and every column
/// derived from a JSON document matches it. Returns how many values were checked.
fn check_stored_texts(path: &Path) -> usize {
    let conn = sql(path);
    let mut checked = 0;
    let mut each = |query: &str, check: &mut dyn FnMut(&rusqlite::Row<'_>)| {
        let mut stmt = conn.prepare(query).unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            check(row);
            checked += 1;
        }
    };
    let text = |row: &rusqlite::Row<'_>, n: usize| -> String { row.get(n).unwrap() };
    let same_time = |t: Option<String>| {
        if let Some(t) = t {
            let parsed = Timestamp::parse_sqlite_text(&t).expect("a stored date-time");
            assert_eq!(parsed.to_sqlite_text(), t, "date-time text");
        }
    };
    each(
        "SELECT seq, event_id, envelope, event_type, rule FROM reflexr_events",
        &mut |row| {
            let stored = text(row, 2);
            let e = Envelope::from_json(&stored).expect("an envelope");
            assert_eq!(e.to_json(), stored, "envelope text");
            assert_eq!(
                (e.seq, e.id.as_str()),
                (row.get(0).unwrap(), text(row, 1).as_str())
            );
            assert_eq!(e.event_type(), text(row, 3));
            assert_eq!(
                e.stored_rule(),
                row.get::<_, Option<String>>(4).unwrap().as_deref()
            );
        },
    );
    each(
        "SELECT id, rule, scope_key, status, fired_seq, next_attempt_at, body FROM reflexr_runs",
        &mut |row| {
            let stored = text(row, 6);
            let r = Run::from_json(&stored).expect("a run");
            assert_eq!(r.to_json(), stored, "run text");
            assert_eq!(
                (
                    r.id(),
                    r.rule(),
                    r.scope_key(),
                    r.status().as_str(),
                    r.fired_seq()
                ),
                (
                    text(row, 0).as_str(),
                    text(row, 1).as_str(),
                    text(row, 2).as_str(),
                    text(row, 3).as_str(),
                    row.get(4).unwrap()
                )
            );
            assert_eq!(r.next_attempt_at().to_sqlite_text(), text(row, 5));
        },
    );
    each("SELECT body FROM reflexr_rule_progress", &mut |row| {
        let stored = text(row, 0);
        assert_eq!(RuleProgress::from_json(&stored).unwrap().to_json(), stored);
    });
    each("SELECT body FROM reflexr_scope_states", &mut |row| {
        let stored = text(row, 0);
        assert_eq!(ScopeState::from_json(&stored).unwrap().to_json(), stored);
    });
    each("SELECT rule, body FROM reflexr_dead_letters", &mut |row| {
        let stored = text(row, 1);
        let l = EvaluationError::from_json(&stored).unwrap();
        assert_eq!(l.to_json(), stored);
        assert_eq!(l.rule(), text(row, 0));
    });
    each("SELECT rule, provenance FROM reflexr_rules", &mut |row| {
        for n in 0..2 {
            let stored = text(row, n);
            assert_eq!(pyjson::dumps(&pyjson::loads(&stored).unwrap()), stored);
        }
    });
    each("SELECT head_ts FROM reflexr_workspaces", &mut |row| {
        same_time(row.get(0).unwrap())
    });
    each("SELECT at FROM reflexr_schedules", &mut |row| {
        same_time(row.get(0).unwrap())
    });
    each("SELECT expires_at FROM reflexr_leases", &mut |row| {
        same_time(row.get(0).unwrap())
    });
    checked
}

/// The files of a folder with their bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The leases of every workspace as `[tenant, workspace, key, holder, expires micros]`, by
/// workspace then key.
fn leases(s: &dyn WorkspaceStorage) -> Vec<Value> {
    let mut out = Vec::new();
    for w in variety::workspaces() {
        for l in s.leases(&w).unwrap() {
            out.push(json!([
                w.tenant_id,
                w.workspace_id,
                l.key,
                l.holder,
                l.expires_at.micros()
            ]));
        }
    }
    out
}

fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort_by_key(|x| x.to_string());
    v
}

#[test]
fn reflexr_writes_execstore_reads() {
    let Some(rx) = reflexr() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let path = data.join("reflexr.db");
    let out = rx.run("write_variety.py", path.as_os_str(), dir.path(), &[]);
    let (probe, theirs) = (&out["probe"], &out["dump"]);
    assert_eq!(arr(&theirs["workspaces"]).len(), 4);

    // Read-only first: the same answers, and the file untouched.
    let before = files(&data);
    let clock = ManualClock::new(at(0.0));
    {
        let ro = open(&path, &clock, true);
        assert_same("read-only", &dump(&ro, probe, false), &without_tx(theirs.clone()));
        assert_eq!(sorted(leases(&ro)), sorted(arr(&out["leases"]).clone()));
    }
    assert!(files(&data) == before, "the read-only open changed the folder");

    let checked = check_stored_texts(&path);
    assert!(checked > 60, "only {checked} stored values checked");

    // Read-write: the transaction's reads too; then execstore appends after reflexr's head.
    let rw = open(&path, &clock, false);
    assert_same("read-write", &dump(&rw, probe, true), theirs);
    let main = WorkspaceRef::new("acme", "main");
    let head = rw.head_seq(&main).unwrap();
    let last = rw.read(&main, &LogQuery::new().last(1)).unwrap()[0].ts;
    clock.set(at(0.0)); // behind reflexr's last ts: the next one keeps it
    let mut tx = rw.begin(&main).unwrap();
    let e = variety::entry(
        "after-reflexr",
        variety::source("execstore"),
        json!({"type": "app:x"}),
    );
    let appended = tx.append(&[e]).unwrap();
    tx.commit().unwrap();
    assert_eq!((appended[0].seq, appended[0].ts), (head + 1, last));
    drop(rw);
    check_stored_texts(&path);
}

#[test]
fn execstore_writes_reflexr_reads() {
    let Some(rx) = reflexr() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("execstore.db");
    let clock = ManualClock::new(at(0.0));
    let s = open(&path, &clock, false);
    let written = variety::write(&s, &clock);
    variety::assert_every_status(&s);
    let ours = dump(&s, &written.probe, true);
    drop(s);
    let schema_before = schema(&path);

    let now = at(31.0).micros();
    let append: Vec<Value> = (1..=3)
        .map(|n| {
            json!({"id": format!("by-reflexr-{n}"), "actor": {"kind": "source", "name": "reflexr"},
                   "event": {"type": "app:order.placed", "n": n, "text": variety::TEXT, "x": 0.1 * n as f64}})
        })
        .collect();
    let spec = json!({"probe": written.probe, "now": now, "leases": written.leases,
                      "append_to": ["acme", "main"], "append": append});
    let spec_path = dir.path().join("spec.json");
    write_json(&spec_path, &spec);
    let out = rx.run(
        "read_back.py",
        path.as_os_str(),
        dir.path(),
        &[spec_path.as_os_str()],
    );

    assert_eq!(out["version"], json!(["0008"]));
    assert_eq!(
        out["schema_before"], out["schema_after"],
        "reflexr's migrate changed the schema"
    );
    assert_eq!(
        schema(&path),
        schema_before,
        "reflexr's migrate changed sqlite_master"
    );
    assert_same("reflexr's read-back", &ours, &out["dump"]);
    for (lease, got) in written.leases.iter().zip(arr(&out["leases"])) {
        let expired = i(&lease[4]) <= now;
        assert_eq!(
            got,
            &json!([lease[2], expired, !expired]),
            "{lease}: another holder gets it only once it expired"
        );
    }

    // reflexr's three appends follow execstore's log without a gap.
    let s = open(&path, &clock, false);
    let main = WorkspaceRef::new("acme", "main");
    let log = s.read(&main, &LogQuery::new()).unwrap();
    let head = written.head;
    assert_eq!(
        log.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=head + 3).collect::<Vec<_>>()
    );
    assert_eq!(s.head_seq(&main).unwrap(), head + 3);
    let theirs: Vec<&str> = arr(&out["appended"]).iter().map(s_).collect();
    let tail: Vec<String> = log[head as usize..].iter().map(Envelope::to_json).collect();
    assert_eq!(tail, theirs);
    assert_eq!(log[head as usize].id, "by-reflexr-1");
    check_stored_texts(&path);
}

fn s_(v: &Value) -> &str {
    s(v)
}

/// One program of calls through reflexr and through execstore, each on a new file: the
/// same answers, the same schema, the same rows in every table.
#[test]
fn same_calls_same_rows() {
    let Some(rx) = reflexr() else { return };
    let dir = tempfile::tempdir().unwrap();
    let program = program::generate(20_260_101, 80);
    let program_path = dir.path().join("program.json");
    write_json(&program_path, &program);
    let theirs_path = dir.path().join("reflexr.db");
    let theirs = rx.run(
        "apply_program.py",
        theirs_path.as_os_str(),
        dir.path(),
        &[OsStr::new(&program_path)],
    );
    let ours_path = dir.path().join("execstore.db");
    let clock = ManualClock::new(at(0.0));
    let s = open(&ours_path, &clock, false);
    let ours = program::apply(&s, &clock, &program);
    assert!(program::workspaces(&program)
        .iter()
        .all(|w| s.head_seq(w).unwrap() > 0));
    drop(s);
    assert_same("the program's answers", &ours, &theirs);
    assert_eq!(schema(&ours_path), schema(&theirs_path), "sqlite_master");
    let (ours, theirs) = (table_rows(&ours_path), table_rows(&theirs_path));
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (table, rows) in &ours {
        let other = &theirs[table];
        for (n, (a, b)) in rows.iter().zip(other).enumerate() {
            assert_eq!(a, b, "{table} row {n}");
        }
        assert_eq!(rows.len(), other.len(), "{table}: row count");
    }
    assert!(ours["reflexr_events"].len() > 50);
    assert!(ours["reflexr_runs"].len() > 10);
}
