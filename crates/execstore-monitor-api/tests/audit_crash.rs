//! A real crash between a write's action and the recording of its outcome: a child process
//! (this test binary, run again on one test) makes the write on a SQLite file, or in a
//! PostgreSQL schema, and aborts right after the action (the crate's test-only `crash-hook`
//! feature, which this crate's own tests are built with). The store then holds the action
//! done and its audit entry `PENDING`, which the API reads back as an outcome unknown.

use std::process::Command;
use std::sync::Arc;

use execstore::executions::Status;
use execstore::operator::{AuditQuery, OperatorStore, PENDING, PENDING_MEANS};
use execstore::{Execution, ExecutionStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{json, Map};

const NOW: f64 = 1_800_000_000.0;
/// Where the child writes (`sqlite:PATH` or `pg:SCHEMA`); set only in the child.
const CHILD_TARGET: &str = "EXECSTORE_TEST_CRASH_TARGET";

/// An execution store and the operator store beside it, on one database.
type Opened = (Box<dyn ExecutionStore>, Arc<dyn OperatorStore>);

fn open(target: &str) -> Opened {
    if let Some(path) = target.strip_prefix("sqlite:") {
        use execstore_sqlite::{ConnectOptions, Db, SqliteOperatorStore, SqliteOptions, SqliteStore};
        let db = Db::open(path, ConnectOptions::new()).expect("open");
        let store = SqliteStore::on(&db, SqliteOptions::new()).expect("store");
        let operator = SqliteOperatorStore::on(&db).expect("operator");
        (Box::new(store), Arc::new(operator))
    } else if let Some(schema) = target.strip_prefix("pg:") {
        use execstore_postgres::{ConnectOptions, Db, PgOperatorStore, PgOptions, PgStore};
        let url = std::env::var("EXECSTORE_PG_URL").expect("EXECSTORE_PG_URL");
        let db = Db::open(&url, ConnectOptions::new().schema(schema).max_connections(2)).expect("open");
        let store = PgStore::on(&db, PgOptions::new()).expect("store");
        let operator = PgOperatorStore::on(&db).expect("operator");
        (Box::new(store), Arc::new(operator))
    } else {
        panic!("unknown target {target}")
    }
}

fn api(operator: Arc<dyn OperatorStore>) -> MonitorApi {
    MonitorApi::new(Map::new(), Some("s3cret")).with_operator(operator)
}

/// The child's half: suspends `run` through the API (the parent sets the crash hook's
/// variable, so it never returns). Without the variables it does nothing.
#[test]
fn child_suspends_run() {
    let Ok(target) = std::env::var(CHILD_TARGET) else {
        return;
    };
    let (store, operator) = open(&target);
    let request = ApiRequest::from_target("POST", "/api/executions/run/suspend", Some("Bearer s3cret"))
        .with_body(br#"{"reason": "crash test"}"#);
    let r = api(operator).handle(&*store, &request, NOW);
    // Only reached without the hook (the parent checks the child did not get here).
    println!("answered {}", r.status);
}

/// Puts `run` in `target`, crashes a child between its suspension and the outcome, and
/// checks what the store holds.
fn crash_and_check(target: &str) {
    {
        let (store, _) = open(target);
        let mut exe = Execution::new("run", "d");
        exe.status = Status::Running;
        store.save(&mut exe).expect("save");
    }
    let out = Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "child_suspends_run", "--nocapture", "--test-threads=1"])
        .env(CHILD_TARGET, target)
        .env("EXECSTORE_CRASH_AFTER_ACTION", "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && !stdout.contains("answered"),
        "the child should have aborted after the action: {:?}\n{stdout}",
        out.status
    );

    let (store, operator) = open(target);
    assert_eq!(
        store.load("run").expect("load").map(|e| e.status),
        Some(Status::Suspended),
        "the action was made"
    );
    let entries = operator.list_audit(&AuditQuery::new()).expect("audit");
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!(
        (
            e.action.as_str(),
            e.target.as_str(),
            e.reason.as_str(),
            e.outcome.as_str()
        ),
        ("executions.suspend", "run", "crash test", PENDING)
    );
    // The API reads it as an outcome unknown.
    let r = api(operator).handle(
        &*store,
        &ApiRequest::from_target("GET", "/api/executions/run/audit", None),
        NOW,
    );
    assert_eq!(r.body["items"][0]["outcome"], json!(PENDING));
    assert_eq!(r.body["items"][0]["note"], json!(PENDING_MEANS));
}

#[test]
fn a_crash_after_the_action_leaves_it_done_and_its_entry_pending_on_sqlite() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("crash.db");
    crash_and_check(&format!("sqlite:{}", path.display()));
}

/// On PostgreSQL (`EXECSTORE_PG_URL`), in a schema of its own, dropped after.
#[test]
fn a_crash_after_the_action_leaves_it_done_and_its_entry_pending_on_postgres() {
    let url = match std::env::var("EXECSTORE_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
            use std::io::Write as _;
            let _ = std::io::stderr().write_all(
                b"SKIPPED: a_crash_after_the_action_leaves_it_done_and_its_entry_pending_on_postgres: \
                  EXECSTORE_PG_URL is not set (EXECSTORE_PG_OPTIONAL=1)\n",
            );
            return;
        }
        _ => panic!(
            "EXECSTORE_PG_URL is not set: this test needs a PostgreSQL server (`source \
             scripts/lib/postgres.sh && pg_start`), or EXECSTORE_PG_OPTIONAL=1 to skip it"
        ),
    };
    let schema = format!("crash_audit_{}", std::process::id());
    struct Drop_(String, String);
    impl Drop for Drop_ {
        fn drop(&mut self) {
            if let Ok(mut client) = postgres::Client::connect(&self.0, postgres::NoTls) {
                let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.1));
            }
        }
    }
    let _cleanup = Drop_(url, schema.clone());
    crash_and_check(&format!("pg:{schema}"));
}
