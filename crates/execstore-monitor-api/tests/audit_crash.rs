//! A real crash between a write's action and the recording of its outcome: a child process
//! (this test binary, run again on one test) makes the write on a SQLite file and aborts
//! right after the action (the crate's test-only `crash-hook` feature, which this crate's
//! own tests are built with). The file then holds the action done and its audit entry
//! `PENDING`, which the API reads back as an outcome unknown.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use execstore::executions::Status;
use execstore::operator::{AuditQuery, OperatorStore, PENDING, PENDING_MEANS};
use execstore::{Execution, ExecutionStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use execstore_sqlite::{ConnectOptions, Db, SqliteOperatorStore, SqliteOptions, SqliteStore};
use serde_json::{json, Map};

const NOW: f64 = 1_800_000_000.0;
/// The file the child writes to; set only in the child.
const CHILD_FILE: &str = "EXECSTORE_TEST_CRASH_FILE";

fn open(path: &Path) -> (SqliteStore, SqliteOperatorStore) {
    let db = Db::open(path, ConnectOptions::new()).expect("open");
    let store = SqliteStore::on(&db, SqliteOptions::new()).expect("store");
    let operator = SqliteOperatorStore::on(&db).expect("operator");
    (store, operator)
}

fn api(operator: SqliteOperatorStore) -> MonitorApi {
    MonitorApi::new(Map::new(), Some("s3cret")).with_operator(Arc::new(operator))
}

/// The child's half: suspends `run` through the API (the parent sets the crash hook's
/// variable, so it never returns). Without the variables it does nothing.
#[test]
fn child_suspends_run() {
    let Some(file) = std::env::var_os(CHILD_FILE) else {
        return;
    };
    let (store, operator) = open(Path::new(&file));
    let request = ApiRequest::from_target("POST", "/api/executions/run/suspend", Some("Bearer s3cret"))
        .with_body(br#"{"reason": "crash test"}"#);
    let r = api(operator).handle(&store, &request, NOW);
    // Only reached without the hook (the parent checks the child did not get here).
    println!("answered {}", r.status);
}

#[test]
fn a_crash_after_the_action_leaves_it_done_and_its_entry_pending() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("crash.db");
    {
        let (store, _) = open(&path);
        let mut exe = Execution::new("run", "d");
        exe.status = Status::Running;
        store.save(&mut exe).expect("save");
    }
    let out = Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "child_suspends_run", "--nocapture", "--test-threads=1"])
        .env(CHILD_FILE, &path)
        .env("EXECSTORE_CRASH_AFTER_ACTION", "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && !stdout.contains("answered"),
        "the child should have aborted after the action: {:?}\n{stdout}",
        out.status
    );

    let (store, operator) = open(&path);
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
        &store,
        &ApiRequest::from_target("GET", "/api/executions/run/audit", None),
        NOW,
    );
    assert_eq!(r.body["items"][0]["outcome"], json!(PENDING));
    assert_eq!(r.body["items"][0]["note"], json!(PENDING_MEANS));
}
