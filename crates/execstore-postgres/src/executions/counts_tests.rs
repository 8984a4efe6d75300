//! The counts kept by migration 8 (`schema.rs`, `COUNTS`): right under every writer (the
//! step and batch functions, harel 0.9's own statements and `commit_cas`, control calls),
//! read by `count_by_status` from the counts and their deltas, never from the keys.

use execstore::executions::{control, ListQuery, Status};
use execstore::{Effects, Execution, ExecutionStore};

use super::test_support::{explain, fill, on_own_prefix, one, texts};

type Row = (String, String, bool, i64);

/// The kept figures (counts plus deltas) with `n <> 0`, and the same counted from harel's
/// table and the keys.
fn kept_and_scanned(client: &mut postgres::Client, prefix: &str) -> (Vec<Row>, Vec<Row>) {
    let read = |client: &mut postgres::Client, sql: &str| -> Vec<Row> {
        client
            .query(sql, &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    };
    let kept = read(
        client,
        &format!(
            "SELECT definition_id, status, root, SUM(n)::int8 FROM (SELECT definition_id, status, root, n \
             FROM {prefix}_execstore_counts UNION ALL SELECT definition_id, status, root, n \
             FROM {prefix}_execstore_count_deltas) c GROUP BY 1, 2, 3 HAVING SUM(n) <> 0 ORDER BY 1, 2, 3"
        ),
    );
    let scanned = read(
        client,
        &format!(
            "SELECT e.definition_id, COALESCE(d.status, ''), d.parent_id IS NULL, COUNT(*)::int8 \
             FROM {prefix}_executions e, LATERAL json_to_record(e.data::json) AS d(status text, parent_id text) \
             GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ),
    );
    (kept, scanned)
}

fn count(store: &dyn ExecutionStore, query: ListQuery, status: Status) -> u64 {
    let counts = store.count_by_status(&query).unwrap();
    counts.into_iter().find(|(s, _)| *s == status).unwrap().1
}

#[test]
fn the_counts_follow_every_writer() {
    on_own_prefix("counts", "kc", |url, prefix, store| {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let mut same = |what: &str| {
            let (kept, scanned) = kept_and_scanned(&mut client, prefix);
            assert_eq!(kept, scanned, "{what}");
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
            count(store, ListQuery::new().definition("d1"), Status::Running),
            6
        );
        assert_eq!(
            count(store, ListQuery::new().roots_only(true), Status::Running),
            11
        );
        for exe in exes.iter_mut().take(4) {
            exe.status = Status::Done;
            exe.finished_at = Some(2e9);
            store.commit(exe, &Effects::new()).unwrap();
        }
        exes[5].active_path = Some("s.b".into());
        store.commit(&mut exes[5], &Effects::new()).unwrap();
        same("status changes");
        assert_eq!(count(store, ListQuery::new(), Status::Done), 4);
        assert!(store.purge("e00", exes[0].version).unwrap());
        same("purge");
        control::terminate(store, "e06", None, 2e9).unwrap();
        same("terminate");
        control::purge_finished(store, &control::PurgeFinished::new(0.0, 3e9), None).unwrap();
        same("purge-finished");
        assert_eq!(count(store, ListQuery::new(), Status::Done), 0);

        // harel 0.9's own writes: its INSERT, its CAS UPDATE and its purge, on another
        // connection, as plain statements (the keys trigger writes the keys).
        let t = format!("{prefix}_executions");
        let mut other = postgres::Client::connect(url, postgres::NoTls).unwrap();
        other
            .execute(
                &format!("INSERT INTO {t} (id, definition_id, data, version) VALUES ($1, $2, $3, 1)"),
                &[
                    &"h1",
                    &"d9",
                    &r#"{"id": "h1", "definition_id": "d9", "status": "RUNNING"}"#,
                ],
            )
            .unwrap();
        other
            .execute(
                &format!("UPDATE {t} SET data = $1, version = 2 WHERE id = $2 AND version = 1"),
                &[
                    &r#"{"id": "h1", "definition_id": "d9", "status": "FAILED"}"#,
                    &"h1",
                ],
            )
            .unwrap();
        other
            .execute(&format!("DELETE FROM {t} WHERE id = $1"), &[&"e07"])
            .unwrap();
        same("harel's writes");
        assert_eq!(count(store, ListQuery::new().definition("d9"), Status::Failed), 1);
        assert_eq!(
            count(store, ListQuery::new().definition("d9"), Status::Running),
            0
        );
        // The read folded the deltas into the counts.
        let deltas: i64 = other
            .query_one(
                &format!("SELECT COUNT(*) FROM {prefix}_execstore_count_deltas"),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(deltas, 0);
        other.execute(&format!("TRUNCATE {t}"), &[]).unwrap();
        same("truncate");
        assert_eq!(count(store, ListQuery::new(), Status::Failed), 0);
    });
}

/// `count_by_status` without a window, search or `where` reads the kept counts: on 6,000
/// executions its plan reads the counts and the deltas and never harel's table nor the keys,
/// and a figure changed by hand is what it answers.
#[test]
fn the_counts_are_read_from_the_kept_figures() {
    on_own_prefix("counts", "kr", |url, prefix, store| {
        let mut client = fill(url, prefix, store, |exe, n| {
            exe.status = Status::ALL[n % Status::ALL.len()];
        });
        for query in [
            ListQuery::new(),
            ListQuery::new().definition("d1"),
            ListQuery::new().definition("d1").roots_only(true),
        ] {
            let p = explain(
                &mut client,
                &store.sql.maintained_counts(&query.count_filter().unwrap()),
            );
            assert!(p.contains("execstore_counts"), "{p}");
            assert!(!p.contains("_executions") && !p.contains("execstore_keys"), "{p}");
        }
        let before = count(store, ListQuery::new().definition("d1"), Status::Running);
        client
            .execute(
                &format!(
                    "UPDATE {prefix}_execstore_counts SET n = n + 1000 WHERE definition_id = 'd1' AND status = 'RUNNING'"
                ),
                &[],
            )
            .unwrap();
        assert_eq!(
            count(store, ListQuery::new().definition("d1"), Status::Running),
            before + 1000
        );
    });
}

/// The executions whose listing keys differ from their documents, or that have none.
fn stale_keys(client: &mut postgres::Client, prefix: &str) -> Vec<String> {
    client
        .query(
            &format!(
                "SELECT e.id FROM {prefix}_executions e LEFT JOIN {prefix}_execstore_keys k ON k.id = e.id, \
                 LATERAL json_to_record(e.data::json) AS d(status text, parent_id text, created_at float8, \
                 updated_at float8, finished_at float8, active_path text) \
                 WHERE k.id IS NULL OR (k.status, k.root, k.created_at, k.updated_at, k.finished_at, k.active_path) \
                 IS DISTINCT FROM (d.status, d.parent_id IS NULL, d.created_at, d.updated_at, d.finished_at, \
                 d.active_path) ORDER BY 1"
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Where `d1`'s executions sit, by the graph's figures: path, status, how many.
fn sitting(store: &dyn ExecutionStore) -> Vec<(Option<String>, Status, u64)> {
    let graph = store.graph_figures("d1", 10).unwrap();
    graph
        .now
        .iter()
        .map(|f| (f.active_path.clone(), f.status, f.n))
        .collect()
}

/// `n` executions `e0`, `e1`, ... of `d1`, running at `s.a`.
fn save_running(store: &dyn ExecutionStore, n: usize) {
    for i in 0..n {
        let mut exe = Execution::new(format!("e{i}"), "d1");
        exe.status = Status::Running;
        exe.active_path = Some("s.a".into());
        store.save(&mut exe).unwrap();
    }
}

/// A hand drops the keys' and the counts' triggers and disables where-executions-sit's
/// (`mend.rs`), then harel writes without them, leaving the keys and the kept figures
/// stale. A read-only open answers right all the same (it reads the documents); a writer's
/// open makes every trigger fire again and sets the keys and figures right, and harel's
/// next write is kept again.
#[test]
fn a_writers_open_mends_what_a_hand_dropped() {
    on_own_prefix("counts", "km", |url, prefix, store| {
        save_running(store, 6);
        let mut hand = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let t = format!("{prefix}_executions");
        hand.batch_execute(&format!(
            "DROP TRIGGER {prefix}_execstore_keys_write ON {t}; \
             DROP TRIGGER {prefix}_execstore_counts_key_update ON {prefix}_execstore_keys; \
             ALTER TABLE {prefix}_execstore_keys DISABLE TRIGGER {prefix}_execstore_graph_key_update"
        ))
        .unwrap();
        // harel 0.9's statements: a step that finishes e1, a new execution of d2.
        hand.execute(
            &format!(
                "UPDATE {t} SET data = $1, version = version + 1 WHERE id = 'e1'"
            ),
            &[&r#"{"id": "e1", "definition_id": "d1", "status": "DONE", "active_path": "s.z", "finished_at": 2e9}"#],
        )
        .unwrap();
        hand.execute(
            &format!("INSERT INTO {t} (id, definition_id, data, version) VALUES ($1, $2, $3, 1)"),
            &[
                &"h1",
                &"d2",
                &r#"{"id": "h1", "definition_id": "d2", "status": "RUNNING", "active_path": "s.a"}"#,
            ],
        )
        .unwrap();
        assert_eq!(stale_keys(&mut hand, prefix), ["e1", "h1"]);
        let (kept, scanned) = kept_and_scanned(&mut hand, prefix);
        assert_ne!(kept, scanned);

        let options = || super::PgOptions::new().prefix(prefix.to_owned());
        let read_only = super::PgStore::open(url, options().read_only(true)).unwrap();
        assert_eq!(count(&read_only, ListQuery::new(), Status::Done), 1);
        assert_eq!(count(&read_only, ListQuery::new(), Status::Running), 6);
        assert_eq!(
            count(&read_only, ListQuery::new().definition("d2"), Status::Running),
            1
        );
        let done = read_only
            .list_executions(&ListQuery::new().status([Status::Done]))
            .unwrap();
        assert_eq!(
            done.items.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["e1"]
        );
        let graph = read_only.graph_figures("d1", 10).unwrap();
        assert!(!graph.maintained);
        drop(read_only);

        let writer = super::PgStore::open(url, options()).unwrap();
        assert_eq!(stale_keys(&mut hand, prefix), Vec::<String>::new());
        let (kept, scanned) = kept_and_scanned(&mut hand, prefix);
        assert_eq!(kept, scanned);
        let firing: i64 = one(
            &mut hand,
            "SELECT COUNT(*) FROM pg_trigger WHERE tgname = ANY($1) AND tgenabled = 'O'",
            &[&vec![
                format!("{prefix}_execstore_keys_write"),
                format!("{prefix}_execstore_counts_key_update"),
                format!("{prefix}_execstore_graph_key_update"),
            ]],
        );
        assert_eq!(firing, 3);
        assert!(writer.graph_figures("d1", 10).unwrap().maintained);
        assert_eq!(
            sitting(&writer),
            [
                (Some("s.a".to_owned()), Status::Running, 5),
                (Some("s.z".to_owned()), Status::Done, 1)
            ]
        );
        hand.execute(
            &format!("UPDATE {t} SET data = $1, version = version + 1 WHERE id = 'e2'"),
            &[&r#"{"id": "e2", "definition_id": "d1", "status": "FAILED", "active_path": "s.a"}"#],
        )
        .unwrap();
        assert_eq!(stale_keys(&mut hand, prefix), Vec::<String>::new());
        let (kept, scanned) = kept_and_scanned(&mut hand, prefix);
        assert_eq!(kept, scanned);
        assert_eq!(count(&writer, ListQuery::new(), Status::Failed), 1);
        drop(writer);

        // A trigger's function dropped with it (`CASCADE`): the open makes both again from
        // the record migration 14 keeps, and the figures are right after harel's write.
        hand.batch_execute(&format!("DROP FUNCTION {prefix}_execstore_graph_key() CASCADE"))
            .unwrap();
        hand.execute(
            &format!("UPDATE {t} SET data = $1, version = version + 1 WHERE id = 'e3'"),
            &[&r#"{"id": "e3", "definition_id": "d1", "status": "RUNNING", "active_path": "s.q"}"#],
        )
        .unwrap();
        let writer = super::PgStore::open(url, options()).unwrap();
        assert_eq!(
            sitting(&writer),
            [
                (Some("s.a".to_owned()), Status::Running, 3),
                (Some("s.a".to_owned()), Status::Failed, 1),
                (Some("s.q".to_owned()), Status::Running, 1),
                (Some("s.z".to_owned()), Status::Done, 1)
            ]
        );
        let tables = super::schema::Tables::new(Some(prefix)).unwrap();
        assert!(super::mend::intact(&mut hand, &tables).unwrap());
    });
}

/// A hand replaces the keys' trigger function by one of the same name that does nothing
/// (`CREATE OR REPLACE FUNCTION`): harel's writes then leave the keys stale, a read-only
/// open reads the documents, and a writer's open makes the function again from migration
/// 14's record and sets the keys and counts right.
#[test]
fn a_writers_open_mends_a_function_a_hand_replaced() {
    on_own_prefix("counts", "kf", |url, prefix, store| {
        for i in 0..3 {
            let mut exe = Execution::new(format!("e{i}"), "d1");
            exe.status = Status::Running;
            store.save(&mut exe).unwrap();
        }
        let mut hand = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let function = format!("{prefix}_execstore_keys_sync");
        let source = |hand: &mut postgres::Client| -> String {
            one(
                hand,
                "SELECT prosrc FROM pg_proc WHERE proname = $1",
                &[&function],
            )
        };
        let before = source(&mut hand);
        hand.batch_execute(&format!(
            "CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
        ))
        .unwrap();
        let t = format!("{prefix}_executions");
        hand.execute(
            &format!("UPDATE {t} SET data = $1, version = version + 1 WHERE id = 'e1'"),
            &[&r#"{"id": "e1", "definition_id": "d1", "status": "DONE"}"#],
        )
        .unwrap();
        assert_eq!(stale_keys(&mut hand, prefix), ["e1"]);
        let options = || super::PgOptions::new().prefix(prefix.to_owned());
        let read_only = super::PgStore::open(url, options().read_only(true)).unwrap();
        assert_eq!(count(&read_only, ListQuery::new(), Status::Done), 1);
        drop(read_only);
        assert_ne!(source(&mut hand), before, "a read-only open changes nothing");

        let writer = super::PgStore::open(url, options()).unwrap();
        assert_eq!(source(&mut hand), before);
        assert_eq!(stale_keys(&mut hand, prefix), Vec::<String>::new());
        let (kept, scanned) = kept_and_scanned(&mut hand, prefix);
        assert_eq!(kept, scanned);
        hand.execute(
            &format!("UPDATE {t} SET data = $1, version = version + 1 WHERE id = 'e2'"),
            &[&r#"{"id": "e2", "definition_id": "d1", "status": "FAILED"}"#],
        )
        .unwrap();
        assert_eq!(stale_keys(&mut hand, prefix), Vec::<String>::new());
        assert_eq!(count(&writer, ListQuery::new(), Status::Failed), 1);
    });
}

/// Migration 14's record holds every function of execstore's a fresh database has, each as
/// it is, and so the open after finds nothing to mend.
#[test]
fn the_functions_recorded_are_a_fresh_databases() {
    on_own_prefix("counts", "kfr", |url, prefix, _store| {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let found = texts(
            &mut client,
            &format!(
                "SELECT proname || '(' || pg_get_function_identity_arguments(oid) || ')' FROM pg_proc \
                 WHERE proname LIKE '{prefix}\\_execstore\\_%' ORDER BY 1"
            ),
            &[],
        );
        let recorded = texts(
            &mut client,
            &format!("SELECT signature FROM {prefix}_execstore_functions ORDER BY 1"),
            &[],
        );
        assert_eq!(recorded, found);
        assert!(found.len() >= 10, "{found:?}");
        assert!(found.contains(&format!("{prefix}_execstore_keys_sync()")));
        let tables = super::schema::Tables::new(Some(prefix)).unwrap();
        assert!(super::mend::intact(&mut client, &tables).unwrap());
        // The record dropped by hand: a writer's open keeps the functions as they are again.
        client
            .batch_execute(&format!("DROP TABLE {prefix}_execstore_functions"))
            .unwrap();
        drop(super::PgStore::open(url, super::PgOptions::new().prefix(prefix.to_owned())).unwrap());
        let again = texts(
            &mut client,
            &format!("SELECT signature FROM {prefix}_execstore_functions ORDER BY 1"),
            &[],
        );
        assert_eq!(again, found);
    });
}

/// While the keys trigger is gone a hand writes documents no trigger would have accepted (not
/// JSON, not an object, a time that is not a number). A writer's open still mends: the
/// trigger is back, every other execution's keys are set again, the unreadable ones keep the
/// keys they had (or none), and the counts are counted from the keys.
#[test]
fn a_writers_open_mends_around_documents_no_trigger_accepts() {
    on_own_prefix("counts", "kj", |url, prefix, store| {
        save_running(store, 4);
        let mut hand = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let t = format!("{prefix}_executions");
        hand.batch_execute(&format!("DROP TRIGGER {prefix}_execstore_keys_write ON {t}"))
            .unwrap();
        let update = format!("UPDATE {t} SET data = $1, version = version + 1 WHERE id = $2");
        let insert = format!("INSERT INTO {t} (id, definition_id, data, version) VALUES ($1, 'd1', $2, 1)");
        hand.execute(
            &update,
            &[
                &r#"{"id": "e1", "definition_id": "d1", "status": "DONE", "active_path": "s.z"}"#,
                &"e1",
            ],
        )
        .unwrap();
        hand.execute(&update, &[&"not json {", &"e2"]).unwrap();
        hand.execute(
            &insert,
            &[
                &"h1",
                &r#"{"id": "h1", "definition_id": "d1", "status": "RUNNING", "active_path": "s.b"}"#,
            ],
        )
        .unwrap();
        hand.execute(
            &insert,
            &[&"h2", &r#"{"status": "RUNNING", "created_at": "yesterday"}"#],
        )
        .unwrap();
        hand.execute(&insert, &[&"h3", &"[1]"]).unwrap();

        let options = || super::PgOptions::new().prefix(prefix.to_owned());
        // Before a writer mends, a read-only open reads the documents: the one that is not
        // JSON is named as such (the server's words, not the driver's "db error").
        let read_only = super::PgStore::open(url, options().read_only(true)).unwrap();
        let err = read_only.count_by_status(&ListQuery::new()).unwrap_err();
        assert!(
            matches!(&err, execstore::StoreError::Corrupt { reason, .. } if reason.contains("invalid input syntax for type json")),
            "{err:?}"
        );
        drop(read_only);
        let writer = super::PgStore::open(url, options()).unwrap();
        let keys: Vec<(String, Option<String>, Option<String>)> = hand
            .query(
                &format!("SELECT id, status, active_path FROM {prefix}_execstore_keys ORDER BY id"),
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let key = |id: &str, status: &str, path: &str| {
            (id.to_owned(), Some(status.to_owned()), Some(path.to_owned()))
        };
        assert_eq!(
            keys,
            [
                key("e0", "RUNNING", "s.a"),
                key("e1", "DONE", "s.z"),
                key("e2", "RUNNING", "s.a"),
                key("e3", "RUNNING", "s.a"),
                key("h1", "RUNNING", "s.b"),
            ]
        );
        assert_eq!(count(&writer, ListQuery::new(), Status::Done), 1);
        assert_eq!(count(&writer, ListQuery::new(), Status::Running), 4);
        let firing: i64 = one(
            &mut hand,
            "SELECT COUNT(*) FROM pg_trigger WHERE tgname = $1 AND tgenabled = 'O'",
            &[&format!("{prefix}_execstore_keys_write")],
        );
        assert_eq!(firing, 1);
        // The trigger refuses such a document again, and a readable one is kept.
        assert!(hand.execute(&update, &[&"still not json", &"e3"]).is_err());
        hand.execute(
            &update,
            &[
                &r#"{"id": "h2", "definition_id": "d1", "status": "FAILED", "active_path": "s.c"}"#,
                &"h2",
            ],
        )
        .unwrap();
        assert_eq!(count(&writer, ListQuery::new(), Status::Failed), 1);
    });
}

/// A fresh database's triggers on the store's tables are exactly those `mend::left` names.
#[test]
fn the_triggers_left_are_a_fresh_databases() {
    on_own_prefix("counts", "kl", |url, prefix, _store| {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let found = texts(
            &mut client,
            "SELECT tgname::text FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE $1 ORDER BY 1",
            &[&format!("{prefix}\\_%")],
        );
        let tables = super::schema::Tables::new(Some(prefix)).unwrap();
        let mut expected: Vec<String> = super::mend::left()
            .keys()
            .map(|n| super::schema::Sql::sql(&tables, n))
            .collect();
        expected.sort();
        assert_eq!(found, expected);
        // The longest prefix: PostgreSQL cuts some trigger names to 63 bytes, which are
        // found whole all the same (no trigger is made again).
        let long = format!("kl{}_", std::process::id());
        let long = format!("{long}{}", "x".repeat(30 - long.len()));
        let store = super::PgStore::open(url, super::PgOptions::new().prefix(long.clone())).unwrap();
        let tables = super::schema::Tables::new(Some(&long)).unwrap();
        let intact = super::mend::intact(&mut client, &tables);
        drop(store);
        super::drop_store(url, Some(&long)).unwrap();
        assert!(intact.unwrap());
    });
}

/// One store's function names never take in another's: under the prefix `P` and the prefix
/// `P_execstore` (whose functions start with `P_execstore_` too), dropping the first leaves
/// the second's functions, and its open finds nothing to mend.
#[test]
fn a_stores_functions_are_its_own() {
    on_own_prefix("counts", "kfo", |url, prefix, _store| {
        let other = format!("{prefix}_execstore");
        let options = super::PgOptions::new().prefix(other.clone());
        drop(super::PgStore::open(url, options.clone()).unwrap());
        let names = super::mend::function_names(&super::schema::Tables::new(Some(prefix)).unwrap());
        assert!(names.contains(&format!("{prefix}_execstore_step")), "{names:?}");
        assert!(
            names
                .iter()
                .all(|n| !n.starts_with(&format!("{other}_execstore_"))),
            "{names:?}"
        );
        super::drop_store(url, Some(prefix)).unwrap();
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let left: i64 = one(
            &mut client,
            "SELECT COUNT(*) FROM pg_proc WHERE proname = $1",
            &[&format!("{other}_execstore_step")],
        );
        let tables = super::schema::Tables::new(Some(&other)).unwrap();
        let intact = super::mend::intact(&mut client, &tables);
        super::drop_store(url, Some(&other)).unwrap();
        assert_eq!(left, 1);
        assert!(intact.unwrap());
    });
}

/// The record is a table a hand can edit: a row under a name not execstore's makes nothing,
/// and a definition edited to hold a second statement fails the open (one statement only)
/// without running it, so the open changes nothing.
#[test]
fn a_hand_edited_record_runs_nothing_else() {
    on_own_prefix("counts", "kfe", |url, prefix, _store| {
        let mut hand = postgres::Client::connect(url, postgres::NoTls).unwrap();
        let record = format!("{prefix}_execstore_functions");
        hand.execute(
            &format!("INSERT INTO {record} VALUES ('{prefix}_evil()', 'x', $1)"),
            &[&format!(
                "CREATE FUNCTION {prefix}_evil() RETURNS int LANGUAGE sql AS 'SELECT 1'"
            )],
        )
        .unwrap();
        let options = || super::PgOptions::new().prefix(prefix.to_owned());
        drop(super::PgStore::open(url, options()).unwrap());
        let exists = |hand: &mut postgres::Client, name: String| -> bool {
            one(hand, "SELECT to_regproc($1) IS NOT NULL", &[&name])
        };
        assert!(!exists(&mut hand, format!("{prefix}_evil")));

        let function = format!("{prefix}_execstore_keys_sync");
        hand.batch_execute(&format!(
            "CREATE TABLE {prefix}_bystander (x int); \
             UPDATE {record} SET definition = definition || '; DROP TABLE {prefix}_bystander' \
             WHERE signature = '{function}()'; \
             CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$"
        ))
        .unwrap();
        let Err(err) = super::PgStore::open(url, options()) else {
            panic!("the open ran a record of two statements");
        };
        assert!(err.to_string().contains("multiple commands"), "{err}");
        let bystander: bool = one(
            &mut hand,
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{prefix}_bystander")],
        );
        hand.batch_execute(&format!("DROP TABLE {prefix}_bystander"))
            .unwrap();
        assert!(bystander);
    });
}
