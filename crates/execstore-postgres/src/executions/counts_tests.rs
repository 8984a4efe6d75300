//! The counts kept by migration 8 (`schema.rs`, `COUNTS`): right under every writer (the
//! step and batch functions, harel 0.9's own statements and `commit_cas`, control calls),
//! read by `count_by_status` from the counts and their deltas, never from the keys.

use execstore::executions::{control, ListQuery, Status};
use execstore::{Effects, Execution, ExecutionStore};

use super::test_support::{explain, fill, on_own_prefix};

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
