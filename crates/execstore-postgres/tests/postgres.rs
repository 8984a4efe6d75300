//! PostgreSQL-specific behaviour of PgStore, on a real server (`EXECSTORE_PG_URL`).

#[macro_use]
mod common;

use std::time::Duration;

use execstore::conformance::executions::Harness;
use execstore::{
    executions::{BatchItem, ListQuery, Status},
    Effects, Execution, ExecutionStore, StoreError,
};
use execstore_postgres::{PgOptions, PgStore};
use serde_json::json;

use common::unique_prefix;

/// A `\u0000` anywhere in an execution's JSON (PostgreSQL's JSON functions refuse it) does
/// not stop it being written, listed by status or read back byte for byte.
#[test]
fn nul_escape_in_context_is_stored_and_listed() {
    let h = pg_harness!(new);
    let store = h.pg();
    let mut exe = Execution::new("nul-1", "d");
    exe.status = Status::Running;
    exe.context
        .insert("bytes".into(), json!("a\u{0}b \\u0000 \\\u{0}"));
    exe.context.insert("k\u{0}ey".into(), json!(1));
    store.save(&mut exe).unwrap();
    let loaded = store.load("nul-1").unwrap().unwrap();
    assert_eq!(loaded.to_json(), exe.to_json());
    let page = store
        .list_executions(&ListQuery::new().status([Status::Running]))
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].status, Status::Running);
    assert!(store
        .list_executions(&ListQuery::new().status([Status::Done]))
        .unwrap()
        .items
        .is_empty());
}

/// Many stores opening one fresh prefix at once all succeed, and the migration is recorded
/// once.
#[test]
fn concurrent_opens_migrate_once() {
    let Some(url) = common::server_url() else { return };
    let prefix = unique_prefix();
    let stores: Vec<PgStore> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (url, prefix) = (&url, &prefix);
                s.spawn(move || PgStore::open(url, PgOptions::new().prefix(prefix.clone())).expect("open"))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for store in &stores {
        assert_eq!(store.schema_version().unwrap(), 14);
    }
    drop(stores);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let n: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {prefix}_execstore_migrations"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 14, "each migration recorded once");
    common::drop_tables(&url, Some(&prefix));
}

/// Writers racing to create one new execution: exactly one inserts it, every other one gets
/// a `Conflict` naming the version found (never a backend error).
#[test]
fn racing_inserts_of_one_new_id_conflict() {
    let h = pg_harness!(new);
    let store = h.pg();
    for round in 0..10 {
        let id = format!("new-{round}");
        let results: Vec<execstore::Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|_| {
                    let id = &id;
                    s.spawn(move || {
                        let mut exe = Execution::new(id, "d");
                        store
                            .commit(&mut exe, &Effects::new().processed("first"))
                            .map(|_| ())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "{results:?}");
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(
                matches!(
                    r,
                    StoreError::Conflict {
                        expected: 0,
                        found: Some(1),
                        ..
                    }
                ),
                "{r:?}"
            );
        }
    }
}

/// The listing filters, id paging and the timer sweep are answered from the migration's
/// indexes (checked with sequential scans disabled, as tiny tables would rather scan).
#[test]
fn reads_use_the_indexes() {
    let h = pg_harness!(new);
    let store = h.pg();
    for i in 0..40 {
        let mut exe = Execution::new(format!("e{i:03}"), format!("d{}", i % 4));
        exe.status = Status::ALL[i % Status::ALL.len()];
        store
            .commit(&mut exe, &Effects::new().schedule("t", i as f64))
            .unwrap();
    }
    let prefix = h.options.prefix.clone().unwrap();
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
    client.batch_execute("SET enable_seqscan = off").unwrap();
    let plan = |client: &mut postgres::Client, sql: &str| -> String {
        let rows = client.query(&format!("EXPLAIN {sql}"), &[]).unwrap();
        rows.iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let exe = format!("{prefix}_executions");
    for (sql, index) in [
        (
            format!(
                "SELECT id FROM {prefix}_execstore_keys WHERE status = 'RUNNING' AND id > 'e010' \
                 ORDER BY status, id LIMIT 5"
            ),
            "execstore_k_status",
        ),
        (
            format!(
                "SELECT id FROM {exe} WHERE (id COLLATE \"C\") > 'e010' AND definition_id = 'd1' \
                 ORDER BY (id COLLATE \"C\") LIMIT 5"
            ),
            "execstore_exe_definition",
        ),
        (
            format!(
                "SELECT id FROM {exe} WHERE (id COLLATE \"C\") > 'e010' ORDER BY (id COLLATE \"C\") LIMIT 5"
            ),
            "execstore_exe_id_c",
        ),
        (
            format!(
                "SELECT execution_id FROM {prefix}_timers WHERE fire_at <= 10 \
                 ORDER BY fire_at, (execution_id COLLATE \"C\"), (path COLLATE \"C\") LIMIT 5"
            ),
            "execstore_timers_due",
        ),
    ] {
        let p = plan(&mut client, &sql);
        assert!(p.contains(index), "{index} is not used:\n{p}");
    }
}

/// The listing the store itself runs, with the planner's own choice (no settings changed,
/// statistics gathered): filtering by one or several statuses is answered from the status
/// index, not by scanning and parsing every document. Proven by the server's per-index scan
/// counters.
#[test]
fn status_listing_uses_the_status_index_by_default() {
    let mut h = pg_harness!(new);
    let store = h.pg();
    let filler = "x".repeat(1500); // W1-sized documents
    for chunk in 0..30 {
        let mut batch: Vec<BatchItem> = (0..100)
            .map(|i| {
                let n = chunk * 100 + i;
                let mut exe = Execution::new(format!("e{n:05}"), "d");
                exe.status = [Status::Running, Status::Done, Status::Failed, Status::Pending][n % 4];
                exe.context.insert("filler".into(), json!(filler));
                BatchItem::new(exe, Effects::new())
            })
            .collect();
        for r in store.commit_batch(&mut batch).unwrap() {
            r.unwrap();
        }
    }
    // A fresh store for the listing: the writing one's sessions end, and a session reports
    // its pending counters (the migration's index builds scan the table) as it ends.
    h.reopen();
    let store = h.pg();
    let prefix = h.options.prefix.clone().unwrap();
    let exe = format!("{prefix}_executions");
    // ANALYZE on a session of its own, which reports its counters as it ends: the session
    // that reads the counters below touches the table in no other way.
    postgres::Client::connect(&h.url, postgres::NoTls)
        .unwrap()
        .batch_execute(&format!("ANALYZE {exe}, {prefix}_execstore_keys"))
        .unwrap();
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
    let counters = |client: &mut postgres::Client, index: &str| -> (i64, i64) {
        client.batch_execute("SELECT pg_stat_clear_snapshot()").unwrap();
        let row = client
            .query_one(
                "SELECT COALESCE((SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = $1), 0), \
                 COALESCE((SELECT sum(seq_scan)::int8 FROM pg_stat_user_tables WHERE relname IN ($2, $3)), 0)",
                &[&format!("{prefix}_execstore_{index}"), &exe, &format!("{prefix}_execstore_keys")],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    // The ended sessions' last reports are in (they come as each one exits) before the
    // first "before" figures are taken.
    let mut settled = counters(&mut client, "k_status");
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = counters(&mut client, "k_status");
        if now == settled || std::time::Instant::now() > deadline {
            break;
        }
        settled = now;
    }
    for (statuses, roots_only, index) in [
        (vec![Status::Running], false, "k_status"),
        (vec![Status::Done, Status::Failed], false, "k_status"),
        (vec![Status::Running], true, "k_root_status"),
    ] {
        let (idx_before, seq_before) = counters(&mut client, index);
        let mut query = ListQuery::new()
            .status(statuses.clone())
            .roots_only(roots_only)
            .limit(100);
        let mut rows = 0;
        loop {
            let page = store.list_executions(&query).unwrap();
            rows += page.items.len();
            assert!(page.items.iter().all(|s| statuses.contains(&s.status)));
            match page.next_cursor {
                Some(cursor) => query = query.cursor(Some(cursor)),
                None => break,
            }
        }
        assert_eq!(rows, 750 * statuses.len());
        // The store's sessions report their counters within about a second of going idle.
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        let (idx_after, seq_after) = loop {
            let now = counters(&mut client, index);
            if now.0 > idx_before || std::time::Instant::now() > deadline {
                break now;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(
            idx_after > idx_before,
            "{statuses:?}, roots only {roots_only}: {index} was not scanned"
        );
        assert_eq!(seq_after, seq_before, "{statuses:?}: the listing scanned a table");
    }
}

/// A server that is not there is a retryable backend failure, reported within the timeout.
#[test]
fn unreachable_server_is_retryable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let options = PgOptions::new().connect_timeout(Duration::from_millis(500));
    let err = PgStore::open(&url, options).unwrap_err();
    assert!(err.is_retryable(), "{err}");
    let bad = PgStore::open("postgres://[::1", PgOptions::new()).unwrap_err();
    assert_eq!(bad.code(), "INVALID_INPUT", "{bad}");
    let bad = PgStore::open("postgres://x@127.0.0.1/x", PgOptions::new().prefix("a-b")).unwrap_err();
    assert_eq!(bad.code(), "INVALID_INPUT", "{bad}");
}

/// The stored row is what harel reads: `data` is the execution's JSON byte for byte and
/// `version` the broken-out copy of its version.
#[test]
fn rows_are_harels_shape() {
    let h = pg_harness!(harel);
    let store = h.pg();
    let mut exe = Execution::new("h1", "orders");
    exe.context.insert("z".into(), json!(1));
    exe.context.insert("a".into(), json!(1e20));
    store.save(&mut exe).unwrap();
    store.save(&mut exe).unwrap();
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
    let row = client
        .query_one(
            "SELECT definition_id, data, version FROM harel_executions WHERE id = 'h1'",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "orders");
    assert_eq!(row.get::<_, String>(1), exe.to_json());
    assert_eq!(row.get::<_, i32>(2), 2);
}

/// The store's backend is terminated (`pg_terminate_backend`) while its commit waits inside
/// the transaction: the call fails with a retryable `Backend` error, nothing of it is left
/// (no outbox, dedupe, timer, spawn or trace row, versions unchanged), and the store works
/// again afterwards on a fresh connection. Checked for one commit and for a batch whose first
/// item was fully applied before the second one blocked.
#[test]
fn backend_terminated_mid_commit_leaves_nothing() {
    let prefix = unique_prefix();
    // One connection: the dead one must be replaced for the store to work again.
    let options = PgOptions::new().prefix(prefix.clone()).max_connections(1);
    let Some(h) = common::PgHarness::with_options(options, Some(prefix.clone())) else {
        return;
    };
    let store = h.pg();
    for id in ["kill-a", "kill-b"] {
        store.save(&mut Execution::new(id, "d")).unwrap();
    }
    let effects = |id: &str| {
        Effects::new()
            .emit(
                Some("elsewhere"),
                execstore::executions::Event::new(format!("{id}-out"), "Out"),
            )
            .processed(format!("{id}-in"))
            .schedule("root.wait", 1_000.0)
            .spawn(format!("{id}-child"), "child.root", serde_json::Map::new())
            .trace(json!({"event_kind": "Step"}).as_object().unwrap().clone())
    };
    // A step without an emit, applied in full before the blocked one when in a batch.
    let effects_no_emit = |id: &str| {
        Effects::new()
            .processed(format!("{id}-in"))
            .schedule("root.wait", 1_000.0)
            .trace(json!({"event_kind": "Step"}).as_object().unwrap().clone())
    };

    for batch in [false, true] {
        // The blocker holds the outbox: the store's transaction does its CAS update, then
        // waits on the outbox insert.
        let mut blocker = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
        let mut lock = blocker.transaction().unwrap();
        lock.batch_execute(&format!("LOCK TABLE {prefix}_outbox IN ACCESS EXCLUSIVE MODE"))
            .unwrap();
        let result = std::thread::scope(|s| {
            let committer = s.spawn(|| {
                if batch {
                    let a = store.load("kill-a").unwrap().unwrap();
                    let b = store.load("kill-b").unwrap().unwrap();
                    let mut items = [
                        execstore::executions::BatchItem::new(b, effects_no_emit("kill-b")),
                        execstore::executions::BatchItem::new(a, effects("kill-a")),
                    ];
                    let r = store.commit_batch(&mut items).map(|_| ());
                    assert_eq!(items[0].execution.version, 1, "a failed batch moved a version");
                    assert_eq!(items[1].execution.version, 1, "a failed batch moved a version");
                    r
                } else {
                    let mut a = store.load("kill-a").unwrap().unwrap();
                    let r = store.commit(&mut a, &effects("kill-a")).map(|_| ());
                    assert_eq!(a.version, 1, "a failed commit moved the version");
                    r
                }
            });
            // The store's backend, waiting on a lock over the outbox inside its commit
            // function (whose name carries the prefix).
            let mut killer = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            let pid: i32 = loop {
                let rows = killer
                    .query(
                        "SELECT pid FROM pg_stat_activity \
                         WHERE pid <> pg_backend_pid() AND wait_event_type = 'Lock' \
                         AND state = 'active' AND query LIKE '%' || $1 || '\\_execstore\\_%'",
                        &[&prefix],
                    )
                    .unwrap();
                if let Some(row) = rows.first() {
                    assert_eq!(rows.len(), 1, "more than one waiting store backend");
                    break row.get(0);
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the store's commit never waited on the outbox lock"
                );
                std::thread::sleep(Duration::from_millis(10));
            };
            // It is inside its transaction: it already updated the execution row.
            let in_tx: bool = killer
                .query_one(
                    "SELECT xact_start IS NOT NULL FROM pg_stat_activity WHERE pid = $1",
                    &[&pid],
                )
                .unwrap()
                .get(0);
            assert!(in_tx);
            let killed: bool = killer
                .query_one("SELECT pg_terminate_backend($1)", &[&pid])
                .unwrap()
                .get(0);
            assert!(killed);
            committer.join().unwrap()
        });
        lock.rollback().unwrap();

        let err = result.expect_err("the commit of a terminated backend succeeded");
        eprintln!("terminated mid-commit (batch: {batch}): {err}");
        assert!(
            matches!(err, StoreError::Backend { retryable: true, .. }),
            "batch {batch}: {err:?}"
        );
        // Nothing of it is left.
        for id in ["kill-a", "kill-b"] {
            assert_eq!(store.load(id).unwrap().unwrap().version, 1, "batch {batch}: {id}");
            assert!(!store.is_processed(id, &format!("{id}-in")).unwrap(), "{id}");
            assert!(store.read_trace(id).unwrap().is_empty(), "{id}");
        }
        assert!(store.pending_outbox(None, 100).unwrap().is_empty());
        assert!(store.pending_spawns(None, 100).unwrap().is_empty());
        assert!(store.due_timers(1e9, None, 100).unwrap().is_empty());
        let mut raw = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
        for table in ["outbox", "processed_events", "timers", "spawns", "trace"] {
            let n: i64 = raw
                .query_one(&format!("SELECT count(*) FROM {prefix}_{table}"), &[])
                .unwrap()
                .get(0);
            assert_eq!(n, 0, "batch {batch}: {table} has rows");
        }
    }

    // The pool replaced the dead connection: the same steps commit now.
    let mut b = store.load("kill-b").unwrap().unwrap();
    let mut a = store.load("kill-a").unwrap().unwrap();
    store.commit(&mut b, &effects_no_emit("kill-b")).unwrap();
    let seqs = store.commit(&mut a, &effects("kill-a")).unwrap();
    assert_eq!(seqs.len(), 1);
    assert_eq!((a.version, b.version), (2, 2));
    assert_eq!(store.pending_outbox(None, 100).unwrap().len(), 1);
    assert_eq!(store.pending_spawns(None, 100).unwrap().len(), 1);
    assert_eq!(store.due_timers(1e9, None, 100).unwrap().len(), 2);
    assert!(store.is_processed("kill-a", "kill-a-in").unwrap());
}

/// A read-only open creates nothing (missing tables are an error) and can write nothing,
/// while reading what is there.
#[test]
fn read_only_opens_create_and_write_nothing() {
    let h = pg_harness!(new);
    let mut exe = Execution::new("ro-1", "d");
    h.pg().save(&mut exe).unwrap();
    let prefix = h.options.prefix.clone().unwrap();

    let ro = PgStore::open(&h.url, PgOptions::new().prefix(prefix.clone()).read_only(true)).unwrap();
    assert_eq!(ro.load("ro-1").unwrap().map(|e| e.version), Some(1));
    let mut exe = ro.load("ro-1").unwrap().unwrap();
    match ro.save(&mut exe) {
        Err(StoreError::Backend {
            retryable: false,
            message,
            ..
        }) => {
            assert!(message.contains("read-only"), "{message}")
        }
        other => panic!("a write through a read-only store: {other:?}"),
    }
    assert_eq!(h.pg().load("ro-1").unwrap().map(|e| e.version), Some(1));

    let missing = format!("{prefix}_none");
    match PgStore::open(&h.url, PgOptions::new().prefix(missing.clone()).read_only(true)) {
        Err(StoreError::NotFound { key, .. }) => assert_eq!(key, format!("{missing}_executions")),
        other => panic!("read-only open of missing tables: {other:?}"),
    }
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
    let created: Option<String> = client
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{missing}_executions")],
        )
        .unwrap()
        .get(0);
    assert_eq!(created, None, "nothing was created");
}

/// The tables execstore creates carry harel 0.9's `<prefix>_commit_cas` function, so a harel
/// that opens them without creating its schema can still make its state-only saves; it
/// behaves as harel's (insert at version 0, CAS, dedupe marker, `false` on a conflict).
#[test]
fn harels_commit_cas_function_is_there() {
    let h = pg_harness!(new);
    let prefix = h.options.prefix.clone().unwrap();
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
    let mut cas = |old: i64, event: &str| -> bool {
        // harel writes the document at its new version, the function moves the column.
        let mut exe = Execution::new("fn-1", "d");
        exe.version = old + 1;
        let data = serde_json::to_string(&exe).unwrap();
        client
            .query_one(
                &format!("SELECT {prefix}_commit_cas($1, $2, $3, $4, $5)"),
                &[&"fn-1", &"d", &data, &old, &event],
            )
            .unwrap()
            .get(0)
    };
    assert!(cas(0, ""), "inserts at version 1");
    assert!(cas(1, "ev-1"), "CAS 1 -> 2 with a dedupe marker");
    assert!(!cas(1, "ev-2"), "a stale version is a conflict");
    let store = h.pg();
    assert_eq!(
        store.load_for_event("fn-1", "ev-1").unwrap().0.map(|e| e.version),
        Some(2)
    );
    assert!(store.is_processed("fn-1", "ev-1").unwrap());
    assert!(!store.is_processed("fn-1", "ev-2").unwrap());
}

/// A step's timer changes apply in order even when they repeat a path (the commit function
/// writes each path's last change in one statement): schedule-then-cancel leaves none,
/// cancel-then-schedule and two schedules leave the last; alone and in a batch, as the
/// in-memory store leaves them.
#[test]
fn repeated_timer_changes_in_one_step_apply_in_order() {
    let h = pg_harness!(new);
    let store = h.pg();
    let reference = execstore::MemoryStore::new();
    let effects = Effects::new()
        .schedule("a", 10.0)
        .cancel("a")
        .cancel("b")
        .schedule("b", 20.0)
        .schedule("c", 30.0)
        .schedule("c", 31.0)
        .cancel("c")
        .schedule("c", 32.0)
        .schedule("d", 40.0);
    let other = Effects::new().schedule("x", 1.0).cancel("x").schedule("y", 2.0);
    for s in [store as &dyn ExecutionStore, &reference] {
        // One step; then a batch of a second step of it and a first step of another.
        let mut exe = Execution::new("tm-1", "d");
        s.commit(&mut exe, &Effects::new().schedule("a", 5.0).schedule("z", 9.0))
            .unwrap();
        s.commit(&mut exe, &effects).unwrap();
        let mut items = [
            BatchItem::new(
                exe.clone(),
                Effects::new().cancel("z").schedule("z", 8.0).cancel("z"),
            ),
            BatchItem::new(Execution::new("tm-2", "d"), other.clone()),
        ];
        for r in s.commit_batch(&mut items).unwrap() {
            r.unwrap();
        }
    }
    let timers = |s: &dyn ExecutionStore| -> Vec<(String, String, f64)> {
        s.due_timers(1e9, None, 100)
            .unwrap()
            .into_iter()
            .map(|t| (t.execution_id, t.path, t.fire_at))
            .collect()
    };
    let want: Vec<(String, String, f64)> = [
        ("tm-2", "y", 2.0),
        ("tm-1", "b", 20.0),
        ("tm-1", "c", 32.0),
        ("tm-1", "d", 40.0),
    ]
    .iter()
    .map(|(e, p, f)| (e.to_string(), p.to_string(), *f))
    .collect();
    assert_eq!(timers(&reference), want, "the in-memory store");
    assert_eq!(timers(store), want);
}

/// The listing keys (migration 6) are what the documents say, read as the listing of a
/// database without them reads them: those the step function writes from the caller's
/// values, for awkward ones (a NUL and the text `\u0000` in a path, a child, fractions), on
/// its insert and its update paths; and those the triggers keep for every other writer
/// (here plain SQL, as harel's own store writes), through an insert, an update, a delete
/// and a `TRUNCATE`. Breaking either (a key passed as something else, a trigger missing)
/// makes the documents and the keys disagree.
#[test]
fn listing_keys_match_the_documents() {
    let h = pg_harness!(new);
    let store = h.pg();
    let paths = ["a\u{0}b", "x\\u0000y", "\\\u{0}", "é.ü.\u{1F600}", "plain.path"];
    for (i, path) in paths.iter().enumerate() {
        let mut exe = Execution::new(format!("k{i}"), "d");
        exe.active_path = Some((*path).to_owned());
        exe.status = Status::ALL[i % Status::ALL.len()];
        exe.created_at = Some(1.5 + i as f64);
        exe.updated_at = Some(1e9 + 0.1 * i as f64);
        exe.finished_at = (i % 2 == 0).then_some(2e9 + 1.0 / 3.0);
        if i == 3 {
            exe.parent_id = Some("k0".into());
        }
        store.commit(&mut exe, &Effects::new()).unwrap();
        exe.updated_at = Some(1e9 + 7.0 + i as f64);
        exe.status = Status::ALL[(i + 1) % Status::ALL.len()];
        store.commit(&mut exe, &Effects::new()).unwrap();
    }
    let prefix = h.options.prefix.clone().unwrap();
    let (exe, keys) = (format!("{prefix}_executions"), format!("{prefix}_execstore_keys"));
    let json = r"(replace(data, '\u0000', '\ufffd')::json)";
    let disagreeing = format!(
        "SELECT count(*) FROM {keys} k FULL JOIN (SELECT (id COLLATE \"C\") AS id, \
         ({json}->>'status') AS status, (({json}->>'parent_id') IS NULL) AS root, \
         (({json}->>'created_at')::float8) AS created_at, (({json}->>'updated_at')::float8) AS updated_at, \
         (({json}->>'finished_at')::float8) AS finished_at, (({json}->>'active_path') COLLATE \"C\") AS active_path \
         FROM {exe}) d USING (id) \
         WHERE (k.status, k.root, k.created_at, k.updated_at, k.finished_at, k.active_path) IS DISTINCT FROM \
         (d.status, d.root, d.created_at, d.updated_at, d.finished_at, d.active_path)"
    );
    let mut client = postgres::Client::connect(&h.url, postgres::NoTls).unwrap();
    let count =
        |client: &mut postgres::Client, sql: &str| -> i64 { client.query_one(sql, &[]).unwrap().get(0) };
    let check = |client: &mut postgres::Client, rows: i64, what: &str| {
        assert_eq!(
            count(client, &disagreeing),
            0,
            "{what}: keys and documents disagree"
        );
        assert_eq!(
            count(client, &format!("SELECT count(*) FROM {keys}")),
            rows,
            "{what}"
        );
    };
    check(&mut client, paths.len() as i64, "the step function");
    // The keys as stored: NUL read as U+FFFD, the text \u0000 as \ufffd, a child not a root.
    let row = client
        .query_one(
            &format!("SELECT active_path, root FROM {keys} WHERE id = 'k3'"),
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "é.ü.\u{1F600}");
    assert!(!row.get::<_, bool>(1));
    let path = |client: &mut postgres::Client, id: &str| -> String {
        client
            .query_one(&format!("SELECT active_path FROM {keys} WHERE id = $1"), &[&id])
            .unwrap()
            .get(0)
    };
    assert_eq!(path(&mut client, "k0"), "a\u{FFFD}b");
    assert_eq!(path(&mut client, "k1"), "x\\ufffdy");
    // Another writer: an insert, an update to another document, a delete, a TRUNCATE.
    client
        .batch_execute(&format!(
            "INSERT INTO {exe} (id, definition_id, data, version) SELECT 'f1', definition_id, data, version \
             FROM {exe} WHERE id = 'k1'"
        ))
        .unwrap();
    check(&mut client, 6, "a foreign insert");
    client
        .batch_execute(&format!(
            "UPDATE {exe} SET data = (SELECT data FROM {exe} WHERE id = 'k3') WHERE id = 'f1'"
        ))
        .unwrap();
    check(&mut client, 6, "a foreign update");
    assert_eq!(path(&mut client, "f1"), "é.ü.\u{1F600}");
    client
        .batch_execute(&format!("DELETE FROM {exe} WHERE id = 'k0'"))
        .unwrap();
    check(&mut client, 5, "a foreign delete");
    // The step function's own writes are not the trigger's: a step after a foreign write
    // in the same session still writes its keys.
    let mut again = store.load("k2").unwrap().unwrap();
    again.active_path = Some("after.foreign".into());
    store.commit(&mut again, &Effects::new()).unwrap();
    check(&mut client, 5, "a step after foreign writes");
    client.batch_execute(&format!("TRUNCATE {exe}")).unwrap();
    check(&mut client, 0, "a TRUNCATE");
}
