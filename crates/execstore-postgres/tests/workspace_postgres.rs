//! PostgreSQL-specific behaviour of PgWorkspaceStorage, on a real server (`EXECSTORE_PG_URL`):
//! reflexr's schema exactly, its version record, read-only opens, microsecond times,
//! savepoints, row-level security, wakeups across storages.
//! The plans of its reads are in `workspace_plans.rs`.

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use execstore::conformance::workspace::entry;
use execstore::workspace::{Clock, LogQuery, ManualClock, NewRun, Run, Timestamp, WorkspaceStorage};
use execstore::StoreError;
use execstore_postgres::{
    has_workspace_tables, PgWorkspaceOptions, PgWorkspaceStorage, REFLEXR_SCHEMA_VERSION,
};
use serde_json::json;

use common::unique_prefix;

use common::{commit_append, ws};

fn strings(client: &mut postgres::Client, sql: &str) -> Vec<String> {
    client.query(sql, &[]).unwrap().iter().map(|r| r.get(0)).collect()
}

/// What `reflexr.sql.migrate()` 0.1.1 builds on PostgreSQL (`pg_dump --schema-only` of a
/// database it migrated), catalog entry by catalog entry: every column with its type,
/// nullability and collation in order, every constraint and index, row-level security and its
/// policies, and the version record.
#[test]
fn the_tables_are_reflexrs() {
    let h = ws_harness!();
    let mut c = h.client();
    let columns = strings(
        &mut c,
        "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || \
         coalesce(' collate ' || collation_name, '') FROM information_schema.columns \
         WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
    );
    let scope = |t: &str| {
        [
            format!("{t}.tenant_id character varying NO"),
            format!("{t}.workspace_id character varying NO"),
        ]
    };
    let mut want: Vec<String> = vec!["reflexr_alembic_version.version_num character varying NO".into()];
    let tables: &[(&str, &[&str])] = &[
        ("reflexr_cursors", &["name character varying NO", "seq bigint NO"]),
        (
            "reflexr_dead_letters",
            &["position bigint NO", "rule character varying NO", "body json NO"],
        ),
        (
            "reflexr_events",
            &[
                "seq bigint NO",
                "event_id character varying NO",
                "envelope json NO",
                "event_type character varying NO",
                "rule character varying YES",
            ],
        ),
        (
            "reflexr_leases",
            &[
                "key character varying NO",
                "holder character varying NO",
                "expires_at timestamp with time zone NO",
            ],
        ),
        (
            "reflexr_rule_progress",
            &["rule character varying NO", "position bigint NO", "body json NO"],
        ),
        (
            "reflexr_rules",
            &[
                "name character varying NO collate C",
                "version integer NO",
                "status character varying NO",
                "rule json NO",
                "provenance json NO",
            ],
        ),
        (
            "reflexr_runs",
            &[
                "id character varying NO",
                "position bigint NO",
                "rule character varying NO",
                "scope_key character varying NO",
                "status character varying NO",
                "fired_seq bigint NO",
                "next_attempt_at timestamp with time zone NO",
                "body json NO",
            ],
        ),
        (
            "reflexr_schedules",
            &[
                "name character varying NO",
                "position bigint NO",
                "at timestamp with time zone NO",
            ],
        ),
        (
            "reflexr_scope_states",
            &[
                "rule character varying NO",
                "scope_key character varying NO",
                "body json NO",
            ],
        ),
        (
            "reflexr_workspaces",
            &[
                "head_seq bigint NO",
                "head_ts timestamp with time zone YES",
                "last_position bigint NO",
            ],
        ),
    ];
    for (table, cols) in tables {
        want.extend(scope(table));
        want.extend(cols.iter().map(|c| format!("{table}.{c}")));
    }
    assert_eq!(columns, want);
    let s = &h.schema;
    let indexes = strings(
        &mut c,
        "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname",
    );
    let want_indexes: Vec<String> = [
        "ix_reflexr_dead_letters_rule ON {s}.reflexr_dead_letters USING btree (tenant_id, workspace_id, rule, \"position\")",
        "ix_reflexr_events_rule ON {s}.reflexr_events USING btree (tenant_id, workspace_id, rule, seq) WHERE (rule IS NOT NULL)",
        "ix_reflexr_events_type ON {s}.reflexr_events USING btree (tenant_id, workspace_id, event_type, seq)",
        "ix_reflexr_runs_due ON {s}.reflexr_runs USING btree (status, next_attempt_at)",
        "ix_reflexr_runs_position ON {s}.reflexr_runs USING btree (tenant_id, workspace_id, \"position\")",
        "ix_reflexr_runs_scope ON {s}.reflexr_runs USING btree (tenant_id, workspace_id, rule, scope_key, fired_seq)",
        "ix_reflexr_runs_scope_head ON {s}.reflexr_runs USING btree (tenant_id, workspace_id, rule, scope_key, status, fired_seq, \"position\")",
        "pk_reflexr_cursors ON {s}.reflexr_cursors USING btree (tenant_id, workspace_id, name)",
        "pk_reflexr_dead_letters ON {s}.reflexr_dead_letters USING btree (tenant_id, workspace_id, \"position\")",
        "pk_reflexr_events ON {s}.reflexr_events USING btree (tenant_id, workspace_id, seq)",
        "pk_reflexr_leases ON {s}.reflexr_leases USING btree (tenant_id, workspace_id, key)",
        "pk_reflexr_rule_progress ON {s}.reflexr_rule_progress USING btree (tenant_id, workspace_id, rule)",
        "pk_reflexr_rules ON {s}.reflexr_rules USING btree (tenant_id, workspace_id, name)",
        "pk_reflexr_runs ON {s}.reflexr_runs USING btree (tenant_id, workspace_id, id)",
        "pk_reflexr_schedules ON {s}.reflexr_schedules USING btree (tenant_id, workspace_id, name)",
        "pk_reflexr_scope_states ON {s}.reflexr_scope_states USING btree (tenant_id, workspace_id, rule, scope_key)",
        "pk_reflexr_workspaces ON {s}.reflexr_workspaces USING btree (tenant_id, workspace_id)",
        "reflexr_alembic_version_pkc ON {s}.reflexr_alembic_version USING btree (version_num)",
        "uq_reflexr_events_id ON {s}.reflexr_events USING btree (tenant_id, workspace_id, event_id)",
    ]
    .iter()
    .map(|d| {
        let unique = d.starts_with("pk_") || d.starts_with("uq_") || d.starts_with("reflexr_alembic");
        format!("CREATE {}INDEX {}", if unique { "UNIQUE " } else { "" }, d.replace("{s}", s))
    })
    .collect();
    assert_eq!(indexes, want_indexes);
    let constraints = strings(
        &mut c,
        "SELECT conname || ' ' || contype::text FROM pg_constraint \
         WHERE connamespace = current_schema()::regnamespace ORDER BY conname",
    );
    assert_eq!(constraints.len(), 12, "{constraints:?}");
    assert!(constraints.contains(&"uq_reflexr_events_id u".to_string()));
    let policies = strings(
        &mut c,
        "SELECT tablename || ' ' || policyname || ' ' || qual || ' ' || with_check FROM pg_policies \
         WHERE schemaname = current_schema() ORDER BY tablename",
    );
    assert_eq!(policies.len(), 10, "{policies:?}");
    for p in &policies {
        let table = p.split(' ').next().unwrap();
        let check = "((tenant_id)::text = current_setting('lattice.tenant_id'::text, true))";
        assert_eq!(p, &format!("{table} {table}_tenant {check} {check}"));
    }
    let rls = strings(
        &mut c,
        "SELECT relname || ' ' || relrowsecurity::text || ' ' || relforcerowsecurity::text FROM pg_class \
         WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' ORDER BY relname",
    );
    assert_eq!(rls.len(), 11);
    for r in &rls {
        let forced = if r.starts_with("reflexr_alembic_version") {
            "false false"
        } else {
            "true false"
        };
        assert!(r.ends_with(forced), "{r}");
    }
    assert_eq!(
        strings(&mut c, "SELECT version_num::text FROM reflexr_alembic_version"),
        [REFLEXR_SCHEMA_VERSION]
    );
    assert!(has_workspace_tables(&h.url, Some(s)).unwrap());
    assert!(!has_workspace_tables(&h.url, Some("no_such_schema")).unwrap());
}

/// Several storages opening one fresh schema at once all succeed, and the version is
/// recorded once.
#[test]
fn concurrent_opens_create_once() {
    let Some(url) = common::server_url() else { return };
    let schema = unique_prefix();
    let opened: Vec<PgWorkspaceStorage> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (url, schema) = (&url, &schema);
                s.spawn(move || {
                    PgWorkspaceStorage::open(url, PgWorkspaceOptions::new().schema(schema.clone()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().expect("open"))
            .collect()
    });
    assert_eq!(opened[0].schema(), schema);
    drop(opened);
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let n: i64 = c
        .query_one(
            &format!("SELECT count(*) FROM {schema}.reflexr_alembic_version"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    execstore_postgres::drop_workspace_schema(&url, &schema).unwrap();
    assert!(!has_workspace_tables(&url, Some(&schema)).unwrap());
}

/// Tables at another version are refused, writable or read-only, with a message that says so;
/// an incomplete set is refused too.
#[test]
fn other_versions_and_partial_sets_are_refused() {
    let h = ws_harness!();
    let mut c = h.client();
    c.batch_execute("UPDATE reflexr_alembic_version SET version_num = '0007'")
        .unwrap();
    for read_only in [false, true] {
        match h.open(h.options().read_only(read_only)) {
            Err(StoreError::Backend {
                message,
                retryable: false,
                ..
            }) => {
                assert!(message.contains("0007") && message.contains("0008"), "{message}")
            }
            other => panic!("read_only {read_only}: {other:?}"),
        }
    }
    c.batch_execute("UPDATE reflexr_alembic_version SET version_num = '0008'; DROP TABLE reflexr_cursors")
        .unwrap();
    match h.open(h.options()) {
        Err(StoreError::NotFound {
            what: "reflexr tables",
            key,
        }) => assert!(key.ends_with(".reflexr_cursors"), "{key}"),
        other => panic!("{other:?}"),
    }
}

/// Read-only: nothing is created (not even the schema) where the tables are missing, reads
/// work where they are, and writes fail in the server.
#[test]
fn read_only_creates_and_writes_nothing() {
    let h = ws_harness!();
    let fresh = unique_prefix();
    match h.open(PgWorkspaceOptions::new().schema(fresh.clone()).read_only(true)) {
        Err(StoreError::NotFound {
            what: "reflexr tables",
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    let mut c = h.client();
    let n: i64 = c
        .query_one("SELECT count(*) FROM pg_namespace WHERE nspname = $1", &[&fresh])
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "no schema created");
    let w = ws("t", "w");
    commit_append(h.pg(), &w, &[entry("a", "x")]);
    let ro = h.open(h.options().read_only(true)).unwrap();
    assert_eq!(ro.head_seq(&w).unwrap(), 1);
    assert_eq!(ro.read(&w, &LogQuery::new()).unwrap().len(), 1);
    assert!(ro.begin(&w).is_err(), "a transaction locks the row: refused");
    assert!(ro.save_cursor(&w, "m", 1).is_err());
    assert!(ro.acquire_lease(&w, "k", "me", Duration::from_secs(5)).is_err());
    assert_eq!(h.pg().cursor(&w, "m").unwrap(), 0);
    assert!(h.pg().leases(&w).unwrap().is_empty());
    // A reader can still wait for appends.
    let woke = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            commit_append(h.pg(), &w, &[entry("b", "x")]);
        });
        ro.wait_for_append(&w, 1, Duration::from_secs(10)).unwrap()
    });
    assert!(woke);
}

/// Times keep their microseconds through every `timestamptz` column, from the year 1 to
/// 9999, whatever offset they were given in; the session's time zone plays no part.
#[test]
fn times_round_trip_to_the_microsecond() {
    let h = ws_harness!();
    let w = ws("t-time", "w");
    let times: Vec<Timestamp> = [
        "0001-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999999Z",
        "2026-01-01T12:00:00.000001Z",
        "2026-06-30T23:59:59.999999+05:45",
        "2026-03-29T01:30:00.5-08:00",
        "9999-12-31T23:59:59.999999Z",
    ]
    .iter()
    .map(|t| Timestamp::parse_json_text(t).unwrap())
    .collect();
    let url = format!(
        "{}{}options=-c%20TimeZone%3DAsia%2FKathmandu%20-c%20DateStyle%3DSQL%2CDMY",
        h.url,
        if h.url.contains('?') { '&' } else { '?' }
    );
    let odd = PgWorkspaceStorage::open(&url, h.options()).unwrap();
    for (i, at) in times.iter().enumerate() {
        let mut tx = odd.begin(&w).unwrap();
        tx.save_schedule(&format!("s{i}"), *at).unwrap();
        assert_eq!(tx.schedule(&format!("s{i}")).unwrap(), Some(*at));
        let r = Run::pending(NewRun {
            id: format!("r{i}"),
            rule: "rule".into(),
            scope_key: "k".into(),
            scope: Default::default(),
            fired_seq: 1,
            matched: vec![1],
            correlation_id: "c".into(),
            depth: 0,
            now: *at,
        })
        .unwrap();
        tx.save_runs(std::slice::from_ref(&r)).unwrap();
        tx.commit().unwrap();
        assert_eq!(
            odd.run(&w, &format!("r{i}")).unwrap().unwrap().to_json(),
            r.to_json()
        );
        let due = odd.due_runs(*at, 100, &Default::default()).unwrap();
        assert!(
            due.iter().any(|(_, d)| d.id() == r.id()),
            "{at}: due at its own time"
        );
        if let Ok(before) = at.plus_micros(-1) {
            let due = odd.due_runs(before, 100, &Default::default()).unwrap();
            assert!(
                !due.iter().any(|(_, d)| d.id() == r.id()),
                "{at}: not due a microsecond before"
            );
        }
    }
    let got: Vec<Timestamp> = h
        .pg()
        .schedules(&w)
        .unwrap()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(got, times);
    assert!(got.iter().all(|t| t.offset_seconds() == 0));
    // The column holds the instant: compare in SQL.
    let mut c = h.client();
    for (i, at) in times.iter().enumerate() {
        let same: bool = c
            .query_one(
                "SELECT at = $2::text::timestamptz FROM reflexr_schedules WHERE name = $1",
                &[&format!("s{i}"), &at.to_json_text()],
            )
            .unwrap()
            .get(0);
        assert!(same, "{at}");
    }
    // Leases and the head's time, at microsecond edges.
    let clock = ManualClock::new(Timestamp::parse_json_text("2026-01-01T00:00:00.000001Z").unwrap());
    let s = h.open(h.options().clock(Arc::new(clock.clone()))).unwrap();
    assert!(s.acquire_lease(&w, "k", "a", Duration::from_micros(10)).unwrap());
    clock.advance_micros(10);
    assert_eq!(s.leases(&w).unwrap()[0].expires_at, clock.now());
    assert!(
        s.acquire_lease(&w, "k", "b", Duration::from_secs(1)).unwrap(),
        "lapsed at exactly its expiry"
    );
    commit_append(&s, &w, &[entry("e", "x")]);
    assert_eq!(s.workspace_info(&w).unwrap().unwrap().head_ts, Some(clock.now()));
    assert_eq!(s.envelope(&w, "e").unwrap().unwrap().ts, clock.now());
}

/// JSON columns keep the text as written, byte for byte: `col::text` is the record's JSON.
#[test]
fn json_is_stored_verbatim() {
    let h = ws_harness!();
    let w = ws("t-json", "w");
    let mut e = entry("j", "x");
    e.event.insert("float".into(), json!(1e-7));
    e.event.insert("big".into(), json!(12345678901234567890u64));
    e.event.insert("nul".into(), json!("a\u{0}b"));
    let mut tx = h.pg().begin(&w).unwrap();
    let envelope = tx.append(&[e]).unwrap().remove(0);
    tx.commit().unwrap();
    let mut c = h.client();
    let text: String = c
        .query_one(
            "SELECT envelope::text FROM reflexr_events WHERE event_id = 'j'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(text, envelope.to_json());
    assert!(text.contains("\\u00e9") && text.contains("\\u0000"), "{text}");
    assert_eq!(h.pg().envelope(&w, "j").unwrap().unwrap().to_json(), text);
}

/// A call that fails in the server (here a stored rule's name PostgreSQL's text cannot hold)
/// is rolled back to its savepoint: nothing of it stays, the counters did not move, and the
/// transaction goes on and commits.
#[test]
fn a_failed_call_rolls_back_only_itself() {
    let h = ws_harness!();
    let s = h.pg();
    let w = ws("t-savepoint", "w");
    let mut tx = s.begin(&w).unwrap();
    tx.append(&[entry("a", "x")]).unwrap();
    let mut bad = entry("bad", "x");
    bad.event =
        serde_json::from_value(json!({"type": "reflexr:rule_installed", "rule": "r\u{0}", "version": 1}))
            .unwrap();
    let err = tx.append(&[entry("ok", "x"), bad]).unwrap_err();
    assert!(
        matches!(err, StoreError::Backend { .. } | StoreError::Corrupt { .. }),
        "{err:?}"
    );
    assert_eq!(tx.head_seq().unwrap(), 1);
    assert!(tx.envelope("ok").unwrap().is_none());
    let next = tx.append(&[entry("b", "x")]).unwrap();
    assert_eq!(next[0].seq, 2);
    tx.commit().unwrap();
    assert_eq!(
        s.read(&w, &LogQuery::new())
            .unwrap()
            .iter()
            .map(|e| e.id.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
}

/// A connection that dies under an open transaction is not used again: the next
/// transaction, on a pool of one, gets a fresh connection.
#[test]
fn a_lost_connection_is_not_reused() {
    let h = ws_harness!();
    let app = format!("ws_lost_{}", unique_prefix());
    let url = format!(
        "{}{}application_name={app}",
        h.url,
        if h.url.contains('?') { '&' } else { '?' }
    );
    let s = PgWorkspaceStorage::open(&url, h.options().max_connections(1)).unwrap();
    let w = ws("t-lost", "w");
    let mut tx = s.begin(&w).unwrap();
    tx.append(&[entry("a", "x")]).unwrap();
    let mut c = h.client();
    let killed: i64 = c
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .unwrap()
        .get(0);
    assert_eq!(killed, 1);
    assert!(tx.append(&[entry("b", "x")]).is_err());
    assert!(tx.commit().is_err());
    let mut tx = s.begin(&w).unwrap();
    assert_eq!(tx.head_seq().unwrap(), 0, "nothing of the lost transaction");
    tx.append(&[entry("c", "x")]).unwrap();
    tx.commit().unwrap();
    assert_eq!(s.head_seq(&w).unwrap(), 1);
}

/// A role that does not own the tables is held by reflexr's policies: every operation names
/// its tenant, so it works on its workspaces, and a session of that role sees only the tenant
/// it names.
#[test]
fn a_role_held_by_the_policies_works_in_its_tenant() {
    let h = ws_harness!();
    let role = format!("r_{}", unique_prefix());
    let mut c = h.client();
    let s = &h.schema;
    c.batch_execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {s} TO {role}; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {role}"
    ))
    .unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut config: postgres::Config = h.url.parse().unwrap();
        config.user(&role);
        let (host, port) = match (&config.get_hosts()[0], config.get_ports()[0]) {
            (postgres::config::Host::Tcp(host), port) => (host.clone(), port),
            other => panic!("{other:?}"),
        };
        let db = config.get_dbname().unwrap_or("postgres").to_owned();
        let url = format!("postgres://{role}@{host}:{port}/{db}");
        let app = PgWorkspaceStorage::open(&url, h.options()).unwrap();
        let (a, b) = (ws("tenant-a", "w"), ws("tenant-b", "w"));
        for w in [&a, &b] {
            commit_append(&app, w, &[entry("e1", "x"), entry("e2", "x")]);
            assert_eq!(app.head_seq(w).unwrap(), 2);
            assert_eq!(app.read(w, &LogQuery::new()).unwrap().len(), 2);
            assert!(app.acquire_lease(w, "k", "me", Duration::from_secs(60)).unwrap());
            app.save_cursor(w, "m", 2).unwrap();
            assert_eq!(app.cursor(w, "m").unwrap(), 2);
        }
        // The owner sees both tenants' rows, written with their tenant.
        assert_eq!(h.pg().read(&b, &LogQuery::new()).unwrap().len(), 2);
        let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        raw.batch_execute(&format!("SET search_path = {s}")).unwrap();
        let count = |raw: &mut postgres::Client| -> i64 {
            raw.query_one("SELECT count(*) FROM reflexr_events", &[])
                .unwrap()
                .get(0)
        };
        assert_eq!(count(&mut raw), 0, "no tenant named: nothing seen");
        raw.batch_execute("SELECT set_config('lattice.tenant_id', 'tenant-a', false)")
            .unwrap();
        assert_eq!(count(&mut raw), 2, "tenant-a's only");
        assert!(
            raw.batch_execute("INSERT INTO reflexr_cursors VALUES ('tenant-b', 'w', 'x', 1)")
                .is_err(),
            "another tenant's row is refused"
        );
    }));
    let _ = c.batch_execute(&format!(
        "REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM {role}; REVOKE ALL ON SCHEMA {s} FROM {role}"
    ));
    let drop_role = |c: &mut postgres::Client| {
        // Its sessions may linger a moment after the storage closed.
        for _ in 0..50 {
            if c.batch_execute(&format!("DROP ROLE IF EXISTS {role}")).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    drop_role(&mut c);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// A waiter is woken by another storage's commit (another process's, as far as the server
/// knows) within moments, and only for its own workspace; many waiters share one listening
/// connection.
#[test]
fn waiters_are_woken_across_storages_for_their_workspace_only() {
    let h = ws_harness!();
    let other = h.open(h.options()).unwrap();
    let (a, b) = (ws("t-wake", "a"), ws("t-wake", "b"));
    commit_append(h.pg(), &a, &[entry("a0", "x")]);
    let s = h.pg();
    std::thread::scope(|scope| {
        // Nobody appends to b: its waiter times out, not woken by a's commits.
        let quiet = scope.spawn(|| {
            let started = Instant::now();
            let woke = s.wait_for_append(&b, 0, Duration::from_millis(1500)).unwrap();
            (woke, started.elapsed())
        });
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let started = Instant::now();
                    let woke = s.wait_for_append(&a, 1, Duration::from_secs(20)).unwrap();
                    (woke, started)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        commit_append(&other, &a, &[entry("a1", "x")]);
        let committed = Instant::now();
        for w in waiters {
            let (woke, _) = w.join().unwrap();
            assert!(woke);
        }
        let lag = committed.elapsed();
        assert!(lag < Duration::from_secs(2), "woken {lag:?} after the commit");
        let (woke, waited) = quiet.join().unwrap();
        assert!(
            !woke && waited >= Duration::from_millis(1400),
            "{woke} {waited:?}"
        );
    });
    // Already past: answered from the head at once.
    assert!(s.wait_for_append(&a, 1, Duration::from_secs(5)).unwrap());
    assert!(!s.wait_for_append(&a, 2, Duration::from_millis(50)).unwrap());
}
