//! The workspace log against the real reflexr 0.1.1 (its `SqlStorage` on asyncpg), on a real
//! PostgreSQL server, each test in a database of its own (reflexr's `migrate()` works on the
//! default schema): reflexr writes and execstore reads (read-only first, creating and changing
//! nothing, then read-write), every stored text re-serialized byte for byte and `due_runs` the
//! same for many policies; execstore creates the tables and writes, reflexr's `migrate()`
//! finds nothing to do (the schema dump is unchanged), reads everything back the same and
//! appends, and execstore reads a gap-free log; and one program of calls applied by both
//! leaves the same schema and the same rows in every table.
//!
//! Needs `EXECSTORE_PG_URL` (the tests fail without it unless `EXECSTORE_PG_OPTIONAL=1`) and
//! reflexr's Python (see `workspace_common::reflexr`: skipped without it unless
//! `EXECSTORE_REQUIRE_REFLEXR=1`).

mod workspace_common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use execstore::kit::pyjson;
use execstore::workspace::{
    Envelope, EvaluationError, LogQuery, ManualClock, RuleProgress, Run, ScopeState, Timestamp, WorkspaceRef,
    WorkspaceStorage,
};
use execstore_e2e::pg;
use execstore_postgres::{
    drop_workspace_schema, has_workspace_tables, PgWorkspaceOptions, PgWorkspaceStorage,
};
use postgres::{Client, NoTls};
use serde_json::{json, Value};
use workspace_common::variety::{self, at};
use workspace_common::{arr, assert_same, dump, i, program, reflexr, s as text_of, without_tx, write_json};

/// A database of its own on the test server, dropped at the end (kept, and named, if the test
/// failed).
struct Database {
    admin: String,
    name: String,
    url: String,
}

impl Database {
    fn new(admin: &str, tag: &str) -> Database {
        let name = pg::fresh_prefix(tag);
        let mut c = Client::connect(admin, NoTls).expect("connect");
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create the database");
        Database {
            admin: admin.to_owned(),
            url: with_database(admin, &name),
            name,
        }
    }

    fn client(&self) -> Client {
        Client::connect(&self.url, NoTls).expect("connect to the test database")
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept database {} for a look", self.name);
            return;
        }
        if let Ok(mut c) = Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        }
    }
}

/// `url` naming database `name` instead (`postgres://user@host:port/db?params`).
fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (before_query, query) = match rest.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (rest, None),
    };
    let authority = before_query.split('/').next().unwrap_or(before_query);
    let mut out = format!("{scheme}://{authority}/{name}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

fn open(url: &str, clock: &ManualClock, read_only: bool) -> PgWorkspaceStorage {
    let options = PgWorkspaceOptions::new()
        .clock(Arc::new(clock.clone()))
        .read_only(read_only);
    PgWorkspaceStorage::open(url, options).expect("open the workspace storage")
}

fn strings(c: &mut Client, sql: &str) -> Vec<String> {
    c.query(sql, &[]).expect(sql).iter().map(|r| r.get(0)).collect()
}

/// The schema as the catalog describes it: every relation, column (type, nullability,
/// collation, default), constraint, index, policy and row-level security flag of the public
/// schema, in a fixed order.
fn catalog(c: &mut Client) -> Vec<String> {
    let mut out = strings(
        c,
        "SELECT 'rel ' || relname || ' ' || relkind::text || ' rls=' || relrowsecurity::text || \
         ' force=' || relforcerowsecurity::text FROM pg_class \
         WHERE relnamespace = 'public'::regnamespace ORDER BY relname",
    );
    out.extend(strings(
        c,
        "SELECT 'col ' || table_name || '.' || ordinal_position || ' ' || column_name || ' ' || data_type || \
         coalesce('(' || character_maximum_length || ')', '') || ' null=' || is_nullable || \
         coalesce(' collate ' || collation_name, '') || coalesce(' default ' || column_default, '') \
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    ));
    out.extend(strings(
        c,
        "SELECT 'con ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) \
         FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY conname",
    ));
    out.extend(strings(
        c,
        "SELECT 'idx ' || indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
    ));
    out.extend(strings(
        c,
        "SELECT 'pol ' || tablename || ' ' || policyname || ' ' || permissive || ' ' || \
         array_to_string(roles, ',') || ' ' || cmd || ' ' || coalesce(qual, '') || ' ' || \
         coalesce(with_check, '') FROM pg_policies WHERE schemaname = 'public' ORDER BY tablename",
    ));
    out
}

/// `pg_dump --schema-only` of the database, without the lines that differ between any two
/// dumps (`\restrict` keys), or `None` (said) when no `pg_dump` is found.
fn pg_dump(url: &str) -> Option<String> {
    let mut bins: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path().join("bin/pg_dump")))
                .filter(|p| p.exists())
                .collect()
        })
        .unwrap_or_default();
    bins.sort();
    let bin = bins.pop().unwrap_or_else(|| PathBuf::from("pg_dump"));
    match Command::new(&bin)
        .args(["--schema-only", "--no-owner", "--dbname", url])
        .output()
    {
        Ok(out) if out.status.success() => Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| !l.starts_with("\\restrict") && !l.starts_with("\\unrestrict"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        other => {
            eprintln!(
                "pg_dump comparison SKIPPED: {} did not run: {other:?}",
                bin.display()
            );
            None
        }
    }
}

/// Every row of every `reflexr_*` table as the server prints it, by table, in order.
fn table_rows(c: &mut Client) -> BTreeMap<String, Vec<String>> {
    let tables = strings(
        c,
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'reflexr%' \
         ORDER BY 1",
    );
    tables
        .into_iter()
        .map(|t| {
            let rows = strings(c, &format!("SELECT r::text FROM {t} r ORDER BY 1"));
            (t, rows)
        })
        .collect()
}

/// Every stored JSON text is the record's `to_json()` once execstore has read it, and every
/// column derived from a document matches it. Returns how many values were checked.
fn check_stored_texts(c: &mut Client) -> usize {
    let mut checked = 0;
    let text = |row: &postgres::Row, n: usize| -> String { row.get(n) };
    let time = |t: String| Timestamp::parse_json_text(&t).expect("a stored time");
    let utc = "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'";
    let q = |c: &mut Client, sql: &str| c.query(sql, &[]).expect(sql);
    for row in q(
        c,
        "SELECT seq, event_id, envelope::text, event_type, rule FROM reflexr_events",
    ) {
        let stored = text(&row, 2);
        let e = Envelope::from_json(&stored).expect("an envelope");
        assert_eq!(e.to_json(), stored, "envelope text");
        assert_eq!((e.seq, e.id.clone()), (row.get::<_, i64>(0), text(&row, 1)));
        assert_eq!(e.event_type(), text(&row, 3));
        assert_eq!(e.stored_rule(), row.get::<_, Option<String>>(4).as_deref());
        checked += 1;
    }
    let runs = format!(
        "SELECT id, rule, scope_key, status, fired_seq, to_char(next_attempt_at AT TIME ZONE 'UTC', {utc}), \
         body::text FROM reflexr_runs"
    );
    for row in q(c, &runs) {
        let stored = text(&row, 6);
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
                text(&row, 0).as_str(),
                text(&row, 1).as_str(),
                text(&row, 2).as_str(),
                text(&row, 3).as_str(),
                row.get::<_, i64>(4)
            )
        );
        assert_eq!(r.next_attempt_at(), time(text(&row, 5)));
        checked += 1;
    }
    for row in q(c, "SELECT body::text FROM reflexr_rule_progress") {
        let stored = text(&row, 0);
        assert_eq!(RuleProgress::from_json(&stored).unwrap().to_json(), stored);
        checked += 1;
    }
    for row in q(c, "SELECT body::text FROM reflexr_scope_states") {
        let stored = text(&row, 0);
        assert_eq!(ScopeState::from_json(&stored).unwrap().to_json(), stored);
        checked += 1;
    }
    for row in q(c, "SELECT rule, body::text FROM reflexr_dead_letters") {
        let stored = text(&row, 1);
        let l = EvaluationError::from_json(&stored).unwrap();
        assert_eq!((l.to_json(), l.rule().to_owned()), (stored, text(&row, 0)));
        checked += 1;
    }
    for row in q(c, "SELECT rule::text, provenance::text FROM reflexr_rules") {
        for n in 0..2 {
            let stored = text(&row, n);
            assert_eq!(pyjson::dumps(&pyjson::loads(&stored).unwrap()), stored);
        }
        checked += 1;
    }
    // Each workspace's head is its last envelope's seq and ts.
    let heads = "SELECT w.head_seq = coalesce(max(e.seq), 0),          w.head_ts IS NOT DISTINCT FROM (SELECT (l.envelope->>'ts')::timestamptz FROM reflexr_events l          WHERE l.tenant_id = w.tenant_id AND l.workspace_id = w.workspace_id ORDER BY l.seq DESC LIMIT 1)          FROM reflexr_workspaces w LEFT JOIN reflexr_events e          ON e.tenant_id = w.tenant_id AND e.workspace_id = w.workspace_id          GROUP BY w.tenant_id, w.workspace_id, w.head_seq, w.head_ts";
    for row in q(c, heads) {
        assert_eq!(
            (row.get::<_, bool>(0), row.get::<_, bool>(1)),
            (true, true),
            "a workspace's head"
        );
        checked += 1;
    }
    // Every time column reads back as the instant it holds, to the microsecond.
    for (table, column) in [
        ("reflexr_workspaces", "head_ts"),
        ("reflexr_schedules", "at"),
        ("reflexr_leases", "expires_at"),
        ("reflexr_runs", "next_attempt_at"),
    ] {
        let sql = format!(
            "SELECT to_char({column} AT TIME ZONE 'UTC', {utc}), {column}::text FROM {table} \
             WHERE {column} IS NOT NULL"
        );
        for row in q(c, &sql) {
            let read = time(text(&row, 0));
            let same: bool = c
                .query_one(
                    "SELECT $1::text::timestamptz = $2::text::timestamptz",
                    &[&read.to_json_text(), &text(&row, 1)],
                )
                .unwrap()
                .get(0);
            assert!(same, "{table}.{column}: {} read as {read}", text(&row, 1));
            checked += 1;
        }
    }
    checked
}

/// The leases of every workspace as `[tenant, workspace, key, holder, expires micros]`.
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
fn reflexr_writes_execstore_reads_on_postgres() {
    let Some(admin) = pg::url_or_skip("reflexr_writes_execstore_reads_on_postgres") else {
        return;
    };
    let Some(rx) = reflexr() else { return };
    let db = Database::new(&admin, "rxw");
    let dir = tempfile::tempdir().unwrap();
    let out = rx.run("write_variety.py", OsStr::new(&db.url), dir.path(), &[]);
    let (probe, theirs) = (&out["probe"], &out["dump"]);
    assert_eq!(arr(&theirs["workspaces"]).len(), 4);
    let mut c = db.client();
    let (schema_before, rows_before) = (catalog(&mut c), table_rows(&mut c));

    // Read-only first: the same answers (due runs for every probe's policy included), and
    // nothing created or changed.
    let clock = ManualClock::new(at(0.0));
    {
        let ro = open(&db.url, &clock, true);
        assert_same("read-only", &dump(&ro, probe, false), &without_tx(theirs.clone()));
        assert_eq!(sorted(leases(&ro)), sorted(arr(&out["leases"]).clone()));
        assert!(!arr(&probe["due"]).is_empty());
    }
    assert_eq!(
        catalog(&mut c),
        schema_before,
        "the read-only open changed the schema"
    );
    assert_eq!(
        table_rows(&mut c),
        rows_before,
        "the read-only open changed a row"
    );

    let checked = check_stored_texts(&mut c);
    eprintln!("stored values checked byte for byte: {checked}");
    assert!(checked > 60, "only {checked} stored values checked");

    // Read-write: the transaction's reads too (the open creates nothing on reflexr's tables),
    // then execstore appends after reflexr's head.
    let rw = open(&db.url, &clock, false);
    assert_eq!(
        catalog(&mut c),
        schema_before,
        "the open changed reflexr's schema"
    );
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
    check_stored_texts(&mut c);
}

#[test]
fn execstore_writes_reflexr_reads_on_postgres() {
    let Some(admin) = pg::url_or_skip("execstore_writes_reflexr_reads_on_postgres") else {
        return;
    };
    let Some(rx) = reflexr() else { return };
    let db = Database::new(&admin, "rxr");
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(at(0.0));
    assert!(!has_workspace_tables(&db.url, None).unwrap());
    let s = open(&db.url, &clock, false);
    assert!(
        has_workspace_tables(&db.url, None).unwrap()
            && has_workspace_tables(&db.url, Some("public")).unwrap()
    );
    let written = variety::write(&s, &clock);
    variety::assert_every_status(&s);
    let ours = dump(&s, &written.probe, true);
    drop(s);
    let mut c = db.client();
    let (schema_before, dump_before) = (catalog(&mut c), pg_dump(&db.url));
    check_stored_texts(&mut c);

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
        OsStr::new(&db.url),
        dir.path(),
        &[spec_path.as_os_str()],
    );

    assert_eq!(out["version"], json!(["0008"]));
    assert_eq!(
        out["schema_before"], out["schema_after"],
        "reflexr's migrate changed the schema"
    );
    assert_eq!(
        catalog(&mut c),
        schema_before,
        "reflexr's migrate changed the catalog"
    );
    assert_eq!(
        pg_dump(&db.url),
        dump_before,
        "reflexr's migrate changed the schema dump"
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
    let s = open(&db.url, &clock, false);
    let main = WorkspaceRef::new("acme", "main");
    let log = s.read(&main, &LogQuery::new()).unwrap();
    let head = written.head;
    assert_eq!(
        log.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=head + 3).collect::<Vec<_>>()
    );
    assert_eq!(s.head_seq(&main).unwrap(), head + 3);
    let theirs: Vec<&str> = arr(&out["appended"]).iter().map(text_of).collect();
    let tail: Vec<String> = log[head as usize..].iter().map(Envelope::to_json).collect();
    assert_eq!(tail, theirs);
    assert_eq!(log[head as usize].id, "by-reflexr-1");
    check_stored_texts(&mut c);
}

/// One program of calls through reflexr and through execstore, each on a new database: the
/// same answers, the same schema (catalog and `pg_dump`), the same rows in every table.
#[test]
fn same_calls_same_rows_on_postgres() {
    let Some(admin) = pg::url_or_skip("same_calls_same_rows_on_postgres") else {
        return;
    };
    let Some(rx) = reflexr() else { return };
    let (theirs_db, ours_db) = (Database::new(&admin, "rxp"), Database::new(&admin, "exp"));
    let dir = tempfile::tempdir().unwrap();
    let program = program::generate(20_260_101, 80);
    let program_path = dir.path().join("program.json");
    write_json(&program_path, &program);
    let theirs = rx.run(
        "apply_program.py",
        OsStr::new(&theirs_db.url),
        dir.path(),
        &[OsStr::new(&program_path)],
    );
    let clock = ManualClock::new(at(0.0));
    let s = open(&ours_db.url, &clock, false);
    let ours = program::apply(&s, &clock, &program);
    assert!(program::workspaces(&program)
        .iter()
        .all(|w| s.head_seq(w).unwrap() > 0));
    drop(s);
    assert_same("the program's answers", &ours, &theirs);
    let (mut oc, mut tc) = (ours_db.client(), theirs_db.client());
    assert_eq!(catalog(&mut oc), catalog(&mut tc), "the catalog");
    let (od, td) = (pg_dump(&ours_db.url), pg_dump(&theirs_db.url));
    assert_eq!(od, td, "pg_dump --schema-only");
    let (ours, theirs) = (table_rows(&mut oc), table_rows(&mut tc));
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
    assert_eq!(ours["reflexr_alembic_version"], ["(0008)"]);
    // Dropping the log from `public` drops reflexr's tables only.
    oc.batch_execute("CREATE TABLE app_own (x int)").unwrap();
    drop_workspace_schema(&ours_db.url, "public").unwrap();
    assert!(!has_workspace_tables(&ours_db.url, None).unwrap());
    assert_eq!(table_rows(&mut oc).len(), 0);
    oc.batch_execute("DROP TABLE app_own")
        .expect("the application's table is still there");
}

#[test]
fn database_urls() {
    assert_eq!(
        with_database("postgres://u@h:5/postgres?sslmode=disable", "x"),
        "postgres://u@h:5/x?sslmode=disable"
    );
    assert_eq!(with_database("postgresql://u@h", "x"), "postgresql://u@h/x");
}
