//! execstore's recovery commands against the real harel 0.9 on one SQLite file
//! (`tests/harel/recover_with_harel.py`):
//!
//! * `send`: an event execstore enqueues (`control::send`, no step) is delivered by harel's
//!   own relay (`DurableRunner.recover`): the execution takes the transition, the event id is
//!   recorded as processed, the entry is acked.
//! * `redrive`: execstore's retry of a FAILED execution writes the row harel's own `redrive`
//!   writes (same clock), byte for byte, and harel's runner then processes the next event.
//!
//! Without harel 0.9.0 the test is skipped (one line), unless `EXECSTORE_REQUIRE_HAREL=1`.

#[macro_use]
mod harel_common;

use execstore::executions::control;
use execstore::executions::Event;
use execstore::ExecutionStore;
use execstore_sqlite::{SqliteOptions, SqliteStore};
use harel_common::*;
use serde_json::json;

const AT: f64 = 1_700_000_100.5;

fn row(db: &std::path::Path, id: &str) -> (String, i64) {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.query_row(
        "SELECT data, version FROM harel_executions WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .expect("row")
}

#[test]
fn harel_delivers_what_we_send_and_reads_what_we_redrive() {
    let Some(harel) = harel() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("recover.db");
    harel.run("recover_with_harel.py", &db, &["setup"]);

    // send: enqueued by execstore, delivered by harel's relay.
    let store = SqliteStore::open(&db, SqliteOptions::new().prefix("harel")).expect("open");
    let before = store.load("o-1").unwrap().expect("o-1");
    let mut event = Event::new("ev-approve", "Approve");
    event.data = serde_json::from_value(json!({"by": "ops"})).unwrap();
    let sent = control::send(&store, "o-1", &event, Some(before.version)).expect("send");
    assert_eq!(store.load("o-1").unwrap().unwrap(), before, "no step");
    drop(store);
    let out = harel.run("recover_with_harel.py", &db, &["relay"]);
    let o1 = &out["executions"]["o-1"];
    assert_eq!(
        (o1["status"].as_str(), o1["active_path"].as_str()),
        (Some("RUNNING"), Some("approved")),
        "{o1}"
    );
    assert_eq!(o1["version"], json!(before.version + 1));
    assert!(
        out["processed"]
            .as_array()
            .unwrap()
            .contains(&json!(["o-1", "ev-approve"])),
        "{out}"
    );
    assert_eq!(out["outbox"], json!([]), "acked (seq {})", sent.seq);

    // redrive: the row harel's own redrive writes, on a copy, at the same clock.
    let theirs = dir.path().join("theirs.db");
    std::fs::copy(&db, &theirs).expect("copy");
    harel.run(
        "recover_with_harel.py",
        &theirs,
        &["redrive", "o-2", "waiting", &AT.to_string()],
    );
    let store = SqliteStore::open(&db, SqliteOptions::new().prefix("harel")).expect("open");
    let out = control::redrive(&store, "o-2", "waiting", None, AT).expect("redrive");
    assert_eq!(out.changed.len(), 1);
    drop(store);
    let (ours, our_version) = row(&db, "o-2");
    let (harels, harel_version) = row(&theirs, "o-2");
    assert_eq!(our_version, harel_version);
    assert_same_text("o-2 after redrive", &ours, &harels);

    // And harel carries on from there.
    let out = harel.run(
        "recover_with_harel.py",
        &db,
        &["process", "o-2", "ev-2", "Approve"],
    );
    let o2 = &out["executions"]["o-2"];
    assert_eq!(
        (o2["status"].as_str(), o2["active_path"].as_str()),
        (Some("RUNNING"), Some("approved")),
        "{o2}"
    );
    assert_eq!(o2["error"], json!(null));
}
